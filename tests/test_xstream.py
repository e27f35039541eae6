"""Waits across streams in the dependency graph (issue 31): explicit cuda_sync links,
the inference rule, and what-if projections whose answers are known by construction."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui_prof.analysis import depgraph as dg
from tui_prof.analysis import whatif as wi
from tui_prof.analysis.streamwaits import INFER_EPS_NS
from tui_prof.loaders.kineto import load_file
from tui_prof.model import Run
from tui_prof.synth.spec import SynthSpec, build
from tui_prof.synth.xstream import COMM_KERNEL, COMPUTE_KERNEL, OPT_KERNEL, XStreamSpec, build_xstream

DATA = Path(__file__).parent / "data" / "kineto"
MULTI = DATA / "critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz"
ALEXNET = DATA / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
RESNET = DATA / "mi300__resnet_act_checkpoint.json.gz"

EDITS = [
    (f"^{COMPUTE_KERNEL[:20]}", {"compute_ns": 50_000}),
    ("communication", {"comm_ns": 30_000}),
    ("^void at::native::multi_tensor", {"opt_ns": 15_000}),
]


def _recorded(g: dg.DepGraph) -> bool:
    s, e = dg.schedule_walk(g, g.dur, g.gap, g.lat, g.ret, g.wait >= 0)
    return bool((s == g.start).all() and (e == g.end).all())


@pytest.mark.parametrize("links", [True, False], ids=["explicit", "inferred"])
@pytest.mark.parametrize(("pattern", "durations"), EDITS, ids=["compute", "comm", "optimizer"])
def test_two_stream_whatif_saves_what_the_generator_says(links, pattern, durations):
    """Halving compute, communication or the optimizer of a DDP-shaped run projects exactly
    the span the generator gives the same program with the halved durations."""
    x = build_xstream(XStreamSpec(), links=links)
    g = dg.build_graph(x.run)
    assert g.links["stream_waits" if links else "stream_waits_inferred"] == x.stream_waits
    assert g.links["stream_waits_inferred" if links else "stream_waits"] == 0
    assert _recorded(g)
    result = wi.project(x.run, "x", wi.Edits(scales=[(pattern, 0.5)]), None, graph=g).result
    expected = build_xstream(x.spec.edited(**durations)).span_ns
    assert result["baseline_ns"] == x.span_ns
    assert result["projected_ns"] == expected
    assert result["saving_ns"] == x.span_ns - expected > 0


def test_without_the_cross_stream_edges_the_projection_is_wrong():
    """The defect the edges fix: with them dropped, halving compute projects another saving
    than the generator's (the waits become fixed lags)."""
    x = build_xstream(XStreamSpec())
    g = dg.build_graph(x.run)
    g.xwait[:] = -1
    g.xlag[:] = 0
    result = wi.project(x.run, "x", wi.Edits(scales=[(f"^{COMPUTE_KERNEL[:20]}", 0.5)]), None, graph=g).result
    assert result["projected_ns"] != build_xstream(x.spec.edited(compute_ns=50_000)).span_ns


def test_chains_equal_the_walk_with_cross_stream_waits():
    x = build_xstream(XStreamSpec(steps=2, buckets=3))
    g = dg.build_graph(x.run)
    for scale in (1.0, 0.5, 2.0):
        applied = wi.apply_edits(x.run, g, wi.Edits(scales=[("communication", scale)]))
        arrays = (applied.dur, applied.gap, applied.lat, applied.ret, applied.waits)
        walk = dg.schedule_walk(g, *arrays)
        chains = dg.schedule_chains(g, *arrays)
        assert chains is not None
        assert (chains[0] == walk[0]).all() and (chains[1] == walk[1]).all()


def test_critical_path_names_the_wait_and_what_rests_on_inference():
    for links, label in ((True, "wait for another stream (event)"), (False, "wait for another stream (inferred)")):
        x = build_xstream(XStreamSpec(), links=links)
        path = wi.project(x.run, "x", wi.Edits(), None).result["critical_path"]["baseline"]
        assert path["total_ns"] == x.span_ns == sum(path["groups"].values())
        wake = [t["ns"] for t in path["top"] if t["name"] == label]
        # each step's path: compute -> (wake) -> all-reduce of the last bucket -> (wake) -> optimizer
        assert wake == [2 * x.spec.steps * x.spec.wake_ns]
        if links:
            assert path["inferred_edges"] == 0 and path["inferred_ns"] == 0
        else:
            assert path["inferred_edges"] == 2 * x.spec.steps
            assert 0 < path["inferred_ns"] <= path["total_ns"]


def test_inference_is_not_made_when_the_launch_held_the_kernel():
    """Host-bound (kernels shorter than the launches): every kernel starts when its launch
    reaches the GPU, so nothing shows a wait; no link is inferred and each call is counted."""
    x = build_xstream(XStreamSpec(compute_ns=500, comm_ns=500, opt_ns=500), links=False)
    g = dg.build_graph(x.run)
    assert g.links["stream_waits_inferred"] == 0
    assert g.links["wait_event_calls_unlinked"] == g.links["wait_event_calls"] == x.stream_waits
    assert _recorded(g)


@pytest.mark.parametrize(
    "links",
    [
        {"correlation": ["x"], "device": [0], "stream": [1], "wait_on_stream": [2], "record_correlation": [3]},
        {"correlation": [1, 2], "device": [0], "stream": [1], "wait_on_stream": [2], "record_correlation": [3]},
        {"correlation": [1]},
        [1, 2, 3],
        {"correlation": [10**30], "device": [0], "stream": [1], "wait_on_stream": [2], "record_correlation": [3]},
    ],
)
def test_malformed_links_are_ignored(links):
    x = build_xstream(XStreamSpec(steps=1, buckets=2), links=False)
    x.run.meta.extra["cuda_sync_links"] = links
    g = dg.build_graph(x.run)
    assert g.links["stream_waits"] == 0
    assert _recorded(g)


def _raw_events(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as fh:
        return json.load(fh)["traceEvents"]


def _hta_expected(events: list[dict]) -> tuple[set, set]:
    """HTA's sync edges of a trace, from the raw events (HTA docs: the source is the last
    kernel / memcpy launched on the event's stream before the cudaEventRecord; a Stream Wait
    Event's destination the next one launched on the waiting stream after cudaStreamWaitEvent;
    an Event Sync's the runtime call; a Stream Sync: the last GPU event on its stream -> the
    call): ({(dest corr, src corr)}, {(call corr, src corr)})."""
    runtime = {e["args"]["correlation"]: e for e in events if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    launches = sorted((runtime[e["args"]["correlation"]]["ts"], e["args"]["stream"], e["args"]["correlation"]) for e in gpu)
    gpu_edges, host_edges = set(), set()
    for e in events:
        a = e.get("args", {})
        if e.get("cat") == "cuda_sync" and a.get("cuda_sync_kind") == "Stream Sync":  # the last GPU event on the stream -> the call
            on = [(g["ts"], g["args"]["correlation"]) for g in gpu if g["args"]["stream"] == a["stream"] and g["ts"] <= e["ts"] + e["dur"]]
            if on:
                host_edges.add((a["correlation"], max(on)[1]))
            continue
        if e.get("cat") != "cuda_sync" or a.get("wait_on_cuda_event_record_corr_id", -1) < 0:
            continue
        rec = runtime[a["wait_on_cuda_event_record_corr_id"]]
        src = [corr for ts, stream, corr in launches if stream == a["wait_on_stream"] and ts <= rec["ts"]]
        if not src:
            continue
        if a["stream"] == -1:
            host_edges.add((a["correlation"], src[-1]))
            continue
        call = runtime[a["correlation"]]
        dest = [corr for ts, stream, corr in launches if stream == a["stream"] and ts >= call["ts"]]
        if dest:
            gpu_edges.add((dest[0], src[-1]))
    return gpu_edges, host_edges


def _graph_edges(run, g: dg.DepGraph) -> tuple[set, set]:
    k, c = run.kernels, run.copies

    def corr(node: int) -> int:
        table = k if g.kind[node] == dg.KERNEL else c
        return int(table["correlation_id"].iloc[g.op_row[node]])

    gpu = {(corr(d), corr(int(g.xwait[d]))) for d in np.flatnonzero(g.xkind == dg.XWAIT_EXPLICIT).tolist()}
    api_corr = run.api["correlation_id"].to_numpy()
    sync_waits = np.flatnonzero((g.wait >= 0) & (np.arange(g.size) < g.n_calls))
    named = {int(api_corr[g.api_row[n]]): corr(int(g.wait[n])) for n in sync_waits.tolist()}
    return gpu, set(named.items())


@pytest.mark.parametrize(
    "path", [MULTI, ALEXNET, DATA / "critical_path__cuda_event_sync__event_sync_trace.json.gz"], ids=["multi_stream", "alexnet", "event_sync"]
)
def test_explicit_links_are_htas_sync_edges(path):
    """Cross-check with HTA's rule on its own test traces: every sync edge HTA draws is in the
    graph (cross-stream waits exactly; event syncs among the host waits), and re-scheduling
    with the recorded durations gives back the record."""
    run = load_file(path)
    g = dg.build_graph(run)
    want_gpu, want_host = _hta_expected(_raw_events(path))
    got_gpu, got_host = _graph_edges(run, g)
    assert got_gpu == want_gpu
    assert want_host <= got_host
    assert g.links["named_sync_waits"] == len(want_host)
    assert g.links["stream_waits_inferred"] == 0 or path == ALEXNET
    assert _recorded(g)


def test_multi_stream_trace_links_by_hand():
    """The HTA multi-stream trace read by eye: the memset on stream 24 (correlation 1411)
    waits for the sgemm on stream 20 (27); the cudaEventQuery calls 54 and 1410 wait for
    the sgemms 27 and 57; the loader keeps the three links."""
    run = load_file(MULTI)
    assert run.meta.extra["cuda_sync_links"]["record_correlation"] == [32, 1385, 62]
    got_gpu, got_host = _graph_edges(run, dg.build_graph(run))
    assert got_gpu == {(1411, 27)}
    assert {(54, 27), (1410, 57)} <= got_host


def test_real_amd_trace_infers_only_binding_waits():
    """mi300 resnet (hipStreamWaitEvent without arguments): the inferred links start within
    the rule's epsilon after their source, on another stream, and the record is given back."""
    run = load_file(RESNET)
    g = dg.build_graph(run)
    d = np.flatnonzero(g.xkind == dg.XWAIT_INFERRED)
    assert g.links["stream_waits_inferred"] == len(d) > 0
    assert g.links["wait_event_calls_unlinked"] + len(d) == g.links["wait_event_calls"]
    gap = g.start[d] - g.end[g.xwait[d]]
    assert ((gap >= 0) & (gap <= INFER_EPS_NS)).all()
    assert _recorded(g)
    path = wi.project(run, "r", wi.Edits(), None, graph=g).result["critical_path"]["baseline"]
    assert 0 <= path["inferred_ns"] <= path["total_ns"]


def test_generated_names_are_the_categories_the_edits_use():
    from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES

    assert DEFAULT_CATEGORY_RULES.classify(COMM_KERNEL) == "communication"
    assert DEFAULT_CATEGORY_RULES.classify(COMPUTE_KERNEL) != "communication"
    assert DEFAULT_CATEGORY_RULES.classify(OPT_KERNEL) != "communication"


# ---------------------------------------------------------------- critical column of every grouping


def _summary_of(run):
    from tui_prof.analysis.summary import summarise
    from tui_prof.model import RunSet
    from tui_prof.threads import inline_lane

    return summarise(RunSet(root="x", runs=[run]), lane=inline_lane)


def test_category_critical_is_known_by_construction():
    """Each step's path runs through every compute kernel, the last all-reduce and the
    optimizer: GEMM, communication and other hold exactly that much of the path."""
    x = build_xstream(XStreamSpec())
    spec = x.spec
    result = _summary_of(x.run)
    doc = result.summary
    rows = {r["name"]: r["critical_ns"] for r in doc["hotspots_by"]["category"]}
    assert rows == {"GEMM": spec.steps * spec.buckets * spec.compute_ns, "communication": spec.steps * spec.comm_ns, "other": spec.steps * spec.opt_ns}
    path = doc["critical_path"]["processes"][0]
    assert sum(rows.values()) == path["groups"]["gpu_compute"] + path["groups"]["communication"] <= path["total_ns"]
    for grouping in ("normalized", "agent", "process"):
        assert sum(r["critical_ns"] for r in doc["hotspots_by"][grouping]) == sum(rows.values())
    assert result.critical_rows is not None and len(result.critical_rows) == len(x.run.kernels)


@pytest.mark.parametrize("name", ["h100__gaunernst_bert-small-uncased__1016001.json.gz", "mi300__resnet_act_checkpoint.json.gz"])
def test_grouped_critical_never_exceeds_the_path(name):
    """On real traces with operators: every category and operator row's critical_ns is at
    most its own time, and a grouping's sum at most the path's length (scaled to the whole
    window where the window was sampled)."""
    doc = _summary_of(load_file(DATA / name)).summary
    path = doc["critical_path"]["processes"][0]
    scale = path["window_ns"] / path["sampled_ns"]
    kernel_part = (path["groups"]["gpu_compute"] + path["groups"]["communication"]) * scale  # the kernels' own time on the path
    for rows in (doc["hotspots_by"]["category"], doc["hotspots_by_operator"]):
        assert rows and all(0 <= r["critical_ns"] <= r["total_ns"] for r in rows)
        total = sum(r["critical_ns"] for r in rows)
        assert abs(total - kernel_part) <= len(rows)  # every kernel in one row (rounded per row)
        assert total <= path["total_ns"] * scale + len(rows)


def test_tui_critical_column_groups_kernel_rows():
    import pandas as pd

    from tui_prof.tui.panes.hotspots import with_critical

    frame = pd.DataFrame({"name": ["GEMM", "comm", "\x1b[31mevil"], "total_ns": [100, 50, 10]})
    key = pd.Series(["GEMM", "comm", "GEMM", "\x1b[31mevil", "comm"])
    rows = np.array([30.0, 20.0, 40.0, 25.0, 5.0])
    out = with_critical(frame, "category", None, rows, key)
    assert out["critical_ns"].tolist() == [70.0, 25.0, 10.0]  # the last capped at its own total
    assert with_critical(frame, "category", None, None, None)["critical_ns"].isna().all()


# ---------------------------------------------------------------- block-wise re-schedule


def _random_arrays(g: dg.DepGraph, seed: int) -> tuple:
    """Random duration, gap, latency, removed-wait and floor edits (as tests/test_whatif.py's)."""
    rng = np.random.default_rng(seed)
    dur = np.rint(g.dur * rng.choice([0.0, 0.5, 1.0, 2.0], size=g.size)).astype(np.int64)
    gap = np.rint(g.gap * rng.choice([0.0, 1.0, 3.0], size=g.size)).astype(np.int64)
    lat = np.where(rng.random(g.size) < 0.2, 0, g.lat)
    waits = (g.wait >= 0) & (rng.random(g.size) > 0.3 * (seed % 2))
    floor = np.where((g.kind >= dg.KERNEL) & (rng.random(g.size) < 0.1), g.end + rng.integers(-20_000, 20_000, g.size), dg.NEG)
    return dur, gap, lat, g.ret, waits, floor


def _same(a, b) -> bool:
    return a is not None and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


@settings(max_examples=30, deadline=None)
@given(
    sync=st.sampled_from(["end", "per_iteration", "per_launch"]),
    streams=st.integers(1, 3),
    gpus=st.integers(1, 2),
    iterations=st.integers(1, 30),
    kernels=st.integers(1, 12),
    seed=st.integers(0, 1000),
)
def test_block_schedule_equals_the_walk_on_generated_graphs(sync, streams, gpus, iterations, kernels, seed):
    """Block by block gives exactly the walk's times on generated runs (a sync per launch,
    per iteration or once), with random edits, also removed waits and collective floors."""
    s = build(SynthSpec(iterations=iterations, kernels_per_iteration=kernels, sync=sync, streams=streams, gpus=gpus, seed=seed))
    g = dg.build_graph(Run(agents=s.agents, kernels=s.kernels, api=s.api, copies=s.copies))
    for edit_seed in (seed, seed + 1):
        arrays = _random_arrays(g, edit_seed)
        assert _same(dg.schedule_blocks(g, *arrays), dg.schedule_walk(g, *arrays))


@settings(max_examples=20, deadline=None)
@given(
    steps=st.integers(1, 4),
    buckets=st.integers(1, 5),
    compute=st.integers(1, 200),
    comm=st.integers(1, 200),
    links=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_block_schedule_equals_the_walk_with_waits_across_streams(steps, buckets, compute, comm, links, seed):
    x = build_xstream(XStreamSpec(steps=steps, buckets=buckets, compute_ns=compute * 1000, comm_ns=comm * 1000), links=links)
    g = dg.build_graph(x.run)
    for edit_seed in (seed, seed + 1):
        arrays = _random_arrays(g, edit_seed)
        assert _same(dg.schedule_blocks(g, *arrays), dg.schedule_walk(g, *arrays))


@pytest.mark.parametrize(
    "path", [MULTI, ALEXNET, RESNET, DATA / "h200" / "train_sync.pt.trace.json.gz"], ids=["multi_stream", "alexnet", "resnet", "train_sync"]
)
def test_block_schedule_equals_the_walk_on_real_graphs(path):
    """Also the H200 training run that synchronises every step (19 blocks)."""
    g = dg.build_graph(load_file(path))
    for seed in range(3):
        arrays = _random_arrays(g, seed)
        assert _same(dg.schedule_blocks(g, *arrays), dg.schedule_walk(g, *arrays))


def test_schedule_takes_the_blocks_for_a_sync_per_step():
    """Large blocks (a sync per step of many launches): schedule() goes block by block; a
    sync per launch (blocks of a few nodes) keeps the walk."""
    per_step = build(SynthSpec(iterations=50, kernels_per_iteration=2_000, sync="per_iteration"))
    g = dg.build_graph(Run(agents=per_step.agents, kernels=per_step.kernels, api=per_step.api, copies=per_step.copies))
    waits = g.wait >= 0
    assert not dg.chains_worth_it(g, waits) and dg.blocks_worth_it(g, waits)
    per_launch = build(SynthSpec(iterations=5_000, kernels_per_iteration=10, sync="per_launch"))
    g2 = dg.build_graph(Run(agents=per_launch.agents, kernels=per_launch.kernels, api=per_launch.api, copies=per_launch.copies))
    assert not dg.blocks_worth_it(g2, g2.wait >= 0)


def test_reports_say_how_much_rests_on_inference():
    from tui_prof.render.whatif import whatif_text

    x = build_xstream(XStreamSpec(), links=False)
    doc = wi.what_if([(x.run, "x", None)], wi.Edits(scales=[("communication", 0.5)]))
    path = doc["processes"][0]["critical_path"]["baseline"]
    text = whatif_text(doc)
    assert f"0 from the trace's event links, {x.stream_waits} inferred from time order" in text
    assert f"rests on {path['inferred_edges']} inferred waits" in text and path["inferred_edges"] == 2 * x.spec.steps
    explicit = whatif_text(wi.what_if([(build_xstream(XStreamSpec()).run, "x", None)], wi.Edits()))
    assert f"{x.stream_waits} from the trace's event links" in explicit and "rests on" not in explicit


def test_loader_keeps_only_well_formed_cuda_sync_links(tmp_path):
    """cuda_sync args of the wrong JSON type (strings, booleans, lists, objects, numbers past
    2**62) are not kept as links; the trace still loads and its graph gives back the record."""
    events = _raw_events(MULTI)
    bad = [
        {"wait_on_cuda_event_record_corr_id": "32"},
        {"wait_on_cuda_event_record_corr_id": True},
        {"wait_on_cuda_event_record_corr_id": [32]},
        {"wait_on_cuda_event_record_corr_id": 32, "wait_on_stream": {"x": 1}},
        {"wait_on_cuda_event_record_corr_id": 32, "device": 2**70},
        {"cuda_sync_kind": "Stream Sync", "stream": "\x1b[31m7"},
    ]
    syncs = [e for e in events if e.get("cat") == "cuda_sync"]
    for e, change in zip(syncs, bad, strict=False):
        e["args"] = {**e["args"], **change}
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps({"traceEvents": events}))
    run = load_file(path)
    links = run.meta.extra.get("cuda_sync_links", {"correlation": []})
    assert all(type(v) is int for column in links.values() for v in column)
    assert links["correlation"] == []  # every link of the trace was made malformed
    assert _recorded(dg.build_graph(run))


def test_timeline_path_marks_add_up_to_the_critical_path_breakdown():
    """The intervals the timeline marks (path_segments) are the critical path's intervals:
    per group their lengths sum to the breakdown's figure, and in all to its length."""
    from tui_prof.analysis.hostapi import CorrIndex

    run = build_xstream(XStreamSpec()).run
    g = dg.build_graph(run, CorrIndex(run.api))
    marks = wi.path_segments(run, g)
    path = wi.critical_path(run, g, g.start, g.end)
    lengths = (marks["end"] - marks["start"]).groupby(marks["group"]).sum().to_dict()
    by_group = {group: sum(labels.values()) for group, labels in path.by_group.items() if sum(labels.values())}
    assert {k: int(v) for k, v in lengths.items() if v} == by_group
    assert int((marks["end"] - marks["start"]).sum()) == path.total_ns
