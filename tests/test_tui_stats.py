"""Issue 15 in the TUI: runs that hold only the profiler's statistics open on its tables
(the profiler's own Percentage, calls, average, min/max), every API/copy/domain table is
reachable with ``v``, the title and status name the source, the timeline says what is
missing and which rocprofv3 flag records it, and the sync badge is the exposed figure.

Expected values are read from the files with the csv module or parsed from the
``--summary`` text here, never taken from the code under test.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from test_stats_and_gate import ONE_PROCESS, worked_example_run
from tui_harness import column, drive, findings_codes, hot, press, select_finding, text_of

from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.model import RunSet
from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.panes.hotspots import measurement_text
from tui_prof.tui.widgets.timeline import Timeline

DATA = Path(__file__).parent / "data"
SUMMARY = DATA / "rocprofv3_summary" / "summary.txt"
SOURCE = "from rocprofv3 --stats; no trace in this run"


@pytest.fixture(scope="module")
def kernel_stats_only(tmp_path_factory) -> Path:
    """A folder holding only the user's single-process kernel_stats table (issue 15)."""
    folder = tmp_path_factory.mktemp("kstats")
    (folder / "2117183_kernel_stats.csv").write_text(ONE_PROCESS)
    return folder


def csv_rows(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def summary_blocks(text: str) -> dict[str, list[list[str]]]:
    """Domain -> rows (cells) of each ``ROCPROFV3 <DOMAIN> SUMMARY:`` block, split by hand."""
    blocks: dict[str, list[list[str]]] = {}
    domain = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("ROCPROFV3 ") and line.endswith("SUMMARY:"):
            parts = line.split()
            domain = parts[1] if len(parts) == 3 else None
            continue
        if domain and line.startswith("|") and "NAME" not in line and not set(line) <= set("|-: "):
            blocks.setdefault(domain, []).append([c.strip() for c in line.strip("|").split("|")])
    return blocks


def test_kernel_stats_only_opens_on_the_profilers_table(kernel_stats_only):
    rows = csv_rows(kernel_stats_only / "2117183_kernel_stats.csv")

    async def flow(app, pilot):
        table = hot(app)
        assert table.has_focus and app.main.hotspots.stats_key == "kernel_stats"
        assert [str(n) for n in column(table, "name")] == [r["Name"] for r in rows]
        assert column(table, "calls").tolist() == [int(r["Calls"]) for r in rows]
        assert column(table, "total_ns").tolist() == [int(r["TotalDurationNs"]) for r in rows]
        assert column(table, "percent").tolist() == [float(r["Percentage"]) for r in rows]  # the profiler's own
        assert column(table, "avg_ns").tolist() == [float(r["AverageNs"]) for r in rows]
        assert column(table, "min_ns").tolist() == [int(r["MinNs"]) for r in rows]
        assert column(table, "max_ns").tolist() == [int(r["MaxNs"]) for r in rows]
        assert [c.key for c in table.columns] == ["name", "total_ns", "percent", "calls", "avg_ns", "min_ns", "max_ns", "stddev_ns"]
        calls = sum(int(r["Calls"]) for r in rows)
        assert text_of(app, "#title").strip().startswith(f"tuiprof · {kernel_stats_only.name} · {calls:,} dispatches {SOURCE} · rocprofv3-csv")
        status = text_of(app, "#hot-status")
        assert status.strip() == f"kernel_stats · 2/2 rows · sort total_ns ↓ · %: the profiler's Percentage · {SOURCE}"
        measure = text_of(app, "#measure")
        assert "kernels 8,197 · kernel time 30.5 ms" in measure and "span, sync, launch and idle need a trace" in measure
        assert "span 0" not in measure
        # the dispatch keys have nothing to show: they say so and stay on the pane
        await press(app, pilot, "enter")
        assert app.screen is app.main
        active = {b.binding.action for b in app.screen.active_bindings.values()}
        assert "group" not in active and "goto_kernel" not in active and "stats_table" in active
        # timeline: what is missing and which flag records it, no empty lanes
        await press(app, pilot, "2")
        timeline = app.main.query_one("#timeline-view", Timeline)
        assert not timeline.display
        message = text_of(app, "#tl-missing-text")
        assert "No trace in this run" in message
        assert "kernel dispatches (GPU lanes): --kernel-trace" in message and "--sys-trace" in message
        assert "rocprofv3 --stats --kernel-trace --sys-trace -- <app>" in message
        assert app.focused is app.main.query_one("#tl-missing")
        # findings: what stats support fires, the rest says it needs a trace
        assert findings_codes(app) == ["many-tiny-kernels", "needs-trace"]
        await select_finding(app, pilot, "needs-trace")
        finding = app.main.findings.current_finding()
        assert finding["message"].startswith("Statistics only, no trace: gpu-idle")
        await press(app, pilot, "enter")
        assert app.main.query_one("#tabs").active == "timeline"

    drive(TuiProfApp(kernel_stats_only, use_cache=False), flow)


def test_summary_tables_are_each_reachable_with_v(tmp_path):
    shutil.copy(SUMMARY, tmp_path / "summary.txt")
    blocks = summary_blocks(SUMMARY.read_text())
    order = ["KERNEL_DISPATCH", "MEMORY_COPY", "HIP_API", "HSA_API", "MARKER_API", "RCCL_API", "MEMORY_ALLOCATION", "SCRATCH_MEMORY"]
    expected = [d for d in order if d in blocks] + sorted(set(blocks) - set(order))

    async def flow(app, pilot):
        pane = app.main.hotspots
        seen = []
        for _ in expected:
            table = hot(app)
            domain = pane.current_stats.domain
            seen.append(domain)
            rows = blocks[domain]
            assert table.columns[0].title == f"{pane.stats_key} ({domain})"
            # the block's rows by DURATION descending: name, calls, PERCENT (INC) as written
            by_total = sorted(rows, key=lambda r: (-float(r[3]), r[0]))
            assert [str(n) for n in column(table, "name")] == [r[0] for r in by_total]
            assert column(table, "calls").tolist() == [int(r[2]) for r in by_total]
            assert column(table, "percent").tolist() == pytest.approx([float(r[5]) for r in by_total], abs=0)
            assert f"v: next of {len(expected)} tables" in text_of(app, "#hot-status")
            await press(app, pilot, "v")
        assert seen == expected
        assert pane.current_stats.domain == expected[0]  # v wraps around

    drive(TuiProfApp(tmp_path, use_cache=False), flow, size=(160, 40))


def test_legacy_results_stats_only(tmp_path):
    src = DATA / "legacy_rocprof" / "hip-programming" / "results.stats.csv"
    shutil.copy(src, tmp_path / "results.stats.csv")
    rows = csv_rows(src)

    async def flow(app, pilot):
        table = hot(app)
        assert [str(n) for n in column(table, "name")] == [r["Name"] for r in rows]
        assert column(table, "percent").tolist() == [float(r["Percentage"]) for r in rows]
        assert "rocprof --stats; no trace in this run" in text_of(app, "#title") or "--stats; no trace in this run" in text_of(app, "#title")

    drive(TuiProfApp(tmp_path, use_cache=False), flow)


def test_traced_run_keeps_its_hotspots_and_reaches_the_stats_with_v(tmp_path):
    """A run with a trace and a stats table opens on the trace's hotspots; v shows the table
    and goes back to the hotspots (the trace's columns again). The docs folder's kernel trace
    and stats table alone: the whole folder holds separate recordings, and the TUI shows one
    of them, without the statistics that cover them all (issue 32)."""
    import shutil

    docs = DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7"
    folder = tmp_path / "run"
    folder.mkdir()
    for name in ("kernel_trace.csv", "hip_api_stats.csv", "238_agent_info.csv"):
        shutil.copy(docs / name, folder)
    rows = csv_rows(folder / "hip_api_stats.csv")

    async def flow(app, pilot):
        pane = app.main.hotspots
        table = hot(app)
        assert pane.stats_key is None and "median_ns" in [c.key for c in table.columns]
        await press(app, pilot, "v")
        assert pane.stats_key == "hip_api_stats"
        assert sorted(str(n) for n in column(table, "name")) == sorted(r["Name"] for r in rows)
        assert text_of(app, "#hot-status").rstrip().endswith("from rocprofv3 --stats")
        for _ in range(len(app.main.view.stats)):
            await press(app, pilot, "v")
        assert pane.stats_key is None and "median_ns" in [c.key for c in table.columns]

    drive(TuiProfApp(folder, use_cache=False), flow, size=(160, 40))


def test_sync_badge_is_exposed_sync():
    """docs/metrics.md's worked example: 240 ns of sync calls in a 400 ns run, 70 ns of it
    exposed (the GPU had no work): the badge says 17.5 % (over the 5 % target), raw 60.0 %."""
    doc = build_summary(RunSet(root="ex", runs=[worked_example_run()]), SummaryOptions(logs=False))
    assert "exposed sync 17.5% (>5%), raw 60.0%" in measurement_text(doc).plain


@pytest.mark.parametrize("keys", [[], ["2"]], ids=["hotspots", "timeline"])
def test_snapshot_stats_only_80x24(snap_compare, kernel_stats_only, keys):
    from tui_harness import idle, settle

    async def run_before(pilot):
        await settle(pilot.app, pilot)
        for key in keys:
            await pilot.press(key)
            await idle(pilot.app, pilot)

    assert snap_compare(TuiProfApp(kernel_stats_only, use_cache=False), terminal_size=(80, 24), run_before=run_before)


def test_stats_only_dominant_collective_finding_and_its_evidence(tmp_path):
    """The 4-process table of issue 15: rccl_main_kernel at 82.74 % is a dominant collective
    (communication advice); Enter on it shows its row in the kernel statistics (there are no
    dispatches to list)."""
    from test_stats_and_gate import FOUR_PROCESS, RCCL

    (tmp_path / "2117301_kernel_stats.csv").write_text(FOUR_PROCESS)

    async def flow(app, pilot):
        assert "dominant-kernel" in findings_codes(app)
        await select_finding(app, pilot, "dominant-kernel")
        finding = app.main.findings.current_finding()
        assert finding["numbers"] == {"name": RCCL, "percent": 82.74, "category": "communication"}
        assert finding["fix"].startswith("A RCCL collective:")
        await press(app, pilot, "enter")
        assert app.screen is app.main and app.main.query_one("#tabs").active == "hotspots"
        assert str(column(hot(app), "name")[0]) == RCCL

    drive(TuiProfApp(tmp_path, use_cache=False), flow)


def test_missing_trace_names_each_tables_flag(tmp_path):
    """summary.txt holds kernel, copy and API tables: the timeline's text names the flag that
    traces each of them; a traced run has nothing missing."""
    from tui_prof.loaders import load_path
    from tui_prof.tui.view.stats import TRACE_OF, missing_trace, stats_frames

    shutil.copy(SUMMARY, tmp_path / "summary.txt")
    runset = load_path(tmp_path, use_cache=False)
    frames = stats_frames(runset)
    text = missing_trace(runset, frames)
    present = [f.key for f in frames if f.key in TRACE_OF]
    assert {"kernel_stats", "memory_copy_stats", "hip_api_stats"} <= set(present)
    for key in present:
        what, flag = TRACE_OF[key]
        assert f"  {what}: {flag}\n" in text
    assert "Press 1 for the tables (v: next table)." in text
    traced = load_path(DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7", use_cache=False)
    assert missing_trace(traced, stats_frames(traced)) == ""
