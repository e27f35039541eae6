"""Hardware pane: the agents of every run (from the model) and their profiling
capabilities and the run's warnings (analysis.capability via the summary)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from tui_prof.analysis.api import Summary
from tui_prof.model import RunSet
from tui_prof.render.fmt import fmt_bytes, fmt_ids
from tui_prof.tui.pane import Pane
from tui_prof.tui.safe import plain
from tui_prof.tui.view.runview import RunView
from tui_prof.tui.widgets.scroll import KeyScroll
from tui_prof.tui.workers import COMPUTING, deliver, thread_worker


def _opt(value) -> str:
    return "-" if value is None else str(value)


id_ranges = fmt_ids  # agent ids as runs: [2, 3, 4, 7] -> "2–4, 7"


FIELDS = (
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
)


def agent_groups(runset: RunSet) -> list[tuple[str, list, list[str]]]:
    """(process label, agent ids, field values) per group of agents of one process whose
    every shown field is equal (eight identical GPUs are one column)."""
    groups: dict[tuple, list] = {}
    for run in runset.runs:
        label = run.meta.label or f"{run.meta.hostname}/{run.meta.pid}"
        for a in run.agents:
            values = [str(get(a)) for _, get in FIELDS]
            groups.setdefault((label, *values), []).append(a.id)
    return [(key[0], ids, list(key[1:])) for key, ids in groups.items()]


def agents_renderable(runset: RunSet) -> Table | str:
    """Agents as columns (identical agents of a process as one, "GPU 2–9 ×8"), fields as
    rows."""
    groups = agent_groups(runset)
    if not groups:
        return "No agent information in this run (the format does not record it)."
    table = Table(expand=True, show_edge=False, title="Agents", title_justify="left")
    table.add_column("", style="bold", no_wrap=True)
    multi = len(runset.runs) > 1
    for label, ids, values in groups:
        name = f"{values[0]} {id_ranges(ids)} ×{len(ids)}" if len(ids) > 1 else f"agent {ids[0]}"
        table.add_column(plain(f"{label}:{name}" if multi else name), overflow="fold")
    for row, (title, _) in enumerate(FIELDS):
        table.add_row(title, *(plain(values[row]) for _, _, values in groups))  # trace strings: never markup
    return table


def capabilities_renderable(doc: Summary):
    """Per group of GPU agents with equal capabilities: capabilities and notes from
    analysis.capability, then run warnings."""
    parts: list = []
    groups: dict[tuple, list] = {}
    for record in doc.get("agents", []):
        caps = record.get("capabilities")
        if caps:
            key = (record["process"], record.get("arch") or "", repr(caps))
            groups.setdefault(key, []).append(record)
    for (process, arch, _), records in groups.items():
        caps = records[0]["capabilities"]
        ids = [r["id"] for r in records]
        agents = f"agents {id_ranges(ids)} {arch} ×{len(ids)}" if len(ids) > 1 else f"agent {ids[0]} {arch}"
        table = Table(
            title=plain(f"Profiling capability · {process} · {agents}", "table.title"), expand=True, show_edge=False, show_header=False, title_justify="left"
        )
        table.add_column(style="bold", no_wrap=True)
        table.add_column(overflow="fold")
        for field in ("counters", "pc_sampling", "thread_trace", "rocprof_compute", "roofline"):
            table.add_row(field.replace("_", " "), plain(str(caps.get(field))))
        limits = caps.get("limits")
        if limits:
            table.add_row("limits", plain(", ".join(f"{k.replace('_', ' ')} {v}" for k, v in limits.items() if v is not None)))
        for note in caps.get("notes", []):
            table.add_row(plain("note", "yellow"), plain(note, "yellow"))
        for item in caps.get("instead", []):  # what cannot be measured on this arch, and what to do instead
            table.add_row(plain("cannot measure", "red"), plain(item["cannot"], "red"))
            table.add_row(plain("instead", "green"), plain(item["instead"], "green"))
        parts.append(table)
    warnings = doc.get("warnings") or []
    if warnings:
        parts.append(plain("Warnings", "bold"))
        for w in warnings:
            parts.append(plain(f"⚠ {w}", "yellow"))
    return Group(*parts) if parts else plain("No GPU agent information: capabilities unknown.", "dim")


class HardwarePane(Pane, KeyScroll):
    """Tab 3: the run's agents (from the first screen, built in a worker) and the summary's
    capabilities and warnings; scrolls with the table keys."""

    TAB, TITLE, KEY, FOCUS, PIECE = "hardware", "Hardware", "3", "#hardware-pane", "summary"

    def compose(self) -> ComposeResult:
        yield Static("", id="hardware-body")
        yield Static(plain(COMPUTING, "dim italic"), id="capabilities-body")

    def set_view(self, view: RunView) -> None:
        """Show the run's agents, built in a thread worker (the table of a run of many
        processes' agents should not hold the first screen's turn of the event loop)."""
        self._agents(view.runset)

    @thread_worker("agents", group="hardware-agents", exclusive=True)
    def _agents(self, runset: RunSet) -> None:
        deliver(self, self.show_agents, agents_renderable(runset))

    def show_agents(self, renderable: RenderableType) -> None:
        self.query_one("#hardware-body", Static).update(renderable)

    def prepare(self, view: RunView) -> RenderableType:
        return capabilities_renderable(view.summary or {})

    def show(self, prepared: RenderableType) -> None:
        """What :func:`capabilities_renderable` built."""
        self.query_one("#capabilities-body", Static).update(prepared)

    def show_error(self, text: Text) -> None:
        """A failed summary in the capabilities' place; failed agents in theirs."""
        target = "#hardware-body" if text.plain.startswith("agents:") else "#capabilities-body"
        self.query_one(target, Static).update(text)
