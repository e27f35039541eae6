"""Steps pane (tab 8): where the steps come from, the step-time sparkline and distribution,
warm-up and steady state, and one row per step; Enter posts :class:`StepRequested` so the
screen zooms the timeline to that step.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from rich.console import Group
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Static

from tui_prof.analysis.api import PROFILER_STEP, MemorySection, StepRecord, StepsSection, Summary
from tui_prof.render.fmt import fmt_bytes, fmt_ns, fmt_pct, sparkline
from tui_prof.tui.messages import StepRequested, StepsChanged
from tui_prof.tui.pane import Pane
from tui_prof.tui.safe import plain
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.widgets.table import Column, TableView
from tui_prof.tui.workers import COMPUTING, deliver, thread_worker

STEP_COLUMNS = (
    Column("label", "step", 18, "text"),
    Column("wall_ns", "wall", 9, "ns"),
    Column("gpu_ns", "GPU", 9, "ns"),
    Column("kernels", "kernels", 7),
    Column("busy_pct", "busy", 7, "pct"),
    Column("idle_ns", "idle", 9, "ns"),
    Column("exposed_sync_ns", "exp. sync", 9, "ns"),
    Column("copies", "copies", 6),
    Column("memory", "mem peak", 9, "text"),
    Column("top_kernel", "top kernel", 24, "text", grow=True),  # the width the other columns leave
)


PROCESS_COLUMN = Column("process", "slowest", 12, "text")  # steps of several processes: whose step each row is


def step_columns(steps: StepsSection | None) -> list[Column]:
    """The table's columns: with the process column where the steps combine several processes."""
    columns = list(STEP_COLUMNS)
    if steps is not None and steps["combined"]:
        columns.insert(1, PROCESS_COLUMN)
    return columns


def steps_frame(steps: StepsSection | None) -> pd.DataFrame:
    """One row per step, in step order; warm-up steps are labelled ``w``."""
    rows = steps["steps"] if steps is not None else []
    return pd.DataFrame(
        {
            "label": [("w " if r["warmup"] else "") + r["label"] for r in rows],
            "process": [r.get("process") or "-" for r in rows],
            "wall_ns": [r["wall_ns"] for r in rows],
            "gpu_ns": [r["gpu_ns"] for r in rows],
            "kernels": [r["kernels"] for r in rows],
            "busy_pct": [r["busy_pct"] for r in rows],
            "idle_ns": [r["idle_ns"] for r in rows],
            "exposed_sync_ns": [r["exposed_sync_ns"] for r in rows],
            "copies": [r["copies"] for r in rows],
            "memory": [fmt_bytes(r["memory_peak_bytes"]) for r in rows],
            "top_kernel": [r["top_kernel"] or "-" for r in rows],
            "index": list(range(len(rows))),
        }
    )


def step_label_formatter(steps: list[StepRecord]):
    """The step column's text: where some steps are warm-up ones (``w `` before their label),
    the others' labels are indented as much, so the names line up."""
    if not any(r["warmup"] for r in steps):
        return str
    warm = {"w " + r["label"] for r in steps if r["warmup"]}
    return lambda value: value if value in warm else "  " + value


SHOWN_OUTLIERS = 2  # outlier lines in the header (the rest: one "+N more" line; all of them in the summary)


def _line(text: str, style: str = "") -> Text:
    """One header line: cut with an ellipsis at the pane's width rather than wrapped, so the
    header keeps its height (and the table its rows) at 80 columns."""
    return plain(text, style, no_wrap=True, overflow="ellipsis")


def steps_header(steps: StepsSection | None, memory: MemorySection | None, width: int = 60, columns: int = 160) -> Group | Text:
    """How the ``steps`` were found, the sparkline of step times (``width`` cells), the
    distribution, warm-up, steady state (two lines when the pane is narrower than 120
    ``columns``), outliers and the peak ``memory``, one line each (every trace string through ``plain``)."""
    lines: list[Text] = []
    if not steps or not steps["detected"]:
        text = (steps["how"] if steps is not None else "") or "no steps"
        lines.append(plain(f"No steps: {text}.", "dim"))
        if steps and steps["candidates"]:
            lines.append(plain("Repeated ranges: " + ", ".join(steps["candidates"][:8]), "dim"))
    else:
        per = (steps.get("per_process") or []) if steps.get("combined") else []
        if per:  # several processes: say how they were combined, then each one's steady median
            lines.append(_line(f"{len(per)} processes: each step is its slowest process's (max; column slowest) · {per[0]['how']}"))
            medians = " · ".join(f"{p['process']} {fmt_ns(ps['median_wall_ns'])}" for p in per if (ps := p["steady"]) is not None)
            lines.append(_line(f"steady median per process: {medians}"))
        else:
            lines.append(_line(steps["how"] + (f" · {steps['process']}" if steps.get("process") else "")))
        walls = [r["wall_ns"] for r in steps["steps"]]
        d = steps["distribution"]
        line = Text("step time ", no_wrap=True, overflow="ellipsis")
        line.append(sparkline(walls, width), "bold green")
        if d is not None:  # steps detected: their distribution
            line.append_text(plain(f"  min {fmt_ns(d['min_ns'])} · median {fmt_ns(d['median_ns'])} · p90 {fmt_ns(d['p90_ns'])} · max {fmt_ns(d['max_ns'])}"))
        lines.append(line)
        ss = steps["steady"]
        warm = f"{steps['warmup_steps']} warm-up ({'--warmup' if steps['warmup_source'] == 'given' else 'detected'}, w)"
        if ss:
            steady = f"{warm} · steady {ss['steps']} steps: median {fmt_ns(ss['median_wall_ns'])} ±{fmt_pct(ss['spread_pct'])}"
            shares = f"{ss['median_kernels']:g} kernels/step · busy {fmt_pct(ss['busy_pct'])} · exposed sync {fmt_pct(ss['exposed_sync_pct_of_wall'], 2)}"
            lines.extend([_line(steady), _line(shares)] if columns < 120 else [_line(f"{steady} · {shares}")])
        for o in steps["outliers"][:SHOWN_OUTLIERS]:
            where = f" ({o['process']})" if o.get("process") else ""
            lines.append(
                _line(
                    f"slow {o['label']}{where}: {fmt_ns(o['wall_ns'])} = {o['ratio']:.2f}x median · " + ("; ".join(o["reasons"]) or "no difference found"),
                    "yellow",
                )
            )
        more = steps.get("outlier_steps", len(steps["outliers"])) - min(len(steps["outliers"]), SHOWN_OUTLIERS)
        if more > 0:
            lines.append(_line(f"+{more} more slow step(s): tuiprof summary lists them", "yellow"))
    if memory is not None and memory["devices"]:
        several = len({m["process"] for m in memory["devices"]}) > 1
        peak = ", ".join(
            (f"{m['process']} " if several else "")
            + f"GPU {m['agent']}: {fmt_bytes(m['peak_allocated_bytes'])}"
            + (f" (reserved {fmt_bytes(m['peak_reserved_bytes'])})" if m["peak_reserved_bytes"] else "")
            for m in memory["devices"]
        )
        lines.append(
            _line(
                f"peak memory {peak}" + (f" · grows {fmt_bytes(memory['step_growth_bytes'])} over the steady steps" if memory.get("step_growth_bytes") else "")
            )
        )
    elif memory is not None and memory["requested"]:  # the last memory source: a sum of requests, not a peak
        total = sum(r["requested_bytes"] for r in memory["requested"])
        lines.append(_line(f"memory requested by API calls {fmt_bytes(total)} (frees not matched: not a peak)"))
    return Group(*lines)


@dataclass
class StepsShown:
    """What the steps pane shows for one steps section (:meth:`StepsPane.shown_for`)."""

    section: StepsSection | None
    memory: MemorySection | None
    names: list[str]
    steps: list[StepRecord]
    header: Group | Text
    columns: list[Column]
    frame: pd.DataFrame


class StepsTable(TableView):
    """The steps; Enter zooms the timeline to the step under the cursor."""

    BINDINGS = [Binding("enter", "select", "Zoom", id="steps.zoom")]  # a short label: the footer fits 80 columns


def range_names(steps: StepsSection | None) -> list[str]:
    """The range names the steps can be taken from: PyTorch's steps when the run has them,
    then every repeated host range (``steps.candidates``)."""
    if not steps:
        return []
    names = [PROFILER_STEP] if steps["source"] == "profiler_step" else []
    return names + [c for c in steps["candidates"] if c not in names]


def has_steps(doc: Summary | None) -> bool:
    """True when the summary found steps (the steps tab is shown only then: eight tabs need 88 columns)."""
    steps = doc.get("steps") if doc is not None else None
    return steps is not None and steps["detected"]


class StepsPane(Pane, Vertical):
    """Tab 8, for runs with steps. ``m`` takes the steps from the next repeated host range
    (``--step NAME``). Posts :class:`StepsChanged` whenever it shows steps."""

    TAB, TITLE, KEY, FOCUS, PIECE = "steps", "Steps", "8", "#steps-table", "summary"

    BINDINGS = [Binding("m", "next_range", "Step range", id="steps.range")]

    DEFAULT_CSS = "StepsPane { height: 1fr; } #steps-header { height: auto; max-height: 8; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.steps: list[StepRecord] = []
        self.view: RunView | None = None
        self.section: StepsSection | None = None  # the steps shown
        self.memory: MemorySection | None = None  # the summary's memory section (peaks in the header)
        self.names: list[str] = []  # the range names m cycles through

    def compose(self) -> ComposeResult:
        yield Static(plain(COMPUTING, "dim italic"), id="steps-header")
        yield StepsTable(list(STEP_COLUMNS), id="steps-table")

    @property
    def table(self) -> StepsTable:
        return self.query_one("#steps-table", StepsTable)

    @classmethod
    def available(cls, view: RunView | None) -> bool:
        return view is not None and view.ready("summary") and has_steps(view.summary)

    def set_view(self, view: RunView) -> None:
        self.view = view

    def width(self) -> int:
        """The pane's width in cells (the terminal's before the pane is laid out)."""
        return self.size.width or self.app.size.width

    def prepare(self, view: RunView) -> StepsShown:
        summary = view.summary
        return self.shown_for(summary.get("steps"), summary.get("memory"), self.width())

    def show(self, prepared: StepsShown) -> None:
        self.set_steps(prepared)

    @staticmethod
    def shown_for(steps: StepsSection | None, memory: MemorySection | None, columns: int) -> StepsShown:
        """What :meth:`set_steps` shows for ``steps`` at ``columns`` cells, built without
        touching a widget (in a worker: a run of many processes has thousands of steps)."""
        width = max(10, min(60, columns - 60)) if columns else 40
        return StepsShown(
            section=steps,
            memory=memory,
            names=range_names(steps),
            steps=list(steps["steps"]) if steps is not None else [],
            header=steps_header(steps, memory, width, columns or 160),
            columns=step_columns(steps),
            frame=steps_frame(steps),
        )

    def set_steps(self, shown: StepsShown, names: list[str] | None = None) -> None:
        """Show the steps :meth:`shown_for` built (``names``: the range names ``m`` cycles
        through, when they are not the steps' own); the timeline's ticks follow them
        (:class:`StepsChanged`)."""
        self.section, self.memory = shown.section, shown.memory
        self.names = names if names is not None else shown.names
        self.steps = shown.steps
        self.query_one("#steps-header", Static).update(shown.header)
        table = self.table
        had_focus = table.has_focus
        if table.columns != shown.columns:
            table.set_columns(shown.columns)
        table.formatters["label"] = step_label_formatter(shown.steps)
        table.set_data(shown.frame, text_key="label")
        if had_focus:
            table.focus()
        if shown.section is not None:
            self.post_message(StepsChanged(shown.section))

    def action_next_range(self) -> None:
        """Take the steps from the next range name (computed in a thread worker)."""
        if self.view is None or len(self.names) < 2:
            self.notify("No other repeated host range to take the steps from", severity="information")
            return
        shown = self.section["name"] if self.section is not None else None
        current = shown if shown in self.names else self.names[0]
        name = self.names[(self.names.index(current) + 1) % len(self.names)]
        self.query_one("#steps-header", Static).update(plain(f"steps from {name}: {COMPUTING}", "dim italic"))
        self._range_worker(self.view, name, self.memory, self.width())

    @thread_worker("steps of a range", group="steps", exclusive=True)
    def _range_worker(self, view: RunView, name: str, memory: MemorySection | None, columns: int) -> None:
        section = view.steps_for(None if name == PROFILER_STEP else name)
        deliver(self, self.show_range, self.shown_for(section, memory, columns))

    def show_range(self, shown: StepsShown) -> None:
        self.set_steps(shown, self.names)  # the cycle keeps every name the run has

    def show_error(self, text: Text) -> None:
        self.query_one("#steps-header", Static).update(text)

    def current_step(self) -> StepRecord | None:
        row = self.table.current_row
        return self.steps[int(row["index"])] if row is not None and self.steps else None

    @on(TableView.Selected, "#steps-table")
    def _selected(self, event: TableView.Selected) -> None:
        event.stop()
        step = self.current_step()
        if step is not None:
            self.post_message(StepRequested(step["start_ns"], step["end_ns"], step["label"]))
