"""Host API classes (synchronisation, launch, copy), synchronisation cost and launch overhead.

Name rules (HIP, CUDA runtime and CUDA driver spellings):

* sync: ``hip|cuda|cu`` + ``Device|Stream|Event|Ctx|Thread`` + ``Synchronize``;
* blocking copy: ``hip|cuda|cu`` + ``Memcpy*`` without ``Async`` (the host waits for it);
  these count as synchronisation too (nsys "synchronous memcpy" rule);
* copy API: any ``Memcpy*`` / ``Memset*`` call;
* launch: ``hip|cuda|cu`` + ``*Launch*`` (hipLaunchKernel, hipModuleLaunchKernel,
  hipExtLaunchKernel, cudaLaunchKernel, hipGraphLaunch, ...); graph launch: ``*GraphLaunch``.
  Launch API time counts both; the graph launches' part is also reported apart, and kernels
  replayed from a graph are left out of the many-tiny-kernels rule (one call issues them).

Queue delay = kernel start - launching API start (the brief's definition; TraceLens
"T = A + Q + K" splits the same interval into API duration A and queue delay Q after the
API ends, nsys uses API end -> kernel start). We report both the API duration and
``queue_delay_ns`` so either convention can be recovered (Q_nsys = queue_delay - api_dur).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from tui_prof.analysis.arrays import code_totals
from tui_prof.analysis.sections import CallTotals, LaunchCounts, LaunchSection, SyncAfterLaunch, SyncStats

SYNC_RE = re.compile(r"^(hip|cuda|cu)(Device|Stream|Event|Ctx|Thread)Synchronize$")
BLOCKING_COPY_RE = re.compile(r"^(hip|cuda|cu)Memcpy(?!.*Async)\w*$")
COPY_API_RE = re.compile(r"^(hip|cuda|cu)Mem(cpy|set)\w*$")
LAUNCH_RE = re.compile(r"^(hip|cuda|cu)\w*Launch\w*$")
GRAPH_LAUNCH_RE = re.compile(r"^(hip|cuda|cu)GraphLaunch\w*$")

# codes used by api_classes()
OTHER, SYNC, BLOCKING_COPY, COPY, LAUNCH, GRAPH_LAUNCH = 0, 1, 2, 3, 4, 5

TINY_KERNEL_NS = 10_000  # rocinsight / TraceLens short-kernel threshold (10 µs)
MANY_LAUNCHES = 1000  # rocinsight "many small kernels": > 1000 launches and average < 10 µs
SYNC_AFTER_LAUNCH_RATIO = 0.5  # [P] share of launches directly followed by a sync that flags the pattern
SYNC_AFTER_LAUNCH_MIN = 10  # [P] minimum number of launches before the pattern is reported


def classify_name(name: str) -> int:
    if SYNC_RE.match(name):
        return SYNC
    if BLOCKING_COPY_RE.match(name):
        return BLOCKING_COPY
    if COPY_API_RE.match(name):
        return COPY
    if GRAPH_LAUNCH_RE.match(name):
        return GRAPH_LAUNCH
    if LAUNCH_RE.match(name):
        return LAUNCH
    return OTHER


def api_classes(api: pd.DataFrame) -> np.ndarray:
    """One class code per API row (see the module constants), computed on distinct names."""
    names = api["name"]
    if not isinstance(names.dtype, pd.CategoricalDtype):
        names = names.astype("category")
    per_cat = np.array([classify_name(str(c)) for c in names.cat.categories] + [OTHER], dtype=np.int8)
    return per_cat[names.cat.codes.to_numpy()]  # code -1 (missing) picks the appended OTHER


def sync_mask(classes: np.ndarray) -> np.ndarray:
    """Per API row (``classes``: :func:`api_classes`): a synchronisation call or a blocking
    copy, the calls that hold the host until the GPU is done."""
    return (classes == SYNC) | (classes == BLOCKING_COPY)


def sync_stats(api: pd.DataFrame, wall_ns: int, classes: np.ndarray | None = None) -> SyncStats:
    """Calls and time in synchronisation APIs and blocking copies.

    ``total_ns`` sums call durations (calls on different threads may overlap, so the sum
    can exceed the wall time); ``pct_of_wall`` = total_ns / wall_ns * 100.
    """
    classes = api_classes(api) if classes is None else classes
    rows = np.flatnonzero(sync_mask(classes))  # then take: a third of a boolean mask's gather over 2M calls
    dur = api["end"].to_numpy().take(rows) - api["start"].to_numpy().take(rows)
    by_name: dict[str, CallTotals] = {}
    if len(rows):
        column = api["name"] if isinstance(api["name"].dtype, pd.CategoricalDtype) else api["name"].astype("category")
        slot = column.cat.codes.to_numpy().take(rows).astype(np.int64) + 1  # code -1 (missing): slot 0
        cats = column.cat.categories
        calls_of, ns_of = code_totals(slot, dur, len(cats) + 1)
        named = [(str(cats[i - 1]) if i else "", int(calls_of[i]), int(ns_of[i])) for i in np.flatnonzero(calls_of)]
        for name, calls, total in sorted(named, key=lambda r: (-r[2], r[0])):
            by_name[name] = {"calls": calls, "total_ns": total}
    total = int(dur.sum()) if len(dur) else 0
    return {
        "calls": len(rows),
        "total_ns": total,
        "pct_of_wall": round(100.0 * total / wall_ns, 4) if wall_ns > 0 else 0.0,
        "blocking_copy_calls": int((classes == BLOCKING_COPY).sum()),
        "by_name": by_name,
    }


def sync_exposure(api: pd.DataFrame, classes: np.ndarray, busy_starts: np.ndarray, busy_ends: np.ndarray) -> tuple[int, int]:
    """(exposed ns, waiting-for-work ns) of the sync and blocking-copy calls of one process.

    ``busy_starts/ends``: when any GPU of the same process is busy, sorted and disjoint
    (:func:`tui_prof.analysis.timeline.busy_intervals`). For a call [s, e), let b be the
    last instant in [s, e) at which a GPU is busy (b = s when none is busy during the call):
    waiting for work = b - s (the GPU still runs work queued before the call; holes inside
    it are GPU-side dependencies, since the blocked thread queued nothing new), exposed =
    e - b (the host is blocked while the GPU has nothing left to run: the sync makes it
    idle). Exposed + waiting = the calls' total duration (docs/metrics.md, worked example).
    """
    s, b, e = sync_exposure_bounds(api, classes, busy_starts, busy_ends)
    return int((e - b).sum()), int((b - s).sum())


def sync_exposure_calls(api: pd.DataFrame, classes: np.ndarray, busy_starts: np.ndarray, busy_ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sync or blocking-copy call, as :func:`sync_exposure` defines them: (the calls' API
    rows, exposed ns of each, waiting-for-work ns of each)."""
    rows = np.flatnonzero(sync_mask(classes))
    s, b, e = _exposure_bounds(api, rows, busy_starts, busy_ends)
    return rows, e - b, b - s


def sync_exposure_bounds(api: pd.DataFrame, classes: np.ndarray, busy_starts: np.ndarray, busy_ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(s, b, e) of each sync or blocking-copy call of :func:`sync_exposure`: the call's
    start, the last instant in [s, e) at which a GPU is busy, and its end (int64 arrays)."""
    return _exposure_bounds(api, np.flatnonzero(sync_mask(classes)), busy_starts, busy_ends)


def _exposure_bounds(api: pd.DataFrame, rows: np.ndarray, busy_starts: np.ndarray, busy_ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`sync_exposure_bounds` of the calls at API ``rows`` (taken by number: a third of
    a boolean mask's gather over 2M calls)."""
    if not len(rows):
        empty = np.array([], np.int64)
        return empty, empty, empty
    s = api["start"].to_numpy().take(rows).astype(np.int64, copy=False)
    e = api["end"].to_numpy().take(rows).astype(np.int64, copy=False)
    if len(busy_starts):
        i = np.searchsorted(busy_starts, e, side="left") - 1  # last busy interval starting before e
        last_end = np.where(i >= 0, np.minimum(busy_ends[np.maximum(i, 0)], e), s)
        b = np.clip(last_end, s, e)
    else:
        b = s
    return s, b, e


def sync_after_launch(api: pd.DataFrame, classes: np.ndarray | None = None) -> SyncAfterLaunch:
    """Detect "a synchronisation after every launch" (sync inside the loop).

    For every launch call, looks at the next launch-or-sync call on the same (pid, tid):
    if it is a sync (or blocking copy), the launch is "followed by a sync".
    """
    classes = api_classes(api) if classes is None else classes
    keep = (classes != OTHER) & (classes != COPY)  # SYNC, BLOCKING_COPY, LAUNCH, GRAPH_LAUNCH
    launches = int(np.count_nonzero(classes >= LAUNCH))  # LAUNCH, GRAPH_LAUNCH
    if not keep.any() or launches == 0:
        return {"launches": launches, "followed_by_sync": 0, "ratio": 0.0, "detected": False}
    pid = api["pid"].to_numpy()[keep]
    tid = api["tid"].to_numpy()[keep]
    start = api["start"].to_numpy()[keep]
    cls = classes[keep]
    # order by thread, then start: stable sort of small thread codes over start-sorted rows
    by_start = np.argsort(start, kind="stable") if not np.all(start[1:] >= start[:-1]) else None
    if len(pid) and (pid == pid[0]).all() and (tid == tid[0]).all():
        order = by_start  # one host thread: start order is already thread order (None: as stored)
    else:
        if by_start is None:
            by_start = np.arange(len(start))
        thread, _ = pd.factorize((pid[by_start].astype(np.int64) << 32) ^ (tid[by_start].astype(np.int64) & 0xFFFFFFFF))
        thread = thread.astype(np.int16 if thread.max(initial=0) < 2**15 else np.int64)
        order = by_start[np.argsort(thread, kind="stable")]
    if order is not None:
        pid, tid, cls = pid[order], tid[order], cls[order]
    is_launch = (cls == LAUNCH) | (cls == GRAPH_LAUNCH)
    is_sync = (cls == SYNC) | (cls == BLOCKING_COPY)
    same_thread = (pid[1:] == pid[:-1]) & (tid[1:] == tid[:-1])
    followed = int((is_launch[:-1] & is_sync[1:] & same_thread).sum())
    ratio = followed / launches
    return {
        "launches": launches,
        "followed_by_sync": followed,
        "ratio": round(ratio, 4),
        "detected": bool(launches >= SYNC_AFTER_LAUNCH_MIN and ratio >= SYNC_AFTER_LAUNCH_RATIO),
    }


def unique_match(sorted_keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Position in ``sorted_keys`` equal to each query, or -1 when absent, negative, or
    ambiguous (the key occurs more than once, e.g. a format that writes 0 for every id).

    One binary search per query: the key at the left insertion point must equal the query
    and the next key must differ (keys are sorted, so a duplicate sits right after it).
    """
    n = len(sorted_keys)
    if n == 0:
        return np.full(len(queries), -1, dtype=np.int64)
    top = int(sorted_keys[-1])
    if 0 <= top <= 4 * n + 1024 and len(queries) > 64:
        # dense ids (rocprofv3 numbers correlation ids 1, 2, 3, ...): a direct table instead
        # of a binary search per query; the same answer
        first = int(np.searchsorted(sorted_keys, 0, side="left"))  # negative keys sit in front
        keys = sorted_keys[first:]
        small = np.int32 if n < 2**31 else np.int64  # positions; half the memory of int64
        table = np.full(top + 1, -1, dtype=small)
        table[keys] = np.arange(first, n, dtype=small)
        if len(keys) > 1:
            repeated = keys[1:] == keys[:-1]  # sorted: a key seen twice sits next to itself
            if repeated.any():
                table[keys[1:][repeated]] = -1
        inside = (queries >= 0) & (queries <= top)
        return np.where(inside, table[np.where(inside, queries, 0)], np.int64(-1))
    left = np.searchsorted(sorted_keys, queries, side="left")
    at = np.minimum(left, n - 1)
    after = np.minimum(left + 1, n - 1)
    hit = (left < n) & (sorted_keys[at] == queries)
    unique = (left + 1 >= n) | (sorted_keys[after] != queries)
    return np.where((queries >= 0) & hit & unique, left, -1)


class CorrIndex:
    """Correlation id -> API row of one run's API table, built once per run and shared by
    :func:`link_launches` and :func:`~tui_prof.analysis.timeline.gpu_gaps`.

    :meth:`rows` answers as :func:`unique_match` over every call, :meth:`launch_rows` as
    :func:`unique_match` over the launch-class calls only (an id may be shared with other
    calls, e.g. HSA calls, in some formats); both return API row numbers (int64), -1 when
    absent, ambiguous or negative. When no two calls share a non-negative id (rocprofv3
    numbers them 1, 2, 3, ...), the launch answer is the all-calls answer if that call is of
    a launch class, so one lookup serves both; consecutive ids need no table at all.

    ``classes``: :func:`api_classes` of ``api`` (computed here when not given); kept as
    :attr:`classes`, so that whoever is handed the index also has the classes it was built with.
    """

    def __init__(self, api: pd.DataFrame, classes: np.ndarray | None = None):
        if classes is None:
            classes = api_classes(api) if len(api) else np.array([], dtype=np.int8)
        if len(classes) != len(api):
            raise ValueError(f"{len(classes)} API classes for {len(api)} API calls")
        corr = api["correlation_id"].to_numpy() if len(api) else np.array([], dtype=np.int64)
        self.api = api  # the table indexed (see check)
        self.classes = classes
        self.n = n = len(corr)
        self.first: int | None = None  # ids corr[0], corr[0] + 1, ...: row = id - first
        self.unique = False  # no non-negative id twice: launch_rows derives from rows
        self._corr = corr
        # (sorted ids, their rows or None for identity) unless consecutive
        self._all: tuple[np.ndarray, np.ndarray | None] | None = None
        self._launch: tuple[np.ndarray, np.ndarray] | None = None  # the same over the launch-class calls, built on first use
        if n and int(corr[-1]) - int(corr[0]) == n - 1 and (n == 1 or bool((corr[1:] > corr[:-1]).all())):
            self.first, self.unique = int(corr[0]), True
            return
        if n:
            keys, order = self._sorted(corr, None)
            self._all = (keys, order)
            nonneg = keys[int(np.searchsorted(keys, 0, side="left")) :]
            self.unique = len(nonneg) < 2 or bool((nonneg[1:] != nonneg[:-1]).all())

    def check(self, api: pd.DataFrame) -> CorrIndex:
        """This index, after making sure it was built from ``api`` (the same table object):
        an index passed in by a caller answers with row numbers of the table it was built on."""
        if self.api is not api:
            raise ValueError("CorrIndex of another API table")
        return self

    @staticmethod
    def _sorted(corr: np.ndarray, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        """(ids sorted, API row of each or None when already in order)."""
        ids = corr if rows is None else corr[rows]
        if len(ids) < 2 or bool((ids[1:] >= ids[:-1]).all()):
            return ids, rows
        order = np.argsort(ids, kind="stable")
        return ids[order], (order if rows is None else rows[order])

    def rows(self, queries: np.ndarray) -> np.ndarray:
        """API row whose id equals each query (exactly one such call), else -1."""
        if self.n == 0:
            return np.full(len(queries), -1, dtype=np.int64)
        if self.first is not None:
            out = queries.astype(np.int64)  # a copy owned here
            out -= self.first
            out[(out < 0) | (out >= self.n) | (queries < 0)] = -1
            return out
        assert self._all is not None  # built whenever the ids are not consecutive
        keys, order = self._all
        pos = unique_match(keys, queries)
        if order is None:
            return pos
        return np.where(pos >= 0, order[np.maximum(pos, 0)], -1)

    def launch_of_rows(self, rows: np.ndarray) -> np.ndarray:
        """From :meth:`rows` of some queries, the :meth:`launch_rows` of the same queries
        (only when ``unique``)."""
        out = rows.copy()
        out[self.classes[np.maximum(rows, 0)] < LAUNCH] = -1  # LAUNCH, GRAPH_LAUNCH are the top codes
        return out

    def launch_rows(self, queries: np.ndarray) -> np.ndarray:
        """API row of the launch-class call whose id equals each query (exactly one such
        launch call), else -1."""
        if self.unique:
            return self.launch_of_rows(self.rows(queries))
        if self._launch is None:
            lrows = np.flatnonzero(self.classes >= LAUNCH)
            keys, rows = self._sorted(self._corr, lrows)
            self._launch = (keys, lrows if rows is None else rows)
        keys, order = self._launch
        if len(keys) == 0:
            return np.full(len(queries), -1, dtype=np.int64)
        pos = unique_match(keys, queries)
        return np.where(pos >= 0, order[np.maximum(pos, 0)], -1)


_NO_LINKS: list[pd.DataFrame] = []


def _no_links() -> pd.DataFrame:
    """:func:`link_launches`'s table without rows: a shallow copy of one built once (most
    processes of a run of thousands of tiny ones launch nothing; copy-on-write keeps the
    copies apart)."""
    if not _NO_LINKS:
        no_rows = np.array([], np.int64)
        columns = ("kernel_row", "api_start", "api_dur_ns", "queue_delay_ns", "kernel_dur_ns")
        _NO_LINKS.append(pd.DataFrame({**{c: no_rows.copy() for c in columns}, "graph": np.array([], bool)}, copy=False))
    return _NO_LINKS[0].copy(deep=False)


def link_launches(kernels: pd.DataFrame, api: pd.DataFrame, classes: np.ndarray | None = None, corr_index: CorrIndex | None = None) -> pd.DataFrame:
    """Kernel dispatches joined to their launching API call through (pid, correlation_id).

    Returns one row per linked dispatch: api_start, api_dur_ns, queue_delay_ns
    (kernel start - API start), kernel_dur_ns, graph (launched by a graph launch).
    Only API rows of launch classes are used, so HSA calls sharing an id do not match.
    ``corr_index``: the :class:`CorrIndex` of ``api`` (built here when not given); when
    given, its classes are used and ``classes`` is ignored.
    """
    if corr_index is not None:
        classes = corr_index.check(api).classes
    elif classes is None:
        classes = api_classes(api)
    if kernels.empty or not len(classes) or int(classes.max()) < LAUNCH:
        return _no_links()
    index = CorrIndex(api, classes) if corr_index is None else corr_index
    j = index.launch_rows(kernels["correlation_id"].to_numpy())  # API row, -1: not linked
    ok = j >= 0
    # Kernels with pid unknown (-1) match API rows of any pid: compare pid only when both known.
    k_pid = kernels["pid"].to_numpy()
    a_pid = api["pid"].to_numpy()
    if not (len(k_pid) and len(a_pid) and k_pid.min() == k_pid.max() == a_pid.min() == a_pid.max()):  # else one pid: all agree
        jp = a_pid[np.maximum(j, 0)]
        ok &= (k_pid < 0) | (jp < 0) | (jp == k_pid)
    rows = np.flatnonzero(ok)
    if len(rows) != len(j):
        j = j[rows]
    a_start = api["start"].to_numpy()[j]
    k_start = kernels["start"].to_numpy()
    k_end = kernels["end"].to_numpy()
    if len(rows) != len(k_start):
        k_start, k_end = k_start[rows], k_end[rows]
    return pd.DataFrame(
        {
            "kernel_row": rows,
            "api_start": a_start,
            "api_dur_ns": api["end"].to_numpy()[j] - a_start,
            "queue_delay_ns": k_start - a_start,
            "kernel_dur_ns": k_end - k_start,
            "graph": classes[j] == GRAPH_LAUNCH,
        },
        copy=False,  # one block per column: no 2-D copy of a million rows
    )


def launch_counts(api: pd.DataFrame, classes: np.ndarray, links: pd.DataFrame) -> LaunchCounts:
    """The counting part of :func:`launch_stats`: launch / graph-launch calls, their summed
    API time (ns; kernel and graph launches together, the graph launches also apart: a
    graph launch is host time spent launching work), linked and graph-launched dispatches."""
    if not len(api):  # no API calls: nothing launched, nothing linked
        return {
            "launch_calls": 0,
            "graph_launch_calls": 0,
            "api_total_ns": 0,
            "graph_launch_api_ns": 0,
            "linked_dispatches": int(len(links)),
            "graph_dispatches": int(links["graph"].sum()) if len(links) else 0,
        }
    dur = api["end"].to_numpy() - api["start"].to_numpy()
    lmask = classes == LAUNCH
    gmask = classes == GRAPH_LAUNCH
    graph_ns = int(dur[gmask].sum())
    return {
        "launch_calls": int(lmask.sum()),
        "graph_launch_calls": int(gmask.sum()),
        "api_total_ns": int(dur[lmask].sum()) + graph_ns,
        "graph_launch_api_ns": graph_ns,
        "linked_dispatches": int(len(links)),
        "graph_dispatches": int(links["graph"].sum()),
    }


def launch_section(
    counts: LaunchCounts, queue_delay_ns: np.ndarray, api_dur_ns: np.ndarray, kernel_dur_ns: np.ndarray, wall_ns: int, graph_replayed: np.ndarray | None = None
) -> LaunchSection:
    """The summary's ``launch`` section from :func:`launch_counts` (summed over runs, or of
    one run), the queue delay and API duration of the directly launched dispatches, and
    every kernel's duration; ``graph_replayed``: a mask over those kernels of the ones a
    graph launch replayed (None: none). Many-tiny-kernels is judged on the other kernels:
    a graph replay launches its kernels with one call, so their count costs no launches."""
    kd = kernel_dur_ns
    n = len(kd)
    tiny = kd < TINY_KERNEL_NS
    linked = len(api_dur_ns) > 0
    direct = kd if graph_replayed is None or not graph_replayed.any() else kd[~graph_replayed]
    nd = len(direct)
    graphs = counts["graph_launch_calls"]
    return {
        "launch_calls": counts["launch_calls"],
        "graph_launch_calls": graphs,
        "linked_dispatches": counts["linked_dispatches"],
        "graph_dispatches": counts["graph_dispatches"],
        "api_total_ns": int(counts["api_total_ns"]),
        "graph_launch_api_ns": int(counts["graph_launch_api_ns"]),
        "api_pct_of_wall": round(100.0 * counts["api_total_ns"] / wall_ns, 4) if wall_ns > 0 else 0.0,
        "median_api_ns": float(np.median(api_dur_ns)) if linked else None,
        "median_queue_delay_ns": float(np.median(queue_delay_ns)) if linked else None,
        "p90_queue_delay_ns": float(np.percentile(queue_delay_ns, 90)) if linked else None,
        "median_kernel_ns": float(np.median(kd)) if n else None,
        "avg_kernel_ns": float(kd.mean()) if n else None,
        "tiny_kernel_threshold_ns": TINY_KERNEL_NS,
        "tiny_kernels": int(tiny.sum()),
        "tiny_kernel_time_ns": int(kd[tiny].sum()) if n else 0,
        "many_tiny_kernels": bool(nd > MANY_LAUNCHES and direct.mean() < TINY_KERNEL_NS) if nd else False,
        "direct_kernels": int(nd),
        "direct_avg_kernel_ns": float(direct.mean()) if nd else None,
        "direct_tiny_kernels": int((direct < TINY_KERNEL_NS).sum()),
        "launches_per_graph": round(counts["graph_dispatches"] / graphs, 4) if graphs else None,
    }


def launch_stats(kernels: pd.DataFrame, api: pd.DataFrame, wall_ns: int, classes: np.ndarray | None = None, links: pd.DataFrame | None = None) -> LaunchSection:
    """Launch overhead of one run: API duration, queue delay and kernel time of linked dispatches.

    Graph replays (hipGraphLaunch) are counted apart: one API call launches many kernels,
    so their queue delay grows along the graph and is not a per-launch cost.
    """
    classes = api_classes(api) if classes is None else classes
    links = link_launches(kernels, api, classes) if links is None else links
    direct = ~links["graph"].to_numpy()
    replayed = np.zeros(len(kernels), dtype=bool)
    replayed[links["kernel_row"].to_numpy()[~direct]] = True
    return launch_section(
        launch_counts(api, classes, links),
        links["queue_delay_ns"].to_numpy()[direct],
        links["api_dur_ns"].to_numpy()[direct],
        kernels["end"].to_numpy() - kernels["start"].to_numpy(),
        wall_ns,
        replayed,
    )
