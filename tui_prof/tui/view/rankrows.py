"""The rank table while a multi-process run loads (issue 14): each process's rank-table
figures as soon as its work unit is in, the waits and the straggler once every rank is.

What one row needs is computed from its own process alone
(:class:`tui_prof.analysis.ranks.RankCore`: compute, communication, copy, idle, sync, top
kernel); the wait in collectives, the straggler and the communication summary compare
ranks, so :meth:`RankRows.final` computes them over every process of the assembled run
set, reusing the cores of the processes whose tables the assembly left as they were
(a process written as several fragments gets its core again).

Before any unit loads, the scan's processes (:meth:`RankRows.expect`, from
``load_path(on_scan=...)``) give one pending row per rank, each replaced by its process's
row as the process loads.

Called from the load worker thread (never from the event loop); the app posts the
documents it returns to the ranks pane.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tui_prof.analysis.api import (
    DEFAULT_CATEGORY_RULES,
    CategoryRules,
    RankCore,
    api_classes,
    process_categories,
    rank_numbers,
    rank_records,
    run_label,
    sections_of_cores,
    time_range,
)
from tui_prof.model import Run, RunSet

if TYPE_CHECKING:  # detect imports every loader: the load imports it, not the app's start
    from tui_prof.loaders.detect import ProcessScan, ScannedProcess

FIGURES = ("span_ns", "compute_ns", "communication_ns", "copy_ns", "idle_pct", "sync_ns", "wait_ns", "wait_pct")


def pending_row(process: ScannedProcess) -> dict:
    """The row of a process the scan found that has not loaded yet (``pending``): its rank
    and every figure None (not known yet, never a number)."""
    return {
        "rank": None,
        "rank_source": "order",
        "label": "",
        "host": None,
        "gpus": None,
        **dict.fromkeys(FIGURES),
        "top_kernel": f"loading {process.label}",
        "pending": True,
    }


def _sizes(run: Run) -> tuple[int, ...]:
    """The row counts a merge into ``run`` would change."""
    return (len(run.kernels), len(run.api), len(run.copies), len(run.tool_stats))


def is_process(run: Run) -> bool:
    """A work unit's fragment that is a process of its own (rocm-smi series are attached
    to the processes beside them)."""
    return not run.meta.extra.get("series_only")


def is_rank(run: Run) -> bool:
    """A process that is a rank of the rank table: not a counter pass recorded by another
    process (loaders/rocprofv3_csv.py; another recording beside the trace, issue 32), as
    the summary's ranks section decides."""
    return is_process(run) and "counter_pass_of" not in run.meta.extra


def opens_on_ranks(runs: list[Run]) -> bool:
    """Whether a run opens on the rank table: two or more processes with a trace (kernels,
    API calls or copies), or, where no process has one, two or more with the profiler's
    statistics (an ``srun … rocprofv3 --stats`` job). A run folder that holds one traced
    process beside fragments of others (stats tables, agent lists, counter passes of other
    processes) opens on its hotspots."""
    processes = [run for run in runs if is_process(run)]
    # a counter pass recorded by another process (loaders/rocprofv3_csv.py) is another
    # recording beside the trace, not a rank of it (issue 32)
    traced = sum(1 for run in processes if "counter_pass_of" not in run.meta.extra and (len(run.kernels) or len(run.api) or len(run.copies)))
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
        self.scan: ProcessScan | None = None  # what the scan found (expect)
        self.scanned: tuple[ScannedProcess, ...] | None = None  # the ranks it found
        self._loaded_files: set[str] = set()  # files of the processes loaded so far

    def expect(self, scan: ProcessScan) -> None:
        """The processes the scan found: each has a pending row until its unit loads."""
        self.scan, self.scanned = scan, scan.ranks
        self.total = scan.units

    @property
    def multi(self) -> bool:
        """The scan found several processes: the run opens on the rank table."""
        return self.scan is not None and self.scan.multi

    @property
    def expected(self) -> int:
        """Ranks in the run as far as known: the scan's (without a scan, an in-memory run
        set: its processes), or the processes loaded if more."""
        return max(len(self.scanned) if self.scanned is not None else self.total, self.processes)

    def core(self, run: Run) -> RankCore:
        """One process's figures (analysis.ranks.RankCore with the summary's inputs: its
        compute/copy split by the category table's categories, operator first)."""
        span = time_range(run)
        classes = api_classes(run.api) if len(run.api) else np.array([], dtype=np.int8)
        categories = process_categories(run, self.rules)
        core = RankCore(run, run_label(run), (span[1] - span[0]) if span else 0, classes, self.rules, categories)
        self._sizes[id(run)] = _sizes(run)
        return core

    def add(self, runs: list[Run], done: int, total: int) -> None:
        """A work unit's runs (``done`` of ``total`` units loaded)."""
        self.cores.extend(self.core(run) for run in runs if is_rank(run))
        self._loaded_files.update(f for run in runs for f in run.meta.files)
        self.done, self.total = done, total

    @property
    def processes(self) -> int:
        return len(self.cores)

    def provisional(self) -> dict:
        """A ``ranks`` document of the processes loaded so far, their waits None (not
        known yet: a wait compares every rank's collectives), then a pending row
        (:func:`pending_row`) per process of the scan whose files have not loaded."""
        cores = self.cores
        numbers = rank_numbers([c.run for c in cores])
        zero = np.zeros(len(cores), dtype=np.int64)
        rows: list[dict] = [dict(row) for row in rank_records(cores, numbers, zero, zero)]
        for row in rows:
            row["wait_ns"], row["wait_pct"] = None, None
        scanned = self.scanned or ()
        waiting = [p for p in scanned if not self._loaded_files.intersection(p.files)]
        rows.extend(pending_row(p) for p in waiting[: max(0, len(scanned) - len(cores))])
        return {"ranks": rows}

    def final(self, runset: RunSet) -> dict:
        """The ``ranks``, ``communication`` and ``stragglers`` sections of the assembled run
        set, as analysis.ranks.ranks_sections computes them."""
        by_id = {id(c.run): c for c in self.cores}
        cores = []
        for run in filter(is_rank, runset.runs):
            core = by_id.get(id(run))
            if core is None or self._sizes.get(id(run)) != _sizes(run):
                core = self.core(run)
            else:
                core.label = run_label(run)
            cores.append(core)
        rows, communication, stragglers = sections_of_cores(cores)
        return {"ranks": rows, "communication": communication, "stragglers": stragglers}
