"""An idle gap (from analysis.timeline.gpu_timeline) and the host calls around it; the
calls are selected from the run's API table in a thread worker."""

from __future__ import annotations

import pandas as pd
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.widgets import Footer, Static

from tui_prof.render.fmt import fmt_ns
from tui_prof.tui.screens.back import BackScreen
from tui_prof.tui.view.dispatch import gap_calls
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.widgets.table import Column, TableView

HOST_CALL_COLUMNS = (
    Column("t", "start", 12, "ns"),
    Column("name", "call", 24, "text"),
    Column("dur", "duration", 9, "ns"),
    Column("tid", "tid", 8),
    Column("correlation_id", "corr id", 8),
)


class GapScreen(BackScreen):
    """Gap ``gap_index`` (a row of ``view.gaps``)."""

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
        yield TableView(list(HOST_CALL_COLUMNS), id="gap-calls")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#gap-calls", TableView).focus()
        self._select()

    @work(thread=True, exclusive=True, group="gap-calls", exit_on_error=False)
    def _select(self) -> None:
        calls = gap_calls(self.view, self.gap_index)
        self.app.call_from_thread(self._show, calls)

    def _show(self, calls: pd.DataFrame) -> None:
        self.query_one("#gap-calls", TableView).set_data(calls, text_key="name")
