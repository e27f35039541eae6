"""The load of ``tuiprof open`` started before Textual is imported (tui_prof.tui.view.early):
the same run set as the app's own load, the units loaded before the app attached handed
over in order, errors and a quit during that load handled as in the app's own load, and the
first open's cache entries still written after the first screen."""

import asyncio
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from tui_harness import first_screen, until

from tui_prof.loaders import cache
from tui_prof.loaders.base import LoadCancelled, load_scope
from tui_prof.model import RunSet
from tui_prof.model.schema import TABLES
from tui_prof.synth import SynthSpec, build
from tui_prof.synth.write_csv import write_rocprofv3_csv
from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.view import early
from tui_prof.tui.view.early import EarlyLoad
from tui_prof.tui.view.runview import LoadError, build_view, load_runset

PROCESSES = 2


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("early") / "run"
    for r in range(PROCESSES):
        run = build(SynthSpec(iterations=3, kernels_per_iteration=5, seed=r, pid=30_000 + r), hostname="node0")
        write_rocprofv3_csv(run, root, hostname="node0", pid=30_000 + r)
    return root


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(folder))
    return folder


def test_early_load_gives_the_run_set_of_load_runset(run_dir):
    units: list[tuple[list[str], int, int]] = []
    got = EarlyLoad(str(run_dir), run_dir.name, use_cache=False).result(
        on_unit=lambda runs, done, total: units.append(([r.meta.label for r in runs], done, total))
    )
    want = load_runset(str(run_dir), run_dir.name, use_cache=False)
    assert len(got.runs) == len(want.runs) == PROCESSES
    for a, b in zip(got.runs, want.runs):
        assert a.meta == b.meta and a.warnings == b.warnings
        for name in TABLES:
            pd.testing.assert_frame_equal(a.table(name), b.table(name), check_exact=True)
    # every process handed over once, whether it loaded before or after the attach
    assert sorted(label for labels, _, _ in units for label in labels) == sorted(r.meta.label for r in want.runs)
    assert [done for _, done, _ in units] == list(range(1, PROCESSES + 1))


def test_units_loaded_before_the_attach_are_handed_over_first_in_order(monkeypatch):
    attached, finish = threading.Event(), threading.Event()
    done = RunSet(root="x")

    def staged(source, name, *, use_cache, progress, on_unit, pending):
        progress("loading", 1, 3)
        on_unit(["a"], 1, 3)
        on_unit(["b"], 2, 3)
        assert attached.wait(5) and finish.wait(5)
        progress("loading", 3, 3)
        on_unit(["c"], 3, 3)
        return done

    monkeypatch.setattr(early, "load_runset", staged)
    load = EarlyLoad("x", use_cache=False)
    while len(load._units) < 2:  # both units in before the app attaches
        time.sleep(0.001)
    seen: list[tuple] = []
    result: list[RunSet] = []
    waiter = threading.Thread(target=lambda: result.append(load.result(lambda *a: seen.append(("progress", *a)), lambda *a: seen.append(("unit", *a)))))
    waiter.start()
    while load._on_unit is None:
        time.sleep(0.001)
    attached.set()
    finish.set()
    waiter.join(5)
    assert result == [done]
    assert seen == [
        ("unit", ["a"], 1, 3),
        ("unit", ["b"], 2, 3),
        ("progress", "loading", 1, 3),  # the last report before the attach
        ("progress", "loading", 3, 3),
        ("unit", ["c"], 3, 3),
    ]


def test_a_missing_run_raises_the_load_error_from_result(tmp_path):
    with pytest.raises(LoadError, match="no such file or directory"):
        EarlyLoad(str(tmp_path / "absent"), "absent", use_cache=False).result(timeout=10)


def test_the_app_shows_the_early_load_and_writes_the_cache_after_the_first_screen(run_dir, cache_dir):
    load = EarlyLoad(str(run_dir), run_dir.name, use_cache=True)
    app = TuiProfApp(str(run_dir), early=load)

    async def main():
        async with app.run_test(size=(120, 40)) as pilot:
            await first_screen(app, pilot)
            await until(app, pilot, lambda: app.cache_written is not None)

    asyncio.run(main())
    want = build_view(load_runset(str(run_dir), run_dir.name, use_cache=False), lazy=True)
    pd.testing.assert_frame_equal(app.view.hotspots("name"), want.hotspots("name"), check_exact=True)
    assert app.cache_written == PROCESSES  # the units the early load parsed, written after the screen
    assert len([p for p in cache_dir.iterdir() if cache.ENTRY_NAME.match(p.name)]) == PROCESSES


def test_quit_during_the_early_load_cancels_it(monkeypatch):
    started = threading.Event()

    def endless(source, name, *, use_cache, progress, on_unit, pending):
        event = threading.Event()
        with load_scope(event):  # registered as load_path registers a load: cancel_loads sets it
            started.set()
            while not event.wait(0.01):
                pass
        raise LoadCancelled()

    monkeypatch.setattr(early, "load_runset", endless)
    load = EarlyLoad("somewhere", use_cache=False)
    assert started.wait(5)
    app = TuiProfApp("somewhere", use_cache=False, early=load)
    quit_s: list[float] = []

    async def main():
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.2)
            assert app.view is None and not load.done()
            begun = time.monotonic()
            await pilot.press("q")
        quit_s.append(time.monotonic() - begun)

    asyncio.run(main())
    assert quit_s[0] < 1.0
    with pytest.raises(LoadCancelled):
        load.result(timeout=2)
    assert app.load_error == ""  # a quit, not a failure
