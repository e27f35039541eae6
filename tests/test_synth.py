"""Synthetic run generator: answers known by construction, rocprofv3 CSV and rocpd layouts.

Independent references: the generator's own construction (``SynthRun.expected``) is
re-derived here from the event tables with separate code; file layouts are compared
with real rocprofv3 7.x files and the column lists of a real rocpd database
(tests/data/synth/, see PROVENANCE.md).
"""

from __future__ import annotations

import csv
import json
import math
import re
import sqlite3
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tui_prof.synth import SynthSpec, build, main, summary
from tui_prof.synth.spec import GEMM_NAME
from tui_prof.synth.write_csv import write_rocprofv3_csv
from tui_prof.synth.write_rocpd import write_rocpd

DATA = Path(__file__).parent / "data" / "synth"
REPO = Path(__file__).resolve().parent.parent
UUID_SUFFIX = re.compile(r"_[0-9a-f]{8}_[0-9a-f]{4}_7[0-9a-f]{3}_[89ab][0-9a-f]{3}_[0-9a-f]{12}$")

SPECS = {
    "per_launch": SynthSpec(iterations=7, kernels_per_iteration=6, sync="per_launch", seed=1),
    "per_iteration": SynthSpec(iterations=9, kernels_per_iteration=10, sync="per_iteration", gpus=2, streams=3, seed=2),
    "end": SynthSpec(iterations=5, kernels_per_iteration=4, sync="end", gpus=3, seed=3),
    # small GEMM share: short kernels faster than the launch cadence -> launch gaps
    "launch_bound": SynthSpec(iterations=20, kernels_per_iteration=10, sync="end", gemm_share=0.05, seed=4),
    "no_copies": SynthSpec(iterations=4, kernels_per_iteration=3, sync="per_iteration", htod_copies=0, dtoh_copies=0, seed=5),
}


@pytest.fixture(scope="module", params=sorted(SPECS))
def run(request):
    return build(SPECS[request.param])


def _durations(frame: pd.DataFrame) -> np.ndarray:
    return frame["end"].to_numpy() - frame["start"].to_numpy()


# --------------------------------------------------------------------------- construction


def test_deterministic_for_a_seed():
    a, b = build(SPECS["per_iteration"]), build(SPECS["per_iteration"])
    for name in ("kernels", "api", "copies"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))
    assert summary(a.expected) == summary(b.expected)
    c = build(SynthSpec(**{**SPECS["per_iteration"].to_dict(), "seed": 99}))
    assert not np.array_equal(a.kernels["end"].to_numpy(), c.kernels["end"].to_numpy())


def test_timestamps_are_int64(run):
    for table in (run.kernels, run.api, run.copies):
        assert table["start"].dtype == np.int64 and table["end"].dtype == np.int64
        assert (table["end"] >= table["start"]).all()


def test_kernel_totals_match_expected(run):
    spec, exp = run.spec, run.expected
    assert len(run.kernels) == exp.dispatches == spec.iterations * spec.kernels_per_iteration * spec.gpus
    k = run.kernels.assign(d=_durations(run.kernels))
    got = k.groupby("name", observed=True)["d"].agg(["size", "sum", "min", "max"])
    assert set(got.index) == set(exp.kernels.index)
    for name, row in exp.kernels.iterrows():
        assert tuple(int(v) for v in got.loc[name]) == (row.calls, row.total_ns, row.min_ns, row.max_ns)
    assert exp.kernels["total_ns"].is_monotonic_decreasing
    # the GEMM takes gemm_share of kernel time (jitter is symmetric, so only approximately)
    assert abs(exp.gemm_share - spec.gemm_share) < 0.03
    assert math.isclose(exp.gemm_share, k.loc[k["name"] == GEMM_NAME, "d"].sum() / k["d"].sum())


def test_ids_and_correlation(run):
    k, api, cp = run.kernels, run.api, run.copies
    assert sorted(k["dispatch_id"]) == list(range(1, len(k) + 1))
    assert sorted(api["correlation_id"]) == list(range(1, len(api) + 1))
    # correlation ids follow API start order
    assert api.sort_values(["start", "tid"])["correlation_id"].is_monotonic_increasing
    launches = api[api["name"] == "hipLaunchKernel"].set_index("correlation_id")
    linked = launches.loc[k["correlation_id"]]
    assert len(launches) == len(k)
    assert (linked["tid"].to_numpy() == k["tid"].to_numpy()).all()
    assert (linked["end"].to_numpy() <= k["start"].to_numpy()).all()
    # dispatch ids follow launch order
    assert k.sort_values("correlation_id")["dispatch_id"].is_monotonic_increasing
    memcpys = api[api["name"] == "hipMemcpy"].set_index("correlation_id").loc[cp["correlation_id"]]
    assert (memcpys["start"].to_numpy() <= cp["start"].to_numpy()).all()
    assert (memcpys["end"].to_numpy() >= cp["end"].to_numpy()).all()
    # each host thread drives one GPU; its API calls never overlap
    for tid, calls in api.groupby("tid"):
        calls = calls.sort_values("start")
        assert (calls["start"].to_numpy()[1:] >= calls["end"].to_numpy()[:-1]).all()
    assert k.groupby("tid")["agent"].nunique().eq(1).all()


def _gpu_activity(run, agent: int) -> pd.DataFrame:
    """Kernels and copies on one GPU (copy on its GPU side), sorted by start."""
    k = run.kernels[run.kernels["agent"] == agent][["start", "end"]].assign(kind="kernel")
    cp = run.copies
    side = np.where(cp["direction"].astype(str) == "HtoD", cp["dst_agent"], cp["src_agent"])
    c = cp[side == agent][["start", "end"]].assign(kind="copy")
    return pd.concat([k, c]).sort_values("start", kind="stable").reset_index(drop=True)


def test_gaps_busy_and_span(run):
    exp = run.expected
    syncs = run.api[run.api["name"] == "hipDeviceSynchronize"]
    assert exp.sync_calls == len(syncs) and exp.sync_total_ns == int(_durations(syncs).sum())
    for agent in [a.id for a in run.gpu_agents]:
        act = _gpu_activity(run, agent)
        starts, ends = act["start"].to_numpy(), act["end"].to_numpy()
        assert (starts[1:] >= ends[:-1]).all(), "one activity at a time per GPU"
        hole = starts[1:] > ends[:-1]
        gaps = exp.gaps[agent]
        assert np.array_equal(gaps["start"].to_numpy(), ends[:-1][hole])
        assert np.array_equal(gaps["end"].to_numpy(), starts[1:][hole])
        assert exp.busy_ns[agent] == int((ends - starts).sum())
        assert exp.kernel_busy_ns[agent] == int(_durations(run.kernels[run.kernels["agent"] == agent]).sum())
        assert exp.span[agent] == (int(starts[0]), int(ends[-1]))
        assert exp.span_ns[agent] == exp.busy_ns[agent] + int((gaps["end"] - gaps["start"]).sum())

        # cause: a hipDeviceSynchronize of this GPU's thread returns inside the gap -> "sync";
        # else a copy on either side -> "copy"; else the host was late -> "launch"
        tid = int(run.kernels.loc[run.kernels["agent"] == agent, "tid"].iloc[0])
        sync_ends = np.sort(syncs.loc[syncs["tid"] == tid, "end"].to_numpy())
        kinds = act["kind"].to_numpy()
        prev_kind, next_kind = kinds[:-1][hole], kinds[1:][hole]
        g_start, g_end = gaps["start"].to_numpy(), gaps["end"].to_numpy()
        has_sync = np.searchsorted(sync_ends, g_end) > np.searchsorted(sync_ends, g_start)
        derived = np.where(has_sync, "sync", np.where((prev_kind == "copy") | (next_kind == "copy"), "copy", "launch"))
        assert list(gaps["cause"].astype(str)) == list(derived)
        # every synchronize is followed by idle time (its return lies inside a gap),
        # except a final one with no GPU work after it
        sync_ends = sync_ends[sync_ends < ends[-1]]
        if len(sync_ends):
            inside = np.searchsorted(g_start, sync_ends, side="right") - 1
            assert (inside >= 0).all() and (sync_ends <= g_end[inside]).all()
    assert exp.wall_span == (
        int(min(t["start"].min() for t in (run.kernels, run.api, run.copies) if len(t))),
        int(max(t["end"].max() for t in (run.kernels, run.api, run.copies) if len(t))),
    )


def test_gap_counts_per_sync_mode():
    per_gpu = lambda r: r.expected.gap_counts()[1]  # noqa: E731
    s = SPECS["per_launch"]
    counts = per_gpu(build(s))
    assert counts["sync"] == s.iterations * s.kernels_per_iteration and counts["launch"] == 0
    assert counts["copy"] == s.htod_copies  # between the HtoD copies, and HtoD -> first kernel
    s = SPECS["per_iteration"]
    assert per_gpu(build(s))["sync"] == s.iterations
    assert per_gpu(build(SPECS["end"]))["sync"] == 1
    assert per_gpu(build(SPECS["launch_bound"]))["launch"] > 0


def test_copies_expected(run):
    exp, cp = run.expected, run.copies
    for direction in ("HtoD", "DtoH"):
        rows = cp[cp["direction"].astype(str) == direction]
        assert exp.copy_bytes[direction] == int(rows["bytes"].sum())
        assert exp.copy_calls[direction] == len(rows)
    api = run.api.assign(d=_durations(run.api)).groupby("name", observed=True)["d"].agg(["size", "sum"])
    for name, row in exp.api.iterrows():
        assert (int(api.loc[name, "size"]), int(api.loc[name, "sum"])) == (row.calls, row.total_ns)


def test_agents():
    run = build(SPECS["end"])
    assert [a.type for a in run.agents] == ["CPU", "GPU", "GPU", "GPU"]
    gpu = run.gpu_agents[0]
    assert (gpu.name, gpu.product, gpu.cu_count, gpu.arch) == ("gfx942", "AMD Instinct MI300X", 304, "gfx942")
    assert set(run.kernels["agent"]) == {1, 2, 3}


def test_spec_rejects_bad_values():
    with pytest.raises(ValueError):
        SynthSpec(sync="sometimes")
    with pytest.raises(ValueError):
        SynthSpec(gpus=0)


# --------------------------------------------------------------------------- rocprofv3 CSV


def _header(path: Path) -> str:
    return path.read_text().splitlines()[0]


def _raw_cells(line: str) -> list[str]:
    """Split a CSV line keeping each cell's quotes (rocprofv3 never escapes quotes inside)."""
    cells, cell, quoted = [], "", False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            cells.append(cell)
            cell = ""
        else:
            cell += ch
    return cells + [cell]


def _quoted_pattern(line: str) -> list[bool]:
    return [cell.startswith('"') for cell in _raw_cells(line)]


@pytest.fixture(scope="module")
def csv_dir(tmp_path_factory):
    run = build(SPECS["per_iteration"])
    folder = write_rocprofv3_csv(run, tmp_path_factory.mktemp("csv"), hostname="node7", pid=31337)
    return run, folder


def test_csv_files_and_headers_match_real_rocprofv3(csv_dir):
    _, folder = csv_dir
    assert folder.name == "node7"
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(
        f"31337_{n}.csv"
        for n in ("agent_info", "kernel_trace", "hip_api_trace", "memory_copy_trace", "kernel_stats", "hip_api_stats", "memory_copy_stats", "domain_stats")
    )
    pairs = {
        "kernel_trace": "kernel_trace.csv",
        "hip_api_trace": "hip_runtime_trace.csv",
        "memory_copy_trace": "memory_copy_trace.csv",
        "agent_info": "238_agent_info.csv",
        "kernel_stats": "hip_api_stats.csv",
        "hip_api_stats": "hip_api_stats.csv",
        "memory_copy_stats": "hip_api_stats.csv",
        "domain_stats": "hip_api_stats.csv",
    }
    for ours, real in pairs.items():
        assert _header(folder / f"31337_{ours}.csv") == _header(DATA / real), ours
    assert len(_header(folder / "31337_kernel_trace.csv").split(",")) == 22


def test_csv_quoting_matches_real_rows(csv_dir):
    _, folder = csv_dir
    for ours, real in (
        ("kernel_trace", "kernel_trace.csv"),
        ("hip_api_trace", "hip_runtime_trace.csv"),
        ("memory_copy_trace", "memory_copy_trace.csv"),
        ("agent_info", "238_agent_info.csv"),
    ):
        real_rows = (DATA / real).read_text().splitlines()[1:]
        our_rows = (folder / f"31337_{ours}.csv").read_text().splitlines()[1:]
        patterns = {tuple(_quoted_pattern(r)) for r in our_rows}
        assert patterns == {tuple(_quoted_pattern(real_rows[0]))}, ours
    line = (folder / "31337_kernel_trace.csv").read_text().splitlines()[1]
    assert line.startswith('"KERNEL_DISPATCH","Agent ')


def test_csv_values_round_trip(csv_dir):
    run, folder = csv_dir
    k = pd.read_csv(folder / "31337_kernel_trace.csv")
    assert len(k) == len(run.kernels)
    assert k["Agent_Id"].str.fullmatch(r"Agent \d+").all()
    assert np.array_equal(k["Start_Timestamp"].to_numpy(np.int64), run.kernels["start"].to_numpy())
    assert np.array_equal(k["End_Timestamp"].to_numpy(np.int64), run.kernels["end"].to_numpy())
    assert list(k["Kernel_Name"]) == list(run.kernels["name"].astype(str))
    assert (k["LDS_Block_Size"] % 512 == 0).all()
    api = pd.read_csv(folder / "31337_hip_api_trace.csv")
    assert (api["Process_Id"] == 31337).all() and (api["Domain"] == "HIP_RUNTIME_API_EXT").all()
    assert sorted(set(api["Thread_Id"])) == sorted(set(k["Thread_Id"])) == [31337, 31338]
    assert np.array_equal(api["Correlation_Id"].to_numpy(), run.api["correlation_id"].to_numpy())
    cp = pd.read_csv(folder / "31337_memory_copy_trace.csv")
    assert set(cp["Direction"]) == {"MEMORY_COPY_HOST_TO_DEVICE", "MEMORY_COPY_DEVICE_TO_HOST"}
    agents = pd.read_csv(folder / "31337_agent_info.csv")
    assert list(agents["Agent_Type"]) == ["CPU", "GPU", "GPU"]
    assert (agents.loc[agents["Agent_Type"] == "GPU", "Cu_Count"] == 304).all()


_FLOAT = re.compile(r"^(\d+\.\d{6}|\d\.\d{8}e[+-]\d{2})$")


def _check_stats(stats_path: Path, names, durations):
    """A written *_stats.csv against a recomputation with the statistics module."""
    lines = stats_path.read_text().splitlines()[1:]
    rows = [next(csv.reader([line])) for line in lines]
    raw = [_raw_cells(line) for line in lines]
    groups: dict[str, list[int]] = {}
    for name, dur in zip(names, durations):
        groups.setdefault(str(name), []).append(int(dur))
    grand = sum(sum(v) for v in groups.values())
    assert [r[0] for r in rows] == sorted(groups, key=lambda n: -sum(groups[n]))
    for row, cells in zip(rows, raw):
        values = groups[row[0]]
        assert int(row[1]) == len(values) and int(row[2]) == sum(values)
        assert float(row[3]) == pytest.approx(sum(values) / len(values), rel=1e-9)
        assert row[4] == f"{100.0 * sum(values) / grand:.2f}"
        assert (int(row[5]), int(row[6])) == (min(values), max(values))
        expected_sd = statistics.stdev(values) if len(values) > 1 else 0.0
        assert float(row[7]) == pytest.approx(expected_sd, rel=1e-6, abs=1e-9)
        assert _FLOAT.match(cells[3]) and _FLOAT.match(cells[7]) and re.fullmatch(r"\d+\.\d\d", cells[4])
        assert cells[0].startswith('"') and not cells[1].startswith('"')


def test_stats_files_equal_recomputation(csv_dir):
    run, folder = csv_dir
    k = pd.read_csv(folder / "31337_kernel_trace.csv")
    _check_stats(folder / "31337_kernel_stats.csv", k["Kernel_Name"], k["End_Timestamp"] - k["Start_Timestamp"])
    api = pd.read_csv(folder / "31337_hip_api_trace.csv")
    _check_stats(folder / "31337_hip_api_stats.csv", api["Function"], api["End_Timestamp"] - api["Start_Timestamp"])
    cp = pd.read_csv(folder / "31337_memory_copy_trace.csv")
    _check_stats(folder / "31337_memory_copy_stats.csv", cp["Direction"], cp["End_Timestamp"] - cp["Start_Timestamp"])
    names = ["KERNEL_DISPATCH"] * len(k) + ["HIP_API"] * len(api) + ["MEMORY_COPY"] * len(cp)
    durs = pd.concat([k["End_Timestamp"] - k["Start_Timestamp"], api["End_Timestamp"] - api["Start_Timestamp"], cp["End_Timestamp"] - cp["Start_Timestamp"]])
    _check_stats(folder / "31337_domain_stats.csv", names, durs)
    # and the kernel stats equal the answers known by construction
    stats = pd.read_csv(folder / "31337_kernel_stats.csv").set_index("Name")
    exp = run.expected.kernels
    assert list(stats.index) == list(exp.index)
    assert stats["TotalDurationNs"].tolist() == exp["total_ns"].tolist()


# --------------------------------------------------------------------------- rocpd


@pytest.fixture(scope="module")
def rocpd_db(tmp_path_factory):
    run = build(SPECS["per_iteration"])
    path = write_rocpd(run, tmp_path_factory.mktemp("rocpd") / f"{run.spec.pid}_results.db")
    return run, path


def _ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def test_rocpd_opens_read_only_and_has_real_schema(rocpd_db):
    _, path = rocpd_db
    con = _ro(path)
    with pytest.raises(sqlite3.OperationalError):
        con.execute("CREATE TABLE x (a)")
    meta = dict(con.execute("SELECT tag, value FROM rocpd_metadata"))
    assert meta["schema_version"] == "3"
    assert UUID_SUFFIX.search(meta["uuid"]) and meta["uuid"].replace("_", "-")[1:] == meta["guid"]
    real = json.loads((DATA / "rocpd_28_results_schema_columns.json").read_text())
    ours = {}
    for name, kind in con.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')"):
        if kind == "table" and name.startswith("rocpd_"):
            assert UUID_SUFFIX.search(name), name
            assert name.endswith(meta["uuid"])
        key = UUID_SUFFIX.sub("_<uuid>", name)
        ours[key] = [r[1] for r in con.execute(f"PRAGMA table_info(`{name}`)")]
    required = {"kernels", "regions", "memory_copies", "top_kernels", "top", "busy", "processes", "threads"}
    required |= {n for n in real if n.startswith("rocpd_")}
    assert required <= set(ours)
    for name in required:
        assert ours[name] == real[name]["columns"], name
    con.close()


def test_rocpd_top_kernels_equal_expected(rocpd_db):
    run, path = rocpd_db
    con = _ro(path)
    rows = con.execute("SELECT name, total_calls, total_duration, average, percentage FROM top_kernels").fetchall()
    exp = run.expected.kernels
    assert [r[0] for r in rows] == list(exp.index)
    grand = exp["total_ns"].sum()
    for (name, calls, total_us, avg_us, pct), (_, e) in zip(rows, exp.iterrows()):
        assert calls == e.calls
        assert round(total_us * 1000) == e.total_ns  # microseconds in the view
        assert avg_us == (e.total_ns // e.calls) / 1000.0
        assert pct == pytest.approx(100.0 * e.total_ns / grand)
    con.close()


def test_rocpd_views_agree_with_run(rocpd_db):
    run, path = rocpd_db
    con = _ro(path)
    assert con.execute("SELECT COUNT(*) FROM kernels").fetchone()[0] == run.expected.dispatches
    assert con.execute("SELECT COUNT(*) FROM regions").fetchone()[0] == len(run.api)
    assert con.execute("SELECT COUNT(*) FROM memory_copies").fetchone()[0] == len(run.copies)
    # launch -> kernel link through rocpd_event.stack_id, as in the real database
    linked = con.execute(
        "SELECT COUNT(*) FROM kernels k JOIN regions r ON r.stack_id = k.stack_id WHERE r.name = 'hipLaunchKernel' AND r.tid = k.tid AND r.\"end\" <= k.start"
    ).fetchone()[0]
    assert linked == run.expected.dispatches
    sync = con.execute("SELECT COUNT(*), SUM(duration) FROM regions WHERE name = 'hipDeviceSynchronize'").fetchone()
    assert sync == (run.expected.sync_calls, run.expected.sync_total_ns)
    size = dict(con.execute("SELECT name, SUM(size) FROM memory_copies GROUP BY name"))
    assert size["MEMORY_COPY_HOST_TO_DEVICE"] == run.expected.copy_bytes["HtoD"]
    # busy: kernels on the agent + copies whose destination it is, over the kernel+copy span
    busy = {a: (t, g, w) for a, t, g, w, _ in con.execute("SELECT * FROM busy")}
    htod = run.copies[run.copies["direction"].astype(str) == "HtoD"]
    for agent in [a.id for a in run.gpu_agents]:
        into = int(_durations(htod[htod["dst_agent"] == agent]).sum())
        assert busy[agent][:2] == ("GPU", run.expected.kernel_busy_ns[agent] + into)
    span_start = min(run.kernels["start"].min(), run.copies["start"].min())
    span_end = max(run.kernels["end"].max(), run.copies["end"].max())
    assert busy[1][2] == span_end - span_start
    proc = con.execute("SELECT pid, hostname FROM processes").fetchall()
    assert proc == [(run.spec.pid, "synthhost")]
    con.close()


def test_rocpd_round_trip_through_loader(rocpd_db):
    from tui_prof.loaders import rocpd as loader

    run, path = rocpd_db
    loaded = loader.load_db(path)
    assert len(loaded) == 1
    _assert_same_kernels(loaded[0], run)


def _assert_same_kernels(loaded, run):
    assert len(loaded.kernels) == run.expected.dispatches
    k = loaded.kernels.assign(d=_durations(loaded.kernels))
    totals = k.groupby(k["name"].astype(str))["d"].agg(["size", "sum"])
    exp = run.expected.kernels
    assert set(totals.index) == set(exp.index)
    for name, row in exp.iterrows():
        assert (int(totals.loc[name, "size"]), int(totals.loc[name, "sum"])) == (row.calls, row.total_ns)
    ours = loaded.kernels.sort_values("dispatch_id")
    assert np.array_equal(ours["correlation_id"].to_numpy(), run.kernels.sort_values("dispatch_id")["correlation_id"].to_numpy())


@pytest.mark.parametrize("fmt", ["csv", "rocpd"])
def test_round_trip_through_load_path(tmp_path, fmt):
    from tui_prof.loaders import load_path

    run = build(SPECS["end"])
    if fmt == "csv":
        write_rocprofv3_csv(run, tmp_path, pid=run.spec.pid)
    else:
        write_rocpd(run, tmp_path / f"{run.spec.pid}_results.db")
    runset = load_path(tmp_path)
    assert not runset.errors, runset.errors
    assert len(runset.runs) == 1
    _assert_same_kernels(runset.runs[0], run)


# --------------------------------------------------------------------------- CLI and bundled samples


def test_cli_writes_files_and_answers(tmp_path, capsys):
    answers = tmp_path / "answers.json"
    assert (
        main([str(tmp_path / "out"), "--format", "csv", "--dispatches", "95", "--kernels-per-iteration", "10", "--sync", "end", "--answers", str(answers)]) == 0
    )
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(answers.read_text())
    assert printed["dispatches"] == 100  # rounded up to whole iterations
    assert sum(1 for _ in open(tmp_path / "out" / "synthhost" / "4242_kernel_trace.csv")) == 101
    assert main([str(tmp_path / "db"), "--format", "rocpd", "--dispatches", "20", "--gpus", "2"]) == 0
    db = tmp_path / "db" / "synthhost" / "4242_results.db"
    assert _ro(db).execute("SELECT COUNT(*) FROM kernels").fetchone()[0] == 20
    assert main([str(tmp_path / "x"), "--gpus", "0"]) == 2


@pytest.mark.parametrize("name,sync", [("synthetic_sync_per_launch", "per_launch"), ("synthetic_sync_once", "end")])
def test_bundled_samples_regenerate_identically(tmp_path, name, sync):
    """The bundled samples are what their README's command writes, with the README's answers."""
    sample = REPO / "sample_traces" / name
    readme = (sample / "README.md").read_text()
    command = f"python -m tui_prof.synth sample_traces/{name} --format csv --dispatches 2000 --sync {sync}"
    assert command in readme
    assert main([str(tmp_path), *command.split()[4:], "--answers", str(tmp_path / "answers.json")]) == 0
    ours = sorted(p.name for p in (sample / "synthhost").iterdir())
    assert ours == sorted(p.name for p in (tmp_path / "synthhost").iterdir())
    for file in ours:
        assert (sample / "synthhost" / file).read_bytes() == (tmp_path / "synthhost" / file).read_bytes(), file
    stated = json.loads(readme.split("```json", 1)[1].split("```", 1)[0])
    assert stated == json.loads((tmp_path / "answers.json").read_text())
    assert sum(p.stat().st_size for p in sample.rglob("*") if p.is_file()) < 1_000_000
