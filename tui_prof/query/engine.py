"""A read-only, sandboxed DuckDB connection over a :class:`~tui_prof.query.tables.Catalogue`.

The connection is in memory and its configuration is locked at connect time
(:data:`SANDBOX`): no file can be read or written and no network reached
(``enable_external_access``: ``read_csv``, ``COPY ... TO``, ``ATTACH``, ``EXPORT``, URLs), no
extension installed or loaded (``INSTALL``/``LOAD``, auto-install and auto-load off),
and no ``ATTACH``, ``COPY``, ``EXPORT``, ``INSTALL`` or ``LOAD`` statement runs at all
(:data:`REFUSED_STATEMENTS`),
no Python variable scanned by name (``python_enable_replacements``), no spilling to a
temporary folder, and no ``SET`` can undo any of it (``lock_configuration``). The run's
tables are Arrow tables registered as views, each only when a statement names it, so a
query of ``kernels`` never runs the analysis. Trace strings are values in those tables:
they are never spliced into SQL text.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tui_prof.query.tables import ALIASES, Catalogue

INSTALL_HINT = "pip install 'tuiprof[sql]'"
BATCH_ROWS = 10_000  # rows fetched at a time when a result is streamed (CSV, JSON)

SANDBOX: dict[str, Any] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
    "python_enable_replacements": False,
    "temp_directory": "",
    "lock_configuration": True,
}


# Statement kinds refused before DuckDB sees them, whatever their target (an in-memory ATTACH
# too): the sandbox's settings refuse their file and network forms already; this keeps the
# rule simple to state. INSTALL is a LOAD statement.
REFUSED_STATEMENTS = ("ATTACH", "DETACH", "COPY", "COPY_DATABASE", "EXPORT", "LOAD", "EXTENSION")


class QueryError(Exception):
    """A query DuckDB refused or could not run: one line, DuckDB's own words."""


class QueryUnavailable(Exception):
    """DuckDB is not installed (the ``sql`` extra)."""


def duckdb_module():
    """The ``duckdb`` module, or :class:`QueryUnavailable` with the one line to install it."""
    try:
        import duckdb
    except ImportError:
        raise QueryUnavailable(f"SQL queries need DuckDB, which is not installed: {INSTALL_HINT}") from None
    return duckdb


def first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


@dataclass
class Result:
    """A query's result: column names, DuckDB type names and the rows (Python values)."""

    columns: list[str]
    types: list[str]
    rows: list[tuple]


@dataclass
class Stream:
    """A query's result as it is fetched: column names, DuckDB type names and the rows in
    batches (a result of millions of rows is never held whole)."""

    columns: list[str]
    types: list[str]
    batches: Iterator[list[tuple]]


class Session:
    """One sandboxed DuckDB connection over ``catalogue``; :meth:`run` a statement (or several,
    ``;``-separated: the last one's result), :meth:`interrupt` from another thread cancels it."""

    def __init__(self, catalogue: Catalogue):
        duckdb = duckdb_module()
        self.catalogue = catalogue
        self._duckdb = duckdb
        self._con = duckdb.connect(":memory:", config=dict(SANDBOX))
        self._known = {name.lower(): name for name in catalogue.names()}
        self._registered: set[str] = set()
        self._lock = threading.Lock()

    def close(self) -> None:
        self._con.close()

    def interrupt(self) -> None:
        """Cancel the running query (safe from another thread or a signal handler)."""
        self._con.interrupt()

    def register(self, name: str) -> None:
        """Make table ``name`` (a catalogue name, any case) visible to queries (built on first use)."""
        name = self._known.get(name.lower(), name)
        if name in self._registered:
            return
        target = ALIASES.get(name, name)
        self._con.register(name, self.catalogue.arrow(target))
        self._registered.add(name)

    def _named(self, statement: str) -> set[str]:
        """The tables ``statement`` names: DuckDB's own answer, or, where it cannot bind the
        statement without the tables (``JOIN ... USING`` binds its columns), every identifier
        token of it (a column that shares a table's name registers that table too: harmless)."""
        try:
            return {name.lower() for name in self._con.get_table_names(statement)}
        except self._duckdb.Error:
            pass
        tokens = self._duckdb.tokenize(statement)
        identifier = self._duckdb.token_type.identifier
        ends = [position for position, _ in tokens[1:]] + [len(statement)]
        return {statement[start:end].strip().strip('"').lower() for (start, kind), end in zip(tokens, ends) if kind == identifier}

    def _register_named(self, statement: str) -> None:
        for name in self._named(statement):
            if name in self._known:
                self.register(name)

    def _execute(self, sql: str, relation: bool = False):
        """The cursor of the last statement of ``sql`` (each refused kind checked, each named
        table registered, before it runs); ``relation``: the last statement as a DuckDB
        relation instead (None when it returns no rows), whose Arrow reader streams without
        a copy of the whole result. Called with the lock held."""
        statements = self._duckdb.extract_statements(sql)
        if not statements:
            raise QueryError("no SQL statement given")
        cursor = None
        for number, statement in enumerate(statements, 1):
            kind = getattr(statement.type, "name", str(statement.type))
            if kind in REFUSED_STATEMENTS:
                raise QueryError(f"refused: {kind.replace('_', ' ')} statements are not allowed (tuiprof sql is read-only and offline)")
            self._register_named(statement.query)
            last = number == len(statements)
            cursor = self._con.sql(statement.query) if relation and last else self._con.execute(statement.query)
        return cursor

    @contextmanager
    def stream(self, sql: str, batch_rows: int = BATCH_ROWS) -> Iterator[Stream]:
        """Run ``sql`` and give its rows in batches while the block runs; :class:`QueryError`
        (one line) when DuckDB refuses it or fails while fetching."""
        Error = self._duckdb.Error
        with self._lock:
            try:
                cursor = self._execute(sql)
            except Error as err:
                raise QueryError(first_line(err)) from None
            except KeyboardInterrupt:  # Ctrl-C while DuckDB ran: the query is cancelled, the session stays
                self._con.interrupt()
                raise
            description = cursor.description or []

            def batches() -> Iterator[list[tuple]]:
                while description:
                    try:
                        rows = cursor.fetchmany(batch_rows)
                    except Error as err:
                        raise QueryError(first_line(err)) from None
                    if not rows:
                        return
                    yield rows

            yield Stream([d[0] for d in description], [str(d[1]) for d in description], batches())

    @contextmanager
    def arrow_stream(self, sql: str, batch_rows: int = 100_000) -> Iterator[Any]:
        """Run ``sql`` and give its result as a ``pyarrow.RecordBatchReader`` while the block
        runs (the fast path of ``--csv``); :class:`QueryError` as :meth:`stream`."""
        import pyarrow as pa

        Error = self._duckdb.Error
        with self._lock:
            try:
                relation = self._execute(sql, relation=True)
                reader = relation.to_arrow_reader(batch_rows) if relation is not None else pa.RecordBatchReader.from_batches(pa.schema([]), [])
            except Error as err:
                raise QueryError(first_line(err)) from None
            except KeyboardInterrupt:
                self._con.interrupt()
                raise
            try:
                yield reader
            except Error as err:
                raise QueryError(first_line(err)) from None

    def run(self, sql: str) -> Result:
        """Run ``sql`` and fetch its whole result; :class:`QueryError` (one line) when DuckDB refuses it."""
        with self.stream(sql) as result:
            rows = [row for batch in result.batches for row in batch]
            return Result(result.columns, result.types, rows)

    def describe(self, name: str) -> Result:
        """Columns and types of table ``name`` (QueryError: not a table of this run)."""
        if name.lower() not in self._known:
            raise QueryError(f"no table named {name!r} (.tables lists them)")
        known = self._known[name.lower()]
        self.register(known)
        return self.run(f'SELECT column_name AS column, column_type AS type FROM (DESCRIBE "{known}")')
