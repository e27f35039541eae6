"""Critical path and what-if re-scheduling of one process (docs/metrics.md, Critical path).

:func:`critical_path` walks the dependency graph (:mod:`tui_prof.analysis.depgraph`)
back from the last event of a window along the predecessor that bound each start and
end, and sums the path's intervals by what filled them: GPU compute by kernel category,
communication, copies, launch and queue, host operators by name (the host's own time
between API calls, named by the innermost host range around it), synchronisation, other
host API calls.

:func:`what_if` applies edits to the graph's durations and lags, re-schedules it
(:func:`~tui_prof.analysis.depgraph.schedule`) and reports the recorded (baseline) and
the projected span, steady step and critical path. Edits:

* ``scale PATTERN=FACTOR``: operations whose kernel category is PATTERN (``category:``
  prefix optional), whose launching operator matches ``op:REGEX``, or whose kernel / copy
  name matches the regular expression PATTERN, take FACTOR times their duration;
* ``remove sync-after-launch``: synchronisation calls that directly follow a launch on
  their thread neither wait nor take time (the host time that led to them goes too);
  each thread's last synchronisation stays (the program needs its results);
  ``remove sync``: the same for every synchronisation call;
* ``remove pageable-copy``: copies between device and pageable host memory run at the
  median bandwidth of the run's pinned copies of the same direction;
* ``remove host:REGEX``: host time inside the host operators whose name matches goes;
* ``remove warmup``: the projection starts at the first steady step;
* ``launch-free`` (also ``remove launch``): launch calls take no time, neither does the
  host work between consecutive launches of a thread (the framework's dispatch: what a
  CUDA/HIP graph replay or a fused launch removes) and an operation is ready when its
  launch call starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tui_prof.analysis import depgraph as dg
from tui_prof.analysis.arrays import code_totals
from tui_prof.analysis.hostapi import BLOCKING_COPY, LAUNCH, OTHER, SYNC, CorrIndex
from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES, DEFAULT_RULES, CategoryRules
from tui_prof.analysis.saferegex import BoundedPattern, PatternError
from tui_prof.model import Run
from tui_prof.model.schema import category_array

SCHEMA = "tuiprof.whatif/1"
GPU_SOURCES = frozenset({"gpu_user_annotation"})
HOST_NOT_NAMED = "(no host range recorded)"

# finding codes and gap causes -> the edit that removes them
REMOVE_ALIASES = {
    "sync-after-launch": "sync-after-launch",
    "sync": "sync",
    "idle-sync": "sync",
    "sync-overhead": "sync",
    "launch": "launch",
    "launch-bound": "launch",
    "many-tiny-kernels": "launch",
    "pageable-copy": "pageable-copy",
    "slow-copy": "pageable-copy",
    "copy": "pageable-copy",
    "warmup": "warmup",
    "warm-up": "warmup",
}


class WhatIfError(ValueError):
    """An edit that cannot be applied (unknown cause, bad pattern or factor)."""


@dataclass
class Edits:
    scales: list[tuple[str, float]] = field(default_factory=list)
    removes: list[str] = field(default_factory=list)
    launch_free: bool = False

    def check(self) -> None:
        for pattern, factor in self.scales:
            if not (factor >= 0 and np.isfinite(factor)):
                raise WhatIfError(f"--scale {pattern}={factor}: the factor must be a number >= 0")
            if pattern.startswith("op:"):
                _regex(pattern[3:])
            elif not _is_category(pattern):
                _regex(pattern)
        for cause in self.removes:
            if not cause.startswith("host:") and cause not in REMOVE_ALIASES:
                known = ", ".join(sorted(REMOVE_ALIASES))
                raise WhatIfError(f"--remove {cause}: not a cause tuiprof can remove (known: {known}, host:REGEX)")
            if cause.startswith("host:"):
                _regex(cause[5:])


def _regex(text: str) -> BoundedPattern:
    try:
        return BoundedPattern(text)  # refuses a pattern that backtracks exponentially
    except PatternError as err:
        raise WhatIfError(str(err)) from None


def _search(rx: BoundedPattern, texts: Iterable[str]) -> np.ndarray:
    """Per text, whether ``rx`` is found in it (matching has a time budget)."""
    try:
        return rx.search_all(texts)
    except PatternError as err:
        raise WhatIfError(str(err)) from None


CATEGORIES = {c.lower() for c, _ in DEFAULT_RULES} | {"other"}


def _is_category(pattern: str) -> bool:
    return pattern.lower().removeprefix("category:") in CATEGORIES


# ---------------------------------------------------------------- names and labels


def _op_names(run: Run, g: dg.DepGraph) -> tuple[np.ndarray, list[str]]:
    """Per node, a code into the returned names: kernel or copy name for operations, -1 for calls."""
    # the Categorical arrays themselves: a ``.cat`` accessor builds Series (per process, with thousands)
    k = category_array(run.kernels, "name") if len(run.kernels) else None
    c = category_array(run.copies, "name") if len(run.copies) else None
    kc = k.codes.astype(np.int64) if k is not None else np.array([], np.int64)
    cc = c.codes.astype(np.int64) if c is not None else np.array([], np.int64)
    knames = [str(x) for x in k.categories] if k is not None else []
    cnames = [str(x) for x in c.categories] if c is not None else []
    codes = np.full(g.size, -1, dtype=np.int64)
    ks, cs = np.flatnonzero(g.kind == dg.KERNEL), np.flatnonzero(g.kind == dg.COPY_OP)
    codes[ks] = kc[g.op_row[ks]]
    copy_codes = cc[g.op_row[cs]]
    codes[cs] = np.where(copy_codes >= 0, copy_codes + len(knames), -1)
    return codes, knames + cnames


def _categories(names: list[str], rules: CategoryRules) -> list[str]:
    return [rules.classify(n) for n in names]


def host_ranges(run: Run) -> pd.DataFrame:
    """Host ranges (markers that are not GPU-side annotations) with a duration."""
    m = run.markers
    if m.empty:
        return m
    return m[~m["source"].astype(str).isin(GPU_SOURCES) & (m["end"] > m["start"])]


def host_op_codes(run: Run, g: dg.DepGraph, nodes: np.ndarray, depth: int = 32) -> tuple[list[str], np.ndarray]:
    """For call nodes, the innermost host range of the same thread around the middle of the
    host time before them: (labels, a code into labels per node; ``HOST_NOT_NAMED`` when none)."""
    m = host_ranges(run)
    if m.empty or not len(nodes):
        return [HOST_NOT_NAMED], np.zeros(len(nodes), dtype=np.int64)
    api = run.api
    rows = g.api_row[nodes]
    pid = api["pid"].to_numpy()[rows].astype(np.int64)
    tid = api["tid"].to_numpy()[rows].astype(np.int64)
    prev = g.hprev[nodes]
    mid = g.t0 + (g.start[nodes] + np.where(prev >= 0, g.end[np.maximum(prev, 0)], g.start[nodes])) // 2
    mp, mt = m["pid"].to_numpy().astype(np.int64), m["tid"].to_numpy().astype(np.int64)
    ms, me = m["start"].to_numpy().astype(np.int64), m["end"].to_numpy().astype(np.int64)
    name_col = m["name"].astype("category")
    labels = [str(x) for x in name_col.cat.categories] + [HOST_NOT_NAMED]
    mcode = name_col.cat.codes.to_numpy().astype(np.int64)
    out = np.full(len(nodes), len(labels) - 1, dtype=np.int64)
    for key in set(zip(pid.tolist(), tid.tolist(), strict=True)):
        sel = np.flatnonzero((pid == key[0]) & (tid == key[1]))
        msel = np.flatnonzero((mp == key[0]) & (mt == key[1]))
        if not len(msel):
            continue
        o = msel[np.argsort(ms[msel], kind="stable")]
        s_sorted, e_sorted = ms[o], me[o]
        j = np.searchsorted(s_sorted, mid[sel], side="right") - 1
        found = np.full(len(sel), -1, dtype=np.int64)
        for _ in range(depth):  # the latest range starting before the point that still covers it: the innermost
            open_ = (found < 0) & (j >= 0)
            if not open_.any():
                break
            cover = open_ & (e_sorted[np.maximum(j, 0)] > mid[sel])
            found[cover] = j[cover]
            j = np.where(open_ & ~cover, j - 1, -1)
        hit = found >= 0
        out[sel[hit]] = np.where(mcode[o[found[hit]]] >= 0, mcode[o[found[hit]]], len(labels) - 1)
    return labels, out


def host_op_names(run: Run, g: dg.DepGraph, nodes: np.ndarray) -> list[str]:
    """:func:`host_op_codes` as one label per node."""
    labels, codes = host_op_codes(run, g, nodes)
    return [labels[c] for c in codes.tolist()]


# ---------------------------------------------------------------- critical path


@dataclass
class PathSummary:
    total_ns: int
    by_group: dict[str, dict[str, int]]  # group -> label -> ns
    by_kernel: dict[str, int]  # kernel / copy name -> ns of its runs on the path
    rows: list[tuple[str, str, int]] = field(default_factory=list)  # (group, label, ns), largest first
    mid: np.ndarray = field(default_factory=lambda: np.array([], np.int64))  # each interval's middle (graph-relative ns)
    length: np.ndarray = field(default_factory=lambda: np.array([], np.int64))
    group: np.ndarray = field(default_factory=lambda: np.array([], np.int8))  # GROUPS index of each interval
    lo: np.ndarray = field(default_factory=lambda: np.array([], np.int64))  # each interval's start (graph-relative ns)
    kernel_row: np.ndarray = field(default_factory=lambda: np.array([], np.int64))  # a kernel's own time: its kernel row, else -1
    inferred_edges: int = 0  # waits across streams on the path that the time-order rule inferred (no link in the trace)
    inferred_ns: int = 0  # path time before the latest of them: the part of the path that rests on inference

    def per_window(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """(windows x GROUPS) ns of the path in each [start, end) window (graph-relative
        ns, sorted, disjoint): each interval counts for its part inside each window, so a
        window holds no more path than its length (an interval of negative length -- a
        call returning before its copy's end -- counts in the window holding its middle)."""
        size = len(starts) * len(GROUPS)
        back = self.length < 0
        w = np.searchsorted(starts, self.mid[back], side="right") - 1
        inside = (w >= 0) & (self.mid[back] < ends[np.maximum(w, 0)])
        slots = [w[inside] * len(GROUPS) + self.group[back][inside]]
        values = [self.length[back][inside]]
        fwd = np.flatnonzero(self.length > 0)
        a = self.lo[fwd]
        b = a + self.length[fwd]
        first = np.maximum(np.searchsorted(starts, a, side="right") - 1, 0)
        last = np.searchsorted(starts, b, side="left") - 1  # the last window starting before the interval ends
        one = np.flatnonzero(last == first)
        slots.append(first[one] * len(GROUPS) + self.group[fwd[one]])
        values.append(np.maximum(np.minimum(b[one], ends[first[one]]) - np.maximum(a[one], starts[first[one]]), 0))
        for i in np.flatnonzero(last > first).tolist():  # the few intervals across a window boundary
            span = np.arange(first[i], last[i] + 1)
            slots.append(span * len(GROUPS) + self.group[fwd[i]])
            values.append(np.maximum(np.minimum(b[i], ends[span]) - np.maximum(a[i], starts[span]), 0))
        _, sums = code_totals(np.concatenate(slots).astype(np.int64), np.concatenate(values), size)
        return sums.reshape(len(starts), len(GROUPS))


GROUPS = ("gpu_compute", "communication", "copies", "launch_queue", "host_ops", "sync", "host_api")


def critical_path(
    run: Run,
    g: dg.DepGraph,
    start: np.ndarray,
    end: np.ndarray,
    lo: int | None = None,
    hi: int | None = None,
    *,
    waits: np.ndarray | None = None,
    rules: CategoryRules = DEFAULT_CATEGORY_RULES,
) -> PathSummary:
    """The critical path of the window [lo, hi) (graph-relative ns; default: everything) of
    the schedule (start, end) and what fills it (module docstring)."""
    n = g.size
    pred, seg = dg.binding(g, start, end, waits)
    times = np.concatenate([start, end])
    lo = int(start.min()) if lo is None and n else (lo or 0)
    hi = int(end.max()) if hi is None and n else (hi or 0)
    ends_in = np.flatnonzero(end <= hi)
    if not len(ends_in):
        return PathSummary(0, {k: {} for k in GROUPS}, {})
    sink = n + int(ends_in[np.argmax(end[ends_in])])
    points = _walk(pred, times, sink, lo)
    p = points
    q = pred[p]
    t1 = np.minimum(times[p], hi)
    t0 = np.where(q >= 0, times[np.maximum(q, 0)], t1)
    t0 = np.maximum(t0, lo)
    length = t1 - t0
    # a call that returned just before its own copy's end (ret < 0) steps back in time: that
    # step's length comes off the intervals before it on the path (they overlap it), so every
    # interval is >= 0 and they still add up to the path's length; any other interval outside
    # the window is empty
    back = (seg[p] == dg.SEG_RETURN) & (times[p] < times[np.maximum(q, 0)]) & (times[p] > lo) & (times[p] <= hi)
    length = np.where(back, np.maximum(length, times[p] - times[np.maximum(q, 0)]), np.maximum(length, 0))
    _take_back_steps(length, p, pred, back, times)
    inferred_edges, inferred_ns = _on_inference(seg[p] == dg.SEG_XINFERRED, t1, length, lo)
    keep = length != 0
    p, length, kinds = p[keep], length[keep], seg[p[keep]]
    node = np.where(p >= n, p - n, p)
    own = (kinds == dg.SEG_OWN) & (p >= n)
    by_group: dict[str, dict[str, int]] = {k: {} for k in GROUPS}
    grp = np.zeros(len(p), dtype=np.int8)  # GROUPS index of each interval

    def add(group: str, labels: Sequence[str], idx: np.ndarray, codes: np.ndarray) -> None:
        """Intervals ``idx`` (labelled by ``codes`` into ``labels``) belong to ``group``."""
        grp[idx] = GROUPS.index(group)
        if not len(idx):
            return
        _, sums = code_totals(codes, length[idx], len(labels))
        for c in np.flatnonzero(sums).tolist():
            by_group[group][labels[c]] = by_group[group].get(labels[c], 0) + int(sums[c])

    # GPU operations: by kernel / copy name, then by category
    op_idx = np.flatnonzero(own & (g.kind[node] >= dg.KERNEL))
    codes, names = _op_names(run, g)
    cats = _categories(names, rules)
    labels = names + [""]
    op_codes = codes[node[op_idx]]
    op_codes = np.where(op_codes >= 0, op_codes, len(names))
    _, kernel_sums = code_totals(op_codes, length[op_idx], len(labels))
    by_kernel = {labels[c]: int(kernel_sums[c]) for c in np.flatnonzero(kernel_sums)}
    is_copy = g.kind[node[op_idx]] == dg.COPY_OP
    add("copies", labels, op_idx[is_copy], op_codes[is_copy])
    cat_names = sorted(set(cats) | {"other"})
    cat_of = np.array([cat_names.index(c) for c in cats] + [cat_names.index("other")], dtype=np.int64)
    k_idx, k_cat = op_idx[~is_copy], cat_of[op_codes[~is_copy]]
    comm = k_cat == (cat_names.index("communication") if "communication" in cat_names else -1)
    add("communication", cat_names, k_idx[comm], k_cat[comm])
    add("gpu_compute", cat_names, k_idx[~comm], k_cat[~comm])
    # host calls: by API name, grouped by their class
    call_idx = np.flatnonzero(own & (g.kind[node] < dg.KERNEL))
    if len(call_idx):
        names_col = run.api["name"]
        api_labels = [str(x) for x in names_col.cat.categories] + [""]
        api_codes = names_col.cat.codes.to_numpy().astype(np.int64)[g.api_row[node[call_idx]]]
        api_codes = np.where(api_codes >= 0, api_codes, len(api_labels) - 1)
        cls, kind = g.cls[node[call_idx]], g.kind[node[call_idx]]
        launch = cls >= LAUNCH
        sync = ~launch & ((cls == SYNC) | (cls == BLOCKING_COPY) | (kind == dg.WAIT_CALL))
        add("launch_queue", api_labels, call_idx[launch], api_codes[launch])
        add("sync", api_labels, call_idx[sync], api_codes[sync])
        add("host_api", api_labels, call_idx[~launch & ~sync], api_codes[~launch & ~sync])
    # host time between calls: by the innermost host range around it
    host_idx = np.flatnonzero(kinds == dg.SEG_HOST)
    host_labels, host_codes = host_op_codes(run, g, node[host_idx])
    add("host_ops", host_labels, host_idx, host_codes)
    for kind_, group, label in EDGE_LABELS:
        idx = np.flatnonzero(kinds == kind_)
        add(group, [label], idx, np.zeros(len(idx), dtype=np.int64))
    total = int(length.sum())
    rows = sorted(((grp, lab, v) for grp, labs in by_group.items() for lab, v in labs.items()), key=lambda r: (-r[2], r[0], r[1]))
    kernel_row = np.where(own & (g.kind[node] == dg.KERNEL), g.op_row[node], -1)
    return PathSummary(total, by_group, by_kernel, rows, (t0[keep] + t1[keep]) // 2, length, grp, t0[keep], kernel_row, inferred_edges, inferred_ns)


EDGE_LABELS = (  # path intervals between two events, by the edge that bound the later one: (kind, group, label)
    (dg.SEG_LAUNCH, "launch_queue", "launch and queue"),
    (dg.SEG_QUEUE, "launch_queue", "queue (GPU waits on the previous operation)"),
    (dg.SEG_RETURN, "sync", "return after the awaited work"),
    (dg.SEG_ROOT, "host_ops", "(before the first recorded call)"),
    (dg.SEG_XWAIT, "launch_queue", "wait for another stream (event)"),
    (dg.SEG_XINFERRED, "launch_queue", "wait for another stream (inferred)"),
)


def _on_inference(inferred: np.ndarray, t1: np.ndarray, length: np.ndarray, lo: int) -> tuple[int, int]:
    """(inferred waits across streams on the path, path ns up to the latest of them: the part
    of the path that rests on that inference) from the path's intervals ending at ``t1``."""
    edges = int(np.count_nonzero(inferred & (t1 > lo)))
    return edges, (int(length[t1 <= int(t1[inferred].max())].sum()) if edges else 0)


def _take_back_steps(length: np.ndarray, points: np.ndarray, pred: np.ndarray, back: np.ndarray, times: np.ndarray) -> None:
    """Each negative ``length`` (a back step) taken, in place, from the intervals before it
    on the path (nearest first); what no interval holds (the path's start) is dropped."""
    idx = np.flatnonzero(back)
    if not len(idx):
        return
    where = np.full(len(pred), -1, dtype=np.int64)  # point -> its position in ``points``
    where[points] = np.arange(len(points))
    for i in idx[np.argsort(times[points[idx]], kind="stable")].tolist():
        owed = -int(length[i])
        length[i] = 0
        q = int(pred[points[i]])
        j = int(where[q]) if q >= 0 else -1
        while owed > 0 and j >= 0:
            take = min(owed, max(int(length[j]), 0))
            length[j] -= take
            owed -= take
            q = int(pred[points[j]])
            j = int(where[q]) if q >= 0 else -1


WALK_LEVELS = 5  # the walk steps 2**5 points at a time in Python, the points between are filled in by array passes


def _walk(pred: np.ndarray, times: np.ndarray, sink: int, lo: int) -> np.ndarray:
    """The points on the path from ``sink`` back along ``pred`` until a root or a point at
    or before ``lo`` (in no particular order; a few points older than ``lo`` may be
    included: their intervals lie before the window). Jump tables of 2, 4, ... 32 steps let
    the Python walk take one step per 32 points."""
    small = np.int32 if len(pred) < 2**31 else np.int64
    levels = [np.where(pred >= 0, pred, np.arange(len(pred))).astype(small)]  # a root points at itself
    for _ in range(WALK_LEVELS):
        levels.append(levels[-1][levels[-1]])
    top = levels[-1]
    coarse = []
    p = sink
    while True:  # one step per 2**WALK_LEVELS points: scalar indexing beats converting whole arrays to lists
        coarse.append(p)
        q = int(top[p])
        if times[p] <= lo or q == p:
            break
        p = q
    found = np.asarray(coarse, dtype=np.int64)
    for table in reversed(levels[:-1]):
        found = np.concatenate([found, table[found]])  # only a root repeats (every jump that overshoots lands on it)
    mark = np.zeros(len(pred), dtype=bool)
    mark[found] = True
    return np.flatnonzero(mark)


def path_segments(run: Run, g: dg.DepGraph | None = None, rules: CategoryRules = DEFAULT_CATEGORY_RULES) -> pd.DataFrame:
    """The critical path of the whole recorded process as the intervals a timeline marks:
    ``start``, ``end`` (absolute ns), ``where`` (``host``: a host thread's call, its own
    time between calls or a wait's return; ``gpu``: a kernel, or the launch latency or
    queue wait before it; ``copy``: a copy), the host thread ``tid`` and the GPU operation's
    ``agent``, ``queue`` and ``stream`` (-1 where they do not apply), ``group`` (the
    breakdown's group, :data:`GROUPS`, as :func:`critical_path` groups them: a kernel of the
    ``communication`` category under ``rules`` is communication). Intervals of length 0 and the
    time before the first recorded call are left out."""
    columns = ("start", "end", "where", "tid", "agent", "queue", "stream", "group")
    g = g if g is not None else dg.build_graph(run, CorrIndex(run.api))
    n = g.size
    if not n:
        return pd.DataFrame({c: np.zeros(0, np.int64) for c in columns}).astype({"where": object})
    pred, seg = dg.binding(g, g.start, g.end)
    times = np.concatenate([g.start, g.end])
    sink = n + int(np.argmax(g.end))
    p = _walk(pred, times, sink, int(g.start.min()))
    q = pred[p]
    keep = (q >= 0) & (seg[p] != dg.SEG_ROOT)
    p, q = p[keep], q[keep]
    t0, t1 = np.minimum(times[q], times[p]), np.maximum(times[q], times[p])
    node = np.where(p >= n, p - n, p)
    kind = g.kind[node]
    op = kind >= dg.KERNEL
    where = np.where(~op, "host", np.where(kind == dg.COPY_OP, "copy", "gpu")).astype(object)
    # a kernel launch's latency and a queue wait: on the operation's GPU lane
    tid = np.full(len(p), -1, dtype=np.int64)
    calls = np.flatnonzero(~op)
    if len(calls) and len(run.api):
        tid[calls] = run.api["tid"].to_numpy().astype(np.int64)[g.api_row[node[calls]]]
    agent, queue, stream = (np.full(len(p), -1, dtype=np.int64) for _ in range(3))
    for code, table in ((dg.KERNEL, run.kernels), (dg.COPY_OP, run.copies)):
        rows = np.flatnonzero(kind == code)
        if len(rows) and len(table):
            r = g.op_row[node[rows]]
            agent[rows] = (table["agent"] if code == dg.KERNEL else table["dst_agent"]).to_numpy().astype(np.int64)[r]
            queue[rows] = table["queue"].to_numpy().astype(np.int64)[r]
            stream[rows] = table["stream"].to_numpy().astype(np.int64)[r]
    own_call = ~op & (seg[p] == dg.SEG_OWN)
    cls = g.cls[node]
    group = np.select(
        [
            op & (kind == dg.COPY_OP),
            op & (seg[p] == dg.SEG_OWN),
            op,
            seg[p] == dg.SEG_HOST,
            (seg[p] == dg.SEG_RETURN) | (own_call & ((kind == dg.WAIT_CALL) | (cls == SYNC) | (cls == BLOCKING_COPY))),
            own_call & (cls >= LAUNCH),
        ],
        ["copies", "gpu_compute", "launch_queue", "host_ops", "sync", "launch_queue"],
        "host_api",
    ).astype(object)
    own_kernel = np.flatnonzero(op & (kind == dg.KERNEL) & (seg[p] == dg.SEG_OWN))
    if len(own_kernel):
        codes, names = _op_names(run, g)
        comm = np.array([c == "communication" for c in _categories(names, rules)] + [False], dtype=bool)
        op_codes = codes[node[own_kernel]]
        group[own_kernel[comm[np.where(op_codes >= 0, op_codes, len(names))]]] = "communication"
    nonempty = t1 > t0
    frame = pd.DataFrame({"start": t0 + g.t0, "end": t1 + g.t0, "where": where, "tid": tid, "agent": agent, "queue": queue, "stream": stream, "group": group})[
        nonempty
    ]
    return frame.sort_values("start", kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------- edits


@dataclass
class Applied:
    dur: np.ndarray
    gap: np.ndarray
    lat: np.ndarray
    ret: np.ndarray
    waits: np.ndarray
    records: list[dict]
    skip_warmup: bool = False


def _thread_last(g: dg.DepGraph, mask: np.ndarray) -> np.ndarray:
    """Of the call nodes in ``mask``, each thread's last one (graph call order is thread, then time)."""
    rows = np.flatnonzero(mask)
    if not len(rows):
        return rows
    th = g.thread[rows]
    return rows[np.r_[th[1:] != th[:-1], True]]


def _sync_calls(g: dg.DepGraph, after_launch: bool) -> np.ndarray:
    """Waiting synchronisation calls to remove (each thread's last one kept)."""
    nc = g.n_calls
    cls = g.cls[:nc]
    sync = cls == SYNC
    if after_launch:
        # previous launch-or-sync call of the thread is a launch
        ls = np.flatnonzero((cls == SYNC) | (cls == BLOCKING_COPY) | (cls >= LAUNCH))
        if len(ls) < 2:
            return np.array([], np.int64)
        same = g.thread[ls[1:]] == g.thread[ls[:-1]]
        hit = same & (cls[ls[1:]] == SYNC) & (cls[ls[:-1]] >= LAUNCH)
        mask = np.zeros(nc, bool)
        mask[ls[1:][hit]] = True
        sync = mask
    keep = _thread_last(g, cls == SYNC)
    sync = sync.copy()
    sync[keep] = False
    return np.flatnonzero(sync)


def _launch_runs(g: dg.DepGraph) -> tuple[np.ndarray, np.ndarray]:
    """(launch call nodes, call nodes whose own time and preceding host time lie between two
    launches of their thread with only launches and other non-GPU calls in between)."""
    nc = g.n_calls
    cls = g.cls[:nc]
    launches = np.flatnonzero(cls >= LAUNCH)
    if not nc:
        return launches, launches
    # a call is inside a run when the previous and the next launch-or-blocking call of its thread are launches
    idx = np.arange(nc)
    mark = cls != OTHER  # launches, syncs, copies
    prev_mark = np.maximum.accumulate(np.where(mark, idx, -1))  # last mark at or before i
    prev_mark = np.r_[-1, prev_mark[:-1]]  # strictly before i
    next_mark = np.minimum.accumulate(np.where(mark, idx, nc)[::-1])[::-1]  # first mark at or after i
    pm, nm = np.maximum(prev_mark, 0), np.minimum(next_mark, nc - 1)
    inside = (prev_mark >= 0) & (next_mark < nc) & (cls[pm] >= LAUNCH) & (cls[nm] >= LAUNCH)
    inside &= (g.thread[:nc][pm] == g.thread[:nc]) & (g.thread[:nc][nm] == g.thread[:nc])
    return launches, np.flatnonzero(inside)


def _pageable(run: Run, g: dg.DepGraph, dur: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Copy nodes between device and pageable memory, their durations at the run's pinned
    bandwidth (same direction), and notes on what could not be projected."""
    c = run.copies
    notes: list[str] = []
    if c.empty:
        return np.array([], np.int64), notes
    names = c["name"].astype(str).str.lower().to_numpy()
    pageable = np.array(["pageable" in n for n in names], dtype=bool)
    pinned = np.array(["pinned" in n for n in names], dtype=bool)
    direction = c["direction"].astype(str).to_numpy()
    nbytes = c["bytes"].to_numpy().astype(np.float64)
    nodes = np.flatnonzero(g.kind == dg.COPY_OP)  # copy nodes; their copy rows
    rows = g.op_row[nodes]
    names, direction, nbytes = names[rows], direction[rows], nbytes[rows]
    pageable, pinned = pageable[rows], pinned[rows]
    d = dur[nodes].astype(np.float64)
    changed = []
    for way in sorted(set(direction[pageable].tolist())):
        ref = pinned & (direction == way) & (d > 0) & (nbytes > 0)
        sel = np.flatnonzero(pageable & (direction == way) & (nbytes > 0))
        if not ref.any():
            notes.append(f"no pinned {way} copy recorded: {len(sel)} pageable {way} copies kept as recorded")
            continue
        bw = float(np.median(nbytes[ref] / d[ref]))
        new = np.ceil(nbytes[sel] / bw).astype(np.int64)
        faster = new < dur[nodes[sel]]
        dur[nodes[sel[faster]]] = new[faster]
        changed.append(nodes[sel[faster]])
    return (np.concatenate(changed) if changed else np.array([], np.int64)), notes


def _scale_mask(run: Run, g: dg.DepGraph, pattern: str, rules: CategoryRules) -> np.ndarray:
    codes, names = _op_names(run, g)
    if pattern.startswith("op:"):
        rx = _regex(pattern[3:])
        mask = np.zeros(g.size, dtype=bool)
        m = run.markers
        ext = run.kernels["external_id"].to_numpy().astype(np.int64)
        if m.empty or not len(ext):
            return mask
        ops = m[m["source"].astype(str) == "cpu_op"]
        hit = ops["external_id"].to_numpy()[_search(rx, ops["name"].astype(str))] if len(ops) else np.array([])
        ks = np.flatnonzero(g.kind == dg.KERNEL)
        mine = ext[g.op_row[ks]]
        mask[ks] = np.isin(mine, hit[hit >= 0]) & (mine >= 0)
        return mask
    if _is_category(pattern):
        want = pattern.lower().removeprefix("category:")
        per = np.array([c.lower() == want for c in _categories(names, rules)] + [False], dtype=bool)
    else:
        rx = _regex(pattern)
        per = np.append(_search(rx, names), False)
    mask = per[codes]  # code -1 (calls) picks the appended False
    mask &= g.kind >= dg.KERNEL
    return mask


def apply_edits(run: Run, g: dg.DepGraph, edits: Edits, rules: CategoryRules = DEFAULT_CATEGORY_RULES) -> Applied:
    """The graph's arrays with ``edits`` applied, and one record per edit (what it matched)."""
    edits.check()
    dur, gap, lat, ret = g.dur.copy(), g.gap.copy(), g.lat.copy(), g.ret.copy()
    waits = g.wait >= 0
    records: list[dict] = []
    skip_warmup = False
    for pattern, factor in edits.scales:
        mask = _scale_mask(run, g, pattern, rules)
        before = int(g.dur[mask].sum())  # recorded, whatever earlier edits did
        with np.errstate(over="ignore"):  # an infinite product is refused below
            scaled = np.rint(dur[mask].astype(np.float64) * factor)
        if float(scaled.sum()) >= dg.MAX_SPAN_NS:  # int64 ns would overflow in the schedule
            raise WhatIfError(f"--scale {pattern}={factor:g}: the scaled durations pass 2^62 ns (146 years): not projected")
        dur[mask] = scaled.astype(np.int64)
        records.append({"edit": "scale", "pattern": pattern, "factor": factor, "matched": int(mask.sum()), "matched_ns": before})
    removes = [REMOVE_ALIASES.get(c, c) for c in edits.removes]
    launch_free = edits.launch_free or "launch" in removes
    for cause, given in zip(removes, edits.removes, strict=True):
        record: dict = {"edit": "remove", "cause": given}
        if cause in ("sync", "sync-after-launch"):
            nodes = _sync_calls(g, cause == "sync-after-launch")
            record["matched"] = len(nodes)
            record["matched_ns"] = int((g.end[nodes] - g.start[nodes]).sum())
            dur[nodes] = 0
            gap[nodes] = 0
            waits[nodes] = False
            record["kept"] = "each thread's last synchronisation"
        elif cause == "pageable-copy":
            changed, notes = _pageable(run, g, dur)
            record["matched"] = len(changed)
            record["matched_ns"] = int(g.dur[changed].sum())
            if notes:
                record["notes"] = notes
        elif cause.startswith("host:"):
            rx = _regex(cause[5:])
            nodes = np.flatnonzero(gap[: g.n_calls] > 0)
            labels = host_op_names(run, g, nodes)
            hit = nodes[_search(rx, labels)] if len(nodes) else nodes
            record["matched"] = len(hit)
            record["matched_ns"] = int(gap[hit].sum())
            gap[hit] = 0
        elif cause == "warmup":
            skip_warmup = True
            record["matched"] = 1
        elif cause == "launch":
            record["same_as"] = "--launch-free"
        records.append(record)
    if launch_free:
        launches, inside = _launch_runs(g)
        folded = np.union1d(launches, inside)
        before = int(dur[folded].sum() + gap[inside].sum())
        dur[launches] = 0
        dur[inside] = 0
        gap[inside] = 0
        ops = np.flatnonzero(g.launch >= 0)
        lat[ops] = 0
        records.append({"edit": "launch-free", "matched": len(launches), "matched_ns": before, "host_calls_folded": len(inside)})
    return Applied(dur, gap, lat, ret, waits, records, skip_warmup)


# ---------------------------------------------------------------- projection


def _map_times(g: dg.DepGraph, start: np.ndarray, end: np.ndarray, times: np.ndarray, use_end: bool) -> np.ndarray:
    """Recorded graph-relative ``times`` moved as the host calls around them moved: by the
    shift of the last call (of the busiest thread) starting (ending, ``use_end``) at or before each."""
    nc = g.n_calls
    if not nc:
        return times.copy()
    th = g.thread[:nc]
    main = np.bincount(th).argmax()
    sel = np.flatnonzero(th == main)
    rec = (g.end if use_end else g.start)[sel]
    new = (end if use_end else start)[sel]
    o = np.argsort(rec, kind="stable")
    rec, new = rec[o], new[o]
    i = np.searchsorted(rec, times, side="right") - 1
    shift = np.where(i >= 0, new[np.maximum(i, 0)] - rec[np.maximum(i, 0)], 0)
    return times + shift


def _step_ends(g: dg.DepGraph, end: np.ndarray, st_rel: np.ndarray, en_rel: np.ndarray, p_en: np.ndarray) -> np.ndarray:
    """Each step's projected end: its host range's end moved with the host, or the projected
    end of the last work that started in it (recorded), whichever is later -- with a sync
    removed, the host leaves the step before its GPU work is done."""
    k = np.searchsorted(st_rel, g.start, side="right") - 1
    inside = (k >= 0) & (g.start < en_rel[np.maximum(k, 0)])
    out = p_en.copy()
    np.maximum.at(out, k[inside], end[inside])
    return out


@dataclass
class Projection:
    label: str
    graph: dg.DepGraph
    start: np.ndarray
    end: np.ndarray
    applied: Applied
    result: dict


def project(
    run: Run,
    label: str,
    edits: Edits,
    steps: tuple[np.ndarray, np.ndarray, int] | None,
    rules: CategoryRules = DEFAULT_CATEGORY_RULES,
    graph: dg.DepGraph | None = None,
    coupled: tuple[Applied, np.ndarray, np.ndarray] | None = None,
) -> Projection:
    """The what-if of one process: ``steps`` = (recorded step starts, ends, warm-up count) or
    None; ``coupled``: its edits applied and its times re-scheduled with the other ranks
    (:func:`couple_ranks`) instead of alone."""
    g = graph or dg.build_graph(run, CorrIndex(run.api))
    if coupled is not None:
        applied, s, e = coupled
    else:
        applied = apply_edits(run, g, edits, rules)
        s, e = dg.schedule(g, applied.dur, applied.gap, applied.lat, applied.ret, applied.waits)
    base_lo, base_hi = (int(g.start.min()), int(g.end.max())) if g.size else (0, 0)
    proj_lo, proj_hi = (int(s.min()), int(e.max())) if g.size else (0, 0)
    result: dict = {"process": label, "links": g.links, "launch_latency_l0_ns": g.l0_ns}
    steady: dict | None = None
    if steps is not None and len(steps[0]):
        st, en, warm = steps
        st_rel, en_rel = st.astype(np.int64) - g.t0, en.astype(np.int64) - g.t0
        p_st, p_en = _map_times(g, s, e, st_rel, False), _map_times(g, s, e, en_rel, True)
        p_en = _step_ends(g, e, st_rel, en_rel, p_en)
        base_en = _step_ends(g, g.end, st_rel, en_rel, en_rel)  # the same rule on the record: no edit, no change
        base_walls, proj_walls = base_en - st_rel, p_en - p_st
        w = min(warm, len(st) - 1)
        steady = {
            "steps": int(len(st) - w),
            "warmup_steps": int(w),
            "baseline_step_ns": int(np.median(base_walls[w:])),
            "projected_step_ns": int(np.median(proj_walls[w:])),
            "baseline_window_ns": int(base_en[w:].max() - st_rel[w]),
            "projected_window_ns": int(p_en[w:].max() - p_st[w]),
            "baseline_warmup_ns": max(int(st_rel[w] - base_lo), 0),
            "projected_warmup_ns": max(int(p_st[w] - proj_lo), 0),
        }
        steady["saving_step_ns"] = steady["baseline_step_ns"] - steady["projected_step_ns"]
        if applied.skip_warmup:  # from the first steady step, never before the first event (a step range opens before it)
            proj_lo = max(proj_lo, int(p_st[w]))
        window = (int(st_rel[w]), int(base_en[w:].max())), (int(p_st[w]), int(p_en[w:].max()))
    else:
        window = (base_lo, base_hi), (proj_lo, proj_hi)
    baseline_ns, projected_ns = base_hi - base_lo, proj_hi - proj_lo
    result.update(
        {
            "baseline_ns": baseline_ns,
            "projected_ns": projected_ns,
            "saving_ns": baseline_ns - projected_ns,
            "saving_pct": round(100.0 * (baseline_ns - projected_ns) / baseline_ns, 4) if baseline_ns > 0 else 0.0,
            "steady": steady,
            "edits": applied.records,
        }
    )
    base_path = critical_path(run, g, g.start, g.end, *window[0], rules=rules)
    proj_path = critical_path(run, g, s, e, *window[1], waits=applied.waits, rules=rules)
    result["critical_path"] = {"window": "steady state" if steady else "whole run", "baseline": path_json(base_path), "projected": path_json(proj_path)}
    return Projection(label, g, s, e, applied, result)


def path_json(p: PathSummary, top: int = 12) -> dict:
    return {
        "total_ns": p.total_ns,
        "groups": {k: int(sum(v.values())) for k, v in p.by_group.items()},
        "top": [{"group": grp, "name": lab, "ns": ns, "pct": round(100.0 * ns / p.total_ns, 4) if p.total_ns else 0.0} for grp, lab, ns in p.rows[:top]],
        "inferred_edges": p.inferred_edges,
        "inferred_ns": min(p.inferred_ns, p.total_ns),
    }


CROSS_RANK_ROUNDS = 64  # [P] rounds of re-scheduling every rank against the others' collective arrivals


def _instances(runs: Sequence[Run], graphs: Sequence[dg.DepGraph], rules: CategoryRules) -> list[list[tuple[int, int]]]:
    """Collective instances: the k-th collective kernel of a type on every rank that has one
    (at least two ranks), as (process, graph node) pairs (analysis.ranks.collective_rows
    with each process's categories, operator first: the rule of the rank table's instances)."""
    from tui_prof.analysis.operators import process_categories
    from tui_prof.analysis.ranks import collective_rows

    per: list[dict[str, np.ndarray]] = []
    for run, g in zip(runs, graphs, strict=True):
        rows, kinds = collective_rows(run.kernels, rules, process_categories(run, rules))
        per.append({str(t): rows[kinds == t] + g.n_calls for t in set(kinds.tolist())})  # kernel row -> its node
    out = []
    for kind in sorted({t for d in per for t in d}):
        members = [(i, d[kind]) for i, d in enumerate(per) if kind in d]
        for j in range(max(len(nodes) for _, nodes in members)):
            inst = [(i, int(nodes[j])) for i, nodes in members if len(nodes) > j]
            if len(inst) > 1:
                out.append(inst)
    return out


def couple_ranks(
    runs: Sequence[Run], edits: Edits, rules: CategoryRules, graphs: Sequence[dg.DepGraph] | None = None
) -> tuple[list[tuple[dg.DepGraph, Applied, np.ndarray, np.ndarray]] | None, dict | None]:
    """Every rank re-scheduled with its collectives waiting for the other ranks' (edges
    across ranks; docs/metrics.md): in each collective instance the rank that arrived last
    spent the least time (T, the transfer) and every instance ends T after the last arrival
    (plus each rank's recorded lag past it), so a rank's collective ends no earlier than the
    others' latest projected start (on the aligned clocks of analysis.ranks.rank_offsets) +
    T + its lag, and takes T of its own. Rounds re-schedule every rank against the others'
    arrivals of the round before until none changes. None (and why) when the runs have no
    common collective, or it does not settle within ``CROSS_RANK_ROUNDS`` rounds (each round
    follows the path through one more instance). ``graphs``: the runs' graphs where the caller
    built them (else built here); they are not changed."""
    from tui_prof.analysis.ranks import rank_offsets

    graphs = list(graphs) if graphs is not None else [dg.build_graph(run, CorrIndex(run.api)) for run in runs]
    instances = _instances(runs, graphs, rules)
    if not instances:
        return None, None
    offsets = np.array(rank_offsets(runs, rules).offsets, dtype=np.int64) + np.array([g.t0 for g in graphs], dtype=np.int64)  # graph time -> aligned time
    applied = [apply_edits(run, g, edits, rules) for run, g in zip(runs, graphs, strict=True)]
    members = [(np.array([i for i, _ in inst]), np.array([v for _, v in inst])) for inst in instances]
    lags, transfer = [], []
    for procs, nodes in members:
        rec_start = np.array([graphs[i].start[v] for i, v in zip(procs, nodes, strict=True)]) + offsets[procs]
        rec_end = np.array([graphs[i].end[v] for i, v in zip(procs, nodes, strict=True)]) + offsets[procs]
        edited = np.array([applied[i].dur[v] for i, v in zip(procs, nodes, strict=True)])
        t_rec, t_new = int((rec_end - rec_start).min()), int(edited.min())
        lags.append(rec_end - rec_start.max() - (t_rec - t_new))  # the transfer part of each rank's lag follows the edit
        transfer.append(t_new)
        for i, v, d in zip(procs.tolist(), nodes.tolist(), edited.tolist(), strict=True):
            applied[i].dur[v] = min(d, t_new)
    floors = [np.full(g.size, dg.NEG, dtype=np.int64) for g in graphs]
    for rounds in range(1, CROSS_RANK_ROUNDS + 1):
        times = [dg.schedule(g, a.dur, a.gap, a.lat, a.ret, a.waits, f) for g, a, f in zip(graphs, applied, floors, strict=True)]
        changed = False
        for (procs, nodes), lag in zip(members, lags, strict=True):
            last = max(int(times[i][0][v]) + int(offsets[i]) for i, v in zip(procs.tolist(), nodes.tolist(), strict=True))
            for i, v, lg in zip(procs.tolist(), nodes.tolist(), lag.tolist(), strict=True):
                new = last + lg - int(offsets[i])
                if floors[i][v] != new:
                    floors[i][v] = new
                    changed = True
        if not changed:
            info = {"instances": len(instances), "rounds": rounds, "settled": True}
            return [(g, a, s, e) for g, a, (s, e) in zip(graphs, applied, times, strict=True)], info
    return None, {"instances": len(instances), "rounds": CROSS_RANK_ROUNDS, "settled": False}


def what_if(runs: Sequence[tuple[Run, str, tuple[np.ndarray, np.ndarray, int] | None]], edits: Edits, rules: CategoryRules = DEFAULT_CATEGORY_RULES) -> dict:
    """The ``tuiprof.whatif/1`` document of a run of one or several processes ((run, label, steps) each)."""
    edits.check()
    graphs = [dg.build_graph(run, CorrIndex(run.api)) for run, _, _ in runs] if len(runs) > 1 else None
    coupled, cross = couple_ranks([run for run, _, _ in runs], edits, rules, graphs) if graphs else (None, None)
    per = [
        project(run, label, edits, steps, rules, graphs[i] if graphs else None, coupled[i][1:] if coupled else None).result
        for i, (run, label, steps) in enumerate(runs)
    ]
    doc: dict = {"schema": SCHEMA}
    if cross is not None:
        doc["cross_rank"] = cross
    if per:
        worst = max(range(len(per)), key=lambda i: per[i]["baseline_ns"])
        head = per[worst]
        doc.update({k: head[k] for k in ("baseline_ns", "projected_ns", "saving_ns", "saving_pct")})
        doc["process"] = head["process"]
    else:
        doc.update({"baseline_ns": 0, "projected_ns": 0, "saving_ns": 0, "saving_pct": 0.0})
    doc["edits"] = per[0]["edits"] if per else []
    doc["processes"] = per
    return doc


def process_steps(run: Run, label: str, step_name: str | None = None, warmup: int | None = None) -> tuple[np.ndarray, np.ndarray, int] | None:
    """(step starts, ends, warm-up steps) of one process as the summary finds them, or None."""
    from tui_prof.analysis.steps import steps_of

    part, frame = steps_of(run, label, step_name=step_name, warmup=warmup)
    if frame is None or not part["detected"]:
        return None
    return frame.ranges.starts.astype(np.int64), frame.ranges.ends.astype(np.int64), int(part["warmup_steps"])


def run_what_if(runset, edits: Edits, *, rules: CategoryRules | None = None, step_name: str | None = None, warmup: int | None = None) -> dict:
    """:func:`what_if` of every process of a loaded run set, with the summary's steps."""
    from tui_prof.analysis.runinput import run_label

    rules = rules or DEFAULT_CATEGORY_RULES
    traced = [run for run in runset.runs if len(run.kernels) or len(run.copies)]
    if not traced:
        raise WhatIfError(f"{runset.name}: no GPU operations with their times (a statistics-only run, or no kernel trace): nothing to re-schedule")
    runs = [(run, run_label(run), process_steps(run, run_label(run), step_name, warmup)) for run in traced]
    try:
        doc = what_if(runs, edits, rules)
    except ValueError as err:  # a graph refused (hostile times)
        raise WhatIfError(f"{runset.name}: {err}") from None
    doc["run"] = runset.name
    return doc
