"""The summary's measurement table: the headline numbers of the other sections side by
side, and the peak memory from the allocation traces."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tui_prof.analysis import memory
from tui_prof.analysis.names import row_flags
from tui_prof.analysis.sections import CopiesSection, GpuSection, KernelsSection, LaunchSection, MeasurementSection, SyncSection
from tui_prof.model import RunSet

SYNC_TARGET_PCT = 5.0  # the profiling guide's target for sync + blocking copies, % of wall


def peak_memory(allocations: pd.DataFrame) -> int | None:
    """Peak of (allocated - freed) bytes over time; frees without a size take the size of
    the last allocation at the same address. None when nothing is recorded."""
    if allocations.empty:
        return None
    is_alloc = row_flags(allocations["operation"], lambda op: "ALLOC" in op.upper())
    is_free = row_flags(allocations["operation"], lambda op: "FREE" in op.upper())
    nbytes = allocations["bytes"].to_numpy().astype(np.int64)
    if not (is_alloc.any() and (nbytes > 0).any()):
        return None
    frame = pd.DataFrame(
        {"t": allocations["start"].to_numpy(), "addr": allocations["address"].to_numpy(), "alloc": np.where(is_alloc & (nbytes > 0), nbytes, np.nan)}
    )
    frame = frame.sort_values("t", kind="stable")
    size_at_addr = frame.groupby("addr")["alloc"].ffill().fillna(0).to_numpy()
    order = frame.index.to_numpy()
    free_bytes = np.where(nbytes[order] > 0, nbytes[order], size_at_addr)
    delta = np.where(is_alloc[order] & ~is_free[order], np.maximum(nbytes[order], 0), 0) - np.where(is_free[order], free_bytes, 0)
    return int(max(np.cumsum(delta).max(), 0))


def peak_memory_of(runset: RunSet) -> int | None:
    """The largest :func:`peak_memory` over the processes' allocation traces (None when none
    records allocations; API calls' sizes are :mod:`~tui_prof.analysis.memory`'s last source)."""
    peaks = [p for p in (peak_memory(memory.trace_rows(run.allocations)) for run in runset.runs) if p is not None]
    return max(peaks) if peaks else None


def measurement_section(
    wall: int,
    kernels: KernelsSection,
    categories: dict[str, int],
    gpu: GpuSection,
    sync: SyncSection,
    launch: LaunchSection,
    copies: CopiesSection,
    peak_memory_bytes: int | None,
    processes: int = 1,
    process_time_ns: int | None = None,
    kernel_whole_ns: int | None = None,
) -> MeasurementSection:
    """The measurement table: the headline numbers of the other sections side by side;
    ``processes`` and ``process_time_ns`` (Σ process walls; None: ``wall``) are the wholes
    of the figures summed over processes. ``kernels``: the kernels section, traced or from
    the kernel statistics of a run without a kernel trace; ``kernel_whole_ns`` the GEMM
    share's denominator (None: ``kernels``' total; a cut statistics table's run total)."""
    ktime = int(kernels["total_ns"])
    whole = ktime if kernel_whole_ns is None else int(kernel_whole_ns)
    return {
        "span_ns": int(wall),
        "gpu_span_ns": int(gpu["span_ns"]),
        "kernel_count": int(kernels["dispatches"]),
        "kernel_time_ns": ktime,
        "gemm_pct_of_kernel_time": round(100.0 * categories.get("GEMM", 0) / whole, 4) if whole else 0.0,
        "sync_pct_of_wall": sync["pct_of_wall"],
        "exposed_sync_pct_of_wall": sync["exposed_pct_of_wall"],
        "sync_target_pct": SYNC_TARGET_PCT,
        "launch_api_pct_of_wall": launch["api_pct_of_wall"],
        "median_queue_delay_ns": launch["median_queue_delay_ns"],
        "idle_pct": gpu["idle_pct"],
        "copy_pct_of_wall": copies["pct_of_wall"],
        "peak_memory_bytes": peak_memory_bytes,
        "processes": int(processes),
        "process_time_ns": int(wall if process_time_ns is None else process_time_ns),
    }
