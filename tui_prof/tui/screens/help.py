"""The key help (``?``): the rows the app collects from its classes' BINDINGS."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Static

from tui_prof.tui.widgets.scroll import KeyScroll


class HelpScreen(ModalScreen):
    """Every key binding: ``rows`` of (where, keys, action), see tui_prof.tui.keys."""

    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "Close")]

    def __init__(self, rows: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        table = Table(title="tuiprof keys", expand=True, show_edge=False)
        table.add_column("where", style="bold")
        table.add_column("keys", style="cyan")
        table.add_column("action")
        for where, keys, action in self.rows:
            table.add_row(where, keys, action)
        with KeyScroll(id="help"):
            yield Static(table)

    def on_mount(self) -> None:
        self.query_one("#help").focus()  # j/k, g/G, Home/End, PgUp/PgDn, space scroll it
