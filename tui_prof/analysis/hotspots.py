"""Kernel hotspots: time per kernel name (or any other grouping column).

Statistics follow rocprofv3's own ``*_stats.csv`` (``statistics.hpp``): total, average,
min, max and the *sample* standard deviation (n-1); percent is of the summed kernel time.
Durations are ``end - start`` in ns, exactly as the profiler recorded them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tui_prof.model import Run, RunSet
from tui_prof.model.schema import concat_tables

HOTSPOT_COLUMNS = ("name", "calls", "total_ns", "avg_ns", "median_ns", "min_ns", "max_ns", "stddev_ns", "percent")


def all_kernels(source: Run | RunSet) -> pd.DataFrame:
    """The kernels table of a run, or of every run of a run set concatenated."""
    if isinstance(source, Run):
        return source.kernels
    return concat_tables("kernels", [run.kernels for run in source.runs])


def hotspots(kernels: pd.DataFrame, by: str = "name") -> pd.DataFrame:
    """One row per distinct value of ``by``, sorted by total time descending (ties by name).

    Columns: name, calls, total_ns, avg_ns, median_ns, min_ns, max_ns, stddev_ns, percent.
    """
    if kernels.empty:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in HOTSPOT_COLUMNS}).astype(
            {"name": "object", "calls": "int64", "total_ns": "int64", "min_ns": "int64", "max_ns": "int64"}
        )
    frame = pd.DataFrame({"key": kernels[by], "dur": kernels["end"].to_numpy() - kernels["start"].to_numpy()})
    grouped = frame.groupby("key", observed=True, sort=False)["dur"]
    table = grouped.agg(["count", "sum", "mean", "median", "min", "max", "std"])
    table.columns = ["calls", "total_ns", "avg_ns", "median_ns", "min_ns", "max_ns", "stddev_ns"]
    table["stddev_ns"] = table["stddev_ns"].fillna(0.0)
    grand_total = float(frame["dur"].sum())
    table["percent"] = 100.0 * table["total_ns"] / grand_total if grand_total else 0.0
    table = table.reset_index().rename(columns={"key": "name"})
    table["name"] = table["name"].astype(str)
    table = table.sort_values(["total_ns", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)
    return table[list(HOTSPOT_COLUMNS)]


def hotspot_records(table: pd.DataFrame, limit: int | None = None) -> list[dict]:
    """Hotspot rows as JSON-ready dicts (ints stay ints, floats rounded to 0.01 ns)."""
    rows = table if limit is None else table.head(limit)
    out = []
    for row in rows.itertuples(index=False):
        out.append(
            {
                "name": row.name,
                "calls": int(row.calls),
                "total_ns": int(row.total_ns),
                "avg_ns": round(float(row.avg_ns), 2),
                "median_ns": round(float(row.median_ns), 2),
                "min_ns": int(row.min_ns),
                "max_ns": int(row.max_ns),
                "stddev_ns": round(float(row.stddev_ns), 2),
                "percent": round(float(row.percent), 4),
            }
        )
    return out


def kernel_time_ns(kernels: pd.DataFrame) -> int:
    """Sum of kernel durations in ns (overlapping kernels counted once each)."""
    return int(np.sum(kernels["end"].to_numpy() - kernels["start"].to_numpy())) if len(kernels) else 0
