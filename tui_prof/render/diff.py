"""``tuiprof diff`` rendered: the ``tuiprof.diff/1`` JSON document, plain text and Markdown.

The numbers are :class:`tui_prof.analysis.diff.DiffResult`'s; this module only arranges
and formats them (:mod:`tui_prof.render.fmt`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from tui_prof.analysis.diff import KERNEL_DIFF_COLUMNS, SCHEMA, DiffResult, regressions
from tui_prof.exits import EXIT_REGRESSION
from tui_prof.render.fmt import fmt_ns, shorten
from tui_prof.render.safe import md_code, md_text
from tui_prof.render.summary import Code, lines_text, markdown_table, table


def _num(value):
    if value is None:
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    value = float(value)
    if math.isnan(value):
        return None
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return round(value, 6)


def to_json(result: DiffResult, *, top: int | None = None, fail_on_regression: float | None = None) -> dict:
    """The ``tuiprof.diff/1`` document (ns ints; floats rounded to 1e-6; NaN -> null)."""
    from tui_prof import __version__

    def side(doc: Mapping[str, Any]) -> dict:
        return {"path": doc["source"]["path"], "formats": doc["source"]["formats"],
                "processes": [p["label"] for p in doc["processes"]],
                "errors": doc["source"]["errors"]}

    rows = result.kernels if top is None else result.kernels.head(top)
    kernels = [{c: (_num(v) if c not in ("key", "status") else v) for c, v in zip(KERNEL_DIFF_COLUMNS, r)}
               for r in rows.itertuples(index=False)]
    doc = {
        "schema": SCHEMA,
        "tuiprof_version": __version__,
        "a": side(result.summary_a),
        "b": side(result.summary_b),
        "match": result.by,
        "category_rules": result.category_rules,
        "noise": {"pct": result.noise_pct, "pp": result.noise_pp},
        "metrics": [{k: (_num(v) if k in ("a", "b", "delta", "delta_pct", "threshold") else v) for k, v in m.items()}
                    for m in result.metrics],
        "kernels": {**result.counts(), "listed": len(kernels), "truncated": int(len(result.kernels) - len(kernels)),
                    "rows": kernels},
        "notes": list(result.notes),
    }
    if fail_on_regression is not None:
        regs = regressions(result, fail_on_regression)
        doc["fail_on_regression"] = {"pct": float(fail_on_regression), "failed": bool(regs),
                                     "metrics": [m["key"] for m in regs], "exit_status": EXIT_REGRESSION if regs else 0}
    return doc


def fmt_metric(value, unit: str, signed: bool = False) -> str:

    if value is None:
        return "-"
    sign = "+" if signed and value > 0 else ""
    if unit == "ns":
        return sign + fmt_ns(value)
    if unit == "pct":
        return f"{sign}{value:.2f}{'pp' if signed else '%'}"
    return f"{sign}{int(value)}"


def fmt_rel(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if math.isinf(value):
        return "new"
    return f"{value:+.1f}%"


def metric_rows(result: DiffResult) -> list[list[str]]:
    return [[m["label"], fmt_metric(m["a"], m["unit"]), fmt_metric(m["b"], m["unit"]),
             fmt_metric(m["delta"], m["unit"], signed=True), fmt_rel(m["delta_pct"]) if m["unit"] != "pct" else "",
             f"±{m['threshold']:g}{m['threshold_unit']}", m["status"]] for m in result.metrics]


METRIC_HEADERS = ["metric", "A", "B", "Δ (B−A)", "Δ %", "noise", "verdict"]
KERNEL_HEADERS = ["kernel", "status", "calls A", "calls B", "total A", "total B", "Δ total", "Δ %", "ratio", "avg A", "avg B"]


def kernel_rows(result: DiffResult, top: int | None, width: int) -> list[list[str]]:

    rows = result.kernels if top is None else result.kernels.head(top)
    out = []
    for r in rows.itertuples(index=False):
        out.append([Code(shorten(r.key, width)), r.status, str(r.calls_a), str(r.calls_b),
                    fmt_ns(r.total_a_ns) if r.calls_a else "-", fmt_ns(r.total_b_ns) if r.calls_b else "-",
                    ("+" if r.delta_ns > 0 else "") + fmt_ns(r.delta_ns), fmt_rel(r.delta_pct),
                    "-" if np.isnan(r.ratio) else f"{r.ratio:.3f}×",
                    "-" if np.isnan(r.avg_a_ns) else fmt_ns(r.avg_a_ns), "-" if np.isnan(r.avg_b_ns) else fmt_ns(r.avg_b_ns)])
    return out


def diff_text(result: DiffResult, top: int | None = 20, name_width: int = 56, fail_on_regression: float | None = None) -> str:
    """``tuiprof diff`` as plain text."""

    c = result.counts()
    out = [f"A: {result.path_a}", f"B: {result.path_b}",
           f"Kernels matched by {result.by}: {c['matched']} matched, {c['added']} added, {c['removed']} removed"]
    out += [f"Note: {n}" for n in result.notes]
    out += ["", "Summary (Δ = B − A; noise: ±{:g}% of A for times and counts, ±{:g} points for % metrics)".format(
        result.noise_pct, result.noise_pp)]
    out += table(METRIC_HEADERS, metric_rows(result), "lrrrrrl")
    shown = len(result.kernels) if top is None else min(top, len(result.kernels))
    out += ["", f"Kernels by |Δ total| ({shown} of {len(result.kernels)})"]
    out += table(KERNEL_HEADERS, kernel_rows(result, top, name_width), "llrrrrrrrrr")
    out += _verdict(result, fail_on_regression)
    return lines_text(out)


def _verdict(result: DiffResult, pct: float | None) -> list[str]:
    if pct is None:
        return []
    regs = regressions(result, pct)
    if not regs:
        return ["", f"No regression beyond {pct:g}%."]
    return ["", f"REGRESSION beyond {pct:g}%: " + ", ".join(
        f"{m['label']} {fmt_metric(m['delta'], m['unit'], signed=True)}" + (f" ({fmt_rel(m['delta_pct'])})" if m["unit"] != "pct" else "")
        for m in regs) + f" -> exit status {EXIT_REGRESSION}"]


def diff_markdown(result: DiffResult, top: int | None = 20, fail_on_regression: float | None = None) -> str:
    """``tuiprof diff --md``: the same tables as Markdown (for tickets and CI comments)."""

    c = result.counts()
    out = ["# tuiprof diff", "", f"- **A**: {md_code(result.path_a)}", f"- **B**: {md_code(result.path_b)}",
           f"- kernels matched by **{result.by}**: {c['matched']} matched, {c['added']} added, {c['removed']} removed",
           f"- noise threshold: ±{result.noise_pct:g}% of A (times, counts), ±{result.noise_pp:g} points (% metrics)"]
    out += [f"- note: {md_text(n)}" for n in result.notes]
    out += ["", "## Summary (Δ = B − A)", ""] + markdown_table(METRIC_HEADERS, metric_rows(result))
    shown = len(result.kernels) if top is None else min(top, len(result.kernels))
    out += ["", f"## Kernels by |Δ total| ({shown} of {len(result.kernels)})", ""]
    out += markdown_table(KERNEL_HEADERS, kernel_rows(result, top, 80))
    out += _verdict(result, fail_on_regression)
    return lines_text(out) + "\n"
