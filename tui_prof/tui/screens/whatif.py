"""The what-if of a hotspot row, a finding or a gap (``W``): the edit, the recorded and the
projected span and steady step, the saving, and what the critical path becomes
(analysis.whatif through the analysis door, in a thread worker; the text is
render.whatif's report, which sanitises every name)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Footer, Static

from tui_prof.analysis.api import run_what_if
from tui_prof.render.fmt import fmt_ns, fmt_pct
from tui_prof.render.whatif import whatif_text
from tui_prof.tui.safe import plain
from tui_prof.tui.screens.back import BackScreen
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.view.whatif import WhatIfTarget
from tui_prof.tui.widgets.scroll import KeyScroll
from tui_prof.tui.workers import COMPUTING, deliver, thread_worker


def headline(doc: dict, what: str) -> str:
    """One line: what was edited and what it saves (of the recorded span)."""
    return f"{what}: saves {fmt_ns(doc['saving_ns'])} of {fmt_ns(doc['baseline_ns'])} ({fmt_pct(doc['saving_pct'])}) -> {fmt_ns(doc['projected_ns'])}"


class WhatIfScreen(BackScreen):
    """The what-if of ``target`` over the whole loaded run (every process)."""

    DEFAULT_CSS = "WhatIfScreen #whatif-scroll { height: 1fr; padding: 0 1; }"

    def __init__(self, view: RunView, target: WhatIfTarget) -> None:
        super().__init__()
        self.view, self.target = view, target
        self.doc: dict | None = None  # the tuiprof.whatif/1 document, once computed

    def compose(self) -> ComposeResult:
        yield Static(plain(f"what-if: {self.target.title}", no_wrap=True, overflow="ellipsis"), classes="title")
        with KeyScroll(id="whatif-scroll"):
            yield Static(plain(f"re-scheduling the run: {COMPUTING}", "dim italic"), id="whatif-body")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#whatif-scroll").focus()
        self._project()

    @thread_worker("what-if", group="whatif", exclusive=True)
    def _project(self) -> None:
        edits, what = self.target.resolve()
        if edits is None:
            deliver(self, self._show, None, what)
            return
        deliver(self, self._show, run_what_if(self.view.runset, edits), what)

    def _show(self, doc: dict | None, what: str) -> None:
        body = self.query_one("#whatif-body", Static)
        if doc is None:
            body.update(plain(what, "yellow"))
            return
        self.doc = doc
        text = plain(headline(doc, what), "bold")
        text.append("\n\n")
        text.append_text(plain(whatif_text(doc)))
        body.update(text)

    def show_error(self, text: Text) -> None:
        self.query_one("#whatif-body", Static).update(text)
