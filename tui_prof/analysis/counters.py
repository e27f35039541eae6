"""Derived hardware-counter metrics per kernel, and what to collect when counters are missing.

Each metric is evaluated per dispatch from that dispatch's counter values, then averaged
over the kernel's dispatches (rocprof-compute's ``AVG(...)`` convention). Multi-XCD parts
divide GRBM_GUI_ACTIVE by the XCD count (rocprof-compute ``$GRBM_GUI_ACTIVE_PER_XCD``).
A counter named ``X`` is also looked up as ``X_sum`` and vice versa. When the profiler
already wrote a derived metric under its SDK name (``L2CacheHit``, ``VALUUtilization`` ...)
that value is used as is. Formulas, sources and thresholds: research/counters_hw.md §1;
thresholds tagged [P] are ours (no source gives a number).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.analysis.capability import nvidia_arch
from tui_prof.analysis.counteradvice import advise
from tui_prof.analysis.counterplan import default_metrics, plan
from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES, row_flags, row_strings
from tui_prof.analysis.occupancy import arch_limits, occupancy
from tui_prof.analysis.runinput import RunInput
from tui_prof.analysis.sections import Record
from tui_prof.model import Agent, Run


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    formula: str
    source: str
    threshold: str  # human text, e.g. "< 50% [P]"
    bad: Callable[[float], bool] | None  # value -> threshold crossed
    meaning: str  # plain-words interpretation when the threshold is crossed
    inputs: tuple[tuple[str, ...], ...]  # alternative counter sets (any one suffices)
    compute: Callable  # (get, ctx) -> np.ndarray
    families: tuple[str, ...] = ("CDNA", "RDNA")
    sdk_name: str = ""  # derived metric name rocprofv3 may have written itself
    peak: Callable[[dict], float | None] | None = None  # ctx -> the arch's peak in the metric's unit
    bad_pct: Callable[[float], bool] | None = None  # % of peak -> threshold crossed (instead of ``bad``)
    rpc_name: str = ""  # rocprof-compute's name of the same metric (analysis database)
    rpc_stat: str = "Avg"  # which of its values equals ours ("Pct of Peak" for a per-cent of a peak)
    optional: bool = False  # shown when its counters were collected, never listed as missing


def _pct(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, 100.0 * a / b, np.nan)


def _grbm(get, ctx):
    return get("GRBM_GUI_ACTIVE") / ctx["xcd"]


def _zero(values):
    """Absent optional counters (NaN) count as 0."""
    return np.nan_to_num(values, nan=0.0)


def _fabric_read_bytes(get, ctx):
    """Bytes the L2 read over the fabric (rocprof-compute L2-Fabric Read BW numerator)."""
    if ctx["has"]("TCC_EA0_RDREQ"):
        bubble, req, req32 = get("TCC_BUBBLE"), get("TCC_EA0_RDREQ"), get("TCC_EA0_RDREQ_32B")
        return 128 * bubble + 64 * (req - bubble - req32) + 32 * req32
    req, req32 = get("TCC_EA_RDREQ"), get("TCC_EA_RDREQ_32B")
    return 64 * (req - req32) + 32 * req32


def _fabric_write_bytes(get, ctx):
    """Bytes the L2 wrote over the fabric (rocprof-compute L2-Fabric Write BW numerator)."""
    prefix = "TCC_EA0_WRREQ" if ctx["has"]("TCC_EA0_WRREQ") else "TCC_EA_WRREQ"
    req, req64 = get(prefix), get(prefix + "_64B")
    return 64 * req64 + 32 * (req - req64)


RPC_SOL = "rocprof-compute analysis_configs/gfx942/0200_system_speed_of_light.yaml"


METRICS: tuple[Metric, ...] = (
    Metric(
        "gpu_busy",
        "GPU busy",
        "%",
        "100*GRBM_GUI_ACTIVE/GRBM_COUNT",
        "rocprofiler-sdk counter_defs.yaml GPUBusy",
        "< 50% [P]",
        lambda v: v < 50,
        "the GPU idled for a large part of this kernel's window (launch/host bound)",
        (("GRBM_GUI_ACTIVE", "GRBM_COUNT"),),
        lambda g, c: _pct(g("GRBM_GUI_ACTIVE"), g("GRBM_COUNT")),
        sdk_name="GPUBusy",
    ),
    Metric(
        "waves",
        "Wavefronts per dispatch",
        "waves",
        "SQ_WAVES",
        "counter_defs.yaml Wavefronts",
        "< CUs x SIMDs per CU [P]",
        None,
        "grid too small to give every SIMD one wave (a different problem from low occupancy)",
        (("SQ_WAVES",),),
        lambda g, c: g("SQ_WAVES"),
        sdk_name="Wavefronts",
    ),
    Metric(
        "valu_utilization",
        "VALU Active Threads (% of wave; rocprofv3 VALUUtilization)",
        "%",
        "100*SQ_THREAD_CYCLES_VALU/(SQ_ACTIVE_INST_VALU*wave_size)",
        "counter_defs.yaml VALUUtilization",
        "< 75% [P]",
        lambda v: v < 75,
        "thread divergence, or workgroup size not a multiple of the wave size (partial waves)",
        (("SQ_THREAD_CYCLES_VALU", "SQ_ACTIVE_INST_VALU"),),
        lambda g, c: _pct(g("SQ_THREAD_CYCLES_VALU"), g("SQ_ACTIVE_INST_VALU") * c["wave"]),
        ("CDNA",),
        "VALUUtilization",
        rpc_name="VALU Active Threads",
        rpc_stat="Pct of Peak",
    ),
    Metric(
        "valu_busy",
        "VALU Utilization (busy; rocprofv3 VALUBusy)",
        "%",
        "100*SQ_ACTIVE_INST_VALU/CU_NUM/(GRBM_GUI_ACTIVE/XCDs)",
        "counter_defs.yaml VALUBusy",
        "descriptive (0% bad .. 100% optimal)",
        None,
        "",
        (("SQ_ACTIVE_INST_VALU", "GRBM_GUI_ACTIVE"),),
        lambda g, c: _pct(g("SQ_ACTIVE_INST_VALU") / c["cu"], _grbm(g, c)),
        ("CDNA",),
        "VALUBusy",
        rpc_name="VALU Utilization",
        rpc_stat="Avg",
    ),
    Metric(
        "l2_hit",
        "L2 cache hit rate",
        "%",
        "100*TCC_HIT/(TCC_HIT+TCC_MISS) (RDNA: GL2C_HIT, GL2C_MISS)",
        "counter_defs.yaml L2CacheHit; rocprof-compute L2 Cache Hit Rate",
        "< 50% [P]",
        lambda v: v < 50,
        "poor L2 locality: revisit tile/block sizes so data is reused while it is in L2",
        (("TCC_HIT", "TCC_MISS"), ("GL2C_HIT", "GL2C_MISS")),
        lambda g, c: _pct(g("TCC_HIT"), g("TCC_HIT") + g("TCC_MISS")) if c["family"] == "CDNA" else _pct(g("GL2C_HIT"), g("GL2C_HIT") + g("GL2C_MISS")),
        sdk_name="L2CacheHit",
        rpc_name="L2 Cache Hit Rate",
        rpc_stat="Avg",
    ),
    Metric(
        "alu_stalled_by_lds",
        "ALU stalled by LDS",
        "%",
        "400*SQ_WAIT_INST_LDS/SQ_WAVES/(GRBM_GUI_ACTIVE/XCDs)",
        "counter_defs.yaml ALUStalledByLDS (not on gfx94x/gfx950/gfx12)",
        "> 10% [P]",
        lambda v: v > 10,
        "waves wait on the LDS queues: reduce LDS bank conflicts (pad rows by one element or XOR-swizzle), else fewer LDS accesses",
        (("SQ_WAIT_INST_LDS", "SQ_WAVES", "GRBM_GUI_ACTIVE"),),
        lambda g, c: 4.0 * _pct(g("SQ_WAIT_INST_LDS"), g("SQ_WAVES") * _grbm(g, c)),
        sdk_name="ALUStalledByLDS",
    ),
    Metric(
        "lds_bank_conflict",
        "LDS bank conflict (time)",
        "%",
        "CDNA: 100*SQ_LDS_BANK_CONFLICT/(GRBM_GUI_ACTIVE/XCDs)/CU_NUM; RDNA: 100*SQC_LDS_BANK_CONFLICT/SQC_LDS_IDX_ACTIVE",
        "counter_defs.yaml LDSBankConflict",
        "> 5% CDNA, > 10% RDNA [P]",
        None,
        "LDS bank conflicts: pad shared arrays (+1 element per row) or XOR-swizzle the index",
        (("SQ_LDS_BANK_CONFLICT", "GRBM_GUI_ACTIVE"), ("SQC_LDS_BANK_CONFLICT", "SQC_LDS_IDX_ACTIVE")),
        lambda g, c: (
            _pct(g("SQ_LDS_BANK_CONFLICT") / c["cu"], _grbm(g, c)) if c["family"] == "CDNA" else _pct(g("SQC_LDS_BANK_CONFLICT"), g("SQC_LDS_IDX_ACTIVE"))
        ),
        sdk_name="LDSBankConflict",
    ),
    Metric(
        "lds_conflicts_per_access",
        "LDS bank conflicts per access",
        "conflicts/access",
        "SQ_LDS_BANK_CONFLICT/(SQ_LDS_IDX_ACTIVE-SQ_LDS_BANK_CONFLICT)",
        "rocprof-compute LDS Bank Conflicts/Access",
        "> 0.1 [P]",
        lambda v: v > 0.1,
        "LDS bank conflicts: pad shared arrays (+1 element per row) or XOR-swizzle the index",
        (("SQ_LDS_BANK_CONFLICT", "SQ_LDS_IDX_ACTIVE"),),
        lambda g, c: _ratio(g("SQ_LDS_BANK_CONFLICT"), g("SQ_LDS_IDX_ACTIVE") - g("SQ_LDS_BANK_CONFLICT")),
        ("CDNA",),
        rpc_name="LDS Bank Conflicts/Access",
        rpc_stat="Avg",
    ),
    Metric(
        "mfma_utilization",
        "MFMA (matrix core) utilisation",
        "%",
        "100*SQ_VALU_MFMA_BUSY_CYCLES/((GRBM_GUI_ACTIVE/XCDs)*CU_NUM*4)",
        "rocprof-compute MFMA Utilization",
        "< 20% in a GEMM kernel [P] (> 70% = matrix-core bound, good)",
        None,
        "matrix cores under-fed: the GEMM waits on memory or on its own epilogue",
        (("SQ_VALU_MFMA_BUSY_CYCLES", "GRBM_GUI_ACTIVE"),),
        lambda g, c: _pct(g("SQ_VALU_MFMA_BUSY_CYCLES"), _grbm(g, c) * c["cu"] * 4),
        ("CDNA",),
        rpc_name="MFMA Utilization",
        rpc_stat="Avg",
    ),
    Metric(
        "vmem_utilization",
        "VMEM instruction utilisation",
        "%",
        "100*(SQ_ACTIVE_INST_FLAT+SQ_ACTIVE_INST_VMEM)/(GRBM_GUI_ACTIVE/XCDs)/CU_NUM",
        "rocprof-compute VMEM Utilization",
        "> 50% [P]",
        lambda v: v > 50,
        "memory-instruction heavy: the kernel mostly issues loads/stores",
        (("SQ_ACTIVE_INST_FLAT", "SQ_ACTIVE_INST_VMEM", "GRBM_GUI_ACTIVE"),),
        lambda g, c: _pct((g("SQ_ACTIVE_INST_FLAT") + g("SQ_ACTIVE_INST_VMEM")) / c["cu"], _grbm(g, c)),
        ("CDNA",),
        rpc_name="VMEM Utilization",
        rpc_stat="Avg",
    ),
    Metric(
        "hbm_bandwidth_pct",
        "Memory bandwidth (% of peak)",
        "%",
        "(FETCH_SIZE+WRITE_SIZE)*1024/duration / peak HBM bandwidth",
        "counter_defs.yaml FETCH_SIZE/WRITE_SIZE (KiB); peak from ROCm GPU specs",
        "> 70% [P]",
        lambda v: v > 70,
        "memory-bandwidth bound: reduce bytes moved (fusion, lower precision, better reuse)",
        (("FETCH_SIZE", "WRITE_SIZE"),),
        lambda g, c: _pct((g("FETCH_SIZE") + g("WRITE_SIZE")) * 1024.0 / c["dur"], np.full(len(c["dur"]), c["peak_gbs"] or np.nan)),
    ),
    Metric(
        "fetch_size",
        "Bytes read from memory (FETCH_SIZE)",
        "KiB",
        "FETCH_SIZE (rocprofv3 derived metric; per dispatch)",
        "counter_defs.yaml FETCH_SIZE (KiB the L2 read from device memory)",
        "descriptive",
        None,
        "",
        (("FETCH_SIZE",),),
        lambda g, c: g("FETCH_SIZE"),
        sdk_name="FETCH_SIZE",
        optional=True,
    ),
    Metric(
        "write_size",
        "Bytes written to memory (WRITE_SIZE)",
        "KiB",
        "WRITE_SIZE (rocprofv3 derived metric; per dispatch)",
        "counter_defs.yaml WRITE_SIZE (KiB the L2 wrote to device memory)",
        "descriptive",
        None,
        "",
        (("WRITE_SIZE",),),
        lambda g, c: g("WRITE_SIZE"),
        sdk_name="WRITE_SIZE",
        optional=True,
    ),
    Metric(
        "read_bandwidth",
        "Memory read bandwidth (FETCH_SIZE)",
        "GB/s",
        "FETCH_SIZE*1024/duration_ns",
        "counter_defs.yaml FETCH_SIZE; peak as the memory bandwidth metric",
        "> 70% of peak memory bandwidth [P]",
        None,
        "memory-bandwidth bound on reads: move fewer bytes (fusion, lower precision, better reuse)",
        (("FETCH_SIZE",),),
        lambda g, c: _ratio(g("FETCH_SIZE") * 1024.0, c["dur"]),
        peak=lambda c: c["hbm_gbs"],
        bad_pct=lambda p: p > 70,
        optional=True,
    ),
    Metric(
        "dependency_wait",
        "Dependency wait (share of wave cycles)",
        "%",
        "100*SQ_WAIT_ANY/SQ_WAVE_CYCLES",
        "counter_defs.yaml WAVE_DEP_WAIT (gfx10-12); rocprof-compute 0700 Dependency Wait / Wave Cycles",
        "> 60% [P]",
        lambda v: v > 60,
        "waves mostly wait on dependencies: latency bound (more independent work per wave, or more waves)",
        (("SQ_WAIT_ANY", "SQ_WAVE_CYCLES"),),
        lambda g, c: _pct(g("SQ_WAIT_ANY"), g("SQ_WAVE_CYCLES")),
        sdk_name="WAVE_DEP_WAIT",
        optional=True,
    ),
    Metric(
        "occupancy_percent",
        "Occupancy (% of maximum)",
        "%",
        "100*SQ_WAVE_CYCLES/GRBM_GUI_ACTIVE/CUs/32",
        "counter_defs.yaml OccupancyPercent (gfx10/11: 32 waves per CU)",
        "< 25% [P]",
        lambda v: v < 25,
        "low occupancy: fewer VGPRs or less LDS per workgroup, or a larger grid",
        (("SQ_WAVE_CYCLES", "GRBM_GUI_ACTIVE"),),
        lambda g, c: _pct(g("SQ_WAVE_CYCLES"), g("GRBM_GUI_ACTIVE") * c["cu"] * 32),
        ("RDNA",),
        "OccupancyPercent",
        optional=True,
    ),
    Metric(
        "mem_unit_busy",
        "Memory unit busy",
        "%",
        "100*TA_TA_BUSY_max/GRBM_GUI_ACTIVE (profiler-derived MemUnitBusy)",
        "counter_defs.yaml MemUnitBusy",
        "> 80% [P]",
        lambda v: v > 80,
        "fetch-bound: the texture-addresser (memory) unit is busy most of the time",
        (("MemUnitBusy",),),
        lambda g, c: g("MemUnitBusy"),
        sdk_name="MemUnitBusy",
    ),
    Metric(
        "mem_unit_stalled",
        "Memory unit stalled",
        "%",
        "profiler-derived MemUnitStalled",
        "counter_defs.yaml MemUnitStalled",
        "> 20% [P]",
        lambda v: v > 20,
        "vector memory pipeline stalled: reduce the number or size of fetches and writes",
        (("MemUnitStalled",),),
        lambda g, c: g("MemUnitStalled"),
        ("CDNA",),
        "MemUnitStalled",
    ),
    Metric(
        "wave_occupancy",
        "Wavefront occupancy",
        "waves",
        "SQ_LEVEL_WAVES_ACCUM/(GRBM_GUI_ACTIVE/XCDs) (SQ_ACCUM_PREV_HIRES of the SQ_LEVEL_WAVES pass); peak max_waves_per_cu*CU_NUM",
        RPC_SOL + " Wavefront Occupancy",
        "< 25% of the arch maximum [P]",
        None,
        "few waves resident per SIMD to hide memory latency (the occupancy limiter line names what limits them)",
        (("SQ_LEVEL_WAVES_ACCUM", "GRBM_GUI_ACTIVE"),),
        # needs the XCD count: without the agent's, GRBM_GUI_ACTIVE per XCD is unknown
        lambda g, c: _ratio(g("SQ_LEVEL_WAVES_ACCUM"), _grbm(g, c)) if c["xcd_known"] else g(""),
        ("CDNA",),
        peak=lambda c: c["max_waves"],
        bad_pct=lambda p: p < 25,
        rpc_name="Wavefront Occupancy",
    ),
    Metric(
        "vl1d_hit",
        "vL1D cache hit rate",
        "%",
        "100-100*(TCP_TCC_READ_REQ+TCP_TCC_WRITE_REQ+TCP_TCC_ATOMIC_WITH_RET_REQ+TCP_TCC_ATOMIC_WITHOUT_RET_REQ)/TCP_TOTAL_CACHE_ACCESSES (all _sum)",
        RPC_SOL + " vL1D Cache Hit Rate",
        "< 50% [P]",
        lambda v: v < 50,
        "most vector L1 lookups go on to L2: coalesce accesses (neighbouring lanes, neighbouring addresses) and reuse loaded lines within the workgroup",
        (("TCP_TCC_READ_REQ", "TCP_TCC_WRITE_REQ", "TCP_TOTAL_CACHE_ACCESSES"),),
        lambda g, c: (
            100.0
            - _pct(
                g("TCP_TCC_READ_REQ") + g("TCP_TCC_WRITE_REQ") + _zero(g("TCP_TCC_ATOMIC_WITH_RET_REQ")) + _zero(g("TCP_TCC_ATOMIC_WITHOUT_RET_REQ")),
                g("TCP_TOTAL_CACHE_ACCESSES"),
            )
        ),
        ("CDNA",),
        rpc_name="vL1D Cache Hit Rate",
    ),
    Metric(
        "sl1d_hit",
        "sL1D (scalar) cache hit rate",
        "%",
        "100*SQC_DCACHE_HITS/(SQC_DCACHE_HITS+SQC_DCACHE_MISSES)",
        RPC_SOL + " sL1D Cache Hit Rate",
        "< 50% [P]",
        lambda v: v < 50,
        "scalar loads (kernel arguments, uniform constants) miss the scalar cache: keep uniform data small and read it once",
        (("SQC_DCACHE_HITS", "SQC_DCACHE_MISSES"),),
        lambda g, c: _pct(g("SQC_DCACHE_HITS"), g("SQC_DCACHE_HITS") + g("SQC_DCACHE_MISSES")),
        ("CDNA",),
        rpc_name="sL1D Cache Hit Rate",
    ),
    Metric(
        "vl1d_stalled_on_l2",
        "vL1D stalled on L2 data",
        "%",
        "100*TCP_PENDING_STALL_CYCLES_sum/TCP_GATE_EN1_sum",
        "rocprof-compute analysis_configs/gfx942/1600_vector_l1_data_cache.yaml Stalled on L2 Data",
        "> 20% [P]",
        lambda v: v > 20,
        "the vector memory unit waits on L2 for data much of its active time: raise the L2 hit rate (blocking, reuse) or keep more waves in flight to hide the latency",
        (("TCP_PENDING_STALL_CYCLES", "TCP_GATE_EN1"),),
        lambda g, c: _pct(g("TCP_PENDING_STALL_CYCLES"), g("TCP_GATE_EN1")),
        ("CDNA",),
    ),
    Metric(
        "l2_fabric_read_bw",
        "L2-Fabric read bandwidth",
        "GB/s",
        "gfx94x/950: (128*TCC_BUBBLE+64*(TCC_EA0_RDREQ-TCC_BUBBLE-TCC_EA0_RDREQ_32B)+32*TCC_EA0_RDREQ_32B)/duration_ns; "
        "gfx908/90a: (64*(TCC_EA_RDREQ-TCC_EA_RDREQ_32B)+32*TCC_EA_RDREQ_32B)/duration_ns (all _sum); peak max_mclk/1000*32*num_hbm_channels",
        RPC_SOL + " L2-Fabric Read BW; gfx908/90a bytes as counter_defs.yaml FETCH_SIZE",
        "> 70% of peak HBM bandwidth [P]",
        None,
        "HBM-bandwidth bound on reads: move fewer bytes (fuse kernels, lower precision, block for L2 reuse)",
        (("TCC_BUBBLE", "TCC_EA0_RDREQ", "TCC_EA0_RDREQ_32B"), ("TCC_EA_RDREQ", "TCC_EA_RDREQ_32B")),
        lambda g, c: _ratio(_fabric_read_bytes(g, c), c["dur"]),
        ("CDNA",),
        peak=lambda c: c["hbm_gbs"],
        bad_pct=lambda p: p > 70,
        rpc_name="L2-Fabric Read BW",
    ),
    Metric(
        "l2_fabric_write_bw",
        "L2-Fabric write bandwidth",
        "GB/s",
        "gfx94x/950: (64*TCC_EA0_WRREQ_64B+32*(TCC_EA0_WRREQ-TCC_EA0_WRREQ_64B))/duration_ns; gfx908/90a: TCC_EA_WRREQ*, the same (all _sum)",
        RPC_SOL + " L2-Fabric Write BW; gfx908/90a bytes as counter_defs.yaml WRITE_SIZE",
        "> 70% of peak HBM bandwidth [P]",
        None,
        "HBM-bandwidth bound on writes: write less (fuse the consumer, lower precision, avoid read-modify-write)",
        (("TCC_EA0_WRREQ", "TCC_EA0_WRREQ_64B"), ("TCC_EA_WRREQ", "TCC_EA_WRREQ_64B")),
        lambda g, c: _ratio(_fabric_write_bytes(g, c), c["dur"]),
        ("CDNA",),
        peak=lambda c: c["hbm_gbs"],
        bad_pct=lambda p: p > 70,
        rpc_name="L2-Fabric Write BW",
    ),
)


def _ratio(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / b, np.nan)


def family_of(arch: str) -> str:
    lim = arch_limits(arch)
    if lim is not None:
        return "RDNA" if lim.rdna else "CDNA"
    return "RDNA" if (arch or "").startswith("gfx1") else "CDNA"


# Which counters to collect, per pass, by arch family (research/counters_hw.md §1a/§2b).
def recommended_passes(arch: str) -> list[list[str]]:
    a = (arch or "").split(":")[0]
    if family_of(a) == "RDNA":
        passes = [["GRBM_GUI_ACTIVE", "GRBM_COUNT", "SQ_WAVES"], ["GL2C_HIT", "GL2C_MISS"], ["SQC_LDS_BANK_CONFLICT", "SQC_LDS_IDX_ACTIVE"]]
        if not a.startswith("gfx12"):
            passes.append(["SQ_WAIT_INST_LDS", "SQ_WAVES", "GRBM_GUI_ACTIVE"])
        return passes
    passes = [
        ["GRBM_GUI_ACTIVE", "GRBM_COUNT", "SQ_WAVES", "SQ_ACTIVE_INST_VALU", "SQ_THREAD_CYCLES_VALU"],
        ["TCC_HIT_sum", "TCC_MISS_sum"],
        ["SQ_LDS_BANK_CONFLICT", "SQ_LDS_IDX_ACTIVE", "SQ_VALU_MFMA_BUSY_CYCLES", "GRBM_GUI_ACTIVE"],
        ["SQ_ACTIVE_INST_VMEM", "SQ_ACTIVE_INST_FLAT", "GRBM_GUI_ACTIVE"],
        ["FETCH_SIZE", "WRITE_SIZE"],
    ]
    if a in ("gfx908", "gfx90a", "gfx906", "gfx900"):
        passes.append(["SQ_WAIT_INST_LDS", "SQ_WAVES", "GRBM_GUI_ACTIVE"])
    return passes


def pmc_commands(arch: str, app: str = "<your app and its arguments>") -> list[str]:
    """The exact rocprofv3 commands (one per pass) that collect what the metrics need on
    ``arch``: the counter dictionary's plan (analysis.counterplan) where it knows the arch,
    else :func:`recommended_passes`."""
    try:
        found = plan(arch, default_metrics(arch), app=app)
    except ValueError:  # no dictionary for this arch
        found = None
    if found is not None and found["vendor"] == "amd" and found["commands"]:
        return list(found["commands"])
    return [f"rocprofv3 --kernel-trace --pmc {' '.join(p)} --output-format csv -d tuiprof_pmc -- {app}" for p in recommended_passes(arch)]


# Nsight Compute metrics for the same questions the AMD metrics answer (SM busy, L2 hit
# rate, DRAM throughput, achieved occupancy), and the timeline tool; tuiprof does not read
# their reports, so these are for the user to run beside it.
NCU_METRICS = (
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_sector_hit_rate.pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
)


def ncu_commands(app: str = "<your app and its arguments>") -> list[str]:
    """The NVIDIA commands that collect hardware counters (Nsight Compute) and a timeline
    (Nsight Systems) for ``app``."""
    return [
        f"ncu --metrics {','.join(NCU_METRICS)} --csv --log-file tuiprof_ncu.csv -- {app}",
        f"ncu --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis -o tuiprof_ncu -- {app}",
        f"nsys profile --trace=cuda,nvtx,osrt -o tuiprof_nsys -- {app}",
    ]


def _metric_applies(metric: Metric, family: str, arch: str) -> bool:
    if family not in metric.families:
        return False
    return not (metric.key == "alu_stalled_by_lds" and (arch.startswith(("gfx94", "gfx95", "gfx12"))))


# Metrics that do not exist on a family, with the reason (shown instead of "missing").
ABSENT_RDNA = {
    "MFMA utilisation, MFMA FLOPs": "RDNA has no matrix cores (MFMA); its WMMA runs on the VALU",
    "LDS bank conflicts per access (SQ_LDS_*)": "RDNA counts LDS in the SQC block (SQC_LDS_BANK_CONFLICT, SQC_LDS_IDX_ACTIVE): the time-based LDS bank conflict metric is used",
    "wavefront occupancy (SQ_LEVEL_WAVES accumulate), occupancy limiters (SPI_RA_*)": "SPI_RA_* exist only on gfx908/gfx90a/gfx94x/gfx950; rocprof-compute's level pass is CDNA-only",
    "L2-Fabric bandwidth (TCC_EA0_*), vL1D/sL1D hit rates (TCP_*, SQC_DCACHE_*)": "RDNA's L2 is GL2C (GL2C_HIT/GL2C_MISS give the L2 hit rate); rocprof-compute's fabric and L1 panels are CDNA configs",
    "VALU Active Threads, VALU Utilization, VMEM Utilization": "SQ_THREAD_CYCLES_VALU / SQ_ACTIVE_INST_* formulas are defined for gfx9 (CDNA) only in counter_defs.yaml",
}
ABSENT_GFX1151 = {
    "TA_BUFFER_* / TA_FLAT_* (memory-unit counters)": "not exposed on gfx1151 (intellikit PR #189)",
    "hardware counters at all with ROCm 7.2.0": "rocprofv3 --pmc aborted on gfx1151 (rocm-systems #2169; fixed by PR #2171, backport #3229)",
}
OCCUPANCY_LIMITERS = (
    ("SPI_RA_VGPR_SIMD_FULL_CSN", "VGPRs", "use fewer VGPRs per thread (smaller tiles, fewer live values, __launch_bounds__)"),
    ("SPI_RA_SGPR_SIMD_FULL_CSN", "SGPRs", "use fewer scalar registers (fewer uniform values live at once)"),
    ("SPI_RA_LDS_CU_FULL_CSN", "LDS", "use less LDS per workgroup (smaller LDS tile) or fewer, larger workgroups"),
    ("SPI_RA_WAVE_SIMD_FULL_CSN", "wave slots", "the SIMDs are full: occupancy is at its maximum"),
    ("SPI_RA_BAR_CU_FULL_CSN", "barriers", "larger workgroups (fewer of them per CU need fewer barriers)"),
    ("SPI_RA_TGLIM_CU_FULL_CSN", "workgroup limit", "larger workgroups (more waves each)"),
)
RPC_LIMITERS = {
    "Insufficient SIMD VGPRs": "VGPRs",
    "Insufficient SIMD SGPRs": "SGPRs",
    "Insufficient CU LDS": "LDS",
    "Insufficient SIMD Waveslots": "wave slots",
    "Insufficient CU Barriers": "barriers",
    "Reached CU Workgroup Limit": "workgroup limit",
    "Reached CU Wavefront Limit": "wavefront limit",
}


def absent_counters(arch: str) -> dict[str, str]:
    """Metrics that cannot exist on ``arch`` and why (the capability pane's limits), so the
    panel says so instead of "missing"."""
    a = (arch or "").split(":")[0]
    out: dict[str, str] = {}
    if family_of(a) == "RDNA":
        out.update(ABSENT_RDNA)
        if a.startswith(("gfx12", "gfx94", "gfx95")):
            out["ALU stalled by LDS"] = "SQ_WAIT_INST_LDS / ALUStalledByLDS is not defined for this arch"
    elif a.startswith(("gfx94", "gfx95")):
        out["ALU stalled by LDS"] = "ALUStalledByLDS is not defined for gfx94x/gfx950 in counter_defs.yaml: use LDS bank conflicts per access"
    if a.startswith("gfx115"):
        out.update(ABSENT_GFX1151)
    return out


def hbm_peak_gbs(agent: Agent | None, arch: str) -> tuple[float | None, str]:
    """Peak memory bandwidth (GB/s) and where it comes from: rocprof-compute's
    ``$hbmBandwidth = max_mclk/1000*32*num_hbm_channels`` when the workload's sysinfo gives
    both, else the arch table's documented peak."""
    extra = agent.extra if agent else {}
    try:
        mclk, channels = float(extra.get("max_mclk", "")), float(extra.get("num_hbm_channels", ""))
    except (TypeError, ValueError):
        mclk = channels = 0.0
    if mclk > 0 and channels > 0:
        return mclk / 1000 * 32 * channels, f"max_mclk {mclk:g} MHz/1000*32*{channels:g} HBM channels (rocprof-compute $hbmBandwidth)"
    lim = arch_limits(arch)
    return (lim.peak_hbm_gbs, lim.hbm_source) if lim and lim.peak_hbm_gbs else (None, "")


VALU_FLOP_COUNTERS = {
    "F16": ("SQ_INSTS_VALU_ADD_F16", "SQ_INSTS_VALU_MUL_F16", "SQ_INSTS_VALU_TRANS_F16", "SQ_INSTS_VALU_FMA_F16"),
    "F32": ("SQ_INSTS_VALU_ADD_F32", "SQ_INSTS_VALU_MUL_F32", "SQ_INSTS_VALU_TRANS_F32", "SQ_INSTS_VALU_FMA_F32"),
    "F64": ("SQ_INSTS_VALU_ADD_F64", "SQ_INSTS_VALU_MUL_F64", "SQ_INSTS_VALU_TRANS_F64", "SQ_INSTS_VALU_FMA_F64"),
}
MFMA_MOPS = (
    "SQ_INSTS_VALU_MFMA_MOPS_F16",
    "SQ_INSTS_VALU_MFMA_MOPS_BF16",
    "SQ_INSTS_VALU_MFMA_MOPS_F32",
    "SQ_INSTS_VALU_MFMA_MOPS_F64",
    "SQ_INSTS_VALU_MFMA_MOPS_F8",
)
# MFMA FLOPs per CU per clock by arch (rocprof-compute 0200 peaks; F16/BF16 factor): the matrix roof.
MFMA_FACTOR = {"gfx908": 1024, "gfx90a": 1024, "gfx942": 2048, "gfx950": 4096}


def roofline_point(
    flops: float, hbm_bytes: float, dur_ns: float, peak_gflops: float | None, peak_gbs: float | None, compute_roof: str, source: str
) -> dict | None:
    """The kernel's point on the HBM roofline: arithmetic intensity (FLOP/byte), achieved
    GFLOP/s, the ridge point peak_gflops/peak_gbs and the bound it sits under (memory when its
    intensity is left of the ridge; rule of rocprof-compute's roofline and its bottleneck-id branch)."""
    if not (flops > 0 and hbm_bytes > 0 and dur_ns > 0 and peak_gflops and peak_gbs):
        return None
    ai = flops / hbm_bytes
    gflops = flops / dur_ns
    return _point(ai, gflops, peak_gflops, peak_gbs, compute_roof, source)


def _point(ai: float, gflops: float, peak_gflops: float, peak_gbs: float, compute_roof: str, source: str) -> dict:
    ridge = peak_gflops / peak_gbs
    attainable = min(peak_gflops, peak_gbs * ai)
    bound = "memory" if ai < ridge else "compute"
    return {
        "ai": ai,
        "gflops": gflops,
        "peak_gflops": peak_gflops,
        "peak_gbs": peak_gbs,
        "ridge": ridge,
        "attainable_gflops": attainable,
        "pct_of_attainable": 100.0 * gflops / attainable if attainable > 0 else float("nan"),
        "bound": bound,
        "compute_roof": compute_roof,
        "source": source,
        "hint": (
            f"memory-bound at HBM: intensity {ai:.3g} FLOP/B is left of the ridge {ridge:.3g}; raise it (reuse data from L2/LDS, fuse kernels) or move fewer bytes"
            if bound == "memory"
            else f"compute-bound: intensity {ai:.3g} FLOP/B is right of the ridge {ridge:.3g}; use the matrix cores (MFMA) or lower precision to lift the roof"
        ),
    }


def occupancy_limiter(columns_mean: dict[str, float], kernels: pd.DataFrame | None, name: str, arch: str) -> dict | None:
    """Which resource limits waves per SIMD for kernel ``name``: the SPI resource-allocation
    counters when recorded (the largest stall names the limiter, rocprof-compute 0600), else
    the static limit from the kernel's registers, LDS and workgroup size (analysis.occupancy)."""
    measured = [(columns_mean.get(c, float("nan")), label, fix) for c, label, fix in OCCUPANCY_LIMITERS]
    measured = [m for m in measured if m[0] == m[0] and m[0] > 0]
    static = None
    if kernels is not None and len(kernels):
        rows = kernels[kernels["name"].astype(str) == name]
        if len(rows):
            r = rows.iloc[0]
            wg = max(int(r["wg_x"]), 1) * max(int(r["wg_y"]), 1) * max(int(r["wg_z"]), 1) if r["wg_x"] > 0 else 0
            static = occupancy(arch, wg, int(r["arch_vgpr"]), int(max(r["accum_vgpr"], 0)), int(max(r["sgpr"], 0)), int(max(r["lds_bytes"], 0))) if wg else None
    if measured:
        _stall, label, fix = max(measured)
        return {
            "limiter": label,
            "source": "SPI_RA_* resource-allocation counters",
            "hint": f"waves could not launch for lack of {label}: {fix}",
            "static": static,
        }
    if static and static["limiter"] != "none":
        return {"limiter": static["limiter"], "source": "kernel resources (VGPR, AGPR, SGPR, LDS, workgroup size)", "hint": static["hint"], "static": static}
    if static or any(c in columns_mean for c, _l, _f in OCCUPANCY_LIMITERS):
        return {
            "limiter": "none",
            "source": "kernel resources" if static else "SPI_RA_* resource-allocation counters (all 0)",
            "hint": NO_LIMITER,
            "static": static,
        }
    return None


def _raw_entries(raw_means: pd.DataFrame, name: str) -> dict[str, dict]:
    """One entry per collected counter of kernel ``name`` (its mean per dispatch), for a
    kernel whose counters feed no derived metric."""
    out = {}
    for column in raw_means.columns:
        v = raw_means.at[name, column]
        if v == v:
            out[f"counter:{column}"] = {
                "label": str(column),
                "value": float(v),
                "unit": "KiB" if column in ("FETCH_SIZE", "WRITE_SIZE") else "count",
                "peak": None,
                "pct_of_peak": None,
                "formula": f"{column} (mean per dispatch)",
                "source": "the collected counter, as the profiler wrote it",
                "threshold": "descriptive",
                "flagged": False,
                "meaning": "",
                "origin": "counters",
            }
    return out


def _worth_showing(occ: dict | None, metrics: dict) -> bool:
    """A limiter is shown when one limits the kernel, or when none does but its measured
    occupancy is low (then the grid is the reason)."""
    if not occ:
        return False
    return occ["limiter"] != "none" or bool(metrics.get("wave_occupancy", {}).get("flagged"))


NO_LIMITER = (
    "no register, LDS or slot limit stops waves from launching: the grid is too small or too short to keep every SIMD busy; "
    "launch more workgroups (split the work finer) or overlap it with other kernels"
)


def _metric_entry(m: Metric, v: float, ctx: dict, fam: str, name: str, min_waves: float | None, origin: str) -> dict:
    peak = m.peak(ctx) if m.peak else None
    pct = 100.0 * v / peak if peak else None
    flagged = False
    if m.key == "lds_bank_conflict":
        flagged = bool(v > (5 if fam == "CDNA" else 10))
    elif m.key == "mfma_utilization":
        flagged = v < 20 and DEFAULT_CATEGORY_RULES.classify(str(name)) == "GEMM"
    elif m.key == "waves":
        flagged = bool(min_waves and v < min_waves)
    elif m.bad_pct is not None:
        flagged = bool(pct is not None and m.bad_pct(pct))
    elif m.bad is not None:
        flagged = bool(m.bad(v))
    return {
        "label": m.label,
        "value": float(v),
        "unit": m.unit,
        "peak": float(peak) if peak else None,
        "pct_of_peak": float(pct) if pct is not None else None,
        "formula": m.formula,
        "source": m.source,
        "threshold": m.threshold,
        "flagged": flagged,
        "meaning": m.meaning if flagged else "",
        "origin": origin,
    }


def computed_kernels(run: Run, ctx: dict, fam: str, min_waves: float | None) -> list[dict]:
    """Kernel entries from the metric values rocprof-compute computed itself (``run.metrics``):
    each mapped metric shows the database's value with our interpretation; the roofline point
    comes from the database's per-kernel roofline data and measured peaks."""
    table = run.metrics
    if not len(table):
        return []
    frame = table[~row_flags(table["kernel"], lambda name: name == "")]
    values: dict[tuple[str, str, str], float] = {}
    units: dict[tuple[str, str], str] = {}
    for kernel_name, metric, mid, stat, value, unit in zip(  # one str per distinct value, never one per row
        row_strings(frame["kernel"]),
        row_strings(frame["metric"]),
        row_strings(frame["metric_id"]),
        row_strings(frame["stat"]),
        frame["value"],
        row_strings(frame["unit"]),
        strict=True,
    ):
        key = (kernel_name, metric, stat)
        if not np.isfinite(value):  # an infinite value (a damaged database) is no measurement: no entry, no ridge, no finding
            continue
        # The System Speed-of-Light panel (2.1.*) wins over the same name in a detail panel.
        if key not in values or mid.startswith("2.1."):
            values[key] = float(value)
            units[(kernel_name, metric)] = unit
    kernels = run.kernels
    counts = kernels.groupby(row_strings(kernels["name"]), sort=False).size() if len(kernels) else pd.Series(dtype=int)
    names = list(dict.fromkeys(k for k, _m, _s in values))
    names.sort(key=lambda n: -int(counts.get(n, 0)))
    points = run.meta.extra.get("roofline_points") or {}
    agent = run.gpu_agents[0] if run.gpu_agents else None
    peaks = (agent.extra.get("roofline") if agent else None) or {}
    out = []
    for name in names:
        metrics = {}
        for m in METRICS:
            if not m.rpc_name:
                continue
            v = values.get((name, m.rpc_name, m.rpc_stat))
            if v is None or not np.isfinite(v):  # NaN, or an infinite value of a damaged database: no entry, no finding
                continue
            entry = _metric_entry(m, v, ctx, fam, name, min_waves, "rocprof-compute")
            entry["label"] = m.rpc_name  # a value rocprof-compute computed: under its own name
            peak = values.get((name, m.rpc_name, "Peak"))
            pct = values.get((name, m.rpc_name, "Pct of Peak"))
            if m.rpc_stat == "Avg" and peak is not None and peak == peak and pct is not None and pct == pct:
                entry["peak"], entry["pct_of_peak"] = peak, pct
                if m.bad_pct is not None:
                    entry["flagged"] = bool(m.bad_pct(pct))
                    entry["meaning"] = m.meaning if entry["flagged"] else ""
            entry["unit"] = m.unit if m.rpc_stat == "Avg" and m.unit != "%" else "%"
            entry["db_metric"] = f"{m.rpc_name} ({m.rpc_stat}, {units.get((name, m.rpc_name), '')})"
            metrics[m.key] = entry
        stalls = {label: values.get((name, rpc, "Avg")) for rpc, label in RPC_LIMITERS.items()}
        limiters: dict[str, float] = {k: v for k, v in stalls.items() if v is not None and v == v and v > 0}
        kernel: dict[str, Any] = {"name": name, "dispatches": int(counts.get(name, 0)), "metrics": metrics, "origin": "rocprof-compute analysis database"}
        if limiters:
            label = max(limiters, key=lambda k: limiters[k])
            fix = {lab: f for _c, lab, f in OCCUPANCY_LIMITERS}.get(label, "")
            kernel["occupancy"] = {
                "limiter": label,
                "source": "rocprof-compute Workgroup Manager resource allocation (6.2)",
                "hint": f"waves could not launch for lack of {label}: {fix}".rstrip(": "),
            }
        else:
            occ = occupancy_limiter({}, kernels, name, ctx["arch"])
            if not occ and any((name, rpc, "Avg") in values for rpc in RPC_LIMITERS):
                occ = {"limiter": "none", "source": "rocprof-compute Workgroup Manager resource allocation (6.2: all 0)", "hint": NO_LIMITER}
            if _worth_showing(occ, metrics):
                kernel["occupancy"] = occ
        point = points.get(name)
        if point and peaks.get("HBMBw"):
            roof, peak_flops = _db_compute_roof(values, name, peaks)
            if roof and point.get("ai_hbm") and point.get("gflops"):
                kernel["roofline"] = _point(
                    float(point["ai_hbm"]), float(point["gflops"]), peak_flops, float(peaks["HBMBw"]), roof, "rocprof-compute roofline data and measured peaks"
                )
        out.append(kernel)
    return out


def _db_compute_roof(values: dict, name: str, peaks: dict) -> tuple[str, float]:
    """The compute roof of a kernel in the database: the FLOP rate of its roofline panel
    (4.1.*) with the largest value, with that row's measured peak; VALU FP32 when none ran."""
    best = ("", 0.0, 0.0)
    for (kernel, metric, stat), v in values.items():
        if kernel != name or stat != "Value" or "FLOPs" not in metric or not (v == v and v > 0):
            continue
        peak = values.get((kernel, metric, "Peak (Empirical)"))
        if peak and peak == peak and v > best[1]:
            best = (metric, v, peak)
    if best[0]:
        return best[0], best[2]
    fp32 = peaks.get("FP32Flops")
    return ("VALU FLOPs (F32)", float(fp32)) if fp32 else ("", 0.0)


class _Columns:
    """The counter values per dispatch, one array per counter, as the metric formulas read
    them: ``get``/``has`` accept a counter name with or without its ``_sum`` suffix."""

    def __init__(self, columns: dict[str, np.ndarray], n: int) -> None:
        self.columns = columns
        self.n = n

    def get(self, name: str) -> np.ndarray:
        for cand in (name, name + "_sum", name[:-4] if name.endswith("_sum") else None):
            if cand and cand in self.columns:
                return self.columns[cand]
        return np.full(self.n, np.nan)

    def has(self, name: str) -> bool:
        return any(c in self.columns for c in (name, name + "_sum", name[:-4] if name.endswith("_sum") else ""))


def _dispatches(run: Run) -> tuple[np.ndarray, np.ndarray, np.ndarray, _Columns]:
    """Per dispatch with counters: its kernel name ("dispatch <id>" when not traced), its
    duration (NaN when unknown), its agent id (-1 when unknown) and its counter values."""
    table = run.counters.groupby(["dispatch_id", "counter"], observed=True)["value"].sum().unstack("counter")
    k = run.kernels
    kd = k.drop_duplicates("dispatch_id").set_index("dispatch_id") if len(k) else None
    ids = table.index.to_numpy()
    if kd is not None:
        present = np.isin(ids, kd.index.to_numpy())
        names = np.where(present, kd["name"].astype(str).reindex(ids).fillna("").to_numpy(), "")
        dur = kd["end"].reindex(ids).to_numpy(dtype=float) - kd["start"].reindex(ids).to_numpy(dtype=float)
        dur = np.where((kd["start"].reindex(ids).to_numpy(dtype=float) < 0) | (kd["end"].reindex(ids).to_numpy(dtype=float) < 0), np.nan, dur)
        agent_ids = kd["agent"].reindex(ids).fillna(-1).to_numpy().astype(int)
    else:
        names = np.full(len(ids), "", dtype=object)
        dur = np.full(len(ids), np.nan)
        agent_ids = np.full(len(ids), -1)
    names = np.where(names == "", "dispatch " + ids.astype(str), names)
    return names, dur, agent_ids, _Columns({str(c): table[c].to_numpy(dtype=float) for c in table.columns}, len(ids))


def _kernel_entry(run: Run, name: str, means: pd.DataFrame, sums: pd.DataFrame, count: pd.Series, spi_means: pd.DataFrame, found: _Found) -> dict[str, Any]:
    """One kernel name's metrics (mean over its dispatches), occupancy limiter and roofline point."""
    metrics = {}
    for m in METRICS:
        if m.key not in means.columns:
            continue
        v = means.at[name, m.key]
        if not np.isfinite(v):  # NaN: inputs zero/absent for this kernel; inf: a damaged counter (never a finding)
            continue
        metrics[m.key] = _metric_entry(m, v, found.ctx, found.fam, name, found.min_waves, "counters")
    kernel: dict[str, Any] = {"name": str(name), "dispatches": int(count[name]), "metrics": metrics, "origin": "hardware counters"}
    spi = {c: float(spi_means.at[name, c]) for c in spi_means.columns} if name in spi_means.index else {}
    if "wave_occupancy" in metrics or spi:
        occ = occupancy_limiter(spi, run.kernels, str(name), found.arch)
        if _worth_showing(occ, metrics):
            kernel["occupancy"] = occ
    valu, mfma = float(np.nan_to_num(sums.at[name, "_valu"])), float(np.nan_to_num(sums.at[name, "_mfma"]))
    peak_gflops, roof_name, roof_source = _compute_roof(found.agent, found.arch, found.ctx, "MFMA" if mfma > valu else "VALU")
    point = roofline_point(valu + mfma, float(sums.at[name, "_bytes"]), float(sums.at[name, "_dur"]), peak_gflops, found.ctx["hbm_gbs"], roof_name, roof_source)
    if point:
        kernel["roofline"] = point
    return kernel


@dataclass
class _Found:
    """The agent, arch, family and formula context the counters were read with."""

    agent: Agent | None
    arch: str
    fam: str
    ctx: dict[str, Any]
    min_waves: float | None


def _found_for(agent: Agent | None, arch: str, dur: np.ndarray, has: Callable[[str], bool]) -> _Found:
    ctx = _context(agent, arch, dur, has)
    return _Found(agent, arch, family_of(arch), ctx, (ctx["cu"] * ctx["simds"]) if ctx["cu"] == ctx["cu"] else None)


def _from_counters(run: Run, out: dict[str, Any], found: _Found) -> _Found:
    """Fill ``out["kernels"]`` and ``out["missing"]`` from the run's raw counters; returns
    the context of the first counted dispatch's agent."""
    gpus = run.gpu_agents
    names, dur, agent_ids, cols = _dispatches(run)
    agent = run.agent(int(agent_ids[0])) if len(agent_ids) else None
    agent = agent or (gpus[0] if gpus else None)
    found = _found_for(agent, agent.arch if agent else found.arch, dur, cols.has)
    values: dict[str, np.ndarray] = {}
    for m in METRICS:
        if not _metric_applies(m, found.fam, found.arch):
            continue
        if m.sdk_name and m.sdk_name in cols.columns:
            values[m.key] = cols.columns[m.sdk_name]
        elif any(all(cols.has(c) for c in alt) for alt in m.inputs):
            values[m.key] = np.asarray(m.compute(cols.get, found.ctx), dtype=float)
        elif not m.optional:
            out["missing"][m.key] = list(m.inputs[0] if found.fam == "CDNA" or len(m.inputs) == 1 else m.inputs[-1])
    valu_flops, mfma_flops = _flops(cols.get, cols.has)
    hbm_bytes = (
        _zero(_fabric_read_bytes(cols.get, found.ctx)) + _zero(_fabric_write_bytes(cols.get, found.ctx))
        if (cols.has("TCC_EA0_RDREQ") or cols.has("TCC_EA_RDREQ"))
        else np.full(cols.n, np.nan)
    )
    frame = pd.DataFrame({"name": names, **values, "_valu": valu_flops, "_mfma": mfma_flops, "_bytes": hbm_bytes, "_dur": found.ctx["dur"]})
    count = frame.groupby("name", sort=False).size()
    sums = frame.groupby("name", sort=False)[["_valu", "_mfma", "_bytes", "_dur"]].sum(min_count=1)
    means = frame.groupby("name", sort=False).mean(numeric_only=True)
    spi_means = pd.DataFrame({"name": names, **{c: cols.columns[c] for c in cols.columns if c.startswith("SPI_RA_")}}).groupby("name", sort=False).mean()
    raw_means: pd.DataFrame | None = None
    for name in count.sort_values(ascending=False).index:
        kernel = _kernel_entry(run, name, means, sums, count, spi_means, found)
        if not kernel["metrics"]:  # counters no formula reads: their means, never an empty table
            raw_means = raw_means if raw_means is not None else pd.DataFrame({"name": names, **cols.columns}).groupby("name", sort=False).mean()
            kernel["metrics"] = _raw_entries(raw_means, name)
        out["kernels"].append(kernel)
    return found


def _merge_computed(out: dict[str, Any], computed: list[dict[str, Any]]) -> None:
    """Add rocprof-compute's own kernels and metrics to ``out``: a metric both have keeps
    the counters' value with a ``check`` against the database's."""
    by_name = {k["name"]: k for k in out["kernels"]}
    for entry in computed:
        mine = by_name.get(entry["name"])
        if mine is None:
            out["kernels"].append(entry)
            continue
        for key, db in entry["metrics"].items():
            ours = mine["metrics"].get(key)
            if ours is not None:
                diff = abs(ours["value"] - db["value"]) / abs(db["value"]) * 100 if db["value"] else abs(ours["value"])
                ours["check"] = {"rocprof_compute": db["value"], "diff_pct": diff, "agrees": diff <= CHECK_TOLERANCE_PCT}
            else:
                mine["metrics"][key] = db


def counter_metrics(run: Run, vendor: str = "unknown") -> dict[str, Any]:
    """Derived metrics per kernel name of one run.

    Returns {"kernels": [{name, dispatches, origin, metrics: {key: {label, value, unit, peak,
    pct_of_peak, formula, source, threshold, flagged, meaning, origin[, check]}}, occupancy,
    roofline}], "available": [counter names], "missing": {metric key: counters needed},
    "absent": {metric: why it cannot exist on this arch}, "commands": [rocprofv3 ...]}.
    Kernels come from raw counters and from the metric values rocprof-compute computed
    itself (``run.metrics``); a kernel with both shows the counters' values, each with a
    ``check`` against the database's value. The metrics are AMD counter formulas: on an
    NVIDIA run (``vendor`` "nvidia") nothing is "missing" and the commands are :func:`ncu_commands`.
    """
    counters = run.counters
    gpus = run.gpu_agents
    arch = gpus[0].arch if gpus else ""
    out: dict[str, Any] = {"available": sorted(map(str, counters["counter"].unique())) if len(counters) else [], "kernels": [], "missing": {}, "commands": []}
    found = _found_for(gpus[0] if gpus else None, arch, np.array([]), lambda name: False)
    if len(counters):
        found = _from_counters(run, out, found)
    else:
        for m in METRICS:
            if (
                _metric_applies(m, found.fam, arch)
                and not m.optional
                and not m.key.startswith("mem_unit")
                and not m.rpc_name.startswith(("Wavefront", "vL1D", "sL1D", "L2-Fabric"))
            ):
                alt = m.inputs[0] if found.fam == "CDNA" or len(m.inputs) == 1 else m.inputs[-1]
                out["missing"][m.key] = list(alt)
    arch = found.arch
    computed = computed_kernels(run, found.ctx, found.fam, found.min_waves)
    if computed:
        _merge_computed(out, computed)
        out["missing"] = {} if not len(counters) else out["missing"]
    if vendor == "nvidia":
        out["missing"] = {}
        out["commands"] = [] if len(counters) else ncu_commands()
    elif out["missing"]:
        out["commands"] = pmc_commands(arch)
    out["arch"] = (nvidia_arch(gpus[0]) or arch) if vendor == "nvidia" and gpus else arch  # CUDA's sm_XY on NVIDIA
    out["absent"] = absent_counters(arch) if vendor != "nvidia" else {}
    if vendor != "nvidia":
        for kernel in out["kernels"]:  # sentences per the counter dictionary's thresholds (analysis.counteradvice)
            advice = advise(arch, kernel)
            if advice:
                kernel["advice"] = advice
    out["xcd_convention"] = "GRBM_GUI_ACTIVE divided by the XCD count (rocprof-compute GRBM_GUI_ACTIVE_PER_XCD)"
    return out


CHECK_TOLERANCE_PCT = 1.0  # counters vs rocprof-compute's value: both apply the same formula to the same counters


def _context(agent: Agent | None, arch: str, dur: np.ndarray, has: Callable[[str], bool]) -> dict[str, Any]:
    lim = arch_limits(arch)
    cu = float(agent.cu_count) if agent and agent.cu_count else np.nan
    simds = float(agent.simd_per_cu) if agent and agent.simd_per_cu else float(lim.simds if lim else 4)
    per_cu = float(agent.max_waves_per_cu) if agent and agent.max_waves_per_cu else (float(lim.max_waves_simd * lim.simds) if lim else np.nan)
    hbm, hbm_source = hbm_peak_gbs(agent, arch)
    return {
        "arch": arch,
        "xcd": float(agent.num_xcc) if agent and agent.num_xcc else 1.0,
        "xcd_known": bool(agent and agent.num_xcc),
        "cu": cu,
        "simds": simds,
        "wave": float(agent.wave_size) if agent and agent.wave_size else (lim.wave if lim else 64.0),
        "family": family_of(arch),
        "dur": np.where(dur > 0, dur, np.nan),
        "peak_gbs": lim.peak_hbm_gbs if lim else None,
        "hbm_gbs": hbm,
        "hbm_source": hbm_source,
        "max_waves": per_cu * cu if cu == cu and per_cu == per_cu else None,
        "sclk": float(agent.max_clock_mhz) if agent and agent.max_clock_mhz else None,
        "has": has,
    }


def _flops(get, has) -> tuple[np.ndarray, np.ndarray]:
    """(VALU FLOPs, MFMA FLOPs) per dispatch from the instruction counters (rocprof-compute's
    VALU FLOPs and MFMA FLOPs numerators: 64 lanes, FMA counted twice, 512 FLOPs per MFMA
    MOP); NaN where none of the counters was collected."""
    valu = get("")  # all NaN, one per dispatch
    for add, mul, trans, fma in VALU_FLOP_COUNTERS.values():
        if all(has(c) for c in (add, mul, fma)):
            valu = _zero(valu) + 64 * (get(add) + get(mul) + _zero(get(trans)) + 2 * get(fma))
    mfma = get("")
    for c in MFMA_MOPS:
        if has(c):
            mfma = _zero(mfma) + 512 * get(c)
    return valu, mfma


def _compute_roof(agent: Agent | None, arch: str, ctx: dict, kind: str) -> tuple[float | None, str, str]:
    """Compute roof (GFLOP/s) for the kernel's dominant unit: the workload's measured peak
    (roofline.csv) when present, else rocprof-compute's theoretical peak from max_sclk and CUs."""
    measured = (agent.extra.get("roofline") if agent else None) or {}
    if kind == "MFMA":
        if measured.get("MFMAF16Flops"):
            return float(measured["MFMAF16Flops"]), "MFMA F16 (measured)", "roofline.csv MFMAF16Flops"
        factor = MFMA_FACTOR.get(arch.split(":")[0])
        if factor and ctx["sclk"] and ctx["cu"] == ctx["cu"]:
            return ctx["sclk"] * ctx["cu"] * factor / 1000, "MFMA F16 (theoretical)", f"max_sclk*CUs*{factor}/1000 (rocprof-compute 0200 MFMA FLOPs (F16) peak)"
        return None, "", ""
    if measured.get("FP32Flops"):
        return float(measured["FP32Flops"]), "VALU FP32 (measured)", "roofline.csv FP32Flops"
    if ctx["sclk"] and ctx["cu"] == ctx["cu"]:
        return ctx["sclk"] * ctx["cu"] * 64 * 2 / 1000, "VALU (theoretical)", "max_sclk*CUs*64*2/1000 (rocprof-compute 0200 VALU FLOPs peak)"
    return None, "", ""


# --- the summary section ---


def counters_section(inputs: Sequence[RunInput], vendor: str = "unknown") -> list[Record]:
    """:func:`counter_metrics` of each process that has counters or GPU kernels (``vendor``:
    the run set's platform, which decides the collection commands)."""
    blocks = []
    for r in inputs:
        run = r.run
        if len(run.counters) or (len(run.kernels) and run.gpu_agents):
            block = counter_metrics(run, vendor)
            block["process"] = r.label
            blocks.append(block)
    return blocks
