"""``tuiprof serve``: page load to the first table in headless Chromium, beside the terminal
UI's own start to the first table in tmux (the reference), on the same run, alternated.

    python bench/bench_serve.py [RUN] [--repeat N]

Needs chromium, chromedriver, tmux and the serve extra. Each browser figure runs from
``driver.get(URL)`` (token redirect, page, textual.js, websocket, app process start, run
load, first paint) until xterm.js's text rows hold the hotspots table's ``sort total_ns``;
the server-only figure opens the websocket itself (no browser) and waits for the words in
the app's output bytes; each terminal figure runs from ``tmux new-session`` until the pane
holds the same words. By default
the server keeps one app prestarted (``tuiprof serve``'s default), given ``SPARE_S`` to load
before each page; ``--no-prestart`` measures pages that start their own app. The
1-minute load average is printed with each row: other jobs share the CPUs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from serve_harness import Served  # noqa: E402
from test_serve_browser import TEXT_JS, _browser  # noqa: E402

WORDS = "sort total_ns"
SPARE_S = 4.0  # with the prestarted app: a user opens the next page this long after the last one closed


def terminal_first_table(run: str, cols: int, rows: int) -> float:
    session = f"bench-{uuid.uuid4().hex[:8]}"
    began = time.monotonic()
    command = f"{sys.executable} -m tui_prof.cli open --no-mouse {run}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(cols), "-y", str(rows), command], check=True, cwd=ROOT)
    try:
        while WORDS not in subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout:
            time.sleep(0.02)
        return time.monotonic() - began
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def browser_first_table(driver, url: str) -> tuple[float, int]:
    """Seconds to the first table, and the page's terminal rows."""
    began = time.monotonic()
    driver.get(url)
    while WORDS not in (driver.execute_script(TEXT_JS) or ""):
        time.sleep(0.02)
    took = time.monotonic() - began
    rows = driver.execute_script("return document.querySelectorAll('.xterm-accessibility-tree > div').length")
    return took, rows


def socket_first_table(server: Served, cols: int, rows: int) -> float:
    """The server and app alone, no browser: a websocket as textual.js opens it, until the
    app's output bytes hold the words."""
    import json

    began = time.monotonic()
    ws = server.websocket(server.cookie())
    try:
        ws.send(json.dumps(["resize", {"width": cols, "height": rows}]))
        data = b""
        while WORDS.encode() not in data:
            message = ws.recv()
            if isinstance(message, bytes):
                data += message
        return time.monotonic() - began
    finally:
        ws.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", nargs="?", default=str(ROOT / "sample_traces" / "synthetic_sync_per_launch"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-prestart", action="store_true", help="serve without the prestarted app (each page starts its own)")
    args = parser.parse_args()
    server = Served(os.path.abspath(args.run), *(["--no-prestart"] if args.no_prestart else []))
    driver = _browser()
    browser, socket_only, terminal = [], [], []
    spares = 0 if args.no_prestart else 1

    def settle() -> None:
        """The last page's app is gone and (prestarted) the next one has had SPARE_S to load."""
        server.wait_children(lambda k: len(k) == spares, timeout=10)
        time.sleep(SPARE_S if spares else 0.0)

    try:
        for i in range(args.repeat):
            settle()
            load = os.getloadavg()[0]
            b, rows = browser_first_table(driver, server.url)
            driver.get("about:blank")  # the page closes: its app process ends
            settle()
            w = socket_first_table(server, 150, max(rows, 24))
            t = terminal_first_table(args.run, 150, max(rows, 24))
            browser.append(b)
            socket_only.append(w)
            terminal.append(t)
            print(f"{i + 1}: browser {b:.2f} s   server+app without a browser {w:.2f} s   terminal {t:.2f} s   (load1 {load:.1f})", flush=True)
    finally:
        driver.quit()
        server.stop()
    med = statistics.median
    print(f"median: browser {med(browser):.2f} s, server+app without a browser {med(socket_only):.2f} s, terminal {med(terminal):.2f} s")


if __name__ == "__main__":
    main()
