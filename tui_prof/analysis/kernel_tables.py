"""The summary's kernel tables: the kernels section, hotspots grouped by category, normalised
name, agent and process, and the kernel statistics standing in for a missing kernel trace."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tui_prof.analysis import stats
from tui_prof.analysis.hotspots import hotspot_records, hotspots, kernel_time_ns, process_order
from tui_prof.analysis.names import CategoryRules
from tui_prof.analysis.sections import CategoriesSection, HotspotRecord, KernelsSection
from tui_prof.model import RunSet


def kernels_section(kernels: pd.DataFrame, table: pd.DataFrame) -> KernelsSection:
    """``table``: :func:`hotspots` of ``kernels`` by name."""
    return {"dispatches": int(len(kernels)), "unique_names": int(len(table)), "total_ns": kernel_time_ns(kernels)}


def kernel_durations(kernels: pd.DataFrame) -> np.ndarray:
    return kernels["end"].to_numpy() - kernels["start"].to_numpy()


GROUPED_BY = ("category", "normalized", "agent", "pid")


def grouped_hotspots(
    kernels: pd.DataFrame,
    wall: int,
    rules: CategoryRules,
    dur_order: np.ndarray,
    categories: pd.Series | None = None,
    runs: np.ndarray | None = None,
) -> tuple[pd.DataFrame, ...]:
    """:func:`hotspots` by each of ``GROUPED_BY`` (with % of wall), one duration sort shared;
    ``categories`` (:func:`kernel_categories_of`: operator first) replaces the name-rule
    categories when given. The kernels' order by process (``pct_wall``'s busy time; ``runs``:
    :func:`~tui_prof.analysis.hotspots.run_codes`, the run of each row) is shared between the
    groupings too."""
    processes = process_order(kernels, runs) if len(kernels) else None
    return tuple(
        hotspots(
            kernels,
            by=by,
            wall_ns=wall,
            rules=rules if by == "category" else None,
            dur_order=dur_order,
            key=categories if by == "category" else None,
            processes=processes,
        )
        for by in GROUPED_BY
    )


def categories_section(grouped: tuple[pd.DataFrame, ...], rules: CategoryRules, top: int | None) -> CategoriesSection:
    """``grouped``: :func:`grouped_hotspots`."""
    cats, by_normalized, by_agent, by_pid = grouped
    return {
        "categories": {str(r.name): int(r.total_ns) for r in cats.itertuples(index=False)},
        "category_rules": rules.source,
        "hotspots_by": {
            "normalized": hotspot_records(by_normalized, top),
            "category": hotspot_records(cats, None),
            "agent": hotspot_records(by_agent, None),
            "process": hotspot_records(by_pid, None),
        },
    }


def hotspots_source(runset: RunSet) -> str:
    """ "trace" when kernels were traced, "stats" when only a kernel statistics file has them, else "none"."""
    if any(len(run.kernels) for run in runset.runs):
        return "trace"
    return "stats" if stats.tables_with(runset, stats.KERNEL_STATS) else "none"


def stats_hotspots(runset: RunSet, top: int | None) -> tuple[list[HotspotRecord], KernelsSection]:
    """Hotspot records and the kernels part from the kernel statistics (no median: the files
    do not record one; ``percent``: the profiler's own Percentage for one process)."""
    table = stats.stats_table(runset, stats.KERNEL_STATS)
    if table is None:
        return [], {"dispatches": 0, "unique_names": 0, "total_ns": 0}
    records: list[HotspotRecord] = [
        {
            "name": r["name"],
            "calls": r["calls"],
            "total_ns": r["total_ns"],
            "avg_ns": r["avg_ns"],
            "median_ns": None,
            "min_ns": r["min_ns"],
            "max_ns": r["max_ns"],
            "stddev_ns": r["stddev_ns"],
            "percent": r["percent"],
        }
        for r in stats.stats_records(table, top)
    ]
    return records, {"dispatches": int(table["calls"].sum()), "unique_names": int(len(table)), "total_ns": int(table["total_ns"].sum())}


def stats_categories(runset: RunSet, rules: CategoryRules) -> dict[str, int]:
    """Kernel time (ns) per category from the kernel statistics, largest first."""
    table = stats.stats_table(runset, stats.KERNEL_STATS)
    if table is None:
        return {}
    cats = table.groupby(table["name"].map(rules.classify), sort=False)["total_ns"].sum()
    return {str(k): int(v) for k, v in sorted(cats.items(), key=lambda kv: (-kv[1], kv[0]))}
