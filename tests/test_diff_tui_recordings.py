"""``tuiprof diff --tui`` on folders of separate recordings (issue 33): ``--recording N,M``
picks A's N and B's M as the text diff does, a bad number is a usage error (exit 2), and key
R lists A's recordings, then B's, to compare another pair (from the runs kept in memory)."""

from __future__ import annotations

from pathlib import Path

from tui_harness import drive, press, until

from tui_prof.analysis.api import pick_recording
from tui_prof.loaders import load_path
from tui_prof.tui.diff.app import DiffApp
from tui_prof.tui.screens.recordings import RecordingsScreen

BLOGS = Path(__file__).parent / "data" / "legacy_rocprof" / "rocm-blogs"  # 2 recordings: --hip-trace, --hsa-trace (21 h apart)


def _labels(runset) -> list[str]:
    return [r.meta.label for r in runset.runs]


def _compared(app) -> tuple[list[str], list[str]]:
    a, b = app.diff_screen.runsets
    return _labels(a), _labels(b)


def test_recording_option_picks_each_side():
    whole = load_path(BLOGS, use_cache=False)
    first, second = pick_recording(whole, 1).runset, pick_recording(whole, 2).runset
    assert _labels(first) != _labels(second)

    async def flow(app, pilot):
        await until(app, pilot, lambda: app.diff_screen.runsets is not None)
        assert app.load_error == "" and app.sides.shown == (1, 2)
        assert _compared(app) == (_labels(first), _labels(second))
        assert [len(rows) for rows in app.sides.rows] == [2, 2] and app.check_action("recordings", ()) is True
        assert "Recordings" in {c.title for c in app.get_system_commands(app.screen)}

    drive(DiffApp(str(BLOGS), str(BLOGS), use_cache=False, recordings=(1, 2)), flow, size=(120, 30))


def test_key_r_picks_a_then_b_and_compares_again():
    whole = load_path(BLOGS, use_cache=False)
    busiest = pick_recording(whole)
    other = 3 - busiest.chosen

    async def flow(app, pilot):
        await until(app, pilot, lambda: app.diff_screen.runsets is not None)
        assert app.sides.shown == (busiest.chosen, busiest.chosen)
        before = app.diff_screen
        await press(app, pilot, "R")
        assert isinstance(app.screen, RecordingsScreen) and app.screen.title_text.startswith("A: 2 separate recordings")
        await press(app, pilot, "down" if other > busiest.chosen else "up", "enter")
        assert isinstance(app.screen, RecordingsScreen) and app.screen.title_text.startswith("B: ")
        await press(app, pilot, "enter")  # B keeps its recording
        await until(app, pilot, lambda: app.diff_screen is not before and app.diff_screen.runsets is not None)
        assert app.sides.shown == (other, busiest.chosen)
        assert _compared(app) == (_labels(pick_recording(whole, other).runset), _labels(busiest.runset))
        await press(app, pilot, "R", "escape")  # closed: nothing compared again
        assert app.screen is app.diff_screen and app.sides.shown == (other, busiest.chosen)

    drive(DiffApp(whole, whole, use_cache=False), flow, size=(120, 30))


def test_a_bad_recording_is_a_usage_error(monkeypatch, capsys):
    from tui_prof.cli import main
    from tui_prof.exits import EXIT_USAGE

    async def flow(app, pilot):
        await until(app, pilot, lambda: bool(app.load_error))
        assert app.load_error.startswith("--recording 3:") and "(B: " in app.load_error

    drive(DiffApp(str(BLOGS), str(BLOGS), use_cache=False, recordings=(1, 3)), flow, size=(120, 30))

    def run(self, **kwargs):  # the CLI's exit status for the app's load error, without a terminal
        self.load_error = "--recording 3: the run holds 2 recordings"

    monkeypatch.setattr(DiffApp, "run", run)
    assert main(["diff", "--tui", "--no-cache", "--recording", "1,3", str(BLOGS), str(BLOGS)]) == EXIT_USAGE
    assert capsys.readouterr().err.strip().endswith("--recording 3: the run holds 2 recordings")
