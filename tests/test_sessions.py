"""Separate profiler sessions of one process are separate recordings (issue 32).

tests/data/kineto/h200: train_sync, decode_eager, decode_graph and copies were recorded by
one Python process (pid 427) in four ``torch.profiler`` sessions, each exported to its own
trace (its own ``trace_id``). The assembly kept them as one process spanning 4.2 s; each is
now its own process and recording, and each recording's figures are the ones an exact parse
of that one file gives. Fragments of one session still merge (the multi-file samples)."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest

from tui_prof.analysis.api import SummaryOptions, build_summary, pick_recording
from tui_prof.loaders import load_path
from tui_prof.loaders.base import IssueSink
from tui_prof.loaders.detect import _process_key, loader_of, merge_plan, scan, work_units
from tui_prof.loaders.sessions import same_session, session_key

DATA = Path(__file__).parent / "data"
H200 = DATA / "kineto" / "h200"
ONE_PID = ["train_sync", "decode_eager", "decode_graph", "copies"]  # pid 427, in recording order
API_CATS = {"cuda_runtime", "cuda_driver"}
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}


def ns(us: float) -> int:
    """µs as written in the JSON (at most 3 decimals) to exact ns."""
    return int(Decimal(repr(us)) * 1000)


def parse(path: Path) -> dict:
    """An exact parse of one Kineto file: its trace id, kernel count and total, and its span
    (first start to last end of its runtime/driver calls, kernels, copies and memsets)."""
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    timed = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") in API_CATS | GPU_CATS]
    kernels = [e for e in timed if e["cat"] == "kernel"]
    starts = [ns(e["ts"]) for e in timed]
    ends = [ns(e["ts"]) + ns(e["dur"]) for e in timed]
    pids = {e["pid"] for e in doc["traceEvents"] if e.get("cat") == "cuda_runtime"}
    return {
        "trace_id": doc["trace_id"],
        "pids": pids,
        "dispatches": len(kernels),
        "kernel_ns": sum(ns(e["dur"]) for e in kernels),
        "span_ns": max(ends) - min(starts),
    }


def test_sessions_of_one_pid_are_separate_processes():
    parsed = {name: parse(H200 / f"{name}.pt.trace.json.gz") for name in ONE_PID}
    assert all(p["pids"] == {427} for p in parsed.values())  # one process wrote them all
    assert len({p["trace_id"] for p in parsed.values()}) == 4  # in four profiler sessions
    runset = load_path(H200, use_cache=False)
    of_427 = [r for r in runset.runs if r.meta.pid == 427]
    assert sorted(r.meta.label for r in of_427) == sorted(ONE_PID)
    for run in of_427:
        assert len(run.meta.files) == 1 and run.meta.extra["trace_id"] == parsed[run.meta.label]["trace_id"]


def test_each_recording_gives_its_files_own_figures(capsys):
    """Recording N of the folder summarises exactly one trace: dispatches, kernel time and span
    equal the exact parse of that file (the merged process spanned 4.2 s)."""
    whole = load_path(H200, use_cache=False)
    first = pick_recording(whole)
    assert first.count == 5  # the four sessions of pid 427 and gpt2 (pid 426)
    seen = []
    for n in range(1, first.count + 1):
        choice = pick_recording(whole, n)
        (run,) = choice.runset.runs
        seen.append(run.meta.label)
        expected = parse(Path(run.meta.files[0]))
        doc = build_summary(choice.runset, SummaryOptions(logs=False))
        assert doc["kernels"]["dispatches"] == expected["dispatches"], run.meta.label
        assert doc["kernels"]["total_ns"] == expected["kernel_ns"], run.meta.label
        assert doc["wall_ns"] == expected["span_ns"] < 1_000_000_000, run.meta.label
    assert seen[:4] == ONE_PID  # recordings in time order; gpt2's session is hours later
    # the CLI: the busiest recording by default, another with --recording N
    from tui_prof.cli import main

    assert main(["summary", "--no-cache", "--json", "--recording", "3", str(H200)]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    graph = parse(H200 / "decode_graph.pt.trace.json.gz")
    assert doc["wall_ns"] == graph["span_ns"] and doc["kernels"]["total_ns"] == graph["kernel_ns"]
    assert "summarised recording 3" in captured.err


def _fragments(folder: Path) -> list:
    """The work units' runs of ``folder`` as the loaders give them, before the assembly."""
    sink = IssueSink()
    out = []
    for fmt, files in work_units(scan(folder, sink)):
        out.extend(loader_of(fmt).load(files, sink))
    return [r for r in out if not r.meta.extra.get("series_only")]


@pytest.mark.parametrize(
    "folder",
    [
        "rocprofv3_csv/rocprofv3-docs-rocm7",
        "kineto/ranks",
        "legacy_rocprof/hip-programming",
        "legacy_rocprof/saltfish",
        "rocprofv2/saltfish",
        "rocprof_compute/batched_gemm",
    ],
)
def test_multi_file_samples_merge_as_before(folder):
    """Where the files name no separate sessions, the plan groups fragments by process alone,
    as the assembly did before sessions (host, pid, rank)."""
    fragments = _fragments(DATA / folder)
    plan = merge_plan(fragments)
    by_process: dict = {}
    alone = []
    for i, run in enumerate(fragments):
        key = _process_key(run)
        if key is None:
            alone.append([i])
        else:
            by_process.setdefault(key, []).append(i)
    expected = sorted(alone + list(by_process.values()))
    got = sorted(sorted(g) for g in plan.groups) + []
    assert sorted(sorted(g + [d for d, k in plan.duplicates if k == g[0]]) for g in plan.groups) == expected
    assert len(got) == len(load_path(DATA / folder, use_cache=False).runs)


def _kineto_copy(src: Path, dst: Path, trace_id: str | None) -> Path:
    with gzip.open(src, "rt") as fh:
        doc = json.load(fh)
    if trace_id is None:
        doc.pop("trace_id")
    else:
        doc["trace_id"] = trace_id
    with gzip.open(dst, "wt") as fh:
        json.dump(doc, fh)
    return dst


def test_kineto_session_from_trace_id_or_file(tmp_path):
    """Two files of one pid with one trace id are one session (merged); with two ids, or
    without ids (one session per Kineto file), two processes."""
    src = H200 / "copies.pt.trace.json.gz"
    for case, ids, processes in (("same", ("A", "A"), 1), ("two", ("A", "B"), 2), ("none", (None, None), 2)):
        folder = tmp_path / case
        folder.mkdir()
        for n, trace_id in enumerate(ids):
            _kineto_copy(src, folder / f"part{n}.pt.trace.json.gz", trace_id)
        runset = load_path(folder, use_cache=False)
        assert len(runset.runs) == processes, case
        assert sum(len(r.kernels) for r in runset.runs) == 2 * parse(src)["dispatches"], case
    fragments = _fragments(tmp_path / "none")
    assert session_key(fragments[0].meta) != session_key(fragments[1].meta)
    assert not same_session(fragments[0].meta, fragments[1].meta)


def test_rocpd_session_from_its_guid(tmp_path):
    """Two copies of one rocpd database (same pid): one guid is one session (merged, as
    before); another guid in the copy is another session (two processes)."""
    src = DATA / "rocpd" / "28_results.db"
    kernels = len(load_path(src, use_cache=False).runs[0].kernels)
    for case, other_guid, processes in (("same", None, 1), ("two", "another-session", 2)):
        for n in (1, 2):
            folder = tmp_path / case / str(n)
            folder.mkdir(parents=True)
            path = folder / src.name
            shutil.copyfile(src, path)
            if n == 2 and other_guid:
                con = sqlite3.connect(path)
                tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_metadata%'")]
                for table in tables:
                    con.execute(f"UPDATE {table} SET value = ? WHERE tag = 'guid'", (other_guid,))
                con.commit()
                con.close()
        runset = load_path(tmp_path / case, use_cache=False)
        assert len(runset.runs) == processes, case
        assert sum(len(r.kernels) for r in runset.runs) == 2 * kernels, case
    assert pick_recording(load_path(tmp_path / "two", use_cache=False)).count == 2


def test_tui_picker_offers_each_session():
    """The TUI's process scan finds five traces; it opens on the busiest session alone (not a
    five-rank table of one pid), and R lists the five sessions; Enter opens decode_graph's."""
    from tui_harness import drive, press, settle

    from tui_prof.tui.app import TuiProfApp
    from tui_prof.tui.screens.recordings import RecordingsScreen

    graph = parse(H200 / "decode_graph.pt.trace.json.gz")
    train = parse(H200 / "train_sync.pt.trace.json.gz")

    async def flow(app, pilot):
        assert [r.meta.label for r in app.main.view.runset.runs] == ["train_sync"]
        assert len(app.main.view.kernels) == train["dispatches"]
        await press(app, pilot, "R")
        screen = app.screen
        assert isinstance(screen, RecordingsScreen)
        table = screen.query_one("#recordings-table")
        labels = [str(getattr(c, "plain", c)) for c in (table.get_row_at(i)[4] for i in range(table.row_count))]
        assert labels == [*ONE_PID, "gpt2_shapes_modules"]
        await press(app, pilot, "down", "down", "enter")
        await settle(app, pilot)
        assert app.recording == 3
        assert [r.meta.label for r in app.main.view.runset.runs] == ["decode_graph"]
        assert len(app.main.view.kernels) == graph["dispatches"]

    drive(TuiProfApp(str(H200), use_cache=False), flow, size=(120, 30))


def test_rocprofv3_json_session_from_its_init_time(tmp_path):
    """Two rocprofv3 JSON results of one pid (the 908 sample cut to its first 300 dispatches):
    the tool starts once per process, so the same init_time is one session (merged, as before)
    and another init_time another (two processes)."""
    with gzip.open(DATA / "rocprofv3_json" / "908_results.json.gz", "rt") as fh:
        doc = json.load(fh)
    tool = doc["rocprofiler-sdk-tool"][0]
    tool["buffer_records"]["kernel_dispatch"] = tool["buffer_records"]["kernel_dispatch"][:300]
    used = {d["dispatch_info"]["kernel_id"] for d in tool["buffer_records"]["kernel_dispatch"]}
    tool["kernel_symbols"] = [k for k in tool["kernel_symbols"] if k["kernel_id"] in used]
    one = tmp_path / "one"
    one.mkdir()
    with gzip.open(one / "results.json.gz", "wt") as fh:
        json.dump(doc, fh)
    kernels = len(load_path(one, use_cache=False).runs[0].kernels)
    assert kernels == 300
    for case, shift, processes in (("same", 0, 1), ("two", 10**12, 2)):
        folder = tmp_path / case
        folder.mkdir()
        for n in (1, 2):
            tool["metadata"]["init_time"] += shift if n == 2 else 0
            with gzip.open(folder / f"{n}_results.json.gz", "wt") as fh:
                json.dump(doc, fh)
        runset = load_path(folder, use_cache=False)
        assert len(runset.runs) == processes, case
        assert sum(len(r.kernels) for r in runset.runs) == 2 * kernels, case


def test_check_of_the_whole_folder_notes_its_recordings():
    """tuiprof check of the whole folder: an info note lists the five recordings (no figure
    is degraded by it: summary and open pick one); one recording alone has no such note."""
    from tui_prof.analysis.api import check_run

    whole = load_path(H200, use_cache=False)
    (note,) = [i for i in check_run(whole).issues if i.code == "separate-recordings"]
    assert note.severity == "info" and note.affects["count"] == 5
    assert [r["processes"] for r in note.affects["recordings"]] == [[name] for name in [*ONE_PID, "gpt2_shapes_modules"]]
    one = pick_recording(whole, 2).runset
    assert "separate-recordings" not in {i.code for i in check_run(one).issues}


def test_one_pid_in_two_runs_minutes_apart_is_two_processes(tmp_path):
    """rocprofv3 CSVs name no session: the same pid in two output folders (a container starts
    its programs with the same small pids) is one process when its records overlap or lie
    within a minute of each other, and two when they lie further apart."""
    from tests.test_tiny_units import HEADER

    t0 = 1_700_000_000_000_000_000
    for case, later, processes in (("same", 0, 1), ("close", 30_000_000_000, 1), ("apart", 300_000_000_000, 2)):
        for n, start in enumerate((t0, t0 + later)):
            host = tmp_path / case / f"run{n}" / "node0"
            host.mkdir(parents=True)
            rows = [
                f'"KERNEL_DISPATCH",1,1,500,1,16,"kernel_{k}(float*)",{k + 1},{start + 1000 * k},{start + 1000 * k + 500},0,0,64,1,1,1024,1024,1'
                for k in range(3)
            ]
            (host / "500_kernel_trace.csv").write_text("\n".join([HEADER, *rows]) + "\n")
        runset = load_path(tmp_path / case, use_cache=False)
        assert len(runset.runs) == processes, case
        assert sum(len(r.kernels) for r in runset.runs) == 6, case
        assert pick_recording(runset).count == processes, case
