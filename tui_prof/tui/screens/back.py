"""The base of every drill-down screen."""

from __future__ import annotations

from textual.binding import Binding
from textual.screen import Screen


class BackScreen(Screen):
    """A drill-down screen: Esc or q goes back."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="nav.back")]
