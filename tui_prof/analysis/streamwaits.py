"""Waits across streams: which GPU operation waited for an operation of another stream, and
which host call waited for an event (docs/metrics.md, "Waits across streams").

Two sources, never mixed up:

* **explicit** (the trace names the link): a Kineto ``cuda_sync`` event that names the
  cudaEventRecord it waits on (``meta.extra["cuda_sync_links"]``, kept by the Kineto
  loader). The event's source is the last operation launched on the event's stream (same
  device, any host thread) before the cudaEventRecord call started, HTA's rule. A "Stream
  Wait Event" (cudaStreamWaitEvent) makes the first operation launched on the waiting
  stream by the same host thread after the call wait for that source; an "Event Sync"
  (cudaEventSynchronize, and cudaEventQuery where CUPTI reports one) makes the call wait
  for it; a "Stream Sync" (cudaStreamSynchronize) makes the call wait for the last
  operation launched on its stream before it started (not the latest of any stream).
* **inferred** (only a cudaStreamWaitEvent / hipStreamWaitEvent / cuStreamWaitEvent call,
  no arguments): the operation the call's thread launches next (the ``destination``) is
  treated as waiting for the operation of another stream of the same GPU that ended last
  before the destination started (the ``source``) only when the record shows nothing else
  held it: the source was launched before the wait call started (its event can have been
  recorded), the destination's launch had reached the GPU (launch start + the run's usual
  launch latency) before the source ended, its own stream had nothing running after the
  source ended, and it started at most ``INFER_EPS_NS`` after the source ended. A wait that
  did not hold anything up leaves no mark on the times, so it is not found: an inferred
  link is only ever one that bound in the record.

A link the record contradicts (the destination started before its source ended) is dropped
and counted; so is a link between two operations of the same stream (the queue already
orders them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tui_prof.model import Run
from tui_prof.model.schema import column_array

INFER_EPS_NS = 20_000  # [P] a destination starting at most this long after its source's end is taken as released by it
WAIT_EVENT_RE = re.compile(r"^(hip|cuda|cu)StreamWaitEvent\w*$")
NONE = -1


def domain_is(api: pd.DataFrame, domain: str) -> np.ndarray:
    """Per API row: its domain is ``domain`` (on the category codes: no string per row)."""
    if not len(api):
        return np.zeros(0, dtype=bool)
    column = api["domain"]
    if not isinstance(column.dtype, pd.CategoricalDtype):
        return column.astype(str).to_numpy() == domain
    cats = list(column.cat.categories)
    if domain not in cats:
        return np.zeros(len(api), dtype=bool)
    return column.cat.codes.to_numpy() == cats.index(domain)


@dataclass
class StreamWaits:
    """Links found (operation indices count kernels then copies, as the graph's operations)."""

    dest: np.ndarray  # operation that waits
    src: np.ndarray  # operation of another stream it waits for
    inferred: np.ndarray  # bool per link
    host_call: np.ndarray  # call node that waits for an event (Event Sync)
    host_src: np.ndarray  # operation it waits for
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class OpView:
    """What the link rules need of the graph being built (graph-relative ns)."""

    start: np.ndarray  # per operation
    end: np.ndarray
    agent: np.ndarray
    stream: np.ndarray  # recorded stream (-1: not recorded)
    lane: np.ndarray  # the graph's queue key (stream, else queue)
    launch: np.ndarray  # call node that launched it, -1
    sprev: np.ndarray  # previous operation on its queue (operation index), -1
    c_start: np.ndarray  # per call node
    c_end: np.ndarray
    c_thread: np.ndarray
    node_of_row: np.ndarray  # API row -> call node (-1: not a node)
    l0: int


def _rows_by_correlation(api: pd.DataFrame, wanted: np.ndarray) -> np.ndarray:
    """API row of the one runtime call (not a ``cuda_sync`` row) with each wanted correlation id, -1 when none or several."""
    out = np.full(len(wanted), NONE, dtype=np.int64)
    if api.empty or not len(wanted):
        return out
    corr = column_array(api, "correlation_id").astype(np.int64)
    keep = np.isin(corr, wanted) & ~domain_is(api, "cuda_sync")
    rows = np.flatnonzero(keep)
    keys = corr[rows]
    order = np.argsort(keys, kind="stable")
    keys, rows = keys[order], rows[order]
    left = np.searchsorted(keys, wanted, side="left")
    right = np.searchsorted(keys, wanted, side="right")
    one = (right - left) == 1
    out[one] = rows[left[one]]
    return out


def _combined(keys: np.ndarray, times: np.ndarray, q_keys: np.ndarray, q_times: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(item codes, query codes, R): key * R + the rank of the time among all the times, so
    that one sort orders by key, then time (keys >= 0)."""
    _, rank = np.unique(np.concatenate([times, q_times]), return_inverse=True)
    rank = rank.reshape(-1).astype(np.int64)
    r = int(rank.max()) + 1 if len(rank) else 1
    return keys.astype(np.int64) * r + rank[: len(times)], q_keys.astype(np.int64) * r + rank[len(times) :], r


def _grouped_search(keys: np.ndarray, times: np.ndarray, q_keys: np.ndarray, q_times: np.ndarray, after: bool) -> np.ndarray:
    """Per query: the item of the same key with the latest time at or before the query's
    (``after``: the earliest at or after it), ties by item number; -1 when none. One sort of
    the items by (key, time, item) and one binary search per query, whatever the number of
    keys (streams, threads: a hostile trace can make many)."""
    out = np.full(len(q_keys), NONE, dtype=np.int64)
    if not len(keys) or not len(q_keys):
        return out
    code, q_code, r = _combined(keys, times, q_keys, q_times)
    order = np.lexsort((np.arange(len(code)), code))
    sc = code[order]
    if after:
        pos = np.searchsorted(sc, q_code, side="left")
        ok = pos < len(sc)
    else:
        pos = np.searchsorted(sc, q_code, side="right") - 1
        ok = pos >= 0
    p = np.clip(pos, 0, len(sc) - 1)
    ok &= sc[p] // r == q_code // r  # the same key
    out[ok] = order[p[ok]]
    return out


def _key(*columns: np.ndarray) -> np.ndarray:
    """One int64 code per row of the given small-integer columns."""
    frame = pd.DataFrame({str(i): c for i, c in enumerate(columns)})
    return frame.groupby(list(frame.columns), sort=False).ngroup().to_numpy().astype(np.int64) if len(frame) else np.array([], np.int64)


def explicit_links(run: Run, v: OpView) -> tuple[list[tuple[int, int]], list[tuple[int, int]], dict[str, int], set[int]]:
    """(operation waits (dest, src), host waits (call node, src), counts, the wait call nodes
    the trace explains) named by the trace's ``cuda_sync`` events."""
    links = run.meta.extra.get("cuda_sync_links") if isinstance(run.meta.extra, dict) else None
    counts = {"event_links_recorded": 0, "event_links_unmatched": 0}
    if not isinstance(links, dict) or not links.get("correlation"):
        return [], [], counts, set()
    try:
        table = {k: np.asarray(links[k], dtype=np.int64).reshape(-1) for k in ("correlation", "device", "stream", "wait_on_stream", "record_correlation")}
    except (KeyError, TypeError, ValueError, OverflowError):
        return [], [], counts, set()
    n = len(table["correlation"])
    if any(len(a) != n for a in table.values()):
        return [], [], counts, set()
    counts["event_links_recorded"] = n
    rec = _rows_by_correlation(run.api, table["record_correlation"])
    call = _rows_by_correlation(run.api, table["correlation"])
    rec_node = np.where(rec >= 0, v.node_of_row[np.maximum(rec, 0)], NONE) if len(v.node_of_row) else np.full(n, NONE)
    call_node = np.where(call >= 0, v.node_of_row[np.maximum(call, 0)], NONE) if len(v.node_of_row) else np.full(n, NONE)
    launched = np.flatnonzero(v.launch >= 0)
    ls = v.c_start[v.launch[launched]]
    # a Stream Sync (no record call): the host waits for what was launched on the stream before the call
    anchor = np.where(table["record_correlation"] < 0, call_node, rec_node)
    ok = (anchor >= 0) & (call_node >= 0)
    # source: the last operation launched on (device, event stream) before the record (the sync) call started
    keys = _key(np.concatenate([v.agent[launched], table["device"]]), np.concatenate([v.stream[launched], table["wait_on_stream"]]))
    found = _grouped_search(keys[: len(launched)], ls, keys[len(launched) :], np.where(ok, v.c_start[np.maximum(anchor, 0)], -(1 << 62)), after=False)
    src = np.where(found >= 0, launched[np.maximum(found, 0)], NONE)
    ok &= src >= 0
    # destination: the first operation launched on (device, waiting stream) by the wait call's thread after it
    thread = v.c_thread[np.maximum(call_node, 0)] if len(v.c_thread) else np.full(n, NONE)
    keys = _key(
        np.concatenate([v.agent[launched], table["device"]]),
        np.concatenate([v.stream[launched], table["stream"]]),
        np.concatenate([v.c_thread[v.launch[launched]], thread]),
    )
    found = _grouped_search(keys[: len(launched)], ls, keys[len(launched) :], np.where(ok, v.c_start[np.maximum(call_node, 0)], 1 << 62), after=True)
    dest = np.where(found >= 0, launched[np.maximum(found, 0)], NONE)
    host_wait = ok & (table["stream"] < 0)  # Event Sync, Stream Sync: the host call waits
    gpu_wait = ok & (table["stream"] >= 0) & (dest >= 0)
    counts["event_links_unmatched"] = int(n - np.count_nonzero(host_wait | gpu_wait))
    explained = set(call_node[call_node >= 0].tolist())
    gpu = list(zip(dest[gpu_wait].tolist(), src[gpu_wait].tolist(), strict=True))
    host = list(zip(call_node[host_wait].tolist(), src[host_wait].tolist(), strict=True))
    return gpu, host, counts, explained


def inferred_links(run: Run, v: OpView, explained: set[int]) -> tuple[list[tuple[int, int]], dict[str, int]]:
    """Operation waits inferred from stream-wait-event calls without a ``cuda_sync`` link (module docstring)."""
    counts = {"wait_event_calls": 0, "wait_event_calls_unlinked": 0}
    api = run.api
    if api.empty or not len(v.node_of_row):
        return [], counts
    names = api["name"]
    cats = names.cat.categories if isinstance(names.dtype, pd.CategoricalDtype) else pd.Index(sorted(set(names.astype(str))))
    hit = {str(c) for c in cats if WAIT_EVENT_RE.match(str(c))}
    if not hit:
        return [], counts
    if isinstance(names.dtype, pd.CategoricalDtype):  # on the codes: no string per call
        codes = [i for i, c in enumerate(names.cat.categories) if str(c) in hit]
        rows = np.flatnonzero(np.isin(names.cat.codes.to_numpy(), codes))
    else:
        rows = np.flatnonzero(names.astype(str).isin(hit).to_numpy())
    nodes = v.node_of_row[rows]
    nodes = np.unique(nodes[nodes >= 0])
    nodes = nodes[~np.isin(nodes, np.array(sorted(explained), dtype=np.int64))]
    counts["wait_event_calls"] = len(nodes)
    if not len(nodes):
        return [], counts
    launched = np.flatnonzero(v.launch >= 0)
    found = _grouped_search(v.c_thread[v.launch[launched]], v.c_start[v.launch[launched]], v.c_thread[nodes], v.c_end[nodes], after=True)
    dest = np.where(found >= 0, launched[np.maximum(found, 0)], NONE)
    src = _released_by(v, dest, v.c_start[nodes])
    counts["wait_event_calls_unlinked"] = int(np.count_nonzero(src < 0))
    ok = src >= 0
    return list(zip(dest[ok].tolist(), src[ok].tolist(), strict=True)), counts


def _released_by(v: OpView, dest: np.ndarray, wait_start: np.ndarray) -> np.ndarray:
    """Per destination (-1: none), the operation of another stream of its GPU that released
    it by the inference rule, -1 when the rule finds none."""
    out = np.full(len(dest), NONE, dtype=np.int64)
    have = np.flatnonzero(dest >= 0)
    if not len(have):
        return out
    d = dest[have]
    codes = _key(np.concatenate([v.agent, v.agent[d]]), np.concatenate([v.lane, v.lane[d]]))
    op_lane, d_lane = codes[: len(v.agent)], codes[len(v.agent) :]
    agents = _key(np.concatenate([v.agent, v.agent[d]]))
    # the operations of each GPU by end; for each, the latest earlier one on another lane
    code, q_code, r = _combined(agents[: len(v.agent)], v.end, agents[len(v.agent) :], v.start[d])
    order = np.lexsort((np.arange(len(code)), code))
    sc, lanes = code[order], op_lane[order]
    change = np.ones(len(order), dtype=bool)
    change[1:] = (lanes[1:] != lanes[:-1]) | (sc[1:] // r != sc[:-1] // r)
    run_start = np.maximum.accumulate(np.where(change, np.arange(len(order)), 0))
    prev_other = np.where(run_start > 0, run_start - 1, NONE)  # the last position before this lane's run
    pos = np.searchsorted(sc, q_code, side="right") - 1  # the latest end at or before the destination's start
    p = np.maximum(pos, 0)
    same_gpu = (pos >= 0) & (sc[p] // r == q_code // r)
    pick = np.where(lanes[p] == d_lane, prev_other[p], pos)
    q = np.maximum(pick, 0)
    ok = same_gpu & (pick >= 0) & (sc[q] // r == q_code // r)
    x = np.where(ok, order[q], NONE)
    xs = np.maximum(x, 0)
    x_end = v.end[xs]
    x_launch = v.launch[xs]
    launched_before = (x_launch >= 0) & (v.c_start[np.maximum(x_launch, 0)] <= wait_start[have])
    reached = v.c_start[v.launch[d]] + v.l0 < x_end
    sp = v.sprev[d]
    idle = (sp < 0) | (v.end[np.maximum(sp, 0)] < x_end)
    close = (v.start[d] - x_end >= 0) & (v.start[d] - x_end <= INFER_EPS_NS)
    keep = (x >= 0) & launched_before & reached & idle & close
    out[have[keep]] = x[keep]
    return out


def stream_waits(run: Run, v: OpView) -> StreamWaits:
    """Every cross-stream and event link of a process (module docstring); a destination with
    several sources keeps the one that ended last (an operation has one such predecessor)."""
    gpu, host, counts, explained = explicit_links(run, v)
    inferred, more = inferred_links(run, v, explained)
    counts.update(more)
    pairs = [(d, s, False) for d, s in gpu] + [(d, s, True) for d, s in inferred]
    best: dict[int, tuple[int, bool]] = {}
    same = contradicted = 0
    for d, s, inf in pairs:
        if v.lane[d] == v.lane[s] and v.agent[d] == v.agent[s]:
            same += 1
            continue
        if v.end[s] > v.start[d]:
            contradicted += 1
            continue
        if d not in best or v.end[s] > v.end[best[d][0]]:
            best[d] = (s, inf)
    h_ok = [(c, s) for c, s in host if v.end[s] <= v.c_end[c]]
    contradicted += len(host) - len(h_ok)
    dest = np.array(sorted(best), dtype=np.int64)
    counts.update({"same_stream_links": same, "links_contradicted": contradicted})
    return StreamWaits(
        dest=dest,
        src=np.array([best[d][0] for d in dest.tolist()], dtype=np.int64),
        inferred=np.array([best[d][1] for d in dest.tolist()], dtype=bool),
        host_call=np.array([c for c, _ in h_ok], dtype=np.int64),
        host_src=np.array([s for _, s in h_ok], dtype=np.int64),
        counts=counts,
    )
