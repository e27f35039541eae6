"""Findings and counters as the TUI shows them: rows, evidence targets, kernel counters.

Every handler in :data:`EVIDENCE` answers "where does Enter on this finding go" for one
:class:`~tui_prof.analysis.findings.FindingCode`; a test checks that each code has one.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from tui_prof.analysis.api import Finding, FindingCode, Summary
from tui_prof.tui.view.runview import RunView

# (kind, target): ("gap", gap index) | ("host", lane index) | ("copy", lane index) |
# ("kernel", name) | ("tab", tab id) | ("none", reason)
Evidence = tuple[str, int | str]


def findings_frame(doc: Summary | None) -> pd.DataFrame:
    """One row per finding, in the analysis' rank order."""
    findings = doc["findings"] if doc is not None else []
    return pd.DataFrame(
        {
            "message": [f["message"] for f in findings],
            "severity": [f["severity"] for f in findings],
            "code": [f["code"] for f in findings],
            "rank": list(range(1, len(findings) + 1)),
        }
    )


def finding_kernel(finding: Finding) -> str | None:
    """The kernel a finding is about (``numbers["name"]``), if any."""
    name = (finding.get("numbers") or {}).get("name")
    return str(name) if name else None


def _gap(cause: str | None) -> Callable[[RunView, Finding], Evidence]:
    """The longest idle gap, of any cause (None) or of ``cause``."""

    def handler(view: RunView, finding: Finding) -> Evidence:
        gaps = view.gaps
        if gaps is None or not len(gaps):
            return "none", "no listed gaps"
        pool = gaps if cause is None else gaps[gaps["cause"].astype(str) == cause]
        if not len(pool):
            return "none", f"no gap caused by {cause}"
        return "gap", int(pool["duration_ns"].idxmax())

    return handler


def _host(view: RunView, finding: Finding) -> Evidence:
    """The host row with the most time in sync calls."""
    lanes = view.timeline.lanes
    host = [(int(lane.sync_end.sum() - lane.sync_start.sum()), i) for i, lane in enumerate(lanes) if lane.kind == "host" and len(lane.sync_start)]
    return ("host", max(host)[1]) if host else ("none", "no host row with sync calls")


def _copy(view: RunView, finding: Finding) -> Evidence:
    """The first copy row."""
    copy = [i for i, lane in enumerate(view.timeline.lanes) if lane.kind == "copy"]
    if not copy and view.stats:  # statistics only: the memory copy table is the evidence
        return "tab", "hotspots"
    return ("copy", copy[0]) if copy else ("none", "no copy row")


def _kernel(view: RunView, finding: Finding) -> Evidence:
    """The dispatches of the kernel the finding names."""
    name = finding_kernel(finding)
    if name and not len(view.kernels) and view.stats:  # statistics only: no dispatches, its row in the table
        return "tab", "hotspots"
    return ("kernel", name) if name else ("none", "kernel not found")


def _tab(tab: str) -> Callable[[RunView, Finding], Evidence]:
    def handler(view: RunView, finding: Finding) -> Evidence:
        return "tab", tab

    return handler


EVIDENCE: dict[FindingCode, Callable[[RunView, Finding], Evidence]] = {
    FindingCode.GPU_IDLE: _gap(None),
    FindingCode.IDLE_SYNC: _gap("sync"),
    FindingCode.LAUNCH_BOUND: _gap("launch"),
    FindingCode.SYNC_AFTER_LAUNCH: _host,
    FindingCode.SYNC_OVERHEAD: _host,
    FindingCode.COPY_SHARE: _copy,
    FindingCode.SLOW_COPY: _copy,
    FindingCode.DOMINANT_KERNEL: _kernel,
    FindingCode.LOW_OCCUPANCY: _kernel,
    FindingCode.COUNTER: _kernel,
    FindingCode.MANY_TINY_KERNELS: _tab("hotspots"),
    FindingCode.COMMUNICATION_SHARE: _tab("hotspots"),
    FindingCode.NEEDS_TRACE: _tab("timeline"),  # the timeline says what is missing and the flags
    FindingCode.NO_COUNTERS: _tab("counters"),
    FindingCode.COUNTERS_SERIALISE: _tab("hardware"),
    FindingCode.KNOWN_ERROR: _tab("issues"),
    FindingCode.SLOW_STEP: _tab("steps"),
    FindingCode.MEMORY_GROWTH: _tab("steps"),
    FindingCode.MEMORY_RESERVED: _tab("steps"),
    FindingCode.STRAGGLER: _tab("ranks"),
    FindingCode.COMM_OVERLAP: _tab("ranks"),
    FindingCode.WARMUP: _tab("steps"),
    FindingCode.GEMM_SHARE: _tab("hotspots"),
}


def finding_evidence(view: RunView, finding: Finding) -> Evidence:
    """Where Enter on a finding goes (see :data:`Evidence`); needs the timeline part."""
    try:
        code = FindingCode.of(finding["code"])
    except ValueError:
        return "none", "no evidence to show"
    return EVIDENCE[code](view, finding)


def host_window(view: RunView, lane_index: int, syncs: int = 5) -> tuple[int, int]:
    """[start, end) (relative ns) spanning ``syncs`` consecutive sync calls from the middle
    of a host row's sync calls: a few loop iterations, enough to see the sync pattern."""
    lane = view.timeline.lanes[lane_index]
    order = lane.sync_start.argsort(kind="stable")
    s, e = lane.sync_start[order], lane.sync_end[order]
    first = max(0, min(len(s) // 2, len(s) - syncs))
    last = min(first + syncs, len(s))
    return int(s[first]), int(max(e[first:last].max(), s[first] + 1))


def copy_window(view: RunView, lane_index: int) -> tuple[int, int]:
    """[start, end) (relative ns) of the longest interval of a copy row."""
    lane = view.timeline.lanes[lane_index]
    i = int((lane.end - lane.start).argmax())
    return int(lane.start[i]), int(lane.end[i])


def kernel_counters(doc: Summary | None, name: str) -> list[tuple[str, dict]]:
    """(process, kernel entry of analysis.counters.counter_metrics) for kernel ``name``."""
    out = []
    for block in doc["counters"] if doc is not None else []:
        for k in block.get("kernels", []):
            if k["name"] == name:
                out.append((block.get("process", ""), k))
    return out
