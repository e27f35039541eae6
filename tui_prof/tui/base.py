"""What both apps (``tuiprof open`` and ``tuiprof diff --tui``) share: quit and help keys,
the help screen built from the app's own key rows, and quitting that stops running loads."""

from __future__ import annotations

from rich.text import Text
from textual.app import App
from textual.binding import Binding

from tui_prof.loaders import cancel_loads
from tui_prof.render.safe import safe_text
from tui_prof.tui.screens.help import HelpScreen


class ProfApp(App):
    """Base of the two apps; a subclass gives :meth:`key_rows`."""

    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("question_mark,f1", "help", "Help", id="app.help"),
    ]

    @classmethod
    def key_rows(cls) -> list[tuple[str, str, str]]:
        """(where, keys, action) of every binding the help screen lists."""
        raise NotImplementedError

    def on_unmount(self) -> None:
        """Quitting stops the loads still running (their threads are daemons, and this
        makes them stop reading within a second)."""
        cancel_loads()

    def show_error(self, text: Text) -> None:
        """A failed worker of the app itself (tui_prof.tui.workers.report_failure)."""
        self.notify(safe_text(text.plain), severity="error", timeout=10, markup=False)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.key_rows()))
