"""The statistics tables in the hotspots pane: their columns, status line and the
measurement line of a run without a trace (data: :mod:`tui_prof.tui.view.stats`)."""

from __future__ import annotations

from rich.text import Text

from tui_prof.render.fmt import fmt_ns
from tui_prof.tui.safe import plain
from tui_prof.tui.view.stats import StatsFrame
from tui_prof.tui.widgets.table import Column, TableModel

STATS_COLUMNS = (
    Column("name", "name", 60, "text"),
    Column("total_ns", "total", 9, "ns"),
    Column("percent", "%", 7, "pct"),
    Column("calls", "calls", 7),
    Column("avg_ns", "avg", 9, "ns"),
    Column("min_ns", "min", 9, "ns"),
    Column("max_ns", "max", 9, "ns"),
    Column("stddev_ns", "stddev", 9, "ns"),
)


def stats_status(table: StatsFrame, model: TableModel, source: str, others: int) -> str:
    """The status line of a statistics table: which table, rows, sort, what % means, the
    key to the next table, where it came from."""
    sort = f"{model.sort_key} {'↓' if model.descending else '↑'}" if model.sort_key else "none"
    pct = "%: the profiler's Percentage" if table.processes == 1 else f"%: of {table.processes} processes' total"
    text = f"{table.key} · {len(model)}/{len(model.frame)} rows · sort {sort} · {pct}"
    if model.pattern:
        text += f" · filter /{model.pattern}/"
    if others:
        text += f" · v: next of {others + 1} tables"
    return f"{text} · {source}"


def fmt_percent(value) -> str:
    """The profiler's Percentage as it writes it (two decimals)."""
    return "-" if value != value else f"{float(value):.2f}%"


def stats_measurement_text(doc: dict) -> Text:
    """The measurement line of a run without a trace: what the statistics give (kernel
    calls and time, GEMM share, copy time) and that the rest needs a trace."""
    text = plain()
    kernels = doc["kernels"]

    def item(label: str, value: str) -> None:
        if len(text):
            text.append(" · ", "dim")
        text.append(f"{label} ", "dim")
        text.append(value, "bold")

    if kernels["dispatches"]:
        item("kernels", f"{kernels['dispatches']:,}")
        item("kernel time", fmt_ns(kernels["total_ns"]))
        ktime = kernels["total_ns"]
        gemm = doc.get("categories", {}).get("GEMM", 0)
        item("GEMM", f"{100.0 * gemm / ktime:.1f}%" if ktime else "-")
    copies = next((t for t in doc["stats"]["tables"] if t["key"] == "memory_copy_stats"), None)
    if copies is not None:
        item("copies", f"{copies['calls']:,} ({fmt_ns(copies['total_ns'])})")
    if len(text):
        text.append(" · ", "dim")
    text.append(f"{doc['stats']['source']}: span, sync, launch and idle need a trace (2)", "dim italic")
    return text
