"""Ranks of a multi-process run: the rank table, communication and stragglers.

One row per process (a rank of a distributed job, or one process of ``srun --ntasks=N
rocprofv3 …``): its GPU time split into compute, communication and copies, its idle and
sync time, and how long it waited in collectives for the slowest rank
(docs/metrics.md, "Ranks").

* Communication kernels are the ``communication`` category of the category rules (NCCL,
  RCCL, MSCCL kernels and the collective names); copies are the copies plus the
  ``copy/fill`` kernels; every other kernel is compute. Each time is the **union** of that
  class's intervals on the process's GPUs, so parts stay within the GPU busy time.
* Overlap = time in which a communication kernel runs while another kernel runs on the
  same GPU (copy/fill kernels included: they run on the compute units), per GPU, summed;
  ``overlap_pct`` of the communication time (HTA's communication/computation overlap).
* A collective instance is the k-th communication kernel of one type (AllReduce, …) on
  every rank that has a k-th. Its ranks end together (a collective completes on all
  ranks at once), so the rank that arrived last spends the least time in it: that rank is
  the instance's straggler, and every rank's **wait** is its time in the instance beyond the
  fastest (shortest) one. Durations are on each rank's own clock, so this needs no common
  clock between hosts.
* Where a Kineto trace records the collectives' args (the kernels' ``collective``,
  ``coll_bytes``, ``coll_ranks``), the type comes from them and each type gets its message
  bytes, algorithm bandwidth and NCCL-tests' bus bandwidth (:func:`bandwidth`).
* The timeline's rank lanes lay every process on one axis (:func:`rank_offsets`): as they
  are when all share a clock, else each shifted so that its first collective starts with
  the lowest rank's (docs/metrics.md, "Rank lanes on the timeline").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.analysis import aggregate, hostapi
from tui_prof.analysis.names import CategoryRules, rule_text, unique_strings
from tui_prof.analysis.sections import CollectiveBandwidth, CollectiveInstance, CollectiveType, CommunicationSection, RankRecord, StragglerSection
from tui_prof.analysis.stats import KERNEL_STATS, run_total_ns
from tui_prof.model import Run
from tui_prof.model.schema import category_array, column_array

COMMUNICATION = "communication"
COPY = "copy/fill"
LISTED_INSTANCES = 50

# collective type from a kernel name (matched without the parameter list, case-insensitive):
# order matters, ReduceScatter and AllReduce before Reduce
COLLECTIVE_PATTERNS: tuple[tuple[str, re.Pattern], ...] = tuple(
    (t, re.compile(p, re.IGNORECASE))
    for t, p in (
        ("ReduceScatter", r"reduce_?scatter"),
        ("AllReduce", r"all_?reduce|cross_device_reduce|custom_ar"),
        ("AllGather", r"all_?gather"),
        ("AllToAll", r"all_?to_?all"),
        ("Broadcast", r"broadcast|bcast"),
        ("SendRecv", r"send_?recv|_send|_recv|sendrecv"),
        ("Reduce", r"reduce"),
    )
)
UNKNOWN_TYPE = "unknown"  # RCCL's rccl_main_kernel and the like do not name their collective
RCCL_API = re.compile(r"^(nccl|rccl)", re.IGNORECASE)

# collective type from the framework's name of the collective (Kineto "Collective name":
# allreduce, _allgather_base, reduce_scatter_tensor_coalesced, all_to_all, send, ...);
# ReduceScatter/AllReduce/AllGather before Reduce/Gather, and "barrier", "wait" and the
# like are unknown (the kernel name decides then)
ARG_PATTERNS: tuple[tuple[str, re.Pattern], ...] = tuple(
    (t, re.compile(p, re.IGNORECASE))
    for t, p in (
        ("ReduceScatter", r"reduce_?scatter"),
        ("AllReduce", r"all_?reduce"),
        ("AllGather", r"all_?gather"),
        ("AllToAll", r"all_?to_?all"),
        ("Broadcast", r"broadcast"),
        ("SendRecv", r"^_?(send|recv)|sendrecv"),
        ("Gather", r"gather"),
        ("Scatter", r"scatter"),
        ("Reduce", r"reduce"),
    )
)


def arg_collective_type(name: str) -> str:
    """The collective type of a framework's collective name (``UNKNOWN_TYPE`` when it names none)."""
    for kind, pattern in ARG_PATTERNS:
        if pattern.search(name):
            return kind
    return UNKNOWN_TYPE


def bus_factor(kind: str, ranks: int) -> float | None:
    """NCCL-tests' bus-bandwidth factor of a collective over ``ranks`` ranks (doc/PERFORMANCE.md
    and src/*.cu of NVIDIA/nccl-tests): AllReduce 2(n-1)/n; ReduceScatter, AllGather, AllToAll,
    Gather, Scatter (n-1)/n; Broadcast, Reduce, SendRecv 1. None when the type is unknown, or
    the factor needs n and it is unknown (< 1)."""
    if kind in ("Broadcast", "Reduce", "SendRecv"):
        return 1.0
    if ranks < 1:
        return None
    if kind == "AllReduce":
        return 2.0 * (ranks - 1) / ranks
    if kind in ("ReduceScatter", "AllGather", "AllToAll", "Gather", "Scatter"):
        return (ranks - 1) / ranks
    return None


def collective_type(name: str) -> str:
    """The collective a communication kernel performs, from its name (``UNKNOWN_TYPE`` when
    the name does not say)."""
    head = rule_text(name)
    for kind, pattern in COLLECTIVE_PATTERNS:
        if pattern.search(head):
            return kind
    return UNKNOWN_TYPE


def collective_types(names: pd.Series, rows: np.ndarray) -> np.ndarray:
    """:func:`collective_type` of the kernel names at ``rows`` (a categorical column: each
    distinct name classified once)."""
    if not len(rows):  # no collective (most processes of a many-process run): nothing to classify
        return np.array([], dtype=object)
    if isinstance(names.dtype, pd.CategoricalDtype):
        values = names.array  # the Categorical: no ``.cat`` accessor per process
        kinds = np.array([collective_type(str(x)) for x in values.categories] + [UNKNOWN_TYPE], dtype=object)
        codes = values.codes[rows]
        return kinds[np.where(codes >= 0, codes, len(kinds) - 1)]
    return np.array([collective_type(str(x)) for x in names.to_numpy()[rows]], dtype=object)


def collective_kinds(kernels: pd.DataFrame, rows: np.ndarray) -> np.ndarray:
    """The type of the collectives at kernel ``rows`` (object array): the collective's own
    args where the trace records them (Kineto's ``collective``), else the kernel name; one
    lookup per distinct name."""
    if not len(rows):  # no collective (most processes of a many-process run): nothing to look up
        return np.array([], dtype=object)
    types = _map_category(kernels["name"], collective_type, rows)
    if "collective" in kernels.columns:
        by_arg = _map_category(kernels["collective"], arg_collective_type, rows)
        types = np.where(by_arg != UNKNOWN_TYPE, by_arg, types)
    return types


def collective_rows(kernels: pd.DataFrame, rules: CategoryRules, categories: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The one rule of what a process's collectives are: its communication kernels
    (``categories``: each kernel's category, operator first, as :class:`RankCore` takes them;
    None: by kernel name) as kernel rows in start order, and their types
    (:func:`collective_kinds`). The k-th of a type is the process's part of instance k."""
    if not len(kernels):
        return np.zeros(0, dtype=np.int64), np.array([], dtype=object)
    is_comm = categories == COMMUNICATION if categories is not None and len(categories) == len(kernels) else communication_mask(kernels, rules)
    rows = np.flatnonzero(is_comm)
    rows = rows[np.argsort(column_array(kernels, "start")[rows], kind="stable")]
    return rows, collective_kinds(kernels, rows)


def _overlap(a_s: np.ndarray, a_e: np.ndarray, b_s: np.ndarray, b_e: np.ndarray) -> int:
    """|A ∩ B| for two sets of intervals: |∪A| + |∪B| − |∪(A ∪ B)|."""
    if not len(a_s) or not len(b_s):
        return 0
    both_s = np.concatenate([a_s, b_s])
    both_e = np.concatenate([a_e, b_e])
    return aggregate.interval_union(a_s, a_e) + aggregate.interval_union(b_s, b_e) - aggregate.interval_union(both_s, both_e)


class RankCore:
    """What one process contributes to the rank table and the collective instances."""

    def __init__(self, run: Run, label: str, wall_ns: int, classes: np.ndarray, rules: CategoryRules, categories: np.ndarray | None = None):
        """``categories``: each kernel's category, operator first (``kernel_categories_of``,
        the summary's category table); None: by kernel name (``rules``)."""
        self.run = run
        self.label = label
        self.wall_ns = wall_ns
        k = run.kernels
        ks, ke = column_array(k, "start"), column_array(k, "end")  # no Series per column: thousands of processes
        agent = column_array(k, "agent")
        if categories is not None and len(categories) == len(k):
            is_comm, is_copy = categories == COMMUNICATION, categories == COPY
        elif len(k):
            column = category_array(k, "name")
            is_comm = _per_category(column, lambda n: rules.classify(n) == COMMUNICATION)
            is_copy = _per_category(column, lambda n: rules.classify(n) == COPY)
        else:
            is_comm = is_copy = np.zeros(0, dtype=bool)
        is_compute = ~(is_comm | is_copy)
        no_copies = np.zeros(0, dtype=np.int64)  # an empty copy table: no pandas step
        cs, ce = (run.copies["start"].to_numpy(), run.copies["end"].to_numpy()) if len(run.copies) else (no_copies, no_copies)
        self.compute_ns = aggregate.interval_union(ks, ke, is_compute)
        self.communication_ns = aggregate.interval_union(ks, ke, is_comm)
        copy_rows = np.flatnonzero(is_copy)
        self.copy_ns = aggregate.interval_union(np.concatenate([ks.take(copy_rows), cs]), np.concatenate([ke.take(copy_rows), ce]))
        self.busy_ns = aggregate.interval_union(np.concatenate([ks, cs]), np.concatenate([ke, ce]))
        starts = np.concatenate([ks, cs])
        self.gpu_span_ns = int(np.concatenate([ke, ce]).max()) - int(starts.min()) if len(starts) else 0  # Python ints: no int64 overflow
        # the compute side of the overlap is every other kernel, copy/fill kernels included
        # (they run on the GPU's compute units; HTA's definition, in which only the copy
        # engine's Memcpy/Memset events are apart)
        other = ~is_comm
        self.overlap_ns = sum(
            _overlap(ks[is_comm & (agent == a)], ke[is_comm & (agent == a)], ks[other & (agent == a)], ke[other & (agent == a)])
            for a in np.unique(agent[is_comm])
        )
        # no communication kernel: nothing overlaps it (and no gather of the compute kernels)
        self.compute_exposed_ns = self.compute_ns - (_overlap(ks[is_compute], ke[is_compute], ks[is_comm], ke[is_comm]) if is_comm.any() else 0)
        api = run.api
        sync = hostapi.sync_mask(classes) if len(api) else np.zeros(0, dtype=bool)
        self.sync_ns = aggregate.interval_union(api["start"].to_numpy(), api["end"].to_numpy(), sync) if len(api) else 0
        if len(api):
            rccl = _per_category(api["name"], lambda n: bool(RCCL_API.match(n))) | _per_category(api["domain"], lambda d: d in ("rccl", "nccl"))
            self.api_calls = int(rccl.sum())
            self.api_ns = aggregate.interval_union(api["start"].to_numpy(), api["end"].to_numpy(), rccl)
        else:
            self.api_calls = self.api_ns = 0
        # the collectives in start order with their types (:func:`collective_kinds`) and
        # message bytes, group sizes (-1: not recorded) and starts (the process's own clock)
        rows = np.flatnonzero(is_comm)
        rows = rows[np.argsort(ks[rows], kind="stable")]
        self.coll_types = collective_kinds(k, rows)
        has_args = len(rows) and "collective" in k.columns
        self.coll_bytes = k["coll_bytes"].to_numpy()[rows].astype(np.int64) if has_args else np.full(len(rows), -1, dtype=np.int64)
        self.coll_ranks = k["coll_ranks"].to_numpy()[rows].astype(np.int64) if has_args else np.full(len(rows), -1, dtype=np.int64)
        self.coll_start = ks[rows].astype(np.int64)
        self.coll_dur = (ke[rows] - ks[rows]).astype(np.int64)
        self.collectives = len(rows)
        dur = ke - ks
        if len(k):
            names = category_array(k, "name")  # the Categorical: no Series per access
            codes = names.codes
            valid = codes >= 0
            totals = np.bincount(codes[valid], weights=dur[valid], minlength=len(names.categories))
            top = int(np.argmax(totals)) if len(totals) else 0
            self.top_kernel: str | None = str(names.categories[top]) if len(totals) else None
            self.top_kernel_pct = aggregate.pct(int(totals[top]), int(dur.sum())) if len(totals) else 0.0
        else:
            self.top_kernel, self.top_kernel_pct = None, 0.0
        self.source = "trace" if len(k) else "none"
        self.dispatches = int(len(k))
        stats_table = run.tool_stats.get(KERNEL_STATS)
        if not len(k) and stats_table is not None and len(stats_table):
            _stats_core(self, stats_table, rules)
        gpu_ids = sorted(
            {int(a) for a in np.unique(agent)}
            | {int(a) for a in (run.copies["dst_agent"].to_numpy() if len(run.copies) else ()) if a >= 0 and run.agent(int(a))}
        )
        names = []
        for gid in gpu_ids:
            a = run.agent(gid)
            if a is not None and a.type == "GPU":
                names.append(f"{gid}: {a.product or a.arch or a.name}".rstrip(": "))
            elif a is None:
                names.append(str(gid))
        self.gpus = ", ".join(names)


def _map_category(column: pd.Series, func, rows: np.ndarray | None = None) -> np.ndarray:
    """``func`` of every row's string (``rows``: of the rows it selects, a mask), evaluated
    once per distinct value (object array; the rows take their value through integer
    codes, so no per-row string is built)."""
    col = column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")
    values = [func(str(c)) for c in col.cat.categories] + [func("")]  # code -1 (missing): the last
    inverse, uniq = unique_strings(values)
    codes = col.cat.codes.to_numpy()
    return uniq[inverse[codes if rows is None else codes[rows]]]


def _per_category(column: pd.Series | pd.Categorical, test) -> np.ndarray:
    """Boolean ``test`` of every row's string, evaluated once per distinct value."""
    if isinstance(column, pd.Categorical):
        col = column
    else:
        col = (column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")).array  # the Categorical itself
    hits = np.array([bool(test(str(c))) for c in col.categories] + [bool(test(""))], dtype=bool)
    return hits[col.codes]


def _stats_core(core: RankCore, table: pd.DataFrame, rules: CategoryRules) -> None:
    """A process with kernel statistics and no kernel trace (rocprofv3 --stats): its compute,
    communication and copy/fill kernel time are the statistics' TotalDurationNs summed per
    class (sums: the file has no intervals to unite), its collectives their Calls (each of
    the type's average length, the remainder on the last, so totals stay exact)."""
    names = table["name"].astype(str).to_numpy()
    total = table["total_ns"].to_numpy().astype(np.int64)
    calls = table["calls"].to_numpy().astype(np.int64)
    cats = np.array([rules.classify(n) for n in names], dtype=object)
    comm, copy = cats == COMMUNICATION, cats == COPY
    core.compute_ns = int(total[~(comm | copy)].sum())
    core.communication_ns = int(total[comm].sum())
    core.copy_ns = int(total[copy].sum())
    core.compute_exposed_ns = core.compute_ns
    core.dispatches = int(calls.sum())
    top = int(np.argmax(total))
    # the share of the process's kernel time over the run (the rows' sum, or TotalDurationNs × 100 / Percentage of a cut table)
    core.top_kernel, core.top_kernel_pct = str(names[top]), aggregate.pct(int(total[top]), run_total_ns(table))
    types: list[str] = []
    durs: list[int] = []
    for name, n, t in zip(names[comm], calls[comm], total[comm], strict=True):
        n, t = int(n), int(t)
        if n <= 0:
            continue
        types += [collective_type(name)] * n
        durs += [t // n] * n
        durs[-1] += t - (t // n) * n
    core.coll_types = np.array(types, dtype=object)
    core.coll_dur = np.array(durs, dtype=np.int64)
    core.coll_bytes = np.full(len(durs), -1, dtype=np.int64)  # statistics hold no message sizes
    core.coll_ranks = np.full(len(durs), -1, dtype=np.int64)
    core.coll_start = np.full(len(durs), -1, dtype=np.int64)  # statistics hold no times
    core.collectives = len(durs)
    core.source = "stats"


def env_rank(run: Run) -> int | None:
    """The rank the process's recorded environment names (``RANK``, ``OMPI_COMM_WORLD_RANK``,
    ``SLURM_PROCID``, ``PMI_RANK``, ``PMIX_RANK``: ``meta.extra["rank_env"]``, rocpd), else None."""
    found = run.meta.extra.get("rank_env")
    rank = found.get("rank") if isinstance(found, dict) else None
    return rank if isinstance(rank, int) and rank >= 0 else None


def rank_numbers(runs: Sequence[Run]) -> list[tuple[int, str]]:
    """(rank, source) per process: the trace's own rank (Kineto ``distributedInfo``) where
    every process records one, else the rank of each process's recorded environment
    (``environment``), else the position in (host, pid) order; a source is used only when
    every process has a rank from it and no two share one."""
    if runs and all(run.meta.rank is not None for run in runs) and len({run.meta.rank for run in runs}) == len(runs):
        return [(int(run.meta.rank or 0), "distributedInfo") for run in runs]
    from_env = [env_rank(run) for run in runs]
    if runs and all(r is not None for r in from_env) and len(set(from_env)) == len(runs):
        return [(int(r or 0), "environment") for r in from_env]
    order = sorted(range(len(runs)), key=lambda i: (runs[i].meta.hostname, runs[i].meta.pid if runs[i].meta.pid is not None else -1, i))
    rank_of = {i: pos for pos, i in enumerate(order)}
    return [(rank_of[i], "order") for i in range(len(runs))]


def rank_cores(
    runs: Sequence[Run],
    labels: Sequence[str],
    walls: Sequence[int],
    classes: Sequence[np.ndarray],
    rules: CategoryRules,
    categories: Sequence[np.ndarray | None] | None = None,
) -> list[RankCore]:
    cats = list(categories) if categories is not None else [None] * len(runs)
    return [RankCore(run, label, wall, cls, rules, cat) for run, label, wall, cls, cat in zip(runs, labels, walls, classes, cats, strict=True)]


WaitTable = dict[str, tuple[np.ndarray, np.ndarray]]
"""Per collective type, over the k-th collective of that type in a whole process (start
order): the fastest rank's duration (``fastest_ns``, int64) and the number of the rank that
arrived last (``last_rank``, int64; -1 when fewer than two ranks have it or all spent the
same time)."""

_BIG = np.iinfo(np.int64).max


class _KindInstances:
    """The instances of one collective type so far: O(instances) arrays, indexed by k."""

    __slots__ = ("bytes", "cand", "cand_at", "fastest", "first", "group", "n_fastest", "second", "seen", "slowest", "top", "total")

    def __init__(self) -> None:
        self.seen = np.zeros(0, dtype=np.int64)  # ranks that have the k-th
        self.fastest = np.zeros(0, dtype=np.int64)  # the least time in it
        self.n_fastest = np.zeros(0, dtype=np.int64)  # ranks with that least time
        self.first = np.zeros(0, dtype=np.int64)  # the arrival (InstanceTable.add) of the lowest position among them
        self.slowest = np.zeros(0, dtype=np.int64)
        self.total = np.zeros(0, dtype=np.int64)  # Σ of the ranks' durations
        self.bytes = np.zeros(0, dtype=np.int64)  # the message bytes and group size the ``first`` rank recorded (-1: none)
        self.group = np.zeros(0, dtype=np.int64)
        # the two largest per-rank counts (with repeats): instance k is kept (seen on two ranks
        # or more) exactly for k < second, so only a rank with strictly the most collectives
        # has instances past it; its durations are kept (the running candidate), no other's
        self.top = self.second = 0
        self.cand: np.ndarray | None = None
        self.cand_at = -1

    def grow(self, n: int) -> None:
        pad = n - len(self.seen)
        if pad <= 0:
            return
        more = {"seen": 0, "fastest": _BIG, "n_fastest": 0, "first": -1, "slowest": -1, "total": 0, "bytes": -1, "group": -1}
        for name, fill in more.items():
            setattr(self, name, np.concatenate([getattr(self, name), np.full(pad, fill, dtype=np.int64)]))

    def add(self, at: int, earlier: Callable[[np.ndarray], np.ndarray], d: np.ndarray, b: np.ndarray, g: np.ndarray) -> None:
        """Rank arrival ``at``'s collectives of this type (durations, bytes, group sizes in
        start order); ``earlier(arrivals)``: whether ``at`` comes before each of them in the
        run set's order."""
        n = len(d)
        self.grow(n)
        self.seen[:n] += 1
        self.total[:n] += d
        np.maximum(self.slowest[:n], d, out=self.slowest[:n])
        f = self.fastest[:n]
        less, tie = np.flatnonzero(d < f), np.flatnonzero(d == f)
        self.n_fastest[tie] += 1
        moved = np.concatenate([less, tie[earlier(self.first[tie])]]) if len(tie) else less
        self.fastest[less] = d[less]
        self.n_fastest[less] = 1
        self.first[moved], self.bytes[moved], self.group[moved] = at, b[moved], g[moved]
        if n > self.top:
            self.top, self.second, self.cand, self.cand_at = n, self.top, d.copy(), at
        elif n == self.top:
            self.second, self.cand, self.cand_at = n, None, -1
        elif n > self.second:
            self.second = n

    def clear(self) -> np.ndarray:
        """Per instance: kept (two ranks or more) and one or more ranks, not all, arrived last."""
        return (self.seen >= 2) & (self.n_fastest < self.seen)


class _KindTotals:
    """One collective type's count, time and sized bytes over every rank's collectives (the
    ``communication`` section: integers, so the order of ranks does not matter)."""

    __slots__ = ("by_group", "count", "total_ns")

    def __init__(self) -> None:
        self.count = 0
        self.total_ns = 0
        self.by_group: dict[int, list[int]] = {}  # group size (-1: unknown) -> [sized collectives, Σ bytes, Σ ns]

    def add(self, d: np.ndarray, b: np.ndarray, g: np.ndarray) -> None:
        self.count += len(d)
        self.total_ns += int(d.sum())
        sized = (b >= 0) & (d > 0)
        if not sized.any():
            return
        groups, inverse = np.unique(g[sized], return_inverse=True)
        n = np.bincount(inverse, minlength=len(groups))
        for i, group in enumerate(groups.tolist()):
            mine = inverse == i
            acc = self.by_group.setdefault(int(group), [0, 0, 0])
            acc[0] += int(n[i])
            acc[1] += int(b[sized][mine].sum())
            acc[2] += int(d[sized][mine].sum())


class InstanceTable:
    """The one reducer of collective instances (docs/metrics.md, "Ranks"): fed one rank at a
    time, in any order, it keeps O(instances) arrays per collective type (and a few integers
    per rank), and gives what the ranks, communication and stragglers sections, the critical
    path's waits (:meth:`wait_table`) and the ranks on the path need.

    A collective instance is the k-th collective of one type in every rank that has a k-th
    (whole processes, start order: :func:`collective_rows`); the rank that arrived last spends
    the least time in it, the lowest position in the run set's order among equals."""

    def __init__(self) -> None:
        self.kinds: dict[str, _KindInstances] = {}
        self.totals: dict[str, _KindTotals] = {}
        self.keys: list[Any] = []  # per arrival: its position in the run set's order (anything ordered)
        self.counts: list[dict[str, tuple[int, int]]] = []  # per arrival, per type it took part in: (collectives, Σ durations)

    def add(self, key: Any, kinds: np.ndarray, durs: np.ndarray, sizes: np.ndarray, groups: np.ndarray, traced: bool = True) -> int:
        """One rank: ``key`` its position in the run set's order, its collectives' types,
        durations, message bytes and group sizes in start order; ``traced``: False for
        kernel statistics (their collectives count, but know no single instance). Returns its
        arrival number."""
        at = len(self.keys)
        self.keys.append(key)
        mine: dict[str, tuple[int, int]] = {}
        durs, sizes, groups = (np.asarray(x, dtype=np.int64) for x in (durs, sizes, groups))
        for kind in sorted({str(t) for t in kinds.tolist()}):
            m = kinds == kind
            d, b, g = durs[m], sizes[m], groups[m]
            self.totals.setdefault(kind, _KindTotals()).add(d, b, g)
            if traced:
                mine[kind] = (len(d), int(d.sum()))
                self.kinds.setdefault(kind, _KindInstances()).add(at, lambda arrivals: self._earlier(key, arrivals), d, b, g)
        self.counts.append(mine)
        return at

    def _earlier(self, key: Any, arrivals: np.ndarray) -> np.ndarray:
        uniq, inverse = np.unique(arrivals, return_inverse=True)
        return np.array([bool(key < self.keys[int(a)]) for a in uniq.tolist()], dtype=bool)[inverse]

    def _by_arrival(self, order: Sequence[int] | None, numbers: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(position, rank number) of every arrival; ``order``: the arrivals in the run set's
        order (None: as they came), ``numbers``: their rank numbers in that order."""
        n = len(self.keys)
        arrivals = np.arange(n) if order is None else np.asarray(order, dtype=np.int64)
        pos = np.empty(n, dtype=np.int64)
        pos[arrivals] = np.arange(n)
        num = np.empty(n, dtype=np.int64)
        num[arrivals] = np.asarray(numbers, dtype=np.int64)
        return pos, num

    def instances(self, numbers: Sequence[int], order: Sequence[int] | None = None) -> tuple[list[CollectiveInstance], np.ndarray, np.ndarray]:
        """Every collective instance seen on at least two ranks, the wait per rank (ns) and how
        often each rank arrived last (both indexed by position in ``order``)."""
        pos, num = self._by_arrival(order, numbers)
        waits = np.zeros(len(self.keys), dtype=np.int64)
        last = np.zeros(len(self.keys), dtype=np.int64)
        out: list[CollectiveInstance] = []
        for kind in sorted(self.kinds):
            k = self.kinds[kind]
            kept = k.second  # instances 0..kept-1 are on two ranks or more
            clear = k.clear()
            np.add.at(last, pos[k.first[clear]], 1)
            before = np.concatenate([[0], np.cumsum(k.fastest[:kept])])  # Σ of the fastest over instances 0..m-1
            for at, mine in enumerate(self.counts):
                if kind not in mine:
                    continue
                n, total = mine[kind]
                if at == k.cand_at and k.cand is not None:  # the one rank with more than any other: its kept instances only
                    n, total = kept, int(k.cand[:kept].sum())
                waits[pos[at]] += total - int(before[n])
            wsum = k.total[:kept] - k.seen[:kept] * k.fastest[:kept]
            for i in range(kept):
                out.append(
                    {
                        "type": kind,
                        "index": i,
                        "straggler": int(num[k.first[i]]) if clear[i] else None,
                        "fastest_ns": int(k.fastest[i]),
                        "slowest_ns": int(k.slowest[i]),
                        "wait_ns": int(wsum[i]),
                    }
                )
        return out, waits, last

    def wait_table(self, numbers: Sequence[int], order: Sequence[int] | None = None) -> WaitTable:
        """The :data:`WaitTable` of every type (``numbers``, ``order`` as :meth:`instances`)."""
        _pos, num = self._by_arrival(order, numbers)
        out: WaitTable = {}
        for kind in sorted(self.kinds):
            k = self.kinds[kind]
            out[kind] = (k.fastest.copy(), np.where(k.clear(), num[np.maximum(k.first, 0)], -1).astype(np.int64))
        return out

    def instance_elements(self) -> int:
        """The elements of the per-type arrays the table keeps (O(instances), whatever the
        rank count; per rank it keeps only ``counts``)."""
        return sum(len(k.seen) * 8 + (len(k.cand) if k.cand is not None else 0) for k in self.kinds.values())

    def by_type(self) -> list[CollectiveType]:
        """The ``communication`` section's ``by_type`` rows: count and time per type, largest
        first, with their bytes and bandwidths (:func:`bandwidth_of`)."""
        rows = sorted(((kind, t.count, t.total_ns) for kind, t in self.totals.items()), key=lambda x: (-x[2], x[0]))
        return [
            {"type": kind, "count": n, "total_ns": total, "avg_ns": round(total / n, 3), **bandwidth_of(kind, self.totals[kind], self.kinds.get(kind))}
            for kind, n, total in rows
        ]


def instances(cores: Sequence[RankCore], ranks: Sequence[int]) -> tuple[list[CollectiveInstance], np.ndarray, np.ndarray]:
    """Every collective instance (the k-th of a type on every rank that has a k-th; only
    instances seen on at least two ranks), the wait per rank (ns, indexed like ``cores``)
    and how often each rank arrived last (:class:`InstanceTable`)."""
    return instance_table(cores).instances(ranks)


def instance_table(cores: Sequence[RankCore]) -> InstanceTable:
    """The :class:`InstanceTable` of the processes' cores (their position: their index)."""
    table = InstanceTable()
    for i, c in enumerate(cores):
        table.add(i, c.coll_types, c.coll_dur, c.coll_bytes, c.coll_ranks, c.source == "trace")
    return table


def run_instance_table(runs: Sequence[Run], rules: CategoryRules, categories: Sequence[np.ndarray | None] | None = None) -> WaitTable:
    """The :data:`WaitTable` of whole processes (``categories`` as :func:`collective_rows`),
    without the rest of their :class:`RankCore`."""
    table = InstanceTable()
    for i, run in enumerate(runs):
        k = run.kernels
        rows, kinds = collective_rows(k, rules, categories[i] if categories is not None else None)
        start, end = column_array(k, "start").astype(np.int64), column_array(k, "end").astype(np.int64)
        none = np.full(len(rows), -1, dtype=np.int64)
        table.add(i, kinds, end[rows] - start[rows], none, none)
    return table.wait_table([n for n, _ in rank_numbers(runs)])


def rank_records(cores: Sequence[RankCore], numbers: Sequence[tuple[int, str]], waits: np.ndarray, last: np.ndarray) -> list[RankRecord]:
    rows: list[RankRecord] = []
    for i, (c, (rank, source)) in enumerate(zip(cores, numbers, strict=True)):
        rows.append(
            {
                "rank": rank,
                "rank_source": source,
                "label": c.label,
                "host": c.run.meta.hostname or None,
                "pid": c.run.meta.pid,
                "gpus": c.gpus,
                "dispatches": c.dispatches,
                "source": c.source,
                "span_ns": int(c.wall_ns),
                "gpu_span_ns": int(c.gpu_span_ns),
                "busy_ns": int(c.busy_ns),
                "compute_ns": int(c.compute_ns),
                "communication_ns": int(c.communication_ns),
                "copy_ns": int(c.copy_ns),
                "idle_pct": aggregate.pct(c.gpu_span_ns - c.busy_ns, c.gpu_span_ns),
                "sync_ns": int(c.sync_ns),
                "sync_pct": aggregate.pct(c.sync_ns, c.wall_ns),
                "overlap_ns": int(c.overlap_ns),
                "overlap_pct": aggregate.pct(c.overlap_ns, c.communication_ns),
                "compute_exposed_ns": int(c.compute_exposed_ns),
                "collectives": int(c.collectives),
                "wait_ns": int(waits[i]),
                "wait_pct": aggregate.pct(int(waits[i]), c.wall_ns),
                "straggler_of": int(last[i]),
                "top_kernel": c.top_kernel,
                "top_kernel_pct": c.top_kernel_pct,
            }
        )
    rows.sort(key=lambda r: (r["rank"], r["label"]))
    return rows


def communication_section(cores: Sequence[RankCore], table: InstanceTable | None = None) -> CommunicationSection:
    """Communication over every rank: kernel and RCCL/NCCL API time, overlap with compute,
    and count, time and bandwidth per collective type (``table``: the cores' :class:`InstanceTable`)."""
    kernel_ns = sum(c.communication_ns for c in cores)
    overlap = sum(c.overlap_ns for c in cores)
    return {
        "kernel_ns": int(kernel_ns),
        "api_ns": int(sum(c.api_ns for c in cores)),
        "api_calls": int(sum(c.api_calls for c in cores)),
        "pct_of_time": aggregate.pct(kernel_ns, sum(c.wall_ns for c in cores)),
        "overlap_ns": int(overlap),
        "overlap_pct": aggregate.pct(overlap, kernel_ns),
        "by_type": (table or instance_table(cores)).by_type(),
    }


def bandwidth_of(kind: str, totals: _KindTotals, found: _KindInstances | None) -> CollectiveBandwidth:
    """Message bytes and bandwidths of one collective type (docs/metrics.md, "Collective
    bandwidth"): over every rank's collectives whose size is recorded (``sized``), the
    algorithm bandwidth Σ bytes / Σ time and the bus bandwidth Σ (bytes × factor) / Σ time
    (time-weighted; the numerator summed per distinct group size of integer byte sums, so it
    is exact and mergeable); the median bus bandwidth is over the type's collective
    instances (the k-th on two traced ranks or more where several have the type; each
    collective where one has): an instance's bytes × factor / the time of the rank that arrived last (its
    time is the transfer, the others' include waiting for it). bytes / ns = GB/s (10**9
    bytes per second, as NCCL-tests). None where no size (or, for the bus bandwidth, no
    group size a factor needs) is known."""
    groups = sorted(totals.by_group)
    sized = sum(totals.by_group[g][0] for g in groups)
    total_bytes = sum(totals.by_group[g][1] for g in groups)
    sized_ns = sum(totals.by_group[g][2] for g in groups)
    weighted, bus_ns = 0.0, 0
    for g in groups:
        factor = bus_factor(kind, g)
        if factor is not None:
            weighted += factor * totals.by_group[g][1]
            bus_ns += totals.by_group[g][2]
    known = [g for g in groups if g >= 1]
    median = None
    if found is not None and len(found.seen):
        factors = bus_factors(kind, found.group)
        # several traced ranks have the type (seen[0] counts them): an instance is the k-th on
        # two ranks or more, as the instance list's; one process: each collective its own
        need = 2 if found.seen[0] >= 2 else 1
        ok = (found.bytes >= 0) & (found.fastest > 0) & (found.seen >= need) & ~np.isnan(factors)
        if ok.any():
            median = round(float(np.median(found.bytes[ok].astype(np.float64) * factors[ok] / found.fastest[ok])), 6)
    return {
        "sized": int(sized),
        "bytes": int(total_bytes) if sized else None,
        "group_size": known[0] if len(known) == 1 else None,
        "algorithm_bandwidth_gbs": round(total_bytes / sized_ns, 6) if sized_ns else None,
        "bus_bandwidth_gbs": round(weighted / bus_ns, 6) if bus_ns else None,
        "bus_bandwidth_median_gbs": median,
    }


def bandwidth(kind: str, durs: np.ndarray, sizes: np.ndarray, ranks: np.ndarray) -> CollectiveBandwidth:
    """:func:`bandwidth_of` of one process's collectives of one type (each its own instance)."""
    table = InstanceTable()
    kinds = np.full(len(durs), kind, dtype=object)
    table.add(0, kinds, durs, sizes, ranks)
    return bandwidth_of(kind, table.totals.get(kind, _KindTotals()), table.kinds.get(kind))


def bus_factors(kind: str, ranks: np.ndarray) -> np.ndarray:
    """:func:`bus_factor` of every instance of one type (float64; NaN where it is None)."""
    uniq, inverse = np.unique(ranks, return_inverse=True)  # one factor per distinct group size
    table = np.array([np.nan if (f := bus_factor(kind, int(n))) is None else f for n in uniq.tolist()], dtype=np.float64)
    return table[inverse]


def straggler_section(rows: Sequence[RankRecord], listed: Sequence[CollectiveInstance]) -> StragglerSection:
    """The straggler: the rank that arrived last in most instances (ties: the one whose
    instances made the others wait longest), its compute before collectives against the
    median of the other ranks', and the others' summed wait."""
    empty: StragglerSection = {
        "instances": len(listed),
        "rank": None,
        "last_in": 0,
        "compute_excess_pct": 0.0,
        "others_wait_ns": 0,
        "others_wait_pct": 0.0,
        "listed": [],
    }
    if len(rows) < 2 or not listed:
        return empty
    caused: dict[int, int] = {}
    for inst in listed:
        if inst["straggler"] is not None:
            caused[inst["straggler"]] = caused.get(inst["straggler"], 0) + inst["wait_ns"]
    best = max(rows, key=lambda r: (r["straggler_of"], caused.get(r["rank"], 0), -r["rank"]))
    if best["straggler_of"] == 0:
        return empty
    others = [r for r in rows if r is not best]
    median = float(np.median([r["compute_exposed_ns"] for r in others]))
    wait = sum(r["wait_ns"] for r in others)
    top = sorted(listed, key=lambda i: (-i["wait_ns"], i["type"], i["index"]))[:LISTED_INSTANCES]
    return {
        "instances": len(listed),
        "rank": best["rank"],
        "last_in": best["straggler_of"],
        "compute_excess_pct": round(100.0 * (best["compute_exposed_ns"] - median) / median, 4) if median else 0.0,
        "others_wait_ns": int(wait),
        "others_wait_pct": aggregate.pct(wait, sum(r["span_ns"] for r in others)),
        "listed": top,
    }


def ranks_sections(
    runs: Sequence[Run],
    labels: Sequence[str],
    walls: Sequence[int],
    classes: Sequence[np.ndarray],
    rules: CategoryRules,
    categories: Sequence[np.ndarray | None] | None = None,
) -> tuple[list[RankRecord], CommunicationSection, StragglerSection]:
    """The summary's ``ranks``, ``communication`` and ``stragglers`` sections; ``categories``:
    per process, its kernels' categories operator first (:class:`RankCore`)."""
    return sections_of_cores(rank_cores(runs, labels, walls, classes, rules, categories))


def ranks_and_waits(
    runs: Sequence[Run],
    labels: Sequence[str],
    walls: Sequence[int],
    classes: Sequence[np.ndarray],
    rules: CategoryRules,
    categories: Sequence[np.ndarray | None] | None = None,
) -> tuple[list[RankRecord], CommunicationSection, StragglerSection, WaitTable]:
    """:func:`ranks_sections` and the run's :data:`WaitTable` (one :class:`InstanceTable`)."""
    cores = rank_cores(runs, labels, walls, classes, rules, categories)
    numbers = rank_numbers([c.run for c in cores])
    table = instance_table(cores)
    return (*sections_of_table(cores, numbers, table), table.wait_table([n for n, _ in numbers]))


def sections_of_cores(cores: Sequence[RankCore]) -> tuple[list[RankRecord], CommunicationSection, StragglerSection]:
    """:func:`ranks_sections` from each process's :class:`RankCore` (computed per process as
    it loads): the waits, stragglers and communication need every rank's core."""
    return sections_of_table(cores, rank_numbers([c.run for c in cores]), instance_table(cores))


def sections_of_table(
    cores: Sequence[RankCore], numbers: Sequence[tuple[int, str]], table: InstanceTable, order: Sequence[int] | None = None
) -> tuple[list[RankRecord], CommunicationSection, StragglerSection]:
    """:func:`sections_of_cores` from the cores' figures (their collectives need not be kept)
    and their :class:`InstanceTable` (``order``: its arrivals in the cores' order; None: the
    same order); ``numbers``: the cores' rank numbers."""
    listed, waits, last = table.instances([n for n, _ in numbers], order)
    rows = rank_records(cores, numbers, waits, last)
    return rows, communication_section(cores, table), straggler_section(rows, listed)


def communication_mask(kernels: pd.DataFrame, rules: CategoryRules) -> np.ndarray:
    """Per kernel row: True for a communication kernel (the ``communication`` category of
    ``rules``, classified once per distinct name)."""
    if not len(kernels):
        return np.zeros(0, dtype=bool)
    return _per_category(category_array(kernels, "name"), lambda n: rules.classify(n) == COMMUNICATION)


@dataclass(frozen=True)
class RankAlignment:
    """How the timeline lays every process on one time axis (docs/metrics.md, "Rank lanes on the timeline").

    ``offsets[i]`` (ns) is added to every time of process ``i``: all 0 when the processes
    share a clock (one host, or no host recorded: :func:`aggregate.clock_key`); otherwise each
    process is shifted so that its first collective starts when the first collective of the
    reference process (the lowest rank with a collective) starts, and a process without a
    collective keeps its own clock (offset 0)."""

    shared_clock: bool
    hosts: int  # distinct clocks (host names; processes without one count as one host)
    first_collective: tuple[int | None, ...]  # per process: start (its own clock, ns) of its first communication kernel
    reference: int | None  # index of the process the others are aligned to (None: shared clock or no collective)
    offsets: tuple[int, ...]

    @property
    def unaligned(self) -> int:
        """Processes left on their own clock although the others are shifted (no collective)."""
        return 0 if self.shared_clock else sum(1 for f in self.first_collective if f is None)


def first_collectives(runs: Sequence[Run], rules: CategoryRules, masks: Sequence[np.ndarray] | None = None) -> list[int | None]:
    """Start (ns, the process's own clock) of each process's first communication kernel, or None
    (``masks``: each process's :func:`communication_mask`, where the caller has them already)."""
    out: list[int | None] = []
    for i, run in enumerate(runs):
        comm = masks[i] if masks is not None else communication_mask(run.kernels, rules)
        out.append(int(run.kernels["start"].to_numpy()[comm].min()) if comm.any() else None)
    return out


def rank_offsets(runs: Sequence[Run], rules: CategoryRules, masks: Sequence[np.ndarray] | None = None) -> RankAlignment:
    """The time shift of every process on the rank timeline (see :class:`RankAlignment`;
    ``masks`` as for :func:`first_collectives`)."""
    keys = [aggregate.clock_key(run) for run in runs]
    hosts = len(set(keys))
    first = first_collectives(runs, rules, masks)
    if hosts <= 1:
        return RankAlignment(True, hosts, tuple(first), None, tuple(0 for _ in runs))
    numbers = rank_numbers(runs)
    having = [i for i, f in enumerate(first) if f is not None]
    if not having:
        return RankAlignment(False, hosts, tuple(first), None, tuple(0 for _ in runs))
    ref = min(having, key=lambda i: (numbers[i][0], i))
    anchor = first[ref]
    assert anchor is not None
    offsets = tuple(anchor - f if f is not None else 0 for f in first)
    return RankAlignment(False, hosts, tuple(first), ref, offsets)
