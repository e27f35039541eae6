"""The timeline's rank lanes (issue 14, item 5): one lane per process of a multi-process run,
communication drawn apart, on one clock (one host) or aligned at each rank's first collective
(several hosts). Checked against the generator's kernels (tui_prof.synth.ranks: rank 2 computes
50 % longer) and an independent parse of the real two-rank Kineto pair; Pilot tests of the
``r`` key and of a gap opened on a rank lane; SVG snapshots at 160×50 and 80×24."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from tui_harness import drive, idle, press, settle, until

from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES
from tui_prof.analysis.ranks import rank_offsets
from tui_prof.loaders import load_path
from tui_prof.model import Run, RunSet
from tui_prof.synth.ranks import COLLECTIVE_KERNELS, RankSpec, build_ranks
from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.screens.detail import DispatchDetailScreen
from tui_prof.tui.screens.gap import GapScreen
from tui_prof.tui.view.runview import build_view, rank_header
from tui_prof.tui.widgets.timeline import COMM_GLYPH, S_COMM, Timeline, build_frame

SPEC = RankSpec(ranks=4, iterations=3, slow_rank=2, slow_pct=50)
PAIR = Path(__file__).parent / "data" / "kineto" / "ranks"


def merged(intervals) -> list[tuple[int, int]]:
    """Union of [start, end) intervals, by a plain loop over the sorted list."""
    out: list[list[int]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def pairs(start: np.ndarray, end: np.ndarray) -> list[tuple[int, int]]:
    return list(zip(start.tolist(), end.tolist(), strict=True))


@pytest.fixture(scope="module")
def one_host():
    ranks = build_ranks(SPEC)
    return ranks, build_view(ranks.runset("ranks-one-host"))


@pytest.fixture(scope="module")
def two_hosts():
    ranks = build_ranks(replace(SPEC, hosts=2))
    return ranks, build_view(ranks.runset("ranks-two-hosts"))


def collectives(synth) -> list[tuple[int, int]]:
    """The generator's collective kernels of one rank (by their NCCL names), merged."""
    k = synth.kernels
    names = set(COLLECTIVE_KERNELS.values())
    rows = k[k["name"].astype(str).isin(names)]
    return merged(zip(rows["start"].tolist(), rows["end"].tolist(), strict=True))


def busy(synth) -> list[tuple[int, int]]:
    k, c = synth.kernels, synth.copies
    return merged(list(zip(k["start"].tolist(), k["end"].tolist(), strict=True)) + list(zip(c["start"].tolist(), c["end"].tolist(), strict=True)))


@pytest.mark.parametrize("which", ["one_host", "two_hosts"])
def test_one_lane_per_rank_with_its_collectives(which, request):
    """A lane per rank, in rank order; its busy time is the union of its kernels and copies,
    its communication the union of its collective kernels, both moved by the rank's offset."""
    ranks, view = request.getfixturevalue(which)
    model = view.timeline.ranks
    assert model is not None and len(model.lanes) == SPEC.ranks
    assert [lane.kind for lane in model.lanes] == ["rank"] * SPEC.ranks
    hosts = which == "two_hosts"
    assert [lane.label for lane in model.lanes] == [f"rank {r}" + (f" node{r * 2 // SPEC.ranks}" if hosts else "") for r in range(SPEC.ranks)]
    assert model.run_lane.tolist() == [0, 1, 2, 3]
    offsets = rank_offsets(view.runset.runs, DEFAULT_CATEGORY_RULES).offsets
    for r, synth in enumerate(ranks.runs):
        lane = model.lanes[r]
        shift = offsets[r] - model.origin
        want = collectives(synth)
        assert len(want) == SPEC.iterations  # one AllReduce per iteration, none overlapping
        assert pairs(lane.comm_start, lane.comm_end) == [(s + shift, e + shift) for s, e in want]
        assert pairs(lane.start, lane.end) == [(s + shift, e + shift) for s, e in busy(synth)]
        # the full lanes' relative times land on the rank axis through run_shift
        assert int(model.run_shift[r]) == offsets[r] + view.origin - model.origin


def test_offsets_on_one_clock_and_aligned_at_the_first_collective(one_host, two_hosts):
    """One host: no shift. Two hosts (host 1's clock 7 s ahead): every rank shifted so that its
    first AllReduce starts with rank 0's; rank 2 (50 % longer compute, two kernels before the
    collective) reaches it 2 × 50 µs later on its own clock."""
    ranks, view = one_host
    a = rank_offsets(view.runset.runs, DEFAULT_CATEGORY_RULES)
    assert (a.shared_clock, a.hosts, a.reference, a.offsets) == (True, 1, None, (0, 0, 0, 0))
    ranks, view = two_hosts
    a = rank_offsets(view.runset.runs, DEFAULT_CATEGORY_RULES)
    extra = SPEC.compute_kernels * (SPEC.compute_of(2) - SPEC.compute_ns)
    assert extra == 100_000
    assert (a.shared_clock, a.hosts, a.reference, a.unaligned) == (False, 2, 0, 0)
    assert a.offsets == (0, 0, -SPEC.host_offset_ns - extra, -SPEC.host_offset_ns)
    firsts = [collectives(s)[0][0] for s in ranks.runs]  # the generator's, each on its own clock
    assert list(a.first_collective) == firsts
    assert len({f + o for f, o in zip(firsts, a.offsets, strict=True)}) == 1


def test_rank_without_a_collective_stays_unshifted(two_hosts):
    ranks, view = two_hosts
    runs = list(view.runset.runs)
    k = runs[3].kernels
    runs[3] = Run(
        meta=runs[3].meta,
        agents=runs[3].agents,
        kernels=k[~k["name"].astype(str).isin(set(COLLECTIVE_KERNELS.values()))],
        api=runs[3].api,
        copies=runs[3].copies,
    )
    a = rank_offsets(runs, DEFAULT_CATEGORY_RULES)
    assert a.first_collective[3] is None and a.offsets[3] == 0 and a.unaligned == 1
    assert a.offsets[:3] == (0, 0, -SPEC.host_offset_ns - 100_000)
    view2 = build_view(RunSet(root="x", runs=runs))
    assert view2.timeline.ranks.header == "4 ranks aligned at their first collective: 2 hosts, 1 without a collective unshifted · r: every lane"
    # no rank with a collective: nothing to align at, every rank on its own clock
    names = set(COLLECTIVE_KERNELS.values())
    bare = [Run(meta=r.meta, agents=r.agents, kernels=r.kernels[~r.kernels["name"].astype(str).isin(names)], api=r.api, copies=r.copies) for r in runs]
    a = rank_offsets(bare, DEFAULT_CATEGORY_RULES)
    assert (a.shared_clock, a.reference, a.offsets, a.unaligned) == (False, None, (0, 0, 0, 0), 4)
    assert rank_header(a, bare) == "4 ranks on 2 unrelated clocks, none with a collective: unshifted"


def test_headers(one_host, two_hosts):
    assert one_host[1].timeline.header == "4 processes, every lane · r: one lane per rank"
    assert one_host[1].timeline.ranks.header == "4 ranks on one clock (host node0) · r: every lane"
    assert two_hosts[1].timeline.ranks.header == "4 ranks aligned at their first collective: 2 hosts · r: every lane"


def test_gaps_map_to_the_rank_lane(two_hosts):
    """Every gap of the run view is on its rank's lane, moved by that rank's shift, listed in
    start order; gap_rows leads back to the run view's gap table (GapScreen's index)."""
    _, view = two_hosts
    model = view.timeline.ranks
    gaps = view.gaps
    assert len(gaps) and sorted(model.gap_rows.tolist()) == list(range(len(gaps)))
    run = gaps["run"].to_numpy()[model.gap_rows]
    assert model.gap_lanes.tolist() == model.run_lane[run].tolist()
    start = gaps["start"].to_numpy()[model.gap_rows] - view.origin + model.run_shift[run]
    assert model.gaps[:, 0].tolist() == start.tolist()
    assert np.all(np.diff(model.gaps[:, 0]) >= 0)
    for i in range(len(gaps)):
        assert model.gap_row(model.gap_index(int(model.gap_rows[i]))) == int(model.gap_rows[i])


def test_communication_cells_are_drawn_apart(one_host):
    """Fitted to the run, each rank lane's ≈ cells are where collectives take at least half
    the busy time: the straggler (rank 2) waits least, so it has the fewest."""
    _, view = one_host
    model = view.timeline.ranks
    glyph, style = build_frame(model, 0, model.span, 100)
    comm = (glyph == COMM_GLYPH).sum(axis=1)
    assert np.array_equal(glyph == COMM_GLYPH, style == S_COMM)
    assert comm[2] == comm.min() and comm[2] < comm[0] == comm[1] == comm[3]
    cells = np.flatnonzero(glyph[0] == COMM_GLYPH)
    edges = (np.arange(101) * model.span) // 100
    lane = model.lanes[0]
    for c in cells.tolist():  # every ≈ cell holds collective time
        inside = np.minimum(lane.comm_end, edges[c + 1]) - np.maximum(lane.comm_start, edges[c])
        assert inside.clip(0).sum() > 0


def test_real_pair_is_on_one_clock_because_no_host_is_recorded():
    """The real two-rank pair (ranks 0 and 1 of a 128-rank NCCL job): Kineto records no host
    name, so both are taken to be on one clock (Kineto writes Unix time of the host): the rank
    lanes share the full lanes' axis. Labels come from distributedInfo; each lane's communication
    is the union of the file's ncclKernel events (an independent parse of the JSON)."""
    runset = load_path(PAIR, use_cache=False)
    assert [r.meta.hostname for r in runset.runs] == ["", ""]
    view = build_view(runset)
    model = view.timeline.ranks
    assert model.header == "2 ranks on one clock (no host recorded: one clock assumed) · r: every lane"
    assert (model.origin, model.span) == (view.origin, view.span) and model.run_shift.tolist() == [0, 0]
    assert [lane.label for lane in model.lanes] == ["rank 0", "rank 1"]
    for lane, name in zip(model.lanes, ["sampled_rank-0.json.gz", "sampled_rank-1.json.gz"], strict=True):
        top = json.loads(gzip.decompress((PAIR / name).read_bytes()))
        events = [e for e in top["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel" and "ncclKernel" in e["name"]]
        want = merged((round(e["ts"] * 1000), round(e["ts"] * 1000) + round(e["dur"] * 1000)) for e in events)
        assert len(want) > 0
        assert pairs(lane.comm_start + view.origin, lane.comm_end + view.origin) == want


# -- the TUI --------------------------------------------------------------------------------


def test_r_switches_lanes_and_enter_opens_a_rank_gap(two_hosts):
    ranks, view = two_hosts
    runset = ranks.runset("ranks-two-hosts")

    async def flow(app, pilot):
        await press(app, pilot, "2")
        timeline = app.main.query_one("#timeline-view", Timeline)
        full = app.view.timeline
        assert timeline.model is full.ranks and timeline.showing_ranks
        assert not timeline.check_action("sync", (1,))  # y/Y: no host rows on the rank lanes
        header = str(app.main.query_one("#tl-header").render())
        assert header == "4 ranks aligned at their first collective: 2 hosts · r: every lane"
        assert "communication" in str(app.main.query_one("#tl-legend").render())
        await press(app, pilot, "r")
        assert timeline.model is full and not timeline.showing_ranks
        assert timeline.check_action("sync", (1,))
        assert str(app.main.query_one("#tl-header").render()) == "4 processes, every lane · r: one lane per rank"
        assert "communication" not in str(app.main.query_one("#tl-legend").render())
        await press(app, pilot, "r")
        assert timeline.model is full.ranks
        # zoomed in on the middle, n goes to the first gap that starts in the view
        await press(app, pilot, "w", "w")
        t0 = timeline.t0
        await press(app, pilot, "n")
        starts = timeline.model.gaps[:, 0]
        assert starts[timeline.gap_index] >= t0 > starts[timeline.gap_index - 1] and timeline.gap_index > 1
        await press(app, pilot, "f")
        timeline.gap_index = -1
        # n: the first gap on the rank lanes, on its rank's lane; Enter opens the run view's row
        await press(app, pilot, "n")
        model = timeline.model
        index = timeline.gap_index
        assert index >= 0 and timeline.lane_cursor == int(model.gap_lanes[index])
        row = int(model.gap_rows[index])
        assert timeline.lane_cursor == int(model.run_lane[int(app.view.gaps["run"].iloc[row])])
        await pilot.press("enter")
        await until(app, pilot, lambda: isinstance(app.screen, GapScreen))
        assert app.screen.gap_index == row
        await pilot.press("escape")
        await idle(app, pilot)
        # the gap stays selected across the switch
        await press(app, pilot, "r")
        assert timeline.current_gap is not None and app.view.timeline.gap_row(timeline.gap_index) == row
        # a dispatch centred on the rank lanes: its rank's lane, on the shifted axis
        await press(app, pilot, "r")
        pane = app.main.timeline
        pane.selection = ("name", COLLECTIVE_KERNELS["AllReduce"])
        pane.centre_selected()
        await idle(app, pilot)
        first = app.view.dispatches("name", COLLECTIVE_KERNELS["AllReduce"]).iloc[0]
        run = int(first["run"])
        shift = int(model.run_shift[run])
        assert timeline.marker == (int(model.run_lane[run]), int(first["t"]) + shift, int(first["t"] + first["dur"]) + shift)
        # a finding's gap lands on its rank's lane; a host row (sync evidence) shows every lane;
        # a step on shifted rank lanes shows every lane (steps are on the processes' own clocks)
        await press(app, pilot, "f")
        pane.show_gap(row)
        await idle(app, pilot)
        assert timeline.showing_ranks and timeline.gap_index == model.gap_index(row) and timeline.lane_cursor == int(model.gap_lanes[timeline.gap_index])
        host = next(i for i, lane in enumerate(full.lanes) if lane.kind == "host")
        pane.show_window(0, 1000, host)
        await idle(app, pilot)
        assert not timeline.showing_ranks and timeline.lane_cursor == host
        await press(app, pilot, "r")
        assert timeline.showing_ranks
        pane.show_range(0, 1000)
        await idle(app, pilot)
        assert not timeline.showing_ranks
        await press(app, pilot, "r")
        # drill-down: a dispatch's detail centres its own timeline (rank lanes) on the dispatch's rank
        rows = app.view.dispatches("name", COLLECTIVE_KERNELS["AllReduce"])
        row = rows[rows["run"] == 2].iloc[0]
        app.push_screen(DispatchDetailScreen(app.view, row))
        await until(app, pilot, lambda: isinstance(app.screen, DispatchDetailScreen) and app.screen.detail is not None)
        tl = app.screen.query_one("#detail-timeline", Timeline)
        shift = int(model.run_shift[2])
        assert tl.showing_ranks and tl.marker == (2, int(row["t"]) + shift, int(row["t"] + row["dur"]) + shift)
        assert tl.lane_cursor == 2

    drive(TuiProfApp(runset), flow, size=(160, 50))


def test_host_calls_only_keep_every_lane(one_host):
    """Processes without GPU activity (host calls only) have nothing for a rank lane to draw."""
    ranks, _ = one_host
    runs = [Run(meta=r.meta, agents=r.agents, kernels=r.kernels.iloc[:0], api=r.api, copies=r.copies.iloc[:0]) for r in ranks.runset().runs]
    view = build_view(RunSet(root="host-only", runs=runs))
    assert view.timeline.ranks is None and {lane.kind for lane in view.timeline.lanes} == {"host"}


def test_single_process_timeline_has_no_rank_lanes():
    from synthetic import synthetic_runset

    runset, _ = synthetic_runset("per_launch")

    async def flow(app, pilot):
        await press(app, pilot, "2")
        timeline = app.main.query_one("#timeline-view", Timeline)
        assert app.view.timeline.ranks is None and timeline.model is app.view.timeline
        assert not app.main.query_one("#tl-header").display
        assert not timeline.check_action("toggle_ranks", ())
        await press(app, pilot, "r")
        assert timeline.model is app.view.timeline

    drive(TuiProfApp(runset), flow)


@pytest.mark.parametrize("size", [(160, 50), (80, 24)], ids=["160x50", "80x24"])
def test_rank_timeline_snapshot(snap_compare, size):
    runset = build_ranks(replace(SPEC, hosts=2)).runset("ranks-two-hosts")

    async def run_before(pilot):
        await settle(pilot.app, pilot)
        await pilot.press("2")
        await idle(pilot.app, pilot)

    assert snap_compare(TuiProfApp(runset), terminal_size=size, run_before=run_before)
