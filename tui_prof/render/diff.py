"""``tuiprof diff`` rendered: the ``tuiprof.diff/1`` JSON document, plain text and Markdown.

The numbers are :class:`tui_prof.analysis.diff.DiffResult`'s; this module only arranges
and formats them (:mod:`tui_prof.render.fmt`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from tui_prof.analysis.api import DIFF_SCHEMA, KERNEL_DIFF_COLUMNS, DiffResult, inconclusive, judged_metrics, rank_diff, regressions
from tui_prof.exits import EXIT_INCONCLUSIVE, EXIT_NOTHING_LOADED, EXIT_OK, EXIT_REGRESSION
from tui_prof.render.fmt import fmt_ns, fmt_pct, shorten
from tui_prof.render.safe import md_code, md_text, safe_text
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
        return {
            "path": doc["source"]["path"],
            "formats": doc["source"]["formats"],
            "processes": [p["label"] for p in doc["processes"]],
            "errors": doc["source"]["errors"],
        }

    rows = result.kernels if top is None else result.kernels.head(top)
    kernels = [{c: (_num(v) if c not in ("key", "status") else v) for c, v in zip(KERNEL_DIFF_COLUMNS, r)} for r in rows.itertuples(index=False)]
    doc = {
        "schema": DIFF_SCHEMA,
        "tuiprof_version": __version__,
        "a": side(result.summary_a),
        "b": side(result.summary_b),
        "match": result.by,
        "category_rules": result.category_rules,
        "noise": {"pct": result.noise_pct, "pp": result.noise_pp},
        "metrics": [{k: (_num(v) if k in ("a", "b", "delta", "delta_pct", "threshold") else v) for k, v in m.items()} for m in result.metrics],
        "kernels": {
            **result.counts(),
            "listed": len(kernels),
            "truncated": int(len(result.kernels) - len(kernels)),
            "rows": kernels,
            "source_a": result.summary_a.get("hotspots_source", "trace"),
            "source_b": result.summary_b.get("hotspots_source", "trace"),
        },
        "domains": [{k: (_num(v) if k not in ("domain", "status") else v) for k, v in d.items()} for d in result.domains],
        "notes": list(result.notes),
        "ranks": rank_diff(result.summary_a, result.summary_b),
    }
    if fail_on_regression is not None:
        regs = regressions(result, fail_on_regression)
        judged = judged_metrics(result)
        doc["fail_on_regression"] = {
            "pct": float(fail_on_regression),
            "failed": bool(regs),
            "metrics": [m["key"] for m in regs],
            "tripped": [{"key": m["key"], "reason": m["reason"]} for m in regs],
            "not_judged": [{"key": m["key"], "reason": m["reason"]} for m in result.metrics if m["better"] == "lower" and m["status"] == "n/a"],
            "inconclusive": inconclusive(result),
            "exit_status": gate_status(result, fail_on_regression) if judged or regs else EXIT_NOTHING_LOADED,
        }
    return doc


def gate_status(result: DiffResult, pct: float) -> int:
    """The exit status of ``--fail-on-regression PCT``: EXIT_INCONCLUSIVE when a gated metric
    is unreliable on either side (``tuiprof check``), else EXIT_REGRESSION when something
    tripped, EXIT_NOTHING_LOADED when no lower-is-better metric could be judged (both
    sides lack the data), else EXIT_OK."""
    if inconclusive(result):
        return EXIT_INCONCLUSIVE
    if regressions(result, pct):
        return EXIT_REGRESSION
    return EXIT_OK if judged_metrics(result) else EXIT_NOTHING_LOADED


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
    return fmt_pct(value, signed=True)


def _verdict_cell(m: Mapping[str, Any]) -> str:
    if m["status"] == "n/a":
        return m["reason"].split(":", 1)[0]  # "n/a (no trace in A)"
    return m["status"]


def _reason_cell(m: Mapping[str, Any]) -> str:
    """The reason of a verdict that needs one (changed, n/a); the numbers say the rest."""
    if m["status"] == "changed":
        return m["reason"]
    if m["status"] == "n/a":
        return "not judged"
    return ""


def noise_cell(threshold: float, unit: str) -> str:
    """A metric's noise band in :func:`fmt_pct`'s precision (``±3.9%``; ``±2%``, ``±1pp``
    for a whole number): a band from a run's step spread is not a 4-decimal figure."""
    digits = 0 if float(threshold).is_integer() else 1
    text = fmt_pct(threshold, digits)
    return f"±{text[:-1]}pp" if unit == "pp" else f"±{text}"


def metric_rows(result: DiffResult) -> list[list[str]]:
    return [
        [
            m["label"],
            fmt_metric(m["a"], m["unit"]),
            fmt_metric(m["b"], m["unit"]),
            fmt_metric(m["delta"], m["unit"], signed=True),
            fmt_rel(m["delta_pct"]) if m["unit"] != "pct" else "",
            noise_cell(m["threshold"], m["threshold_unit"]),
            _verdict_cell(m),
            _reason_cell(m),
        ]
        for m in result.metrics
    ]


METRIC_HEADERS = ["metric", "A", "B", "Δ (B−A)", "Δ %", "noise", "verdict", "why"]
KERNEL_HEADERS = ["kernel", "status", "calls A", "calls B", "total A", "total B", "Δ total", "Δ %", "ratio", "avg A", "avg B", "share A", "share B"]
DOMAIN_HEADERS = ["domain", "status", "calls A", "calls B", "total A", "total B", "Δ total", "Δ %"]


def _share(value) -> str:
    return fmt_pct(value, 2)


def domain_rows(result: DiffResult) -> list[list[str]]:
    return [
        [
            d["domain"],
            d["status"],
            str(d["calls_a"]),
            str(d["calls_b"]),
            fmt_ns(d["total_a_ns"]) if d["status"] != "added" else "-",
            fmt_ns(d["total_b_ns"]) if d["status"] != "removed" else "-",
            ("+" if d["delta_ns"] > 0 else "") + fmt_ns(d["delta_ns"]),
            fmt_rel(d["delta_pct"]),
        ]
        for d in result.domains
    ]


def kernel_rows(result: DiffResult, top: int | None, width: int) -> list[list[str]]:

    rows = result.kernels if top is None else result.kernels.head(top)
    out = []
    for r in rows.itertuples(index=False):
        out.append(
            [
                Code(shorten(r.key, width)),
                r.status,
                str(r.calls_a),
                str(r.calls_b),
                fmt_ns(r.total_a_ns) if r.calls_a else "-",
                fmt_ns(r.total_b_ns) if r.calls_b else "-",
                ("+" if r.delta_ns > 0 else "") + fmt_ns(r.delta_ns),
                fmt_rel(r.delta_pct),
                "-" if np.isnan(r.ratio) else f"{r.ratio:.3f}×",
                "-" if np.isnan(r.avg_a_ns) else fmt_ns(r.avg_a_ns),
                "-" if np.isnan(r.avg_b_ns) else fmt_ns(r.avg_b_ns),
                _share(r.share_a),
                _share(r.share_b),
            ]
        )
    return out


def diff_text(result: DiffResult, top: int | None = 20, name_width: int = 56, fail_on_regression: float | None = None) -> str:
    """``tuiprof diff`` as plain text."""

    c = result.counts()
    out = [f"A: {result.path_a}", f"B: {result.path_b}", f"Kernels matched by {result.by}: {c['matched']} matched, {c['added']} added, {c['removed']} removed"]
    out += [f"Note: {n}" for n in result.notes]
    out += ["", f"Summary (Δ = B − A; noise: ±{result.noise_pct:g}% of A for times and counts, ±{result.noise_pp:g} points for % metrics)"]
    out += table(METRIC_HEADERS, metric_rows(result), "lrrrrrll")
    shown = len(result.kernels) if top is None else min(top, len(result.kernels))
    out += ["", f"Kernels by |Δ total| ({shown} of {len(result.kernels)})"]
    out += table(KERNEL_HEADERS, kernel_rows(result, top, name_width), "llrrrrrrrrrrr")
    if result.domains:
        out += ["", "Domains (calls and time per profiler domain)"]
        out += table(DOMAIN_HEADERS, domain_rows(result), "llrrrrrr")
    out += rank_lines(result, top)
    out += _verdict(result, fail_on_regression)
    return lines_text(out)


def _verdict(result: DiffResult, pct: float | None) -> list[str]:
    if pct is None:
        return []
    regs = regressions(result, pct)
    skipped = [m for m in result.metrics if m["better"] == "lower" and m["status"] == "n/a"]
    out = [""]
    if skipped:
        out.append("Not judged (a side has no data): " + ", ".join(f"{m['label']} {_verdict_cell(m)}" for m in skipped))
    unsure = inconclusive(result)
    if unsure:
        out.append(f"INCONCLUSIVE: a gated metric is unreliable on a side (tuiprof check shows why) -> exit status {EXIT_INCONCLUSIVE}")
        out += [f"  {safe_text(u['reason'])}" for u in unsure]
    elif regs:
        out.append(
            f"REGRESSION beyond {pct:g}%: "
            + ", ".join(
                f"{m['label']} {fmt_metric(m['delta'], m['unit'], signed=True)}" + (f" ({fmt_rel(m['delta_pct'])})" if m["unit"] != "pct" else "") for m in regs
            )
            + f" -> exit status {EXIT_REGRESSION}"
        )
        out += [f"  tripped: {m['reason']}" for m in regs]
    elif not judged_metrics(result):
        out.append(f"No metric could be judged (neither side has the data) -> exit status {EXIT_NOTHING_LOADED}")
    else:
        out.append(f"No regression beyond {pct:g}%.")
    return out


def diff_markdown(result: DiffResult, top: int | None = 20, fail_on_regression: float | None = None) -> str:
    """``tuiprof diff --md``: the same tables as Markdown (for tickets and CI comments)."""

    c = result.counts()
    out = [
        "# tuiprof diff",
        "",
        f"- **A**: {md_code(result.path_a)}",
        f"- **B**: {md_code(result.path_b)}",
        f"- kernels matched by **{result.by}**: {c['matched']} matched, {c['added']} added, {c['removed']} removed",
        f"- noise threshold: ±{result.noise_pct:g}% of A (times, counts), ±{result.noise_pp:g} points (% metrics)",
    ]
    out += [f"- note: {md_text(n)}" for n in result.notes]
    out += ["", "## Summary (Δ = B − A)", ""] + markdown_table(METRIC_HEADERS, metric_rows(result))
    shown = len(result.kernels) if top is None else min(top, len(result.kernels))
    out += ["", f"## Kernels by |Δ total| ({shown} of {len(result.kernels)})", ""]
    out += markdown_table(KERNEL_HEADERS, kernel_rows(result, top, 80))
    if result.domains:
        out += ["", "## Domains", ""] + markdown_table(DOMAIN_HEADERS, domain_rows(result))
    out += rank_lines(result, top, markdown=True)
    out += [md_text(line) if line else line for line in _verdict(result, fail_on_regression)]
    return lines_text(out) + "\n"


RANK_DIFF_HEADERS = ["rank", "span A", "span B", "compute A", "compute B", "comm A", "comm B", "wait A", "wait B"]


def shown_ranks(ranks: list[dict[str, Any]], top: int | None) -> list[dict[str, Any]]:
    """The rank rows a report lists: all of them up to ``top``, else the ``top`` ranks whose
    span changed most (a rank on one side only first), in rank order."""
    if top is None or len(ranks) <= top:
        return ranks

    def change(r: dict[str, Any]) -> float:
        a, b = r["span_ns_a"], r["span_ns_b"]
        return math.inf if a is None or b is None else abs(b - a)

    keep = sorted(sorted(range(len(ranks)), key=lambda i: -change(ranks[i]))[:top])
    return [ranks[i] for i in keep]


def rank_lines(result: DiffResult, top: int | None = None, markdown: bool = False) -> list[str]:
    """The ranks of both sides (analysis.diff.rank_diff), when either has several processes:
    the whole run's communication, collectives by type and, up to ``top``, the ranks."""
    d = rank_diff(result.summary_a, result.summary_b)
    if max(d["processes"]) < 2:
        return []
    pa, pb = d["communication_pct"]
    oa, ob = d["overlap_pct"]
    head = (
        f"{d['processes'][0]} vs {d['processes'][1]} processes; communication {fmt_pct(pa, 2)} vs {fmt_pct(pb, 2)} of rank time, "
        f"overlapping compute {fmt_pct(oa, 2)} vs {fmt_pct(ob, 2)}; straggler {_rank(d['straggler'][0])} vs {_rank(d['straggler'][1])}"
    )
    # both tables sanitise every cell (markdown_table escapes it for Markdown too)
    render = markdown_table if markdown else (lambda headers, rows: table(headers, rows, "l" + "r" * (len(headers) - 1)))
    out = ["", "## Ranks", "", md_text(head), ""] if markdown else ["", f"Ranks: {head}"]
    if d["by_type"]:
        rows = [[t["type"], str(t["count_a"]), str(t["count_b"]), fmt_ns(t["total_ns_a"]), fmt_ns(t["total_ns_b"])] for t in d["by_type"]]
        out += render(["collective", "kernels A", "kernels B", "time A", "time B"], rows) + [""]
    elif not markdown:
        out += [""]
    listed = shown_ranks(d["ranks"], top)
    rows = [
        [str(r["rank"])]
        + [fmt_ns(r[f"{k}_{s}"]) if r[f"{k}_{s}"] is not None else "-" for k in ("span_ns", "compute_ns", "communication_ns", "wait_ns") for s in "ab"]
        for r in listed
    ]
    out += render(RANK_DIFF_HEADERS, rows)
    if len(listed) < len(d["ranks"]):
        out += [
            "",
            f"{len(d['ranks']) - len(listed)} more ranks not listed: these are the {len(listed)} whose span changed most (--top 0 lists every rank; --json has them all)",
        ]
    return out


def _rank(rank) -> str:
    return "-" if rank is None else f"rank {rank}"
