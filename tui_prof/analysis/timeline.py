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

from tui_prof.analysis.hostapi import (
    BLOCKING_COPY,
    COPY,
    GRAPH_LAUNCH,
    LAUNCH,
    SYNC,
    api_classes,
    unique_match,
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


def _activity(run: Run) -> dict[str, np.ndarray]:
    """All GPU intervals of a run as flat arrays: agent, start, end, corr, pid, name, kind (0 kernel, 1 copy)."""
    k, c = run.kernels, run.copies
    gpu_ids = {a.id for a in run.gpu_agents} or set(np.unique(k["agent"].to_numpy()).tolist())
    c_agent = copy_agents(c, gpu_ids) if len(c) else np.array([], dtype=np.int64)
    k_names = k["name"]
    # Kernel then copy names as one categorical (codes only: no per-row strings).
    names = pd.Series(pd.api.types.union_categoricals([k_names.astype("category"), c["name"].astype("category")],
                                                      ignore_order=True)) if len(c) else k_names
    return {
        "agent": np.concatenate([k["agent"].to_numpy().astype(np.int64), c_agent]),
        "start": np.concatenate([k["start"].to_numpy(), c["start"].to_numpy()]),
        "end": np.concatenate([k["end"].to_numpy(), c["end"].to_numpy()]),
        "corr": np.concatenate([k["correlation_id"].to_numpy(), c["correlation_id"].to_numpy()]),
        "tid": np.concatenate([k["tid"].to_numpy(), c["tid"].to_numpy()]),
        "kind": np.concatenate([np.zeros(len(k), np.int8), np.ones(len(c), np.int8)]),
        "kernel_names": k_names,
        "name_lookup": _NameLookup(names),  # row -> name, only listed gaps need names
    }


def _name_at(act: dict, rows: np.ndarray) -> pd.Categorical:
    return act["name_lookup"](rows)


class _NameLookup:
    """Row index -> name of a category column, vectorised; returns a Categorical (-1 -> "")."""

    def __init__(self, column: pd.Series):
        if not isinstance(column.dtype, pd.CategoricalDtype):
            column = column.astype("category")
        self.codes = column.cat.codes.to_numpy()  # int8/16/32: widened only for the rows looked up
        cats = [str(c) for c in column.cat.categories]
        if "" in cats:
            self.blank = cats.index("")
        else:
            self.blank = len(cats)
            cats.append("")
        self.categories = pd.Index(cats, dtype=object)

    def __call__(self, rows: np.ndarray) -> pd.Categorical:
        rows = np.asarray(rows, dtype=np.int64)
        if len(self.codes) == 0:
            codes = np.full(len(rows), self.blank)
        else:
            codes = np.where(rows >= 0, self.codes[np.maximum(rows, 0)].astype(np.int64), self.blank)
            codes = np.where(codes < 0, self.blank, codes)
        return pd.Categorical.from_codes(codes, categories=self.categories)


def _overlapping(starts: np.ndarray, ends: np.ndarray, gs: np.ndarray, ge: np.ndarray) -> np.ndarray:
    """For each gap [gs, ge), the index of an interval (sorted by start) that overlaps it, else -1.

    Uses the running maximum of ``ends``: an interval with start < ge and end > gs exists
    iff the largest end among intervals starting before ge exceeds gs.
    """
    if len(starts) == 0:
        return np.full(len(gs), -1, dtype=np.int64)
    cummax = np.maximum.accumulate(ends)
    arg = np.maximum.accumulate(np.where(ends == cummax, np.arange(len(ends)), 0))
    idx = np.searchsorted(starts, ge, side="left") - 1
    valid = idx >= 0
    idx_c = np.maximum(idx, 0)
    hit = valid & (cummax[idx_c] > gs)
    return np.where(hit, arg[idx_c], -1)


def gpu_timeline(run: Run, threshold_ns: int = DEFAULT_GAP_THRESHOLD_NS) -> tuple[list[dict], pd.DataFrame]:
    """Busy/idle per agent and the listed gaps (>= threshold_ns) of one run.

    Returns ``(agents, gaps)``: one dict per agent with activity (span_ns, busy_ns,
    idle_ns, busy_pct, idle_pct, first_ns, last_ns, dispatches, copies, gaps_by_cause
    {cause: ns}, gaps_count_by_cause, gaps_count, below_threshold_ns,
    below_threshold_count) and a DataFrame with the columns ``GAP_COLUMNS``.
    """
    act = _activity(run)
    api = run.api
    classes = api_classes(api) if len(api) else np.array([], dtype=np.int8)
    a_start = api["start"].to_numpy()
    a_end = api["end"].to_numpy()
    a_order = np.argsort(a_start, kind="stable") if len(api) and not api["start"].is_monotonic_increasing else None

    def sub(mask):
        if mask is None:  # every call
            if a_order is not None:
                return a_start[a_order], a_end[a_order], a_order
            return a_start, a_end, np.arange(len(a_start))
        rows = np.flatnonzero(mask)
        s, e = a_start[rows], a_end[rows]
        if a_order is not None:
            o = np.argsort(s, kind="stable")
            return s[o], e[o], rows[o]
        return s, e, rows

    sync_s, sync_e, sync_rows = sub((classes == SYNC)) if len(api) else (np.array([], np.int64),) * 3
    copy_s, copy_e, copy_rows = sub((classes == COPY) | (classes == BLOCKING_COPY)) if len(api) else (np.array([], np.int64),) * 3
    launch_mask = (classes == LAUNCH) | (classes == GRAPH_LAUNCH)
    lch_s, lch_e, lch_rows = sub(launch_mask) if len(api) else (np.array([], np.int64),) * 3
    all_s, _, all_rows = sub(None) if len(api) else (np.array([], np.int64),) * 3
    # launching call of each activity row via correlation id (launch classes only)
    l_corr = api["correlation_id"].to_numpy()[lch_rows] if len(lch_rows) else np.array([], np.int64)
    if np.all(l_corr[1:] >= l_corr[:-1]):
        l_rows_sorted, l_corr_sorted = lch_rows, l_corr  # already in id order
    else:
        l_order = np.argsort(l_corr)
        l_rows_sorted, l_corr_sorted = lch_rows[l_order], l_corr[l_order]
    api_names = _NameLookup(api["name"])
    a_corr = api["correlation_id"].to_numpy()
    a_tid = api["tid"].to_numpy()
    if len(api) and np.all(a_corr[1:] >= a_corr[:-1]):
        all_corr_rows = np.arange(len(a_corr))  # already in id order (rocprofv3 writes it so)
        all_corr_sorted = a_corr
    else:
        all_corr_rows = np.argsort(a_corr, kind="stable") if len(api) else np.array([], np.int64)
        all_corr_sorted = a_corr[all_corr_rows] if len(api) else np.array([], np.int64)

    agents_out: list[dict] = []
    gap_frames: list[pd.DataFrame] = []
    agent_ids = np.unique(act["agent"])
    for agent in agent_ids:
        if len(agent_ids) == 1:
            rows = np.arange(len(act["agent"]))  # one GPU: no selection needed
            start = act["start"]
        else:
            rows = np.flatnonzero(act["agent"] == agent)
            start = act["start"][rows]
        if not np.all(start[1:] >= start[:-1]):
            o = np.argsort(start, kind="stable")
            rows, start = rows[o], start[o]
            end = act["end"][rows]
        else:
            end = act["end"][rows] if len(agent_ids) > 1 else act["end"]
        cummax = np.maximum.accumulate(end)
        gap_len = start[1:] - cummax[:-1]
        is_gap = gap_len > 0
        first, last = int(start[0]), int(cummax[-1])
        span = last - first
        idle = int(gap_len[is_gap].sum())
        busy = span - idle
        listed = np.nonzero(gap_len >= max(threshold_ns, 1))[0]
        gs = cummax[:-1][listed]
        ge = start[1:][listed]
        prev_rows = rows[:-1][listed]
        next_rows = rows[1:][listed]
        cause = np.full(len(listed), CAUSES.index("other"), dtype=np.int8)
        api_cause = np.full(len(listed), -1, dtype=np.int64)  # API row that decided the cause
        decided = np.zeros(len(listed), bool)
        # launching call of the next / previous activity
        next_corr = act["corr"][next_rows]
        prev_corr = act["corr"][prev_rows]
        li = unique_match(l_corr_sorted, next_corr)
        next_linked = li >= 0
        next_api_row = np.where(next_linked, l_rows_sorted[np.maximum(li, 0)] if len(l_corr_sorted) else -1, -1)
        # 1. graph replay
        if len(l_corr_sorted):
            next_is_graph = next_linked & (classes[np.maximum(next_api_row, 0)] == GRAPH_LAUNCH)
            graph = next_is_graph & (prev_corr == next_corr)
            cause[graph] = CAUSES.index("graph")
            api_cause[graph] = next_api_row[graph]
            decided |= graph
        # 2. sync (started before the next work was submitted), 3. copy
        if len(all_corr_sorted) and len(listed):
            ai = unique_match(all_corr_sorted, next_corr)
            linked_any = ai >= 0
            ai_c = np.maximum(ai, 0)
            submit = np.where(linked_any, a_start[all_corr_rows[ai_c]], ge)
            ge_sync = np.minimum(ge, np.maximum(submit, gs + 1))
        else:
            ge_sync = ge
        # host thread that submitted the next work: only its calls can hold it back
        next_tid = act["tid"][next_rows]
        if len(all_corr_sorted) and len(listed):
            next_tid = np.where((next_tid < 0) & linked_any, a_tid[all_corr_rows[ai_c]], next_tid)
        for label, (s_, e_, r_), bound in (("sync", (sync_s, sync_e, sync_rows), ge_sync), ("copy", (copy_s, copy_e, copy_rows), ge)):
            found = np.full(len(listed), -1, dtype=np.int64)  # API row
            for t in np.unique(next_tid):
                g_sel = next_tid == t
                a_sel = (a_tid[r_] == t) if t >= 0 else np.ones(len(r_), bool)
                hit = _overlapping(s_[a_sel], e_[a_sel], gs[g_sel], bound[g_sel] if np.ndim(bound) else bound)
                found[g_sel] = np.where(hit >= 0, r_[a_sel][np.maximum(hit, 0)] if a_sel.any() else -1, -1)
            take = (~decided) & (found >= 0)
            cause[take] = CAUSES.index(label)
            api_cause[take] = found[take]
            decided |= take
        # 4. launch
        if len(listed) and len(api):
            late = next_linked & (a_start[np.maximum(next_api_row, 0)] >= gs)
            hit = _overlapping(lch_s, lch_e, gs, ge)
            launch = (~decided) & (late | (~next_linked & (hit >= 0)))
            cause[launch] = CAUSES.index("launch")
            src = np.where(late, next_api_row, np.where(hit >= 0, lch_rows[np.maximum(hit, 0)] if len(lch_rows) else -1, -1))
            api_cause[launch] = src[launch]
            decided |= launch
        # API call that preceded the gap (last call starting at or before the gap start)
        if len(all_s) and len(listed):
            bi = np.searchsorted(all_s, gs, side="right") - 1
            api_before = api_names(np.where(bi >= 0, all_rows[np.maximum(bi, 0)], -1))
        else:
            api_before = api_names(np.full(len(listed), -1))
        durations = ge - gs
        gaps = pd.DataFrame(
            {
                "agent": np.full(len(listed), int(agent), dtype=np.int64),
                "start": gs,
                "end": ge,
                "duration_ns": durations,
                "cause": pd.Categorical.from_codes(cause, categories=list(CAUSES)),
                "api_cause": api_names(api_cause),
                "api_before": api_before,
                "prev_name": _name_at(act, prev_rows),
                "next_name": _name_at(act, next_rows),
            },
            columns=list(GAP_COLUMNS),
        )
        gap_frames.append(gaps)
        by_cause = {c: int(durations[cause == i].sum()) for i, c in enumerate(CAUSES)}
        count_by_cause = {c: int(v) for c, v in zip(CAUSES, np.bincount(cause, minlength=len(CAUSES)))}
        below = is_gap & (gap_len < max(threshold_ns, 1))
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
                "dispatches": int((act["kind"][rows] == 0).sum()),
                "copies": int((act["kind"][rows] == 1).sum()),
                "gaps_count": int(len(listed)),
                "gaps_by_cause": by_cause,
                "gaps_count_by_cause": count_by_cause,
                "below_threshold_ns": int(gap_len[below].sum()),
                "below_threshold_count": int(below.sum()),
            }
        )
    gaps_all = pd.concat(gap_frames, ignore_index=True) if gap_frames else pd.DataFrame({c: [] for c in GAP_COLUMNS})
    return agents_out, gaps_all


def union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Length in ns of the union of intervals [start, end) (any order)."""
    if len(starts) == 0:
        return 0
    o = np.argsort(starts, kind="stable")
    s, e = starts[o], ends[o]
    cummax = np.maximum.accumulate(e)
    gaps = s[1:] - cummax[:-1]
    return int(cummax[-1] - s[0] - gaps[gaps > 0].sum())
