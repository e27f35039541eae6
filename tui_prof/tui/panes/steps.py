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

from tui_prof.analysis.steps import PROFILER_STEP
from tui_prof.render.fmt import fmt_bytes, fmt_ns, sparkline
from tui_prof.tui.messages import StepRequested, StepsChanged
from tui_prof.tui.panes.base import Pane
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
    Column("top_kernel", "top kernel", 40, "text"),
)


PROCESS_COLUMN = Column("process", "slowest", 12, "text")  # steps of several processes: whose step each row is


def step_columns(doc: dict | None) -> list[Column]:
    """The table's columns: with the process column where the steps combine several processes."""
    columns = list(STEP_COLUMNS)
    if ((doc or {}).get("steps") or {}).get("combined"):
        columns.insert(1, PROCESS_COLUMN)
    return columns


def steps_frame(doc: dict | None) -> pd.DataFrame:
    """One row per step, in step order; warm-up steps are labelled ``w``."""
    rows = ((doc or {}).get("steps") or {}).get("steps") or []
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


SHOWN_OUTLIERS = 2  # outlier lines in the header (the rest: one "+N more" line; all of them in the summary)


def _line(text: str, style: str = "") -> Text:
    """One header line: cut with an ellipsis at the pane's width rather than wrapped, so the
    header keeps its height (and the table its rows) at 80 columns."""
    return plain(text, style, no_wrap=True, overflow="ellipsis")


def steps_header(doc: dict | None, width: int = 60, columns: int = 160) -> Group | Text:
    """How the steps were found, the sparkline of step times (``width`` cells), the
    distribution, warm-up, steady state (two lines when the pane is narrower than 120
    ``columns``), outliers and peak memory, one line each (every trace string through ``plain``)."""
    steps = (doc or {}).get("steps")
    memory = (doc or {}).get("memory") or {}
    lines: list[Text] = []
    if not steps or not steps["detected"]:
        text = (steps or {}).get("how") or "no steps"
        lines.append(plain(f"No steps: {text}.", "dim"))
        if steps and steps.get("candidates"):
            lines.append(plain("Repeated ranges: " + ", ".join(steps["candidates"][:8]), "dim"))
    else:
        per = (steps.get("per_process") or []) if steps.get("combined") else []
        if per:  # several processes: say how they were combined, then each one's steady median
            lines.append(_line(f"{len(per)} processes: each step is its slowest process's (max; column slowest) · {per[0]['how']}"))
            medians = " · ".join(f"{p['process']} {fmt_ns(p['steady']['median_wall_ns'])}" for p in per if p.get("steady"))
            lines.append(_line(f"steady median per process: {medians}"))
        else:
            lines.append(_line(steps["how"] + (f" · {steps['process']}" if steps.get("process") else "")))
        walls = [r["wall_ns"] for r in steps["steps"]]
        d = steps["distribution"]
        line = Text("step time ", no_wrap=True, overflow="ellipsis")
        line.append(sparkline(walls, width), "bold green")
        line.append_text(plain(f"  min {fmt_ns(d['min_ns'])} · median {fmt_ns(d['median_ns'])} · p90 {fmt_ns(d['p90_ns'])} · max {fmt_ns(d['max_ns'])}"))
        lines.append(line)
        ss = steps["steady"]
        warm = f"{steps['warmup_steps']} warm-up ({'--warmup' if steps['warmup_source'] == 'given' else 'detected'}, w)"
        if ss:
            steady = f"{warm} · steady {ss['steps']} steps: median {fmt_ns(ss['median_wall_ns'])} ±{ss['spread_pct']:.1f} %"
            shares = f"{ss['median_kernels']:g} kernels/step · busy {ss['busy_pct']:.1f} % · exposed sync {ss['exposed_sync_pct_of_wall']:.2f} %"
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
    if memory.get("devices"):
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
    elif memory.get("requested"):  # the last memory source: a sum of requests, not a peak
        total = sum(r["requested_bytes"] for r in memory["requested"])
        lines.append(_line(f"memory requested by API calls {fmt_bytes(total)} (frees not matched: not a peak)"))
    return Group(*lines)


@dataclass
class StepsShown:
    """What the steps pane shows for one summary (:meth:`StepsPane.prepare`)."""

    names: list[str]
    steps: list[dict]
    header: Group | Text
    columns: list[Column]
    frame: pd.DataFrame


class StepsTable(TableView):
    """The steps; Enter zooms the timeline to the step under the cursor."""

    BINDINGS = [Binding("enter", "select", "Zoom", id="steps.zoom")]  # a short label: the footer fits 80 columns


def range_names(steps: dict | None) -> list[str]:
    """The range names the steps can be taken from: PyTorch's steps when the run has them,
    then every repeated host range (``steps.candidates``)."""
    if not steps:
        return []
    names = [PROFILER_STEP] if steps.get("source") == "profiler_step" else []
    return names + [c for c in steps.get("candidates") or [] if c not in names]


def has_steps(doc: dict | None) -> bool:
    """True when the summary found steps (the steps tab is shown only then: eight tabs need 88 columns)."""
    return bool(doc and (doc.get("steps") or {}).get("detected"))


class StepsPane(Pane, Vertical):
    """Tab 8, for runs with steps. ``m`` takes the steps from the next repeated host range
    (``--step NAME``). Posts :class:`StepsChanged` whenever it shows steps."""

    TAB, TITLE, KEY, FOCUS, PIECE = "steps", "Steps", "8", "#steps-table", "summary"

    BINDINGS = [Binding("m", "next_range", "Step range", id="steps.range")]

    DEFAULT_CSS = "StepsPane { height: 1fr; } #steps-header { height: auto; max-height: 8; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.steps: list[dict] = []
        self.view: RunView | None = None
        self.doc: dict | None = None
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

    def prepare(self, view: RunView) -> tuple[dict | None, StepsShown]:
        return view.summary, self.shown_for(view.summary, self.width())

    def show(self, prepared: tuple[dict | None, StepsShown]) -> None:
        doc, shown = prepared
        self.set_summary(doc, shown)
        self.post_message(StepsChanged((doc or {}).get("steps") or {}))

    @staticmethod
    def shown_for(doc: dict | None, columns: int) -> StepsShown:
        """What :meth:`set_summary` shows for ``doc`` at ``columns`` cells, built without
        touching a widget (in a worker: a run of many processes has thousands of steps)."""
        width = max(10, min(60, columns - 60)) if columns else 40
        return StepsShown(
            names=range_names((doc or {}).get("steps")),
            steps=list(((doc or {}).get("steps") or {}).get("steps") or []),
            header=steps_header(doc, width, columns or 160),
            columns=step_columns(doc),
            frame=steps_frame(doc),
        )

    def set_summary(self, doc: dict | None, shown: StepsShown | None = None) -> None:
        """Show ``doc``'s steps; ``shown``: :meth:`prepare`'s result for ``doc``, when a worker built it."""
        if shown is None:
            shown = self.shown_for(doc, self.width())
        self.doc = doc
        self.names = shown.names
        self.steps = shown.steps
        self.query_one("#steps-header", Static).update(shown.header)
        table = self.table
        had_focus = table.has_focus
        table.columns = shown.columns
        table.set_data(shown.frame, text_key="label")
        if had_focus:
            table.focus()

    def action_next_range(self) -> None:
        """Take the steps from the next range name (computed in a thread worker)."""
        steps = (self.doc or {}).get("steps") or {}
        if self.view is None or len(self.names) < 2:
            self.notify("No other repeated host range to take the steps from", severity="information")
            return
        current = str(steps.get("name")) if steps.get("name") in self.names else self.names[0]
        name = self.names[(self.names.index(current) + 1) % len(self.names)]
        self.query_one("#steps-header", Static).update(plain(f"steps from {name}: {COMPUTING}", "dim italic"))
        self._range_worker(self.view, name, dict(self.doc or {}), self.width())

    @thread_worker("steps of a range", group="steps", exclusive=True)
    def _range_worker(self, view: RunView, name: str, doc: dict, columns: int) -> None:
        section = view.steps_for(None if name == PROFILER_STEP else name)
        doc = dict(doc, steps=section)
        deliver(self, self.show_steps, section, doc, self.shown_for(doc, columns))

    def show_steps(self, section: dict, doc: dict | None = None, shown: StepsShown | None = None) -> None:
        names = self.names
        self.set_summary(doc if doc is not None else dict(self.doc or {}, steps=section), shown)
        self.names = names  # the cycle keeps every name the run has
        self.post_message(StepsChanged(section))

    def show_error(self, text: Text) -> None:
        self.query_one("#steps-header", Static).update(text)

    def current_step(self) -> dict | None:
        row = self.table.current_row
        return self.steps[int(row["index"])] if row is not None and self.steps else None

    @on(TableView.Selected, "#steps-table")
    def _selected(self, event: TableView.Selected) -> None:
        event.stop()
        step = self.current_step()
        if step is not None:
            self.post_message(StepRequested(step["start_ns"], step["end_ns"], step["label"]))
