"""When the TUI's work runs: the scheduling hooks the load and the run screen call.

The lifecycle (tui_prof.tui.app, tui_prof.tui.screens.main) says *what* happens at each
point; this module alone decides how that point is scheduled: the garbage collector, the
interpreter's switch interval, waiting for a paint. Each hook is measured in
docs/performance.md (first screen, event-loop stalls at 1M dispatches and at 64 ranks);
none changes a result.

* :func:`while_loading` — around the load worker: a short GIL switch interval while the
  run directory is scanned (the scan's file reads would each wait for the event loop's
  5 ms turn while the app lays itself out), the process's own interval back once the scan
  is done (:meth:`Loading.scan_done`) and in any case at the end.
* :class:`PaintHandshake` — a worker that posted something the user should see before
  the next heavy step (the scan's pending rank rows before the units parse) waits until
  the event loop has painted it (:meth:`PaintHandshake.painted`), at most
  :data:`SCAN_SCREEN_WAIT_S`.
* :func:`after_first_paint` — work that must not compete with composing a screen (the
  analyses, the cache write) starts once the screen is painted.
* :class:`HeapFreeze` — the loaded run and its summary are hundreds of thousands of Python
  objects alive as long as the app; ``gc.freeze()`` at :meth:`~HeapFreeze.screen_mounted`,
  :meth:`~HeapFreeze.run_shown` and :meth:`~HeapFreeze.summary_shown` takes the objects
  alive then out of the collector's full passes (which otherwise walk them all, on
  whichever thread allocates, the event loop's included); only the app's own screen
  freezes (a rank's screen comes and goes) and it unfreezes when removed.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from textual.dom import DOMNode

SCAN_SWITCH_INTERVAL_S = 0.0005  # the GIL's switch interval while the run directory is scanned
SCAN_SCREEN_WAIT_S = 0.5  # a worker waits at most this long for the loop's paint (PaintHandshake)


class Loading:
    """The load worker's schedule (:func:`while_loading`)."""

    def __init__(self) -> None:
        self.switch = sys.getswitchinterval()  # the process's own interval

    def scan_done(self) -> None:
        """The scan has found the processes: the process's own switch interval again (the
        units' parse and the paint share the GIL as usual)."""
        sys.setswitchinterval(self.switch)


@contextmanager
def while_loading() -> Iterator[Loading]:
    """Around a load worker: a short switch interval until :meth:`Loading.scan_done`; the
    process's own interval back on leaving, whatever happened."""
    loading = Loading()
    sys.setswitchinterval(min(loading.switch, SCAN_SWITCH_INTERVAL_S))
    try:
        yield loading
    finally:
        sys.setswitchinterval(loading.switch)


class PaintHandshake:
    """Carried inside a message from a worker to the event loop: the worker :meth:`wait`\\ s
    until the loop has painted what the message showed (:meth:`painted`), or until
    :data:`SCAN_SCREEN_WAIT_S` has passed."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def wait(self) -> bool:
        """In the worker: True when the paint came before the time limit."""
        return self._event.wait(SCAN_SCREEN_WAIT_S)

    def painted(self, node: DOMNode | None) -> None:
        """On the event loop, once the message is handled: release the worker after
        ``node``'s next paint (at once when nothing is shown: ``node`` None)."""
        if node is None:
            self._event.set()
        else:
            node.call_after_refresh(self._event.set)


def after_first_paint(node: DOMNode, callback: Callable[..., Any], *args: Any) -> None:
    """Run ``callback(*args)`` on the event loop once ``node``'s screen is painted (a worker
    started earlier would hold the GIL while the frame is composed)."""
    node.call_after_refresh(callback, *args)


class HeapFreeze:
    """The collector's freezes of one screen (``enabled``: the app's own screen only)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _freeze(self) -> None:
        if self.enabled:
            gc.freeze()

    def screen_mounted(self) -> None:
        """The imports' objects."""
        self._freeze()

    def run_shown(self) -> None:
        """The loaded run and its view."""
        self._freeze()

    def summary_shown(self) -> None:
        """The summary and what the panes built from it."""
        self._freeze()

    def screen_removed(self) -> None:
        if self.enabled:
            gc.unfreeze()
