"""The rank table fills while a multi-process run loads (issue 14, scale): rows appear as
each rank's work unit loads, before the other panes, and the table completes with the
generator's numbers (tui_prof.synth.ranks: four ranks as rocprofv3 CSV, rank 2 computes
50 % longer). The loader is gated so that units are released one by one."""

from __future__ import annotations

import asyncio
import sys
import threading
import time

import pytest
from tui_harness import TRIES, settle

from tui_prof.analysis.summary import build_summary
from tui_prof.loaders import detect, load_path, rocprofv3_csv
from tui_prof.loaders.base import check_cancelled
from tui_prof.loaders.detect import scan_processes
from tui_prof.synth.ranks import RankSpec, build_ranks, write_ranks
from tui_prof.tui import app as app_module
from tui_prof.tui import schedule
from tui_prof.tui.app import TuiProfApp
from tui_prof.tui.panes.ranks import RanksPane
from tui_prof.tui.screens.main import MainScreen
from tui_prof.tui.view.rankrows import PENDING, PENDING_RANK, RankRows

SPEC = RankSpec(ranks=4, iterations=3, slow_rank=2, slow_pct=50)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    ranks = build_ranks(SPEC)
    return write_ranks(ranks, tmp_path_factory.mktemp("ranks") / "run", "csv"), ranks


async def _until(pilot, condition) -> None:
    for _ in range(TRIES):
        await pilot.pause(0.01)
        if condition():
            return
    raise AssertionError("condition never held")


async def _rank_screen(app: TuiProfApp, pilot):
    """The rank screen as the scan puts it up: a row per process (four), the ranks tab
    shown, no view yet; returns the ranks pane and the tabs."""
    pane = app.main.query_one(RanksPane)
    tabs = app.main.query_one("#tabs")
    await _until(pilot, lambda: pane.table.row_count == 4)
    assert tabs.display and tabs.active == "ranks" and app.main.view is None
    return pane, tabs


def _loaded(pane: RanksPane) -> list[int]:
    """The ranks of the rows whose process has loaded (the others are pending: "…")."""
    if pane.table.model is None:
        return []
    return [r for r in pane.table.model.frame["rank"].tolist() if r != PENDING_RANK]


def _check_final(pane: RanksPane, expected) -> None:
    frame = pane.table.model.frame
    assert frame["rank"].tolist() == [0, 1, 2, 3]
    assert frame["wait_ns"].tolist() == expected.wait_by_rank
    assert frame["compute_ns"].tolist() == expected.compute_ns
    assert frame["communication_ns"].tolist() == expected.communication_ns
    assert frame["copy_ns"].tolist() == expected.copy_ns
    assert frame["sync_ns"].tolist() == expected.sync_ns
    assert frame["span_ns"].tolist() == expected.span_ns
    header = str(pane.query_one("#ranks-header").render())
    assert "4 rank(s)" in header and "straggler: rank 2 (last at 3 of 3 collectives)" in header


def test_rank_rows_fill_as_units_load(run_dir, monkeypatch):
    path, ranks = run_dir
    gate = _gate_units(monkeypatch)

    async def main() -> None:
        app = TuiProfApp(path, use_cache=False)
        async with app.run_test(size=(160, 50)) as pilot:
            # the scan found four processes: the rank screen before any unit is parsed
            pane, tabs = await _rank_screen(app, pilot)
            assert _loaded(pane) == []
            gate.release()
            await _until(pilot, lambda: len(_loaded(pane)) == 1)
            gate.release()
            await _until(pilot, lambda: len(_loaded(pane)) == 2)
            # the ranks pane is the first screen; the others wait for every process
            assert tabs.display and tabs.active == "ranks" and app.main.view is None and pane.table.row_count == 4
            assert str(pane.query_one("#ranks-header").render()).startswith("Loading: 2 of 4 ranks loaded")
            frame = pane.table.model.frame
            loaded = frame[frame["rank"] != PENDING_RANK]
            assert loaded["wait_ns"].tolist() == [PENDING, PENDING]  # waits compare every rank
            assert loaded["compute_ns"].tolist() == ranks.expected.compute_ns[:2]  # a rank's own figures are final
            assert "…" in pane.table.render_line(1).text
            await pilot.press("1")  # the hotspots come with every process
            assert tabs.active == "ranks"
            gate.release()
            await _until(pilot, lambda: len(_loaded(pane)) == 3)
            gate.release()
            await settle(app, pilot)
            _check_final(pane, ranks.expected)
            assert tabs.active == "ranks" and app.main.view is not None
            await pilot.press("1")
            assert tabs.active == "hotspots"

    asyncio.run(main())


def test_cached_reopen_gives_the_same_rank_table(run_dir, monkeypatch, tmp_path):
    path, ranks = run_dir
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))

    async def main() -> None:
        for _ in range(2):  # the first open writes the cache, the second reads every unit from it
            app = TuiProfApp(path)
            async with app.run_test(size=(160, 50)) as pilot:
                await settle(app, pilot)
                pane = app.main.query_one(RanksPane)
                _check_final(pane, ranks.expected)
                # no key while the ranks loaded: the run opens on its hotspots (issue 33)
                assert app.main.query_one("#tabs").active == "hotspots"

    asyncio.run(main())
    assert any((tmp_path / "cache").iterdir())


def test_rank_rows_equal_the_summary_sections(run_dir):
    """RankRows (one core per process as it loads, the comparisons at the end) gives the
    summary's ranks, communication and stragglers sections exactly."""
    path, _ = run_dir
    rows = RankRows()
    runset = load_path(path, use_cache=False, on_unit=rows.add)
    assert rows.processes == 4 and (rows.done, rows.total) == (4, 4)
    final = rows.final(runset)
    doc = build_summary(runset)
    for key in ("ranks", "communication", "stragglers"):
        assert final[key] == doc[key]
    # the cores of the assembled runs were reused, not computed again
    assert {id(c.run) for c in rows.cores} == {id(run) for run in runset.runs}


def test_opens_on_ranks_only_for_several_traced_processes(run_dir):
    """Four traced ranks open on the rank table; the rocprofv3 documentation folder (one
    traced process beside two fragments: a stats table and an agent list) opens on its
    hotspots; two ranks with statistics and no trace open on the rank table."""
    from pathlib import Path

    from tui_prof.model.run import Run
    from tui_prof.tui.view.rankrows import opens_on_ranks

    path, _ = run_dir
    assert opens_on_ranks(load_path(path, use_cache=False).runs)
    docs = load_path(Path(__file__).parent / "data" / "rocprofv3_csv" / "rocprofv3-docs-rocm7", use_cache=False).runs
    assert len(docs) == 5 and not opens_on_ranks(docs)  # + the two counter passes of other processes (issue 32)
    traced = [r for r in docs if len(r.kernels) and "counter_pass_of" not in r.meta.extra]
    stats_only = [r for r in docs if len(r.tool_stats) and not len(r.kernels)]
    assert len(traced) == 1 and len(stats_only) == 1
    assert opens_on_ranks(stats_only * 2) and not opens_on_ranks(stats_only) and not opens_on_ranks([Run(), Run()])


def _gate_units(monkeypatch) -> threading.Semaphore:
    """Units parse only when released, one at a time in unit order, each refilling the table."""
    gate = threading.Semaphore(0)
    original = rocprofv3_csv.load

    def gated(files, issues):
        while not gate.acquire(timeout=0.05):
            check_cancelled()  # a quit stops the waiting unit like any parse
        return original(files, issues)

    monkeypatch.setattr(rocprofv3_csv, "load", gated)
    monkeypatch.setattr(app_module, "RANK_ROWS_INTERVAL_S", 0.0)
    monkeypatch.setenv("TUIPROF_LOAD_WORKERS", "1")
    return gate


def test_rank_screen_shows_every_rank_before_any_unit_loads(run_dir, monkeypatch):
    """No unit has parsed: one pending row per process the scan found, named by its file
    prefix, every figure "…"; the rows fill as the units are released."""
    path, ranks = run_dir
    gate = _gate_units(monkeypatch)
    labels = [f"loading {p.label}" for p in scan_processes(path).ranks]
    assert len(labels) == 4

    async def main() -> None:
        app = TuiProfApp(path, use_cache=False)
        async with app.run_test(size=(160, 50)) as pilot:
            pane, tabs = await _rank_screen(app, pilot)
            assert pane.has_focus_within
            assert str(pane.query_one("#ranks-header").render()).startswith("Loading: 0 of 4 ranks loaded")
            frame = pane.table.model.frame
            assert frame["rank"].tolist() == [PENDING_RANK] * 4 and frame["top_kernel"].tolist() == labels
            line = pane.table.render_line(1).text
            assert line.split()[0] == "…" and labels[0] in line and line.count("…") >= 8
            await pilot.press("1", "2")  # the other panes come with every process
            assert tabs.active == "ranks"
            for k in range(4):
                gate.release()
                await _until(pilot, lambda k=k: len(_loaded(pane)) == k + 1)
                assert pane.table.row_count == 4 or k == 3
            await settle(app, pilot)
            _check_final(pane, ranks.expected)
            assert tabs.active == "ranks" and app.main.view is not None

    asyncio.run(main())


def test_a_pending_row_shows_a_hostile_file_prefix_inert(run_dir, tmp_path, monkeypatch):
    """A pending row names its process by the file prefix, a string from the run directory:
    its escape sequence and markup reach the table as visible text, never obeyed."""
    import shutil

    path, _ = run_dir
    copy = tmp_path / "run"
    shutil.copytree(path, copy)
    hostile = "\x1b]0;owned\x07[b]x\x1b[31m"
    for f in list(copy.rglob("5000_*")):
        f.rename(f.with_name(f.name.replace("5000", hostile, 1)))
    gate = _gate_units(monkeypatch)

    async def main() -> None:
        app = TuiProfApp(copy, use_cache=False)
        async with app.run_test(size=(160, 50)) as pilot:
            pane, _ = await _rank_screen(app, pilot)
            lines = [pane.table.render_line(y).text for y in range(1, 5)]
            shown = [line for line in lines if "owned" in line]
            assert len(shown) == 1 and "[b]x" in shown[0]  # the prefix, markup as text
            assert not any(ord(c) < 32 or ord(c) == 127 for line in lines for c in line)
            for _ in range(4):
                gate.release()

    asyncio.run(main())


@pytest.mark.parametrize("moment", ["scanned", "units", "view"])
@pytest.mark.parametrize("key", ["q", "ctrl+q"])
def test_quit_during_the_load_is_clean(run_dir, monkeypatch, moment, key):
    """Quitting with the rank screen up and no unit parsed, with two of four in, or with the
    first full screen up and the lazy panes computing: the app exits within a second and
    no handler fails on the screen it left (run_test re-raises an app's exception)."""
    path, _ = run_dir
    gate = _gate_units(monkeypatch)
    app = TuiProfApp(path, use_cache=False)

    async def main() -> float:
        async with app.run_test(size=(160, 50)) as pilot:
            pane = app.main.query_one(RanksPane)
            await _until(pilot, lambda: pane.table.row_count == 4)
            if moment == "units":
                gate.release()
                gate.release()
                await _until(pilot, lambda: len(_loaded(pane)) == 2)
            elif moment == "view":
                for _ in range(4):
                    gate.release()
                await _until(pilot, lambda: app.main.view is not None)  # the lazy panes computing in the background
            asked = time.monotonic()
            await pilot.press(key)
        return time.monotonic() - asked

    took = asyncio.run(main())
    assert took < 1.0
    assert app.return_code == 0 and app.load_error == ""


def test_quit_while_the_scan_runs_is_clean(run_dir, monkeypatch):
    """q before the scan has found anything: the load stops, no rank screen is shown after."""
    path, _ = run_dir
    scanning, release = threading.Event(), threading.Event()
    real_scan = detect.scan

    def slow_scan(*args, **kwargs):
        scanning.set()
        release.wait(5)
        return real_scan(*args, **kwargs)

    monkeypatch.setattr(detect, "scan", slow_scan)
    app = TuiProfApp(path, use_cache=False)

    async def main() -> float:
        async with app.run_test(size=(160, 50)) as pilot:
            await _until(pilot, scanning.is_set)
            asked = time.monotonic()
            await pilot.press("q")
        release.set()  # the scan returns into a cancelled load: nothing reaches the app
        return time.monotonic() - asked

    assert asyncio.run(main()) < 1.0
    assert app.return_code == 0


@pytest.mark.parametrize("pauses", [0, 1, 3, 8, 20])
def test_quit_at_any_moment_of_an_open_is_clean(run_dir, monkeypatch, tmp_path, pauses):
    """q after a few turns of the event loop, the load and the cache writes running at their
    own pace (a first open with the cache): whichever stage it lands in, the app exits
    within a second without an error."""
    path, _ = run_dir
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    app = TuiProfApp(path)

    async def main() -> float:
        async with app.run_test(size=(160, 50)) as pilot:
            for _ in range(pauses):
                await pilot.pause(0.02)
            asked = time.monotonic()
            await pilot.press("q")
        return time.monotonic() - asked

    assert asyncio.run(main()) < 1.0
    assert app.return_code == 0


def test_ctrl_c_during_the_load_says_how_to_quit(run_dir, monkeypatch):
    """In the terminal's raw mode Ctrl-C is a key: Textual answers it with a notice naming
    the quit key (it never ends the app half-way); q then quits cleanly."""
    path, _ = run_dir
    _gate_units(monkeypatch)
    app = TuiProfApp(path, use_cache=False)
    notices: list[str] = []
    app.notify = lambda message, **kwargs: notices.append(str(message))  # type: ignore[method-assign]

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            pane = app.main.query_one(RanksPane)
            await _until(pilot, lambda: pane.table.row_count == 4)
            await pilot.press("ctrl+c")
            await pilot.pause()
            assert len(notices) == 1 and notices[0].endswith("to quit the app")  # Textual names its ctrl+q
            assert app.is_running
            await pilot.press("q")

    asyncio.run(main())
    assert app.return_code == 0


def test_scan_of_several_processes_that_load_as_one_opens_on_the_hotspots(run_dir, monkeypatch):
    """The scan finds four processes and shows the rank screen; three units then fail to
    load (their loader raises: each becomes a load issue), so the run is one process: the
    first screen is the hotspots, as for any single-process run, with the ranks tab hidden."""
    path, _ = run_dir
    original = rocprofv3_csv.load
    scanned = detect.scan_processes(path).ranks
    first = scanned[0].files
    others = {f for process in scanned[1:] for f in process.files}

    def only_the_first(files, issues):
        if tuple(str(item.path) for item in files) != first:
            raise RuntimeError("damaged")
        return original(files, issues)

    monkeypatch.setattr(rocprofv3_csv, "load", only_the_first)
    shown: list[int] = []
    real = MainScreen.show_ranks_loading

    def show_ranks_loading(screen, doc, *args):
        shown.append(len(doc["ranks"]))
        real(screen, doc, *args)

    monkeypatch.setattr(MainScreen, "show_ranks_loading", show_ranks_loading)
    app = TuiProfApp(path, use_cache=False)

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await settle(app, pilot)
            tabs = app.main.query_one("#tabs")
            assert len(app.view.runset.runs) == 1 and {e.path for e in app.view.runset.errors} == others
            assert tabs.active == "hotspots" and app.main.hotspots.table.has_focus
            assert not app.main.early_ranks
            await pilot.press("2")
            assert tabs.active == "timeline"
            await pilot.press("7")  # no ranks tab for one process
            assert tabs.active == "timeline"

    asyncio.run(main())
    assert shown and shown[0] == 4  # the rank screen was shown from the scan


def test_shutdown_while_units_keep_loading_is_clean(run_dir, monkeypatch):
    """The app shut down (leaving run_test: Textual removes the screens while the app still
    handles messages) as the units go on loading and posting progress and rank rows: no
    handler reaches for a widget already removed (run_test re-raises an app's exception)."""
    path, _ = run_dir
    gate = _gate_units(monkeypatch)
    stop = threading.Event()

    def release() -> None:  # a unit every few milliseconds, during the shutdown too
        while not stop.is_set():
            gate.release()
            time.sleep(0.003)

    app = TuiProfApp(path, use_cache=False)

    async def main() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            pane = app.main.query_one(RanksPane)
            await _until(pilot, lambda: pane.table.row_count == 4)
            threading.Thread(target=release, daemon=True).start()
            await pilot.pause(0.01)

    try:
        asyncio.run(main())
    finally:
        stop.set()


def test_the_units_parse_once_the_rank_screen_is_painted(run_dir, monkeypatch):
    """The scan's pending rows are painted before the first unit parses (the parse takes the
    cores and the GIL's turns that the paint needs); the load waits for the paint, not for
    the time limit, which is raised here so that only the paint can release it. The short
    GIL switch interval of the scan is back to the process's own once the units parse."""
    path, ranks = run_dir
    monkeypatch.setattr(schedule, "SCAN_SCREEN_WAIT_S", 60.0)
    events: list[threading.Event] = []

    class Threading:
        """The schedule module's ``threading``, recording the events it makes (the paint handshake's)."""

        def __getattr__(self, name):
            return getattr(threading, name)

        @staticmethod
        def Event() -> threading.Event:  # threading's name
            events.append(threading.Event())
            return events[-1]

    monkeypatch.setattr(schedule, "threading", Threading())
    at_parse: list[tuple[bool, float]] = []
    original = rocprofv3_csv.load

    default = sys.getswitchinterval()
    switches: list[float] = []

    def recorded_load(files, issues):
        at_parse.append((len(events) == 1 and events[0].is_set(), time.monotonic()))
        switches.append(sys.getswitchinterval())
        return original(files, issues)

    monkeypatch.setattr(rocprofv3_csv, "load", recorded_load)

    async def main() -> None:
        app = TuiProfApp(path, use_cache=False)
        started = time.monotonic()
        async with app.run_test(size=(160, 50)) as pilot:
            await settle(app, pilot)
            pane = app.main.query_one(RanksPane)
            assert len(_loaded(pane)) == 4
            assert at_parse and at_parse[0][1] - started < 30  # released by the paint, not the limit
        assert len(events) == 1  # one wait, for the scan's rows
        assert all(set_ for set_, _ in at_parse)  # every unit parsed after the paint
        assert switches == [default] * 4 and sys.getswitchinterval() == default

    asyncio.run(main())
