"""The Integrity pane (tab i) and the trust marks beside degraded figures (issue 32).

The pane shows the report ``tuiprof check`` prints (the same issues, in the same order); the
marks follow the summary's ``trust`` map; Enter on an issue shows its rows on the timeline.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from synthetic import synthetic_runset
from tui_harness import drive, idle, press, settle, text_of

from tui_prof.analysis.api import Issue, build_summary, check_run
from tui_prof.loaders import load_path
from tui_prof.tui.app import TuiProfApp, key_rows
from tui_prof.tui.view.integrity import issue_evidence, trust_note, worst
from tui_prof.tui.widgets.timeline import Timeline

DATA = Path(__file__).parent / "data"
DOCS7 = DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7"  # separate recordings in one folder (clock-domains)
HOUR_NS = 3_600 * 10**9


def broken_runset():
    """The synthetic run with two defects put in by hand: kernel 7 lasts 2 h (an overflowed
    duration: unreliable) and kernel 3 ends before it starts (degraded)."""
    runset, _ = synthetic_runset("per_launch")
    k = runset.runs[0].kernels
    k.loc[7, "end"] = k["start"].iat[7] + 2 * HOUR_NS
    k.loc[3, "end"] = k["start"].iat[3] - 5
    return runset


def test_pane_lists_the_issues_and_marks_the_degraded_figures():
    """The two defects, most severe first, with what to do; the title and the hotspots'
    measurement line carry the mark. The 2-hour kernel also covers the 92 kernels after it on
    its stream (rows 8..99): queue-overlap, as it should."""
    from tui_prof.analysis.integrity import FIXES

    async def flow(app, pilot):
        title = text_of(app, "#title")
        assert "⚠ unreliable: duration-overflow, negative-duration +1 (i: Integrity)" in title
        assert text_of(app, "#measure").rstrip().endswith("⚠ unreliable (i)")  # compact: the title names the codes
        await press(app, pilot, "i")
        assert app.main.query_one("#tabs").active == "integrity"
        table = app.main.query_one("#integrity-table")
        assert table.has_focus
        frame = table.model.frame
        expected = [("duration-overflow", "unreliable"), ("negative-duration", "degraded"), ("queue-overlap", "degraded")]
        assert list(zip(frame["code"], frame["severity"], strict=True)) == expected
        assert text_of(app, "#integrity-status").startswith("3 issue(s), 3 degrading figures")
        detail = " ".join(text_of(app, "#integrity-detail").split())
        assert "row 7:" in detail and FIXES["duration-overflow"][:40] in detail
        await press(app, pilot, "j")
        assert "row 3:" in text_of(app, "#integrity-detail")
        await press(app, pilot, "j")
        assert "92 kernels rows" in text_of(app, "#integrity-detail") and "row 8:" in text_of(app, "#integrity-detail")

    drive(TuiProfApp(broken_runset()), flow, size=(160, 50))


def test_enter_shows_the_issue_rows_on_the_timeline():
    """An overflowed kernel injected into the synthetic run: Enter on its issue zooms the
    timeline to that kernel (padded by twice its length)."""
    runset, _ = synthetic_runset("per_launch")
    k = runset.runs[0].kernels
    row = 7
    k.loc[row, "end"] = k["start"].iat[row] + 2 * HOUR_NS
    start, end = int(k["start"].iat[row]), int(k["end"].iat[row])
    (issue,) = [i for i in check_run(runset).issues if i.code == "duration-overflow"]
    assert issue.affects["examples"][0]["row"] == row

    async def flow(app, pilot):
        await press(app, pilot, "i")
        table = app.main.query_one("#integrity-table")
        codes = list(table.model.frame["code"])
        while table.current_row is not None and table.current_row["code"] != "duration-overflow":
            await press(app, pilot, "j")
        assert table.current_row["code"] == "duration-overflow", codes
        assert f"row {row}:" in text_of(app, "#integrity-detail")
        await press(app, pilot, "enter")
        assert app.main.query_one("#tabs").active == "timeline"
        timeline = app.main.query_one("#timeline-view", Timeline)
        origin = app.main.view.timeline.origin
        assert timeline.t0 + origin <= start and timeline.t1 + origin >= end
        assert timeline.t1 - timeline.t0 <= 2 * (end - start) + 1  # zoomed to it (padded by half its length each side)

    drive(TuiProfApp(runset), flow, size=(160, 50))


def test_clean_run_says_so_and_carries_no_mark():
    runset, _ = synthetic_runset("per_launch")
    assert not check_run(runset).issues

    async def flow(app, pilot):
        assert "⚠" not in text_of(app, "#title") and "⚠" not in text_of(app, "#measure")
        await press(app, pilot, "i")
        assert text_of(app, "#integrity-status").startswith("0 issue(s), 0 degrading figures")
        assert "No integrity issue found" in text_of(app, "#integrity-detail")
        await press(app, pilot, "enter")  # no row: nothing happens
        assert app.main.query_one("#tabs").active == "integrity"

    drive(TuiProfApp(runset), flow)


def test_hostile_kernel_name_in_an_issue_is_shown_as_text():
    evil = "[bold]evil[/bold]\x1b]0;pwned\x07[link=http://x]k[/link]"
    runset, _ = synthetic_runset("per_launch")
    k = runset.runs[0].kernels
    names = k["name"].astype(str).to_numpy()
    names[3] = evil
    k["name"] = pd.Categorical(names)
    k.loc[3, "end"] = k["start"].iat[3] - 5  # a negative duration: the issue names the kernel

    async def flow(app, pilot):
        await press(app, pilot, "i")
        table = app.main.query_one("#integrity-table")
        while table.current_row is not None and table.current_row["code"] != "negative-duration":
            await press(app, pilot, "j")
        detail = text_of(app, "#integrity-detail")
        assert "\x1b" not in detail and "\x07" not in detail
        assert "[bold]evil[/bold]" in detail and "[link=http://x]k[/link]" in detail
        lines = "".join(table.render_line(y).text for y in range(4))
        assert "\x1b" not in lines

    drive(TuiProfApp(runset), flow, size=(160, 50))


def test_keys_and_help_name_the_tab():
    rows = key_rows()
    assert ("main screen", "i", "Integrity") in rows
    assert ("integrity", "Enter", "Evidence") in rows
    assert sum(1 for where, keys, _ in rows if where == "main screen" and keys == "i") == 1  # no other binding of i there
    runset, _ = synthetic_runset("per_launch")

    async def flow(app, pilot):
        commands = {c.title for c in app.get_system_commands(app.screen)}
        assert "Integrity" in commands and "Integrity: Evidence" in commands
        await press(app, pilot, "2", "i")  # from the timeline (whose 0 is Fit)
        assert app.main.query_one("#tabs").active == "integrity"
        await press(app, pilot, "question_mark")
        shown = text_of(app, "#help Static")
        assert "Integrity" in shown

    drive(TuiProfApp(runset), flow)


def test_evidence_targets_and_marks():
    window = Issue("x", "degraded", "m", {"examples": [{"row": 1, "name": "k", "start_ns": 100_000, "end_ns": 150_000}]})
    assert issue_evidence(window) == ("window", (75_000, 175_000))
    assert issue_evidence(Issue("x", "degraded", "m", {"time_range_ns": [5, 9]})) == ("window", (5, 9))
    assert issue_evidence(Issue("counter-all-zero", "unreliable", "m", {"sections": ["counters", "occupancy"]})) == ("tab", "counters")
    assert issue_evidence(Issue("file-unreadable", "degraded", "m", {"sections": ["source"], "files": ["a"]})) == ("tab", "issues")
    assert issue_evidence(Issue("x", "info", "m", {}))[0] == "none"
    # the marks follow the summary's trust map: worst level first, its codes first
    doc = build_summary(load_path(DOCS7))
    level, codes = worst(doc["trust"], doc["trust"])
    assert level == "unreliable" and codes[0] == "clock-domains"
    assert trust_note(doc["trust"], ["hotspots_source"], "i") == ""
    assert doc["trust"]["measurement"]["trust"] == "unreliable" and trust_note(doc["trust"], ["measurement"], "i").startswith("⚠ unreliable")


@pytest.mark.parametrize("size", [(80, 24)], ids=["80x24"])
def test_integrity_pane_snapshot(snap_compare, size):
    async def run_before(pilot):
        await settle(pilot.app, pilot)
        await pilot.press("i")
        await idle(pilot.app, pilot)

    assert snap_compare(TuiProfApp(broken_runset()), terminal_size=size, run_before=run_before)


def test_no_mark_on_a_clean_real_trace():
    doc = build_summary(load_path(DATA / "kineto" / "h200" / "train_sync.pt.trace.json.gz"))
    assert worst(doc["trust"], doc["trust"]) == ("ok", [])
    assert np.all([v["trust"] == "ok" for v in doc["trust"].values()])
