"""Cache entries written after the first screen (``load_path(..., pending=...)``, the TUI's
first open): the entries equal those written at once, a reopen reads them, and a quit
during the write leaves no entry that a later open would read."""

import asyncio
import dataclasses
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from tui_harness import first_screen, until

from tui_prof.loaders import cache, load_path, rocprofv3_csv
from tui_prof.model.schema import TABLES
from tui_prof.synth import SynthSpec, build
from tui_prof.synth.write_csv import write_rocprofv3_csv
from tui_prof.tui.app import TuiProfApp

PROCESSES = 2  # one cache entry (work unit) per process


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("deferred") / "run"
    for r in range(PROCESSES):
        run = build(SynthSpec(iterations=3, kernels_per_iteration=5, seed=r, pid=20_000 + r), hostname="node0")
        write_rocprofv3_csv(run, root, hostname="node0", pid=20_000 + r)
    return root


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def parses(monkeypatch) -> list[str]:
    """The process groups handed to the rocprofv3-CSV loader, one per parse."""
    seen: list[str] = []
    original = rocprofv3_csv.load

    def counting(files, issues):
        seen.extend(sorted({item.group or item.path.name for item in files}))
        return original(files, issues)

    monkeypatch.setattr(rocprofv3_csv, "load", counting)
    return seen


def entries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if cache.ENTRY_NAME.match(p.name)) if folder.exists() else []


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if cache.TEMP_NAME.match(p.name)) if folder.exists() else []


def assert_same(got, want) -> None:
    assert [dataclasses.astuple(i) for i in got.issues] == [dataclasses.astuple(i) for i in want.issues]
    assert len(got.runs) == len(want.runs) == PROCESSES
    for a, b in zip(got.runs, want.runs):
        assert a.meta == b.meta and a.agents == b.agents
        assert a.warnings == b.warnings and a.partial == b.partial
        for name in TABLES:
            pd.testing.assert_frame_equal(a.table(name), b.table(name), check_exact=True)
        assert a.tool_stats.keys() == b.tool_stats.keys()


def test_pending_entries_are_written_on_write_and_ignore_later_changes(run_dir, cache_dir, parses):
    fresh = load_path(run_dir, use_cache=False)
    pending = cache.PendingWrites()
    loaded = load_path(run_dir, use_cache=True, pending=pending)
    assert len(pending) == PROCESSES
    assert entries(cache_dir) == []  # nothing written yet
    # what the views do to the loaded run after the load must not reach the entries
    for run in loaded.runs:
        run.kernels["extra"] = 1
        run.kernels.loc[0, "start"] = -5
        run.warnings.append("changed")
        run.meta.files.append("changed.csv")
        run.agents.clear()
    assert pending.write() == PROCESSES
    assert len(pending) == 0 and len(entries(cache_dir)) == PROCESSES and temporaries(cache_dir) == []
    parsed = len(parses)
    assert_same(load_path(run_dir, use_cache=True), fresh)
    assert len(parses) == parsed  # every unit from its entry


def test_tui_first_open_writes_the_entries_after_the_first_screen(run_dir, cache_dir, parses, monkeypatch):
    fresh = load_path(run_dir, use_cache=False)
    shown_at_save: list[bool] = []
    original_save = cache.save

    def recording(runset, key):
        shown_at_save.append(app.view is not None)
        return original_save(runset, key)

    monkeypatch.setattr(cache, "save", recording)
    app = TuiProfApp(run_dir)

    async def main():
        async with app.run_test(size=(120, 40)) as pilot:
            await first_screen(app, pilot)
            await until(app, pilot, lambda: app.cache_written is not None)

    asyncio.run(main())
    assert app.cache_written == PROCESSES
    assert shown_at_save == [True] * PROCESSES  # each entry written once the run was shown
    assert len(entries(cache_dir)) == PROCESSES and temporaries(cache_dir) == []
    parsed = len(parses)
    assert_same(load_path(run_dir, use_cache=True), fresh)
    assert len(parses) == parsed  # the reopen read the entries: no unit parsed again


def test_quit_during_the_write_stops_and_leaves_no_entry(run_dir, cache_dir, parses, monkeypatch):
    writing, release = threading.Event(), threading.Event()
    original_write = cache._write_table

    def slow(frame, path):  # the first table written waits until the test lets it go
        if not writing.is_set():
            writing.set()
            release.wait(10)
        return original_write(frame, path)

    monkeypatch.setattr(cache, "_write_table", slow)
    app = TuiProfApp(run_dir)
    quit_s: list[float] = []

    async def main():
        async with app.run_test(size=(120, 40)) as pilot:
            await first_screen(app, pilot)
            for _ in range(500):
                if writing.is_set():
                    break
                await pilot.pause(0.01)
            assert writing.is_set()
            started = time.monotonic()
            await pilot.press("q")
        quit_s.append(time.monotonic() - started)

    asyncio.run(main())
    assert quit_s[0] < 1.0
    release.set()  # the table being written finishes; the write then sees the quit
    deadline = time.monotonic() + 5
    while temporaries(cache_dir) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert app.cache_written is None
    assert entries(cache_dir) == [] and temporaries(cache_dir) == []
    parsed = len(parses)
    fresh = load_path(run_dir, use_cache=False)
    assert_same(load_path(run_dir, use_cache=True), fresh)
    assert len(parses) == parsed + 2 * PROCESSES  # no entry was read: the cached open parsed every unit again
