"""Issue 31 in the TUI, driven by keyboard: the critical-path marks on the timeline (``p``),
the hotspot table's ``critical`` column, and the what-if key (``W``) on a hotspot row, a
finding and a gap. Answers are known by construction (tui_prof.synth: the sync-once run's
measured span, a GPU-bound run whose GEMM is on the path for all its time)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from synthetic import synthetic_runset
from tui_harness import column, drive, press, text_of, until

from tui_prof.model import Run, RunMeta, RunSet
from tui_prof.render.fmt import fmt_ns
from tui_prof.synth.spec import GEMM_NAME, SynthSpec, build
from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.screens.whatif import WhatIfScreen
from tui_prof.tui.widgets.timeline import CRITICAL, Timeline

HOSTILE = "\x1b[31mevil[/red] kernel\x07"


def runset_of(sync: str, rename: dict[str, str] | None = None) -> RunSet:
    s = build(SynthSpec(iterations=20, kernels_per_iteration=5, sync=sync, jitter=0.0))
    kernels = s.kernels
    if rename:
        kernels = kernels.assign(name=pd.Categorical(kernels["name"].astype(str).replace(rename)))
    meta = RunMeta(formats=["synthetic"], tool="synth", label="synthhost/4242", hostname="synthhost", pid=4242)
    return RunSet(root=f"synthetic_{sync}", runs=[Run(meta=meta, agents=s.agents, kernels=kernels, api=s.api, copies=s.copies)])


def measured_span(run: Run) -> int:
    tables = [t for t in (run.api, run.kernels, run.copies) if len(t)]
    return int(max(t["end"].max() for t in tables) - min(t["start"].min() for t in tables))


async def what_if_shown(app, pilot) -> WhatIfScreen:
    await until(app, pilot, lambda: isinstance(app.screen, WhatIfScreen) and app.screen.doc is not None)
    return app.screen


def test_critical_column_of_a_gpu_bound_run():
    """sync once at the end: the GPU is the bottleneck, so every GEMM dispatch is on the
    critical path: its row's critical time is its total time (the hotspot row's own sum)."""
    runset = runset_of("end")

    async def flow(app, pilot):
        table = app.main.hotspots.table
        names, crit, total = column(table, "name"), column(table, "critical_ns"), column(table, "total_ns")
        row = list(names).index(GEMM_NAME)
        assert crit[row] == total[row] > 0
        assert np.all(crit <= total)  # a part is never more than the whole
        await press(app, pilot, "b")  # another grouping: its groups' kernels' time on the path
        grouped, grouped_total = column(table, "critical_ns"), column(table, "total_ns")
        assert not np.isnan(grouped).any() and np.all(grouped <= grouped_total)
        assert grouped.sum() == crit.sum()  # every kernel in one group, by name or by normalised name

    drive(TuiProfApp(runset), flow, size=(160, 50))


def test_critical_path_marks_toggle_with_p():
    """``p``: the critical path of the recorded run marked on the lanes; its intervals tile
    the process's span (a path from the first event to the last); ``p`` again hides them."""
    runset, _ = synthetic_runset("per_launch")
    span = measured_span(runset.runs[0])

    async def flow(app, pilot):
        await press(app, pilot, "2", "p")
        timeline = app.main.query_one("#timeline-view", Timeline)
        await until(app, pilot, lambda: timeline.critical_shown)
        marks = timeline.critical
        assert marks is not None and marks.n == len(timeline.model.lanes)
        assert int(marks.dur.sum()) == span
        assert (timeline.frame()[1] >= CRITICAL).any()
        assert "critical path" in text_of(app, "#tl-status")
        gpu = [i for i, lane in enumerate(timeline.model.lanes) if lane.kind == "gpu"]
        host = [i for i, lane in enumerate(timeline.model.lanes) if lane.kind == "host"]
        assert gpu and host
        on_lane = np.diff(marks.busy_upto(marks.offsets[:, None] + np.array([0, marks.span])[None, :]), axis=1)[:, 0]
        assert on_lane[gpu].sum() > 0 and on_lane[host].sum() > 0  # sync after each launch: both sides bind
        await press(app, pilot, "p")
        assert not timeline.critical_shown and not (timeline.frame()[1] >= CRITICAL).any()

    drive(TuiProfApp(runset), flow)


def test_what_if_of_a_gap_and_a_finding_match_the_sync_once_run():
    """A sync-per-launch run: ``W`` on its first idle gap (cause sync) and on the
    sync-after-launch finding project the span of the same run recorded with one sync at
    the end (same kernels and launches: the generator's timing model)."""
    per_launch = runset_of("per_launch")
    once = measured_span(runset_of("end").runs[0])

    async def flow(app, pilot):
        causes = app.main.view.gaps["cause"].astype(str).tolist()  # the timeline's gaps, in start order
        await press(app, pilot, "2", *["n"] * (causes.index("sync") + 1), "W")
        screen = await what_if_shown(app, pilot)
        assert screen.doc["edits"][0]["cause"] == "sync"
        assert screen.doc["projected_ns"] == once
        assert screen.doc["baseline_ns"] == measured_span(per_launch.runs[0])
        assert "synchronisation calls gone: saves" in text_of(app, "#whatif-body")
        await press(app, pilot, "escape", "4")
        findings = app.main.findings
        codes = [f["code"] for f in findings.findings]
        await press(app, pilot, *["j"] * codes.index("sync-after-launch"), "W")
        screen = await what_if_shown(app, pilot)
        assert screen.doc["edits"][0]["cause"] == "sync-after-launch"
        finding = findings.findings[codes.index("sync-after-launch")]
        assert fmt_ns(finding["saving_ns"]) in str(app.screen.query_one(".title").render())
        assert screen.doc["projected_ns"] == once

    drive(TuiProfApp(per_launch), flow)


def test_what_if_of_a_hotspot_row_with_a_hostile_name():
    """``W`` on a hotspot row: its kernels at half their time; the name reaches the screen
    inert (no escape sequence, no markup) and the edit matched exactly that kernel's dispatches."""
    runset = runset_of("end", {GEMM_NAME: HOSTILE})
    dispatches = int((runset.runs[0].kernels["name"].astype(str) == HOSTILE).sum())

    async def flow(app, pilot):
        table = app.main.hotspots.table
        await press(app, pilot, *["j"] * list(column(table, "name")).index(HOSTILE), "W")
        screen = await what_if_shown(app, pilot)
        edit = screen.doc["edits"][0]
        assert edit["edit"] == "scale" and edit["factor"] == 0.5 and edit["matched"] == dispatches
        assert screen.doc["saving_ns"] > 0  # the GPU-bound run's GEMM: halving it shortens the run
        shown = text_of(app, "#whatif-body") + str(app.screen.query_one(".title").render())
        assert "\x1b" not in shown and "\x07" not in shown

    drive(TuiProfApp(runset), flow)


def test_help_lists_the_new_keys_without_collisions():
    """The help rows name p and W; no key is bound twice where the same widget has the focus."""
    rows = TuiProfApp.key_rows()
    assert ("timeline", "p", "Critical path") in rows and ("timeline", "W", "Gap what-if") in rows
    assert ("hotspots", "W", "What-if") in rows and ("findings", "W", "What-if") in rows
    for where in {w for w, _, _ in rows}:
        keys = [k for w, ks, _ in rows if w == where for k in ks.split()]
        assert len(keys) == len(set(keys)), where
    # the timeline's own keys and those of the screen above it do not collide
    timeline = {k for w, ks, _ in rows if w == "timeline" for k in ks.split()}
    screen = {k for w, ks, _ in rows if w in ("main screen", "everywhere") for k in ks.split()} - {"W", "/", "b", "t", "v", "Esc"}
    assert not timeline & screen


def test_failures_of_the_new_workers_are_said_in_place(monkeypatch):
    """A what-if or a critical path that raises: one line where the result would have been."""
    import tui_prof.tui.screens.whatif as whatif_screen
    from tui_prof.tui.view.runview import RunView

    def boom(*args, **kwargs):
        raise RuntimeError("injected")

    monkeypatch.setattr(whatif_screen, "run_what_if", boom)
    monkeypatch.setattr(RunView, "critical_marks", boom)
    runset, _ = synthetic_runset("per_launch")

    async def flow(app, pilot):
        await press(app, pilot, "W")
        await until(app, pilot, lambda: isinstance(app.screen, WhatIfScreen) and "could not be computed" in text_of(app, "#whatif-body"))
        assert "RuntimeError: injected" in text_of(app, "#whatif-body")
        await press(app, pilot, "escape", "2", "p")
        assert "the critical path: could not be computed: RuntimeError: injected" in text_of(app, "#tl-status")

    drive(TuiProfApp(runset), flow)


def test_critical_path_marks_of_every_rank():
    """A generated job of four ranks: p on the rank lanes asks for every lane; there each
    process's own path is marked on its own lanes, and every rank's marks tile its own span."""
    from tui_prof.synth.ranks import RankSpec, build_ranks

    runset = build_ranks(RankSpec(ranks=4, iterations=2)).runset()

    async def flow(app, pilot):
        await press(app, pilot, "2")
        timeline = app.main.query_one("#timeline-view", Timeline)
        assert timeline.showing_ranks
        await press(app, pilot, "p")
        assert timeline.critical is None
        await press(app, pilot, "r", "p")
        await until(app, pilot, lambda: timeline.critical_shown)
        marks = timeline.critical
        per_lane = np.diff(marks.busy_upto(marks.offsets[:, None] + np.array([0, marks.span])[None, :]), axis=1)[:, 0]
        for ri, run in enumerate(runset.runs):
            lanes = [i for i, lane in enumerate(timeline.model.lanes) if lane.key and lane.key[0] == ri]
            assert int(per_lane[lanes].sum()) == measured_span(run)

    drive(TuiProfApp(runset), flow, size=(160, 50))
