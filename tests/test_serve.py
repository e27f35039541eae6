"""``tuiprof serve`` without a browser (issue 37): the token/cookie gate, 403 before any app
process starts, the session limit, the idle timeout, Ctrl-C, a taken port, --host.
The browser itself: tests/test_serve_browser.py."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import websocket
from serve_harness import ROOT, Served, alive

from tui_prof.serve import is_loopback


@pytest.fixture(scope="module")
def served():
    server = Served("--max-sessions", "1", "--idle-timeout", "4", "--no-prestart")
    yield server
    server.stop()


def _refused(served: Served, cookie: str | None, origin: str | None = None) -> int:
    with pytest.raises(websocket.WebSocketBadStatusException) as err:
        served.websocket(cookie, origin)
    return err.value.status_code


def test_the_url_carries_a_fresh_token_and_the_ssh_line(served):
    assert served.host == "127.0.0.1" and len(served.token) >= 32
    assert f"ssh -L {served.port}:127.0.0.1:{served.port} " in served.stdout[1]
    other = Served()
    try:
        assert other.token != served.token  # random per server start
    finally:
        other.stop()


def test_requests_without_the_token_get_403_and_start_no_process(served):
    forged = f"{served.cookie().split('=')[0]}=forged"
    for path, headers in (
        ("/", {}),
        ("/?token=wrong", {}),
        (f"/?token={served.token[:-1]}", {}),
        ("/static/js/textual.js", {}),
        (
            "/ws?width=80&height=24",
            {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="},
        ),
        ("/", {"Cookie": forged}),
        (f"/?token={served.token}", {"Host": "evil.example"}),  # DNS rebinding: a loopback server answers loopback names only
    ):
        assert served.request(path, headers).status == 403, (path, headers)
    assert _refused(served, None) == 403
    assert _refused(served, forged) == 403
    assert _refused(served, served.cookie(), origin="http://evil.example") == 403  # a websocket from another site
    time.sleep(0.3)
    assert served.children() == set()
    assert not any("session" in line for line in served.stderr)


def test_the_token_buys_a_cookie_then_the_page(served):
    response = served.request(f"/?token={served.token}&fontsize=20")
    assert response.status == 303 and response.getheader("Location") == "/?fontsize=20"  # the token leaves the address bar
    cookie = response.getheader("Set-Cookie")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    page = served.request("/", {"Cookie": cookie.split(";")[0]})
    assert page.status == 200
    csp = page.getheader("Content-Security-Policy")
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-eval" not in csp
    js = served.request("/static/js/textual.js", {"Cookie": cookie.split(";")[0]})
    assert js.status == 200
    assert served.children() == set()  # pages and files start nothing; only the websocket does


def test_one_session_per_websocket_within_the_limit_and_idle_ones_end(served):
    cookie = served.cookie()
    ws = served.websocket(cookie)
    try:
        kids = served.wait_children(lambda k: len(k) == 1)
        assert len(kids) == 1
        (pid,) = kids
        assert _refused(served, cookie) == 503  # --max-sessions 1
        assert served.request("/", {"Cookie": cookie}).status == 503
        assert served.children() == {pid}
        ws.settimeout(20)
        began = time.monotonic()
        with pytest.raises(websocket.WebSocketConnectionClosedException):
            while True:  # the app's frames, until the server closes the idle session (--idle-timeout 4)
                if ws.recv() in ("", b""):
                    raise websocket.WebSocketConnectionClosedException()
        assert time.monotonic() - began < 15
        assert served.wait_children(lambda k: not k, timeout=5) == set() and not alive(pid)
        assert served.wait_line("ended (idle 4 s"), served.stderr
    finally:
        ws.close()


def test_a_prestarted_app_serves_the_next_page_and_only_pages_with_the_cookie_get_one():
    server = Served("--max-sessions", "2")
    try:
        (spare,) = server.wait_children(lambda k: len(k) == 1)  # started with the server, before any page
        for path in ("/", "/?token=wrong", "/static/js/textual.js"):
            assert server.request(path).status == 403
        assert _refused(server, None) == 403
        time.sleep(0.3)
        assert server.children() == {spare}  # nothing more started, nothing handed out
        cookie = server.cookie()
        first = server.websocket(cookie)
        assert server.session_pid(1) == spare  # the page got the prestarted app
        kids = server.wait_children(lambda k: len(k) == 2)
        (next_spare,) = kids - {spare}
        second = server.websocket(cookie)
        assert server.session_pid(2) == next_spare
        time.sleep(1.0)
        assert server.children() == {spare, next_spare}  # at --max-sessions: no spare beyond the limit
        first.close()
        assert server.wait_line("session 1 ended")
        assert not alive(spare) and len(server.wait_children(lambda k: len(k) == 2)) == 2  # a slot is free: a spare again
        second.close()
    finally:
        server.stop()


def test_ctrl_c_ends_the_server_and_every_session_within_a_second():
    server = Served("--idle-timeout", "0")
    try:
        cookie = server.cookie()
        sockets = [server.websocket(cookie) for _ in range(2)]
        kids = server.wait_children(lambda k: len(k) == 3)
        assert len(kids) == 3  # two sessions and the spare
        time.sleep(1.0)  # the apps are up and drawing
        took = server.stop()
        print(f"\nCtrl-C to the server's exit, two sessions open: {took:.2f} s")
        assert server.proc.returncode == 0
        assert not any(alive(pid) for pid in kids)
        assert took < 1.5, took  # 1 s asked; the margin is for a loaded test machine
        for ws in sockets:
            ws.close()
    finally:
        server.stop()


def test_a_second_serve_on_a_taken_port_says_so_in_one_line(served):
    result = subprocess.run([sys.executable, "-m", "tui_prof.cli", "serve", "--port", str(served.port)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"port {served.port}" in lines[0] and "already in use" in lines[0], lines


def test_a_host_beyond_loopback_needs_allow_remote_and_warns():
    result = subprocess.run(
        [sys.executable, "-m", "tui_prof.cli", "serve", "--host", "0.0.0.0", "--port", "0"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1 and "--allow-remote" in result.stderr
    server = Served("--host", "0.0.0.0", "--allow-remote")
    try:
        assert any("WARNING" in line and "0.0.0.0" in line for line in server.stderr), server.stderr
        assert server.request("/").status == 403  # the token still guards it
    finally:
        server.stop()


def test_usage_errors_are_one_line():
    for args, status, words in (
        (["serve", "/nonexistent/run"], 1, "no such file"),
        (["serve", str(ROOT / "sample_traces"), "--diff", "a", "b"], 2, "not both"),
        (["serve", "--max-sessions", "0"], 2, "1 to 1000"),
        (["serve", "--port", "70000"], 2, "port"),
    ):
        result = subprocess.run([sys.executable, "-m", "tui_prof.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert result.returncode == status, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1 and words in result.stderr, (args, result.stderr)


def test_loopback_names_and_the_patched_client():
    assert is_loopback("127.0.0.1") and is_loopback("127.1.2.3") and is_loopback("::1") and is_loopback("[::1]") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.0.0.1") and not is_loopback("evil.example") and not is_loopback("localhost.evil")
    from tui_prof.serve import textual_js

    js = textual_js()
    assert js.count(b"allowProposedApi:!0,screenReaderMode:!0,") == 1  # the pinned textual-serve: xterm.js keeps text rows
    assert b"loadAddon(this.weblinksAddon)" not in js and js.count(b"loadAddon(") >= 5  # no live links; the other add-ons load


def test_serve_diff_runs_the_diff_screen(tmp_path):
    import json
    import re

    for name, dispatches in (("a", "200"), ("b", "400")):
        subprocess.run(
            [sys.executable, "-m", "tui_prof.synth", str(tmp_path / name), "--format", "csv", "--dispatches", dispatches],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
    server = Served("--diff", str(tmp_path / "a"), str(tmp_path / "b"), "--no-prestart")
    try:
        assert "tuiprof diff a b" in server.stdout[0]
        ws = server.websocket(server.cookie())
        ws.send(json.dumps(["resize", {"width": 120, "height": 30}]))
        shown, end = "", time.monotonic() + 30
        while not ("tuiprof diff" in shown and "2 Kernels" in shown) and time.monotonic() < end:
            message = ws.recv()
            if isinstance(message, bytes):
                shown += re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", message.decode("utf-8", "replace"))
        assert "tuiprof diff" in shown and "2 Kernels" in shown, shown[-500:]
        assert server_argv(server)[1:] == ["-m", "tui_prof.cli", "diff", "--tui", str(tmp_path / "a"), str(tmp_path / "b")]  # no shell, absolute paths
        ws.close()
    finally:
        server.stop()


def server_argv(server: Served) -> list[str]:
    """The command line of the server's one app process."""
    (pid,) = server.wait_children(lambda k: len(k) == 1)
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return [part.decode() for part in f.read().split(b"\0") if part]


def test_a_hostile_run_name_is_inert_in_the_terminal_and_the_page(tmp_path):
    run = tmp_path / "r<img src=x onerror=alert(1)>\x1b[31m;$(touch pwned)"
    subprocess.run([sys.executable, "-m", "tui_prof.synth", str(run), "--format", "csv", "--dispatches", "20"], cwd=ROOT, check=True, capture_output=True)
    server = Served(str(run), "--no-prestart")
    try:
        assert "\x1b" not in "".join(server.stdout) and "\\x1b[31m" in server.stdout[0]
        conn_cookie = server.cookie()
        import http.client

        conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
        conn.request("GET", "/", headers={"Cookie": conn_cookie})
        page = conn.getresponse().read().decode()
        conn.close()
        assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;\\x1b[31m" in page
        assert page.count("<script") == 1 and "\x1b" not in page  # textual.js alone
    finally:
        server.stop()
    assert not (ROOT / "pwned").exists() and not (tmp_path / "pwned").exists()


def test_without_the_serve_extra_one_line_says_what_to_install(monkeypatch, capsys):
    import importlib.util

    from tui_prof import cli

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "textual_serve" else real(name, *a))
    assert cli.main(["serve", "--port", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'tuiprof[serve]'" in err[0] and "textual_serve" in err[0]
