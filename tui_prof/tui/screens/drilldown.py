"""Kernel → its dispatches: the rows of one hotspot key, selected in a thread worker."""

from __future__ import annotations

import dataclasses

import pandas as pd
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.widgets import Footer, Static

from tui_prof.tui.safe import plain
from tui_prof.tui.screens.back import BackScreen
from tui_prof.tui.screens.detail import DispatchDetailScreen
from tui_prof.tui.view.dispatch import cuda_dispatch_rows, nvidia_run
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.widgets.table import Column, TableView
from tui_prof.tui.workers import COMPUTING, deliver, thread_worker

DISPATCH_COLUMNS = (
    Column("t", "start", 12, "ns"),
    Column("dur", "duration", 9, "ns"),
    Column("agent", "agent", 5),
    Column("queue", "queue", 6),
    Column("stream", "stream", 6),
    Column("grid_x", "grid x", 8),
    Column("wg_x", "wg x", 5),
    Column("lds_bytes", "LDS", 9, "bytes"),  # "512.0 KiB": a number is never cut
    Column("arch_vgpr", "vgpr", 5),
    Column("sgpr", "sgpr", 5),
    Column("correlation_id", "corr id", 8),
    Column("dispatch_id", "dispatch", 8),
)
# an NVIDIA run in CUDA words, the fields Kineto records: no queue, LDS, VGPR, SGPR or
# dispatch id (AMD-only); the grid in blocks and the block size, shared memory per block
# and registers per thread
CUDA_DISPATCH_COLUMNS = (
    Column("t", "start", 12, "ns"),
    Column("dur", "duration", 9, "ns"),
    Column("agent", "device", 6),
    Column("stream", "stream", 6),
    Column("grid_blocks", "grid", 9, "dims"),  # 2048x1x1; widened to the longest in _show
    Column("block_dims", "block", 8, "dims"),
    Column("lds_bytes", "shared mem", 10, "bytes"),
    Column("arch_vgpr", "regs/thread", 11),
    Column("correlation_id", "corr id", 8),
)


class DispatchesScreen(BackScreen):
    """All dispatches of one hotspot row (a kernel name or another group key)."""

    def __init__(self, view: RunView, group: str, value: str) -> None:
        super().__init__()
        self.view, self.group, self.value = view, group, value
        self.rows: pd.DataFrame | None = None  # set by the worker
        self.cuda = nvidia_run(view)  # the columns in CUDA words

    def compose(self) -> ComposeResult:
        yield Static(plain(f"{self.group}: {self.value}", no_wrap=True, overflow="ellipsis"), classes="title")
        yield Static(plain(f"dispatches: {COMPUTING}", "dim italic"), classes="status", id="disp-status")
        yield TableView(list(CUDA_DISPATCH_COLUMNS if self.cuda else DISPATCH_COLUMNS), id="dispatches")
        yield Footer()

    def full_names(self) -> list[tuple[str, str]]:
        """The hotspot row's key, cut in the title (key ``F``: screens.fullname)."""
        return [(self.group, self.value)]

    def on_mount(self) -> None:
        self.query_one("#dispatches", TableView).focus()
        self._select()

    @thread_worker("dispatches", group="dispatches", exclusive=True)
    def _select(self) -> None:
        rows = self.view.dispatches(self.group, self.value)
        deliver(self, self._show, cuda_dispatch_rows(rows) if self.cuda else rows)

    def show_error(self, text: Text) -> None:
        self.query_one("#disp-status", Static).update(text)

    def _show(self, rows: pd.DataFrame) -> None:
        self.rows = rows
        self.query_one("#disp-status", Static).update(f"{len(rows)} dispatches · Enter: detail · s: sort column · F: full name · Esc: back")
        table = self.query_one("#dispatches", TableView)
        table.time_offsets("t", rows)  # start offsets with the digits that tell dispatches apart
        if self.cuda:  # an XxYxZ is never cut: its column as wide as the longest
            widths = {k: max((len(str(v)) for v in rows[k].cat.categories), default=1) for k in ("grid_blocks", "block_dims")}
            table.set_columns([dataclasses.replace(c, width=max(c.width, widths.get(c.key, 0))) for c in CUDA_DISPATCH_COLUMNS])
        table.set_data(rows, text_key=None)

    @on(TableView.Selected, "#dispatches")
    def _selected(self, event: TableView.Selected) -> None:
        event.stop()
        self.app.push_screen(DispatchDetailScreen(self.view, event.row))
