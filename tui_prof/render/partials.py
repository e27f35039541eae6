"""``tuiprof summary --cluster`` as text: the sections merged from per-rank partials
(analysis.partials), the findings and critical paths of the second pass
(analysis.pathpartials), the ranks that failed, and which sections the merge leaves out.
Every string from a trace goes through :func:`~tui_prof.render.safe.safe_text` (``table``,
``lines_text``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tui_prof.render.fmt import fmt_ns, fmt_pct, shorten
from tui_prof.render.summary import critical_path_section, findings_section, lines_text, rank_sections, table


def merged_text(doc: Mapping[str, Any], name_width: int = 48) -> str:
    """The merged summary of a many-rank run as text."""
    parts = doc["partials"]
    k = doc["kernels"]
    out = [
        f"Ranks: {parts['merged']} of {parts['ranks']} summarised from per-rank partials",
        f"Kernels: {k['dispatches']} dispatches of {k['unique_names']} kernels, {fmt_ns(k['total_ns'])} kernel time",
    ]
    gpu, gaps = doc["gpu"], doc["gaps"]
    out.append(
        f"GPU: busy {fmt_ns(gpu['busy_ns'])} of {fmt_ns(gpu['agent_span_ns'])} summed over {len(gpu['agents'])} GPU(s) ({fmt_pct(gpu['busy_pct'], 2)}); "
        f"{gaps['count']} idle gaps >= {fmt_ns(gaps['threshold_ns'])}"
    )
    for failed in parts["failed_ranks"]:
        out.append(f"Failed rank {failed['label']}: {failed['reason']}")
    for failed in (doc.get("critical_path") or {}).get("failed_ranks", []):
        out.append(f"No critical path for rank {failed['label']}: {failed['reason']}")
    if doc.get("warnings"):
        out += ["", "Warnings"] + [f"  {w}" for w in doc["warnings"]]
    if doc["hotspots"]:
        source = doc.get("stats", {}).get("source") if doc.get("hotspots_source") == "stats" else ""
        out += ["", "Top kernels" + (f" ({source})" if source else "")]
        rows = [
            [shorten(h["name"], name_width), str(h["calls"]), fmt_ns(h["total_ns"]), fmt_ns(h["avg_ns"]), fmt_ns(h["median_ns"]), f"{h['percent']:.2f}"]
            for h in doc["hotspots"]
        ]
        out += table(["kernel", "calls", "total", "avg", "median", "%"], rows)
    # findings and the critical path: in a document whose second pass ran (docs/cluster.md)
    decided = [*findings_section(doc), *critical_path_section(doc, name_width)] if "findings" in doc else []
    for title, headers, rows, notes in decided + rank_sections(doc, name_width):
        out += ["", title]
        if rows:
            out += table(headers, [[shorten(c, 100) for c in r] for r in rows], "l" * len(headers))
        out += notes
    out += [
        "",
        "Merged sections: " + ", ".join(parts["sections"]),
    ]
    return lines_text(out)
