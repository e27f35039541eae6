"""Issue 15: statistics-only runs, exposed vs waiting-for-work sync, and diff verdicts a CI
gate can trust.

Expected values come from the statistics files' own columns (read here with the csv
module), exact parses of rocprofv3 ``--summary`` text, brute-force loops over the trace
rows, or the synthetic generator's construction — never from the code under test.
"""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_diff_support import ATTENTION, slow_down, spec

from tui_prof.analysis import hostapi
from tui_prof.analysis import stats as stats_mod
from tui_prof.analysis.diff import diff_runsets, regressions
from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.cli import main
from tui_prof.exits import EXIT_NOTHING_LOADED, EXIT_OK, EXIT_REGRESSION
from tui_prof.loaders import load_path
from tui_prof.model import Agent, Run, RunMeta, RunSet
from tui_prof.model.schema import make_table
from tui_prof.synth import SynthSpec, build
from tui_prof.synth.write_csv import compute_stats, write_rocprofv3_csv

DATA = Path(__file__).parent / "data"
H200 = DATA / "kineto" / "h200"
HEADER = '"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"\n'
# the first rows of the single-process table in the user's documents, verbatim (issue 15)
ONE_PROCESS = HEADER + (
    '"__amd_rocclr_copyBuffer",7084,17229993,2432.240683,8.38,601,10656,1241.386133\n'
    '"MIOpenBatchNormBwdSpatial",1113,13283773,11935.106020,6.46,6009,51117,6712.148824\n'
)
RCCL = "rccl_main_kernel(ncclDevComm*, unsigned long, ncclWork*)"
GEMM = "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1"
# one rank's table of a 4-process run (constructed): the collective takes 82.74 % of kernel
# time, a GEMM appears, the batch norm stays, the copy kernel dropped out. 1.5e9 ns in all.
FOUR_PROCESS = HEADER + (
    f'"{RCCL}",2400,1241100000,517125.000000,82.74,20011,9801233,400123.500000\n'
    f'"{GEMM}",5000,244900000,48980.000000,16.33,40000,61000,3000.250000\n'
    '"MIOpenBatchNormBwdSpatial",1113,14000000,12578.616352,0.93,6100,50000,6800.000000\n'
)


def read_stats(path: Path) -> dict[str, dict]:
    """A stats CSV's rows by name, straight from the csv module."""
    with open(path, newline="") as fh:
        return {r["Name"]: r for r in csv.DictReader(fh)}


@pytest.fixture()
def stats_pair(tmp_path):
    a, b = tmp_path / "one", tmp_path / "four"
    a.mkdir()
    b.mkdir()
    (a / "2117183_kernel_stats.csv").write_text(ONE_PROCESS)
    (b / "2117301_kernel_stats.csv").write_text(FOUR_PROCESS)
    return a, b


# ---- statistics-only summaries -----------------------------------------------------------


def test_kernel_stats_only_run_gives_hotspots_with_the_profilers_percentage(stats_pair, capsys):
    a, _ = stats_pair
    rows = read_stats(a / "2117183_kernel_stats.csv")
    doc = build_summary(load_path(a), SummaryOptions(logs=False))
    assert doc["hotspots_source"] == "stats"
    assert [h["name"] for h in doc["hotspots"]] == list(rows)
    for h in doc["hotspots"]:
        r = rows[h["name"]]
        assert (h["calls"], h["total_ns"], h["min_ns"], h["max_ns"]) == (int(r["Calls"]), int(r["TotalDurationNs"]), int(r["MinNs"]), int(r["MaxNs"]))
        assert h["avg_ns"] == float(r["AverageNs"]) and h["stddev_ns"] == float(r["StdDev"])
        assert h["percent"] == float(r["Percentage"])  # the profiler's own share (file cut: not re-normalised)
        assert h["median_ns"] is None  # a stats file has no median
    assert doc["kernels"] == {"dispatches": 7084 + 1113, "unique_names": 2, "total_ns": 17229993 + 13283773}
    assert doc["stats"]["source"] == "from rocprofv3 --stats; no trace in this run"
    codes = [f["code"] for f in doc["findings"]]
    # 8197 dispatches averaging 3.72 µs: many tiny kernels, from Calls and TotalDurationNs
    assert codes == ["many-tiny-kernels", "needs-trace"]
    assert "gpu-idle" in doc["stats"]["needs_trace"] and "sync-overhead" in doc["stats"]["needs_trace"]
    assert main(["summary", str(a), "--no-cache"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "Kernels: 8197 dispatches of 2 kernels, 30.5 ms kernel time (from rocprofv3 --stats; no trace in this run)" in out
    assert "Top kernels (from rocprofv3 --stats; no trace in this run)" in out
    assert "rocprofv3 --kernel-trace --sys-trace" in out and "end-to-end span" not in out
    assert main(["summary", str(a), "--no-cache", "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["hotspots_source"] == "stats"
    assert main(["summary", str(a), "--no-cache", "--md"]) == EXIT_OK
    assert "## Top kernels (from rocprofv3 --stats; no trace in this run)" in capsys.readouterr().out


def test_dominant_and_communication_findings_from_statistics(stats_pair):
    _, b = stats_pair
    doc = build_summary(load_path(b), SummaryOptions(logs=False))
    assert doc["hotspots"][0]["name"] == RCCL and doc["hotspots"][0]["percent"] == 82.74
    assert doc["categories"]["communication"] == 1241100000
    codes = [f["code"] for f in doc["findings"]]
    assert codes == ["communication-share", "dominant-kernel", "needs-trace"]
    comm = doc["findings"][0]["numbers"]
    assert comm["pct_of_kernel_time"] == pytest.approx(100.0 * 1241100000 / 1500000000)


def test_legacy_rocprof_stats_only(tmp_path):
    src = DATA / "legacy_rocprof" / "hip-programming"
    for name in ("results.stats.csv", "results.hip_stats.csv", "results.copy_stats.csv"):
        shutil.copy(src / name, tmp_path / name)
    doc = build_summary(load_path(tmp_path), SummaryOptions(logs=False))
    kernel_rows = read_stats(tmp_path / "results.stats.csv")
    assert doc["hotspots_source"] == "stats" and doc["copies_source"] == "stats" and doc["api"]["source"] == "stats"
    assert {h["name"]: (h["calls"], h["total_ns"], h["percent"]) for h in doc["hotspots"]} == {
        n: (int(r["Calls"]), int(r["TotalDurationNs"]), float(r["Percentage"])) for n, r in kernel_rows.items()
    }
    assert all(h["min_ns"] is None and h["stddev_ns"] is None for h in doc["hotspots"])  # 5-column files
    hip = read_stats(tmp_path / "results.hip_stats.csv")
    assert {(r["name"], r["calls"], r["total_ns"]) for r in doc["api"]["rows"]} == {(n, int(r["Calls"]), int(r["TotalDurationNs"])) for n, r in hip.items()}
    copies = read_stats(tmp_path / "results.copy_stats.csv")
    copy_ns = sum(int(r["TotalDurationNs"]) for r in copies.values())
    kernel_ns = sum(int(r["TotalDurationNs"]) for r in kernel_rows.values())
    share = next(f for f in doc["findings"] if f["code"] == "copy-share")
    assert share["numbers"] == {"copy_time_ns": copy_ns, "kernel_time_ns": kernel_ns, "source": "stats"}
    assert f"{100.0 * copy_ns / (copy_ns + kernel_ns):.1f}%" in share["message"]


def test_rocprofv3_summary_text_every_domain():
    path = DATA / "rocprofv3_summary" / "summary.txt"
    text = path.read_text()
    # the file's own rows, split on '|' (no name in this sample contains one)
    expected: dict[str, list[list[str]]] = {}
    domain = None
    for line in text.splitlines():
        if line.startswith("ROCPROFV3 ") and line.rstrip().endswith("SUMMARY:"):
            parts = line.split()
            domain = parts[1] if len(parts) == 3 else None
        elif domain and line.startswith("| ") and "NAME" not in line:
            expected.setdefault(domain, []).append([c.strip() for c in line.split("|")[1:-1]])
    assert set(expected) == {"HSA_API", "HIP_API", "KERNEL_DISPATCH", "MEMORY_COPY", "MEMORY_ALLOCATION"}
    runset = load_path(path)
    assert runset.formats == ["rocprofv3-summary"]
    (run,) = runset.runs
    keys = {
        "HSA_API": "hsa_api_stats",
        "HIP_API": "hip_api_stats",
        "KERNEL_DISPATCH": "kernel_stats",
        "MEMORY_COPY": "memory_copy_stats",
        "MEMORY_ALLOCATION": "memory_allocation_stats",
    }
    assert set(run.tool_stats) == set(keys.values())
    for domain, rows in expected.items():
        t = run.tool_stats[keys[domain]]
        assert t["name"].tolist() == [r[0] for r in rows]
        assert t["calls"].tolist() == [int(r[2]) for r in rows]
        assert t["total_ns"].tolist() == [int(r[3]) for r in rows]
        assert t["percent"].tolist() == [float(r[5]) for r in rows]
        assert t["min_ns"].tolist() == [int(r[6]) for r in rows] and t["max_ns"].tolist() == [int(r[7]) for r in rows]
    doc = build_summary(runset, SummaryOptions(logs=False))
    assert doc["hotspots_source"] == "stats" and doc["hotspots"][0]["percent"] == 40.681542
    assert doc["hotspots"][0]["name"] == "void addition_kernel<float>(float*, float const*, float const*, int, int)"


def test_summary_text_units_and_pipes_in_names():
    from tui_prof.loaders.rocprofv3_summary import parse_summary

    text = (
        "app output line\nROCPROFV3 KERNEL_DISPATCH SUMMARY:\n\n"
        "| NAME | DOMAIN | CALLS | DURATION (usec) | AVERAGE (usec) | PERCENT (INC) | MIN (usec) | MAX (usec) | STDDEV |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
        "| operator|(a, b) | KERNEL_DISPATCH | 2 | 3.5 | 1.75 | 100.0 | 1.5 | 2 | 0.3535 |\n"
    )
    t = parse_summary(text)["kernel_stats"]
    assert t.iloc[0].tolist() == ["operator|(a, b)", 2, 3500, 1750.0, 100.0, 1500, 2000, pytest.approx(353.5)]


def test_several_processes_combine_exactly():
    """Four ranks' tables combine to the statistics of all their samples together."""
    rng = np.random.default_rng(7)
    names, durs, tables = [], [], []
    for rank in range(4):
        n = 50 + 10 * rank
        nm = np.where(rng.random(n) < 0.5, "k1", "k2")
        d = rng.integers(1_000, 90_000, n)
        names.append(nm)
        durs.append(d)
        s = compute_stats(nm, d).rename(
            columns={
                "Name": "name",
                "Calls": "calls",
                "TotalDurationNs": "total_ns",
                "AverageNs": "avg_ns",
                "Percentage": "percent",
                "MinNs": "min_ns",
                "MaxNs": "max_ns",
                "StdDev": "stddev_ns",
            }
        )
        tables.append(s)
    runs = [Run(meta=RunMeta(label=f"r{i}", tool="rocprofv3"), tool_stats={"kernel_stats": t}) for i, t in enumerate(tables)]
    doc = build_summary(RunSet(root="four", runs=runs), SummaryOptions(logs=False))
    allnames, alldurs = np.concatenate(names), np.concatenate(durs)
    grand = int(alldurs.sum())
    for h in doc["hotspots"]:
        d = alldurs[allnames == h["name"]]
        assert (h["calls"], h["total_ns"], h["min_ns"], h["max_ns"]) == (len(d), int(d.sum()), int(d.min()), int(d.max()))
        assert h["stddev_ns"] == pytest.approx(float(np.std(d, ddof=1)), rel=1e-9)
        assert h["percent"] == pytest.approx(100.0 * d.sum() / grand, rel=1e-6)


def test_trace_and_stats_disagreeing_is_a_warning(tmp_path):
    synth = build(SynthSpec(iterations=5, kernels_per_iteration=4, seed=2))
    folder = write_rocprofv3_csv(synth, tmp_path)
    doc = build_summary(load_path(tmp_path, use_cache=False), SummaryOptions(logs=False))
    assert doc["stats"]["checks"] == [] and not any("disagrees" in w for w in doc["warnings"])
    stats_file = next(folder.glob("*_kernel_stats.csv"))
    lines = stats_file.read_text().splitlines()
    first = next(csv.reader([lines[1]]))
    name, calls = first[0], int(first[1])
    fields = lines[1].split(",")
    fields[-7] = str(calls + 1)  # Calls, counted from the right (a name may contain commas)
    lines[1] = ",".join(fields)
    stats_file.write_text("\n".join(lines) + "\n")
    doc = build_summary(load_path(tmp_path, use_cache=False), SummaryOptions(logs=False))
    (check,) = doc["stats"]["checks"]
    assert (check["key"], check["name"], check["trace_calls"], check["stats_calls"]) == ("kernel_stats", name, calls, calls + 1)
    assert any("kernel_stats disagrees with the trace of the same run on 1 name(s)" in w for w in doc["warnings"])


# ---- exposed sync vs waiting for work --------------------------------------------------------


def worked_example_run() -> Run:
    """docs/metrics.md's worked example (ns): kernels [0,100) [290,320) [350,380); sync calls
    [10,120) (GPU busy until 100), [200,230) (GPU idle), [300,400) (a GPU-side hole 320-350)."""
    kernels = make_table(
        "kernels",
        {
            "start": [0, 290, 350],
            "end": [100, 320, 380],
            "agent": [1, 1, 1],
            "name": ["k"] * 3,
            "correlation_id": [1, 2, 3],
            "queue": [0, 0, 0],
            "pid": [9, 9, 9],
        },
    )
    api = make_table(
        "api",
        {
            "start": [10, 200, 300],
            "end": [120, 230, 400],
            "name": ["hipDeviceSynchronize"] * 3,
            "domain": ["hip"] * 3,
            "pid": [9, 9, 9],
            "tid": [9, 9, 9],
            "correlation_id": [11, 12, 13],
        },
    )
    return Run(meta=RunMeta(label="ex", pid=9), agents=[Agent(id=1)], kernels=kernels, api=api)


def test_exposed_sync_worked_example():
    doc = build_summary(RunSet(root="ex", runs=[worked_example_run()]), SummaryOptions(logs=False))
    s = doc["sync"]
    # waiting: 10->100 (90), 300->380 (80, the hole inside counts: work queued before the call)
    # exposed: 100->120 (20), 200->230 (30), 380->400 (20)
    assert (s["total_ns"], s["waiting_ns"], s["exposed_ns"]) == (240, 170, 70)
    assert s["exposed_pct_of_wall"] == round(100.0 * 70 / 400, 4)


def brute_force_exposure(run: Run) -> tuple[int, int]:
    """Per sync call, the last instant in [s, e) at which any kernel or copy runs (a plain loop)."""
    cls = hostapi.api_classes(run.api)
    calls = run.api[(cls == hostapi.SYNC) | (cls == hostapi.BLOCKING_COPY)]
    gpu = [(int(s), int(e)) for t in (run.kernels, run.copies) for s, e in zip(t["start"], t["end"], strict=True)]
    exposed = waiting = 0
    for s, e in zip(calls["start"].astype(int), calls["end"].astype(int), strict=True):
        last = s
        for gs, ge in gpu:
            if gs < e and ge > s:
                last = max(last, min(ge, e))
        waiting += last - s
        exposed += e - last
    return exposed, waiting


@pytest.mark.parametrize("sync", ["per_launch", "end"])
def test_exposed_sync_equals_a_brute_force_loop(sync):
    synth = build(SynthSpec(iterations=8, kernels_per_iteration=5, sync=sync, seed=4))
    run = Run(meta=RunMeta(label="s", pid=1), agents=synth.agents, kernels=synth.kernels, api=synth.api, copies=synth.copies)
    doc = build_summary(RunSet(root="s", runs=[run]), SummaryOptions(logs=False))
    exposed, waiting = brute_force_exposure(run)
    assert (doc["sync"]["exposed_ns"], doc["sync"]["waiting_ns"]) == (exposed, waiting)
    assert exposed + waiting == doc["sync"]["total_ns"]


def test_h200_graph_run_waits_for_work():
    eager, graph = (load_path(H200 / f"decode_{k}.pt.trace.json.gz") for k in ("eager", "graph"))
    for rs in (eager, graph):
        doc = build_summary(rs, SummaryOptions(logs=False))
        exposed, waiting = brute_force_exposure(rs.runs[0])
        assert (doc["sync"]["exposed_ns"], doc["sync"]["waiting_ns"]) == (exposed, waiting)
    g = build_summary(graph, SummaryOptions(logs=False))["sync"]
    # the graph run: 65 % of wall in sync calls, almost all of it while the GPU replays the graph
    assert g["pct_of_wall"] > 60 and g["exposed_pct_of_wall"] < 1 and g["waiting_ns"] > 80 * g["exposed_ns"]


# ---- diff verdicts and the gate ----------------------------------------------------------------


def test_gate_synthetic_sync_per_launch_vs_once_does_not_fail(tmp_path, capsys):
    a, b = build(SynthSpec(sync="per_launch")), build(SynthSpec(sync="end"))
    write_rocprofv3_csv(a, tmp_path / "A")
    write_rocprofv3_csv(b, tmp_path / "B")
    for pct in ("5", "0"):
        assert main(["diff", str(tmp_path / "A"), str(tmp_path / "B"), "--fail-on-regression", pct, "--no-cache"]) == EXIT_OK
        assert capsys.readouterr().out.rstrip().endswith(f"No regression beyond {pct}%.")
    assert main(["diff", str(tmp_path / "A"), str(tmp_path / "B"), "--json", "--fail-on-regression", "5", "--no-cache"]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    m = {r["key"]: r for r in doc["metrics"]}
    assert m["sync_pct"]["better"] == "neutral" and m["exposed_sync_ns"]["status"] == "improved"
    assert m["idle_pct"]["status"] == "changed" and "denominator (GPU span) moved" in m["idle_pct"]["reason"]
    assert all(r["reason"] for r in doc["metrics"])
    assert doc["fail_on_regression"] == {"pct": 5.0, "failed": False, "metrics": [], "tripped": [], "not_judged": [], "inconclusive": [], "exit_status": 0}


def test_gate_h200_eager_vs_graph_does_not_fail(capsys):
    a, b = (str(H200 / f"decode_{k}.pt.trace.json.gz") for k in ("eager", "graph"))
    assert main(["diff", a, b, "--fail-on-regression", "5", "--json", "--no-cache"]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    m = {r["key"]: r for r in doc["metrics"]}
    ea, eb = (build_summary(load_path(p), SummaryOptions(logs=False))["sync"]["exposed_ns"] for p in (a, b))
    assert (m["exposed_sync_ns"]["a"], m["exposed_sync_ns"]["b"]) == (ea, eb) and eb < ea
    assert m["sync_pct"]["b"] > 60 and m["sync_pct"]["status"] == "changed"  # the raw share the gate used to trip on
    assert m["span_ns"]["status"] == "improved" and not doc["fail_on_regression"]["failed"]


def test_gate_one_kernel_twice_as_slow_fails_and_says_why(tmp_path, capsys):
    import dataclasses

    synth = build(spec("end"))
    k, api, cp = slow_down(synth.kernels, synth.api, synth.copies, ATTENTION)
    write_rocprofv3_csv(synth, tmp_path / "A")
    write_rocprofv3_csv(dataclasses.replace(synth, kernels=k, api=api, copies=cp), tmp_path / "B")
    args = ["diff", str(tmp_path / "A"), str(tmp_path / "B"), "--fail-on-regression", "5", "--no-cache"]
    assert main(args) == EXIT_REGRESSION
    out = capsys.readouterr().out
    total = int(synth.expected.kernels.loc[ATTENTION, "total_ns"])
    ktime = synth.expected.kernel_total_ns
    assert f"tripped: kernel time got worse by {100.0 * total / ktime:+.2f}% of A (> 5); lower is better" in out
    assert f"tripped: kernel {ATTENTION[:80]} got slower by +100.0% of its A total (> 5), {100.0 * total / ktime:.1f}% of A's kernel time (> 2% noise)" in out
    assert main([*args, "--json"]) == EXIT_REGRESSION
    gate = json.loads(capsys.readouterr().out)["fail_on_regression"]
    assert gate["failed"] and gate["exit_status"] == EXIT_REGRESSION
    # the time warp also stretches launch calls that straddle a slowed kernel's end: launch API
    # time trips when it grew by more than 5 % in the tables themselves
    launch = [int((t["end"] - t["start"])[t["name"].astype(str) == "hipLaunchKernel"].sum()) for t in (synth.api, api)]
    expected = ["span_ns", "kernel_time_ns"] + (["launch_api_ns"] if launch[1] > 1.05 * launch[0] else [])
    assert [t["key"] for t in gate["tripped"]] == [*expected, f"kernel:{ATTENTION}"]
    assert all(t["reason"] for t in gate["tripped"])


def test_stats_only_diff_one_process_vs_four(stats_pair, capsys):
    a, b = stats_pair
    ra, rb = read_stats(a / "2117183_kernel_stats.csv"), read_stats(b / "2117301_kernel_stats.csv")
    result = diff_runsets(load_path(a), load_path(b))
    k = result.kernels.set_index("key")
    assert k.loc[RCCL, "status"] == "added" and k.loc[RCCL, "share_b"] == 82.74 and math.isnan(k.loc[RCCL, "share_a"])
    assert k.loc[RCCL, "total_b_ns"] == int(rb[RCCL]["TotalDurationNs"]) and k.loc[RCCL, "calls_b"] == 2400
    assert k.loc[GEMM, "status"] == "added"
    bn = "MIOpenBatchNormBwdSpatial"
    assert k.loc[bn, "status"] == "slower"
    assert k.loc[bn, "delta_ns"] == int(rb[bn]["TotalDurationNs"]) - int(ra[bn]["TotalDurationNs"])
    assert k.loc[bn, "delta_calls"] == 0 and (k.loc[bn, "share_a"], k.loc[bn, "share_b"]) == (6.46, 0.93)
    assert k.loc[bn, "avg_a_ns"] == float(ra[bn]["AverageNs"]) and k.loc[bn, "avg_b_ns"] == float(rb[bn]["AverageNs"])
    assert k.loc["__amd_rocclr_copyBuffer", "status"] == "removed"
    assert result.counts() == {"matched": 1, "added": 2, "removed": 1}
    (dom,) = result.domains
    assert dom["domain"] == "KERNEL_DISPATCH"
    assert (dom["calls_a"], dom["calls_b"]) == (7084 + 1113, 2400 + 5000 + 1113)
    assert (dom["total_a_ns"], dom["total_b_ns"]) == (17229993 + 13283773, 1_500_000_000)
    m = {r["key"]: r for r in result.metrics}
    assert m["kernel_time_ns"]["a"] == 17229993 + 13283773 and m["kernel_time_ns"]["b"] == 1_500_000_000
    for key in ("span_ns", "exposed_sync_ns", "idle_pct", "idle_ns"):
        assert m[key]["status"] == "n/a" and m[key]["reason"].startswith("n/a (no trace in A and B)")
    assert main(["diff", str(a), str(b), "--json", "--fail-on-regression", "5", "--no-cache"]) == EXIT_REGRESSION
    doc = json.loads(capsys.readouterr().out)
    assert doc["kernels"]["source_a"] == doc["kernels"]["source_b"] == "stats"
    gate = doc["fail_on_regression"]
    assert "kernel_time_ns" in gate["metrics"] and "span_ns" not in gate["metrics"]
    assert {n["key"] for n in gate["not_judged"]} >= {"span_ns", "exposed_sync_ns", "idle_ns"}
    assert main(["diff", str(a), str(b), "--no-cache"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "n/a (no trace in A and B)" in out and "added" in out and "82.74%" in out


def test_diff_of_empty_runs_is_an_error(tmp_path, capsys):
    for side in ("A", "B"):
        (tmp_path / side).mkdir()
        shutil.copy(DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7" / "238_agent_info.csv", tmp_path / side)
    assert load_path(tmp_path / "A").runs  # it loads: a process with agents and nothing else
    assert main(["diff", str(tmp_path / "A"), str(tmp_path / "B"), "--no-cache"]) == EXIT_NOTHING_LOADED
    err = capsys.readouterr().err
    assert "A holds no kernels, API calls, copies or statistics to compare" in err
    assert diff_runsets(load_path(tmp_path / "A"), load_path(tmp_path / "B")).empty == (True, True)


def test_gate_with_nothing_comparable_cannot_pass(tmp_path):
    """Stats with only API tables on one side, kernels only on the other: no lower-is-better
    metric has data on both sides, so the gate reports that instead of passing."""
    (tmp_path / "A").mkdir()
    (tmp_path / "B").mkdir()
    (tmp_path / "A" / "1_kernel_stats.csv").write_text(ONE_PROCESS)
    (tmp_path / "B" / "1_hip_api_stats.csv").write_text(HEADER + '"hipMalloc",3,300,100.0,100.0,90,110,10.0\n')
    result = diff_runsets(load_path(tmp_path / "A"), load_path(tmp_path / "B"))
    assert regressions(result, 0.0) == []
    assert main(["diff", str(tmp_path / "A"), str(tmp_path / "B"), "--fail-on-regression", "5", "--no-cache"]) == EXIT_NOTHING_LOADED


def test_share_of_a_moved_denominator_is_changed_not_regressed():
    from tui_prof.analysis.diff import METRICS, metric_delta

    idle = next(d for d in METRICS if d.key == "idle_pct")
    row = metric_delta(idle, 10.0, 30.0, denominators=(1000, 500))
    assert row["status"] == "changed" and row["reason"].startswith("a share whose denominator (GPU span) moved -50.0%")
    row = metric_delta(idle, 10.0, 30.0, denominators=(1000, 1010))
    assert row["status"] == "regressed" and "lower is better" in row["reason"]
    row = metric_delta(idle, None, 30.0, missing="no trace")
    assert row["status"] == "n/a" and row["reason"] == "n/a (no trace in A): not compared, cannot pass or fail the gate"


def test_domain_with_no_time_on_either_side_is_same():
    """A domain present in both runs with 0 ns on each side did not get faster."""
    from tui_prof.analysis.diff import domain_diff

    def doc(calls: int) -> dict:
        table = {"key": "marker_api_stats", "domain": "MARKER_API", "calls": calls, "total_ns": 0}
        return {"hotspots_source": "none", "copies_source": "none", "api": {"source": "stats", "rows": []}, "stats": {"tables": [table]}}

    (row,) = domain_diff(doc(3), doc(5))  # type: ignore[arg-type]
    assert (row["domain"], row["status"], row["calls_a"], row["calls_b"], row["delta_ns"], row["delta_pct"]) == ("MARKER_API", "same", 3, 5, 0, None)


def test_empty_diff_names_a_hostile_folder_without_its_escape_sequences(tmp_path, capsys):
    """The folder's name reaches stderr through the one sanitiser: no ESC, no BEL."""
    hostile = "run\x1b]0;pwned\x07\x1b[31m"
    for side in (hostile, "B"):
        (tmp_path / side).mkdir()
        shutil.copy(DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7" / "238_agent_info.csv", tmp_path / side)
    assert main(["diff", str(tmp_path / hostile), str(tmp_path / "B"), "--no-cache"]) == EXIT_NOTHING_LOADED
    err = capsys.readouterr().err
    assert "holds no kernels" in err and "\x1b" not in err and "\x07" not in err
    assert len(err.strip().splitlines()) == 2  # one line per empty side


def test_trace_checks_over_many_processes_match_a_per_name_count():
    """Every process's statistics against its own trace, compared in one pass: the names
    that disagree (calls differ, or total beyond max(calls, 0.01 %)), per process in file
    order, each file's names in text order; a name on one side only counts 0 on the other;
    a name repeated in a file is summed. Expected: dict counts over the rows, here."""
    rng = np.random.default_rng(7)
    names = ["gemm", "Zeta", "copy", "reduce"]
    runs, expected = [], []
    for p in range(6):
        kn = [names[i] for i in rng.integers(0, 3, 20)]
        ks = np.sort(rng.integers(0, 10**6, 20))
        kd = rng.integers(100, 10**5, 20)
        an = [("hipLaunchKernel", "hipMemcpy")[i] for i in rng.integers(0, 2, 8)]
        ast = np.sort(rng.integers(0, 10**6, 8))
        kernels = make_table("kernels", {"start": ks, "end": ks + kd, "agent": [1] * 20, "name": kn})
        api = make_table("api", {"start": ast, "end": ast + 50, "domain": ["hip"] * 8, "name": an})
        trace = {"kernel_stats": {}, "hip_api_stats": {}}
        for n, d in zip(kn, kd, strict=True):
            c, t = trace["kernel_stats"].get(n, (0, 0))
            trace["kernel_stats"][n] = (c + 1, t + int(d))
        for n in an:
            c, t = trace["hip_api_stats"].get(n, (0, 0))
            trace["hip_api_stats"][n] = (c + 1, t + 50)
        tool_stats = {}
        for key, counts in trace.items():
            rows = [[n, c, t] for n, (c, t) in counts.items()]
            if p % 3 == 1 and key == "kernel_stats":  # off by one call; a total off within the rounding; a stats-only name
                rows[0][1] += 1
                rows[-1][2] += max(rows[-1][1], 1) if rows[-1][2] < 10**8 else 0
                rows.append(["reduce", 2, 999])
            if p % 3 == 2 and key == "hip_api_stats":  # a total beyond the rounding; a name split over two rows
                rows[0][2] += 10**6
                rows.append([rows[-1][0], 0, 0])
            if p == 5 and key == "kernel_stats":  # a traced name missing from the file
                rows = rows[1:]
            tool_stats[key] = pd.DataFrame(
                {
                    "name": pd.array([r[0] for r in rows], dtype="str"),
                    "calls": [r[1] for r in rows],
                    "total_ns": [r[2] for r in rows],
                    "avg_ns": 0.0,
                    "percent": 0.0,
                    "min_ns": 0,
                    "max_ns": 0,
                    "stddev_ns": 0.0,
                }
            )
            stats = {}
            for n, c, t in rows:
                sc, st = stats.get(n, (0, 0))
                stats[n] = (sc + c, st + t)
            for n in sorted(set(stats) | set(counts)):
                (sc, st), (tc, tt) = stats.get(n, (0, 0)), counts.get(n, (0, 0))
                if sc != tc or abs(st - tt) > max(sc, tc, 1e-4 * max(st, tt)):
                    expected.append((f"p{p}", key, n, tc, sc, tt, st))
        runs.append(Run(meta=RunMeta(label=f"p{p}", tool="rocprofv3"), kernels=kernels, api=api, tool_stats=tool_stats))
    checks = stats_mod.trace_checks(RunSet(root="six", runs=runs), {id(r): r.meta.label for r in runs})
    got = [(c["process"], c["key"], c["name"], c["trace_calls"], c["stats_calls"], c["trace_total_ns"], c["stats_total_ns"]) for c in checks]
    assert got == expected
    assert {g[0] for g in got} == {"p1", "p2", "p4", "p5"}
