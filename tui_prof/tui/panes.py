"""Overview, findings, counters and hardware panes: renderables built from analysis results.

Every number shown here comes from the ``tuiprof.summary/1`` document that
:func:`tui_prof.analysis.summary.build_summary` computed in the loading worker
(``RunView.summary``), or from :func:`tui_prof.analysis.occupancy.occupancy` for one
dispatch; this module only formats and arranges them.
"""

from __future__ import annotations

import pandas as pd
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message

from tui_prof.render.fmt import fmt_bytes, fmt_ns
from tui_prof.tui.runview import RunView

# findings whose evidence is an idle gap, and the gap cause each one is about (None = any)
GAP_FINDINGS = {"gpu-idle": None, "idle-sync": "sync", "launch-bound": "launch"}
SYNC_FINDINGS = ("sync-after-launch", "sync-overhead")
COPY_FINDINGS = ("copy-share", "slow-copy")
SEVERITY_STYLE = {"high": "bold red", "medium": "yellow", "low": "cyan", "info": "dim"}


# -- overview: the measurement table ---------------------------------------------------
def measurement_text(doc: dict | None) -> Text:
    """The measurement table (engine.py ``doc["measurement"]``) as one wrapped line.

    span = wall time; GEMM = GEMM share of kernel time; sync = sync + blocking-copy calls
    as % of wall (target < 5 %); launch = launch API time as % of wall, queue = median
    queue delay; idle = GPU idle % of its span; copy = copy-engine busy % of wall.
    """
    text = Text()
    if not doc or "measurement" not in doc:
        text.append("measurement table: not available (analysis.summary)", "dim")
        return text
    m = doc["measurement"]

    def item(label: str, value: str, bad: bool = False) -> None:
        if len(text):
            text.append(" · ", "dim")
        text.append(f"{label} ", "dim")
        text.append(value, "bold red" if bad else "bold")

    item("span", fmt_ns(m["span_ns"]))
    item("kernels", f"{m['kernel_count']:,}")
    item("GEMM", f"{m['gemm_pct_of_kernel_time']:.1f}%")
    item("sync", f"{m['sync_pct_of_wall']:.1f}% (>{m['sync_target_pct']:g}%)" if m["sync_pct_of_wall"] > m["sync_target_pct"]
         else f"{m['sync_pct_of_wall']:.1f}%", m["sync_pct_of_wall"] > m["sync_target_pct"])
    queue = m.get("median_queue_delay_ns")
    item("launch", f"{m['launch_api_pct_of_wall']:.1f}%" + (f" (queue {fmt_ns(queue)})" if queue is not None else ""))
    item("idle", f"{m['idle_pct']:.1f}%")
    item("copy", f"{m['copy_pct_of_wall']:.1f}%")
    return text


# -- findings -----------------------------------------------------------------------------
def findings_frame(doc: dict | None) -> pd.DataFrame:
    """One row per finding, in the analysis' rank order."""
    findings = (doc or {}).get("findings") or []
    return pd.DataFrame(
        {
            "message": [f["message"] for f in findings],
            "severity": [f["severity"] for f in findings],
            "code": [f["code"] for f in findings],
            "rank": list(range(1, len(findings) + 1)),
        }
    )


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


def finding_detail(finding: dict | None) -> Table | Text:
    """Severity, code, message, the numbers behind it and the fix of one finding."""
    if finding is None:
        return Text("No findings: nothing crossed a threshold.", "dim")
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row("finding", Text(f"{finding['severity']} · {finding['code']}", SEVERITY_STYLE.get(finding["severity"], "")))
    grid.add_row("", finding["message"])
    for key, value in (finding.get("numbers") or {}).items():
        if finding["code"] == "no-counters" and key == "commands":
            continue  # the fix lists them
        grid.add_row(key, _fmt_number(key, value))
    grid.add_row("fix", Text(finding["fix"], "green"))
    return grid


def finding_kernel(view: RunView, finding: dict) -> str | None:
    """The kernel a finding is about (``numbers["name"]``), if any."""
    name = (finding.get("numbers") or {}).get("name")
    return str(name) if name else None


def finding_evidence(view: RunView, finding: dict) -> tuple[str, object]:
    """Where Enter on a finding goes: ("gap", gap index) | ("host", lane index) |
    ("copy", lane index) | ("kernel", name) | ("tab", tab id) | ("none", reason)."""
    code = finding["code"]
    if code in GAP_FINDINGS:
        gaps = view.gaps
        if gaps is None or not len(gaps):
            return "none", "no listed gaps"
        cause = GAP_FINDINGS[code]
        pool = gaps if cause is None else gaps[gaps["cause"].astype(str) == cause]
        if not len(pool):
            return "none", f"no gap caused by {cause}"
        return "gap", int(pool["duration_ns"].idxmax())
    lanes = view.timeline.lanes
    if code in SYNC_FINDINGS:
        host = [(int(lane.sync_end.sum() - lane.sync_start.sum()), i) for i, lane in enumerate(lanes) if lane.kind == "host" and len(lane.sync_start)]
        return ("host", max(host)[1]) if host else ("none", "no host row with sync calls")
    if code in COPY_FINDINGS:
        copy = [i for i, lane in enumerate(lanes) if lane.kind == "copy"]
        return ("copy", copy[0]) if copy else ("none", "no copy row")
    if code == "dominant-kernel" or code == "low-occupancy" or code.startswith("counter:"):
        name = finding_kernel(view, finding)
        return ("kernel", name) if name else ("none", "kernel not found")
    if code == "many-tiny-kernels":
        return "tab", "hotspots"
    if code == "no-counters":
        return "tab", "counters"
    if code == "counters-serialise":
        return "tab", "hardware"
    if code == "known-error":
        return "tab", "issues"
    return "none", "no evidence to show"


def host_window(view: RunView, lane_index: int, syncs: int = 5) -> tuple[int, int]:
    """[start, end) (relative ns) spanning ``syncs`` consecutive sync calls from the middle
    of a host row's sync calls: a few loop iterations, enough to see the sync pattern."""
    lane = view.timeline.lanes[lane_index]
    order = lane.sync_start.argsort(kind="stable")
    s, e = lane.sync_start[order], lane.sync_end[order]
    first = max(0, min(len(s) // 2, len(s) - syncs))
    last = min(first + syncs, len(s))
    return int(s[first]), int(max(e[first:last].max(), s[first] + 1))


# -- counters -------------------------------------------------------------------------
def kernel_counters(doc: dict | None, name: str) -> list[tuple[str, dict]]:
    """(process, kernel entry of analysis.counters.counter_metrics) for kernel ``name``."""
    out = []
    for block in (doc or {}).get("counters") or []:
        for k in block.get("kernels", []):
            if k["name"] == name:
                out.append((block.get("process", ""), k))
    return out


def counters_renderable(view: RunView, name: str | None, explain: bool):
    """Derived metrics of kernel ``name`` with their interpretation; with ``explain`` the
    formula, source and threshold of each; without counters, the rocprofv3 commands."""
    doc = view.summary
    if doc is None:
        return Text("Counters: analysis.summary is not available in this build.", "dim")
    blocks = doc.get("counters") or []
    if not blocks:
        return Text("No GPU agent and no counters in this run.", "dim")
    parts: list = []
    if not any(b.get("kernels") for b in blocks):
        for b in blocks:
            title = Text(f"No hardware counters in this run ({b.get('arch') or 'unknown arch'}", "bold")
            title.append(f", {b['process']}" if b.get("process") and len(blocks) > 1 else "")
            title.append("). Metrics that need them: ")
            title.append(", ".join(b.get("missing", {})) or "-", "")
            parts.append(title)
            parts.append(Text("Collect them with (one run per pass):", "bold"))
            for command in b.get("commands", []):
                parts.append(Text(command, "green"))
        return Group(*parts)
    if name is None:
        return Text("Select a kernel in the hotspot table (grouped by name) to see its counters.", "dim")
    found = kernel_counters(doc, name)
    head = Text(name, "bold", no_wrap=True, overflow="ellipsis")
    parts.append(head)
    if not found:
        parts.append(Text("No counter values were recorded for this kernel.", "dim"))
        return Group(*parts)
    for process, k in found:
        sub = f"{process} · {k['dispatches']} dispatch(es) with counters · metric = mean over them"
        parts.append(Text(sub, "dim"))
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
            value = Text(f"{m['value']:.4g} {m['unit']}", "bold red" if m["flagged"] else "")
            if explain:
                table.add_row(m["label"], value, m["formula"], m["source"], m["threshold"])
            else:
                note = Text(f"⚠ {m['meaning'] or 'threshold crossed'}", "red") if m["flagged"] else Text(f"ok ({m['threshold']})", "dim")
                table.add_row(m["label"], value, note)
        parts.append(table)
    parts.append(Text("x: " + ("hide formulas" if explain else "formula, source and threshold of each metric"), "dim"))
    return Group(*parts)


class CountersPane(VerticalScroll, can_focus=True):
    """The counters tab body; ``x`` toggles formula + source + threshold."""

    BINDINGS = [Binding("x", "explain", "Formulas", id="counters.explain")]

    class ExplainToggled(Message):
        pass

    def __init__(self, *children, **kwargs) -> None:
        super().__init__(*children, **kwargs)
        self.explain = False

    def action_explain(self) -> None:
        self.explain = not self.explain
        self.post_message(self.ExplainToggled())


# -- hardware ------------------------------------------------------------------------------
def capabilities_renderable(doc: dict | None):
    """Per GPU agent: capabilities and notes from analysis.capability, then run warnings."""
    parts: list = []
    if doc is None:
        return Text("Capabilities: analysis.summary is not available in this build.", "dim")
    for record in doc.get("agents", []):
        caps = record.get("capabilities")
        if not caps:
            continue
        table = Table(title=f"Profiling capability · {record['process']} · agent {record['id']} {record.get('arch') or ''}",
                      expand=True, show_edge=False, show_header=False, title_justify="left")
        table.add_column(style="bold", no_wrap=True)
        table.add_column(overflow="fold")
        for key in ("counters", "pc_sampling", "thread_trace", "rocprof_compute", "roofline"):
            table.add_row(key.replace("_", " "), str(caps.get(key)))
        limits = caps.get("limits")
        if limits:
            table.add_row("limits", ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in limits.items() if v is not None))
        for note in caps.get("notes", []):
            table.add_row(Text("note", "yellow"), Text(note, "yellow"))
        parts.append(table)
    warnings = doc.get("warnings") or []
    if warnings:
        parts.append(Text("Warnings", "bold"))
        for w in warnings:
            parts.append(Text(f"⚠ {w}", "yellow"))
    return Group(*parts) if parts else Text("No GPU agent information: capabilities unknown.", "dim")


# -- dispatch detail ---------------------------------------------------------------------------
def dispatch_occupancy(view: RunView, row: pd.Series) -> dict | None:
    """analysis.occupancy.occupancy for one dispatch's resources on its agent's arch."""
    from tui_prof.analysis.occupancy import occupancy

    run = view.run_of(row)
    agent = run.agent(int(row["agent"]))
    if agent is None or not agent.arch or int(row["arch_vgpr"]) < 0 or int(row["wg_x"]) <= 0:
        return None
    wg = max(int(row["wg_x"]), 1) * max(int(row["wg_y"]), 1) * max(int(row["wg_z"]), 1)
    return occupancy(agent.arch, wg, int(row["arch_vgpr"]), max(int(row["accum_vgpr"]), 0), max(int(row["sgpr"]), 0),
                     max(int(row["lds_bytes"]), 0), agent.wave_size or None, max(int(row["scratch_bytes"]), 0))
