"""How per-process figures combine into whole-run figures (docs/metrics.md, "Aggregation").

A run directory holds one :class:`~tui_prof.model.Run` per process. Times are on each
process's own clock; processes of one host share that clock, processes of different
hosts do not (their clocks may differ by more than a whole step). So:

* **span** (``wall_ns``) of the run = per clock group (one host) the first start to the
  last end over its processes; over several groups the largest group span (their times
  cannot be laid on one axis, so they are not added and not united);
* **GPU active span** = per clock group the union of each (process, GPU)'s first-to-last
  activity interval; over groups the largest. It is a part of the span;
* **process time** = the sum of the processes' own walls: the whole of any figure summed
  over processes (sync, launch API time, copy time, kernel time per name), so its
  percentage is the mean over processes weighted by their wall, never above 100 when each
  process's part is within its own wall.

Processes that do not record a host name are taken to be on one host: Kineto and rocprofv3
both write the host's clock (Kineto: Unix time; rocprofv3: CLOCK_BOOTTIME of that host).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tui_prof.analysis.timeline import union_length
from tui_prof.model import Run

UNKNOWN_HOST = ""


def clock_key(run: Run) -> str:
    """The clock a process's times are on: its host name (``UNKNOWN_HOST`` when not recorded)."""
    return run.meta.hostname or UNKNOWN_HOST


def group_span(ranges: Sequence[tuple[str, tuple[int, int] | None]]) -> int:
    """Whole-run span from (clock key, (first, last) or None) per process: per clock the
    first start to the last end, then the largest over clocks."""
    lo: dict[str, int] = {}
    hi: dict[str, int] = {}
    for key, r in ranges:
        if r is None:
            continue
        lo[key] = min(lo.get(key, r[0]), r[0])
        hi[key] = max(hi.get(key, r[1]), r[1])
    return max((hi[k] - lo[k] for k in lo), default=0)


def group_union(intervals: Sequence[tuple[str, int, int]]) -> int:
    """Per clock key the length of the union of the [start, end) intervals, then the largest
    over keys (the GPU active span from each (process, GPU)'s first-to-last interval)."""
    by_key: dict[str, list[tuple[int, int]]] = {}
    for key, s, e in intervals:
        by_key.setdefault(key, []).append((s, e))
    best = 0
    for rows in by_key.values():
        arr = np.array(rows, dtype=np.int64)
        best = max(best, interval_union(arr[:, 0], arr[:, 1]))
    return best


def pct(part: int | float, whole: int | float) -> float:
    """part / whole × 100 rounded to 4 decimals (0 when the whole is 0)."""
    return round(100.0 * part / whole, 4) if whole else 0.0


def interval_union(starts: np.ndarray, ends: np.ndarray, mask: np.ndarray | None = None) -> int:
    """Length of the union of the [start, end) intervals selected by ``mask`` (a bool per
    interval; None: all). Threads of one process may be inside such calls at the same
    time; the union counts that time once."""
    if mask is not None and not mask.all():  # every interval selected: no gather
        rows = np.flatnonzero(mask)  # then take: a third of a boolean mask's gather over 2M calls
        starts, ends = np.asarray(starts).take(rows), np.asarray(ends).take(rows)
    if not len(starts):
        return 0
    if int(np.max(ends)) - int(np.min(starts)) >= 1 << 62:  # hostile times near the int64 limits: no wrap-around
        return int(union_length(np.asarray(starts, dtype=np.float64), np.asarray(ends, dtype=np.float64)))
    return union_length(np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64))
