"""``tuiprof serve`` in a real headless browser (issue 37): Chromium from the system packages
driven by Selenium through the system chromedriver (nothing is downloaded). The served
bundled sample shows its hotspots table, ``2`` the timeline and ``?`` the help, read from
xterm.js's screen-reader rows (the page's DOM text); two browsers are two app processes;
closing a page ends its process; a hostile kernel name shows inert.

``TUIPROF_UPDATE_SCREENS=1`` also writes the browser screenshot to docs/screens/serve_browser.png
(the README's picture)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest
from serve_harness import CHROMEDRIVER, CHROMIUM, NO_BROWSER, ROOT, Served, alive

pytestmark = pytest.mark.skipif(CHROMIUM is None or CHROMEDRIVER is None, reason=NO_BROWSER)

TOP_KERNEL = "Cijk_Alik_Bljk_SB_MT128x128x16_MI32x32x2x1"  # the synthetic runs' GEMM, 60% of kernel time
HOSTILE = "<script>pwn()</script>[b]B[/b]\x1b]0;T\x07\x1b[31mR"
TEXT_JS = "const t = document.querySelector('.xterm-accessibility-tree'); return t ? t.innerText : ''"


def _browser():
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager never downloads a browser or driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,800"):
        options.add_argument(arg)
    options.binary_location = CHROMIUM
    return webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))


def _wait_text(driver, *words: str, absent: str | None = None, timeout: float = 30.0) -> str:
    """The terminal's text once it holds every one of ``words`` (and not ``absent``)."""
    end = time.monotonic() + timeout
    text = ""
    while time.monotonic() < end:
        text = driver.execute_script(TEXT_JS) or ""
        if all(w in text for w in words) and (absent is None or absent not in text):
            return text
        time.sleep(0.05)
    raise AssertionError(f"the page never showed {words!r} (absent {absent!r}); it shows:\n{text}")


def _press(driver, keys: str) -> None:
    from selenium.webdriver.common.by import By

    driver.find_element(By.CSS_SELECTOR, ".xterm-helper-textarea").send_keys(keys)


@pytest.fixture(scope="module")
def served():
    server = Served()  # no RUN: the bundled sample, as `tuiprof open`
    yield server
    server.stop()


def test_the_sample_in_a_browser_hotspots_timeline_help(served, tmp_path):
    driver = _browser()
    try:
        apps = served.wait_children(lambda k: len(k) == 1)  # the prestarted app
        driver.get(served.base + "/")  # no token, no cookie yet
        assert "403" in driver.find_element("tag name", "body").text
        driver.get(served.base + "/?token=" + served.token[::-1])
        assert "403" in driver.find_element("tag name", "body").text
        time.sleep(0.3)
        assert served.children() == apps and not any("started (pid" in line for line in served.stderr)
        began = time.monotonic()
        driver.get(served.url)
        text = _wait_text(driver, "sort total_ns", TOP_KERNEL)
        first_table_s = time.monotonic() - began
        print(f"\npage load to the first table (bundled sample, headless Chromium): {first_table_s:.2f} s")
        assert "200" in text  # the GEMM's calls
        lines = text.splitlines()  # the whole screen, in place: the title bar first, the key bar last
        assert lines[0].startswith("tuiprof · synthetic_sync_per_launch"), lines[:3]
        assert "Quit" in lines[-1] or "Quit" in lines[-2], lines[-3:]
        assert "token" not in driver.current_url  # the token was swapped for the cookie
        shot = tmp_path / "serve_browser.png"
        driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
        if os.environ.get("TUIPROF_UPDATE_SCREENS"):
            shutil.copyfile(shot, ROOT / "docs" / "screens" / "serve_browser.png")
        _press(driver, "2")
        text = _wait_text(driver, "view 0 ns", absent="sort total_ns")
        assert "host T" in text and "GPU" in text
        _press(driver, "?")
        text = _wait_text(driver, "tuiprof keys")
        assert "Help" in text or "help" in text
    finally:
        driver.quit()


def test_two_browsers_are_two_sessions_and_closing_a_page_ends_its_process(served):
    first, second = _browser(), _browser()
    try:
        before = len([line for line in served.stderr if "started (pid" in line])
        first.get(served.url)
        _wait_text(first, "sort total_ns")
        pid_a = served.session_pid(before + 1)
        second.get(served.url)
        _wait_text(second, "sort total_ns")
        pid_b = served.session_pid(before + 2)
        assert pid_a != pid_b and {pid_a, pid_b} <= served.children()
        _press(first, "2")
        _wait_text(first, "view 0 ns")
        time.sleep(0.5)
        assert "sort total_ns" in _wait_text(second, "sort total_ns")  # the other page did not move
        first.quit()
        end = time.monotonic() + 10
        while alive(pid_a) and time.monotonic() < end:
            time.sleep(0.1)
        assert not alive(pid_a) and alive(pid_b)
        _press(second, "2")
        _wait_text(second, "view 0 ns")  # the second session is still served
    finally:
        first.quit()
        second.quit()
    end = time.monotonic() + 10
    while alive(pid_b) and time.monotonic() < end:
        time.sleep(0.1)
    assert not alive(pid_b)


def test_a_hostile_kernel_name_shows_inert(tmp_path):
    run = tmp_path / "hostile"
    subprocess.run([sys.executable, "-m", "tui_prof.synth", str(run), "--format", "csv", "--dispatches", "200"], cwd=ROOT, check=True, capture_output=True)
    (trace,) = run.rglob("*kernel_trace.csv")
    text = trace.read_text()
    assert TOP_KERNEL in text
    trace.write_text(text.replace(TOP_KERNEL, HOSTILE))
    server = Served(str(run))
    driver = _browser()
    try:
        title = f"tuiprof {run.name}"
        driver.get(server.url)
        shown = _wait_text(driver, "sort total_ns", "<script>pwn()</script>[b]B[/b]")
        assert "\\x1b]0;T\\x07\\x1b[31mR" in shown  # escape sequences shown as text
        assert "\x1b" not in shown and "\x07" not in shown
        assert driver.title == title  # OSC 0 did not retitle the page
        assert driver.execute_script("return document.scripts.length") == 1  # textual.js alone
        assert driver.execute_script("return typeof window.pwn") == "undefined"
        assert driver.execute_script("return document.querySelectorAll('.xterm-accessibility-tree script, .xterm-accessibility-tree b').length") == 0
        pid = server.session_pid(1)
        _press(driver, "q")  # the app quits: the page says so and the process is gone
        end = time.monotonic() + 10
        while not driver.execute_script("return document.body.classList.contains('-closed')") and time.monotonic() < end:
            time.sleep(0.05)
        assert "Session ended" in driver.find_element("css selector", ".ended").text
        assert server.wait_line("ended (app quit"), server.stderr
        assert not alive(pid)
    finally:
        driver.quit()
        server.stop()
