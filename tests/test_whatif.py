"""Dependency graph, critical path and what-if (issue 31): answers known by construction
(tui_prof.synth), a hand-built graph, and the real eager/CUDA-graph decode pair."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui_prof.analysis import depgraph as dg
from tui_prof.analysis.whatif import Edits, WhatIfError, critical_path, project, run_what_if, what_if
from tui_prof.loaders import load_path
from tui_prof.model import Run, RunMeta
from tui_prof.model.schema import make_table
from tui_prof.synth.spec import GEMM_NAME, SynthSpec, build

ROOT = Path(__file__).resolve().parent.parent
H200 = ROOT / "tests" / "data" / "kineto" / "h200"


def synth(**kw) -> tuple[Run, object]:
    s = build(SynthSpec(**{"iterations": 20, "kernels_per_iteration": 10, **kw}))
    return Run(agents=s.agents, kernels=s.kernels, api=s.api, copies=s.copies), s


def replayed(run: Run) -> tuple[dg.DepGraph, np.ndarray, np.ndarray]:
    g = dg.build_graph(run)
    s, e = dg.schedule(g, g.dur, g.gap, g.lat, g.ret, g.wait >= 0)
    return g, s, e


@pytest.mark.parametrize("kw", [{"sync": "per_launch"}, {"sync": "per_iteration", "streams": 2}, {"sync": "end", "gpus": 2}])
def test_baseline_schedule_gives_back_the_record(kw):
    run, _ = synth(**kw)
    g, s, e = replayed(run)
    assert np.array_equal(s, g.start) and np.array_equal(e, g.end)
    assert g.links["unlaunched"] == 0 and g.links["launched"] == len(run.kernels) + len(run.copies)


@pytest.mark.parametrize("name", ["decode_eager", "decode_graph"])
def test_baseline_schedule_gives_back_the_real_record(name):
    run = load_path(str(H200 / f"{name}.pt.trace.json.gz")).runs[0]
    g, s, e = replayed(run)
    assert np.array_equal(s, g.start) and np.array_equal(e, g.end)
    if name == "decode_graph":
        assert g.links["graph_replayed"] == len(run.kernels) - 20  # every kernel but the 20 argmax steps' own launches


def test_remove_sync_after_launch_matches_the_sync_once_run():
    """Same kernels and launches (same seed), one sync at the end: by the synth's timing
    model the projection is the sync-once run's span exactly (the issue asks for 10 %)."""
    per_launch, _ = synth(sync="per_launch")
    once, _ = synth(sync="end")
    proj = project(per_launch, "p", Edits(removes=["sync-after-launch"]), None).result
    measured = int(max(once.api["end"].max(), once.kernels["end"].max(), once.copies["end"].max()) - min(once.api["start"].min(), once.kernels["start"].min()))
    assert proj["projected_ns"] == measured
    assert abs(proj["projected_ns"] - measured) <= 0.10 * measured
    assert proj["edits"][0]["matched"] == 199  # 200 syncs, the last one kept
    assert proj["saving_ns"] == proj["baseline_ns"] - measured > 0


def _replay_gpu(ready: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """End of each kernel of one in-order GPU: the synth's own rule, written apart."""
    out, last = np.empty_like(dur), -(2**62)
    for i, (r, d) in enumerate(zip(ready.tolist(), dur.tolist(), strict=True)):
        last = max(r, last) + d
        out[i] = last
    return out


def _span(run: Run) -> int:
    return int(max(run.api["end"].max(), run.kernels["end"].max()) - min(run.api["start"].min(), run.kernels["start"].min()))


def test_halving_the_gemm_saves_what_the_timing_model_says():
    run, s = synth(sync="end", jitter=0.0)
    spec = s.spec
    k = run.kernels
    dur = (k["end"] - k["start"]).to_numpy()
    launch_end = run.api[run.api["name"] == "hipLaunchKernel"]["end"].to_numpy()  # one thread: launch order = kernel order
    ready = launch_end + spec.dispatch_latency_ns
    halved = np.where(k["name"].astype(str).to_numpy() == GEMM_NAME, np.rint(dur * 0.5).astype(np.int64), dur)
    old_last, new_last = _replay_gpu(ready, dur)[-1], _replay_gpu(ready, halved)[-1]
    assert old_last == k["end"].max()
    sync = run.api[run.api["name"] == "hipDeviceSynchronize"]
    old_sync_end = int(sync["end"].iloc[0])
    new_sync_end = max(int(sync["start"].iloc[0]) + spec.sync_min_ns, int(new_last) + spec.sync_return_ns)
    expected_saving = old_sync_end - new_sync_end
    assert expected_saving > 0
    proj = project(run, "r", Edits(scales=[("Cijk_", 0.5)]), None).result
    assert proj["saving_ns"] == expected_saving
    assert proj["edits"][0]["matched"] == 20
    by_cat = project(run, "r", Edits(scales=[("GEMM", 0.5)]), None).result
    assert by_cat["saving_ns"] == expected_saving


def test_launch_free_saves_what_the_timing_model_says():
    run, s = synth(sync="end", jitter=0.0, htod_copies=0, dtoh_copies=0)
    spec = s.spec
    k = run.kernels
    first_launch = int(run.api["start"].min())
    total = int((k["end"] - k["start"]).sum())
    sync = run.api[run.api["name"] == "hipDeviceSynchronize"]
    # launches free: every kernel ready at the first launch's start; the sync call is reached gap_ns after it
    sync_start = first_launch + spec.gap_ns
    new_end = max(sync_start + spec.sync_min_ns, first_launch + total + spec.sync_return_ns)
    expected = _span(run) - (int(sync["end"].iloc[0]) - new_end)
    proj = project(run, "r", Edits(launch_free=True), None).result
    assert proj["projected_ns"] == expected


def _hand_run() -> Run:
    """launch A [0,10) -> kernel A [15,115); launch B [20,30) -> kernel B [115,135) queued
    behind A; stream sync [40,140) returns 5 ns after B."""
    t = 1_000
    api = make_table(
        "api",
        {
            "start": np.array([0, 20, 40]) + t,
            "end": np.array([10, 30, 140]) + t,
            "name": ["cudaLaunchKernel", "cudaLaunchKernel", "cudaStreamSynchronize"],
            "domain": "cuda",
            "pid": 1,
            "tid": 1,
            "correlation_id": np.array([1, 2, 3]),
        },
    )
    kernels = make_table(
        "kernels",
        {
            "start": np.array([15, 115]) + t,
            "end": np.array([115, 135]) + t,
            "name": ["sgemm_kernel_a", "\x1b[31mvectorized_elementwise_kernel"],
            "agent": 0,
            "stream": 7,
            "pid": 1,
            "tid": 1,
            "correlation_id": np.array([1, 2]),
        },
    )
    return Run(kernels=kernels, api=api)


def test_critical_path_of_a_hand_built_graph():
    """HTA's definition on the same events (launch edge launch -> kernel start, kernel ->
    next kernel on the stream, kernel end -> sync end, host order): the path is launch A,
    kernel A, kernel B, the sync's return -- 15 + 100 + 20 + 5 = 140 ns = the span."""
    run = _hand_run()
    g = dg.build_graph(run)
    path = critical_path(run, g, g.start, g.end)
    assert path.total_ns == 140
    assert path.by_group["launch_queue"] == {"launch and queue": 15}
    assert path.by_group["gpu_compute"] == {"GEMM": 100, "elementwise": 20}
    assert path.by_group["sync"] == {"return after the awaited work": 5}
    assert sum(path.by_kernel.values()) == 120
    # halving kernel A: B starts when A ends (its launch reached the GPU long before)
    proj = project(run, "h", Edits(scales=[("sgemm", 0.5)]), None).result
    assert proj["saving_ns"] == 50


def test_cli_whatif_json_and_hostile_names(tmp_path):
    path = H200 / "decode_eager.pt.trace.json.gz"
    out = subprocess.run(
        [sys.executable, "-m", "tui_prof.cli", "whatif", str(path), "--launch-free", "--json", "--no-cache"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["schema"] == "tuiprof.whatif/1"
    assert doc["saving_ns"] == doc["baseline_ns"] - doc["projected_ns"] > 0
    assert doc["edits"][0]["edit"] == "launch-free"
    bad = subprocess.run(
        [sys.executable, "-m", "tui_prof.cli", "whatif", str(path), "--remove", "nonsense"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "nonsense" in bad.stderr
    with pytest.raises(WhatIfError):
        Edits(scales=[("(", 0.5)]).check()


def test_text_report_shows_hostile_names_inert():
    from tui_prof.analysis.whatif import what_if
    from tui_prof.render.whatif import whatif_text

    run = _hand_run()
    doc = what_if([(run, "p\x1b]0;x\x07", None)], Edits(scales=[("vectorized", 0.5)]))
    text = whatif_text(doc)
    assert "\x1b" not in text and "\x07" not in text


def test_eager_launch_free_projection_against_the_cuda_graph_run():
    """The eager decode with launches free, against the same decode captured in a CUDA graph
    (measured): the error is stated in docs/metrics.md; the projection is optimistic (a
    graph replay still pays its launch and the GPU's per-kernel gaps)."""
    eager = run_what_if(load_path(str(H200 / "decode_eager.pt.trace.json.gz")), Edits(launch_free=True))
    graph = run_what_if(load_path(str(H200 / "decode_graph.pt.trace.json.gz")), Edits())
    measured = graph["baseline_ns"]
    error = (eager["projected_ns"] - measured) / measured
    assert -0.25 < error < 0.05
    assert eager["baseline_ns"] > 5 * measured


def test_warmup_of_the_cold_resnet_run_is_autotuning_and_allocation():
    """cold_train_memory (H200, cudnn.benchmark, profiled from the first step): the two
    warm-up steps hold cuDNN's trials (kernels never run again, timed by syncs) and the
    allocator's growth (cudaMalloc); the steady steps have neither."""
    from tui_prof.analysis.steps import steps_of
    from tui_prof.analysis.warmup import warmup_breakdown

    run = load_path(str(ROOT / "tests" / "data" / "kineto" / "h200_cold" / "cold_train_memory.pt.trace.json.gz")).runs[0]
    part, _ = steps_of(run, "cold")
    assert part["warmup_steps"] == 2
    w = warmup_breakdown(run, part)
    assert w is not None and w["what"] == ["autotuning", "allocator growth"]
    walls = [r["wall_ns"] for r in part["steps"]]
    steady_median = float(np.median(walls[2:]))
    assert w["cost_ns"] == int(walls[0] + walls[1] - 2 * steady_median)
    api = run.api
    in_warm = (api["start"] >= part["steps"][0]["start_ns"]) & (api["start"] < part["steps"][1]["end_ns"])
    assert w["allocation"]["calls"] == int((in_warm & (api["name"] == "cudaMalloc")).sum()) > 0
    assert w["allocation"]["steady_calls_per_step"] == 0
    assert w["autotuning"]["steady_sync_calls_per_step"] == 0 < w["autotuning"]["sync_calls"]


def test_llama_cpp_matrix_kernels_are_gemm():
    from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES

    for name in (
        "void mul_mat_vec_q<(ggml_type)12, 1>(void const*, void const*, float*, int)",
        "void mul_mat_q<(ggml_type)2, false>(char const*)",
        "kernel_mul_mm_f16_f32",
    ):
        assert DEFAULT_CATEGORY_RULES.classify(name) == "GEMM", name
    assert DEFAULT_CATEGORY_RULES.classify("void quantize_q8_1(float const*, void*, long, long)") != "GEMM"


def test_summary_critical_ns_of_a_gpu_bound_run():
    """One 250 µs GEMM per iteration, one sync at the end: the GPU runs back to back, so every
    GEMM is on the critical path: critical_ns = the GEMM's total time; and the path is the span."""
    from tui_prof.analysis.summary import SummaryOptions, build_summary
    from tui_prof.model import RunSet

    run, _ = synth(sync="end", kernels_per_iteration=1, htod_copies=0, dtoh_copies=0)
    run.meta.label = "gpu-bound"
    doc = build_summary(RunSet(root="x", runs=[run]), SummaryOptions(logs=False))
    row = doc["hotspots"][0]
    assert row["name"] == GEMM_NAME and row["critical_ns"] == row["total_ns"]
    cp = doc["critical_path"]["processes"][0]
    assert cp["window"] == "whole run" and cp["total_ns"] == cp["window_ns"] == _span(run)
    assert cp["groups"]["gpu_compute"] == row["total_ns"]


def test_cli_whatif_of_a_statistics_only_run_is_one_line():
    path = ROOT / "tests" / "data" / "rocprofv3_summary"
    out = subprocess.run([sys.executable, "-m", "tui_prof.cli", "whatif", str(path), "--no-cache"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and "no GPU operations" in out.stderr


def test_summary_reports_show_hostile_names_inert():
    """A hostile process label and host-range name reach the critical-path section of the text
    and Markdown reports inert."""
    from tui_prof.analysis.summary import SummaryOptions, build_summary
    from tui_prof.model import RunSet
    from tui_prof.render.summary import summary_markdown, summary_text

    run = _hand_run()
    run.meta.label = "p\x1b]0;owned\x07|`*x*"
    run.markers = make_table("markers", {"start": [1_000 + 12], "end": [1_000 + 45], "name": ["\x1b[2Jop|<b>"], "source": "cpu_op", "pid": 1, "tid": 1})
    doc = build_summary(RunSet(root="x", runs=[run]), SummaryOptions(logs=False))
    assert doc["critical_path"]["processes"][0]["total_ns"] == 140
    for text in (summary_text(doc), summary_markdown(doc)):
        assert "Critical path" in text and "\x1b" not in text and "\x07" not in text


@pytest.mark.parametrize("slow_rank", [2, None])
def test_rank_on_the_path_per_step(slow_rank):
    """A generated data-parallel job (tui_prof.synth.ranks, two hosts with unrelated clocks):
    the straggler computes 50 % longer, so it arrives last at every collective and is the rank
    on the path in every steady step (a chronic straggler); with no straggler every rank
    arrives together and no rank is named."""
    from tui_prof.analysis.summary import SummaryOptions, build_summary
    from tui_prof.synth.ranks import RankSpec, build_ranks

    ranks = build_ranks(RankSpec(ranks=4, iterations=6, slow_rank=slow_rank, collectives=("AllReduce", "AllGather"), hosts=2))
    doc = build_summary(ranks.runset(), SummaryOptions(logs=False))
    on_path = doc["critical_path"].get("ranks_on_path")
    if slow_rank is None:
        assert on_path is None  # nobody arrived last at any instance
        return
    assert on_path["rank"] == slow_rank and on_path["steady_steps_on_path"] == on_path["steady_steps"] == 6
    assert all(row["rank"] == slow_rank and row["last_in"] == row["instances"] == 2 for row in on_path["steps"])


def test_pageable_copies_made_pinned_save_their_excess():
    """H200 copies sample: 6 HtoD copies from pageable memory (the call stages the data and
    returns with the copy), the others pinned. Made pinned (the pinned HtoD median bandwidth),
    each blocking call ends that much earlier and the host with it: the saving is the sum of
    (pageable duration - bytes / pinned bandwidth), computed here from the copies table."""
    run = load_path(str(H200 / "copies.pt.trace.json.gz")).runs[0]
    c = run.copies
    dur = (c["end"] - c["start"]).to_numpy()
    names = c["name"].astype(str)
    pageable = names.str.contains("Pageable").to_numpy() & (c["direction"] == "HtoD").to_numpy()
    pinned = names.str.contains("Pinned").to_numpy() & (c["direction"] == "HtoD").to_numpy()
    bw = float(np.median(c["bytes"].to_numpy()[pinned] / dur[pinned]))
    expected = int(sum(d - np.ceil(b / bw) for d, b in zip(dur[pageable], c["bytes"].to_numpy()[pageable], strict=True)))
    assert pageable.sum() == 6 and expected > 0
    proj = project(run, "copies", Edits(removes=["pageable-copy"]), None).result
    assert proj["edits"][0]["matched"] == 6
    assert proj["saving_ns"] == pytest.approx(expected, rel=0.01)


def test_remove_host_op_and_scale_by_operator():
    """The hand-built run with a host range around the launch of B: removing that host op takes
    the host time before B's launch away (B's launch at 12 instead of 20: B still queues behind A,
    so nothing is saved); scaling by operator (op:REGEX, the kernel's External id) halves kernel A."""
    run = _hand_run()
    run.markers = make_table(
        "markers", {"start": [1_000 + 11], "end": [1_000 + 19], "name": ["my_host_op"], "source": "cpu_op", "pid": 1, "tid": 1, "external_id": [7]}
    )
    removed = project(run, "h", Edits(removes=["host:^my_host_op$"]), None).result
    assert removed["edits"][0]["matched"] == 1 and removed["edits"][0]["matched_ns"] == 10  # the gap [10, 20) before launch B
    assert removed["saving_ns"] == 0
    k = run.kernels.copy()
    k["external_id"] = [7, -1]
    run.kernels = make_table("kernels", {c: k[c] for c in k.columns})
    by_op = project(run, "h", Edits(scales=[("op:^my_host", 0.5)]), None).result
    assert by_op["edits"][0]["matched"] == 1 and by_op["saving_ns"] == 50


def test_remove_warmup_saves_the_time_before_the_first_steady_step():
    run = load_path(str(ROOT / "tests" / "data" / "kineto" / "h200_cold" / "cold_train_memory.pt.trace.json.gz")).runs[0]
    from tui_prof.analysis.whatif import process_steps

    steps = process_steps(run, "cold")
    assert steps is not None and steps[2] == 2
    proj = project(run, "cold", Edits(removes=["warmup"]), steps).result
    assert proj["saving_ns"] == proj["steady"]["baseline_warmup_ns"] > 3_000_000_000
    first_steady_start = int(steps[0][2]) - int(min(run.api["start"].min(), run.kernels["start"].min()))
    assert proj["steady"]["baseline_warmup_ns"] == first_steady_start


def test_sync_edges_of_htas_event_sync_trace():
    """HTA's own sample (tests/data/kineto, from HolisticTraceAnalysis' tests/data/critical_path/
    cuda_event_sync): its test expects two GPU -> CPU synchronisation edges, both from the
    spin_kernel's end, to cudaEventSynchronize's end and to cudaDeviceSynchronize's end (the
    device sync found the GPU done, so the edge holds nothing in the record). tuiprof's graph
    has the same two waits; a launch call whose kernel ended before it returned is no wait."""
    run = load_path(str(ROOT / "tests" / "data" / "kineto" / "critical_path__cuda_event_sync__event_sync_trace.json.gz")).runs[0]
    g, s, e = replayed(run)
    assert np.array_equal(s, g.start) and np.array_equal(e, g.end)
    names = run.api["name"].astype(str).to_numpy()
    kernels = run.kernels["name"].astype(str).to_numpy()
    waits = {names[g.api_row[i]]: g.wait[i] for i in np.flatnonzero(g.wait >= 0)}
    for call in ("cudaEventSynchronize", "cudaDeviceSynchronize"):
        assert g.kind[waits[call]] == dg.KERNEL and "spin_kernel" in kernels[g.op_row[waits[call]]], call
    assert "cudaLaunchKernel" not in waits
    # the spin kernel twice as long: the event sync waits for it, the run gets longer
    spin = int(np.flatnonzero(np.char.find(kernels.astype(str), "spin_kernel") >= 0)[0])
    longer = project(run, "hta", Edits(scales=[("spin_kernel", 2.0)]), None).result
    assert longer["saving_ns"] < 0 and -longer["saving_ns"] <= int(run.kernels["end"][spin] - run.kernels["start"][spin])


@pytest.mark.parametrize("name", ["decode_eager", "decode_graph"])
def test_critical_path_fills_the_steady_window(name):
    """The path is one chain from the window's last event back to its start: its intervals add
    up to the steady window exactly, and a projection without edits equals the baseline."""
    doc = run_what_if(load_path(str(H200 / f"{name}.pt.trace.json.gz")), Edits())
    proc = doc["processes"][0]
    cp = proc["critical_path"]
    assert cp["baseline"]["total_ns"] == proc["steady"]["baseline_window_ns"] == proc["steady"]["projected_window_ns"]
    assert cp["baseline"]["total_ns"] == sum(cp["baseline"]["groups"].values())
    assert proc["steady"]["baseline_step_ns"] == proc["steady"]["projected_step_ns"] and doc["saving_ns"] == 0


def test_finding_codes_and_gap_causes_are_edits():
    """--remove takes a finding code or a gap cause: idle-sync and sync-overhead are `sync`,
    launch-bound and many-tiny-kernels `launch` (= --launch-free), slow-copy `pageable-copy`."""
    run, _ = synth(sync="per_launch")
    same = [("idle-sync", "sync"), ("sync-overhead", "sync"), ("launch-bound", "launch"), ("many-tiny-kernels", "launch")]
    for alias, cause in same:
        a = project(run, "a", Edits(removes=[alias]), None).result["projected_ns"]
        b = project(run, "b", Edits(removes=[cause]), None).result["projected_ns"]
        assert a == b, alias
    assert project(run, "c", Edits(launch_free=True), None).result["projected_ns"] == project(run, "d", Edits(removes=["launch"]), None).result["projected_ns"]


def _random_edits(g: dg.DepGraph, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    dur = np.rint(g.dur * rng.choice([0.0, 0.5, 1.0, 2.0], size=g.size)).astype(np.int64)
    gap = np.rint(g.gap * rng.choice([0.0, 1.0, 3.0], size=g.size)).astype(np.int64)
    lat = np.where(rng.random(g.size) < 0.2, 0, g.lat)
    waits = (g.wait >= 0) & (rng.random(g.size) > 0.3 * (seed % 2))
    # a collective's floor (another rank arriving later) on some operations
    floor = np.where((g.kind >= dg.KERNEL) & (rng.random(g.size) < 0.1), g.end + rng.integers(-20_000, 20_000, g.size), dg.NEG)
    return dur, gap, lat, g.ret, waits, floor


@settings(max_examples=25, deadline=None)
@given(
    sync=st.sampled_from(["end", "per_iteration", "per_launch"]),
    streams=st.integers(1, 3),
    gpus=st.integers(1, 2),
    iterations=st.integers(1, 30),
    kernels=st.integers(1, 12),
    seed=st.integers(0, 1000),
)
def test_chain_schedule_equals_the_walk_on_generated_graphs(sync, streams, gpus, iterations, kernels, seed):
    """The array passes give exactly the walk's times whenever they settle (property test on
    generated runs with random duration, gap, latency and wait edits); with one sync at the
    end they settle on every graph (else the test would check nothing)."""
    s = build(SynthSpec(iterations=iterations, kernels_per_iteration=kernels, sync=sync, streams=streams, gpus=gpus, seed=seed))
    g = dg.build_graph(Run(agents=s.agents, kernels=s.kernels, api=s.api, copies=s.copies))
    for edit_seed in (seed, seed + 1):
        arrays = _random_edits(g, edit_seed)
        walk = dg.schedule_walk(g, *arrays)
        chains = dg.schedule_chains(g, *arrays)
        if sync == "end" and streams == 1:
            assert chains is not None
        if chains is not None:
            assert np.array_equal(chains[0], walk[0]) and np.array_equal(chains[1], walk[1])
        assert all(np.array_equal(x, y) for x, y in zip(dg.schedule(g, *arrays), walk, strict=True))


@pytest.mark.parametrize("name", ["decode_eager", "decode_graph", "train_sync"])
def test_chain_schedule_equals_the_walk_on_real_graphs(name):
    g = dg.build_graph(load_path(str(H200 / f"{name}.pt.trace.json.gz")).runs[0])
    settled = 0
    for seed in range(4):
        arrays = _random_edits(g, seed)
        chains = dg.schedule_chains(g, *arrays)
        if chains is not None:
            settled += 1
            walk = dg.schedule_walk(g, *arrays)
            assert np.array_equal(chains[0], walk[0]) and np.array_equal(chains[1], walk[1])
    assert settled


@pytest.mark.parametrize("segments", [1, 5, 300])
def test_segmented_running_maximum_both_ways(segments):
    """Few segments (one accumulate each) and many (the complex-number accumulate): the
    running maximum restarts at each segment, exactly, for large and negative values."""
    rng = np.random.default_rng(segments)
    seg = np.sort(rng.integers(0, segments, 5_000))
    seg = np.unique(seg, return_inverse=True)[1].astype(np.int64)
    values = rng.integers(-(1 << 50), 1 << 50, 5_000)
    expected = np.empty_like(values)
    for i in range(len(values)):
        expected[i] = values[i] if i == 0 or seg[i] != seg[i - 1] else max(expected[i - 1], values[i])
    assert np.array_equal(dg._seg_cummax(seg, values), expected)


@pytest.mark.parametrize(
    "kw",
    [{"ranks": 4, "iterations": 3}, {"ranks": 4, "iterations": 5, "hosts": 2, "collectives": ("AllReduce", "AllGather")}, {"ranks": 3, "slow_rank": None}],
)
def test_critical_path_waits_across_ranks_on_a_generated_job(kw):
    """Each rank's critical path through its collectives waits for the straggler exactly the
    generator's waits (synth.ranks: every instance ends collective_ns after the last arrival;
    two hosts with unrelated clocks included); the straggler waits for nobody; with no slow
    rank nobody waits. Part <= whole: the waits lie inside the path's communication time."""
    from tui_prof.analysis.summary import SummaryOptions, build_summary
    from tui_prof.synth.ranks import RankSpec, build_ranks

    ranks = build_ranks(RankSpec(**kw))
    doc = build_summary(ranks.runset(), SummaryOptions(logs=False))
    expected = ranks.expected.wait_by_rank
    slow = kw.get("slow_rank", 1)
    for r, p in enumerate(doc["critical_path"]["processes"]):
        waited = p["waiting_on_ranks"]
        if slow is None or r == slow:
            assert waited == []
        else:
            assert waited == [{"rank": slow, "ns": expected[r], "instances": len(ranks.expected.straggler)}]
        assert sum(w["ns"] for w in waited) <= p["groups"]["communication"]


def test_critical_path_waits_across_ranks_of_hta_ranks():
    """HTA's two sampled ranks: their collectives wait for each other (the stragglers section
    lists them) but neither rank's critical path runs through them (host-bound: no
    communication on the path), so neither path waits for the other rank."""
    from tui_prof.analysis.summary import SummaryOptions, build_summary

    doc = build_summary(load_path(str(ROOT / "tests" / "data" / "kineto" / "ranks"), use_cache=False), SummaryOptions(logs=False))
    assert doc["stragglers"]["others_wait_ns"] > 0
    for p in doc["critical_path"]["processes"]:
        assert p["groups"]["communication"] == 0 and p["waiting_on_ranks"] == []


def _two_ranks(compute: tuple[int, int], transfer: int = 50) -> list[Run]:
    """Two processes on one host: a compute kernel, then an all-reduce on the same stream, then
    a device synchronisation; the all-reduce ends ``transfer`` after the later rank's arrives."""
    arrival = [15 + c for c in compute]
    end = max(arrival) + transfer
    runs = []
    for r, c in enumerate(compute):
        api = make_table(
            "api",
            {
                "start": np.array([0, 20, 40]),
                "end": np.array([10, 30, end + 5]),
                "name": ["cudaLaunchKernel", "cudaLaunchKernel", "cudaDeviceSynchronize"],
                "domain": "cuda",
                "pid": 100 + r,
                "tid": 1,
                "correlation_id": np.array([1, 2, 3]),
            },
        )
        kernels = make_table(
            "kernels",
            {
                "start": np.array([15, arrival[r]]),
                "end": np.array([15 + c, end]),
                "name": ["gemm_compute_kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"],
                "agent": 0,
                "stream": 7,
                "pid": 100 + r,
                "tid": 1,
                "correlation_id": np.array([1, 2]),
            },
        )
        runs.append(Run(meta=RunMeta(hostname="h", pid=100 + r, rank=r), kernels=kernels, api=api))
    return runs


def test_what_if_moves_every_rank_with_the_straggler():
    """Edges across ranks: rank 1 computes 200 ns, rank 0 100 ns, and rank 0's all-reduce waits
    100 ns for rank 1. Halving the compute: every all-reduce ends transfer (50) after the later
    arrival (15 + 100), each sync 5 after it: both ranks project exactly the two-rank run
    recorded with compute (50, 100) -- rank 0 included, whose recorded wait shrinks with the
    straggler. With no edit the record comes back."""
    runs = _two_ranks((100, 200))
    doc = what_if([(run, f"rank{i}", None) for i, run in enumerate(runs)], Edits(scales=[("gemm", 0.5)]))
    expected = _two_ranks((50, 100))
    for p, run in zip(doc["processes"], expected, strict=True):
        assert p["projected_ns"] == int(run.api["end"].max()) - 0
    assert doc["cross_rank"]["settled"] and doc["cross_rank"]["instances"] == 1
    same = what_if([(run, f"rank{i}", None) for i, run in enumerate(runs)], Edits())
    assert all(p["projected_ns"] == p["baseline_ns"] for p in same["processes"])
    alone = project(runs[0], "rank0", Edits(scales=[("gemm", 0.5)]), None).result  # without the other rank: its wait is kept
    assert alone["projected_ns"] > doc["processes"][0]["projected_ns"]


@pytest.mark.parametrize("hosts", [1, 2])
def test_coupled_ranks_give_back_the_record(hosts):
    """A generated job (a straggler, two collective types; two hosts: unrelated clocks): with
    no edit the coupled re-schedule settles and every rank's projection is its record; halving
    the communication on every rank saves on every rank."""
    from tui_prof.synth.ranks import RankSpec, build_ranks

    runset = build_ranks(RankSpec(ranks=4, iterations=3, hosts=hosts, collectives=("AllReduce", "AllGather"))).runset()
    same = run_what_if(runset, Edits())
    assert same["cross_rank"]["settled"] and same["cross_rank"]["instances"] == 6
    assert all(p["projected_ns"] == p["baseline_ns"] for p in same["processes"])
    faster = run_what_if(runset, Edits(scales=[("communication", 0.5)]))
    assert faster["cross_rank"]["settled"] and all(p["saving_ns"] > 0 for p in faster["processes"])


def op_collective_trace(path: Path, rank: int) -> Path:
    """A two-rank Kineto trace's rank ``rank``: two kernels named as NCCL all-reduces, the
    first launched by aten::mm (the operator says GEMM: no collective, operator first), the
    second by no operator (the name rule: a collective)."""
    evs: list[dict] = []
    for i, (ts, op) in enumerate(((10, "aten::mm"), (100, None))):
        corr = 101 + i
        if op is not None:
            evs.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": ts, "dur": 8, "args": {"External id": 10 + i}})
        evs.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 1,
                "ts": ts + 2,
                "dur": 3,
                "args": {"correlation": corr, "External id": 10 + i},
            }
        )
        args = {"device": 0, "stream": 7, "correlation": corr, "grid": [1, 1, 1], "block": [128, 1, 1]}
        evs.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                "pid": 0,
                "tid": 7,
                "ts": ts + 20,
                "dur": 30 + 10 * rank,
                "args": args,
            }
        )
    doc = {
        "schemaVersion": 1,
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
        "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],
        "traceEvents": evs,
    }
    path.write_text(json.dumps(doc))
    return path


def test_cross_rank_pairs_collectives_by_the_rank_tables_rule(tmp_path):
    """Where an operator's category and the kernel-name rule disagree, the cross-rank what-if
    pairs the collectives the rank table pairs (operator first): one AllReduce instance, not
    the two the names alone give."""
    from tui_prof.analysis.api import DEFAULT_CATEGORY_RULES, SummaryOptions, build_summary
    from tui_prof.analysis.operators import process_categories
    from tui_prof.analysis.ranks import collective_rows

    for rank in (0, 1):
        op_collective_trace(tmp_path / f"rank{rank}.pt.trace.json", rank)
    runset = load_path(str(tmp_path), use_cache=False)
    rules = DEFAULT_CATEGORY_RULES
    assert [len(collective_rows(r.kernels, rules)[0]) for r in runset.runs] == [2, 2]
    assert [len(collective_rows(r.kernels, rules, process_categories(r, rules))[0]) for r in runset.runs] == [1, 1]
    doc = run_what_if(runset, Edits())
    assert doc["cross_rank"]["instances"] == 1
    summary = build_summary(runset, SummaryOptions(logs=False))
    (row,) = summary["communication"]["by_type"]
    assert row["type"] == "AllReduce" and row["count"] == 2
