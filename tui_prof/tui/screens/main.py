"""The main screen: title, load progress, and the panes as tabs (keys 1-8: 7 ranks for runs of several processes, 8 steps for runs with steps); the rank screen.

It composes the panes and routes: data goes down (``set_view``, ``fill_part``), the
panes' requests come up as messages (tui_prof.tui.messages) and are sent on to the pane
or screen that answers them. It holds no analysis of its own.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Label, ProgressBar, Static, TabbedContent, TabPane

from tui_prof.export.common import ExportError, default_destination
from tui_prof.export.parquet import export_parquet
from tui_prof.export.perfetto import export_perfetto
from tui_prof.model import RunSet
from tui_prof.render.safe import safe_text
from tui_prof.tui.messages import (
    DispatchesRequested,
    EvidenceRequested,
    KernelSelected,
    NeedPart,
    RankOpened,
    ShowTab,
    StepRequested,
    StepsChanged,
    TimelineRequested,
)
from tui_prof.tui.panes import COMPUTING
from tui_prof.tui.panes.counters import CountersPane
from tui_prof.tui.panes.findings import FindingsPane, findings_rows
from tui_prof.tui.panes.hardware import HardwarePane, capabilities_renderable
from tui_prof.tui.panes.hotspots import HotspotsPane, measurement_text
from tui_prof.tui.panes.issues import IssuesPane
from tui_prof.tui.panes.ranks import RanksPane
from tui_prof.tui.panes.steps import StepsPane
from tui_prof.tui.panes.timeline import TimelinePane
from tui_prof.tui.safe import plain
from tui_prof.tui.screens.drilldown import DispatchesScreen
from tui_prof.tui.screens.gap import GapScreen
from tui_prof.tui.view.findings import copy_window, finding_evidence, host_window
from tui_prof.tui.view.rankrows import opens_on_ranks
from tui_prof.tui.view.runview import PARTS, RunView, build_view
from tui_prof.tui.view.stats import title_count
from tui_prof.tui.widgets.footer import KeyFooter
from tui_prof.tui.widgets.timeline import Timeline

PANES = Binding.Group("Panes", compact=True)
# every tab focuses a widget of its own: a tab whose focus stayed in a hidden pane would be
# switched back to by Textual (TabPane.Focused) when that widget is focused again
FOCUS = {
    "hotspots": "#hotspot-table",
    "timeline": "#timeline-view",
    "hardware": "#hardware-pane",
    "findings": "#findings-table",
    "counters": "#counters-pane",
    "issues": "#issues-pane",
    "ranks": "#ranks-table",
    "steps": "#steps-table",
}
# the lazy RunView part each tab shows (see tui_prof.tui.view.runview.PARTS)
TAB_PART = {
    "hotspots": "summary",
    "timeline": "timeline",
    "hardware": "summary",
    "findings": "summary",
    "counters": "summary",
    "issues": "summary",
    "ranks": "summary",
    "steps": "summary",
}


class MainScreen(Screen):
    """Tabs: hotspots, timeline, hardware, findings, counters, load issues, steps."""

    BINDINGS = [
        Binding("1", "tab('hotspots')", "Hotspots", id="tab.hotspots", group=PANES),
        Binding("2", "tab('timeline')", "Timeline", id="tab.timeline", group=PANES),
        Binding("3", "tab('hardware')", "Hardware", id="tab.hardware", group=PANES),
        Binding("4", "tab('findings')", "Findings", id="tab.findings", group=PANES),
        Binding("5", "tab('counters')", "Counters", id="tab.counters", group=PANES),
        Binding("6", "tab('issues')", "Issues", id="tab.issues", group=PANES),
        Binding("7", "tab('ranks')", "Ranks", id="tab.ranks", group=PANES),
        Binding("8", "tab('steps')", "Steps", id="tab.steps", group=PANES),
        Binding("e", "export('perfetto')", "Export to Perfetto", show=False, id="main.export"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.view: RunView | None = None
        self.source_name = ""
        self.filled: set[str] = set()  # lazy parts shown in the panes
        self.filling: set[str] = set()  # lazy parts being handed to the panes in steps

    def compose(self) -> ComposeResult:
        yield Static("tuiprof", id="title", classes="title")
        with Vertical(id="loading"):
            yield Label("Loading…", id="load-status")
            yield ProgressBar(id="load-progress", show_eta=False)
        with TabbedContent(id="tabs", initial="hotspots"):
            with TabPane("1 Hotspots", id="hotspots"):
                yield HotspotsPane(id="hotspots-pane")
            with TabPane("2 Timeline", id="timeline"):
                yield TimelinePane(id="timeline-pane")
            with TabPane("3 Hardware", id="hardware"):
                yield HardwarePane(id="hardware-pane")
            with TabPane("4 Findings", id="findings"):
                yield FindingsPane(id="findings-pane")
            with TabPane("5 Counters", id="counters"):
                yield CountersPane(id="counters-pane")
            with TabPane("6 Issues", id="issues"):
                yield IssuesPane(id="issues-pane")
            with TabPane("7 Ranks", id="ranks"):
                yield RanksPane(id="ranks-pane")
            with TabPane("8 Steps", id="steps"):
                yield StepsPane(id="steps-pane")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#tabs").display = False
        self.freeze_gc()

    # The loaded run and its summary are hundreds of thousands of Python objects that live
    # as long as the app (at 64 ranks 105,000 after the load, 47,000 more with the
    # summary, on top of 83,000 from the imports); each full pass of the garbage
    # collector walked all of them: 70–230 ms on whichever thread allocated, the event
    # loop's included (a worker's pass holds the GIL as long). ``gc.freeze()`` moves the
    # objects alive then out of the collector's passes, when the screen is mounted (the imports'), once the run is shown and once
    # its summary is; cyclic garbage alive at that moment (a few dozen objects measured) stays.
    # Only the app's own screen does it (a rank's screen comes and goes) and it unfreezes
    # when removed (at the app's exit, or a test's).
    FREEZE_GC = True

    def freeze_gc(self) -> None:
        if self.FREEZE_GC:
            gc.freeze()

    def on_unmount(self) -> None:
        if self.FREEZE_GC:
            gc.unfreeze()

    # the panes, for the app's command palette and for tests
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

    # -- loading --------------------------------------------------------------------
    def show_progress(self, stage: str, done: int, total: int) -> None:
        self.query_one("#load-status", Label).update(plain(f"Loading {self.source_name}: {stage} {done}/{total}"))
        self.query_one("#load-progress", ProgressBar).update(total=max(total, 1), progress=done)

    early_ranks = False  # the ranks tab was shown alone while the processes loaded
    held_focus: Widget | None = None  # a widget kept from the focus while the ranks tab stays

    def release_focus(self) -> None:
        if self.held_focus is not None:
            self.held_focus.can_focus = True
            self.held_focus = None

    def show_ranks_loading(self, doc: dict, labels: list[str], done: int, total: int, final: bool) -> None:
        """Before the first screen of a run of several processes: the ranks tab alone, its
        rows filling as the processes load (the other tabs come with :meth:`show_view`)."""
        tabs = self.query_one("#tabs", TabbedContent)
        if self.view is None and not tabs.display:
            tabs.active = "ranks"  # first: hiding the active tab would activate the next one
            for tab in FOCUS:
                if tab != "ranks":
                    tabs.hide_tab(tab)
            tabs.display = True
            self.early_ranks = True
            # the ranks tab stays the screen: the hotspot table (focused by the first tab's
            # activation and by its set_view) does not take the focus, which would make its
            # tab the active one, until the user chooses another tab
            self.held_focus = self.hotspots.table
            self.held_focus.can_focus = False
            self.refresh_bindings()
            self.query_one(FOCUS["ranks"]).focus()
        self.query_one(RanksPane).show_rows(doc, labels, done, total, final)

    def show_failure(self, text: str) -> None:
        self.query_one("#load-status", Label).update(plain(text))  # names files: never markup
        self.query_one("#load-progress").display = False

    def show_view(self, view: RunView) -> None:
        """The first screen: title, hotspots, agents; the lazy panes say "computing…"."""
        self.view = view
        self.filled, self.filling = set(), set()
        runset = view.runset
        self.query_one("#loading").display = False
        self.query_one("#tabs").display = True
        if self.early_ranks:
            for tab in FOCUS:
                if tab not in ("ranks", "steps"):
                    self.query_one("#tabs", TabbedContent).show_tab(tab)
            if not opens_on_ranks(runset.runs):  # the scan's processes did not all load: the hotspots, as for one process
                self.early_ranks = False
                self.release_focus()
                self.query_one("#tabs", TabbedContent).active = "hotspots"
                self.query_one(FOCUS["hotspots"]).focus()
        errors = len(runset.errors)
        count = title_count(runset, len(view.kernels), view.stats)
        title = f"tuiprof · {runset.name} · {', '.join(runset.formats) or 'no data'} · {len(runset.runs)} process(es) · {count}"
        if not len(view.kernels) and view.stats:  # statistics only: the source first, seen at 80 columns
            title = f"tuiprof · {runset.name} · {count} · {', '.join(runset.formats)} · {len(runset.runs)} process(es)"
        if errors:
            title += f" · {errors} file(s) failed: press 6"
        self.query_one("#title", Static).update(plain(title, no_wrap=True, overflow="ellipsis"))
        if len(runset.runs) < 2:  # the ranks tab is for runs of several processes
            self.query_one("#tabs", TabbedContent).hide_tab("ranks")
        else:
            self.query_one("#tabs", TabbedContent).show_tab("ranks")
        self.query_one("#tabs", TabbedContent).hide_tab("steps")  # shown once the summary finds steps
        self.refresh_bindings()
        self.timeline.set_view(view)
        self.query_one(HardwarePane).set_runset(runset)
        self.query_one(RanksPane).set_runset(runset)
        self.hotspots.set_view(view)
        self.query_one(StepsPane).set_view(view)
        for part in PARTS:
            if view.ready(part):
                self.fill_part(part)
        self.freeze_gc()
        # the analyses start once this screen is painted: a worker started now would hold
        # the GIL while the first frame is composed (≈ 1 s later at 1M dispatches)
        self.call_after_refresh(self.need, TAB_PART[self.query_one("#tabs", TabbedContent).active or "hotspots"])
        if errors:
            self.notify(safe_text(f"{errors} file(s) could not be loaded — see tab 6"), severity="warning", timeout=10, markup=False)

    def fill_part(self, part: str, error: str = "") -> None:
        """Show a lazy part that a worker has computed (runs on the event loop: no analysis)."""
        if self.view is None or part in self.filled:
            return
        view = self.view
        if error:
            text = plain(f"{part}: could not be computed: {error}", "red")
            panes = {"summary": (HotspotsPane, HardwarePane, FindingsPane, CountersPane, IssuesPane, RanksPane, StepsPane), "timeline": (TimelinePane,)}.get(
                part, ()
            )
            for pane in panes:
                self.query_one(pane).part_failed(text)
        elif part == "summary":
            if part not in self.filling:  # a second PartReady while the steps run
                self.filling.add(part)
                self._fill_in_steps(part, self.summary_steps(view))
            return  # shown once every step has run
        elif part == "timeline":
            self.timeline.set_model(view.timeline)
            if view.ready("summary"):
                self.timeline.set_steps(view.summary, view.timeline.origin)
        self._filled(part)

    def _filled(self, part: str) -> None:
        if self.view is None:
            return
        self.filling.discard(part)
        self.filled.add(part)
        if part == "summary":
            self.freeze_gc()
        self.filled |= {p for p in ("gaps", "launches") if self.view.ready(p)}  # nothing to show of their own

    def summary_steps(self, view: RunView) -> list[tuple[Callable[[], Any], Callable[[Any], None]]]:
        """The summary's hand-over to the panes, one (prepare, show) pair per pane:
        ``prepare`` builds what the pane shows (Rich text, table rows) without touching a
        widget, ``show`` hands it over on the event loop."""
        doc = view.summary
        hotspots, hardware, findings, counters = self.hotspots, self.query_one(HardwarePane), self.findings, self.counters
        issues, steps, ranks = self.query_one(IssuesPane), self.query_one(StepsPane), self.query_one(RanksPane)
        labels = [p["label"] for p in (doc or {}).get("processes", [])]

        columns = steps.width()  # read here, on the event loop

        def show_steps(shown: Any) -> None:
            steps.set_summary(doc, shown)
            if has_steps(doc):
                self.query_one("#tabs", TabbedContent).show_tab("steps")
                self.refresh_bindings()
            if view.ready("timeline"):
                self.timeline.set_steps(doc, view.timeline.origin)

        return [
            (lambda: measurement_text(doc), hotspots.show_measurement),
            (lambda: findings_rows(doc), findings.show_findings),
            (lambda: capabilities_renderable(doc or {}), hardware.show_capabilities),
            (lambda: counters.prepare(doc), lambda body: counters.show_summary(doc, body)),
            (lambda: None, lambda _: issues.set_summary(view.runset, doc)),
            (lambda: steps.prepare(doc, columns), show_steps),
            (lambda: None, lambda _: ranks.set_summary(doc, labels)),
        ]

    @work(thread=True, group="fill", exit_on_error=False)
    def _fill_in_steps(self, part: str, steps: list[tuple[Callable[[], Any], Callable[[Any], None]]]) -> None:
        """Run each step's ``prepare`` here and its ``show`` on the event loop, one pane per
        turn of the loop (handing the whole summary over at once holds the loop 10–20 ms at
        1M dispatches); the part counts as shown after the last one."""
        call = self.app.call_from_thread
        try:
            for prepare, show in steps:
                call(show, prepare())
        except Exception as err:  # shown in the panes, never as a traceback
            call(self.fill_part, part, f"{type(err).__name__}: {err}")
            return
        call(self._filled, part)

    @property
    def complete(self) -> bool:
        """Every lazy part is computed and shown."""
        return self.view is not None and self.filled >= set(PARTS)

    def need(self, part: str) -> bool:
        """True when ``part`` is shown; else ask the app to compute it now and return False."""
        if self.view is not None and part in self.filled:
            return True
        if self.view is not None:
            self.app.compute_part(part)
        return False

    # -- tabs -------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """Key 7 (ranks) only for runs of several processes, key 8 (steps) only for runs with steps."""
        if action == "tab" and self.view is None and self.early_ranks:
            return parameters == ("ranks",)
        if action == "tab" and parameters == ("ranks",):
            return self.view is not None and len(self.view.runset.runs) > 1
        if action == "tab" and parameters == ("steps",):
            return self.view is not None and self.view.ready("summary") and has_steps(self.view.summary)
        return True

    def action_tab(self, tab: str) -> None:
        tabs = self.query_one("#tabs", TabbedContent)
        if not tabs.display:
            return
        if tab != "ranks":
            self.release_focus()
        tabs.active = tab
        focus = FOCUS.get(tab)
        if focus:
            self.query_one(focus).focus()

    @on(TabbedContent.TabActivated, "#tabs")
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id != self.query_one("#tabs", TabbedContent).active:
            return  # another tab was activated since: focusing this one would switch back to it
        if event.pane.id != "ranks":
            self.release_focus()
        self.refresh_bindings()
        part = TAB_PART.get(event.pane.id or "")
        if part:
            self.need(part)  # first shown: compute now if the background worker has not yet
        focus = FOCUS.get(event.pane.id or "")
        if focus:
            self.query_one(focus).focus()

    # -- routing ------------------------------------------------------------------------------
    @on(ShowTab)
    def _show_tab(self, message: ShowTab) -> None:
        self.action_tab(message.tab)

    @on(NeedPart)
    def _need_part(self, message: NeedPart) -> None:
        self.need(message.part)

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

    @on(StepRequested)
    def goto_step(self, message: StepRequested) -> None:
        """Enter on a step: the timeline zoomed to the step's host range."""
        if not self.need("timeline"):
            self.notify(safe_text(f"timeline: {COMPUTING} press Enter again when it is shown"), timeout=3, markup=False)
            return
        assert self.view is not None  # need() is True only with a view
        self.action_tab("timeline")
        origin = self.view.timeline.origin
        self.timeline.show_range(message.start_ns - origin, message.end_ns - origin)

    @on(StepsChanged)
    def _steps_changed(self, message: StepsChanged) -> None:
        if self.view is not None and self.view.ready("timeline"):
            self.timeline.set_steps({"steps": message.steps}, self.view.timeline.origin)

    @on(EvidenceRequested)
    def goto_evidence(self, message: EvidenceRequested) -> None:
        """Enter on a finding: a gap -> the timeline centred on it; a kernel -> its
        dispatches; a sync pattern -> the host row; other findings -> their pane."""
        finding = message.finding
        if not self.need("timeline"):
            self.notify(safe_text(f"timeline: {COMPUTING} press Enter again when it is shown"), timeout=3, markup=False)
            return
        kind, target = finding_evidence(self.view, finding)
        if kind == "gap":
            self.action_tab("timeline")
            self.timeline.show_gap(int(target))
        elif kind == "host":
            self.action_tab("timeline")
            self.timeline.show_window(*host_window(self.view, int(target)), int(target))
        elif kind == "copy":
            self.action_tab("timeline")
            self.timeline.show_window(*copy_window(self.view, int(target)), int(target))
        elif kind == "kernel":
            self.app.push_screen(DispatchesScreen(self.view, "name", str(target)))
        elif kind == "tab":
            self.action_tab(str(target))
        else:
            self.notify(safe_text(f"{finding['code']}: {target}"), severity="information", markup=False)

    # -- export ---------------------------------------------------------------------------------
    def export_window(self) -> tuple[int, int] | None:
        """The timeline's shown range in absolute ns when the timeline tab is shown, else None (the whole run)."""
        if self.view is None or self.query_one("#tabs", TabbedContent).active != "timeline" or "timeline" not in self.filled:
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

    @work(thread=True, group="export", exit_on_error=False)
    def _export(self, kind: str, window: tuple[int, int] | None) -> None:
        assert self.view is not None
        runset = self.view.runset
        try:
            if kind == "parquet":
                folder = default_destination(runset.root, runset.name, ".tuiprof-parquet")
                export_parquet(runset, folder)
                text = f"Parquet tables written to {folder}"
            else:
                suffix = ".window.tuiprof.json.gz" if window else ".tuiprof.json.gz"
                path, count = export_perfetto(runset, default_destination(runset.root, runset.name, suffix), window)
                text = f"{count} trace events written to {path} (open it at ui.perfetto.dev)"
            self.app.call_from_thread(self.notify, safe_text(text), timeout=15, markup=False)
        except (ExportError, OSError) as err:  # a refused or unwritable destination: said, never a traceback
            self.app.call_from_thread(self.notify, safe_text(f"export failed: {err}"), severity="error", timeout=15, markup=False)


def has_steps(doc: dict | None) -> bool:
    """True when the summary found steps (the steps tab is shown only then: eight tabs need 88 columns)."""
    return bool(doc and (doc.get("steps") or {}).get("detected"))


def rank_runset(runset: RunSet, run: int, rank: int) -> RunSet:
    """The run set of one process of ``runset`` (the same Run object: no copy, no reload)."""
    return RunSet(root=f"{runset.root} · rank {rank}", runs=[runset.runs[run]])


class RankScreen(MainScreen):
    """One rank's own panes (Enter on a rank in tab 7): the main screen's tabs over a run
    set that holds only that process; its lazy parts are computed by this screen's own
    worker, in order. Esc goes back to the whole run."""

    # priority: Esc goes back even when a pane's table has the focus (its own Esc clears a filter)
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back to all ranks", id="rank.back", priority=True)]
    FREEZE_GC = False

    def __init__(self, runset: RunSet, run: int, rank: int) -> None:
        super().__init__()
        self.sub = rank_runset(runset, run, rank)
        self.rank = rank
        self.source_name = f"rank {rank}"

    def on_mount(self) -> None:
        super().on_mount()
        self.build()

    @work(thread=True, group="rank-view", exit_on_error=False)
    def build(self) -> None:
        view = build_view(self.sub, lazy=True)
        self.app.call_from_thread(self.show_view, view)
        for part in PARTS:
            try:
                view.ensure(part)
                self.app.call_from_thread(self.fill_part, part)
            except Exception as err:  # shown in its pane, never as a traceback
                self.app.call_from_thread(self.fill_part, part, f"{type(err).__name__}: {err}")

    def need(self, part: str) -> bool:
        """True when ``part`` is shown (the build worker computes every part in order)."""
        return self.view is not None and part in self.filled
