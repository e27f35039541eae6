"""Profiling capability of each GPU agent, and known profiler error messages in run logs.

Facts come from research/counters_hw.md §2b/§4 (rocprofiler-sdk sources and docs, ROCm
issues); several are version-dependent and are stated with the versions they apply to.
``scan_logs`` reads ``*.log`` / ``*.txt`` files of a run directory read-only, at most
``max_bytes`` per file (the head and the tail), and never writes anything.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from tui_prof.analysis.counterplan import rocm_of
from tui_prof.analysis.occupancy import ArchLimits, arch_limits
from tui_prof.analysis.sections import LogHit
from tui_prof.loaders.base import open_regular
from tui_prof.model import Agent

SERIALISATION_WARNING = (
    "Counter collection serialises kernel dispatches (each dispatch runs alone while counters are read), "
    "so overlap, idle and launch analysis of this run is not representative: trace without --pmc for timing."
)


# gfx115x (Strix Point / Strix Halo, e.g. gfx1151 Radeon 8060S): what cannot be measured and
# what to do instead (research/counters_hw.md §2b, §4: rocm-systems #3428, #2169, PR #2171/#3229,
# #10041, TheRock #6476, rocprof-compute PR #4402)
GFX115X_INSTEAD: tuple[dict[str, str], ...] = (
    {
        "cannot": "PC sampling: rocprofiler-sdk samples only gfx9 and gfx12 (ROCm/rocm-systems #3428)",
        "instead": "find the hot kernels by time (rocprofv3 --kernel-trace --stats) and time variants of them; read their ISA (-save-temps) for the instruction mix",
    },
    {
        "cannot": "hardware counters and thread trace with ROCm 7.2.0: rocprofv3 --pmc and --att abort in hsa_iterate_agents (ROCm/rocm-systems #2169)",
        "instead": "update ROCm to a release with rocm-systems PR #2171 (7.2 backport PR #3229); then collect one TCP-block counter per pass "
        "(separate --pmc passes, rocm-systems #10041) and check the values are not all zero (ROCm/TheRock #6476)",
    },
    {
        "cannot": "an MFMA roofline: gfx11.5 has no MFMA units (WMMA runs on the VALU); the rocprof-compute roofline is VALU-only",
        "instead": "bound a WMMA kernel by the VALU peak (rocprof-compute gfx1151 config, PR #4402: FP16 max SCLK × CUs × 256, FP32 × 128 FLOP per cycle) "
        "and by memory bandwidth (LPDDR5X, 256-bit bus)",
    },
)


def _version_tuple(text: str) -> tuple[int, ...] | None:
    m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    return tuple(int(x) for x in m.groups(default="0")) if m else None


def capabilities(arch: str, tool_version: str = "") -> dict[str, Any]:
    """What can be profiled on ``arch``: counters, PC sampling, thread trace, rocprof-compute, limits, notes;
    ``instead`` (where known): what cannot be measured on the arch and what to do instead."""
    a = (arch or "").split(":")[0].lower()
    a = {"gfx94x": "gfx942", "gfx95x": "gfx950"}.get(a, a)  # a HIP Kineto trace's family name (no stepping digit)
    lim = arch_limits(a)
    notes: list[str] = []
    caps: dict[str, Any] = {
        "arch": a or None,
        "counters": "unknown",
        "pc_sampling": "unknown",
        "thread_trace": "unknown",
        "rocprof_compute": "unknown",
        "roofline": "unknown",
    }
    if a == "gfx908":
        caps.update(
            counters="yes (rocprofv3 may collect none on MI100: rocprofiler-compute PR #614)",
            pc_sampling="no",
            thread_trace="not listed",
            rocprof_compute="yes",
            roofline="no ('gfx908 does not support roofline analysis')",
        )
    elif a == "gfx90a":
        caps.update(
            counters="yes", pc_sampling="host_trap only (stochastic not available on gfx90a)", thread_trace="yes", rocprof_compute="yes", roofline="yes"
        )
    elif a in ("gfx940", "gfx941", "gfx942"):
        caps.update(
            counters="yes",
            pc_sampling="host_trap and stochastic (stochastic needs recent firmware; intervals are powers of 2 cycles)",
            thread_trace="yes",
            rocprof_compute="yes",
            roofline="yes",
        )
    elif a == "gfx950":
        caps.update(
            counters="yes",
            pc_sampling="host_trap and stochastic",
            thread_trace="not confirmed (probe with rocprofv3 --att)",
            rocprof_compute="yes",
            roofline="yes",
        )
    elif a.startswith("gfx103"):
        caps.update(counters="yes", pc_sampling="no", thread_trace="yes (gfx10)", rocprof_compute="no", roofline="no")
    elif a in ("gfx1100", "gfx1101", "gfx1102", "gfx1103"):
        caps.update(
            counters="yes, with caveats (zero-valued counters reported on some ROCm versions; gfx1103 showed 0 counters until fixed)",
            pc_sampling="no",
            thread_trace="yes (gfx11; empty traces reported on W7800)",
            rocprof_compute="no",
            roofline="no",
        )
    elif a in ("gfx1150", "gfx1151", "gfx1152", "gfx1153"):
        caps.update(
            counters="partial, version-dependent",
            pc_sampling="no",
            thread_trace="listed (gfx11 family) but aborted on gfx1151 with ROCm 7.2",
            rocprof_compute="yes in newer ROCm (rocm-systems PR #4402, 2026)",
            roofline="gfx1151: VALU only (no MFMA)",
        )
        notes.append(
            "gfx11.5 counters arrived late: not in the Aug-2025 rocprofiler-sdk counter definitions, added in newer config.yaml; "
            "only one TCP-block counter per pass on gfx1151 (rocm-systems #10041)."
        )
        caps["instead"] = list(GFX115X_INSTEAD)
        if a == "gfx1151":
            v = _version_tuple(tool_version)
            crash = "rocprofv3 --pmc aborted (SIGABRT in hsa_iterate_agents / aqlprofile) on gfx1151 with ROCm 7.2.0; fixed by rocm-systems PR #2171 and backport PR #3229."
            if v is not None and v[:2] == (7, 2) and v < (7, 2, 1):
                crash = "This run's ROCm 7.2.0 is affected: " + crash
            notes.append(crash)
    elif a.startswith("gfx12"):
        caps.update(
            counters="yes (fewer metrics: no ALUStalledByLDS / SQ_WAIT_INST_LDS / OccupancyPercent / MemUnitBusy)",
            pc_sampling="host_trap only in newer SDKs (zero samples reported on gfx1200/1201)",
            thread_trace="yes (gfx12)",
            rocprof_compute="not in released versions read ('Cannot find a supported arch in rocminfo')",
            roofline="unknown",
        )
    if a.startswith(("gfx11", "gfx12")):
        notes.append("Counters on gfx11/gfx12 need a stable power state (e.g. amd-smi/rocm-smi set to a stable/deterministic profile) for repeatable values.")
    caps["notes"] = notes
    caps["rocm"] = rocm_of(tool_version)
    caps["limits"] = _limits_of(lim)
    return caps


def _limits_of(lim: ArchLimits | None) -> dict[str, Any] | None:
    """The arch's occupancy limits as the Hardware pane shows them (None: unknown arch)."""
    if lim is None:
        return None
    if lim.rdna:
        # the occupancy table counts per WGP (2 CUs, WGP mode); say both, each under its name,
        # so the CU figures agree with the agent's (agent_info's Simd_Per_Cu, Lds_Size_In_Kb)
        return {
            "family": lim.family,
            "wave_size": lim.wave,
            "simds_per_cu": lim.simds // 2,
            "simds_per_wgp": lim.simds,
            "max_waves_per_simd": lim.max_waves_simd,
            "vgpr_budget_per_simd_lane": lim.vgpr_budget,
            "vgpr_granule": lim.vgpr_granule,
            "lds_per_cu_bytes": lim.lds_per_cu // 2,
            "lds_per_wgp_bytes": lim.lds_per_cu,
            "lds_per_workgroup_bytes": lim.lds_per_wg,
            "peak_hbm_gbs": lim.peak_hbm_gbs,
        }
    return {
        "family": lim.family,
        "wave_size": lim.wave,
        "simds_per_cu": lim.simds,
        "max_waves_per_simd": lim.max_waves_simd,
        "vgpr_budget_per_simd_lane": lim.vgpr_budget,
        "vgpr_granule": lim.vgpr_granule,
        "lds_per_cu_bytes": lim.lds_per_cu,
        "lds_per_workgroup_bytes": lim.lds_per_wg,
        "peak_hbm_gbs": lim.peak_hbm_gbs,
    }


def nvidia_arch(agent: Agent) -> str | None:
    """An NVIDIA GPU's architecture as CUDA names it (``sm_90`` for compute capability 9.0),
    None when the trace does not record its compute capability."""
    cc = agent.extra.get("compute_capability")
    return f"sm_{str(cc).replace('.', '')}" if cc else None


def nvidia_capabilities(agent: Agent) -> dict[str, Any]:
    """What the trace says about an NVIDIA GPU (SM count, memory, compute capability, from
    Kineto's deviceProperties where recorded) and which NVIDIA tools profile it. Same keys
    as :func:`capabilities`; the AMD per-arch facts and limits do not apply."""
    cc = agent.extra.get("compute_capability")
    known = []
    if agent.product:
        known.append(agent.product)
    if agent.cu_count:
        known.append(f"{agent.cu_count} SMs")
    if agent.memory_bytes:
        known.append(f"{agent.memory_bytes / 2**30:.1f} GiB memory")
    if cc:
        known.append(f"compute capability {cc}")
    if agent.max_clock_mhz:
        known.append(f"{agent.max_clock_mhz} MHz")
    notes = ["Known from the trace: " + (", ".join(known) if known else "nothing (no deviceProperties recorded)") + "."]
    notes.append("The AMD per-architecture counter limits and profiler caveats do not apply to NVIDIA GPUs.")
    return {
        "arch": nvidia_arch(agent) or agent.product or None,
        "vendor": "NVIDIA",
        "counters": "not in a PyTorch/Kineto trace: Nsight Compute (ncu --metrics ... / --section ...) collects them",
        "pc_sampling": "Nsight Compute source counters / warp-state sampling (ncu --section WarpStateStats,SourceCounters)",
        "thread_trace": "not applicable (an AMD feature); Nsight Systems (nsys) gives the CPU/GPU timeline",
        "rocprof_compute": "not applicable (AMD only); Nsight Compute is the NVIDIA equivalent",
        "roofline": "Nsight Compute roofline (ncu --section SpeedOfLight_RooflineChart)",
        "notes": notes,
        "limits": None,
        "device": {
            "sm_count": agent.cu_count,
            "memory_bytes": agent.memory_bytes,
            "compute_capability": cc,
            "warp_size": agent.wave_size,
            "max_threads_per_block": agent.workgroup_max_size,
            "shared_memory_per_sm_bytes": agent.lds_bytes_per_cu,
        },
    }


# (code, regex, meaning and what to do) — research/counters_hw.md §4
KNOWN_ERRORS: tuple[tuple[str, str, str], ...] = (
    (
        "aqlprofile-load",
        r"aqlprofile API table load failed",
        "The HSA AQL-profile library could not be loaded: install/repair hsa-amd-aqlprofile (legacy rocprof/rocprofv2).",
    ),
    (
        "hsa-iterate-agents",
        r"Error Calling hsa_iterate_agents: HSA_STATUS_ERROR|hsa_ven_amd_aqlprofile_get_info",
        "aqlprofile aborted while enumerating agents (gfx1151/Strix Halo with ROCm 7.2.0: fixed by rocm-systems PR #2171 / #3229); update ROCm.",
    ),
    (
        "arch-not-supported",
        r"Agent HW architecture is not supported",
        "This GPU has no counter definitions in this ROCm version: counters cannot be collected here.",
    ),
    (
        "gfxip-not-supported",
        r"GFXIP is not supported\((gfx[0-9a-f]+)\)",
        "Legacy rocprof has no counter support for this gfx (gfx11 before ROCm 5.7, iGPUs): use rocprofv3 on a newer ROCm.",
    ),
    (
        "missing-counters",
        r"Unable to find all counters for agent",
        "A requested counter does not exist on this arch: check `rocprofv3 --list-avail` and use this arch's names (TCC_* on CDNA, GL2C_* on RDNA).",
    ),
    ("no-supported-arch", r"Cannot find a supported arch in rocminfo", "rocprof-compute does not support this GPU in this version."),
    ("no-roofline", r"does not support roofline analysis", "rocprof-compute has no roofline for this GPU (e.g. gfx908)."),
    (
        "pc-sampling-unsupported",
        r"Given PC sampling configuration is not supported",
        "This PC-sampling method is not available here: list supported ones with `rocprofv3-avail info --pc-sampling`.",
    ),
    ("kfd-too-old", r"newer version of KFD", "The amdgpu kernel driver is too old for this profiling service (PC sampling): update the driver."),
    ("att-unsupported", r"INVALID_SHADER_DATA|Agent not supported", "aqlprofile is too old for thread trace on this GPU."),
    (
        "agent-map",
        r"_Map_base::at|unordered_map::at",
        "Agent enumeration failed on a mixed system (unsupported iGPU next to a dGPU): hide the iGPU (HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES).",
    ),
    ("cap-perfmon", r"CAP_PERFMON", "Counter collection needs CAP_PERFMON (or root) on this system."),
)
_KNOWN = tuple((code, re.compile(pattern), meaning) for code, pattern, meaning in KNOWN_ERRORS)
LOG_SUFFIXES = (".log", ".txt", ".err", ".out")


def log_files(directory: str | Path, max_files: int = 200, max_depth: int = 3) -> list[Path]:
    """The files :func:`scan_logs` reads under ``directory`` (or ``directory`` itself when it
    is a file): ``LOG_SUFFIXES`` files at most ``max_depth`` levels down, in path order, the
    first ``max_files``."""
    root = Path(directory)
    if root.is_file():
        return [root]
    if not root.is_dir():
        return []
    # walk only the levels that can hold a file at depth <= max_depth (a file directly
    # under root is at depth 1), without following directory links; then path order
    candidates = []
    base_depth = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        depth = len(Path(dirpath).parts) - base_depth
        if depth + 1 >= max_depth:
            dirnames[:] = []  # files below them would be deeper than max_depth
        for name in filenames:
            path = Path(dirpath) / name
            if path.suffix.lower() in LOG_SUFFIXES and path.is_file():
                candidates.append(path)
    return sorted(candidates)[:max_files]


def scan_logs(directory: str | Path, max_bytes: int = 4 << 20, max_files: int = 200, max_depth: int = 3) -> list[LogHit]:
    """Known profiler error messages in ``*.log``/``*.txt``/``*.err``/``*.out`` files under ``directory``.

    Read-only; each file contributes at most ``max_bytes`` (half from the head, half from
    the tail); at most ``max_files`` files, ``max_depth`` directory levels. Returns one dict
    per (file, code): path, line (1-based, in the part read; -1 in the tail part), code,
    text (the matching line, trimmed) and meaning.
    """
    found: list[LogHit] = []
    for path in log_files(directory, max_files, max_depth):
        try:
            size = path.stat().st_size
            with open_regular(path) as fh:  # a FIFO named like a log is refused, never waited on
                if size <= max_bytes:
                    parts = [(fh.read(), 1)]
                else:
                    head = fh.read(max_bytes // 2)
                    fh.seek(size - max_bytes // 2)
                    parts = [(head, 1), (fh.read(), -1)]
        except OSError:
            continue
        seen = set()
        for blob, first_line in parts:
            text = blob.decode("utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), start=1):
                for code, regex, meaning in _KNOWN:
                    if code in seen or not regex.search(line):
                        continue
                    seen.add(code)
                    found.append({"path": str(path), "line": number if first_line == 1 else -1, "code": code, "text": line.strip()[:300], "meaning": meaning})
    return found
