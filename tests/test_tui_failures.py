"""Every kind of TUI worker reports its failure (issue 29): an exception injected into the
work of each one ends as the one-line message of tui_prof.tui.workers.report_failure where
the widget said "computing…" — never a spinner left forever, never a traceback. Data: the
seeded synthetic run, a stepped run, the diff's classic pair."""

from __future__ import annotations

from pathlib import Path

from synthetic import synthetic_runset
from test_diff_support import as_runset, spec
from tui_harness import drive, idle, press, text_of, until

from tui_prof.synth import build
from tui_prof.synth.ranks import RankSpec, build_ranks
from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.diff import screens as diff_screens
from tui_prof.tui.diff.app import DiffApp
from tui_prof.tui.panes import hardware
from tui_prof.tui.panes.findings import FindingsPane
from tui_prof.tui.screens import detail, gap, main
from tui_prof.tui.screens.main import RankScreen
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.workers import COMPUTING

BOOM = "injected failure"


def boom(*args, **kwargs):
    raise RuntimeError(f"{BOOM}\nsecond line never shown")


def says_failed(text: str, what: str) -> bool:
    """One line naming what failed and why, and no "computing…" left."""
    return f"{what}: could not be computed: RuntimeError: {BOOM}" in text and COMPUTING not in text and "second line" not in text


def run():
    runset, _ = synthetic_runset("per_launch")
    return runset


def test_a_failed_summary_is_said_in_each_of_its_panes(monkeypatch):
    monkeypatch.setattr(RunView, "_compute_summary", boom)
    seen: dict = {}

    async def flow(app, pilot):
        for widget in ("#measure", "#capabilities-body", "#finding-detail", "#counters-body", "#issues-body", "#steps-header"):
            seen[widget] = text_of(app, widget)
        seen["hardware"] = text_of(app, "#hardware-body")  # the agents need no summary
        seen["complete"] = app.main.complete

    drive(TuiProfApp(run()), flow, size=(160, 50))
    for widget, text in seen.items():
        if widget not in ("hardware", "complete"):
            assert says_failed(text, "summary"), (widget, text)
    assert "Agents" in seen["hardware"] and seen["complete"]


def test_a_failed_timeline_is_said_in_its_status_line(monkeypatch):
    monkeypatch.setattr(RunView, "_compute_timeline", boom)
    seen: dict = {}

    async def flow(app, pilot):
        await press(app, pilot, "2")
        seen["status"] = text_of(app, "#tl-status")
        seen["measure"] = text_of(app, "#measure")

    drive(TuiProfApp(run()), flow, size=(160, 50))
    assert says_failed(seen["status"], "timeline")
    assert "span" in seen["measure"]  # the summary's panes are unaffected


def test_a_pane_whose_prepare_fails_says_so_and_the_others_show(monkeypatch):
    monkeypatch.setattr(FindingsPane, "prepare", boom)
    seen: dict = {}

    async def flow(app, pilot):
        seen["findings"] = text_of(app, "#finding-detail")
        seen["measure"] = text_of(app, "#measure")

    drive(TuiProfApp(run()), flow, size=(160, 50))
    assert says_failed(seen["findings"], "summary")
    assert "span" in seen["measure"]


def test_a_failed_grouping_is_said_in_the_hotspots_status(monkeypatch):
    original = RunView.group_column

    def failing(self, group):
        if group != "name":
            boom()
        return original(self, group)

    monkeypatch.setattr(RunView, "group_column", failing)
    seen: dict = {}

    async def flow(app, pilot):
        await press(app, pilot, "b")
        seen["status"] = text_of(app, "#hot-status")
        seen["group"] = app.main.hotspots.group
        await press(app, pilot, "b")  # the next key asks again (the failed grouping is not pending)
        seen["again"] = text_of(app, "#hot-status")

    drive(TuiProfApp(run()), flow, size=(160, 50))
    assert says_failed(seen["status"], "grouping") and seen["group"] == "name"
    assert says_failed(seen["again"], "grouping")


def test_failed_agents_are_said_in_the_hardware_pane(monkeypatch):
    monkeypatch.setattr(hardware, "agents_renderable", boom)
    seen: dict = {}

    async def flow(app, pilot):
        await press(app, pilot, "3")
        seen["agents"] = text_of(app, "#hardware-body")
        seen["capabilities"] = text_of(app, "#capabilities-body")

    drive(TuiProfApp(run()), flow, size=(160, 50))
    assert says_failed(seen["agents"], "agents")
    assert "Profiling capability" in seen["capabilities"] or "capabilities unknown" in seen["capabilities"]


def test_a_failed_step_range_is_said_in_the_steps_header(monkeypatch):
    trace = Path(__file__).parent / "data" / "kineto" / "h200" / "train_sync.pt.trace.json.gz"
    monkeypatch.setattr(RunView, "steps_for", boom)
    seen: dict = {}

    async def flow(app, pilot):
        await press(app, pilot, "8", "m")
        seen["header"] = text_of(app, "#steps-header")

    drive(TuiProfApp(trace, use_cache=False), flow, size=(160, 50))
    assert says_failed(seen["header"], "steps of a range")


def test_failed_dispatches_are_said_in_the_drill_downs_status(monkeypatch):
    seen: dict = {}

    async def flow(app, pilot):
        monkeypatch.setattr(RunView, "dispatches", boom)
        await press(app, pilot, "enter")
        seen["status"] = text_of(app, "#disp-status")

    drive(TuiProfApp(run()), flow, size=(160, 50))
    assert says_failed(seen["status"], "dispatches")


def test_a_failed_dispatch_detail_is_said_in_its_place(monkeypatch):
    monkeypatch.setattr(detail, "dispatch_detail", boom)
    seen: dict = {}

    async def flow(app, pilot):
        await press(app, pilot, "enter", "enter")
        seen["detail"] = text_of(app, "#detail")

    drive(TuiProfApp(run()), flow, size=(160, 50))
    assert says_failed(seen["detail"], "dispatch detail")


def test_failed_gap_calls_are_said_on_the_gap_screen(monkeypatch):
    monkeypatch.setattr(gap, "gap_host", boom)
    seen: dict = {}

    async def flow(app, pilot):
        await press(app, pilot, "2", "n", "enter")
        seen["screen"] = type(app.screen).__name__
        seen["error"] = text_of(app, "#gap-error")

    drive(TuiProfApp(run()), flow, size=(160, 50))
    assert seen["screen"] == "GapScreen"
    assert says_failed(seen["error"], "host calls in the gap")


def test_a_rank_screen_whose_view_fails_says_so(monkeypatch):
    built = build_ranks(RankSpec(ranks=2, iterations=10, compute_kernels=2))
    seen: dict = {}

    async def flow(app, pilot):
        monkeypatch.setattr(main, "build_view", boom)
        await press(app, pilot, "7", "enter")
        await until(app, pilot, lambda: isinstance(app.screen, RankScreen) and "could not" in text_of(app, "#load-status"))
        seen["status"] = text_of(app, "#load-status")

    drive(TuiProfApp(built.runset()), flow, size=(160, 50))
    assert says_failed(seen["status"], "the run view")


def diff_pair():
    return as_runset(build(spec("per_launch")), "sync_per_launch"), as_runset(build(spec("end")), "sync_once")


def test_a_failed_match_mode_is_said_in_the_diff_status(monkeypatch):
    monkeypatch.setattr(diff_screens, "rematch", boom)
    seen: dict = {}

    async def flow(app, pilot):
        await press(app, pilot, "m")
        seen["status"] = text_of(app, "#diff-status")
        await press(app, pilot, "m")  # the mode is not left pending: m asks again
        seen["again"] = text_of(app, "#diff-status")

    drive(DiffApp(*diff_pair()), flow, size=(160, 50))
    assert says_failed(seen["status"], "kernel matching") and says_failed(seen["again"], "kernel matching")


def test_failed_dispatch_pairs_are_said_on_the_pair_screen(monkeypatch):
    monkeypatch.setattr(diff_screens, "pair_stats", boom)
    seen: dict = {}

    async def flow(app, pilot):
        await settle_diff(app, pilot)
        await press(app, pilot, "enter")
        seen["a"] = text_of(app, "#pair-a-stats")
        seen["b"] = text_of(app, "#pair-b-stats")

    drive(DiffApp(*diff_pair()), flow, size=(160, 50))
    assert says_failed(seen["a"], "dispatch pairs") and says_failed(seen["b"], "dispatch pairs")


async def settle_diff(app, pilot) -> None:
    await idle(app, pilot)
    app.screen.query_one("#diff-table").focus()
    await idle(app, pilot)
