"""The event loop stays free on a 200k-dispatch run (issues 12 and 18): every screen and
key that runs an analysis or scans a whole table does it in a thread worker, and the
loop's own work while the background analyses run stays short (measured in the loop
thread's CPU time, which the machine's load barely changes).

A 5 ms interval timer records its largest gap between ticks from the moment the first
screen is up (the method of bench/bench_open.py); the background analyses of the lazy
panes run meanwhile, so their GIL use counts too. The flows drive each screen: the six
tabs, grouping, the drill-downs (dispatches, dispatch detail, gap calls), help, a
finding's evidence, and the diff app's match modes, pair screen and timeline jump.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time

import pytest
from synthetic import synthetic_runset
from textual.widgets import Static
from tui_harness import TRIES, idle, press, settle

from tui_prof.tui import app as app_module
from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.diff.app import DiffApp
from tui_prof.tui.diff.screens import DiffScreen, PairScreen
from tui_prof.tui.screens.detail import DispatchDetailScreen
from tui_prof.tui.screens.drilldown import DispatchesScreen
from tui_prof.tui.screens.gap import GapScreen
from tui_prof.tui.screens.help import HelpScreen
from tui_prof.tui.screens.main import MainScreen

ITERATIONS = 40_000  # x 5 kernels per iteration = 200k dispatches, 400k HIP calls
DISPATCHES = 5 * ITERATIONS
TICK_S = 0.005
# Issue 12 asks for no stall over 50 ms. What stays on the loop is Textual's own work
# (mounting a screen, laying out a tab, recomposing the footer): on the shared 2-core
# test machine (load ≈ 4) the same flows on a 100-dispatch run stall as long as on this
# 200k one — worst 0.43 s (tab switch, help screen) on the main screen, 0.24 s on the
# diff screens (pair screen mount); main-thread CPU per stall up to 0.22 s. The bound is
# set above those figures and below the freezes that analyses on the loop cause at this
# size: diff_runsets for the match mode alone takes 1.08 s here.
MAX_GAP_S = 0.9


# The loop thread's own CPU between two ticks while the background analyses of a freshly
# shown run are computed and handed to the panes (time.thread_time: the thread's work
# only, so neither the machine's load nor the workers holding the GIL count). What stays on
# the loop there is Textual's layout and painting and the panes' hand-over, one pane per
# turn of the loop: 13-75 ms for the longest interval on this 200k run over repeated runs
# of the same tree on a quiet machine (one Textual layout of the whole screen falls in one
# interval or not, by timing). The 30 ms target is measured in bench/bench_open.py;
# this bound is a guard that fails when an analysis or a 200k-row table build runs on the
# loop (hundreds of ms), not a timing of the target.
MAX_LOOP_CPU_S = 0.25


class LoopCpuMeter:
    """The most CPU the event loop's thread used between two ticks of a 5 ms timer, less
    the garbage collector's passes on that thread: a full collection scans every object
    of the test session (100-200 ms here after the other TUI tests), which is the test
    process's heap, not the app's work."""

    def __init__(self, app) -> None:
        self.app, self.last, self.worst, self.ticks = app, 0.0, 0.0, 0
        self.thread = threading.get_ident()
        self.gc_cpu, self.gc_last, self.gc_start = 0.0, 0.0, 0.0

    def start(self) -> None:
        """Call on the loop's thread (the test's coroutine runs there)."""
        gc.callbacks.append(self.collecting)
        self.last = time.thread_time()
        self.app.set_interval(TICK_S, self.tick)

    def stop(self) -> None:
        gc.callbacks.remove(self.collecting)

    def collecting(self, phase: str, info: dict) -> None:
        if threading.get_ident() != self.thread:
            return
        if phase == "start":
            self.gc_start = time.thread_time()
        else:
            self.gc_cpu += time.thread_time() - self.gc_start

    def tick(self) -> None:
        cpu = time.thread_time()
        self.worst = max(self.worst, cpu - self.last - (self.gc_cpu - self.gc_last))
        self.last, self.gc_last = cpu, self.gc_cpu
        self.ticks += 1


class StallMeter:
    """Largest gap between ticks of a 5 ms interval timer, and where it happened."""

    def __init__(self, app) -> None:
        self.app, self.last, self.worst, self.step, self.where = app, None, 0.0, "start", ""

    def start(self) -> None:
        self.last = time.perf_counter()
        self.app.set_interval(TICK_S, self.tick)

    def tick(self) -> None:
        now = time.perf_counter()
        gap = now - self.last
        if gap > self.worst:
            self.worst, self.where = gap, self.step
        self.last = now


@pytest.fixture(scope="module")
def big():
    return synthetic_runset("per_launch", iterations=ITERATIONS)


@pytest.fixture(autouse=True)
def _frozen_heap():
    """Earlier tests' objects out of the collector's way: a full collection scanning them
    would stall the loop for reasons that are the test session's, not the app's."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()


async def _first_screen(app, pilot) -> StallMeter:
    """The meter, started once the first screen (hotspots) has been painted."""
    for _ in range(TRIES * 10):
        await asyncio.sleep(0.01)
        if app.main.view is not None:
            break
    painted = asyncio.Event()
    app.main.call_after_refresh(painted.set)
    await painted.wait()
    meter = StallMeter(app)
    meter.start()
    return meter


def test_main_screens_never_stall_the_loop(big):
    runset, synth = big

    async def main() -> StallMeter:
        app = TuiProfApp(runset)
        async with app.run_test(size=(120, 40)) as pilot:
            meter = await _first_screen(app, pilot)
            assert len(app.main.view.kernels) == DISPATCHES
            await settle(app, pilot)
            for step, keys in (("tabs", "2345661"), ("grouping", "bbbbb"), ("dispatches", ["enter"])):
                meter.step = step
                await press(app, pilot, *keys)
            assert isinstance(app.screen, DispatchesScreen)
            top = app.screen.value
            assert app.screen.query_one("#dispatches").row_count == synth.expected.kernels.loc[top, "calls"]
            meter.step = "dispatch detail"
            await press(app, pilot, "enter")
            assert isinstance(app.screen, DispatchDetailScreen) and app.screen.detail is not None
            await press(app, pilot, "escape", "escape")
            meter.step = "gap screen"
            await press(app, pilot, "2", "n", "enter")
            assert isinstance(app.screen, GapScreen)
            gap = app.view.gaps.iloc[app.screen.gap_index]
            margin = gap["end"] - gap["start"]
            api = synth.api
            near = (api["end"] >= gap["start"] - margin) & (api["start"] <= gap["end"] + margin)
            assert app.screen.query_one("#gap-calls").row_count == int(near.sum())
            await press(app, pilot, "escape")
            meter.step = "kernel on timeline"
            await press(app, pilot, "1", "t", "c", "c")
            meter.step = "help"
            await press(app, pilot, "question_mark")
            assert isinstance(app.screen, HelpScreen)
            await press(app, pilot, "escape")
            meter.step = "evidence"
            await press(app, pilot, "4", "enter")
            assert isinstance(app.screen, MainScreen)
        return meter

    meter = asyncio.run(main())
    print(f"worst loop stall {meter.worst * 1000:.0f} ms during {meter.where}")
    assert meter.worst < MAX_GAP_S, f"loop stalled {meter.worst * 1000:.0f} ms during {meter.where}"


def test_diff_screens_never_stall_the_loop(big):
    runset_a, synth = big
    runset_b, _ = synthetic_runset("end", iterations=ITERATIONS)

    async def main() -> StallMeter:
        app = DiffApp(runset_a, runset_b)
        async with app.run_test(size=(160, 50)) as pilot:
            screen = app.diff_screen
            for _ in range(TRIES * 10):
                await asyncio.sleep(0.02)
                if screen.result is not None:
                    break
            await idle(app, pilot)
            meter = StallMeter(app)
            meter.start()
            assert isinstance(app.screen, DiffScreen)
            for by in ("normalized", "category", "name"):
                meter.step = f"match by {by}"
                await press(app, pilot, "m")
                assert screen.by == by
            meter.step = "pair screen"
            await press(app, pilot, "enter")
            assert isinstance(app.screen, PairScreen)
            key = app.screen.key
            calls = synth.expected.kernels.loc[key, "calls"]
            assert app.screen.query_one("#pair-a").row_count == app.screen.query_one("#pair-b").row_count == calls
            await press(app, pilot, "escape")
            meter.step = "kernel on timelines"
            await press(app, pilot, "t", "plus", "minus", "0")
        return meter

    meter = asyncio.run(main())
    print(f"worst loop stall {meter.worst * 1000:.0f} ms during {meter.where}")
    assert meter.worst < MAX_GAP_S, f"loop stalled {meter.worst * 1000:.0f} ms during {meter.where}"


def test_background_analyses_leave_the_loop_work_short(big, monkeypatch):
    """From the first paint until every lazy pane is shown, no interval between two ticks
    holds more than MAX_LOOP_CPU_S of the loop thread's CPU. The run comes after 0.5 s, as
    from a file: the loading screen (its footer included) is settled before the run is
    shown, so what showing the run costs falls after the first paint, as it does there."""
    runset, _ = big
    load = app_module.load_runset

    def slow_load(source, *args, **kwargs):
        time.sleep(0.5)
        return load(source, *args, **kwargs)

    monkeypatch.setattr(app_module, "load_runset", slow_load)

    async def main() -> LoopCpuMeter:
        app = TuiProfApp(runset)
        async with app.run_test(size=(160, 50)) as pilot:
            for _ in range(TRIES * 10):
                await asyncio.sleep(0.01)
                if app.main.view is not None:
                    break
            painted = asyncio.Event()
            app.main.call_after_refresh(painted.set)
            await painted.wait()
            meter = LoopCpuMeter(app)
            meter.start()
            try:
                await settle(app, pilot)
            finally:
                meter.stop()
            assert app.main.complete and len(app.main.view.kernels) == DISPATCHES
            measure = str(app.main.hotspots.query_one("#measure", Static).content)
            assert f"kernels {DISPATCHES:,}" in measure  # the summary reached its pane
        return meter

    meter = asyncio.run(main())
    print(f"longest loop-thread CPU between two ticks {meter.worst * 1000:.1f} ms ({meter.ticks} ticks)")
    assert meter.ticks > 10
    assert meter.worst < MAX_LOOP_CPU_S, f"the loop's thread worked {meter.worst * 1000:.0f} ms between two ticks"
