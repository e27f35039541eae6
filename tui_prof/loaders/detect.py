"""Find profiler files in a run directory by their content, load them, and assemble a RunSet.

Files are sniffed by content (first 64 KiB, gunzipped), not by name; names only make
an unrecognised file an error ("looks like a kernel trace but is not") instead of a
silently skipped one. Each loader reads its files; a broken file becomes a one-line
:class:`~tui_prof.model.LoadIssue` and the rest of the run still loads.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import os
import queue
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Protocol

from tui_prof.loaders import LOADER_MODULES, cache, loader_modules
from tui_prof.loaders.base import (
    DetectedFile,
    IssueSink,
    LoadCancelled,
    LoaderSpec,
    check_cancelled,
    clean_text,
    configured_workers,
    load_scope,
    one_line,
    read_error,
    read_head,
    spec_batchable,
)
from tui_prof.loaders.sessions import apart, fragment_span, process_identity, same_session, session_key
from tui_prof.loaders.specs import SPECS
from tui_prof.model import LoadIssue, Run, RunMeta, RunSet

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total)."""

UnitDone = Callable[[list[Run], int, int], None]
"""on_unit(runs, done, total): a work unit's runs as its loader (or the cache) gave them,
before the fragments of one process are merged and its tables sorted; ``done`` of
``total`` units are loaded. Called in the thread that called :func:`load_path`."""

ScanDone = Callable[["ProcessScan"], None]
"""on_scan(scan): the processes the scan found, before any unit is read (see
:func:`process_scan`). Called in the thread that called :func:`load_path`."""

# The specs alone (data): a reopen served by the cache imports no loader module.
LOADERS: tuple[LoaderSpec, ...] = tuple(SPECS[name] for name in LOADER_MODULES)

# A file whose name matches is expected to be profiler output: if no loader recognises
# its content, that is an error rather than a skip.
PROFILER_NAME = re.compile("|".join(f"(?:{spec.file_names})" for spec in LOADERS if spec.file_names), re.IGNORECASE)

# When one process was written in several formats (rocprofv3 --output-format csv json ...),
# the first format in this list is kept and the others are reported as duplicates.
FORMAT_PRIORITY = tuple(spec.format for spec in sorted((s for s in LOADERS if s.priority is not None), key=lambda s: s.priority or 0))

MAX_FILES = 200_000

# Formats whose loader reads each process group (rocprofv3 CSV prefix) or file (rocpd
# database) on its own: a directory of many ranks loads them in parallel threads.
PARALLEL_FORMATS = tuple(spec.format for spec in LOADERS if spec.parallel)

# Formats whose loader reads each file on its own (one run per file): each file is its own
# work unit and cache entry; the files are still loaded one after another.
FILE_FORMATS = tuple(spec.format for spec in LOADERS if spec.per_file)

MODULE_OF_FORMAT = {spec.format: name for name, spec in SPECS.items()}


def loader_of(fmt: str) -> ModuleType:
    """The loader module of format ``fmt``, imported on first use (units the cache serves need none)."""
    return importlib.import_module(f"tui_prof.loaders.{MODULE_OF_FORMAT[fmt]}")


READ_PROGRESS_MIN_BYTES = 32 << 20  # loads smaller than this report no "reading" progress
READ_PROGRESS_INTERVAL_S = 0.25


def _bytes_read() -> int | None:
    """Bytes this process has read through read(2) so far (Linux ``/proc/self/io``
    ``rchar``), or None where that is not available."""
    try:
        with open("/proc/self/io", "rb") as fh:
            for line in fh:
                if line.startswith(b"rchar:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


class ReadProgress:
    """Reports ``progress("reading MiB", done, total)`` every READ_PROGRESS_INTERVAL_S
    while units are parsed, from the bytes this process has read since :meth:`start`, so a
    single big file (a 1 GB pftrace, one rank's CSVs) shows progress although its loader
    reports none. Approximate: SQLite may read a page twice and the Kineto worker processes'
    reads are not counted, so ``done`` stays below ``total`` until the load ends."""

    def __init__(self, progress: Progress, total_bytes: int) -> None:
        self.progress = progress
        self.total = total_bytes
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name="tuiprof-read-progress", daemon=True)
        self.base = _bytes_read()

    def start(self) -> ReadProgress:
        if self.base is not None and self.total >= READ_PROGRESS_MIN_BYTES:
            self.thread.start()
        return self

    def _run(self) -> None:
        total_mib = max(1, self.total >> 20)
        base = self.base
        while base is not None and not self.stopped.wait(READ_PROGRESS_INTERVAL_S):
            now = _bytes_read()
            if now is None:
                return
            read_mib = (now - base) >> 20
            if read_mib < total_mib:
                self.progress("reading MiB", read_mib, total_mib)
            else:  # every byte read once: the loader is decoding or building its tables
                self.progress("building tables", total_mib - 1, total_mib)

    def stop(self) -> None:
        """Stop sampling; returns once no report can follow (the caller's "done" is the last)."""
        self.stopped.set()
        if self.thread.is_alive():
            self.thread.join()


def load_workers(units: int) -> int:
    """Threads used to load ``units`` independent work units: ``TUIPROF_LOAD_WORKERS`` or
    the number of CPUs (at most 8); 1 means a serial load."""
    return max(1, min(configured_workers(), units))


def iter_files(root: Path, sink: IssueSink) -> list[Path]:
    """All regular files under ``root`` (or ``root`` itself), sorted, without following
    directory symlinks (so symlink loops cannot trap the walk)."""
    if root.is_file():
        return [root]
    found: list[Path] = []

    def on_error(err: OSError) -> None:
        sink.error(err.filename or root, f"cannot read directory: {err.strerror or err}")

    for dirpath, dirnames, filenames in os.walk(root, onerror=on_error, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            if path.is_file():
                found.append(path)
            elif path.is_symlink() and not path.exists():
                sink.skipped(path, "broken symbolic link")
            else:  # a FIFO, socket or device: never opened (reading a FIFO would block)
                report = sink.error if PROFILER_NAME.search(name) else sink.skipped
                report(path, "not a regular file (FIFO, socket or device); not read")
            if len(found) >= MAX_FILES:
                sink.error(root, f"more than {MAX_FILES} files; the rest were not read")
                return found
    return found


SQLITE_PARTS = {"-wal": "write-ahead log", "-shm": "shared-memory index", "-journal": "rollback journal"}


def sqlite_part(path: Path) -> str | None:
    """For ``X-wal``/``X-shm``/``X-journal`` beside a file ``X``: why it is not read on
    its own (SQLite's companion files are parts of their database), else None."""
    for suffix, what in SQLITE_PARTS.items():
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            database = path.with_name(path.name[: -len(suffix)])
            if database.is_file():
                return f"the {what} of the SQLite database {database.name}; read with it"
    return None


def scan(root: Path, sink: IssueSink, progress: Progress | None = None, memo: dict | None = None, only: Sequence[str] | None = None) -> list[DetectedFile]:
    """Sniff every file under ``root`` and return the recognised ones.

    ``memo`` (from :func:`tui_prof.loaders.cache.load_scan`): the verdicts of an earlier
    scan by path, each ``[size, mtime_ns, ctime_ns, format, kind, group]`` (format None: not
    recognised). A file whose size and times are unchanged is not read again (at 1000 ranks
    × 8 files the heads are 500 MB of reads); ``memo`` is updated in place with this scan's
    verdicts for every file it looked at. ``only``: these files of the run (one rank's, as
    :func:`scan_processes` lists them) instead of every file under ``root``, not walked."""
    modules: list | None = None  # imported at the first file the memo does not answer
    files = [Path(p) for p in only] if only is not None else iter_files(root, sink)
    detected: list[DetectedFile] = []
    seen: dict = {}
    for index, path in enumerate(files):
        if progress:
            progress("scanning", index, len(files))
        part = sqlite_part(path)
        if part:
            sink.skipped(path, part)
            continue
        try:
            stat = path.stat()
            if not os.access(path, os.R_OK):
                raise PermissionError("permission denied")
        except OSError as err:
            sink.error(path, read_error(err))
            continue
        size = stat.st_size
        expected = bool(PROFILER_NAME.search(path.name)) or path == root
        if size == 0:
            (sink.error if expected else sink.skipped)(path, "empty file (0 bytes)")
            continue
        state = [size, stat.st_mtime_ns, stat.st_ctime_ns]
        known = memo.get(str(path)) if memo is not None else None
        if known is not None and list(known[:3]) == state:
            fmt, kind, group = known[3:]
            hit = DetectedFile(path, fmt, kind, group) if fmt else None
        else:
            head = read_head(path)
            hit = None
            if modules is None:
                modules = loader_modules()
            for module in modules:
                try:
                    sniffed = module.sniff(path, head)
                except Exception:  # a sniffer must never stop the scan
                    sniffed = None
                if sniffed:
                    hit = DetectedFile(path, module.FORMAT, sniffed.kind, sniffed.group)
                    break
        seen[str(path)] = state + ([hit.format, hit.kind, hit.group] if hit else [None, None, None])
        if hit:
            detected.append(hit)
        elif expected:
            sink.error(path, "not recognised as output of any supported profiler (unknown or damaged content)")
        else:
            sink.skipped(path, "not a profiler output file")
    if memo is not None:
        memo.clear()
        memo.update(seen)
    return detected


class HasMeta(Protocol):
    """A process fragment as the assembly decides on it: a Run, or a summary partial of one."""

    @property
    def meta(self) -> RunMeta: ...


def _process_key(run: HasMeta) -> tuple | None:
    return process_identity(run.meta)


def _priority(run: HasMeta) -> int:
    fmt = run.meta.formats[0] if run.meta.formats else ""
    return FORMAT_PRIORITY.index(fmt) if fmt in FORMAT_PRIORITY else len(FORMAT_PRIORITY)


META_LIMITS = {"hostname": 255, "label": 255, "command": 4096, "tool_version": 255}
"""Characters kept of each descriptive field of a run (a host name is at most 253 in DNS;
a field beyond its limit is cut and says how long it was)."""


def _clean_meta(meta: RunMeta) -> None:
    """The run's descriptive fields as the analysis and every output may hold them: lone
    surrogates (a non-UTF-8 file or folder name the label came from) shown as U+FFFD, and
    absurd lengths (a 12.5 MB host name in a damaged trace) cut."""
    for name, limit in META_LIMITS.items():
        value = getattr(meta, name)
        if not isinstance(value, str):
            continue
        value = clean_text(value)
        if len(value) > limit:
            value = f"{value[: limit - 24]}… ({len(value):,} characters)"
        setattr(meta, name, value)


@dataclass
class MergePlan:
    """What the assembly does with a list of process fragments (:func:`merge_plan`):
    ``groups``, each the fragment indices merged into one process (the first is the one
    kept, the others merged into it, in this order); ``duplicates``, (index, kept index) of
    a fragment dropped as the same process written in a second format."""

    groups: list[list[int]]
    duplicates: list[tuple[int, int]]


def merge_plan(fragments: Sequence[HasMeta]) -> MergePlan:
    """Which fragments form one process: the same (host, pid, rank) (:func:`_process_key`)
    and one profiler session (:func:`tui_prof.loaders.sessions.same_session`: separate
    ``torch.profiler`` sessions of one pid are separate processes); the same process in a
    second format is a duplicate (the first format of FORMAT_PRIORITY kept). Fragments whose
    files name no session are separate when their times lie over a minute apart
    (:func:`tui_prof.loaders.sessions.apart`: a pid used again by a later run). A fragment
    without a pid is a process of its own. The one decision of the assembly: the cluster's
    grouping of units asks it too (its partials carry the ``meta`` it reads)."""
    groups: list[list[int]] = []
    duplicates: list[tuple[int, int]] = []
    by_key: dict[tuple, list[list[int]]] = {}
    spans: dict[int, tuple[int, int] | None] = {}  # fragment spans, computed for a process's second fragment on
    order = sorted(range(len(fragments)), key=lambda i: _priority(fragments[i]))
    for i in order:
        run = fragments[i]
        key = _process_key(run)
        if key is None:
            groups.append([i])
            continue
        sessions = by_key.setdefault(key, [])
        first = fragments[sessions[0][0]] if sessions else None
        if first is not None and first.meta.formats and run.meta.formats and first.meta.formats[0] != run.meta.formats[0]:
            duplicates.append((i, sessions[0][0]))
            continue
        group = next((g for g in sessions if same_session(fragments[g[0]].meta, run.meta) and not _apart_in_time(fragments, g, i, spans)), None)
        if group is None:
            group = [i]
            sessions.append(group)
            groups.append(group)
        else:
            group.append(i)
    return MergePlan(groups, duplicates)


def _apart_in_time(fragments: Sequence[HasMeta], group: list[int], i: int, spans: dict[int, tuple[int, int] | None]) -> bool:
    """Fragment ``i`` lies apart in time from every fragment of ``group`` (sessions.apart), where
    neither names its session: the same pid used by two runs. ``spans`` caches each fragment's."""
    if session_key(fragments[i].meta) is not None or session_key(fragments[group[0]].meta) is not None:
        return False
    for j in (i, *group):
        if j not in spans:
            spans[j] = fragment_span(fragments[j])
    return all(apart(spans[i], spans[j]) for j in group)


def assemble(fragments: list[Run], sink: IssueSink) -> list[Run]:
    """Merge fragments of one process and session (:func:`merge_plan`), drop the same
    process written in a second format, and attach directory-level time series (rocm-smi
    CSVs) to the runs beside them."""
    series_only = [r for r in fragments if r.meta.extra.get("series_only")]
    fragments = [r for r in fragments if not r.meta.extra.get("series_only")]

    plan = merge_plan(fragments)
    for i, kept in plan.duplicates:
        for path in fragments[i].meta.files:
            sink.skipped(path, f"same process as {fragments[kept].meta.formats[0]} output already loaded (duplicate data)")
    runs: list[Run] = []
    for group in plan.groups:
        run = fragments[group[0]]
        for other in group[1:]:
            run.merge(fragments[other])
        runs.append(run)

    for extra in series_only:
        directory = extra.meta.extra.get("directory", "")
        targets = [r for r in runs if any(str(Path(f).parent).startswith(directory) for f in r.meta.files)]
        if not targets:
            runs.append(extra)
            continue
        for target in targets:
            target.merge(extra)

    for run in runs:
        _clean_meta(run.meta)
        run.finish()
    runs.sort(key=lambda r: (r.meta.hostname, r.meta.pid if r.meta.pid is not None else -1, r.meta.rank or 0, r.meta.label))
    return runs


def work_units(detected: list[DetectedFile]) -> list[tuple[str, list[DetectedFile]]]:
    """The load work units of a scan, in load order: one per process group of a
    PARALLEL_FORMATS format, one per file of a FILE_FORMATS format, one per other format.
    Each unit is loaded (and cached) on its own."""
    by_module: dict[str, list[DetectedFile]] = defaultdict(list)
    for item in detected:
        by_module[item.format].append(item)
    units: list[tuple[str, list[DetectedFile]]] = []
    for fmt, files in by_module.items():
        if fmt in PARALLEL_FORMATS:
            groups: dict[str, list[DetectedFile]] = defaultdict(list)
            for item in files:
                groups[item.group or str(item.path)].append(item)
            units.extend((fmt, items) for items in groups.values())
        elif fmt in FILE_FORMATS:
            units.extend((fmt, [item]) for item in files)
        else:
            units.append((fmt, files))
    return units


# A unit of one process (PARALLEL_FORMATS or FILE_FORMATS) with any of these file kinds
# holds a trace: rocprofv3 CSV kernel_trace, <domain>_api_trace, memory_copy_trace...,
# a Kineto or Perfetto trace file, a rocpd database.
TRACE_KIND = re.compile(r"(?:^|_)trace$|^rocpd_db$")
STATS_KIND = re.compile(r"_stats$")  # rocprofv3 --stats tables (kernel_stats, hip_api_stats...)


@dataclass(frozen=True)
class ScannedProcess:
    """A work unit that is one process's files, as the scan found it (nothing parsed)."""

    label: str  # its group (rocprofv3 CSV file prefix, trace or database file) relative to the run directory: a file name, untrusted
    files: tuple[str, ...]
    traced: bool  # holds a trace (else only the profiler's statistics)


@dataclass(frozen=True)
class ProcessScan:
    """What the scan of a run directory says about its processes, before any unit loads."""

    processes: tuple[ScannedProcess, ...]  # in unit (load) order
    units: int  # work units to load, processes or not

    @property
    def ranks(self) -> tuple[ScannedProcess, ...]:
        """The processes a rank table shows: those with a trace, or, where none has one,
        those with statistics (as tui.view.rankrows.opens_on_ranks decides on the loaded runs)."""
        traced = tuple(p for p in self.processes if p.traced)
        return traced or self.processes

    @property
    def multi(self) -> bool:
        """Two or more processes: the run (very likely) opens on the rank table. A lower
        bound: a rocpd database or Perfetto trace may hold several processes."""
        return len(self.ranks) > 1


def _group_label(group: str, root: Path) -> str:
    """A unit's group relative to the run directory (the file name for a single file)."""
    if root.is_file():
        return root.name
    base = str(root).rstrip("/") + "/"
    label = group[len(base) :] if group.startswith(base) else group
    return label.rstrip("/") or root.name


def process_scan(root: Path, units: list[tuple[str, list[DetectedFile]]], every: bool = False) -> ProcessScan:
    """The processes among ``units`` (:func:`work_units` of a scan): each unit of a format
    that loads one process per unit (PARALLEL_FORMATS, FILE_FORMATS) and holds a trace or
    statistics (``every``: any such unit, e.g. a rocprofv3 ``--summary`` file or a prefix of
    agent records only, which a load makes a process of too); the same grouping the load
    then reads unit by unit."""
    found = []
    for fmt, files in units:
        if fmt not in PARALLEL_FORMATS and fmt not in FILE_FORMATS:
            continue
        traced = any(TRACE_KIND.search(item.kind) for item in files)
        if not (traced or every) and not any(STATS_KIND.search(item.kind) for item in files):
            continue
        group = files[0].group or str(files[0].path)
        found.append(ScannedProcess(_group_label(group, root), tuple(str(item.path) for item in files), traced))
    return ProcessScan(tuple(found), len(units))


def scan_processes(path: str | os.PathLike, *, use_cache: bool = False) -> ProcessScan:
    """How many processes (ranks) the run under ``path`` holds and their labels, without
    loading it: the load's own scan and work units (each file's name and at most its first
    64 KiB; with ``use_cache``, no read at all for a file the cache's scan memo knows
    unchanged). Nothing is written."""
    root = Path(path)
    if not root.exists():
        return ProcessScan((), 0)
    memo = cache.load_scan(root) if use_cache else None
    return process_scan(root, work_units(scan(root, IssueSink(), memo=memo)))


def load_path(
    path: str | os.PathLike,
    *,
    progress: Progress | None = None,
    use_cache: bool = False,
    cancel: threading.Event | None = None,
    on_unit: UnitDone | None = None,
    pending: cache.PendingWrites | None = None,
    on_scan: ScanDone | None = None,
    only: Sequence[str] | None = None,
) -> RunSet:
    """Load every recognised file under ``path`` (a directory or one file).

    With ``use_cache`` each work unit (a rank's process group, a database, a trace file) is
    read from / written to the columnar cache in the user cache directory
    (:mod:`tui_prof.loaders.cache`), keyed by its files' state: only changed units are parsed.
    The directory is walked on every open (its issues are reported afresh); with the cache,
    only files whose size or times changed are sniffed again.

    Cancellation: setting ``cancel`` (or calling :func:`tui_prof.loaders.cancel_loads`, or
    Ctrl-C in the calling thread) stops the units being parsed within about a second and
    raises :class:`~tui_prof.loaders.base.LoadCancelled` (KeyboardInterrupt for Ctrl-C).
    Units run in daemon threads, so a process that exits never waits for one.

    ``on_unit`` (:data:`UnitDone`) is handed each unit's runs as the unit is loaded (the
    cached units first, in unit order), so a caller can show processes before all are in.

    ``pending`` (with ``use_cache``): the cache entries of the parsed units are kept in it
    instead of written, and the caller writes them later with
    :meth:`~tui_prof.loaders.cache.PendingWrites.write` (the TUI: after its first screen).

    ``on_scan`` (:data:`ScanDone`) is called once, after the scan and before any unit is
    read (from the cache or its files), with the processes found (:func:`process_scan`),
    so a caller can show one row per rank before the first is in.

    ``only`` (files under ``path``: one rank's :attr:`ScannedProcess.files`): load these
    files alone, as a worker of ``tuiprof summary --cluster`` does (the scan's memo in the
    cache is neither read nor written then; the unit's cache entry is).
    """
    root = Path(path)
    if not root.exists():
        runset = RunSet(root=str(root))
        runset.issues = [LoadIssue(str(root), "no such file or directory")]
        return runset
    event = cancel if cancel is not None else threading.Event()
    with load_scope(event):
        return _load(root, progress, use_cache, event, on_unit, pending, on_scan, only)


CACHE_CHUNK = 8  # cache entries read together when a caller takes the units as they load
CANCEL_GRACE_S = 0.5
"""After a cancel, how long :func:`_load` waits for its units to stop before it returns."""


def _run_tasks(
    tasks: list[list[int]], run_task: Callable[[list[int]], list[int]], workers: int, cancel: threading.Event, on_done: Callable[[list[int]], None]
) -> None:
    """Run ``tasks`` on ``workers`` daemon threads (each in a copy of this context, so the
    loaders see ``cancel``); ``on_done(task)`` in this thread as each finishes. The waiting
    thread wakes every 0.1 s, so Ctrl-C (KeyboardInterrupt) and ``cancel`` are seen at once;
    either sets ``cancel`` and returns after at most CANCEL_GRACE_S (a unit stuck in C code
    is left to its daemon thread) by raising KeyboardInterrupt or LoadCancelled."""
    pending: queue.SimpleQueue = queue.SimpleQueue()
    for task in tasks:
        pending.put(task)
    finished: queue.SimpleQueue = queue.SimpleQueue()

    def worker() -> None:
        try:
            while not cancel.is_set():
                try:
                    task = pending.get_nowait()
                except queue.Empty:
                    return
                try:
                    finished.put((task, run_task(task), None))
                except BaseException as err:  # LoadCancelled, or a bug: handed to the waiting thread
                    finished.put((task, None, err))
                    return
        finally:
            finished.put(None)  # this worker is done

    threads = [threading.Thread(target=contextvars.copy_context().run, args=(worker,), name="tuiprof-load", daemon=True) for _ in range(workers)]
    for thread in threads:
        thread.start()
    alive = len(threads)
    remaining = len(tasks)
    try:
        while remaining and alive:
            try:
                item = finished.get(timeout=0.1)
            except queue.Empty:
                if cancel.is_set():
                    raise LoadCancelled() from None
                continue
            if item is None:
                alive -= 1
                continue
            task, _done, err = item
            if err is not None:
                raise err
            remaining -= 1
            on_done(task)
        if cancel.is_set() or remaining:
            raise LoadCancelled()
    except BaseException:
        cancel.set()
        _wait_stopped(finished, alive, CANCEL_GRACE_S)
        raise


def _wait_stopped(finished: queue.SimpleQueue, alive: int, grace: float) -> None:
    """Wait up to ``grace`` seconds for ``alive`` workers to report that they stopped."""
    deadline = time.monotonic() + grace
    while alive:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        try:
            if finished.get(timeout=left) is None:
                alive -= 1
        except queue.Empty:
            return


Unit = tuple[str, list[DetectedFile]]  # (format, files) of one work unit
UnitResult = tuple[list[Run], list[LoadIssue]]  # (fragments, issues) of one work unit


BATCH_UNITS = 512
"""Tiny units (a loader's ``batchable``) read together in one task at most."""


def _batched(units: list[Unit]) -> set[int]:
    """The units a loader reads in batches (many tiny processes: one small file each).
    They are neither looked up in nor written to the cache: reading a batch of them costs
    less than their cache keys and entries would."""
    found = set()
    for slot, (fmt, files) in enumerate(units):
        if spec_batchable(SPECS[MODULE_OF_FORMAT[fmt]], files):  # from the spec: no loader imported
            found.add(slot)
    return found


def _cached_units(units: list[Unit], on_unit: UnitDone | None, skip: set[int] | None = None) -> tuple[list[UnitResult | None], list[str | None]]:
    """Each unit's result from its cache entry (None where there is none) and its cache key
    (None for the units in ``skip``). With ``on_unit`` the entries are read a chunk at a
    time, each chunk's units handed on before the next is read (the first rows need not
    wait for every entry)."""
    results: list[UnitResult | None] = [None] * len(units)
    keys: list[str | None] = [None if skip and slot in skip else cache.unit_key(fmt, files) for slot, (fmt, files) in enumerate(units)]
    chunk = CACHE_CHUNK if on_unit else max(len(keys), 1)
    hits_so_far = 0
    for first in range(0, len(keys), chunk):
        for slot, hit in enumerate(cache.load_many(keys[first : first + chunk]), first):
            if hit is not None:
                results[slot] = (hit.runs, hit.issues)
                hits_so_far += 1
                if on_unit:
                    on_unit(hit.runs, hits_so_far, len(units))
    return results, keys


def _load_tasks(units: list[Unit], results: list[UnitResult | None], batched: set[int] | None = None) -> list[list[int]]:
    """The units still to load, as tasks: the ``batched`` units of one format and folder
    (host) BATCH_UNITS at a time; each other unit of a PARALLEL_FORMATS format alone; the
    units of any other format one after another in one task, so e.g. two large pftrace
    files are never parsed at the same time (each holds its whole trace in memory while it
    decodes)."""
    tasks: list[list[int]] = []
    chained: dict[str, list[int]] = {}
    batches: dict[tuple[str, str], list[int]] = {}
    for slot, (fmt, files) in enumerate(units):
        if results[slot] is not None:
            continue
        if batched and slot in batched:
            key = (fmt, os.path.dirname(files[0].group or str(files[0].path)))
            batch = batches.get(key)
            if batch is None or len(batch) >= BATCH_UNITS:
                batch = batches[key] = []
                tasks.append(batch)
            batch.append(slot)
        elif fmt in PARALLEL_FORMATS:
            tasks.append([slot])
        elif fmt in chained:
            chained[fmt].append(slot)
        else:
            chained[fmt] = [slot]
            tasks.append(chained[fmt])
    return tasks


def _bytes_to_parse(units: list[Unit], tasks: list[list[int]]) -> int:
    total = 0
    for task in tasks:
        for slot in task:
            for item in units[slot][1]:
                with contextlib.suppress(OSError):
                    total += os.stat(item.path).st_size
    return total


def _fragments(results: list[UnitResult | None], sink: IssueSink) -> list[Run]:
    """Every unit's runs, its issues added to ``sink``, in unit order (as a serial load gives them)."""
    fragments: list[Run] = []
    for result in results:
        if result is None:  # every unit ran or came from the cache
            continue
        runs, issues = result
        fragments.extend(runs)
        sink.issues.extend(issues)
    return fragments


def _run_batch(task: list[int], units: list[Unit], results: list[UnitResult | None], run_unit: Callable[[int], UnitResult]) -> None:
    """The batched units of ``task`` read together by their loader's ``load_batch`` (each
    unit's runs and issues into ``results``); should the batch fail, each unit is read on
    its own by ``run_unit``, as without batches."""
    fmt = units[task[0]][0]
    check_cancelled()
    try:
        done = loader_of(fmt).load_batch([units[slot][1] for slot in task])
        check_cancelled()
    except Exception:  # a bug in the batch path must not lose the units
        for slot in task:
            results[slot] = run_unit(slot)
        return
    for slot, (runs, unit_sink) in zip(task, done, strict=True):
        results[slot] = (runs, unit_sink.issues)


def _load(
    root: Path,
    progress: Progress | None,
    use_cache: bool,
    cancel: threading.Event,
    on_unit: UnitDone | None = None,
    pending: cache.PendingWrites | None = None,
    on_scan: ScanDone | None = None,
    only: Sequence[str] | None = None,
) -> RunSet:
    """Scan, then each work unit from its cache entry (``use_cache`` and the entry is
    valid) or from its loader (and written to the cache with ``use_cache``, or kept in
    ``pending`` to be written later)."""
    runset = RunSet(root=str(root))
    sink = IssueSink()
    memo: dict | None = None
    before: dict = {}
    if use_cache and only is None:
        memo = cache.load_scan(root)
        before = dict(memo)
    detected = scan(root, sink, progress, memo, only)
    units = work_units(detected)
    if on_scan:
        on_scan(process_scan(root, units))
    if memo is not None and memo != before:
        cache.save_scan(root, memo)

    # Per unit: (fragments, issues), from the cache or from its loader.
    results: list[UnitResult | None] = [None] * len(units)
    keys: list[str | None] = [None] * len(units)
    batched = _batched(units)
    if use_cache:
        results, keys = _cached_units(units, on_unit, batched)

    def run_unit(slot: int) -> tuple[list[Run], list[LoadIssue]]:
        fmt, files = units[slot]
        unit_sink = IssueSink()
        check_cancelled()
        try:
            runs = loader_of(fmt).load(files, unit_sink)
            check_cancelled()  # a loader that turned an interrupted read into an issue: the unit is not kept
        except Exception as err:  # a loader bug must not lose the other formats
            for item in files:
                unit_sink.error(item.path, f"{fmt} loader failed: {one_line(repr(err))}")
            return [], unit_sink.issues
        key = keys[slot]
        if key and runs:  # written (or kept as a snapshot) before assemble() merges and sorts the fragments
            unit = RunSet(root=str(root), runs=runs, issues=unit_sink.issues)
            if pending is not None:
                pending.add(unit, key)
            else:
                cache.save(unit, key)
        return runs, unit_sink.issues

    tasks = _load_tasks(units, results, batched)

    def run_task(task: list[int]) -> list[int]:
        if task[0] in batched:
            _run_batch(task, units, results, run_unit)
            return task
        for slot in task:
            results[slot] = run_unit(slot)
        return task

    done = len(units) - sum(len(t) for t in tasks)
    if progress:
        progress("loading", done, len(units))
    workers = load_workers(len(tasks))
    reading = None
    if progress and tasks:
        reading = ReadProgress(progress, _bytes_to_parse(units, tasks)).start()
    counted = [done]

    def on_done(task: list[int]) -> None:
        for slot in task:
            counted[0] += 1
            result = results[slot]
            if on_unit and result is not None:
                on_unit(result[0], counted[0], len(units))
        if progress:
            progress("loading", counted[0], len(units))

    try:
        if tasks:
            _run_tasks(tasks, run_task, workers, cancel, on_done)
    finally:
        if reading is not None:
            reading.stop()

    if use_cache and tasks:  # entries were written: keep the cache within its bound
        if pending is not None:
            pending.keep.update(key for key in keys if key)  # pruned by its write
        else:
            cache.prune(keep={key for key in keys if key})
    runset.runs = assemble(_fragments(results, sink), sink)
    runset.issues = sink.issues
    if progress:
        progress("done", 1, 1)
    return runset
