"""The profiler's own statistics tables as the TUI shows them (no Textual or Rich import).

A run holds statistics files when it was recorded with ``rocprofv3 --stats`` (or
``--summary``) or legacy ``rocprof --stats`` (:mod:`tui_prof.analysis.stats`). The hotspots
pane lists each table (kernels, API domains, copies, domains) with the profiler's own
Percentage column; a run without a trace opens on them, and the timeline pane says what
is missing and which rocprofv3 flag records it (:func:`missing_trace`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from tui_prof.analysis import api as stats
from tui_prof.model import RunSet
from tui_prof.model.schema import STATS_COLUMNS

# what each table's trace would add to the timeline, and the rocprofv3 flag that records it
TRACE_OF = {
    stats.KERNEL_STATS: ("kernel dispatches (GPU lanes)", "--kernel-trace"),
    stats.COPY_STATS: ("memory copies (copy lanes)", "--memory-copy-trace"),
    "hip_api_stats": ("HIP API calls (host lanes)", "--hip-trace"),
    "hsa_api_stats": ("HSA API calls (host lanes)", "--hsa-trace"),
    "marker_api_stats": ("markers / roctx ranges (host-op lanes)", "--marker-trace"),
    "rccl_api_stats": ("RCCL calls (host lanes)", "--rccl-trace"),
}
TRACE_COMMAND = "rocprofv3 --stats --kernel-trace --sys-trace -- <app>"


@dataclass(frozen=True)
class StatsFrame:
    """One statistics table: its ``tool_stats`` key, rocprofv3 domain, where it came from
    (e.g. "rocprofv3 --stats (kernel_stats)"), processes combined, and its rows
    (:data:`~tui_prof.model.schema.STATS_COLUMNS`, largest total first)."""

    key: str
    domain: str
    source: str
    processes: int
    frame: pd.DataFrame

    @property
    def label(self) -> str:
        """The table's name in the pane: "kernel_stats (KERNEL_DISPATCH)"."""
        return f"{self.key} ({self.domain})"

    @property
    def calls(self) -> int:
        return int(self.frame["calls"].sum())

    @property
    def total_ns(self) -> int:
        return int(self.frame["total_ns"].sum())


def stats_frames(runset: RunSet) -> list[StatsFrame]:
    """Every statistics table of the run set (processes combined per name:
    :func:`tui_prof.analysis.stats.combine`), in the report order of
    :data:`tui_prof.analysis.stats.DOMAIN_OF`, other tables after by key."""
    keys = {k for run in runset.runs for k, t in run.tool_stats.items() if len(t)}
    order = [k for k in stats.DOMAIN_OF if k in keys] + sorted(keys - set(stats.DOMAIN_OF))
    out = []
    for key in order:
        found = stats.tables_with(runset, key)
        frame = stats.combine_stats([t for _, t in found])[list(STATS_COLUMNS)]
        tools = sorted({stats.tool_of(run) for run, _ in found})
        domain = stats.DOMAIN_OF.get(key, key.removesuffix("_stats").upper())
        out.append(StatsFrame(key, domain, f"{', '.join(tools)} ({key})", len(found), frame))
    return out


def kernel_frame(frames: list[StatsFrame]) -> StatsFrame | None:
    return next((f for f in frames if f.key == stats.KERNEL_STATS), None)


def missing_trace(runset: RunSet, frames: list[StatsFrame]) -> str:
    """What the timeline of a run without a trace says: that there is nothing to draw, what
    each statistics table would have drawn and the rocprofv3 flag that records it; ""
    when the run has a trace."""
    if stats.trace_recorded(runset):
        return ""
    lines = ["No trace in this run: the timeline has nothing to draw."]
    if frames:
        tools = sorted({stats.tool_of(run) for run in runset.runs if run.tool_stats})
        tables = "the tables (v: next table)" if len(frames) > 1 else "the table"
        lines.append(f"The run holds only the profiler's statistics ({', '.join(tools)}): totals per name, without timestamps. Press 1 for {tables}.")
    lines.append("")
    lines.append("Missing, and the rocprofv3 flag that records it:")
    keys = [f.key for f in frames if f.key in TRACE_OF] or [stats.KERNEL_STATS, "hip_api_stats"]
    if stats.KERNEL_STATS not in keys:
        keys.insert(0, stats.KERNEL_STATS)
    for key in keys:
        what, flag = TRACE_OF[key]
        lines.append(f"  {what}: {flag}")
    lines.append("  host API calls, kernels, copies and markers together: --sys-trace")
    lines.append("")
    lines.append(f"Record both: {TRACE_COMMAND}")
    return "\n".join(lines)


def title_count(runset: RunSet, dispatches: int, frames: list[StatsFrame]) -> str:
    """The title's dispatch count: traced dispatches, or the kernel statistics' calls with
    their source when the run has no kernel trace."""
    kernel = kernel_frame(frames)
    if dispatches or kernel is None:
        return f"{dispatches} dispatches"
    return f"{kernel.calls:,} dispatches {stats.source_label(runset)}"
