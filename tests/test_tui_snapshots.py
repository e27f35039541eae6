"""SVG snapshots of each main screen at 80×24 and 160×50 (pytest-textual-snapshot).

Update after an intended change with ``pytest tests/test_tui_snapshots.py --snapshot-update``
and review the SVGs (tests/__snapshots__/test_tui_snapshots/). Data is the seeded
synthetic run, no clock is shown, so the output is deterministic.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from synthetic import synthetic_runset
from tui_harness import idle, settle

from tui_prof.tui.app import TuiProfApp

SIZES = {"80x24": (80, 24), "160x50": (160, 50)}
FLOWS = {
    "hotspots": [],
    "timeline": ["2"],
    "timeline_gap": ["2", "n", "n"],
    "dispatches": ["enter"],
    "dispatch_detail": ["enter", "enter"],
    "hardware": ["3"],
    "help": ["question_mark"],
    "findings": ["4"],
    "finding_evidence": ["4", "enter"],
    "counters": ["5"],
    "counters_formulas": ["5", "x"],
}
WITH_COUNTERS = {"counters", "counters_formulas"}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("flow", FLOWS)
def test_screen(snap_compare, flow, size):
    runset, _ = synthetic_runset("per_launch", issues=(flow == "hotspots"), counters=flow in WITH_COUNTERS)

    async def run_before(pilot):
        await settle(pilot.app, pilot)
        for key in FLOWS[flow]:
            await pilot.press(key)
            await idle(pilot.app, pilot)

    assert snap_compare(TuiProfApp(runset), terminal_size=SIZES[size], run_before=run_before)


@pytest.mark.parametrize("mode", ["per_launch", "end"])
def test_timeline_sync_modes(snap_compare, mode):
    """The sync-after-every-launch and sync-once runs side by side in the review report."""
    runset, _ = synthetic_runset(mode, iterations=60)
    assert snap_compare(TuiProfApp(runset), terminal_size=(120, 16), run_before=_timeline)


async def _timeline(pilot):
    await settle(pilot.app, pilot)
    await pilot.press("2")
    await pilot.pause()


def test_hardware_eight_agents_80x24(snap_compare):
    """The rocpd run's 2 CPUs and 8 identical MI300X at 80×24: the GPUs as one column and
    one capability block."""
    db = Path(__file__).parent / "data" / "rocpd" / "28_results.db"

    async def run_before(pilot):
        await settle(pilot.app, pilot)
        await pilot.press("3")
        await idle(pilot.app, pilot)

    assert snap_compare(TuiProfApp(db, use_cache=False), terminal_size=(80, 24), run_before=run_before)


def test_hotspots_by_operator_gpt2_160x50(snap_compare):
    """The GPT-2 H200 trace (record_shapes) with the hotspots grouped by launching operator
    (``b`` three times: normalised name, category, operator)."""
    trace = Path(__file__).parent / "data" / "kineto" / "h200" / "gpt2_shapes_modules.pt.trace.json.gz"

    async def run_before(pilot):
        await settle(pilot.app, pilot)
        for _ in range(3):
            await pilot.press("b")
            await idle(pilot.app, pilot)
        pilot.app.clear_notifications()  # the "grouped by" toasts expire on a timer: not part of the picture
        await pilot.pause()

    assert snap_compare(TuiProfApp(trace, use_cache=False), terminal_size=(160, 50), run_before=run_before)
