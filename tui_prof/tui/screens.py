"""Drill-down and help screens: kernel → dispatches → dispatch detail; gap → host calls."""

from __future__ import annotations

import pandas as pd
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

from tui_prof.render.fmt import fmt_bytes, fmt_ns, fmt_value
from tui_prof.tui.panes import dispatch_occupancy
from tui_prof.tui.runview import RunView
from tui_prof.tui.widgets.table import Column, TableView
from tui_prof.tui.widgets.timeline import Timeline

DISPATCH_COLUMNS = [
    Column("t", "start", 12, "ns"),
    Column("dur", "duration", 9, "ns"),
    Column("agent", "agent", 5),
    Column("queue", "queue", 6),
    Column("stream", "stream", 6),
    Column("grid_x", "grid x", 8),
    Column("wg_x", "wg x", 5),
    Column("lds_bytes", "LDS", 7, "bytes"),
    Column("arch_vgpr", "vgpr", 5),
    Column("sgpr", "sgpr", 5),
    Column("correlation_id", "corr id", 8),
    Column("dispatch_id", "dispatch", 8),
]

HOST_CALL_COLUMNS = [
    Column("t", "start", 12, "ns"),
    Column("name", "call", 24, "text"),
    Column("dur", "duration", 9, "ns"),
    Column("tid", "tid", 8),
    Column("correlation_id", "corr id", 8),
]


class BackScreen(Screen):
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back", id="nav.back")]


class DispatchesScreen(BackScreen):
    """All dispatches of one hotspot row (a kernel name or another group key)."""

    def __init__(self, view: RunView, group: str, value: str) -> None:
        super().__init__()
        self.view, self.group, self.value = view, group, value
        self.rows = view.dispatches(group, value)

    def compose(self) -> ComposeResult:
        rows = self.rows
        yield Static(Text(f"{self.group}: {self.value}", no_wrap=True, overflow="ellipsis"), classes="title")
        yield Static(f"{len(rows)} dispatches · Enter: detail · s: sort column · Esc: back", classes="status", id="disp-status")
        yield TableView(DISPATCH_COLUMNS, id="dispatches")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#dispatches", TableView)
        table.set_data(self.rows, text_key=None)
        table.focus()

    def on_table_view_selected(self, event: TableView.Selected) -> None:
        event.stop()
        self.app.push_screen(DispatchDetailScreen(self.view, event.row))


class DispatchDetailScreen(BackScreen):
    """One dispatch: its fields, launching API call, counters, and the timeline around it."""

    def __init__(self, view: RunView, row: pd.Series) -> None:
        super().__init__()
        self.view, self.row = view, row
        self.occupancy = dispatch_occupancy(view, row)  # analysis.occupancy.occupancy

    def _ready(self) -> bool:
        return self.view.ready("timeline") and self.view.ready("launches")

    def compose(self) -> ComposeResult:
        yield Static(Text(str(self.row["name"]), no_wrap=True, overflow="ellipsis"), classes="title")
        with Vertical(id="detail-body"):
            with VerticalScroll(id="detail-scroll"):
                yield Static(self._detail(), id="detail")
            yield Timeline(self.view.timeline if self.view.ready("timeline") else None, id="detail-timeline")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#detail-scroll").focus()
        if self._ready():
            self._centre()
        else:  # the launch links and the lanes are computed in a thread, then shown
            self._prepare()

    @work(thread=True, exit_on_error=False)
    def _prepare(self) -> None:
        self.view.ensure("timeline")
        self.view.ensure("launches")
        self.app.call_from_thread(self._prepared)

    def _prepared(self) -> None:
        self.query_one("#detail", Static).update(self._detail())
        self.query_one("#detail-timeline", Timeline).set_model(self.view.timeline)
        self._centre()

    def _centre(self) -> None:
        timeline = self.query_one("#detail-timeline", Timeline)
        lane = int(self.row["lane"])
        start, end = int(self.row["t"]), int(self.row["t"] + self.row["dur"])
        timeline.marker = (lane, start, end)
        timeline.call_after_refresh(timeline.centre_on, start, end, lane)

    def on_timeline_centre_requested(self, event: Timeline.CentreRequested) -> None:
        event.stop()
        if event.timeline.model is None:
            return
        start, end = int(self.row["t"]), int(self.row["t"] + self.row["dur"])
        event.timeline.centre_on(start, end, int(self.row["lane"]))

    def _detail(self):
        r = self.row
        run = self.view.run_of(r)
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold")
        grid.add_column()
        grid.add_column(style="bold")
        grid.add_column()
        agent = run.agent(int(r["agent"]))
        pairs = [
            ("start", fmt_ns(r["t"])),
            ("duration", fmt_ns(r["dur"])),
            ("agent", f"{int(r['agent'])} {agent.arch if agent else ''}".strip()),
            ("queue / stream", f"{fmt_value(r['queue'], 'int')} / {fmt_value(r['stream'], 'int')}"),
            ("grid", " × ".join(fmt_value(r[c], "int") for c in ("grid_x", "grid_y", "grid_z"))),
            ("workgroup", " × ".join(fmt_value(r[c], "int") for c in ("wg_x", "wg_y", "wg_z"))),
            ("LDS / workgroup", fmt_bytes(r["lds_bytes"])),
            ("scratch / item", fmt_bytes(r["scratch_bytes"])),
            ("arch / accum VGPR", f"{fmt_value(r['arch_vgpr'], 'int')} / {fmt_value(r['accum_vgpr'], 'int')}"),
            ("SGPR", fmt_value(r["sgpr"], "int")),
            ("pid / tid", f"{fmt_value(r['pid'], 'int')} / {fmt_value(r['tid'], 'int')}"),
            ("correlation / dispatch", f"{fmt_value(r['correlation_id'], 'int')} / {fmt_value(r['dispatch_id'], 'int')}"),
        ]
        launches = self.view.launches if self.view.ready("launches") else None
        if not self.view.ready("launches"):
            pairs.append(("launching call", "computing…"))
        elif launches is not None and int(r["row"]) in launches.index:
            link = launches.loc[int(r["row"])]
            cid = int(r["correlation_id"])
            api = run.api
            names = api.loc[api["correlation_id"].to_numpy() == cid, "name"].astype(str)
            pairs += [
                ("launched by", names.iloc[0] if len(names) else "?"),
                ("API start", fmt_ns(int(link["api_start"]) - self.view.origin)),
                ("API duration", fmt_ns(link["api_dur_ns"])),
                ("queue delay", fmt_ns(link["queue_delay_ns"]) + "  (kernel start − API start)"),
            ]
        else:
            pairs.append(("launching call", "not linked" if launches is not None else "not available yet"))
        occ = self.occupancy
        if occ is not None:
            pairs += [
                ("waves per SIMD", f"{occ['waves_per_simd']:g} of {occ['max_waves_per_simd']} ({occ['occupancy_pct']:g} %)"),
                ("occupancy limiter", f"{occ['limiter']} · {occ['workgroups_per_cu']} workgroups/CU"),
            ]
        else:
            pairs.append(("occupancy", "unknown (arch, workgroup size or VGPRs not recorded)"))
        counters = run.counters
        mine = counters.iloc[0:0]
        if len(counters) and int(r["dispatch_id"]) >= 0:
            mine = counters[counters["dispatch_id"].to_numpy() == int(r["dispatch_id"])]
            for name, value in zip(mine["counter"].astype(str), mine["value"]):
                pairs.append((name, f"{value:.6g}"))
        if not len(mine):
            pairs.append(("counters", "none recorded for this dispatch"))
        for i in range(0, len(pairs), 2):
            left = pairs[i]
            right = pairs[i + 1] if i + 1 < len(pairs) else ("", "")
            grid.add_row(left[0], left[1], right[0], right[1])
        if occ is not None:
            return Group(grid, Text.assemble(("to lift occupancy: ", "bold"), occ["hint"]))
        return grid


class GapScreen(BackScreen):
    """An idle gap (from analysis.timeline.gpu_timeline) and the host calls around it."""

    def __init__(self, view: RunView, gap_index: int) -> None:
        super().__init__()
        self.view, self.gap_index = view, gap_index

    def compose(self) -> ComposeResult:
        gap = self.view.gaps.iloc[self.gap_index]
        origin = self.view.origin
        text = (
            f"gap {self.gap_index + 1}: GPU{int(gap['agent'])} idle {fmt_ns(gap['duration_ns'])} "
            f"from {fmt_ns(int(gap['start']) - origin)} · cause: {gap['cause']}"
            + (f" ({gap['api_cause']})" if gap["api_cause"] else "")
        )
        yield Static(Text(text, no_wrap=True, overflow="ellipsis"), classes="title")
        yield Static(
            Text(f"before: {gap['prev_name']}  →  after: {gap['next_name']}", no_wrap=True, overflow="ellipsis"),
            classes="status",
        )
        yield TableView(HOST_CALL_COLUMNS, id="gap-calls")
        yield Footer()

    def on_mount(self) -> None:
        gap = self.view.gaps.iloc[self.gap_index]
        run = self.view.runset.runs[int(gap["run"])]
        api = run.api
        gs, ge = int(gap["start"]), int(gap["end"])
        margin = max(ge - gs, 1)
        m = (api["end"].to_numpy() >= gs - margin) & (api["start"].to_numpy() <= ge + margin)
        calls = api[m].copy()
        calls["t"] = calls["start"].to_numpy() - self.view.origin
        calls["dur"] = calls["end"].to_numpy() - calls["start"].to_numpy()
        table = self.query_one("#gap-calls", TableView)
        table.set_data(calls, text_key="name")
        table.focus()


class HelpScreen(ModalScreen):
    """Every key binding, generated from the widgets' BINDINGS (see tui_prof.tui.keys)."""

    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "Close")]

    def compose(self) -> ComposeResult:
        from tui_prof.tui.keys import key_rows

        table = Table(title="tuiprof keys", expand=True, show_edge=False)
        table.add_column("where", style="bold")
        table.add_column("keys", style="cyan")
        table.add_column("action")
        for where, keys, action in key_rows():
            table.add_row(where, keys, action)
        with VerticalScroll(id="help"):
            yield Static(table)
