"""Scale features: the load cache as the CLI uses it, invalidation, --no-cache, many ranks.

Small generated runs only (answers known by construction from tui_prof.synth); no timing
asserts -- bench/bench_scale.py measures speed.
"""

import json
import os
from pathlib import Path

import pandas as pd
import pytest

from tui_prof import cli
from tui_prof.loaders import cache, load_path, rocprofv3_csv
from tui_prof.model.schema import TABLES
from tui_prof.synth import SynthSpec, build
from tui_prof.synth.write_csv import write_rocprofv3_csv
from tui_prof.synth.write_rocpd import write_rocpd


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(folder))
    return folder


def make_csv_run(root: Path, iterations: int = 20, pid: int = 4242, host: str = "synthhost", seed: int = 0):
    run = build(SynthSpec(iterations=iterations, kernels_per_iteration=10, seed=seed, pid=pid), hostname=host)
    write_rocprofv3_csv(run, root, hostname=host, pid=pid)
    return run


def entries(folder: Path) -> list[Path]:
    """The cache entries in ``folder`` (not its tag, temporary folders or the scan memos)."""
    return sorted(p for p in folder.iterdir() if cache.ENTRY_NAME.match(p.name)) if folder.exists() else []


def summary_json(capsys, *args) -> dict:
    assert cli.main(["summary", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_cache_hit_equals_fresh_load_and_is_used_by_cli(tmp_path, cache_dir, capsys, monkeypatch):
    run_dir = tmp_path / "run"
    synth = make_csv_run(run_dir)
    first = summary_json(capsys, str(run_dir))
    assert len(entries(cache_dir)) == 1  # the CLI wrote one entry by default
    assert first["kernels"]["dispatches"] == synth.expected.dispatches
    assert first["kernels"]["total_ns"] == synth.expected.kernel_total_ns

    fresh = load_path(run_dir, use_cache=False)
    cached = load_path(run_dir, use_cache=True)
    assert len(cached.runs) == len(fresh.runs) == 1
    for name in TABLES:
        pd.testing.assert_frame_equal(cached.runs[0].table(name), fresh.runs[0].table(name))
    assert cached.runs[0].meta == fresh.runs[0].meta
    assert cached.runs[0].agents == fresh.runs[0].agents

    # A second CLI run must not parse any file: make parsing fail and expect the same answer.
    def no_parsing(*_args, **_kw):
        raise AssertionError("the files were parsed although the cache entry is valid")

    monkeypatch.setattr(rocprofv3_csv, "load", no_parsing)  # the loader the run needs
    again = summary_json(capsys, str(run_dir))
    assert again == first


def test_changed_file_invalidates(tmp_path, cache_dir):
    run_dir = tmp_path / "run"
    synth = make_csv_run(run_dir)
    before = load_path(run_dir, use_cache=True)
    assert len(before.runs[0].kernels) == synth.expected.dispatches
    trace = next(run_dir.rglob("*_kernel_trace.csv"))
    lines = trace.read_text().splitlines(keepends=True)
    trace.write_text("".join(lines[:-5]))  # drop the last five dispatches
    after = load_path(run_dir, use_cache=True)
    assert len(after.runs[0].kernels) == synth.expected.dispatches - 5
    assert len(entries(cache_dir)) == 2  # a new key; the stale entry is never read

    # Same size and content but a new mtime is a change too.
    stat = trace.stat()
    os.utime(trace, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    load_path(run_dir, use_cache=True)
    assert len(entries(cache_dir)) == 3


def test_no_cache_writes_nothing(tmp_path, cache_dir, capsys):
    run_dir = tmp_path / "run"
    synth = make_csv_run(run_dir)
    doc = summary_json(capsys, "--no-cache", str(run_dir))
    assert doc["kernels"]["dispatches"] == synth.expected.dispatches
    assert entries(cache_dir) == []
    assert not any(p.name.startswith(".") for p in run_dir.rglob("*"))  # nothing written into the run either


def test_interrupted_cache_write_leaves_nothing(tmp_path, cache_dir, monkeypatch):
    run_dir = tmp_path / "run"
    make_csv_run(run_dir, iterations=2)
    runset = load_path(run_dir)

    def interrupted(*_args, **_kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(pd.DataFrame, "to_feather", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cache.save(runset, "a" * 40)
    assert entries(cache_dir) == []


def make_ranks(root: Path, ranks: int, iterations: int = 3) -> dict[str, dict]:
    """``ranks`` processes on 8-rank hosts as ``<host>/<pid>_*.csv``; their known totals."""
    answers = {}
    for r in range(ranks):
        host, pid = f"node{r // 8:02d}", 10_000 + r
        # a different iteration count per rank, so a mix-up between ranks would show
        run = make_csv_run(root, iterations=iterations + r % 5, pid=pid, host=host, seed=r)
        answers[f"{host}/{pid}"] = {"dispatches": run.expected.dispatches, "kernel_total_ns": run.expected.kernel_total_ns}
    return answers


def per_run_totals(runset) -> dict[str, dict]:
    return {
        f"{run.meta.hostname}/{run.meta.pid}": {
            "dispatches": len(run.kernels),
            "kernel_total_ns": int((run.kernels["end"] - run.kernels["start"]).sum()),
        }
        for run in runset.runs
    }


@pytest.fixture(scope="module")
def ranks_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranks")
    return root, make_ranks(root, 64)


def test_64_ranks_load_as_64_runs_with_their_totals(ranks_dir, cache_dir, monkeypatch):
    root, answers = ranks_dir
    parallel = load_path(root)
    assert len(parallel.runs) == 64
    assert not parallel.errors
    assert per_run_totals(parallel) == answers

    # the serial load gives the same run set; it parses, so it also writes the cache entries
    monkeypatch.setenv("TUIPROF_LOAD_WORKERS", "1")
    serial = load_path(root, use_cache=True)
    assert len(entries(cache_dir)) == 64  # one entry per process
    assert [r.meta.label for r in serial.runs] == [r.meta.label for r in parallel.runs]
    for a, b in zip(serial.runs, parallel.runs):
        for name in TABLES:
            pd.testing.assert_frame_equal(a.table(name), b.table(name))

    reopened = load_path(root, use_cache=True)  # from the entries
    assert per_run_totals(reopened) == answers


def test_64_ranks_summary_lists_every_process(ranks_dir, cache_dir, capsys):
    root, answers = ranks_dir
    doc = summary_json(capsys, "--no-cache", str(root))
    got = {f"{p['hostname']}/{p['pid']}": p["dispatches"] for p in doc["processes"]}
    assert got == {k: v["dispatches"] for k, v in answers.items()}
    assert doc["kernels"]["total_ns"] == sum(v["kernel_total_ns"] for v in answers.values())


def test_rocpd_ranks_load_in_parallel(tmp_path):
    answers = {}
    for r in range(4):
        host, pid = f"node{r // 2}", 20_000 + r
        run = build(SynthSpec(iterations=2 + r, kernels_per_iteration=10, seed=r, pid=pid), hostname=host)
        write_rocpd(run, tmp_path / host / f"{pid}_results.db", hostname=host)
        answers[f"{host}/{pid}"] = {"dispatches": run.expected.dispatches, "kernel_total_ns": run.expected.kernel_total_ns}
    runset = load_path(tmp_path)
    assert per_run_totals(runset) == answers


def test_progress_reports_loading_and_analysis(tmp_path, cache_dir):
    from tui_prof.analysis.summary import build_summary

    make_csv_run(tmp_path / "a", pid=1)
    make_csv_run(tmp_path / "b", pid=2)
    seen = []
    runset = load_path(tmp_path, progress=lambda stage, done, total: seen.append((stage, done, total)))
    build_summary(runset, progress=lambda stage, done, total: seen.append((stage, done, total)))
    stages = [s for s, _, _ in seen]
    assert "scanning" in stages and "loading" in stages and "analysing" in stages
    assert ("loading", 2, 2) in seen  # one unit per process, both reported done
