"""``tuiprof diff A B --tui``: the diff screen and the matched pair's screen.

Top: the summary delta table (improved / regressed / within noise, threshold shown).
Middle: the kernel diff table (:func:`tui_prof.analysis.diff.kernel_diff`), sortable;
Enter opens the matched pair's dispatches (A and B side by side). Bottom: the two runs'
timelines stacked, each on a relative axis from its own run's start, sharing one span
(the longer run's), so a zoom or pan in either one is applied to the other.

Every number comes from :mod:`tui_prof.analysis.diff`; lanes and gaps from
:func:`tui_prof.tui.view.runview.build_view` (one per run). The match-mode switch (``m``)
recomputes only the kernel matching (:func:`~tui_prof.analysis.diff.rematch`) in a
thread worker; the pair screen selects its dispatches in one too.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import get_current_worker

from tui_prof.analysis.api import (
    DEFAULT_NOISE_PCT,
    DEFAULT_NOISE_PP,
    MATCH_MODES,
    DiffResult,
    diff_runsets,
    group_key,
    hotspots,
    rematch,
)
from tui_prof.model import RunSet
from tui_prof.render.diff import DOMAIN_HEADERS, domain_rows, fmt_metric, metric_rows
from tui_prof.render.fmt import fmt_at, fmt_ns, fmt_pct
from tui_prof.render.safe import safe_text
from tui_prof.tui.safe import plain
from tui_prof.tui.screens.back import BackScreen
from tui_prof.tui.screens.drilldown import DISPATCH_COLUMNS
from tui_prof.tui.view.lanes import TimelineModel
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.view.stats import TRACE_COMMAND, missing_trace
from tui_prof.tui.widgets.scroll import KeyScroll
from tui_prof.tui.widgets.table import Column, TableView
from tui_prof.tui.widgets.timeline import Timeline
from tui_prof.tui.workers import COMPUTING, deliver, thread_worker

DIFF_COLUMNS = (
    Column("key", "kernel", 40, "text"),
    Column("status", "status", 7, "text"),
    Column("calls_a", "calls A", 7),
    Column("calls_b", "calls B", 7),
    Column("total_a_ns", "total A", 9, "ns"),
    Column("total_b_ns", "total B", 9, "ns"),
    Column("delta_ns", "Δ total", 9, "ns"),
    Column("delta_pct", "Δ %", 7, "pct"),
    Column("ratio", "ratio", 6, "float"),
    Column("avg_a_ns", "avg A", 9, "ns"),
    Column("avg_b_ns", "avg B", 9, "ns"),
    Column("delta_calls", "Δ calls", 7),
    Column("share_a", "share A", 8, "pct"),
    Column("share_b", "share B", 8, "pct"),
)
COMPACT_HEIGHT = 40  # rows: below, the sections are shown one at a time
SECTIONS = ("summary", "kernels", "timelines")
SECTION_FOCUS = {"summary": "#diff-summary", "kernels": "#diff-table", "timelines": "#tl-a"}
VERDICT_STYLE = {"improved": "bold green", "regressed": "bold red", "within noise": "dim", "changed": "yellow", "n/a": "dim"}
MATCH_LABELS = {"name": "name", "normalized": "normalised name", "category": "category"}


def linked_models(views: tuple[RunView, RunView]) -> tuple[TimelineModel, TimelineModel]:
    """A's and B's timeline models on one span (the longer run's): zoom-linkable."""
    span = max(views[0].timeline.span, views[1].timeline.span)
    return linked_model(views[0], span, "A"), linked_model(views[1], span, "B")


def linked_model(view: RunView, span: int, tag: str) -> TimelineModel:
    """The run's timeline model with lane labels prefixed by ``tag`` and the shared ``span``."""
    tm = view.timeline
    lanes = [dataclasses.replace(lane, label=f"{tag} {lane.label}") for lane in tm.lanes]
    return TimelineModel(lanes, origin=tm.origin, span=max(int(span), 1), gaps=tm.gaps, gap_lanes=tm.gap_lanes)


def match_keys(view: RunView, by: str, rules=None) -> np.ndarray:
    """The match key (analysis.hotspots.group_key) of each of the view's kernel rows."""
    return group_key(view.kernels, by, rules).astype(str).to_numpy()


def verdict_cell(m: dict) -> str:
    """A metric's verdict as the table shows it: "n/a (no trace in A)" for a metric a side
    has no data for, else the status."""
    return m["reason"].split(":", 1)[0] if m["status"] == "n/a" else m["status"]


def metrics_table(result: DiffResult) -> Table:
    """The summary delta table as a Rich table (verdict coloured). Numbers are never cut:
    their columns are as wide as their longest cell, the labels and verdicts wrap instead."""
    rows = [(*cells[:6], verdict_cell(m)) for cells, m in zip(metric_rows(result), result.metrics, strict=True)]  # the CLI's cells
    table = Table(expand=True, show_edge=False, pad_edge=False, box=None, header_style="bold", padding=(0, 0, 0, 2))
    for i, name in enumerate(("metric", "A", "B", "Δ (B−A)", "Δ %", "noise", "verdict")):
        if i == 0:  # labels wrap (at word breaks) when the width is short
            table.add_column(name, overflow="fold", ratio=1, min_width=12)
        elif i == 6:
            table.add_column(name, overflow="fold", ratio=1, min_width=len("within noise"))
        else:
            width = max(len(name), *(len(r[i]) for r in rows))
            table.add_column(name, justify="right", no_wrap=True, min_width=width, max_width=width)
    for m, r in zip(result.metrics, rows):
        table.add_row(*(plain(c) for c in r[:6]), plain(r[6], VERDICT_STYLE.get(m["status"], "")))
    return table


def reason_lines(result: DiffResult) -> Text:
    """Why each verdict that needs a reason is what it is: "changed" (a neutral metric or a
    share whose denominator moved), "regressed", and "n/a" (metrics with the same reason
    on one line)."""
    text = plain()
    na: dict[str, list[str]] = {}
    for m in result.metrics:
        if m["status"] == "n/a":
            na.setdefault(m["reason"], []).append(m["label"])
        elif m["status"] in ("changed", "regressed"):
            text.append(f"{m['label']}", "bold")
            text.append(f" {m['status']}: ", VERDICT_STYLE.get(m["status"], ""))
            text.append(m["reason"] + "\n")
    for reason, labels in na.items():
        verdict, _, rest = reason.partition(":")
        text.append(", ".join(labels), "bold")
        text.append(f" {verdict}:", "dim")
        text.append(rest + "\n")
    text.rstrip()
    return text


def domains_table(result: DiffResult) -> Table:
    """Calls and time per profiler domain (analysis.diff.domain_diff)."""
    rows = domain_rows(result)
    table = Table(expand=True, show_edge=False, pad_edge=False, box=None, header_style="bold", title="Domains", title_justify="left", padding=(0, 0, 0, 1))
    for i, name in enumerate(DOMAIN_HEADERS):
        if i == 0:
            table.add_column(name, overflow="fold", ratio=1, min_width=max(len(r[0]) for r in rows))
        else:
            width = max(len(name), *(len(r[i]) for r in rows))
            table.add_column(name, justify="left" if i == 1 else "right", no_wrap=True, min_width=width, max_width=width)
    for r in rows:
        table.add_row(*(plain(c) for c in r))  # a domain name comes from a file: never markup
    return table


def summary_renderable(result: DiffResult):
    """The summary section: the metric deltas, the reasons of their verdicts and, when a
    side holds the profiler's statistics, the per-domain deltas."""
    parts: list = [metrics_table(result)]
    reasons = reason_lines(result)
    if len(reasons):
        parts += [plain("why", "bold underline"), reasons]
    if result.domains and any(doc.get("stats", {}).get("tables") for doc in (result.summary_a, result.summary_b)):
        parts.append(domains_table(result))
    return Group(*parts)


def fmt_share(value) -> str:
    """A kernel's share of its run's kernel time (two decimals, as the profiler writes it)."""
    return fmt_pct(value, 2)


class DiffScreen(Screen):
    """Summary deltas, kernel diff table, two zoom-linked timelines.

    On a terminal lower than :data:`COMPACT_HEIGHT` rows the three sections do not fit
    together: the screen shows one at a time (``1`` summary, ``2`` kernels, ``3``
    timelines), each with the whole height, so no number is cut and B's timeline is seen.
    """

    DEFAULT_CSS = """
    #diff-summary { height: auto; max-height: 50%; padding: 0 1; scrollbar-size-vertical: 1; }
    #diff-table { height: 1fr; min-height: 5; }
    #diff-timelines { height: 40%; border-top: solid $primary; }
    #tl-a, #tl-b { height: 1fr; }
    #diff-metrics { width: 100%; }
    #tl-missing { height: auto; padding: 0 1; }
    .tl-label { height: 1; padding: 0 1; text-style: bold; }
    DiffScreen.-compact #diff-summary, DiffScreen.-compact #diff-table, DiffScreen.-compact #diff-timelines { display: none; }
    DiffScreen.-compact.-summary #diff-summary { display: block; height: 1fr; max-height: 100%; }
    DiffScreen.-compact.-kernels #diff-table { display: block; }
    DiffScreen.-compact.-timelines #diff-timelines { display: block; height: 1fr; border-top: none; }
    """
    BINDINGS = [
        Binding("1", "section('summary')", "Summary", id="diff.summary"),
        Binding("2", "section('kernels')", "Kernels", id="diff.kernels"),
        Binding("3", "section('timelines')", "Timelines", id="diff.timelines"),
        Binding("m", "match", "Match by", id="diff.match"),
        Binding("r", "reset_order", "Order by |Δ|", id="diff.order"),
        # these work with the default focus (the kernel table: s sorts it there); on a
        # focused timeline its own keys (w/s/a/d/n/N) move both, through the zoom link
        Binding("w,plus,equals_sign", "zoom(0.5)", "Zoom both", id="diff.zoom_in"),
        Binding("minus", "zoom(2.0)", "Unzoom both", id="diff.zoom_out"),
        Binding("a", "pan(-0.25)", "Pan both left", show=False),
        Binding("d", "pan(0.25)", "Pan both right", show=False),
        Binding("n", "gap(1)", "Next gap (A)", show=False),
        Binding("N", "gap(-1)", "Prev gap (A)", show=False),
        Binding("0", "fit", "Fit both", id="diff.fit"),
        Binding("t", "goto_kernel", "Kernel on timelines", id="diff.timeline"),
    ]

    def __init__(self, by: str = "name", rules=None, noise_pct: float | None = None, noise_pp: float | None = None) -> None:
        super().__init__()
        self.by = by
        self.rules = rules
        self.noise_pct = DEFAULT_NOISE_PCT if noise_pct is None else noise_pct
        self.noise_pp = DEFAULT_NOISE_PP if noise_pp is None else noise_pp
        self.views: tuple[RunView, RunView] | None = None
        self.runsets: tuple[RunSet, RunSet] | None = None
        self.result: DiffResult | None = None
        self.keys: tuple[np.ndarray, np.ndarray] | None = None  # match key of each kernel row, per side
        self.pending_by: str | None = None  # match mode being computed in a worker
        self.section = "summary"  # the section shown on a compact terminal

    def compose(self) -> ComposeResult:
        yield Static("tuiprof diff · loading…", id="diff-title", classes="title")
        with KeyScroll(id="diff-summary"):
            yield Static("", id="diff-metrics")
        yield Static("", id="diff-status", classes="status")
        yield TableView(list(DIFF_COLUMNS), id="diff-table")
        with Vertical(id="diff-timelines"):
            yield Static("", id="tl-missing")
            yield Static("", id="tl-a-label", classes="tl-label")
            yield Timeline(id="tl-a")
            yield Static("", id="tl-b-label", classes="tl-label")
            yield Timeline(id="tl-b")
            yield Static("", id="tl-status", classes="status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#diff-table", TableView).formatters.update(share_a=fmt_share, share_b=fmt_share)
        self.query_one("#tl-missing").display = False
        self._layout()

    def on_resize(self) -> None:
        self._layout()

    @property
    def compact(self) -> bool:
        return self.has_class("-compact")

    def _layout(self) -> None:
        """Compact (one section at a time) below COMPACT_HEIGHT rows."""
        self.set_class(self.size.height < COMPACT_HEIGHT, "-compact")
        for section in SECTIONS:
            self.set_class(section == self.section, f"-{section}")

    def action_section(self, section: str) -> None:
        """Show (compact terminal) or focus a section: 1 summary, 2 kernels, 3 timelines."""
        self.section = section
        self._layout()
        self.query_one(SECTION_FOCUS[section]).focus()
        self.update_status()

    # -- data ---------------------------------------------------------------------------
    def show_failure(self, text: str) -> None:
        self.query_one("#diff-title", Static).update(plain("tuiprof diff", no_wrap=True))
        self.query_one("#diff-metrics", Static).update(plain(text))  # names files: never markup

    def diff(self, runsets: tuple[RunSet, RunSet]) -> DiffResult:
        """analysis.diff.diff_runsets for the current match mode and noise thresholds (reads
        only settings: the load worker calls it off the event loop)."""
        return diff_runsets(*runsets, by=self.by, rules=self.rules, noise_pct=self.noise_pct, noise_pp=self.noise_pp)

    def match_keys(self, views: tuple[RunView, RunView], by: str) -> tuple[np.ndarray, np.ndarray]:
        """Both sides' match keys for mode ``by`` (reads only settings: called in workers)."""
        return match_keys(views[0], by, self.rules), match_keys(views[1], by, self.rules)

    def show(
        self,
        views: tuple[RunView, RunView],
        runsets: tuple[RunSet, RunSet],
        result: DiffResult,
        keys: tuple[np.ndarray, np.ndarray],
        models: tuple[TimelineModel, TimelineModel],
    ) -> None:
        """Fill the screen with what the load worker computed: the diff for the current
        match mode, each side's match keys and the two linked timeline models."""
        self.views, self.runsets = views, runsets
        self.query_one("#tl-a", Timeline).set_model(models[0])
        self.query_one("#tl-b", Timeline).set_model(models[1])
        self.show_result(result, keys)
        # a compact terminal opens on the summary (the verdicts), a large one on the table
        self.query_one(SECTION_FOCUS[self.section] if self.compact else "#diff-table").focus()

    def show_result(self, result: DiffResult, keys: tuple[np.ndarray, np.ndarray]) -> None:
        """Fill every pane with ``result`` (its ``by`` is the match mode shown)."""
        assert self.runsets is not None  # the runs are shown first
        a, b = self.runsets
        self.by, self.result, self.keys = result.by, result, keys
        c = result.counts()
        title = (
            f"tuiprof diff · A: {a.name} ({', '.join(a.formats) or '-'}) · B: {b.name} ({', '.join(b.formats) or '-'})"
            f" · by {MATCH_LABELS[self.by]}: {c['matched']} matched, {c['added']} added, {c['removed']} removed"
        )
        self.query_one("#diff-title", Static).update(plain(title, no_wrap=True, overflow="ellipsis"))
        self.query_one("#diff-metrics", Static).update(summary_renderable(result))
        table = self.query_one("#diff-table", TableView)
        table.set_title(0, f"kernel ({MATCH_LABELS[self.by]})")
        table.set_data(result.kernels, text_key="key")
        self.update_status()
        self._timeline_labels()

    def _timeline_labels(self) -> None:
        """Each timeline's label (span and GPU idle, or that the run has no trace); a run
        without a trace has its timeline hidden and the flags that record one shown."""
        assert self.views is not None and self.runsets is not None and self.result is not None
        untraced = []
        for side, tag in ((0, "a"), (1, "b")):
            view, name = self.views[side], self.runsets[side].name
            traced = not missing_trace(view.runset, view.stats)
            if traced:
                span = fmt_metric(self.result.metric("span_ns")[tag], "ns")
                idle = fmt_metric(self.result.metric("idle_pct")[tag], "pct")
                label = f"{tag.upper()} {name} · span {span} · GPU idle {idle}"
            else:
                label = f"{tag.upper()} {name} · no trace (statistics only)"
                untraced.append(tag.upper())
            self.query_one(f"#tl-{tag}-label", Static).update(plain(label, no_wrap=True, overflow="ellipsis"))
            self.query_one(f"#tl-{tag}", Timeline).display = traced
        missing = self.query_one("#tl-missing", Static)
        missing.display = bool(untraced)
        self.query_one("#tl-status").display = len(untraced) < 2
        self.query_one("#diff-timelines").styles.height = "auto" if len(untraced) == 2 else None
        if untraced:
            missing.update(plain(f"No trace in {' and '.join(untraced)}: nothing to draw there. Record one with {TRACE_COMMAND}.", "dim"))

    def update_status(self) -> None:
        table = self.query_one("#diff-table", TableView)
        model = table.model
        if model is None:
            return
        if self.pending_by is not None:
            text = f"matching kernels by {MATCH_LABELS[self.pending_by]}: {COMPUTING}"
            self.query_one("#diff-status", Static).update(plain(text, "dim italic", no_wrap=True, overflow="ellipsis"))
            return
        sort = f"{model.sort_key} {'↓' if model.descending else '↑'}" if model.sort_key else "|Δ total| ↓"
        if self.compact and self.section == "summary":
            text = "2 kernels (s sort) · 3 timelines · w/- zoom · a/d pan · n/N gap · ? keys"
        elif self.compact and self.section == "timelines":
            text = "timelines · w/-: zoom · a/d: pan · n/N: gap · 0: fit · Tab: A↔B · 1 summary · 2 kernels"
        else:
            text = (
                f"{len(model)} kernels · sort {sort} · noise ±{self.noise_pct:g}% / ±{self.noise_pp:g}pp · "
                "Enter: pairs · m: match · s: sort · r: |Δ| order · w/-: zoom · a/d: pan · n/N: gap · "
                + ("1: summary · 3: timelines · " if self.compact else "")
                + "?: keys"
            )
        self.query_one("#diff-status", Static).update(plain(text, no_wrap=True, overflow="ellipsis"))

    def key_rows(self, side: int, key: str) -> pd.DataFrame:
        """Dispatches of run ``side`` (0 = A, 1 = B) whose match key equals ``key``."""
        assert self.views is not None and self.keys is not None  # the runs are shown first
        return self.views[side].kernels[self.keys[side] == key]

    # -- actions --------------------------------------------------------------------------
    def action_match(self) -> None:
        """Next match mode: only the kernel matching depends on it, recomputed in a worker."""
        if self.runsets is None:
            return
        current = self.pending_by or self.by
        self.pending_by = MATCH_MODES[(MATCH_MODES.index(current) + 1) % len(MATCH_MODES)]
        self.update_status()
        self._match(self.pending_by)

    @thread_worker("kernel matching", group="diff-match", exclusive=True)
    def _match(self, by: str) -> None:
        assert self.runsets is not None and self.views is not None and self.result is not None  # the action waits for them
        a, b = self.runsets
        result = rematch(self.result, a, b, by, rules=self.rules)
        if get_current_worker().is_cancelled:
            return
        keys = self.match_keys(self.views, by)
        if get_current_worker().is_cancelled:
            return
        deliver(self, self._matched, result, keys)

    def show_error(self, text: Text) -> None:
        """A failed match mode in the status line (where it said "computing…")."""
        self.pending_by = None
        self.query_one("#diff-status", Static).update(text)

    def _matched(self, result: DiffResult, keys: tuple[np.ndarray, np.ndarray]) -> None:
        if self.pending_by != result.by:
            return  # a later key asked for another mode
        self.pending_by = None
        self.show_result(result, keys)
        self.notify(safe_text(f"kernels matched by {MATCH_LABELS[self.by]}"), timeout=2, markup=False)

    def action_reset_order(self) -> None:
        table = self.query_one("#diff-table", TableView)
        if table.model is not None:
            table.model.set_sort(None, False)
            table.cursor = 0
            table.refresh()
            self.update_status()

    def _timelines(self) -> tuple[Timeline, Timeline]:
        return self.query_one("#tl-a", Timeline), self.query_one("#tl-b", Timeline)

    def action_zoom(self, factor: float) -> None:
        self._timelines()[0].action_zoom(factor)

    def action_pan(self, fraction: float) -> None:
        self._timelines()[0].action_pan(fraction)  # the zoom link moves B

    def action_gap(self, step: int) -> None:
        self._timelines()[0].action_gap(step)

    def action_fit(self) -> None:
        self._timelines()[0].action_fit()

    def action_goto_kernel(self) -> None:
        """Mark and centre the selected kernel's first dispatch in each run (zoom from A's)."""
        row = self.query_one("#diff-table", TableView).current_row
        if row is None or self.views is None or self.pending_by is not None:
            return
        tla, tlb = self._timelines()
        first = None
        for side, tl in ((0, tla), (1, tlb)):
            rows = self.key_rows(side, str(row["key"]))
            if len(rows):
                pick = rows.iloc[0]
                start, end = int(pick["t"]), int(pick["t"] + pick["dur"])
                tl.marker = (int(pick["lane"]), start, end)
                tl.refresh()
                first = first or (start, end, int(pick["lane"]), tl)
        if first:
            start, end, lane, tl = first
            tl.centre_on(start, end, lane)

    # -- events ---------------------------------------------------------------------------
    @on(Timeline.WindowChanged)
    def _window_changed(self, event: Timeline.WindowChanged) -> None:
        """Zoom link: apply the changed timeline's window to the other one."""
        tla, tlb = self._timelines()
        source = event.timeline
        other = tlb if source is tla else tla
        if other.model is not None and (other.t0, other.t1) != (source.t0, source.t1):
            other.set_window(source.t0, source.t1)
        cell = (source.t1 - source.t0) / max(source.cells, 40)  # the view's ends to one cell, as the main timeline's status
        self.query_one("#tl-status", Static).update(
            plain(
                f"view {fmt_at(source.t0, cell)}–{fmt_at(source.t1, cell)} ({fmt_ns(source.t1 - source.t0)}) of each run from its start · "
                "w/+ -: zoom both · a/d: pan both · 0: fit · n/N: next/prev gap · t: kernel · Tab: focus a timeline",
                no_wrap=True,
                overflow="ellipsis",
            )
        )

    @on(Timeline.GapOpened)
    def _gap_opened(self, event: Timeline.GapOpened) -> None:
        event.stop()

    @on(TableView.Highlighted, "#diff-table")
    def _highlighted(self, event: TableView.Highlighted) -> None:
        self.update_status()

    @on(TableView.Selected, "#diff-table")
    def _selected(self, event: TableView.Selected) -> None:
        if self.pending_by is not None or self.views is None:
            return
        untraced = [tag for tag, view in zip("AB", self.views) if not len(view.kernels) and view.stats]
        if untraced:  # statistics only: the table's row is all there is
            self.notify(safe_text(f"no dispatches in {' and '.join(untraced)} (statistics only): the row is all the run records"), timeout=4, markup=False)
            return
        self.app.push_screen(PairScreen(self, str(event.row["key"]), event.row))


def pair_stats(tag: str, rows: pd.DataFrame, by: str, rules=None) -> Text:
    """One side's dispatch statistics: the analysis.hotspots row of its (single) match key."""
    if not len(rows):
        return plain(f"{tag}: no dispatches (kernel {'added' if tag == 'A' else 'removed'})\n", style="bold")
    h = hotspots(rows, by=by, rules=rules).iloc[0]
    # three short lines, each cut (never wrapped: a wrapped line of A's half ran on into B's)
    return plain(
        f"{tag}: {int(h['calls'])} dispatches · total {fmt_ns(int(h['total_ns']))}\n"
        f"avg {fmt_ns(h['avg_ns'])} · median {fmt_ns(float(h['median_ns']))}\n"
        f"min {fmt_ns(int(h['min_ns']))} · max {fmt_ns(int(h['max_ns']))}",
        no_wrap=True,
        overflow="ellipsis",
        style="bold",
    )


class PairScreen(BackScreen):
    """A matched pair's dispatches: A on the left, B on the right (Tab switches); the rows
    and their statistics are selected in a thread worker."""

    DEFAULT_CSS = """
    #pair-body { height: 1fr; }
    .pair-side { width: 1fr; }
    .pair-side > .pair-stats { padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    #pair-a-side { border-right: solid $primary; }
    .pair-side TableView { height: 1fr; }
    """

    def __init__(self, parent: DiffScreen, key: str, row: pd.Series) -> None:
        super().__init__()
        self.parent_screen, self.key, self.row = parent, key, row
        self.by, self.rules = parent.by, parent.rules

    def compose(self) -> ComposeResult:
        r = self.row
        ratio = "-" if pd.isna(r["ratio"]) else f"{float(r['ratio']):.3f}×"
        yield Static(plain(f"{MATCH_LABELS[self.by]}: {self.key}", no_wrap=True, overflow="ellipsis"), classes="title")
        yield Static(
            plain(f"{r['status']} · Δ total {fmt_ns(int(r['delta_ns']))} · ratio {ratio} · Esc: back · Tab: other run", no_wrap=True, overflow="ellipsis"),
            classes="status",
            id="pair-status",
        )
        with Horizontal(id="pair-body"):
            for tag in ("a", "b"):
                with Vertical(classes="pair-side", id=f"pair-{tag}-side"):
                    yield Static(plain(COMPUTING, "dim italic"), id=f"pair-{tag}-stats", classes="pair-stats")
                    yield TableView(list(DISPATCH_COLUMNS), id=f"pair-{tag}")
        yield Footer()

    def full_names(self) -> list[tuple[str, str]]:
        """The pair's match key, cut in the title (key ``F``: screens.fullname)."""
        return [(MATCH_LABELS[self.by], self.key)]

    def on_mount(self) -> None:
        self.query_one("#pair-a", TableView).focus()
        self._select()

    @thread_worker("dispatch pairs", group="pair", exclusive=True)
    def _select(self) -> None:
        sides = []
        for side, tag in ((0, "A"), (1, "B")):
            rows = self.parent_screen.key_rows(side, self.key)
            if get_current_worker().is_cancelled:
                return
            sides.append((rows, pair_stats(tag, rows, self.by, self.rules)))
        deliver(self, self._show, sides)

    def show_error(self, text: Text) -> None:
        for tag in "ab":
            self.query_one(f"#pair-{tag}-stats", Static).update(text)

    def _show(self, sides: list[tuple[pd.DataFrame, Text]]) -> None:
        for tag, (rows, stats) in zip("ab", sides):
            self.query_one(f"#pair-{tag}-stats", Static).update(stats)
            table = self.query_one(f"#pair-{tag}", TableView)
            table.time_offsets("t", rows)  # start offsets with the digits that tell dispatches apart (as the main view's)
            table.set_data(rows, text_key=None)

    @on(TableView.Selected)
    def _selected(self, event: TableView.Selected) -> None:
        event.stop()
