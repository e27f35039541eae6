"""Issue 31's wrong advice, each on a real trace (tests/data/kineto, PROVENANCE.md) or, where
the issue's trace is not in the repository (many_small, llama), on a generated run with the
same shape. Findings are ranked by the what-if's projected saving and judged on the steady
state; warm-up has its own finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.loaders import load_path
from tui_prof.model import Run, RunSet
from tui_prof.synth.spec import GEMM_NAME, SynthSpec, build

KINETO = Path(__file__).resolve().parent / "data" / "kineto"


def summary_of(path: Path) -> dict:
    return build_summary(load_path(str(path), use_cache=False), SummaryOptions(logs=False))


def by_code(doc: dict) -> dict[str, dict]:
    return {f["code"]: f for f in doc["findings"]}


@pytest.fixture(scope="module")
def cold() -> dict:
    return summary_of(KINETO / "h200_cold" / "cold_train_memory.pt.trace.json.gz")


@pytest.fixture(scope="module")
def eager() -> dict:
    return summary_of(KINETO / "h200" / "decode_eager.pt.trace.json.gz")


@pytest.fixture(scope="module")
def graph() -> dict:
    return summary_of(KINETO / "h200" / "decode_graph.pt.trace.json.gz")


def test_cold_run_warmup_sync_is_not_a_steady_state_problem(cold):
    """cold_train_memory: 2.66 s of sync idle, all in warm-up steps 1-2 (cuDNN autotuning). The
    steady steps have no sync calls (their records say so), so no idle-sync finding; the
    warm-up has its own finding with its cost and what it was."""
    steady = [r for r in cold["steps"]["steps"] if not r["warmup"]]
    assert steady and all(r["sync_calls"] == 0 and r["exposed_sync_ns"] == 0 for r in steady)
    found = by_code(cold)
    assert "idle-sync" not in found and "sync-overhead" not in found
    warm = found["warmup"]
    walls = [r["wall_ns"] for r in cold["steps"]["steps"]]
    assert cold["steps"]["warmup_steps"] == 2
    assert warm["saving_ns"] == cold["warmup"]["cost_ns"] > 2_900_000_000  # step 1 alone is 3.02 s
    assert warm["saving_ns"] <= walls[0] + walls[1]
    assert "autotuning" in warm["message"] and "allocator growth" in warm["message"]
    assert all(f["severity"] != "high" or "steady" in f["message"] or f["code"] == "launch-bound" for f in cold["findings"])


def test_findings_are_ranked_by_projected_saving(eager, graph):
    for doc in (eager, graph):
        projected = [f for f in doc["findings"] if "saving_ns" in f and f["code"] != "warmup"]
        assert projected == doc["findings"][: len(projected)]
        assert [f["saving_ns"] for f in projected] == sorted((f["saving_ns"] for f in projected), reverse=True)
        for f in projected:  # each saving is a projection over the steady window
            assert 0 <= f["saving_ns"] <= f["numbers"]["window_ns"]


def test_graph_decode_is_weighed_against_eager(eager, graph):
    """The CUDA-graph decode run is 9x faster than the eager one: its findings' savings are a
    few ms against the eager run's ~113 ms; the syncs' two findings share one projection, said once."""
    top_eager = eager["findings"][0]
    top_graph = graph["findings"][0]
    assert top_eager["saving_ns"] > 20 * top_graph["saving_ns"]
    found = by_code(graph)
    assert "idle-sync" not in found or found["idle-sync"]["numbers"].get("same_saving_as") == "sync-after-launch"
    assert sum(f["severity"] == "high" for f in graph["findings"]) <= 2
    assert by_code(eager)["launch-bound"]["severity"] == "high"


def test_host_op_gaps_are_named_as_host_ops(eager):
    """The eager decode's GPU waits on the host: its critical path is host operators (the
    attention op on the CPU side among them), named in the finding instead of "launch cost"."""
    lb = by_code(eager)["launch-bound"]
    assert "host operators" in lb["message"] and "aten::scaled_dot_product_attention" in lb["message"]
    assert lb["numbers"]["path_host_ops_pct"] > lb["numbers"]["path_launch_pct"]
    assert "host" in lb["fix"]


def test_launch_bound_run_is_not_told_to_optimise_its_kernel():
    """The many_small shape (dominant kernel, GPU mostly idle, host between launches): the GEMM
    is > 50 % of kernel time, but the critical path is host work, so no "optimise this kernel first"."""
    s = build(SynthSpec(iterations=200, kernels_per_iteration=2, gemm_share=0.9, gap_ns=200_000, sync="end", htod_copies=0, dtoh_copies=0))
    run = Run(agents=s.agents, kernels=s.kernels, api=s.api, copies=s.copies)
    run.meta.label = "many-small"
    doc = build_summary(RunSet(root="x", runs=[run]), SummaryOptions(logs=False))
    dom = by_code(doc)["dominant-kernel"]
    assert doc["hotspots"][0]["name"] == GEMM_NAME and doc["hotspots"][0]["percent"] > 50
    assert dom["severity"] == "info" and "not the bottleneck" in dom["message"] and "Optimise this kernel first" not in dom["fix"]
    assert dom["numbers"]["path_gpu_pct"] < 50


def test_gemm_share_counts_convolution_and_flags_below_60(cold):
    """ResNet-50 (cold_train_memory): convolutions are the GEMM family; below 60 % of the steady
    state's kernel time is a gemm-share finding."""
    cp = cold["critical_path"]["processes"][0]
    by_cat = cp["kernel_ns_by_category"]
    pct = 100 * (by_cat.get("GEMM", 0) + by_cat.get("convolution", 0)) / sum(by_cat.values())
    assert by_cat.get("convolution", 0) > 0
    gs = by_code(cold)["gemm-share"]
    assert gs["numbers"]["gemm_family_pct"] == pytest.approx(pct, abs=1e-3) and pct < 60
    # the steady window's kernels: the kernels launched in the steady steps (their own step records)
    steady_kernel_ns = sum(r["kernel_ns"] for r in cold["steps"]["steps"] if not r["warmup"])
    assert sum(by_cat.values()) == pytest.approx(steady_kernel_ns, rel=0.01)


def test_launch_gaps_held_by_a_host_op_name_it(eager):
    """decode_eager: the listed launch gaps covered by a host operator name it (``host_op``),
    checked against the trace's own cpu_op ranges read independently: on the launching
    thread, a range covering at least half of the gap."""
    import gzip
    import json

    trace = json.loads(gzip.open(KINETO / "h200" / "decode_eager.pt.trace.json.gz").read())
    ops = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")]
    gpu_first = min(a["first_ns"] for a in eager["gpu"]["agents"])
    named = [g for g in eager["gaps"]["listed"] if g["host_op"]]
    assert named and all(g["cause"] == "launch" for g in named)
    assert any(g["host_op"] == "aten::argmax" and g["duration_ns"] > 10_000_000 for g in named)
    for g in named:
        a, b = g["start_ns"], g["start_ns"] + g["duration_ns"]
        covering = []
        for e in ops:
            s = int(round(float(e["ts"]) * 1000))
            t = s + int(round(float(e["dur"]) * 1000))
            if e["name"] == g["host_op"] and min(t, b) - max(s, a) >= (b - a) // 2 - 1000:
                covering.append(e)
        assert covering, (g, gpu_first)
    assert all(g["host_op"] is None for g in eager["gaps"]["listed"] if g["cause"] != "launch")
