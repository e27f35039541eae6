"""Hardware pane: the agents of every run (from the model) and their profiling
capabilities and the run's warnings (analysis.capability via the summary)."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from tui_prof.model import RunSet
from tui_prof.render.fmt import fmt_bytes
from tui_prof.tui.panes import COMPUTING


def _opt(value) -> str:
    return "-" if value is None else str(value)


def agents_renderable(runset: RunSet) -> Table | str:
    """Agents as columns, fields as rows (fits 80 columns for a few agents)."""
    agents = [(run.meta.label or f"{run.meta.hostname}/{run.meta.pid}", a) for run in runset.runs for a in run.agents]
    if not agents:
        return "No agent information in this run (the format does not record it)."
    table = Table(expand=True, show_edge=False, title="Agents", title_justify="left")
    table.add_column("", style="bold", no_wrap=True)
    multi = len(runset.runs) > 1
    for label, a in agents:
        table.add_column(Text(f"{label}:{a.id}" if multi else f"agent {a.id}"), overflow="fold")
    fields = [
        ("type", lambda a: a.type),
        ("arch", lambda a: a.arch or "-"),
        ("product", lambda a: a.product or "-"),
        ("CUs", lambda a: _opt(a.cu_count)),
        ("SIMD/CU", lambda a: _opt(a.simd_per_cu)),
        ("wave size", lambda a: _opt(a.wave_size)),
        ("waves/SIMD", lambda a: _opt(a.max_waves_per_simd)),
        ("LDS/CU", lambda a: fmt_bytes(a.lds_bytes_per_cu) if a.lds_bytes_per_cu else "-"),
        ("XCC", lambda a: _opt(a.num_xcc)),
        ("max MHz", lambda a: _opt(a.max_clock_mhz)),
        ("memory", lambda a: fmt_bytes(a.memory_bytes) if a.memory_bytes else "-"),
    ]
    for title, get in fields:
        table.add_row(title, *(Text(str(get(a))) for _, a in agents))  # trace strings: never markup
    return table


def capabilities_renderable(doc: dict):
    """Per GPU agent: capabilities and notes from analysis.capability, then run warnings."""
    parts: list = []
    for record in doc.get("agents", []):
        caps = record.get("capabilities")
        if not caps:
            continue
        table = Table(title=Text(f"Profiling capability · {record['process']} · agent {record['id']} {record.get('arch') or ''}", "table.title"),
                      expand=True, show_edge=False, show_header=False, title_justify="left")
        table.add_column(style="bold", no_wrap=True)
        table.add_column(overflow="fold")
        for key in ("counters", "pc_sampling", "thread_trace", "rocprof_compute", "roofline"):
            table.add_row(key.replace("_", " "), Text(str(caps.get(key))))
        limits = caps.get("limits")
        if limits:
            table.add_row("limits", Text(", ".join(f"{k.replace('_', ' ')} {v}" for k, v in limits.items() if v is not None)))
        for note in caps.get("notes", []):
            table.add_row(Text("note", "yellow"), Text(note, "yellow"))
        parts.append(table)
    warnings = doc.get("warnings") or []
    if warnings:
        parts.append(Text("Warnings", "bold"))
        for w in warnings:
            parts.append(Text(f"⚠ {w}", "yellow"))
    return Group(*parts) if parts else Text("No GPU agent information: capabilities unknown.", "dim")


class HardwarePane(VerticalScroll):
    """Tab 3."""

    def compose(self) -> ComposeResult:
        yield Static("", id="hardware-body")
        yield Static(Text(COMPUTING, "dim italic"), id="capabilities-body")

    def set_runset(self, runset: RunSet) -> None:
        self.query_one("#hardware-body", Static).update(agents_renderable(runset))

    def set_summary(self, doc: dict | None) -> None:
        self.query_one("#capabilities-body", Static).update(capabilities_renderable(doc or {}))

    def part_failed(self, text: Text) -> None:
        self.query_one("#capabilities-body", Static).update(text)
