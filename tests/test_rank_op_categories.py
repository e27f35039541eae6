"""Issue 33 item 2: the rank table's compute/copy split uses the category table's categories
(operator first), so one summary gives one answer.

Checked against the category table of each rank's trace summarised alone, an exact parse of
the trace's ``gpu_memcpy``/``gpu_memset`` events, and the figures of issue 33 (rank 0 compute
197,217,000 ns, copy 14,428,000 ns; the straggler's compute excess 32.15 %)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.loaders import load_path

RANKS = Path(__file__).parent / "data" / "kineto" / "ranks"
NOT_COMPUTE = ("communication", "copy/fill")


def copy_engine_ns(path: Path) -> int:
    """Σ duration (ns) of the trace's memcpy/memset events, straight from the JSON."""
    with gzip.open(path) as fh:
        events = json.load(fh)["traceEvents"]
    return sum(round(e["dur"] * 1000) for e in events if e.get("ph") == "X" and e.get("cat") in ("gpu_memcpy", "gpu_memset"))


@pytest.fixture(scope="module")
def both():
    return build_summary(load_path(RANKS, use_cache=False), SummaryOptions(logs=False))


@pytest.mark.parametrize("rank", [0, 1])
def test_rank_compute_and_copy_follow_the_category_table(both, rank):
    path = RANKS / f"sampled_rank-{rank}.json.gz"
    alone = build_summary(load_path(path, use_cache=False), SummaryOptions(logs=False))
    cats = alone["categories"]
    row = next(r for r in both["ranks"] if r["rank"] == rank)
    # one stream per rank for these kernels: the union equals the category table's sum
    assert row["compute_ns"] == sum(v for k, v in cats.items() if k not in NOT_COMPUTE)
    assert row["copy_ns"] == cats["copy/fill"] + copy_engine_ns(path)
    assert row["communication_ns"] == cats["communication"]


def test_hta_ranks_figures_of_the_issue(both):
    r0, r1 = sorted(both["ranks"], key=lambda r: r["rank"])
    assert (r0["compute_ns"], r0["copy_ns"]) == (197_217_000, 14_428_000)  # was 209,261,000 / 2,384,000 (by kernel name)
    strag = both["stragglers"]
    assert strag["rank"] == 1
    assert strag["compute_excess_pct"] == pytest.approx(100.0 * (r1["compute_exposed_ns"] - r0["compute_exposed_ns"]) / r0["compute_exposed_ns"], abs=1e-3)
    assert strag["compute_excess_pct"] == pytest.approx(32.15, abs=0.005)
    # HTA's comm/compute overlap is unchanged (docs/hta_crosscheck.md: copy kernels are compute there)
    assert (r0["overlap_ns"], r1["overlap_ns"]) == (59_216_000, 75_530_000)


def test_tui_rank_rows_give_the_summary_answer(both):
    """The TUI's rank rows (RankRows: each process's core as it loads, then the comparisons)
    split compute and copy by the same categories as the summary: one answer."""
    from tui_prof.tui.view.rankrows import RankRows

    rows = RankRows()
    runset = load_path(RANKS, use_cache=False, on_unit=rows.add)
    provisional = sorted(rows.provisional()["ranks"], key=lambda r: r["rank"])
    assert (provisional[0]["compute_ns"], provisional[0]["copy_ns"]) == (197_217_000, 14_428_000)
    final = rows.final(runset)
    for key in ("ranks", "communication", "stragglers"):
        assert final[key] == both[key]
    assert final["stragglers"]["compute_excess_pct"] == pytest.approx(32.15, abs=0.005)


def test_tui_rank_rows_leave_out_counter_passes_as_the_summary_does():
    """rocprofv3-docs-rocm7 holds two counter passes recorded by other processes (issue 32):
    neither the summary's ranks nor the TUI's rank rows count them as ranks."""
    from tui_prof.tui.view.rankrows import RankRows

    path = Path(__file__).parent / "data" / "rocprofv3_csv" / "rocprofv3-docs-rocm7"
    rows = RankRows()
    runset = load_path(path, use_cache=False, on_unit=rows.add)
    passes = [r for r in runset.runs if "counter_pass_of" in r.meta.extra]
    assert len(passes) == 2
    final = rows.final(runset)
    doc = build_summary(runset, SummaryOptions(logs=False))
    assert len(final["ranks"]) == len(runset.runs) - len(passes)
    for key in ("ranks", "communication", "stragglers"):
        assert final[key] == doc[key]


def test_the_ranks_pane_shows_the_summary_split(both):
    """Opened in the TUI, the ranks pane's compute and copy columns are the summary's."""
    from tui_harness import drive

    from tui_prof.tui.app import TuiProfApp
    from tui_prof.tui.panes.ranks import RanksPane

    shown = {}

    async def flow(app, pilot):
        frame = app.main.query_one(RanksPane).table.model.frame
        shown.update({int(r): (int(c), int(p)) for r, c, p in zip(frame["rank"], frame["compute_ns"], frame["copy_ns"])})

    drive(TuiProfApp(RANKS, use_cache=False), flow, size=(160, 50))
    assert shown == {r["rank"]: (r["compute_ns"], r["copy_ns"]) for r in both["ranks"]}
    assert shown[0] == (197_217_000, 14_428_000)
