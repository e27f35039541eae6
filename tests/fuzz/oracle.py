"""Run one (mutated) run directory through ``tui_prof.loaders.load_path`` and check the
contract of issue 7. Returns a list of :class:`Violation`; empty means the case passed.

Hard violations (a test fails): ``exception`` (load_path or build_summary raised),
``loader-failed`` (detect.py's catch-all turned a loader exception into an issue for every
file of the format), ``bad-issue`` (message empty or not one line, or the path is not the
file), ``unraisable`` (an exception printed as "Exception ignored in ..." with a
traceback on stderr, e.g. from a callback inside a C extension), ``sibling`` (an unmutated file that loaded cleanly in the unmutated seed now has an
error), ``modified`` (a file in the run directory created/changed/removed), ``schema``
(a table lost its declared columns/dtypes), ``hang`` (over the time limit).
Soft findings (counted, reported): ``unclear`` (message is a bare Python exception repr),
``unmarked-partial`` (the mutated file has an error issue, contributed rows, and no run is
marked partial), ``memory`` (peak RSS grew by more than the limit).
"""

from __future__ import annotations

import hashlib
import os
import re
import resource
import shutil
import signal
import stat
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

from tui_prof.model.schema import TABLES, dtype_matches

HARD = ("exception", "unraisable", "loader-failed", "bad-issue", "sibling", "modified", "schema", "hang")
SOFT = ("unclear", "unmarked-partial", "memory")
EXCEPTION_REPR = re.compile(r"\b[A-Z]\w*(Error|Exception|Warning)\(")
VERBOSE = False  # print full tracebacks (bench/fuzz_run.py -v)
RUN_DIR_NAME = "run dir \u00fc\u540d"  # spaces and non-ASCII in every path


@dataclass
class Violation:
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


class Hang(BaseException):  # not an Exception: loaders catch those
    pass


def snapshot(root: Path) -> dict[str, tuple]:
    """relative path -> (type, size, mtime_ns, sha1) for everything under ``root``."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            digest = ""
            if stat.S_ISREG(st.st_mode):
                digest = hashlib.sha1(p.read_bytes()).hexdigest()
            out[str(p.relative_to(root))] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns, digest)
    return out


def write_run(base: Path, files: dict[str, bytes]) -> Path:
    root = base / RUN_DIR_NAME
    root.mkdir()
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def make_read_only(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            if not os.path.islink(Path(dirpath) / name):
                os.chmod(Path(dirpath) / name, 0o444)
        os.chmod(dirpath, 0o555)


def make_writable(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)


def _on_alarm(signum, frame):
    raise Hang()


def check_runset(root: Path, runset, mutated: set[str], good_before: set[str]) -> list[Violation]:
    """The contract checks on a loaded RunSet (see module doc)."""
    found: list[Violation] = []
    names_with_error = set()
    for issue in runset.issues:
        msg = issue.message
        rel = os.path.relpath(issue.path, root) if issue.path.startswith(str(root)) else None
        if " loader failed: " in msg:
            found.append(Violation("loader-failed", f"{rel}: {msg[:200]}"))
        if not msg.strip() or "\n" in msg or "\r" in msg or len(msg) > 400:
            found.append(Violation("bad-issue", f"{rel}: message not one short line: {msg[:120]!r}"))
        if rel is None or (rel != "." and not (root / rel).exists() and not (root / rel).is_symlink()):
            found.append(Violation("bad-issue", f"issue path is not a file of the run: {issue.path!r}"))
        if EXCEPTION_REPR.search(msg):
            found.append(Violation("unclear", f"{rel}: {msg[:200]}"))
        if issue.severity == "error" and rel:
            names_with_error.add(rel)
    for rel in sorted((names_with_error & good_before) - mutated):
        msgs = [i.message[:160] for i in runset.issues if i.path == str(root / rel)]
        found.append(Violation("sibling", f"{rel} loaded cleanly before, now: {msgs}"))
    for run in runset.runs:
        for name, spec in TABLES.items():
            table = run.table(name)
            if list(table.columns) != list(spec.columns):
                found.append(Violation("schema", f"{name} columns {list(table.columns)[:8]}"))
                continue
            for col, dtype in spec.columns.items():
                if not dtype_matches(dtype, table[col].dtype):
                    found.append(Violation("schema", f"{name}.{col} dtype {table[col].dtype} (want {dtype})"))
    contributed = {os.path.relpath(f, root) for run in runset.runs for f in run.meta.files}
    for rel in mutated & names_with_error & contributed:
        if not any(run.partial for run in runset.runs if str(root / rel) in run.meta.files):
            found.append(Violation("unmarked-partial", f"{rel}: error issue but its rows were kept and the run is not partial"))
    return found


def run_case(
    files: dict[str, bytes], mutated: set[str], good_before: set[str], *, summary: bool = True, time_limit: int = 60, memory_limit_mb: int = 1500
) -> tuple[list[Violation], object]:
    """Write ``files`` into a fresh read-only run directory (name with a space and
    non-ASCII), load it, check the contract. Returns (violations, runset or None)."""
    from tui_prof.loaders import load_path

    found: list[Violation] = []
    base = Path(tempfile.mkdtemp(prefix="tuiprof-fuzz-"))
    runset = None
    try:
        root = write_run(base, files)
        make_read_only(root)
        before = snapshot(root)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        unraisable: list[str] = []
        old_hook = sys.unraisablehook
        sys.unraisablehook = lambda u: unraisable.append(f"{type(u.exc_value).__name__}: {str(u.exc_value)[:120]} in {u.object!r:.80}")
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.alarm(time_limit)
        try:
            runset = load_path(root)
            if summary:
                from tui_prof.analysis.summary import build_summary

                build_summary(runset)
        except Hang:
            found.append(Violation("hang", f"no result within {time_limit} s"))
        except BaseException as err:  # any escape is the finding
            if isinstance(err, KeyboardInterrupt):
                raise
            tb = traceback.extract_tb(err.__traceback__)[-1]
            where = f"{Path(tb.filename).name}:{tb.lineno}"
            found.append(Violation("exception", f"{type(err).__name__}: {str(err)[:160]} at {where}"))
            if VERBOSE:
                traceback.print_exc()
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
            sys.unraisablehook = old_hook
        found.extend(Violation("unraisable", text) for text in unraisable[:3])
        grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024
        if grown_mb > memory_limit_mb:
            found.append(Violation("memory", f"peak RSS grew by {grown_mb:.0f} MB"))
        after = snapshot(root)
        if after != before:
            changed = sorted(set(before) ^ set(after) | {k for k in before if k in after and before[k] != after[k]})
            found.append(Violation("modified", f"run directory changed: {changed[:5]}"))
        if runset is not None:
            found.extend(check_runset(root, runset, mutated, good_before))
    finally:
        make_writable(base)
        shutil.rmtree(base, ignore_errors=True)
    return found, runset


def baseline_good(files: dict[str, bytes]) -> set[str]:
    """Files of an unmutated seed that contributed data and had no error issue."""
    from tui_prof.loaders import load_path

    base = Path(tempfile.mkdtemp(prefix="tuiprof-fuzz-base-"))
    try:
        root = write_run(base, files)
        runset = load_path(root)
        errors = {os.path.relpath(i.path, root) for i in runset.errors}
        used = {os.path.relpath(f, root) for run in runset.runs for f in run.meta.files}
        return used - errors
    finally:
        shutil.rmtree(base, ignore_errors=True)
