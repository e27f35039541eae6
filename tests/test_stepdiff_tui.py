"""Pilot tests of the step-aligned diff screen (``tuiprof diff A B --tui --steps``).

The pair is the generator's stepped loop with a kernel inserted and one 2x slower in every
step (tui_prof.synth.steps); which cells are marked follows from the construction: all
kernels last ``kernel_ns`` and run back to back.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from test_stepdiff import BASE, runset
from textual.app import App
from tui_harness import drive, press

from tui_prof.analysis.stepdiff import diff_steps
from tui_prof.synth.steps import INSERTED
from tui_prof.tui.diff.steps import ALONE, MATCHED, SLOWER, StepDiffScreen, StepPairScreen, StepRuler, Window, paint

HOSTILE = "\x1b[31mred\x07[/b]"


def pair():
    b = runset(replace(BASE, insert_after=2, slow=1), "b")
    b.runs[0].kernels["name"] = b.runs[0].kernels["name"].cat.rename_categories({INSERTED.name: INSERTED.name + HOSTILE})
    return diff_steps(runset(BASE, "a"), b)


class Host(App):
    def __init__(self, d):
        super().__init__()
        self.d = d

    def on_mount(self) -> None:
        self.push_screen(StepDiffScreen(self.d))


def test_paint_marks_the_known_units():
    d = pair()
    span = d.b.choice.wall_ns
    cells = 70  # one cell per ~ 4.7 µs of the step
    rows_b = np.arange(len(d.b.units))
    codes = paint(d.b, rows_b, Window(0.0, float(span)), cells)
    u = d.b.units
    # each unit's first full cell carries its status: kernel 1 slower, kernel 3 (the inserted one) alone
    scale = cells / span
    for i, status in enumerate(u["status"]):
        c = int(np.ceil((u["start"].iat[i] - d.b.choice.start_ns) * scale))
        want = {"slower": SLOWER, "inserted": ALONE, "matched": MATCHED}[status]
        assert codes[c] == want, (i, status, codes[c])
    assert list(u["status"]) == ["matched", "slower", "matched", "inserted", "matched", "matched", "matched"]


def test_walk_and_open_both_sides():
    d = pair()
    app = Host(d)

    async def flow(app, pilot):
        screen = app.screen
        assert isinstance(screen, StepDiffScreen)
        assert [t[:2] for t in screen.diffs] == [("a", 1), ("b", 3)]  # the slower pair (by its A kernel), the inserted one
        await press(app, pilot, "n")
        assert screen.index == 0 and app.screen.query_one(StepRuler).current == ("a", 1)
        await press(app, pilot, "n")
        detail = str(app.screen.query_one("#sd-detail").render())
        assert "inserted: at::native::reduce_kernel" in detail and "no partner" in detail
        assert "\x1b" not in detail and "\x07" not in detail  # the hostile name, sanitised
        await press(app, pilot, "N")
        await press(app, pilot, "enter")
        assert isinstance(app.screen, StepPairScreen)
        body = str(app.screen.query_one("#sp-body").render())
        assert "slower: ck_tile::kentry" in body and "A train_step [2]" in body and "B train_step [2]" in body
        await press(app, pilot, "escape")
        assert isinstance(app.screen, StepDiffScreen)
        await press(app, pilot, "w", "0")
        ruler = app.screen.query_one(StepRuler)
        assert ruler.window.t0 == 0.0 and ruler.window.t1 >= d.b.choice.wall_ns

    drive(app, flow, size=(120, 30))


def runsets():
    return runset(BASE, "a"), runset(replace(BASE, insert_after=2, slow=1), "b")


async def until_shown(app, pilot):
    for _ in range(200):
        await pilot.pause(0.05)
        if isinstance(app.screen, StepDiffScreen) and app.screen.d is not None:
            return
    raise AssertionError("the step diff never came")


def test_diff_app_opens_the_step_diff():
    """``tuiprof diff --tui --steps``: the diff app opens the step screen once loaded, computed
    in the screen's worker; Esc returns to the diff screen and S opens it again."""
    from tui_prof.tui.diff.app import DiffApp
    from tui_prof.tui.diff.screens import DiffScreen

    app = DiffApp(*runsets(), steps=True)

    async def flow(app, pilot):
        await until_shown(app, pilot)
        screen = app.screen
        assert [(r["key"], r["count"]) for r in screen.d.inserted] == [("at::native::reduce_kernel", 1)]
        assert "most of it" in str(screen.query_one("#sd-title").render())
        await press(app, pilot, "escape")
        assert isinstance(app.screen, DiffScreen)
        await press(app, pilot, "S")
        await until_shown(app, pilot)

    drive(app, flow, size=(120, 34))


def test_diff_app_bad_step_number_is_one_line():
    from tui_prof.tui.diff.app import DiffApp

    app = DiffApp(*runsets(), step=99)

    async def flow(app, pilot):
        for _ in range(200):
            await pilot.pause(0.05)
            if isinstance(app.screen, StepDiffScreen) and "no step numbered" in str(app.screen.query_one("#sd-title").render()):
                break
        title = str(app.screen.query_one("#sd-title").render())
        assert "A: no step numbered 99" in title and app.screen.d is None
        await press(app, pilot, "n", "enter")  # nothing to walk: no error
        assert isinstance(app.screen, StepDiffScreen)

    drive(app, flow, size=(120, 34))


def test_snapshot_120x34(snap_compare):
    """The step screen on the generated pair (a kernel inserted, one 2x slower), on the first
    difference: the slower kernel drawn in reverse on both rows, the inserted one on B's."""
    from tui_prof.tui.diff.app import DiffApp

    async def run_before(pilot):
        await until_shown(pilot.app, pilot)
        await pilot.press("n")
        await pilot.pause()

    assert snap_compare(DiffApp(*runsets(), steps=True), terminal_size=(120, 34), run_before=run_before)
