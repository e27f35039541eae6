"""Pilot tests and a 160×50 SVG snapshot of the diff screen (``tuiprof diff A B --tui``).

Data: the classic case — A synchronises after every launch, B once after the loop (same
seed, identical kernel durations) — and, for the snapshot and drill-down, B with the
attention kernel 2× slower and the reduce kernel removed (test_diff_support.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_diff_support import (
    ATTENTION,
    REDUCE,
    as_runset,
    remove_kernel,
    slow_down,
    spec,
)
from tui_harness import drive, press

from tui_prof.analysis.diff import diff_runsets
from tui_prof.synth import build
from tui_prof.tui.diff.app import DiffApp
from tui_prof.tui.diff.screens import DiffScreen, PairScreen
from tui_prof.tui.screens.help import HelpScreen
from tui_prof.tui.widgets.table import TableView
from tui_prof.tui.widgets.timeline import S_IDLE, Timeline


def classic():
    a, b = build(spec("per_launch")), build(spec("end"))
    return (
        as_runset(
            a,
            "sync_per_launch",
        ),
        as_runset(b, "sync_once"),
        a,
        b,
    )


def changed():
    a, b = build(spec("per_launch")), build(spec("end"))
    k, api, cp = slow_down(b.kernels, b.api, b.copies, ATTENTION)
    k, api = remove_kernel(k, api, REDUCE)
    return as_runset(a, "before"), as_runset(b, "after", k, api, cp), a


def idle_cells(timeline: Timeline) -> int:
    """Fully idle cells (░) inside GPU lanes of the current view."""
    _, style = timeline.frame()
    gpu = [i for i, lane in enumerate(timeline.model.lanes) if lane.kind == "gpu"]
    return int((style[gpu] == S_IDLE).sum())


def test_classic_case_gaps_disappear_and_zoom_is_linked():
    ra, rb, a, b = classic()

    async def flow(app, pilot):
        screen = app.screen
        assert isinstance(screen, DiffScreen)
        tla, tlb = screen.query_one("#tl-a", Timeline), screen.query_one("#tl-b", Timeline)
        # a shared relative axis: both fitted to the longer run (A), from 0
        span_a = a.expected.wall_span[1] - a.expected.wall_span[0]
        assert (tla.t0, tla.t1) == (tlb.t0, tlb.t1) == (0, tla.model.span)
        assert tla.model.span == tlb.model.span >= span_a
        assert tla.model.lanes[0].label.startswith("A ") and tlb.model.lanes[0].label.startswith("B ")
        idle = screen.result.metric("idle_pct")
        # idle % is a share of a GPU span that shrank: "changed"; the idle time itself "improved"
        assert idle["b"] < idle["a"] and idle["status"] == "changed"
        assert screen.result.metric("idle_ns")["status"] == "improved"
        # zoom the loop region from the keyboard with the table focused (+ zooms both)
        await pilot.press("plus", "plus", "plus")
        await pilot.pause()
        assert tla.t1 - tla.t0 == pytest.approx(tla.model.span / 8, rel=0.01)
        assert (tla.t0, tla.t1) == (tlb.t0, tlb.t1)
        # A shows idle cells between kernels; in B the same window is wall-to-wall busy
        assert idle_cells(tla) > 10 and idle_cells(tlb) == 0
        # zoom and pan inside timeline B: A follows
        await pilot.press("tab")
        assert app.focused is tla
        await pilot.press("tab")
        assert app.focused is tlb
        await pilot.press("w", "d")
        await pilot.pause()
        assert (tla.t0, tla.t1) == (tlb.t0, tlb.t1)
        assert tla.t1 - tla.t0 == pytest.approx(tla.model.span / 16, rel=0.01)
        await pilot.press("0")
        await pilot.pause()
        assert (tla.t0, tla.t1) == (tlb.t0, tlb.t1) == (0, tla.model.span)

    drive(DiffApp(ra, rb), flow, size=(160, 50))


def test_sort_match_mode_and_drill_in_and_out():
    ra, rb, a = changed()
    e = a.expected.kernels

    async def flow(app, pilot):
        screen = app.screen
        table = screen.query_one("#diff-table", TableView)
        assert table.has_focus
        keys = list(table.model.frame["key"].to_numpy()[table.model.order])
        assert keys[:2] == [ATTENTION, REDUCE]  # |Δ total| order
        # sort by the Δ total column (6 columns right of the key), descending then ascending
        await pilot.press(*["l"] * 6, "s")
        assert table.sort_column == "delta_ns" and table.model.descending
        deltas = table.model.frame["delta_ns"].to_numpy()[table.model.order]
        assert np.all(np.diff(deltas) <= 0) and deltas[0] == e.loc[ATTENTION, "total_ns"]
        await pilot.press("s")
        deltas = table.model.frame["delta_ns"].to_numpy()[table.model.order]
        assert deltas[0] == -e.loc[REDUCE, "total_ns"]
        await pilot.press("r")
        assert table.sort_column is None
        assert table.current_row["key"] == ATTENTION
        # drill into the slowed kernel: A's and B's dispatches side by side
        await press(app, pilot, "enter")
        pair = app.screen
        assert isinstance(pair, PairScreen) and pair.key == ATTENTION
        ta, tb = pair.query_one("#pair-a", TableView), pair.query_one("#pair-b", TableView)
        assert ta.row_count == tb.row_count == e.loc[ATTENTION, "calls"]
        assert int(ta.model.frame["dur"].sum()) == e.loc[ATTENTION, "total_ns"]
        assert int(tb.model.frame["dur"].sum()) == 2 * e.loc[ATTENTION, "total_ns"]
        assert ta.has_focus
        await pilot.press("tab")
        assert tb.has_focus
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen and table.current_row["key"] == ATTENTION
        # the removed kernel: A has its dispatches, B none
        await press(app, pilot, "j", "enter")
        pair = app.screen
        assert pair.key == REDUCE
        assert pair.query_one("#pair-a", TableView).row_count == e.loc[REDUCE, "calls"]
        assert pair.query_one("#pair-b", TableView).row_count == 0
        await pilot.press("escape")
        await pilot.pause()
        # match by normalised name, then by category
        await press(app, pilot, "m")
        assert screen.by == "normalized"
        assert "at::native::reduce_kernel" in set(screen.result.kernels["key"])
        # only the kernel matching is recomputed: the same table and metrics as a full diff
        full = diff_runsets(ra, rb, by="normalized")
        assert screen.result.kernels.equals(full.kernels) and screen.result.metrics == full.metrics
        await press(app, pilot, "m")
        assert screen.by == "category"
        cat = screen.result.kernels.set_index("key")
        assert cat.loc["attention", "delta_ns"] == e.loc[ATTENTION, "total_ns"]
        assert cat.loc["reduction", "status"] == "removed"
        # t marks the selected kernel's first dispatch on both timelines
        await pilot.press("r", "t")
        await pilot.pause()
        tla, tlb = screen.query_one("#tl-a", Timeline), screen.query_one("#tl-b", Timeline)
        # the top row is the attention category: its one kernel's first dispatch in each run
        assert table.current_row["key"] == "attention"
        for tl, view in zip((tla, tlb), screen.views, strict=True):
            first = view.kernels[view.kernels["name"].astype(str) == ATTENTION].iloc[0]
            assert tl.marker == (int(first["lane"]), int(first["t"]), int(first["t"] + first["dur"]))
        assert (tla.t0, tla.t1) == (tlb.t0, tlb.t1) and tla.t1 - tla.t0 < tla.model.span

    drive(DiffApp(ra, rb), flow, size=(160, 50))


def test_load_failure_is_shown_not_raised(tmp_path):
    async def flow(app, pilot):
        text = str(app.screen.query_one("#diff-metrics").render())
        assert "no such file or directory" in text

    drive(DiffApp(tmp_path / "missing", tmp_path), flow, size=(100, 20))


def test_snapshot_160x50(snap_compare):
    ra, rb, _ = changed()

    async def run_before(pilot):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("plus", "plus")
        await pilot.pause()

    assert snap_compare(DiffApp(ra, rb), terminal_size=(160, 50), run_before=run_before)


def test_keys_with_default_focus_help_and_palette():
    """At 80×24 the diff opens on its summary (focused): w zooms both timelines, a/d pan
    both, n jumps to A's next gap; on the kernels (2) s sorts the table; ? opens the key
    help listing them; the palette has the diff's own commands."""
    ra, rb, _, _ = classic()

    async def flow(app, pilot):
        screen = app.screen
        table = screen.query_one("#diff-table", TableView)
        tla, tlb = screen.query_one("#tl-a", Timeline), screen.query_one("#tl-b", Timeline)
        assert screen.compact and app.focused is screen.query_one("#diff-summary")
        width = tla.t1 - tla.t0
        await press(app, pilot, "w")
        assert tla.t1 - tla.t0 == width // 2 and (tlb.t0, tlb.t1) == (tla.t0, tla.t1)
        before = tla.t0
        await press(app, pilot, "d")
        assert tla.t0 > before and (tlb.t0, tlb.t1) == (tla.t0, tla.t1)
        await press(app, pilot, "a")
        assert tla.t0 == before
        await press(app, pilot, "0", "n")
        assert tla.gap_index == 0
        await press(app, pilot, "2", "s")
        assert table.sort_column is not None and table.has_focus
        await press(app, pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        rows = app.key_rows()
        assert ("diff screen", "w + =", "Zoom both") in rows and ("diff screen", "n", "Next gap (A)") in rows
        await press(app, pilot, "escape")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in ("Summary", "Kernels", "Timelines", "Match by next mode", "Zoom both in", "Pan both left", "Next gap", "Keys"):
            assert title in titles

    drive(DiffApp(ra, rb), flow)
