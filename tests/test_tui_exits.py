"""Exit paths of ``tuiprof open`` and ``tuiprof summary`` when nothing loads (issue 20
item 16): one line on stderr, no report, exit status 1 (README, "Exit status")."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tui_prof import cli
from tui_prof.exits import EXIT_NOTHING_LOADED, EXIT_OK
from tui_prof.tui.app import TuiProfApp

ROOT = Path(__file__).resolve().parents[1]


def _tuiprof(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "tui_prof.cli", *args], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=120)


def test_open_missing_path_exits_1_with_one_line():
    done = _tuiprof("open", "/no/such/path")
    assert done.returncode == EXIT_NOTHING_LOADED
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == ["tuiprof: '/no/such/path': no such file or directory"]


def test_summary_missing_path_exits_1_without_a_report():
    done = _tuiprof("summary", "--no-cache", "/no/such/path")
    assert done.returncode == EXIT_NOTHING_LOADED
    assert done.stdout == ""  # no all-zero report
    # one line: the reason (issue 33 item 14)
    assert done.stderr.strip().splitlines() == ["tuiprof: /no/such/path: no such file or directory"]


def test_summary_of_nothing_loadable_exits_1_without_a_report(tmp_path):
    (tmp_path / "notes.txt").write_text("not a profiler file\n")
    done = _tuiprof("summary", "--no-cache", str(tmp_path))
    assert done.returncode == EXIT_NOTHING_LOADED
    assert done.stdout == ""
    assert done.stderr.strip().splitlines()[-1] == f"tuiprof: nothing could be loaded from '{tmp_path}'"


def test_open_of_nothing_loadable_exits_1_after_q(tmp_path, monkeypatch):
    """The app shows why and waits for q; the command then exits 1."""
    (tmp_path / "notes.txt").write_text("not a profiler file\n")
    run = TuiProfApp.run

    def headless(self, **kwargs):
        async def press_q(pilot):
            for _ in range(200):
                await pilot.pause(0.05)
                if self.load_error:
                    break
            assert "Nothing could be loaded" in self.load_error
            await pilot.press("q")

        return run(self, headless=True, auto_pilot=press_q)

    monkeypatch.setattr(TuiProfApp, "run", headless)
    assert cli.main(["open", "--no-cache", str(tmp_path)]) == EXIT_NOTHING_LOADED


def test_open_of_a_run_exits_0_after_q(monkeypatch):
    run = TuiProfApp.run

    def headless(self, **kwargs):
        async def press_q(pilot):
            for _ in range(400):
                await pilot.pause(0.05)
                if self.view is not None:
                    break
            await pilot.press("q")

        return run(self, headless=True, auto_pilot=press_q)

    monkeypatch.setattr(TuiProfApp, "run", headless)
    assert cli.main(["open", "--no-cache", str(ROOT / "sample_traces" / "synthetic_sync_once")]) == EXIT_OK


def test_q_ends_the_app_when_a_widget_animates_after_its_animator_stopped():
    """The app stops its animator when its message loop ends, while its widgets still handle
    their last messages: the tab bar's underline may start sliding then (seen under CPU load:
    q pressed just as the first screen came up). That animation must end at once: with
    Textual's own animator it would leave "all animations complete" unset for ever, and the
    Pilot's key press, which waits on it, would never return (the app never exited)."""
    app = TuiProfApp(ROOT / "sample_traces" / "synthetic_sync_once", use_cache=False)
    stop = app.animator.stop
    late: list[tuple[int, int]] = []

    async def stop_then_animate() -> None:
        await stop()
        underline = app.main.query("Underline").first()
        target = underline.highlight_start + 7
        underline.animate("highlight_start", target, duration=0.3)
        late.append((underline.highlight_start, target))

    app.animator.stop = stop_then_animate  # type: ignore[method-assign]

    async def main() -> float:
        async with app.run_test() as pilot:
            for _ in range(400):
                if app.view is not None:
                    break
                await pilot.pause(0.05)
            assert app.view is not None
            asked = time.monotonic()
            await asyncio.wait_for(pilot.press("q"), 10)  # without the fix: never returns
        return time.monotonic() - asked

    took = asyncio.run(main())
    assert len(late) == 1 and late[0][0] == late[0][1]  # the late animation ended at its final value
    assert took < 1.0 and app.return_code == 0


def test_a_command_ending_with_daemon_threads_at_work_ends_at_once_with_its_status():
    """A TUI quit while its analyses still run leaves daemon threads inside numpy/pandas; the
    interpreter's shutdown would tear modules down under them (an abort, status 134, seen on
    a 1M-dispatch run). run() ends the process at once instead: its output flushed, the exit
    handlers run (they stop loader worker processes), the command's own status kept. The
    interpreter's shutdown would also wait for the 20 s non-daemon thread: it is skipped."""
    code = (
        "import atexit, sys, threading, time\n"
        "from tui_prof import cli\n"
        "atexit.register(lambda: print('exit handlers ran', flush=True))\n"
        "def main():\n"
        "    threading.Thread(target=lambda: [sum(range(10**5)) for _ in iter(int, 1)], daemon=True).start()\n"
        "    threading.Thread(target=time.sleep, args=(20,)).start()  # the shutdown would join it\n"
        "    print('report', end='')  # unflushed: run() flushes it\n"
        "    return 3\n"
        "cli.main = main\n"
        "sys.exit(cli.run())\n"
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1])), timeout=60)
    assert time.monotonic() - started < 15  # not the 20 s the interpreter's shutdown takes
    assert done.returncode == 3
    assert done.stdout == b"reportexit handlers ran\n" and done.stderr == b""


def test_a_command_without_threads_left_ends_at_once_with_its_output_and_status():
    """Every command ends with os._exit once main returns (the interpreter's shutdown would
    free every table object by object: 0.1-0.2 s after a 1M-dispatch summary): the output
    is flushed, the exit handlers run (temporary folders removed by their finalizers), the
    status is main's."""
    code = (
        "import atexit, sys, tempfile, weakref\n"
        "from tui_prof import cli\n"
        "atexit.register(lambda: print('exit handlers ran', flush=True))\n"
        "def main():\n"
        "    global scratch\n"
        "    scratch = tempfile.TemporaryDirectory(prefix='tuiprof-exit-test-')\n"
        "    print(scratch.name, end=' ')  # unflushed: run() flushes it\n"
        "    return 4\n"
        "cli.main = main\n"
        "sys.exit(cli.run())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1])), timeout=60)
    assert done.returncode == 4 and done.stderr == b""
    folder, _, rest = done.stdout.decode().partition(" ")
    assert rest == "exit handlers ran\n"
    assert folder.startswith(tempfile.gettempdir()) and not Path(folder).exists()  # its finalizer ran at exit


def test_a_command_leaving_only_non_daemon_threads_returns_and_they_are_waited_for():
    code = (
        "import sys, threading, time\n"
        "from tui_prof import cli\n"
        "def late():\n"
        "    time.sleep(0.3)\n"
        "    print('waited for', flush=True)\n"
        "def main():\n"
        "    threading.Thread(target=late).start()\n"
        "    return 4\n"
        "cli.main = main\n"
        "print(cli.run(), flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, env=dict(os.environ, PYTHONPATH=str(Path(__file__).parents[1])), timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"4\nwaited for\n", b"")  # run() returned its status
