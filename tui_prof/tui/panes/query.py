"""Query pane (tab 9): SQL over the run's tables (``tuiprof sql``, docs/sql.md) in the TUI.

Type a statement and press Enter: it runs in a worker on the sandboxed, read-only DuckDB
session of :mod:`tui_prof.query.engine` (the tables are built when a statement first names
them, so a query of ``kernels`` never waits for the analysis), and the result fills the
project's table (``s`` sorts, ``[``/``]`` set the direction). Up/Down in the input recall
earlier statements; a statement submitted while one runs interrupts it; an error is one
line under the input. Shown only when DuckDB (the ``sql`` extra) is installed.
"""

from __future__ import annotations

import importlib.util
import math

import pandas as pd
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input, Static

from tui_prof.query.engine import QueryError, Result, Session
from tui_prof.query.output import text_result, unique_columns
from tui_prof.query.tables import Catalogue
from tui_prof.tui.pane import Pane
from tui_prof.tui.safe import plain
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.widgets.table import Column, TableView
from tui_prof.tui.workers import deliver, thread_worker

HINT = "Enter runs the statement (docs/sql.md: tables kernels, api, copies, markers, gaps, steps, ranks, …); ↑/↓ history"
EXAMPLE = "SELECT name, count(*) AS calls, sum(dur) AS total_ns FROM kernels GROUP BY name ORDER BY total_ns DESC"
SHOWN_ROWS = 100_000  # rows the table holds at most (the status line gives the full count)
WIDEST = 60  # a column's width at most (cells are cut with an ellipsis; the table scrolls sideways)


def result_frame(result: Result) -> tuple[pd.DataFrame, list[Column]]:
    """The result as the table's frame and columns: numbers stay numbers (sortable as such;
    ``dur`` and ``*_ns`` columns shown as times), everything else is text (sanitised by the
    table as it draws)."""
    names = unique_columns(result.columns)
    data: dict[str, pd.Series] = {}
    columns: list[Column] = []
    for index, name in enumerate(names):
        values = [row[index] for row in result.rows]
        present = [v for v in values if v is not None]
        if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present) and len(present) == len(values):
            data[name] = pd.Series(values, dtype="int64")
            kind = "ns" if name == "dur" or name.endswith("_ns") else "int"  # durations as times, the rest (timestamps, ids) as numbers
        elif present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
            data[name], kind = pd.Series([math.nan if v is None else float(v) for v in values], dtype="float64"), "float"
        else:
            data[name], kind = pd.Series(["NULL" if v is None else str(v) for v in values], dtype="str"), "text"
        width = max([len(name)] + [len(str(v)) for v in values[:200]])
        columns.append(Column(name, name, max(4, min(width, WIDEST)), kind))
    return pd.DataFrame(data), columns


class QueryInput(Input):
    """The statement; Up/Down walk the statements run before (newest first)."""

    BINDINGS = [
        Binding("up", "history(-1)", "Earlier statement", show=False),
        Binding("down", "history(1)", "Later statement", show=False),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.history: list[str] = []
        self.position = 0

    def remember(self, statement: str) -> None:
        if not self.history or self.history[-1] != statement:
            self.history.append(statement)
        self.position = len(self.history)

    def action_history(self, step: int) -> None:
        if not self.history:
            return
        self.position = max(0, min(len(self.history), self.position + step))
        self.value = self.history[self.position] if self.position < len(self.history) else ""
        self.cursor_position = len(self.value)


class QueryPane(Pane, Vertical):
    """Tab 9: a statement, its one-line status, and the result table."""

    TAB, TITLE, KEY, FOCUS, PIECE = "query", "Query", "9", "#query-input", None

    DEFAULT_CSS = """
    QueryPane #query-status { height: 1; }
    """

    @classmethod
    def available(cls, view: RunView | None) -> bool:
        return view is not None and importlib.util.find_spec("duckdb") is not None

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._view: RunView | None = None
        self._session: Session | None = None

    def compose(self) -> ComposeResult:
        yield QueryInput(placeholder=EXAMPLE, id="query-input")
        yield Static(plain(HINT, "dim"), id="query-status")
        yield TableView([Column("result", "result", 20, "text")], id="query-table")

    def set_view(self, view: RunView) -> None:
        self._view = view
        self._session = None

    @on(Input.Submitted, "#query-input")
    def _submitted(self, event: Input.Submitted) -> None:
        statement = event.value.strip()
        if not statement or self._view is None:
            return
        self.query_one(QueryInput).remember(statement)
        if self._session is not None:
            self._session.interrupt()  # a statement still running gives way to the new one
        self._status(plain("running…", "dim italic"))
        self._run(statement)

    @thread_worker("the query", group="query", exclusive=True)
    def _run(self, statement: str) -> None:
        assert self._view is not None
        if self._session is None:
            self._session = Session(Catalogue(self._view.runset))
        try:
            with self._session.stream(statement) as stream:
                result, total = text_result(stream, limit=SHOWN_ROWS)
        except QueryError as err:
            deliver(self, self._status, plain(str(err), "red", no_wrap=True, overflow="ellipsis"))
            return
        frame, columns = result_frame(result)
        shown = f" (the first {len(result.rows):,} shown)" if total > len(result.rows) else ""
        deliver(self, self._show_result, frame, columns, f"{total:,} row{'s' if total != 1 else ''}{shown}")

    def _show_result(self, frame: pd.DataFrame, columns: list[Column], status: str) -> None:
        table = self.query_one("#query-table", TableView)
        table.set_columns(columns)
        table.set_data(frame)
        self._status(plain(status, "dim"))

    def _status(self, text: Text) -> None:
        self.query_one("#query-status", Static).update(text)

    def show_error(self, text: Text) -> None:
        self._status(text)
