"""The integrity report as the TUI shows it (issue 32): the Integrity pane's rows, where
Enter on an issue goes, and the trust marks beside degraded figures. No Textual or Rich import.

Every string here comes from a trace (kernel, process and file names inside the issues'
messages and examples): the panes show it through :func:`tui_prof.tui.safe.plain`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from tui_prof.analysis.api import CheckReport, Issue
from tui_prof.render.fmt import fmt_ns

INTEGRITY_KEY = "i"  # the Integrity tab's key (the marks name it)
# the summary sections behind the hotspots pane's figures (its measurement line and table)
HOTSPOT_TRUST = ("measurement", "hotspots", "kernels")
# the sections whose issues are shown in another pane when they name no time range
COUNTER_KEYS = ("counters", "occupancy")

# (kind, target): ("window", (start_ns, end_ns)) absolute ns on the run's clock |
# ("tab", tab id) | ("none", reason)
IssueEvidence = tuple[str, Any]


def issue_where(issue: Issue) -> str:
    """Where the issue lies, in one line: processes, rows, time range."""
    affects = issue.affects
    parts = []
    if affects.get("processes"):
        parts.append(", ".join(str(p) for p in affects["processes"]))
    if affects.get("table") and affects.get("rows") is not None:
        parts.append(f"{affects['rows']:,} {affects['table']} rows")
    if affects.get("counters"):
        parts.append(", ".join(str(c) for c in affects["counters"][:3]))
    if affects.get("files") and not affects.get("processes"):
        parts.append(f"{len(affects['files'])} file(s)")
    span = affects.get("time_range_ns") or []
    if len(span) == 2:
        parts.append(f"over {fmt_ns(span[1] - span[0])}")
    return " · ".join(parts) or "the whole run"


def issue_affects(issue: Issue) -> str:
    """The summary sections whose figures the issue bends ("-": none)."""
    return ", ".join(issue.affects.get("sections") or []) or "-"


def integrity_frame(report: CheckReport | None) -> pd.DataFrame:
    """One row per issue in the report's order (most severe first): severity, code, where,
    what it affects, and ``n`` (the issue's index in ``report.issues``)."""
    issues = report.issues if report is not None else []
    return pd.DataFrame(
        {
            "severity": [i.severity for i in issues],
            "code": [i.code for i in issues],
            "where": [issue_where(i) for i in issues],
            "affects": [issue_affects(i) for i in issues],
            "n": list(range(1, len(issues) + 1)),
        }
    )


def issue_evidence(issue: Issue) -> IssueEvidence:
    """Where Enter on ``issue`` goes: the first example rows' time on the timeline (padded by
    half their length), else the issue's time range; counter issues the counters tab; files the
    issues tab."""
    affects = issue.affects
    examples = affects.get("examples") or []
    if examples:
        start, end = int(examples[0]["start_ns"]), int(examples[0]["end_ns"])
        if start >= 0 and end >= start:
            pad = max((end - start) // 2, 10_000)
            return "window", (start - pad, end + pad)
    span = affects.get("time_range_ns") or []
    if len(span) == 2 and span[1] > span[0]:
        return "window", (int(span[0]), int(span[1]))
    sections = affects.get("sections") or []
    if any(s in COUNTER_KEYS for s in sections):
        return "tab", "counters"
    if affects.get("files"):
        return "tab", "issues"
    return "none", "no place on the timeline: the message says what it is"


def worst(trust: Mapping[str, Any] | None, sections: Iterable[str]) -> tuple[str, list[str]]:
    """The worst trust label among ``sections`` of the summary's ``trust`` map and the codes
    that set any non-ok label, the most severe first (``("ok", [])`` when none is degraded)."""
    order = ("ok", "degraded", "unreliable")
    level, found = "ok", dict[str, str]()
    for section in sections:
        label = (trust or {}).get(section)
        if not label or label["trust"] == "ok":
            continue
        level = max(level, label["trust"], key=order.index)
        for reason in label["reasons"]:  # "<severity> <code>: <message>"
            severity, _, rest = reason.partition(" ")
            code = rest.split(":", 1)[0]
            found[code] = max(found.get(code, "ok"), severity if severity in order else "degraded", key=order.index)
    codes = sorted(found, key=lambda c: -order.index(found[c]))  # stable: first named first among equals
    return level, codes


def trust_note(trust: Mapping[str, Any] | None, sections: Iterable[str], key: str, *, compact: bool = False) -> str:
    """The mark beside degraded figures: ``⚠ unreliable: clock-domains (i: Integrity)``
    (``compact``: ``⚠ unreliable (i)``, beside a line that must fit 80 columns); "" when every
    one of ``sections`` is ok."""
    level, codes = worst(trust, sections)
    if level == "ok":
        return ""
    if compact:
        return f"⚠ {level} ({key})"
    shown = ", ".join(codes[:2]) + (f" +{len(codes) - 2}" if len(codes) > 2 else "")
    return f"⚠ {level}: {shown} ({key}: Integrity)"
