"""The host side of the timeline and of a gap (issue 20 items 5–7): host ops (the model's
markers) drawn as one lane per nesting depth, the host ops overlapping a gap with the
dominant one in the gap screen's header, the gap's call list opened at the gap, jumps
between sync bars and the host row kept in view on a kernel jump."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
from synthetic import synthetic_runset
from tui_harness import drive, hot, press, text_of

from tui_prof.analysis.hostops import dominant_op, nesting_depth, ops_overlapping
from tui_prof.render.fmt import fmt_ns
from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.screens.gap import GapScreen

DECODE_EAGER = Path(__file__).parent / "data" / "kineto" / "h200" / "decode_eager.pt.trace.json.gz"


def _independent_longest_gap_and_ops():
    """From the JSON alone: the longest gap between GPU activities (kernels, memcpy,
    memset) and the cpu_op events overlapping it, with their overlap in ns."""
    with gzip.open(DECODE_EAGER, "rt") as f:
        events = json.load(f)["traceEvents"]

    def ns(e):  # µs with 3 decimals in the JSON: start and duration each to the ns
        return round(e["ts"] * 1000), round(e["ts"] * 1000) + round(e["dur"] * 1000)

    gpu = sorted(ns(e) for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    best, end_so_far = (0, 0, 0), gpu[0][1]
    for s, e in gpu[1:]:
        if s - end_so_far > best[0]:
            best = (s - end_so_far, end_so_far, s)
        end_so_far = max(end_so_far, e)
    _, gs, ge = best
    ops = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op":
            s, t = ns(e)
            if t > gs and s < ge:
                ops[e["name"]] = max(ops.get(e["name"], 0), min(t, ge) - max(s, gs))
    return gs, ge, ops


def test_nesting_depth_by_hand():
    # thread 1: [0,100) ⊃ [10,50) ⊃ [20,30), then [60,70) inside the first; thread 2 alone
    start = np.array([0, 10, 20, 60, 15])
    end = np.array([100, 50, 30, 70, 40])
    tid = np.array([1, 1, 1, 1, 2])
    assert nesting_depth(start, end, tid).tolist() == [0, 1, 2, 1, 0]


def test_decode_eager_gap_is_argmax_on_the_cpu():
    """The 17.1 ms gap of the H200 eager decode: aten::argmax runs on the CPU for it (the
    JSON read here independently of the loader)."""
    gs, ge, ops = _independent_longest_gap_and_ops()
    assert fmt_ns(ge - gs) == "17.1 ms"
    argmax = ops["aten::argmax"]
    assert argmax == max(ops.values()) and fmt_ns(argmax) == "17.1 ms"

    from tui_prof.loaders import load_path

    run = load_path(DECODE_EAGER, use_cache=False).runs[0]
    found = ops_overlapping(run.markers, gs, ge)
    assert dict(zip(found["name"].astype(str), found["overlap_ns"])) == ops
    top = dominant_op(found)
    assert (top.name, top.overlap_ns) == ("aten::argmax", argmax)


def test_gap_screen_names_host_op_and_opens_at_the_gap():
    gs, ge, ops = _independent_longest_gap_and_ops()

    async def flow(app, pilot):
        gaps = app.main.view.gaps
        index = int(np.flatnonzero(gaps["start"].to_numpy() == gs)[0])
        assert int(gaps.iloc[index]["end"]) == ge
        await press(app, pilot, "2")
        app.main.timeline.show_gap(index)
        await press(app, pilot, "enter")
        await press(app, pilot)
        assert isinstance(app.screen, GapScreen)
        title = text_of(app, "#gap-title")
        assert f"idle {fmt_ns(ge - gs)}" in title
        assert f"host: aten::argmax {fmt_ns(ops['aten::argmax'])}" in title
        assert "host: aten::argmax 17.1 ms" in title
        listed = app.screen.query_one("#gap-ops").model.frame
        assert sorted(listed["name"].astype(str)) == sorted(ops)
        calls = app.screen.query_one("#gap-calls")
        frame = calls.model.frame
        row = calls.current_row
        # the cursor is on the first call reaching into the gap, and it is on screen
        assert int(row["end"]) >= gs
        earlier = frame[frame["start"] < row["start"]]
        assert (earlier["end"] < gs).all()
        assert calls.top <= calls.cursor < calls.top + calls.size.height - 1

    drive(TuiProfApp(DECODE_EAGER, use_cache=False), flow, size=(100, 30))


def test_host_op_lanes_one_per_depth():
    from tui_prof.loaders import load_path

    run = load_path(DECODE_EAGER, use_cache=False).runs[0]
    m = run.markers
    depth = nesting_depth(m["start"].to_numpy(), m["end"].to_numpy(), m["tid"].to_numpy())

    async def flow(app, pilot):
        await press(app, pilot, "2")
        model = app.main.timeline.timeline.model
        labels = [lane.label for lane in model.lanes]
        assert labels == ["host T427", "ops T427 0", "ops T427 1", "ops T427 2", "ops T427 3+", "GPU0", "copies"]
        origin = app.main.view.origin
        for d in range(3):
            lane = model.lanes[1 + d]
            mine = m[depth == d]
            # the lane holds the union of that depth's ops
            assert int((lane.end - lane.start).sum()) == _union_ns(mine["start"] - origin, mine["end"] - origin)
        # kernels' lane index points at the GPU lane after the op lanes
        assert set(app.main.view.kernels["lane"].unique().tolist()) == {5}

    drive(TuiProfApp(DECODE_EAGER, use_cache=False), flow, size=(100, 30))


def _union_ns(start: pd.Series, end: pd.Series) -> int:
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(zip(start.tolist(), end.tolist())):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0)


def test_sync_bar_jumps():
    """y / Y walk the host rows' sync bars in time order (the synthetic run with one sync
    after the loop has exactly one; per launch one per iteration)."""
    runset, synth = synthetic_runset("per_launch", iterations=6)

    async def flow(app, pilot):
        await press(app, pilot, "2")
        timeline = app.main.timeline.timeline
        starts, ends, lanes = timeline.model.sync_bars()
        api = runset.runs[0].api
        origin = app.main.view.origin
        assert starts.size >= 6
        await press(app, pilot, "f", "y")
        first = timeline.sync_index
        assert timeline.current_sync == (int(lanes[first]), int(starts[first]), int(ends[first]))
        assert timeline.model.lanes[timeline.lane_cursor].kind == "host"
        assert timeline.t0 <= starts[first] < ends[first] <= timeline.t1
        await press(app, pilot, "y")
        assert timeline.sync_index == first + 1
        await press(app, pilot, "Y")
        assert timeline.sync_index == first
        assert "sync " in text_of(app, "#tl-status")
        assert int(api["start"].min()) - origin <= starts[0]

    drive(TuiProfApp(runset), flow)


def test_kernel_jump_keeps_host_rows_in_view():
    """t from the hotspot table: the GPU lane is the cursor and the host row above it is
    still drawn (no empty rows below the last lane)."""
    runset, _ = synthetic_runset("per_launch")

    async def flow(app, pilot):
        await press(app, pilot, "t")
        timeline = app.main.timeline.timeline
        assert timeline.model.lanes[timeline.lane_cursor].kind == "gpu"
        assert timeline.lane_top == 0
        assert hot(app) is not None

    drive(TuiProfApp(runset), flow)
