"""Hotspots pane: the measurement table line, the hotspot table, its status and filter box;
the profiler's statistics tables in the same table (``v``).

Grouping (``b``) runs analysis.hotspots in a thread worker the first time a grouping is
shown; the pane shows "computing…" in its status line meanwhile.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.events import Key
from textual.widgets import Input, Static
from textual.worker import get_current_worker

from tui_prof.analysis.api import KERNEL_STATS, Summary
from tui_prof.analysis.api import source_label as stats_source
from tui_prof.render.fmt import fmt_ns, fmt_pct
from tui_prof.render.safe import safe_text
from tui_prof.tui.messages import DispatchesRequested, KernelSelected, TimelineRequested, WhatIfRequested
from tui_prof.tui.pane import Pane
from tui_prof.tui.safe import plain
from tui_prof.tui.view.integrity import HOTSPOT_TRUST, INTEGRITY_KEY, trust_note
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.view.stats import StatsFrame
from tui_prof.tui.view.whatif import hotspot_target
from tui_prof.tui.widgets.table import Column, TableModel, TableView
from tui_prof.tui.workers import COMPUTING, deliver, thread_worker

HOTSPOT_COLUMNS = (
    Column("name", "name", 60, "text"),
    Column("total_ns", "total", 9, "ns"),
    Column("percent", "%", 6, "pct"),
    Column("critical_ns", "critical", 9, "ns"),
    Column("calls", "calls", 7),
    Column("avg_ns", "avg", 9, "ns"),
    Column("median_ns", "median", 9, "ns"),
    Column("min_ns", "min", 9, "ns"),
    Column("max_ns", "max", 9, "ns"),
    Column("stddev_ns", "stddev", 9, "ns"),
)

# the profiler's statistics tables, shown in place of the hotspots (v; data: tui_prof.tui.view.stats)
STATS_COLUMNS = (
    Column("name", "name", 60, "text"),
    Column("total_ns", "total", 9, "ns"),
    Column("percent", "%", 7, "pct"),
    Column("calls", "calls", 7),
    Column("avg_ns", "avg", 9, "ns"),
    Column("min_ns", "min", 9, "ns"),
    Column("max_ns", "max", 9, "ns"),
    Column("stddev_ns", "stddev", 9, "ns"),
)


def stats_status(table: StatsFrame, model: TableModel, source: str, others: int) -> str:
    """The status line of a statistics table: which table, rows, sort, what % means, the
    key to the next table, where it came from."""
    sort = f"{model.sort_key} {'↓' if model.descending else '↑'}" if model.sort_key else "none"
    pct = "%: the profiler's Percentage" if table.processes == 1 else f"%: of {table.processes} processes' total"
    text = f"{table.key} · {len(model)}/{len(model.frame)} rows · sort {sort} · {pct}"
    if model.pattern:
        text += f" · filter /{model.pattern}/"
    if others:
        text += f" · v: next of {others + 1} tables"
    return f"{text} · {source}"


def fmt_percent(value) -> str:
    """The profiler's Percentage as it writes it (two decimals)."""
    return fmt_pct(value, 2)


def stats_measurement_text(doc: Summary) -> Text:
    """The measurement line of a run without a trace: what the statistics give (kernel
    calls and time, GEMM share, copy time) and that the rest needs a trace."""
    text = plain()
    kernels = doc["kernels"]

    def item(label: str, value: str) -> None:
        if len(text):
            text.append(" · ", "dim")
        text.append(f"{label} ", "dim")
        text.append(value, "bold")

    if kernels["dispatches"]:
        item("kernels", f"{kernels['dispatches']:,}")
        item("kernel time", fmt_ns(kernels["total_ns"]))
        ktime = kernels["total_ns"]
        gemm = doc.get("categories", {}).get("GEMM", 0)
        item("GEMM", fmt_pct(100.0 * gemm / ktime) if ktime else "-")
    copies = next((t for t in doc["stats"]["tables"] if t["key"] == "memory_copy_stats"), None)
    if copies is not None:
        item("copies", f"{copies['calls']:,} ({fmt_ns(copies['total_ns'])})")
    if len(text):
        text.append(" · ", "dim")
    text.append(f"{doc['stats']['source']}: span, sync, launch and idle need a trace (tab 2: how to record one)", "dim italic")
    return text


NO_DISPATCHES = "statistics only: no dispatches to show (record them with rocprofv3 --kernel-trace)"


def measurement_text(doc: Summary | None) -> Text:
    """The measurement table (``doc["measurement"]`` of analysis.summary) as one wrapped line.

    span = wall time; GEMM = GEMM share of kernel time; exposed sync = the part of the
    sync + blocking-copy call time in which the GPU had no work left, as % of wall (target
    < 5%; docs/metrics.md), with the raw share of those calls when it differs; launch = launch API time as % of wall, queue = median
    queue delay; idle = GPU idle % of its span; copy = copy-engine busy % of wall.
    """
    text = plain()
    if not doc or "measurement" not in doc:
        text.append("measurement table: not available (analysis.summary)", "dim")
        return text
    if doc.get("stats", {}).get("needs_trace"):  # statistics only: no span, sync or idle to show
        return stats_measurement_text(doc)
    m = doc["measurement"]

    def item(label: str, value: str, bad: bool = False) -> None:
        if len(text):
            text.append(" · ", "dim")
        text.append(f"{label} ", "dim")
        text.append(value, "bold red" if bad else "bold")

    item("span", fmt_ns(m["span_ns"]))
    item("kernels", f"{m['kernel_count']:,}")
    item("GEMM", fmt_pct(m["gemm_pct_of_kernel_time"]))
    raw, target = m["sync_pct_of_wall"], m["sync_target_pct"]
    exposed = m.get("exposed_sync_pct_of_wall")
    sync = raw if exposed is None else exposed
    value = fmt_pct(sync) + (f" (>{target:g}%)" if sync > target else "")
    if exposed is not None and fmt_pct(raw) != fmt_pct(exposed):
        value += f", raw {fmt_pct(raw)}"
    item("sync" if exposed is None else "exposed sync", value, sync > target)
    queue = m.get("median_queue_delay_ns")
    item("launch", fmt_pct(m["launch_api_pct_of_wall"]) + (f" (queue {fmt_ns(queue)})" if queue is not None else ""))
    item("idle", fmt_pct(m["idle_pct"]))
    item("copy", fmt_pct(m["copy_pct_of_wall"]))
    return text


def with_critical(
    frame: pd.DataFrame, group: str, critical: dict[str, int] | None, rows: np.ndarray | None = None, key: pd.Series | None = None
) -> pd.DataFrame:
    """The hotspot table with its ``critical_ns`` column: each group's time on the critical
    path of the summary's steady-state window (analysis.critical; 0: never on it; at most the
    row's own total, as the summary's hotspots cap it). By name from ``critical`` (ns per
    kernel name); another grouping from ``rows`` (ns per kernel row) summed by ``key`` (the
    grouping's key of each kernel row). NaN, shown ``-``: the summary not computed yet."""
    total = frame["total_ns"].to_numpy().astype(np.float64)
    names = frame["name"].astype(str).to_numpy()
    if critical is not None and group == "name":
        on_path = np.array([critical.get(n, 0) for n in names], dtype=np.float64)
    elif rows is not None and key is not None and len(key) == len(rows):
        sums = pd.Series(rows).groupby(key.astype(str).to_numpy(), sort=False).sum()
        on_path = np.round(sums.reindex(names).fillna(0.0).to_numpy(dtype=np.float64))
    else:
        return frame.assign(critical_ns=np.full(len(frame), np.nan))
    return frame.assign(critical_ns=np.minimum(on_path, total))


def next_group(groups: tuple[str, ...], current: str) -> str:
    """The grouping after ``current`` in ``groups`` (the first when ``current`` is not one)."""
    return groups[(groups.index(current) + 1) % len(groups)] if current in groups else groups[0]


class HotspotsPane(Pane, Vertical):
    """Tab 1: the hotspot table (from the first screen) and the summary's measurement line.
    Posts :class:`KernelSelected` when the row under the cursor changes,
    :class:`DispatchesRequested` on Enter and :class:`TimelineRequested` on ``t``."""

    TAB, TITLE, KEY, FOCUS, PIECE = "hotspots", "Hotspots", "1", "#hotspot-table", "summary"
    DEFAULT_CSS = "HotspotsPane { height: 1fr; }"
    BINDINGS = [
        Binding("slash", "filter", "Filter", id="hotspots.filter"),
        Binding("b", "group", "Group by", id="hotspots.group"),
        Binding("t", "goto_kernel", "Kernel on timeline", id="hotspots.timeline"),
        Binding("v", "stats_table", "Stats tables", id="hotspots.stats"),
        Binding("W", "what_if", "What-if", id="hotspots.whatif"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="hotspots.clear"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: RunView | None = None
        self.group = "name"
        self.pending_group: str | None = None  # grouping being computed in a worker
        self.stats_key: str | None = None  # the statistics table shown (tui.view.stats), None: the trace's hotspots

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

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """A run without a kernel trace has no dispatches to group or show on the timeline;
        a run without statistics files has no tables for ``v`` (hidden from the footer)."""
        if self.view is None:
            return True
        if action in ("group", "goto_kernel") and not len(self.view.kernels):
            return False
        return action != "stats_table" or bool(self.view.stats)

    # -- data from the screen -------------------------------------------------------------
    def set_view(self, view: RunView) -> None:
        """The first screen: the name hotspots (computed by build_view); measurement pending."""
        self.view = view
        self.query_one("#measure", Static).update(plain(f"measurement table: {COMPUTING}", "dim italic"))
        # no kernel trace: the profiler's statistics tables stand in (kernel_stats first)
        self.stats_key = view.stats[0].key if view.stats and not len(view.kernels) else None
        self.refresh_bindings()
        self.fill()
        self.table.focus()

    def prepare(self, view: RunView) -> Text:
        """The measurement line, with a trust mark when the integrity checks degrade its figures
        or the hotspots' (tui_prof.tui.view.integrity)."""
        text = measurement_text(view.summary)
        note = trust_note(view.summary.get("trust"), HOTSPOT_TRUST, INTEGRITY_KEY, compact=True)  # the title names the codes
        if note:
            text.append(" · ", "dim")
            text.append(note, "bold red" if note.startswith("⚠ unreliable") else "yellow")
        return text

    def show(self, prepared: Text) -> None:
        """The measurement line built by :func:`measurement_text`; the critical column filled."""
        self.query_one("#measure", Static).update(prepared)
        if self.stats_key is None and self.view is not None and len(self.view.kernels):
            table = self.table
            cursor, top, column = table.cursor, table.top, table.col_cursor
            self.fill()  # the same rows in the same order: the cursor stays where it was
            table.col_cursor = column
            table.show_row(cursor, cursor - top)

    def show_error(self, text: Text) -> None:
        """A grouping's failure in the status line (where it said "computing…"), else the summary's in the measurement line."""
        if self.pending_group is not None:
            self.pending_group = None
            self.query_one("#hot-status", Static).update(text)
        else:
            self.query_one("#measure", Static).update(text)

    @property
    def selection(self) -> tuple[str, str | None]:
        """(grouping, value of the row under the cursor or None)."""
        row = self.table.current_row
        return self.group, (str(row["name"]) if row is not None else None)

    # -- table ------------------------------------------------------------------------------
    def fill(self) -> None:
        assert self.view is not None  # filled from set_view on
        if self.stats_key is not None:
            self.fill_stats()
            return
        table = self.table
        if table.columns[1:] != list(HOTSPOT_COLUMNS[1:]):  # back from a statistics table
            self._set_columns(HOTSPOT_COLUMNS)
            table.formatters.pop("percent", None)
        rows = self.view.critical_rows() if self.group != "name" else None
        key = self.view.group_column(self.group) if rows is not None else None
        frame = with_critical(self.view.hotspots(self.group), self.group, self.view.critical_ns(), rows, key)
        pattern = table.model.pattern if table.model else ""
        sort = (table.model.sort_key, table.model.descending) if table.model and table.model.sort_key else ("total_ns", True)
        table.set_title(0, self.group)
        table.set_data(frame, text_key="name", sort=sort)
        if pattern:
            table.apply_filter(pattern)
        self.update_status()

    def update_status(self) -> None:
        model = self.table.model
        if model is None:
            return
        if self.stats_key is not None and self.view is not None:
            others = len(self.view.stats) - (0 if len(self.view.kernels) else 1)
            text = stats_status(self.current_stats, model, stats_source(self.view.runset), others)
            self.query_one("#hot-status", Static).update(plain(text, no_wrap=True, overflow="ellipsis"))
            return
        sort = f"{model.sort_key} {'↓' if model.descending else '↑'}" if model.sort_key else "none"
        text = f"by {self.group} · {len(model)}/{len(model.frame)} rows · sort {sort}"
        if model.pattern:
            text += f" · filter /{model.pattern}/"
        self.query_one("#hot-status", Static).update(plain(text, no_wrap=True, overflow="ellipsis"))

    def _post_selection(self) -> None:
        if self.stats_key in (None, KERNEL_STATS):  # API and copy tables name no kernel
            self.post_message(KernelSelected(*self.selection))

    @on(TableView.Highlighted, "#hotspot-table")
    def _highlighted(self, event: TableView.Highlighted) -> None:
        self.update_status()
        self._post_selection()

    @on(TableView.Selected, "#hotspot-table")
    def _selected(self, event: TableView.Selected) -> None:
        event.stop()
        if self.stats_key is not None:
            self.notify(NO_DISPATCHES, timeout=4, markup=False)
            return
        self.post_message(DispatchesRequested(self.group, str(event.row["name"])))

    def action_goto_kernel(self) -> None:
        if self.stats_key is not None:
            self.notify(NO_DISPATCHES, timeout=4, markup=False)
            return
        self.post_message(TimelineRequested())

    def action_what_if(self) -> None:
        """``W``: the what-if of the row under the cursor (its kernels at half their time)."""
        group, value = self.selection
        if self.stats_key is not None or value is None:
            self.notify(safe_text(NO_DISPATCHES if self.stats_key is not None else "no row under the cursor"), timeout=4, markup=False)
            return
        target = hotspot_target(group, value)
        if target is None:
            self.notify(safe_text(f"what-if: not by {group} (group by name, category or operator: b)"), timeout=4, markup=False)
            return
        self.post_message(WhatIfRequested(target))

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
            self.notify(safe_text(f"bad regex: {err}"), severity="error", markup=False)
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
        if self.stats_key is not None:
            if not len(self.view.kernels):
                self.notify(safe_text(f"grouping needs the kernel trace ({NO_DISPATCHES})"), timeout=4, markup=False)
                return
            self.stats_key = None  # back to the trace's hotspots, in the grouping shown last
            self.fill()
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

    def action_group_by(self, group: str) -> None:
        self.group_by(group)

    @thread_worker("grouping", group="grouping", exclusive=True)
    def _group_worker(self, view: RunView, group: str) -> None:
        view.group_column(group)
        if not get_current_worker().is_cancelled:
            view.hotspots(group)
            deliver(self, self.show_group, group)

    def show_group(self, group: str) -> None:
        if self.pending_group not in (None, group):
            return  # a later key asked for another grouping
        self.pending_group = None
        self.group = group
        self.fill()  # the table posts Highlighted: the selection goes up from there
        self.notify(safe_text(f"grouped by {self.group}"), timeout=2, markup=False)

    # -- the profiler's statistics tables (tui.view.stats) ------------------------------------
    @property
    def current_stats(self):
        """The statistics table shown (a :class:`~tui_prof.tui.view.stats.StatsFrame`)."""
        assert self.view is not None
        return next(f for f in self.view.stats if f.key == self.stats_key)

    def _set_columns(self, columns) -> None:
        table = self.table
        table.set_columns(list(columns))

    def fill_stats(self) -> None:
        table = self.table
        frame = self.current_stats
        self._set_columns(STATS_COLUMNS)
        table.set_title(0, f"{frame.key} ({frame.domain})")
        table.formatters["percent"] = fmt_percent
        table.set_data(frame.frame, text_key="name", sort=("total_ns", True))
        self.update_status()

    def action_stats_table(self) -> None:
        """Next statistics table (v): kernels, API domains, copies, domains; then the trace's
        hotspots when the run has a kernel trace."""
        if self.view is None:
            return
        keys: list[str | None] = [f.key for f in self.view.stats]
        if not keys:
            self.notify("no statistics tables in this run (rocprofv3 --stats writes them)", timeout=3, markup=False)
            return
        if len(self.view.kernels):
            keys.insert(0, None)
        self.stats_key = keys[(keys.index(self.stats_key) + 1) % len(keys)] if self.stats_key in keys else keys[0]
        self.fill()
