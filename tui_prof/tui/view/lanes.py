"""Timeline lanes: per-row interval arrays packed for O(width · log N) binning.

This is rendering support, not analysis: it answers "what fraction of this screen
cell's time span is covered by intervals of this row", which is how the timeline
picks a density glyph. No textual import here, so the benchmark can time it alone.

Technique: each lane's intervals are merged (union, so nesting/overlap is counted
once), shifted to start at the run origin, and the lane is offset by ``lane * stride``
so all lanes live in one sorted array. ``cum[k]`` is the busy time of every interval
before ``k``; busy time up to ``t`` is ``cum[k] + clip(t - start[k], 0, dur[k])`` with
``k = searchsorted(start, t, 'right') - 1``. One ``np.searchsorted`` call answers all
lane × edge queries of a frame.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def merge_intervals(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Union of half-open intervals [start, end) as sorted, disjoint int64 arrays."""
    start = np.asarray(start, dtype=np.int64)
    end = np.maximum(np.asarray(end, dtype=np.int64), start)
    if start.size == 0:
        return start.copy(), end.copy()
    if np.all(start[1:] >= start[:-1]):  # traces are mostly written in time order: no sort
        s, e = start, end
    else:
        order = np.argsort(start, kind="stable")
        s, e = start[order], end[order]
    run_end = np.maximum.accumulate(e)
    # A new merged interval begins where the start lies after every earlier end.
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    idx = np.flatnonzero(new)
    merged_start = s[idx]
    last = np.append(idx[1:] - 1, s.size - 1)
    merged_end = run_end[last]
    return merged_start, merged_end


@dataclass
class Lane:
    """One timeline row: a label and the (merged) intervals it shows."""

    label: str
    kind: str  # "host" (API calls) | "ops" (host ops: markers) | "gpu" | "copy" | "memory" | "rank" (a process's GPUs and copies)
    start: np.ndarray  # int64 ns, relative to the run origin, merged
    end: np.ndarray
    key: tuple = ()
    sync_start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sync_end: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # idle gaps of the lane's agent (analysis.timeline.gpu_timeline), drawn wherever they are
    idle_start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    idle_end: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # a "memory" lane: the allocated bytes after each allocation event (analysis.memory), drawn as a level
    level_t: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    level_v: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # a "rank" lane: its communication (collective) kernels, merged, drawn apart from compute
    comm_start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    comm_end: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def level_frame(self, edges: np.ndarray) -> np.ndarray:
        """Highest allocated level in each cell [edges[i], edges[i+1]) (the level held when the
        cell starts, or any event inside it); 0 before the first event."""
        t, v = self.level_t, self.level_v
        if not t.size:
            return np.zeros(len(edges) - 1, np.int64)
        lo = np.searchsorted(t, edges[:-1], side="right")  # events after each cell's start
        hi = np.searchsorted(t, edges[1:], side="left")
        held = np.where(lo > 0, v[np.maximum(lo - 1, 0)], 0)
        inside = np.zeros(len(lo), np.int64)
        has = hi > lo
        if has.any():
            inside[has] = [int(v[a:b].max()) for a, b in zip(lo[has].tolist(), hi[has].tolist(), strict=True)]  # one per cell
        return np.maximum(held, inside)


class PackedLanes:
    """All lanes' intervals in one sorted array, for vectorised occupancy queries."""

    def __init__(self, intervals: list[tuple[np.ndarray, np.ndarray]], span: int) -> None:
        self.n = len(intervals)
        self.span = max(int(span), 1)
        self.stride = self.span + 1
        starts, ends = [], []
        for lane, (s, e) in enumerate(intervals):
            s, e = merge_intervals(s, e)
            s = np.clip(s, 0, self.span)
            e = np.clip(e, 0, self.span)
            offset = np.int64(lane) * np.int64(self.stride)
            starts.append(s + offset)
            ends.append(e + offset)
        self.start = np.concatenate(starts) if starts else np.zeros(0, np.int64)
        self.end = np.concatenate(ends) if ends else np.zeros(0, np.int64)
        self.dur = self.end - self.start
        self.cum = np.concatenate([[0], np.cumsum(self.dur)]).astype(np.int64)
        self.offsets = np.arange(self.n, dtype=np.int64) * np.int64(self.stride)

    def busy_upto(self, q: np.ndarray) -> np.ndarray:
        """Busy ns of all packed intervals before packed time ``q`` (any shape)."""
        if self.start.size == 0:
            return np.zeros(q.shape, dtype=np.int64)
        k = np.searchsorted(self.start, q, side="right") - 1
        kc = np.maximum(k, 0)
        partial = np.clip(q - self.start[kc], 0, self.dur[kc])
        return np.where(k >= 0, self.cum[kc] + partial, 0)

    def occupancy(self, t0: int, t1: int, width: int) -> np.ndarray:
        """Fraction (0..1) of each of ``width`` equal cells of [t0, t1) covered, per lane.

        Shape (n_lanes, width), float32. Times are ns relative to the run origin.
        """
        width = max(int(width), 1)
        t0, t1 = int(t0), int(t1)
        if t1 - t0 < width:
            t1 = t0 + width
        edges = t0 + (np.arange(width + 1, dtype=np.int64) * (t1 - t0)) // width
        clipped = np.clip(edges, 0, self.span)
        q = self.offsets[:, None] + clipped[None, :]
        busy = self.busy_upto(q)
        cell = np.diff(edges).astype(np.float64)
        return (np.diff(busy, axis=1) / cell[None, :]).astype(np.float32)


@dataclass
class TimelineModel:
    """Everything the timeline widget draws, precomputed once per loaded run set.

    ``origin`` is the absolute ns timestamp shown as 0 on the ruler. ``gaps`` are
    idle intervals (relative ns) from the analysis layer, or None when it has none.
    """

    lanes: list[Lane]
    origin: int
    span: int
    gaps: np.ndarray | None = None  # shape (n, 2) relative ns, sorted by start
    gap_lanes: np.ndarray | None = None  # lane index of each gap (-1: whole device)
    # the row of the run view's gap table (RunView.gaps) of each gap; None: the same order
    gap_rows: np.ndarray | None = None
    # what the time axis is, shown above the lanes (multi-process runs; "" shows nothing)
    header: str = ""
    # the rank lanes of a multi-process run (one lane per process), which the timeline shows
    # instead of these lanes until its rank key switches; None for one process
    ranks: TimelineModel | None = None
    # rank lanes: per run, its lane, and the ns added to a time relative to the run view's
    # origin to place it on this model's axis (RunView.kernels "t" + run_shift[run])
    run_lane: np.ndarray | None = None
    run_shift: np.ndarray | None = None
    # packed from the lanes in __post_init__
    busy: PackedLanes = field(init=False)
    sync: PackedLanes = field(init=False)
    idle: PackedLanes = field(init=False)
    comm: PackedLanes | None = field(init=False)  # rank lanes' communication; None without rank lanes

    def __post_init__(self) -> None:
        self.busy = PackedLanes([(lane.start, lane.end) for lane in self.lanes], self.span)
        self.sync = PackedLanes([(lane.sync_start, lane.sync_end) for lane in self.lanes], self.span)
        self.idle = PackedLanes([(lane.idle_start, lane.idle_end) for lane in self.lanes], self.span)
        has_comm = any(lane.kind == "rank" for lane in self.lanes)
        self.comm = PackedLanes([(lane.comm_start, lane.comm_end) for lane in self.lanes], self.span) if has_comm else None

    @property
    def shifted(self) -> bool:
        """Some process's times are shifted (rank lanes aligned at their first collective):
        times of the run view (steps, kernels) need ``run_shift`` to land on this axis."""
        return self.run_shift is not None and bool(np.any(self.run_shift != 0))

    def gap_index(self, row: int) -> int:
        """This model's index of the gap in row ``row`` of the run view's gap table (-1: none)."""
        if self.gap_rows is None:
            return row
        hit = np.flatnonzero(self.gap_rows == row)
        return int(hit[0]) if hit.size else -1

    def gap_row(self, index: int) -> int:
        """The run view's gap-table row of this model's gap ``index``."""
        return int(self.gap_rows[index]) if self.gap_rows is not None else index

    def frame(self, t0: int, t1: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        """(busy occupancy, sync occupancy), each (n_lanes, width)."""
        return self.busy.occupancy(t0, t1, width), self.sync.occupancy(t0, t1, width)

    def sync_bars(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(start, end, lane) of every host lane's merged sync intervals, sorted by start:
        the bars the timeline's next/previous-sync keys jump between."""
        if not hasattr(self, "_sync_bars"):
            parts = []
            for i, lane in enumerate(self.lanes):
                if lane.kind == "host" and lane.sync_start.size:
                    s, e = merge_intervals(lane.sync_start, lane.sync_end)
                    parts.append((s, e, np.full(s.size, i, np.int64)))
            if parts:
                s, e, li = (np.concatenate(x) for x in zip(*parts))
                order = np.argsort(s, kind="stable")
                self._sync_bars = (s[order], e[order], li[order])
            else:
                self._sync_bars = (np.zeros(0, np.int64),) * 3
        return self._sync_bars

    def idle_frame(self, t0: int, t1: int, width: int) -> np.ndarray:
        """Share of each cell inside a listed idle gap of the lane's agent, (n_lanes, width)."""
        return self.idle.occupancy(t0, t1, width)

    def comm_frame(self, t0: int, t1: int, width: int) -> np.ndarray:
        """Share of each cell covered by communication kernels, (n_lanes, width) (zeros without rank lanes)."""
        if self.comm is None:
            return np.zeros((len(self.lanes), max(int(width), 1)), np.float32)
        return self.comm.occupancy(t0, t1, width)


def synthetic_model(n_events: int, n_lanes: int, seed: int = 0) -> TimelineModel:
    """A model with ``n_events`` random intervals spread over ``n_lanes`` (for benchmarks)."""
    rng = np.random.default_rng(seed)
    per = n_events // n_lanes
    lanes = []
    span = 0
    for i in range(n_lanes):
        gaps = rng.integers(100, 5_000, per)
        durs = rng.integers(500, 20_000, per)
        start = np.cumsum(gaps + durs) - durs
        end = start + durs
        span = max(span, int(end[-1]))
        kind = "host" if i < n_lanes // 4 else "gpu"
        lane = Lane(f"lane {i}", kind, start.astype(np.int64), end.astype(np.int64))
        if kind == "host":
            lane.sync_start, lane.sync_end = lane.start[::50], lane.end[::50]
        lanes.append(lane)
    return TimelineModel(lanes, origin=0, span=span)
