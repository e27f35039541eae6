"""``tuiprof open RUN``: the Textual app.

The app shows its screen at once and loads the run in a thread worker
(``load_path`` with the columnar cache, then :func:`tui_prof.tui.view.runview.build_view`
with ``lazy=True``), posting coalesced progress messages. A run of several processes
shows the rank table first: as soon as the scan has found the processes, a pending row
per rank, each filled as its work unit loads
(:class:`tui_prof.tui.view.rankrows.RankRows`, in the load worker), the waits and
straggler once every process is in. The first screen (title,
hotspots) appears as soon as the kernels table exists; the measurement table and the
other panes (timeline, findings, counters, hardware capabilities, issues) are computed
by :meth:`RunView.ensure` in thread workers — in the background after the first screen,
or at once when their tab is shown — and show "computing…" until then. Results come
back as messages, so the event loop never runs an analysis.

Per-file load errors go to the Issues tab; a run that cannot be loaded at all shows the
reason in place of the panes — never a traceback.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from textual import work
from textual.app import SystemCommand
from textual.message import Message
from textual.screen import Screen

from tui_prof.analysis.api import run_label
from tui_prof.loaders.base import LoadCancelled
from tui_prof.loaders.cache import PendingWrites
from tui_prof.model import Run, RunSet
from tui_prof.threads import use_daemon_threads
from tui_prof.tui.base import ProfApp
from tui_prof.tui.keys import binding_rows
from tui_prof.tui.messages import LoadFailed
from tui_prof.tui.panes.counters import CountersPane
from tui_prof.tui.panes.findings import FindingsTable
from tui_prof.tui.panes.hotspots import HotspotsPane
from tui_prof.tui.screens.back import BackScreen
from tui_prof.tui.screens.main import MainScreen
from tui_prof.tui.view.rankrows import RankRows, opens_on_ranks
from tui_prof.tui.view.runview import (
    GROUPS,
    PARTS,
    RunView,
    build_view,
    load_failure,
    load_runset,
)
from tui_prof.tui.widgets.scroll import KeyScroll
from tui_prof.tui.widgets.table import TableView
from tui_prof.tui.widgets.timeline import Timeline

if TYPE_CHECKING:  # detect imports every loader: the load imports it, not the app's start
    from tui_prof.loaders.detect import ProcessScan

RANK_ROWS_INTERVAL_S = 0.2  # the rank table is refilled at most this often while processes load
SCAN_SCREEN_WAIT_S = 0.5  # the load waits at most this long for the rank screen's first paint
SCAN_SWITCH_INTERVAL_S = 0.0005  # the GIL's switch interval while the run directory is scanned


class LoadProgress(Message):
    def __init__(self, stage: str, done: int, total: int) -> None:
        super().__init__()
        self.stage, self.done, self.total = stage, done, total

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LoadProgress)


class RanksLoading(Message):
    """The rank table of the processes loaded so far (``final``: of every process, with the
    waits and the straggler); each carries every row, so a newer one replaces an older."""

    def __init__(self, doc: dict, labels: list[str], done: int, total: int, final: bool = False, painted: threading.Event | None = None) -> None:
        super().__init__()
        self.doc, self.labels, self.done, self.total, self.final = doc, labels, done, total, final
        self.painted = painted  # set once the rows are on screen (the scan's pending rows)

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RanksLoading)


class Loaded(Message):
    """The run is loaded and its view built; ``pending``: the cache entries of the units
    parsed by this open, written after the first screen."""

    def __init__(self, view: RunView, pending: PendingWrites | None = None) -> None:
        super().__init__()
        self.view, self.pending = view, pending


class CacheWritten(Message):
    """The cache entries of this open are written (``count`` of them)."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count


class PartReady(Message):
    """A lazy part of the view (``RunView.ensure(part)``) is computed (or failed: ``error``)."""

    def __init__(self, part: str, error: str = "") -> None:
        super().__init__()
        self.part, self.error = part, error


class TuiProfApp(ProfApp):
    """tuiprof: explore a profiler run from the terminal."""

    CSS_PATH = "tuiprof.tcss"
    TITLE = "tuiprof"

    def __init__(self, source: str | Path | RunSet, *, use_cache: bool = True, background: bool = True, **kwargs) -> None:
        """``use_cache``: read/write the columnar cache (``tuiprof open --no-cache``: False);
        ``background``: compute the lazy panes after the first screen (False: only when
        their tab is shown)."""
        super().__init__(**kwargs)
        self.source = source
        self.use_cache = use_cache
        self.background = background
        self.source_name = source.name if isinstance(source, RunSet) else Path(source).name
        self.view: RunView | None = None
        self.load_error = ""  # why nothing could be loaded (tuiprof open then exits 1)
        self._asked: set[str] = set()
        self.cache_written: int | None = None  # entries written after the first screen (None: not yet, or none to write)
        self.main = MainScreen()
        self.main.source_name = self.source_name

    def on_mount(self) -> None:
        use_daemon_threads()  # quitting never waits for a load or an analysis
        self.push_screen(self.main)
        self.load()

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def load(self) -> None:
        def progress(stage: str, done: int, total: int) -> None:
            self.post_message(LoadProgress(stage, done, total))

        rows = RankRows()
        posted = [0.0]

        def on_scan(scan: ProcessScan) -> None:
            sys.setswitchinterval(switch)
            # several processes found: the rank screen now, a pending row per rank
            rows.expect(scan)
            if rows.multi:
                # the parse of the units takes both cores and the GIL's turns: it starts once the
                # rank screen is painted (at most SCAN_SCREEN_WAIT_S later), not beside its paint
                painted = threading.Event()
                self.post_message(RanksLoading(rows.provisional(), [], 0, rows.expected, painted=painted))
                painted.wait(SCAN_SCREEN_WAIT_S)

        def on_unit(runs: list[Run], done: int, total: int) -> None:
            rows.add(runs, done, total)
            now = time.monotonic()
            # batched: each refill repaints the table and lays the header out on the loop
            if now - posted[0] >= RANK_ROWS_INTERVAL_S and (rows.multi or opens_on_ranks([c.run for c in rows.cores])):
                posted[0] = now
                self.post_message(RanksLoading(rows.provisional(), [], done, rows.expected))

        # the cache entries of a first open are written after the first screen (write_cache)
        pending = PendingWrites() if self.use_cache else None
        # The scan reads the head of every file while the loop lays the app out: at the default
        # 5 ms switch interval each file read waits for the loop's turn to end (64 ranks: the
        # scan's 0.14 CPU-s took 1 s); a short interval until the scan is done
        switch = sys.getswitchinterval()
        sys.setswitchinterval(min(switch, SCAN_SWITCH_INTERVAL_S))
        try:
            runset = load_runset(self.source, self.source_name, use_cache=self.use_cache, progress=progress, on_unit=on_unit, pending=pending, on_scan=on_scan)
            if opens_on_ranks(runset.runs):
                if not rows.processes:  # an in-memory run set: its processes one by one
                    for i, run in enumerate(runset.runs, 1):
                        on_unit([run], i, len(runset.runs))
                labels = [run_label(run) for run in runset.runs]
                self.post_message(RanksLoading(rows.final(runset), labels, rows.total, rows.total, final=True))
            self.post_message(Loaded(build_view(runset, progress, lazy=True), pending))
        except LoadCancelled:  # the app is quitting
            return
        except Exception as err:  # shown in the app, never as a traceback
            self.post_message(LoadFailed(load_failure(err, self.source_name)))
        finally:
            sys.setswitchinterval(switch)

    @property
    def showing(self) -> bool:
        """The main screen is up: False once the app quits or shuts down (its widgets are
        being removed while the load and analysis threads still post what they found)."""
        return self.is_running and self.main.is_attached

    def on_load_progress(self, message: LoadProgress) -> None:
        if not self.showing:
            return
        self.main.show_progress(message.stage, message.done, message.total)

    def on_ranks_loading(self, message: RanksLoading) -> None:
        if not self.showing:
            if message.painted is not None:
                message.painted.set()
            return
        self.main.show_ranks_loading(message.doc, message.labels, message.done, message.total, message.final)
        if message.painted is not None:
            self.main.call_after_refresh(message.painted.set)

    def on_loaded(self, message: Loaded) -> None:
        if not self.showing:
            return
        self.view = message.view
        self.main.show_view(message.view)
        if message.pending is not None and len(message.pending):
            self.main.call_after_refresh(self.write_cache, message.pending)
        if self.background:
            self.main.call_after_refresh(self.compute_rest, message.view)

    @work(thread=True, group="cache", exit_on_error=False)
    def write_cache(self, pending: PendingWrites) -> None:
        """Write this open's cache entries (after the first screen). Quitting stops the
        write between two tables (``cancel_loads``) and removes the entry being written; the
        thread is a daemon, so the process never waits for it."""
        try:
            count = pending.write()
        except LoadCancelled:  # the app is quitting
            return
        self.post_message(CacheWritten(count))

    def on_cache_written(self, message: CacheWritten) -> None:
        self.cache_written = message.count

    def _ensure(self, view: RunView, part: str) -> None:
        """Compute ``part`` in this (worker) thread and post the result's arrival."""
        try:
            view.ensure(part)
            self.post_message(PartReady(part))
        except Exception as err:  # shown in its pane, never as a traceback
            self.post_message(PartReady(part, f"{type(err).__name__}: {err}"))

    @work(thread=True, group="compute", exit_on_error=False)
    def compute_rest(self, view: RunView) -> None:
        """Every lazy part, in PARTS order, after the first screen is up."""
        for part in PARTS:
            self._ensure(view, part)

    def compute_part(self, part: str) -> None:
        """Compute ``part`` now (a tab showing it was opened); no-op when running or done."""
        view = self.view
        if view is None or view.ready(part) or part in self._asked:
            return
        self._asked.add(part)
        self._compute_one(view, part)

    @work(thread=True, group="compute-one", exit_on_error=False)
    def _compute_one(self, view: RunView, part: str) -> None:
        self._ensure(view, part)

    def on_part_ready(self, message: PartReady) -> None:
        if not self.showing:
            return
        self.main.fill_part(message.part, message.error)

    def on_load_failed(self, message: LoadFailed) -> None:
        self.load_error = message.text
        if not self.showing:
            return
        self.main.show_failure(message.text)

    @classmethod
    def key_rows(cls) -> list[tuple[str, str, str]]:
        """(where, keys, action) of every binding of the app, its screens and widgets."""
        return binding_rows(
            (
                ("everywhere", cls),
                ("main screen", MainScreen),
                ("main screen", HotspotsPane),
                ("tables", TableView),
                ("hardware, issues, help", KeyScroll),
                ("timeline", Timeline),
                ("findings", FindingsTable),
                ("counters", CountersPane),
                ("drill-down", BackScreen),
            )
        )

    def get_system_commands(self, screen: Screen):
        yield from super().get_system_commands(screen)
        main = self.main

        def on_tab(tab: str, then=None):
            def run() -> None:
                main.action_tab(tab)
                if then is not None:
                    then()

            return run

        def timeline_action(name: str, *args):
            return on_tab("timeline", lambda: getattr(main.timeline.timeline, f"action_{name}")(*args))

        def evidence() -> None:
            if main.view is not None:
                main.findings.request_evidence()

        yield SystemCommand("Hotspots", "Show the hotspot table (1)", on_tab("hotspots"))
        yield SystemCommand("Timeline", "Show the timeline (2)", on_tab("timeline"))
        yield SystemCommand("Hardware", "Show the agents (3)", on_tab("hardware"))
        yield SystemCommand("Findings", "Show the findings (4)", on_tab("findings"))
        yield SystemCommand("Counters", "Show counters of the selected kernel (5)", on_tab("counters"))
        yield SystemCommand("Load issues", "Files that could not be loaded (6)", on_tab("issues"))
        yield SystemCommand("Filter hotspots", "Regex filter on names (/)", on_tab("hotspots", lambda: main.hotspots.action_filter()))
        yield SystemCommand(
            "Group hotspots by next key",
            "name / normalised name / category / operator / module / agent / process (b)",
            on_tab("hotspots", lambda: main.hotspots.action_group()),
        )
        for group in main.view.groups if main.view is not None else GROUPS:
            yield SystemCommand(
                f"Group hotspots by {group}", "analysis.hotspots grouping (b cycles)", on_tab("hotspots", lambda g=group: main.hotspots.group_by(g))
            )
        yield SystemCommand("Evidence of the selected finding", "Findings pane: gap, kernel or host row (Enter)", evidence)
        yield SystemCommand(
            "Counter formulas",
            "Formula, source and threshold of each metric (x on the counters pane)",
            on_tab("counters", lambda: main.counters.action_explain()),
        )
        yield SystemCommand("Selected kernel on timeline", "Centre the timeline on its next dispatch (t)", main.goto_kernel)
        yield SystemCommand("Zoom in", "Timeline zoom in (w + =)", timeline_action("zoom", 0.5))
        yield SystemCommand("Zoom out", "Timeline zoom out (s -)", timeline_action("zoom", 2.0))
        yield SystemCommand("Fit", "Whole run on the timeline (f 0)", timeline_action("fit"))
        yield SystemCommand("Next gap", "Jump to the next idle gap (n ])", timeline_action("gap", 1))
        yield SystemCommand("Previous gap", "Jump to the previous idle gap (N [)", timeline_action("gap", -1))
        yield SystemCommand(
            "Export to Perfetto", "The run, or the timeline window from the timeline tab, as a trace for ui.perfetto.dev (e)", main.action_export
        )
        yield SystemCommand(
            "Export the whole run to Perfetto", "Chrome trace-event JSON with tuiprof's gaps and findings", lambda: main.action_export("perfetto", True)
        )
        yield SystemCommand("Export to Parquet", "Every model and analysis table as Parquet files (pandas, DuckDB)", lambda: main.action_export("parquet"))
        yield SystemCommand("Keys", "Every key binding (?)", self.action_help)


def key_rows() -> list[tuple[str, str, str]]:
    """The key table of ``tuiprof open`` (help screen, docs/user_guide.md)."""
    return TuiProfApp.key_rows()
