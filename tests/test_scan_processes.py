"""The scan's processes before any unit loads (issue 14, scale): ``scan_processes`` and
``load_path(on_scan=...)`` name one process per rank of a generated multi-rank run
(tui_prof.synth.ranks, rocprofv3 CSV and Kineto), the same grouping the load then reads,
and ``on_scan`` comes once, before the first unit (parsed or from the cache)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui_prof.loaders import detect, load_path
from tui_prof.synth.ranks import RankSpec, build_ranks, write_ranks

DATA = Path(__file__).parent / "data"
SPEC = RankSpec(ranks=3, iterations=2, slow_rank=1, slow_pct=50)


@pytest.fixture(scope="module")
def ranks():
    return build_ranks(SPEC)


@pytest.fixture(scope="module")
def csv_run(ranks, tmp_path_factory):
    return write_ranks(ranks, tmp_path_factory.mktemp("csv") / "run", "csv")


def _run_of(runset, files: tuple[str, ...]):
    """The loaded process whose files are ``files`` (each file belongs to one process)."""
    found = [run for run in runset.runs if set(run.meta.files) == set(files)]
    assert len(found) == 1
    return found[0]


def test_csv_ranks_are_the_processes_the_load_gives(csv_run, ranks):
    scan = detect.scan_processes(csv_run)
    assert scan.multi and len(scan.ranks) == 3 and all(p.traced for p in scan.processes)
    # rocprofv3 CSV: one group per <host>/<pid>_ prefix, named relative to the run directory
    expected = sorted(f"{r.hostname}/{r.spec.pid}" for r in ranks.runs)
    assert sorted(p.label for p in scan.ranks) == expected
    runset = load_path(csv_run, use_cache=False)
    assert len(runset.runs) == 3
    for process in scan.ranks:
        run = _run_of(runset, process.files)
        assert process.label == f"{run.meta.hostname}/{run.meta.pid}"
    assert scan.units == 3


def test_kineto_ranks_one_per_file(ranks, tmp_path):
    run_dir = write_ranks(ranks, tmp_path / "kineto", "kineto")
    scan = detect.scan_processes(run_dir)
    assert [p.label for p in scan.ranks] == [f"rank{k}.pt.trace.json.gz" for k in range(3)]
    assert scan.multi


def test_one_process_and_fragments_is_not_multi():
    """The rocprofv3 documentation folder: one traced process beside an agent list of
    another prefix (it opens on its hotspots: test_tui_ranks_loading)."""
    scan = detect.scan_processes(DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7")
    assert len(scan.ranks) == 1 and not scan.multi


def test_a_single_file_and_a_missing_path(ranks, tmp_path):
    run_dir = write_ranks(ranks, tmp_path / "kineto", "kineto")
    one = detect.scan_processes(run_dir / "rank1.pt.trace.json.gz")
    assert [p.label for p in one.ranks] == ["rank1.pt.trace.json.gz"] and not one.multi
    missing = detect.scan_processes(tmp_path / "nope")
    assert missing.processes == () and missing.units == 0 and not missing.multi


def test_stats_only_processes_count_when_none_is_traced(csv_run, tmp_path):
    """An ``srun … rocprofv3 --stats`` job without a trace: a process per stats prefix (the
    generated run's statistics files alone)."""
    for path in csv_run.rglob("*_stats.csv"):
        target = tmp_path / path.relative_to(csv_run)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    scan = detect.scan_processes(tmp_path)
    assert sorted(p.label for p in scan.ranks) == sorted(p.label for p in detect.scan_processes(csv_run).ranks)
    assert scan.multi and not any(p.traced for p in scan.ranks)
    assert len(load_path(tmp_path, use_cache=False).runs) == 3


@pytest.mark.parametrize("use_cache", [False, True])
def test_on_scan_comes_once_before_any_unit(csv_run, tmp_path, monkeypatch, use_cache):
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    for _ in range(2 if use_cache else 1):  # with the cache: the second load reads every unit from it
        events: list = []
        runset = load_path(
            csv_run,
            use_cache=use_cache,
            on_scan=lambda scan, events=events: events.append(("scan", scan)),
            on_unit=lambda runs, done, total, events=events: events.append(("unit", done)),
        )
        assert [e[0] for e in events] == ["scan", "unit", "unit", "unit"]
        scan = events[0][1]
        assert scan == detect.scan_processes(csv_run, use_cache=use_cache)
        assert len(scan.ranks) == len(runset.runs) == 3
        for process in scan.ranks:
            _run_of(runset, process.files)
