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
from tui_prof.analysis.hostapi import (
    BLOCKING_COPY,
    COPY,
    GRAPH_LAUNCH,
    LAUNCH,
    SYNC,
    CorrIndex,
)
from tui_prof.model import Run

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

    def __init__(self, columns: list[pd.Series]):
        position: dict[str, int] = {}
        self.parts = []  # (first row, codes, part code -> union code)
        first = 0
        for column in columns:
            if not isinstance(column.dtype, pd.CategoricalDtype):
                column = column.astype("category")
            lookup = np.array([position.setdefault(str(c), len(position)) for c in column.cat.categories], dtype=np.int64)
            self.parts.append((first, column.cat.codes.to_numpy(), lookup))
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
    gpu_ids = {a.id for a in run.gpu_agents} or set(np.unique(k["agent"].to_numpy()).tolist())

    def joined(k_col: np.ndarray, c_col: np.ndarray) -> np.ndarray:
        return np.concatenate([k_col, c_col]) if len(c_col) else k_col

    c_agent = copy_agents(c, gpu_ids) if len(c) else np.array([], dtype=np.int64)
    return {
        "agent": joined(np.asarray(k["agent"].to_numpy(), dtype=np.int64), c_agent),
        "start": joined(k["start"].to_numpy(), c["start"].to_numpy()),
        "end": joined(k["end"].to_numpy(), c["end"].to_numpy()),
        "corr": joined(k["correlation_id"].to_numpy(), c["correlation_id"].to_numpy()),
        "tid": joined(k["tid"].to_numpy(), c["tid"].to_numpy()),
        "kernels": len(k),  # rows below this are kernels, the others copies
        "names": _Names([k["name"], c["name"]] if len(c) else [k["name"]]),  # only listed gaps need names
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


def gpu_timeline(run: Run, threshold_ns: int = DEFAULT_GAP_THRESHOLD_NS) -> tuple[list[dict], pd.DataFrame]:
    """Busy/idle per agent and the listed gaps (>= threshold_ns) of one run.

    Returns ``(agents, gaps)``: one dict per agent with activity (span_ns, busy_ns,
    idle_ns, busy_pct, idle_pct, first_ns, last_ns, dispatches, copies, gaps_by_cause
    {cause: ns}, gaps_count_by_cause, gaps_count, below_threshold_ns,
    below_threshold_count) and a DataFrame with the columns ``GAP_COLUMNS``.
    """
    agents, gaps = gpu_gaps(run, threshold_ns)
    return agents, gaps.frame()


def gpu_gaps(run: Run, threshold_ns: int = DEFAULT_GAP_THRESHOLD_NS, *, corr_index: CorrIndex | None = None) -> tuple[list[dict], GapSet]:
    """As :func:`gpu_timeline`, with the gaps as a :class:`GapSet` (names not yet looked up).

    ``corr_index``: the :class:`CorrIndex` of ``run.api`` (with its API classes) when the
    caller has it; built here otherwise.
    """
    act = _activity(run)
    api = run.api
    has_api = len(api) > 0
    index = CorrIndex(api) if corr_index is None else corr_index.check(api)
    classes = index.classes
    has_graph = has_api and int(classes.max()) == GRAPH_LAUNCH  # GRAPH_LAUNCH is the top code
    a_start = api["start"].to_numpy()
    a_end = api["end"].to_numpy()
    a_tid = api["tid"].to_numpy()
    a_order = np.argsort(a_start, kind="stable") if has_api and not api["start"].is_monotonic_increasing else None
    empty = np.array([], np.int64)

    def sub(mask):
        """Start, end (sorted by start) and API rows of the calls in ``mask``."""
        rows = np.flatnonzero(mask)
        s, e = a_start[rows], a_end[rows]
        if a_order is not None:
            o = np.argsort(s, kind="stable")
            return s[o], e[o], rows[o]
        return s, e, rows

    subsets: dict[str, tuple] = {}  # per API class, built on first use

    def subset(label: str) -> tuple:
        if label not in subsets:
            if not has_api:
                subsets[label] = (empty, empty, empty)
            elif label == "sync":
                subsets[label] = sub(classes == SYNC)
            elif label == "copy":
                subsets[label] = sub((classes == COPY) | (classes == BLOCKING_COPY))
            else:  # launch: LAUNCH and GRAPH_LAUNCH, the top codes
                subsets[label] = sub(classes >= LAUNCH)
        return subsets[label]

    # every call sorted by start (the call before a gap); None rows: already in that order
    if not has_api:
        all_s, all_rows = empty, empty
    elif a_order is None:
        all_s, all_rows = a_start, None
    else:
        all_s, all_rows = a_start[a_order], a_order
    gapset = GapSet(act, _Names([api["name"]]), all_s, all_rows)
    # per API class: the calls of each host thread, sorted by start (computed on first use)
    by_thread: dict[tuple[str, int], tuple] = {}

    def calls_of(label: str, t: int):
        key = (label, int(t))
        if key not in by_thread:
            s_, e_, r_ = subset(label)
            if t < 0:
                by_thread[key] = (s_, e_, r_)
            else:
                a_sel = a_tid[r_] == t
                by_thread[key] = (s_, e_, r_) if a_sel.all() else (s_[a_sel], e_[a_sel], r_[a_sel])
        return by_thread[key]

    agents_out: list[dict] = []
    agent_col = act["agent"]
    agent_ids = agent_col[:1] if len(agent_col) and agent_col.min() == agent_col.max() else np.unique(agent_col)
    threshold = max(threshold_ns, 1)
    for agent in agent_ids:
        if len(agent_ids) == 1:
            rows = None  # one GPU: every activity row, in stored order (no index array)
            start = act["start"]
        else:
            rows = np.flatnonzero(agent_col == agent)
            start = act["start"][rows]
        if not np.all(start[1:] >= start[:-1]):
            o = np.argsort(start, kind="stable")
            rows, start = (o if rows is None else rows[o]), start[o]
            end = act["end"][rows]
        else:
            end = act["end"] if rows is None else act["end"][rows]
        count = len(start)
        cummax = np.maximum.accumulate(end)
        gap_len = start[1:] - cummax[:-1]
        np.maximum(gap_len, 0, out=gap_len)  # overlapping work: no gap
        first, last = int(start[0]), int(cummax[-1])
        span = last - first
        idle = int(gap_len.sum())
        busy = span - idle
        listed = np.flatnonzero(gap_len >= threshold)
        n = len(listed)
        idle_gaps = int(np.count_nonzero(gap_len))
        del gap_len
        gs = cummax[:-1][listed]
        ge = start[1:][listed]
        del cummax
        if rows is None:
            prev_rows, next_rows = listed, listed + 1
        else:
            prev_rows, next_rows = rows[:-1][listed], rows[1:][listed]
        cause = np.full(n, CAUSES.index("other"), dtype=np.int8)
        api_cause = np.full(n, -1, dtype=np.int64)  # API row that decided the cause
        decided = np.zeros(n, bool)
        # the call carrying the next work's correlation id (any class), and its launching call
        next_corr = act["corr"][next_rows]
        if has_api and n:
            submit_row = index.rows(next_corr)
            next_api_row = index.launch_of_rows(submit_row) if index.unique else index.launch_rows(next_corr)
        else:
            submit_row = next_api_row = np.full(n, -1, dtype=np.int64)
        next_linked = next_api_row >= 0
        # 1. graph replay
        if has_graph and n:
            next_is_graph = next_linked & (classes[np.maximum(next_api_row, 0)] == GRAPH_LAUNCH)
            if next_is_graph.any():
                graph = next_is_graph & (act["corr"][prev_rows] == next_corr)
                cause[graph] = CAUSES.index("graph")
                api_cause[graph] = next_api_row[graph]
                decided |= graph
        del next_corr
        # 2. sync (started before the next work was submitted), 3. copy
        next_tid = act["tid"][next_rows]
        if has_api and n:
            linked_any = submit_row >= 0
            # min(ge, max(start of the submitting call (ge when none), gs + 1))
            ge_sync = np.take(a_start, submit_row, mode="clip")
            np.copyto(ge_sync, ge, where=~linked_any)
            ge_sync -= 1
            np.maximum(ge_sync, gs, out=ge_sync)
            ge_sync += 1
            np.minimum(ge_sync, ge, out=ge_sync)
            # host thread that submitted the next work: only its calls can hold it back
            unknown_tid = (next_tid < 0) & linked_any
            if unknown_tid.any():
                next_tid = np.where(unknown_tid, a_tid[np.maximum(submit_row, 0)], next_tid)
        else:
            ge_sync = ge
        del submit_row
        for label, bound in (("sync", ge_sync), ("copy", ge)):
            if not len(subset(label)[2]):
                continue  # no calls of this class: nothing to find
            open_rows = np.flatnonzero(~decided) if decided.any() else None  # only undecided gaps need a search
            g_tid = next_tid if open_rows is None else next_tid[open_rows]
            tids = g_tid[:1] if len(g_tid) and g_tid.min() == g_tid.max() else np.unique(g_tid)
            if len(tids) == 1:
                s_t, e_t, r_t = calls_of(label, tids[0])
                g_gs, g_bound = (gs, bound) if open_rows is None else (gs[open_rows], bound[open_rows])
                found = _overlap_rows(s_t, e_t, r_t, g_gs, g_bound)
            else:
                found = np.full(len(g_tid), -1, dtype=np.int64)  # API row
                for t in tids:
                    s_t, e_t, r_t = calls_of(label, t)
                    g_sel = np.flatnonzero(g_tid == t)
                    g_rows = g_sel if open_rows is None else open_rows[g_sel]
                    found[g_sel] = _overlap_rows(s_t, e_t, r_t, gs[g_rows], bound[g_rows])
            take = np.flatnonzero(found >= 0)
            if open_rows is not None:
                found, take = found[take], open_rows[take]
            else:
                found = found[take]
            cause[take] = CAUSES.index(label)
            api_cause[take] = found
            decided[take] = True
        del ge_sync, next_tid
        # 4. launch
        if n and has_api:
            late = next_linked & (np.take(a_start, next_api_row, mode="clip") >= gs)
            launch = (~decided) & late
            api_cause[launch] = next_api_row[launch]
            # not linked: a launch call overlapping the gap
            open_rows = np.flatnonzero((~decided) & ~next_linked)
            if len(open_rows):
                lch_s, lch_e, lch_rows = subset("launch")
                hit = _overlapping(lch_s, lch_e, gs[open_rows], ge[open_rows])
                ok = hit >= 0
                launch[open_rows[ok]] = True
                api_cause[open_rows[ok]] = lch_rows[hit[ok]]
            cause[launch] = CAUSES.index("launch")
            decided |= launch
        durations = ge - gs
        gapset.parts.append(
            {
                "agent": np.full(n, int(agent), dtype=np.int64),
                "start": gs,
                "end": ge,
                "cause": cause,
                "api_cause": api_cause,
                "prev_row": prev_rows,
                "next_row": next_rows,
            }
        )
        by_cause = {c: int(durations[cause == i].sum()) for i, c in enumerate(CAUSES)}
        count_by_cause = {c: int(v) for c, v in zip(CAUSES, np.bincount(cause, minlength=len(CAUSES)), strict=True)}
        listed_ns = int(durations.sum())
        dispatches = min(count, act["kernels"]) if rows is None else int(np.count_nonzero(rows < act["kernels"]))
        agents_out.append(
            {
                "agent": int(agent),
                "first_ns": first,
                "last_ns": last,
                "span_ns": span,
                "busy_ns": busy,
                "idle_ns": idle,
                "busy_pct": round(100.0 * busy / span, 4) if span > 0 else 100.0,
                "idle_pct": round(100.0 * idle / span, 4) if span > 0 else 0.0,
                "dispatches": dispatches,
                "copies": int(count - dispatches),
                "gaps_count": int(n),
                "gaps_by_cause": by_cause,
                "gaps_count_by_cause": count_by_cause,
                "below_threshold_ns": idle - listed_ns,  # idle gaps shorter than the threshold
                "below_threshold_count": idle_gaps - n,
            }
        )
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
