"""summary JSON keys, Markdown/text reports, CLI options, and the 1M-dispatch timing budget."""

import json

import pandas as pd
import pytest
from test_analysis_timeline import sync_loop_run

from tui_prof.analysis import sections
from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.cli import main, parse_duration_ns
from tui_prof.model import RunSet, make_table
from tui_prof.render.summary import summary_markdown, summary_text


def test_summary_keys_of_schema():
    """The document's keys, in order, are Summary's; each section's keys are its section type's."""
    doc = build_summary(RunSet(root="", runs=[sync_loop_run()]), SummaryOptions(logs=False))
    assert list(doc) == list(sections.Summary.__annotations__)
    typed = {
        "source": sections.SourceSection,
        "kernels": sections.KernelsSection,
        "gpu": sections.GpuSection,
        "gaps": sections.GapsSection,
        "sync": sections.SyncSection,
        "launch": sections.LaunchSection,
        "copies": sections.CopiesSection,
        "hotspots_by": sections.HotspotsBy,
        "measurement": sections.MeasurementSection,
    }
    for key, section in typed.items():
        assert set(doc[key]) == set(section.__annotations__), key
    assert set(doc["sync"]["sync_after_launch"]) == set(sections.SyncAfterLaunch.__annotations__)
    assert set(doc["processes"][0]) == set(sections.ProcessRecord.__annotations__)
    assert set(doc["hotspots"][0]) == set(sections.HotspotRecord.__annotations__)  # pct_wall too (issue 33)
    assert set(doc["hotspots_by"]["category"][0]) == set(sections.HotspotRecord.__annotations__)  # critical_ns per category too
    assert set(doc["gaps"]["listed"][0]) == set(sections.GapRecord.__annotations__)
    assert all(set(f) - {"saving_ns"} == set(sections.Finding.__annotations__) - {"saving_ns"} for f in doc["findings"])
    assert doc["categories"] == {"GEMM": 12 * 100_000}
    assert doc["agents"][0]["capabilities"]["arch"] == "gfx942"
    assert doc["measurement"]["gemm_pct_of_kernel_time"] == 100.0
    json.dumps(doc)  # JSON-ready
    md = summary_markdown(doc)
    assert "## Findings" in md and "| sync-after-launch" in md.replace("| high | ", "| ")
    assert "rocprofv3 --kernel-trace --pmc" in md
    text = summary_text(doc)
    assert "Idle gaps" in text and "hipDeviceSynchronize" in text


def test_parse_duration():
    assert parse_duration_ns("10us") == 10_000 and parse_duration_ns("2.5ms") == 2_500_000
    assert parse_duration_ns("500ns") == 500 and parse_duration_ns("3") == 3_000


def test_cli_rejects_bad_rules_file(tmp_path, capsys):
    bad = tmp_path / "r.toml"
    bad.write_text("not toml [")
    assert main(["summary", str(tmp_path), "--categories", str(bad)]) == 2
    assert "r.toml" in capsys.readouterr().err


def test_cli_md_on_real_db(capsys):
    from pathlib import Path

    db = Path(__file__).parent / "data" / "analysis" / "28_results.db"
    rc = main(["summary", str(db), "--md", "--gap-threshold", "1ms"])
    out = capsys.readouterr().out
    assert rc == 0
    assert out.startswith("# tuiprof report") and "1.00 ms" in out


def test_measurement_and_launch_numbers_of_the_sync_loop_by_hand():
    """Every number of the measurement table and the launch section, computed by hand from
    sync_loop_run's construction: 12 kernels of 100 µs 40 µs apart; each launched 8 µs
    before it by a 3 µs hipLaunchKernel; a hipDeviceSynchronize from 4 µs before the
    kernel to 5 µs after it."""
    us, n = 1_000, 12
    doc = build_summary(RunSet(root="", runs=[sync_loop_run(n)]), SummaryOptions(logs=False))
    wall = (n - 1) * 140 * us + 100 * us + 8 * us + 5 * us  # first launch start .. last sync end
    gpu_span = n * 100 * us + (n - 1) * 40 * us
    sync_total = n * 109 * us
    m = doc["measurement"]
    assert m["span_ns"] == doc["wall_ns"] == wall
    assert m["gpu_span_ns"] == gpu_span
    assert (m["kernel_count"], m["kernel_time_ns"]) == (n, n * 100 * us)
    assert doc["kernels"]["unique_names"] == 1
    assert m["gemm_pct_of_kernel_time"] == 100.0
    assert m["sync_pct_of_wall"] == round(100 * sync_total / wall, 4)
    assert m["launch_api_pct_of_wall"] == round(100 * n * 3 * us / wall, 4)
    assert m["median_queue_delay_ns"] == 8 * us
    assert m["idle_pct"] == round(100 * (n - 1) * 40 * us / gpu_span, 4)
    assert m["copy_pct_of_wall"] == 0.0 and m["peak_memory_bytes"] is None
    lc = doc["launch"]
    assert (lc["launch_calls"], lc["linked_dispatches"], lc["api_total_ns"]) == (n, n, n * 3 * us)
    assert (lc["median_api_ns"], lc["p90_queue_delay_ns"]) == (3 * us, 8 * us)
    assert (lc["median_kernel_ns"], lc["avg_kernel_ns"], lc["tiny_kernels"], lc["tiny_kernel_time_ns"]) == (100 * us, 100 * us, 0, 0)


def test_peak_memory_by_hand():
    """Allocate 100 B at a, 50 B at b, free a (size not recorded: taken from a's allocation),
    allocate 30 B: the peak is 150 B, reached before the free."""
    run = sync_loop_run(2)
    run.allocations = make_table(
        "allocations",
        {
            "start": [10, 20, 30, 40],
            "end": [11, 21, 31, 41],
            "operation": ["ALLOCATE", "ALLOCATE", "FREE", "ALLOCATE"],
            "bytes": [100, 50, 0, 30],
            "address": [0xA, 0xB, 0xA, 0xC],
        },
    )
    doc = build_summary(RunSet(root="", runs=[run]), SummaryOptions(logs=False))
    assert doc["measurement"]["peak_memory_bytes"] == 150


def test_grouped_hotspots_computed_in_the_background_equal_direct_ones():
    """The summary computes the category/normalized/agent/process hotspots in a worker
    thread while the main thread goes on (and reuses names such as ``order``): each must
    equal :func:`hotspots` called directly, on a real run with idle gaps listed."""
    from pathlib import Path

    from tui_prof.analysis.hotspots import all_kernels, hotspot_records, hotspots, process_order, run_codes
    from tui_prof.loaders import load_path

    runset = load_path(Path(__file__).parent / "data" / "rocpd")
    kernels = all_kernels(runset)
    processes = process_order(kernels, run_codes(runset))
    for _ in range(3):
        doc = build_summary(runset, SummaryOptions(top=None, max_gaps=None))
        wall = doc["wall_ns"]
        for key, by in (("normalized", "normalized"), ("category", "category"), ("agent", "agent"), ("process", "pid")):
            rows = [{k: v for k, v in row.items() if k != "critical_ns"} for row in doc["hotspots_by"][key]]  # from the critical path
            assert rows == hotspot_records(hotspots(kernels, by=by, wall_ns=wall, processes=processes), None), key


@pytest.mark.parametrize("lane", ["threaded_lane", "inline_lane"])
@pytest.mark.parametrize("folder", ["rocpd", "kineto/ranks"])
def test_sections_computed_beside_the_timeline_equal_direct_ones(folder, lane):
    """threaded_lane (the CLI), one process: the rank sections, statistics checks, occupancy
    and API table run in the summary's two threads; several: in the calling thread when
    needed; inline_lane (the TUI): every section in the calling thread. Each way each
    equals its section computed directly, on a real run."""
    from pathlib import Path

    from tui_prof import threads
    from tui_prof.analysis import ranks
    from tui_prof.analysis.hostcalls import api_section
    from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES
    from tui_prof.analysis.occupancy import occupancy_section
    from tui_prof.analysis.operators import categories_per_process, kernel_categories_of, operator_links
    from tui_prof.analysis.runinput import run_inputs
    from tui_prof.analysis.stats import stats_section
    from tui_prof.loaders import load_path

    runset = load_path(Path(__file__).parent / "data" / folder)
    inputs = run_inputs(runset)
    assert (len(inputs) == 1) == (folder == "rocpd")
    # the rank table's compute/copy split takes the category table's categories (operator first)
    categories = categories_per_process(kernel_categories_of(inputs, operator_links(inputs), DEFAULT_CATEGORY_RULES), inputs)
    rows, comm, strag = ranks.ranks_sections(
        [r.run for r in inputs], [r.label for r in inputs], [r.wall_ns for r in inputs], [r.index.classes for r in inputs], DEFAULT_CATEGORY_RULES, categories
    )
    for _ in range(3):
        doc = build_summary(runset, SummaryOptions(top=None, max_gaps=None, logs=False), lane=getattr(threads, lane))
        assert doc["ranks"] == rows and doc["communication"] == comm and doc["stragglers"] == strag
        assert doc["occupancy"] == occupancy_section(inputs, None)
        assert doc["api"] == api_section(runset, None)
        assert doc["stats"] == stats_section(runset, inputs, None)
    assert doc["ranks"] and doc["api"]["rows"]


def test_a_job_run_inline_runs_once_in_the_asking_thread_and_raises_its_error_each_time():
    import threading

    from tui_prof.threads import background

    calls: list[str] = []

    def ok() -> int:
        calls.append(threading.current_thread().name)
        return 7

    def bad() -> int:
        raise ValueError("no")

    job, failing, skipped = background([ok, bad, None], inline=True)
    assert skipped is None and calls == []  # nothing runs before it is asked for
    assert job.result() == 7 and job.result() == 7
    assert calls == [threading.current_thread().name]
    for _ in range(2):
        with pytest.raises(ValueError, match="no"):
            failing.result()


def test_summarise_keeps_every_gap_and_launch_link_behind_the_document():
    """summarise's gap sets hold every gap >= the threshold (the document lists the
    longest max_gaps of them) and its links equal link_launches of each run."""
    from pathlib import Path

    from tui_prof.analysis import hostapi
    from tui_prof.analysis.summary import summarise
    from tui_prof.loaders import load_path

    runset = load_path(Path(__file__).parent / "data" / "kineto" / "ranks")
    result = summarise(runset, SummaryOptions(max_gaps=1, logs=False))
    assert result.summary["gaps"]["count"] == sum(len(g) for g in result.gaps.values()) > 1
    assert len(result.summary["gaps"]["listed"]) == 1
    assert sorted(result.links) == list(range(len(runset.runs)))
    for i, run in enumerate(runset.runs):
        pd.testing.assert_frame_equal(result.links[i], hostapi.link_launches(run.kernels, run.api))
