"""An idle gap (from analysis.timeline.gpu_timeline), the host ops that overlap it
(analysis.hostops: Kineto cpu_op/user_annotation, roctx/rocprofv3 marker ranges; the
dominant one in the header) and the host API calls around it, the list opened at the
gap; both are selected in a thread worker."""

from __future__ import annotations

import pandas as pd
from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Footer, Static

from tui_prof.render.fmt import fmt_ns
from tui_prof.tui.safe import plain
from tui_prof.tui.screens.back import BackScreen
from tui_prof.tui.view.dispatch import GapHost, gap_host
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.widgets.table import Column, TableView
from tui_prof.tui.workers import deliver, thread_worker

HOST_CALL_COLUMNS = (
    Column("t", "start", 12, "ns"),
    Column("name", "call", 24, "text"),
    Column("dur", "duration", 9, "ns"),
    Column("tid", "tid", 8),
    Column("correlation_id", "corr id", 8),
)
HOST_OP_COLUMNS = (
    Column("t", "start", 12, "ns"),
    Column("name", "host op", 24, "text"),
    Column("overlap_ns", "in gap", 9, "ns"),
    Column("dur", "duration", 9, "ns"),
    Column("depth", "depth", 5),
    Column("tid", "tid", 8),
)


class GapScreen(BackScreen):
    """Gap ``gap_index`` (a row of ``view.gaps``)."""

    DEFAULT_CSS = """
    GapScreen #gap-ops { height: auto; max-height: 8; border-bottom: solid $primary; }
    GapScreen #gap-calls { height: 1fr; }
    """

    def __init__(self, view: RunView, gap_index: int) -> None:
        super().__init__()
        self.view, self.gap_index = view, gap_index
        self.host: GapHost | None = None

    def title_text(self) -> Text:
        """Gap, length, start, the dominant host op (once known) and the cause."""
        gap = self.gap
        origin = self.view.origin
        text = f"gap {self.gap_index + 1}: GPU{int(gap['agent'])} idle {fmt_ns(gap['duration_ns'])} from {fmt_ns(int(gap['start']) - origin)}"
        dominant = self.host.dominant if self.host is not None else None
        if dominant is not None:
            text += f" · host: {dominant.name} {fmt_ns(dominant.overlap_ns)}"
        text += f" · cause: {gap['cause']}" + (f" ({gap['api_cause']})" if gap["api_cause"] else "")
        return plain(text, no_wrap=True, overflow="ellipsis")  # names from the trace: never markup

    @property
    def gap(self) -> pd.Series:
        gaps = self.view.gaps
        assert gaps is not None  # the screen opens on a gap of the run
        return gaps.iloc[self.gap_index]

    def compose(self) -> ComposeResult:
        gap = self.gap
        yield Static(self.title_text(), id="gap-title", classes="title")
        yield Static(
            plain(f"before: {gap['prev_name']}  →  after: {gap['next_name']}", no_wrap=True, overflow="ellipsis"),
            classes="status",
        )
        yield Static("", id="gap-error", classes="status")
        yield TableView(list(HOST_OP_COLUMNS), id="gap-ops")
        yield TableView(list(HOST_CALL_COLUMNS), id="gap-calls")
        yield Footer()

    def full_names(self) -> list[tuple[str, str]]:
        """The dominant host op and the activities before and after the gap (cut in the
        header lines; key ``F``), then the focused table's row."""
        gap = self.gap
        dominant = self.host.dominant if self.host is not None else None
        names = [("host op", dominant.name)] if dominant is not None else []
        return names + [("before the gap", str(gap["prev_name"])), ("after the gap", str(gap["next_name"]))]

    def on_mount(self) -> None:
        self.query_one("#gap-error").display = False
        self.query_one("#gap-calls", TableView).focus()
        self._select()

    @thread_worker("host calls in the gap", group="gap-calls", exclusive=True)
    def _select(self) -> None:
        deliver(self, self._show, gap_host(self.view, self.gap_index))

    def show_error(self, text: Text) -> None:
        error = self.query_one("#gap-error", Static)
        error.update(text)
        error.display = True

    def _show(self, host: GapHost) -> None:
        self.host = host
        self.query_one("#gap-title", Static).update(self.title_text())
        ops = self.query_one("#gap-ops", TableView)
        ops.time_offsets("t", host.ops)
        ops.set_data(host.ops, text_key="name")
        ops.display = len(host.ops) > 0
        calls = self.query_one("#gap-calls", TableView)
        calls.time_offsets("t", host.calls)
        calls.set_data(host.calls, text_key="name")
        calls.call_after_refresh(calls.show_row, host.first, 1)  # the call before the gap above it
