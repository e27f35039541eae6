"""The terminal driver: Textual's Linux/macOS driver with a prompt Esc and, for an ASCII
terminal, ASCII output.

A lone ESC byte may be the start of an escape sequence (an arrow key, Alt+key), so the
input parser reports the Esc key only once ``ESCDELAY`` ms passed without another byte.
Textual's input thread checks that deadline only when its ``select`` returns, which it
does every 100 ms when no input comes: with Textual's default ESCDELAY of 100 ms an Esc
reached the app 100-200 ms after the key, on top of the work the key does. This driver's
input loop sleeps only until the parser's deadline, and the default wait is
``ESC_WAIT_S`` (a terminal writes a key's sequence in one go; the ``ESCDELAY`` variable
still sets another wait, e.g. for a slow remote link). Where Textual's parser internals
are not as expected its input loop is Textual's.

In ASCII mode (``--ascii``, a non-UTF-8 locale: tui_prof.tui.glyphs.use_ascii) every
character written to the terminal is ASCII (:func:`~tui_prof.tui.glyphs.ascii_cells`):
what tuiprof's widgets draw and what Textual's own draw (tab underline, borders,
scrollbars, footer, toasts), each character replaced by text of its width.
"""

from __future__ import annotations

import os
import selectors
from codecs import getincrementaldecoder
from typing import Any

from textual import constants
from textual.driver import Driver
from textual.drivers.linux_driver import LinuxDriver

from tui_prof.tui.glyphs import ascii_cells, use_ascii

try:
    from textual._parser import ParseError
    from textual._time import get_time
    from textual._xterm_parser import XTermParser
except ImportError:  # another Textual: its own driver
    XTermParser = None  # type: ignore[assignment,misc]

ESC_WAIT_S = 0.025  # the Esc key's wait when ESCDELAY is not set
IDLE_WAIT_S = 0.1  # how long the input thread sleeps with no deadline (as Textual's)


def input_wait(parser: Any, now: float) -> float:
    """Seconds the input thread may sleep: until the parser's pending deadline (a lone
    ESC), at most IDLE_WAIT_S."""
    due = getattr(parser, "_timeout_time", None)
    return IDLE_WAIT_S if due is None else max(0.0, min(IDLE_WAIT_S, due - now))


def parser_as_expected() -> bool:
    """Textual's input parser keeps its pending deadline where the input loop reads it."""
    return XTermParser is not None and hasattr(XTermParser(False), "_timeout_time")


class TerminalDriver(LinuxDriver):
    """LinuxDriver whose input loop wakes at the Esc deadline and whose output is ASCII
    where the terminal is."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ascii = use_ascii()
        if "ESCDELAY" not in os.environ:
            constants.ESCAPE_DELAY = ESC_WAIT_S  # type: ignore[misc]  # read by the parser at each ESC

    def write(self, data: str) -> None:
        super().write(ascii_cells(data) if self.ascii else data)

    def run_input_thread(self) -> None:
        """Read the terminal, feed the parser and report its events; tick the parser at
        its deadline (which reports a lone Esc)."""
        if not parser_as_expected():
            super().run_input_thread()
            return
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        selector = selectors.SelectSelector()  # as Textual's: select() also works on macOS ttys
        selector.register(self.fileno, selectors.EVENT_READ)

        def feed(ready: list, final: bool = False) -> None:
            for _key, mask in ready:
                if mask & selectors.EVENT_READ:
                    text = decode(os.read(self.fileno, 4096), final=final)
                    if not text:  # stdin closed (piped)
                        break
                    for event in parser.feed(text):
                        self.process_message(event)
            for event in parser.tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                feed(selector.select(input_wait(parser, get_time())))
            selector.unregister(self.fileno)
            feed(selector.select(IDLE_WAIT_S), final=True)
        finally:
            selector.close()
            try:
                for _event in parser.feed(""):
                    pass
            except (EOFError, ParseError):
                pass


def terminal_driver(driver_class: type[Driver]) -> type[Driver]:
    """TerminalDriver where Textual picked its Linux driver, else ``driver_class``."""
    return TerminalDriver if driver_class is LinuxDriver else driver_class
