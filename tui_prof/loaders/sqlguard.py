"""The one guarded way to query SQLite: rocpd, rocprof-compute analysis databases and
rocprof v1 ``results.db`` all open and query through here.

* **Read-only and immutable** (``mode=ro&immutable=1``): SQLite writes nothing beside the
  file (no ``-shm``, no checkpoint), and the file is first opened non-blocking and checked
  on its descriptor (a FIFO is refused, never waited on). The URI is built from the name's
  bytes, so a non-UTF-8 name or one holding ``?``/``#`` opens too.
* **A write-ahead log** is read from a private copy (:func:`private_copy`) holding only
  the log's valid committed frames (:func:`valid_wal_bytes`: header and frame checksums,
  salts, commit frames): a sparse ``-wal`` claiming 2 GB costs its valid frames, not 2 GB.
* **Bounds** (:class:`SqlGuard`, one per load, shared by its connections): the longest
  value (``SQLITE_LIMIT_LENGTH``), virtual-machine steps, **seconds** and **bytes of text**
  returned; the progress handler stops a query past any of them or on a cancel, and
  :meth:`SqlGuard.interrupted` says which, on one line.
* **Views** a loader reads are checked first (:func:`check_views`): a ``WITH`` (the only
  way to recurse), a function that builds a value of any size from a small argument
  (``printf``, ``format``, ``zeroblob``, ``randomblob``) or amplifies one (``replace``)
  is refused.
* **Text** is UTF-8 with replacement (counted in :attr:`SqlGuard.replaced`).
* **Rows** that do not convert are counted (:class:`RowErrors`), not fatal.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import struct
import threading
import time
import urllib.parse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tui_prof.guard.write import make_temp_dir, open_new, remove_temp_dir
from tui_prof.loaders.base import LoadCancelled, LoadError, cancel_event, open_regular

VALUE_FLOOR_BYTES = 64 << 20
"""No SQLite value (string or blob) may be longer than this plus the database's size: the
largest real value is one ``group_concat`` chunk of rocpd (2M integers of at most 21
characters: 42 MB) or text stored in the file; a view that computes a 900 MB value from a
1.6 MB file fails at once instead of exhausting memory."""
STEP_BUDGET_FLOOR = 20_000_000
STEP_BUDGET_PER_BYTE = 10
"""SQLite virtual-machine steps one load may take: the floor (a second or two of SQLite)
plus this many per byte of the database (real rocpd loads take 0.3 steps a byte)."""
TIME_BUDGET_FLOOR_S = 60.0
TIME_BUDGET_PER_MB_S = 1.0
"""Seconds of SQLite one load may take: the floor plus this many per MB of the database
(``TUIPROF_SQLITE_SECONDS`` sets a fixed budget). Steps alone do not bound time: one step
of a view can build a 60 MB intermediate value."""
TEXT_BUDGET_FLOOR_BYTES = 512 << 20
TEXT_BUDGET_PER_BYTE = 64
"""Bytes of text one load may receive from SQLite: the floor or this many per byte of the
database, whichever is more (real loads receive less than their file's size)."""
PROGRESS_STEPS = 10_000
"""SQLite calls the progress handler every this many steps (about 0.1 ms): a cancel is seen at once."""

# One left-to-right pass over a view's SQL, as SQLite's tokenizer reads it: a string literal,
# a quoted identifier ("x", [x], `x`) or a comment, whichever starts first (a quote inside a
# comment or a comment marker inside a string is not one).
_LEXEME = re.compile(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|`(?:[^`]|``)*`|\[[^\]]*\]|/\*.*?(?:\*/|\Z)|--[^\n]*""", re.S)
_CTE = re.compile(r"\bWITH\b", re.IGNORECASE)
# Functions that build a value of any size from a small argument (printf/format also spin for
# tens of seconds per call on a huge width, where no handler can stop them) or multiply one
# (replace: every match of a one-character pattern by a long string).
BUILDERS = re.compile(r"\b(printf|format|zeroblob|randomblob|replace)\s*\(", re.IGNORECASE)


def time_budget(size: int) -> float:
    """Seconds of SQLite a load of a ``size``-byte database may take."""
    text = os.environ.get("TUIPROF_SQLITE_SECONDS", "").strip()
    try:
        fixed = float(text) if text else 0.0
    except ValueError:
        fixed = 0.0
    return fixed if fixed > 0 else TIME_BUDGET_FLOOR_S + TIME_BUDGET_PER_MB_S * size / 1e6


class SqlGuard:
    """What every connection of one load shares: the step, time and text budgets, the
    cancel flag of the load (:func:`tui_prof.loaders.base.cancel_event`) and the count of
    text values that were not valid UTF-8 (decoded with U+FFFD in place of the bad bytes)."""

    def __init__(self, size: int):
        self.size = size
        self.budget = STEP_BUDGET_FLOOR + STEP_BUDGET_PER_BYTE * size
        self.seconds = time_budget(size)
        self.deadline = time.monotonic() + self.seconds
        self.text_budget = max(TEXT_BUDGET_FLOOR_BYTES, TEXT_BUDGET_PER_BYTE * size)
        self.text_bytes = 0
        self.steps = 0
        self.over: str | None = None  # "steps", "time" or "text" once a budget is spent
        self.cancel = cancel_event()
        self.replaced = 0
        self.lock = threading.Lock()

    def progress(self) -> int:
        """SQLite's progress handler: non-zero interrupts the running query."""
        self.steps += PROGRESS_STEPS  # unlocked: a lost update among reader threads only delays the bound
        if self.over is None:
            if self.steps > self.budget:
                self.over = "steps"
            elif time.monotonic() > self.deadline:
                self.over = "time"
        if self.over is not None:
            return 1
        cancel = self.cancel
        return 1 if cancel is not None and cancel.is_set() else 0

    def text(self, raw: bytes) -> str:
        """SQLite's text factory: UTF-8, or UTF-8 with replacement (counted); the bytes are
        counted against the text budget (the progress handler then stops the query)."""
        self.text_bytes += len(raw)
        if self.text_bytes > self.text_budget and self.over is None:
            self.over = "text"
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            with self.lock:
                self.replaced += 1
            return raw.decode("utf-8", errors="replace")

    def interrupted(self, err: sqlite3.Error) -> BaseException | None:
        """What an interrupted or oversized query means, or None for other errors."""
        message = str(err)
        if "interrupted" in message:
            if self.cancel is not None and self.cancel.is_set():
                return LoadCancelled()
            if self.over == "steps":
                return LoadError(
                    f"a query ran past {self.budget:,} SQLite steps ({STEP_BUDGET_PER_BYTE:,} per byte of this "
                    f"{self.size:,}-byte database): a view that does not end (a recursion or a cross join)? not read"
                )
            if self.over == "time":
                return LoadError(
                    f"SQLite ran past {self.seconds:.0f} s on this {self.size:,}-byte database (a view computing huge "
                    "values?): not read; set TUIPROF_SQLITE_SECONDS to allow more"
                )
            if self.over == "text":
                return LoadError(
                    f"SQLite returned more than {self.text_budget >> 20} MiB of text from a {self.size:,}-byte database (a view amplifies it): not read"
                )
        if "too big" in message:
            return LoadError(
                f"a value longer than {(VALUE_FLOOR_BYTES + self.size) >> 20} MiB from a {self.size:,}-byte database (a view computes it): not read"
            )
        return None

    def error(self, err: sqlite3.Error, what: str = "damaged SQLite database") -> BaseException:
        """:meth:`interrupted`, else a :class:`LoadError` naming ``what``."""
        return self.interrupted(err) or LoadError(f"{what} ({err})")


def uri(path: str | os.PathLike, immutable: bool = True) -> str:
    """The read-only URI of ``path`` from its bytes (a non-UTF-8 name, ``?``, ``#`` and ``%``
    are percent-encoded)."""
    query = "?mode=ro&immutable=1" if immutable else "?mode=ro"
    return "file:" + urllib.parse.quote(os.fsencode(os.path.abspath(os.fspath(path)))) + query


def connect(path: str | os.PathLike, check_same_thread: bool = True, guard: SqlGuard | None = None, immutable: bool = True) -> sqlite3.Connection:
    """Open ``path`` read-only (and immutable: SQLite writes nothing next to the file).

    The file is first opened non-blocking and checked to be a regular file on its
    descriptor (:func:`open_regular`), so a FIFO put in its place is refused, not waited
    on. ``guard``: the load's bounds (value length, steps, time, text, cancel, UTF-8
    replacement); without one (a sniffer's glance at the schema) the value length is
    still bounded. ``immutable=False`` is for a private copy that holds its write-ahead log."""
    with open_regular(os.fspath(path)):
        pass
    con = sqlite3.connect(uri(path, immutable), uri=True, check_same_thread=check_same_thread)
    size = guard.size if guard is not None else 0
    con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, VALUE_FLOOR_BYTES + size)
    if guard is not None:
        con.set_progress_handler(guard.progress, PROGRESS_STEPS)
        con.text_factory = guard.text
    else:
        con.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
    con.execute("PRAGMA query_only = 1")
    return con


def check_views(con: sqlite3.Connection, read_names: Iterable[str], writer: str) -> None:
    """Refuse a database where a view the loader reads (``read_names``, directly or through
    the views it names) holds a common table expression (``WITH``: a recursive one never
    ends) or calls a function of :data:`BUILDERS`; the profilers' own views do neither
    (rocprofv3's call count, min, max, sum and json_extract). Every other view is bounded
    by the budgets of :class:`SqlGuard`. ``writer``: the profiler, as the message names it.
    The tables read (directly or by those views) are checked for builders too: a generated
    column is computed on every read."""
    kinds: dict[str, str] = {}
    views: dict[str, str] = {}
    for kind, name, sql in con.execute("SELECT type, name, sql FROM sqlite_master WHERE type IN ('view', 'table')"):
        kinds[name], views[name] = kind, sql or ""
    lowered = {name.lower(): name for name in views}
    todo = [lowered[n.lower()] for n in read_names if n.lower() in lowered]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        code, quoted = _plain_sql(views[name])
        if kinds[name] == "view" and _CTE.search(_plain_sql(views[name], names=False)[0]):  # a quoted "with" is a name, not a clause
            raise LoadError(f"view {name} holds a WITH clause ({writer} writes none; a recursive one never ends): not read")
        builder = BUILDERS.search(code)
        if builder:
            raise LoadError(
                f"{kinds[name]} {name} calls {builder.group(1).lower()}() ({writer}'s {kinds[name]}s call none; it can build a value of any size): not read"
            )
        todo.extend(lowered[w.lower()] for w in [*re.findall(r"\w+", code), *quoted] if w.lower() in lowered)


def _plain_sql(sql: str, names: bool = True) -> tuple[str, list[str]]:
    """``sql`` with string literals emptied, comments made a space and quoted identifiers
    unquoted (``"printf"(`` and ``printf/**/(`` call printf as ``printf(`` does; ``names``
    False: each made ``_``), and the quoted identifiers (a view named ``"a view"``)."""
    quoted: list[str] = []

    def plain(match: re.Match[str]) -> str:
        text = match.group()
        if text[0] == "'":
            return "''"
        if text[0] in "/-":
            return " "
        name = text[1:-1].replace(text[0] * 2, text[0]) if text[0] != "[" else text[1:-1]
        quoted.append(name)
        return name if names else "_"

    return _LEXEME.sub(plain, sql), quoted


# --------------------------------------------------------------------------- rows


class RowErrors:
    """Counts the rows of each table whose values do not convert (a text timestamp, a
    NULL id): they are skipped and reported as one warning, the rest of the database loads."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def skip(self, table: str) -> None:
        self.counts[table] = self.counts.get(table, 0) + 1

    def warnings(self) -> list[str]:
        return [f"{n:,} row(s) of {table} skipped: a value of the wrong type (e.g. text where an integer belongs)" for table, n in self.counts.items()]


def as_int(value: Any) -> int:
    """``value`` as an exact integer: an int, a float that is whole, or decimal text;
    ValueError/TypeError otherwise (the caller counts the row)."""
    if isinstance(value, bool) or value is None:
        raise TypeError("not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")) or not value.is_integer():
            raise ValueError("not a whole number")
        return int(value)
    if isinstance(value, (str, bytes)):
        text = value.strip()
        if len(text) > 40:
            raise ValueError("not an integer")
        return int(text)
    raise TypeError("not an integer")


# --------------------------------------------------------------------------- write-ahead log

WAL_MAGIC = (0x377F0682, 0x377F0683)  # little-endian / big-endian checksums
_WAL_HEADER = 32
_FRAME_HEADER = 24


def _wal_checksum(data: bytes, big_endian: bool, s0: int, s1: int) -> tuple[int, int]:
    """SQLite's WAL checksum of ``data`` (a multiple of 8 bytes), continuing from (s0, s1)."""
    words = struct.unpack(f"{'>' if big_endian else '<'}{len(data) // 4}I", data)
    mask = 0xFFFFFFFF
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & mask
        s1 = (s1 + words[i + 1] + s0) & mask
    return s0, s1


def valid_wal_bytes(fh: Any, limit: int) -> int:
    """How many leading bytes of the write-ahead log ``fh`` hold a valid header and valid
    frames up to the last commit (checksums chained from the header, salts matching): the
    part SQLite would replay. 0 when the header is not valid. Reads at most ``limit`` bytes."""
    header = fh.read(_WAL_HEADER)
    if len(header) < _WAL_HEADER:
        return 0
    magic, _version, page_size, _seq, salt1, salt2, c0, c1 = struct.unpack(">8I", header)
    if magic not in WAL_MAGIC or page_size < 512 or page_size > 65536 or page_size & (page_size - 1):
        return 0
    big = magic & 1 == 1
    s0, s1 = _wal_checksum(header[:24], big, 0, 0)
    if (s0, s1) != (c0, c1):
        return 0
    valid = end = _WAL_HEADER
    frame = _FRAME_HEADER + page_size
    while end + frame <= limit:
        data = fh.read(frame)
        if len(data) < frame:
            break
        page, commit, f_salt1, f_salt2, f0, f1 = struct.unpack(">6I", data[:_FRAME_HEADER])
        if page == 0 or (f_salt1, f_salt2) != (salt1, salt2):
            break
        s0, s1 = _wal_checksum(data[:8], big, s0, s1)
        s0, s1 = _wal_checksum(data[_FRAME_HEADER:], big, s0, s1)
        if (s0, s1) != (f0, f1):
            break
        end += frame
        if commit:
            valid = end
    return valid if valid > _WAL_HEADER else 0


def private_copy(path: Path, wal: Path, limit: int) -> tuple[Path, Path, int]:
    """Copy the database and the valid committed part of its write-ahead log
    (:func:`valid_wal_bytes`, at most ``limit`` bytes) into a new private folder (0700) so
    SQLite can read the log without writing anything beside the original; returns (folder,
    copied database, bytes of log copied). The caller removes the folder
    (:func:`tui_prof.guard.write.remove_temp_dir`)."""
    folder = make_temp_dir("tuiprof-wal")
    copy = folder / "db.sqlite"
    try:
        with open_regular(wal) as src:
            keep = valid_wal_bytes(src, limit)
        with open_regular(path) as src, open_new(copy) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        if keep:
            with open_regular(wal) as src, open_new(Path(f"{copy}-wal")) as dst:
                left = keep
                while left:
                    block = src.read(min(left, 1 << 20))
                    if not block:
                        break
                    dst.write(block)
                    left -= len(block)
    except BaseException:
        remove_temp_dir(folder)
        raise
    return folder, copy, keep
