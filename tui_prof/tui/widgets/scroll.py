"""A vertically scrolling text area with the keys of the tables (j/k, g/G, Home/End,
PgUp/PgDn, space): the hardware and issues panes and the help screen."""

from __future__ import annotations

from textual.binding import Binding
from textual.containers import VerticalScroll


class KeyScroll(VerticalScroll, can_focus=True):
    """Scrolls by line, page and to either end with the table keys."""

    BINDINGS = [
        Binding("j,down", "scroll_down", "Down", show=False),
        Binding("k,up", "scroll_up", "Up", show=False),
        Binding("pagedown,space,ctrl+f", "page_down", "Page down", show=False),
        Binding("pageup,ctrl+b", "page_up", "Page up", show=False),
        Binding("g,home", "scroll_home", "Top", show=False),
        Binding("G,end", "scroll_end", "Bottom", show=False),
    ]
