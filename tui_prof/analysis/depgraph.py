"""Dependency graph of one process: what each host call and each GPU operation waited for.

Nodes are the process's top-level host API calls (one chain per host thread) and its GPU
operations (kernels, then copies). Every node has a start and an end; each is bound by
the latest of its predecessors plus an edge lag measured on the record, so that
re-scheduling the graph with the recorded durations gives back the recorded times
exactly (docs/metrics.md, Critical path and what-if). The rules:

* **host order**: a top-level call starts ``gap`` after the previous top-level call of
  its thread ends (``gap``: the host's own work between the two calls, host operators
  included). Calls nested inside another call of the same thread (HSA calls inside a HIP
  call, for example) are not nodes: a link that points at one points at its top-level
  call. The first call of each thread starts at its recorded time.
* **launch**: a GPU operation becomes ready ``lat`` after the start of the call that
  launched it (correlation id: kernel launches and graph launches for kernels, any call
  for copies). A graph launch is the launch of every kernel of its replay.
* **queue order**: an operation starts no earlier than the end of the operation before it
  on the same (GPU, stream) -- the queue when the stream is not recorded -- plus the gap
  recorded between them when it was waiting for that one. Whether it was: its launch
  reached the GPU (launch start + the run's shortest usual launch latency, ``L0``, the
  5th percentile over operations whose queue was empty at their launch) before its
  predecessor ended. An operation that overlaps its predecessor on the same queue is not
  linked to it (``links["queue_overlaps"]``).
* **waits**: a call that returned only after GPU work ended -- a stream, device, event
  or context synchronisation, a blocking copy, a copy call whose copy ended inside it --
  ends ``ret`` after the operation it waited for (the call's own copy when it has one, also
  one that started inside the call and ended at most ``OWN_TAIL_NS`` after it: ``ret`` < 0;
  else the operation submitted before the call whose end is the latest at or before the
  call's end -- also when it ended before the call started, as HTA's sync edge: then
  ``ret`` is the call's own duration, so a longer operation would make it wait). A launch
  call never waits for its own kernel.

Unknown links are counted in :attr:`DepGraph.links`, never invented: an operation with no
launching call is placed by queue order alone (or at its recorded start when it is first
on its queue: ``links["unlaunched"]``); a synchronisation whose target is not recorded
(stream and event syncs: the stream or event is not in the model) is inferred from the
record as above (``links["inferred_waits"]``); a device synchronisation waits, in a
re-schedule, for the operation it waited for in the record only. Collectives are linked
within their process only (each rank's collective kernel keeps its recorded duration,
which includes its wait for the slowest rank).

Everything is built with array operations. A re-schedule (:func:`schedule`) is a
longest-path computation along chains millions of nodes long: whole chains at once
(prefix sums and a running maximum per host thread and per queue, :func:`schedule_chains`)
when the host and the GPU wait for each other only a few times, else node by node
(:func:`schedule_walk`); both give the same times (tests/test_whatif.py checks it).
"""

from __future__ import annotations

import itertools
from array import array
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tui_prof.analysis.arrays import in_order
from tui_prof.analysis.hostapi import BLOCKING_COPY, COPY, GRAPH_LAUNCH, LAUNCH, SYNC, CorrIndex
from tui_prof.analysis.streamwaits import OpView, StreamWaits, domain_is, stream_waits
from tui_prof.model import Run
from tui_prof.model.schema import column_array

CALL, WAIT_CALL, KERNEL, COPY_OP = 0, 1, 2, 3  # node kinds
MAX_SPAN_NS = 1 << 62  # relative times and their sums stay inside int64 below this
OWN_TAIL_NS = 100_000  # [P] a call's own operation that ends this soon after the call returned was waited for
L0_PERCENTILE = 5  # [P] the usual shortest launch latency: 5th percentile over operations found on an empty queue


@dataclass
class DepGraph:
    """The graph of one process as arrays over its nodes (calls first, then operations).

    Times are int64 ns relative to ``t0`` (the process's first recorded start)."""

    t0: int
    n_calls: int
    start: np.ndarray  # recorded start of each node (relative to t0)
    end: np.ndarray
    kind: np.ndarray  # CALL, WAIT_CALL, KERNEL, COPY_OP
    cls: np.ndarray  # host API class of calls (hostapi codes), -1 for operations
    api_row: np.ndarray  # API row of each call node, -1 for operations
    op_row: np.ndarray  # kernel row (kernels) / copy row (copies), -1 for calls
    thread: np.ndarray  # host-thread index of calls, -1 for operations
    hprev: np.ndarray  # previous call of the same thread, -1 when none
    gap: np.ndarray  # host time between hprev's end and this call's start
    dur: np.ndarray  # own duration (waiting calls: their duration when nothing to wait for)
    launch: np.ndarray  # launching call node of an operation, -1 when none
    lat: np.ndarray  # launch start -> ready
    sprev: np.ndarray  # previous operation on the same (GPU, stream), -1 when none
    slag: np.ndarray  # recorded gap after sprev when it waited for it, else 0
    wait: np.ndarray  # operation a waiting call waited for, -1 when none
    ret: np.ndarray  # that operation's end -> the call's end
    xwait: np.ndarray  # operation of another stream an operation waited for (event), -1 when none
    xlag: np.ndarray  # that operation's end -> this one's start (0 where it did not bind)
    xkind: np.ndarray  # XWAIT_EXPLICIT (named by the trace) or XWAIT_INFERRED (time-order rule), 0
    l0_ns: int  # the usual shortest launch latency
    links: dict[str, int] = field(default_factory=dict)
    # the operations in queue order (each queue's sprev chain contiguous), None: not known (a subgraph)
    qorder: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self.start)


def _thread_codes(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    key = (pid.astype(np.int64) << 32) ^ (tid.astype(np.int64) & 0xFFFFFFFF)
    if len(key) and bool((key == key[0]).all()):  # one thread or queue: all code 0, as factorize says, without its per-call cost
        return np.zeros(len(key), dtype=np.int64)
    codes, _ = pd.factorize(key)
    return codes.astype(np.int64)


def _prev_in_group(group: np.ndarray, order: np.ndarray) -> np.ndarray:
    """For rows visited in ``order`` (sorted by group, then time), the previous row of the same group, -1 for the first."""
    prev = np.full(len(group), -1, dtype=np.int64)
    if len(order) > 1:
        same = group[order[1:]] == group[order[:-1]]
        prev[order[1:][same]] = order[:-1][same]
    return prev


def _by_group_then_time(group: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Row order by group, then start, then the longest first (an enclosing call before what
    it encloses); sorts by group codes (small integers) on top of a time order."""
    n = len(group)
    if n < 2:
        return np.arange(n)
    same_start = start[1:] == start[:-1]
    if in_order(start) and not (same_start & (end[1:] > end[:-1])).any():
        by_time = None  # stored order is already the time order
    else:
        by_time = np.lexsort((-end, start))
    g = group if by_time is None else group[by_time]
    if g.min() == g.max():
        return np.arange(n) if by_time is None else by_time
    within = np.argsort(g, kind="stable")
    return within if by_time is None else by_time[within]


def _calls(run: Run, t0: int) -> dict[str, np.ndarray]:
    """The top-level calls of each host thread and, for every API row, its top-level call's
    position (-1 for the rows that are not host calls: Kineto's ``cuda_sync`` activities,
    written on the GPU's rows, whose links :mod:`~tui_prof.analysis.streamwaits` reads)."""
    full = run.api
    activity = domain_is(full, "cuda_sync")
    if not activity.any():
        return _host_calls(full, t0)
    kept = np.flatnonzero(~activity)
    out = _host_calls(full.iloc[kept], t0)
    out["rows"] = kept[out["rows"]]
    node_of_row = np.full(len(full), -1, dtype=np.int64)
    node_of_row[kept] = out["node_of_row"]
    out["node_of_row"] = node_of_row
    return out


def _host_calls(api: pd.DataFrame, t0: int) -> dict[str, np.ndarray]:
    """:func:`_calls` of a table of host calls only."""
    n = len(api)
    s = column_array(api, "start").astype(np.int64) - t0
    e = np.maximum(column_array(api, "end").astype(np.int64) - t0, s)
    thread = _thread_codes(column_array(api, "pid"), column_array(api, "tid")) if n else np.array([], np.int64)
    order = _by_group_then_time(thread, s, e)  # thread, start, longest first
    top = np.ones(n, dtype=bool)
    so, eo, to = s[order], e[order], thread[order]
    if n > 1:
        firsts = np.flatnonzero(np.r_[True, to[1:] != to[:-1]])
        bounds = np.r_[firsts, n]
        for a, b in itertools.pairwise(bounds.tolist()):
            reach = np.maximum.accumulate(eo[a:b])
            top[a + 1 : b] = so[a + 1 : b] >= reach[:-1]
    position = np.maximum.accumulate(np.where(top, np.arange(n), -1)) if n else np.array([], np.int64)
    tops = order[top]  # API rows of the top-level calls, by thread then start
    node_of_pos = np.cumsum(top) - 1  # sorted position -> node of its top-level call
    node_of_row = np.empty(n, dtype=np.int64)
    node_of_row[order] = node_of_pos[position] if n else node_of_pos
    return {"rows": tops, "start": s[tops], "end": e[tops], "thread": thread[tops], "node_of_row": node_of_row, "nested": np.array([n - len(tops)])}


def _op_column(k: pd.DataFrame, c: pd.DataFrame, column: str, *copy_columns: str) -> np.ndarray:
    """The kernels' ``column`` then the copies' (the larger of ``copy_columns`` where given)
    as int64; an empty copy table adds nothing and costs no pandas step."""
    of_kernels = column_array(k, column).astype(np.int64)
    if not len(c):
        return of_kernels
    of_copies = np.maximum.reduce([column_array(c, name) for name in copy_columns or (column,)])
    return np.concatenate([of_kernels, np.asarray(of_copies).astype(np.int64)])


def build_graph(run: Run, index: CorrIndex | None = None) -> DepGraph:
    """The dependency graph of one process (module docstring)."""
    api, k, c = run.api, run.kernels, run.copies
    starts = [column_array(t, "start") for t in (api, k, c) if len(t)]
    t0 = int(min(int(x.min()) for x in starts)) if starts else 0
    last = max((int(column_array(t, "end").max()) for t in (api, k, c) if len(t)), default=t0)
    if last - t0 >= MAX_SPAN_NS:
        raise ValueError(f"events span {last - t0} ns (hostile or corrupt times): no graph")
    index = CorrIndex(api) if index is None else index.check(api)
    classes = index.classes
    calls = _calls(run, t0)
    nc = len(calls["rows"])
    # --- host order
    thread = calls["thread"]
    hprev = np.full(nc, -1, dtype=np.int64)
    if nc > 1:
        same = thread[1:] == thread[:-1]
        hprev[1:][same] = np.arange(nc - 1)[same]
    c_start, c_end = calls["start"], calls["end"]
    gap = np.where(hprev >= 0, c_start - c_end[np.maximum(hprev, 0)], 0)
    np.maximum(gap, 0, out=gap)
    c_cls = classes[calls["rows"]].astype(np.int8) if nc else np.array([], np.int8)
    # --- operations: kernels then copies
    nk, ncp = len(k), len(c)
    o_start = _op_column(k, c, "start") - t0
    o_end = np.maximum(_op_column(k, c, "end") - t0, o_start)
    o_agent = _op_column(k, c, "agent", "dst_agent", "src_agent")
    stream = _op_column(k, c, "stream")
    queue = _op_column(k, c, "queue")
    lane = np.where(stream >= 0, stream, np.where(queue >= 0, queue + (1 << 40), -1))
    no = nk + ncp
    # launch links: kernels to launch-class calls, copies to any call
    if len(api):
        krow = index.launch_rows(column_array(k, "correlation_id")) if nk else np.array([], np.int64)
        crow = index.rows(column_array(c, "correlation_id")) if ncp else np.array([], np.int64)
        arow = np.concatenate([krow, crow]).astype(np.int64)
    else:
        arow = np.full(no, -1, dtype=np.int64)
    launch = np.where(arow >= 0, calls["node_of_row"][np.maximum(arow, 0)] if len(api) else -1, -1).astype(np.int64)
    # queue order: (agent, lane, start)
    group = _thread_codes(o_agent, lane) if no else np.array([], np.int64)
    order = _by_group_then_time(group, o_start, o_end)
    sprev = _prev_in_group(group, order)
    overlap = (sprev >= 0) & (o_end[np.maximum(sprev, 0)] > o_start)
    sprev[overlap] = -1
    sp_end = o_end[np.maximum(sprev, 0)]
    linked = launch >= 0
    l_start = c_start[np.maximum(launch, 0)] if nc else np.zeros(no, np.int64)
    raw = np.where(linked, o_start - l_start, 0)
    negative = int(np.count_nonzero(linked & (raw < 0)))
    np.maximum(raw, 0, out=raw)
    free = linked & ((sprev < 0) | (sp_end <= l_start))
    l0 = int(np.percentile(raw[free], L0_PERCENTILE)) if free.any() else int(np.median(raw[linked])) if linked.any() else 0
    blocked = (sprev >= 0) & (~linked | (l_start + l0 <= sp_end))
    slag = np.where(blocked, np.maximum(o_start - sp_end, 0), 0)
    lat = np.where(blocked & linked, np.minimum(raw, l0), raw)
    # --- waits across streams and on events
    view = OpView(o_start, o_end, o_agent, stream, lane, launch, np.where(sprev >= 0, sprev, -1), c_start, c_end, thread, calls["node_of_row"], l0)
    xs = stream_waits(run, view)
    xwait, xlag, xkind = _cross_lags(xs, o_start, o_end, sprev, sp_end, linked, l_start, l0, raw, lat, slag)
    # --- waiting calls
    wait, ret, dur, waiting = _waits(c_start, c_end, c_cls, o_start, o_end, launch, nc, (xs.host_call, xs.host_src))
    kind = np.concatenate([np.where(waiting, WAIT_CALL, CALL).astype(np.int8), np.full(nk, KERNEL, np.int8), np.full(ncp, COPY_OP, np.int8)])
    links = _link_counts(calls, linked, launch, c_cls, sprev, blocked, overlap, lane, negative, wait, nk)
    links.update(_stream_counts(xs, xkind, wait, c_cls, launch))
    pad, zeros = np.full(no, -1, dtype=np.int64), np.zeros(no, dtype=np.int64)
    return DepGraph(
        t0=t0,
        n_calls=nc,
        start=np.concatenate([c_start, o_start]),
        end=np.concatenate([c_end, o_end]),
        kind=kind,
        cls=np.concatenate([c_cls.astype(np.int64), pad]),
        api_row=np.concatenate([calls["rows"].astype(np.int64), pad]),
        op_row=np.concatenate([np.full(nc, -1, np.int64), np.arange(nk, dtype=np.int64), np.arange(ncp, dtype=np.int64)]),
        thread=np.concatenate([thread, pad]),
        hprev=np.concatenate([hprev, pad]),
        gap=np.concatenate([gap, zeros]),
        dur=np.concatenate([dur, o_end - o_start]),
        launch=np.concatenate([np.full(nc, -1, np.int64), np.where(linked, launch, -1)]),
        lat=np.concatenate([np.zeros(nc, np.int64), lat]),
        sprev=np.concatenate([np.full(nc, -1, np.int64), np.where(sprev >= 0, sprev + nc, -1)]),
        slag=np.concatenate([np.zeros(nc, np.int64), slag]),
        wait=np.concatenate([np.where(wait >= 0, wait + nc, -1), pad]),
        ret=np.concatenate([ret, zeros]),
        xwait=np.concatenate([np.full(nc, -1, np.int64), np.where(xwait >= 0, xwait + nc, -1)]),
        xlag=np.concatenate([np.zeros(nc, np.int64), xlag]),
        xkind=np.concatenate([np.zeros(nc, np.int8), xkind]),
        l0_ns=l0,
        links=links,
        qorder=order.astype(np.int64) + nc,
    )


def _link_counts(
    calls: dict[str, np.ndarray],
    linked: np.ndarray,
    launch: np.ndarray,
    c_cls: np.ndarray,
    sprev: np.ndarray,
    blocked: np.ndarray,
    overlap: np.ndarray,
    lane: np.ndarray,
    negative: int,
    wait: np.ndarray,
    nk: int,
) -> dict[str, int]:
    """How many of each link the graph holds and how many it could not know (DepGraph.links)."""
    nc, thread = len(calls["rows"]), calls["thread"]
    graph_kernels = int(np.count_nonzero(linked[:nk] & (c_cls[np.maximum(launch[:nk], 0)] == GRAPH_LAUNCH))) if nc else 0
    return {
        "calls": nc,
        "nested_calls": int(calls["nested"][0]),
        "threads": int(len(np.unique(thread))) if nc else 0,
        "operations": len(linked),
        "launched": int(np.count_nonzero(linked)),
        "graph_replayed": graph_kernels,
        "unlaunched": int(np.count_nonzero(~linked)),
        "unlaunched_first_on_queue": int(np.count_nonzero(~linked & (sprev < 0))),
        "queue_waits": int(np.count_nonzero(blocked)),
        "queue_overlaps": int(np.count_nonzero(overlap)),
        "unknown_lane": int(np.count_nonzero(lane < 0)),
        "launch_before_start_clock": negative,
        "waits": int(np.count_nonzero(wait >= 0)),
    }


def _stream_counts(xs: StreamWaits, xkind: np.ndarray, wait: np.ndarray, c_cls: np.ndarray, launch: np.ndarray) -> dict[str, int]:
    """The links of waits across streams and on events (explicit, inferred, not found)."""
    nc = len(wait)
    named = np.zeros(nc, dtype=bool)
    named[xs.host_call] = True
    return {
        "inferred_waits": int(np.count_nonzero((wait >= 0) & ~_own_wait(c_cls, wait, launch, nc) & ~named)),
        "named_sync_waits": len(xs.host_call),
        "stream_waits": int(np.count_nonzero(xkind == XWAIT_EXPLICIT)),
        "stream_waits_inferred": int(np.count_nonzero(xkind == XWAIT_INFERRED)),
        **xs.counts,
    }


XWAIT_NONE, XWAIT_EXPLICIT, XWAIT_INFERRED = 0, 1, 2  # how an operation's wait on another stream is known


def _cross_lags(
    xs: StreamWaits,
    o_start: np.ndarray,
    o_end: np.ndarray,
    sprev: np.ndarray,
    sp_end: np.ndarray,
    linked: np.ndarray,
    l_start: np.ndarray,
    l0: int,
    raw: np.ndarray,
    lat: np.ndarray,
    slag: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(operation waited for on another stream, lag after its end, XWAIT_* kind) per
    operation. Where that wait bound the operation in the record (its source ended after
    the operation's launch reached the GPU and after its queue predecessor ended) the lag
    is the recorded gap and the launch and queue lags become loose (``lat``, ``slag``
    edited in place), so that the recorded times are given back; elsewhere the lag is 0
    (the wait did not hold it up, but would if its source ran longer)."""
    no = len(o_start)
    xwait = np.full(no, -1, dtype=np.int64)
    xkind = np.zeros(no, dtype=np.int8)
    xwait[xs.dest] = xs.src
    xkind[xs.dest] = np.where(xs.inferred, XWAIT_INFERRED, XWAIT_EXPLICIT)
    xlag = np.zeros(no, dtype=np.int64)
    d = xs.dest
    if not len(d):
        return xwait, xlag, xkind
    x_end = o_end[xs.src]
    ready = np.where(linked[d], l_start[d] + l0, np.iinfo(np.int64).min)
    queue = np.where(sprev[d] >= 0, sp_end[d], np.iinfo(np.int64).min)
    binds = (x_end >= ready) & (x_end >= queue)
    b = d[binds]
    xlag[b] = o_start[b] - x_end[binds]
    lat[b] = np.where(linked[b], np.minimum(raw[b], l0), lat[b])
    slag[b] = 0
    return xwait, xlag, xkind


def _own_wait(c_cls: np.ndarray, wait: np.ndarray, launch: np.ndarray, nc: int) -> np.ndarray:
    """Per call: its wait is on an operation it launched itself (a known link, not inferred)."""
    out = np.zeros(nc, dtype=bool)
    ok = wait >= 0
    out[ok] = launch[wait[ok]] == np.flatnonzero(ok)
    return out


def _waits(
    c_start: np.ndarray,
    c_end: np.ndarray,
    c_cls: np.ndarray,
    o_start: np.ndarray,
    o_end: np.ndarray,
    launch: np.ndarray,
    nc: int,
    events: tuple[np.ndarray, np.ndarray] = (np.zeros(0, np.int64), np.zeros(0, np.int64)),
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(operation waited for or -1, its end -> call end, own duration, waiting) per call;
    ``events``: (call, operation) waits the trace names (Event Sync), which win."""
    dur = c_end - c_start
    wait = np.full(nc, -1, dtype=np.int64)
    if not nc or not len(o_end):
        return wait, np.zeros(nc, np.int64), dur, np.zeros(nc, dtype=bool)
    # the call's own operations ending inside it: the latest of them
    linked = np.flatnonzero(launch >= 0)
    own_end = np.full(nc, -1, dtype=np.int64)
    if len(linked):
        calls = launch[linked]
        # ended inside the call, or started inside it and ended just after it returned (a
        # pageable copy: the call stages the data and returns with its last chunk)
        inside = (o_end[linked] > c_start[calls]) & (o_end[linked] <= c_end[calls])
        inside |= (o_start[linked] >= c_start[calls]) & (o_start[linked] < c_end[calls]) & (o_end[linked] <= c_end[calls] + OWN_TAIL_NS)
        inside &= c_cls[calls] < LAUNCH  # a launch call does not wait for its kernel, even a kernel over before it returns
        sel = linked[inside]
        if len(sel):
            o = np.lexsort((o_end[sel], launch[sel]))
            sel = sel[o]
            last = np.r_[launch[sel][1:] != launch[sel][:-1], True]
            wait[launch[sel][last]] = sel[last]
            own_end[launch[sel][last]] = o_end[sel][last]
    # synchronisation calls and blocking copies without their own operation: the latest end at
    # or before the call's end, of an operation submitted before the call
    idle = np.zeros(nc, dtype=bool)
    sync = ((c_cls == SYNC) | (c_cls == BLOCKING_COPY) | (c_cls == COPY)) & (wait < 0)
    sync &= c_cls != COPY  # an asynchronous copy call waits only for its own copy
    rows = np.flatnonzero(sync)
    if len(rows):
        by_end = np.argsort(o_end, kind="stable")
        ends = o_end[by_end]
        i = np.searchsorted(ends, c_end[rows], side="right") - 1
        ok = i >= 0
        cand = np.where(ok, by_end[np.maximum(i, 0)], -1)
        submitted = np.where(
            launch[np.maximum(cand, 0)] >= 0,
            c_start[np.maximum(launch[np.maximum(cand, 0)], 0)] <= c_start[rows],
            o_start[np.maximum(cand, 0)] <= c_start[rows],
        )
        ok &= submitted  # also when it ended before the call started: a longer operation would make the call wait (HTA's edge)
        wait[rows[ok]] = cand[ok]
        idle[rows[ok]] = ends[np.maximum(i, 0)][ok] <= c_start[rows[ok]]
    e_call, e_op = events
    wait[e_call] = e_op
    idle[e_call] = o_end[e_op] <= c_start[e_call]
    waiting = wait >= 0
    ret = np.where(waiting, c_end - o_end[np.maximum(wait, 0)], 0)  # negative: the call returned just before its own copy's end
    ret = np.where(idle, dur, ret)  # the GPU was done before the call: its own duration is its return
    dur = np.where(waiting, np.clip(ret, 0, dur), dur)
    return wait, ret, dur, waiting


def _order(g: DepGraph) -> np.ndarray:
    """Processing order of the (node, phase) entries of :func:`schedule`: entry ``i`` < size
    is node i's start (its end too unless it waits), entry size + i a waiting call's end.
    Sorted by recorded time (call starts, then operations, then waiting ends at equal
    times), then moved after the entries they depend on."""
    n = g.size
    waiting = np.flatnonzero(g.kind == WAIT_CALL)
    times = np.concatenate([g.start, g.end[waiting]])
    if len(times) and int(times.max()) >= 1 << 60:  # time x 4 would pass int64 (spans up to MAX_SPAN_NS): order by each time's rank
        times = np.unique(times, return_inverse=True)[1].reshape(-1).astype(np.int64)
    key = times * 4 + np.concatenate([np.where(g.kind >= KERNEL, 1, 0), np.full(len(waiting), 2)])
    entry_of_end = np.arange(n, dtype=np.int64)  # the entry after which a node's end is known
    entry_of_end[waiting] = n + np.arange(len(waiting))
    deps = []  # (dependent entry, entry it depends on)
    h = np.flatnonzero(g.hprev >= 0)
    deps.append((h, entry_of_end[g.hprev[h]]))
    lch = np.flatnonzero(g.launch >= 0)
    deps.append((lch, g.launch[lch]))
    sp = np.flatnonzero(g.sprev >= 0)
    deps.append((sp, entry_of_end[g.sprev[sp]]))
    xw = np.flatnonzero(g.xwait >= 0)
    deps.append((xw, entry_of_end[g.xwait[xw]]))
    w = waiting
    deps.append((n + np.arange(len(w)), entry_of_end[g.wait[w]]))
    deps.append((n + np.arange(len(w)), w))
    for _ in range(64):
        changed = False
        for child, parent in deps:
            need = key[parent] + 1
            late = key[child] < need
            if late.any():
                np.maximum.at(key, child[late], need[late])
                changed = True
        if not changed:
            break
    return np.argsort(key, kind="stable")


def _q(values: np.ndarray) -> array:
    """An int64 numpy array as a Python ``array('q')`` (indexable from Python without numpy's per-item cost)."""
    out = array("q")
    out.frombytes(np.ascontiguousarray(values, dtype=np.int64).tobytes())
    return out


def schedule(
    g: DepGraph, dur: np.ndarray, gap: np.ndarray, lat: np.ndarray, ret: np.ndarray, waits: np.ndarray, floor: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of every node with the given durations and lags; ``waits``: per node,
    whether a waiting call still waits (a removed sync does not); ``floor``: per node, a time
    an operation cannot end before (a collective waiting for the other ranks; ``NEG``: none).
    With the graph's own arrays this gives back the recorded times.

    Array passes (:func:`schedule_chains`) when they settle within ``CHAIN_ROUNDS`` rounds;
    else the node-by-node walk (:func:`schedule_walk`): the same times either way."""
    found = schedule_chains(g, dur, gap, lat, ret, waits, floor) if chains_worth_it(g, waits) else None
    if found is None and blocks_worth_it(g, waits):
        found = schedule_blocks(g, dur, gap, lat, ret, waits, floor)
    return found if found is not None else schedule_walk(g, dur, gap, lat, ret, waits, floor)


CHAIN_ROUNDS = 24  # [P] rounds of array passes tried before the walk (a round costs ~1/50 of a walk)
CHAIN_MIN_NODES = 50_000  # [P] below it the walk is as fast as the array passes' fixed costs


def chains_worth_it(g: DepGraph, waits: np.ndarray) -> bool:
    """Whether :func:`schedule_chains` should be tried: a large graph whose recorded waits
    that bound their call (the call ended with the work it waited for) are fewer than the
    rounds allowed -- each such wait is one turn from the GPU back to the host, and the
    array passes take one round per turn on the path; so is each wait across streams that
    bound its operation."""
    if g.size < CHAIN_MIN_NODES:
        return False
    w = np.flatnonzero((g.wait >= 0) & waits)
    bound = g.end[g.wait[w]] + g.ret[w] >= g.start[w] + g.dur[w]
    return int(np.count_nonzero(bound)) + _bound_stream_waits(g) < CHAIN_ROUNDS


def _bound_stream_waits(g: DepGraph) -> int:
    """Waits across streams that bound their operation in the record: each a turn from one
    queue's chain to another's (a round of the array passes when it is on the path)."""
    x = np.flatnonzero(g.xwait >= 0)
    return int(np.count_nonzero(g.end[g.xwait[x]] + g.xlag[x] == g.start[x]))


EXACT_FLOAT = 1 << 51  # below it an int64 is exact in a float64 (the chain maxima run on complex numbers)
NEG = -(1 << 60)  # no constraint
FEW_SEGMENTS = 64  # chains below which each gets its own accumulate


def _seg_cummax(segment: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Running maximum of ``values`` restarted at each new ``segment`` (nondecreasing codes):
    one accumulate per segment when they are few; else numpy orders complex numbers by real
    part, then imaginary part, so one accumulate over segment + 1j * value does it (exact
    for |values| < EXACT_FLOAT)."""
    if not len(segment):
        return values.copy()
    if int(segment[-1]) < FEW_SEGMENTS:
        out = np.empty_like(values)
        bounds = np.searchsorted(segment, np.arange(int(segment[-1]) + 2))
        for a, b in itertools.pairwise(bounds.tolist()):
            np.maximum.accumulate(values[a:b], out=out[a:b])
        return out
    return np.maximum.accumulate(segment.astype(np.float64) + 1j * values.astype(np.float64)).imag.astype(np.int64)


def _chain_order(prev: np.ndarray, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``nodes`` (whose ``prev`` links point at nodes of the same set or -1) in chain order,
    each chain contiguous from its head, and the chain code of each (list ranking by pointer
    doubling: log2 of the longest chain array passes)."""
    local = np.full(len(prev), -1, dtype=np.int64)
    local[nodes] = np.arange(len(nodes))
    p = prev[nodes]
    p = np.where(p >= 0, local[np.maximum(p, 0)], -1)
    head = np.where(p >= 0, p, np.arange(len(nodes)))
    depth = (p >= 0).astype(np.int64)
    jump = p.copy()
    while (jump >= 0).any():
        ok = jump >= 0
        j = np.maximum(jump, 0)
        depth = np.where(ok, depth + depth[j], depth)
        head = np.where(ok, head[j], head)
        jump = np.where(ok, jump[j], -1)
    order = np.lexsort((depth, head))
    return nodes[order], head[order]


def _chain_ends(first: np.ndarray, seg: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x_i = max(x_{i-1} + a_i, b_i) along each chain (x = b at a chain's first node), as
    prefix sums and a segmented running maximum: x_i = A_i + max over j <= i of (b_j - A_j)."""
    a = np.where(first, 0, a)
    big = np.cumsum(a)
    key = np.where(b > NEG, b - big, NEG)
    return big + _seg_cummax(seg, key)


def schedule_chains(
    g: DepGraph, dur: np.ndarray, gap: np.ndarray, lat: np.ndarray, ret: np.ndarray, waits: np.ndarray, floor: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`schedule_walk`'s times by whole chains: each host thread's calls and each
    queue's operations are a chain x_i = max(x_{i-1} + a_i, b_i) solved with array passes
    (:func:`_chain_ends`), the chains' links to each other (launch -> operation, operation
    -> the call that waited for it) taken from the previous round, until a round changes
    nothing (the unique solution of an acyclic system). None when that takes more than
    ``CHAIN_ROUNDS`` rounds (a host that waits after every launch alternates with the GPU
    once per launch) or the times are too large for the exact maxima."""
    n, nc = g.size, g.n_calls
    if not n:
        return g.start.copy(), g.end.copy()
    limit = int(np.abs(g.start).max()) + int(np.abs(g.end).max()) + int(np.abs(dur).sum()) + int(np.abs(gap).sum()) + int(np.abs(lat).max(initial=0))
    limit += int(np.abs(ret).sum()) + int(np.abs(g.slag).sum()) + int(np.abs(g.xlag).sum())
    if limit >= EXACT_FLOAT:
        return None
    start, end = g.start.copy(), g.end.copy()
    # host chains: calls are stored thread by thread in time order (hprev = the node before)
    c_first = g.hprev[:nc] < 0
    c_seg = np.cumsum(c_first) - 1
    iw = ((g.kind == WAIT_CALL) & waits)[:nc]
    c_wait = np.maximum(g.wait[:nc], 0)
    c_a = gap[:nc] + dur[:nc]
    # operation chains: queue order (sprev), each chain contiguous
    if g.qorder is not None and len(g.qorder) == n - nc:
        ops = g.qorder
        o_seg = np.cumsum(g.sprev[ops] < 0) - 1
    else:
        ops, o_seg = _chain_order(g.sprev, np.arange(nc, n, dtype=np.int64))
    o_first = g.sprev[ops] < 0
    o_launch = g.launch[ops]
    o_has = o_launch >= 0
    o_d = dur[ops]
    o_a = g.slag[ops] + o_d
    o_base = np.where(o_first, g.start[ops], 0)  # no launch: the recorded start heads a queue, else the queue decides
    o_floor = floor[ops] if floor is not None else None
    o_slag = g.slag[ops]
    o_x = g.xwait[ops]
    o_hasx = o_x >= 0
    o_xlag = g.xlag[ops]
    for _ in range(CHAIN_ROUNDS):
        ready = np.where(o_has, start[np.maximum(o_launch, 0)] + lat[ops], o_base)
        if o_hasx.any():  # a wait on another stream: that operation's end in the previous round
            ready = np.where(o_hasx, np.maximum(ready, end[np.maximum(o_x, 0)] + o_xlag), ready)
        o_end = _chain_ends(o_first, o_seg, o_a, ready + o_d if o_floor is None else np.maximum(ready + o_d, o_floor))
        changed = not np.array_equal(o_end, end[ops])
        end[ops] = o_end
        o_prev = np.zeros(len(ops), dtype=np.int64)
        o_prev[1:] = o_end[:-1]
        start[ops] = np.where(o_first, ready, np.maximum(ready, o_prev + o_slag))
        b = np.where(iw, end[c_wait] + ret[:nc], NEG)
        b = np.where(c_first, np.maximum(g.start[:nc] + dur[:nc], b), b)
        c_end = _chain_ends(c_first, c_seg, c_a, b)
        before = np.zeros(nc, dtype=np.int64)
        before[1:] = c_end[:-1]
        c_start = np.where(c_first, g.start[:nc], before + gap[:nc])
        changed |= not (np.array_equal(c_end, end[:nc]) and np.array_equal(c_start, start[:nc]))
        end[:nc], start[:nc] = c_end, c_start
        if not changed:
            return start, end
    return None


BLOCK_MIN_NODES = 500  # [P] average nodes per block below which the block-wise passes cost more than the walk


def blocks_worth_it(g: DepGraph, waits: np.ndarray) -> bool:
    """Whether :func:`schedule_blocks` should be tried: a large graph whose waiting calls
    (each ends a block) leave blocks of ``BLOCK_MIN_NODES`` nodes on average, with fewer waits
    across streams that bound in the record than rounds allowed per block."""
    if g.size < CHAIN_MIN_NODES:
        return False
    blocks = int(np.count_nonzero((g.kind == WAIT_CALL) & waits)) + 1
    return blocks * BLOCK_MIN_NODES <= g.size and _bound_stream_waits(g) < CHAIN_ROUNDS * blocks


def _segment_sums(head: np.ndarray, base: np.ndarray, inc: np.ndarray) -> np.ndarray:
    """x = base at each head, x_i = x_{i-1} + inc_i after it (``head[0]`` is True)."""
    c = np.cumsum(np.where(head, 0, inc))
    at = np.maximum.accumulate(np.where(head, np.arange(len(head)), 0))
    return base[at] + c - c[at]


def _block_entries(g: DepGraph, waits: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(block of each node's start, block of each waiting call's end (-1: not waiting), blocks):
    the processing order (:func:`_order`) cut after every end of a call that still waits."""
    n = g.size
    order = _order(g)
    waiting = np.flatnonzero(g.kind == WAIT_CALL)
    cut = (order >= n) & np.append(waits[waiting], False)[np.where(order >= n, order - n, len(waiting))]
    blk = np.cumsum(cut) - cut  # a cut's own entry closes its block
    pos = np.empty(len(order), dtype=np.int64)
    pos[order] = np.arange(len(order))
    start_blk = blk[pos[:n]]
    end_blk = np.full(n, -1, dtype=np.int64)
    active = waits[waiting]
    end_blk[waiting[active]] = blk[pos[n + np.flatnonzero(active)]]
    return start_blk, end_blk, int(blk[-1]) + 1 if len(blk) else 0


def schedule_blocks(
    g: DepGraph, dur: np.ndarray, gap: np.ndarray, lat: np.ndarray, ret: np.ndarray, waits: np.ndarray, floor: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`schedule_walk`'s times block by block: the processing order cut after every call
    that waits for the GPU (a sync per step: one block per step). Inside a block the host
    waits for nothing, so its calls are prefix sums; its GPU operations are chains (queue
    order) re-solved until waits across streams inside the block settle (at most
    ``CHAIN_ROUNDS`` rounds, else None); the block's closing wait then ends. Exact (the same
    times as the walk: tests/test_whatif.py)."""
    n, nc = g.size, g.n_calls
    if not n:
        return g.start.copy(), g.end.copy()
    is_wait = (g.kind == WAIT_CALL) & waits
    start_blk, end_blk, nblocks = _block_entries(g, is_wait)
    start, end = g.start.copy(), g.end.copy()
    fl = floor if floor is not None else np.full(n, NEG, dtype=np.int64)
    calls = np.arange(nc)
    calls = calls[np.argsort(start_blk[:nc], kind="stable")]  # by block, then node order (thread, time)
    c_bounds = np.searchsorted(start_blk[calls], np.arange(nblocks + 1))
    ops = g.qorder if g.qorder is not None and len(g.qorder) == n - nc else _chain_order(g.sprev, np.arange(nc, n, dtype=np.int64))[0]
    ops = ops[np.argsort(start_blk[ops], kind="stable")]  # by block, then queue order
    o_bounds = np.searchsorted(start_blk[ops], np.arange(nblocks + 1))
    closers = np.flatnonzero(end_blk >= 0)
    closer_of = np.full(nblocks, -1, dtype=np.int64)
    closer_of[end_blk[closers]] = closers
    for b in range(nblocks):
        _host_block(g, calls[c_bounds[b] : c_bounds[b + 1]], start, end, dur, gap, is_wait)
        if not _ops_block(g, ops[o_bounds[b] : o_bounds[b + 1]], start, end, dur, lat, fl):
            return None
        w = closer_of[b]
        if w >= 0:
            end[w] = max(start[w] + dur[w], end[g.wait[w]] + ret[w])
    return start, end


def _host_block(g: DepGraph, c: np.ndarray, start: np.ndarray, end: np.ndarray, dur: np.ndarray, gap: np.ndarray, is_wait: np.ndarray) -> None:
    """Start (and end, but of a call still waiting) of the calls ``c`` of one block, in place."""
    if not len(c):
        return
    prev = g.hprev[c]
    head = np.ones(len(c), dtype=bool)
    head[1:] = prev[1:] != c[:-1]
    base = np.where(prev >= 0, end[np.maximum(prev, 0)] + gap[c], g.start[c])
    inc = np.zeros(len(c), dtype=np.int64)
    inc[1:] = dur[c[:-1]] + gap[c[1:]]
    s = _segment_sums(head, base, inc)
    start[c] = s
    done = ~is_wait[c]
    end[c[done]] = s[done] + dur[c[done]]


def _ops_block(g: DepGraph, o: np.ndarray, start: np.ndarray, end: np.ndarray, dur: np.ndarray, lat: np.ndarray, fl: np.ndarray) -> bool:
    """Start and end of the operations ``o`` of one block (queue order), in place; False when
    the waits across streams inside the block do not settle within ``CHAIN_ROUNDS`` rounds."""
    if not len(o):
        return True
    sp, lch, xw = g.sprev[o], g.launch[o], g.xwait[o]
    head = np.ones(len(o), dtype=bool)
    head[1:] = sp[1:] != o[:-1]
    d, slag = dur[o], g.slag[o]
    base = np.where(lch >= 0, start[np.maximum(lch, 0)] + lat[o], np.where(sp < 0, g.start[o], 0))
    outside = head & (sp >= 0)  # its queue predecessor ended in an earlier block
    base = np.where(outside, np.maximum(base, end[np.maximum(sp, 0)] + slag), base)
    has_x = xw >= 0
    for _ in range(CHAIN_ROUNDS):
        ready = np.where(has_x, np.maximum(base, end[np.maximum(xw, 0)] + g.xlag[o]), base) if has_x.any() else base
        e = _chain_ends(head, np.cumsum(head) - 1, slag + d, np.maximum(ready + d, fl[o]))
        prev = np.zeros(len(o), dtype=np.int64)
        prev[1:] = e[:-1]
        s = np.where(head, ready, np.maximum(ready, prev + slag))
        changed = not (np.array_equal(e, end[o]) and np.array_equal(s, start[o]))
        start[o], end[o] = s, e
        if not changed or not has_x.any():
            return True
    return False


def schedule_walk(
    g: DepGraph, dur: np.ndarray, gap: np.ndarray, lat: np.ndarray, ret: np.ndarray, waits: np.ndarray, floor: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`schedule` node by node, in an order where every node comes after what it
    depends on (the reference the array passes are tested against)."""
    n = g.size
    # array('q') instead of lists: 8 bytes a value instead of a Python int object each
    order = _q(_order(g))
    start, end = _q(g.start), _q(g.end)
    hprev, launch, sprev, wait, xwait = _q(g.hprev), _q(g.launch), _q(g.sprev), _q(g.wait), _q(g.xwait)
    d, gp, lt, rt, sl, xl = _q(dur), _q(gap), _q(lat), _q(ret), _q(g.slag), _q(g.xlag)
    fl = _q(floor if floor is not None else np.full(n, NEG, dtype=np.int64))
    is_wait = (g.kind == WAIT_CALL) & waits
    kind_op = bytearray((g.kind >= KERNEL).astype(np.uint8).tobytes())
    iw = bytearray(is_wait.astype(np.uint8).tobytes())
    nc = g.n_calls
    waiting_nodes = _q(np.flatnonzero(g.kind == WAIT_CALL))
    for entry in order:
        if entry >= n:
            i = waiting_nodes[entry - n]
            if iw[i]:
                a = start[i] + d[i]
                b = end[wait[i]] + rt[i]
                end[i] = a if a > b else b
            continue
        i = entry
        if i < nc:
            p = hprev[i]
            s = end[p] + gp[i] if p >= 0 else start[i]
            start[i] = s
            if not iw[i]:
                end[i] = s + d[i]
        elif kind_op[i]:
            p = launch[i]
            q = sprev[i]
            s = start[p] + lt[i] if p >= 0 else (start[i] if q < 0 else 0)
            if q >= 0:
                t = end[q] + sl[i]
                if t > s:
                    s = t
            x = xwait[i]
            if x >= 0:
                t = end[x] + xl[i]
                if t > s:
                    s = t
            start[i] = s
            e = s + d[i]
            end[i] = e if e > fl[i] else fl[i]
    return np.frombuffer(start, dtype=np.int64).copy(), np.frombuffer(end, dtype=np.int64).copy()


# Critical-path edge kinds (the interval before a point, attributed to what filled it)
SEG_OWN, SEG_HOST, SEG_LAUNCH, SEG_QUEUE, SEG_RETURN, SEG_ROOT, SEG_XWAIT, SEG_XINFERRED = 0, 1, 2, 3, 4, 5, 6, 7


def binding(g: DepGraph, start: np.ndarray, end: np.ndarray, waits: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For each point (start of node i: point i; end: point size + i), the point that bound
    it (-1: none, a root) and the kind of the interval between them (SEG_*)."""
    n = g.size
    pred = np.full(2 * n, -1, dtype=np.int64)
    seg = np.full(2 * n, SEG_ROOT, dtype=np.int8)
    idx = np.arange(n)
    # ends: bound by the own start, or a waiting call by the operation it waited for
    pred[n:] = idx
    seg[n:] = SEG_OWN
    wait_ok = g.wait >= 0 if waits is None else (g.wait >= 0) & waits
    w = np.flatnonzero(wait_ok)
    by_op = end[g.wait[w]] + g.ret[w] >= start[w] + g.dur[w]
    pred[n + w[by_op]] = n + g.wait[w[by_op]]
    seg[n + w[by_op]] = SEG_RETURN
    # call starts: the previous call's end
    h = np.flatnonzero(g.hprev >= 0)
    pred[h] = n + g.hprev[h]
    seg[h] = SEG_HOST
    # operation starts: the queue predecessor when it ended last, else the launch
    ops = np.arange(g.n_calls, n)
    lch, sp = g.launch[ops], g.sprev[ops]
    via_launch = np.where(lch >= 0, start[np.maximum(lch, 0)] + g.lat[ops], np.iinfo(np.int64).min)
    via_queue = np.where(sp >= 0, end[np.maximum(sp, 0)] + g.slag[ops], np.iinfo(np.int64).min)
    queue_wins = (sp >= 0) & (via_queue >= via_launch)
    pred[ops] = np.where(queue_wins, n + sp, np.where(lch >= 0, lch, -1))
    seg[ops] = np.where(queue_wins, SEG_QUEUE, np.where(lch >= 0, SEG_LAUNCH, SEG_ROOT))
    # a wait on another stream's operation, when it ended last (ties: the event wait)
    xw = g.xwait[ops]
    via_x = np.where(xw >= 0, end[np.maximum(xw, 0)] + g.xlag[ops], np.iinfo(np.int64).min)
    x_wins = (xw >= 0) & (via_x >= np.maximum(via_queue, via_launch))
    pred[ops[x_wins]] = n + xw[x_wins]
    seg[ops[x_wins]] = np.where(g.xkind[ops[x_wins]] == XWAIT_INFERRED, SEG_XINFERRED, SEG_XWAIT)
    return pred, seg


def subgraph(g: DepGraph, keep: np.ndarray) -> DepGraph:
    """The graph of the nodes in the boolean mask ``keep`` (calls stay before operations):
    a link to a node left out is dropped, so a call whose previous call is out starts at
    its recorded time, an operation with neither its launch nor its queue predecessor
    starts at its recorded time, and a call that waited for an operation left out keeps
    its recorded duration."""
    new = np.full(g.size, -1, dtype=np.int64)
    rows = np.flatnonzero(keep)
    new[rows] = np.arange(len(rows))

    def remap(links: np.ndarray) -> np.ndarray:
        out = links[rows]
        return np.where(out >= 0, new[np.maximum(out, 0)], -1)

    wait = remap(g.wait)
    lost_wait = (g.wait[rows] >= 0) & (wait < 0)
    dur = np.where(lost_wait, g.end[rows] - g.start[rows], g.dur[rows])
    kind = np.where(lost_wait, CALL, g.kind[rows]).astype(np.int8)
    return DepGraph(
        t0=g.t0,
        n_calls=int(np.count_nonzero(keep[: g.n_calls])),
        start=g.start[rows],
        end=g.end[rows],
        kind=kind,
        cls=g.cls[rows],
        api_row=g.api_row[rows],
        op_row=g.op_row[rows],
        thread=g.thread[rows],
        hprev=remap(g.hprev),
        gap=g.gap[rows],
        dur=dur,
        launch=remap(g.launch),
        lat=g.lat[rows],
        sprev=remap(g.sprev),
        slag=g.slag[rows],
        wait=wait,
        ret=g.ret[rows],
        xwait=remap(g.xwait),
        xlag=g.xlag[rows],
        xkind=np.where(remap(g.xwait) >= 0, g.xkind[rows], XWAIT_NONE).astype(np.int8),
        l0_ns=g.l0_ns,
        links=dict(g.links),
    )
