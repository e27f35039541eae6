"""Each finding rule of analysis.findings.RULES on its own: silent at its threshold (or just
below it), firing just past it, with its code. The documents are the few keys a rule reads."""

from __future__ import annotations

from typing import Any

import pytest

from tui_prof.analysis import findings as fr
from tui_prof.analysis.findings import RULES, Facts, FindingCode, build_findings
from tui_prof.analysis.hostapi import MANY_LAUNCHES, TINY_KERNEL_NS
from tui_prof.analysis.memory import FRAGMENTATION_MIN_BYTES, FRAGMENTATION_RATIO, GROWTH_MIN_BYTES, GROWTH_MIN_STEPS
from tui_prof.analysis.platform import phrases

SPAN = 1_000_000
WALL = 2_000_000
FACTS = Facts(platform=None, say=phrases("unknown"), wall=WALL, span=SPAN)


def codes(rule: fr.Rule, doc: dict[str, Any], facts: Facts = FACTS) -> list[str]:
    return [f["code"] for f, _ in rule(doc, facts)]


def test_every_finding_code_has_a_rule_and_every_rule_gives_its_code():
    assert {code for code, _ in RULES} == set(FindingCode)
    assert len({rule for _, rule in RULES}) == len(RULES)


def test_gpu_idle_fires_past_20_pct_of_the_span():
    doc = {"gpu": {"idle_pct": fr.GPU_IDLE_PCT}, "gaps": {"by_cause": {}}}
    assert codes(fr.gpu_idle, doc) == []
    doc["gpu"]["idle_pct"] = fr.GPU_IDLE_PCT + 0.01
    assert codes(fr.gpu_idle, doc) == ["gpu-idle"]
    assert codes(fr.gpu_idle, doc, Facts(None, phrases("unknown"), WALL, 0)) == []  # no GPU span: nothing to be idle in


@pytest.mark.parametrize(
    ("rule", "cause", "share", "code"),
    [(fr.idle_sync, "sync", fr.IDLE_SYNC_SHARE, "idle-sync"), (fr.launch_bound, "launch", fr.LAUNCH_BOUND_SHARE, "launch-bound")],
)
def test_idle_causes_fire_past_their_share_of_the_span(rule, cause, share, code):
    at = int(share * SPAN)
    doc = {"gaps": {"by_cause": {cause: at}, "count_by_cause": {cause: 3}}}
    assert codes(rule, doc) == []
    doc["gaps"]["by_cause"][cause] = at + 1
    (finding, weight), *_ = rule(doc, FACTS)
    assert finding["code"] == code and finding["numbers"] == {"ns": at + 1, "gaps": 3} and weight == pytest.approx(100 * (at + 1) / SPAN)


def test_sync_after_launch_fires_when_the_sync_section_detects_the_pattern():
    sal = {"launches": 10, "followed_by_sync": 5, "ratio": 0.5, "detected": False}
    assert codes(fr.sync_after_launch, {"sync": {"sync_after_launch": sal}}) == []
    (finding, weight), *_ = fr.sync_after_launch({"sync": {"sync_after_launch": {**sal, "detected": True}}}, FACTS)
    assert finding["code"] == "sync-after-launch" and weight == 50.0 and finding["message"].startswith("5 of 10 launches")


def test_sync_overhead_fires_past_the_5_pct_target():
    sync = {"calls": 4, "total_ns": 100, "pct_of_wall": 7.0, "exposed_pct_of_wall": fr.SYNC_TARGET_PCT}
    assert codes(fr.sync_overhead, {"sync": sync}) == []
    sync["exposed_pct_of_wall"] = fr.SYNC_TARGET_PCT + 0.01
    assert codes(fr.sync_overhead, {"sync": sync}) == ["sync-overhead"]
    assert codes(fr.sync_overhead, {"sync": sync}, Facts(None, phrases("unknown"), 0, SPAN)) == []


def _launch(flag: bool) -> dict[str, Any]:
    return {
        "many_tiny_kernels": flag,
        "avg_kernel_ns": 2000.0,
        "median_queue_delay_ns": 10,
        "tiny_kernels": 2000,
        "tiny_kernel_time_ns": 4_000,
        "graph_launch_calls": 0,
    }


def test_many_tiny_kernels_fires_when_the_launch_section_flags_them():
    doc = {"launch": _launch(False), "kernels": {"dispatches": 2000}}
    assert codes(fr.many_tiny_kernels, doc) == []
    (finding, weight), *_ = fr.many_tiny_kernels({"launch": _launch(True), "kernels": {"dispatches": 2000}}, FACTS)
    assert finding["code"] == "many-tiny-kernels" and weight == pytest.approx(100 * 4_000 / WALL) and "2000 directly launched" in finding["message"]


def test_copy_share_fires_past_20_pct_of_wall():
    doc = {"copies": {"pct_of_wall": fr.COPY_SHARE_PCT, "bytes": 1, "time_ns": 1}}
    assert codes(fr.copy_share, doc) == []
    doc["copies"]["pct_of_wall"] = fr.COPY_SHARE_PCT + 0.01
    assert codes(fr.copy_share, doc) == ["copy-share"]


def test_slow_copy_fires_below_10_gbs_on_1_mib_and_on_pageable_memory():
    def direction(nbytes: int, gbs: float) -> dict[str, Any]:
        return {"count": 2, "bytes": nbytes, "bandwidth_gbs": gbs}

    mib = fr.SLOW_COPY_MIN_BYTES
    assert codes(fr.slow_copy, {"copies": {"by_direction": {"HtoD": direction(mib, fr.SLOW_COPY_GBS)}}}) == []
    assert codes(fr.slow_copy, {"copies": {"by_direction": {"HtoD": direction(mib - 1, 1.0)}}}) == []
    assert codes(fr.slow_copy, {"copies": {"by_direction": {"DtoH": direction(mib, fr.SLOW_COPY_GBS - 0.01)}}}) == ["slow-copy"]
    assert codes(fr.slow_copy, {"copies": {"by_direction": {"DtoD": direction(mib, 1.0)}}}) == []  # device copies: no host memory to pin
    pageable = {"by_kind": {"pageable": {"by_direction": {"HtoD": direction(mib - 1, 1.0)}}}, "by_direction": {"HtoD": direction(mib - 1, 1.0)}}
    assert codes(fr.slow_copy, {"copies": pageable}) == []
    pageable["by_kind"]["pageable"]["by_direction"]["HtoD"] = direction(mib, 50.0)
    (finding, _), *rest = fr.slow_copy({"copies": pageable}, FACTS)
    assert finding["numbers"]["kind"] == "pageable" and not rest  # said once, with the memory kind


def test_dominant_kernel_fires_past_half_of_kernel_time():
    doc = {"hotspots": [{"name": "k", "percent": fr.DOMINANT_KERNEL_PCT}]}
    assert codes(fr.dominant_kernel, doc) == []
    doc["hotspots"][0]["percent"] = fr.DOMINANT_KERNEL_PCT + 0.01
    assert codes(fr.dominant_kernel, doc) == ["dominant-kernel"]


def test_low_occupancy_fires_below_25_pct_among_the_top_5():
    def occ(pct: float) -> dict[str, Any]:
        keys = ("waves_per_simd", "max_waves_per_simd", "limiter", "vgpr", "agpr", "lds_bytes", "workgroup_size")
        return {"name": "k", "occupancy_pct": pct, "hint": "h", **dict.fromkeys(keys, 1)}

    assert codes(fr.low_occupancy, {"occupancy": [occ(fr.LOW_OCCUPANCY_PCT)]}) == []
    assert codes(fr.low_occupancy, {"occupancy": [occ(fr.LOW_OCCUPANCY_PCT - 0.01)]}) == ["low-occupancy"]
    assert codes(fr.low_occupancy, {"occupancy": [occ(90.0)] * fr.OCCUPANCY_TOP + [occ(1.0)]}) == []


def _block(kernels: list[dict[str, Any]], commands: list[str] | None = None) -> dict[str, Any]:
    return {"process": "p", "kernels": kernels, "commands": commands or [], "arch": "gfx942"}


def test_counter_fires_on_a_flagged_metric():
    metric = {"flagged": False, "label": "L2 hit", "value": 12.0, "unit": "%", "threshold": "< 50 %", "formula": "f", "source": "s", "meaning": "m"}
    kernel = {"name": "Cijk_Alik_Bljk_SB_MT128x128x16_MI32x32x2x1", "metrics": {"l2_hit": metric}}  # a GEMM: compute-bound
    assert codes(fr.counter, {"counters": [_block([kernel])]}) == []
    metric["flagged"] = True
    assert codes(fr.counter, {"counters": [_block([kernel])]}) == ["counter:l2_hit"]
    assert FindingCode.of("counter:l2_hit") is FindingCode.COUNTER


def test_tile_advice_only_for_compute_bound_kernels():
    """Issue 31: "revisit tile/block sizes" (l2_hit) fired on streaming kernels (batch-1 GEMV,
    vecCopy, runtime copies). Tuning advice needs a compute-bound kernel (roofline, or a GEMM /
    convolution / attention kernel with no memory metric flagged); memory advice stays for all."""

    def flagged(key: str) -> dict[str, Any]:
        return {"flagged": True, "label": key, "value": 1.0, "unit": "%", "threshold": "t", "formula": "f", "source": "s", "meaning": "m"}

    streaming = ["__amd_rocclr_copyBuffer", "void vecCopy(double*, double*)", "void gemv2T_kernel<int, float>(float const*)", "mul_mat_vec_q<2, 1>"]
    for name in streaming:
        kernel = {"name": name, "metrics": {"l2_hit": flagged("l2_hit"), "hbm_bandwidth_pct": flagged("hbm_bandwidth_pct")}}
        assert codes(fr.counter, {"counters": [_block([kernel])]}) == ["counter:hbm_bandwidth_pct"], name
    gemm = {"name": "Cijk_Alik_Bljk_HHS_BH_MT128x128x32", "metrics": {"l2_hit": flagged("l2_hit")}}
    assert codes(fr.counter, {"counters": [_block([gemm])]}) == ["counter:l2_hit"]
    memory_bound_gemm = {**gemm, "roofline": {"bound": "memory"}}
    assert codes(fr.counter, {"counters": [_block([memory_bound_gemm])]}) == []
    compute_bound_copy = {"name": "my_kernel", "metrics": {"l2_hit": flagged("l2_hit")}, "roofline": {"bound": "compute"}}
    assert codes(fr.counter, {"counters": [_block([compute_bound_copy])]}) == ["counter:l2_hit"]


def test_counters_serialise_fires_on_a_process_with_counters():
    assert codes(fr.counters_serialise, {"counters": [_block([])]}) == []
    assert codes(fr.counters_serialise, {"counters": [_block([{"name": "k", "metrics": {}}])]}) == ["counters-serialise"]


def test_known_error_fires_per_log_hit():
    assert codes(fr.known_error, {"logs": []}) == []
    hit = {"path": "log.txt", "line": 3, "text": "HSA_STATUS_ERROR", "code": "hsa", "meaning": "m"}
    assert codes(fr.known_error, {"logs": [hit, hit]}) == ["known-error", "known-error"]


def test_no_counters_fires_when_kernels_ran_without_counters():
    doc = {"counters": [_block([], ["rocprofv3 --pmc ..."])], "kernels": {"dispatches": 0}}
    assert codes(fr.no_counters, doc) == []
    doc["kernels"]["dispatches"] = 1
    assert codes(fr.no_counters, doc) == ["no-counters"]


def test_communication_share_fires_past_20_pct_of_kernel_time():
    doc = {"kernels": {"total_ns": 1000}, "categories": {"communication": 200}}
    assert codes(fr.communication_share, doc) == []
    doc["categories"]["communication"] = 201
    assert codes(fr.communication_share, doc) == ["communication-share"]


def test_many_tiny_kernels_from_stats_fires_past_1000_short_dispatches():
    def doc(calls: int, avg: int, source: str = "stats") -> dict[str, Any]:
        return {"hotspots_source": source, "kernels": {"dispatches": calls, "total_ns": calls * avg}}

    assert codes(fr.many_tiny_kernels_from_stats, doc(MANY_LAUNCHES, TINY_KERNEL_NS - 1)) == []
    assert codes(fr.many_tiny_kernels_from_stats, doc(MANY_LAUNCHES + 1, TINY_KERNEL_NS)) == []
    assert codes(fr.many_tiny_kernels_from_stats, doc(MANY_LAUNCHES + 1, TINY_KERNEL_NS - 1)) == ["many-tiny-kernels"]
    assert codes(fr.many_tiny_kernels_from_stats, doc(MANY_LAUNCHES + 1, TINY_KERNEL_NS - 1, "trace")) == []


def test_copy_share_from_stats_fires_past_20_pct_of_gpu_time():
    def doc(copy_ns: int, kernel_ns: int) -> dict[str, Any]:
        return {"copies_source": "stats", "kernels": {"total_ns": kernel_ns}, "stats": {"tables": [{"key": "memory_copy_stats", "total_ns": copy_ns}]}}

    assert codes(fr.copy_share_from_stats, doc(200, 800)) == []
    assert codes(fr.copy_share_from_stats, doc(201, 799)) == ["copy-share"]


def test_needs_trace_fires_on_a_statistics_only_run():
    assert codes(fr.needs_trace, {"stats": {"needs_trace": []}}) == []
    assert codes(fr.needs_trace, {"stats": {"needs_trace": ["gpu-idle"]}}) == ["needs-trace"]


def test_slow_step_fires_per_outlier_step():
    outlier = {"label": "step 7", "wall_ns": 3_000_000, "ratio": 1.6, "median_step": "step 3", "reasons": []}
    steps = {"detected": True, "steady": {"median_wall_ns": 2_000_000}, "outliers": []}
    assert codes(fr.slow_step, {"steps": steps}) == []
    steps["outliers"] = [outlier]
    assert codes(fr.slow_step, {"steps": steps}) == ["slow-step"]


def test_memory_growth_fires_from_3_growing_steps_and_1_mib():
    def doc(growth: int, steps: int) -> dict[str, Any]:
        return {"memory": {"step_growth_bytes": growth, "growing_steps": steps - 1, "peak_allocated_bytes": None, "peak_reserved_bytes": None}}

    assert codes(fr.memory_growth, doc(GROWTH_MIN_BYTES, GROWTH_MIN_STEPS - 1)) == []
    assert codes(fr.memory_growth, doc(GROWTH_MIN_BYTES - 1, GROWTH_MIN_STEPS)) == []
    assert codes(fr.memory_growth, doc(GROWTH_MIN_BYTES, GROWTH_MIN_STEPS)) == ["memory-growth"]


def test_memory_reserved_fires_past_twice_the_allocated_peak_and_1_gib_more():
    def doc(alloc: int, reserved: int) -> dict[str, Any]:
        return {"memory": {"step_growth_bytes": None, "growing_steps": 0, "peak_allocated_bytes": alloc, "peak_reserved_bytes": reserved}}

    alloc = FRAGMENTATION_MIN_BYTES
    assert codes(fr.memory_reserved, doc(alloc, int(FRAGMENTATION_RATIO * alloc))) == []
    assert codes(fr.memory_reserved, doc(alloc, int(FRAGMENTATION_RATIO * alloc) + 1)) == ["memory-reserved"]
    small = 1 << 20  # 2x, but far less than 1 GiB more
    assert codes(fr.memory_reserved, doc(small, 3 * small)) == []


def test_straggler_fires_past_5_pct_wait_when_last_at_half_the_collectives():
    strag = {"rank": 1, "others_wait_pct": fr.STRAGGLER_WAIT_PCT, "last_in": 5, "instances": 10, "compute_excess_pct": 3.0, "others_wait_ns": 1000}
    assert codes(fr.straggler, {"stragglers": strag}) == []
    strag["others_wait_pct"] = fr.STRAGGLER_WAIT_PCT + 0.01
    assert codes(fr.straggler, {"stragglers": strag}) == ["straggler"]
    strag["last_in"] = 4
    assert codes(fr.straggler, {"stragglers": strag}) == []


def test_comm_overlap_fires_past_10_pct_of_time_below_half_overlapped():
    comm = {"kernel_ns": 100, "pct_of_time": fr.COMM_TIME_PCT, "overlap_pct": 0.0}
    assert codes(fr.comm_overlap, {"communication": comm}) == []
    comm["pct_of_time"] = fr.COMM_TIME_PCT + 0.01
    assert codes(fr.comm_overlap, {"communication": comm}) == ["comm-overlap"]
    comm["overlap_pct"] = fr.COMM_OVERLAP_PCT
    assert codes(fr.comm_overlap, {"communication": comm}) == []


def test_build_findings_orders_by_severity_then_weight_then_rule_order():
    doc: dict[str, Any] = {
        "gpu": {"idle_pct": 50.0, "agent_span_ns": SPAN},
        "gaps": {"by_cause": {}, "count_by_cause": {}},
        "sync": {},
        "launch": {},
        "copies": {"pct_of_wall": 0.0},
        "kernels": {"dispatches": 0, "total_ns": 0},
        "wall_ns": WALL,
        "logs": [{"path": "l", "line": 1, "text": "t", "code": "c", "meaning": "m"}],
        "stats": {"needs_trace": ["gpu-idle"]},
    }
    assert [f["code"] for f in build_findings(doc)] == ["gpu-idle", "known-error", "needs-trace"]
