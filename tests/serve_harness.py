"""Helpers for the ``tuiprof serve`` tests: start a server process on a free port, read its
URL, list its app processes (its children in /proc), and open sessions without a browser."""

from __future__ import annotations

import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser")) if p), None)
CHROMEDRIVER = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)
NO_BROWSER = "chromium and chromedriver are not installed (apt-get install -y chromium chromium-driver; .ci/run installs them)"


class Served:
    """A running ``tuiprof serve`` (``python -m tui_prof.cli serve --port 0 ...``)."""

    def __init__(self, *args: str, timeout: float = 30.0) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tui_prof.cli", "serve", "--port", "0", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # a signal to the test's group never reaches it
        )
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        threading.Thread(target=self._collect, args=(self.proc.stdout, self.stdout), daemon=True).start()
        threading.Thread(target=self._collect, args=(self.proc.stderr, self.stderr), daemon=True).start()
        end = time.monotonic() + timeout
        while not self.stdout and time.monotonic() < end and self.proc.poll() is None:
            time.sleep(0.05)
        if not self.stdout:
            self.stop()
            raise RuntimeError(f"tuiprof serve did not start: {self.stderr}")
        match = re.search(r"http://\S+", self.stdout[0])
        assert match, self.stdout
        self.url = match.group(0)
        parts = urlsplit(self.url)
        self.host, self.port = parts.hostname or "", parts.port or 0
        self.token = parse_qs(parts.query)["token"][0]
        self.base = f"http://{parts.netloc}"

    @staticmethod
    def _collect(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))

    def children(self) -> set[int]:
        """The server's child processes (each one an app session)."""
        return children_of(self.proc.pid)

    def wait_children(self, predicate, timeout: float = 20.0) -> set[int]:
        end = time.monotonic() + timeout
        while True:
            kids = self.children()
            if predicate(kids) or time.monotonic() > end:
                return kids
            time.sleep(0.1)

    def session_pid(self, number: int, timeout: float = 20.0) -> int:
        """The app process of session ``number``, from the server's log."""
        words = f"session {number} started (pid "
        assert self.wait_line(words, timeout), self.stderr
        line = next(line for line in self.stderr if words in line)
        return int(line.split(words, 1)[1].split(",", 1)[0])

    def wait_line(self, words: str, timeout: float = 10.0) -> bool:
        """Whether a stderr line holding ``words`` appeared within ``timeout``."""
        end = time.monotonic() + timeout
        while not any(words in line for line in self.stderr):
            if time.monotonic() > end:
                return False
            time.sleep(0.05)
        return True

    def request(self, path: str, headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        response.read()
        conn.close()
        return response

    def cookie(self) -> str:
        """``name=value`` of the cookie the token buys."""
        response = self.request(f"/?token={self.token}")
        assert response.status == 303, response.status
        return response.getheader("Set-Cookie", "").split(";", 1)[0]

    def websocket(self, cookie: str | None, origin: str | None = None):
        """A session as textual.js opens it (websocket-client), or the handshake's error."""
        import websocket

        headers = [f"Cookie: {cookie}"] if cookie else []
        return websocket.create_connection(
            f"ws://{self.host}:{self.port}/ws?width=100&height=30", header=headers, origin=origin or self.base, timeout=10, suppress_origin=origin == ""
        )

    def stop(self, sig: int = signal.SIGINT, timeout: float = 10.0) -> float:
        """Signal the server; seconds until it exited."""
        began = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return time.monotonic() - began


def children_of(pid: int) -> set[int]:
    kids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            kids.add(int(entry))
    return kids


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
