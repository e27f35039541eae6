"""Tables from the statistics a profiler writes itself (``Run.tool_stats``).

Sources (docs/metrics.md, "Statistics-only runs"): rocprofv3 ``--stats`` files
(``<pid>_kernel_stats.csv``, ``*_api_stats.csv``, ``memory_copy_stats.csv``,
``domain_stats.csv``), rocprofv3 ``--summary`` tables and legacy ``rocprof --stats``
(``results.stats.csv``, ``.hip_stats.csv``, ``.hsa_stats.csv``, ``.copy_stats.csv``).
Every table has the columns of :data:`tui_prof.model.schema.STATS_COLUMNS`.

* A table of one process is shown as the profiler wrote it, its ``percent`` being the
  profiler's own Percentage column (share of that domain's total over the whole run, also
  when the file was cut short).
* Tables of several processes are combined per name: calls, totals summed, min/max of the
  extremes, average = total / calls, sample stddev pooled exactly from each part's count,
  mean and stddev; ``percent`` = total / the table's total × 100.
* :func:`trace_checks` recomputes a stats table from the trace of the same process and
  reports the names whose calls differ, or whose total differs by more than the rounding
  a profiler applies (``max(calls, 0.01 % of the total)`` ns).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import numpy as np
import pandas as pd

from tui_prof.model import Run, RunSet
from tui_prof.model.schema import STATS_COLUMNS

KERNEL_STATS = "kernel_stats"
COPY_STATS = "memory_copy_stats"
DOMAIN_STATS = "domain_stats"
API_STATS = {
    "hip_api_stats": "HIP_API",
    "hsa_api_stats": "HSA_API",
    "marker_api_stats": "MARKER_API",
    "rccl_api_stats": "RCCL_API",
    "rocdecode_api_stats": "ROCDECODE_API",
    "rocjpeg_api_stats": "ROCJPEG_API",
}
# tool_stats key -> rocprofv3 domain name (formats.md §1, domain_type.cpp), in report order
DOMAIN_OF = {
    KERNEL_STATS: "KERNEL_DISPATCH",
    COPY_STATS: "MEMORY_COPY",
    **API_STATS,
    "memory_allocation_stats": "MEMORY_ALLOCATION",
    "scratch_memory_stats": "SCRATCH_MEMORY",
    "counter_collection_stats": "COUNTER_COLLECTION",
    DOMAIN_STATS: "ALL_DOMAINS",
}
# api table "domain" values (model.schema) -> rocprofv3 domain name
TRACE_API_DOMAIN = {"hip": "HIP_API", "hsa": "HSA_API", "marker": "MARKER_API", "rccl": "RCCL_API", "rocdecode": "ROCDECODE_API", "rocjpeg": "ROCJPEG_API"}
TRACE_FLAG = {
    KERNEL_STATS: "--kernel-trace",
    COPY_STATS: "--memory-copy-trace",
    "hip_api_stats": "--hip-trace",
    "hsa_api_stats": "--hsa-trace",
    "marker_api_stats": "--marker-trace",
    "rccl_api_stats": "--rccl-trace",
}


class StatsRecord(TypedDict):
    name: str
    calls: int
    total_ns: int
    avg_ns: float
    percent: float
    min_ns: int | None
    max_ns: int | None
    stddev_ns: float | None


class StatsTable(TypedDict):
    key: str  # the tool_stats key, e.g. "kernel_stats"
    domain: str  # rocprofv3 domain name, e.g. "KERNEL_DISPATCH"
    source: str  # e.g. "rocprofv3 --stats (kernel_stats)"
    processes: int  # processes whose files were combined
    calls: int
    total_ns: int
    rows: list[StatsRecord]


class StatsCheck(TypedDict):
    process: str
    key: str
    name: str
    trace_calls: int
    stats_calls: int
    trace_total_ns: int
    stats_total_ns: int


def tool_of(run: Run) -> str:
    """How the run's statistics were written, e.g. "rocprofv3 --stats"."""
    if "rocprofv3-summary" in run.meta.formats:
        return "rocprofv3 --summary"
    return f"{run.meta.tool or 'profiler'} --stats"


def has_trace(runset: RunSet) -> bool:
    """Whether any process recorded trace rows (kernels, API calls or copies)."""
    return any(len(run.kernels) or len(run.api) or len(run.copies) for run in runset.runs)


def source_label(runset: RunSet) -> str:
    """Where the run's statistics tables come from, as the summary and the TUI say it:
    "from rocprofv3 --stats; no trace in this run" ("" when the run has none)."""
    tools = sorted({tool_of(run) for run in runset.runs if any(len(t) for t in run.tool_stats.values())})
    if not tools:
        return ""
    return f"from {', '.join(tools)}" + ("" if has_trace(runset) else "; no trace in this run")


def tables_with(runset: RunSet, key: str) -> list[tuple[Run, pd.DataFrame]]:
    return [(run, run.tool_stats[key]) for run in runset.runs if key in run.tool_stats and len(run.tool_stats[key])]


def combine(tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """One ``STATS_COLUMNS`` table from the tables of several processes (module docstring);
    one table is returned as written. Sorted by total descending, ties by name."""
    if len(tables) == 1:
        out = tables[0][list(STATS_COLUMNS)].copy()
    else:
        t = pd.concat([x[list(STATS_COLUMNS)] for x in tables], ignore_index=True)
        n = t["calls"].to_numpy(dtype=np.float64)
        mean = t["avg_ns"].to_numpy(dtype=np.float64)
        sd = t["stddev_ns"].to_numpy(dtype=np.float64)
        # sum of squares of each part: (n - 1) s^2 + n mean^2 (NaN when a part lacks its stddev)
        t["_ss"] = np.where(n > 1, (n - 1) * sd * sd, 0.0) + n * mean * mean
        g = t.groupby("name", sort=False)
        out = pd.DataFrame(
            {
                "calls": g["calls"].sum(),
                "total_ns": g["total_ns"].sum(),
                "min_ns": g["min_ns"].min(skipna=False),
                "max_ns": g["max_ns"].max(skipna=False),
                "_ss": g["_ss"].sum(min_count=1),
                "_nan_sd": g["stddev_ns"].apply(lambda s: bool(s.isna().any())),
            }
        ).reset_index()
        calls = out["calls"].to_numpy(dtype=np.float64)
        out["avg_ns"] = out["total_ns"].to_numpy(dtype=np.float64) / np.where(calls > 0, calls, 1)
        with np.errstate(invalid="ignore"):
            var = (out["_ss"].to_numpy() - calls * out["avg_ns"].to_numpy() ** 2) / np.where(calls > 1, calls - 1, 1)
        out["stddev_ns"] = np.where(out["_nan_sd"].to_numpy(), np.nan, np.where(calls > 1, np.sqrt(np.maximum(var, 0.0)), 0.0))
        grand = int(out["total_ns"].sum())
        out["percent"] = 100.0 * out["total_ns"].to_numpy() / grand if grand else 0.0
        out = out[list(STATS_COLUMNS)]
    out["_neg"] = -out["total_ns"]
    out = out.sort_values(["_neg", "name"], kind="stable").drop(columns="_neg")
    return out.reset_index(drop=True)


def _opt_int(v) -> int | None:
    return None if pd.isna(v) else int(v)


def _opt_float(v) -> float | None:
    return None if pd.isna(v) else round(float(v), 6)


def stats_records(table: pd.DataFrame, limit: int | None = None) -> list[StatsRecord]:
    rows = table if limit is None else table.head(limit)
    return [
        {
            "name": str(r.name),
            "calls": int(r.calls),
            "total_ns": int(r.total_ns),
            "avg_ns": round(float(r.avg_ns), 6),
            "percent": round(float(r.percent), 6),
            "min_ns": _opt_int(r.min_ns),
            "max_ns": _opt_int(r.max_ns),
            "stddev_ns": _opt_float(r.stddev_ns),
        }
        for r in rows.itertuples(index=False)
    ]


def stats_table(runset: RunSet, key: str) -> pd.DataFrame | None:
    """The combined table of ``key`` over the run set's processes (None: no process has it)."""
    found = tables_with(runset, key)
    return combine([t for _, t in found]) if found else None


def stats_tables(runset: RunSet, limit: int | None = None) -> list[StatsTable]:
    """Every statistics table of the run set, in :data:`DOMAIN_OF` order (other keys after, by name)."""
    keys = {k for run in runset.runs for k, t in run.tool_stats.items() if len(t)}
    order = [k for k in DOMAIN_OF if k in keys] + sorted(keys - set(DOMAIN_OF))
    out: list[StatsTable] = []
    for key in order:
        found = tables_with(runset, key)
        table = combine([t for _, t in found])
        tools = sorted({tool_of(run) for run, _ in found})
        out.append(
            {
                "key": key,
                "domain": DOMAIN_OF.get(key, key.removesuffix("_stats").upper()),
                "source": f"{', '.join(tools)} ({key})",
                "processes": len(found),
                "calls": int(table["calls"].sum()),
                "total_ns": int(table["total_ns"].sum()),
                "rows": stats_records(table, limit),
            }
        )
    return out


# --- the same tables recomputed from a trace -----------------------------------------------


def _grouped(names: pd.Series, start: np.ndarray, end: np.ndarray) -> pd.DataFrame:
    """Calls and total ns per name: counted on the category codes (no per-row strings, no
    pandas groupby), then the names as text; rows in category order (callers join on names)."""
    codes = np.asarray(names.cat.codes.to_numpy(), dtype=np.intp)
    size = len(names.cat.categories)
    if len(codes) and codes.min() < 0:  # missing names are not counted (as groupby's observed=True)
        keep = codes >= 0
        codes, start, end = codes[keep], np.asarray(start)[keep], np.asarray(end)[keep]
    calls = np.bincount(codes, minlength=size)
    total = np.zeros(size, dtype=np.int64)
    np.add.at(total, codes, np.asarray(end, dtype=np.int64) - np.asarray(start, dtype=np.int64))
    seen = np.flatnonzero(calls)
    out = pd.DataFrame({"calls": calls[seen].astype(np.int64), "total_ns": total[seen]}, index=pd.Index(names.cat.categories[seen].astype(str), name="name"))
    return out.groupby(level=0, sort=False).sum()


def trace_table(run: Run, key: str) -> pd.DataFrame | None:
    """Calls and total ns per name of the trace rows that ``key``'s statistics describe
    (None: the run has no trace rows of that kind)."""
    if key == KERNEL_STATS:
        k = run.kernels
        return _grouped(k["name"], k["start"].to_numpy(), k["end"].to_numpy()) if len(k) else None
    domain = next((d for d, name in TRACE_API_DOMAIN.items() if API_STATS.get(key) == name), None)
    if domain is None or not len(run.api):
        return None
    # compared on the category codes, and only the three columns used are selected
    hit = (run.api["domain"] == domain).to_numpy()
    if not hit.any():
        return None
    a = run.api
    return _grouped(a["name"][hit], a["start"].to_numpy()[hit], a["end"].to_numpy()[hit])


def trace_checks(runset: RunSet, label_of: dict[int, str]) -> list[StatsCheck]:
    """Names whose statistics disagree with the trace of the same process beyond rounding
    (module docstring). ``label_of``: ``id(run)`` -> process label."""
    out: list[StatsCheck] = []
    for run in runset.runs:
        for key, stats in run.tool_stats.items():
            if key == DOMAIN_STATS or not len(stats):
                continue
            trace = trace_table(run, key)
            if trace is None:
                continue
            s = stats.groupby(stats["name"].astype(str), sort=False)[["calls", "total_ns"]].sum()
            both = s.add_suffix("_s").join(trace.add_suffix("_t"), how="outer").fillna(0)
            calls_s = both["calls_s"].to_numpy(dtype=np.int64)
            calls_t = both["calls_t"].to_numpy(dtype=np.int64)
            tot_s = both["total_ns_s"].to_numpy(dtype=np.int64)
            tot_t = both["total_ns_t"].to_numpy(dtype=np.int64)
            tolerance = np.maximum(np.maximum(calls_s, calls_t), 1e-4 * np.maximum(tot_s, tot_t))
            bad = (calls_s != calls_t) | (np.abs(tot_s - tot_t) > tolerance)
            for i in np.flatnonzero(bad):
                out.append(
                    {
                        "process": label_of.get(id(run), run.meta.label),
                        "key": key,
                        "name": str(both.index[i]),
                        "trace_calls": int(calls_t[i]),
                        "stats_calls": int(calls_s[i]),
                        "trace_total_ns": int(tot_t[i]),
                        "stats_total_ns": int(tot_s[i]),
                    }
                )
    return out
