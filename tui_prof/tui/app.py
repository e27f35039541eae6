"""``tuiprof open RUN``: the Textual app — it loads the run and hands it to its screen.

The app shows its screen (:class:`tui_prof.tui.screens.main.MainScreen`) at once and loads
the run in a thread worker (``load_path`` with the columnar cache, then
:func:`tui_prof.tui.view.runview.build_view` with ``lazy=True``), posting coalesced
progress messages. A run of several processes shows the rank table first: as soon as the
scan has found the processes, a pending row per rank, each filled as its work unit loads
(:class:`tui_prof.tui.view.rankrows.RankRows`, in the load worker), the waits and
straggler once every process is in. Once the view is built the screen owns the run: its
first screen, the lazy pieces, the panes (see the screen's module). When the load is
scheduled how (switch interval, waiting for a paint) is tui_prof.tui.schedule's.

Per-file load errors go to the Issues tab; a run that cannot be loaded at all shows the
reason in place of the panes — never a traceback.
"""

from __future__ import annotations

import dataclasses
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.screen import ModalScreen, Screen

from tui_prof.analysis.api import run_label
from tui_prof.loaders.base import LoadCancelled
from tui_prof.loaders.cache import PendingWrites
from tui_prof.model import Run, RunSet
from tui_prof.render.safe import safe_text
from tui_prof.threads import use_daemon_threads
from tui_prof.tui import schedule
from tui_prof.tui.base import ProfApp
from tui_prof.tui.keys import app_sources, binding_rows, declared_in, pretty_keys
from tui_prof.tui.messages import LoadFailed, RecordingRequested
from tui_prof.tui.pane import Pane
from tui_prof.tui.registry import PANES
from tui_prof.tui.screens.back import BackScreen
from tui_prof.tui.screens.fullname import FullNameScreen
from tui_prof.tui.screens.help import HelpScreen
from tui_prof.tui.screens.main import MainScreen, RankScreen
from tui_prof.tui.screens.recordings import RecordingsScreen
from tui_prof.tui.view.rankrows import RankRows, opens_on_ranks
from tui_prof.tui.view.recordings import RECORDINGS_KEY, RecordingError, RecordingRow, recording_to_show
from tui_prof.tui.view.runview import GROUPS, RunView, build_view, load_failure, load_runset
from tui_prof.tui.widgets.scroll import KeyScroll
from tui_prof.tui.widgets.table import TableView
from tui_prof.tui.workers import deliver, thread_worker

if TYPE_CHECKING:  # detect imports every loader: the load imports it, not the app's start
    from tui_prof.loaders.detect import ProcessScan

RANK_ROWS_INTERVAL_S = 0.2  # the rank table is refilled at most this often while processes load


class LoadProgress(Message):
    def __init__(self, stage: str, done: int, total: int) -> None:
        super().__init__()
        self.stage, self.done, self.total = stage, done, total

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LoadProgress)


class RanksLoading(Message):
    """The rank table of the processes loaded so far (``final``: of every process, with the
    waits and the straggler); each carries every row, so a newer one replaces an older."""

    def __init__(self, doc: dict, labels: list[str], done: int, total: int, final: bool = False, painted: schedule.PaintHandshake | None = None) -> None:
        super().__init__()
        self.doc, self.labels, self.done, self.total, self.final = doc, labels, done, total, final
        self.painted = painted  # released once the rows are on screen (the scan's pending rows)

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


class TuiProfApp(ProfApp):
    """tuiprof: explore a profiler run from the terminal."""

    CSS_PATH = "tuiprof.tcss"
    TITLE = "tuiprof"
    # R from every screen of the run (the main screen, a rank's, a drill-down), not over a
    # modal window (help, full name, the picker itself)
    BINDINGS = [Binding(RECORDINGS_KEY, "recordings", "Pick another recording of the folder", show=False, id="app.recordings")]

    def __init__(self, source: str | Path | RunSet, *, use_cache: bool = True, background: bool = True, recording: int | None = None, **kwargs) -> None:
        """``use_cache``: read/write the columnar cache (``tuiprof open --no-cache``: False);
        ``background``: compute the lazy panes after the first screen (False: only when
        their tab is shown); ``recording``: which of the run's separate recordings to show
        (``tuiprof open --recording N``; None: the one with most dispatches, said in a note)."""
        super().__init__(**kwargs)
        self.source = source
        self.use_cache = use_cache
        self.recording = recording
        self.source_name = source.name if isinstance(source, RunSet) else Path(source).name
        self.view: RunView | None = None
        self.load_error = ""  # why nothing could be loaded (tuiprof open then exits 1)
        self.cache_written: int | None = None  # entries written after the first screen (None: not yet, or none to write)
        self.background = background
        self.whole: RunSet | None = None  # the whole loaded run when it holds several recordings (key R reopens on another)
        self.recordings: list[RecordingRow] = []  # its recordings, the one shown starred (key R lists them)
        self.shown_recording: int | None = None  # the number of the recording shown (1-based)
        # each recording's view and final rank rows once shown: going back to one reuses its analysis
        self.recording_views: dict[int, RunView] = {}
        self.recording_ranks: dict[int, RanksLoading] = {}
        self.main = MainScreen(background=background)
        self.main.source_name = self.source_name

    def on_mount(self) -> None:
        use_daemon_threads()  # quitting never waits for a load or an analysis
        self.push_screen(self.main)
        self.load()

    @thread_worker("loading the run", group="load", exclusive=True)
    def load(self) -> None:
        """Load the run, posting progress, the rank rows of a run of several processes and
        at last the view (:class:`Loaded`); a run that cannot be loaded: :class:`LoadFailed`."""
        # the cache entries of a first open are written after the first screen (write_cache)
        pending = PendingWrites() if self.use_cache else None
        rows = RankRows()

        def progress(stage: str, done: int, total: int) -> None:
            self.post_message(LoadProgress(stage, done, total))

        try:
            with schedule.while_loading() as loading:
                runset = load_runset(
                    self.source,
                    self.source_name,
                    use_cache=self.use_cache,
                    progress=progress,
                    on_unit=self._rank_rows_poster(rows),
                    pending=pending,
                    on_scan=lambda scan: self._on_scan(scan, rows, loading),
                )
            runset = self._one_recording(runset)
            ranks_first = opens_on_ranks(runset.runs)
            if ranks_first:
                self._post_final_rows(rows, runset)
            self.post_message(Loaded(build_view(runset, progress, lazy=True), pending))
        except LoadCancelled:  # the app is quitting
            return
        except RecordingError as err:  # a bad --recording N: said as it is (tuiprof open exits 2)
            self.post_message(LoadFailed(str(err)))
            return
        except Exception as err:  # shown in the app, never as a traceback
            self.post_message(LoadFailed(load_failure(err, self.source_name)))
            return
        if not ranks_first and len(runset.runs) > 1:  # the ranks tab of a run that opens on its hotspots
            try:
                self._post_final_rows(rows, runset)
            except Exception as err:  # said in the ranks pane, never as a traceback
                deliver(self.main, self.main.rank_rows_failed, err)

    def _one_recording(self, runset: RunSet) -> RunSet:
        """The recording to show when the run holds several (tui_prof.tui.view.recordings);
        a note says which and how to pick another. A bad ``--recording`` fails the load."""
        shown, note, index, rows = recording_to_show(runset, self.recording)
        if note:
            self.whole, self.shown_recording = runset, index
            deliver(self.main, lambda: setattr(self, "recordings", rows))
            if not self.recording_views:  # said once, at the first open
                deliver(self.main, self._note, note)
        return shown

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """R where the run holds several recordings, on a screen of the run (not over a modal window)."""
        if action == "recordings":
            return len(self.recordings) > 1 and not isinstance(self.screen, ModalScreen)
        return super().check_action(action, parameters)

    def action_recordings(self) -> None:
        """The folder's recordings; the one picked is shown (:meth:`on_recording_requested`)."""

        def picked(index: int | None) -> None:
            if index is not None and index != self.shown_recording:
                self.post_message(RecordingRequested(index))

        self.push_screen(RecordingsScreen(self.recordings), picked)

    async def on_recording_requested(self, message: RecordingRequested) -> None:
        """Show recording ``message.index`` of the whole run (what ``tuiprof open --recording
        N`` shows) on a fresh main screen, the screens above the main one closed: its view
        and rank rows as they were when it was shown before (its analysis reused), else the
        load worker on the run kept in memory (nothing read again)."""
        if self.whole is None:
            return
        while len(self.screen_stack) > 2 and self.screen is not self.main:
            await self.pop_screen()
        self.recording = message.index
        self.source, self.view = self.whole, None
        main = MainScreen(background=self.background)
        main.source_name = self.source_name
        self.main = main
        await self.switch_screen(main)
        kept = self.recording_views.get(message.index)
        if kept is None:
            self.load()
            return
        self.shown_recording = message.index
        self.recordings = [dataclasses.replace(row, shown=row.index == message.index) for row in self.recordings]
        self.view = kept
        main.show_view(kept)
        ranks = self.recording_ranks.get(message.index)
        if ranks is not None:
            self.on_ranks_loading(ranks)

    def _note(self, text: str) -> None:
        self.notify(safe_text(text), severity="warning", timeout=20, markup=False)

    def _on_scan(self, scan: ProcessScan, rows: RankRows, loading: schedule.Loading) -> None:
        """The scan found the processes: several of them, the rank screen now with a pending
        row per rank; the units parse once it is painted (they would take the cores and the
        GIL's turns that its paint needs)."""
        loading.scan_done()
        rows.expect(scan)
        if rows.multi:
            painted = schedule.PaintHandshake()
            self.post_message(RanksLoading(rows.provisional(), [], 0, rows.expected, painted=painted))
            painted.wait()

    def _rank_rows_poster(self, rows: RankRows):
        """``on_unit`` of the load: add the unit's processes to ``rows`` and post the rank
        table at most every RANK_ROWS_INTERVAL_S (each refill repaints the table)."""
        posted = [0.0]

        def on_unit(runs: list[Run], done: int, total: int) -> None:
            rows.add(runs, done, total)
            now = time.monotonic()
            if now - posted[0] >= RANK_ROWS_INTERVAL_S and (rows.multi or opens_on_ranks([c.run for c in rows.cores])):
                posted[0] = now
                self.post_message(RanksLoading(rows.provisional(), [], done, rows.expected))

        return on_unit

    def _post_final_rows(self, rows: RankRows, runset: RunSet) -> None:
        """The rank table of every process, with the waits and the straggler: the ranks
        pane's rows (the summary computes the same sections for the other outputs)."""
        if not rows.processes:  # an in-memory run set: its processes one by one
            for i, run in enumerate(runset.runs, 1):
                rows.add([run], i, len(runset.runs))
        labels = [run_label(run) for run in runset.runs]
        self.post_message(RanksLoading(rows.final(runset), labels, rows.total, rows.total, final=True))

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
        if message.final and self.whole is not None and self.shown_recording is not None:
            self.recording_ranks[self.shown_recording] = message
        showing = self.showing
        if showing:
            self.main.show_ranks_loading(message.doc, message.labels, message.done, message.total, message.final)
        if message.painted is not None:
            message.painted.painted(self.main if showing else None)

    def on_loaded(self, message: Loaded) -> None:
        if not self.showing:
            return
        self.view = message.view
        if self.whole is not None and self.shown_recording is not None:
            self.recording_views[self.shown_recording] = message.view
        self.main.show_view(message.view)
        if message.pending is not None and len(message.pending):
            schedule.after_first_paint(self.main, self.write_cache, message.pending)

    @thread_worker("writing the cache", group="cache")
    def write_cache(self, pending: PendingWrites) -> None:
        """Write this open's cache entries (after the first screen). Quitting stops the
        write between two tables (``cancel_loads``) and removes the entry being written; the
        thread is a daemon, so the process never waits for it."""
        self.post_message(CacheWritten(pending.write()))

    def on_cache_written(self, message: CacheWritten) -> None:
        self.cache_written = message.count

    def on_load_failed(self, message: LoadFailed) -> None:
        self.load_error = message.text
        if not self.showing:
            return
        self.main.show_failure(message.text)

    @classmethod
    def key_rows(cls) -> list[tuple[str, str, str]]:
        """(where, keys, action) of every binding of the app, its screens and widgets, from
        their BINDINGS: the app's, every screen's (tui.screens), every pane's and the widgets
        its module defines (under the pane's title, in tab order), the shared widgets'."""
        screens = sorted(declared_in("tui_prof.tui.screens"), key=lambda c: not issubclass(c, MainScreen))  # the run screen first
        sources = app_sources(cls) + [(HELP_WHERE.get(c, c.__name__), c) for c in screens]
        for pane in PANES:
            sources += [(pane.TITLE.lower(), c) for c in [pane, *declared_in(pane.__module__)]]
        sources += [(HELP_WHERE.get(c, c.__module__.rsplit(".", 1)[-1]), c) for c in declared_in("tui_prof.tui.widgets")]
        return binding_rows(sources)

    def get_system_commands(self, screen: Screen):
        """The command palette: every tab, every key of a pane (its own bindings and those of
        the widget it focuses, derived from their BINDINGS and run by name through the
        screen), the groupings, the exports, the key list."""
        yield from super().get_system_commands(screen)
        main = self.main
        for cls in PANES:
            yield SystemCommand(cls.TITLE, f"Show the {cls.TITLE} tab ({cls.KEY})", partial(main.action_tab, cls.TAB))
        for cls in PANES:
            for binding, widget in pane_bindings(main, cls):
                yield SystemCommand(
                    f"{cls.TITLE}: {binding.description}",
                    f"{pretty_keys(binding.key)} on tab {cls.KEY}",
                    partial(main.run_pane_action, cls.TAB, binding.action, widget),
                )
        for group in main.view.groups if main.view is not None else GROUPS:
            yield SystemCommand(
                f"Group hotspots by {group}", "analysis.hotspots grouping (b cycles)", partial(main.run_pane_action, "hotspots", f"group_by({group!r})")
            )
        yield SystemCommand(
            "Export to Perfetto", "The run, or the timeline window from the timeline tab, as a trace for ui.perfetto.dev (e)", main.action_export
        )
        yield SystemCommand(
            "Export the whole run to Perfetto", "Chrome trace-event JSON with tuiprof's gaps and findings", partial(main.action_export, "perfetto", True)
        )
        yield SystemCommand("Export to Parquet", "Every model and analysis table as Parquet files (pandas, DuckDB)", partial(main.action_export, "parquet"))
        if len(self.recordings) > 1:
            yield SystemCommand("Recordings", f"Pick another of the folder's {len(self.recordings)} recordings (R)", self.action_recordings)
        yield SystemCommand("Keys", "Every key binding (?)", self.action_help)


SHARED_WIDGETS = (TableView, KeyScroll)  # their keys are every table's and scroll's: not one pane's
# the help's "where" of classes not named by a pane (default: a screen's class name, a
# widget's module name)
HELP_WHERE: dict[type, str] = {
    MainScreen: "main screen",
    RankScreen: "rank screen",
    BackScreen: "drill-down",
    HelpScreen: "help",
    FullNameScreen: "full name",
    RecordingsScreen: "recordings",
    TableView: "tables",
    KeyScroll: "hardware, issues, help",
}


def pane_bindings(main: MainScreen, cls: type[Pane]) -> list[tuple[Binding, str]]:
    """(binding, selector of the widget that runs it, "" for the pane) of every key the pane
    ``cls`` declares, then of the widget its tab focuses when that widget is the pane's own kind."""
    out: list[tuple[Binding, str]] = [(b, "") for b in cls.BINDINGS if isinstance(b, Binding) and b.show]
    focus = type(main.query_one(cls.FOCUS)) if main.is_mounted else None
    if focus is not None and focus not in SHARED_WIDGETS and not issubclass(cls, focus):
        out += [(b, cls.FOCUS) for b in focus.__dict__.get("BINDINGS", ()) if isinstance(b, Binding) and b.show]
    return out


def key_rows() -> list[tuple[str, str, str]]:
    """The key table of ``tuiprof open`` (help screen, docs/user_guide.md)."""
    return TuiProfApp.key_rows()
