"""Summaries of many-rank runs from per-rank partials, on a process pool or a Dask cluster.

The driver scans the run (file heads only), makes one task per rank (a process's files:
:class:`RankTask`), and each task loads its rank alone -- through the per-rank cache
(``TUIPROF_CACHE_DIR``, which may be on a shared filesystem) -- and reduces it to its
:class:`~tui_prof.analysis.api.RankPartial` in a worker process. The driver merges the
partials as they arrive (:class:`~tui_prof.analysis.api.PartialMerge`): it never holds a
rank's kernels, so its memory does not grow with the run's dispatches (docs/cluster.md).

Where the tasks run (``--cluster``): ``local`` / ``local:N`` starts a Dask
``LocalCluster`` of N worker processes; ``tcp://HOST:PORT`` connects to a running
scheduler (``dask scheduler`` + ``dask worker``, or ``dask-jobqueue``). Without
``--cluster``, :func:`summarise_pool` runs the same tasks in a process pool.

A task that raises is retried once, and so is a task whose worker died (the scheduler's
``allowed-failures``, set to 1 for a LocalCluster it starts); a rank that fails twice is
reported by name in ``failed`` and the others are still summarised.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from tui_prof.analysis.api import (
    DEFAULT_GAP_THRESHOLD_NS,
    MERGED_SECTIONS,
    SCHEMA,
    CategoryRules,
    CheckReport,
    PartialMerge,
    RankPartial,
    StepOptions,
    check_partials,
    merged_sections,
    rank_partials,
)
from tui_prof.model import LoadIssue, RunSet

Progress = Callable[[str, int, int], None]
CONNECT_TIMEOUT_S = 10
LOCAL = re.compile(r"^local(?::(\d+))?$")


class ClusterError(Exception):
    """A cluster that cannot be used (a scheduler not reachable, a run the partials cannot
    cover): one line for the user."""


class DaskMissing(ClusterError):
    """``--cluster local|tcp://`` without the ``cluster`` extra installed."""


@dataclass(frozen=True)
class RankTask:
    """One rank's work: load ``files`` of the run at ``root`` and reduce them to partials."""

    root: str
    label: str  # the scan's label of the rank (a file name: untrusted)
    files: tuple[str, ...]
    use_cache: bool
    rules: CategoryRules | None = None
    threshold_ns: int | None = None  # the gaps' threshold (None: 10 µs) and how many are listed, as SummaryOptions
    max_gaps: int | None = 200
    step_options: StepOptions | None = None  # --step, --warmup, --outlier-factor (None: the defaults)
    check_only: bool = False  # the integrity report's parts only (tuiprof check --cluster)


@dataclass(frozen=True)
class RankResult:
    """What a task returns: the partials of its process(es) and the load's issues."""

    label: str
    partials: list[RankPartial]
    errors: list[str]  # the load's error lines (a file it could not read)
    root: str = ""
    files: tuple[str, ...] = ()
    issues: tuple[LoadIssue, ...] = ()  # the load's error issues (the integrity report's file-unreadable)


def rank_task(task: RankTask) -> RankResult:
    """Load one rank (through the cache) and reduce it: runs in a worker process."""
    from tui_prof.loaders import load_path

    runset = load_path(task.root, use_cache=task.use_cache, only=task.files)
    if task.check_only:
        partials = check_partials(runset)
    else:
        partials = rank_partials(runset, task.rules, task.threshold_ns, task.max_gaps, task.step_options or StepOptions())
    return RankResult(task.label, partials, [str(issue) for issue in runset.errors], task.root, task.files, tuple(runset.errors))


@dataclass(frozen=True)
class Plan:
    """The tasks of a run and the scan's errors (files no loader recognised: no rank's)."""

    tasks: list[RankTask]
    errors: list[str]
    issues: tuple[LoadIssue, ...] = ()  # the scan's error issues


def plan(
    path: str,
    *,
    use_cache: bool = True,
    rules: CategoryRules | None = None,
    threshold_ns: int | None = None,
    max_gaps: int | None = 200,
    step_options: StepOptions | None = None,
    check_only: bool = False,
) -> Plan:
    """One task per process of the run under ``path`` (file heads only are read here);
    :class:`ClusterError` when a work unit of the run is not one process's files (a
    database or trace of several processes, a file that belongs to no process): the
    partials path reads a rank alone."""
    from pathlib import Path

    from tui_prof.loaders.base import IssueSink
    from tui_prof.loaders.detect import process_scan, scan, work_units

    root = Path(path)
    sink = IssueSink()
    units = work_units(scan(root, sink))
    found = process_scan(root, units)
    errors = [str(issue) for issue in sink.issues if issue.severity == "error"]
    if not found.processes:
        raise ClusterError(f"nothing to summarise per rank under {path}" + (f" ({errors[0]})" if errors else ""))
    if found.units != len(found.processes):
        raise ClusterError(
            f"{path}: {found.units - len(found.processes)} of {found.units} work units are not one process's files; summarise it without --cluster"
        )
    tasks = [RankTask(str(path), p.label, p.files, use_cache, rules, threshold_ns, max_gaps, step_options, check_only) for p in found.processes]
    return Plan(tasks, errors, tuple(issue for issue in sink.issues if issue.severity == "error"))


@dataclass(frozen=True)
class Fragment:
    """What the assembly's merge rule reads of a merged partial (loaders.detect.merge_plan)."""

    meta: Any
    range: tuple[int, int] | None
    label: str


@dataclass
class MergedRun:
    """The merged summary sections of a run and what could not be summarised."""

    merge: PartialMerge
    ranks: int = 0  # tasks planned
    failed: list[tuple[str, str]] = field(default_factory=list)  # (rank label, one-line reason)
    errors: list[str] = field(default_factory=list)  # load errors of the ranks that loaded
    files: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)  # rank label -> (root, its files): to load it alone again

    seen: dict[tuple, list[Fragment]] = field(default_factory=dict)  # (host, pid, rank) -> its merged sessions
    load_issues: dict[str, tuple[LoadIssue, ...]] = field(default_factory=dict)  # task label -> its load's error issues (every task that returned)
    planned: Plan | None = None  # the plan the tasks came from (its scan's errors, the tasks' order)

    def add(self, result: RankResult) -> None:
        self.load_issues[result.label] = result.issues
        for p in result.partials:
            reason = self._same_process(p)
            if reason is not None:
                self.failed.append((result.label, reason))
                continue
            self.merge.add(p)
            self.files[p.label] = (result.root, result.files)
        self.errors.extend(result.errors)
        if not result.partials:
            self.failed.append((result.label, result.errors[0] if result.errors else "nothing could be loaded"))

    def _same_process(self, p: Any) -> str | None:
        """Why ``p`` is not merged (None: it is a process of its own): the assembly's own rule
        (loaders.detect.merge_plan: the same host, pid and rank in one profiler session, else
        in a second format) over it and the merged partials of its (host, pid, rank)."""
        from tui_prof.loaders.detect import merge_plan

        if p.meta.pid is None:
            return None
        process = (p.meta.hostname, p.meta.pid, p.meta.rank)
        kept = self.seen.setdefault(process, [])
        if kept:
            found = merge_plan([*kept, p])
            mine = len(kept)
            where = f"the same process (host {process[0] or '-'}, pid {process[1]}) as {kept[0].label}"
            if any(mine in pair for pair in found.duplicates):  # a whole-run load keeps one format too
                return f"{where} in another format: counted once"
            if not any(group == [mine] for group in found.groups):  # one session in two units: a whole-run load merges them
                return f"{where}, in the same profiler session: a whole-run load merges their files into one process, the partials cannot; left out"
        kept.append(Fragment(p.meta, p.range, p.label))
        return None

    def document(self, top: int | None) -> dict[str, Any]:
        """``tuiprof.summary/1`` with the ``MERGED_SECTIONS`` and a ``partials`` record."""
        from tui_prof import __version__

        doc: dict[str, Any] = {"schema": SCHEMA, "tuiprof_version": __version__}
        self.merge.load_errors = load_errors(self)
        self.merge.load = self.load_rank
        if self.planned is not None and self.planned.tasks:
            self.merge.logs_root = self.planned.tasks[0].root
        doc.update(merged_sections(self.merge, top))
        doc["partials"] = {
            "ranks": self.ranks,
            "merged": len(self.merge.ranks),
            "failed_ranks": [{"label": label, "reason": reason} for label, reason in self.failed],
            "sections": [key for key in MERGED_SECTIONS if key in doc],
        }
        return doc

    def load_rank(self, label: str) -> RunSet:
        """The rank ``label`` loaded again here, its own files alone (through the per-rank
        cache the workers wrote): the combined steps' slowest rank, to describe its slow steps."""
        from tui_prof.loaders import load_path

        root, files = self.files[label]
        use_cache = self.planned.tasks[0].use_cache if self.planned and self.planned.tasks else True
        return load_path(root, use_cache=use_cache, only=files)


def _merge(tasks: list[RankTask], rules: CategoryRules) -> MergedRun:
    first = tasks[0] if tasks else RankTask("", "", (), False)
    threshold = DEFAULT_GAP_THRESHOLD_NS if first.threshold_ns is None else first.threshold_ns
    merge = PartialMerge(rules, threshold_ns=threshold, max_gaps=first.max_gaps, step_options=first.step_options or StepOptions())
    return MergedRun(merge, len(tasks))


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


def summarise_pool(tasks: list[RankTask], rules: CategoryRules, workers: int, progress: Progress | None = None) -> MergedRun:
    """Run ``tasks`` on a process pool of ``workers`` (one machine, many ranks); a task
    that raises (or whose process died) is tried once more, then its rank is failed."""
    out = _merge(tasks, rules)
    with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
        pending: dict[Future, tuple[RankTask, int]] = {pool.submit(rank_task, t): (t, 0) for t in tasks}
        done = 0
        try:
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    task, tries = pending.pop(fut)
                    err = fut.exception()
                    if err is not None and tries == 0 and not isinstance(err, BrokenProcessPool):
                        pending[pool.submit(rank_task, task)] = (task, 1)
                        continue
                    if err is not None:
                        out.failed.append((task.label, _one_line(err)))
                    else:
                        out.add(fut.result())
                    done += 1
                    if progress:
                        progress("ranks", done, len(tasks))
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return out


def _client(address: str) -> tuple[Any, Any]:
    """(client, cluster or None) for ``--cluster ADDRESS``; :class:`ClusterError` on one line."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise DaskMissing("--cluster needs Dask distributed, which is not installed: pip install 'tuiprof[cluster]'") from None
    local = LOCAL.match(address)
    if local:
        workers = int(local.group(1) or os.cpu_count() or 1)
        if workers < 1:
            raise ClusterError(f"--cluster {address}: at least one worker")
        # a task whose worker died is retried once, then reported (the rank is failed)
        try:
            # one task at a time per worker thread (the rest wait at the scheduler): a worker that
            # dies takes only the rank it was running with it
            with dask.config.set({"distributed.scheduler.allowed-failures": 1, "distributed.scheduler.worker-saturation": 1.0}):
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None)
        except Exception as err:  # no process could start (limits, a broken environment)
            raise ClusterError(f"cannot start a local Dask cluster of {workers} workers: {_one_line(err)}") from None
        return Client(cluster), cluster
    if not address.startswith(("tcp://", "tls://")):
        raise ClusterError(f"--cluster {address}: expected local, local:N or tcp://HOST:PORT")
    try:
        return Client(address, timeout=f"{CONNECT_TIMEOUT_S}s"), None
    except (OSError, TimeoutError) as err:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {_one_line(err)}") from None


def summarise_cluster(tasks: list[RankTask], rules: CategoryRules, address: str, progress: Progress | None = None, task: Callable = rank_task) -> MergedRun:
    """Run ``tasks`` on the Dask cluster at ``address`` (see the module's doc). Ctrl-C
    cancels the tasks; a LocalCluster started here is closed on the way out."""
    client, cluster = _client(address)
    out = _merge(tasks, rules)
    futures: list = []
    try:
        futures = client.map(task, tasks, key=[f"tuiprof-rank-{i}" for i in range(len(tasks))], retries=1, pure=False)
        label = {f.key: t.label for f, t in zip(futures, tasks, strict=True)}
        from distributed import as_completed as dask_completed

        for done, fut in enumerate(dask_completed(futures), start=1):
            try:  # a result lost with its worker before it was fetched is computed again: result() waits for it
                result = fut.result()
            except Exception as err:  # the task's own error, or KilledWorker after its retry
                out.failed.append((label[fut.key], _one_line(err)))
            else:
                out.add(result)
            fut.release()
            if progress:
                progress("ranks", done, len(tasks))
    except KeyboardInterrupt:
        client.cancel(futures)
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return out


def check_report(merged: MergedRun, root: str) -> CheckReport:
    """The integrity report (``tuiprof.check/1``) of the run from the ranks' check parts and
    :func:`load_errors`."""
    return merged.merge.check_report(load_errors(merged), root)


def load_errors(merged: MergedRun) -> list[LoadIssue]:
    """The load's errors as a whole-run load lists them: the scan's, then each task's in plan
    order; a rank whose task failed is a file that could not be loaded, with the reason."""
    planned = merged.planned or Plan([], [])
    errors = list(planned.issues)
    reasons = dict(merged.failed)
    for task in planned.tasks:
        if task.label in merged.load_issues:
            errors.extend(merged.load_issues[task.label])
        elif task.files:
            errors.append(LoadIssue(task.files[0], f"rank {task.label} failed: {reasons.get(task.label, 'no result')}"))
    return errors
