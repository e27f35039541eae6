"""One dispatch: its fields, launching API call, occupancy, counters, and the timeline
around it. The detail (tui_prof.tui.view.dispatch.dispatch_detail) is computed in a
thread worker; the screen says "computing…" until then."""

from __future__ import annotations

import pandas as pd
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Footer, Static
from textual.worker import get_current_worker

from tui_prof.tui.safe import plain
from tui_prof.tui.screens.back import BackScreen
from tui_prof.tui.view.dispatch import DispatchDetail, dispatch_detail
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.widgets.timeline import Timeline
from tui_prof.tui.workers import COMPUTING, deliver, thread_worker


def detail_renderable(detail: DispatchDetail) -> Table | Group:
    """The pairs two per line, then the occupancy hint."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_column(style="bold")
    grid.add_column()
    pairs = detail.pairs
    for i in range(0, len(pairs), 2):
        left = pairs[i]
        right = pairs[i + 1] if i + 1 < len(pairs) else ("", "")
        grid.add_row(plain(left[0]), plain(left[1]), plain(right[0]), plain(right[1]))
    if detail.occupancy is not None:
        return Group(grid, Text.assemble(("to lift occupancy: ", "bold"), detail.occupancy["hint"]))
    return grid


class DispatchDetailScreen(BackScreen):
    """One dispatch (a row of ``view.kernels``)."""

    def __init__(self, view: RunView, row: pd.Series) -> None:
        super().__init__()
        self.view, self.row = view, row
        self.detail: DispatchDetail | None = None  # set by the worker

    def compose(self) -> ComposeResult:
        yield Static(plain(str(self.row["name"]), no_wrap=True, overflow="ellipsis"), classes="title")
        with Vertical(id="detail-body"):
            with VerticalScroll(id="detail-scroll"):
                yield Static(plain(COMPUTING, "dim italic"), id="detail")
            yield Timeline(self.view.timeline if self.view.ready("timeline") else None, id="detail-timeline")
        yield Footer()

    def full_names(self) -> list[tuple[str, str]]:
        """The kernel's name (cut in the title) and the launching call (key ``F``)."""
        names = [("name", str(self.row["name"]))]
        launched = dict(self.detail.pairs).get("launched by") if self.detail is not None else None
        return names + ([("launched by", launched)] if launched else [])

    def on_mount(self) -> None:
        self.query_one("#detail-scroll").focus()
        if self.view.ready("timeline"):
            self._centre()
        self._prepare()

    @thread_worker("dispatch detail", group="dispatch-detail", exclusive=True)
    def _prepare(self) -> None:
        """The lanes, the launch links and this dispatch's detail, off the event loop."""
        self.view.ensure("timeline")
        if get_current_worker().is_cancelled:
            return
        self.view.ensure("launches")
        if get_current_worker().is_cancelled:
            return
        detail = dispatch_detail(self.view, self.row)
        deliver(self, self._prepared, detail)

    def show_error(self, text: Text) -> None:
        self.query_one("#detail", Static).update(text)

    def _prepared(self, detail: DispatchDetail) -> None:
        self.detail = detail
        self.query_one("#detail", Static).update(detail_renderable(detail))
        timeline = self.query_one("#detail-timeline", Timeline)
        if timeline.model is None:
            timeline.set_model(self.view.timeline)
            self._centre()

    def _centre(self) -> None:
        timeline = self.query_one("#detail-timeline", Timeline)
        lane, start, end = timeline.dispatch_at(self.row)
        timeline.marker = (lane, start, end)
        timeline.call_after_refresh(timeline.centre_on, start, end, lane)

    @on(Timeline.CentreRequested, "#detail-timeline")
    def _centre_requested(self, event: Timeline.CentreRequested) -> None:
        event.stop()
        if event.timeline.model is None:
            return
        lane, start, end = event.timeline.dispatch_at(self.row)
        event.timeline.centre_on(start, end, lane)
