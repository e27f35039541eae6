"""The run's separate recordings (key ``R`` on every screen of the run, issue 32/33; in
``tuiprof diff --tui`` each side's): one row each (number, processes, dispatches, time span,
labels); Enter picks the recording under the cursor (the app reopens on it, as ``tuiprof open
--recording N`` does), Esc closes."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from tui_prof.tui.safe import plain
from tui_prof.tui.view.recordings import RecordingRow

COLUMNS = ("N", "processes", "dispatches", "span", "processes' labels")


class RecordingsScreen(ModalScreen[int | None]):
    """Pick one of the run's recordings; dismissed with its number (None: closed)."""

    DEFAULT_CSS = """
    RecordingsScreen { align: center middle; }
    #recordings { width: 90%; height: auto; max-height: 90%; padding: 0 1; background: $surface; border: round $primary; }
    #recordings-table { height: auto; max-height: 20; }
    """
    BINDINGS = [
        Binding("enter", "pick", "Open this recording", id="recordings.pick"),
        Binding("escape,q", "close", "Close", id="recordings.close"),
    ]

    def __init__(self, rows: list[RecordingRow], title: str = "") -> None:
        """``title``: what the list is (default: the folder's recordings, the one shown starred)."""
        super().__init__()
        self.rows = rows
        self.title_text = title or f"{len(rows)} separate recordings in this folder (* shown)"

    def compose(self) -> ComposeResult:
        with Vertical(id="recordings"):
            yield Static(plain(self.title_text, "bold"))
            yield DataTable(id="recordings-table", cursor_type="row", zebra_stripes=True)
            yield Static(plain("Enter: open this recording · Esc: close", "dim"))

    def on_mount(self) -> None:
        table = self.query_one("#recordings-table", DataTable)
        table.add_columns(*COLUMNS)
        for row in self.rows:
            index = f"{row.index}{' *' if row.shown else ''}"
            table.add_row(plain(index), plain(row.processes), plain(f"{row.dispatches:,}"), plain(row.span), plain(row.label), key=str(row.index))
        shown = next((i for i, row in enumerate(self.rows) if row.shown), 0)
        table.move_cursor(row=shown)
        table.focus()

    @property
    def current(self) -> int | None:
        """The number of the recording under the cursor."""
        table = self.query_one("#recordings-table", DataTable)
        return self.rows[table.cursor_row].index if self.rows and 0 <= table.cursor_row < len(self.rows) else None

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_pick()

    def action_pick(self) -> None:
        self.dismiss(self.current)

    def action_close(self) -> None:
        self.dismiss(None)
