"""What both apps (``tuiprof open`` and ``tuiprof diff --tui``) share: quit and help keys,
the help screen built from the app's own key rows, quitting that stops running loads, and
an animator that lets a quitting app end."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual._animator import Animator
from textual.app import App
from textual.binding import Binding
from textual.driver import Driver

from tui_prof.loaders import cancel_loads
from tui_prof.render.safe import safe_text
from tui_prof.tui.driver import terminal_driver
from tui_prof.tui.glyphs import ascii_cells, use_ascii
from tui_prof.tui.screens.fullname import FullNameScreen, names_in_focus
from tui_prof.tui.screens.help import HelpScreen


class EndingAnimator(Animator):
    """Textual's animator, except that an animation asked for once it has stopped ends at once.

    The app stops its animator when its message loop ends (q), while its widgets still
    handle their last messages: the tab bar's underline, say, starts to slide to a tab
    shown just before. Textual's animator would clear its "all animations complete" event
    for it, and with its timer stopped no frame ever sets it again; whatever waits on that
    event waits for ever (a Pilot's key press does: the app never exits, the test run
    stalls). Stopped, the animator gives the attribute its final value instead, as
    Textual does when it stops an animation.
    """

    def __init__(self, app: App) -> None:
        super().__init__(app)
        self.stopped = False

    async def start(self) -> None:
        self.stopped = False
        await super().start()

    async def stop(self) -> None:
        self.stopped = True
        await super().stop()

    def animate(self, obj: object, attribute: str, value: Any, *, final_value: object = ..., on_complete: Any = None, **kwargs: Any) -> None:
        if not self.stopped:
            super().animate(obj, attribute, value, final_value=final_value, on_complete=on_complete, **kwargs)
            return
        setattr(obj, attribute, value if final_value is ... else final_value)
        if on_complete is not None:
            self.app.call_later(on_complete)


class ProfApp(App):
    """Base of the two apps; a subclass gives :meth:`key_rows`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # before any widget binds to it (a widget binds on its first animation)
        self._animator = EndingAnimator(self)
        self._animate = self._animator.bind(self)

    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("question_mark,f1", "help", "Help", id="app.help"),
        Binding("F", "full_name", "Full name", show=False, id="app.full_name"),
    ]

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver, on Linux/macOS with a prompt Esc (tui_prof.tui.driver)."""
        return terminal_driver(super().get_driver_class())

    def get_key_display(self, binding: Binding) -> str:
        """Textual's key names; on an ASCII terminal the key's name where Textual draws a
        symbol (Enter's ⏎, the arrows)."""
        shown = super().get_key_display(binding)
        if shown.isascii() or not use_ascii():
            return shown
        modifiers, key = binding.parse_key()
        return key if not modifiers else ascii_cells(shown)

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

    def action_full_name(self) -> None:
        """The whole names of the current row, title or message (screens.fullname)."""
        if isinstance(self.screen, FullNameScreen):
            return
        names = names_in_focus(self.screen)
        if not names:
            self.notify("No name here to show in full", severity="information", timeout=3, markup=False)
            return
        self.push_screen(FullNameScreen(names))

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.key_rows()))
