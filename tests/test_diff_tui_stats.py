"""``tuiprof diff --tui`` for issue 15 (verdict reasons, n/a sides, kernel shares,
per-domain rows, an empty diff as an error) and issue 20 item 3 (80×24: sections one at
a time, numbers never cut, B's timeline reachable).

Expected strings come from :mod:`tui_prof.render.diff`'s formatting of the analysis'
numbers and from the statistics files read with the csv module.
"""

from __future__ import annotations

import csv
import math
import shutil
from pathlib import Path

import pytest
from test_diff_support import as_runset, spec
from test_stats_and_gate import FOUR_PROCESS, ONE_PROCESS, RCCL
from tui_harness import drive, press, text_of

from tui_prof.cli import main
from tui_prof.exits import EXIT_NOTHING_LOADED
from tui_prof.render.diff import fmt_metric, fmt_rel
from tui_prof.synth import build
from tui_prof.tui.diff.app import DiffApp
from tui_prof.tui.diff.screens import DiffScreen, fmt_share
from tui_prof.tui.screens.help import HelpScreen
from tui_prof.tui.widgets.table import TableView
from tui_prof.tui.widgets.timeline import Timeline

DATA = Path(__file__).parent / "data"


def flat(text: str) -> str:
    return " ".join(text.split())


def metrics_text(app) -> str:
    widget = app.screen.query_one("#diff-metrics")
    return text_of(app, "#diff-metrics", width=widget.content_size.width)


@pytest.fixture(scope="module")
def stats_pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("statspair")
    a, b = root / "one", root / "four"
    a.mkdir()
    b.mkdir()
    (a / "2117183_kernel_stats.csv").write_text(ONE_PROCESS)
    (b / "2117301_kernel_stats.csv").write_text(FOUR_PROCESS)
    return a, b


def test_80x24_sections_numbers_whole_and_b_reachable():
    a, b = build(spec("per_launch")), build(spec("end"))
    ra, rb = as_runset(a, "sync_per_launch"), as_runset(b, "sync_once")

    async def flow(app, pilot):
        screen = app.screen
        assert isinstance(screen, DiffScreen) and screen.compact and screen.section == "summary"
        assert not screen.query_one("#diff-table").display and not screen.query_one("#diff-timelines").display
        text = metrics_text(app)
        lines = text.splitlines()
        assert max(len(line.rstrip()) for line in lines) <= screen.query_one("#diff-metrics").content_size.width
        assert "…" not in text  # nothing cut
        for m in screen.result.metrics:
            row = next(line for line in lines if line.startswith(m["label"].split()[0]) and fmt_metric(m["a"], m["unit"]) in line)
            for cell in (fmt_metric(m["a"], m["unit"]), fmt_metric(m["b"], m["unit"]), fmt_metric(m["delta"], m["unit"], signed=True)):
                assert f" {cell}" in row  # whole, on the metric's own line
            if m["unit"] != "pct":
                assert fmt_rel(m["delta_pct"]) in row
        within = sum(m["status"] == "within noise" for m in screen.result.metrics)
        assert within and text.count("within noise") == within
        # each "changed" verdict says why
        changed = [m for m in screen.result.metrics if m["status"] == "changed"]
        assert {m["key"] for m in changed} >= {"sync_pct", "idle_pct"}
        for m in changed:
            assert flat(f"{m['label']} changed: {m['reason']}") in flat(text)
        # 3: both timelines, each with the whole height's half, B on the screen
        await press(app, pilot, "3")
        tla, tlb = screen.query_one("#tl-a", Timeline), screen.query_one("#tl-b", Timeline)
        assert tla.has_focus and tlb.display
        assert tlb.region.height >= 5 and tlb.region.bottom <= 23 and tlb.region.y > tla.region.bottom - 1
        await press(app, pilot, "tab")
        assert tlb.has_focus
        await press(app, pilot, "2")
        table = screen.query_one("#diff-table", TableView)
        assert table.has_focus and table.region.height >= 15
        await press(app, pilot, "1")
        assert app.focused is screen.query_one("#diff-summary")
        assert text_of(app, "#diff-status").strip() == "2 kernels (s sort) · 3 timelines · w/- zoom · a/d pan · n/N gap · ? keys"
        await press(app, pilot, "f1")
        assert isinstance(app.screen, HelpScreen)
        await press(app, pilot, "escape")
        assert app.screen is screen

    drive(DiffApp(ra, rb), flow, size=(80, 24))


def test_stats_only_pair_shares_domains_and_na(stats_pair):
    a, b = stats_pair
    with open(b / "2117301_kernel_stats.csv", newline="") as fh:
        four = {r["Name"]: r for r in csv.DictReader(fh)}
    with open(a / "2117183_kernel_stats.csv", newline="") as fh:
        one = {r["Name"]: r for r in csv.DictReader(fh)}

    async def flow(app, pilot):
        screen = app.screen
        assert not screen.compact
        table = screen.query_one("#diff-table", TableView)
        frame = table.model.frame.set_index("key")
        assert frame.loc[RCCL, "status"] == "added" and frame.loc[RCCL, "share_b"] == float(four[RCCL]["Percentage"])
        assert math.isnan(frame.loc[RCCL, "share_a"])
        bn = "MIOpenBatchNormBwdSpatial"
        assert (frame.loc[bn, "share_a"], frame.loc[bn, "share_b"]) == (float(one[bn]["Percentage"]), float(four[bn]["Percentage"]))
        assert [c.key for c in table.columns][-2:] == ["share_a", "share_b"]
        assert table.formatters["share_b"](82.74) == fmt_share(82.74) == "82.74%" and fmt_share(float("nan")) == "-"
        text = flat(metrics_text(app))
        for label in ("span (wall)", "exposed sync", "GPU idle time"):
            assert f"{label} - - - - ±2% n/a (no trace in A and B)" in text
        assert "GPU idle % - - - ±1pp n/a (no trace in A and B)" in text  # a % metric: no Δ % cell
        assert "n/a (no trace in A and B): not compared, cannot pass or fail the gate" in text
        calls_a = sum(int(r["Calls"]) for r in one.values())
        calls_b = sum(int(r["Calls"]) for r in four.values())
        d = screen.result.domains[0]
        assert (d["calls_a"], d["calls_b"]) == (calls_a, calls_b)
        assert f"KERNEL_DISPATCH slower {calls_a} {calls_b} {fmt_metric(d['total_a_ns'], 'ns')} {fmt_metric(d['total_b_ns'], 'ns')}" in text
        # no trace on either side: the timelines say so instead of empty lanes
        assert not screen.query_one("#tl-a").display and not screen.query_one("#tl-b").display
        assert "No trace in A and B" in text_of(app, "#tl-missing")
        assert "B four · no trace (statistics only)" in text_of(app, "#tl-b-label")
        await press(app, pilot, "enter")  # no dispatches to pair: the row is all there is
        assert app.screen is screen

    drive(DiffApp(a, b, use_cache=False), flow, size=(160, 50))


@pytest.fixture()
def empty_pair(tmp_path):
    for side in ("A", "B"):
        (tmp_path / side).mkdir()
        shutil.copy(DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7" / "238_agent_info.csv", tmp_path / side)
    return tmp_path / "A", tmp_path / "B"


def test_empty_diff_is_an_error(empty_pair, monkeypatch):
    a, b = empty_pair

    async def flow(app, pilot):
        assert (
            app.load_error
            == "A (A) holds no kernels, API calls, copies or statistics to compare\nB (B) holds no kernels, API calls, copies or statistics to compare"
        )
        assert "A (A) holds no kernels" in text_of(app, "#diff-metrics")
        assert app.screen.result is None

    drive(DiffApp(a, b, use_cache=False), flow)

    # tuiprof diff --tui exits 1 after q, as the CLI's text diff does
    def run(self, **kwargs):
        self.load_error = "A (A) holds no kernels, API calls, copies or statistics to compare"

    monkeypatch.setattr(DiffApp, "run", run)
    assert main(["diff", str(a), str(b), "--tui", "--no-cache"]) == EXIT_NOTHING_LOADED


@pytest.mark.parametrize("keys", [[], ["3"]], ids=["summary", "timelines"])
def test_snapshot_80x24(snap_compare, keys):
    """The diff at 80×24: the summary with whole numbers and the reasons; both timelines."""
    from test_diff_tui import changed

    ra, rb, _ = changed()

    async def run_before(pilot):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await pilot.pause()

    assert snap_compare(DiffApp(ra, rb), terminal_size=(80, 24), run_before=run_before)
