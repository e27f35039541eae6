"""Tables from the statistics a profiler writes itself (``Run.tool_stats``).

Sources (docs/metrics.md, "Statistics-only runs"): rocprofv3 ``--stats`` files
(``<pid>_kernel_stats.csv``, ``*_api_stats.csv``, ``memory_copy_stats.csv``,
``domain_stats.csv``), rocprofv3 ``--summary`` tables and legacy ``rocprof --stats``
(``results.stats.csv``, ``.hip_stats.csv``, ``.hsa_stats.csv``, ``.copy_stats.csv``).
Every table has the columns of :data:`tui_prof.model.schema.STATS_COLUMNS`.

* A table of one process is shown as the profiler wrote it, its ``percent`` being the
  profiler's own Percentage column (share of that domain's total over the whole run, also
  when the file was cut short).
* A process's **run total** of a domain is TotalDurationNs × 100 / Percentage (summed over
  the rows, the most precise form) when the Percentage column says the rows hold less than
  the whole (Σ Percentage below 100 by more than the column's rounding: the table was cut,
  e.g. a top-N excerpt); else the sum of the rows. Every share divides by it.
* Tables of several processes are combined per name: calls, totals summed, min/max of the
  extremes, average = total / calls, sample stddev pooled exactly from each part's count,
  mean and stddev; ``percent`` = total / the Σ of the processes' run totals × 100.
* :func:`trace_checks` recomputes a stats table from the trace of the same process and
  reports the names whose calls differ, or whose total differs by more than the rounding
  a profiler applies (``max(calls, 0.01% of the total)`` ns).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TypedDict

import numpy as np
import pandas as pd

from tui_prof.analysis.arrays import code_totals
from tui_prof.analysis.runinput import RunInput
from tui_prof.analysis.sections import Record, StatsSection
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
    total_ns: int  # Σ of the rows present
    run_total_ns: int  # the domain's total over the run: Σ of the processes' run totals (module docstring)
    cut: bool  # some process's rows hold less than its total (Σ Percentage < 100)
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


def trace_recorded(runset: RunSet) -> bool:
    """Whether any process recorded trace rows (kernels, API calls or copies)."""
    return any(len(run.kernels) or len(run.api) or len(run.copies) for run in runset.runs)


def source_label(runset: RunSet) -> str:
    """Where the run's statistics tables come from, as the summary and the TUI say it:
    "from rocprofv3 --stats; no trace in this run" ("" when the run has none)."""
    return source_label_of({tool_of(run) for run in runset.runs if any(len(t) for t in run.tool_stats.values())}, trace_recorded(runset))


def source_label_of(tools: Collection[str], traced: bool) -> str:
    """:func:`source_label` from the tools of the processes with statistics (:func:`tool_of`)
    and whether any process recorded trace rows."""
    if not tools:
        return ""
    return f"from {', '.join(sorted(set(tools)))}" + ("" if traced else "; no trace in this run")


def tables_with(runset: RunSet, key: str) -> list[tuple[Run, pd.DataFrame]]:
    return [(run, run.tool_stats[key]) for run in runset.runs if key in run.tool_stats and len(run.tool_stats[key])]


def exact_sum(values: pd.Series) -> int:
    """The sum of integer ``values`` as a Python int: exact, never wrapped past int64 (a
    hostile stats file's counts summed to -9,223,372,036,854,775,808 dispatches)."""
    return sum(int(v) for v in values.tolist() if v == v)


def exact_sums(values: pd.Series, keys: pd.Series) -> pd.Series:
    """Per key of ``keys``, :func:`exact_sum` of ``values`` (object dtype when a sum leaves
    int64, int64 otherwise)."""
    sums = values.astype(object).groupby(keys, sort=False).sum()
    limit = 2**63 - 1
    if all(isinstance(v, int) and -limit - 1 <= v <= limit for v in sums.tolist()):
        return sums.astype(np.int64)
    return sums


def percent_sum(table: pd.DataFrame) -> float | None:
    """Σ of the table's Percentage column (None: the file has no Percentage)."""
    pct = table["percent"].to_numpy(dtype=np.float64)
    known = pct[np.isfinite(pct)]
    return float(known.sum()) if len(known) else None


def is_cut(table: pd.DataFrame) -> bool:
    """Whether the rows hold less than the run's total (module docstring): Σ Percentage
    below 100 by more than half a unit of the column's last printed digit per row
    (rocprofv3 prints two decimals; legacy rocprof more)."""
    total = percent_sum(table)
    return total is not None and 0.0 < total < 100.0 - max(0.01, 0.005 * len(table))


def run_total_ns(table: pd.DataFrame) -> int:
    """One process's total of the table's domain over the whole run (module docstring)."""
    rows = exact_sum(table["total_ns"])
    if not is_cut(table):
        return rows
    pct = table["percent"].to_numpy(dtype=np.float64)
    known = np.isfinite(pct) & (pct > 0)
    ns = table["total_ns"].to_numpy(dtype=np.float64)[known]
    return max(rows, int(round(float(ns.sum()) * 100.0 / float(pct[known].sum()))))


def combine(tables: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """One ``STATS_COLUMNS`` table from the tables of several processes (module docstring);
    one table is returned as written. Sorted by total descending, ties by name."""
    if len(tables) == 1:
        out = tables[0][list(STATS_COLUMNS)].copy()
    else:
        # the frames are concatenated whole and the columns picked once (one selection, not one per process)
        t = pd.concat(tables, ignore_index=True)[list(STATS_COLUMNS)]
        n = t["calls"].to_numpy(dtype=np.float64)
        mean = t["avg_ns"].to_numpy(dtype=np.float64)
        sd = t["stddev_ns"].to_numpy(dtype=np.float64)
        # sum of squares of each part: (n - 1) s^2 + n mean^2 (NaN when a part lacks its stddev)
        t["_ss"] = np.where(n > 1, (n - 1) * sd * sd, 0.0) + n * mean * mean
        g = t.groupby("name", sort=False)
        out = pd.DataFrame(
            {
                "calls": exact_sums(t["calls"], t["name"]),
                "total_ns": exact_sums(t["total_ns"], t["name"]),
                "min_ns": g["min_ns"].min(skipna=False),
                "max_ns": g["max_ns"].max(skipna=False),
                "_ss": g["_ss"].sum(min_count=1),
                "_nan_sd": t["stddev_ns"].isna().groupby(t["name"], sort=False).any(),
            }
        ).reset_index()
        calls = out["calls"].to_numpy(dtype=np.float64)
        out["avg_ns"] = out["total_ns"].to_numpy(dtype=np.float64) / np.where(calls > 0, calls, 1)
        with np.errstate(invalid="ignore"):
            var = (out["_ss"].to_numpy() - calls * out["avg_ns"].to_numpy() ** 2) / np.where(calls > 1, calls - 1, 1)
        out["stddev_ns"] = np.where(out["_nan_sd"].to_numpy(), np.nan, np.where(calls > 1, np.sqrt(np.maximum(var, 0.0)), 0.0))
        grand = sum(run_total_ns(part) for part in tables)
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
        parts = [t for _, t in found]
        table = combine(parts)
        tools = sorted({tool_of(run) for run, _ in found})
        out.append(
            {
                "key": key,
                "domain": DOMAIN_OF.get(key, key.removesuffix("_stats").upper()),
                "source": f"{', '.join(tools)} ({key})",
                "processes": len(found),
                "calls": exact_sum(table["calls"]),
                "total_ns": exact_sum(table["total_ns"]),
                "run_total_ns": sum(run_total_ns(t) for t in parts),
                "cut": any(is_cut(t) for t in parts),
                "rows": stats_records(table, limit),
            }
        )
    return out


# --- the same tables recomputed from a trace -----------------------------------------------


def _trace_counts(run: Run, key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Names (text), calls and total ns per name of the trace rows that ``key``'s statistics
    describe (None: the run has no trace rows of that kind), counted on the category codes
    (no per-row strings); a name repeats when two categories read as the same text."""
    if key == KERNEL_STATS:
        k = run.kernels
        if not len(k):
            return None
        names, start, end = k["name"], k["start"].to_numpy(), k["end"].to_numpy()
    else:
        domain = next((d for d, name in TRACE_API_DOMAIN.items() if API_STATS.get(key) == name), None)
        if domain is None or not len(run.api):
            return None
        a = run.api
        hit = (a["domain"] == domain).to_numpy()
        if not hit.any():
            return None
        names, start, end = a["name"][hit], a["start"].to_numpy()[hit], a["end"].to_numpy()[hit]
    codes = np.asarray(names.cat.codes.to_numpy(), dtype=np.intp)
    size = len(names.cat.categories)
    if len(codes) and codes.min() < 0:  # missing names are not counted (as groupby's observed=True)
        keep = codes >= 0
        codes, start, end = codes[keep], np.asarray(start)[keep], np.asarray(end)[keep]
    calls, total = code_totals(codes, np.asarray(end, dtype=np.int64) - np.asarray(start, dtype=np.int64), size)
    seen = np.flatnonzero(calls)
    return np.asarray(names.cat.categories[seen].astype(str), dtype=object), calls[seen].astype(np.int64), total[seen]


def trace_checks(runset: RunSet, label_of: dict[int, str]) -> list[StatsCheck]:
    """Names whose statistics disagree with the trace of the same process beyond rounding
    (module docstring). ``label_of``: ``id(run)`` -> process label.

    Every (process, statistics file) pair is compared in one grouping on (pair, name), so
    a run of many processes costs one pandas pass, not one per process; a pair's names come
    out in text order, as an outer join of its two tables orders them."""
    pairs: list[tuple[Run, str]] = []
    s_pair: list[np.ndarray] = []
    s_cols: dict[str, list[pd.Series]] = {"name": [], "calls_s": [], "total_ns_s": []}
    t_pair: list[np.ndarray] = []
    t_cols: dict[str, list[np.ndarray]] = {"name": [], "calls_t": [], "total_ns_t": []}
    for run in runset.runs:
        for key, stats in run.tool_stats.items():
            if key == DOMAIN_STATS or not len(stats):
                continue
            trace = _trace_counts(run, key)
            if trace is None:
                continue
            pair = len(pairs)
            pairs.append((run, key))
            s_pair.append(np.full(len(stats), pair, dtype=np.int64))
            s_cols["name"].append(stats["name"].astype(str))
            s_cols["calls_s"].append(stats["calls"])
            s_cols["total_ns_s"].append(stats["total_ns"])
            t_pair.append(np.full(len(trace[0]), pair, dtype=np.int64))
            for col, values in zip(t_cols, trace):
                t_cols[col].append(values)
    if not pairs:
        return []
    # per pair and name: the stats side summed (NaN counts as 0, as groupby's sum), the trace
    # side as counted; a name on one side only reads 0 on the other
    s_frame = pd.DataFrame({"pair": np.concatenate(s_pair), **{c: pd.concat(v, ignore_index=True) for c, v in s_cols.items()}})
    t_frame = pd.DataFrame({"pair": np.concatenate(t_pair), **{c: np.concatenate(v) for c, v in t_cols.items()}})
    s = s_frame.groupby(["pair", "name"], sort=False)[["calls_s", "total_ns_s"]].sum()
    t = t_frame.groupby(["pair", "name"], sort=False)[["calls_t", "total_ns_t"]].sum()
    both = s.join(t, how="outer").fillna(0).sort_index()
    calls_s = both["calls_s"].to_numpy(dtype=np.int64)
    calls_t = both["calls_t"].to_numpy(dtype=np.int64)
    tot_s = both["total_ns_s"].to_numpy(dtype=np.int64)
    tot_t = both["total_ns_t"].to_numpy(dtype=np.int64)
    tolerance = np.maximum(np.maximum(calls_s, calls_t), 1e-4 * np.maximum(tot_s, tot_t))
    bad = (calls_s != calls_t) | (np.abs(tot_s - tot_t) > tolerance)
    out: list[StatsCheck] = []
    if not bad.any():
        return out
    pair_of = both.index.get_level_values("pair")
    name_of = both.index.get_level_values("name")
    for i in np.flatnonzero(bad):
        run, key = pairs[int(pair_of[i])]
        out.append(
            {
                "process": label_of.get(id(run), run.meta.label),
                "key": key,
                "name": str(name_of[i]),
                "trace_calls": int(calls_t[i]),
                "stats_calls": int(calls_s[i]),
                "trace_total_ns": int(tot_t[i]),
                "stats_total_ns": int(tot_s[i]),
            }
        )
    return out


# --- the summary sections: stats-only runs and the trace cross-check ---


# findings that need a trace (a statistics-only run names them in ``stats.needs_trace``)
TRACE_FINDINGS = ("gpu-idle", "idle-sync", "launch-bound", "sync-overhead", "sync-after-launch", "slow-copy", "low-occupancy")


def stats_section(runset: RunSet, inputs: Sequence[RunInput], top: int | None) -> StatsSection:
    """Every statistics table, where it came from, and the names on which it disagrees with
    the trace of the same process."""
    tables = stats_tables(runset, top)
    checks = trace_checks(runset, {id(r.run): r.label for r in inputs})
    return stats_section_of(tables, checks, source_label(runset), trace_recorded(runset))


def stats_section_of(tables: Sequence[StatsTable], checks: Sequence[StatsCheck], source: str, traced: bool) -> StatsSection:
    """The ``stats`` section from its tables (:func:`stats_tables`), its checks (:func:`trace_checks`),
    the tables' source (:func:`source_label`) and whether any process recorded trace rows."""
    return {
        "source": source if tables else "",
        "tables": [dict(t) for t in tables],
        "checks": [dict(c) for c in checks],
        "needs_trace": [] if traced or not tables else list(TRACE_FINDINGS),
    }


def cut_warnings(tables: Sequence[Record]) -> list[str]:
    """One warning per statistics table whose rows hold less than the run's total."""
    return [
        f"{t['source']}: the table is cut (its rows hold {100.0 * t['total_ns'] / t['run_total_ns']:.1f}% of the run's "
        f"{t['domain']} time by its Percentage column); shares divide by the run's total"
        for t in tables
        if t.get("cut") and t.get("run_total_ns")
    ]


def stats_warnings(checks: Sequence[Record]) -> list[str]:
    """One warning per (process, statistics file) whose numbers disagree with the trace."""
    out = []
    groups: dict[tuple[str, str], list[Record]] = {}
    for c in checks:
        groups.setdefault((c["process"], c["key"]), []).append(c)
    for (process, key), rows in groups.items():
        first = rows[0]
        out.append(
            f"{process}: {key} disagrees with the trace of the same run on {len(rows)} name(s), e.g. "
            f"{first['name'][:80]}: trace {first['trace_calls']} calls / {first['trace_total_ns']} ns, "
            f"stats {first['stats_calls']} calls / {first['stats_total_ns']} ns (a file cut short or dropped records?)"
        )
    return out
