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
``allowed-failures``, set to 1 for a LocalCluster it starts; on the pool, each rank that was
running when a worker process died is run again alone); a rank that fails twice is
reported by name in ``failed`` and the others are still summarised.

With the cache on, a task also caches its rank's partials as JSON (:func:`rank_task`), and
the driver merges the cached ranks without loading them (:func:`cached_results`). The driver
caches the merged document too (:func:`document_key`): a warm ``open --cluster`` or
``summary --cluster`` decodes that one document instead of every rank's partials.
"""

from __future__ import annotations

import dataclasses
import os
import re
import uuid
from collections import deque
from collections.abc import Callable, Collection
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from tui_prof.analysis.api import (
    DEFAULT_CATEGORY_RULES,
    DEFAULT_GAP_THRESHOLD_NS,
    MERGED_SECTIONS,
    PARTIAL_CACHE_KIND,
    PATH_CACHE_KIND,
    SCHEMA,
    CategoryRules,
    CheckReport,
    PartialMerge,
    PathMerge,
    PathPartial,
    PathPlan,
    PathSettings,
    RankPartial,
    RecordingPick,
    StepOptions,
    check_partials,
    choose_recording,
    identity,
    log_paths,
    merged_sections,
    partial_settings,
    partials_doc,
    partials_of_doc,
    path_partials,
    path_plan,
    paths_doc,
    paths_of_doc,
    rank_partials,
    split_recordings,
)
from tui_prof.guard import jsonout
from tui_prof.model import LoadIssue, RunSet

Progress = Callable[[str, int, int], None]
RankFiles = dict[str, tuple[str, tuple[str, ...]]]  # rank label -> (the run's root, the rank's files)
MERGED_CACHE_KIND = "merged-document-1"  # the cache entries of merged documents' heads; raised when their form changes
MERGED_REST_KIND = "merged-document-rest-1"  # ... and of the rest of their sections
# a merged document's head: what the rank table of ``open --cluster`` reads (tui.cluster_app),
# so a warm open decodes these alone (the rest, e.g. each rank's steps, can be tens of MB)
HEAD_SECTIONS = ("ranks", "stragglers", "communication")
ALWAYS_SECTIONS = ("schema", "tuiprof_version", "partials")  # in every document read back
CONNECT_TIMEOUT_S = 10
LOOKUP_THREADS = 8  # cached partials looked up at once
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
    skipped: tuple[LoadIssue, ...] = ()  # the files its load skipped (the source section)


@dataclass(frozen=True)
class PathTask:
    """One rank's second pass (analysis.pathpartials): load its files again (through the
    per-rank cache the first pass wrote) and compute its part of the critical path, its
    ``critical_ns`` columns and its savings."""

    rank: RankTask
    steady: dict[str, list[dict]]  # the steady step records of its process(es) that have a window of steps
    settings: PathSettings
    table: dict[str, tuple[Any, Any]] | None  # the run's collective instances (analysis.ranks.WaitTable)
    inputs_key: str  # what the result depends on besides the files (PathPlan.key)

    @property
    def label(self) -> str:
        return self.rank.label


@dataclass(frozen=True)
class PathResult:
    """What a path task returns: the path partials of its process(es)."""

    label: str
    partials: list[PathPartial]


def path_task(task: PathTask) -> PathResult:
    """Load one rank again and compute its path partials: runs in a worker process; with the
    cache on, they are cached too (:func:`cached_results` reads them back)."""
    from tui_prof.loaders import load_path
    from tui_prof.loaders.cache import save_doc

    rank = task.rank
    key = path_key(task) if rank.use_cache else None
    runset = load_path(rank.root, use_cache=rank.use_cache, only=rank.files)
    # a process holding several recordings: one per recording, as its first pass cut it (rank_task)
    partials = path_partials(split_recordings(runset), task.steady, task.settings, task.table, rank.rules or DEFAULT_CATEGORY_RULES)
    if key is not None and not runset.errors:  # as its first pass: a rank with a file it could not read is read again next time
        try:
            save_doc(key, PATH_CACHE_KIND, paths_doc(partials))
        except TypeError:  # a value the JSON form does not hold: not cached
            pass
    return PathResult(rank.label, partials)


def path_key(task: PathTask, base: str | None = None) -> str | None:
    """The cache key of ``task``'s path partials: its rank's partial key (``base``, when the
    caller made it: its files, tuiprof's version and options) and the second pass's inputs
    (steps, budgets, waits, edits); None without the cache or when a file cannot be read."""
    import hashlib

    if not task.rank.use_cache:
        return None
    base = partial_key(task.rank) if base is None else base
    if base is None:
        return None
    return hashlib.sha256(f"{base}\n{task.inputs_key}".encode("utf-8", "surrogateescape")).hexdigest()[:40]


def path_keys(tasks: list[PathTask]) -> list[str | None]:
    """:func:`path_key` of each task, their ranks' partial keys made together (:func:`partial_keys`)."""
    return [path_key(t, base) if base is not None else None for t, base in zip(tasks, partial_keys([t.rank for t in tasks]), strict=True)]


def rank_task(task: RankTask) -> RankResult:
    """Load one rank (through the cache) and reduce it: runs in a worker process. With the
    cache on, the partials are cached too (:func:`cached_results` reads them back)."""
    from tui_prof.loaders import load_path
    from tui_prof.loaders.cache import save_doc

    key = partial_key(task) if task.use_cache and not task.check_only else None  # of the files as they are before the load
    runset = load_path(task.root, use_cache=task.use_cache, only=task.files)
    if task.check_only:
        partials = check_partials(runset)
    else:
        # a process holding several recordings: a partial per recording, as summary cuts it (the driver picks one)
        partials = rank_partials(runset, task.rules, task.threshold_ns, task.max_gaps, task.step_options or StepOptions(), split=True)
    errors = [str(issue) for issue in runset.errors]
    # a rank with a file it could not read is read again next time (and one whose load skipped a file: said again)
    if key is not None and partials and not errors and not runset.skipped:
        try:
            doc = partials_doc(partials, errors)
        except TypeError:  # a value the JSON form does not hold: not cached
            pass
        else:
            save_doc(key, PARTIAL_CACHE_KIND, doc)
    return RankResult(task.label, partials, errors, task.root, task.files, tuple(runset.errors), tuple(runset.skipped))


def partial_key(task: RankTask, settings: str | None = None) -> str | None:
    """The cache key of ``task``'s partials: its files' state, tuiprof's version and the
    options the partials depend on (``settings``: :func:`task_settings` of ``task``, when the
    caller made it once for many tasks); None when a file cannot be read."""
    from tui_prof.loaders.cache import doc_key

    return doc_key(PARTIAL_CACHE_KIND, task_settings(task) if settings is None else settings, list(task.files))


def task_settings(task: RankTask) -> str:
    """What a rank's partials depend on besides its files (a cache key part)."""
    return partial_settings(task.rules or DEFAULT_CATEGORY_RULES, task.threshold_ns, task.max_gaps) + repr(task.step_options or StepOptions())


def partial_keys(tasks: list[RankTask]) -> list[str | None]:
    """:func:`partial_key` of each task whose partials are cached (None for the others: no
    cache, the check's parts), the settings made once per set of options (the plan gives
    every task the same)."""
    made: dict[tuple, str] = {}
    keys: list[str | None] = []
    for task in tasks:
        if not task.use_cache or task.check_only:
            keys.append(None)
            continue
        options = (id(task.rules), task.threshold_ns, task.max_gaps, task.step_options)  # the tasks hold their rules: ids stay theirs
        if options not in made:
            made[options] = task_settings(task)
        keys.append(partial_key(task, made[options]))
    return keys


def cached_results(tasks: list[Any]) -> tuple[list[Any], list[Any]]:
    """(the results of the tasks whose partials are in the cache, the other tasks): a warm
    cache gives the driver every rank's partials (or path partials, for path tasks)
    without loading a rank. Entries are checked as the cache checks a unit's
    (loaders.cache.load_doc) and decoded from JSON only."""
    from concurrent.futures import ThreadPoolExecutor

    from tui_prof.loaders.cache import load_doc

    paths = bool(tasks) and isinstance(tasks[0], PathTask)  # one pass's tasks: all of a kind

    def lookup(key: str | None) -> Any:
        if paths:
            return load_doc(key, PATH_CACHE_KIND, paths_of_doc)
        return load_doc(key, PARTIAL_CACHE_KIND, partials_of_doc)  # None: no key

    hits: list[Any] = []
    misses: list[Any] = []
    # a few lookups at once: the files' reads overlap where they are not in the page cache
    with ThreadPoolExecutor(max_workers=LOOKUP_THREADS) as pool:
        found_all = list(pool.map(lookup, path_keys(tasks) if paths else partial_keys(tasks)))
    for task, found in zip(tasks, found_all, strict=True):
        if found is None:
            misses.append(task)
        elif isinstance(task, PathTask):
            hits.append(PathResult(task.label, found))
        else:
            hits.append(RankResult(task.label, found[0], found[1], task.root, task.files))
    return hits, misses


@dataclass(frozen=True)
class Plan:
    """The tasks of a run and the scan's errors (files no loader recognised: no rank's)."""

    tasks: list[RankTask]
    errors: list[str]
    issues: tuple[LoadIssue, ...] = ()  # the scan's error issues
    skipped: tuple[LoadIssue, ...] = ()  # the files the scan skipped (not a profiler's, ...)


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

    from tui_prof.loaders import cache
    from tui_prof.loaders.base import IssueSink
    from tui_prof.loaders.detect import process_scan, scan, work_units

    root = Path(path)
    sink = IssueSink()
    memo = cache.load_scan(root) if use_cache else None  # a warm plan reads no file head
    before = dict(memo or {})
    units = work_units(scan(root, sink, memo=memo))
    if memo is not None and memo != before:
        cache.save_scan(root, memo)
    found = process_scan(root, units, every=True)  # a unit the load makes a process of is a rank, whatever its files hold
    errors = [str(issue) for issue in sink.issues if issue.severity == "error"]
    if not found.processes:
        raise ClusterError(f"nothing to summarise per rank under {path}" + (f" ({errors[0]})" if errors else ""))
    if found.units != len(found.processes):
        raise ClusterError(
            f"{path}: {found.units - len(found.processes)} of {found.units} work units are not one process's files; summarise it without --cluster"
        )
    tasks = [RankTask(str(path), p.label, p.files, use_cache, rules, threshold_ns, max_gaps, step_options, check_only) for p in found.processes]
    issues = tuple(issue for issue in sink.issues if issue.severity == "error")
    return Plan(tasks, errors, issues, tuple(issue for issue in sink.issues if issue.severity != "error"))


def document_key(planned: Plan, top: int | None) -> str | None:
    """The cache key of the merged document of ``planned``'s tasks listing ``top`` rows:
    every rank's partial key (its files' state, a database's ``-wal`` included, and the
    options), the ranks' labels in plan order, the tasks' other options, the scan's errors
    and skipped files, the state of the log files the ``logs`` section reads and the merged sections' names, so
    a change to any of them is a new key. None when the tasks are not cached (no cache, the
    check's parts) or a file cannot be read."""
    from tui_prof.loaders.cache import doc_key

    tasks = planned.tasks
    if not tasks or not all(t.use_cache and not t.check_only for t in tasks):
        return None
    keys = partial_keys(tasks)
    if None in keys:
        return None
    # the rules are in each partial key; no step options are the defaults (open --cluster gives none, summary the defaults)
    options = repr(dataclasses.replace(tasks[0], label="", files=(), rules=None, step_options=tasks[0].step_options or StepOptions()))
    scan = [planned.errors, [str(issue) for issue in planned.skipped]]  # what the scan refused or skipped (the source section lists it)
    settings = jsonout.dumps([list(MERGED_SECTIONS), top, options, scan, [t.label for t in tasks], keys], ensure_ascii=True)
    return doc_key(MERGED_CACHE_KIND, settings, [str(p) for p in log_paths(tasks[0].root)])


def cached_document(key: str | None, sections: Collection[str] | None = None) -> tuple[dict[str, Any], RankFiles] | None:
    """(the merged document, each rank's files) cached under ``key`` by :func:`save_document`
    -- only ``sections`` of it (and its schema, version and ``partials`` record) when given:
    the rank table's need no more than the entry's head (``HEAD_SECTIONS``) -- or None.
    Checked as every cache entry is (owner, mode, frame, CRC, key); a damaged one is removed,
    one another user owns or can write is not used."""
    from tui_prof.loaders.cache import load_doc

    head = load_doc(key, MERGED_CACHE_KIND, _head_of_entry)
    if head is None:
        return None
    doc, order, files = head
    wanted = [name for name in order if sections is None or name in sections or name in ALWAYS_SECTIONS]
    if any(name not in doc for name in wanted):
        assert key is not None
        rest = load_doc(_rest_key(key), MERGED_REST_KIND, _rest_of_entry)
        if rest is None or any(name not in doc and name not in rest for name in wanted):
            return None  # the rest was pruned or damaged: merged again
        doc = {**doc, **rest}
    return {name: doc[name] for name in wanted}, files


def _rest_key(key: str) -> str:
    """The key of the entry holding the sections a document's head does not."""
    from tui_prof.loaders.cache import doc_key

    rest = doc_key(MERGED_REST_KIND, key, [])
    assert rest is not None  # no files: always a key
    return rest


def _head_of_entry(entry: Any) -> tuple[dict[str, Any], list[str], RankFiles]:
    """The data of a merged document's head entry; ValueError/TypeError/KeyError when it is not one."""
    doc, order, files = entry["doc"], entry["order"], entry["files"]
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("partials"), dict):
        raise ValueError("not a merged summary document")
    if not isinstance(order, list) or not all(isinstance(name, str) for name in order) or not set(doc) <= set(order):
        raise ValueError("not a document's sections")
    out: RankFiles = {}
    for label, (root, names) in files.items():
        if not isinstance(root, str) or not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError("not a rank's files")
        out[label] = (root, tuple(names))
    return doc, order, out


def _rest_of_entry(entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict) or not isinstance(entry.get("doc"), dict):
        raise ValueError("not a document's sections")
    return entry["doc"]


def save_document(key: str | None, merged: MergedRun, doc: dict[str, Any]) -> bool:
    """Cache ``doc``, the document of ``merged``, under ``key`` (:func:`document_key`), with
    each rank's files; only a run whose every rank merged without an error (a failed rank is
    tried again next time) and whose numbers are all finite (JSON would write them null).
    Two entries: the head (``HEAD_SECTIONS``, the order of the sections, the files) and the
    rest, written first: a head is never there without its rest."""
    from tui_prof.loaders.cache import save_doc

    if key is None or merged.failed or merged.errors or any(merged.load_skipped.values()) or (merged.paths is not None and merged.paths.failed):
        return False  # as a rank's partials: one whose load skipped a file is read again (a rank without its critical path too)
    head = {name: value for name, value in doc.items() if name in HEAD_SECTIONS or name in ALWAYS_SECTIONS}
    rest = {name: value for name, value in doc.items() if name not in head}
    if not save_doc(_rest_key(key), MERGED_REST_KIND, {"doc": rest}, finite_only=True):
        return False
    files = {label: [root, list(names)] for label, (root, names) in merged.files.items()}
    return save_doc(key, MERGED_CACHE_KIND, {"doc": head, "order": list(doc), "files": files}, finite_only=True)


def load_rank(files: RankFiles, label: str, use_cache: bool) -> tuple[RunSet, int]:
    """The rank ``label`` loaded again, alone (``files[label]``: its run's root and its own
    files, read through the per-rank cache the workers wrote; a process holding several
    recordings cut into them, as its task cut it), and the index of its run there (the run
    labelled ``label`` or ``host/pid``; else the first). ValueError when nothing could be
    loaded."""
    from tui_prof.analysis.api import split_recordings
    from tui_prof.loaders import load_path

    root, names = files[label]
    runset = split_recordings(load_path(root, use_cache=use_cache, only=names))
    if not runset.runs:
        raise ValueError(f"rank {label} could not be loaded: {runset.errors[0] if runset.errors else 'no data'}")
    found = [i for i, run in enumerate(runset.runs) if run.meta.label == label or f"{run.meta.hostname}/{run.meta.pid}" == label]
    return runset, found[0] if found else 0


@dataclass(frozen=True)
class Fragment:
    """What the assembly's merge rule reads of a merged partial (loaders.detect.merge_plan)."""

    meta: Any
    range: tuple[int, int] | None
    label: str
    whole: tuple | None = None  # (task label, process label) of a recording cut from a process: its sibling parts are not merged into it


@dataclass
class MergedRun:
    """The merged summary sections of a run and what could not be summarised."""

    merge: PartialMerge
    ranks: int = 0  # tasks planned
    failed: list[tuple[str, str]] = field(default_factory=list)  # (rank label, one-line reason)
    errors: list[str] = field(default_factory=list)  # load errors of the ranks that loaded
    files: RankFiles = field(default_factory=dict)  # rank label -> (root, its files): to load it alone again

    seen: dict[tuple, list[Fragment]] = field(default_factory=dict)  # (host, pid, rank) -> its merged sessions
    load_issues: dict[str, tuple[LoadIssue, ...]] = field(default_factory=dict)  # task label -> its load's error issues (every task that returned)
    load_skipped: dict[str, tuple[LoadIssue, ...]] = field(default_factory=dict)  # task label -> the files its load skipped
    planned: Plan | None = None  # the plan the tasks came from (its scan's errors, the tasks' order)
    use_cache: bool = True  # as the tasks: a rank loaded again here goes through the cache or not
    merged_labels: dict[str, list[tuple[str, tuple]]] = field(default_factory=dict)  # task label -> (label, identity) of its merged partials
    paths: PathMerge | None = None  # the second pass's path partials (None: not run)
    plan: PathPlan | None = None  # what the second pass was given
    origins: list[tuple[str, int]] = field(default_factory=list)  # (task label, position in its result) of each merged partial, in merge order
    keep: set[tuple[str, int]] | None = None  # merge only these partials (one recording's); None: every one
    recordings: int = 1  # the separate recordings the run held (one_recording's pick): a document of one of several is not cached

    def add(self, result: RankResult) -> None:
        self.load_issues[result.label] = result.issues
        self.load_skipped[result.label] = result.skipped
        for position, p in enumerate(result.partials):
            if self.keep is not None and (result.label, position) not in self.keep:
                continue
            reason = self._same_process(p, result.label)
            if reason is not None:
                self.failed.append((result.label, reason))
                continue
            self.merge.add(p)
            self.origins.append((result.label, position))
            self.files[p.label] = (result.root, result.files)
            self.merged_labels.setdefault(result.label, []).append((p.label, identity(p.meta, p.label)))
        self.errors.extend(result.errors)
        if not result.partials:
            self.failed.append((result.label, result.errors[0] if result.errors else "nothing could be loaded"))

    def add_paths(self, result: PathResult) -> None:
        """A path task's partials: those of the processes its first pass merged."""
        assert self.paths is not None  # path_tasks made it before any task ran
        keep = {key for _label, key in self.merged_labels.get(result.label, [])}
        self.paths.add([p for p in result.partials if p.key in keep])

    def _same_process(self, p: Any, task: str = "") -> str | None:
        """Why ``p`` is not merged (None: it is a process of its own): the assembly's own rule
        (loaders.detect.merge_plan: the same host, pid and rank in one profiler session, else
        in a second format) over it and the merged partials of its (host, pid, rank); the
        recordings cut from one process (``p.split_of``) are not one another's fragments."""
        from tui_prof.loaders.detect import merge_plan

        if p.meta.pid is None:
            return None
        process = (p.meta.hostname, p.meta.pid, p.meta.rank)
        whole = (task, p.split_of[0]) if p.split_of is not None else None
        kept = [f for f in self.seen.setdefault(process, []) if whole is None or f.whole != whole]
        if kept:
            found = merge_plan([*kept, p])
            mine = len(kept)
            where = f"the same process (host {process[0] or '-'}, pid {process[1]}) as {kept[0].label}"
            if any(mine in pair for pair in found.duplicates):  # a whole-run load keeps one format too
                return f"{where} in another format: counted once"
            if not any(group == [mine] for group in found.groups):  # one session in two units: a whole-run load merges them
                return f"{where}, in the same profiler session: a whole-run load merges their files into one process, the partials cannot; left out"
        self.seen[process].append(Fragment(p.meta, p.range, p.label, whole))
        return None

    def document(self, top: int | None) -> dict[str, Any]:
        """``tuiprof.summary/1`` with the ``MERGED_SECTIONS`` and a ``partials`` record."""
        from tui_prof import __version__

        doc: dict[str, Any] = {"schema": SCHEMA, "tuiprof_version": __version__}
        self.merge.load_errors = load_errors(self)
        planned = self.planned or Plan([], [])
        self.merge.load_skipped = [*planned.skipped, *(i for task in planned.tasks for i in self.load_skipped.get(task.label, ()))]
        self.merge.load = self.load_rank
        if self.planned is not None and self.planned.tasks:
            self.merge.logs_root = self.planned.tasks[0].root
        paths = self.paths
        doc.update(merged_sections(self.merge, top, (lambda _plan: paths) if paths is not None else None, self.plan))
        doc["partials"] = {
            "ranks": self.ranks,
            "merged": len(self.merge.ranks),
            "failed_ranks": [{"label": label, "reason": reason} for label, reason in self.failed],
            "sections": [key for key in MERGED_SECTIONS if key in doc],
        }
        return doc

    def load_rank(self, label: str) -> RunSet:
        """The rank ``label`` loaded again here (:func:`load_rank`): the combined steps'
        slowest rank, to describe its slow steps, and the reference of the ranks on the path."""
        return load_rank(self.files, label, self.use_cache)[0]


def path_tasks(out: MergedRun, tasks: list[RankTask]) -> list[PathTask]:
    """The second pass's tasks, one per rank with merged partials (none for ``check``, or
    where the steps could not be combined); sets ``out.paths`` (and its plan) for the
    document's critical path, its columns and the findings."""
    if not tasks or tasks[0].check_only or not out.merge.ranks:
        return []
    out.merge.load = out.load_rank  # the combined steps describe their slow steps from that rank
    plan = path_plan(out.merge)
    if plan is None:
        return []
    out.plan, out.paths = plan, PathMerge()
    if not plan.windows:
        return []
    processes = len(out.merge.ranks)
    second = []
    for task in tasks:
        merged = out.merged_labels.get(task.label)
        if merged:
            steady = plan.steady([label for label, _key in merged], processes)
            second.append(PathTask(task, steady, plan.settings, plan.table, plan.key(steady)))
    return second


def _merge(tasks: list[RankTask], rules: CategoryRules, keep: set[tuple[str, int]] | None = None) -> MergedRun:
    first = tasks[0] if tasks else RankTask("", "", (), False)
    threshold = DEFAULT_GAP_THRESHOLD_NS if first.threshold_ns is None else first.threshold_ns
    merge = PartialMerge(rules, threshold_ns=threshold, max_gaps=first.max_gaps, step_options=first.step_options or StepOptions())
    return MergedRun(merge, len(tasks), use_cache=first.use_cache, keep=keep)


Rerun = Callable[[list[RankTask], set[tuple[str, int]]], MergedRun]
"""Run ``tasks`` again where they ran first, merging only the partials of ``keep``
(:func:`one_recording`): ``summarise_pool`` / ``summarise_cluster`` with ``keep``."""


def recording_pick(merged: MergedRun, wanted: int | None = None) -> tuple[RecordingPick, set[tuple[str, int]] | None]:
    """Which recording of the merged partials ``summary`` would summarise (the whole-run rule,
    :func:`~tui_prof.analysis.integrity.choose_recording`, over each merged partial's time
    range, identity, label and dispatches in the run set's order) and the partials of that
    recording as (task label, position); None when every partial is in it (or on a bad N)."""
    ranks, spans = merged.merge.ranks, merged.merge.spans
    order = sorted(range(len(ranks)), key=lambda i: ranks[i][0])  # the merge's own order (ties: as merged)
    pick = choose_recording(
        [spans[i][1] for i in order], [ranks[i][4] for i in order], [ranks[i][1] for i in order], [ranks[i][2]["dispatches"] for i in order], wanted
    )
    if pick.count < 2 or pick.error:
        return pick, None
    return pick, {merged.origins[order[j]] for j in pick.groups[pick.chosen - 1]}


def one_recording(merged: MergedRun, wanted: int | None, rerun: Rerun) -> tuple[MergedRun, RecordingPick]:
    """``merged`` narrowed to one recording, as ``summary`` narrows a whole-run load (issue 32):
    recording ``wanted``, else the one with the most dispatches. The recordings are told apart
    only once every rank is merged, so the driver keeps no rank's partials for later: the
    chosen recording's ranks are run again (read back from the partial cache when it is on)
    and only its partials merged. The scan's and the other ranks' errors and failures stay."""
    pick, keep = recording_pick(merged, wanted)
    if keep is None:
        return merged, pick
    labels = {label for label, _ in keep}
    again = rerun([t for t in (merged.planned.tasks if merged.planned else []) if t.label in labels], keep)
    again.ranks, again.planned, again.errors = merged.ranks, merged.planned, merged.errors
    again.failed = [f for f in merged.failed if f[0] not in labels] + again.failed
    again.load_issues = {**merged.load_issues, **again.load_issues}
    again.load_skipped = {**merged.load_skipped, **again.load_skipped}
    return again, pick


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


def summarise_pool(
    tasks: list[RankTask],
    rules: CategoryRules,
    workers: int,
    progress: Progress | None = None,
    task: Callable = rank_task,
    keep: set[tuple[str, int]] | None = None,
    paths: Callable | None = path_task,
    skip_paths: Callable[[MergedRun], bool] | None = None,
) -> MergedRun:
    """Run ``tasks`` on a process pool of ``workers`` (one machine, many ranks), merging only
    the partials of ``keep`` (None: every one), then the second pass (``paths``: one path task
    per merged rank, :func:`path_tasks`; None, or ``skip_paths`` true of the merged run: no
    second pass, the document without the critical path and findings). A task that
    raises is tried once more, then its rank is failed. A worker process that dies breaks
    the pool: the pool is started again, the tasks that were running when it broke (at most
    ``workers``: no more are handed to the pool at once) are run once more, each alone, and a
    rank whose process dies again is failed; the tasks not started yet are not charged."""
    out = _merge(tasks, rules, keep)
    _pool_pass(tasks, workers, task, _PoolRun(out.add, out.failed, len(tasks), progress, "ranks"))
    second = path_tasks(out, tasks) if paths is not None and not (skip_paths and skip_paths(out)) else []
    if second and paths is not None and out.paths is not None:
        _pool_pass(second, workers, paths, _PoolRun(out.add_paths, out.paths.failed, len(second), progress, "paths"))
    return out


def _pool_pass(tasks: list[Any], workers: int, task: Callable, state: _PoolRun) -> None:
    """One pass of ``tasks`` on a process pool: the cached ones read back, the others run."""
    hits, misses = cached_results(tasks)
    for result in hits:
        state.finish(result.label, result=result)
    queue = deque((t, 0) for t in misses)
    suspects = _run_window(queue, max(1, workers), task, state)
    # each rank that was running when a worker process died, alone: a second death is its own
    for suspect in suspects:
        again = _run_window(deque([(suspect, 1)]), 1, task, state)
        for rank in again:
            state.finish(rank.label, "its worker process died twice (BrokenProcessPool)")


@dataclass
class _PoolRun:
    add: Callable[[Any], None]  # a task's result
    failed: list[tuple[str, str]]  # (rank label, reason) of the tasks that failed
    total: int
    progress: Progress | None
    stage: str  # the progress line's word ("ranks", "paths")
    done: int = 0

    def finish(self, label: str, failure: str | None = None, result: Any = None) -> None:
        if result is not None:
            self.add(result)
        else:
            self.failed.append((label, failure or "failed"))
        self.done += 1
        if self.progress:
            self.progress(self.stage, self.done, self.total)


def _run_window(queue: deque[tuple[Any, int]], workers: int, task: Callable, state: _PoolRun) -> list[Any]:
    """Run the queued (task, tries) on a pool, at most ``workers`` in flight; the tasks that
    were in flight when a worker process died (the pool is restarted for the rest)."""
    suspects: list[Any] = []
    while queue:
        pool = ProcessPoolExecutor(max_workers=workers)
        inflight: dict[Future, tuple[Any, int]] = {}
        broken = False
        try:
            while (queue or inflight) and not broken:
                while queue and len(inflight) < workers:
                    item = queue.popleft()
                    try:
                        inflight[pool.submit(task, item[0])] = item
                    except BrokenProcessPool:  # a worker died since the last wait: this task never ran
                        queue.appendleft(item)
                        broken = True
                        break
                if broken:
                    break
                finished, _ = wait(inflight, return_when=FIRST_COMPLETED)
                for fut in finished:
                    item = inflight.pop(fut)
                    broken = _settle(fut, item, queue, suspects, state) or broken
            # the pool is broken: every task still in flight was running when it broke
            for fut in list(inflight):
                item = inflight.pop(fut)
                if not fut.done() or isinstance(fut.exception(), BrokenProcessPool):
                    suspects.append(item[0])
                else:
                    _settle(fut, item, queue, suspects, state)
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True, cancel_futures=True)
    return suspects


def _settle(fut: Future, item: tuple[Any, int], queue: deque, suspects: list[Any], state: _PoolRun) -> bool:
    """Record a finished future; True when its worker process died (the pool is broken)."""
    t, tries = item
    err = fut.exception()
    if isinstance(err, BrokenProcessPool):
        suspects.append(t)
        return True
    if err is None:
        state.finish(t.label, result=fut.result())
    elif tries == 0:
        queue.append((t, 1))
    else:
        state.finish(t.label, _one_line(err))
    return False


DASK_MISSING = "--cluster needs Dask distributed, which is not installed: pip install 'tuiprof[cluster]'"


def _dask_installed() -> None:
    """:class:`DaskMissing` without the ``cluster`` extra (found without importing it: a
    run whose ranks are all cached needs no cluster)."""
    from importlib.util import find_spec

    if find_spec("dask") is None or find_spec("distributed") is None:
        raise DaskMissing(DASK_MISSING)


def require_engine(where: str) -> None:
    """:class:`DaskMissing` when ``--cluster WHERE`` needs Dask (any but ``pool[:N]``) and it
    is not installed: said before a cached document is used, as before a run."""
    if not (where == "pool" or where.startswith("pool:")):
        _dask_installed()


def _dask() -> Any:
    """The ``dask`` module; :class:`DaskMissing` without the ``cluster`` extra."""
    try:
        import dask
        import distributed  # noqa: F401 -- the scheduler's client and LocalCluster
    except ImportError:
        raise DaskMissing(DASK_MISSING) from None
    return dask


def _client(address: str) -> tuple[Any, Any]:
    """(client, cluster or None) for ``--cluster ADDRESS``; :class:`ClusterError` on one line."""
    dask = _dask()
    from distributed import Client, LocalCluster

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


def summarise_cluster(
    tasks: list[RankTask],
    rules: CategoryRules,
    address: str,
    progress: Progress | None = None,
    task: Callable = rank_task,
    keep: set[tuple[str, int]] | None = None,
    paths: Callable | None = path_task,
    skip_paths: Callable[[MergedRun], bool] | None = None,
) -> MergedRun:
    """Run ``tasks`` on the Dask cluster at ``address`` (see the module's doc), merging only
    the partials of ``keep``, then the second pass (``paths``, :func:`path_tasks`; None, or
    ``skip_paths`` true of the merged run: none) on the same cluster; the ranks whose results
    are cached are merged from the cache, and no cluster is started when all are. Ctrl-C
    cancels the tasks; a LocalCluster started here is closed on the way out."""
    _dask_installed()
    out = _merge(tasks, rules, keep)
    runner = _DaskRunner(address)
    try:
        runner.run(tasks, task, "rank", _PoolRun(out.add, out.failed, len(tasks), progress, "ranks"))
        second = path_tasks(out, tasks) if paths is not None and not (skip_paths and skip_paths(out)) else []
        if second and paths is not None and out.paths is not None:
            runner.run(second, paths, "path", _PoolRun(out.add_paths, out.paths.failed, len(second), progress, "paths"))
    finally:
        runner.close()
    return out


def _shared_table(tasks: list[Any]) -> Any:
    """The wait table every path task of ``tasks`` carries (one object: :func:`path_tasks`), or
    None (rank tasks, no table, or tasks that do not share one)."""
    first = getattr(tasks[0], "table", None) if tasks else None
    if not first or not all(isinstance(t, PathTask) and t.table is first for t in tasks):
        return None
    return first


def _with_table(task: PathTask, *, run: Callable, table: Any) -> Any:
    """A path task sent without its wait table, given it back on the worker."""
    return run(dataclasses.replace(task, table=table))


@dataclass
class _DaskRunner:
    """The passes of one run on one Dask client, started on the first task not cached."""

    address: str
    client: Any = None
    cluster: Any = None

    def run(self, tasks: list[Any], task: Callable, kind: str, state: _PoolRun) -> None:
        hits, misses = cached_results(tasks)
        for result in hits:
            state.finish(result.label, result=result)
        if not misses:
            return
        if self.client is None:
            self.client, self.cluster = _client(self.address)
        client = self.client
        futures: list = []
        try:
            # keys name the task on the scheduler: a token per submission keeps two runs (or two
            # passes) sharing one scheduler from being handed each other's results
            token = uuid.uuid4().hex
            keys = [f"tuiprof-{kind}-{token}-{i}" for i in range(len(misses))]
            table = _shared_table(misses)
            if table is not None:  # the run's wait table sent to each worker once, not in every task
                [sent] = client.scatter([table], broadcast=True, hash=False)
                light = [dataclasses.replace(t, table=None) for t in misses]
                futures = client.map(_with_table, light, key=keys, retries=1, pure=False, run=task, table=sent)
            else:
                futures = client.map(task, misses, key=keys, retries=1, pure=False)
            label = {f.key: t.label for f, t in zip(futures, misses, strict=True)}
            from distributed import as_completed as dask_completed

            for fut in dask_completed(futures):
                try:  # a result lost with its worker before it was fetched is computed again: result() waits for it
                    result = fut.result()
                except Exception as err:  # the task's own error, or KilledWorker after its retry
                    state.finish(label[fut.key], _one_line(err))
                else:
                    state.finish(label[fut.key], result=result)
                fut.release()
        except KeyboardInterrupt:
            client.cancel(futures)
            raise

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()


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
