"""Counters pane: derived metrics of the selected kernel (analysis.counters via the summary).

``x`` toggles the formula, source and threshold of each metric. The screen sets
``kernel`` (the hotspot selection when grouped by name) and the summary document.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from tui_prof.analysis.api import Summary
from tui_prof.render.fmt import fmt_pct
from tui_prof.render.roofline import roofline_lines
from tui_prof.render.safe import safe_text
from tui_prof.tui.pane import Pane
from tui_prof.tui.safe import plain
from tui_prof.tui.view.findings import kernel_counters
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.workers import COMPUTING


def counters_renderable(doc: Summary, name: str | None, explain: bool):
    """Derived metrics of kernel ``name`` with their interpretation; with ``explain`` the
    formula, source and threshold of each; without counters, the rocprofv3 commands."""
    blocks = doc.get("counters") or []
    if not blocks:
        return plain("No GPU agent and no counters in this run.", "dim")
    parts: list = []
    if not any(b.get("kernels") for b in blocks):
        estimate = _shape_estimates(doc)
        if estimate is not None:
            parts.append(estimate)
        for b in blocks:
            title = plain(f"No hardware counters in this run ({b.get('arch') or 'unknown arch'}", "bold")
            title.append(safe_text(f", {b['process']}") if b.get("process") and len(blocks) > 1 else "")
            title.append("). Metrics that need them: ")
            title.append(", ".join(b.get("missing", {})) or "-", "")
            parts.append(title)
            parts.append(plain("Collect them with (one run per pass):", "bold"))
            for command in b.get("commands", []):
                parts.append(plain(command, "green"))
            note = _absent_note([b])
            if note is not None:
                parts.append(note)
        return Group(*parts)
    if name is None:
        return plain("Select a kernel in the hotspot table (grouped by name) to see its counters.", "dim")
    found = kernel_counters(doc, name)
    head = plain(name, "bold", no_wrap=True, overflow="ellipsis")
    parts.append(head)
    if not found:
        parts.append(plain("No counter values were recorded for this kernel.", "dim"))
        return Group(*parts)
    arch_note = _absent_note(blocks)
    for process, k in found:
        if k.get("origin") == "rocprof-compute analysis database":
            sub = f"{process} · {k['dispatches']} dispatch(es) · values rocprof-compute computed (analysis database) · our thresholds"
        else:
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
            shown = fmt_pct(m["value"], sig=4) if m["unit"] == "%" else f"{m['value']:.4g} {m['unit']}"
            if m.get("pct_of_peak") is not None and m.get("peak") and m["unit"] != "%":
                shown += f" ({fmt_pct(m['pct_of_peak'], sig=3)} of {m['peak']:.4g})"
            value = plain(shown, "bold red" if m["flagged"] else "")
            if explain:
                # the database's metric name and unit are strings from the file: shown as plain text
                source = plain(m["source"] + (f"; shown: {m['db_metric']}" if m.get("db_metric") else ""))
                table.add_row(plain(m["label"]), value, plain(m["formula"]), source, plain(m["threshold"]))  # a raw counter's name comes from the file
            else:
                note = plain(f"⚠ {m['meaning'] or 'threshold crossed'}", "red") if m["flagged"] else plain(f"ok ({m['threshold']})", "dim")
                check = m.get("check")
                if check:
                    note.append(
                        f" · rocprof-compute {check['rocprof_compute']:.4g} ({fmt_pct(check['diff_pct'], sig=2)} apart{'' if check['agrees'] else ', disagree'})",
                        "dim" if check["agrees"] else "bold red",
                    )
                table.add_row(plain(m["label"]), value, note)
        parts.append(table)
        occ = k.get("occupancy")
        if occ:
            line = plain("Occupancy limiter: ", "bold")
            line.append(safe_text(f"{occ['limiter']} ({occ['source']}). {occ['hint']}"))
            parts.append(line)
        roof = k.get("roofline")
        if roof:
            parts.extend(_roofline(roof, explain))
        advice = k.get("advice") or []
        if advice:
            parts.append(plain("Advice (counter dictionary thresholds; docs/counters.md):", "bold"))
            for a in advice:
                parts.append(plain(f"• {a['text']}", "green" if a.get("good") else ""))
    if arch_note is not None:
        parts.append(arch_note)
    parts.append(plain("x: " + ("hide formulas" if explain else "formula, source and threshold of each metric"), "dim"))
    return Group(*parts)


def _shape_estimates(doc: Mapping[str, Any]) -> Group | None:
    """Where counters are missing but the trace recorded shapes: each operator's FLOPs and
    bytes from its shapes, the rates they reach and the bound (analysis.flops), labelled an
    estimate."""
    rows = [o for o in (doc.get("hotspots_by_operator") or []) if "achieved_tflops" in o][:12]
    if not rows:
        return None
    table = Table(expand=True, show_edge=False, pad_edge=False, title_justify="left")
    table.add_column("operator", overflow="ellipsis", no_wrap=True)
    table.add_column("calls", justify="right", no_wrap=True)
    table.add_column("TFLOP/s", justify="right", no_wrap=True)
    table.add_column("GB/s", justify="right", no_wrap=True)
    table.add_column("bound (FLOP/B vs ridge)", no_wrap=True)
    for o in rows:
        pct = o.get("pct_of_peak_flops")
        bw = o.get("pct_of_peak_bw")
        roof = o.get("roofline_estimate") or {}
        bound = f"{roof['bound']} ({roof['ai']:.3g} vs {roof['ridge']:.3g})" if roof else "-"
        table.add_row(
            plain(o["name"]),
            f"{o['costed_calls']}/{o['calls']}",
            "-" if not o["flops"] else f"{o['achieved_tflops']:.3g}" + (f" ({fmt_pct(pct, sig=3)} {o.get('flops_dtype', '')})" if pct is not None else ""),
            f"{o['achieved_gbs']:,.0f}" + (f" ({fmt_pct(bw, sig=3)})" if bw is not None else ""),
            bound,
        )
    peak = next((o["peak_source"] for o in rows if o.get("peak_source")), "no peak known for this GPU")
    head = plain("Estimates from recorded shapes (not measured: FLOPs and bytes the shapes imply; docs/metrics.md)", "bold")
    parts: list = [head, table, plain(f"peaks: {peak}", "dim")]
    top = next((o for o in rows if o["flops"] and o.get("roofline_estimate") and o.get("peak_tflops") and o.get("peak_gbs")), None)
    if top is not None:  # the operator with the most GPU time among those with FLOPs, on its dtype's roofline
        chart = roofline_lines(top["roofline_estimate"]["ai"], top["achieved_tflops"] * 1e3, top["peak_tflops"] * 1e3, top["peak_gbs"])
        if chart:
            title = plain("Roofline estimate from shapes: ", "bold")
            title.append(safe_text(f"{top['name']} ({top['flops_dtype']}), * the operator, + the ridge; GFLOP/s vs FLOP per byte"))
            parts.extend([title, plain("\n".join(chart), "", no_wrap=True, overflow="crop")])
    return Group(*parts)


def _roofline(roof: dict, explain: bool) -> list:
    """The kernel's HBM roofline: the bound it sits under, then the ASCII chart."""
    bound = "memory-bound" if roof["bound"] == "memory" else "compute-bound"
    head = plain(f"Roofline: {bound}", "bold red" if roof["bound"] == "memory" else "bold")
    head.append(
        f" · {roof['ai']:.3g} FLOP/B, {roof['gflops']:.4g} GFLOP/s = {fmt_pct(roof['pct_of_attainable'], sig=3)} of attainable"
        f" · ridge {roof['ridge']:.3g} FLOP/B = {safe_text(roof['compute_roof'])} {roof['peak_gflops']:,.0f} GFLOP/s / HBM {roof['peak_gbs']:,.0f} GB/s"
    )
    out: list = [head, plain(roof["hint"], "")]
    if explain:
        out.append(plain(f"source: {roof['source']}", "dim"))
    chart = roofline_lines(roof["ai"], roof["gflops"], roof["peak_gflops"], roof["peak_gbs"])
    if chart:
        out.append(plain("\n".join(chart), "", no_wrap=True, overflow="crop"))
    return out


def _absent_note(blocks: list[dict]) -> Text | None:
    """On RDNA: the metrics that do not exist on this arch, and why (not "missing")."""
    for b in blocks:
        absent = b.get("absent") or {}
        if absent and str(b.get("arch", "")).startswith("gfx1"):
            note = plain(f"Not on {b['arch']} (RDNA): ", "bold")
            note.append("; ".join(f"{k} — {v}" for k, v in absent.items()), "dim")
            return note
    return None


class CountersPane(Pane, VerticalScroll, can_focus=True):
    """Tab 5: the summary's counters of the kernel selected in the hotspots."""

    TAB, TITLE, KEY, FOCUS, PIECE = "counters", "Counters", "5", "#counters-pane", "summary"

    BINDINGS = [Binding("x", "explain", "Formulas", id="counters.explain")]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.explain = False
        self._kernel: str | None = None
        self._doc: Summary | None = None

    def compose(self) -> ComposeResult:
        yield Static(plain(COMPUTING, "dim italic"), id="counters-body")

    @property
    def kernel(self) -> str | None:
        return self._kernel

    @kernel.setter
    def kernel(self, name: str | None) -> None:
        self._kernel = name
        self._show()

    def prepare(self, view: RunView) -> tuple[Summary, str | None, bool, RenderableType]:
        """The summary and its body for the selection now: (summary, kernel, explain, renderable)."""
        doc = view.summary
        kernel, explain = self._kernel, self.explain
        return doc, kernel, explain, counters_renderable(doc, kernel, explain)

    def show(self, prepared: tuple[Summary, str | None, bool, RenderableType]) -> None:
        """The body :meth:`prepare` built; built again here only when the selection or
        ``x`` changed meanwhile."""
        self._doc, kernel, explain, renderable = prepared
        if (kernel, explain) == (self._kernel, self.explain):
            self.query_one("#counters-body", Static).update(renderable)
        else:
            self._show()

    def show_error(self, text: Text) -> None:
        self.query_one("#counters-body", Static).update(text)

    def action_explain(self) -> None:
        self.explain = not self.explain
        self._show()

    def _show(self) -> None:
        if self._doc is not None:
            self.query_one("#counters-body", Static).update(counters_renderable(self._doc, self._kernel, self.explain))
