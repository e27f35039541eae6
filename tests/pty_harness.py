"""``tuiprof open`` on a pseudo-terminal: what a real terminal gets (every byte, with the
time each chunk came) and keys sent as a terminal sends them. Used by the TUI tests that
check the bytes themselves and by bench/bench_keys.py (key latency)."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path


class Terminal:
    """``python -m tui_prof.cli open --no-cache RUN`` of tree ``tree`` on a ``cols`` ×
    ``rows`` pseudo-terminal (TERM=xterm-256color, ``env`` added)."""

    def __init__(self, tree: Path, run: Path, cols: int, rows: int, env: dict[str, str] | None = None) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        full_env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(cols), LINES=str(rows), PYTHONPATH=str(tree), **(env or {}))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tui_prof.cli", "open", "--no-cache", str(run)],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=tree,
            env=full_env,
            start_new_session=True,
        )
        os.close(slave)
        self.master = master
        self.chunks: list[tuple[float, bytes]] = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self.lock:
                self.chunks.append((time.perf_counter(), data))

    def last_output(self) -> float:
        with self.lock:
            return self.chunks[-1][0] if self.chunks else 0.0

    def output(self) -> bytes:
        """Every byte written so far."""
        with self.lock:
            return b"".join(data for _, data in self.chunks)

    def wait_for(self, needle: bytes, after: int = 0, limit_s: float = 120.0) -> None:
        """Until the output written after its first ``after`` bytes holds ``needle``."""
        start = time.perf_counter()
        while time.perf_counter() - start < limit_s:
            if needle in self.output()[after:]:
                return
            time.sleep(0.02)
        raise TimeoutError(f"{needle!r} never drawn")

    def wait_quiet(self, quiet_s: float, limit_s: float = 120.0) -> None:
        """Until the child wrote something and then nothing for ``quiet_s``."""
        start = time.perf_counter()
        while time.perf_counter() - start < limit_s:
            last = self.last_output()
            if last and time.perf_counter() - last >= quiet_s:
                return
            time.sleep(0.01)
        raise TimeoutError("the screen never went quiet")

    def key(self, data: bytes, burst_s: float, limit_s: float = 10.0) -> float:
        """Send ``data``; seconds from the write to the last byte of the output burst that
        follows (it ends at ``burst_s`` without output)."""
        sent = time.perf_counter()
        os.write(self.master, data)
        while True:
            time.sleep(0.005)
            last = self.last_output()
            now = time.perf_counter()
            if last > sent and now - last >= burst_s:
                return last - sent
            if now - sent > limit_s:
                raise TimeoutError(f"no screen update after {data!r}")

    def close(self) -> None:
        """Leave a drill-down (Esc), quit (q); kill the child if it does not end."""
        try:
            os.write(self.master, b"\x1b")
            time.sleep(0.3)
            os.write(self.master, b"q")
            self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)
