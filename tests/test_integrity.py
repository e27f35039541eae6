"""Integrity checks (issue 32): the real misreadings they fix, injected defects found with the
right code and place, and no degrading issue on the clean real traces (tests/data, PROVENANCE.md)."""

from __future__ import annotations

import copy
import csv
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tui_prof.analysis.api import CheckReport, build_summary, check_run
from tui_prof.loaders import load_path
from tui_prof.model import RunSet

DATA = Path(__file__).parent / "data"
SALTFISH = DATA / "legacy_rocprof" / "saltfish"
HIPPROG = DATA / "legacy_rocprof" / "hip-programming"
DOCS7 = DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7"
TRAIN_SYNC = DATA / "kineto" / "h200" / "train_sync.pt.trace.json.gz"
RANKS = DATA / "kineto" / "ranks"

# Real single recordings: none may report an issue that degrades a figure.
CLEAN = [
    "kineto/critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
    "kineto/critical_path__cuda_event_sync__event_sync_trace.json.gz",
    "kineto/critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz",
    "kineto/critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz",
    "kineto/h100__gaunernst_bert-small-uncased__1016001.json.gz",
    "kineto/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
    "kineto/mi210__gpu_only_trace__gpu_only_trace.json.gz",
    "kineto/mi300__gaunernst_bert-small-uncased__1016001.json.gz",
    "kineto/mi300__resnet_act_checkpoint.json.gz",
    "kineto/torch_compile_triton__trace.json.gz",
    "kineto/trace_filter__sampled_rank-0.json.gz",
    "kineto/triton_example__triton_example.json.gz",
    "kineto/h200/copies.pt.trace.json.gz",
    "kineto/h200/decode_eager.pt.trace.json.gz",
    "kineto/h200/decode_graph.pt.trace.json.gz",
    "kineto/h200/gpt2_shapes_modules.pt.trace.json.gz",
    "kineto/h200/train_sync.pt.trace.json.gz",
    "kineto/h200_cold/cold_train_memory.pt.trace.json.gz",
    "kineto/ranks",
    "kineto/comm/nccl_parser_config__nccl_data.json.gz",
    "rocpd/28_results.db",
    "rocprofv3_json/908_results.json.gz",
    "rocprofv2/saltfish",
    "rocprof_compute/batched_gemm",
    "legacy_rocprof/hip-programming",
    "legacy_rocprof/saltfish",
]


def codes(report: CheckReport) -> dict[str, list]:
    out: dict[str, list] = {}
    for issue in report.issues:
        out.setdefault(issue.code, []).append(issue)
    return out


@pytest.mark.parametrize("path", CLEAN)
def test_clean_real_traces_have_no_degrading_issue(path):
    report = check_run(load_path(DATA / path))
    assert [(i.code, i.message) for i in report.degrading] == []


# --- the real misreadings ----------------------------------------------------------------------


def test_barrier_packets_kept_out_of_kernel_stats():
    with open(SALTFISH / "results.stats.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    barrier = [r for r in rows if r["Name"] == "<barrier packet>"]
    kernels = [r for r in rows if r["Name"] != "<barrier packet>"]
    assert len(barrier) == 1 and int(barrier[0]["Calls"]) == 85112
    runset = load_path(SALTFISH)
    stats = runset.runs[0].tool_stats["kernel_stats"]
    assert "<barrier packet>" not in set(stats["name"])
    assert len(stats) == len(kernels)
    total = sum(int(r["TotalDurationNs"]) for r in kernels)
    assert stats["percent"].sum() == pytest.approx(100.0)
    top = max(kernels, key=lambda r: int(r["TotalDurationNs"]))
    assert stats.loc[stats["name"] == top["Name"], "percent"].item() == pytest.approx(int(top["TotalDurationNs"]) / total * 100)
    doc = build_summary(runset)
    assert doc["hotspots"][0]["name"] == top["Name"]
    assert doc["kernels"]["total_ns"] == total
    (issue,) = codes(check_run(runset))["non-kernel-packets"]
    assert issue.severity == "info"
    assert issue.affects["calls"] == 85112 and issue.affects["total_ns"] == int(barrier[0]["TotalDurationNs"])


def test_counter_passes_of_other_processes_are_not_summed():
    """divide_kernel: every SQ_WAVES row holds 16,384; two processes' rows with the same dispatch
    id were summed into one dispatch (24,576 on average)."""
    runset = load_path(DOCS7)
    passes = [r for r in runset.runs if "counters pid" in r.meta.label]
    assert sorted(r.meta.extra["pids"][0] for r in passes) == [15606, 36499]
    for run in passes:
        assert not run.counters.duplicated(["dispatch_id", "counter"]).any()
    doc = build_summary(runset)
    waves = [
        m["value"]
        for rec in doc["counters"]
        for k in rec.get("kernels", [])
        if "divide_kernel" in k["name"]
        for key, m in k["metrics"].items()
        if key == "waves"
    ]
    assert waves and all(v == 16384 for v in waves)
    assert not any("counters pid" in r["label"] for r in doc["ranks"])  # other recordings, not ranks
    assert "counter-duplicated" not in codes(check_run(runset))


def test_counter_duplicates_in_one_process_are_reported():
    runset = load_path(DOCS7)
    run = next(r for r in runset.runs if r.meta.label.endswith("pid 15606"))
    run.counters = pd.concat([run.counters, run.counters.iloc[[3]]], ignore_index=True)
    (issue,) = codes(check_run(runset))["counter-duplicated"]
    assert issue.severity == "unreliable" and issue.affects["dispatch_ids"] == [4]


def test_timestampless_counter_pass_does_not_stretch_the_span():
    """hip-programming: the counter pass (output_vec_add_gpu.csv) has no timestamps; its -1s
    made the span 622,111 s. The span is the trace's own: first call to last end in results.db."""
    con = sqlite3.connect(HIPPROG / "results.db")
    lo, hi = (
        min(con.execute(f"select min(BeginNs), max(EndNs) from {t}").fetchone() for t in ("HIP", "OPS", "COPY"))[0],
        max(con.execute(f"select max(EndNs) from {t}").fetchone()[0] for t in ("HIP", "OPS", "COPY")),
    )
    con.close()
    doc = build_summary(load_path(HIPPROG))
    assert doc["wall_ns"] == hi - lo


@pytest.mark.parametrize("path", [DOCS7, DATA / "legacy_rocprof" / "rocm-blogs"])
def test_separate_recordings_in_one_folder_are_flagged(path):
    report = check_run(load_path(path))
    (issue,) = codes(report)["clock-domains"]
    assert issue.severity == "unreliable" and len(issue.affects["clusters"]) >= 2
    assert report.trust("measurement")[0] == "unreliable"


# --- injected defects in real traces -----------------------------------------------------------


def _train_sync() -> RunSet:
    return load_path(TRAIN_SYNC)


def test_injected_overlap_is_found_where_it_was_put():
    runset = _train_sync()
    k = runset.runs[0].kernels
    # a kernel launched with cudaLaunchKernel (not PDL) moved to start at its predecessor's start
    api = runset.runs[0].api
    plain = set(api.loc[api["name"].astype(str) == "cudaLaunchKernel", "correlation_id"])
    stream = k["stream"].to_numpy()
    row = next(
        i
        for i in range(1, len(k))
        if k["correlation_id"].iat[i] in plain and stream[i] == stream[i - 1] and k["end"].iat[i - 1] - k["start"].iat[i - 1] > 10_000
    )
    dur = k["end"].iat[row] - k["start"].iat[row]
    k.loc[row, "start"] = k["start"].iat[row - 1] + 1
    k.loc[row, "end"] = k["start"].iat[row] + dur
    (issue,) = codes(check_run(runset))["queue-overlap"]
    assert issue.affects["rows"] == 1 and issue.affects["examples"][0]["row"] == row


def test_pdl_overlaps_are_not_flagged():
    """train_sync holds 78 kernels overlapping their predecessor on one stream, each launched
    with cudaLaunchKernelExC and by a small fraction (programmatic dependent launch): real."""
    runset = _train_sync()
    run = runset.runs[0]
    k = run.kernels.sort_values(["stream", "start"], kind="stable")
    prev_end = k.groupby("stream")["end"].shift().fillna(-1).astype("int64")
    overlapping = k[k["start"] < prev_end]
    assert len(overlapping) == 78
    calls = run.api.set_index("correlation_id")["name"].astype(str)
    assert set(calls.reindex(overlapping["correlation_id"])) == {"cudaLaunchKernelExC"}
    share = (prev_end[overlapping.index] - overlapping["start"]) / (overlapping["end"] - overlapping["start"])
    assert share.max() < 0.5
    assert "queue-overlap" not in codes(check_run(runset))


def test_injected_overflow_and_negative_durations():
    runset = _train_sync()
    k = runset.runs[0].kernels
    k.loc[10, "end"] = k["start"].iat[10] + (1 << 42)  # an overflowed duration (~73 min)
    k.loc[20, "end"] = k["start"].iat[20] - 5
    found = codes(check_run(runset))
    assert found["duration-overflow"][0].affects["examples"][0]["row"] == 10
    assert found["negative-duration"][0].affects["examples"][0]["row"] == 20
    assert found["duration-overflow"][0].severity == "unreliable"


def test_injected_dropped_range_is_found():
    runset = _train_sync()
    run = runset.runs[0]
    k = run.kernels
    lo, hi = np.quantile(k["start"], [0.4, 0.6]).astype(np.int64)
    run.kernels = k[(k["start"] < lo) | (k["start"] > hi)].reset_index(drop=True)
    (issue,) = codes(check_run(runset))["unlinked-launches"]
    first, last = issue.affects["time_range_ns"]
    launches = run.api[run.api["correlation_id"].isin(k.loc[(k["start"] >= lo) & (k["start"] <= hi), "correlation_id"])]
    assert first == int(launches["start"].min()) and issue.affects["rows"] == len(launches)


def test_injected_clock_shift_of_one_process():
    runset = load_path(RANKS)
    assert "clock-domains" not in codes(check_run(runset))
    shifted = runset.runs[1]
    day = 86_400 * 10**9
    for name in ("kernels", "api", "copies"):
        table = shifted.table(name)
        table["start"] += day
        table["end"] += day
    (issue,) = codes(check_run(runset))["clock-domains"]
    holds = [set(c["holds"]) for c in issue.affects["clusters"]]
    label = shifted.meta.label
    assert any(all(h.startswith(label) for h in c) for c in holds)


def test_injected_impossible_and_zero_counters():
    runset = load_path(DOCS7)
    run = next(r for r in runset.runs if r.meta.label.endswith("pid 15606"))
    broken = copy.deepcopy(run)
    broken.counters.loc[2, "value"] = -16384.0
    found = codes(check_run(RunSet("x", [broken])))
    (issue,) = found["counter-impossible"]
    assert issue.affects["dispatch_ids"] == [int(run.counters["dispatch_id"].iat[2])]
    zero = copy.deepcopy(run)
    zero.counters["value"] = 0.0
    (issue,) = codes(check_run(RunSet("x", [zero])))["counter-all-zero"]
    assert issue.affects["counters"] == ["SQ_WAVES"]


# --- the command, the trust labels, the diff gate ----------------------------------------------


def test_check_cli_exit_status_and_json(capsys):
    import json

    from tui_prof.cli import main
    from tui_prof.exits import EXIT_DEGRADED, EXIT_OK

    assert main(["check", "--no-cache", "--json", str(DOCS7)]) == EXIT_DEGRADED == 5
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "tuiprof.check/1" and doc["degraded"] is True
    for issue in doc["issues"]:
        assert set(issue) == {"code", "severity", "message", "affects", "fix"}
        assert issue["fix"]  # what to do: every code has one (integrity.FIXES)
        assert issue["severity"] in ("info", "degraded", "unreliable")
    assert "clock-domains" in {i["code"] for i in doc["issues"]}
    assert main(["check", "--no-cache", str(SALTFISH)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "non-kernel-packets" in out and "Nothing degrades a figure" in out


def test_check_text_sanitises_trace_strings(tmp_path, capsys):
    """A hostile kernel name in an overlapping kernel's example never reaches the terminal raw."""
    from tui_prof.render.integrity import check_text

    runset = _train_sync()
    k = runset.runs[0].kernels
    hostile = "\x1b]52;c;ZXZpbA==\x07\x1b[31mevil"
    k["name"] = k["name"].cat.add_categories([hostile])
    k.loc[5, "name"] = hostile
    k.loc[5, "end"] = k["start"].iat[5] - 10
    text = check_text(check_run(runset).record())
    assert "negative-duration" in text and "\x1b" not in text and "\x07" not in text


def test_summary_json_carries_trust_on_every_section():
    doc = build_summary(load_path(DOCS7))
    keys = set(doc) - {"schema", "tuiprof_version", "trust"}
    assert set(doc["trust"]) == keys
    assert {v["trust"] for v in doc["trust"].values()} <= {"ok", "degraded", "unreliable"}
    assert doc["trust"]["measurement"]["trust"] == "unreliable"
    assert doc["trust"]["measurement"]["reasons"][0].startswith("unreliable clock-domains:")
    clean = build_summary(_train_sync())
    assert all(v == {"trust": "ok", "reasons": []} for v in clean["trust"].values())


def test_text_and_markdown_mark_degraded_sections():
    from tui_prof.render.summary import summary_markdown, summary_text

    doc = build_summary(load_path(DOCS7))
    text = summary_text(doc)
    assert "Measurements [unreliable: see tuiprof check]" in text and "Trust (tuiprof check lists the evidence)" in text
    assert "## Measurements \\[unreliable: see tuiprof check\\]" in summary_markdown(doc)
    clean = summary_text(build_summary(_train_sync()))
    assert "[unreliable" not in clean and "[degraded" not in clean and "Trust (" not in clean


def test_diff_gate_is_inconclusive_when_a_gated_metric_is_unreliable(capsys, tmp_path):
    """B: train_sync with one kernel's duration overflowed (2 h): its kernel time and span are
    unreliable, so the gate answers inconclusive. (The docs folders once served here: their
    separate recordings are now compared one each, --recording.)"""
    import gzip
    import json

    from tui_prof.cli import main
    from tui_prof.exits import EXIT_INCONCLUSIVE

    with gzip.open(TRAIN_SYNC, "rt") as fh:
        trace = json.load(fh)
    kernel = next(e for e in trace["traceEvents"] if e.get("cat") == "kernel" and e.get("ph") == "X")
    kernel["dur"] = 2 * 3_600 * 1e6  # µs
    broken = tmp_path / "broken.pt.trace.json"
    broken.write_text(json.dumps(trace))
    assert "duration-overflow" in codes(check_run(load_path(broken)))
    assert main(["diff", "--no-cache", str(broken), str(TRAIN_SYNC), "--fail-on-regression", "5"]) == EXIT_INCONCLUSIVE == 6
    assert "INCONCLUSIVE" in capsys.readouterr().out
    assert main(["diff", "--no-cache", "--json", str(TRAIN_SYNC), str(broken), "--fail-on-regression", "5"]) == EXIT_INCONCLUSIVE
    gate = json.loads(capsys.readouterr().out)["fail_on_regression"]
    assert gate["exit_status"] == 6 and {u["side"] for u in gate["inconclusive"]} == {"B"}
    assert main(["diff", "--no-cache", str(TRAIN_SYNC), str(TRAIN_SYNC), "--fail-on-regression", "5"]) == 0


def test_separate_recordings_are_listed_and_one_is_summarised(capsys):
    """rocm-blogs: an --hip-trace and an --hsa-trace recording 21 h apart. The summary takes one
    (its span is that recording's own, from its results.db), says so, and --recording picks the other."""
    import json

    from tui_prof.analysis.api import recordings
    from tui_prof.cli import main
    from tui_prof.exits import EXIT_USAGE

    blogs = DATA / "legacy_rocprof" / "rocm-blogs"
    runset = load_path(blogs)
    groups = recordings(runset)
    assert [[runset.runs[i].meta.label for i in g] for g in groups] == [["HIP_trace_results"], ["HSA_trace_results"]]
    con = sqlite3.connect(blogs / "HIP_trace_results.db")
    lo = min(con.execute(f"select min(BeginNs) from {t}").fetchone()[0] for t in ("HIP", "OPS", "COPY"))
    hi = max(con.execute(f"select max(EndNs) from {t}").fetchone()[0] for t in ("HIP", "OPS", "COPY"))
    con.close()
    assert main(["summary", "--no-cache", "--json", str(blogs)]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert [p["label"] for p in doc["processes"]] == ["HIP_trace_results"] and doc["wall_ns"] == hi - lo
    assert "holds 2 separate recordings" in captured.err and "summarised recording 1; pick another with --recording N" in captured.err
    assert main(["summary", "--no-cache", "--json", "--recording", "2", str(blogs)]) == 0
    assert [p["label"] for p in json.loads(capsys.readouterr().out)["processes"]] == ["HSA_trace_results"]
    assert main(["summary", "--no-cache", "--recording", "3", str(blogs)]) == EXIT_USAGE
    assert main(["summary", "--no-cache", "--recording", "2", str(TRAIN_SYNC)]) == EXIT_USAGE
    assert recordings(load_path(RANKS)) == [[0, 1]]


def test_graph_replays_without_kernel_rows_are_found():
    """h200 decode_graph: 20 cudaGraphLaunch calls, each with its replay's kernels; drop the
    kernels of the last 5 replays and the check names those 5 launches."""
    from tui_prof.analysis.hostapi import GRAPH_LAUNCH, api_classes

    runset = load_path(DATA / "kineto" / "h200" / "decode_graph.pt.trace.json.gz")
    assert "graph-without-kernels" not in codes(check_run(runset))
    run = runset.runs[0]
    graphs = run.api.iloc[np.flatnonzero(api_classes(run.api) == GRAPH_LAUNCH)]
    assert len(graphs) == 20 and graphs["correlation_id"].isin(run.kernels["correlation_id"]).all()
    dropped = graphs.tail(5)
    run.kernels = run.kernels[~run.kernels["correlation_id"].isin(dropped["correlation_id"])].reset_index(drop=True)
    (issue,) = codes(check_run(runset))["graph-without-kernels"]
    assert issue.affects["rows"] == 5 and issue.affects["time_range_ns"][0] == int(dropped["start"].min())


def test_known_defective_counter_on_its_architecture():
    """SQ_WAVES on gfx1151 (rocm-systems #3828): flagged there, not on the docs sample's gfx900."""
    from tui_prof.model import Agent

    runset = load_path(DOCS7)
    run = copy.deepcopy(next(r for r in runset.runs if r.meta.label.endswith("pid 15606")))
    assert "counter-known-defective" not in codes(check_run(RunSet("x", [run])))
    run.agents = [Agent(id=a, type="GPU", name="gfx1151") for a in sorted(set(run.counters["agent"].tolist()))]
    (issue,) = codes(check_run(RunSet("x", [run])))["counter-known-defective"]
    assert issue.affects["counters"] == ["SQ_WAVES"] and issue.severity == "unreliable"


def test_mcp_check_tool_returns_the_cli_json(capsys):
    import json

    from tui_prof import mcp_server
    from tui_prof.analysis.integrity import check_document
    from tui_prof.cli import main

    assert "check" in {s.name for s in mcp_server.tool_specs()}
    main(["check", "--no-cache", "--json", str(DOCS7)])
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(check_document(load_path(DOCS7))))


# --- out-of-order timestamps, the buffer-full signature, counters above their bound ------------


def test_injected_out_of_order_kernels_and_calls_are_found():
    """Two consecutive kernels of one stream swap their times: the later-launched one (higher
    correlation id) now starts first, at its row; the same for two calls of one thread."""
    runset = _train_sync()
    run = runset.runs[0]
    assert "timestamps-out-of-order" not in codes(check_run(runset))
    k = run.kernels
    stream, ids = k["stream"].to_numpy(), k["correlation_id"].to_numpy()
    i = next(i for i in range(100, len(k) - 1) if stream[i] == stream[i + 1] and 0 < ids[i] < ids[i + 1])
    (a0, a1), (b0, b1) = (int(k["start"].iat[i]), int(k["end"].iat[i])), (int(k["start"].iat[i + 1]), int(k["end"].iat[i + 1]))
    k.loc[i, ["start", "end"]] = [b0, b1]
    k.loc[i + 1, ["start", "end"]] = [a0, a1]
    api = run.api
    tid, aids = api["tid"].to_numpy(), api["correlation_id"].to_numpy()
    j = next(
        j for j in range(200, len(api) - 1) if tid[j] == tid[j + 1] and 0 < aids[j] < aids[j + 1] and api["start"].iat[j + 1] - api["start"].iat[j] > 5_000
    )
    s0, s1 = int(api["start"].iat[j]), int(api["start"].iat[j + 1])
    api.loc[j, "start"], api.loc[j + 1, "start"] = s1, s0
    found = {i.affects["table"]: i for i in codes(check_run(runset))["timestamps-out-of-order"]}
    assert found["kernels"].affects["rows"] == 1 and found["kernels"].affects["examples"][0]["row"] == i + 1
    assert found["api"].affects["rows"] == 1 and found["api"].affects["examples"][0]["row"] == j + 1
    assert found["kernels"].severity == "degraded"


def test_injected_buffer_full_tail_is_found():
    """Every kernel after 90 % of the run dropped (a full buffer discarding new records): the
    launch calls after the last kernel's own call are the tail the check names."""
    runset = _train_sync()
    run = runset.runs[0]
    k = run.kernels
    cut = int(np.quantile(k["start"], 0.9))
    kept = k[k["start"] < cut]
    run.kernels = kept.reset_index(drop=True)
    api = run.api
    names = api["name"].astype(str)
    launch = names.isin(["cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel"]).to_numpy()  # the kernel launches this trace makes
    last_linked = api.loc[launch & api["correlation_id"].isin(kept["correlation_id"]).to_numpy(), "start"].max()
    tail = api[launch & (api["start"] > last_linked).to_numpy()]
    (issue,) = codes(check_run(runset))["buffer-full"]
    assert issue.affects["rows"] == len(tail) and issue.affects["time_range_ns"][0] == int(tail["start"].min())
    assert str(int(kept["end"].max())) in issue.message


def test_a_short_unlinked_tail_is_not_a_full_buffer():
    runset = _train_sync()
    run = runset.runs[0]
    run.kernels = run.kernels.iloc[:-3].reset_index(drop=True)  # the last 3 kernels never ran in the window
    assert "buffer-full" not in codes(check_run(runset))


def test_counter_above_the_grids_waves_is_found():
    """SQ_WAVES of every dispatch of the docs pass is exactly the waves its grid launches
    (parsed from the CSV); one raised above the most its grid can launch at any wave size (this
    pass records no agent: 32) is found at its dispatch."""
    with open(DOCS7 / "counter_collection.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["Counter_Name"] == "SQ_WAVES"]
    for r in rows:
        grid, wg = int(r["Grid_Size"]), int(r["Workgroup_Size"])
        assert float(r["Counter_Value"]) == -(-wg // 64) * -(-grid // wg)
    runset = load_path(DOCS7)
    assert "counter-above-peak" not in codes(check_run(runset))
    run = next(r for r in runset.runs if r.meta.label.endswith("pid 15606"))
    broken = copy.deepcopy(run)
    c = broken.counters
    row = int(np.flatnonzero(c["counter"].astype(str).to_numpy() == "SQ_WAVES")[1])
    c.loc[row, "value"] = c["value"].iat[row] * 2  # the bound without agent info: wave size 32, twice the waves
    assert "counter-above-peak" not in codes(check_run(RunSet("x", [broken])))
    c.loc[row, "value"] = c["value"].iat[row] + 64
    (issue,) = codes(check_run(RunSet("x", [broken])))["counter-above-peak"]
    assert issue.affects["dispatch_ids"] == [int(c["dispatch_id"].iat[row])] and issue.affects["counters"] == ["SQ_WAVES"]
    assert issue.severity == "unreliable"


# --- separate recordings merged into one process: split; --recording on every command -----------


def test_a_process_merging_separate_recordings_is_split():
    """The docs rocm7 folder: the loader merges the sample files (of runs days apart) into one
    process. Split, every part's rows lie in one cluster (no part alone has clock-domains), and
    every row of every table is in exactly one part."""
    from tui_prof.analysis.api import split_recordings
    from tui_prof.model.schema import TABLES

    runset = load_path(DOCS7)
    merged = next(r for r in runset.runs if r.meta.label == "rocprofv3-docs-rocm7")
    assert "clock-domains" in codes(check_run(RunSet("x", [merged])))
    split = split_recordings(runset)
    parts = [r for r in split.runs if r.meta.label.startswith("rocprofv3-docs-rocm7 · part ")]
    assert len(parts) >= 2 and len(split.runs) == len(runset.runs) - 1 + len(parts)
    for name in TABLES:
        assert sum(len(p.table(name)) for p in parts) == len(merged.table(name)), name
    for part in parts:
        assert "clock-domains" not in codes(check_run(RunSet("x", [part])))
        assert any("statistics files" in w for w in part.warnings)  # hip_api_stats covers every recording
    ranks = load_path(RANKS)
    assert split_recordings(ranks) is ranks  # one recording: untouched


def test_summary_of_the_docs_folder_has_a_sane_span(capsys):
    """3,701,249 s pooled before; now one recording is summarised, its span its own."""
    import json

    from tui_prof.analysis.api import pick_recording
    from tui_prof.cli import main

    choice = pick_recording(load_path(DOCS7))
    assert choice.count >= 2
    assert main(["summary", "--no-cache", "--json", str(DOCS7)]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    starts = [int(t[c].min()) for r in choice.runset.runs for t in (r.kernels, r.api, r.copies) for c in ("start",) if len(t) and (t[c] != -1).any()]
    ends = [int(t["end"].max()) for r in choice.runset.runs for t in (r.kernels, r.api, r.copies) if len(t) and (t["start"] != -1).any()]
    assert doc["wall_ns"] == max(ends) - min(starts) and doc["wall_ns"] < 3_600 * 10**9
    assert f"summarised recording {choice.chosen}; pick another with --recording N" in captured.err


def test_recording_option_on_check_export_and_diff(tmp_path, capsys):
    import json

    import pyarrow.parquet as pq

    from tui_prof.analysis.api import pick_recording
    from tui_prof.cli import main
    from tui_prof.exits import EXIT_DEGRADED, EXIT_USAGE

    blogs = DATA / "legacy_rocprof" / "rocm-blogs"
    # check: the whole folder by default (its mixed recordings are an issue), one recording on demand
    assert main(["check", "--no-cache", "--json", str(blogs)]) == EXIT_DEGRADED
    assert "clock-domains" in {i["code"] for i in json.loads(capsys.readouterr().out)["issues"]}
    assert main(["check", "--no-cache", "--json", "--recording", "1", str(blogs)]) == 0
    captured = capsys.readouterr()
    assert "clock-domains" not in {i["code"] for i in json.loads(captured.out)["issues"]} and "checked recording 1" in captured.err
    assert main(["check", "--no-cache", "--recording", "3", str(blogs)]) == EXIT_USAGE
    # export: the recording asked for (HSA: its one kernel row)
    hsa = pick_recording(load_path(blogs), 2).runset
    assert main(["export", "--no-cache", "--recording", "2", "--parquet", str(tmp_path / "out"), "--tables", "kernels", str(blogs)]) == 0
    assert "exported recording 2" in capsys.readouterr().err
    assert pq.read_table(tmp_path / "out" / "kernels.parquet").num_rows == sum(len(r.kernels) for r in hsa.runs) == 1
    # diff: A's recording 1 against B's recording 2
    assert main(["diff", "--no-cache", "--json", "--recording", "1,2", str(blogs), str(blogs)]) == 0
    captured = capsys.readouterr()
    assert "compared recording 1" in captured.err and "compared recording 2" in captured.err
    json.loads(captured.out)
    assert main(["diff", "--no-cache", "--recording", "1,3", str(blogs), str(blogs)]) == EXIT_USAGE
    # diff --tui --recording: tests/test_diff_tui_recordings.py


def test_open_shows_one_recording_and_says_which():
    from tui_harness import drive

    from tui_prof.analysis.api import pick_recording
    from tui_prof.tui.app import TuiProfApp

    blogs = DATA / "legacy_rocprof" / "rocm-blogs"
    default = pick_recording(load_path(blogs))

    async def flow(app, pilot):
        assert [r.meta.label for r in app.main.view.runset.runs] == [r.meta.label for r in default.runset.runs] == ["HIP_trace_results"]
        notes = [n.message for n in app._notifications]
        assert any(f"showing recording {default.chosen}" in n and "--recording N" in n for n in notes)

    drive(TuiProfApp(str(blogs), use_cache=False), flow)

    async def second(app, pilot):
        assert [r.meta.label for r in app.main.view.runset.runs] == ["HSA_trace_results"]

    drive(TuiProfApp(str(blogs), use_cache=False, recording=2), second)

    async def bad(app, pilot):
        assert app.load_error.startswith("--recording 5: the run holds 2 recordings")

    drive(TuiProfApp(str(blogs), use_cache=False, recording=5), bad)


def test_a_trace_beside_counter_passes_of_other_processes_is_not_three_ranks():
    """rocprofv3 docs 6.3: one trace and two counter passes, each recorded by another process
    (Process_Id 19396 in counter_collection.csv, 36499 in kernel_names.csv). Each pass is a
    recording of its own: the TUI shows the trace alone (no ranks tab), never "3 rank(s)"."""
    from tui_harness import drive

    from tui_prof.analysis.api import recordings, split_recordings
    from tui_prof.tui.app import TuiProfApp

    docs63 = DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm6.3"
    pids = []
    for name in ("counter_collection.csv", "kernel_names.csv"):
        with open(docs63 / name, newline="") as fh:
            pids.extend(sorted({int(r["Process_Id"]) for r in csv.DictReader(fh)}))
    assert pids == [19396, 36499]
    runset = split_recordings(load_path(docs63))
    passes = [i for i, r in enumerate(runset.runs) if "counter_pass_of" in r.meta.extra]
    assert sorted(runset.runs[i].meta.extra["pids"][0] for i in passes) == pids
    groups = recordings(runset)
    assert all([i] in groups for i in passes)  # alone, not beside the trace

    async def flow(app, pilot):
        runs = app.main.view.runset.runs
        assert len(runs) == 1 and not any("counter_pass_of" in r.meta.extra for r in runs)
        assert "ranks" in app.main.hidden_tabs

    drive(TuiProfApp(str(docs63), use_cache=False), flow)


def test_a_program_run_after_another_on_one_host_is_a_recording_of_its_own(tmp_path, capsys):
    """gpt2_shapes_modules and cold_train_memory: two H200 traces of different processes, the
    second started 14 min after the first ended (parsed from the files). Pooled, they were one
    run of two "ranks" with 14 min of idle GPU between them; now two recordings, each summarised
    on its own span."""
    import gzip
    import json
    import shutil

    from tui_prof.analysis.api import recordings
    from tui_prof.cli import main

    files = [DATA / "kineto" / "h200" / "gpt2_shapes_modules.pt.trace.json.gz", DATA / "kineto" / "h200_cold" / "cold_train_memory.pt.trace.json.gz"]
    spans = []
    for path in files:
        shutil.copy(path, tmp_path)
        with gzip.open(path, "rt") as fh:
            events = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
        spans.append((min(e["ts"] for e in events), max(e["ts"] + e["dur"] for e in events), {e["pid"] for e in events}))
    (a0, a1, _), (b0, b1, _) = sorted(spans)
    assert 0 < b0 - a1 < 3_600 * 1e6  # µs: after the first, within the hour the old rule pooled
    runset = load_path(tmp_path)
    assert len(runset.runs) == 2 and len(recordings(runset)) == 2
    assert main(["summary", "--no-cache", "--json", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["processes"]) == 1 and doc["wall_ns"] < (b1 - b0) * 1000 * 1.5
    assert recordings(load_path(RANKS)) == [[0, 1]]  # ranks of one job overlap: one recording


def test_counter_multimodal_across_passes_is_found():
    """The docs rocm7 folder's two counter passes (other processes) ran the same four kernels
    with the same grids and read the same SQ_WAVES (16,384 each). One pass's reading of one
    kernel halved: SQ_WAVES has two values for one kernel and grid, in both passes' names."""
    runset = load_path(DOCS7)
    assert "counter-multimodal" not in codes(check_run(runset))
    passes = [r for r in runset.runs if "counters pid" in r.meta.label]
    assert len(passes) == 2
    shapes = [set(zip(r.kernels["name"].astype(str), r.kernels["grid_x"], r.kernels["wg_x"], strict=True)) for r in passes]
    common = shapes[0] & shapes[1]
    assert common  # the same kernel with the same grid in both passes
    name = sorted(common)[0][0]
    run = passes[0]
    ids = set(run.kernels.loc[run.kernels["name"].astype(str) == name, "dispatch_id"])
    row = int(np.flatnonzero(run.counters["dispatch_id"].isin(ids).to_numpy() & (run.counters["counter"].astype(str) == "SQ_WAVES").to_numpy())[0])
    run.counters.loc[row, "value"] = run.counters["value"].iat[row] / 2
    (issue,) = codes(check_run(runset))["counter-multimodal"]
    assert issue.affects["kernels"] == [name] and issue.severity == "unreliable"
    assert sorted(issue.affects["processes"]) == sorted(r.meta.label for r in passes)


def test_processes_run_one_after_another_within_a_minute_are_one_recording(tmp_path):
    """A script or test suite under rocprofv3 that starts its processes one after another:
    sequential, same host, gaps of microseconds to seconds. One recording of every process; a
    process started two minutes after the rest ended is a later session of its own."""
    from tests.test_tiny_units import HEADER
    from tui_prof.analysis.api import recordings

    host = tmp_path / "node0"
    host.mkdir()
    t0 = 1_700_000_000_000_000_000
    starts = [t0, t0 + 10_000, t0 + 2_000_000_000, t0 + 50_000_000_000, t0 + 50_000_000_000 + 120_000_000_000]
    for k, start in enumerate(starts):
        pid = 500 + k
        row = f'"KERNEL_DISPATCH",1,1,{pid},1,16,"kernel_{k}(float*)",1,{start},{start + 500},0,0,64,1,1,1024,1024,1'
        (host / f"{pid}_kernel_trace.csv").write_text(f"{HEADER}\n{row}\n")
    runset = load_path(tmp_path, use_cache=False)
    pids = [run.meta.pid for run in runset.runs]
    groups = [sorted(pids[i] for i in group) for group in recordings(runset)]
    assert sorted(groups) == [[500, 501, 502, 503], [504]]
