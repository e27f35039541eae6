"""The rank table fills while a multi-process run loads (issue 14, scale): rows appear as
each rank's work unit loads, before the other panes, and the table completes with the
generator's numbers (tui_prof.synth.ranks: four ranks as rocprofv3 CSV, rank 2 computes
50 % longer). The loader is gated so that units are released one by one."""

from __future__ import annotations

import asyncio
import threading

import pytest
from tui_harness import TRIES, settle

from tui_prof.analysis.summary import build_summary
from tui_prof.loaders import load_path, rocprofv3_csv
from tui_prof.synth.ranks import RankSpec, build_ranks, write_ranks
from tui_prof.tui import app as app_module
from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.panes.ranks import RanksPane
from tui_prof.tui.view.rankrows import PENDING, RankRows

SPEC = RankSpec(ranks=4, iterations=3, slow_rank=2, slow_pct=50)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    ranks = build_ranks(SPEC)
    return write_ranks(ranks, tmp_path_factory.mktemp("ranks") / "run", "csv"), ranks


async def _until(pilot, condition) -> None:
    for _ in range(TRIES):
        await pilot.pause(0.01)
        if condition():
            return
    raise AssertionError("condition never held")


def _check_final(pane: RanksPane, expected) -> None:
    frame = pane.table.model.frame
    assert frame["rank"].tolist() == [0, 1, 2, 3]
    assert frame["wait_ns"].tolist() == expected.wait_by_rank
    assert frame["compute_ns"].tolist() == expected.compute_ns
    assert frame["communication_ns"].tolist() == expected.communication_ns
    assert frame["copy_ns"].tolist() == expected.copy_ns
    assert frame["sync_ns"].tolist() == expected.sync_ns
    assert frame["span_ns"].tolist() == expected.span_ns
    header = str(pane.query_one("#ranks-header").render())
    assert "4 rank(s)" in header and "straggler: rank 2 (last at 3 of 3 collectives)" in header


def test_rank_rows_fill_as_units_load(run_dir, monkeypatch):
    path, ranks = run_dir
    gate = threading.Semaphore(0)
    original = rocprofv3_csv.load

    def gated(files, issues):
        gate.acquire()
        return original(files, issues)

    monkeypatch.setattr(rocprofv3_csv, "load", gated)
    monkeypatch.setattr(app_module, "RANK_ROWS_INTERVAL_S", 0.0)  # every unit refills the table
    monkeypatch.setenv("TUIPROF_LOAD_WORKERS", "1")  # one unit at a time, in unit order

    async def main() -> None:
        app = TuiProfApp(path, use_cache=False)
        async with app.run_test(size=(160, 50)) as pilot:
            pane = app.main.query_one(RanksPane)
            tabs = app.main.query_one("#tabs")
            gate.release()
            await pilot.pause(0.2)
            assert not tabs.display  # one process loaded: it may be the only one
            gate.release()
            await _until(pilot, lambda: pane.table.row_count == 2)
            # the ranks pane is the first screen; the others wait for every process
            assert tabs.display and tabs.active == "ranks" and app.main.view is None
            assert str(pane.query_one("#ranks-header").render()).startswith("Loading: 2 of 4 ranks loaded")
            frame = pane.table.model.frame
            assert frame["wait_ns"].tolist() == [PENDING, PENDING]  # waits compare every rank
            assert frame["compute_ns"].tolist() == ranks.expected.compute_ns[:2]  # a rank's own figures are final
            assert "…" in pane.table.render_line(1).text
            await pilot.press("1")  # the hotspots come with every process
            assert tabs.active == "ranks"
            gate.release()
            await _until(pilot, lambda: pane.table.row_count == 3)
            gate.release()
            await settle(app, pilot)
            _check_final(pane, ranks.expected)
            assert tabs.active == "ranks" and app.main.view is not None
            await pilot.press("1")
            assert tabs.active == "hotspots"

    asyncio.run(main())


def test_cached_reopen_gives_the_same_rank_table(run_dir, monkeypatch, tmp_path):
    path, ranks = run_dir
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))

    async def main() -> None:
        for _ in range(2):  # the first open writes the cache, the second reads every unit from it
            app = TuiProfApp(path)
            async with app.run_test(size=(160, 50)) as pilot:
                await settle(app, pilot)
                pane = app.main.query_one(RanksPane)
                _check_final(pane, ranks.expected)
                assert app.main.query_one("#tabs").active == "ranks"

    asyncio.run(main())
    assert any((tmp_path / "cache").iterdir())


def test_rank_rows_equal_the_summary_sections(run_dir):
    """RankRows (one core per process as it loads, the comparisons at the end) gives the
    summary's ranks, communication and stragglers sections exactly."""
    path, _ = run_dir
    rows = RankRows()
    runset = load_path(path, use_cache=False, on_unit=rows.add)
    assert rows.processes == 4 and (rows.done, rows.total) == (4, 4)
    final = rows.final(runset)
    doc = build_summary(runset)
    for key in ("ranks", "communication", "stragglers"):
        assert final[key] == doc[key]
    # the cores of the assembled runs were reused, not computed again
    assert {id(c.run) for c in rows.cores} == {id(run) for run in runset.runs}


def test_opens_on_ranks_only_for_several_traced_processes(run_dir):
    """Four traced ranks open on the rank table; the rocprofv3 documentation folder (one
    traced process beside two fragments: a stats table and an agent list) opens on its
    hotspots; two ranks with statistics and no trace open on the rank table."""
    from pathlib import Path

    from tui_prof.model.run import Run
    from tui_prof.tui.view.rankrows import opens_on_ranks

    path, _ = run_dir
    assert opens_on_ranks(load_path(path, use_cache=False).runs)
    docs = load_path(Path(__file__).parent / "data" / "rocprofv3_csv" / "rocprofv3-docs-rocm7", use_cache=False).runs
    assert len(docs) == 3 and not opens_on_ranks(docs)
    traced = [r for r in docs if len(r.kernels)]
    stats_only = [r for r in docs if len(r.tool_stats) and not len(r.kernels)]
    assert len(traced) == 1 and len(stats_only) == 1
    assert opens_on_ranks(stats_only * 2) and not opens_on_ranks(stats_only) and not opens_on_ranks([Run(), Run()])
