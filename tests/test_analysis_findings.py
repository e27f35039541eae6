"""Findings: every FindingCode member is emitted by a document built to trigger it (one
rule at a time, each just past its threshold), and every emitted code maps back to its
member through FindingCode.of."""

from __future__ import annotations

import copy

import pytest

from tui_prof.analysis.findings import FindingCode, build_findings
from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.loaders import load_path
from tui_prof.synth import SynthSpec, build
from tui_prof.synth.write_rocpd import write_rocpd

CAUSES = ("graph", "sync", "copy", "launch", "other")


def quiet_doc() -> dict:
    """A document in which no rule fires: 10 ms wall, GPU idle 10 %, nothing else."""
    return {
        "wall_ns": 10_000_000,
        "kernels": {"dispatches": 100, "unique_names": 2, "total_ns": 9_000_000},
        "hotspots": [{"name": "k", "percent": 40.0}],
        "gpu": {"span_ns": 10_000_000, "idle_pct": 10.0},
        "gaps": {"by_cause": dict.fromkeys(CAUSES, 0), "count_by_cause": dict.fromkeys(CAUSES, 0)},
        "sync": {
            "calls": 0,
            "total_ns": 0,
            "pct_of_wall": 0.0,
            "exposed_ns": 0,
            "waiting_ns": 0,
            "exposed_pct_of_wall": 0.0,
            "sync_after_launch": {"launches": 100, "followed_by_sync": 0, "ratio": 0.0, "detected": False},
        },
        "launch": {"many_tiny_kernels": False, "avg_kernel_ns": 90_000.0, "median_queue_delay_ns": 5_000.0, "tiny_kernels": 0, "tiny_kernel_time_ns": 0},
        "copies": {"bytes": 0, "time_ns": 0, "pct_of_wall": 0.0, "by_direction": {}},
        "occupancy": [],
        "counters": [],
        "logs": [],
    }


def _occupancy_row(pct: float) -> dict:
    return {
        "name": "gemm",
        "occupancy_pct": pct,
        "waves_per_simd": 1,
        "max_waves_per_simd": 8,
        "limiter": "VGPR",
        "vgpr": 256,
        "agpr": 0,
        "lds_bytes": 0,
        "workgroup_size": 256,
        "hint": "use fewer VGPRs",
    }


def _metric(flagged: bool) -> dict:
    return {
        "label": "L2 hit",
        "value": 12.0,
        "unit": "%",
        "formula": "a/b",
        "source": "sdk",
        "threshold": "< 50 %",
        "flagged": flagged,
        "meaning": "poor reuse" if flagged else "",
    }


def _outlier(ratio: float) -> dict:
    """A steps.outliers record (the threshold itself is applied there: tests/test_steps.py)."""
    return {"label": "s", "wall_ns": int(ratio * 1e6), "ratio": ratio, "median_step": "m", "reasons": ["1 more copies (64 bytes)"]}


def _memory(growth=None, grew=0, alloc=None, reserved=None) -> dict:
    return {"step_growth_bytes": growth, "growing_steps": grew, "peak_allocated_bytes": alloc, "peak_reserved_bytes": reserved, "devices": []}


def _set(doc: dict, path: str, value) -> None:
    *head, last = path.split(".")
    for key in head:
        doc = doc[key]
    doc[last] = value


# (what changes in the quiet document, the one code it must produce)
def _stragglers(wait_pct: float) -> dict:
    """A stragglers section: rank 1 last at 2 of 2 collectives, the others waiting ``wait_pct`` % of their time."""
    return {"instances": 2, "rank": 1, "last_in": 2, "compute_excess_pct": 20.0, "others_wait_ns": 500_000, "others_wait_pct": wait_pct, "listed": []}


def _communication(pct_of_time: float, overlap_pct: float) -> dict:
    return {"kernel_ns": 1_000_000, "api_ns": 0, "api_calls": 0, "pct_of_time": pct_of_time, "overlap_ns": 0, "overlap_pct": overlap_pct, "by_type": []}


TRIGGERS = [
    ({"gpu.idle_pct": 20.01}, "gpu-idle"),
    ({"gaps.by_cause.sync": 500_001}, "idle-sync"),  # > 5 % of the 10 ms span
    ({"gaps.by_cause.launch": 1_000_001}, "launch-bound"),  # > 10 %
    ({"sync.exposed_pct_of_wall": 5.01}, "sync-overhead"),
    ({"sync.sync_after_launch": {"launches": 10, "followed_by_sync": 5, "ratio": 0.5, "detected": True}}, "sync-after-launch"),
    ({"launch.many_tiny_kernels": True, "launch.avg_kernel_ns": 9_999.0}, "many-tiny-kernels"),
    ({"copies.pct_of_wall": 20.01}, "copy-share"),
    ({"copies.by_direction": {"HtoD": {"count": 1, "bytes": 1 << 20, "size_unknown": 0, "time_ns": 200_000, "bandwidth_gbs": 5.24}}}, "slow-copy"),
    ({"hotspots": [{"name": "k", "percent": 50.01}]}, "dominant-kernel"),
    ({"occupancy": [_occupancy_row(24.9)]}, "low-occupancy"),
    # a GEMM: tile advice is for compute-bound kernels only (issue 31)
    ({"counters": [{"process": "p", "kernels": [{"name": "Cijk_Alik_Bljk_SB", "dispatches": 1, "metrics": {"l2_hit": _metric(True)}}]}]}, "counter:l2_hit"),
    ({"logs": [{"path": "run.log", "line": 3, "code": "oom", "text": "out of memory", "meaning": "the GPU ran out"}]}, "known-error"),
    ({"counters": [{"process": "p", "kernels": [], "arch": "gfx942", "commands": ["rocprofv3 --pmc SQ_WAVES -- app"]}]}, "no-counters"),
    # > 20 % of the 9 ms kernel time; the GEMM family above 60 % of it (else gemm-share too)
    ({"categories": {"communication": 1_800_001, "GEMM": 7_199_999}}, "communication-share"),
    ({"categories": {"GEMM": 5_999_999, "elementwise": 4_000_001}}, "gemm-share"),  # GEMM + convolution < 60 % of kernel time
    ({"warmup": {"steps": 1, "cost_ns": 100_001, "steady_median_ns": 1_000_000, "what": []}}, "warmup"),  # > 10 % of a steady step
    ({"stats": {"needs_trace": ["gpu-idle"], "tables": []}}, "needs-trace"),
    ({"steps": {"detected": True, "steady": {"median_wall_ns": 1e6}, "outliers": [_outlier(1.51)]}}, "slow-step"),
    ({"memory": _memory(growth=1 << 20, grew=2)}, "memory-growth"),  # 3 steps, 1 MiB
    ({"memory": _memory(alloc=1 << 30, reserved=(2 << 30) + 1)}, "memory-reserved"),  # > 2x and >= 1 GiB more
    ({"stragglers": _stragglers(5.01)}, "straggler"),  # the others wait > 5 % of their time
    ({"communication": _communication(10.01, 49.99)}, "comm-overlap"),  # > 10 % of time, < 50 % overlapped
]
# emitted beside another code by construction (no document gives it alone)
ALONGSIDE = {
    FindingCode.COUNTERS_SERIALISE: "with every counter block that has kernels",
}


def test_quiet_document_has_no_findings():
    assert build_findings(quiet_doc()) == []


@pytest.mark.parametrize(("changes", "code"), TRIGGERS, ids=[c for _, c in TRIGGERS])
def test_each_rule_fires_alone_past_its_threshold(changes, code):
    doc = quiet_doc()
    for path, value in changes.items():
        _set(doc, path, copy.deepcopy(value))
    codes = [f["code"] for f in build_findings(doc)]
    if FindingCode.of(code) is FindingCode.COUNTER:
        assert codes == [code, FindingCode.COUNTERS_SERIALISE.value]
    else:
        assert codes == [code]


def test_raw_sync_share_alone_fires_nothing():
    """Host time in sync calls while the GPU runs queued work (waiting for work) is not
    overhead: sync-overhead fires on the exposed share only (docs/metrics.md)."""
    doc = quiet_doc()
    _set(doc, "sync.pct_of_wall", 60.0)
    _set(doc, "sync.waiting_ns", 6_000_000)
    assert build_findings(doc) == []


def test_thresholds_are_strict():
    """Exactly at the threshold nothing fires (every rule is '>' or '<', not '>=')."""
    at = {
        "gpu.idle_pct": 20.0,
        "gaps.by_cause.sync": 500_000,
        "gaps.by_cause.launch": 1_000_000,
        "sync.exposed_pct_of_wall": 5.0,
        "copies.pct_of_wall": 20.0,
        "memory": _memory(growth=(1 << 20) - 1, grew=2, alloc=1 << 30, reserved=2 << 30),
        "hotspots": [{"name": "k", "percent": 50.0}],
        "occupancy": [_occupancy_row(25.0)],
        "stragglers": _stragglers(5.0),
        "communication": _communication(10.0, 49.99),
    }
    doc = quiet_doc()
    for path, value in at.items():
        _set(doc, path, value)
    assert build_findings(doc) == []


def test_every_code_is_emitted_by_some_document():
    emitted = set()
    for changes, _ in TRIGGERS:
        doc = quiet_doc()
        for path, value in changes.items():
            _set(doc, path, copy.deepcopy(value))
        emitted |= {FindingCode.of(f["code"]) for f in build_findings(doc)}
    assert emitted == set(FindingCode)
    assert set(ALONGSIDE) <= emitted


def test_order_is_severity_then_weight():
    doc = quiet_doc()
    _set(doc, "gpu.idle_pct", 30.0)  # high, weight 30
    _set(doc, "gaps.by_cause.sync", 4_000_000)  # high, weight 40
    _set(doc, "hotspots", [{"name": "k", "percent": 60.0}])  # low
    _set(doc, "sync.exposed_pct_of_wall", 6.0)  # medium
    assert [f["code"] for f in build_findings(doc)] == ["idle-sync", "gpu-idle", "sync-overhead", "dominant-kernel"]


def test_findings_of_a_generated_run(tmp_path):
    """A run that synchronises after every launch: the codes the summary emits are the
    ones its construction implies, and each maps through FindingCode.of."""
    spec = SynthSpec(iterations=20, kernels_per_iteration=10, gpus=1, sync="per_launch", seed=5)
    run = build(spec)
    write_rocpd(run, tmp_path / run.hostname / f"{spec.pid}_results.db", hostname=run.hostname)
    doc = build_summary(load_path(tmp_path, use_cache=False), SummaryOptions(logs=False))
    codes = [f["code"] for f in doc["findings"]]
    assert all(isinstance(FindingCode.of(c), FindingCode) for c in codes)
    sal = doc["sync"]["sync_after_launch"]
    assert sal["launches"] == 200 and sal["followed_by_sync"] == 200 and sal["detected"] is True
    assert "sync-after-launch" in codes
    # ranked by the what-if's projected saving (issue 31), the findings without one after them by severity
    projected = [f for f in doc["findings"] if "saving_ns" in f]
    rest = doc["findings"][len(projected) :]
    assert doc["findings"][: len(projected)] == projected and projected
    assert [f["saving_ns"] for f in projected] == sorted((f["saving_ns"] for f in projected), reverse=True)
    assert [f["severity"] for f in rest] == sorted((f["severity"] for f in rest), key=["high", "medium", "low", "info"].index)
