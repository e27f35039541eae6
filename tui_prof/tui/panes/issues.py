"""Issues pane: files that could not be loaded and known error lines found in logs."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from tui_prof.analysis.api import Summary
from tui_prof.model import RunSet
from tui_prof.tui.pane import Pane
from tui_prof.tui.safe import plain
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.widgets.scroll import KeyScroll
from tui_prof.tui.workers import COMPUTING


def issues_renderable(runset: RunSet, doc: Summary | None) -> Table | str:
    """Per-file load issues, then the summary's log hits (``doc["logs"]``)."""
    logs = doc["logs"] if doc is not None else []
    if not runset.issues and not logs:
        return "Every file loaded; no issues."
    table = Table(expand=True, show_edge=False)
    table.add_column("file / feature", overflow="fold")
    table.add_column("status")
    table.add_column("message", overflow="fold")
    for issue in runset.issues:  # trace strings: Text, never markup
        table.add_row(plain(issue.path), plain(issue.severity), plain(issue.message))
    for hit in logs:
        table.add_row(plain(f"{hit['path']}:{hit['line']}"), plain(hit["code"]), plain(f"{hit['text']}\n→ {hit['meaning']}"))
    return table


class IssuesPane(Pane, KeyScroll):
    """Tab 6: the load issues and the summary's log hits; scrolls with the table keys."""

    TAB, TITLE, KEY, FOCUS, PIECE = "issues", "Issues", "6", "#issues-pane", "summary"

    def compose(self) -> ComposeResult:
        yield Static(plain(COMPUTING, "dim italic"), id="issues-body")

    def prepare(self, view: RunView) -> Table | str:
        return issues_renderable(view.runset, view.summary)

    def show(self, prepared: Table | str) -> None:
        self.query_one("#issues-body", Static).update(prepared)

    def show_error(self, text: Text) -> None:
        self.query_one("#issues-body", Static).update(text)
