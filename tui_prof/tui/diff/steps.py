"""``tuiprof diff A B --tui --steps``: the two aligned steps on one ruler (issue 35).

The screen shows A's step above B's, lane pair by lane pair, on one axis of time since each
step's start (the longer step's span). Each cell shows the unit (kernel, or operator call
when the diff aligned by operator) that covers it, with the most notable status winning:
removed (A) / inserted (B), slower, faster, matched; the idle cells before a unit whose
gap grew or shrank are marked too. ``n``/``N`` walk the differences in time order (the
view follows), ``Enter`` opens both sides of the current one: each side's dispatch and
the gap before it, with its cause. Every number is :class:`~tui_prof.analysis.stepdiff.StepDiff`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Static

from tui_prof.analysis.api import DEFAULT_NOISE_PCT, StepChoiceError, StepDiff, StepSide, diff_steps
from tui_prof.model import RunSet
from tui_prof.render.fmt import fmt_ns, fmt_tick, tick_step
from tui_prof.render.stepdiff import verdict_line
from tui_prof.tui.glyphs import use_ascii
from tui_prof.tui.safe import plain
from tui_prof.tui.screens.back import BackScreen
from tui_prof.tui.workers import COMPUTING, deliver, thread_worker

# cell codes, the higher wins a cell: idle, gap shrunk, gap grown, matched, faster, slower, removed/inserted
IDLE, SHRUNK, GROWN, MATCHED, FASTER, SLOWER, ALONE = range(7)
PRIORITY = {"matched": MATCHED, "faster": FASTER, "slower": SLOWER, "removed": ALONE, "inserted": ALONE}
GLYPHS = {IDLE: " ", SHRUNK: "·", GROWN: "░", MATCHED: "█", FASTER: "F", SLOWER: "S"}
ASCII_GLYPHS = {IDLE: " ", SHRUNK: ",", GROWN: ".", MATCHED: "#", FASTER: "F", SLOWER: "S"}
STYLES = {IDLE: "", SHRUNK: "green", GROWN: "bold red", MATCHED: "blue", FASTER: "cyan", SLOWER: "bold yellow"}
ALONE_STYLE = {"a": "bold red", "b": "bold green"}
ALONE_GLYPH = {"a": "-", "b": "+"}
MAX_LANE_PAIRS = 4  # lane pairs drawn (the ones with the most units); the detail covers every unit
LABEL_WIDTH = 4


@dataclass
class Window:
    """The part of the steps shown: [t0, t1) ns since each step's start."""

    t0: float
    t1: float

    @property
    def width(self) -> float:
        return max(self.t1 - self.t0, 1.0)


def step_span(d: StepDiff) -> int:
    """ns since the step's start covering both steps and their GPU work."""
    ends = [d.a.choice.wall_ns, d.b.choice.wall_ns]
    for side in (d.a, d.b):
        if len(side.units):
            ends.append(int(side.units["end"].max()) - side.choice.start_ns)
    return max(max(ends), 1)


def paint(side: StepSide, rows: np.ndarray, window: Window, cells: int) -> np.ndarray:
    """Cell codes of one lane of one side: for each cell the highest code among the units
    ``rows`` (and the changed gaps before them) that cover it."""
    codes = np.zeros(cells, dtype=np.int8)
    if not len(rows):
        return codes
    u = side.units.iloc[rows]
    origin = side.choice.start_ns
    scale = cells / window.width
    start = u["start"].to_numpy().astype(np.float64) - origin
    end = u["end"].to_numpy().astype(np.float64) - origin
    pri = u["status"].map(PRIORITY).fillna(MATCHED).to_numpy().astype(np.int8)
    gap = u["gap_ns"].to_numpy().astype(np.float64)
    gap_pri = np.where(u["gap_status"].to_numpy() == "grown", GROWN, np.where(u["gap_status"].to_numpy() == "shrunk", SHRUNK, IDLE)).astype(np.int8)
    spans = [(start - gap, start, gap_pri), (start, end, pri)]
    for s, e, p in spans:
        c0 = np.floor((s - window.t0) * scale).astype(np.int64)
        c1 = np.maximum(np.ceil((e - window.t0) * scale).astype(np.int64), c0 + 1)
        seen = np.flatnonzero((p > IDLE) & (c1 > 0) & (c0 < cells))
        for i in seen.tolist():
            lo, hi = max(int(c0[i]), 0), min(int(c1[i]), cells)
            np.maximum(codes[lo:hi], p[i], out=codes[lo:hi])
    return codes


def row_text(codes: np.ndarray, tag: str, ascii_: bool, highlight: tuple[int, int] | None) -> Text:
    """One ruler row as styled text; ``highlight``: the cells of the current difference."""
    glyphs = ASCII_GLYPHS if ascii_ else GLYPHS
    out = Text()
    for i, code in enumerate(codes.tolist()):
        ch = ALONE_GLYPH[tag] if code == ALONE else glyphs[code]
        style = ALONE_STYLE[tag] if code == ALONE else STYLES[code]
        if highlight is not None and highlight[0] <= i < highlight[1]:
            style = f"{style} reverse".strip()
            ch = ch if ch != " " else ("^" if ascii_ else "▔")
        out.append(ch, style)
    return out


def axis_text(window: Window, cells: int) -> Text:
    """Tick labels of time since the step's start."""
    step = tick_step(window.width, cells)
    line = [" "] * cells
    first = math.ceil(window.t0 / step) * step
    t = first
    while t < window.t1:
        c = int((t - window.t0) / window.width * cells)
        label = "|" + fmt_tick(int(t), step)
        if c + len(label) <= cells and all(ch == " " for ch in line[max(c - 1, 0) : c + len(label)]):
            line[c : c + len(label)] = list(label)
        t += step
    return Text("".join(line), "dim")


def lane_pairs(d: StepDiff) -> list[dict[str, Any]]:
    """The lane pairs drawn: the ones with the most units, at most ``MAX_LANE_PAIRS``."""
    return sorted(d.lanes, key=lambda p: -(p["units_a"] + p["units_b"]))[:MAX_LANE_PAIRS]


def describe(d: StepDiff, side: str, row: int) -> list[str]:
    """Both sides of one difference: the unit of ``side`` and its partner, each with the
    gap before it and its cause (plain strings; the widget sanitises them)."""
    this, other = (d.a, d.b) if side == "a" else (d.b, d.a)
    u = this.units.iloc[row]
    partner = int(u["partner"])
    what = [str(u["status"])] if u["status"] != "matched" else []
    if u["gap_status"]:
        what.append(f"gap before it {u['gap_status']}")
    lines = [f"{', '.join(what) or 'matched'}: {u['key']}"]
    lines += unit_lines(this, row, "A" if side == "a" else "B")
    if partner >= 0:
        lines += unit_lines(other, partner, "B" if side == "a" else "A")
    else:
        lines.append(f"{'B' if side == 'a' else 'A'}: no partner ({'removed in B' if side == 'a' else 'inserted in B'})")
    return lines


def unit_lines(side: StepSide, row: int, tag: str) -> list[str]:
    u = side.units.iloc[row]
    at = int(u["start"]) - side.choice.start_ns
    head = f"  {tag} {side.choice.label}: {u['name']}"
    body = f"    at +{fmt_ns(at)}, {fmt_ns(int(u['dur']))} on {u['lane']}" + (f", {int(u['kernels'])} kernels" if int(u["kernels"]) > 1 else "")
    gap = int(u["gap_ns"])
    gap_line = f"    idle gap before it: {fmt_ns(gap)}" + (f" ({u['gap_cause']})" if u["gap_cause"] else "") if gap else "    no idle gap before it"
    if u["gap_status"]:
        gap_line += f": {u['gap_status']}"
    return [head, body, gap_line]


class StepRuler(Static):
    """A's and B's aligned steps on one ruler, lane pair by lane pair."""

    def __init__(self, d: StepDiff | None, **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self.d = d
        self.window = Window(0.0, float(step_span(d)) if d is not None else 1.0)
        self.current: tuple[str, int] | None = None
        self.ascii = use_ascii()

    def render(self) -> Text:
        if self.d is None:
            return Text("")
        cells = max(self.size.width - LABEL_WIDTH, 10)
        out = Text()
        out.append(" " * LABEL_WIDTH)
        out.append_text(axis_text(self.window, cells))
        for pair in lane_pairs(self.d):
            for tag, side, lane in (("a", self.d.a, pair["a"]), ("b", self.d.b, pair["b"])):
                rows = np.flatnonzero(side.units["lane"].to_numpy() == lane) if lane is not None else np.array([], np.int64)
                highlight = self._highlight(tag, side, rows, cells)
                out.append("\n")
                out.append(f"{tag.upper()}{'':<{LABEL_WIDTH - 1}}", "bold")
                out.append_text(row_text(paint(side, rows, self.window, cells), tag, self.ascii, highlight))
        return out

    def _highlight(self, tag: str, side: StepSide, rows: np.ndarray, cells: int) -> tuple[int, int] | None:
        """Cells of the current difference on this row (its unit, or its partner)."""
        if self.current is None or self.d is None:
            return None
        cur_side, cur_row = self.current
        row = cur_row if cur_side == tag else int((self.d.a if cur_side == "a" else self.d.b).units["partner"].iat[cur_row])
        if row < 0 or row not in set(rows.tolist()):
            return None
        u = side.units.iloc[row]
        scale = cells / self.window.width
        s = float(u["start"] - side.choice.start_ns - (u["gap_ns"] if u["gap_status"] else 0))
        e = float(u["end"] - side.choice.start_ns)
        c0 = int(math.floor((s - self.window.t0) * scale))
        return c0, max(int(math.ceil((e - self.window.t0) * scale)), c0 + 1)


class StepDiffScreen(BackScreen):
    """The step-aligned diff: the ruler, the verdict, the current difference."""

    DEFAULT_CSS = """
    StepDiffScreen #sd-title { height: auto; padding: 0 1; text-style: bold; }
    StepDiffScreen #sd-ruler { height: auto; padding: 0 1; }
    StepDiffScreen #sd-detail { height: 1fr; padding: 0 1; }
    """
    BINDINGS = [
        Binding("n", "walk(1)", "Next difference", id="steps.next"),
        Binding("N", "walk(-1)", "Prev difference", id="steps.prev"),
        Binding("enter", "open", "Both sides", id="steps.open"),
        Binding("w,plus,equals_sign", "zoom(0.5)", "Zoom", id="steps.zoom_in"),
        Binding("minus", "zoom(2.0)", "Unzoom", id="steps.zoom_out"),
        Binding("a", "pan(-0.25)", "Pan left", show=False),
        Binding("d", "pan(0.25)", "Pan right", show=False),
        Binding("0", "fit", "Fit", id="steps.fit"),
    ]

    def __init__(
        self,
        d: StepDiff | None = None,
        *,
        runsets: tuple[RunSet, RunSet] | None = None,
        step: int | None = None,
        step_b: int | None = None,
        noise_pct: float = DEFAULT_NOISE_PCT,
    ) -> None:
        """``d``: the diff to show; else it is computed from ``runsets`` in a thread worker."""
        super().__init__()
        self.d = d
        self.runsets = runsets
        self.step_numbers = (step, step_b)
        self.noise_pct = noise_pct
        self.diffs = d.differences() if d is not None else []
        self.index = -1

    def compose(self) -> ComposeResult:
        yield Static(self._title() if self.d is not None else plain(f"Step-aligned diff · {COMPUTING}"), id="sd-title")
        yield StepRuler(self.d, id="sd-ruler")
        yield Static(self._detail() if self.d is not None else "", id="sd-detail")
        yield Footer()

    def on_mount(self) -> None:
        if self.d is None and self.runsets is not None:
            self._compute()

    @thread_worker("step-aligned diff", group="stepdiff", exclusive=True)
    def _compute(self) -> None:
        assert self.runsets is not None  # on_mount starts it only then
        a, b = self.runsets
        try:
            d = diff_steps(a, b, step=self.step_numbers[0], step_b=self.step_numbers[1], noise_pct=self.noise_pct)
        except StepChoiceError as err:  # a step number a run lacks: said where the diff would be
            deliver(self, self.show_error, plain(f"Step-aligned diff: {err}", "red"))
            return
        deliver(self, self._loaded, d)

    def show_error(self, text: Text) -> None:
        """A failed step diff, where the title said "computing…"."""
        self.query_one("#sd-title", Static).update(text)

    def _loaded(self, d: StepDiff) -> None:
        self.d = d
        self.diffs = d.differences()
        ruler = self.query_one(StepRuler)
        ruler.d = d
        ruler.window = Window(0.0, float(step_span(d)))
        self.query_one("#sd-title", Static).update(self._title())
        self._refresh()

    def _title(self) -> Text:
        assert self.d is not None
        a, b = self.d.a.choice, self.d.b.choice
        by = "operator" if self.d.aligned_by == "operator" else "normalised kernel name"
        head = f"Step-aligned diff · A {a.label} ({fmt_ns(a.wall_ns)}) vs B {b.label} ({fmt_ns(b.wall_ns)}) · aligned by {by}"
        legend = "legend: █ matched  S slower  F faster  - removed (A)  + inserted (B)  ░ gap grown  · gap shrunk"
        if use_ascii():
            legend = "legend: # matched  S slower  F faster  - removed (A)  + inserted (B)  . gap grown  , gap shrunk"
        return plain(f"{head}\n{verdict_line(self.d)}\n{legend}")

    def _detail(self) -> Text:
        if self.d is None:
            return Text("")
        counts = (
            f"{len(self.diffs)} differences: {sum(r['count'] for r in self.d.inserted)} inserted, {sum(r['count'] for r in self.d.removed)} removed, "
            f"{len(self.d.slower)} slower and {len(self.d.faster)} faster names, {self.d.gaps['grown_count']} gaps grown, "
            f"{self.d.gaps['shrunk_count']} shrunk · n/N walk, Enter both sides"
        )
        if self.index < 0:
            return plain(counts + ("\n" + "\n".join(self.d.notes) if self.d.notes else ""))
        side, row, _ = self.diffs[self.index]
        return plain(f"difference {self.index + 1} of {len(self.diffs)}\n" + "\n".join(describe(self.d, side, row)))

    def _refresh(self) -> None:
        ruler = self.query_one(StepRuler)
        ruler.current = None if self.index < 0 else self.diffs[self.index][:2]
        ruler.refresh(layout=True)
        self.query_one("#sd-detail", Static).update(self._detail())

    def action_walk(self, step: int) -> None:
        """Next (previous) difference in time order; the view follows it."""
        if self.d is None:
            return
        if not self.diffs:
            self.notify("no differences between the two steps")
            return
        self.index = (self.index + step) % len(self.diffs) if self.index >= 0 else (0 if step > 0 else len(self.diffs) - 1)
        t = self.diffs[self.index][2]
        w = self.query_one(StepRuler).window
        if not w.t0 <= t < w.t1:
            self._set_window(t - w.width / 2, w.width)
        self._refresh()

    def _set_window(self, t0: float, width: float) -> None:
        """Show ``width`` ns from ``t0``, kept inside the steps' span where it fits."""
        span = float(step_span(self.d)) if self.d is not None else width
        t0 = min(max(t0, 0.0), max(span - width, 0.0))
        self.query_one(StepRuler).window = Window(t0, t0 + width)

    def action_zoom(self, factor: float) -> None:
        ruler = self.query_one(StepRuler)
        w = ruler.window
        centre = self.diffs[self.index][2] if self.index >= 0 else (w.t0 + w.t1) / 2
        width = max(w.width * factor, 1_000.0)
        self._set_window(centre - width / 2, width)
        self._refresh()

    def action_pan(self, share: float) -> None:
        w = self.query_one(StepRuler).window
        self._set_window(w.t0 + share * w.width, w.width)
        self._refresh()

    def action_fit(self) -> None:
        if self.d is None:
            return
        self.query_one(StepRuler).window = Window(0.0, float(step_span(self.d)))
        self._refresh()

    def action_open(self) -> None:
        if self.d is None:
            return
        if self.index < 0:
            self.action_walk(1)
            if self.index < 0:
                return
        side, row, _ = self.diffs[self.index]
        self.app.push_screen(StepPairScreen(self.d, side, row))


class StepPairScreen(BackScreen):
    """Both sides of one difference: each side's dispatch and the gap before it."""

    DEFAULT_CSS = """
    StepPairScreen #sp-body { height: 1fr; padding: 0 1; }
    """

    def __init__(self, d: StepDiff, side: str, row: int) -> None:
        super().__init__()
        self.d, self.side, self.row = d, side, row

    def compose(self) -> ComposeResult:
        yield Static(plain("\n".join(pair_lines(self.d, self.side, self.row))), id="sp-body")
        yield Footer()


def pair_lines(d: StepDiff, side: str, row: int) -> list[str]:
    """The pair screen's text: both units, then the step's idle gaps around them per side."""
    lines = describe(d, side, row)
    this = d.a if side == "a" else d.b
    partner = int(this.units["partner"].iat[row])
    for tag, s, r in (("A", d.a, row if side == "a" else partner), ("B", d.b, row if side == "b" else partner)):
        if r < 0:
            continue
        g = s.gaps
        near = g[g["before"] == r] if len(g) else pd.DataFrame()
        for gap in near.itertuples(index=False):
            lines.append(
                f"  {tag} gap: {fmt_ns(int(gap.start) - s.choice.start_ns)} → {fmt_ns(int(gap.end) - s.choice.start_ns)} since the step's start, "
                f"{fmt_ns(int(gap.duration_ns))}, cause {gap.cause}"
            )
    return lines
