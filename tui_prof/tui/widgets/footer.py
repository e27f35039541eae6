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
moment (after the refresh) as Textual's. After the first build it mounts only what changed:
the composed widgets are matched with those shown (a key by its key, label, action, state,
tooltip and classes; a group by its keys) and only the others are removed and mounted. Each key widget is composed with the ``-compact``
class it ends up with: Textual's ``FooterKey`` starts compact, adds the class when mounted
and takes the footer's ``compact`` (False here) just after, so every key restyled itself
twice (``stylesheet.update_nodes``), most of a rebuild's 35–55 ms of loop CPU at 64 ranks.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from textual.app import ComposeResult
from textual.compose import compose
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, FooterLabel, KeyGroup


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
        """Update while the keys to show differ from the keys shown (a change during
        a rebuild is picked up by the next pass)."""
        self._pending = False
        while self.is_attached:
            keys = self.signature()
            if keys == self._shown:
                return
            first = self._shown is None
            self._shown = keys
            if first or not self.children:
                await self.recompose()
                continue
            async with self.batch():
                await self._update(self, list(self.children), compose(self))

    async def _update(self, parent: Widget, old: list[Widget], new: list[Widget]) -> None:
        """Make ``parent``'s children ``old`` the composed ``new``: the widgets equal to
        new ones stay, the others are removed and the new ones mounted in their place (a
        changed key group is updated the same way inside). Showing the steps tab's key
        mounts that key alone instead of the footer's 15 (20–33 ms of loop CPU at 64 ranks)."""
        matcher = SequenceMatcher(a=[signature_of(w) for w in old], b=[signature_of(w) for w in new], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            pairs = list(zip(old[i1:i2], new[j1:j2], strict=False))
            if tag == "replace" and i2 - i1 == j2 - j1 and all(same_group(a, b) for a, b in pairs):
                for group, composed in pairs:
                    await self._update(group, list(group.children), list(composed._pending_children))
                continue
            if i2 > i1:
                await parent.remove_children(old[i1:i2])
            if j2 > j1:
                after = next((w for w in old[i2:] if w.parent is parent), None)
                await (parent.mount_all(new[j1:j2], before=after) if after is not None else parent.mount_all(new[j1:j2]))


def signature_of(widget: Widget) -> tuple:
    """What a footer widget shows: equal signatures, same widget on screen."""
    if isinstance(widget, FooterKey):
        return (
            "key",
            widget.key,
            widget.key_display,
            widget.description,
            widget.action,
            widget._disabled,
            str(widget.tooltip or ""),
            tuple(sorted(widget.classes)),
        )
    if isinstance(widget, FooterLabel):
        return ("label", str(widget.content), tuple(sorted(widget.classes)))
    if isinstance(widget, KeyGroup):
        children = widget.children if widget.is_attached else widget._pending_children
        return ("group", tuple(sorted(widget.classes)), tuple(signature_of(w) for w in children))
    return ("other", id(widget))  # never equal: replaced


def same_group(old: Widget, new: Widget) -> bool:
    """Two key groups of the same classes (only their keys differ)."""
    return isinstance(old, KeyGroup) and isinstance(new, KeyGroup) and set(old.classes) == set(new.classes)
