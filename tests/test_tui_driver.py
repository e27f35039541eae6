"""The terminal driver's prompt Esc (issue 33 item 9): its input loop, fed through a
pseudo-terminal, reports a lone ESC as the Esc key and an arrow key's sequence as that key;
it sleeps only until the parser's Esc deadline. Latency itself: bench/bench_keys.py."""

from __future__ import annotations

import asyncio
import os
import threading
import time
import tty

import pytest
from textual import constants, events
from textual.drivers.linux_driver import LinuxDriver

from tui_prof.tui import driver as driver_module
from tui_prof.tui.driver import ESC_WAIT_S, IDLE_WAIT_S, TerminalDriver, XTermParser, input_wait, terminal_driver


def test_textual_driver_is_replaced_only_where_it_is_linux():
    assert terminal_driver(LinuxDriver) is TerminalDriver  # Textual's parser is as the driver expects
    from textual.drivers.headless_driver import HeadlessDriver

    assert terminal_driver(HeadlessDriver) is HeadlessDriver


def test_input_wait_is_the_parser_deadline(monkeypatch):
    monkeypatch.setattr(constants, "ESCAPE_DELAY", ESC_WAIT_S)
    parser = XTermParser(False)
    assert input_wait(parser, time.monotonic()) == IDLE_WAIT_S  # nothing pending
    list(parser.feed("\x1b"))
    due = parser._timeout_time
    assert input_wait(parser, due - 0.01) == pytest.approx(0.01)
    assert input_wait(parser, due + 1) == 0.0


class Recording(TerminalDriver):
    def process_message(self, message) -> None:
        self.seen.append(message)


def test_input_loop_reports_esc_and_arrow_keys(monkeypatch):
    monkeypatch.delenv("ESCDELAY", raising=False)
    monkeypatch.setattr(constants, "ESCAPE_DELAY", constants.ESCAPE_DELAY)  # restored after the test
    master, slave = os.openpty()
    tty.setraw(slave)  # as Textual puts the terminal: bytes as typed, no line editing

    async def main():
        driver = Recording(app=None, debug=False, mouse=False)  # type: ignore[arg-type]
        assert constants.ESCAPE_DELAY == ESC_WAIT_S  # ESCDELAY unset: the driver's wait
        driver.seen = []
        driver.fileno = slave
        thread = threading.Thread(target=driver.run_input_thread, daemon=True)
        thread.start()

        def keys() -> list[str]:
            return [m.key for m in driver.seen if isinstance(m, events.Key)]

        async def until(count: int) -> None:
            for _ in range(500):
                if len(keys()) >= count:
                    return
                await asyncio.sleep(0.01)

        try:
            os.write(master, b"\x1b")
            await until(1)
            os.write(master, b"\x1b[B")
            await until(2)
            os.write(master, b"q")
            await until(3)
        finally:
            driver.exit_event.set()
            thread.join(timeout=5)
        return keys()

    try:
        assert asyncio.run(main()) == ["escape", "down", "q"]
    finally:
        os.close(master)
        os.close(slave)
    assert driver_module.ESC_WAIT_S < 0.1
