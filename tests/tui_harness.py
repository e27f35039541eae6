"""Pilot helpers shared by every TUI test module: drive an app headless, wait for its
workers and lazy panes, press keys and read what widgets show."""

from __future__ import annotations

import asyncio

import numpy as np

from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.screens.main import MainScreen
from tui_prof.tui.widgets.table import TableView
from tui_prof.tui.widgets.timeline import Timeline

TRIES = 500  # pauses before a wait gives up


async def settle(app, pilot) -> None:
    """Until the run is loaded and every lazy pane (computed in thread workers after the
    first screen) is shown, or loading failed."""
    for _ in range(TRIES):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if app.main.complete or (app.main.view is None and all(w.is_finished for w in app.workers)):
            return
    raise AssertionError("the lazy panes never finished")


async def idle(app, pilot) -> None:
    """Until no worker runs (a drill-down's rows, a grouping, a match mode) and the
    messages they posted are handled."""
    await app.workers.wait_for_complete()
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def press(app, pilot, *keys: str) -> None:
    """Press ``keys`` one by one, each followed by :func:`idle`."""
    for key in keys:
        await pilot.press(key)
        await idle(app, pilot)


async def first_screen(app, pilot) -> None:
    """Until the first screen (hotspots) is up; the lazy panes may still be computing."""
    for _ in range(TRIES):
        await pilot.pause()
        if app.main.view is not None:
            return
    raise AssertionError("no first screen")


async def until(app, pilot, condition) -> None:
    for _ in range(TRIES):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if condition():
            return
    raise AssertionError("condition never held")


def drive(app, flow, size=(80, 24)):
    """Run ``flow(app, pilot)`` inside ``app.run_test`` once loading finished (TuiProfApp:
    every lazy pane shown; any other app: its workers done)."""

    async def main():
        async with app.run_test(size=size) as pilot:
            if isinstance(app, TuiProfApp):
                await settle(app, pilot)
            else:
                await idle(app, pilot)
            await flow(app, pilot)

    asyncio.run(main())


async def back_to_main(app, pilot) -> None:
    """Escape from a drill-down screen lands on the main screen."""
    await pilot.press("escape")
    await pilot.pause()
    assert isinstance(app.screen, MainScreen)


def hot(app) -> TableView:
    return app.main.query_one("#hotspot-table", TableView)


def text_of(app, widget_id: str, width: int = 400) -> str:
    """The plain text a Static of the current screen shows (Rich renderables rendered
    ``width`` columns wide)."""
    widget = app.screen.query_one(widget_id)
    renderable = widget.render()
    renderable = getattr(renderable, "_renderable", renderable)
    return "".join(seg.text for seg in app.console.render(renderable, app.console.options.update_width(width)))


def column(table: TableView, key: str) -> np.ndarray:
    """Column ``key`` in the table's display order (sorted, filtered)."""
    return table.model.frame[key].to_numpy()[table.model.order]


def findings_codes(app) -> list[str]:
    return [str(c) for c in column(app.main.query_one("#findings-table", TableView), "code")]


async def select_finding(app, pilot, code: str) -> None:
    await pilot.press("4")
    await pilot.pause()
    await pilot.press("g")
    index = findings_codes(app).index(code)
    for _ in range(index):
        await pilot.press("j")
    assert app.main.findings.current_finding()["code"] == code


async def open_evidence(app, pilot, code: str) -> Timeline:
    """Enter on finding ``code``; the main timeline once the jump has been drawn."""
    await select_finding(app, pilot, code)
    await pilot.press("enter")
    await idle(app, pilot)
    await pilot.pause()
    return app.main.query_one("#timeline-view", Timeline)
