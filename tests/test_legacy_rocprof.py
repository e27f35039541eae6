"""Legacy rocprof (v1) loader, checked against the profiler's own stats files and across the
DB / JSON / CSV copies of the same run (real files in tests/data/legacy_rocprof, see PROVENANCE.md)."""

from __future__ import annotations

import csv
import hashlib
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tui_prof.loaders.detect as detect
from tui_prof.analysis.hotspots import hotspots
from tui_prof.loaders import legacy_rocprof as v1
from tui_prof.loaders.base import DetectedFile, IssueSink, read_head

DATA = Path(__file__).parent / "data" / "legacy_rocprof"
HIPPROG = DATA / "hip-programming"
BLOGS = DATA / "rocm-blogs"


def load_files(*paths: Path):
    """Run the v1 loader on exactly these files (sniffed like detect does)."""
    detected = []
    for path in paths:
        sniffed = v1.sniff(path, read_head(path))
        assert sniffed is not None, path
        detected.append(DetectedFile(path, v1.FORMAT, sniffed.kind, sniffed.group))
    sink = IssueSink()
    runs = v1.load(detected, sink)
    return runs, sink.issues


def run_by_label(runset, label):
    matches = [r for r in runset.runs if r.meta.label == label]
    assert len(matches) == 1, [r.meta.label for r in runset.runs]
    return matches[0]


def read_stats_csv(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def rocprof_stats(names: pd.Series, durations: np.ndarray) -> dict[str, tuple[int, int, int, float]]:
    """rocprof v1's stats rule (dform.py): per name count, sum, sum/count in SQLite integer
    division (truncation toward zero), sum*100.0/grand total."""
    frame = pd.DataFrame({"name": names.astype(str).to_numpy(), "dur": durations})
    grouped = frame.groupby("name")["dur"].agg(["count", "sum"])
    grand = int(frame["dur"].sum())
    out = {}
    for name, row in grouped.iterrows():
        calls, total = int(row["count"]), int(row["sum"])
        avg = int(math.copysign(abs(total) // calls, total)) if total else 0
        out[name] = (calls, total, avg, total * 100.0 / grand if grand else 0.0)
    return out


def assert_matches_stats(computed: dict, stats_path: Path):
    rows = read_stats_csv(stats_path)
    assert len(rows) == len(computed), (sorted(computed), [r["Name"] for r in rows])
    for row in rows:
        calls, total, avg, pct = computed[row["Name"]]
        assert calls == int(row["Calls"]), row
        assert total == int(row["TotalDurationNs"]), row
        assert avg == int(row["AverageNs"]), row
        assert math.isclose(pct, float(row["Percentage"]), rel_tol=1e-12, abs_tol=1e-15), row


# --------------------------------------------------------------------------- directory level


@pytest.mark.parametrize("root,prefix", [(HIPPROG, "results"), (BLOGS, "HIP_trace_results"), (BLOGS, "HSA_trace_results")])
def test_kernel_hotspots_equal_rocprof_stats(root, prefix):
    runset = detect.load_path(root)
    run = run_by_label(runset, prefix)
    table = hotspots(run.kernels)
    stats = read_stats_csv(root / f"{prefix}.stats.csv")
    assert len(table) == len(stats)
    for ours, theirs in zip(table.itertuples(index=False), stats):
        assert ours.name == theirs["Name"]
        assert ours.calls == int(theirs["Calls"])
        assert ours.total_ns == int(theirs["TotalDurationNs"])
        assert int(ours.avg_ns) == int(theirs["AverageNs"])  # integer division in rocprof
        assert math.isclose(ours.percent, float(theirs["Percentage"]), rel_tol=1e-12)
    # the same rule applied to the raw intervals reproduces the whole file
    dur = run.kernels["end"].to_numpy() - run.kernels["start"].to_numpy()
    assert_matches_stats(rocprof_stats(run.kernels["name"], dur), root / f"{prefix}.stats.csv")
    # and the stats file itself is kept, unchanged, in tool_stats
    kept = run.tool_stats["kernel_stats"]
    assert list(kept["name"]) == [r["Name"] for r in stats]
    assert kept[["min_ns", "max_ns", "stddev_ns"]].isna().all().all()


@pytest.mark.parametrize("root,prefix", [(HIPPROG, "results"), (BLOGS, "HIP_trace_results")])
def test_hip_api_and_copy_totals_equal_rocprof_stats(root, prefix):
    run = run_by_label(detect.load_path(root), prefix)
    hip = run.api[run.api["domain"] == "hip"]
    assert len(hip) == len(run.api) > 0
    assert_matches_stats(rocprof_stats(hip["name"], hip["end"].to_numpy() - hip["start"].to_numpy()), root / f"{prefix}.hip_stats.csv")
    assert_matches_stats(
        rocprof_stats(run.copies["name"], run.copies["end"].to_numpy() - run.copies["start"].to_numpy()),
        root / f"{prefix}.copy_stats.csv",
    )
    assert set(run.tool_stats) == {"kernel_stats", "hip_api_stats", "memory_copy_stats"}
    # the launch API call and the kernel share the correlation id (rocprof "Index")
    launch = hip[hip["name"] == "hipLaunchKernel"]["correlation_id"].tolist()
    assert sorted(run.kernels["correlation_id"].tolist()) == sorted(launch)
    # copy directions follow the rocprof names
    directions = dict(zip(run.copies["name"].astype(str), run.copies["direction"].astype(str)))
    assert directions == {"CopyHostToDevice": "HtoD", "CopyDeviceToHost": "DtoH"}


def test_directory_has_one_run_per_prefix_and_no_double_counting():
    runset = detect.load_path(BLOGS)
    assert sorted(r.meta.label for r in runset.runs) == ["HIP_trace_results", "HSA_trace_results"]
    assert runset.errors == []
    skipped = {Path(i.path).name: i.message for i in runset.skipped}
    assert skipped == {"HIP_trace_results.json": "same run already loaded from HIP_trace_results.db"}
    for run in runset.runs:
        stats_calls = sum(int(r["Calls"]) for r in read_stats_csv(BLOGS / f"{run.meta.label}.stats.csv"))
        assert len(run.kernels) == stats_calls
        assert run.meta.formats == ["rocprof-v1"]
    # pids come from the data: one process per run
    assert {r.meta.label: r.meta.pid for r in runset.runs} == {
        "HIP_trace_results": int(run_by_label(runset, "HIP_trace_results").api["pid"].iloc[0]),
        "HSA_trace_results": int(run_by_label(runset, "HSA_trace_results").kernels["pid"].iloc[0]),
    }

    runset = detect.load_path(HIPPROG)
    assert sorted(r.meta.label for r in runset.runs) == ["output_vec_add_gpu", "results"]
    assert [Path(i.path).name for i in runset.skipped] == ["results.json"]


def test_db_and_json_of_the_same_run_give_the_same_tables():
    for root, prefix in ((HIPPROG, "results"), (BLOGS, "HIP_trace_results")):
        (db_run,), issues_db = load_files(root / f"{prefix}.db")
        (json_run,), issues_json = load_files(root / f"{prefix}.json")
        assert issues_db == [] and issues_json == []
        for name in ("kernels", "api", "copies", "markers"):
            a = db_run.table(name).sort_values(["start", "end"], kind="stable").reset_index(drop=True)
            b = json_run.table(name).sort_values(["start", "end"], kind="stable").reset_index(drop=True)
            if "correlation_id" in a.columns:
                # rocprof leaves the "Index" (correlation id) out of the JSON args
                assert (b["correlation_id"] == -1).all()
                a, b = a.drop(columns="correlation_id"), b.drop(columns="correlation_id")
            pd.testing.assert_frame_equal(a, b, check_categorical=False)
        assert len(db_run.api) > 10


def test_csv_and_hsa_trace_kernel_columns_match_the_file():
    (run,), issues = load_files(BLOGS / "HSA_trace_results.csv")
    assert issues == []
    row = read_stats_csv(BLOGS / "HSA_trace_results.csv")[0]
    k = run.kernels.iloc[0]
    assert int(k["start"]) == int(row["BeginNs"]) and int(k["end"]) == int(row["EndNs"])
    assert int(k["end"]) - int(k["start"]) == int(row["DurationNs"])  # DurationNs = EndNs - BeginNs
    assert int(k["dispatch_id"]) == int(row["Index"]) and int(k["agent"]) == int(row["gpu-id"])
    assert (int(k["arch_vgpr"]), int(k["accum_vgpr"]), int(k["sgpr"])) == tuple(int(row[c]) for c in ("arch_vgpr", "accum_vgpr", "sgpr"))
    assert str(k["name"]) == row["KernelName"]


def test_counter_run_gives_counters_keyed_by_dispatch_index():
    path = HIPPROG / "output_vec_add_gpu.csv"
    (run,), issues = load_files(path)
    assert issues == []
    rows = read_stats_csv(path)
    assert len(run.kernels) == len(rows)
    # the kernel name is kept as written, including " [clone .kd]"
    assert list(run.kernels["name"].astype(str)) == [r["KernelName"] for r in rows]
    expected = {(int(r["Index"]), c): float(r[c]) for r in rows for c in ("GPUBusy", "Wavefronts")}
    got = {(int(d), str(c)): float(v) for d, c, v in run.counters[["dispatch_id", "counter", "value"]].itertuples(index=False)}
    assert got == expected
    assert set(run.counters["dispatch_id"]) <= set(run.kernels["dispatch_id"])
    assert (run.kernels["start"] == -1).all()
    assert any("no timestamps" in w for w in run.warnings)


def test_agents_from_sysinfo_agree_with_json_other_data():
    runset = detect.load_path(BLOGS)
    run = run_by_label(runset, "HIP_trace_results")
    json_agents = v1.agents_from_props(v1.agents_from_other_data(__import__("json").loads((BLOGS / "HIP_trace_results.json").read_text())["otherData"]))

    def facts(agents):  # the JSON flattening removed the spaces inside values
        return [(a.id, a.type, a.name.replace(" ", ""), a.cu_count, a.wave_size, a.max_waves_per_cu, a.lds_bytes_per_cu, a.max_clock_mhz) for a in agents]

    assert facts(run.agents) == facts(json_agents) and len(json_agents) == 10
    gpus = run.gpu_agents
    assert gpus and all(a.arch.startswith("gfx") for a in gpus)
    # every kernel's gpu-id / dev-id names a GPU agent of the rocminfo dump (KFD node id)
    assert set(run.kernels["agent"]) <= {a.id for a in gpus}
    # sysinfo keeps the spaces the JSON flattening removed
    text = (BLOGS / "HIP_trace_results.sysinfo.txt").read_text(errors="replace")
    assert gpus[0].product and gpus[0].product in text
    assert sum(line.strip() == "Device Type:             GPU" for line in text.splitlines()) == len(gpus)


# --------------------------------------------------------------------------- bad input


def test_truncated_db_falls_back_to_json_and_truncated_csv_is_one_error(tmp_path):
    for name in (
        "HIP_trace_results.db",
        "HIP_trace_results.json",
        "HIP_trace_results.stats.csv",
        "HIP_trace_results.hip_stats.csv",
        "HSA_trace_results.csv",
        "HSA_trace_results.stats.csv",
    ):
        shutil.copy(BLOGS / name, tmp_path / name)
    db = tmp_path / "HIP_trace_results.db"
    db.write_bytes(db.read_bytes()[:6000])
    csv_path = tmp_path / "HSA_trace_results.csv"
    csv_path.write_bytes(csv_path.read_bytes()[:-20])
    runset = detect.load_path(tmp_path)
    errors = {Path(i.path).name: i.message for i in runset.errors}
    assert set(errors) == {"HIP_trace_results.db", "HSA_trace_results.csv"}, errors
    assert all("\n" not in m and len(m) < 300 for m in errors.values())
    assert "truncated" in errors["HSA_trace_results.csv"]
    hip_run = run_by_label(runset, "HIP_trace_results")
    assert len(hip_run.kernels) == 1 and len(hip_run.api) == 135  # loaded from the JSON instead
    assert "kernel_stats" in hip_run.tool_stats
    hsa_run = run_by_label(runset, "HSA_trace_results")
    assert hsa_run.partial and len(hsa_run.kernels) == 0 and "kernel_stats" in hsa_run.tool_stats


def test_truncated_db_alone_is_one_error_and_stats_still_load(tmp_path):
    shutil.copy(BLOGS / "HIP_trace_results.hip_stats.csv", tmp_path)
    (tmp_path / "HIP_trace_results.db").write_bytes((BLOGS / "HIP_trace_results.db").read_bytes()[:6000])
    runset = detect.load_path(tmp_path)
    assert [Path(i.path).name for i in runset.errors] == ["HIP_trace_results.db"]
    assert runset.runs and "hip_api_stats" in runset.runs[0].tool_stats


def test_negative_durations_are_kept_and_counted(tmp_path):
    """A generated results.csv: 3 dispatches of which 2 end before they begin."""
    header = '"Index","KernelName","gpu-id","queue-id","pid","tid","DispatchNs","BeginNs","EndNs","CompleteNs","DurationNs"'
    rows = [
        '0,"k_a",2,0,7,7,100,200,300,310,100',
        '1,"k_a",2,0,7,7,400,500,450,460,-50',
        '2,"k_b [clone .kd]",2,0,7,7,600,700,680,690,-20',
    ]
    path = tmp_path / "results.csv"
    path.write_text("\n".join([header] + rows) + "\n")
    (run,), issues = load_files(path)
    assert issues == []
    assert any(w.startswith("2 kernels rows have a negative duration") for w in run.warnings)
    table = hotspots(run.kernels).set_index("name")
    assert table.loc["k_a", "total_ns"] == 50 and table.loc["k_b [clone .kd]", "total_ns"] == -20
    computed = rocprof_stats(run.kernels["name"], run.kernels["end"].to_numpy() - run.kernels["start"].to_numpy())
    assert computed["k_a"][2] == 25 and computed["k_b [clone .kd]"][2] == -20


def test_loading_never_writes_next_to_the_files(tmp_path):
    for path in BLOGS.iterdir():
        shutil.copy(path, tmp_path / path.name)

    def state():
        return {p.name: (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest()) for p in tmp_path.iterdir()}

    before = state()
    detect.load_path(tmp_path)
    assert state() == before


def test_sniff_leaves_other_formats_alone():
    rocprofv3_kernel = b'"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id"\n'
    rocprofv3_stats = b'"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"\n'
    rocprofv3_api = b'"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
    kineto = b'{\n  "schemaVersion": 1, "traceEvents": [{"ph": "X"}]}'
    rocpd = b"SQLite format 3\x00" + b"\x00" * 100 + b"CREATE TABLE rocpd_info_node_0123 (id INTEGER)"
    for head, name in (
        (rocprofv3_kernel, "1_kernel_trace.csv"),
        (rocprofv3_stats, "1_kernel_stats.csv"),
        (rocprofv3_api, "1_hip_api_trace.csv"),
        (kineto, "x.pt.trace.json"),
        (rocpd, "1_results.db"),
    ):
        assert v1.sniff(Path(name), head) is None, name
    assert v1.sniff(BLOGS / "HIP_trace_results.stats.csv", read_head(BLOGS / "HIP_trace_results.stats.csv")).kind == "kernel_stats"
    assert v1.sniff(BLOGS / "HIP_trace_results.hip_stats.csv", read_head(BLOGS / "HIP_trace_results.hip_stats.csv")).group.endswith("/HIP_trace_results")
