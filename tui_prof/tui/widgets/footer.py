"""Textual's key footer, rebuilt only when the keys it shows change.

Textual's ``Footer`` removes and mounts all its key widgets again after the next screen
refresh on every ``refresh_bindings()`` (a focus change, a tab shown or hidden, a pane's
``check_action`` answer changing), even when the keys it shows stay the same: each
rebuild costs the event loop 45–85 ms of CPU (160×50, 17 keys) and a layout of the whole
screen. Showing a 1M-dispatch run (the view set, the hotspot table focused, the ranks
and steps tabs hidden) makes it rebuild twice with the keys it already shows, right after
the first paint, while the background analyses start: 70 ms of loop CPU each, then a
40–50 ms layout in one stretch (bench/bench_open.py).

:class:`KeyFooter` coalesces the requests made before a refresh into one and rebuilds only
when the keys differ from those shown; what it shows is ``Footer.compose``'s, at the same
moment (after the refresh) as Textual's. Each key widget is composed with the ``-compact``
class it ends up with: Textual's ``FooterKey`` starts compact, adds the class when mounted
and takes the footer's ``compact`` (False here) just after, so every key restyled itself
twice (``stylesheet.update_nodes``), most of a rebuild's 35–55 ms of loop CPU at 64 ranks.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class KeyFooter(Footer):
    """A :class:`~textual.widgets.Footer` that rebuilds only when its keys change."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._pending = False  # a rebuild is scheduled
        self._shown: tuple | None = None  # signature of the keys composed last

    def signature(self) -> tuple:
        """What ``Footer.compose`` would show now: every shown binding with its key
        display, description, group, enabled state and tooltip, and the footer's options."""
        keys = tuple(
            (binding.key, self.app.get_key_display(binding), binding.description, binding.action, binding.group, enabled, tooltip, binding.tooltip)
            for (_, binding, enabled, tooltip) in self.screen.active_bindings.values()
            if binding.show
        )
        return keys, self.show_command_palette, self.compact

    def compose(self) -> ComposeResult:
        """``Footer.compose``, with each key's ``compact`` and its class set before the
        mount to the value its watcher would give it (the footer's where bound to it, the
        key's default otherwise): the watcher then changes nothing and restyles nothing."""
        for widget in super().compose():
            if isinstance(widget, FooterKey):
                compact = bool(self.compact if getattr(widget, "_reactive_connect", None) else FooterKey.compact._default)
                widget.set_reactive(FooterKey.compact, compact)
                widget.set_class(compact, "-compact", update=False)
            yield widget

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._pending:
            self._pending = True
            self.call_after_refresh(self._rebuild)

    async def _rebuild(self) -> None:
        """Recompose while the keys to show differ from the keys shown (a change during
        a rebuild is picked up by the next pass)."""
        self._pending = False
        while self.is_attached:
            keys = self.signature()
            if keys == self._shown:
                return
            self._shown = keys
            await self.recompose()
