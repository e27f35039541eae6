"""The whole of the names a table cell, a title or a message cuts (key ``F`` everywhere):
the screen's own names (a drill-down's kernel, a gap's neighbours) and the text cells of
the focused table's row, each in full, wrapped anywhere, as sanitised plain text (``c``
copies it to the clipboard)."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from tui_prof.render.safe import safe_text
from tui_prof.tui.safe import plain
from tui_prof.tui.widgets.table import TableView

NO_NAME = {"", "-", "nan", "None", "<NA>"}  # cells that name nothing


def names_in_focus(screen: Screen) -> list[tuple[str, str]]:
    """(label, name) of what ``screen`` shows cut: its ``full_names()`` (when it has the
    method) and the text cells of the focused table's current row; sanitised
    (render.safe.safe_text), each name once."""
    found: list[tuple[str, str]] = []
    own = getattr(screen, "full_names", None)
    if callable(own):
        found += own()
    focused = screen.focused
    if isinstance(focused, TableView):
        found += table_names(focused)
    seen: set[str] = set()
    out = []
    for label, name in found:
        name = safe_text(str(name))
        if name not in NO_NAME and name not in seen:
            seen.add(name)
            out.append((safe_text(str(label)), name))
    return out


def table_names(table: TableView) -> Iterable[tuple[str, str]]:
    """(column title, value) of the text columns of the table's current row."""
    row = table.current_row
    if row is None:
        return []
    return [(c.title, str(row[c.key])) for c in table.columns if c.kind == "text" and c.key in row.index]


class FullNameScreen(ModalScreen):
    """The names, whole; ``c`` copies them (plain text, one per line) to the clipboard."""

    DEFAULT_CSS = """
    FullNameScreen { align: center middle; }
    #fullname { width: 90%; height: auto; max-height: 90%; padding: 1 2; background: $surface; border: round $primary; }
    #fullname > .fullname-label { text-style: bold; }
    #fullname > .fullname-name { text-wrap: wrap; text-overflow: fold; margin-bottom: 1; }
    """
    BINDINGS = [
        Binding("c", "copy", "Copy", id="fullname.copy"),
        Binding("escape,q,F", "app.pop_screen", "Close", id="fullname.close"),
    ]

    def __init__(self, names: list[tuple[str, str]]) -> None:
        super().__init__()
        self.names = names

    @property
    def text(self) -> str:
        """What ``c`` copies: the names, one per line (sanitised: no control character)."""
        return "\n".join(name for _, name in self.names)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="fullname"):
            for label, name in self.names:
                yield Static(plain(label), classes="fullname-label")
                yield Static(plain(name), classes="fullname-name")
            yield Static(plain("c: copy to the clipboard · Esc: close", "dim"))

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(self.text)
        self.notify("copied (where the terminal lets an app set the clipboard)", timeout=3, markup=False)
