"""Query pane (tab 9): a statement typed and run, its result in the table, history, errors."""

from __future__ import annotations

import pytest
from synthetic import synthetic_runset
from tui_harness import drive, idle, settle, text_of

from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.widgets.table import TableView

STATEMENT = "SELECT name, count(*) AS calls, sum(dur) AS total_ns FROM kernels GROUP BY name ORDER BY total_ns DESC"


@pytest.mark.parametrize("size", [(80, 24), (160, 50)], ids=["80x24", "160x50"])
def test_query_pane_snapshot(snap_compare, size):
    runset, _ = synthetic_runset("per_launch")

    async def run_before(pilot):
        await settle(pilot.app, pilot)
        await pilot.press("9")
        field = pilot.app.main.query_one("#query-input")
        field.cursor_blink = False
        field.value = STATEMENT
        await pilot.press("enter")
        await pilot.app.workers.wait_for_complete()
        await idle(pilot.app, pilot)

    assert snap_compare(TuiProfApp(runset), terminal_size=size, run_before=run_before)


def test_query_pane_runs_a_statement_and_keeps_history():
    runset, synth = synthetic_runset("per_launch")
    expected = {}
    for name, start, end in zip(runset.runs[0].kernels["name"], runset.runs[0].kernels["start"], runset.runs[0].kernels["end"]):
        expected[name] = expected.get(name, 0) + int(end - start)

    async def flow(app, pilot):
        await pilot.press("9")
        await pilot.pause()
        field = app.main.query_one("#query-input")
        assert field.has_focus
        statement = "SELECT name, sum(dur) AS total_ns FROM kernels GROUP BY name ORDER BY total_ns DESC"
        field.value = statement
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = app.main.query_one("#query-table", TableView)
        frame = table.model.frame
        assert dict(zip(frame["name"], frame["total_ns"])) == expected
        assert [c.key for c in table.columns] == ["name", "total_ns"]
        assert f"{len(expected)} rows" in text_of(app, "#query-status")
        field.value = "SELEC 1"
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert text_of(app, "#query-status").startswith("Parser Error")
        assert table.row_count == len(expected)  # the last result stays
        await pilot.press("up")
        assert field.value == "SELEC 1"
        await pilot.press("up")
        assert field.value == statement
        await pilot.press("down", "down")
        assert field.value == ""
        field.value = "SELECT chr(27) || ']0;pwned' || chr(7) || '[b]x[/b]' AS evil"  # a result string is data, never escapes or markup
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        lines = "".join(table.render_line(y).text for y in range(3))
        assert "\x1b" not in lines and "\x07" not in lines and "\\x1b]0;pwned\\x07[b]x[/b]" in lines
        field.value = "SELECT 12"  # digits typed into the input do not switch tabs
        field.cursor_position = len(field.value)
        await pilot.press("1")
        assert app.main.query_one("#tabs").active == "query" and field.value.endswith("1")

    drive(TuiProfApp(runset), flow)
