"""The ranks pane (tab 7) and the rank drill-down: Pilot tests on a generated four-rank run
(rocprofv3 CSV, rank 2 computes 50 % longer) and SVG snapshots at 160×50 and 80×24."""

from __future__ import annotations

import pytest
from tui_harness import drive, idle, settle, until

from tui_prof.loaders import load_path
from tui_prof.synth.ranks import RankSpec, build_ranks, write_ranks
from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.panes.ranks import RanksPane
from tui_prof.tui.screens.main import RankScreen

SPEC = RankSpec(ranks=4, iterations=3, slow_rank=2, slow_pct=50)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    ranks = build_ranks(SPEC)
    return write_ranks(ranks, tmp_path_factory.mktemp("ranks") / "run", "csv"), ranks


def test_ranks_pane_lists_every_rank_sorts_and_opens_a_rank(run_dir):
    path, ranks = run_dir
    runset = load_path(path, use_cache=False)

    async def flow(app, pilot):
        await settle(app, pilot)
        await pilot.press("7")
        await idle(app, pilot)
        assert app.main.query_one("#tabs").active == "ranks"
        table = app.main.query_one(RanksPane).table
        assert table.row_count == 4
        frame = table.model.frame
        assert frame["rank"].tolist() == [0, 1, 2, 3]
        assert frame["wait_ns"].tolist() == ranks.expected.wait_by_rank
        assert frame["compute_ns"].tolist() == ranks.expected.compute_ns
        header = str(app.main.query_one("#ranks-header").render())
        assert "4 rank(s), rank from host, pid order" in header and "straggler: rank 2 (last at 3 of 3 collectives)" in header
        # sort by wait, longest first: rank 2 (no wait) last
        table.sort_by("wait_ns", True)
        await idle(app, pilot)
        assert int(table.model.frame["rank"].iloc[table.model.order[-1]]) == 2
        table.sort_by("rank", False)
        table.cursor = 2
        await pilot.press("enter")
        await until(app, pilot, lambda: isinstance(app.screen, RankScreen) and app.screen.complete)
        screen = app.screen
        assert screen.rank == 2
        assert [r.meta.pid for r in screen.view.runset.runs] == [5002]
        assert screen.view.runset.runs[0] is runset.runs[2]  # the loaded run itself: nothing reloaded
        assert len(screen.view.kernels) == len(runset.runs[2].kernels)
        title = str(screen.query_one("#title").render())
        assert "rank 2" in title and "1 process(es)" in title
        # its own findings: one process has no straggler; its hotspots: the rank's kernels
        assert "straggler" not in {f["code"] for f in screen.view.summary["findings"]}
        assert screen.view.summary["kernels"]["dispatches"] == len(runset.runs[2].kernels)
        await pilot.press("escape")
        await idle(app, pilot)
        assert app.screen is app.main

    drive(TuiProfApp(runset), flow, size=(160, 50))


def test_single_process_run_has_no_ranks_tab():
    from synthetic import synthetic_runset

    runset, _ = synthetic_runset("per_launch")

    async def flow(app, pilot):
        await settle(app, pilot)
        await pilot.press("7")
        await idle(app, pilot)
        assert app.main.query_one("#tabs").active == "hotspots"

    drive(TuiProfApp(runset), flow)


@pytest.mark.parametrize("size", [(160, 50), (80, 24)], ids=["160x50", "80x24"])
def test_ranks_snapshot(snap_compare, run_dir, size):
    path, _ = run_dir
    runset = load_path(path, use_cache=False)
    runset.root = "ranks-run"  # the tmp path would change the title between runs

    async def run_before(pilot):
        await settle(pilot.app, pilot)
        # the run opens on the ranks tab; 1 then 7 activates it as a user switching to it
        # does, so the tab bar scrolls to it the same way on every run
        await pilot.press("1")
        await idle(pilot.app, pilot)
        await pilot.press("7")
        await idle(pilot.app, pilot)

    assert snap_compare(TuiProfApp(runset), terminal_size=size, run_before=run_before)
