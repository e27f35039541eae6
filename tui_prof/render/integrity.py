"""``tuiprof check``: the integrity report as text (its JSON is the record itself,
schema ``tuiprof.check/1``). Every string from a trace goes through :func:`safe_text`."""

from __future__ import annotations

from typing import Any

from tui_prof.render.fmt import fmt_ns
from tui_prof.render.safe import safe_text

MARK = {"info": " ", "degraded": "~", "unreliable": "!"}


def _where(affects: dict[str, Any]) -> str:
    parts = []
    if affects.get("processes"):
        parts.append("process " + ", ".join(safe_text(p) for p in affects["processes"]))
    if affects.get("table") and affects.get("rows") is not None:
        parts.append(f"{affects['rows']} {safe_text(affects['table'])} rows")
    span = affects.get("time_range_ns") or []
    if len(span) == 2:
        parts.append(f"t = {span[0]} .. {span[1]} ns ({fmt_ns(span[1] - span[0])})")
    if affects.get("sections"):
        parts.append("bends: " + ", ".join(affects["sections"]))
    return "; ".join(parts)


def check_text(record: dict[str, Any]) -> str:
    """The report: one block per issue (mark, severity, code, message, where), then the verdict."""
    lines = [f"Check: {safe_text(record['run'])}", f"Checks run: {', '.join(record['checks'])}", ""]
    for issue in record["issues"]:
        lines.append(f"{MARK.get(issue['severity'], '?')} {issue['severity']:<10} {issue['code']:<20} {safe_text(issue['message'])}")
        where = _where(issue["affects"])
        if where:
            lines.append(f"  {'':<10} {'':<20} {where}")
        for example in issue["affects"].get("examples", [])[:3]:
            lines.append(f"  {'':<10} {'':<20} e.g. row {example['row']}: {safe_text(example['name'])[:80]} at {example['start_ns']} ns")
        if issue.get("fix"):
            lines.append(f"  {'':<10} {'':<20} what to do: {safe_text(issue['fix'])}")
    degrading = [i for i in record["issues"] if i["severity"] != "info"]
    if not record["issues"]:
        lines.append("No issue found: every figure can be trusted as far as these checks see.")
    elif degrading:
        lines.append("")
        lines.append(f"{len(degrading)} issue(s) degrade figures: the summary marks the sections named after 'bends:'.")
    else:
        lines.append("")
        lines.append("Nothing degrades a figure (notes only).")
    return "\n".join(lines)


def trust_mark(trust: dict[str, Any] | None, section: str) -> str:
    """ " [degraded]" / " [unreliable]" after a heading whose section's figures are not ``ok``."""
    if not trust or section not in trust:
        return ""
    level = trust[section]["trust"]
    return "" if level == "ok" else f" [{level}: see tuiprof check]"
