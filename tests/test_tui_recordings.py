"""Key R (issue 32, 33): a folder of separate recordings lists them in a small window, from
every screen of the run; Enter reopens the app on the one under the cursor (as ``tuiprof open
--recording N``), a recording shown before with its analysis reused; Esc closes; a run of one
recording does not offer the key, nor does a modal window."""

from __future__ import annotations

from pathlib import Path

from synthetic import synthetic_runset
from tui_harness import drive, press, settle

from tui_prof.analysis.api import pick_recording
from tui_prof.loaders import load_path
from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.screens.drilldown import DispatchesScreen
from tui_prof.tui.screens.help import HelpScreen
from tui_prof.tui.screens.recordings import RecordingsScreen

DOCS7 = Path(__file__).parent / "data" / "rocprofv3_csv" / "rocprofv3-docs-rocm7"  # 12 recordings (hours apart, counter passes)


def cells(screen: RecordingsScreen) -> list[list[str]]:
    """The picker's rows as the table shows them (plain text of every cell)."""
    table = screen.query_one("#recordings-table")
    return [[str(getattr(c, "plain", c)) for c in table.get_row_at(i)] for i in range(table.row_count)]


def test_picker_lists_the_recordings_and_enter_reopens_on_one():
    whole = load_path(DOCS7, use_cache=False)
    default = pick_recording(whole)
    assert default.count == 12  # the CLI's listing (tuiprof summary) of the same folder
    tenth = pick_recording(whole, 10).runset

    async def flow(app, pilot):
        assert len(app.view.kernels) == sum(len(r.kernels) for r in default.runset.runs) == 13  # the busiest recording
        await press(app, pilot, "R")
        screen = app.screen
        assert isinstance(screen, RecordingsScreen)
        rows = cells(screen)
        assert len(rows) == default.count
        # every dispatch of the folder is in exactly one recording (counted from the loaded tables)
        assert sum(int(r[2].replace(",", "")) for r in rows) == sum(len(run.kernels) for run in whole.runs)
        starred = [r[0] for r in rows if r[0].endswith("*")]
        assert starred == [f"{default.chosen} *"]  # the one shown: the most dispatches
        assert int(rows[default.chosen - 1][2]) == max(int(r[2]) for r in rows)
        assert rows[11][3] == "no timestamps"  # the counter pass of another process
        assert "counters pid 15606" in rows[9][4]
        await press(app, pilot, "escape")
        assert app.screen is app.main and app.recording is None  # Esc: nothing reopened
        await press(app, pilot, "R", *["down"] * (10 - default.chosen), "enter")
        await settle(app, pilot)
        assert app.recording == 10 and app.screen is app.main and app.main.view is not None
        shown = app.main.view.runset
        assert [r.meta.label for r in shown.runs] == [r.meta.label for r in tenth.runs]
        assert len(app.main.view.kernels) == sum(len(r.kernels) for r in tenth.runs) == 4
        await press(app, pilot, "R")  # still offered, the new one starred
        assert [r[0] for r in cells(app.screen) if r[0].endswith("*")] == ["10 *"]

    drive(TuiProfApp(str(DOCS7), use_cache=False), flow, size=(120, 30))


def test_one_recording_does_not_offer_the_key():
    runset, _ = synthetic_runset("per_launch")

    async def flow(app, pilot):
        assert app.recordings == []
        assert app.check_action("recordings", ()) is False
        await press(app, pilot, "R")
        assert not isinstance(app.screen, RecordingsScreen)

    drive(TuiProfApp(runset), flow)


def test_hostile_process_labels_are_shown_as_text():
    whole = load_path(DOCS7, use_cache=False)
    evil = "[bold]evil[/bold]\x1b]0;pwned\x07[link=http://x]k[/link]"
    for i, run in enumerate(whole.runs):
        run.meta.label = f"{evil}{i}"

    async def flow(app, pilot):
        await press(app, pilot, "R")
        rows = cells(app.screen)
        labels = " ".join(r[4] for r in rows)
        assert "[bold]evil[/bold]" in labels  # markup shown as typed, not applied
        assert "\x1b" not in labels and "\x07" not in labels
        shot = app.export_screenshot()  # what the terminal gets: the names, no control character
        assert "evil" in shot and "\x1b" not in shot and "\x07" not in shot and "pwned\x07" not in shot

    drive(TuiProfApp(whole), flow, size=(120, 30))


def test_r_from_a_drill_down_and_back_to_a_recording_shown_before():
    """R on a drill-down screen lists the recordings too; picking one closes the drill-down.
    Going back to the recording shown first reuses its view (the same analysis object, not a
    rebuilt one); R is not offered over the help window."""
    whole = load_path(DOCS7, use_cache=False)
    default = pick_recording(whole)

    async def flow(app, pilot):
        first = app.main.view
        top = str(first.hotspots("name")["name"].iloc[0])
        app.push_screen(DispatchesScreen(first, "name", top))
        await settle(app, pilot)
        await press(app, pilot, "R")
        assert isinstance(app.screen, RecordingsScreen)
        await press(app, pilot, *["down"] * (10 - default.chosen), "enter")
        await settle(app, pilot)
        assert app.recording == 10 and app.screen is app.main and not any(isinstance(s, DispatchesScreen) for s in app.screen_stack)
        assert len(app.main.view.kernels) == 4 and app.main.view is not first
        tenth = app.main.view
        await press(app, pilot, "R", *["up"] * (10 - default.chosen), "enter")  # back to the first one shown
        await settle(app, pilot)
        assert app.shown_recording == default.chosen and app.main.view is first
        assert [r.index for r in app.recordings if r.shown] == [default.chosen]
        await press(app, pilot, "R", *["down"] * (10 - default.chosen), "enter")
        await settle(app, pilot)
        assert app.main.view is tenth
        palette = {c.title: c for c in app.get_system_commands(app.screen)}
        assert palette["Recordings"].help == f"Pick another of the folder's {default.count} recordings (R)"
        await press(app, pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen) and app.check_action("recordings", ()) is False
        await press(app, pilot, "R")
        assert isinstance(app.screen, HelpScreen)

    drive(TuiProfApp(whole), flow, size=(120, 30))
