"""Host operations (the model's ``markers`` table: Kineto ``cpu_op``/``user_annotation``,
roctx and rocprofv3 marker ranges) over an interval: what the CPU was doing while the
GPU sat idle.

``nesting_depth`` gives each range its depth in its thread's stack (0: outermost), for
one timeline lane per depth; ``ops_overlapping`` lists the ranges that overlap an
interval with the time they overlap it; ``dominant_op`` names the one that explains the
interval: the innermost range that covers at least half of what the widest one covers
(an outer ``forward`` annotation covers every gap inside it; the op inside it that
covers most of the gap is the answer).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

# marker sources drawn on the device side, not host ops (Kineto's GPU-side annotations)
DEVICE_SOURCES = ("gpu_user_annotation",)
# a range covering at least this share of the widest overlap competes on depth
DOMINANT_SHARE = 0.5


def host_markers(markers: pd.DataFrame) -> pd.DataFrame:
    """The markers that are host ranges (every source but :data:`DEVICE_SOURCES`)."""
    if not len(markers):
        return markers
    device = np.isin(markers["source"].astype(str).to_numpy(), DEVICE_SOURCES)
    return markers[~device] if device.any() else markers


def nesting_depth(start: np.ndarray, end: np.ndarray, thread: np.ndarray) -> np.ndarray:
    """Depth of each range in its thread's stack of ranges (0: not inside another range
    of the same thread), for ranges that nest (each thread's ranges form a stack, as
    Kineto's and roctx's do). Vectorised: within a thread, ranges sorted by start (longer
    first on a tie), the depth of a range is the number of ranges before it minus those
    that ended by its start."""
    start = np.asarray(start, dtype=np.int64)
    end = np.maximum(np.asarray(end, dtype=np.int64), start)
    n = start.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    _, code = np.unique(np.asarray(thread, dtype=np.int64), return_inverse=True)
    code = code.astype(np.int64)
    order = np.lexsort((-(end - start), start, code))
    s, e, c = start[order], end[order], code[order]
    first = np.searchsorted(c, c, side="left")  # each thread's first position
    rank = np.arange(n, dtype=np.int64) - first  # ranges of this thread started before
    # ends of this thread at or before each start: the thread's ends sorted per thread
    lo = np.min(start) if n else 0
    stride = int(np.max(end) - lo) + 2
    packed_end = np.sort((e - lo) + c * stride)
    ended = np.searchsorted(packed_end, (s - lo) + c * stride, side="right") - np.searchsorted(packed_end, c * stride, side="left")
    depth = np.empty(n, dtype=np.int64)
    depth[order] = np.maximum(rank - ended, 0)
    return depth


def ops_overlapping(markers: pd.DataFrame, start: int, end: int, pid: int | None = None) -> pd.DataFrame:
    """Markers that overlap [start, end) (of process ``pid`` when given; instants at a
    point inside count with 0 ns), sorted by start, with ``overlap_ns`` (time inside the
    interval) and ``depth`` (:func:`nesting_depth` among the process's ranges)."""
    markers = host_markers(markers)
    if pid is not None and len(markers):
        markers = markers[markers["pid"].to_numpy() == pid]
    if not len(markers):
        return markers.assign(overlap_ns=np.zeros(0, np.int64), depth=np.zeros(0, np.int64))
    s = markers["start"].to_numpy().astype(np.int64)
    e = markers["end"].to_numpy().astype(np.int64)
    depth = nesting_depth(s, e, markers["tid"].to_numpy())
    hit = (e > start) & (s < end) | ((e == s) & (s >= start) & (s < end))
    ops = markers[hit].assign(
        overlap_ns=np.minimum(e[hit], end) - np.maximum(s[hit], start),
        depth=depth[hit],
    )
    return ops.sort_values("start", kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class DominantOp:
    name: str
    overlap_ns: int  # time of the interval it covers
    depth: int
    tid: int


def dominant_op(ops: pd.DataFrame) -> DominantOp | None:
    """The range that explains the interval (see the module docstring) among
    :func:`ops_overlapping`'s rows, or None when no range overlaps it for any time."""
    if not len(ops):
        return None
    overlap = ops["overlap_ns"].to_numpy()
    widest = int(overlap.max())
    if widest <= 0:
        return None
    candidates = np.flatnonzero(overlap >= DOMINANT_SHARE * widest)
    depth = ops["depth"].to_numpy()
    # deepest first; among equal depths the larger overlap
    best = candidates[np.lexsort((-overlap[candidates], -depth[candidates]))[0]]
    row = ops.iloc[int(best)]
    return DominantOp(str(row["name"]), int(row["overlap_ns"]), int(row["depth"]), int(row["tid"]))


def dominant_ops(markers: pd.DataFrame, starts: np.ndarray, ends: np.ndarray, tids: np.ndarray) -> list[DominantOp | None]:
    """:func:`dominant_op` of each interval [starts[i], ends[i]) among the host ranges of
    thread ``tids[i]`` (every thread where it is < 0), the nesting depths computed once
    (a gaps table asks for a few intervals of a run of a million ranges)."""
    markers = host_markers(markers)
    out: list[DominantOp | None] = [None] * len(starts)
    if not len(markers) or not len(starts):
        return out
    s = markers["start"].to_numpy().astype(np.int64)
    e = markers["end"].to_numpy().astype(np.int64)
    tid = markers["tid"].to_numpy().astype(np.int64)
    depth = nesting_depth(s, e, tid)
    for i, (a, b, t) in enumerate(zip(np.asarray(starts).tolist(), np.asarray(ends).tolist(), np.asarray(tids).tolist(), strict=True)):
        hit = np.flatnonzero((e > a) & (s < b) & ((tid == t) | (t < 0)))
        if not len(hit):
            continue
        overlap = np.minimum(e[hit], b) - np.maximum(s[hit], a)
        ops = pd.DataFrame({"name": markers["name"].to_numpy()[hit], "overlap_ns": overlap, "depth": depth[hit], "tid": tid[hit]})
        out[i] = dominant_op(ops)
    return out
