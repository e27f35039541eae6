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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES
from tui_prof.analysis.occupancy import arch_limits
from tui_prof.model import Run


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    formula: str
    source: str
    threshold: str  # human text, e.g. "< 50 % [P]"
    bad: Callable[[float], bool] | None  # value -> threshold crossed
    meaning: str  # plain-words interpretation when the threshold is crossed
    inputs: tuple[tuple[str, ...], ...]  # alternative counter sets (any one suffices)
    compute: Callable  # (get, ctx) -> np.ndarray
    families: tuple[str, ...] = ("CDNA", "RDNA")
    sdk_name: str = ""  # derived metric name rocprofv3 may have written itself


def _pct(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, 100.0 * a / b, np.nan)


def _grbm(get, ctx):
    return get("GRBM_GUI_ACTIVE") / ctx["xcd"]


METRICS: tuple[Metric, ...] = (
    Metric(
        "gpu_busy",
        "GPU busy",
        "%",
        "100*GRBM_GUI_ACTIVE/GRBM_COUNT",
        "rocprofiler-sdk counter_defs.yaml GPUBusy",
        "< 50 % [P]",
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
        "VALU utilisation (active lanes)",
        "%",
        "100*SQ_THREAD_CYCLES_VALU/(SQ_ACTIVE_INST_VALU*wave_size)",
        "counter_defs.yaml VALUUtilization",
        "< 75 % [P]",
        lambda v: v < 75,
        "thread divergence, or workgroup size not a multiple of the wave size (partial waves)",
        (("SQ_THREAD_CYCLES_VALU", "SQ_ACTIVE_INST_VALU"),),
        lambda g, c: _pct(g("SQ_THREAD_CYCLES_VALU"), g("SQ_ACTIVE_INST_VALU") * c["wave"]),
        ("CDNA",),
        "VALUUtilization",
    ),
    Metric(
        "valu_busy",
        "VALU busy",
        "%",
        "100*SQ_ACTIVE_INST_VALU/CU_NUM/(GRBM_GUI_ACTIVE/XCDs)",
        "counter_defs.yaml VALUBusy",
        "descriptive (0 % bad .. 100 % optimal)",
        None,
        "",
        (("SQ_ACTIVE_INST_VALU", "GRBM_GUI_ACTIVE"),),
        lambda g, c: _pct(g("SQ_ACTIVE_INST_VALU") / c["cu"], _grbm(g, c)),
        ("CDNA",),
        "VALUBusy",
    ),
    Metric(
        "l2_hit",
        "L2 cache hit rate",
        "%",
        "100*TCC_HIT/(TCC_HIT+TCC_MISS) (RDNA: GL2C_HIT, GL2C_MISS)",
        "counter_defs.yaml L2CacheHit; rocprof-compute L2 Cache Hit Rate",
        "< 50 % [P]",
        lambda v: v < 50,
        "poor L2 locality: revisit tile/block sizes so data is reused while it is in L2",
        (("TCC_HIT", "TCC_MISS"), ("GL2C_HIT", "GL2C_MISS")),
        lambda g, c: _pct(g("TCC_HIT"), g("TCC_HIT") + g("TCC_MISS")) if c["family"] == "CDNA" else _pct(g("GL2C_HIT"), g("GL2C_HIT") + g("GL2C_MISS")),
        sdk_name="L2CacheHit",
    ),
    Metric(
        "alu_stalled_by_lds",
        "ALU stalled by LDS",
        "%",
        "400*SQ_WAIT_INST_LDS/SQ_WAVES/(GRBM_GUI_ACTIVE/XCDs)",
        "counter_defs.yaml ALUStalledByLDS (not on gfx94x/gfx950/gfx12)",
        "> 10 % [P]",
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
        "> 5 % CDNA, > 10 % RDNA [P]",
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
    ),
    Metric(
        "mfma_utilization",
        "MFMA (matrix core) utilisation",
        "%",
        "100*SQ_VALU_MFMA_BUSY_CYCLES/((GRBM_GUI_ACTIVE/XCDs)*CU_NUM*4)",
        "rocprof-compute MFMA Utilization",
        "< 20 % in a GEMM kernel [P] (> 70 % = matrix-core bound, good)",
        None,
        "matrix cores under-fed: the GEMM waits on memory or on its own epilogue",
        (("SQ_VALU_MFMA_BUSY_CYCLES", "GRBM_GUI_ACTIVE"),),
        lambda g, c: _pct(g("SQ_VALU_MFMA_BUSY_CYCLES"), _grbm(g, c) * c["cu"] * 4),
        ("CDNA",),
    ),
    Metric(
        "vmem_utilization",
        "VMEM instruction utilisation",
        "%",
        "100*(SQ_ACTIVE_INST_FLAT+SQ_ACTIVE_INST_VMEM)/(GRBM_GUI_ACTIVE/XCDs)/CU_NUM",
        "rocprof-compute VMEM Utilization",
        "> 50 % [P]",
        lambda v: v > 50,
        "memory-instruction heavy: the kernel mostly issues loads/stores",
        (("SQ_ACTIVE_INST_FLAT", "SQ_ACTIVE_INST_VMEM", "GRBM_GUI_ACTIVE"),),
        lambda g, c: _pct((g("SQ_ACTIVE_INST_FLAT") + g("SQ_ACTIVE_INST_VMEM")) / c["cu"], _grbm(g, c)),
        ("CDNA",),
    ),
    Metric(
        "hbm_bandwidth_pct",
        "Memory bandwidth (% of peak)",
        "%",
        "(FETCH_SIZE+WRITE_SIZE)*1024/duration / peak HBM bandwidth",
        "counter_defs.yaml FETCH_SIZE/WRITE_SIZE (KiB); peak from ROCm GPU specs",
        "> 70 % [P]",
        lambda v: v > 70,
        "memory-bandwidth bound: reduce bytes moved (fusion, lower precision, better reuse)",
        (("FETCH_SIZE", "WRITE_SIZE"),),
        lambda g, c: _pct((g("FETCH_SIZE") + g("WRITE_SIZE")) * 1024.0 / c["dur"], np.full(len(c["dur"]), c["peak_gbs"] or np.nan)),
    ),
    Metric(
        "mem_unit_busy",
        "Memory unit busy",
        "%",
        "100*TA_TA_BUSY_max/GRBM_GUI_ACTIVE (profiler-derived MemUnitBusy)",
        "counter_defs.yaml MemUnitBusy",
        "> 80 % [P]",
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
        "> 20 % [P]",
        lambda v: v > 20,
        "vector memory pipeline stalled: reduce the number or size of fetches and writes",
        (("MemUnitStalled",),),
        lambda g, c: g("MemUnitStalled"),
        ("CDNA",),
        "MemUnitStalled",
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
    """The exact rocprofv3 commands (one per pass) that collect what the metrics need on ``arch``."""
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


def counter_metrics(run: Run, vendor: str = "unknown") -> dict[str, Any]:
    """Derived metrics per kernel name of one run.

    Returns {"kernels": [{name, dispatches, agent, metrics: {key: {value, unit, formula,
    source, threshold, flagged, meaning}}}], "available": [counter names], "missing":
    {metric key: counters needed}, "commands": [rocprofv3 ...] for the first GPU's arch}.
    The metrics are AMD counter formulas: on an NVIDIA run (``vendor`` "nvidia")
    nothing is "missing" and the commands are :func:`ncu_commands`.
    """
    counters = run.counters
    gpus = run.gpu_agents
    arch = gpus[0].arch if gpus else ""
    out: dict[str, Any] = {"available": sorted(map(str, counters["counter"].unique())) if len(counters) else [], "kernels": [], "missing": {}, "commands": []}
    fam = family_of(arch)
    if len(counters):
        table = counters.groupby(["dispatch_id", "counter"], observed=True)["value"].sum().unstack("counter")
        k = run.kernels
        kd = k.drop_duplicates("dispatch_id").set_index("dispatch_id") if len(k) else None
        ids = table.index.to_numpy()
        if kd is not None:
            present = np.isin(ids, kd.index.to_numpy())
            names = np.where(present, kd["name"].astype(str).reindex(ids).fillna("").to_numpy(), "")
            dur = kd["end"].reindex(ids).to_numpy(dtype=float) - kd["start"].reindex(ids).to_numpy(dtype=float)
            agent_ids = kd["agent"].reindex(ids).fillna(-1).to_numpy().astype(int)
        else:
            names = np.full(len(ids), "", dtype=object)
            dur = np.full(len(ids), np.nan)
            agent_ids = np.full(len(ids), -1)
        names = np.where(names == "", "dispatch " + ids.astype(str), names)
        columns = {str(c): table[c].to_numpy(dtype=float) for c in table.columns}

        def get(name):
            for cand in (name, name + "_sum", name[:-4] if name.endswith("_sum") else None):
                if cand and cand in columns:
                    return columns[cand]
            return np.full(len(ids), np.nan)

        def has(name):
            return any(c in columns for c in (name, name + "_sum", name[:-4] if name.endswith("_sum") else ""))

        agent = run.agent(int(agent_ids[0])) if len(agent_ids) else None
        agent = agent or (gpus[0] if gpus else None)
        arch = agent.arch if agent else arch
        fam = family_of(arch)
        lim = arch_limits(arch)
        ctx: dict[str, Any] = {
            "xcd": float(agent.num_xcc) if agent and agent.num_xcc else 1.0,
            "cu": float(agent.cu_count) if agent and agent.cu_count else np.nan,
            "wave": float(agent.wave_size) if agent and agent.wave_size else (lim.wave if lim else 64.0),
            "family": fam,
            "dur": np.where(dur > 0, dur, np.nan),
            "peak_gbs": lim.peak_hbm_gbs if lim else None,
        }
        values: dict[str, np.ndarray] = {}
        for m in METRICS:
            if not _metric_applies(m, fam, arch):
                continue
            if m.sdk_name and m.sdk_name in columns:
                values[m.key] = columns[m.sdk_name]
            elif any(all(has(c) for c in alt) for alt in m.inputs):
                values[m.key] = np.asarray(m.compute(get, ctx), dtype=float)
            else:
                out["missing"][m.key] = list(m.inputs[0] if fam == "CDNA" or len(m.inputs) == 1 else m.inputs[-1])
        frame = pd.DataFrame({"name": names, **values})
        count = frame.groupby("name", sort=False).size()
        means = frame.groupby("name", sort=False).mean(numeric_only=True)
        order = count.sort_values(ascending=False).index
        min_waves = (ctx["cu"] * (lim.simds if lim else 4)) if ctx["cu"] == ctx["cu"] else None
        for name in order:
            metrics = {}
            for m in METRICS:
                if m.key not in means.columns:
                    continue
                v = means.at[name, m.key]
                if v != v:  # NaN: inputs zero/absent for this kernel
                    continue
                flagged = False
                if m.key == "lds_bank_conflict":
                    flagged = v > (5 if fam == "CDNA" else 10)
                elif m.key == "mfma_utilization":
                    flagged = v < 20 and DEFAULT_CATEGORY_RULES.classify(str(name)) == "GEMM"
                elif m.key == "waves":
                    flagged = bool(min_waves and v < min_waves)
                elif m.bad is not None:
                    flagged = bool(m.bad(v))
                metrics[m.key] = {
                    "label": m.label,
                    "value": round(float(v), 4),
                    "unit": m.unit,
                    "formula": m.formula,
                    "source": m.source,
                    "threshold": m.threshold,
                    "flagged": flagged,
                    "meaning": m.meaning if flagged else "",
                }
            out["kernels"].append({"name": str(name), "dispatches": int(count[name]), "metrics": metrics})
    else:
        for m in METRICS:
            if _metric_applies(m, fam, arch) and not m.key.startswith("mem_unit"):
                alt = m.inputs[0] if fam == "CDNA" or len(m.inputs) == 1 else m.inputs[-1]
                out["missing"][m.key] = list(alt)
    if vendor == "nvidia":
        out["missing"] = {}
        out["commands"] = [] if len(counters) else ncu_commands()
    elif out["missing"]:
        out["commands"] = pmc_commands(arch)
    out["arch"] = arch
    out["xcd_convention"] = "GRBM_GUI_ACTIVE divided by the XCD count (rocprof-compute GRBM_GUI_ACTIVE_PER_XCD)"
    return out
