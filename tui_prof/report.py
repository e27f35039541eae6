"""Plain-text rendering of analysis results for the CLI (no rich: fast to import, pipe-safe)."""

from __future__ import annotations


def format_ns(ns: float | int | None) -> str:
    """Human duration from nanoseconds: 812 ns, 12.4 µs, 3.21 ms, 1.50 s."""
    if ns is None:
        return "-"
    value = float(ns)
    sign = "-" if value < 0 else ""
    value = abs(value)
    if value < 1e3:
        return f"{sign}{value:.0f} ns"
    if value < 1e6:
        return f"{sign}{value / 1e3:.1f} µs"
    if value < 1e9:
        return f"{sign}{value / 1e6:.2f} ms"
    return f"{sign}{value / 1e9:.2f} s"


def shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def table(headers: list[str], rows: list[list[str]], align: str | None = None) -> list[str]:
    """Fixed-width text table; ``align`` is one 'l'/'r' per column (default: first left)."""
    align = align or "l" + "r" * (len(headers) - 1)
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cells, widths, align)).rstrip()

    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]


def summary_text(summary: dict, name_width: int = 48) -> str:
    """The ``tuiprof summary`` report as text."""
    out: list[str] = []
    source = summary["source"]
    out.append(f"Run: {source['path']}")
    out.append(f"Formats: {', '.join(source['formats']) or 'none recognised'}")
    for proc in summary["processes"]:
        tool = " ".join(x for x in (proc["tool"], proc["tool_version"]) if x)
        out.append(
            f"Process {proc['label']}: {proc['dispatches']} dispatches, {proc['api_calls']} API calls, "
            f"{proc['copies']} copies" + (f" [{tool}]" if tool else "") + (" (partial)" if proc["partial"] else "")
        )
    gpus = [a for a in summary["agents"] if a.get("type") == "GPU"]
    if gpus:
        out.append("GPUs: " + "; ".join(
            f"{a['id']}: {a['arch'] or '?'}" + (f" {a['product']}" if a.get("product") else "") for a in gpus
        ))
    kernels = summary["kernels"]
    out.append(
        f"Kernels: {kernels['dispatches']} dispatches of {kernels['unique_names']} kernels, "
        f"{format_ns(kernels['total_ns'])} kernel time"
    )
    if summary["hotspots"]:
        out.append("")
        out.append("Top kernels")
        rows = [
            [shorten(h["name"], name_width), str(h["calls"]), format_ns(h["total_ns"]), format_ns(h["avg_ns"]),
             format_ns(h["min_ns"]), format_ns(h["max_ns"]), format_ns(h["stddev_ns"]), f"{h['percent']:.2f}"]
            for h in summary["hotspots"]
        ]
        out.extend(table(["kernel", "calls", "total", "avg", "min", "max", "stddev", "%"], rows))
    if summary["warnings"]:
        out.append("")
        out.append("Warnings")
        out.extend(f"  {w}" for w in summary["warnings"])
    if source["skipped"]:
        out.append(f"Skipped {len(source['skipped'])} file(s) that are not profiler output (--verbose lists them).")
    return "\n".join(out)
