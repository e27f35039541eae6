"""The rank table while a multi-process run loads (issue 14): each process's rank-table
figures as soon as its work unit is in, the waits and the straggler once every rank is.

What one row needs is computed from its own process alone
(:class:`tui_prof.analysis.ranks.RankCore`: compute, communication, copy, idle, sync, top
kernel); the wait in collectives, the straggler and the communication summary compare
ranks, so :meth:`RankRows.final` computes them over every process of the assembled run
set, reusing the cores of the processes whose tables the assembly left as they were
(a process written as several fragments gets its core again).

Called from the load worker thread (never from the event loop); the app posts the
documents it returns to the ranks pane.
"""

from __future__ import annotations

import numpy as np

from tui_prof.analysis import engine
from tui_prof.analysis.hostapi import api_classes
from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES, CategoryRules
from tui_prof.analysis.ranks import RankCore, rank_numbers, rank_records, sections_of_cores
from tui_prof.model import Run, RunSet

PENDING = -1  # wait_ns of a row whose waits need ranks not loaded yet


def _sizes(run: Run) -> tuple[int, ...]:
    """The row counts a merge into ``run`` would change."""
    return (len(run.kernels), len(run.api), len(run.copies), len(run.tool_stats))


def is_process(run: Run) -> bool:
    """A work unit's fragment that is a process of its own (rocm-smi series are attached
    to the processes beside them)."""
    return not run.meta.extra.get("series_only")


def opens_on_ranks(runs: list[Run]) -> bool:
    """Whether a run opens on the rank table: two or more processes with a trace (kernels,
    API calls or copies), or, where no process has one, two or more with the profiler's
    statistics (an ``srun … rocprofv3 --stats`` job). A run folder that holds one traced
    process beside fragments of others (stats tables, agent lists) opens on its hotspots."""
    processes = [run for run in runs if is_process(run)]
    traced = sum(1 for run in processes if len(run.kernels) or len(run.api) or len(run.copies))
    if traced:
        return traced > 1
    return sum(1 for run in processes if len(run.tool_stats)) > 1


class RankRows:
    """Rank-table rows of the processes loaded so far; ``add`` as units arrive."""

    def __init__(self, rules: CategoryRules = DEFAULT_CATEGORY_RULES) -> None:
        self.rules = rules
        self.cores: list[RankCore] = []
        self._sizes: dict[int, tuple[int, ...]] = {}
        self.done = 0  # work units loaded
        self.total = 0  # work units in the run

    def core(self, run: Run) -> RankCore:
        """One process's figures (analysis.ranks.RankCore with the summary's inputs)."""
        span = engine.time_range(run)
        classes = api_classes(run.api) if len(run.api) else np.array([], dtype=np.int8)
        core = RankCore(run, engine.run_label(run), (span[1] - span[0]) if span else 0, classes, self.rules)
        self._sizes[id(run)] = _sizes(run)
        return core

    def add(self, runs: list[Run], done: int, total: int) -> None:
        """A work unit's runs (``done`` of ``total`` units loaded)."""
        self.cores.extend(self.core(run) for run in runs if is_process(run))
        self.done, self.total = done, total

    @property
    def processes(self) -> int:
        return len(self.cores)

    def provisional(self) -> dict:
        """A ``ranks`` document of the processes loaded so far; their waits are
        :data:`PENDING` (a wait compares every rank's collectives)."""
        cores = self.cores
        numbers = rank_numbers([c.run for c in cores])
        zero = np.zeros(len(cores), dtype=np.int64)
        rows = rank_records(cores, numbers, zero, zero)
        for row in rows:
            row["wait_ns"], row["wait_pct"] = PENDING, 0.0
        return {"ranks": rows}

    def final(self, runset: RunSet) -> dict:
        """The ``ranks``, ``communication`` and ``stragglers`` sections of the assembled run
        set, as analysis.ranks.ranks_sections computes them."""
        by_id = {id(c.run): c for c in self.cores}
        cores = []
        for run in runset.runs:
            core = by_id.get(id(run))
            if core is None or self._sizes.get(id(run)) != _sizes(run):
                core = self.core(run)
            else:
                core.label = engine.run_label(run)
            cores.append(core)
        rows, communication, stragglers = sections_of_cores(cores)
        return {"ranks": rows, "communication": communication, "stragglers": stragglers}
