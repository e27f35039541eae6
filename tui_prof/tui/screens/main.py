"""The run screen: title, load progress, and the panes as tabs; it owns the run's lifecycle.

Load → first screen → pieces → panes (docs/architecture.md draws it):

1. the app loads the run and hands the screen its view (:meth:`MainScreen.show_view`; a
   rank's screen builds its own view of one process, in a worker) — or, for a run of
   several processes, the rank rows while the processes load (:meth:`show_ranks_loading`);
2. the first screen: every pane's :meth:`~tui_prof.tui.pane.Pane.set_view` (what needs no
   analysis), the tabs each pane says are available;
3. once that screen is painted, the lazy pieces of the view (``RunView.PIECES``) are computed
   by the one piece worker: the shown tab's piece first, then, in the background, each piece
   in order; a tab shown later asks for its own piece at once (:meth:`need`);
4. each piece goes to the panes that declare it (``Pane.PIECE``): ``prepare`` in the worker,
   ``show`` on the event loop, one pane per turn of the loop; a failed piece is a one-line
   message in each of its panes (tui_prof.tui.workers.report_failure), never "computing…" forever.

The readiness of every piece is one table (:attr:`MainScreen.pieces`), written on the event
loop only. The panes' requests come up as messages (tui_prof.tui.messages) and the screen
sends them on to the pane or screen that answers them. It holds no analysis of its own.
"""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Label, ProgressBar, Static, TabbedContent, TabPane

from tui_prof.analysis.api import StepsSection
from tui_prof.export.common import ExportError, default_destination
from tui_prof.export.parquet import export_parquet
from tui_prof.export.perfetto import export_perfetto
from tui_prof.model import RunSet
from tui_prof.render.safe import safe_text
from tui_prof.tui import schedule
from tui_prof.tui.messages import (
    DispatchesRequested,
    EvidenceRequested,
    KernelSelected,
    RankOpened,
    ShowTab,
    StepRequested,
    StepsChanged,
    TimelineRequested,
    WhatIfRequested,
    WindowRequested,
)
from tui_prof.tui.pane import Pane
from tui_prof.tui.panes.counters import CountersPane
from tui_prof.tui.panes.findings import FindingsPane
from tui_prof.tui.panes.hotspots import HotspotsPane
from tui_prof.tui.panes.integrity import IntegrityPane
from tui_prof.tui.panes.ranks import RanksPane
from tui_prof.tui.panes.timeline import TimelinePane
from tui_prof.tui.registry import PANES
from tui_prof.tui.safe import plain
from tui_prof.tui.screens.drilldown import DispatchesScreen
from tui_prof.tui.screens.gap import GapScreen
from tui_prof.tui.screens.whatif import WhatIfScreen
from tui_prof.tui.view.findings import copy_window, finding_evidence, host_window
from tui_prof.tui.view.integrity import trust_note
from tui_prof.tui.view.rankrows import opens_on_ranks
from tui_prof.tui.view.runview import PIECES, RunView, build_view
from tui_prof.tui.view.stats import title_count
from tui_prof.tui.view.whatif import gap_target
from tui_prof.tui.widgets.footer import KeyFooter
from tui_prof.tui.widgets.timeline import Timeline
from tui_prof.tui.workers import COMPUTING, deliver, report_failure, thread_worker

PANE_KEYS = Binding.Group("Panes", compact=True)
PANE_OF_TAB: dict[str, type[Pane]] = {cls.TAB: cls for cls in PANES}

# the states of a lazy piece in the readiness table (MainScreen.pieces)
WAITING, COMPUTING_PIECE, SHOWN, FAILED = "waiting", "computing", "shown", "failed"


class MainScreen(Screen):
    """The tabs of :data:`tui_prof.tui.registry.PANES` over one run set. The app's screen
    is handed its view (``show_view``); given ``runset``, the screen builds the view itself
    (a rank's screen). ``background``: compute every piece after the first screen (False:
    only when a tab showing it is shown); ``freeze``: the collector's freezes
    (tui_prof.tui.schedule.HeapFreeze: the app's own screen only)."""

    BINDINGS = [
        *(Binding(cls.KEY, f"tab('{cls.TAB}')", cls.TITLE, id=f"tab.{cls.TAB}", group=PANE_KEYS) for cls in PANES),
        Binding("e", "export('perfetto')", "Export to Perfetto", show=False, id="main.export"),
    ]

    def __init__(self, runset: RunSet | None = None, *, background: bool = True, freeze: bool = True) -> None:
        super().__init__()
        self.view: RunView | None = None
        self.source_name = runset.name if runset is not None else ""
        self.runset = runset  # the run set this screen builds its view of (None: handed by the app)
        self.background = background
        self.heap = schedule.HeapFreeze(freeze)
        self.pieces: dict[str, str] = dict.fromkeys(PIECES, WAITING)  # the readiness table
        self.steps: StepsSection | None = None  # the steps shown by the steps pane (the timeline's ticks)

    def compose(self) -> ComposeResult:
        yield Static("tuiprof", id="title", classes="title")
        with Vertical(id="loading"):
            yield Label("Loading…", id="load-status")
            yield ProgressBar(id="load-progress", show_eta=False)
        with TabbedContent(id="tabs", initial=PANES[0].TAB):
            for cls in PANES:
                with TabPane(f"{cls.KEY} {cls.TITLE}", id=cls.TAB):
                    yield cls(id=f"{cls.TAB}-pane")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#tabs").display = False
        self.heap.screen_mounted()
        if self.runset is not None:
            self._build(self.runset)

    def on_unmount(self) -> None:
        self.heap.screen_removed()

    @thread_worker("the run view", group="build-view")
    def _build(self, runset: RunSet) -> None:
        deliver(self, self.show_view, build_view(runset, lazy=True))

    def show_error(self, text: Text) -> None:
        """A failure of the screen's own workers (the view, an export): in the load status
        line while nothing is shown, else a notification."""
        if self.view is None:
            self.show_failure(text.plain)
        else:
            self.notify(safe_text(text.plain), severity="error", timeout=10, markup=False)

    # the panes, for the app's command palette and for tests
    def pane(self, tab: str) -> Pane:
        return self.query_one(f"#{tab}-pane", Pane)

    @property
    def panes(self) -> list[Pane]:
        return [self.pane(cls.TAB) for cls in PANES]

    @property
    def hotspots(self) -> HotspotsPane:
        return self.query_one(HotspotsPane)

    @property
    def timeline(self) -> TimelinePane:
        return self.query_one(TimelinePane)

    @property
    def findings(self) -> FindingsPane:
        return self.query_one(FindingsPane)

    @property
    def counters(self) -> CountersPane:
        return self.query_one(CountersPane)

    def full_names(self) -> list[tuple[str, str]]:
        """Names the focused pane cuts (key ``F``, screens.fullname; the focused table's row
        is added there): the kernel a finding is about; on the timeline the cursor's lane
        and the hotspot row that ``c`` jumps to."""
        focused = self.focused
        if focused is not None and focused is self.findings.table:
            finding = self.findings.current_finding()
            name = (finding.get("numbers") or {}).get("name") if finding is not None else None
            return [("kernel", str(name))] if name else []
        if isinstance(focused, Timeline) and focused.model is not None and focused.model.lanes:
            group, value = self.timeline.selection
            return [("lane", focused.model.lanes[focused.lane_cursor].label)] + ([(group, value)] if value is not None else [])
        return []

    # -- loading --------------------------------------------------------------------
    def show_progress(self, stage: str, done: int, total: int) -> None:
        self.query_one("#load-status", Label).update(plain(f"Loading {self.source_name}: {stage} {done}/{total}"))
        self.query_one("#load-progress", ProgressBar).update(total=max(total, 1), progress=done)

    early_ranks = False  # the ranks tab was shown alone while the processes loaded
    ranks_chosen = False  # a key was pressed while it stood alone: the user stays on it
    held_focus: Widget | None = None  # a widget kept from the focus while the ranks tab stays

    def release_focus(self) -> None:
        if self.held_focus is not None:
            self.held_focus.can_focus = True
            self.held_focus = None

    def show_ranks_loading(self, doc: dict, labels: list[str], done: int, total: int, final: bool) -> None:
        """The rank rows of the processes loaded so far (``final``: of every process). Before
        the first screen of a run that opens on its ranks: the ranks tab alone, its rows
        filling as the processes load (the other tabs come with :meth:`show_view`)."""
        tabs = self.query_one("#tabs", TabbedContent)
        if self.view is None and not tabs.display:
            tabs.active = RanksPane.TAB  # first: hiding the active tab would activate the next one
            for cls in PANES:
                if cls is not RanksPane:
                    self._set_tab_shown(cls.TAB, False)
            tabs.display = True
            self.early_ranks = True
            # the ranks tab stays the screen: the hotspot table (focused by the first tab's
            # activation and by its set_view) does not take the focus, which would make its
            # tab the active one, until the user chooses another tab
            self.held_focus = self.hotspots.table
            self.held_focus.can_focus = False
            self.refresh_bindings()
            self.query_one(RanksPane.FOCUS).focus()
        self.query_one(RanksPane).show_rows(doc, labels, done, total, final)

    def on_key(self, event) -> None:
        """A key while the ranks tab stands alone (loading): the user is reading it, and
        the loaded run does not take them to the hotspots."""
        if self.early_ranks and self.view is None:
            self.ranks_chosen = True

    def rank_rows_failed(self, err: BaseException) -> None:
        report_failure(self.query_one(RanksPane), "rank rows", err)

    def show_failure(self, text: str) -> None:
        self.query_one("#load-status", Label).update(plain(text))  # names files: never markup
        self.query_one("#load-progress").display = False

    def show_view(self, view: RunView) -> None:
        """The first screen: title, every pane's ``set_view``; the pieces start once it is painted."""
        self.view = view
        self.pieces = dict.fromkeys(PIECES, WAITING)
        self.query_one("#loading").display = False
        self.query_one("#tabs").display = True
        self.query_one("#title", Static).update(plain(self.title_text(view), no_wrap=True, overflow="ellipsis"))
        self.update_tabs()
        if self.early_ranks and (not self.ranks_chosen or not opens_on_ranks(view.runset.runs)):
            # the run opens on its hotspots, as one process does: the ranks tab stood alone
            # only while the processes loaded (it stays where the user pressed a key on it,
            # unless the scan's processes did not all load)
            self.early_ranks = False
            self.release_focus()
            self.query_one("#tabs", TabbedContent).active = PANES[0].TAB
            self.query_one(PANES[0].FOCUS).focus()
        for pane in self.panes:
            pane.set_view(view)
        self.heap.run_shown()
        schedule.after_first_paint(self, self.start_pieces)
        errors = len(view.runset.errors)
        if errors:
            self.notify(safe_text(f"{errors} file(s) could not be loaded — see tab 6"), severity="warning", timeout=10, markup=False)

    @staticmethod
    def title_text(view: RunView) -> str:
        runset = view.runset
        errors = len(runset.errors)
        count = title_count(runset, len(view.kernels), view.stats)
        title = f"tuiprof · {runset.name} · {', '.join(runset.formats) or 'no data'} · {len(runset.runs)} process(es) · {count}"
        if not len(view.kernels) and view.stats:  # statistics only: the source first, seen at 80 columns
            title = f"tuiprof · {runset.name} · {count} · {', '.join(runset.formats)} · {len(runset.runs)} process(es)"
        if errors:
            title += f" · {errors} file(s) failed: press 6"
        if view.ready("summary"):  # the integrity checks' verdict, after the run's name (seen at 80 columns)
            trust = view.summary.get("trust") or {}
            note = trust_note(trust, trust, IntegrityPane.KEY)
            head = f"tuiprof · {runset.name}"
            if note:
                title = f"{head} · {note}{title[len(head) :]}"
        return title

    def update_tabs(self) -> None:
        """Show the tabs whose pane is available for the view, hide the others."""
        active = self.query_one("#tabs", TabbedContent).active
        for cls in PANES:
            if cls.available(self.view):
                self._set_tab_shown(cls.TAB, True)
            elif active != cls.TAB:
                self._set_tab_shown(cls.TAB, False)
        self.refresh_bindings()

    hidden_tabs: frozenset[str] = frozenset()  # the tabs hidden now (every tab is shown at first)

    def _set_tab_shown(self, tab: str, shown: bool) -> None:
        """Show or hide ``tab`` when it changes (each change moves the tab bar's underline)."""
        if shown == (tab not in self.hidden_tabs):
            return
        tabs = self.query_one("#tabs", TabbedContent)
        if shown:
            tabs.show_tab(tab)
            self.hidden_tabs -= {tab}
        else:
            tabs.hide_tab(tab)
            self.hidden_tabs |= {tab}

    # -- the lazy pieces: one readiness table, one worker, one error handler ------------------
    def start_pieces(self) -> None:
        """After the first paint: the shown tab's piece, then the others in the background."""
        active = PANE_OF_TAB.get(self.query_one("#tabs", TabbedContent).active or "")
        if active is not None and active.PIECE is not None:
            self.need(active.PIECE)
        self._next_in_background()

    def _next_in_background(self) -> None:
        """Start the first piece not computed yet, in PIECES order, unless an earlier one is
        computing (its end starts the next: one after the other, as each reuses the last)."""
        if not self.background:
            return
        for piece in PIECES:
            if self.pieces[piece] == WAITING:
                self._start(piece)
                return
            if self.pieces[piece] == COMPUTING_PIECE:
                return

    def _start(self, piece: str) -> None:
        assert self.view is not None
        self.pieces[piece] = COMPUTING_PIECE
        active = self.query_one("#tabs", TabbedContent).active
        # the shown tab's pane first: it is the one being looked at
        panes = sorted((p for p in self.panes if piece == p.PIECE), key=lambda p: active != p.TAB)
        self._deliver(self.view, piece, panes)

    @thread_worker("a piece of the run view", group="pieces")
    def _deliver(self, view: RunView, piece: str, panes: list[Pane]) -> None:
        """Compute ``piece``, then hand it to each of ``panes``: ``prepare`` here, ``show``
        on the event loop, one pane per turn of the loop; a pane that fails says so and the
        others go on."""
        try:
            view.ensure(piece)
        except Exception as err:
            deliver(self, self._piece_done, piece, err)
            return
        for pane in panes:
            try:
                if not deliver(self, pane.show, pane.prepare(view)):
                    return  # the screen is gone
            except Exception as err:
                if not deliver(self, report_failure, pane, piece, err):
                    return
        deliver(self, self._piece_done, piece, None)

    def _piece_done(self, piece: str, error: BaseException | None) -> None:
        if error is not None:
            for pane in self.panes:
                if piece == pane.PIECE:
                    report_failure(pane, piece, error)
        self.pieces[piece] = FAILED if error is not None else SHOWN
        if piece == "summary":
            self.heap.summary_shown()
            self.update_tabs()
            if error is None and self.view is not None:  # the title's trust mark
                self.query_one("#title", Static).update(plain(self.title_text(self.view), no_wrap=True, overflow="ellipsis"))
        if piece == "timeline" and error is None and self.steps is not None:
            self._set_timeline_steps()
        self._next_in_background()

    def shown(self, piece: str) -> bool:
        return self.view is not None and self.pieces[piece] == SHOWN

    @property
    def filled(self) -> set[str]:
        """The pieces shown (or failed: said in their panes)."""
        return {piece for piece, state in self.pieces.items() if state in (SHOWN, FAILED)}

    @property
    def complete(self) -> bool:
        """Every lazy piece is computed and shown (or its failure is)."""
        return self.view is not None and self.filled >= set(PIECES)

    def need(self, piece: str) -> bool:
        """True when ``piece`` is shown; else start computing it now (unless it is) and return False."""
        if self.view is None:
            return False
        if self.pieces[piece] == WAITING:
            self._start(piece)
        return self.pieces[piece] == SHOWN

    # -- tabs -------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """A tab's key only where its pane is available (ranks: several processes; steps: steps
        found)."""
        if action != "tab":
            return True
        if self.view is None:
            return parameters == (RanksPane.TAB,) if self.early_ranks else True
        cls = PANE_OF_TAB.get(str(parameters[0])) if parameters else None
        return cls is not None and cls.available(self.view)

    def action_tab(self, tab: str) -> None:
        tabs = self.query_one("#tabs", TabbedContent)
        if not tabs.display:
            return
        if tab != RanksPane.TAB:
            self.release_focus()
        tabs.active = tab
        cls = PANE_OF_TAB.get(tab)
        if cls is not None:
            self.query_one(cls.FOCUS).focus()

    async def run_pane_action(self, tab: str, action: str, widget: str = "") -> None:
        """Show tab ``tab`` and run ``action`` (a binding's action string) on its pane, or on
        the pane's widget ``widget`` (a selector): the command palette's way to a pane's keys."""
        self.action_tab(tab)
        pane = self.pane(tab)
        await self.app.run_action(action, pane.query_one(widget) if widget else pane)

    @on(TabbedContent.TabActivated, "#tabs")
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id != self.query_one("#tabs", TabbedContent).active:
            return  # another tab was activated since: focusing this one would switch back to it
        if event.pane.id != RanksPane.TAB:
            self.release_focus()
        self.refresh_bindings()
        cls = PANE_OF_TAB.get(event.pane.id or "")
        if cls is None:
            return
        if cls.PIECE is not None:
            self.need(cls.PIECE)  # first shown: compute now if the background worker has not yet
        self.query_one(cls.FOCUS).focus()

    # -- routing ------------------------------------------------------------------------------
    @on(ShowTab)
    def _show_tab(self, message: ShowTab) -> None:
        self.action_tab(message.tab)

    @on(KernelSelected)
    def _kernel_selected(self, message: KernelSelected) -> None:
        self.timeline.selection = (message.group, message.value)
        self.counters.kernel = message.kernel

    @on(RankOpened)
    def _rank_opened(self, message: RankOpened) -> None:
        """Enter on a rank: that process's own panes over the loaded run (nothing reloaded)."""
        if self.view is not None:
            self.app.push_screen(RankScreen(self.view.runset, message.run, message.rank))

    @on(DispatchesRequested)
    def _dispatches(self, message: DispatchesRequested) -> None:
        if self.view is not None:
            self.app.push_screen(DispatchesScreen(self.view, message.group, message.value))

    @on(TimelineRequested)
    def goto_kernel(self) -> None:
        """Show the timeline centred on the next dispatch of the selected hotspot row."""
        self.action_tab("timeline")
        if self.need("timeline"):
            self.timeline.centre_selected()

    @on(Timeline.GapOpened, "#timeline-view")
    def _gap_opened(self, event: Timeline.GapOpened) -> None:
        if self.view is not None and self.view.ready("gaps") and self.view.gaps is not None:
            self.app.push_screen(GapScreen(self.view, event.gap_index))

    @on(WhatIfRequested)
    def _what_if(self, message: WhatIfRequested) -> None:
        """``W`` on a hotspot row or a finding: its what-if on a screen of its own."""
        if self.view is not None:
            self.app.push_screen(WhatIfScreen(self.view, message.target))

    @on(Timeline.GapWhatIf, "#timeline-view")
    def _gap_what_if(self, event: Timeline.GapWhatIf) -> None:
        if self.view is not None and self.view.ready("gaps") and self.view.gaps is not None:
            self.app.push_screen(WhatIfScreen(self.view, gap_target(self.view, event.gap_index)))

    @on(StepRequested)
    @on(WindowRequested)
    def goto_step(self, message: StepRequested | WindowRequested) -> None:
        """Enter on a step (or an integrity issue): the timeline zoomed to its range."""
        if not self.need("timeline"):
            self.notify(safe_text(f"timeline: {COMPUTING} press Enter again when it is shown"), timeout=3, markup=False)
            return
        assert self.view is not None  # need() is True only with a view
        self.action_tab("timeline")
        origin = self.view.timeline.origin
        self.timeline.show_range(message.start_ns - origin, message.end_ns - origin)

    @on(StepsChanged)
    def _steps_changed(self, message: StepsChanged) -> None:
        """The steps pane shows steps: the timeline's step ticks follow (now, or once it is shown)."""
        self.steps = message.steps
        if self.shown("timeline"):
            self._set_timeline_steps()

    def _set_timeline_steps(self) -> None:
        assert self.view is not None
        self.timeline.set_steps(self.steps, self.view.timeline.origin)

    @on(EvidenceRequested)
    def goto_evidence(self, message: EvidenceRequested) -> None:
        """Enter on a finding: a gap -> the timeline centred on it; a kernel -> its
        dispatches; a sync pattern -> the host row; other findings -> their pane."""
        finding, view = message.finding, self.view
        if view is None or not self.need("timeline"):
            self.notify(safe_text(f"timeline: {COMPUTING} press Enter again when it is shown"), timeout=3, markup=False)
            return
        kind, target = finding_evidence(view, finding)
        if kind == "gap":
            self.action_tab("timeline")
            self.timeline.show_gap(int(target))
        elif kind == "host":
            self.action_tab("timeline")
            self.timeline.show_window(*host_window(view, int(target)), int(target))
        elif kind == "copy":
            self.action_tab("timeline")
            self.timeline.show_window(*copy_window(view, int(target)), int(target))
        elif kind == "kernel":
            self.app.push_screen(DispatchesScreen(view, "name", str(target)))
        elif kind == "tab":
            self.action_tab(str(target))
        else:
            self.notify(safe_text(f"{finding['code']}: {target}"), severity="information", markup=False)

    # -- export ---------------------------------------------------------------------------------
    def export_window(self) -> tuple[int, int] | None:
        """The timeline's shown range in absolute ns when the timeline tab is shown, else None (the whole run)."""
        if self.view is None or self.query_one("#tabs", TabbedContent).active != "timeline" or not self.shown("timeline"):
            return None
        timeline = self.timeline.timeline
        return self.view.origin + timeline.t0, self.view.origin + timeline.t1

    def action_export(self, kind: str = "perfetto", whole: bool = False) -> None:
        """Export the run (``kind``: perfetto or parquet) in a thread worker; the timeline
        tab's window only for a Perfetto export from that tab (``whole``: the run anyway)."""
        if self.view is None:
            self.notify("export: the run is still loading", severity="warning")
            return
        window = None if whole or kind != "perfetto" else self.export_window()
        what = "the timeline window" if window else "the run"
        self.notify(safe_text(f"exporting {what} ({kind})…"), timeout=3, markup=False)
        self._export(kind, window)

    @thread_worker("export", group="export")
    def _export(self, kind: str, window: tuple[int, int] | None) -> None:
        assert self.view is not None
        runset = self.view.runset
        # the summary on screen (computed now if it is not yet): its findings are the panes'
        analysis = self.view.summary_result
        try:
            if kind == "parquet":
                folder = default_destination(runset.root, runset.name, ".tuiprof-parquet")
                export_parquet(runset, folder, analysis=analysis)
                text = f"Parquet tables written to {folder}"
            else:
                suffix = ".window.tuiprof.json.gz" if window else ".tuiprof.json.gz"
                path, count = export_perfetto(runset, default_destination(runset.root, runset.name, suffix), window, analysis=analysis)
                text = f"{count} trace events written to {path} (open it at ui.perfetto.dev)"
            deliver(self, lambda: self.notify(safe_text(text), timeout=15, markup=False))
        except (ExportError, OSError) as err:  # a refused or unwritable destination: said, never a traceback
            message = f"export failed: {err}"
            deliver(self, lambda: self.notify(safe_text(message), severity="error", timeout=15, markup=False))


def rank_runset(runset: RunSet, run: int, rank: int) -> RunSet:
    """The run set of one process of ``runset`` (the same Run object: no copy, no reload)."""
    return RunSet(root=f"{runset.root} · rank {rank}", runs=[runset.runs[run]])


class RankScreen(MainScreen):
    """One rank's own panes (Enter on a rank in tab 7): the run screen over a run set that
    holds only that process (its view built by the screen, its pieces computed in order).
    Esc goes back to the whole run."""

    # priority: Esc goes back even when a pane's table has the focus (its own Esc clears a filter)
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back to all ranks", id="rank.back", priority=True)]

    def __init__(self, runset: RunSet, run: int, rank: int) -> None:
        super().__init__(rank_runset(runset, run, rank), freeze=False)
        self.rank = rank
        self.source_name = f"rank {rank}"
