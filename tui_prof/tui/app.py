"""``tuiprof open RUN``: the Textual app.

The app shows its screen at once and loads the run in a thread worker
(``load_path`` with the columnar cache, then :func:`tui_prof.tui.runview.build_view`
with ``lazy=True``), posting coalesced progress messages. The first screen (title,
hotspots) appears as soon as the kernels table exists; the measurement table and the
other panes (timeline, findings, counters, hardware capabilities, issues) are computed
by :meth:`RunView.ensure` in thread workers — in the background after the first screen,
or at once when their tab is shown — and show "computing…" until then. Results come
back as messages, so the event loop never runs an analysis.

Per-file load errors go to the Issues tab; a run that cannot be loaded at all shows the
reason in place of the panes — never a traceback.
"""

from __future__ import annotations

import re
from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, ProgressBar, Static, TabbedContent, TabPane

from tui_prof.model import RunSet
from tui_prof.render.fmt import fmt_bytes, fmt_ns
from tui_prof.tui.panes import (
    CountersPane,
    capabilities_renderable,
    counters_renderable,
    finding_detail,
    finding_evidence,
    findings_frame,
    host_window,
    measurement_text,
)
from tui_prof.tui.runview import GROUPS, PARTS, RunView, build_view, load_failure, load_runset
from tui_prof.tui.screens import DispatchesScreen, GapScreen, HelpScreen
from tui_prof.tui.widgets.table import Column, TableView
from tui_prof.tui.widgets.timeline import Timeline
from tui_prof.threads import use_daemon_threads

HOTSPOT_COLUMNS = [
    Column("name", "name", 60, "text"),
    Column("total_ns", "total", 9, "ns"),
    Column("percent", "%", 6, "pct"),
    Column("calls", "calls", 7),
    Column("avg_ns", "avg", 9, "ns"),
    Column("median_ns", "median", 9, "ns"),
    Column("min_ns", "min", 9, "ns"),
    Column("max_ns", "max", 9, "ns"),
    Column("stddev_ns", "stddev", 9, "ns"),
]
TABS = ("hotspots", "timeline", "hardware", "findings", "counters", "issues")
FINDING_COLUMNS = [
    Column("message", "finding", 60, "text"),
    Column("severity", "severity", 8, "text"),
    Column("code", "code", 18, "text"),
    Column("rank", "#", 3),
]
PANES = Binding.Group("Panes", compact=True)
FOCUS = {"hotspots": "#hotspot-table", "timeline": "#timeline-view", "findings": "#findings-table", "counters": "#counters-pane"}
# the lazy RunView part each tab shows (see tui_prof.tui.runview.PARTS)
TAB_PART = {"hotspots": "summary", "timeline": "timeline", "hardware": "summary", "findings": "summary",
            "counters": "summary", "issues": "summary"}
COMPUTING = "computing…"
# the timeline legend: (glyph, style, label) as drawn by tui_prof.tui.widgets.timeline
LEGEND = (("█", "bright_green", " busy "), ("▃", "yellow", " <90% busy "), ("░", "red", " idle "),
          ("▓", "bright_magenta", " sync "), ("▚", "bright_magenta", " sync+launch "), ("▆", "blue", " host API"))


class FindingsTable(TableView):
    """The findings list; Enter jumps to the evidence of the finding under the cursor."""

    BINDINGS = [Binding("enter", "select", "Evidence", id="findings.evidence")]

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        return action not in ("sort", "sort_dir")  # the analysis' rank order is the order


def bundled_sample() -> Path:
    """The sample run shipped next to the package (repo checkout layout)."""
    return Path(__file__).resolve().parents[2] / "sample_traces" / "synthetic_sync_per_launch"


class LoadProgress(Message):
    def __init__(self, stage: str, done: int, total: int) -> None:
        super().__init__()
        self.stage, self.done, self.total = stage, done, total

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LoadProgress)


class Loaded(Message):
    def __init__(self, view: RunView) -> None:
        super().__init__()
        self.view = view


class PartReady(Message):
    """A lazy part of the view (``RunView.ensure(part)``) is computed (or failed: ``error``)."""

    def __init__(self, part: str, error: str = "") -> None:
        super().__init__()
        self.part, self.error = part, error


class LoadFailed(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class MainScreen(Screen):
    """Tabs: hotspots, timeline, hardware, findings, counters, load issues."""

    BINDINGS = [
        Binding("1", "tab('hotspots')", "Hotspots", id="tab.hotspots", group=PANES),
        Binding("2", "tab('timeline')", "Timeline", id="tab.timeline", group=PANES),
        Binding("3", "tab('hardware')", "Hardware", id="tab.hardware", group=PANES),
        Binding("4", "tab('findings')", "Findings", id="tab.findings", group=PANES),
        Binding("5", "tab('counters')", "Counters", id="tab.counters", group=PANES),
        Binding("6", "tab('issues')", "Issues", id="tab.issues", group=PANES),
        Binding("slash", "filter", "Filter", id="hotspots.filter"),
        Binding("b", "group", "Group by", id="hotspots.group"),
        Binding("t", "goto_kernel", "Kernel on timeline", id="hotspots.timeline"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="hotspots.clear"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.view: RunView | None = None
        self.group = "name"
        self.kernel_cycle = 0
        self.filled: set[str] = set()  # lazy parts shown in the panes
        self.pending_group: str | None = None  # grouping being computed in a worker

    def compose(self) -> ComposeResult:
        yield Static("tuiprof", id="title", classes="title")
        with Vertical(id="loading"):
            yield Label("Loading…", id="load-status")
            yield ProgressBar(id="load-progress", show_eta=False)
        with TabbedContent(id="tabs", initial="hotspots"):
            with TabPane("1 Hotspots", id="hotspots"):
                yield Static("", id="measure")
                yield Static("", id="hot-status", classes="status")
                yield TableView(HOTSPOT_COLUMNS, id="hotspot-table")
                yield Input(placeholder="regex filter on names (Enter: apply, Esc: cancel)", id="filter")
            with TabPane("2 Timeline", id="timeline"):
                yield Timeline(id="timeline-view")
                yield Static("", id="tl-status", classes="status")
                yield Static(self._legend(), id="tl-legend", classes="status")
            with TabPane("3 Hardware", id="hardware"):
                with VerticalScroll():
                    yield Static("", id="hardware-body")
                    yield Static("", id="capabilities-body")
            with TabPane("4 Findings", id="findings"):
                yield FindingsTable(FINDING_COLUMNS, id="findings-table")
                with VerticalScroll(id="finding-scroll"):
                    yield Static("", id="finding-detail")
            with TabPane("5 Counters", id="counters"):
                with CountersPane(id="counters-pane"):
                    yield Static("", id="counters-body")
            with TabPane("6 Issues", id="issues"):
                with VerticalScroll():
                    yield Static("", id="issues-body")
        yield Footer()

    @staticmethod
    def _legend() -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        for glyph, style, label in LEGEND:
            text.append(glyph, style)
            text.append(label)
        return text

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """Hotspot keys (/ b t) only while the hotspot pane is shown (keeps the footer short)."""
        if action in ("filter", "group", "goto_kernel"):
            tabs = self.query_one("#tabs", TabbedContent)
            return tabs.display and tabs.active == "hotspots"
        return True

    def on_mount(self) -> None:
        self.query_one("#tabs").display = False
        self.query_one("#filter").display = False

    # -- loading --------------------------------------------------------------------
    def show_progress(self, stage: str, done: int, total: int) -> None:
        self.query_one("#load-status", Label).update(f"Loading {self.app.source_name}: {stage} {done}/{total}")
        self.query_one("#load-progress", ProgressBar).update(total=max(total, 1), progress=done)

    def show_failure(self, text: str) -> None:
        self.query_one("#load-status", Label).update(text)
        self.query_one("#load-progress").display = False

    def show_view(self, view: RunView) -> None:
        """The first screen: title, hotspots, agents; the lazy panes say "computing…"."""
        self.view = view
        self.filled = set()
        runset = view.runset
        self.query_one("#loading").display = False
        self.query_one("#tabs").display = True
        kernels = len(view.kernels)
        errors = len(runset.errors)
        title = f"tuiprof · {runset.name} · {', '.join(runset.formats) or 'no data'} · {len(runset.runs)} process(es) · {kernels} dispatches"
        if errors:
            title += f" · {errors} file(s) failed: press 6"
        self.query_one("#title", Static).update(Text(title, no_wrap=True, overflow="ellipsis"))
        self.fill_hotspots()
        self.query_one("#hardware-body", Static).update(self._hardware())
        computing = Text(COMPUTING, "dim italic")
        self.query_one("#measure", Static).update(Text(f"measurement table: {COMPUTING}", "dim italic"))
        self.query_one("#tl-status", Static).update(Text(f"timeline: {COMPUTING}", "dim italic"))
        for widget in ("#capabilities-body", "#finding-detail", "#counters-body", "#issues-body"):
            self.query_one(widget, Static).update(computing)
        self.query_one("#hotspot-table", TableView).focus()
        for part in PARTS:
            if view.ready(part):
                self.fill_part(part)
        # the analyses start once this screen is painted: a worker started now would hold
        # the GIL while the first frame is composed (≈ 1 s later at 1M dispatches)
        self.call_after_refresh(self.need, TAB_PART[self.query_one("#tabs", TabbedContent).active or "hotspots"])
        if errors:
            self.notify(f"{errors} file(s) could not be loaded — see tab 6", severity="warning")

    def fill_part(self, part: str, error: str = "") -> None:
        """Show a lazy part that a worker has computed (runs on the event loop: no analysis)."""
        if self.view is None or part in self.filled:
            return
        if error:
            text = Text(f"{part}: could not be computed: {error}", "red")
            targets = {"summary": ("#measure", "#capabilities-body", "#finding-detail", "#counters-body", "#issues-body"),
                       "timeline": ("#tl-status",)}.get(part, ())
            for widget in targets:
                self.query_one(widget, Static).update(text)
            self.filled.add(part)
            return
        view = self.view
        if part == "summary":
            self.filled.add(part)
            self.query_one("#measure", Static).update(measurement_text(view.summary))
            self.query_one("#capabilities-body", Static).update(capabilities_renderable(view.summary))
            findings = self.query_one("#findings-table", FindingsTable)
            had_focus = findings.has_focus
            findings.set_data(findings_frame(view.summary), text_key="message")
            if had_focus:
                findings.focus()
            self.show_finding()
            self.update_counters()
            self.query_one("#issues-body", Static).update(self._issues())
        elif part == "timeline":
            timeline = self.query_one("#timeline-view", Timeline)
            timeline.set_model(view.timeline)
            self.query_one("#tl-status", Static).update(Text(timeline.status_text(), no_wrap=True, overflow="ellipsis"))
            self.filled.add(part)
        self.filled |= {p for p in ("gaps", "launches") if view.ready(p)}  # nothing to show of their own

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

    # -- findings / counters ---------------------------------------------------------------
    @property
    def findings(self) -> list[dict]:
        if self.view is None or "summary" not in self.filled:
            return []
        return list((self.view.summary or {}).get("findings") or [])

    def current_finding(self) -> dict | None:
        row = self.query_one("#findings-table", FindingsTable).current_row
        return self.findings[int(row["rank"]) - 1] if row is not None else None

    def show_finding(self) -> None:
        self.query_one("#finding-detail", Static).update(finding_detail(self.current_finding()))

    def selected_kernel(self) -> str | None:
        """The hotspot row's kernel name (None unless the table is grouped by name)."""
        row = self.query_one("#hotspot-table", TableView).current_row
        return str(row["name"]) if row is not None and self.group == "name" else None

    def update_counters(self) -> None:
        if self.view is None or "summary" not in self.filled:
            return
        pane = self.query_one("#counters-pane", CountersPane)
        self.query_one("#counters-body", Static).update(counters_renderable(self.view, self.selected_kernel(), pane.explain))

    def on_counters_pane_explain_toggled(self, event: CountersPane.ExplainToggled) -> None:
        self.update_counters()

    def action_explain(self) -> None:
        self.action_tab("counters")
        self.query_one("#counters-pane", CountersPane).action_explain()

    def goto_evidence(self, finding: dict) -> None:
        """Enter on a finding: a gap -> the timeline centred on it; a kernel -> its
        dispatches; a sync pattern -> the host row; other findings -> their pane."""
        if not self.need("timeline"):
            self.notify(f"timeline: {COMPUTING} press Enter again when it is shown", timeout=3)
            return
        kind, target = finding_evidence(self.view, finding)
        timeline = self.query_one("#timeline-view", Timeline)
        if kind == "gap":
            self.action_tab("timeline")
            timeline.gap_index = int(target)
            lane, start, end = timeline.current_gap
            timeline.call_after_refresh(timeline.centre_on, start, end, lane if lane >= 0 else None)
        elif kind in ("host", "copy"):
            self.action_tab("timeline")
            lane = self.view.timeline.lanes[int(target)]
            if kind == "host":
                start, end = host_window(self.view, int(target))
            else:
                i = int((lane.end - lane.start).argmax())
                start, end = int(lane.start[i]), int(lane.end[i])
            timeline.call_after_refresh(timeline.centre_on, start, end, int(target))
        elif kind == "kernel":
            self.app.push_screen(DispatchesScreen(self.view, "name", str(target)))
        elif kind == "tab":
            self.action_tab(str(target))
        else:
            self.notify(f"{finding['code']}: {target}", severity="information")

    def _issues(self) -> Table | str:
        runset = self.view.runset
        missing = self.view.missing
        if not runset.issues and not missing and not (self.view.summary or {}).get("logs"):
            return "Every file loaded; no issues."
        table = Table(expand=True, show_edge=False)
        table.add_column("file / feature", overflow="fold")
        table.add_column("status")
        table.add_column("message", overflow="fold")
        for issue in runset.issues:
            table.add_row(issue.path, issue.severity, issue.message)
        for what in missing:
            table.add_row(what, "missing", "not available yet in this build")
        for hit in (self.view.summary or {}).get("logs") or []:
            table.add_row(f"{hit['path']}:{hit['line']}", hit["code"], f"{hit['text']}\n→ {hit['meaning']}")
        return table

    def _hardware(self) -> Table | str:
        """Agents as columns, fields as rows (fits 80 columns for a few agents)."""
        runset = self.view.runset
        agents = [(run.meta.label or f"{run.meta.hostname}/{run.meta.pid}", a) for run in runset.runs for a in run.agents]
        if not agents:
            return "No agent information in this run (the format does not record it)."
        table = Table(expand=True, show_edge=False, title="Agents", title_justify="left")
        table.add_column("", style="bold", no_wrap=True)
        multi = len(runset.runs) > 1
        for label, a in agents:
            table.add_column(f"{label}:{a.id}" if multi else f"agent {a.id}", overflow="fold")
        fields = [
            ("type", lambda a: a.type),
            ("arch", lambda a: a.arch or "-"),
            ("product", lambda a: a.product or "-"),
            ("CUs", lambda a: _opt(a.cu_count)),
            ("SIMD/CU", lambda a: _opt(a.simd_per_cu)),
            ("wave size", lambda a: _opt(a.wave_size)),
            ("waves/SIMD", lambda a: _opt(a.max_waves_per_simd)),
            ("LDS/CU", lambda a: fmt_bytes(a.lds_bytes_per_cu) if a.lds_bytes_per_cu else "-"),
            ("XCC", lambda a: _opt(a.num_xcc)),
            ("max MHz", lambda a: _opt(a.max_clock_mhz)),
            ("memory", lambda a: fmt_bytes(a.memory_bytes) if a.memory_bytes else "-"),
        ]
        for title, get in fields:
            table.add_row(title, *(get(a) for _, a in agents))
        return table

    # -- hotspots ---------------------------------------------------------------------
    def fill_hotspots(self) -> None:
        table = self.query_one("#hotspot-table", TableView)
        frame = self.view.hotspots(self.group)
        pattern = table.model.pattern if table.model else ""
        sort = (table.model.sort_key, table.model.descending) if table.model and table.model.sort_key else ("total_ns", True)
        HOTSPOT_COLUMNS[0].title = self.group
        table.set_data(frame, text_key="name", sort=sort)
        if pattern:
            table.apply_filter(pattern)
        self.update_hot_status()

    def update_hot_status(self) -> None:
        table = self.query_one("#hotspot-table", TableView)
        model = table.model
        if model is None:
            return
        sort = f"{model.sort_key} {'↓' if model.descending else '↑'}" if model.sort_key else "none"
        text = f"by {self.group} · {len(model)}/{len(model.frame)} rows · sort {sort}"
        if model.pattern:
            text += f" · filter /{model.pattern}/"
        self.query_one("#hot-status", Static).update(Text(text, no_wrap=True, overflow="ellipsis"))

    def action_filter(self) -> None:
        if self.query_one("#tabs", TabbedContent).active != "hotspots":
            self.action_tab("hotspots")
        box = self.query_one("#filter", Input)
        table = self.query_one("#hotspot-table", TableView)
        box.value = table.model.pattern if table.model else ""
        box.display = True
        box.focus()

    @on(Input.Submitted, "#filter")
    def apply_filter(self, event: Input.Submitted) -> None:
        table = self.query_one("#hotspot-table", TableView)
        try:
            table.apply_filter(event.value)
        except re.error as err:
            self.notify(f"bad regex: {err}", severity="error")
            return
        event.input.display = False
        table.focus()
        self.update_hot_status()

    def on_key(self, event) -> None:
        box = self.query_one("#filter", Input)
        if event.key == "escape" and box.has_focus:
            box.display = False
            self.query_one("#hotspot-table", TableView).focus()
            event.stop()

    def action_clear_filter(self) -> None:
        table = self.query_one("#hotspot-table", TableView)
        if table.model and table.model.pattern:
            table.apply_filter("")
            self.update_hot_status()

    def action_group(self) -> None:
        """Next grouping (b): name → normalised name → category → agent → process."""
        if self.view is None:
            return
        current = self.pending_group or self.group
        self.action_group_by(GROUPS[(GROUPS.index(current) + 1) % len(GROUPS)])

    def action_group_by(self, group: str) -> None:
        """Group the hotspot table by ``group`` (analysis.hotspots grouping, computed in a
        thread worker the first time: a million-row grouping must not block the keys)."""
        if self.view is None or group not in GROUPS:
            return
        self.action_tab("hotspots")
        if group in self.view._hotspots:
            self.show_group(group)
            return
        self.pending_group = group
        self.query_one("#hot-status", Static).update(Text(f"grouping by {group}: {COMPUTING}", "dim italic"))
        self.group_worker(self.view, group)

    @work(thread=True, group="grouping", exclusive=True, exit_on_error=False)
    def group_worker(self, view: RunView, group: str) -> None:
        ok = view.group_column(group) is not None
        if ok:
            view.hotspots(group)
        self.app.call_from_thread(self.show_group if ok else self.group_missing, group)

    def group_missing(self, group: str) -> None:
        self.pending_group = None
        self.update_hot_status()
        self.notify(f"grouping by {group} is not available in this build", severity="warning")

    def show_group(self, group: str) -> None:
        if self.pending_group not in (None, group):
            return  # a later key asked for another grouping
        self.pending_group = None
        self.group = group
        self.fill_hotspots()
        self.update_counters()
        self.notify(f"grouped by {self.group}", timeout=2)

    def on_table_view_highlighted(self, event: TableView.Highlighted) -> None:
        self.kernel_cycle = 0
        if event.table.id == "hotspot-table":
            self.update_hot_status()
            self.update_counters()
        elif event.table.id == "findings-table":
            self.show_finding()

    def on_table_view_selected(self, event: TableView.Selected) -> None:
        if event.table.id == "hotspot-table":
            self.app.push_screen(DispatchesScreen(self.view, self.group, str(event.row["name"])))
        elif event.table.id == "findings-table":
            finding = self.current_finding()
            if finding is not None:
                self.goto_evidence(finding)

    # -- timeline ---------------------------------------------------------------------
    def action_tab(self, tab: str) -> None:
        tabs = self.query_one("#tabs", TabbedContent)
        if not tabs.display:
            return
        tabs.active = tab
        focus = FOCUS.get(tab)
        if focus:
            self.query_one(focus).focus()

    def action_goto_kernel(self) -> None:
        self.action_tab("timeline")
        if self.need("timeline"):
            self.centre_selected(self.query_one("#timeline-view", Timeline))

    def centre_selected(self, timeline: Timeline) -> None:
        """Centre the timeline on the next dispatch of the hotspot row under the cursor."""
        row = self.query_one("#hotspot-table", TableView).current_row
        if self.view is None or row is None or timeline.model is None:
            return
        rows = self.view.dispatches(self.group, str(row["name"]))
        if not len(rows):
            return
        pick = rows.iloc[self.kernel_cycle % len(rows)]
        self.kernel_cycle += 1
        start = int(pick["t"])
        end = start + int(pick["dur"])
        timeline.marker = (int(pick["lane"]), start, end)
        timeline.centre_on(start, end, int(pick["lane"]))
        self.notify(f"{row['name']}: dispatch {self.kernel_cycle % len(rows) or len(rows)}/{len(rows)}", timeout=2)

    def on_timeline_centre_requested(self, event: Timeline.CentreRequested) -> None:
        self.centre_selected(event.timeline)

    def on_timeline_view_changed(self, event: Timeline.ViewChanged) -> None:
        if event.timeline.id == "timeline-view":
            self.query_one("#tl-status", Static).update(Text(event.timeline.status_text(), no_wrap=True, overflow="ellipsis"))

    def on_timeline_gap_opened(self, event: Timeline.GapOpened) -> None:
        if self.view is not None and self.view.gaps is not None:
            self.app.push_screen(GapScreen(self.view, event.gap_index))

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.refresh_bindings()
        part = TAB_PART.get(event.pane.id or "")
        if part:
            self.need(part)  # first shown: compute now if the background worker has not yet
        focus = FOCUS.get(event.pane.id or "")
        if focus:
            self.query_one(focus).focus()


def _opt(value) -> str:
    return "-" if value is None else str(value)


class TuiProfApp(App):
    """tuiprof: explore a profiler run from the terminal."""

    CSS_PATH = "tuiprof.tcss"
    TITLE = "tuiprof"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("question_mark,f1", "help", "Help", id="app.help"),
    ]

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
        self._asked: set[str] = set()
        self.main = MainScreen()

    def on_mount(self) -> None:
        use_daemon_threads()  # quitting never waits for a load or an analysis
        self.push_screen(self.main)
        self.load()

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def load(self) -> None:
        def progress(stage: str, done: int, total: int) -> None:
            self.post_message(LoadProgress(stage, done, total))

        try:
            runset = load_runset(self.source, self.source_name, use_cache=self.use_cache, progress=progress)
            self.post_message(Loaded(build_view(runset, progress, lazy=True)))
        except Exception as err:  # shown in the app, never as a traceback
            self.post_message(LoadFailed(load_failure(err, self.source_name)))

    def on_load_progress(self, message: LoadProgress) -> None:
        self.main.show_progress(message.stage, message.done, message.total)

    def on_loaded(self, message: Loaded) -> None:
        self.view = message.view
        self.main.show_view(message.view)
        if self.background:
            self.main.call_after_refresh(self.compute_rest, message.view)

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
        self.main.fill_part(message.part, message.error)

    def on_load_failed(self, message: LoadFailed) -> None:
        self.main.show_failure(message.text)

    def _evidence(self) -> None:
        finding = self.main.current_finding() if self.main.view else None
        if finding is not None:
            self.main.goto_evidence(finding)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen):
        yield from super().get_system_commands(screen)
        main = self.main

        def timeline_action(name: str, *args):
            def run() -> None:
                main.action_tab("timeline")
                getattr(main.query_one("#timeline-view", Timeline), f"action_{name}")(*args)

            return run

        yield SystemCommand("Hotspots", "Show the hotspot table (1)", lambda: main.action_tab("hotspots"))
        yield SystemCommand("Timeline", "Show the timeline (2)", lambda: main.action_tab("timeline"))
        yield SystemCommand("Hardware", "Show the agents (3)", lambda: main.action_tab("hardware"))
        yield SystemCommand("Findings", "Show the findings (4)", lambda: main.action_tab("findings"))
        yield SystemCommand("Counters", "Show counters of the selected kernel (5)", lambda: main.action_tab("counters"))
        yield SystemCommand("Load issues", "Files that could not be loaded (6)", lambda: main.action_tab("issues"))
        yield SystemCommand("Filter hotspots", "Regex filter on names (/)", main.action_filter)
        yield SystemCommand("Group hotspots by next key", "name / normalised name / category / agent / process (b)", main.action_group)
        for group in ("name", "normalised name", "category", "agent", "process"):
            yield SystemCommand(f"Group hotspots by {group}", "analysis.hotspots grouping (b cycles)", lambda g=group: main.action_group_by(g))
        yield SystemCommand("Evidence of the selected finding", "Findings pane: gap, kernel or host row (Enter)", self._evidence)
        yield SystemCommand("Counter formulas", "Formula, source and threshold of each metric (x on the counters pane)", main.action_explain)
        yield SystemCommand("Selected kernel on timeline", "Centre the timeline on its next dispatch (t)", main.action_goto_kernel)
        yield SystemCommand("Zoom in", "Timeline zoom in (w + =)", timeline_action("zoom", 0.5))
        yield SystemCommand("Zoom out", "Timeline zoom out (s -)", timeline_action("zoom", 2.0))
        yield SystemCommand("Fit", "Whole run on the timeline (f 0)", timeline_action("fit"))
        yield SystemCommand("Next gap", "Jump to the next idle gap (n ])", timeline_action("gap", 1))
        yield SystemCommand("Previous gap", "Jump to the previous idle gap (N [)", timeline_action("gap", -1))
        yield SystemCommand("Keys", "Every key binding (?)", self.action_help)


__all__ = ["TuiProfApp", "MainScreen", "bundled_sample", "fmt_ns"]
