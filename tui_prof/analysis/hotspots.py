"""Kernel hotspots: time per kernel name (or any other grouping column).

Statistics follow rocprofv3's own ``*_stats.csv`` (``statistics.hpp``): total, average,
min, max and the *sample* standard deviation (n-1); percent is of the summed kernel time.
Durations are ``end - start`` in ns, exactly as the profiler recorded them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from tui_prof.analysis.names import CategoryRules, kernel_categories, normalized_names
from tui_prof.analysis.sections import HotspotRecord
from tui_prof.model import Run, RunSet
from tui_prof.model.schema import concat_tables

HOTSPOT_COLUMNS = ("name", "calls", "total_ns", "avg_ns", "median_ns", "min_ns", "max_ns", "stddev_ns", "percent")


def all_kernels(source: Run | RunSet) -> pd.DataFrame:
    """The kernels table of a run, or of every run of a run set concatenated."""
    if isinstance(source, Run):
        return source.kernels
    return concat_tables("kernels", [run.kernels for run in source.runs])


def group_key(kernels: pd.DataFrame, by: str, rules: CategoryRules | None = None) -> pd.Series:
    """The grouping column for ``by``: a kernels column, or "normalized" / "category"."""
    if by == "normalized":
        return normalized_names(kernels["name"])
    if by == "category":
        return kernel_categories(kernels["name"], rules)
    return kernels[by]


def hotspots(
    kernels: pd.DataFrame,
    by: str = "name",
    wall_ns: int | None = None,
    rules: CategoryRules | None = None,
    dur_order: np.ndarray | None = None,
    key: pd.Series | None = None,
    processes: ProcessOrder | None = None,
) -> pd.DataFrame:
    """One row per distinct value of ``by``, sorted by total time descending (ties by name).

    Columns: name, calls, total_ns, avg_ns, median_ns, min_ns, max_ns, stddev_ns, percent
    (of summed kernel time); with ``wall_ns`` also ``pct_wall`` (total / wall * 100).
    ``by``: "name", "normalized" (template args, argument list, clone suffix stripped),
    "category" (``rules``: :class:`~tui_prof.analysis.names.CategoryRules`), "agent",
    "pid" or any other kernels column. ``dur_order`` (``duration_order(kernels)``) may be
    passed to share the sort between several groupings. ``key`` (one value per kernel row,
    e.g. analysis.operators' operator or op-first category of each kernel) groups instead
    of ``by``. ``processes`` (``process_order(kernels, run_codes(runset))``; for one run's
    kernels ``process_order(kernels)``) gives the process of each kernel behind ``pct_wall``
    and may be shared between several groupings; it is required with ``wall_ns`` (when
    there are kernels): a kernels table does not say which run a row came from, and taking
    each pid as one process would unite the kernels of processes that share a pid (ranks on
    different hosts).
    """
    columns = list(HOTSPOT_COLUMNS) + (["pct_wall"] if wall_ns is not None else [])
    if kernels.empty:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in columns}).astype(
            {"name": "object", "calls": "int64", "total_ns": "int64", "min_ns": "int64", "max_ns": "int64"}
        )
    if wall_ns is not None and processes is None:
        raise TypeError("hotspots(wall_ns=...) needs processes=process_order(kernels, run_codes(runset)): a pid is not a process")
    dur = kernels["end"].to_numpy() - kernels["start"].to_numpy()
    key = group_key(kernels, by, rules) if key is None else key.reset_index(drop=True)
    if isinstance(key.dtype, pd.CategoricalDtype):
        codes = key.cat.codes.to_numpy()
        labels = np.asarray(key.cat.categories, dtype=object)
    else:
        codes, labels = pd.factorize(key, sort=False)
        labels = np.asarray(labels, dtype=object)
    ngroups = len(labels)
    codes = codes.astype(np.int16 if ngroups < 2**15 else np.int32)
    order = duration_order(kernels) if dur_order is None else dur_order
    # stable sort by group of the duration-sorted rows: each group's durations come out sorted
    if len(codes) and (codes == codes[0]).all():  # one group (one GPU, one process): as sorted
        final = order
    else:
        final = order[np.argsort(codes[order], kind="stable")]
    sorted_codes = codes[final]
    sorted_dur = dur[final]
    if ngroups == 0 or sorted_codes[0] < 0:  # rows without a group sort first (code -1): drop them
        valid = sorted_codes >= 0
        sorted_codes, sorted_dur = sorted_codes[valid], sorted_dur[valid]
    counts = np.bincount(sorted_codes, minlength=ngroups)
    present = np.nonzero(counts)[0]
    counts = counts[present]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    ends = starts + counts
    totals = np.add.reduceat(sorted_dur, starts)
    means = totals / counts
    lo_mid = sorted_dur[starts + (counts - 1) // 2]
    hi_mid = sorted_dur[starts + counts // 2]
    median = (lo_mid.astype(np.float64) + hi_mid.astype(np.float64)) / 2.0
    dev = sorted_dur.astype(np.float64)  # squared deviations from the group mean, in place
    dev -= np.repeat(means, counts)
    dev *= dev
    ss = np.add.reduceat(dev, starts)
    del dev
    with np.errstate(divide="ignore", invalid="ignore"):
        std = np.where(counts > 1, np.sqrt(ss / np.maximum(counts - 1, 1)), 0.0)
    grand_total = float(sorted_dur.sum())
    table = pd.DataFrame(
        {
            # str per label in an object array: memory grows with the sum of the names'
            # lengths (``astype(str)`` would make a fixed-width array of count x longest)
            "name": np.array([str(label) for label in labels[present]], dtype=object),
            "calls": counts.astype(np.int64),
            "total_ns": totals.astype(np.int64),
            "avg_ns": means,
            "median_ns": median,
            "min_ns": sorted_dur[starts].astype(np.int64),
            "max_ns": sorted_dur[ends - 1].astype(np.int64),
            "stddev_ns": std,
        }
    )
    table["percent"] = 100.0 * table["total_ns"] / grand_total if grand_total else 0.0
    table = table.sort_values(["total_ns", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)
    if wall_ns is not None:
        busy = group_busy(kernels, codes, ngroups, processes)
        if busy is None:  # no two kernels of a process overlap: each group's busy time is its total
            table["pct_wall"] = 100.0 * table["total_ns"] / wall_ns if wall_ns > 0 else 0.0
        else:
            # keyed by the row's name as the table writes it (str: a pid label is an int)
            by_label = dict(zip([str(label) for label in labels[present]], busy[present].tolist(), strict=True))
            table["pct_wall"] = 100.0 * table["name"].map(lambda n: by_label.get(n, 0)).astype(np.float64) / wall_ns if wall_ns > 0 else 0.0
    return table[columns]


def run_codes(runset: RunSet) -> np.ndarray:
    """The run (process) index of each row of ``all_kernels(runset)``: runs one after another."""
    sizes = [len(run.kernels) for run in runset.runs]
    return np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)


@dataclass(frozen=True)
class ProcessOrder:
    """The kernels' process of each row and their order by (process, start), as every
    grouping's busy time needs them: ``process_codes`` (0.. per distinct process),
    ``in_order`` (rows already sorted by process, then start), ``overlapping`` (some kernel
    starts before an earlier kernel of its process ended)."""

    process_codes: np.ndarray
    in_order: bool
    overlapping: bool


def process_order(kernels: pd.DataFrame, runs: np.ndarray | None = None) -> ProcessOrder:
    """:class:`ProcessOrder` of ``kernels`` (non-empty). A process is a (run, pid) pair:
    ``runs`` (:func:`run_codes`) is the run of each row; without it, one run. Two runs with
    the same pid (ranks on different hosts, whose clocks cannot be compared) are two
    processes, as the cluster partials count them."""
    start = kernels["start"].to_numpy().astype(np.int64, copy=False)
    end = kernels["end"].to_numpy().astype(np.int64, copy=False)
    codes = pd.factorize(kernels["pid"].to_numpy())[0].astype(np.int64)
    if runs is not None:
        if len(runs) != len(codes):
            raise ValueError(f"process_order: {len(runs)} run codes for {len(codes)} kernels")
        if len(runs) and (runs != runs[0]).any():
            codes = pd.factorize(runs.astype(np.int64) * (int(codes.max()) + 1) + codes)[0].astype(np.int64)
    # the kernels table is each run's kernels in start order, runs one after another: then a
    # stable sort by an integer key keeps start order within each key (no lexsort needed)
    in_order = bool(((codes[1:] > codes[:-1]) | ((codes[1:] == codes[:-1]) & (start[1:] >= start[:-1]))).all())
    order = np.arange(len(start)) if in_order else np.lexsort((start, codes))
    return ProcessOrder(codes, in_order, _overlaps(codes[order], start[order], end[order]))


def group_busy(kernels: pd.DataFrame, codes: np.ndarray, ngroups: int, processes: ProcessOrder | None = None) -> np.ndarray | None:
    """Per group code the time during which at least one of its kernels runs, summed over
    processes (the union of the group's kernel intervals per process); None when no two
    kernels of one process overlap (then it equals each group's total time). ``pct_wall``
    takes it as its part, so kernels running side by side on several streams or GPUs count
    once and the share stays within the process time (docs/metrics.md, Aggregation).
    ``processes``: ``process_order(kernels, runs)``; when not given, ``process_order(kernels)``
    (one process per pid)."""
    start = kernels["start"].to_numpy().astype(np.int64, copy=False)
    end = kernels["end"].to_numpy().astype(np.int64, copy=False)
    if not len(start):
        return None
    if processes is None:
        processes = process_order(kernels)
    if not processes.overlapping:
        return None
    process_codes, in_order = processes.process_codes, processes.in_order
    valid = codes >= 0
    width = int(process_codes.max()) + 1
    seg = codes.astype(np.int64) * width + process_codes
    if in_order:  # numpy's stable sort is a radix sort on 16-bit keys
        top = int(seg.max())
        o = np.argsort(seg.astype(np.int16 if top < (1 << 15) else np.int32 if top < (1 << 31) else np.int64), kind="stable")
    else:
        o = np.lexsort((start, seg))
    o = o[valid[o]]
    ss, ee, sg = start[o], end[o], seg[o]
    reach = _segment_cummax(sg, ee)
    first = np.ones(len(ss), dtype=bool)
    first[1:] = sg[1:] != sg[:-1]
    hole = np.zeros(len(ss), dtype=np.int64)
    hole[1:] = np.where(first[1:], 0, np.maximum(ss[1:] - reach[:-1], 0))
    last = np.ones(len(ss), dtype=bool)
    last[:-1] = first[1:]
    seg_union = reach[last] - ss[first] - np.add.reduceat(hole, np.flatnonzero(first))
    out = np.zeros(ngroups, dtype=np.int64)
    np.add.at(out, sg[first] // width, seg_union)  # one entry per (group, process): few
    return out


def _segment_cummax(seg: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Running max of ``values`` restarting at each change of ``seg`` (sorted, int64)."""
    first = np.ones(len(seg), dtype=bool)
    first[1:] = seg[1:] != seg[:-1]
    rank = np.cumsum(first) - 1
    lo, hi = int(values.min()), int(values.max())
    span = hi - lo + 1  # Python ints: hostile times near the int64 limits do not overflow
    if span < (1 << 62) and int(rank[-1]) < (1 << 62) // span:  # one accumulate over rank-offset keys
        rel = values - np.int64(lo)
        offset = rank * span
        return np.maximum.accumulate(offset + rel) - offset + np.int64(lo)
    return pd.Series(values).groupby(seg, sort=False).cummax().to_numpy()


def _overlaps(pid: np.ndarray, start: np.ndarray, end: np.ndarray) -> bool:
    """Whether a kernel starts before an earlier kernel of the same process ended (rows
    sorted by process code ``pid``, then start)."""
    reach = _segment_cummax(pid, end)
    return bool(((pid[1:] == pid[:-1]) & (start[1:] < reach[:-1])).any())


def duration_order(kernels: pd.DataFrame) -> np.ndarray:
    """Row order of ``kernels`` by duration: shared by several hotspot groupings."""
    return np.argsort(kernels["end"].to_numpy() - kernels["start"].to_numpy())


def hotspot_records(table: pd.DataFrame, limit: int | None = None) -> list[HotspotRecord]:
    """Hotspot rows as JSON-ready dicts (ints stay ints, floats rounded to 0.01 ns)."""
    rows = table if limit is None else table.head(limit)
    out: list[HotspotRecord] = []
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
        if "pct_wall" in table.columns:
            out[-1]["pct_wall"] = round(float(row.pct_wall), 4)
    return out


def kernel_time_ns(kernels: pd.DataFrame) -> int:
    """Sum of kernel durations in ns (overlapping kernels counted once each)."""
    return int(np.sum(kernels["end"].to_numpy() - kernels["start"].to_numpy())) if len(kernels) else 0
