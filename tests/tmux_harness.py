"""Helpers for the tests that drive tuiprof in a real terminal through tmux."""

from __future__ import annotations

import subprocess
import time


def capture(session: str, escapes: bool = False) -> str:
    """The pane's text (with ``escapes``: its SGR colour sequences too)."""
    args = ["tmux", "capture-pane", "-t", session, "-p"] + (["-e"] if escapes else [])
    return subprocess.run(args, capture_output=True, text=True, errors="replace").stdout


def wait_for(session: str, text: str, timeout: float = 30.0) -> str:
    """The pane once ``text`` is on it; AssertionError with the pane after ``timeout`` s."""
    end = time.monotonic() + timeout
    pane = ""
    while time.monotonic() < end:
        pane = capture(session)
        if text in pane:
            return pane
        time.sleep(0.2)
    raise AssertionError(f"{text!r} not on screen after {timeout}s:\n{pane}")
