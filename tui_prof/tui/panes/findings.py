"""Findings pane: the ranked findings list and the detail of the one under the cursor.

Enter posts :class:`EvidenceRequested`; the screen shows the evidence
(tui_prof.tui.view.findings.finding_evidence).
"""

from __future__ import annotations

import pandas as pd
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Static

from tui_prof.analysis.api import Finding, Summary
from tui_prof.render.fmt import fmt_bytes, fmt_ns
from tui_prof.tui.messages import EvidenceRequested, WhatIfRequested
from tui_prof.tui.pane import Pane
from tui_prof.tui.safe import plain
from tui_prof.tui.view.findings import findings_frame
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.view.whatif import finding_target
from tui_prof.tui.widgets.table import Column, TableView
from tui_prof.tui.workers import COMPUTING

FINDING_COLUMNS = (
    Column("message", "finding", 60, "text"),
    Column("severity", "severity", 8, "text"),
    Column("code", "code", 18, "text"),
    Column("rank", "#", 3),
)
SEVERITY_STYLE = {"high": "bold red", "medium": "yellow", "low": "cyan", "info": "dim"}


def _fmt_number(key: str, value) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {_fmt_number(key, v)}" for k, v in value.items()) or "-"
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, (int, float)) and (key == "ns" or key.endswith("_ns")):
        return fmt_ns(value)
    if isinstance(value, (int, float)) and (key == "bytes" or key.endswith("_bytes")):
        return f"{fmt_bytes(value)} ({int(value):,} B)"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def finding_detail(finding: Finding | None) -> Table | Text:
    """Severity, code, message, the numbers behind it and the fix of one finding."""
    if finding is None:
        return plain("No findings: nothing crossed a threshold.", "dim")
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row("finding", plain(f"{finding['severity']} · {finding['code']}", SEVERITY_STYLE.get(finding["severity"], "")))
    grid.add_row("", plain(finding["message"]))  # messages and numbers name kernels: never markup
    for key, value in (finding.get("numbers") or {}).items():
        if finding["code"] == "no-counters" and key == "commands":
            continue  # the fix lists them
        grid.add_row(plain(key), plain(_fmt_number(key, value)))
    grid.add_row("fix", plain(finding["fix"], "green"))
    return grid


def findings_rows(doc: Summary | None) -> tuple[list[Finding], pd.DataFrame]:
    """The summary's findings and the table's rows (no widget touched: runs in a thread)."""
    return list(doc["findings"] if doc is not None else []), findings_frame(doc)


class FindingsTable(TableView):
    """The findings list; Enter jumps to the evidence of the finding under the cursor."""

    BINDINGS = [
        Binding("enter", "select", "Evidence", id="findings.evidence"),
        Binding("W", "what_if", "What-if", id="findings.whatif"),
    ]

    class WhatIfAsked(Message):
        """``W`` on the finding under the cursor (the pane knows the findings)."""

    def action_what_if(self) -> None:
        self.post_message(self.WhatIfAsked())

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        return action not in ("sort", "sort_dir")  # the analysis' rank order is the order


class FindingsPane(Pane, Vertical):
    """Tab 4: the summary's findings."""

    TAB, TITLE, KEY, FOCUS, PIECE = "findings", "Findings", "4", "#findings-table", "summary"

    DEFAULT_CSS = "FindingsPane { height: 1fr; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.findings: list[Finding] = []

    def compose(self) -> ComposeResult:
        yield FindingsTable(list(FINDING_COLUMNS), id="findings-table")
        with VerticalScroll(id="finding-scroll"):
            yield Static(plain(COMPUTING, "dim italic"), id="finding-detail")

    @property
    def table(self) -> FindingsTable:
        return self.query_one("#findings-table", FindingsTable)

    def prepare(self, view: RunView) -> tuple[list[Finding], pd.DataFrame]:
        return findings_rows(view.summary)

    def show(self, prepared: tuple[list[Finding], pd.DataFrame]) -> None:
        """Show the findings and their table rows built by :func:`findings_rows`."""
        self.findings, frame = prepared
        table = self.table
        had_focus = table.has_focus
        table.set_data(frame, text_key="message")
        if had_focus:
            table.focus()
        self.show_finding()

    def show_error(self, text: Text) -> None:
        self.query_one("#finding-detail", Static).update(text)

    def current_finding(self) -> Finding | None:
        row = self.table.current_row
        return self.findings[int(row["rank"]) - 1] if row is not None else None

    def show_finding(self) -> None:
        self.query_one("#finding-detail", Static).update(finding_detail(self.current_finding()))

    def request_evidence(self) -> None:
        finding = self.current_finding()
        if finding is not None:
            self.post_message(EvidenceRequested(finding))

    @on(FindingsTable.WhatIfAsked)
    def _what_if(self, event: FindingsTable.WhatIfAsked) -> None:
        event.stop()
        finding = self.current_finding()
        if finding is not None:
            self.post_message(WhatIfRequested(finding_target(finding)))

    @on(TableView.Highlighted, "#findings-table")
    def _highlighted(self, event: TableView.Highlighted) -> None:
        if self.findings:
            self.show_finding()

    @on(TableView.Selected, "#findings-table")
    def _selected(self, event: TableView.Selected) -> None:
        event.stop()
        self.request_evidence()
