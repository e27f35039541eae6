"""The TUI in hostile terminals and on hostile names (issue 20 items 14, 15; issue 13's
TUI part), in a real terminal (tmux): NO_COLOR, 16 colours and a non-UTF-8 locale draw
ASCII glyphs without colour; kernel names with escape sequences, markup and bidi
controls, in a run directory named like markup, show escaped and leave the pane title
alone."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from tmux_harness import capture, wait_for

from tui_prof.render.safe import safe_text
from tui_prof.tui.glyphs import ASCII, sixteen_colours, to_ascii, use_ascii, utf8_locale

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_traces" / "synthetic_sync_per_launch"
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install -y tmux)")
BLOCK_GLYPHS = "▁▂▃▄▅▆▇█░▓▚"


def test_locale_detection():
    assert utf8_locale({"LANG": "en_US.UTF-8"}) and utf8_locale({"LC_ALL": "C.utf8"}) and utf8_locale({})
    assert not utf8_locale({"LC_ALL": "C", "LANG": "en_US.UTF-8"})  # LC_ALL wins
    assert not utf8_locale({"LANG": "POSIX"}) and not utf8_locale({"LC_CTYPE": "en_US.ISO-8859-1"})
    assert use_ascii({"TUIPROF_ASCII": "1", "LANG": "C.UTF-8"}) and not use_ascii({"LANG": "C.UTF-8"})


def test_sixteen_colour_terminals_get_ansi_colours_as_they_are():
    assert sixteen_colours({"TERM": "linux"}) and sixteen_colours({"TERM": "screen"})
    assert sixteen_colours({"TEXTUAL_COLOR_SYSTEM": "standard", "TERM": "xterm-256color"})
    assert not sixteen_colours({"TERM": "xterm-256color"}) and not sixteen_colours({"TERM": "screen", "COLORTERM": "truecolor"})
    assert not sixteen_colours({})
    # the timeline's styles (busy, partial, idle, api, sync, op, memory, communication) are eight different ANSI colours, so 16 colours keep them apart
    from textual.color import Color

    from tui_prof.tui.widgets.timeline import Timeline

    css = Timeline.DEFAULT_CSS
    names = [
        line.split("color:")[1].split(";")[0].strip()
        for line in css.splitlines()
        if "timeline--" in line and " color:" in line and "label" not in line and "ruler" not in line and "gap" not in line and "mark" not in line
    ]
    numbers = [Color.parse(n).ansi for n in names]
    assert None not in numbers and len(set(numbers)) == len(numbers) == 8, names


def test_ascii_glyphs_keep_their_meaning():
    """Each block glyph maps to ASCII, and the glyphs of different meanings stay distinct."""
    assert to_ascii(BLOCK_GLYPHS).isascii()
    meaning = {"█": "busy", "░": "idle", "▓": "sync", "▚": "mixed", "▃": "partial", "▁": "partial"}
    by_ascii: dict[str, set[str]] = {}
    for glyph, what in meaning.items():
        by_ascii.setdefault(ASCII[glyph], set()).add(what)
    assert all(len(v) == 1 for v in by_ascii.values()), by_ascii


def _tmux(session: str, cmd: str, env: dict[str, str], size=(80, 24)) -> None:
    """Start ``cmd`` in a new detached tmux session with ``env`` set in the command itself
    (a tmux server started by someone else has its own environment)."""
    assigns = [f"{k}={v}" for k, v in env.items()]
    full = ["env", f"PYTHONPATH={ROOT}", *assigns, *cmd]
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(size[0]), "-y", str(size[1]), " ".join(_quote(a) for a in full)], check=True)


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


def _quit(session: str) -> None:
    subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
    end = time.monotonic() + 10
    while time.monotonic() < end:
        if subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode != 0:
            return
        time.sleep(0.2)
    raise AssertionError("q did not quit the app")


@needs_tmux
@pytest.mark.skipif(not SAMPLE.exists(), reason=f"sample run missing: {SAMPLE}")
def test_no_color_linux_console_c_locale():
    session = f"tuiprof-{uuid.uuid4().hex[:8]}"
    env = {"NO_COLOR": "1", "TERM": "linux", "LC_ALL": "C", "LANG": "C"}
    _tmux(session, [sys.executable, "-m", "tui_prof.cli", "open", "--no-mouse", str(SAMPLE)], env)
    try:
        wait_for(session, "sort total_ns")
        subprocess.run(["tmux", "send-keys", "-t", session, "2"], check=True)
        pane = wait_for(session, "view 0 ns")
        rows = [line for line in pane.splitlines() if line.startswith(("host T", "GPU"))]
        assert rows and all("|" in row for row in rows), pane
        timeline = "\n".join(rows)
        assert not any(g in timeline for g in BLOCK_GLYPHS), timeline
        assert "%" in timeline  # a sync after every launch: sync+launch in ASCII
        gpu = next(row for row in rows if row.startswith("GPU"))
        assert "+" in gpu and "." in gpu  # a GPU idle between launches: partly busy and idle cells
        legend = next(line for line in pane.splitlines() if "busy" in line and "idle" in line)
        # the partly busy levels named together; the host rows' marks say what they measure
        assert legend.strip().startswith("# busy ,:+* <90% busy . idle = sync % sync+launch host rows: API call time"), legend
        assert pane.isascii(), [line for line in pane.splitlines() if not line.isascii()]  # every widget: tabs, footer, status
        # NO_COLOR: no foreground colour in the timeline rows (only bold/reverse attributes)
        coloured = [line for line in capture(session, escapes=True).splitlines() if line.lstrip("\x1b[0123456789;m").startswith(("host T", "GPU"))]
        for line in coloured:
            for code in ("38;5;", "38;2;", "[31m", "[32m", "[33m", "[34m", "[35m", "[91m", "[92m", "[95m"):
                assert code not in line, repr(line)
        _quit(session)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


HOSTILE = ["\x1b]0;pwned\x07kernel_osc", "[link=file:///etc/passwd]x[/link]", "bad[/]kern", "\u202eevil_bidi"]


@needs_tmux
def test_hostile_names_in_tmux(tmp_path):
    """Kernel names with an OSC title sequence, Rich markup, a closing tag and a bidi
    override, in a run directory named like markup: the pane title is unchanged, no
    traceback, and the names are shown escaped."""
    from tui_prof.synth import SynthSpec, build, write_run

    synth = build(SynthSpec(iterations=4, kernels_per_iteration=5))
    names = synth.kernels["name"].astype(str)
    distinct = list(dict.fromkeys(names))
    mapping = {old: new for old, new in zip(distinct, HOSTILE)}
    synth.kernels["name"] = names.map(lambda n: mapping.get(n, n)).astype("category")
    run_dir = tmp_path / "gemm[M=1024,N=1024]"
    write_run(synth, run_dir, "csv")
    session = f"tuiprof-{uuid.uuid4().hex[:8]}"
    _tmux(session, [sys.executable, "-m", "tui_prof.cli", "open", "--no-mouse", "--no-cache", str(run_dir)], {"LANG": "C.UTF-8"}, size=(160, 40))
    try:
        title_before = subprocess.run(["tmux", "display-message", "-p", "-t", session, "#{pane_title}"], capture_output=True, text=True).stdout.strip()
        pane = wait_for(session, "sort total_ns")
        assert "gemm[M=1024,N=1024]" in pane  # the directory name, shown as text
        assert "[link=file:///etc/passwd]x[/link]" in pane  # markup shown, not interpreted
        assert "bad[/]kern" in pane
        assert "Traceback" not in pane
        assert "\u202e" not in pane and safe_text(HOSTILE[3]) in pane  # the bidi override is escaped
        assert safe_text(HOSTILE[0]) in pane  # the OSC sequence shown, not obeyed
        title = subprocess.run(["tmux", "display-message", "-p", "-t", session, "#{pane_title}"], capture_output=True, text=True).stdout.strip()
        assert title == title_before and "pwned" not in title
        _quit(session)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
