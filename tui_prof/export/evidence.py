"""Where a finding points in the trace: the place the Perfetto export draws it.

A finding about one place in time (an idle gap, a kernel, a copy, a host call, a step) is
drawn at that place, found the way the TUI's Enter on the finding finds it: the longest gap
of its cause, the longest dispatch of the kernel it names, the longest copy (of its
direction), the longest synchronisation call, the step it names. A finding about the run as
a whole (a share of kernel time, missing counters, a straggler over every collective) has
no single place and spans the run's time range. Restricted to the finding's process when
its numbers name one (``numbers["process"]``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from tui_prof.analysis.api import CAUSES, Finding, FindingCode, SummaryResult, api_classes, sync_mask
from tui_prof.model import Run, RunSet


@dataclass(frozen=True)
class Place:
    """Where a finding is drawn: ``run`` (index in the run set; -1: the run set as a whole),
    ``start``/``end`` in ns on the profiler's clock, and ``what`` says what is there."""

    run: int
    start: int
    end: int
    what: str


Locator = Callable[[Finding, RunSet, SummaryResult, list[int]], "Place | None"]


def _label(run: Run) -> str:
    return run.meta.label or f"{run.meta.hostname}/{run.meta.pid}"


def _runs(finding: Finding, runset: RunSet) -> list[int]:
    """The run indices a finding is about: those of its ``numbers["process"]``, else all."""
    process = (finding.get("numbers") or {}).get("process")
    named = [i for i, run in enumerate(runset.runs) if process and _label(run) == process]
    return named or list(range(len(runset.runs)))


def _longest(runset: RunSet, runs: list[int], rows_of: Callable[[Run], tuple[np.ndarray, np.ndarray]], what: str) -> Place | None:
    """The longest interval over ``runs`` of the (start, end) arrays ``rows_of`` picks."""
    best: Place | None = None
    for i in runs:
        start, end = rows_of(runset.runs[i])
        if not len(start):
            continue
        j = int(np.argmax(end - start))
        if best is None or end[j] - start[j] > best.end - best.start:
            best = Place(i, int(start[j]), int(end[j]), what)
    return best


def _gap(cause: str | None) -> Locator:
    def locate(finding: Finding, runset: RunSet, analysis: SummaryResult, runs: list[int]) -> Place | None:
        best: Place | None = None
        for i in runs:
            gaps = analysis.gaps.get(i)
            if gaps is None or not len(gaps):
                continue
            start, end = gaps.column("start"), gaps.column("end")
            keep = np.ones(len(start), dtype=bool) if cause is None else gaps.column("cause") == CAUSES.index(cause)
            if not keep.any():
                continue
            j = int(np.flatnonzero(keep)[np.argmax((end - start)[keep])])
            if best is None or end[j] - start[j] > best.end - best.start:
                best = Place(i, int(start[j]), int(end[j]), f"the longest idle gap{f' caused by {cause}' if cause else ''}")
        return best

    return locate


def _kernel(finding: Finding, runset: RunSet, analysis: SummaryResult, runs: list[int]) -> Place | None:
    name = (finding.get("numbers") or {}).get("name")
    if not name:
        return None

    def rows(run: Run) -> tuple[np.ndarray, np.ndarray]:
        k = run.kernels
        mine = (k["name"] == name).to_numpy() if len(k) else np.zeros(0, dtype=bool)
        return k["start"].to_numpy()[mine], k["end"].to_numpy()[mine]

    return _longest(runset, runs, rows, "the longest dispatch of the kernel")


def _copy(finding: Finding, runset: RunSet, analysis: SummaryResult, runs: list[int]) -> Place | None:
    direction = (finding.get("numbers") or {}).get("direction")

    def rows(run: Run) -> tuple[np.ndarray, np.ndarray]:
        c = run.copies
        mine = (c["direction"].astype(str) == direction).to_numpy() if direction and len(c) else np.ones(len(c), dtype=bool)
        return c["start"].to_numpy()[mine], c["end"].to_numpy()[mine]

    return _longest(runset, runs, rows, f"the longest {direction + ' ' if direction else ''}copy")


def _sync(finding: Finding, runset: RunSet, analysis: SummaryResult, runs: list[int]) -> Place | None:
    def rows(run: Run) -> tuple[np.ndarray, np.ndarray]:
        api = run.api
        if not len(api):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        mine = sync_mask(api_classes(api))
        return api["start"].to_numpy()[mine], api["end"].to_numpy()[mine]

    return _longest(runset, runs, rows, "the longest synchronisation call")


def _steps(finding: Finding, runset: RunSet, analysis: SummaryResult, runs: list[int]) -> Place | None:
    """The step a slow-step finding names; the warm-up steps; the steady steps (memory growth)."""
    doc = analysis.summary.get("steps") or {}
    steps = doc.get("steps") or []
    numbers = finding.get("numbers") or {}
    code = finding["code"]
    if code == FindingCode.SLOW_STEP.value:
        chosen = [s for s in steps if s.get("label") == numbers.get("label") and s.get("wall_ns") == numbers.get("wall_ns")]
        what = "the slow step"
    elif code == FindingCode.WARMUP.value:
        chosen = [s for s in steps if s.get("warmup")]
        what = "the warm-up steps"
    else:
        chosen = [s for s in steps if not s.get("warmup")]
        what = "the steady steps"
    timed = [s for s in chosen if s.get("start_ns") is not None and s.get("end_ns") is not None]
    if not timed:
        return None
    names = {_label(run): i for i, run in enumerate(runset.runs)}
    run = names.get(timed[0].get("process") or doc.get("process") or "", runs[0] if len(runs) == 1 else -1)
    return Place(run, min(int(s["start_ns"]) for s in timed), max(int(s["end_ns"]) for s in timed), what)


LOCATORS: dict[FindingCode, Locator] = {
    FindingCode.GPU_IDLE: _gap(None),
    FindingCode.IDLE_SYNC: _gap("sync"),
    FindingCode.LAUNCH_BOUND: _gap("launch"),
    FindingCode.SYNC_AFTER_LAUNCH: _sync,
    FindingCode.SYNC_OVERHEAD: _sync,
    FindingCode.COPY_SHARE: _copy,
    FindingCode.SLOW_COPY: _copy,
    FindingCode.DOMINANT_KERNEL: _kernel,
    FindingCode.LOW_OCCUPANCY: _kernel,
    FindingCode.COUNTER: _kernel,
    FindingCode.SLOW_STEP: _steps,
    FindingCode.WARMUP: _steps,
    FindingCode.MEMORY_GROWTH: _steps,
}
"""The findings that point at one place; every other code spans the run (see the module doc)."""


def place_of(finding: Finding, runset: RunSet, analysis: SummaryResult, span: tuple[int, int]) -> Place:
    """Where ``finding`` is drawn: its evidence (:data:`LOCATORS`), else the whole ``span``."""
    try:
        locate = LOCATORS.get(FindingCode.of(finding["code"]))
    except ValueError:
        locate = None
    place = locate(finding, runset, analysis, _runs(finding, runset)) if locate else None
    return place if place is not None else Place(-1, span[0], span[1], "the whole run")
