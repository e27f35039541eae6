"""Find profiler files in a run directory by their content, load them, and assemble a RunSet.

Files are sniffed by content (first 64 KiB, gunzipped), not by name; names only make
an unrecognised file an error ("looks like a kernel trace but is not") instead of a
silently skipped one. Each loader reads its files; a broken file becomes a one-line
:class:`~tui_prof.model.LoadIssue` and the rest of the run still loads.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Callable

from tui_prof.loaders import loader_modules
from tui_prof.loaders.base import DetectedFile, IssueSink, one_line, read_head
from tui_prof.model import LoadIssue, Run, RunSet

Progress = Callable[[str, int, int], None]
"""progress(stage, done, total)."""

# A file whose name matches is expected to be profiler output: if no loader recognises
# its content, that is an error rather than a skip.
PROFILER_NAME = re.compile(
    r"(_(kernel|hip_api|hsa_api|marker_api|rccl_api|memory_copy|memory_allocation|scratch_memory)_trace"
    r"|counter_collection|agent_info|_stats|results|\.pftrace|pt\.trace|kineto|rocpd)",
    re.IGNORECASE,
)

# When one process was written in several formats (rocprofv3 --output-format csv json ...),
# the first format in this list is kept and the others are reported as duplicates.
FORMAT_PRIORITY = ("rocpd", "rocprofv3-json", "rocprofv3-csv", "pftrace", "kineto")

MAX_FILES = 200_000

# Formats whose loader reads each process group (rocprofv3 CSV prefix) or file (rocpd
# database) on its own: a directory of many ranks loads them in parallel threads.
PARALLEL_FORMATS = ("rocprofv3-csv", "rocpd")


def load_workers(units: int) -> int:
    """Threads used to load ``units`` independent work units: ``TUIPROF_LOAD_WORKERS`` or
    the number of CPUs (at most 8); 1 means a serial load."""
    try:
        wanted = int(os.environ.get("TUIPROF_LOAD_WORKERS", "0"))
    except ValueError:
        wanted = 0
    if wanted <= 0:
        wanted = min(os.cpu_count() or 1, 8)
    return max(1, min(wanted, units))


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


def scan(root: Path, sink: IssueSink, progress: Progress | None = None) -> list[DetectedFile]:
    """Sniff every file under ``root`` and return the recognised ones."""
    modules = loader_modules()
    files = iter_files(root, sink)
    detected: list[DetectedFile] = []
    for index, path in enumerate(files):
        if progress:
            progress("scanning", index, len(files))
        try:
            size = path.stat().st_size
            if not os.access(path, os.R_OK):
                raise PermissionError("permission denied")
        except OSError as err:
            sink.error(path, f"cannot read file: {getattr(err, 'strerror', None) or err}")
            continue
        expected = bool(PROFILER_NAME.search(path.name)) or path == root
        if size == 0:
            (sink.error if expected else sink.skipped)(path, "empty file (0 bytes)")
            continue
        head = read_head(path)
        hit = None
        for module in modules:
            try:
                sniffed = module.sniff(path, head)
            except Exception:  # a sniffer must never stop the scan
                sniffed = None
            if sniffed:
                hit = DetectedFile(path, module.FORMAT, sniffed.kind, sniffed.group)
                break
        if hit:
            detected.append(hit)
        elif expected:
            sink.error(path, "not recognised as output of any supported profiler (unknown or damaged content)")
        else:
            sink.skipped(path, "not a profiler output file")
    return detected


def _process_key(run: Run) -> tuple | None:
    if run.meta.pid is None:
        return None
    return (run.meta.hostname, run.meta.pid, run.meta.rank)


def _priority(run: Run) -> int:
    fmt = run.meta.formats[0] if run.meta.formats else ""
    return FORMAT_PRIORITY.index(fmt) if fmt in FORMAT_PRIORITY else len(FORMAT_PRIORITY)


def assemble(fragments: list[Run], sink: IssueSink) -> list[Run]:
    """Merge fragments of one process, drop the same process written in a second format,
    and attach directory-level time series (rocm-smi CSVs) to the runs beside them."""
    series_only = [r for r in fragments if r.meta.extra.get("series_only")]
    fragments = [r for r in fragments if not r.meta.extra.get("series_only")]

    runs: list[Run] = []
    by_key: dict[tuple, Run] = {}
    for run in sorted(fragments, key=_priority):
        key = _process_key(run)
        if key is None:
            runs.append(run)
            continue
        kept = by_key.get(key)
        if kept is None:
            by_key[key] = run
            runs.append(run)
        elif kept.meta.formats and run.meta.formats and kept.meta.formats[0] != run.meta.formats[0]:
            for path in run.meta.files:
                sink.skipped(path, f"same process as {kept.meta.formats[0]} output already loaded (duplicate data)")
        else:
            kept.merge(run)

    for extra in series_only:
        directory = extra.meta.extra.get("directory", "")
        targets = [r for r in runs if any(str(Path(f).parent).startswith(directory) for f in r.meta.files)]
        if not targets:
            runs.append(extra)
            continue
        for target in targets:
            target.merge(extra)

    for run in runs:
        run.finish()
    runs.sort(key=lambda r: (r.meta.hostname, r.meta.pid if r.meta.pid is not None else -1, r.meta.rank or 0, r.meta.label))
    return runs


def load_path(path: str | os.PathLike, *, progress: Progress | None = None, use_cache: bool = False) -> RunSet:
    """Load every recognised file under ``path`` (a directory or one file).

    With ``use_cache`` the result is read from / written to the columnar cache in the
    user cache directory (:mod:`tui_prof.loaders.cache`), keyed by the files' state.
    """
    root = Path(path)
    if not root.exists():
        runset = RunSet(root=str(root))
        runset.issues = [LoadIssue(str(root), "no such file or directory")]
        return runset
    key = None
    if use_cache:
        from tui_prof.loaders import cache

        key = cache.cache_key(root, cache.files_for_key(root))
        cached = cache.load(key) if key else None
        if cached is not None:
            if progress:
                progress("done", 1, 1)
            return cached
    runset = _load_uncached(root, progress)
    if key and runset.runs:
        cache.save(runset, key)
    return runset


def _load_uncached(root: Path, progress: Progress | None) -> RunSet:
    runset = RunSet(root=str(root))
    sink = IssueSink()

    detected = scan(root, sink, progress)
    by_module: dict[str, list[DetectedFile]] = defaultdict(list)
    for item in detected:
        by_module[item.format].append(item)

    fragments: list[Run] = []
    modules = {m.FORMAT: m for m in loader_modules()}
    # Work units: one per format, except that formats whose processes are independent are
    # split into one unit per process group (a rank), which load in parallel threads.
    units: list[tuple[str, list[DetectedFile]]] = []
    for fmt, files in by_module.items():
        if fmt in PARALLEL_FORMATS:
            groups: dict[str, list[DetectedFile]] = defaultdict(list)
            for item in files:
                groups[item.group or str(item.path)].append(item)
            units.extend((fmt, items) for items in groups.values())
        else:
            units.append((fmt, files))

    def run_unit(unit: tuple[str, list[DetectedFile]]) -> tuple[list[Run], IssueSink]:
        fmt, files = unit
        unit_sink = IssueSink()
        try:
            return modules[fmt].load(files, unit_sink), unit_sink
        except Exception as err:  # a loader bug must not lose the other formats
            for item in files:
                unit_sink.error(item.path, f"{fmt} loader failed: {one_line(repr(err))}")
            return [], unit_sink

    workers = load_workers(len(units))
    if progress:
        progress("loading", 0, len(units))
    if workers <= 1:
        results = []
        for step, unit in enumerate(units):
            results.append(run_unit(unit))
            if progress:
                progress("loading", step + 1, len(units))
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tuiprof-load") as pool:
            results = []
            for step, result in enumerate(pool.map(run_unit, units)):  # results in unit order
                results.append(result)
                if progress:
                    progress("loading", step + 1, len(units))
    for runs, unit_sink in results:  # issues and runs in the same order as a serial load
        fragments.extend(runs)
        sink.issues.extend(unit_sink.issues)

    runset.runs = assemble(fragments, sink)
    runset.issues = sink.issues
    if progress:
        progress("done", 1, 1)
    return runset
