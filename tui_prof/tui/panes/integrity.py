"""Integrity pane: can the figures be believed? The integrity checks' issues (code, severity,
where, what they affect) and the detail of the one under the cursor with what to do
(issue 32; the same report as ``tuiprof check``).

Enter shows the evidence: the issue's rows on the timeline, or the tab that holds it
(counters, load issues).
"""

from __future__ import annotations

import pandas as pd
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from tui_prof.analysis.api import CheckReport, Issue, check_run
from tui_prof.render.fmt import fmt_ns
from tui_prof.render.safe import safe_text
from tui_prof.tui.messages import ShowTab, WindowRequested
from tui_prof.tui.pane import Pane
from tui_prof.tui.safe import plain
from tui_prof.tui.view.integrity import INTEGRITY_KEY, integrity_frame, issue_affects, issue_evidence, issue_where
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.widgets.table import Column, TableView
from tui_prof.tui.workers import COMPUTING

INTEGRITY_COLUMNS = (
    Column("code", "check", 20, "text"),
    Column("severity", "severity", 10, "text"),
    Column("where", "where", 28, "text"),
    Column("affects", "affects", 40, "text"),
    Column("n", "#", 3),
)
SEVERITY_STYLE = {"unreliable": "bold red", "degraded": "yellow", "info": "dim"}
NO_ISSUES = "No integrity issue found: every figure can be trusted as far as the checks see ({checks} checks run; tuiprof check lists them)."


def issue_detail(issue: Issue | None, checks: int) -> Table | Text:
    """Severity, code, message, where, the example rows, what it bends and what to do."""
    if issue is None:
        return plain(NO_ISSUES.format(checks=checks), "green")
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row("issue", plain(f"{issue.severity} · {issue.code}", SEVERITY_STYLE.get(issue.severity, "")))
    grid.add_row("", plain(issue.message))  # messages name kernels and files: never markup
    grid.add_row("where", plain(issue_where(issue)))
    span = issue.affects.get("time_range_ns") or []
    if len(span) == 2:
        grid.add_row("time", plain(f"{span[0]} .. {span[1]} ns ({fmt_ns(span[1] - span[0])})"))
    for example in (issue.affects.get("examples") or [])[:3]:
        grid.add_row("e.g.", plain(f"row {example['row']}: {example['name']} at {example['start_ns']} ns, {fmt_ns(example['end_ns'] - example['start_ns'])}"))
    grid.add_row("affects", plain(issue_affects(issue)))
    if issue.fix:
        grid.add_row("what to do", plain(issue.fix, "green"))
    return grid


class IntegrityTable(TableView):
    """The issues, most severe first; Enter shows the evidence of the one under the cursor."""

    BINDINGS = [Binding("enter", "select", "Evidence", id="integrity.evidence")]

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        return action not in ("sort", "sort_dir")  # the severity order is the order


class IntegrityPane(Pane, Vertical):
    """Tab i: the integrity report behind the summary's trust labels."""

    TAB, TITLE, KEY, FOCUS, PIECE = "integrity", "Integrity", INTEGRITY_KEY, "#integrity-table", "summary"

    DEFAULT_CSS = "IntegrityPane { height: 1fr; } IntegrityPane #integrity-scroll { height: 1fr; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.issues: list[Issue] = []
        self.checks = 0

    def compose(self) -> ComposeResult:
        yield Static(plain(COMPUTING, "dim italic"), id="integrity-status", classes="status")
        yield IntegrityTable(list(INTEGRITY_COLUMNS), id="integrity-table")
        with VerticalScroll(id="integrity-scroll"):
            yield Static("", id="integrity-detail")

    @property
    def table(self) -> IntegrityTable:
        return self.query_one("#integrity-table", IntegrityTable)

    def prepare(self, view: RunView) -> tuple[CheckReport, pd.DataFrame]:
        report = view.summary_result.check or check_run(view.runset)
        return report, integrity_frame(report)

    def show(self, prepared: tuple[CheckReport, pd.DataFrame]) -> None:
        report, frame = prepared
        self.issues, self.checks = list(report.issues), len(report.checks)
        degrading = len(report.degrading)
        status = f"{len(self.issues)} issue(s), {degrading} degrading figures · {self.checks} checks run · Enter: evidence"
        self.query_one("#integrity-status", Static).update(plain(status, "bold red" if degrading else "dim", no_wrap=True, overflow="ellipsis"))
        table = self.table
        had_focus = table.has_focus
        table.set_data(frame, text_key="code")
        if had_focus:
            table.focus()
        self.show_issue()

    def show_error(self, text: Text) -> None:
        self.query_one("#integrity-status", Static).update(text)

    def current_issue(self) -> Issue | None:
        row = self.table.current_row
        return self.issues[int(row["n"]) - 1] if row is not None and self.issues else None

    def show_issue(self) -> None:
        self.query_one("#integrity-detail", Static).update(issue_detail(self.current_issue(), self.checks))

    def request_evidence(self) -> None:
        issue = self.current_issue()
        if issue is None:
            return
        kind, target = issue_evidence(issue)
        if kind == "window":
            self.post_message(WindowRequested(target[0], target[1], issue.code))
        elif kind == "tab":
            self.post_message(ShowTab(str(target)))
        else:
            self.notify(safe_text(f"{issue.code}: {target}"), timeout=4, markup=False)

    @on(TableView.Highlighted, "#integrity-table")
    def _highlighted(self, event: TableView.Highlighted) -> None:
        if self.issues:
            self.show_issue()

    @on(TableView.Selected, "#integrity-table")
    def _selected(self, event: TableView.Selected) -> None:
        event.stop()
        self.request_evidence()
