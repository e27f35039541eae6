"""What every section of the summary shares per process: :class:`RunInput` (the run, its
label, time range and API index) and the whole-run walls.

Wall time of a process = last end - first start over its API calls, kernels and copies.
Whole-run figures follow :mod:`tui_prof.analysis.aggregate`: the run set's wall is the
span per host (one clock) and the largest over hosts; figures summed over processes take
the summed process walls as their whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tui_prof.analysis import aggregate, hostapi
from tui_prof.model import Run, RunSet
from tui_prof.model.schema import UNKNOWN, column_array


def time_range(run: Run) -> tuple[int, int] | None:
    """(first start, last end) in ns over the run's API calls, kernels and copies; rows
    without timestamps (UNKNOWN, -1: a counter-only pass) are left out, not taken as time 0."""
    lo, hi = [], []
    for table in (run.api, run.kernels, run.copies):
        if len(table):
            start, end = column_array(table, "start"), column_array(table, "end")  # numpy reductions: no pandas step per table
            first, last = int(start.min()), int(end.max())
            if first == UNKNOWN:
                known = start[start != UNKNOWN]
                if not len(known):
                    continue
                first = int(known.min())
            if last != UNKNOWN:
                lo.append(first)
                hi.append(last)
    return (min(lo), max(hi)) if lo else None


def run_label(run: Run) -> str:
    """A process's label in the summary: the loader's label, else host/pid."""
    return run.meta.label or f"{run.meta.hostname}/{run.meta.pid}"


@dataclass(frozen=True)
class RunInput:
    """One run with what several sections share: its label, time range, and the API
    classes and correlation-id index (built once, used by the timeline, sync and launch)."""

    run: Run
    label: str
    range: tuple[int, int] | None
    index: hostapi.CorrIndex

    @property
    def wall_ns(self) -> int:
        return (self.range[1] - self.range[0]) if self.range else 0


def run_inputs(runset: RunSet) -> list[RunInput]:
    """One :class:`RunInput` per process, in run order."""
    return [RunInput(run, run_label(run), time_range(run), hostapi.CorrIndex(run.api)) for run in runset.runs]


def wall_ns(inputs: Sequence[RunInput]) -> int:
    """First start to last end over the processes of one host; over several hosts (clocks
    not comparable) the largest such span (:func:`aggregate.group_span`)."""
    return aggregate.group_span([(aggregate.clock_key(r.run), r.range) for r in inputs])


def process_ns(inputs: Sequence[RunInput]) -> int:
    """The processes' walls summed: the whole of every figure summed over processes."""
    return sum(r.wall_ns for r in inputs)


def has_gpu_activity(run: Run) -> bool:
    return bool(len(run.kernels) or len(run.copies))
