"""The steps pane (tab 8): the step table, the sparkline header, Enter zooms the timeline to
the step, step boundaries as ruler ticks; snapshots at 160×50 and 80×24. Data: the stepped
generator (tui_prof/synth/steps.py), whose steps are known by construction."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tui_harness import drive, idle, settle, text_of, until

from tui_prof.model import Run, RunMeta, RunSet
from tui_prof.render.fmt import SPARK
from tui_prof.synth.steps import StepSpec, build_rank_steps, build_steps
from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.panes.steps import StepsPane
from tui_prof.tui.widgets.timeline import Timeline


def stepped_runset() -> tuple[RunSet, object]:
    run, answers = build_steps(StepSpec())
    meta = RunMeta(formats=["synthetic"], tool="synth", label="synthhost/4242", hostname="synthhost", pid=4242)
    r = Run(meta=meta, agents=run.agents, kernels=run.kernels, api=run.api, copies=run.copies, markers=run.markers, allocations=run.allocations)
    return RunSet(root="synthetic_steps", runs=[r]), answers


def test_steps_pane_rows_header_and_enter_zooms_to_the_step():
    runset, ans = stepped_runset()
    seen: dict = {}

    async def flow(app, pilot):
        await settle(app, pilot)
        await pilot.press("8")
        await idle(app, pilot)
        pane = app.screen.query_one(StepsPane)
        table = pane.table
        seen["labels"] = table.model.frame["label"].tolist()
        seen["walls"] = table.model.frame["wall_ns"].tolist()
        seen["header"] = text_of(app, "#steps-header")
        for _ in range(ans.outlier):
            await pilot.press("down")
        await pilot.press("enter")
        await idle(app, pilot)
        timeline = app.screen.query_one("#timeline-view", Timeline)
        seen["tab"] = app.screen.query_one("#tabs").active
        seen["view"] = (timeline.t0, timeline.t1)
        seen["origin"] = app.view.timeline.origin
        seen["marks"] = timeline.step_marks.tolist()
        seen["ruler"] = timeline.render_line(0).text

    drive(TuiProfApp(runset), flow, size=(160, 50))
    assert seen["labels"] == ["w " + ans.labels[0]] + ans.labels[1:]
    assert seen["walls"] == ans.walls
    assert "train_step" in seen["header"] and any(c in seen["header"] for c in SPARK)
    assert "slow train_step [6]" in seen["header"] and "1 more copy" in seen["header"]
    assert seen["tab"] == "timeline"
    origin = seen["origin"]
    assert seen["view"] == (ans.starts[ans.outlier] - origin, ans.ends[ans.outlier] - origin)
    assert seen["marks"] == (np.array(ans.starts) - origin).tolist()
    assert "▾" in seen["ruler"]  # the outlier step's own start, at the left edge


def test_bracket_keys_jump_between_steps():
    runset, ans = stepped_runset()
    views = []
    seen = {}

    async def flow(app, pilot):
        await pilot.press("2")
        await idle(app, pilot)
        timeline = app.screen.query_one("#timeline-view", Timeline)
        origin = seen["origin"] = app.view.timeline.origin
        for key in ("right_square_bracket", "right_square_bracket", "right_square_bracket", "left_square_bracket"):
            await pilot.press(key)
            await idle(app, pilot)
            views.append((timeline.t0 + origin, timeline.t1 + origin))

    drive(TuiProfApp(runset), flow, size=(160, 50))
    step = list(zip(ans.starts, ans.ends, strict=True))
    # step 1 starts with 3 ms of untraced host work, before the first traced event (the timeline's 0): shown from there
    origin = seen["origin"]
    assert ans.starts[0] < origin < ans.ends[0]
    assert views == [(origin, ans.ends[0]), step[1], step[2], step[1]]


@pytest.mark.parametrize("size", [(160, 50), (80, 24)], ids=["160x50", "80x24"])
def test_steps_pane_snapshot(snap_compare, size):
    runset, _ = stepped_runset()

    async def run_before(pilot):
        await settle(pilot.app, pilot)
        await pilot.press("8")
        await idle(pilot.app, pilot)

    assert snap_compare(TuiProfApp(runset), terminal_size=size, run_before=run_before)


def test_m_takes_the_steps_from_the_next_repeated_range():
    """train_sync has ProfilerStep#2-#7 and two repeated optimizer ranges: m cycles through them."""
    trace = Path(__file__).parent / "data" / "kineto" / "h200" / "train_sync.pt.trace.json.gz"
    seen = []

    async def flow(app, pilot):
        await pilot.press("8")
        await idle(app, pilot)
        pane = app.screen.query_one(StepsPane)
        seen.append(pane.table.model.frame["label"].tolist())
        for _ in range(3):
            await pilot.press("m")
            await until(app, pilot, lambda: app.screen.query_one(StepsPane).table.model.frame["label"].tolist() != seen[-1])
            seen.append(pane.table.model.frame["label"].tolist())

    drive(TuiProfApp(trace, use_cache=False), flow, size=(160, 50))
    assert seen[0] == [f"ProfilerStep#{i}" for i in range(2, 8)]
    assert seen[1] == [f"Optimizer.step#SGD.step [{i}]" for i in range(1, 7)]
    assert [label.removeprefix("w ") for label in seen[2]] == [f"Optimizer.zero_grad#SGD.zero_grad [{i}]" for i in range(1, 7)]
    assert seen[3] == seen[0]


def test_memory_lane_draws_the_allocated_level():
    """The generator's allocations as a GPU memory lane: ▁..█ of the peak. Step 1 allocates
    5 MiB and each step keeps 4 MiB (peak 33 MiB in step 8): the first cell holds 5 MiB, the
    cell of the peak event is █."""
    spec = StepSpec(step_bytes=1 << 20, leak_bytes=4 << 20)
    run, ans = build_steps(spec)
    meta = RunMeta(formats=["synthetic"], tool="synth", label="synthhost/4242", hostname="synthhost", pid=4242)
    runset = RunSet(root="mem", runs=[Run(meta=meta, agents=run.agents, kernels=run.kernels, api=run.api, allocations=run.allocations)])
    seen = {}

    async def flow(app, pilot):
        await pilot.press("2")
        await idle(app, pilot)
        timeline = app.screen.query_one("#timeline-view", Timeline)
        lanes = timeline.model.lanes
        i = next(j for j, lane in enumerate(lanes) if lane.kind == "memory")
        glyph, _ = timeline.frame()
        edges = timeline.t0 + (np.arange(timeline.cells + 1) * (timeline.t1 - timeline.t0)) // timeline.cells
        peak_t = int(run.allocations["start"].iloc[-2]) - app.view.timeline.origin  # the last allocation: the peak
        seen.update(label=lanes[i].label, row=glyph[i].tolist(), peak_cell=int(np.searchsorted(edges, peak_t, side="right")) - 1)

    drive(TuiProfApp(runset), flow, size=(160, 50))
    assert seen["label"] == "GPU1 memory"
    peak = ans.peak_allocated
    assert peak == 33 << 20
    full = ord("█")
    assert seen["row"][seen["peak_cell"]] == full
    first_level = int(np.ceil(ans.memory_marks[0] / peak * 8))  # 5 of 33 MiB held when the trace starts
    assert seen["row"][0] == ord(" ▁▂▃▄▅▆▇█"[first_level])


def test_steps_pane_fits_80_columns_and_names_the_slowest_process():
    """At 80×24 every footer key is inside the screen and the header keeps one line per fact;
    the steps of three ranks show whose step each row is and each rank's steady median."""

    rs = build_rank_steps(outliers=(5, 5, 3))
    seen: dict = {}

    async def flow(app, pilot):
        await settle(app, pilot)
        await pilot.press("8")
        await idle(app, pilot)
        pane = app.screen.query_one(StepsPane)
        seen["columns"] = [c.key for c in pane.table.columns]
        seen["process"] = pane.table.model.frame["process"].tolist()
        seen["header"] = text_of(app, "#steps-header", width=80)
        seen["keys"] = [(k.description, k.region.right) for k in app.screen.query("FooterKey") if k.display]

    drive(TuiProfApp(rs.runset()), flow, size=(80, 24))
    assert seen["columns"][:3] == ["label", "process", "wall_ns"]
    assert seen["process"] == [f"rank{r}" for r in rs.slowest]
    assert "3 processes: each step is its slowest process's (max; column slowest)" in seen["header"]
    assert "rank0 318 µs · rank1 498 µs · rank2 318 µs" in seen["header"]
    assert "slow train_step [4] (rank2)" in seen["header"]
    assert {d for d, _ in seen["keys"]} >= {"Zoom", "Step range", "Help"}
    assert max(right for _, right in seen["keys"]) <= 80


def test_memory_lane_of_allocation_calls_with_matched_frees():
    """rocprof v1's hipMalloc/hipFree (3 × 4 GB, then 3 frees; no device recorded) as a
    "GPU memory" lane: █ in the cell of the third allocation (the peak, 12 GB), ⌈8 × level /
    12 GB⌉ eighths in the cell of the first, and nothing after the last free."""
    import sqlite3

    db = Path(__file__).parent / "data" / "legacy_rocprof" / "hip-programming" / "results.db"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        calls = con.execute("SELECT BeginNs, Name FROM HIP WHERE Name IN ('hipMalloc', 'hipFree') ORDER BY BeginNs").fetchall()
    assert [n for _, n in calls] == ["hipMalloc"] * 3 + ["hipFree"] * 3
    seen = {}

    async def flow(app, pilot):
        await pilot.press("2")
        await idle(app, pilot)
        timeline = app.screen.query_one("#timeline-view", Timeline)
        lanes = timeline.model.lanes
        i = next(j for j, lane in enumerate(lanes) if lane.kind == "memory")
        glyph, _ = timeline.frame()
        edges = timeline.t0 + (np.arange(timeline.cells + 1) * (timeline.t1 - timeline.t0)) // timeline.cells
        origin = app.view.timeline.origin

        def cell(ts: int) -> int:
            return int(np.searchsorted(edges, int(ts) - origin, side="right")) - 1

        seen.update(label=lanes[i].label, row=glyph[i].tolist(), cells=[cell(ts) for ts, _ in calls])

    drive(TuiProfApp(db, use_cache=False), flow, size=(160, 50))
    assert seen["label"] == "GPU memory"
    cells, row = seen["cells"], seen["row"]
    held = [4, 8, 12, 8, 4, 0]  # GB after each call
    first = max(h for c, h in zip(cells, held) if c == cells[0])  # the highest level in the first call's cell
    assert row[cells[0]] == ord(" ▁▂▃▄▅▆▇█"[-(-first * 8 // 12)])
    assert row[cells[2]] == ord("█")
    assert all(g == ord(" ") for g in row[cells[5] + 1 :])
