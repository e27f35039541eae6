"""The base of every tab of the run screen (:class:`tui_prof.tui.screens.main.MainScreen`).

A pane declares what it is (its tab id, title, key, the widget focused when its tab is
shown, the lazy piece of the run view it shows) and has four steps, all called by the
screen, which owns the run and its lifecycle:

* :meth:`Pane.set_view` — on the event loop, the first screen: what the pane shows without
  an analysis (the view's tables, "computing…" where its piece is still missing);
* :meth:`Pane.prepare` — in the screen's part worker, once the view has the pane's
  :attr:`Pane.PIECE`: build what the pane shows (Rich text, table frames) without touching
  a widget; its return value goes to
* :meth:`Pane.show` — on the event loop: hand it to the widgets (no analysis here);
* :meth:`Pane.show_error` — on the event loop: the one-line message of a failed piece (or of
  one of the pane's own workers, :func:`tui_prof.tui.workers.thread_worker`) in place of
  "computing…".

A pane never reads another pane or the app: what it asks for goes up as a message
(:mod:`tui_prof.tui.messages`). A new pane is one module with a subclass of :class:`Pane`
and one line in :data:`tui_prof.tui.registry.PANES` (docs/architecture.md has an example).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text

if TYPE_CHECKING:
    from textual.widget import Widget

    from tui_prof.tui.view.runview import RunView

    _Mixin = Widget
else:
    # a mixin at run time: Textual takes a widget's default CSS from its first base that is
    # a widget (the container after Pane), which a Widget base would hide
    _Mixin = object


class Pane(_Mixin):
    """A tab of the run screen; subclasses put it first, then the container they are
    (``class MyPane(Pane, Vertical)``)."""

    TAB: ClassVar[str] = ""  # the TabPane id (and the pane's id: ``{TAB}-pane``)
    TITLE: ClassVar[str] = ""  # the tab's label and its key's description
    KEY: ClassVar[str] = ""  # the key that shows the tab
    FOCUS: ClassVar[str] = ""  # selector of the widget focused when the tab is shown
    # the lazy piece of the run view (RunView.PIECES) the pane shows; None: set_view gives it all
    PIECE: ClassVar[str | None] = "summary"

    @classmethod
    def available(cls, view: RunView | None) -> bool:
        """Whether the tab is shown (and its key enabled) for ``view``; None: still loading.
        Called on the event loop: it must not compute a missing piece (``view.ready``)."""
        return view is not None

    def set_view(self, view: RunView) -> None:
        """The first screen (event loop): what needs no lazy piece."""

    def prepare(self, view: RunView) -> Any:
        """What :meth:`show` hands to the widgets, built in a worker thread once ``view``
        has :attr:`PIECE` (no widget touched here)."""
        return None

    def show(self, prepared: Any) -> None:
        """Hand :meth:`prepare`'s result to the widgets (event loop)."""

    def show_error(self, text: Text) -> None:
        """Show ``text`` (one line: what failed and why) where the pane said "computing…"."""
        raise NotImplementedError(f"{type(self).__name__}.show_error")
