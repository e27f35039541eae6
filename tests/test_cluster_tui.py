"""``tuiprof open RUN --cluster``: the rank table from the ranks merged out of per-rank
partials (issue 36); Enter loads that rank alone (its own files, nothing else) and opens
its own panes. The ranks are reduced on a process pool here (no Dask needed)."""

from __future__ import annotations

import pytest
from tui_harness import idle, until

from tui_prof import cluster
from tui_prof.analysis.api import DEFAULT_CATEGORY_RULES
from tui_prof.synth.ranks import RankSpec, build_ranks, write_ranks
from tui_prof.tui.cluster_app import MergedRanksApp
from tui_prof.tui.panes.ranks import RanksTable
from tui_prof.tui.screens.main import RankScreen

pytestmark = pytest.mark.timeout(300)
SPEC = RankSpec(ranks=6, iterations=3, slow_rank=4, slow_pct=50)


def test_merged_rank_table_opens_one_rank_alone(tmp_path) -> None:
    ranks = build_ranks(SPEC)
    run = write_ranks(ranks, tmp_path / "run", "kineto")
    merged = cluster.summarise_pool(cluster.plan(str(run), use_cache=False).tasks, DEFAULT_CATEGORY_RULES, 1)
    app = MergedRanksApp(merged.document(20), merged.files, use_cache=False)

    async def flow() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await idle(app, pilot)
            table = app.screen.query_one("#merged-ranks", RanksTable)
            frame = table.model.frame
            assert sorted(frame["rank"].tolist()) == list(range(6))
            assert frame.sort_values("rank")["wait_ns"].tolist() == ranks.expected.wait_by_rank
            header = str(app.screen.query_one("#merged-header").render())
            assert "straggler: rank 4" in header and "6 of 6 ranks merged from per-rank partials" in header
            table.sort_by("rank", False)
            table.cursor = 4
            await pilot.press("enter")
            await until(app, pilot, lambda: isinstance(app.screen, RankScreen) and app.screen.complete)
            screen = app.screen
            assert screen.rank == 4
            # that rank alone was loaded: one process, its own kernels
            assert len(screen.view.runset.runs) == 1
            assert screen.view.runset.runs[0].meta.files == [str(run / "rank4.pt.trace.json.gz")]
            assert len(screen.view.kernels) == len(ranks.runs[4].kernels)
            await pilot.press("escape")
            await idle(app, pilot)
            assert not isinstance(app.screen, RankScreen)

    import asyncio

    asyncio.run(flow())
