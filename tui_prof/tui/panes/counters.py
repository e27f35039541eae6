"""Counters pane: derived metrics of the selected kernel (analysis.counters via the summary).

``x`` toggles the formula, source and threshold of each metric. The screen sets
``kernel`` (the hotspot selection when grouped by name) and the summary document.
"""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from tui_prof.render.safe import safe_text
from tui_prof.tui.panes import COMPUTING
from tui_prof.tui.safe import plain
from tui_prof.tui.view.findings import kernel_counters


def counters_renderable(doc: dict, name: str | None, explain: bool):
    """Derived metrics of kernel ``name`` with their interpretation; with ``explain`` the
    formula, source and threshold of each; without counters, the rocprofv3 commands."""
    blocks = doc.get("counters") or []
    if not blocks:
        return plain("No GPU agent and no counters in this run.", "dim")
    parts: list = []
    if not any(b.get("kernels") for b in blocks):
        for b in blocks:
            title = plain(f"No hardware counters in this run ({b.get('arch') or 'unknown arch'}", "bold")
            title.append(safe_text(f", {b['process']}") if b.get("process") and len(blocks) > 1 else "")
            title.append("). Metrics that need them: ")
            title.append(", ".join(b.get("missing", {})) or "-", "")
            parts.append(title)
            parts.append(plain("Collect them with (one run per pass):", "bold"))
            for command in b.get("commands", []):
                parts.append(plain(command, "green"))
        return Group(*parts)
    if name is None:
        return plain("Select a kernel in the hotspot table (grouped by name) to see its counters.", "dim")
    found = kernel_counters(doc, name)
    head = plain(name, "bold", no_wrap=True, overflow="ellipsis")
    parts.append(head)
    if not found:
        parts.append(plain("No counter values were recorded for this kernel.", "dim"))
        return Group(*parts)
    for process, k in found:
        sub = f"{process} · {k['dispatches']} dispatch(es) with counters · metric = mean over them"
        parts.append(plain(sub, "dim"))
        table = Table(expand=True, show_edge=False, pad_edge=False)
        table.add_column("metric", no_wrap=True)
        table.add_column("value", justify="right", no_wrap=True)
        if explain:
            table.add_column("formula", overflow="fold")
            table.add_column("source", overflow="fold")
            table.add_column("threshold", overflow="fold")
        else:
            table.add_column("interpretation", overflow="fold")
        for m in k["metrics"].values():
            value = plain(f"{m['value']:.4g} {m['unit']}", "bold red" if m["flagged"] else "")
            if explain:
                table.add_row(m["label"], value, m["formula"], m["source"], m["threshold"])
            else:
                note = plain(f"⚠ {m['meaning'] or 'threshold crossed'}", "red") if m["flagged"] else plain(f"ok ({m['threshold']})", "dim")
                table.add_row(m["label"], value, note)
        parts.append(table)
    parts.append(plain("x: " + ("hide formulas" if explain else "formula, source and threshold of each metric"), "dim"))
    return Group(*parts)


class CountersPane(VerticalScroll, can_focus=True):
    """Tab 5."""

    BINDINGS = [Binding("x", "explain", "Formulas", id="counters.explain")]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.explain = False
        self._kernel: str | None = None
        self._doc: dict | None = None

    def compose(self) -> ComposeResult:
        yield Static(plain(COMPUTING, "dim italic"), id="counters-body")

    @property
    def kernel(self) -> str | None:
        return self._kernel

    @kernel.setter
    def kernel(self, name: str | None) -> None:
        self._kernel = name
        self._show()

    def set_summary(self, doc: dict | None) -> None:
        self._doc = doc or {}
        self._show()

    def part_failed(self, text: Text) -> None:
        self.query_one("#counters-body", Static).update(text)

    def action_explain(self) -> None:
        self.explain = not self.explain
        self._show()

    def _show(self) -> None:
        if self._doc is not None:
            self.query_one("#counters-body", Static).update(counters_renderable(self._doc, self._kernel, self.explain))
