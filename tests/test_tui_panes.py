"""Pilot tests of the findings, counters, hardware and overview panes, the grouping
switch and the dispatch detail. Each test computes the analysis result itself (calling
the analysis function directly) and compares it with what the widget shows."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from synthetic import synthetic_runset
from tui_harness import (
    back_to_main,
    drive,
    findings_codes,
    idle,
    open_evidence,
    press,
    select_finding,
    text_of,
)

from tui_prof.analysis.capability import SERIALISATION_WARNING, capabilities
from tui_prof.analysis.counters import counter_metrics, pmc_commands
from tui_prof.analysis.findings import FindingCode
from tui_prof.analysis.hostapi import BLOCKING_COPY, SYNC, api_classes, link_launches
from tui_prof.analysis.hotspots import hotspots
from tui_prof.analysis.occupancy import occupancy
from tui_prof.analysis.summary import build_summary
from tui_prof.analysis.timeline import gpu_timeline
from tui_prof.render.fmt import fmt_ns
from tui_prof.tui.app import TuiProfApp, key_rows
from tui_prof.tui.panes.counters import CountersPane
from tui_prof.tui.panes.findings import FindingsTable
from tui_prof.tui.screens.detail import DispatchDetailScreen
from tui_prof.tui.screens.drilldown import DispatchesScreen
from tui_prof.tui.view.findings import EVIDENCE, finding_evidence
from tui_prof.tui.view.runview import build_view
from tui_prof.tui.widgets.table import TableView
from tui_prof.tui.widgets.timeline import Timeline


def test_measurement_table_on_overview():
    runset, synth = synthetic_runset("per_launch")
    m = build_summary(runset)["measurement"]
    assert m["kernel_count"] == synth.spec.dispatches  # the analysis agrees with the construction

    async def flow(app, pilot):
        text = " ".join(text_of(app, "#measure").split())
        assert f"span {fmt_ns(m['span_ns'])}" in text
        assert f"kernels {m['kernel_count']:,}" in text
        assert f"GEMM {m['gemm_pct_of_kernel_time']:.1f}%" in text
        # the badge is the exposed part of the sync time (issue 15), the raw share beside it
        assert m["exposed_sync_pct_of_wall"] < 5 < m["sync_pct_of_wall"]
        assert f"exposed sync {m['exposed_sync_pct_of_wall']:.1f}%, raw {m['sync_pct_of_wall']:.1f}% ·" in text
        assert f"launch {m['launch_api_pct_of_wall']:.1f}% (queue {fmt_ns(m['median_queue_delay_ns'])})" in text
        assert f"idle {m['idle_pct']:.1f}%" in text
        assert f"copy {m['copy_pct_of_wall']:.1f}%" in text

    drive(TuiProfApp(runset), flow)


def test_findings_listed_in_rank_order_with_numbers_and_fix():
    runset, _ = synthetic_runset("per_launch")
    findings = build_summary(runset)["findings"]
    assert "sync-after-launch" in [f["code"] for f in findings]

    async def flow(app, pilot):
        await pilot.press("4")
        await pilot.pause()
        table = app.main.query_one("#findings-table", FindingsTable)
        assert table.has_focus
        assert findings_codes(app) == [f["code"] for f in findings]
        messages = table.model.frame["message"].to_numpy()[table.model.order]
        assert list(messages) == [f["message"] for f in findings]
        await pilot.press("s")  # sorting is off: the rank order stays
        assert findings_codes(app) == [f["code"] for f in findings]
        for i, f in enumerate(findings):
            detail = " ".join(text_of(app, "#finding-detail").split())
            assert f"{f['severity']} · {f['code']}" in detail
            assert " ".join(f["fix"].split()) in detail
            for key in f["numbers"]:
                if key != "commands":
                    assert key in detail
            await pilot.press("j")

    drive(TuiProfApp(runset), flow)


def test_enter_on_gap_finding_centres_timeline_on_that_gap():
    runset, _ = synthetic_runset("per_launch")
    _, gaps = gpu_timeline(runset.runs[0])
    sync_gaps = gaps[gaps["cause"] == "sync"]
    longest = sync_gaps.loc[sync_gaps["duration_ns"].idxmax()]

    async def flow(app, pilot):
        tl = await open_evidence(app, pilot, "idle-sync")
        assert app.main.query_one("#tabs").active == "timeline" and tl.has_focus
        origin = app.view.origin
        lane, start, end = tl.current_gap
        assert (start + origin, end + origin) == (int(longest["start"]), int(longest["end"]))
        assert tl.t0 <= start and end <= tl.t1 and (tl.t1 - tl.t0) < tl.model.span // 4
        assert tl.model.lanes[tl.lane_cursor].kind == "gpu"

    drive(TuiProfApp(runset), flow)


def test_enter_on_sync_finding_shows_the_host_row():
    runset, _ = synthetic_runset("per_launch")
    api = runset.runs[0].api
    classes = api_classes(api)
    sync = (classes == SYNC) | (classes == BLOCKING_COPY)

    async def flow(app, pilot):
        tl = await open_evidence(app, pilot, "sync-after-launch")
        lane = tl.model.lanes[tl.lane_cursor]
        assert lane.kind == "host"
        origin = app.view.origin
        s = api["start"].to_numpy()[sync] - origin
        e = api["end"].to_numpy()[sync] - origin
        inside = (s >= tl.t0) & (e <= tl.t1)
        assert inside.sum() >= 3  # several sync calls visible, not the whole run
        assert (tl.t1 - tl.t0) < tl.model.span // 4

    drive(TuiProfApp(runset), flow)


def test_enter_on_kernel_finding_opens_its_dispatches():
    runset, _ = synthetic_runset("per_launch", counters=True)
    findings = build_summary(runset)["findings"]
    dominant = next(f for f in findings if f["code"] == "dominant-kernel")
    flagged = next(f for f in findings if f["code"] == "counter:gpu_busy")  # the "reduce" kernel at 30 % busy
    kernels = runset.runs[0].kernels
    reduce_name = next(n for n in kernels["name"].astype(str).unique() if "reduce" in n)

    async def flow(app, pilot):
        for finding, name in ((dominant, dominant["numbers"]["name"]), (flagged, reduce_name)):
            await select_finding(app, pilot, finding["code"])
            await press(app, pilot, "enter")
            screen = app.screen
            assert isinstance(screen, DispatchesScreen) and screen.value == name
            rows = screen.query_one("#dispatches", TableView)
            assert rows.row_count == int((kernels["name"].astype(str) == name).sum())
            await back_to_main(app, pilot)

    drive(TuiProfApp(runset), flow)


def test_counters_pane_metrics_interpretation_and_formulas():
    runset, _ = synthetic_runset("per_launch", counters=True)
    block = counter_metrics(runset.runs[0])
    by_name = {k["name"]: k for k in block["kernels"]}

    async def flow(app, pilot):
        hot = app.main.query_one("#hotspot-table", TableView)
        checked = 0
        for _ in range(hot.row_count):
            name = str(hot.current_row["name"])
            await pilot.press("5")
            await pilot.pause()
            assert app.main.query_one("#counters-pane", CountersPane).has_focus
            text = text_of(app, "#counters-body")
            assert name in text
            for m in by_name[name]["metrics"].values():
                assert m["label"] in text and (f"{m['value']:.4g}%" if m["unit"] == "%" else f"{m['value']:.4g} {m['unit']}") in text
                assert (m["meaning"] in text) if m["flagged"] else (f"ok ({m['threshold']})" in text)
                checked += m["flagged"]
            await pilot.press("x")
            text = text_of(app, "#counters-body")
            for m in by_name[name]["metrics"].values():
                assert m["formula"] in text and m["source"] in text and m["threshold"] in text
            await pilot.press("x")
            await pilot.press("1", "j")
        assert checked == 1  # the reduce kernel's GPU busy (30 % by construction) is the one flagged

    drive(TuiProfApp(runset), flow, size=(160, 50))


def test_counters_pane_without_counters_shows_pmc_commands():
    runset, _ = synthetic_runset("per_launch")
    commands = pmc_commands(runset.runs[0].gpu_agents[0].arch)

    async def flow(app, pilot):
        await pilot.press("5")
        await pilot.pause()
        text = text_of(app, "#counters-body", width=1000)
        for command in commands:
            assert command in text

    drive(TuiProfApp(runset), flow)


def test_hardware_pane_capabilities_and_warnings_gfx1151():
    runset, _ = synthetic_runset("per_launch", counters=True, arch="gfx1151")
    caps = capabilities("gfx1151", runset.runs[0].meta.tool_version)
    assert caps["notes"]

    async def flow(app, pilot):
        await pilot.press("3")
        await pilot.pause()
        text = " ".join(text_of(app, "#capabilities-body", width=2000).split())
        for note in caps["notes"]:
            assert " ".join(note.split()) in text
        for key in ("counters", "pc_sampling", "thread_trace", "roofline"):
            assert " ".join(str(caps[key]).split()) in text
        assert " ".join(SERIALISATION_WARNING.split()) in text
        assert "gfx1151" in text_of(app, "#hardware-body")

    drive(TuiProfApp(runset), flow)


def test_group_switch_uses_analysis_hotspots():
    runset, _ = synthetic_runset("per_launch")
    kernels = runset.runs[0].kernels
    by = {"name": "name", "normalised name": "normalized", "category": "category", "agent": "agent", "process": "pid"}

    async def flow(app, pilot):
        table = app.main.query_one("#hotspot-table", TableView)
        for label, key in by.items():
            assert app.main.hotspots.group == label
            want = hotspots(kernels, by=key)
            shown = table.model.frame.iloc[table.model.order]
            assert list(shown["name"].astype(str)) == list(want["name"].astype(str))
            assert list(shown["total_ns"]) == list(want["total_ns"])
            assert list(shown["calls"]) == list(want["calls"])
            await pilot.press("b")
            for _ in range(200):  # a new grouping is computed in a thread worker
                await app.workers.wait_for_complete()
                await pilot.pause()
                if app.main.hotspots.group != label:
                    break
        assert app.main.hotspots.group == "name"
        # the palette's direct choice
        app.main.hotspots.group_by("category")
        await pilot.pause()
        assert app.main.hotspots.group == "category" and set(table.model.frame["name"]) == set(hotspots(kernels, by="category")["name"])

    drive(TuiProfApp(runset), flow)


def test_dispatch_detail_occupancy_counters_and_launch():
    runset, _ = synthetic_runset("per_launch", counters=True)
    run = runset.runs[0]
    links = link_launches(run.kernels, run.api).set_index("kernel_row")

    async def flow(app, pilot):
        await press(app, pilot, "enter", "j", "enter")
        detail = app.screen
        assert isinstance(detail, DispatchDetailScreen)
        row = detail.row
        agent = run.agent(int(row["agent"]))
        want = occupancy(
            agent.arch,
            int(row["wg_x"]) * max(int(row["wg_y"]), 1) * max(int(row["wg_z"]), 1),
            int(row["arch_vgpr"]),
            max(int(row["accum_vgpr"]), 0),
            max(int(row["sgpr"]), 0),
            max(int(row["lds_bytes"]), 0),
            agent.wave_size,
            max(int(row["scratch_bytes"]), 0),
        )
        assert detail.detail.occupancy == want
        text = " ".join(text_of(app, "#detail").split())
        assert f"waves per SIMD {want['waves_per_simd']:g} of {want['max_waves_per_simd']}" in text
        assert f"occupancy limiter {want['limiter']}" in text
        assert " ".join(want["hint"].split()) in text
        link = links.loc[int(row["row"])]
        assert f"queue delay {fmt_ns(link['queue_delay_ns'])}" in text
        assert f"API duration {fmt_ns(link['api_dur_ns'])}" in text
        mine = run.counters[run.counters["dispatch_id"] == int(row["dispatch_id"])]
        assert len(mine) == 3
        for name, value in zip(mine["counter"].astype(str), mine["value"]):
            assert f"{name} {value:.6g}" in text

    drive(TuiProfApp(runset), flow)


def test_every_binding_in_help_and_palette_commands():
    rows = key_rows()
    actions = {a for _, _, a in rows}
    for needed in ("Evidence", "Formulas", "Group by", "Filter", "Zoom in", "Next gap", "Back"):
        assert needed in actions
    runset, _ = synthetic_runset("per_launch")

    async def flow(app, pilot):
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        for needed in (
            "Findings",
            "Counters",
            "Counters: Formulas",
            "Findings: Evidence",
            "Timeline: Zoom in",
            "Hotspots: Filter",
            "Group hotspots by normalised name",
            "Group hotspots by category",
            "Group hotspots by process",
        ):
            assert needed in commands
        # derived from the bindings: every shown key of a pane and of the widget it focuses
        for binding in Timeline.BINDINGS:
            if binding.show:
                assert f"Timeline: {binding.description}" in commands
        # run by name through the screen: the tab is shown and the action runs
        timeline = app.main.query_one("#timeline-view", Timeline)
        width = timeline.t1 - timeline.t0
        await commands["Timeline: Zoom in"].callback()
        await idle(app, pilot)
        assert app.main.query_one("#tabs").active == "timeline"
        assert timeline.t1 - timeline.t0 < width
        await commands["Counters: Formulas"].callback()
        await idle(app, pilot)
        assert app.main.counters.explain and app.main.query_one("#tabs").active == "counters"
        # footer: findings pane shows Enter = Evidence, counters pane shows x = Formulas
        await pilot.press("4")
        await pilot.pause()
        shown = {b.binding.description for b in app.screen.active_bindings.values() if b.binding.show and b.enabled}
        assert "Evidence" in shown and "Sort col" not in shown and "Filter" not in shown
        await pilot.press("5")
        await pilot.pause()
        shown = {b.binding.description for b in app.screen.active_bindings.values() if b.binding.show}
        assert "Formulas" in shown

    drive(TuiProfApp(runset), flow)


@pytest.mark.parametrize("system", ["256", "standard"])
def test_color_system_option_reaches_textual(system, monkeypatch):
    """``tuiprof open --color-system 256`` sets TEXTUAL_COLOR_SYSTEM before textual is
    imported; a fresh interpreter then renders with that colour system."""
    from tui_prof import cli

    calls = {}
    monkeypatch.delenv("TEXTUAL_COLOR_SYSTEM", raising=False)
    monkeypatch.setattr("tui_prof.tui.app.TuiProfApp.run", lambda self, **kw: calls.update(kw))
    sample = os.path.dirname(__file__)  # an existing path: a missing one exits 1 before the app
    args = cli.build_parser().parse_args(["open", "--color-system", system, "--no-mouse", sample])
    assert cli.cmd_open(args) == 0
    assert os.environ["TEXTUAL_COLOR_SYSTEM"] == system and calls == {"mouse": False}
    code = (
        f"import asyncio, sys\nsys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "from tui_prof.tui.app import TuiProfApp\nfrom synthetic import synthetic_runset\n"
        "async def main():\n    app = TuiProfApp(synthetic_runset()[0])\n    async with app.run_test():\n"
        "        print(app.console.color_system)\nasyncio.run(main())\n"
    )
    env = dict(os.environ, TEXTUAL_COLOR_SYSTEM=system)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == {"256": "256", "standard": "standard"}[system], out.stderr[-500:]


def test_every_finding_code_has_an_evidence_handler():
    """A new FindingCode without a handler would show "no evidence" silently."""
    assert set(EVIDENCE) == set(FindingCode)
    runset, _ = synthetic_runset("per_launch")
    view = build_view(runset)
    assert finding_evidence(view, {"code": "not-a-code", "numbers": {}}) == ("none", "no evidence to show")
    assert finding_evidence(view, {"code": "counter:valu_busy", "numbers": {"name": "k"}}) == ("kernel", "k")
    assert finding_evidence(view, {"code": "known-error", "numbers": {}}) == ("tab", "issues")


def test_trace_strings_are_shown_as_text_never_markup():
    """File names, messages and kernel names from a trace reach the screen verbatim."""
    from rich.console import Console

    from tui_prof.model import LoadIssue
    from tui_prof.tui.panes.findings import finding_detail

    runset, _ = synthetic_runset("per_launch")
    runset.issues.append(LoadIssue("[bold]evil[/bold].csv", "[link=http://x]click[/link]"))

    async def flow(app, pilot):
        await press(app, pilot, "6")
        text = text_of(app, "#issues-body")
        assert "[bold]evil[/bold].csv" in text and "[link=http://x]click[/link]" in text

    drive(TuiProfApp(runset), flow)
    finding = {"severity": "high", "code": "dominant-kernel", "message": "[red]k[/red] takes 90 %", "numbers": {"name": "[b]k[/b]"}, "fix": "f"}
    console = Console(width=200, record=True)
    console.print(finding_detail(finding))
    shown = console.export_text()
    assert "[red]k[/red] takes 90 %" in shown and "[b]k[/b]" in shown
