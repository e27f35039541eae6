"""Hotspots pane: the measurement table line, the hotspot table, its status and filter box.

Grouping (``b``) runs analysis.hotspots in a thread worker the first time a grouping is
shown; the pane shows "computing…" in its status line meanwhile.
"""

from __future__ import annotations

import re

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.events import Key
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from tui_prof.render.fmt import fmt_ns
from tui_prof.tui.messages import DispatchesRequested, KernelSelected, TimelineRequested
from tui_prof.tui.panes import COMPUTING
from tui_prof.tui.safe import plain
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.widgets.table import Column, TableView

HOTSPOT_COLUMNS = (
    Column("name", "name", 60, "text"),
    Column("total_ns", "total", 9, "ns"),
    Column("percent", "%", 6, "pct"),
    Column("calls", "calls", 7),
    Column("avg_ns", "avg", 9, "ns"),
    Column("median_ns", "median", 9, "ns"),
    Column("min_ns", "min", 9, "ns"),
    Column("max_ns", "max", 9, "ns"),
    Column("stddev_ns", "stddev", 9, "ns"),
)


def measurement_text(doc: dict | None) -> Text:
    """The measurement table (``doc["measurement"]`` of analysis.summary) as one wrapped line.

    span = wall time; GEMM = GEMM share of kernel time; sync = sync + blocking-copy calls
    as % of wall (target < 5 %); launch = launch API time as % of wall, queue = median
    queue delay; idle = GPU idle % of its span; copy = copy-engine busy % of wall.
    """
    text = plain()
    if not doc or "measurement" not in doc:
        text.append("measurement table: not available (analysis.summary)", "dim")
        return text
    m = doc["measurement"]

    def item(label: str, value: str, bad: bool = False) -> None:
        if len(text):
            text.append(" · ", "dim")
        text.append(f"{label} ", "dim")
        text.append(value, "bold red" if bad else "bold")

    item("span", fmt_ns(m["span_ns"]))
    item("kernels", f"{m['kernel_count']:,}")
    item("GEMM", f"{m['gemm_pct_of_kernel_time']:.1f}%")
    item(
        "sync",
        f"{m['sync_pct_of_wall']:.1f}% (>{m['sync_target_pct']:g}%)" if m["sync_pct_of_wall"] > m["sync_target_pct"] else f"{m['sync_pct_of_wall']:.1f}%",
        m["sync_pct_of_wall"] > m["sync_target_pct"],
    )
    queue = m.get("median_queue_delay_ns")
    item("launch", f"{m['launch_api_pct_of_wall']:.1f}%" + (f" (queue {fmt_ns(queue)})" if queue is not None else ""))
    item("idle", f"{m['idle_pct']:.1f}%")
    item("copy", f"{m['copy_pct_of_wall']:.1f}%")
    return text


def next_group(groups: tuple[str, ...], current: str) -> str:
    """The grouping after ``current`` in ``groups`` (the first when ``current`` is not one)."""
    return groups[(groups.index(current) + 1) % len(groups)] if current in groups else groups[0]


class HotspotsPane(Vertical):
    """Tab 1. Posts :class:`KernelSelected` when the row under the cursor changes,
    :class:`DispatchesRequested` on Enter and :class:`TimelineRequested` on ``t``."""

    DEFAULT_CSS = "HotspotsPane { height: 1fr; }"
    BINDINGS = [
        Binding("slash", "filter", "Filter", id="hotspots.filter"),
        Binding("b", "group", "Group by", id="hotspots.group"),
        Binding("t", "goto_kernel", "Kernel on timeline", id="hotspots.timeline"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="hotspots.clear"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: RunView | None = None
        self.group = "name"
        self.pending_group: str | None = None  # grouping being computed in a worker

    def compose(self) -> ComposeResult:
        yield Static("", id="measure")
        yield Static("", id="hot-status", classes="status")
        yield TableView(list(HOTSPOT_COLUMNS), id="hotspot-table")
        yield Input(placeholder="regex filter on names (Enter: apply, Esc: cancel)", id="filter")

    def on_mount(self) -> None:
        self.query_one("#filter").display = False

    @property
    def table(self) -> TableView:
        return self.query_one("#hotspot-table", TableView)

    # -- data from the screen -------------------------------------------------------------
    def set_view(self, view: RunView) -> None:
        """The first screen: the name hotspots (computed by build_view); measurement pending."""
        self.view = view
        self.query_one("#measure", Static).update(plain(f"measurement table: {COMPUTING}", "dim italic"))
        self.fill()
        self.table.focus()

    def set_summary(self, doc: dict | None) -> None:
        self.query_one("#measure", Static).update(measurement_text(doc))

    def part_failed(self, text: Text) -> None:
        self.query_one("#measure", Static).update(text)

    @property
    def selection(self) -> tuple[str, str | None]:
        """(grouping, value of the row under the cursor or None)."""
        row = self.table.current_row
        return self.group, (str(row["name"]) if row is not None else None)

    # -- table ------------------------------------------------------------------------------
    def fill(self) -> None:
        table = self.table
        frame = self.view.hotspots(self.group)
        pattern = table.model.pattern if table.model else ""
        sort = (table.model.sort_key, table.model.descending) if table.model and table.model.sort_key else ("total_ns", True)
        table.columns[0].title = self.group
        table.set_data(frame, text_key="name", sort=sort)
        if pattern:
            table.apply_filter(pattern)
        self.update_status()

    def update_status(self) -> None:
        model = self.table.model
        if model is None:
            return
        sort = f"{model.sort_key} {'↓' if model.descending else '↑'}" if model.sort_key else "none"
        text = f"by {self.group} · {len(model)}/{len(model.frame)} rows · sort {sort}"
        if model.pattern:
            text += f" · filter /{model.pattern}/"
        self.query_one("#hot-status", Static).update(plain(text, no_wrap=True, overflow="ellipsis"))

    def _post_selection(self) -> None:
        self.post_message(KernelSelected(*self.selection))

    @on(TableView.Highlighted, "#hotspot-table")
    def _highlighted(self, event: TableView.Highlighted) -> None:
        self.update_status()
        self._post_selection()

    @on(TableView.Selected, "#hotspot-table")
    def _selected(self, event: TableView.Selected) -> None:
        event.stop()
        self.post_message(DispatchesRequested(self.group, str(event.row["name"])))

    def action_goto_kernel(self) -> None:
        self.post_message(TimelineRequested())

    # -- filter -------------------------------------------------------------------------------
    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = self.table.model.pattern if self.table.model else ""
        box.display = True
        box.focus()

    @on(Input.Submitted, "#filter")
    def _apply_filter(self, event: Input.Submitted) -> None:
        try:
            self.table.apply_filter(event.value)
        except re.error as err:
            self.notify(f"bad regex: {err}", severity="error", markup=False)
            return
        event.input.display = False
        self.table.focus()
        self.update_status()

    def on_key(self, event: Key) -> None:
        box = self.query_one("#filter", Input)
        if event.key == "escape" and box.has_focus:
            box.display = False
            self.table.focus()
            event.stop()

    def action_clear_filter(self) -> None:
        table = self.table
        if table.model and table.model.pattern:
            table.apply_filter("")
            self.update_status()

    # -- grouping ----------------------------------------------------------------------------
    def action_group(self) -> None:
        """Next grouping (b): name → normalised name → category → operator → module → agent
        → process (operator and module where the run records them: RunView.groups)."""
        if self.view is None:
            return
        self.group_by(next_group(self.view.groups, self.pending_group or self.group))

    def group_by(self, group: str) -> None:
        """Group the table by ``group`` (analysis.hotspots grouping, computed in a thread
        worker the first time: a million-row grouping must not block the keys)."""
        if self.view is None or group not in self.view.groups:
            return
        if self.view.has_hotspots(group):
            self.show_group(group)
            return
        self.pending_group = group
        self.query_one("#hot-status", Static).update(plain(f"grouping by {group}: {COMPUTING}", "dim italic"))
        self._group_worker(self.view, group)

    @work(thread=True, group="grouping", exclusive=True, exit_on_error=False)
    def _group_worker(self, view: RunView, group: str) -> None:
        view.group_column(group)
        if not get_current_worker().is_cancelled:
            view.hotspots(group)
            self.app.call_from_thread(self.show_group, group)

    def show_group(self, group: str) -> None:
        if self.pending_group not in (None, group):
            return  # a later key asked for another grouping
        self.pending_group = None
        self.group = group
        self.fill()  # the table posts Highlighted: the selection goes up from there
        self.notify(f"grouped by {self.group}", timeout=2)
