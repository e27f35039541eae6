"""What both exporters share: where they may write, and the analysis they export."""

from __future__ import annotations

import os
from pathlib import Path

from tui_prof.analysis.api import SummaryOptions, SummaryResult, summarise
from tui_prof.model import RunSet


class ExportError(Exception):
    """An export that cannot be done (a refused destination, an unknown table): one line for the user."""


def _resolved(path: str | os.PathLike) -> Path:
    """``path`` made absolute with symbolic links resolved, also where it does not exist yet."""
    return Path(os.path.realpath(os.path.abspath(os.fspath(path))))


def run_directory(run_root: str | os.PathLike) -> Path:
    """The folder tuiprof must not write into: the run directory, or the folder holding a
    run given as one file (profilers write a run's files side by side); a run that is not
    on disk (built in memory) protects only its own path."""
    root = _resolved(run_root)
    return root.parent if root.is_file() else root


def check_destination(out: str | os.PathLike, run_root: str | os.PathLike) -> Path:
    """``out`` made absolute with the links of its folder resolved but not its own name (a
    writer replaces a link there, never follows it), or :class:`ExportError` when it, or
    what a link there points at, lies inside the run directory of ``run_root``
    (:func:`run_directory`): tuiprof never writes into a run directory."""
    literal = Path(os.path.abspath(os.fspath(out)))
    target = _resolved(literal.parent) / literal.name if literal.name else literal
    run_dir = run_directory(run_root)
    if target.is_relative_to(run_dir) or _resolved(target).is_relative_to(run_dir):
        raise ExportError(
            f"refusing to write {os.fspath(out)!r}: it is inside the run directory of {os.fspath(run_root)!r} (tuiprof never writes into a run directory)"
        )
    return target


def analyse(runset: RunSet, gap_threshold_ns: int | None = None) -> SummaryResult:
    """:func:`~tui_prof.analysis.summary.summarise` with its defaults (the findings are the
    ones ``tuiprof summary`` prints): the document and the full gap sets behind its listed gaps."""
    return summarise(runset, SummaryOptions(gap_threshold_ns=gap_threshold_ns))


TRACE_SUFFIXES = (".gz", ".json", ".pt.trace", ".pftrace", ".perfetto-trace", ".proto", ".db", ".csv", ".txt")
"""File-name endings of profiler output, dropped from a run given as one file before an
export's own suffix is added ("x.pt.trace.json.gz" exports as "x.tuiprof.json.gz")."""


def _safe_stem(name: str) -> str:
    """``name`` as a file-name stem: the profiler's file endings (:data:`TRACE_SUFFIXES`)
    dropped, letters, digits, ``.``, ``_`` and ``-`` kept, the rest ``_``."""
    trimmed = True
    while trimmed:
        trimmed = False
        for suffix in TRACE_SUFFIXES:
            if name.lower().endswith(suffix) and len(name) > len(suffix):
                name, trimmed = name[: -len(suffix)], True
    stem = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in name).strip("._") or "run"
    return stem[:80]


def default_destination(run_root: str | os.PathLike, name: str, suffix: str, folder: str | os.PathLike | None = None) -> Path:
    """Where the TUI writes an export: ``<name><suffix>`` in ``folder`` (default: the current
    folder) when that is outside the run directory and writable, else in the temporary folder
    (``$TMPDIR``). A name taken by a file tuiprof did not write gets ``-1``, ``-2``, ... (the
    exporters replace only their own files)."""
    import tempfile

    base = _resolved(folder if folder is not None else os.getcwd())
    if base.is_relative_to(run_directory(run_root)) or not os.access(base, os.W_OK):
        base = _resolved(tempfile.gettempdir())
    stem = _safe_stem(name)
    candidate = base / f"{stem}{suffix}"
    for n in range(1, 1000):
        if not os.path.lexists(candidate):
            break
        candidate = base / f"{stem}-{n}{suffix}"
    return candidate
