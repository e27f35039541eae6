"""GPU busy and idle time per agent, and every idle gap with its probable cause.

Definitions (ns, the profiler's clock):

* GPU activity of an agent = its kernel dispatches plus the copies it takes part in
  (a copy belongs to its destination agent when that is a GPU, else to its source), over
  all queues and streams of the agent.
* busy = length of the union of those intervals (overlapping work counted once);
  span = last end - first start; idle = span - busy, made of gaps between intervals.
  (TraceLens gpu_timeline uses the same union; rocpd's ``busy`` view sums durations
  instead, see docs/metrics.md.)
* A gap >= ``threshold_ns`` is listed individually and classified, first rule that holds:

  1. ``graph``  both neighbours were launched by the same graph launch (hipGraphLaunch):
     the gap is inside one graph replay, a GPU-side dependency, not host time;
  2. ``sync``   a synchronisation API call (hip/cuda Device/Stream/Event Synchronize)
     overlaps the gap and started before the work after the gap was submitted: the host
     waited for the GPU to drain, then had to issue new work;
  3. ``copy``   a memcpy/memset API call overlaps the gap (host-side copy, e.g. a
     pageable staging copy, or a blocking hipMemcpy);
  4. ``launch`` the work after the gap was launched by an API call that started after the
     gap began (HTA's "host wait": the host did not enqueue fast enough), or, when the
     next dispatch is not linked, a launch call overlaps the gap;
  5. ``other``  none of these (the next work was queued before the gap: dependency,
     event wait, or nothing recorded on the host).

  Gaps shorter than the threshold count as idle but are only totalled.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tui_prof.analysis.arrays import in_order
from tui_prof.analysis.hostapi import BLOCKING_COPY, COPY, GRAPH_LAUNCH, LAUNCH, SYNC, CorrIndex
from tui_prof.analysis.hostops import dominant_ops
from tui_prof.model import Run
from tui_prof.model.schema import category_array, column_array

DEFAULT_GAP_THRESHOLD_NS = 10_000  # [P] 10 µs: the short-kernel/launch-cost scale (TraceLens, rocinsight)
CAUSES = ("graph", "sync", "copy", "launch", "other")

GAP_COLUMNS = ("agent", "start", "end", "duration_ns", "cause", "api_cause", "api_before", "prev_name", "next_name")


def copy_agents(copies: pd.DataFrame, gpu_ids: set[int]) -> np.ndarray:
    """Agent each copy is attributed to: destination if a GPU, else source, else destination."""
    dst = copies["dst_agent"].to_numpy().astype(np.int64)
    src = copies["src_agent"].to_numpy().astype(np.int64)
    ids = np.array(sorted(gpu_ids), dtype=np.int64)
    dst_gpu = np.isin(dst, ids)
    src_gpu = np.isin(src, ids)
    return np.where(dst_gpu, dst, np.where(src_gpu, src, np.where(dst >= 0, dst, src)))


class _Names:
    """Row index -> name, vectorised, over consecutive row ranges that each have their own
    category column (kernels, then copies). Categories are the union in first-seen order
    with "" for missing values; only the rows looked up are converted."""

    def __init__(self, columns: list[pd.Series] | list[pd.Categorical]):
        position: dict[str, int] = {}
        self.parts = []  # (first row, codes, part code -> union code)
        first = 0
        for column in columns:
            if isinstance(column, pd.Categorical):
                values = column
            else:
                if not isinstance(column.dtype, pd.CategoricalDtype):
                    column = column.astype("category")
                values = column.array  # the Categorical: no Series per ``.cat`` access
            categories = values.categories
            lookup = np.array([position.setdefault(str(c), len(position)) for c in categories] if len(categories) else [], dtype=np.int64)
            self.parts.append((first, values.codes, lookup))
            first += len(column)
        self.blank = position.setdefault("", len(position))
        self.categories = pd.Index(list(position), dtype=object)

    def codes(self, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        out = np.full(len(rows), self.blank, dtype=np.int64)
        for first, codes, lookup in self.parts:
            sel = (rows >= first) & (rows < first + len(codes))
            if not sel.any():
                continue
            part = codes[rows[sel] - first].astype(np.int64)
            out[sel] = np.where(part >= 0, lookup[np.maximum(part, 0)] if len(lookup) else self.blank, self.blank)
        return out

    def __call__(self, rows: np.ndarray) -> pd.Categorical:
        return pd.Categorical.from_codes(self.codes(rows), categories=self.categories)


def _activity(run: Run) -> dict:
    """All GPU intervals of a run as flat arrays: agent, start, end, corr, tid (kernels, then copies)."""
    k, c = run.kernels, run.copies
    gpu_ids = {a.id for a in run.gpu_agents} or set(np.unique(column_array(k, "agent")).tolist())

    def joined(column: str) -> np.ndarray:  # no copies: the kernels' column, no step for the empty copy table
        return np.concatenate([column_array(k, column), column_array(c, column)]) if len(c) else column_array(k, column)

    k_agent = np.asarray(column_array(k, "agent"), dtype=np.int64)
    return {
        "agent": np.concatenate([k_agent, copy_agents(c, gpu_ids)]) if len(c) else k_agent,
        "start": joined("start"),
        "end": joined("end"),
        "corr": joined("correlation_id"),
        "tid": joined("tid"),
        "kernels": len(k),  # rows below this are kernels, the others copies
        "names": _Names([category_array(k, "name"), category_array(c, "name")] if len(c) else [category_array(k, "name")]),  # only listed gaps need names
    }


def _overlapping(starts: np.ndarray, ends: np.ndarray, gs: np.ndarray, ge: np.ndarray) -> np.ndarray:
    """For each gap [gs, ge), the index of an interval (sorted by start) that overlaps it, else -1.

    Uses the running maximum of ``ends``: an interval with start < ge and end > gs exists
    iff the largest end among intervals starting before ge exceeds gs.
    """
    if len(starts) == 0 or len(gs) == 0:
        return np.full(len(gs), -1, dtype=np.int64)
    cummax = np.maximum.accumulate(ends)
    idx = np.searchsorted(starts, ge, side="left")
    idx -= 1  # last interval starting before ge
    hit = idx >= 0
    np.maximum(idx, 0, out=idx)
    hit &= np.take(cummax, idx) > gs
    if not hit.any():
        return np.full(len(gs), -1, dtype=np.int64)
    # index of the interval holding the running maximum (the last one reaching it)
    arg = np.arange(len(ends), dtype=np.int32 if len(ends) < 2**31 else np.int64)
    np.multiply(arg, ends == cummax, out=arg)
    del cummax
    np.maximum.accumulate(arg, out=arg)
    return np.where(hit, np.take(arg, idx), np.int64(-1))


def _overlap_rows(starts: np.ndarray, ends: np.ndarray, rows: np.ndarray, gs: np.ndarray, ge: np.ndarray) -> np.ndarray:
    """As :func:`_overlapping`, answering ``rows[index]`` (an API row) instead of the index."""
    hit = _overlapping(starts, ends, gs, ge)
    if not len(rows):
        return hit  # every answer -1
    found = np.take(rows, hit, mode="clip")
    found[hit < 0] = -1
    return found.astype(np.int64, copy=False)


class GapSet:
    """The idle gaps >= threshold of one run, as arrays (in agent order, then time order);
    names are looked up only for the rows that are materialised (:meth:`frame`)."""

    def __init__(self, act: dict, api_names: _Names, all_s: np.ndarray, all_rows: np.ndarray | None):
        """``all_s``: start of every API call, sorted; ``all_rows``: their API rows (None: the
        calls are stored in that order)."""
        self.names = act["names"]
        self.api_names = api_names
        self.all_s, self.all_rows = all_s, all_rows
        self.parts: list[dict[str, np.ndarray]] = []
        self.markers: pd.DataFrame | None = None  # the run's host ranges and each API row's thread (host_ops)
        self.api_tid: np.ndarray = _EMPTY

    def __len__(self) -> int:
        return sum(len(p["start"]) for p in self.parts)

    def column(self, name: str) -> np.ndarray:
        parts = [p[name] for p in self.parts]
        return np.concatenate(parts) if len(parts) != 1 else parts[0]

    def frame(self, rows: np.ndarray | None = None) -> pd.DataFrame:
        """The gaps (all, or the positions ``rows`` in that order) with the columns ``GAP_COLUMNS``."""
        if not self.parts:
            return pd.DataFrame({c: [] for c in GAP_COLUMNS})
        cols = {k: self.column(k) for k in ("agent", "start", "end", "cause", "api_cause", "prev_row", "next_row")}
        if rows is not None:
            cols = {k: v[rows] for k, v in cols.items()}
        gs = cols["start"]
        if len(self.all_s) and len(gs):
            bi = np.searchsorted(self.all_s, gs, side="right") - 1
            before = bi if self.all_rows is None else np.where(bi >= 0, self.all_rows[np.maximum(bi, 0)], -1)
        else:
            before = np.full(len(gs), -1)
        return pd.DataFrame(
            {
                "agent": cols["agent"],
                "start": gs,
                "end": cols["end"],
                "duration_ns": cols["end"] - gs,
                "cause": pd.Categorical.from_codes(cols["cause"], categories=list(CAUSES)),
                "api_cause": self.api_names(cols["api_cause"]),
                "api_before": self.api_names(before),
                "prev_name": self.names(cols["prev_row"]),
                "next_name": self.names(cols["next_row"]),
            },
            columns=list(GAP_COLUMNS),
        )

    def host_ops(self, rows: np.ndarray) -> list[str | None]:
        """Per gap at positions ``rows``: for a ``launch`` gap, the host operator that kept
        the launching call's thread busy over at least half of the gap (the innermost such
        range: analysis.hostops.dominant_ops) -- the host's own work, not the launch call,
        held the GPU; else None."""
        out: list[str | None] = [None] * len(rows)
        if self.markers is None or not len(self.markers) or not self.parts or not len(rows):
            return out
        cause, api = self.column("cause")[rows], self.column("api_cause")[rows]
        sel = np.flatnonzero((cause == CAUSES.index("launch")) & (api >= 0))
        if not len(sel):
            return out
        gs, ge = self.column("start")[rows][sel], self.column("end")[rows][sel]
        tids = self.api_tid[api[sel]] if len(self.api_tid) else np.full(len(sel), -1, np.int64)
        for i, a, b, op in zip(sel.tolist(), gs.tolist(), ge.tolist(), dominant_ops(self.markers, gs, ge, tids), strict=True):
            if op is not None and 2 * op.overlap_ns >= b - a:
                out[i] = op.name
        return out


def gpu_timeline(run: Run, threshold_ns: int = DEFAULT_GAP_THRESHOLD_NS) -> tuple[list[dict], pd.DataFrame]:
    """Busy/idle per agent and the listed gaps (>= threshold_ns) of one run.

    Returns ``(agents, gaps)``: one dict per agent with activity (span_ns, busy_ns,
    idle_ns, busy_pct, idle_pct, first_ns, last_ns, dispatches, copies, gaps_by_cause
    {cause: ns}, gaps_count_by_cause, gaps_count, below_threshold_ns,
    below_threshold_count) and a DataFrame with the columns ``GAP_COLUMNS``.
    """
    agents, gaps = gpu_gaps(run, threshold_ns)
    return agents, gaps.frame()


_EMPTY = np.array([], np.int64)


class _HostCalls:
    """The run's API calls as the gap causes search them: per class (sync, copy, launch) and
    per host thread, sorted by start, each built on first use."""

    def __init__(self, api: pd.DataFrame, index: CorrIndex) -> None:
        self.index = index
        self.classes = index.classes
        self.has_api = len(api) > 0
        self.has_graph = self.has_api and int(self.classes.max()) == GRAPH_LAUNCH  # GRAPH_LAUNCH is the top code
        self.start = column_array(api, "start")  # no Series per column: thousands of processes
        self.end = column_array(api, "end")
        self.tid = column_array(api, "tid")
        self.order = np.argsort(self.start, kind="stable") if self.has_api and not in_order(self.start) else None
        self._subsets: dict[str, tuple] = {}
        self._by_thread: dict[tuple[str, int], tuple] = {}

    def sorted_starts(self) -> tuple[np.ndarray, np.ndarray | None]:
        """Every call's start sorted, and its API rows (None: already in that order)."""
        if not self.has_api:
            return _EMPTY, _EMPTY
        if self.order is None:
            return self.start, None
        return self.start[self.order], self.order

    def _sub(self, mask: np.ndarray) -> tuple:
        """Start, end (sorted by start) and API rows of the calls in ``mask``."""
        rows = np.flatnonzero(mask)
        s, e = self.start[rows], self.end[rows]
        if self.order is not None:
            o = np.argsort(s, kind="stable")
            return s[o], e[o], rows[o]
        return s, e, rows

    def subset(self, label: str) -> tuple:
        if label not in self._subsets:
            if not self.has_api:
                self._subsets[label] = (_EMPTY, _EMPTY, _EMPTY)
            elif label == "sync":
                self._subsets[label] = self._sub(self.classes == SYNC)
            elif label == "copy":
                self._subsets[label] = self._sub((self.classes == COPY) | (self.classes == BLOCKING_COPY))
            else:  # launch: LAUNCH and GRAPH_LAUNCH, the top codes
                self._subsets[label] = self._sub(self.classes >= LAUNCH)
        return self._subsets[label]

    def calls_of(self, label: str, t: int) -> tuple:
        """:meth:`subset` of host thread ``t`` (every thread when ``t`` < 0)."""
        key = (label, int(t))
        if key not in self._by_thread:
            s_, e_, r_ = self.subset(label)
            if t < 0:
                self._by_thread[key] = (s_, e_, r_)
            else:
                a_sel = self.tid[r_] == t
                self._by_thread[key] = (s_, e_, r_) if a_sel.all() else (s_[a_sel], e_[a_sel], r_[a_sel])
        return self._by_thread[key]


class _AgentGaps:
    """One agent's activity in start order and its gaps >= the threshold: ``gs``/``ge`` the
    gap bounds, ``prev_rows``/``next_rows`` the activity rows around each gap."""

    def __init__(self, act: dict, rows: np.ndarray | None, threshold: int) -> None:
        start = act["start"] if rows is None else act["start"][rows]
        if not np.all(start[1:] >= start[:-1]):
            o = np.argsort(start, kind="stable")
            rows, start = (o if rows is None else rows[o]), start[o]
            end = act["end"][rows]
        else:
            end = act["end"] if rows is None else act["end"][rows]
        self.rows = rows  # None: every activity row, in stored order (no index array)
        self.count = len(start)
        cummax = np.maximum.accumulate(end)
        gap_len = start[1:] - cummax[:-1]
        np.maximum(gap_len, 0, out=gap_len)  # overlapping work: no gap
        self.first, self.last = int(start[0]), int(cummax[-1])
        self.span = self.last - self.first
        self.idle = int(gap_len.sum())
        listed = np.flatnonzero(gap_len >= threshold)
        self.n = len(listed)
        self.idle_gaps = int(np.count_nonzero(gap_len))
        self.gs = cummax[:-1][listed]
        self.ge = start[1:][listed]
        if rows is None:
            self.prev_rows, self.next_rows = listed, listed + 1
        else:
            self.prev_rows, self.next_rows = rows[:-1][listed], rows[1:][listed]


def _next_work_calls(act: dict, calls: _HostCalls, g: _AgentGaps) -> tuple[np.ndarray, np.ndarray]:
    """Per gap: the API row carrying the next work's correlation id (any class) and its
    launching call's row (-1 where none)."""
    if calls.has_api and g.n:
        next_corr = act["corr"][g.next_rows]
        submit_row = calls.index.rows(next_corr)
        next_api_row = calls.index.launch_of_rows(submit_row) if calls.index.unique else calls.index.launch_rows(next_corr)
        return submit_row, next_api_row
    none = np.full(g.n, -1, dtype=np.int64)
    return none, none


def _sync_bound(act: dict, calls: _HostCalls, g: _AgentGaps, submit_row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per gap: the end of the window a sync must start in (before the next work was
    submitted) and the host thread that submitted the next work (only its calls can hold it back)."""
    next_tid = act["tid"][g.next_rows]
    if not (calls.has_api and g.n):
        return g.ge, next_tid
    linked_any = submit_row >= 0
    # min(ge, max(start of the submitting call (ge when none), gs + 1))
    ge_sync = np.take(calls.start, submit_row, mode="clip")
    np.copyto(ge_sync, g.ge, where=~linked_any)
    ge_sync -= 1
    np.maximum(ge_sync, g.gs, out=ge_sync)
    ge_sync += 1
    np.minimum(ge_sync, g.ge, out=ge_sync)
    unknown_tid = (next_tid < 0) & linked_any
    if unknown_tid.any():
        next_tid = np.where(unknown_tid, calls.tid[np.maximum(submit_row, 0)], next_tid)
    return ge_sync, next_tid


def _calls_in_gaps(calls: _HostCalls, label: str, g: _AgentGaps, bound: np.ndarray, next_tid: np.ndarray, open_rows: np.ndarray | None) -> np.ndarray:
    """Per open gap (``open_rows``; None: every gap): the API row of a ``label`` call of the
    next work's thread overlapping [gs, bound), or -1."""
    g_tid = next_tid if open_rows is None else next_tid[open_rows]
    tids = g_tid[:1] if len(g_tid) and g_tid.min() == g_tid.max() else np.unique(g_tid)
    if len(tids) == 1:
        s_t, e_t, r_t = calls.calls_of(label, tids[0])
        g_gs, g_bound = (g.gs, bound) if open_rows is None else (g.gs[open_rows], bound[open_rows])
        return _overlap_rows(s_t, e_t, r_t, g_gs, g_bound)
    found = np.full(len(g_tid), -1, dtype=np.int64)  # API row
    for t in tids:
        s_t, e_t, r_t = calls.calls_of(label, t)
        g_sel = np.flatnonzero(g_tid == t)
        g_rows = g_sel if open_rows is None else open_rows[g_sel]
        found[g_sel] = _overlap_rows(s_t, e_t, r_t, g.gs[g_rows], bound[g_rows])
    return found


def _gap_causes(act: dict, calls: _HostCalls, g: _AgentGaps) -> tuple[np.ndarray, np.ndarray]:
    """(cause code, API row that decided it or -1) per gap, the first that holds of:
    1. graph replay, 2. sync (started before the next work was submitted), 3. copy,
    4. launch (the next work's launch call began after the gap did), else other."""
    n = g.n
    cause = np.full(n, CAUSES.index("other"), dtype=np.int8)
    api_cause = np.full(n, -1, dtype=np.int64)
    decided = np.zeros(n, bool)
    submit_row, next_api_row = _next_work_calls(act, calls, g)
    next_linked = next_api_row >= 0
    if calls.has_graph and n:
        next_is_graph = next_linked & (calls.classes[np.maximum(next_api_row, 0)] == GRAPH_LAUNCH)
        if next_is_graph.any():
            graph = next_is_graph & (act["corr"][g.prev_rows] == act["corr"][g.next_rows])
            cause[graph] = CAUSES.index("graph")
            api_cause[graph] = next_api_row[graph]
            decided |= graph
    ge_sync, next_tid = _sync_bound(act, calls, g, submit_row)
    for label, bound in (("sync", ge_sync), ("copy", g.ge)):
        if not len(calls.subset(label)[2]):
            continue  # no calls of this class: nothing to find
        open_rows = np.flatnonzero(~decided) if decided.any() else None  # only undecided gaps need a search
        found = _calls_in_gaps(calls, label, g, bound, next_tid, open_rows)
        take = np.flatnonzero(found >= 0)
        if open_rows is not None:
            found, take = found[take], open_rows[take]
        else:
            found = found[take]
        cause[take] = CAUSES.index(label)
        api_cause[take] = found
        decided[take] = True
    if n and calls.has_api:
        late = next_linked & (np.take(calls.start, next_api_row, mode="clip") >= g.gs)
        launch = (~decided) & late
        api_cause[launch] = next_api_row[launch]
        # not linked: a launch call overlapping the gap
        open_rows = np.flatnonzero((~decided) & ~next_linked)
        if len(open_rows):
            lch_s, lch_e, lch_rows = calls.subset("launch")
            hit = _overlapping(lch_s, lch_e, g.gs[open_rows], g.ge[open_rows])
            ok = hit >= 0
            launch[open_rows[ok]] = True
            api_cause[open_rows[ok]] = lch_rows[hit[ok]]
        cause[launch] = CAUSES.index("launch")
    return cause, api_cause


def _agent_record(agent: int, act: dict, g: _AgentGaps, cause: np.ndarray) -> dict:
    """The busy/idle row of one agent (see :func:`gpu_timeline`)."""
    durations = g.ge - g.gs
    by_cause = {c: int(durations[cause == i].sum()) for i, c in enumerate(CAUSES)}
    count_by_cause = {c: int(v) for c, v in zip(CAUSES, np.bincount(cause, minlength=len(CAUSES)), strict=True)}
    listed_ns = int(durations.sum())
    dispatches = min(g.count, act["kernels"]) if g.rows is None else int(np.count_nonzero(g.rows < act["kernels"]))
    busy = g.span - g.idle
    timed = g.first >= 0  # the model's -1: the activity has no timestamps (e.g. a counter run)
    return {
        "agent": int(agent),
        "first_ns": g.first if timed else None,
        "last_ns": g.last if timed else None,
        "span_ns": g.span,
        "busy_ns": busy,
        "idle_ns": g.idle,
        "busy_pct": round(100.0 * busy / g.span, 4) if g.span > 0 else 100.0,
        "idle_pct": round(100.0 * g.idle / g.span, 4) if g.span > 0 else 0.0,
        "dispatches": dispatches,
        "copies": int(g.count - dispatches),
        "gaps_count": int(g.n),
        "gaps_by_cause": by_cause,
        "gaps_count_by_cause": count_by_cause,
        "below_threshold_ns": g.idle - listed_ns,  # idle gaps shorter than the threshold
        "below_threshold_count": g.idle_gaps - g.n,
    }


def gpu_gaps(run: Run, threshold_ns: int = DEFAULT_GAP_THRESHOLD_NS, *, corr_index: CorrIndex | None = None) -> tuple[list[dict], GapSet]:
    """As :func:`gpu_timeline`, with the gaps as a :class:`GapSet` (names not yet looked up).

    ``corr_index``: the :class:`CorrIndex` of ``run.api`` (with its API classes) when the
    caller has it; built here otherwise.
    """
    act = _activity(run)
    api = run.api
    calls = _HostCalls(api, CorrIndex(api) if corr_index is None else corr_index.check(api))
    all_s, all_rows = calls.sorted_starts()  # the call before a gap
    gapset = GapSet(act, _Names([category_array(api, "name")]), all_s, all_rows)
    gapset.markers, gapset.api_tid = run.markers, calls.tid.astype(np.int64)
    agents_out: list[dict] = []
    agent_col = act["agent"]
    agent_ids = agent_col[:1] if len(agent_col) and agent_col.min() == agent_col.max() else np.unique(agent_col)
    threshold = max(threshold_ns, 1)
    for agent in agent_ids:
        g = _AgentGaps(act, None if len(agent_ids) == 1 else np.flatnonzero(agent_col == agent), threshold)
        cause, api_cause = _gap_causes(act, calls, g)
        part = {"agent": np.full(g.n, int(agent), dtype=np.int64), "start": g.gs, "end": g.ge, "cause": cause, "api_cause": api_cause}
        gapset.parts.append({**part, "prev_row": g.prev_rows, "next_row": g.next_rows})
        agents_out.append(_agent_record(int(agent), act, g, cause))
    return agents_out, gapset


def union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Length in ns of the union of intervals [start, end) (any order)."""
    if len(starts) == 0:
        return 0
    s, e = starts, ends
    if not in_order(s):  # sorted already (a trace's own order): no sort, no gather
        o = np.argsort(s, kind="stable")
        s, e = s[o], e[o]
    cummax = np.maximum.accumulate(e)
    gaps = s[1:] - cummax[:-1]
    return int(cummax[-1] - s[0] - gaps[gaps > 0].sum())


def merged_intervals(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals [start, end) as sorted, disjoint (starts, ends)."""
    if len(starts) == 0:
        return np.array([], np.int64), np.array([], np.int64)
    s, e = np.asarray(starts), np.asarray(ends)
    if not in_order(s):  # sorted already (the usual trace): no sort, no gather
        o = np.argsort(s, kind="stable")
        s, e = s[o], e[o]
    reach = np.maximum.accumulate(e)
    first = np.ones(len(s), dtype=bool)
    first[1:] = s[1:] > reach[:-1]
    idx = np.flatnonzero(first)
    return s[idx], np.maximum.reduceat(e, idx)


def _merge_by_start(ks: np.ndarray, ke: np.ndarray, cs: np.ndarray, ce: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Intervals (ks, ke) sorted by start and (cs, ce) in any order, as one list sorted by
    start: the few copies are sorted and slotted in by ``searchsorted`` (linear in the
    kernels, where sorting the joined list costs an n log n argsort and two gathers)."""
    if len(cs) > 1 and not in_order(cs):
        o = np.argsort(cs, kind="stable")
        cs, ce = cs[o], ce[o]
    slots = np.searchsorted(ks, cs, side="right") + np.arange(len(cs))
    starts = np.empty(len(ks) + len(cs), dtype=np.int64)
    ends = np.empty_like(starts)
    keep = np.ones(len(starts), dtype=bool)
    keep[slots] = False
    starts[keep], ends[keep] = ks, ke
    starts[slots], ends[slots] = cs, ce
    return starts, ends


def busy_intervals(run: Run) -> tuple[np.ndarray, np.ndarray]:
    """When any GPU of the process is busy: the union of all its kernels and copies (each
    agent's busy union, united), as sorted disjoint (starts, ends)."""
    k, c = run.kernels, run.copies
    if not (len(k) or len(c)):
        return np.array([], np.int64), np.array([], np.int64)
    ks, ke = k["start"].to_numpy(), k["end"].to_numpy()
    cs, ce = c["start"].to_numpy(), c["end"].to_numpy()
    if not len(c):
        return merged_intervals(ks, ke)
    if len(ks) > 1 and in_order(ks) and len(cs) * 8 < len(ks):
        return merged_intervals(*_merge_by_start(ks, ke, cs, ce))
    return merged_intervals(np.concatenate([ks, cs]), np.concatenate([ke, ce]))
