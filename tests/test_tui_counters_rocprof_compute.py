"""The counter pane on rocprof-compute data (issue 17): the generated workload's verdicts,
hints and roofline in the pane, the analysis database's values as the pane shows them, and
SVG snapshots with a roofline at 160×50 and 80×24."""

from __future__ import annotations

from pathlib import Path

import pytest
from tui_harness import drive, idle, settle, text_of

from tui_prof.analysis.counters import counter_metrics
from tui_prof.loaders import load_path
from tui_prof.synth.write_rocprof_compute import counter_workload, write_rocprof_compute
from tui_prof.tui.app import TuiProfApp

DB = Path(__file__).parent / "data" / "rocprof_compute" / "analysis_db" / "rocprof_compute_23ed6f36_slice.db"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    folder = write_rocprof_compute(tmp_path_factory.mktemp("synth") / "MI300X_A1")
    runset = load_path(folder)
    runset.root = "synth_counters"  # a fixed name on screen (the folder is a temporary path)
    return runset


async def _show_kernel(app, pilot, name: str) -> None:
    hot = app.main.query_one("#hotspot-table")
    for _ in range(hot.row_count):
        await pilot.press("k")
    for _ in range(hot.row_count):
        if str(hot.current_row["name"]) == name:
            break
        await pilot.press("j")
    await pilot.press("5")
    await idle(app, pilot)


def test_pane_shows_verdicts_hints_and_roofline(generated):
    block = counter_metrics(generated.runs[0], "amd")
    spec = {k.name: k for k in counter_workload()}

    async def flow(app, pilot):
        for name, kernel in spec.items():
            await pilot.press("1")
            await _show_kernel(app, pilot, name)
            text = text_of(app, "#counters-body")
            (entry,) = [k for k in block["kernels"] if k["name"] == name]
            for key in kernel.flagged:
                assert entry["metrics"][key]["meaning"] in text
            bound = "Roofline: memory-bound" if (kernel.bound or "memory") == "memory" else "Roofline: compute-bound"
            assert bound in text and "* this kernel, + ridge point" in text
            assert f"ridge {entry['roofline']['ridge']:.3g} FLOP/B" in text
        assert "Occupancy limiter: VGPRs" in text and "fewer VGPRs" in text  # the last kernel: vgpr_heavy_gemm
        assert "1216 waves (12.5% of 9728)" in text
        await pilot.press("x")
        text = text_of(app, "#counters-body")
        assert "SQ_LEVEL_WAVES_ACCUM/(GRBM_GUI_ACTIVE/XCDs)" in text and "0200_system_speed_of_light.yaml" in text

    drive(TuiProfApp(generated), flow, size=(160, 50))


def test_pane_shows_the_database_values():
    (run,) = load_path(DB).runs
    block = counter_metrics(run, "amd")
    (entry,) = [k for k in block["kernels"] if "wave_occupancy" in k["metrics"] and k["metrics"]["wave_occupancy"]["value"] == 774.0973946822501]

    async def flow(app, pilot):
        await _show_kernel(app, pilot, entry["name"])
        text = text_of(app, "#counters-body")
        assert "values rocprof-compute computed (analysis database)" in text
        for m in entry["metrics"].values():
            assert (f"{m['value']:.4g}%" if m["unit"] == "%" else f"{m['value']:.4g} {m['unit']}") in text  # a percentage as 12.3%
        assert "774.1 waves (9.45% of 8192)" in text and "Roofline: memory-bound" in text

    drive(TuiProfApp(DB, use_cache=False), flow, size=(160, 50))


@pytest.mark.parametrize("size", [(160, 50), (80, 24)])
def test_counter_pane_roofline_snapshot(snap_compare, generated, size):
    async def run_before(pilot):
        await settle(pilot.app, pilot)
        await pilot.press("5")
        await idle(pilot.app, pilot)
        if size == (80, 24):
            await pilot.press("end")  # the roofline is below the metric table at this height
            await idle(pilot.app, pilot)

    assert snap_compare(TuiProfApp(generated), terminal_size=size, run_before=run_before)


def test_hostile_names_in_a_database_never_reach_the_terminal(tmp_path):
    import shutil
    import sqlite3

    from rich.console import Console

    from tui_prof.analysis.summary import build_summary
    from tui_prof.tui.panes.counters import counters_renderable

    db = tmp_path / "rocprof_compute_hostile.db"
    shutil.copy(DB, db)
    hostile = "\x1b]0;owned\x07k[bold red]x\x1b[2J"
    con = sqlite3.connect(db)
    con.execute("UPDATE compute_kernel SET kernel_name = ? WHERE kernel_uuid = 4", (hostile,))
    con.execute("UPDATE compute_metric_definition SET unit = ? WHERE name = 'L2 Cache Hit Rate'", (hostile,))
    con.execute("UPDATE compute_workload SET name = ?", (hostile,))
    con.commit()
    con.close()
    runset = load_path(db)
    (run,) = runset.runs
    assert hostile in set(run.kernels["name"].astype(str))  # the model keeps the exact string
    doc = build_summary(runset)
    console = Console(width=160, force_terminal=False, record=True)
    for explain in (False, True):
        console.print(counters_renderable(doc, hostile, explain))
    out = console.export_text()
    assert "\x1b" not in out and "\x07" not in out
    assert "[bold red]" in out  # shown as text, not applied as markup


def test_rdna_pane_names_counters_that_do_not_exist():
    from rich.console import Console
    from synthetic import synthetic_runset

    from tui_prof.analysis.summary import build_summary
    from tui_prof.tui.panes.counters import counters_renderable

    runset, _ = synthetic_runset("per_launch", iterations=2, arch="gfx1151")
    console = Console(width=200, record=True)
    console.print(counters_renderable(build_summary(runset), None, False))
    out = console.export_text()
    assert "No hardware counters in this run (gfx1151" in out
    assert "Not on gfx1151 (RDNA): " in out and "RDNA has no matrix cores (MFMA)" in out and "TA_BUFFER_*" in out
