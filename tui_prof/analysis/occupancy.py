"""Theoretical occupancy of AMD GPU kernels from their register/LDS use and the arch limits.

Formula (LLVM ``AMDGPUBaseInfo.cpp`` getNumWavesPerEUWithNumVGPRs, getOccupancyWithNumSGPRs,
getMaxWorkGroupsPerCU; ROCm MI300X workload guide "Compute the occupancy of a kernel"),
as collected in research/counters_hw.md §3b::

    W          = ceil(workgroup size / wave size)                    waves per workgroup
    V          = gfx90a+ and AGPR>0 ? alignTo(VGPR,4)+AGPR : max(VGPR, AGPR)
    waves_vgpr = V <= G ? Wmax : min(floor(B / alignTo(V, G)), Wmax)  B budget, G granule
    waves_sgpr = gfx9: <=80 -> 10, <=88 -> 9, <=100 -> 8, else 7;  gfx10+: Wmax
    wg_regs    = floor(min(waves_vgpr, waves_sgpr) * E / W)           E SIMDs per CU (WGP on RDNA)
    wg_lds     = floor(LDS per CU / alignTo(LDS per WG, LDS granule))
    wg_slots   = W == 1 ? Wmax*E : min(floor(Wmax*E / W), max barriers)
    waves/SIMD = min(wg_regs, wg_lds, wg_slots) * W / E

RDNA parts are modelled in WGP mode (the compiler default; LLVM ``cumode`` is opt-in).
Scratch is not a hard limit (LLVM FIXME); a kernel using scratch gets a warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from tui_prof.analysis.runinput import RunInput
from tui_prof.analysis.sections import Record
from tui_prof.model.schema import column_array


@dataclass(frozen=True)
class ArchLimits:
    family: str  # CDNA1..4, RDNA2..4
    wave: int  # default wave size
    simds: int  # E: SIMDs per CU (per WGP on RDNA)
    max_waves_simd: int  # Wmax
    vgpr_budget: int  # B per lane per SIMD (wave64 budget on RDNA is half: handled in vgpr_budget_for)
    vgpr_granule: int
    unified_agpr: bool  # gfx90a+: AGPRs share the VGPR file
    sgpr_limits: bool  # gfx9: SGPR count limits occupancy
    lds_per_cu: int
    lds_per_wg: int
    lds_granule: int
    max_barriers: int
    peak_hbm_gbs: float | None = None  # documented peak memory bandwidth per agent (GB/s)
    hbm_source: str = ""

    @property
    def rdna(self) -> bool:
        return self.family.startswith("RDNA")


_CDNA3 = ArchLimits(
    family="CDNA3",
    wave=64,
    simds=4,
    max_waves_simd=8,
    vgpr_budget=512,
    vgpr_granule=8,
    unified_agpr=True,
    sgpr_limits=True,
    lds_per_cu=65536,
    lds_per_wg=65536,
    lds_granule=512,
    max_barriers=16,
)
# RDNA parts differ from these two only in their family
_RDNA_15X = ArchLimits(
    family="RDNA3",
    wave=32,
    simds=4,
    max_waves_simd=16,
    vgpr_budget=1536,
    vgpr_granule=24,
    unified_agpr=False,
    sgpr_limits=False,
    lds_per_cu=131072,
    lds_per_wg=65536,
    lds_granule=512,
    max_barriers=32,
)
_RDNA_1X = replace(_RDNA_15X, vgpr_budget=1024, vgpr_granule=16)

# research/counters_hw.md §2a (ROCM-SPECS, LLVM, ROCM-ARCH). Peak HBM: mi100.md 1.228 TB/s,
# mi250.md 3.2 TB/s per MI250 OAM = 1.6 per GCD (one agent), mi300.md MI300X 5.3 TB/s.
ARCHS: dict[str, ArchLimits] = {
    "gfx908": replace(
        _CDNA3, family="CDNA1", max_waves_simd=10, vgpr_budget=256, vgpr_granule=4, unified_agpr=False, peak_hbm_gbs=1228.0, hbm_source="ROCm mi100.md"
    ),
    "gfx90a": replace(_CDNA3, family="CDNA2", peak_hbm_gbs=1600.0, hbm_source="ROCm mi250.md (3.2 TB/s per 2 GCDs)"),
    "gfx940": _CDNA3,
    "gfx941": _CDNA3,
    "gfx942": replace(_CDNA3, peak_hbm_gbs=5300.0, hbm_source="ROCm mi300.md (MI300X)"),
    "gfx950": replace(_CDNA3, family="CDNA4", lds_per_cu=163840, lds_per_wg=163840, lds_granule=1280),
    **{f"gfx103{i}": replace(_RDNA_1X, family="RDNA2") for i in range(7)},
    "gfx1100": replace(_RDNA_15X, family="RDNA3"),
    "gfx1101": replace(_RDNA_15X, family="RDNA3"),
    "gfx1102": replace(_RDNA_1X, family="RDNA3"),
    "gfx1103": replace(_RDNA_1X, family="RDNA3"),
    "gfx1150": replace(_RDNA_1X, family="RDNA3.5"),
    "gfx1151": replace(_RDNA_15X, family="RDNA3.5"),
    "gfx1152": replace(_RDNA_1X, family="RDNA3.5"),
    "gfx1153": replace(_RDNA_1X, family="RDNA3.5"),
    "gfx1200": replace(_RDNA_15X, family="RDNA4"),
    "gfx1201": replace(_RDNA_15X, family="RDNA4"),
}


def arch_limits(arch: str) -> ArchLimits | None:
    """Limits of a gfx target; a feature suffix (``gfx90a:sramecc+:xnack-``) is ignored."""
    return ARCHS.get((arch or "").split(":")[0].strip().lower())


def _align(x: int, g: int) -> int:
    return -(-x // g) * g


def occupancy(
    arch: str, workgroup_size: int, vgpr: int, agpr: int = 0, sgpr: int = 0, lds_bytes: int = 0, wave_size: int | None = None, scratch_bytes: int = 0
) -> dict | None:
    """Theoretical occupancy of one kernel configuration on ``arch``; None if the arch is unknown.

    Returns waves_per_simd, max_waves_per_simd, waves_per_cu, workgroups_per_cu,
    occupancy_pct, limiter ("VGPR", "SGPR", "LDS", "workgroup slots", or "none" at the
    maximum), the per-resource workgroup limits, and ``hint``: what would lift it.
    """
    lim = arch_limits(arch)
    if lim is None or workgroup_size <= 0:
        return None
    wave = wave_size or lim.wave
    budget = lim.vgpr_budget if wave == 32 or not lim.rdna else lim.vgpr_budget // 2
    granule = lim.vgpr_granule if wave == 32 or not lim.rdna else lim.vgpr_granule // 2
    E, wmax = lim.simds, lim.max_waves_simd
    W = -(-workgroup_size // wave)
    vgpr, agpr, sgpr = max(vgpr, 0), max(agpr, 0), max(sgpr, 0)

    def total_vgpr(v: int) -> int:
        if lim.unified_agpr and agpr > 0:
            return _align(v, 4) + agpr
        return max(v, agpr)

    def waves_for_vgpr(total: int) -> int:
        if total <= granule:
            return wmax
        return min(max(budget // _align(total, granule), 1), wmax)

    V = total_vgpr(vgpr)
    waves_vgpr = waves_for_vgpr(V)
    if lim.sgpr_limits and sgpr > 0:
        waves_sgpr = min(10 if sgpr <= 80 else 9 if sgpr <= 88 else 8 if sgpr <= 100 else 7, wmax)
    else:
        waves_sgpr = wmax
    wg_vgpr = waves_vgpr * E // W
    wg_sgpr = waves_sgpr * E // W
    lds = _align(max(lds_bytes, 0), lim.lds_granule)
    wg_lds = lim.lds_per_cu // lds if lds > 0 else 10**9
    wg_slots = wmax * E if W == 1 else min(wmax * E // W, lim.max_barriers)
    limits = {"VGPR": wg_vgpr, "SGPR": wg_sgpr, "LDS": wg_lds, "workgroup slots": wg_slots}
    # every limiter on its own, in workgroups per CU: the AGPRs of an arch whose AGPRs are a
    # separate file, the barrier (workgroup) slots and the CU's wave slots apart
    every = {"VGPR + AGPR" if (lim.unified_agpr and agpr > 0) else "VGPR": wg_vgpr}
    if agpr > 0 and not lim.unified_agpr:  # two register files: each limits on its own
        every["VGPR"] = waves_for_vgpr(vgpr) * E // W
        every["AGPR"] = waves_for_vgpr(agpr) * E // W
    every["SGPR"] = wg_sgpr
    every["LDS"] = wg_lds if lds_bytes <= lim.lds_per_wg else 0
    if W > 1:
        every["workgroup slots"] = lim.max_barriers
    every["waves per CU"] = wmax * E // W
    order = sorted(every, key=lambda k: (every[k], list(every).index(k)))
    limiters = [{"limit": k, "workgroups_per_cu": every[k], "waves_per_simd": round(every[k] * W / E, 3)} for k in order if every[k] < 10**9]
    wg = min(limits.values())
    waves_cu = wg * W
    waves_simd = waves_cu / E
    full = waves_simd >= wmax
    limiter = "none" if full else min(limits, key=lambda k: (limits[k], list(limits).index(k)))
    if lds_bytes > lim.lds_per_wg:
        limiter, wg, waves_cu, waves_simd = "LDS", 0, 0, 0.0
    hint = _hint(limiter, lim, W, E, wmax, granule, budget, V, vgpr, agpr, sgpr, lds, limits, waves_simd, total_vgpr, waves_for_vgpr, limiters)
    if scratch_bytes > 0:
        hint += f" Uses {scratch_bytes} B scratch per work-item (register spilling or private arrays): may stall wave launch."
    return {
        "arch": arch,
        "wave_size": wave,
        "waves_per_workgroup": W,
        "total_vgpr": V,
        "waves_per_simd": round(waves_simd, 3),
        "max_waves_per_simd": wmax,
        "waves_per_cu": waves_cu,
        "workgroups_per_cu": wg,
        "occupancy_pct": round(100.0 * waves_cu / (wmax * E), 2),
        "limiter": limiter,
        "limits_workgroups": {k: (v if v < 10**9 else None) for k, v in limits.items()},
        # every limiter, tightest first: {"limit", "workgroups_per_cu", "waves_per_simd"}
        "limiters": limiters,
        "hint": hint.strip(),
    }


def _fmt_waves(x: float) -> str:
    return f"{x:g}"


def _next_limit(limiters: list[dict], W: int) -> str:
    """The limits after the VGPR one, tightest first, as the VGPR hint names them."""
    rest = [x for x in limiters if not x["limit"].startswith("VGPR")]
    if not rest:
        return f"workgroup size {W} waves"
    first = rest[0]["workgroups_per_cu"]
    tied = [x["limit"] for x in rest if x["workgroups_per_cu"] == first]
    return f"{' and '.join(tied)}, {first} workgroup{'s' if first != 1 else ''} per CU"


def _hint(limiter, lim, W, E, wmax, granule, budget, V, vgpr, agpr, sgpr, lds, limits, waves_simd, total_vgpr, waves_for_vgpr, limiters) -> str:
    others = min(v for k, v in limits.items() if k != limiter) if limiter != "none" else None
    if limiter == "none":
        return f"Full occupancy: {_fmt_waves(waves_simd)} of {wmax} waves per SIMD."
    now = f"{_fmt_waves(waves_simd)} of {wmax} waves per SIMD"
    if limiter == "VGPR":
        for target in range(int(waves_for_vgpr(V)) + 1, wmax + 1):
            wg_new = min(target * E // W, others)
            if wg_new * W / E > waves_simd:
                max_total = (budget // target) // granule * granule
                max_arch = max_total - agpr if (lim.unified_agpr and agpr > 0) else max_total
                label = "VGPRs (arch, with AGPRs counted)" if (lim.unified_agpr and agpr > 0) else "VGPRs"
                return f"VGPR-limited: {V} VGPRs give {now}; <= {max_arch} {label} would give {_fmt_waves(wg_new * W / E)}."
        return f"VGPR-limited: {V} VGPRs give {now}; fewer VGPRs alone would not help (next limit: {_next_limit(limiters, W)})."
    if limiter == "SGPR":
        return f"SGPR-limited: {sgpr} SGPRs give {now}; <= 80 SGPRs would allow 10 (gfx9 rule)."
    if limiter == "LDS":
        if lds > lim.lds_per_wg:
            return f"LDS: {lds} B per workgroup exceeds the {lim.lds_per_wg} B limit."
        want = limits["LDS"] + 1
        max_lds = (lim.lds_per_cu // want) // lim.lds_granule * lim.lds_granule
        gain = min(want, others) * W / E
        return (
            f"LDS-limited: {lds} B per workgroup allows {limits['LDS']} workgroups per CU ({now}); "
            f"<= {max_lds} B would allow {want} ({_fmt_waves(gain)} waves per SIMD). Shrink the LDS tile or use fewer, larger workgroups."
        )
    return f"Workgroup-slot/barrier-limited: {W}-wave workgroups give {now}; larger workgroups (more waves each) would fill the CU."


KERNEL_RESOURCE_COLUMNS = ("name", "wg_x", "wg_y", "wg_z", "arch_vgpr", "accum_vgpr", "sgpr", "lds_bytes", "scratch_bytes")


def _configurations_by_name(kernels: pd.DataFrame, known: np.ndarray, keys: list[str]) -> list[tuple] | None:
    """The groupby of :func:`kernel_occupancy` as plain rows (``keys`` values, count, sum of
    durations; groups in order of first appearance) without hashing every row, when each
    (agent, name) has one resource configuration (the usual case: resources are per kernel
    code object); None when it does not, or when a name is missing, so the caller groups
    with pandas."""
    name = kernels["name"]
    if not isinstance(name.dtype, pd.CategoricalDtype):
        return None
    rows = np.flatnonzero(known)
    all_codes = name.cat.codes.to_numpy()
    codes = all_codes[rows].astype(np.int64)
    if len(codes) == 0 or codes.min() < 0:
        return None
    agent = kernels["agent"].to_numpy()[rows].astype(np.int64)
    if (agent == agent[0]).all():
        group = codes
    else:
        group, _ = pd.factorize((agent << 32) | codes)
    ngroups = int(group.max()) + 1
    first = np.full(ngroups, len(group), dtype=np.int64)
    np.minimum.at(first, group, np.arange(len(group)))
    present = np.flatnonzero(first < len(group))
    first_rows = rows[first[present]]  # kernel row of each configuration's first dispatch
    rep = np.empty(ngroups, dtype=np.int64)
    rep[present] = first_rows
    for column in keys:
        if column in ("agent", "name"):
            continue
        values = kernels[column].to_numpy()
        if not (values[rows] == values[rep[group]]).all():
            return None  # a name with several configurations
    dur = kernels["end"].to_numpy()[rows] - kernels["start"].to_numpy()[rows]
    count = np.bincount(group, minlength=ngroups)[present]
    total = np.bincount(group, weights=dur, minlength=ngroups)[present]
    if np.abs(dur).sum(dtype=np.float64) >= 2**52:
        return None  # float sums would not be exact
    order = np.argsort(first[present], kind="stable")  # first appearance, as groupby(sort=False)
    picked = first_rows[order]
    labels = np.asarray(name.cat.categories, dtype=object)
    columns = [labels[all_codes[picked]].tolist() if column == "name" else kernels[column].to_numpy()[picked].tolist() for column in keys]
    return list(zip(*columns, count[order].astype(np.int64).tolist(), total[order].astype(np.int64).tolist(), strict=True))


def kernel_occupancy(kernels: pd.DataFrame, arch_of_agent: dict[int, str], wave_of_agent: dict[int, int] | None = None) -> list[dict]:
    """Occupancy of every distinct (name, agent, resources) configuration, by kernel time.

    Kernels without a known workgroup size or VGPR count are skipped. One Python call per
    distinct configuration (a few hundred), the rows are grouped with pandas.
    """
    if kernels.empty:
        return []
    known = (column_array(kernels, "wg_x") > 0) & (column_array(kernels, "arch_vgpr") >= 0)
    if not known.any():
        return []
    keys = ["agent", *KERNEL_RESOURCE_COLUMNS]
    grouped = _configurations_by_name(kernels, known, keys)
    if grouped is None:
        k = kernels.loc[known, keys].copy()
        k["dur"] = kernels["end"].to_numpy()[known] - kernels["start"].to_numpy()[known]
        frame = k.groupby(keys, observed=True, sort=False)["dur"].agg(["count", "sum"]).reset_index()
        grouped = list(frame.itertuples(index=False, name=None))
    # by kernel time, ties in first-appearance order (a stable sort)
    grouped.sort(key=lambda row: -row[-1])
    out = []
    for agent, name, wg_x, wg_y, wg_z, arch_vgpr, accum_vgpr, sgpr, lds_bytes, scratch_bytes, count, total in grouped:
        arch = arch_of_agent.get(int(agent), "")
        wg = max(int(wg_x), 1) * max(int(wg_y), 1) * max(int(wg_z), 1)
        occ = occupancy(
            arch,
            wg,
            int(arch_vgpr),
            max(int(accum_vgpr), 0),
            max(int(sgpr), 0),
            max(int(lds_bytes), 0),
            (wave_of_agent or {}).get(int(agent)),
            max(int(scratch_bytes), 0),
        )
        if occ is None:
            continue
        occ.update(
            name=str(name),
            agent=int(agent),
            workgroup_size=wg,
            vgpr=int(arch_vgpr),
            agpr=max(int(accum_vgpr), 0),
            sgpr=max(int(sgpr), 0),
            lds_bytes=max(int(lds_bytes), 0),
            dispatches=int(count),
            total_ns=int(total),
        )
        out.append(occ)
    return out


# --- NVIDIA -----------------------------------------------------------------------------------

# Resident blocks per SM by compute capability (CUDA C++ Programming Guide, "Technical
# Specifications per Compute Capability"); Kineto's deviceProperties do not record it.
NVIDIA_MAX_BLOCKS_PER_SM = {
    (5, 0): 32, (5, 2): 32, (5, 3): 32, (6, 0): 32, (6, 1): 32, (6, 2): 32, (7, 0): 32, (7, 2): 32, (7, 5): 16,
    (8, 0): 32, (8, 6): 16, (8, 7): 16, (8, 9): 24, (9, 0): 32, (10, 0): 32, (10, 3): 32, (12, 0): 32,
}  # fmt: skip
NVIDIA_REG_UNIT = 256  # registers are allocated per warp in units of 256 (cuda_occupancy.h)
NVIDIA_MAX_REGS_PER_THREAD = 255


def nvidia_smem_granule(major: int) -> int:
    """Shared-memory allocation unit per block (cuda_occupancy.h: 128 B on 8.x/9.x and
    later, 256 B before)."""
    return 128 if major >= 8 else 256


def nvidia_reserved_smem(major: int) -> int:
    """Shared memory the system reserves per block (1 KiB from compute capability 8.0)."""
    return 1024 if major >= 8 else 0


def nvidia_occupancy(props: dict, threads_per_block: int, regs_per_thread: int, smem_per_block: int = 0) -> dict | None:
    """Theoretical occupancy of one NVIDIA kernel configuration, as the CUDA occupancy
    calculator (``cuda_occupancy.h``, cudaOccMaxActiveBlocksPerMultiprocessor) computes it,
    from the trace's deviceProperties (``props``: warpSize, maxThreadsPerMultiprocessor,
    regsPerMultiprocessor, regsPerBlock, sharedMemPerMultiprocessor, computeMajor/Minor)::

        W          = ceil(threads per block / warp size)                  warps per block
        regs/warp  = roundup(registers per thread * warp size, 256)
        B_regs     = 0 if regs/warp * W > regs per block, else
                     floor(floor(regs per SM / P / regs/warp) * P / W)      P = 4 sub-partitions (cc >= 7; 6.0: 2)
        B_smem     = floor(shared mem per SM / roundup(smem per block + reserved, granule))
        B_warps    = floor(max threads per SM / warp size / W)
        B_blocks   = max resident blocks per SM (by compute capability)
        blocks/SM  = min(B_regs, B_smem, B_warps, B_blocks);  occupancy = blocks * W / max warps per SM

    None when a needed property is missing. ``limiters``: every limit in blocks per SM,
    tightest first ({"limit", "blocks_per_sm", "warps_per_sm"}); ``limiter``: the tightest
    ("none" at full occupancy).
    """

    def prop(key: str) -> int | None:
        value = props.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    warp, max_threads, regs_sm, major = prop("warpSize"), prop("maxThreadsPerMultiprocessor"), prop("regsPerMultiprocessor"), prop("computeMajor")
    minor_value = props.get("computeMinor")
    minor = minor_value if isinstance(minor_value, int) else 0
    if warp is None or max_threads is None or major is None or threads_per_block <= 0:
        return None
    regs_block = prop("regsPerBlock") or regs_sm
    smem_sm = prop("sharedMemPerMultiprocessor")
    W = -(-threads_per_block // warp)
    max_warps = max_threads // warp
    limits: dict[str, int] = {}
    if regs_sm is not None and regs_per_thread > 0:
        per_warp = _align(min(regs_per_thread, NVIDIA_MAX_REGS_PER_THREAD) * warp, NVIDIA_REG_UNIT)
        parts = 2 if (major, minor) == (6, 0) else (4 if major >= 6 else 1)
        if regs_block is not None and per_warp * W > regs_block:
            limits["registers"] = 0
        else:
            limits["registers"] = (regs_sm // parts // per_warp) * parts // W
    if smem_sm is not None and smem_per_block > 0:
        limits["shared memory"] = smem_sm // _align(smem_per_block + nvidia_reserved_smem(major), nvidia_smem_granule(major))
    limits["warps per SM"] = max_warps // W
    max_blocks = NVIDIA_MAX_BLOCKS_PER_SM.get((major, minor))
    if max_blocks is not None:
        limits["blocks per SM"] = max_blocks
    order = sorted(limits, key=lambda k: (limits[k], list(limits).index(k)))
    blocks = limits[order[0]]
    warps = blocks * W
    full = warps >= max_warps or (blocks == max_blocks and order[0] == "blocks per SM" and warps >= max_warps)
    return {
        "compute_capability": f"{major}.{minor}",
        "warps_per_block": W,
        "blocks_per_sm": blocks,
        "warps_per_sm": warps,
        "max_warps_per_sm": max_warps,
        "occupancy_pct": round(100.0 * warps / max_warps, 2),
        "limiter": "none" if full else order[0],
        "limiters": [{"limit": k, "blocks_per_sm": limits[k], "warps_per_sm": limits[k] * W} for k in order],
        "registers_known": "registers" in limits,
    }


def nvidia_hint(occ: dict, regs_per_thread: int, smem_per_block: int, props: dict) -> str:
    """What would lift an NVIDIA kernel's occupancy (:func:`nvidia_occupancy`'s result),
    naming the limits in order."""
    now = f"{occ['warps_per_sm']} of {occ['max_warps_per_sm']} warps per SM ({occ['blocks_per_sm']} blocks)"
    if occ["limiter"] == "none":
        return f"Full occupancy: {now}."
    limits = {x["limit"]: x["blocks_per_sm"] for x in occ["limiters"]}
    limiter = occ["limiter"]
    others = [x for x in occ["limiters"] if x["limit"] != limiter]
    nxt = f"{others[0]['limit']}, {others[0]['blocks_per_sm']} blocks per SM" if others else "none"
    want = occ["blocks_per_sm"] + 1
    if others and others[0]["blocks_per_sm"] < want:
        return f"{limiter.capitalize()}-limited: {now}; lifting it alone would not help (next limit: {nxt})."
    W = occ["warps_per_block"]
    if limiter == "registers":
        warp = props.get("warpSize") or 32
        for regs in range(min(regs_per_thread, NVIDIA_MAX_REGS_PER_THREAD) - 1, 0, -1):
            trial = nvidia_occupancy(props, W * warp, regs, smem_per_block)
            if trial is not None and trial["limiters"] and {x["limit"]: x["blocks_per_sm"] for x in trial["limiters"]}.get("registers", 0) >= want:
                return f"Register-limited: {regs_per_thread} registers per thread give {now}; <= {regs} would allow {want} blocks (next limit: {nxt})."
    if limiter == "shared memory":
        major = props.get("computeMajor") or 8
        per_sm = props.get("sharedMemPerMultiprocessor") or 0
        granule = nvidia_smem_granule(major)
        most = (per_sm // want) // granule * granule - nvidia_reserved_smem(major)
        if most > 0:
            return f"Shared-memory-limited: {smem_per_block} B per block give {now}; <= {most} B would allow {want} blocks (next limit: {nxt})."
    if limiter in ("warps per SM", "blocks per SM"):
        return f"{limiter.capitalize()}-limited: {W}-warp blocks give {now}; {'larger' if limiter == 'blocks per SM' else 'fewer, larger'} blocks would fill the SM."
    return f"{limiter.capitalize()}-limited: {now} (limits: {', '.join(f'{k} {v}' for k, v in limits.items())})."


# --- the summary section ---


def occupancy_section(inputs: Sequence[RunInput], top: int | None) -> list[Record]:
    """:func:`kernel_occupancy` over every process, by kernel time; the first ``top`` (0 or None: all)."""
    rows = []
    for r in inputs:
        gpus = r.run.gpu_agents
        arch_of = {a.id: a.arch for a in gpus}
        wave_of = {a.id: a.wave_size for a in gpus if a.wave_size}
        for occ in kernel_occupancy(r.run.kernels, arch_of, wave_of):
            occ["process"] = r.label
            rows.append(occ)
    rows.sort(key=lambda o: -o["total_ns"])
    return rows[:top] if top else rows
