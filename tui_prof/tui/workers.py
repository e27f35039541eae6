"""The TUI's one thread-worker helper and its one error handler.

Every thread worker of the TUI is a method decorated with :func:`thread_worker`: Textual's
``@work(thread=True)`` with a description (else Textual names the worker by the repr of
its arguments, on the event loop: the repr of a RunSet is every table) whose exception,
instead of ending the worker silently, goes to :func:`report_failure` on the event loop:
a one-line message where the widget said "computing…" (the nearest widget, the worker's
own or one of its ancestors, with a ``show_error`` method; a notification where none has)
and the app's log. :func:`deliver` hands a worker's result to the event loop.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from rich.text import Text
from textual import work
from textual.dom import DOMNode
from textual.widget import Widget

from tui_prof.loaders.base import LoadCancelled
from tui_prof.render.safe import safe_text
from tui_prof.tui.safe import plain

F = TypeVar("F", bound=Callable[..., None])
COMPUTING = "computing…"  # what a widget shows until its worker's result (or failure) arrives


def failure_text(what: str, err: BaseException) -> Text:
    """``what: could not be computed: Type: message`` on one line (trace strings: never markup)."""
    message = str(err).strip().splitlines()
    line = f"{what}: could not be computed: {type(err).__name__}" + (f": {message[0]}" if message else "")
    return plain(line, "red", no_wrap=True, overflow="ellipsis")


def report_failure(node: DOMNode, what: str, err: BaseException) -> None:
    """The one error handler (event loop): ``what`` failed with ``err``."""
    text = failure_text(what, err)
    node.log.error(text.plain)
    target: DOMNode | None = node
    while target is not None and not callable(getattr(target, "show_error", None)):
        target = target.parent
    if target is not None and target.is_attached:
        target.show_error(text)  # type: ignore[attr-defined]  # found by the loop above
    elif isinstance(node, Widget) and node.is_attached:
        node.notify(safe_text(text.plain), severity="error", timeout=10, markup=False)


def _if_attached(node: DOMNode, callback: Callable[..., Any], args: tuple) -> bool:
    if not node.is_attached:
        return False
    callback(*args)
    return True


def deliver(node: DOMNode, callback: Callable[..., Any], *args: Any) -> bool:
    """From a worker thread: run ``callback(*args)`` on the event loop and wait for it,
    while ``node`` is still shown; False when the node or the app is gone (the worker then
    stops). An exception of ``callback`` is raised here, in the worker."""
    app = node.app
    if not app.is_running:
        return False
    try:
        return bool(app.call_from_thread(_if_attached, node, callback, args))
    except RuntimeError:
        if not app.is_running:  # the app quit while the call waited
            return False
        raise


def thread_worker(what: str, *, group: str, exclusive: bool = False) -> Callable[[F], F]:
    """Decorate a method of a widget or screen as a thread worker described as ``what``;
    its exception goes to :func:`report_failure` (``LoadCancelled``: the app is quitting)."""

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def run(self: DOMNode, *args: Any, **kwargs: Any) -> None:
            try:
                method(self, *args, **kwargs)
            except LoadCancelled:
                return
            except Exception as err:  # said where the result would have been, never a traceback
                try:
                    deliver(self, report_failure, self, what, err)
                except Exception:  # the screen went away meanwhile: nothing left to tell
                    return

        return work(thread=True, group=group, exclusive=exclusive, exit_on_error=False, description=what)(run)  # type: ignore[return-value]

    return decorate
