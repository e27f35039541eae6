"""The timeline: Line-API rows over a precomputed :class:`TimelineModel`.

Row 0 is the ruler; each further row is one lane (host threads first, then GPU
queues). A frame (glyph codes + style codes for every lane × cell) is built once per
view with one vectorised occupancy query and cached; ``render_line`` only slices it
and run-length-encodes the styles into Segments.

Glyphs: busy density ``▁▂▃▄▅▆▇█`` (fraction of the cell's time covered); a fully idle
cell inside a GPU lane's active span, or inside an idle gap of its agent
(analysis.timeline: union of kernels and copies, so also between copies before the
first kernel), is ``░`` in the idle colour; host-op rows (markers:
Kineto cpu_op/user_annotation, roctx ranges; one row per nesting depth) are density
blocks in the op colour; sync calls on host
rows are in the sync colour: ``▓`` when the cell holds only sync time, ``▚`` when sync
calls are interleaved with other API calls in the cell (a sync after every launch);
GPU cells at least 90% busy are green, less busy ones yellow; the selected interval is shown reversed; the current gap is underlined ``▔``
on the ruler. ``p`` marks the critical path (analysis.whatif.path_segments, asked of the owner
by :class:`Timeline.CriticalRequested`): each lane's cells on it are bold and underlined, in
their own colour (no colour more for a 16-colour terminal to tell apart).

A multi-process run starts on its rank lanes (``TimelineModel.ranks``: one row per process,
its GPUs' busy time drawn like a GPU row); a cell where communication (collective) kernels
take at least half the busy time is ``≈`` in the communication colour. ``r`` switches
between the rank lanes and every lane.
"""

from __future__ import annotations

import numpy as np
from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from tui_prof.render.fmt import fmt_at, fmt_ns, fmt_tick, tick_step
from tui_prof.render.safe import safe_text
from tui_prof.tui.glyphs import to_ascii, use_ascii
from tui_prof.tui.view.lanes import PackedLanes, TimelineModel

BLOCKS = np.array([ord(c) for c in " ▁▂▃▄▅▆▇█"], dtype=np.uint32)
IDLE_GLYPH = ord("░")
SYNC_GLYPH = ord("▓")
MIXED_GLYPH = ord("▚")  # sync calls interleaved with other API calls in one cell
COMM_GLYPH = ord("≈")  # a rank lane's cell mostly in communication (collective) kernels
COMM_SHARE = 0.5  # share of a cell's busy time in communication that draws it as communication
BUSY_THRESHOLD = 0.9  # a GPU cell at least this busy is "busy", below it "partly idle"
MIXED_THRESHOLD = 0.02  # non-sync API share of a cell that makes a sync cell "mixed"

# style codes of a cell
S_BLANK, S_BUSY, S_PARTIAL, S_IDLE, S_API, S_SYNC, S_MARK, S_GAP, S_OP, S_MEM, S_COMM = range(11)
CRITICAL = 16  # added to a cell's style code when the cell is on the critical path: underlined, its colour kept
STYLE_CLASSES = {
    S_BUSY: "timeline--busy",
    S_PARTIAL: "timeline--partial",
    S_IDLE: "timeline--idle",
    S_API: "timeline--api",
    S_SYNC: "timeline--sync",
    S_MARK: "timeline--mark",
    S_GAP: "timeline--gap",
    S_OP: "timeline--op",
    S_MEM: "timeline--mem",
    S_COMM: "timeline--comm",
}


def levels(occ: np.ndarray) -> np.ndarray:
    """Occupancy 0..1 → block level 0..8 (any busy time shows at least ▁)."""
    lv = np.ceil(np.clip(occ, 0.0, 1.0) * 8).astype(np.int64)
    return lv


def build_frame(model: TimelineModel, t0: int, t1: int, cells: int, marker=None, gap=None):
    """Glyph codepoints and style codes, each (n_lanes, cells), for the view [t0, t1).

    ``marker`` is (lane, start, end) relative ns to show reversed; ``gap`` is
    (lane or -1, start, end) to show in the gap style.
    """
    busy, sync = model.frame(t0, t1, cells)
    n = len(model.lanes)
    glyph = BLOCKS[levels(busy)]
    style = np.full((n, cells), S_BLANK, dtype=np.int8)
    kinds = np.array([lane.kind for lane in model.lanes])
    gpu = (kinds == "gpu") | (kinds == "rank")  # a rank lane is its GPUs' busy time
    edges = t0 + (np.arange(cells + 1, dtype=np.int64) * (t1 - t0)) // cells
    mid = (edges[:-1] + edges[1:]) // 2
    if gpu.any():
        g = np.flatnonzero(gpu)
        first = np.array([lane.start[0] if lane.start.size else 0 for lane in model.lanes], dtype=np.int64)
        last = np.array([lane.end[-1] if lane.end.size else 0 for lane in model.lanes], dtype=np.int64)
        inside = (edges[None, 1:] > first[g, None]) & (edges[None, :-1] < last[g, None])
        if model.idle is not None:  # the agent's idle gaps, also where this lane has no kernels
            inside |= model.idle_frame(t0, t1, cells)[g] > 0
        b = busy[g]
        st = np.where(b >= BUSY_THRESHOLD, S_BUSY, np.where(b > 0, S_PARTIAL, np.where(inside, S_IDLE, S_BLANK)))
        # a partly idle cell never draws the full block: █ means busy without colour too
        partial = BLOCKS[np.minimum(levels(b), 7)]
        gl = np.where((b <= 0) & inside, IDLE_GLYPH, np.where(b >= BUSY_THRESHOLD, glyph[g], partial))
        style[g] = st
        glyph[g] = gl
    rank = np.flatnonzero(kinds == "rank")
    if rank.size:  # communication: a cell whose busy time is mostly collective kernels
        comm = model.comm_frame(t0, t1, cells)[rank]
        b = busy[rank]
        is_comm = (comm > 0) & (comm >= COMM_SHARE * b)
        style[rank] = np.where(is_comm, S_COMM, style[rank])
        glyph[rank] = np.where(is_comm, COMM_GLYPH, glyph[rank])
    copy = np.flatnonzero(kinds == "copy")
    if copy.size:
        b = busy[copy]
        style[copy] = np.where(b >= BUSY_THRESHOLD, S_BUSY, np.where(b > 0, S_PARTIAL, S_BLANK))
    host = np.flatnonzero(kinds == "host")
    if host.size:
        s = sync[host]
        has_sync = s > 0
        style[host] = np.where(has_sync, S_SYNC, np.where(busy[host] > 0, S_API, S_BLANK))
        mixed = has_sync & (busy[host] - s > MIXED_THRESHOLD)
        glyph[host] = np.where(mixed, MIXED_GLYPH, np.where(has_sync, SYNC_GLYPH, glyph[host]))
    ops = np.flatnonzero(kinds == "ops")  # host ops (markers), one lane per nesting depth
    if ops.size:
        style[ops] = np.where(busy[ops] > 0, S_OP, S_BLANK)
    for m in np.flatnonzero(kinds == "memory").tolist():  # allocated bytes: ▁ to █ of the lane's peak
        lane = model.lanes[m]
        level = lane.level_frame(edges)
        peak = int(lane.level_v.max()) if lane.level_v.size else 0
        lv = levels(level / peak) if peak > 0 else np.zeros(cells, np.int64)
        glyph[m] = BLOCKS[lv]
        style[m] = np.where(lv > 0, S_MEM, S_BLANK)
    if gap is not None:
        lane, gs, ge = gap
        rows = np.flatnonzero(gpu) if lane < 0 else np.array([lane])
        hit = (edges[1:] > gs) & (edges[:-1] < ge)
        for r in rows:
            style[r, hit & (style[r] == S_IDLE)] = S_GAP
    if marker is not None:
        lane, ms, me = marker
        hit = (edges[1:] > ms) & (edges[:-1] < max(me, ms + 1))
        if 0 <= lane < n:
            style[lane, hit] = S_MARK
            glyph[lane, hit & (glyph[lane] == BLOCKS[0])] = BLOCKS[8]
    del mid
    return glyph, style


class TimelineMessage(Message):
    """A message from a :class:`Timeline`, which is its ``control``."""

    def __init__(self, timeline: Timeline) -> None:
        super().__init__()
        self.timeline = timeline

    @property
    def control(self) -> Timeline:
        return self.timeline


class GapMessage(TimelineMessage):
    """A message about one gap (``gap_index``: the run view's gap row)."""

    def __init__(self, timeline: Timeline, gap_index: int) -> None:
        super().__init__(timeline)
        self.gap_index = gap_index


class Timeline(Widget, can_focus=True):
    """Zoomable, pannable lanes view. Times in the widget are ns relative to the run origin."""

    DEFAULT_CSS = """
    Timeline { height: 1fr; }
    Timeline > .timeline--label { color: $text; text-style: bold; }
    Timeline > .timeline--label-cursor { color: $text; background: $accent; text-style: bold; }
    Timeline > .timeline--ruler { color: $text-muted; }
    Timeline > .timeline--busy { color: ansi_bright_green; }
    Timeline > .timeline--partial { color: ansi_yellow; }
    Timeline > .timeline--idle { color: ansi_red; }
    Timeline > .timeline--gap { color: ansi_bright_white; background: ansi_red; }
    Timeline > .timeline--api { color: ansi_blue; }
    Timeline > .timeline--sync { color: ansi_bright_magenta; }
    Timeline > .timeline--op { color: ansi_cyan; }
    Timeline > .timeline--mem { color: ansi_bright_blue; }
    Timeline > .timeline--comm { color: ansi_bright_cyan; }
    Timeline > .timeline--mark { color: ansi_bright_white; background: ansi_blue; text-style: bold; }
    """
    COMPONENT_CLASSES = {"timeline--label", "timeline--label-cursor", "timeline--ruler", *STYLE_CLASSES.values()}
    BINDINGS = [
        Binding("w,plus,equals_sign", "zoom(0.5)", "Zoom in", id="timeline.zoom_in"),
        Binding("s,minus", "zoom(2.0)", "Zoom out", id="timeline.zoom_out"),
        Binding("a,h,left", "pan(-0.25)", "Pan left", id="timeline.pan_left"),
        Binding("d,l,right", "pan(0.25)", "Pan right", id="timeline.pan_right"),
        Binding("j,down", "lane(1)", "Lane down", show=False),
        Binding("k,up", "lane(-1)", "Lane up", show=False),
        Binding("f,0", "fit", "Fit", id="timeline.fit"),
        Binding("n", "gap(1)", "Next gap", id="timeline.next_gap"),
        Binding("N", "gap(-1)", "Prev gap", id="timeline.prev_gap"),
        Binding("right_square_bracket", "step(1)", "Next step", id="timeline.next_step", show=False),
        Binding("left_square_bracket", "step(-1)", "Prev step", id="timeline.prev_step", show=False),
        Binding("y", "sync(1)", "Next sync", id="timeline.next_sync"),
        Binding("Y", "sync(-1)", "Prev sync", id="timeline.prev_sync"),
        Binding("c", "centre_selected", "Go to kernel", id="timeline.goto_kernel"),
        Binding("enter", "open_gap", "Gap calls", id="timeline.open_gap"),
        Binding("r", "toggle_ranks", "Rank lanes", id="timeline.ranks"),
        Binding("p", "toggle_critical", "Critical path", id="timeline.critical"),
        Binding("W", "what_if_gap", "Gap what-if", id="timeline.whatif"),
    ]

    class WindowChanged(TimelineMessage):
        """Posted after zoom/pan/gap jumps, so the owner can update its status line."""

    class GapOpened(GapMessage):
        """Enter on the selected gap: its calls (``gap_index``: the run view's gap row)."""

    class CentreRequested(TimelineMessage):
        """The user asked to jump to the selected kernel; the owner (pane or screen) supplies it."""

    class GapWhatIf(GapMessage):
        """``W`` on the selected gap: its what-if (``gap_index``: the run view's gap row)."""

    class CriticalRequested(TimelineMessage):
        """The user asked for the critical-path marks, which the widget does not have yet;
        the owner computes them and hands them over (:meth:`Timeline.set_critical`)."""

    def __init__(self, model: TimelineModel | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.critical: PackedLanes | None = None  # the critical path on every lane (full_model's lanes)
        self.show_critical = False
        self.full_model = model  # every lane; ``model`` is it or its rank lanes
        self.rank_lanes = True  # a multi-process run shows its rank lanes until ``r``
        self.model = model.ranks if model is not None and model.ranks is not None else model
        self.t0 = 0
        self.t1 = self.model.span if self.model else 1
        self.lane_cursor = 0
        self.lane_top = 0
        self.gap_index = -1
        self.sync_index = -1
        self.marker: tuple[int, int, int] | None = None
        self.step_marks = np.array([], dtype=np.int64)  # step starts (relative ns): ticks on the ruler
        self.step_ends = np.array([], dtype=np.int64)
        self.step_index = -1
        self.ascii = use_ascii()  # --ascii or a non-UTF-8 locale: tui_prof.tui.glyphs
        self._cache_key = None
        self._frame = None
        self._styles: dict = {}
        self._strips: dict = {}

    # -- model / view state ---------------------------------------------------------
    def set_model(self, model: TimelineModel) -> None:
        self.full_model = model
        self.model = model.ranks if self.rank_lanes and model.ranks is not None else model
        self.gap_index = -1
        self.sync_index = -1
        self.marker = None
        self.lane_cursor = 0
        self.lane_top = 0
        self.action_fit()
        self.refresh_bindings()

    @property
    def showing_ranks(self) -> bool:
        """The rank lanes are shown (a multi-process run, not switched to every lane)."""
        return self.model is not None and self.full_model is not None and self.model is self.full_model.ranks

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """``r`` only where there are rank lanes (runs of several processes); ``y``/``Y`` (sync
        bars of the host rows) not on the rank lanes, which have no host rows."""
        if action == "toggle_ranks":
            return self.full_model is not None and self.full_model.ranks is not None
        if action == "sync":
            return not self.showing_ranks
        return True

    def action_what_if_gap(self) -> None:
        if self.model is None or self.gap_index < 0:
            self.notify("what-if: select a gap first (n / N)", timeout=3, markup=False)
            return
        self.post_message(self.GapWhatIf(self, self.model.gap_row(self.gap_index)))

    def action_toggle_critical(self) -> None:
        """Show or hide the critical-path marks (asked of the owner the first time)."""
        if self.critical is None:
            self.post_message(self.CriticalRequested(self))
            return
        self.show_critical = not self.show_critical
        self.refresh()
        self.post_message(self.WindowChanged(self))

    def set_critical(self, critical: PackedLanes) -> None:
        """The critical path's intervals on each of ``full_model``'s lanes; shown at once."""
        self.critical = critical
        self.show_critical = True
        self.refresh()
        self.post_message(self.WindowChanged(self))

    @property
    def critical_shown(self) -> bool:
        """The marks are drawn: computed, switched on and on every lane (the rank lanes have none)."""
        model, critical = self.model, self.critical
        return self.show_critical and critical is not None and model is not None and model is self.full_model and critical.n == len(model.lanes)

    def action_toggle_ranks(self) -> None:
        """Switch between the rank lanes and every lane, keeping the time shown (when both
        lanes share the axis) and the selected gap."""
        self.show_ranks(not self.showing_ranks)

    def show_ranks(self, ranks: bool) -> None:
        """Show the rank lanes (``ranks``) or every lane."""
        full = self.full_model
        if full is None or full.ranks is None or ranks == self.showing_ranks:
            return
        old = self.model
        assert old is not None
        row = old.gap_row(self.gap_index) if self.gap_index >= 0 else -1
        self.rank_lanes = ranks
        self.model = full.ranks if ranks else full
        same_axis = old.origin == self.model.origin and not old.shifted and not self.model.shifted
        self.gap_index = self.model.gap_index(row) if row >= 0 else -1
        self.sync_index = -1
        self.marker = None
        self.lane_cursor = 0
        self.lane_top = 0
        self._cache_key = None
        self._strips = {}
        if self.gap_index >= 0:
            lane, start, end = self.current_gap or (-1, 0, 1)
            self.centre_on(start, end, lane if lane >= 0 else None, zoom=False)
        elif same_axis:
            self.set_window(self.t0, self.t1)
        else:
            self.action_fit()
        self.refresh_bindings()

    def dispatch_at(self, row) -> tuple[int, int, int]:
        """(lane, start, end) of a dispatch (a row of RunView.kernels: ``lane``, ``run``, ``t``,
        ``dur``) on the lanes shown: on the rank lanes, its process's lane on their axis."""
        lane, start = int(row["lane"]), int(row["t"])
        end = start + int(row["dur"])
        model = self.model
        if model is not None and model.run_lane is not None and model.run_shift is not None:
            run = int(row["run"])
            shift = int(model.run_shift[run])
            return int(model.run_lane[run]), start + shift, end + shift
        return lane, start, end

    @property
    def label_width(self) -> int:
        return max(8, min(18, self.size.width // 5))

    @property
    def cells(self) -> int:
        return max(1, self.size.width - self.label_width - 1)

    def set_window(self, t0: int, t1: int) -> None:
        """Show [t0, t1) (relative ns), clamped to the run and at least 1 ns per cell."""
        if self.model is None:
            return
        span = self.model.span
        width = max(int(t1) - int(t0), self.cells)
        width = min(width, max(span, self.cells))
        t0 = int(t0)
        t0 = max(min(t0, span - width), 0) if span > width else 0
        self.t0, self.t1 = t0, t0 + width
        self.refresh()
        self.post_message(self.WindowChanged(self))

    def centre_on(self, start: int, end: int, lane: int | None = None, *, zoom: bool = True) -> None:
        """Centre the view on [start, end); with ``zoom`` make it ~1/3 of the view."""
        width = self.t1 - self.t0
        if zoom:
            width = max(3 * (end - start), self.cells * 8)
        mid = (start + end) // 2
        if lane is not None and self.model and 0 <= lane < len(self.model.lanes):
            self.lane_cursor = lane
            self._scroll_lane_into_view()
        self.set_window(mid - width // 2, mid - width // 2 + width)

    def action_zoom(self, factor: float) -> None:
        mid = (self.t0 + self.t1) // 2
        width = int((self.t1 - self.t0) * factor)
        self.set_window(mid - width // 2, mid - width // 2 + width)

    def action_pan(self, fraction: float) -> None:
        shift = int((self.t1 - self.t0) * fraction)
        self.set_window(self.t0 + shift, self.t1 + shift)

    def action_fit(self) -> None:
        if self.model is not None:
            self.t0, self.t1 = 0, 1
            self.set_window(0, max(self.model.span, 1))

    def action_lane(self, delta: int) -> None:
        if not self.model or not self.model.lanes:
            return
        self.lane_cursor = max(0, min(self.lane_cursor + delta, len(self.model.lanes) - 1))
        self._scroll_lane_into_view()
        self.refresh()
        self.post_message(self.WindowChanged(self))

    def _scroll_lane_into_view(self) -> None:
        if self.size.height <= 1:  # hidden (a jump from another tab): on_resize scrolls once laid out
            return
        rows = self.size.height - 1
        if self.lane_cursor < self.lane_top:
            self.lane_top = self.lane_cursor
        elif self.lane_cursor >= self.lane_top + rows:
            self.lane_top = self.lane_cursor - rows + 1
        # never scroll past the last lane: the rows above the cursor (host rows) stay shown
        # while the lanes fit
        lanes = len(self.model.lanes) if self.model else 0
        self.lane_top = max(0, min(self.lane_top, lanes - rows))

    def on_resize(self) -> None:
        """A jump made while the pane was hidden (no height yet) is laid out again."""
        self._scroll_lane_into_view()
        self._strips = {}
        self.refresh()  # lane_top may have changed: the lines painted before it are stale

    def action_gap(self, step: int) -> None:
        """Jump to the next (step=1) or previous (-1) idle gap after/before the view centre."""
        model = self.model
        gaps = model.gaps if model else None
        if model is None or gaps is None or len(gaps) == 0:
            self.notify("No idle gaps (or the gap analysis is not available)", severity="warning")
            return
        if self.gap_index < 0:
            # first jump: the first gap starting in the view (or the last one before its end)
            starts = gaps[:, 0]
            index = int(np.searchsorted(starts, self.t0)) if step > 0 else int(np.searchsorted(starts, self.t1)) - 1
        else:
            index = self.gap_index + step
        if not 0 <= index < len(gaps):
            self.notify("No more gaps in that direction", severity="information")
            return
        self.gap_index = index
        start, end = int(gaps[index, 0]), int(gaps[index, 1])
        lane = int(model.gap_lanes[index]) if model.gap_lanes is not None else -1
        self.centre_on(start, end, lane if lane >= 0 else None)

    def set_steps(self, starts: np.ndarray, ends: np.ndarray) -> None:
        """The run's steps (relative ns, in order): ruler ticks and the ``[``/``]`` jumps."""
        self.step_marks, self.step_ends = np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)
        self.step_index = -1
        self.refresh()

    def action_step(self, step: int) -> None:
        """Show the next (step=1) or previous (-1) step whole: after the first jump, the one
        after/before the step shown; first, the first step ending in the view (or the last starting
        before its end). A step that starts before the run's first traced event is shown from there."""
        starts = self.step_marks
        if not len(starts):
            self.notify("No steps in this run (n/N jump between idle gaps)", severity="information")
            return
        if self.step_index < 0:
            index = int(np.searchsorted(self.step_ends, self.t0, side="right")) if step > 0 else int(np.searchsorted(starts, self.t1)) - 1
        else:
            index = self.step_index + step
        if not 0 <= index < len(starts):
            self.notify("No more steps in that direction", severity="information")
            return
        self.step_index = index
        self.set_window(max(int(starts[index]), 0), int(self.step_ends[index]))

    def action_sync(self, step: int) -> None:
        """Jump to the next (step=1) or previous (-1) sync bar of the host rows (merged
        sync calls) after/before the view centre, centred and marked."""
        if self.model is None:
            return
        starts, ends, lanes = self.model.sync_bars()
        if not starts.size:
            self.notify("No sync calls on the host rows", severity="information")
            return
        if self.sync_index < 0:
            mid = (self.t0 + self.t1) // 2
            index = int(np.searchsorted(starts, mid)) if step > 0 else int(np.searchsorted(starts, mid)) - 1
        else:
            index = self.sync_index + step
        if not 0 <= index < starts.size:
            self.notify("No more sync bars in that direction", severity="information")
            return
        self.sync_index = index
        start, end, lane = int(starts[index]), int(ends[index]), int(lanes[index])
        self.marker = (lane, start, end)
        self.centre_on(start, end, lane)

    @property
    def current_sync(self) -> tuple[int, int, int] | None:
        """(lane, start, end) of the sync bar jumped to last, or None."""
        if self.model is None or self.sync_index < 0:
            return None
        starts, ends, lanes = self.model.sync_bars()
        return int(lanes[self.sync_index]), int(starts[self.sync_index]), int(ends[self.sync_index])

    def action_centre_selected(self) -> None:
        self.post_message(self.CentreRequested(self))

    def action_open_gap(self) -> None:
        if self.gap_index >= 0 and self.model is not None:
            # the run view's gap row: rank lanes list the gaps in their own (shifted) order
            self.post_message(self.GapOpened(self, self.model.gap_row(self.gap_index)))
        else:
            self.notify("Select a gap first with n / N", severity="information")

    @property
    def current_gap(self) -> tuple[int, int, int] | None:
        if self.model is None or self.model.gaps is None or self.gap_index < 0:
            return None
        lane = int(self.model.gap_lanes[self.gap_index]) if self.model.gap_lanes is not None else -1
        start, end = self.model.gaps[self.gap_index]
        return lane, int(start), int(end)

    # -- rendering ------------------------------------------------------------------------
    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = {}
        self._strips = {}
        self._cache_key = None

    def _style(self, code) -> Style:
        """Rich style of a cell code or a component class name, made once per theme."""
        if isinstance(code, int) and code >= CRITICAL and code not in self._styles:
            self._styles[code] = self._style(code - CRITICAL) + Style(bold=True, underline=True)
        if code not in self._styles:
            base = self._styles[None] = self._styles.get(None) or self.rich_style
            cls = STYLE_CLASSES.get(code) if isinstance(code, int) else code
            self._styles[code] = base + self.get_component_rich_style(cls) if cls else base
        return self._styles[code]

    def frame(self):
        """The (glyph, style) arrays of the current view; rebuilt only when the view changes."""
        key = (self.t0, self.t1, self.cells, self.marker, self.current_gap, self.critical_shown)
        if key != self._cache_key:
            self._frame = build_frame(self.model, self.t0, self.t1, self.cells, self.marker, self.current_gap)
            if self.critical_shown:
                assert self.critical is not None  # critical_shown says so
                style = self._frame[1]
                on_path = (self.critical.occupancy(self.t0, self.t1, self.cells) > 0) & (style != S_MARK) & (style != S_GAP)
                style[on_path] += CRITICAL
            self._cache_key = key
            self._strips = {}
        return self._frame

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self._style(None)
        if self.model is None:
            return Strip([Segment(" " * width, base)])
        lw = self.label_width
        if y == 0:
            return self._ruler(width, lw)
        index = self.lane_top + y - 1
        if index >= len(self.model.lanes):
            return Strip([Segment(" " * width, base)])
        glyph, style = self.frame()
        lane = self.model.lanes[index]
        label_cls = "timeline--label-cursor" if index == self.lane_cursor and self.has_focus else "timeline--label"
        key = (index, label_cls, width)
        if key in self._strips:
            return self._strips[key]
        label = safe_text(lane.label)  # Line-API segments are written as they are
        label = label[: lw - 1] + "…" if len(label) > lw else label
        text = glyph[index].astype("<u4").tobytes().decode("utf-32-le")
        bar = "│"
        if self.ascii:
            label, text, bar = to_ascii(label), to_ascii(text), "|"
        segs = [Segment(label.ljust(lw), self._style(label_cls)), Segment(bar, base)]
        codes = style[index]
        bounds = np.flatnonzero(np.diff(codes)) + 1
        starts = np.concatenate([[0], bounds])
        ends = np.concatenate([bounds, [codes.size]])
        for s, e in zip(starts.tolist(), ends.tolist()):
            segs.append(Segment(text[s:e], self._style(int(codes[s]))))
        strip = Strip(segs, width).crop(0, width)
        self._strips[key] = strip
        return strip

    def _ruler(self, width: int, lw: int) -> Strip:
        cells = self.cells
        step = tick_step(self.t1 - self.t0, cells)
        line = [" "] * cells
        first = -(-self.t0 // step) * step
        ns_per_cell = (self.t1 - self.t0) / cells
        t = first
        while t < self.t1:
            col = int((t - self.t0) / ns_per_cell)
            label = "|" + fmt_tick(t, step)
            if col + len(label) <= cells and all(c == " " for c in line[max(0, col - 1) : col + len(label)]):
                line[col : col + len(label)] = list(label)
            elif 0 <= col < cells and line[col] == " ":
                line[col] = "'"
            t += step
        marks = self.step_marks if not self.model or not self.model.shifted else self.step_marks[:0]  # steps are on the processes' own clocks
        if len(marks):  # a step boundary in the view: a tick where the time labels left room
            inside = marks[(marks >= self.t0) & (marks < self.t1)]
            for t in inside.tolist():
                col = int((t - self.t0) / ns_per_cell)
                if 0 <= col < cells and line[col] in (" ", "'"):
                    line[col] = "▾"
        gap = self.current_gap
        if gap is not None:
            _, gs, ge = gap
            c0 = max(0, int((gs - self.t0) / ns_per_cell))
            c1 = min(cells, int((ge - self.t0) / ns_per_cell) + 1)
            for c in range(c0, c1):
                if line[c] == " ":
                    line[c] = "▔"
        head = "⟷ " + fmt_ns(self.t1 - self.t0)
        bar, ruler = "│", "".join(line)
        if self.ascii:
            head, bar, ruler = to_ascii(head), "|", to_ascii(ruler)
        ruler_style = self._style("timeline--ruler")
        return Strip(
            [Segment(head.ljust(lw)[:lw], ruler_style), Segment(bar, ruler_style), Segment(ruler, ruler_style)],
            width,
        ).crop(0, width)

    def status_text(self) -> str:
        """One line describing the view: window, width, cursor lane, current gap."""
        if self.model is None:
            return ""
        lane = self.model.lanes[self.lane_cursor].label if self.model.lanes else "-"
        # the view's ends with the digits of one cell (of at least 40 cells: the status can
        # be written before the widget has its size)
        cell = (self.t1 - self.t0) / max(self.cells, 40)
        text = f"view {fmt_at(self.t0, cell)}–{fmt_at(self.t1, cell)} ({fmt_ns(self.t1 - self.t0)})  lane: {lane}"
        gap = self.current_gap
        if gap is not None and self.model.gaps is not None:
            text += f"  gap {self.gap_index + 1}/{len(self.model.gaps)}: {fmt_ns(gap[2] - gap[1])} idle"
        sync = self.current_sync
        if sync is not None:
            text += f"  sync {self.sync_index + 1}/{self.model.sync_bars()[0].size}: {fmt_ns(sync[2] - sync[1])}"
        if self.critical_shown:
            text += "  critical path: underlined"
        return text
