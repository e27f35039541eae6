"""``tuiprof open RUN``: the Textual app.

The app shows its screen at once and loads the run in a thread worker
(``load_path`` then :func:`tui_prof.tui.runview.build_view`), posting coalesced
progress messages. Per-file load errors go to the Issues tab; a run that cannot be
loaded at all shows the reason in place of the panes — never a traceback.
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
from tui_prof.tui.fmt import fmt_bytes, fmt_ns
from tui_prof.tui.runview import RunView, build_view
from tui_prof.tui.screens import DispatchesScreen, GapScreen, HelpScreen
from tui_prof.tui.widgets.table import Column, TableView
from tui_prof.tui.widgets.timeline import Timeline

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


class LoadFailed(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class MainScreen(Screen):
    """Tabs: hotspots, timeline, hardware, findings, counters, load issues."""

    BINDINGS = [
        Binding("1", "tab('hotspots')", "Hotspots", id="tab.hotspots"),
        Binding("2", "tab('timeline')", "Timeline", id="tab.timeline"),
        Binding("3", "tab('hardware')", "Hardware", id="tab.hardware"),
        Binding("4", "tab('findings')", "Findings", show=False, id="tab.findings"),
        Binding("5", "tab('counters')", "Counters", show=False, id="tab.counters"),
        Binding("6", "tab('issues')", "Issues", show=False, id="tab.issues"),
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

    def compose(self) -> ComposeResult:
        yield Static("tuiprof", id="title", classes="title")
        with Vertical(id="loading"):
            yield Label("Loading…", id="load-status")
            yield ProgressBar(id="load-progress", show_eta=False)
        with TabbedContent(id="tabs", initial="hotspots"):
            with TabPane("1 Hotspots", id="hotspots"):
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
            with TabPane("4 Findings", id="findings"):
                with VerticalScroll():
                    yield Static("", id="findings-body")
            with TabPane("5 Counters", id="counters"):
                with VerticalScroll():
                    yield Static("", id="counters-body")
            with TabPane("6 Issues", id="issues"):
                with VerticalScroll():
                    yield Static("", id="issues-body")
        yield Footer()

    @staticmethod
    def _legend() -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("█", "bright_green")
        text.append(" busy ")
        text.append("▃", "yellow")
        text.append(" <90% busy ")
        text.append("░", "red")
        text.append(" idle ")
        text.append("▓", "bright_magenta")
        text.append(" sync ")
        text.append("▚", "bright_magenta")
        text.append(" sync+launch ")
        text.append("▆", "blue")
        text.append(" host API")
        return text

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
        self.view = view
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
        timeline = self.query_one("#timeline-view", Timeline)
        timeline.set_model(view.timeline)
        self.query_one("#hardware-body", Static).update(self._hardware())
        self.query_one("#findings-body", Static).update(self._not_available("Findings", "analysis.findings"))
        self.query_one("#counters-body", Static).update(self._not_available("Counters / derived metrics", "analysis.counters"))
        self.query_one("#issues-body", Static).update(self._issues())
        self.query_one("#hotspot-table", TableView).focus()
        if errors:
            self.notify(f"{errors} file(s) could not be loaded — see tab 6", severity="warning")

    @staticmethod
    def _not_available(what: str, module: str) -> str:
        return f"{what}: not available yet ({module} is not part of this build)."

    def _issues(self) -> Table | str:
        runset = self.view.runset
        missing = self.view.missing
        if not runset.issues and not missing:
            return "Every file loaded; no issues."
        table = Table(expand=True, show_edge=False)
        table.add_column("file / feature", overflow="fold")
        table.add_column("status")
        table.add_column("message", overflow="fold")
        for issue in runset.issues:
            table.add_row(issue.path, issue.severity, issue.message)
        for what in missing:
            table.add_row(what, "missing", "not available yet in this build")
        return table

    def _hardware(self) -> Table | str:
        runset = self.view.runset
        table = Table(expand=True, show_edge=False, title="Agents")
        for col in ("process", "id", "type", "arch", "product", "CUs", "SIMD/CU", "wave", "waves/SIMD", "LDS/CU", "XCC", "MHz", "memory"):
            table.add_column(col, no_wrap=col != "product", overflow="ellipsis")
        any_agent = False
        for run in runset.runs:
            label = run.meta.label or f"{run.meta.hostname}/{run.meta.pid}"
            for a in run.agents:
                any_agent = True
                table.add_row(
                    label,
                    str(a.id),
                    a.type,
                    a.arch or "-",
                    a.product or "-",
                    _opt(a.cu_count),
                    _opt(a.simd_per_cu),
                    _opt(a.wave_size),
                    _opt(a.max_waves_per_simd),
                    fmt_bytes(a.lds_bytes_per_cu) if a.lds_bytes_per_cu else "-",
                    _opt(a.num_xcc),
                    _opt(a.max_clock_mhz),
                    fmt_bytes(a.memory_bytes) if a.memory_bytes else "-",
                )
        if not any_agent:
            return "No agent information in this run (the format does not record it)."
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
        if self.view is None:
            return
        groups = self.view.groups
        self.group = groups[(groups.index(self.group) + 1) % len(groups)]
        self.fill_hotspots()
        self.notify(f"grouped by {self.group}", timeout=2)

    def on_table_view_highlighted(self, event: TableView.Highlighted) -> None:
        self.kernel_cycle = 0
        if event.table.id == "hotspot-table":
            self.update_hot_status()

    def on_table_view_selected(self, event: TableView.Selected) -> None:
        if event.table.id == "hotspot-table":
            self.app.push_screen(DispatchesScreen(self.view, self.group, str(event.row["name"])))

    # -- timeline ---------------------------------------------------------------------
    def action_tab(self, tab: str) -> None:
        tabs = self.query_one("#tabs", TabbedContent)
        if not tabs.display:
            return
        tabs.active = tab
        focus = {"hotspots": "#hotspot-table", "timeline": "#timeline-view"}.get(tab)
        if focus:
            self.query_one(focus).focus()

    def action_goto_kernel(self) -> None:
        self.action_tab("timeline")
        self.centre_selected(self.query_one("#timeline-view", Timeline))

    def centre_selected(self, timeline: Timeline) -> None:
        """Centre the timeline on the next dispatch of the hotspot row under the cursor."""
        row = self.query_one("#hotspot-table", TableView).current_row
        if self.view is None or row is None:
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
        focus = {"hotspots": "#hotspot-table", "timeline": "#timeline-view"}.get(event.pane.id or "")
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

    def __init__(self, source: str | Path | RunSet, **kwargs) -> None:
        super().__init__(**kwargs)
        self.source = source
        self.source_name = source.name if isinstance(source, RunSet) else Path(source).name
        self.view: RunView | None = None
        self.main = MainScreen()

    def on_mount(self) -> None:
        self.push_screen(self.main)
        self.load()

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def load(self) -> None:
        def progress(stage: str, done: int, total: int) -> None:
            self.post_message(LoadProgress(stage, done, total))

        try:
            if isinstance(self.source, RunSet):
                runset = self.source
            else:
                from tui_prof.loaders import load_path

                if not Path(self.source).exists():
                    self.post_message(LoadFailed(f"{self.source}: no such file or directory"))
                    return
                runset = load_path(self.source, progress=progress)
            if not runset.runs:
                lines = [f"Nothing could be loaded from {self.source_name}."]
                lines += [f"  {issue}" for issue in runset.issues[:20]]
                self.post_message(LoadFailed("\n".join(lines)))
                return
            self.post_message(Loaded(build_view(runset, progress)))
        except Exception as err:  # shown in the app, never as a traceback
            self.post_message(LoadFailed(f"Could not load {self.source_name}: {type(err).__name__}: {err}"))

    def on_load_progress(self, message: LoadProgress) -> None:
        self.main.show_progress(message.stage, message.done, message.total)

    def on_loaded(self, message: Loaded) -> None:
        self.view = message.view
        self.main.show_view(message.view)

    def on_load_failed(self, message: LoadFailed) -> None:
        self.main.show_failure(message.text)

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
        yield SystemCommand("Selected kernel on timeline", "Centre the timeline on its next dispatch (t)", main.action_goto_kernel)
        yield SystemCommand("Zoom in", "Timeline zoom in (w + =)", timeline_action("zoom", 0.5))
        yield SystemCommand("Zoom out", "Timeline zoom out (s -)", timeline_action("zoom", 2.0))
        yield SystemCommand("Fit", "Whole run on the timeline (f 0)", timeline_action("fit"))
        yield SystemCommand("Next gap", "Jump to the next idle gap (n ])", timeline_action("gap", 1))
        yield SystemCommand("Previous gap", "Jump to the previous idle gap (N [)", timeline_action("gap", -1))
        yield SystemCommand("Keys", "Every key binding (?)", self.action_help)


__all__ = ["TuiProfApp", "MainScreen", "bundled_sample", "fmt_ns"]
