"""Timeline pane: the lanes widget, its header, status line and legend.

It centres on dispatches of the hotspot selection (``selection``, set by the screen),
cycling through them on each request, and on the evidence of a finding. On a multi-process
run the header says which lanes are shown and what their time axis is (the rank lanes: one
clock, or aligned at each rank's first collective).
"""

from __future__ import annotations

import numpy as np
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.events import DescendantFocus
from textual.widgets import Static

from tui_prof.analysis.api import StepsSection
from tui_prof.render.safe import safe_text
from tui_prof.tui.glyphs import use_ascii
from tui_prof.tui.pane import Pane
from tui_prof.tui.safe import plain
from tui_prof.tui.view.lanes import TimelineModel
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.view.stats import missing_trace
from tui_prof.tui.widgets.scroll import KeyScroll
from tui_prof.tui.widgets.timeline import Timeline
from tui_prof.tui.workers import COMPUTING, deliver, thread_worker

# the legend: (glyph, style, label) as drawn by tui_prof.tui.widgets.timeline
LEGEND = (
    ("█", "bright_green", " busy "),
    ("▃", "yellow", " <90% busy "),
    ("░", "red", " idle "),
    ("▓", "bright_magenta", " sync "),
    ("▚", "bright_magenta", " sync+launch "),
    ("▆", "blue", " host API "),
    ("▆", "cyan", " host op"),
)
# the legend of the rank lanes (one row per process: GPU busy, communication, idle)
RANK_LEGEND = (
    ("█", "bright_green", " busy "),
    ("▃", "yellow", " <90% busy "),
    ("≈", "bright_cyan", " communication "),
    ("░", "red", " idle"),
)


# the legend in ASCII (tui_prof.tui.glyphs): the partly busy levels , : + * are named
# together, and the host rows say what their marks measure (in ASCII they are the same
# level marks, where colour alone told host API from host op)
ASCII_LEGEND = (
    ("#", "bright_green", " busy "),
    (",:+*", "yellow", " <90% busy "),
    (".", "red", " idle "),
    ("=", "bright_magenta", " sync "),
    ("%", "bright_magenta", " sync+launch "),
    ("host rows", "blue", ": API call time, "),
    ("ops rows", "cyan", ": host op time"),
)
ASCII_RANK_LEGEND = (
    ("#", "bright_green", " busy "),
    (",:+*", "yellow", " <90% busy "),
    ("~", "bright_cyan", " communication "),
    (".", "red", " idle"),
)


def legend(ascii: bool = False, ranks: bool = False) -> Text:
    """The glyphs and their meaning (ASCII glyphs with ``ascii``: tui_prof.tui.glyphs; the
    rank lanes' with ``ranks``)."""
    text = plain(no_wrap=True, overflow="ellipsis")
    if ascii:
        rows = ASCII_RANK_LEGEND if ranks else ASCII_LEGEND
    else:
        rows = RANK_LEGEND if ranks else LEGEND
    for glyph, style, label in rows:
        text.append(glyph, style)
        text.append(label)
    return text


class TimelinePane(Pane, Vertical):
    """Tab 2: the lanes of the view's ``timeline`` piece. ``selection`` (grouping, value) is
    the hotspot row the ``c``/``t`` jumps use."""

    TAB, TITLE, KEY, FOCUS, PIECE = "timeline", "Timeline", "2", "#timeline-view", "timeline"

    DEFAULT_CSS = "TimelinePane { height: 1fr; } #tl-missing { height: 1fr; padding: 1 2; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: RunView | None = None
        self._selection: tuple[str, str | None] = ("name", None)
        self.kernel_cycle = 0
        self._header = ""  # the header shown (TimelineModel.header)

    def compose(self) -> ComposeResult:
        with KeyScroll(id="tl-missing"):
            yield Static("", id="tl-missing-text")
        yield Static("", id="tl-header", classes="status")
        yield Timeline(id="timeline-view")
        yield Static(plain(f"timeline: {COMPUTING}", "dim italic"), id="tl-status", classes="status")
        yield Static(legend(use_ascii()), id="tl-legend", classes="status")

    @property
    def timeline(self) -> Timeline:
        return self.query_one("#timeline-view", Timeline)

    @property
    def selection(self) -> tuple[str, str | None]:
        return self._selection

    @selection.setter
    def selection(self, value: tuple[str, str | None]) -> None:
        self._selection = value
        self.kernel_cycle = 0  # a new row starts at its first dispatch

    # -- data from the screen -------------------------------------------------------------
    def on_mount(self) -> None:
        self.query_one("#tl-missing").display = False
        self.query_one("#tl-header").display = False

    def set_view(self, view: RunView) -> None:
        self.view = view
        # a run without a trace (statistics only): what is missing and the flag that records it
        missing = missing_trace(view.runset, view.stats)
        self.query_one("#tl-missing-text", Static).update(plain(missing))
        self.query_one("#tl-missing").display = bool(missing)
        self.timeline.display = not missing
        self.query_one("#tl-legend").display = not missing

    def prepare(self, view: RunView) -> TimelineModel:
        return view.timeline

    def show(self, prepared: TimelineModel) -> None:
        self.set_model(prepared)

    def set_model(self, model: TimelineModel) -> None:
        self.timeline.set_model(model)
        if self.timeline.display:
            self._show_status()
        else:
            self.query_one("#tl-status", Static).update(plain("no trace: nothing to draw", "dim"))

    def show_error(self, text: Text) -> None:
        self.query_one("#tl-status", Static).update(text)

    @on(DescendantFocus)
    def _focus_message(self, event: DescendantFocus) -> None:
        """The hidden timeline of a run without a trace passes its focus to the message
        (the footer then shows no zoom keys that would do nothing)."""
        if event.widget is self.timeline and not self.timeline.display:
            self.query_one("#tl-missing").focus()

    def _show_status(self) -> None:
        if not self.timeline.display:
            return
        self.query_one("#tl-status", Static).update(plain(self.timeline.status_text(), no_wrap=True, overflow="ellipsis"))
        model = self.timeline.model
        header = model.header if model is not None else ""
        if header != self._header:  # the lanes shown changed (r): header and legend follow
            self._header = header
            self.query_one("#tl-header", Static).update(plain(header, "bold", no_wrap=True, overflow="ellipsis"))  # host names: never markup
            self.query_one("#tl-header").display = bool(header)
            self.query_one("#tl-legend", Static).update(legend(use_ascii(), ranks=self.timeline.showing_ranks))

    @on(Timeline.WindowChanged, "#timeline-view")
    def _window_changed(self, event: Timeline.WindowChanged) -> None:
        self._show_status()

    @on(Timeline.CriticalRequested, "#timeline-view")
    def _critical_requested(self, event: Timeline.CriticalRequested) -> None:
        """``p`` the first time: the critical path of the recorded run, computed in a worker."""
        event.stop()
        if self.view is None or self.timeline.model is None:
            return
        if self.timeline.showing_ranks:
            self.notify("critical path: marked on every lane (press r first)", timeout=4, markup=False)
            return
        self.query_one("#tl-status", Static).update(plain(f"critical path: {COMPUTING}", "dim italic"))
        self._critical_worker(self.view)

    @thread_worker("the critical path", group="critical", exclusive=True)
    def _critical_worker(self, view: RunView) -> None:
        marks = view.critical_marks()
        deliver(self, self.timeline.set_critical, marks)

    @on(Timeline.CentreRequested, "#timeline-view")
    def _centre_requested(self, event: Timeline.CentreRequested) -> None:
        event.stop()
        self.centre_selected()

    # -- jumps ----------------------------------------------------------------------------------
    def centre_selected(self) -> None:
        """Centre on the next dispatch of the selected hotspot row."""
        group, value = self._selection
        timeline = self.timeline
        if self.view is None or value is None or timeline.model is None:
            return
        rows = self.view.dispatches(group, value)
        if not len(rows):
            return
        pick = rows.iloc[self.kernel_cycle % len(rows)]
        self.kernel_cycle += 1
        lane, start, end = timeline.dispatch_at(pick)  # rank lanes: its process's lane, on their axis
        timeline.marker = (lane, start, end)
        timeline.centre_on(start, end, lane)
        self.notify(safe_text(f"{value}: dispatch {self.kernel_cycle % len(rows) or len(rows)}/{len(rows)}"), timeout=2, markup=False)

    def show_gap(self, gap_index: int) -> None:
        """Centre on idle gap ``gap_index`` (its row in ``view.gaps``) and select it."""
        timeline = self.timeline
        if timeline.model is None or timeline.model.gap_index(gap_index) < 0:
            return
        timeline.gap_index = timeline.model.gap_index(gap_index)
        gap = timeline.current_gap
        if gap is None:
            return
        lane, start, end = gap
        timeline.call_after_refresh(timeline.centre_on, start, end, lane if lane >= 0 else None)

    def set_steps(self, steps: StepsSection | None, origin: int) -> None:
        """The steps shown by the steps pane (relative to the timeline's origin): ruler ticks and ``[``/``]`` jumps."""
        rows = steps["steps"] if steps is not None else []
        starts = np.array([r["start_ns"] - origin for r in rows], dtype=np.int64)
        self.timeline.set_steps(starts, starts + np.array([r["wall_ns"] for r in rows], dtype=np.int64))

    def show_range(self, start: int, end: int) -> None:
        """Zoom to [start, end) (relative ns) on every lane (the lanes of every process when
        the rank lanes are shifted: the range is on the processes' own clocks)."""
        timeline = self.timeline
        if timeline.model is not None and timeline.model.shifted:
            timeline.show_ranks(False)
        timeline.call_after_refresh(timeline.set_window, max(start, 0), end)  # a step may start before the first traced event

    def show_window(self, start: int, end: int, lane: int) -> None:
        """Centre on [start, end) of lane ``lane`` of every lane (a host or copy row: the rank
        lanes switch to every lane)."""
        timeline = self.timeline
        timeline.show_ranks(False)
        timeline.call_after_refresh(timeline.centre_on, start, end, lane)
