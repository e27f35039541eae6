"""rocpd SQLite databases written by rocprofv3 (``--output-format rocpd``, ROCm 7.0+).

Schema: ``rocprofiler-sdk`` ``rocpd_tables.sql`` / ``data_views.sql`` (see formats.md §5).
Physical tables carry a per-file UUID suffix; the database also holds un-suffixed views
with the plain names (``rocpd_kernel_dispatch``, ``rocpd_region``, ``memory_copies`` ...).
Names are resolved through those views: where a view is exactly ``SELECT * FROM
<view>_<suffix>`` over an existing table (what rocprofv3 writes), the table itself is
queried (the *fast path*: same rows and order, and its ``NOT NULL`` columns need no NULL
guard); any other view (a merged database's ``UNION``, a filter) is queried as it is.
The file is opened read-only and immutable, so SQLite never creates a journal, WAL or
shm file next to it; a database with a non-empty ``-wal`` is read through a private copy
(:func:`load_db`). Hostile files are bounded (:class:`_Guard`, :func:`check_views`): no
view with ``WITH`` or a value-building function, values at most 64 MiB plus the file
size, a budget of SQLite steps, cancellation through the progress handler, and invalid
UTF-8 decoded with U+FFFD (counted in ``Run.warnings``).

Mapping (sources are the rocpd columns):

* one Run per ``rocpd_info_process`` row (hostname from ``rocpd_info_node``);
* ``agent`` columns = ``rocpd_info_agent.absolute_index`` (the KFD node id);
* ``correlation_id`` = ``rocpd_event.stack_id``, which is where rocprofv3 stores the
  *internal* correlation id (``generateRocpd.cpp``: ``stack_id = correlation_id.internal``,
  ``parent_stack_id = ancestor``, ``correlation_id = external``). It is the value that
  links an API region to the kernel/copy it launched and equals ``Correlation_Id`` in
  rocprofv3 CSV; the external id is kept in nothing but the ``corr_id`` view column;
* kernel name = ``rocpd_info_kernel_symbol.display_name`` (what the ``kernels`` and
  ``top_kernels`` views print), durations in ns exactly as stored.

Big tables are read with one ``group_concat`` per column and parsed with numpy. Measured
(CPU s, 1M dispatches, bench/bench_rocpd.py): ``fetchall`` of the 17 dispatch columns 2.7
against 1.5 this way (SQL 1.0 + parse 0.5); one ``printf`` row string or ``||`` per row
1.8 and 3.4; SQLite's cost is about 70 ns per value whatever its digits. The thin views
cost nothing over their tables (SQLite flattens ``SELECT *`` views); the LEFT JOIN to
``rocpd_event`` costs less than reading that 3M-row table and joining in numpy (about
0.07 against 0.5-0.7). Decoding the b-tree pages with numpy instead of SQL was tried and
dropped (3.5 against 1.7 for the dispatches). The id chunks of kernel dispatches and
regions are all queued on ``configured_workers()`` reader threads, one read-only connection each (SQLite
releases the GIL while it steps), before the first is awaited. Each ``group_concat`` comes
back as a blob (bytes for numpy, no UTF-8 decode: about 0.1 CPU-s less at 1M).
Measured and not kept: packing several small columns into one integer per row with SQL
arithmetic (1.09 against 1.20 CPU-s, and it needs range checks), ``json_group_array(
json_array(...))`` per row (1.0 + 0.6 parse against 1.1 + 0.3), ``PRAGMA mmap_size``
(within noise; a file truncated while mapped would kill the process), ``np.fromstring(...,
count=n)`` (fills a short text with garbage instead of failing), chunks of 256k-512k rows
for more tasks than tables (the concatenation's copy and page faults cost the main thread
0.2-0.5 CPU-s at 1M).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sqlite3
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from tui_prof.guard.write import remove_temp_dir
from tui_prof.loaders import sqlguard
from tui_prof.loaders.base import (
    DetectedFile,
    IssueSink,
    LoadError,
    Sniffed,
    api_domain,
    configured_workers,
    copy_direction,
    one_line,
    open_regular,
    read_error,
    replaced_warning,
)
from tui_prof.loaders.rocprofv3_json import agent_from_record, opt_int, recode
from tui_prof.loaders.specs import SPECS
from tui_prof.loaders.sqlguard import PROGRESS_STEPS, STEP_BUDGET_FLOOR, STEP_BUDGET_PER_BYTE, VALUE_FLOOR_BYTES, SqlGuard  # noqa: F401 (this module's bounds)
from tui_prof.model import Agent, Run, RunMeta
from tui_prof.model.schema import concat_tables, make_table

LOADER = SPECS["rocpd"]
FORMAT = LOADER.format

SQLITE_MAGIC = b"SQLite format 3\x00"
CHUNK_ROWS = 2_000_000  # rows per group_concat query (keeps each string well under SQLite's 1 GB limit); one reader task
SEP = "\x1f"  # separator for text group_concat (unit separator; never in names)


# Reader threads, each with its own connection (1: every query on the main one); None:
# configured_workers() (TUIPROF_LOAD_WORKERS, else the CPUs this process may use, at most 8).
THREADS: int | None = None

# A view that only renames one physical table, as rocprofv3 writes them (data_views.sql):
# CREATE VIEW `rocpd_region` AS SELECT * FROM `rocpd_region_<uuid>`
_PLAIN_VIEW = re.compile(
    r"\s*CREATE\s+VIEW\s+(?:IF\s+NOT\s+EXISTS\s+)?[`\"\[]?(\w+)[`\"\]]?\s+AS\s+SELECT\s+\*\s+FROM\s+[`\"\[]?(\w+)[`\"\]]?\s*;?\s*",
    re.IGNORECASE,
)


_Guard = SqlGuard  # the bounds of one load (tui_prof.loaders.sqlguard: steps, time, text, value length)


def connect(path: Path, check_same_thread: bool = True, guard: SqlGuard | None = None, immutable: bool = True) -> sqlite3.Connection:
    """:func:`tui_prof.loaders.sqlguard.connect`: read-only and immutable, bounded by ``guard``."""
    return sqlguard.connect(path, check_same_thread, guard, immutable)


def _schema_names(con: sqlite3.Connection) -> set[str]:
    return {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def _is_rocpd(names: set[str]) -> bool:
    return "rocpd_metadata" in names or any(re.match(r"rocpd_metadata_[0-9a-f_]{20,}$", n) for n in names)


def sniff(path: Path, head: bytes) -> Sniffed | None:
    """A SQLite file whose schema has a ``rocpd_metadata`` view or suffixed table."""
    if not head.startswith(SQLITE_MAGIC):
        return None
    try:
        con = connect(path)
        try:
            names = _schema_names(con)
        finally:
            con.close()
    except sqlite3.Error:
        # Unreadable schema (truncated/corrupt): claim it only when the first page names
        # rocpd tables, so load() can report what is wrong.
        return Sniffed("rocpd_db", str(path)) if b"rocpd_metadata" in head else None
    return Sniffed("rocpd_db", str(path)) if _is_rocpd(names) else None


def load(files: list[DetectedFile], issues: IssueSink) -> list[Run]:
    return load_databases(files, issues, load_db, "rocpd database")


def load_databases(files: list[DetectedFile], issues: IssueSink, load_one: Callable[[Path], list[Run]], what: str) -> list[Run]:
    """The runs of each SQLite database in ``files`` read by ``load_one``; a database that
    cannot be read is one issue naming it (``what``: "rocpd database"), the others still load."""
    runs: list[Run] = []
    for item in files:
        try:
            runs.extend(load_one(item.path))
        except LoadError as err:
            issues.error(item.path, str(err))
        except OSError as err:
            issues.error(item.path, read_error(err))
        except (sqlite3.Error, ValueError, KeyError, TypeError, OverflowError, MemoryError) as err:
            issues.error(item.path, f"cannot read {what}: {one_line(str(err) or type(err).__name__)}")
    return runs


# --------------------------------------------------------------------------- helpers


def _rows(con: sqlite3.Connection, sql: str, params: tuple = ()) -> list[tuple]:
    return con.execute(sql, params).fetchall()


def _columns(con: sqlite3.Connection, name: str) -> set[str]:
    return {row[1] for row in con.execute(f"PRAGMA table_info(`{name}`)")}


def physical_tables(con: sqlite3.Connection) -> dict[str, str]:
    """``view name -> physical table`` for every view that is exactly ``SELECT * FROM
    <view>_<suffix>`` over a table of the database; other views are not listed."""
    tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    found = {}
    for name, sql in con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'view'"):
        match = _PLAIN_VIEW.fullmatch(sql or "")
        if match and match.group(1) == name and match.group(2) in tables and match.group(2).startswith(name + "_"):
            found[name] = match.group(2)
    return found


def _not_null(con: sqlite3.Connection, source: str) -> set[str]:
    """Columns declared NOT NULL in ``source`` (a table; a view reports none)."""
    return {row[1] for row in con.execute(f"PRAGMA table_info({source})") if row[3]}


class _Readers:
    """Threads that each query ``path`` through their own read-only connection (SQLite
    releases the GIL while it steps, so the queries run on several cores at once)."""

    def __init__(self, path: Path, threads: int, guard: _Guard | None = None, immutable: bool = True):
        self.path = path
        self.guard = guard
        self.immutable = immutable
        self.pool = ThreadPoolExecutor(threads)
        self.local = threading.local()
        self.connections: list[sqlite3.Connection] = []
        self.lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        con = getattr(self.local, "con", None)
        if con is None:
            con = connect(self.path, check_same_thread=False, guard=self.guard, immutable=self.immutable)  # closed by close()
            with self.lock:
                self.connections.append(con)
            self.local.con = con
        return con

    def submit(self, func, *args):
        """``func(connection, *args)`` on a reader thread; returns its future."""
        return self.pool.submit(lambda: func(self._connection(), *args))

    def close(self) -> None:
        """Stop: queued chunks are dropped, running ones interrupted (only after an error is
        anything left), then every connection is closed."""
        self.pool.shutdown(wait=False, cancel_futures=True)  # first, so no queued chunk starts after the interrupt
        with self.lock:
            for con in self.connections:
                con.interrupt()
        self.pool.shutdown(wait=True)
        for con in self.connections:
            con.close()


class _Done:
    """A result already computed, with the ``result()`` of a future."""

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def _chunks(con: sqlite3.Connection, table: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """Inclusive id ranges of ``table`` (ids ``lo`` to ``hi``) holding at most CHUNK_ROWS
    rows each, found from the ids that exist (one ``OFFSET`` walk per chunk, only when the
    ids span more than CHUNK_ROWS): a row with id 9e18 adds one range, not 4.5e12."""
    if hi - lo < CHUNK_ROWS:
        return [(lo, hi)]
    starts = [lo]
    while True:
        row = con.execute(f"SELECT id FROM {table} WHERE id > ? ORDER BY id LIMIT 1 OFFSET ?", (starts[-1], CHUNK_ROWS - 1)).fetchone()
        if row is None or row[0] is None:
            break
        starts.append(int(row[0]))
    return [(a, b - 1) for a, b in itertools.pairwise(starts)] + [(starts[-1], hi)]


def _int_columns(
    con: sqlite3.Connection, base: str, exprs: list[str], where: str, params: tuple, not_null: frozenset[str] = frozenset(), readers: _Readers | None = None
) -> Callable[[], list[np.ndarray]]:
    """Integer columns of ``SELECT exprs FROM base WHERE where``; NULL reads as -1.
    Returns a function that waits for them and returns them (a list of int64 arrays).

    ``base`` names its main table ``X``, whose ``id`` (primary key) splits the rows into
    chunks of CHUNK_ROWS; each chunk is one query (see :func:`_int_chunk`), run on
    ``readers`` when given (all queued at once), else on ``con`` right away.
    """
    table = base.split()[0]
    lo, hi = con.execute(f"SELECT MIN(id), MAX(id) FROM {table}").fetchone()  # primary key: O(1)
    if lo is None:
        return lambda: [np.empty(0, dtype=np.int64) for _ in exprs]
    fast = [f"CAST(group_concat({e}) AS BLOB)" if e.startswith("X.") and e[2:] in not_null else f"CAST(group_concat(IFNULL({e}, -1)) AS BLOB)" for e in exprs]
    tail = f"FROM {base} WHERE {where} AND X.id >= ? AND X.id <= ?"
    chunks = [params + bounds for bounds in _chunks(con, table, int(lo), int(hi))]
    if readers is None:
        parts = [_Done(_int_chunk(con, table, exprs, fast, tail, chunk)) for chunk in chunks]
    else:
        parts = [readers.submit(_int_chunk, table, exprs, fast, tail, chunk) for chunk in chunks]

    def gather() -> list[np.ndarray]:
        columns = [part.result() for part in parts]
        if len(columns) == 1:
            return columns[0]
        return [np.concatenate([c[i] for c in columns]) for i in range(len(exprs))]

    return gather


def _int_chunk(con: sqlite3.Connection, table: str, exprs: list[str], fast: list[str], tail: str, chunk: tuple) -> list[np.ndarray]:
    """One chunk of :func:`_int_columns`: one ``group_concat`` per column (returned as a
    blob: bytes, no UTF-8 decode), with ``IFNULL(e, -1)`` except for ``NOT NULL`` table
    columns. A column whose text does not parse as one integer per row (a REAL or TEXT
    value) is read again with ``CAST(... AS INTEGER)``, which is slower but exact for integers."""
    count, *texts = con.execute(f"SELECT COUNT(*), {', '.join(fast)} {tail}", chunk).fetchone()
    arrays = [_parse_ints(t) for t in texts]
    del texts
    bad = [i for i, a in enumerate(arrays) if len(a) != count]
    if bad:
        safe = ", ".join(f"CAST(group_concat(IFNULL(CAST({exprs[i]} AS INTEGER), -1)) AS BLOB)" for i in bad)
        for i, text in zip(bad, con.execute(f"SELECT {safe} {tail}", chunk).fetchone()):
            arrays[i] = _parse_ints(text)
            if len(arrays[i]) != count:
                raise LoadError(f"non-integer values in {table} ({exprs[i]})")
    return arrays


def _text_columns(con: sqlite3.Connection, base: str, exprs: list[str], where: str, params: tuple) -> list[np.ndarray]:
    """Text columns of ``SELECT exprs FROM base WHERE where`` (NULL reads as ""), read in
    the same id chunks and row order as :func:`_int_columns`."""
    table = base.split()[0]
    lo, hi = con.execute(f"SELECT MIN(id), MAX(id) FROM {table}").fetchone()
    parts: list[list[str]] = [[] for _ in exprs]
    if lo is None:
        return [np.empty(0, dtype=object) for _ in exprs]
    select = ", ".join(f"group_concat(IFNULL(CAST({e} AS TEXT), ''), char(31))" for e in exprs)
    for bounds in _chunks(con, table, int(lo), int(hi)):
        sql = f"SELECT COUNT(*), {select} FROM {base} WHERE {where} AND X.id >= ? AND X.id <= ?"
        count, *texts = con.execute(sql, params + bounds).fetchone()
        for i, text in enumerate(texts):
            values = text.split(SEP) if count else []
            if len(values) != count:
                raise LoadError(f"text column {exprs[i]} of {table} holds the separator character")
            parts[i].extend(values)
    return [np.array(p, dtype=object) for p in parts]


def _parse_ints(text: bytes | str | None) -> np.ndarray:
    """Parse "1,2,-1" into int64 exactly (numpy's integer scanner, no float round trip);
    text that is not all integers parses short (or empty), which the caller detects."""
    if not text:
        return np.empty(0, dtype=np.int64)
    if _NUMPY_RAISES:  # numpy >= 2 raises on bad text; no warning filter (a global, unsafe in loader threads)
        try:
            return np.fromstring(text, dtype=np.int64, sep=",")
        except ValueError:
            return np.empty(0, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # numpy < 2 warns and returns the parsed prefix
        try:
            return np.fromstring(text, dtype=np.int64, sep=",")
        except ValueError:
            return np.empty(0, dtype=np.int64)


_NUMPY_RAISES = int(np.__version__.split(".")[0]) >= 2


DENSE_IDS = 1 << 22  # ids up to this are mapped through a dense array (an index per row), larger ones by binary search


def _positions(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each of ``values``: its index in the sorted unique ``keys`` and whether it is there."""
    if len(keys) and keys[0] >= 0 and keys[-1] < DENSE_IDS:
        dense = np.full(int(keys[-1]) + 1, -1, dtype=np.int64)
        dense[keys] = np.arange(len(keys))
        pos = dense[np.clip(values, 0, len(dense) - 1)]
        found = (pos >= 0) & (values >= 0) & (values < len(dense))
        return np.maximum(pos, 0), found
    pos = np.clip(np.searchsorted(keys, values), 0, max(len(keys) - 1, 0))
    return pos, (keys[pos] == values) if len(keys) else np.zeros(len(values), dtype=bool)


def _lookup(values: np.ndarray, mapping: dict[int, int], default: int = -1) -> np.ndarray:
    """Map integer ``values`` through ``mapping``; values not in it become ``default``."""
    if not len(values):
        return values.astype(np.int64)
    if not mapping:
        return np.full(len(values), default, dtype=np.int64)
    keys = np.array(sorted(mapping), dtype=np.int64)
    mapped = np.array([mapping[k] for k in keys.tolist()], dtype=np.int64)
    pos, found = _positions(keys, values)
    return np.where(found, mapped[pos], default)


def _categorical(ids: np.ndarray, names: dict[int, str]) -> pd.Categorical:
    """A categorical of ``names[id]`` per row ("" for unknown ids), built without a str per
    row; categories in order of first id, unused ones dropped."""
    keys = np.array(sorted(names), dtype=np.int64)
    labels = [names[k] for k in keys.tolist()]
    uniq = list(dict.fromkeys(labels + [""]))
    label_code = {label: i for i, label in enumerate(uniq)}
    key_codes = np.array([label_code[label] for label in labels], dtype=np.int64)
    empty = label_code[""]
    if not len(keys):
        codes = np.full(len(ids), empty, dtype=np.int64)
    else:
        pos, found = _positions(keys, ids)
        codes = np.where(found, key_codes[pos], empty)
    used = np.bincount(codes, minlength=len(uniq)) > 0  # drop unused categories in O(rows), no sort
    renumber = np.cumsum(used) - 1
    return pd.Categorical.from_codes(renumber[codes], categories=[u for u, keep in zip(uniq, used.tolist()) if keep])


def _json(text) -> dict:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


# --------------------------------------------------------------------------- loading


def _check_size(path: Path) -> int:
    """Compare the file size with the SQLite header (page size at byte 16, page count at
    28); returns the size. The file is opened non-blocking and checked on its descriptor."""
    try:
        with open_regular(path) as fh:
            header = fh.read(100)
            size = os.fstat(fh.fileno()).st_size
    except OSError as err:
        raise LoadError(read_error(err)) from None
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        raise LoadError(f"not a complete SQLite database ({size} bytes, header missing)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    valid = header[24:28] == header[92:96]  # the page count is valid only when these match
    if valid and pages and size < page_size * pages:
        raise LoadError(f"truncated SQLite database: {size} bytes, header says {pages} pages x {page_size} = {pages * page_size} bytes")
    return size


# Names the loader reads (the rocpd views and the one data view it queries).
READ_NAMES = (
    "rocpd_metadata",
    "rocpd_string",
    "rocpd_info_node",
    "rocpd_info_thread",
    "rocpd_info_process",
    "rocpd_info_agent",
    "rocpd_info_kernel_symbol",
    "rocpd_kernel_dispatch",
    "rocpd_region",
    "rocpd_event",
    "rocpd_memory_copy",
    "rocpd_memory_allocate",
    "rocpd_arg",
    "rocpd_pmc_event",
    "counters_collection",
)


def check_views(con: sqlite3.Connection) -> None:
    """:func:`tui_prof.loaders.sqlguard.check_views` for the views this loader reads."""
    sqlguard.check_views(con, READ_NAMES, "rocprofv3")


def wal_file(path: Path) -> Path | None:
    """The write-ahead log beside ``path`` when it holds anything (committed rows that an
    immutable open would not see), else None."""
    wal = Path(f"{path}-wal")
    try:
        return wal if wal.is_file() and wal.stat().st_size > 0 else None
    except OSError:
        return None


def _private_copy(path: Path, wal: Path) -> tuple[Path, Path]:
    """The database and the valid committed frames of its write-ahead log copied into a new
    private folder (:func:`tui_prof.loaders.sqlguard.private_copy`); returns (folder, copied
    database). The caller removes the folder."""
    folder, copy, _kept = sqlguard.private_copy(path, wal, WAL_LIMIT_FLOOR + WAL_LIMIT_PER_BYTE * os.stat(path).st_size)
    return folder, copy


WAL_LIMIT_FLOOR = 256 << 20
WAL_LIMIT_PER_BYTE = 16
"""Bytes of a write-ahead log checked and copied at most: the floor or 16 times the database."""


def load_db(path: Path, physical: bool = True) -> list[Run]:
    """All processes recorded in one rocpd database, one Run each.

    ``physical=False`` queries every table through its un-suffixed view (the reference
    path the fast path is tested against).

    A database with a non-empty ``-wal`` beside it (written in WAL mode and not
    checkpointed) is copied with the valid committed frames of its log into a private
    temporary folder and the copy is read (an immutable open ignores the log: half the rows
    would be missing; a sparse or damaged log costs only its valid frames); the copy is
    removed afterwards. Nothing is written beside the original."""
    path = Path(path)
    size = _check_size(path)
    wal = wal_file(path)
    folder: Path | None = None
    source = path
    try:
        if wal is not None:
            try:
                folder, source = _private_copy(path, wal)
            except OSError as err:
                raise LoadError(f"cannot copy the database and its write-ahead log to read them: {read_error(err)}") from None
            size += os.stat(f"{source}-wal").st_size if os.path.exists(f"{source}-wal") else 0
        return _load_source(source, path, size, physical, immutable=wal is None)
    finally:
        if folder is not None:
            remove_temp_dir(folder)


def _load_source(path: Path, original: Path, size: int, physical: bool, immutable: bool) -> list[Run]:
    """Read ``path`` (``original`` or its private copy) under one :class:`_Guard`."""
    guard = _Guard(size)
    try:
        con = connect(path, guard=guard, immutable=immutable)
    except sqlite3.Error as err:
        raise LoadError(f"cannot open SQLite database: {err}") from None
    except OSError as err:
        raise LoadError(read_error(err)) from None
    try:
        try:
            names = _schema_names(con)
        except sqlite3.DatabaseError as err:
            raise LoadError(f"damaged SQLite database ({err})") from None
        if not _is_rocpd(names):
            raise LoadError("SQLite database without rocpd tables (no rocpd_metadata); not rocprofv3 rocpd output")
        missing = [v for v in ("rocpd_info_process", "rocpd_info_agent") if v not in names]
        if missing:
            raise LoadError(f"rocpd database lacks the un-suffixed view(s) {', '.join(missing)}")
        check_views(con)
        threads = THREADS or configured_workers()
        readers = _Readers(path, threads, guard, immutable) if threads > 1 else None
        try:
            runs = _load(con, original, names, physical_tables(con) if physical else {}, readers)
        except sqlite3.DatabaseError as err:
            meaning = guard.interrupted(err)
            if meaning is not None:
                raise meaning from None
            raise LoadError(f"damaged rocpd database ({err})") from None
        finally:
            if readers is not None:
                readers.close()
        if guard.replaced:
            for run in runs:
                run.warnings.append(replaced_warning(guard.replaced, "rocpd text values (names, hostnames, symbols)"))
        return runs
    finally:
        con.close()


def _load(con: sqlite3.Connection, path: Path, names: set[str], physical: dict[str, str], readers: _Readers | None) -> list[Run]:
    def src(view: str) -> str:
        return f"`{physical.get(view, view)}`"

    metadata = {str(tag): str(value) for tag, value in _rows(con, f"SELECT tag, value FROM {src('rocpd_metadata')}")} if "rocpd_metadata" in names else {}
    strings = {int(i): str(s) for i, s in _rows(con, f"SELECT id, string FROM {src('rocpd_string')}")} if "rocpd_string" in names else {}
    hostnames = {}
    if "rocpd_info_node" in names:
        hostnames = {int(i): h or "" for i, h in _rows(con, f"SELECT id, hostname FROM {src('rocpd_info_node')}")}
    threads: dict[int, int] = {}
    if "rocpd_info_thread" in names:
        threads = {int(i): int(t) for i, t in _rows(con, f"SELECT id, tid FROM {src('rocpd_info_thread')}")}
    processes = _rows(con, f"SELECT id, guid, nid, pid, command, environment, extdata, start, end FROM {src('rocpd_info_process')} ORDER BY id")
    if not processes:
        raise LoadError("rocpd database has no process (rocpd_info_process is empty)")
    guids = {row[1] for row in processes}

    runs = []
    for proc_id, guid, nid, pid, command, environment, extdata, start, end in processes:
        # Several guids (merged databases) share the id space: filter every query by guid.
        params: tuple[object, ...]
        if len(processes) == 1:
            where, params = "1 = 1", ()  # the only process: every row is its own (saves a filter per row)
        elif len(guids) == 1:
            where, params = "X.pid = ?", (proc_id,)
        else:
            where, params = "X.pid = ? AND X.guid = ?", (proc_id, guid)
        agents, agent_index = _agents(con, src("rocpd_info_agent"), proc_id, guid if len(guids) > 1 else None)
        run = Run(meta=RunMeta(formats=[FORMAT], tool="rocprofv3", hostname=hostnames.get(int(nid), ""), pid=int(pid)))
        run.meta.command = command or ""
        run.meta.files = [str(path)]
        run.meta.label = f"{run.meta.hostname}/{pid}" if run.meta.hostname else str(pid)
        run.meta.extra.update(_meta_extra(metadata, environment, extdata, start, end))
        run.meta.tool_version = metadata.get("version", "") or metadata.get("rocprofiler_sdk_version", "")
        run.agents = agents
        ctx = _Context(con, names, physical, strings, threads, agent_index, where, params, int(pid), readers)
        # Queue the chunks of both big tables before waiting for the first (readers: all at once).
        for view, cols in (("rocpd_kernel_dispatch", KERNEL_COLUMNS), ("rocpd_region", REGION_COLUMNS)):
            if view in names:
                ctx.prefetch(view, cols)
        if readers is not None and ("rocpd_region", tuple(REGION_COLUMNS)) in ctx.pending:
            # The regions' numpy work beside the kernels' (it waits for its chunks; no ctx.con use).
            with ThreadPoolExecutor(1) as side:
                regions = side.submit(_regions, ctx)
                run.kernels = _kernels(ctx)
                run.api, run.markers = regions.result()
        else:
            run.kernels = _kernels(ctx)
            run.api, run.markers = _regions(ctx)
        run.copies = _copies(ctx)
        run.allocations, run.scratch = _allocations(ctx)
        run.allocations = concat_tables("allocations", [run.allocations, _api_allocations(ctx)])
        run.counters = _counters(ctx)
        runs.append(run)
    return runs


def _meta_extra(metadata: dict, environment, extdata, start, end) -> dict:
    extra = {
        "rocpd_schema_version": metadata.get("schema_version", ""),
        "rocpd_guid": metadata.get("guid", ""),
        "process_start_ns": opt_int(start),
        "process_end_ns": opt_int(end),
        "rocprofv3_config": _json(extdata),
    }
    env = _json(environment)
    # The ROCm install the tool was loaded from, e.g. /opt/rocm-7.1.1/lib/... -> "7.1.1".
    found = re.search(r"/rocm-(\d+\.\d+(?:\.\d+)?)/", str(env.get("ROCP_TOOL_LIBRARIES", "")) + str(env.get("LD_PRELOAD", "")))
    if found:
        extra["rocm_version_from_env"] = found.group(1)
    rank = environment_rank(env)
    if rank:
        extra["rank_env"] = rank
    return extra


RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK", "PMIX_RANK")
"""Environment variables that hold a process's global rank, in the order they are trusted:
torchrun/torch.distributed, Open MPI, Slurm, MPICH/Intel MPI (PMI), PMIx."""
LOCAL_RANK_VARIABLES = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID")
"""... and its rank on its node."""


def environment_rank(env: dict) -> dict:
    """``{"rank", "variable"[, "local_rank", "local_variable"]}`` from a process's recorded
    environment (rocpd ``rocpd_info_process.environment``): the first of RANK_VARIABLES that
    holds a non-negative integer; empty when none does."""
    out: dict = {}
    for key, names in (("rank", RANK_VARIABLES), ("local_rank", LOCAL_RANK_VARIABLES)):
        for name in names:
            value = env.get(name)
            text = value.strip() if isinstance(value, str) else ""
            if text.isascii() and text.isdigit() and len(text) < 10:
                out[key] = int(text)
                out["variable" if key == "rank" else "local_variable"] = name
                break
    return out if "rank" in out else {}


class _Context:
    """What every table query of one process needs."""

    def __init__(self, con, names, physical, strings, threads, agent_index, where, params, pid, readers=None):
        self.con = con
        self.readers = readers  # reader threads for the big tables' chunks, or None
        self.names = names
        self.physical = physical  # view name -> physical table (fast path); empty: views only
        self.strings = strings
        self.threads = threads
        self.agent_index = agent_index  # rocpd_info_agent.id -> absolute_index
        self.where = where
        self.params = params
        self.pid = pid
        self.pending: dict[tuple, Callable[[], list[np.ndarray]]] = {}  # (view, columns) -> what prefetch() queued

    def prefetch(self, view: str, exprs: list[str]) -> None:
        """Start reading what ``ints(view, exprs)`` will return (on the reader threads)."""
        try:
            self.pending[(view, tuple(exprs))] = self._start(view, exprs)
        except sqlite3.DatabaseError:
            pass  # raised again by ints(), in table order, so a damaged file reports the first table it breaks

    def src(self, view: str) -> str:
        """What to query for ``view``: its physical table where the view is plain, else the view."""
        return f"`{self.physical.get(view, view)}`"

    def base(self, view: str) -> str:
        """``view`` as ``X`` joined with its ``rocpd_event`` row as ``E`` (the views' own join)."""
        return f"{self.src(view)} X LEFT JOIN {self.src('rocpd_event')} E ON E.id = X.event_id AND E.guid = X.guid"

    def ints(self, view: str, exprs: list[str]) -> list[np.ndarray]:
        """Integer columns ``exprs`` of this process's rows of ``view`` (see :func:`_int_columns`)."""
        gather = self.pending.pop((view, tuple(exprs)), None) or self._start(view, exprs)
        return gather()

    def _start(self, view: str, exprs: list[str]) -> Callable[[], list[np.ndarray]]:
        not_null = frozenset(_not_null(self.con, self.src(view))) if view in self.physical else frozenset()
        return _int_columns(self.con, self.base(view), exprs, self.where, self.params, not_null, self.readers)

    def tids(self, ids: np.ndarray) -> np.ndarray:
        """rocpd_info_thread.id -> OS thread id."""
        return _lookup(ids, self.threads)

    def agents(self, ids: np.ndarray) -> np.ndarray:
        return _lookup(ids, self.agent_index)


def _agents(con: sqlite3.Connection, source: str, proc_id: int, guid: str | None) -> tuple[list[Agent], dict[int, int]]:
    sql = (
        "SELECT id, type, absolute_index, logical_index, type_index, name, model_name, vendor_name, "
        f"product_name, user_name, extdata FROM {source} WHERE pid = ?"
    )
    params: tuple = (proc_id,)
    if guid is not None:
        sql += " AND guid = ?"
        params += (guid,)
    rows = _rows(con, sql + " ORDER BY absolute_index", params)
    if not rows:  # agent rows not tied to this process row: use every agent of the file
        rows = _rows(con, sql.replace("WHERE pid = ?", "WHERE ?1 = ?1") + " ORDER BY absolute_index", params)
    agents: list[Agent] = []
    index: dict[int, int] = {}
    for row_id, kind, absolute, logical, type_index, name, model, vendor, product, user_name, extdata in rows:
        ext = _json(extdata)
        node = opt_int(absolute)
        if node is None:
            node = opt_int(ext.get("node_id"))
        if node is None:
            node = int(row_id)
        index[int(row_id)] = node
        agents.append(
            agent_from_record(
                ext,
                node,
                kind=str(kind or ""),
                name=name or "",
                product=product or "",
                vendor=vendor or "",
                logical_index=opt_int(logical),
                type_index=opt_int(type_index),
                extra={"model_name": model or "", "user_name": user_name or ""},
            )
        )
    return agents, index


KERNEL_COLUMNS = [
    "X.start",
    "X.end",
    "X.agent_id",
    "X.queue_id",
    "X.stream_id",
    "X.tid",
    "E.stack_id",
    "X.dispatch_id",
    "X.kernel_id",
    "X.grid_size_x",
    "X.grid_size_y",
    "X.grid_size_z",
    "X.workgroup_size_x",
    "X.workgroup_size_y",
    "X.workgroup_size_z",
    "X.group_segment_size",
    "X.private_segment_size",
]
REGION_COLUMNS = ["X.start", "X.end", "X.tid", "E.stack_id", "E.category_id", "X.name_id"]


def _kernels(ctx: _Context) -> pd.DataFrame:
    """``rocpd_kernel_dispatch`` + ``rocpd_event.stack_id`` + kernel symbol (display_name, registers)."""
    cols = KERNEL_COLUMNS
    if "rocpd_kernel_dispatch" not in ctx.names:
        return make_table("kernels", {})
    v = dict(zip([c.split(".")[1] for c in cols], ctx.ints("rocpd_kernel_dispatch", cols)))
    symbols: dict[int, tuple[str, int | None, int | None, int | None]] = {}
    if "rocpd_info_kernel_symbol" in ctx.names:
        for sid, display, kname, vgpr, agpr, sgpr in _rows(
            ctx.con, f"SELECT id, display_name, kernel_name, arch_vgpr_count, accum_vgpr_count, sgpr_count FROM {ctx.src('rocpd_info_kernel_symbol')}"
        ):
            symbols[int(sid)] = (display or kname or "", opt_int(vgpr), opt_int(agpr), opt_int(sgpr))
    kid = v["kernel_id"]

    def reg(i: int) -> dict[int, int]:
        return {k: value for k, s in symbols.items() if (value := s[i]) is not None and not isinstance(value, str)}

    return make_table(
        "kernels",
        {
            "start": v["start"],
            "end": v["end"],
            "agent": ctx.agents(v["agent_id"]),
            "queue": v["queue_id"],
            "stream": v["stream_id"],
            "pid": np.full(len(kid), ctx.pid, dtype=np.int64),
            "tid": ctx.tids(v["tid"]),
            "correlation_id": v["stack_id"],
            "dispatch_id": v["dispatch_id"],
            "kernel_id": kid,
            "name": _categorical(kid, {k: s[0] for k, s in symbols.items()}),
            "grid_x": v["grid_size_x"],
            "grid_y": v["grid_size_y"],
            "grid_z": v["grid_size_z"],
            "wg_x": v["workgroup_size_x"],
            "wg_y": v["workgroup_size_y"],
            "wg_z": v["workgroup_size_z"],
            "lds_bytes": v["group_segment_size"],
            "scratch_bytes": v["private_segment_size"],
            "arch_vgpr": _lookup(kid, reg(1)),
            "accum_vgpr": _lookup(kid, reg(2)),
            "sgpr": _lookup(kid, reg(3)),
        },
    )


def _regions(ctx: _Context) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``rocpd_region`` -> api table (every category) and markers table (MARKER_* categories)."""
    if "rocpd_region" not in ctx.names:
        return make_table("api", {}), make_table("markers", {})
    start, end, tid, stack, category_id, name_id = ctx.ints("rocpd_region", REGION_COLUMNS)
    domain = recode(_categorical(category_id, ctx.strings), api_domain)
    tids = ctx.tids(tid)
    name = _categorical(name_id, ctx.strings)
    api = make_table(
        "api",
        {"start": start, "end": end, "domain": domain, "name": name, "pid": np.full(len(start), ctx.pid, dtype=np.int64), "tid": tids, "correlation_id": stack},
    )
    categories = list(domain.categories)
    is_marker = np.asarray(domain.codes) == (categories.index("marker") if "marker" in categories else -2)
    markers = make_table(
        "markers",
        {
            "start": start[is_marker],
            "end": end[is_marker],
            "name": pd.Series(name)[is_marker].astype(str).to_numpy(),
            "source": "roctx",
            "pid": np.full(int(is_marker.sum()), ctx.pid, dtype=np.int64),
            "tid": tids[is_marker],
        },
    )
    return api, markers


def _copies(ctx: _Context) -> pd.DataFrame:
    """``rocpd_memory_copy``; direction from the source/destination agent types."""
    if "rocpd_memory_copy" not in ctx.names:
        return make_table("copies", {})
    cols = ["X.start", "X.end", "X.size", "X.src_agent_id", "X.dst_agent_id", "X.queue_id", "X.stream_id", "X.tid", "E.stack_id", "X.name_id"]
    start, end, size, src, dst, queue, stream, tid, stack, name_id = ctx.ints("rocpd_memory_copy", cols)
    types = {int(i): str(t or "") for i, t in _rows(ctx.con, f"SELECT id, type FROM {ctx.src('rocpd_info_agent')}")}
    src_abs, dst_abs = ctx.agents(src), ctx.agents(dst)
    src_type = _categorical(src, types).astype(str)
    dst_type = _categorical(dst, types).astype(str)
    return make_table(
        "copies",
        {
            "start": start,
            "end": end,
            "bytes": size,
            "direction": copy_direction(np.asarray(src_type), np.asarray(dst_type), src_abs, dst_abs),
            "src_agent": src_abs,
            "dst_agent": dst_abs,
            "queue": queue,
            "stream": stream,
            "pid": np.full(len(start), ctx.pid, dtype=np.int64),
            "tid": ctx.tids(tid),
            "correlation_id": stack,
            "name": _categorical(name_id, ctx.strings),
        },
    )


def _allocations(ctx: _Context) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``rocpd_memory_allocate``: level SCRATCH -> scratch table, other levels -> allocations."""
    if "rocpd_memory_allocate" not in ctx.names:
        return make_table("allocations", {}), make_table("scratch", {})
    base = ctx.base("rocpd_memory_allocate")
    cols = ["X.start", "X.end", "X.agent_id", "X.size", "X.address", "X.tid", "E.stack_id", "X.queue_id"]
    start, end, agent, size, address, tid, stack, queue = ctx.ints("rocpd_memory_allocate", cols)
    flags_expr = "CASE WHEN X.level = 'SCRATCH' AND json_valid(X.extdata) THEN json_extract(X.extdata, '$.flags') END"
    kinds, levels, flags = _text_columns(ctx.con, base, ["X.type", "X.level", flags_expr], ctx.where, ctx.params)
    scratch = levels == "SCRATCH"
    keep = ~scratch
    allocations = make_table(
        "allocations",
        {
            "start": start[keep],
            "end": end[keep],
            "operation": kinds[keep],
            "agent": ctx.agents(agent[keep]),
            "bytes": size[keep],
            "address": address[keep],
            "pid": np.full(int(keep.sum()), ctx.pid, dtype=np.int64),
            "tid": ctx.tids(tid[keep]),
            "correlation_id": stack[keep],
        },
    )
    scratch_table = make_table(
        "scratch",
        {
            "start": start[scratch],
            "end": end[scratch],
            "operation": kinds[scratch],
            "agent": ctx.agents(agent[scratch]),
            "queue": queue[scratch],
            "tid": ctx.tids(tid[scratch]),
            "flags": flags[scratch],
            "bytes": size[scratch],
        },
    )
    return allocations, scratch_table


# Device-memory allocation and free calls whose arguments give a size (HIP and CUDA names;
# host allocations such as hipHostMalloc are not GPU memory). The size argument is named
# size (hipMalloc, hipMallocAsync, hipMallocManaged, hipMallocFromPoolAsync) or sizeBytes
# (hipExtMallocWithFlags); a pitched allocation gives width x height (its pitch, an out
# argument, pads each row: the bytes asked for, not the bytes reserved).
ALLOC_CALLS = frozenset(
    f"{api}{name}"
    for api in ("hip", "cuda")
    for name in ("Malloc", "MallocAsync", "MallocManaged", "MallocFromPoolAsync", "ExtMallocWithFlags", "MallocPitch", "MemAllocPitch")
)
FREE_CALLS = frozenset({"hipFree", "hipFreeAsync", "cudaFree", "cudaFreeAsync"})
SIZE_ARGS = frozenset({"size", "sizebytes", "bytesize"})


def arg_int(value) -> int | None:
    """An integer argument value as rocprofv3 prints it (decimal or 0x hex), else None."""
    try:
        return int(str(value).strip(), 0)
    except ValueError:
        return None


def _api_allocations(ctx: _Context) -> pd.DataFrame:
    """Allocation and free calls with their size and pointer arguments (``rocpd_arg``), as
    ``allocations`` rows whose operation is the function's name (analysis/memory.py's last
    source). One query joins the arguments of these calls' regions only. An allocation's
    pointer argument is a ``void**`` (the address of the caller's variable, not of the
    memory): its address is left unknown, so frees cannot be matched to allocations."""
    wanted = {i: name for i, name in ctx.strings.items() if name in ALLOC_CALLS or name in FREE_CALLS}
    if not wanted or not {"rocpd_region", "rocpd_event", "rocpd_arg"} <= ctx.names:
        return make_table("allocations", {})
    marks = ",".join("?" * len(wanted))
    # rocpd_arg has no index: scanning it once against the list of these calls' event ids,
    # then finding each kept argument's region (an automatic index over the calls' regions
    # only), costs 0.24 CPU-s for 1.2M arguments where joining the regions to the arguments
    # first builds an automatic index over every argument (1.25 CPU-s).
    rows = _rows(
        ctx.con,
        f"SELECT X.id, X.start, X.end, X.tid, E.stack_id, X.name_id, A.position, A.type, A.name, A.value "
        f"FROM {ctx.src('rocpd_arg')} A CROSS JOIN {ctx.src('rocpd_region')} X ON X.event_id = A.event_id AND X.guid = A.guid "
        f"JOIN {ctx.src('rocpd_event')} E ON E.id = X.event_id AND E.guid = X.guid "
        f"WHERE A.event_id IN (SELECT event_id FROM {ctx.src('rocpd_region')} WHERE name_id IN ({marks})) "
        f"AND X.name_id IN ({marks}) AND {ctx.where} ORDER BY X.id, A.position",
        (*wanted, *wanted, *ctx.params),
    )
    calls: dict[int, dict] = {}
    for rid, start, end, tid, stack, name_id, position, kind, arg, value in rows:
        call = calls.setdefault(int(rid), {"start": start, "end": end, "tid": tid, "stack": stack, "name": wanted[int(name_id)], "args": {}, "ptr": None})
        call["args"][str(arg).lower()] = value
        if position == 0:
            call["ptr"] = None if str(kind).replace(" ", "").endswith("**") else arg_int(value)
    out: dict[str, list] = {k: [] for k in ("start", "end", "operation", "bytes", "address", "tid", "correlation_id")}
    for call in calls.values():
        args = call["args"]
        if call["name"] in FREE_CALLS:
            size: int | None = -1
        elif "pitch" in call["name"].lower():
            width = next((arg_int(v) for k, v in args.items() if k.startswith("width")), None)
            height = arg_int(args.get("height"))
            size = width * height if width is not None and height is not None else None
        else:
            size = next((arg_int(v) for k, v in args.items() if k in SIZE_ARGS), None)
        if size is None:
            continue  # no readable size: not an allocation this source can count
        for key, value in (
            ("start", opt_int(call["start"])),
            ("end", opt_int(call["end"])),
            ("operation", call["name"]),
            ("bytes", size),
            ("address", call["ptr"] if call["ptr"] is not None else -1),
            ("tid", opt_int(call["tid"])),
            ("correlation_id", opt_int(call["stack"])),
        ):
            out[key].append(-1 if value is None else value)
    if not out["start"]:
        return make_table("allocations", {})
    return make_table(
        "allocations",
        {
            "start": np.asarray(out["start"], np.int64),
            "end": np.asarray(out["end"], np.int64),
            "operation": np.asarray(out["operation"], dtype=object),
            "agent": np.full(len(out["start"]), -1, np.int64),
            "bytes": np.asarray(out["bytes"], np.int64),
            "address": np.asarray(out["address"], np.int64),
            "pid": np.full(len(out["start"]), ctx.pid, dtype=np.int64),
            "tid": ctx.tids(np.asarray(out["tid"], np.int64)),
            "correlation_id": np.asarray(out["correlation_id"], np.int64),
        },
    )


def _counters(ctx: _Context) -> pd.DataFrame:
    """``counters_collection`` view: one row per (dispatch, counter), value summed over instances."""
    if "counters_collection" not in ctx.names or "rocpd_pmc_event" not in ctx.names:
        return make_table("counters", {})
    if ctx.con.execute(f"SELECT 1 FROM {ctx.src('rocpd_pmc_event')} LIMIT 1").fetchone() is None:
        return make_table("counters", {})  # the view's GROUP BY costs a scan even when empty
    # This view's pid column is the OS pid (rocpd_info_process.pid), not the process row id.
    where, params = ("pid = ?", (ctx.pid,)) if len(ctx.params) < 2 else ("pid = ? AND guid = ?", (ctx.pid, ctx.params[1]))
    rows = _rows(ctx.con, f"SELECT dispatch_id, stack_id, agent_abs_index, counter_name, value FROM counters_collection WHERE {where}", params)
    if not rows:
        return make_table("counters", {})
    frame = pd.DataFrame(rows, columns=["dispatch_id", "correlation_id", "agent", "counter", "value"])
    frame = frame.fillna({"dispatch_id": -1, "correlation_id": -1, "agent": -1})
    return make_table("counters", {c: frame[c] for c in frame.columns})
