"""``tuiprof diff A B --steps``: the step-aligned diff as the ``steps`` section of
``tuiprof.diff/1``, as text and as Markdown.

The numbers are :class:`tui_prof.analysis.stepdiff.StepDiff`'s; this module arranges and
formats them. Every name from a trace goes through :mod:`tui_prof.render.safe` (text:
``lines_text``/``table``; Markdown: ``md_code``/``markdown_table``); the JSON keeps names
as data (JSON string escaping) and holds no NaN or infinity.
"""

from __future__ import annotations

import math
from typing import Any

from tui_prof.analysis.api import STEPS_VERSION, StepChoice, StepDiff
from tui_prof.render.fmt import fmt_bytes, fmt_ns, fmt_pct, shorten
from tui_prof.render.safe import md_text
from tui_prof.render.summary import Code, lines_text, markdown_table, table


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else None
    return value


def _clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return _finite(obj)


def _choice(c: StepChoice, units: int) -> dict[str, Any]:
    return {
        "step": c.label,
        "number": c.number,
        "how": c.how,
        "process": c.process,
        "start_ns": c.start_ns,
        "end_ns": c.end_ns,
        "wall_ns": c.wall_ns,
        "steps": c.steps,
        "warmup_steps": c.warmup,
        "units": units,
    }


def verdict_line(d: StepDiff) -> str:
    """The one-line verdict: what explains most of the step-time change."""
    v = d.verdict
    total = v["delta_ns"]
    if v["what"] is None:
        pct = "" if v["delta_pct"] is None else f" ({fmt_pct(v['delta_pct'], signed=True)})"
        return f"step time {_signed(total)}{pct}: within the ±{v['band_pct']:.3g}% step noise; nothing explains a change"
    direction = "longer" if total > 0 else "shorter"
    pct = "" if v["delta_pct"] is None else f" ({fmt_pct(v['delta_pct'], signed=True)})"
    return (
        f"B's step is {fmt_ns(abs(total))} {direction}{pct}; most of it: {v['label']} "
        f"({_signed(v['part_ns'])}, {fmt_pct(v['share_pct'], 0)} of the changes in that direction)"
    )


def _signed(ns: int) -> str:
    return ("+" if ns > 0 else "") + fmt_ns(ns)


def steps_json(d: StepDiff) -> dict[str, Any]:
    """The ``steps`` section of ``tuiprof.diff/1`` (version ``STEPS_VERSION``; docs/diff.md)."""
    doc = {
        "version": STEPS_VERSION,
        "aligned_by": d.aligned_by,
        "a": _choice(d.a.choice, len(d.a.units)),
        "b": _choice(d.b.choice, len(d.b.units)),
        "wall_delta_ns": d.wall_delta_ns,
        "noise": {
            "floor_pct": d.noise_pct,
            "kernels": "per key: max(floor_pct, interquartile range of the key's per-step total over A's steady steps, % of its median)",
            "gap_ns": d.gap_noise_ns,
            "gaps": d.gaps["noise"],
            "step_band_pct": d.step_band_pct,
        },
        "exact": d.exact,
        "lanes": d.lanes,
        "inserted": d.inserted,
        "removed": d.removed,
        "slower": d.slower,
        "faster": d.faster,
        "gaps": {k: v for k, v in d.gaps.items() if k != "noise"},
        "copies": d.copies,
        "syncs": d.syncs,
        "host": d.host,
        "contributions": d.contributions,
        "verdict": {**d.verdict, "text": verdict_line(d)},
        "notes": list(d.notes),
    }
    return _clean(doc)


def _kernel_rows(rows: list[dict[str, Any]], width: int) -> list[list[str]]:
    return [[Code(shorten(r["key"], width)), str(r["count"]), fmt_ns(r["total_ns"])] for r in rows]


def _change_rows(rows: list[dict[str, Any]], width: int) -> list[list[str]]:
    return [
        [
            Code(shorten(r["key"], width)),
            str(r["count"]),
            fmt_ns(r["a_ns"]),
            fmt_ns(r["b_ns"]),
            _signed(r["delta_ns"]),
            "-" if r["ratio"] is None else f"{r['ratio']:.3f}×",
            f"±{r['band_pct']:.3g}%",
        ]
        for r in rows
    ]


def _gap_rows(rows: list[dict[str, Any]], width: int) -> list[list[str]]:
    return [
        [
            Code(shorten(r["before"], width)),
            fmt_ns(r["at_b_ns"]),
            fmt_ns(r["a_ns"]),
            fmt_ns(r["b_ns"]),
            _signed(r["delta_ns"]),
            r["cause_a"] or "-",
            r["cause_b"] or "-",
        ]
        for r in rows
    ]


CHANGE_HEADERS = ["kernel", "count", "A", "B", "Δ", "ratio", "noise"]
GAP_HEADERS = ["gap before", "at (B)", "A", "B", "Δ", "cause A", "cause B"]


def _sections(d: StepDiff, width: int, top: int | None) -> list[tuple[str, list[str], list[list[str]]]]:
    unit = "operator call" if d.aligned_by == "operator" else "kernel"

    def cut(rows: list) -> list:
        return rows if top is None else rows[:top]

    causes = [[r["cause"], fmt_ns(r["a_ns"]), fmt_ns(r["b_ns"]), _signed(r["delta_ns"])] for r in d.gaps["by_cause"] if r["a_ns"] or r["b_ns"]]
    parts = [[p["label"], _signed(p["delta_ns"])] for p in d.contributions if p["delta_ns"]]
    moved = [[f"{r['name']}", f"+{r['count']}"] for r in d.syncs["added"]] + [[f"{r['name']}", f"-{r['count']}"] for r in d.syncs["gone"]]
    host = [[r["name"], f"+{r['count']}"] for r in d.host["added"]] + [[r["name"], f"-{r['count']}"] for r in d.host["gone"]]
    ops = d.host.get("ops") or {"added": [], "gone": [], "added_count": 0, "gone_count": 0, "a": 0, "b": 0}
    op_rows = [[r["name"], f"+{r['count']}"] for r in ops["added"]] + [[r["name"], f"-{r['count']}"] for r in ops["gone"]]
    copies = [[r["name"], f"+{r['count']}", fmt_bytes(r["bytes"])] for r in d.copies["added"]]
    copies += [[r["name"], f"-{r['count']}", fmt_bytes(r["bytes"])] for r in d.copies["gone"]]
    return [
        (f"Inserted in B ({sum(r['count'] for r in d.inserted)} {unit}s)", [unit, "count", "time"], _kernel_rows(cut(d.inserted), width)),
        (f"Removed from A ({sum(r['count'] for r in d.removed)} {unit}s)", [unit, "count", "time"], _kernel_rows(cut(d.removed), width)),
        (f"Slower beyond noise ({len(d.slower)})", [unit] + CHANGE_HEADERS[1:], _change_rows(cut(d.slower), width)),
        (f"Faster beyond noise ({len(d.faster)})", [unit] + CHANGE_HEADERS[1:], _change_rows(cut(d.faster), width)),
        ("Idle gaps by cause", ["cause", "A", "B", "Δ"], causes),
        (
            f"Gaps grown ({d.gaps['grown_count']}, {_signed(d.gaps['grown_ns'])}; noise {d.gaps['noise']})",
            GAP_HEADERS,
            _gap_rows(cut(d.gaps["grown"]), width),
        ),
        (f"Gaps shrunk ({d.gaps['shrunk_count']}, {_signed(d.gaps['shrunk_ns'])})", GAP_HEADERS, _gap_rows(cut(d.gaps["shrunk"]), width)),
        (f"Syncs added / gone ({d.syncs['a']} in A, {d.syncs['b']} in B)", ["call", "change"], moved),
        (f"Host calls added / gone ({d.host['added_count']} added, {d.host['gone_count']} gone)", ["call", "change"], cut(host)),
        (
            f"Host ops (operators, ranges) added / gone ({ops['a']} in A, {ops['b']} in B; {ops['added_count']} added, {ops['gone_count']} gone)",
            ["op", "change"],
            cut(op_rows),
        ),
        (f"Copies added / gone ({d.copies['a']} in A, {d.copies['b']} in B)", ["copy", "change", "bytes"], copies),
        ("Where the step-time change comes from (B − A; the parts sum to it)", ["part", "Δ"], parts),
    ]


def _head(d: StepDiff) -> list[str]:
    a, b = d.a.choice, d.b.choice
    lanes = "; ".join(f"{x['a'] or '-'} ↔ {x['b'] or '-'}: {x['matched']} of {x['units_a']}/{x['units_b']} aligned" for x in d.lanes[:4])
    return [
        f"A step: {a.label} of {a.process}, {fmt_ns(a.wall_ns)} ({a.how}; {len(d.a.units)} units)",
        f"B step: {b.label} of {b.process}, {fmt_ns(b.wall_ns)} ({b.how}; {len(d.b.units)} units)",
        f"Aligned by {'launching operator' if d.aligned_by == 'operator' else 'normalised kernel name'} per lane: {lanes}"
        + (f" (+{len(d.lanes) - 4} lanes)" if len(d.lanes) > 4 else ""),
        f"Host calls: {d.host['calls_a']} in A, {d.host['calls_b']} in B; {d.host['added_count']} added, {d.host['gone_count']} gone "
        f"(per thread, {d.host['threads_paired']} thread pair(s))",
        f"Noise: kernels ±max({d.noise_pct:g}%, the kernel's spread over A's steady steps); step ±{d.step_band_pct:.3g}%",
        f"Verdict: {verdict_line(d)}",
    ] + [f"Note: {n}" for n in d.notes]


def steps_text(d: StepDiff, top: int | None = 20, name_width: int = 56) -> str:
    """The step-aligned diff as plain text (names sanitised by ``lines_text``/``table``)."""
    out = ["", "Step-aligned diff (Δ = B − A)"] + _head(d)
    for title, headers, rows in _sections(d, name_width, top):
        if rows:
            out += ["", title] + table(headers, rows, "l" + "r" * (len(headers) - 1))
    return lines_text(out)


def steps_markdown(d: StepDiff, top: int | None = 20) -> str:
    """The step-aligned diff as Markdown (names in code spans, cells escaped)."""
    out = ["", "## Step-aligned diff (Δ = B − A)", ""]
    out += [f"- {md_text(line)}" for line in _head(d)]
    for title, headers, rows in _sections(d, 80, top):
        if rows:
            out += ["", f"### {md_text(title)}", ""] + markdown_table(headers, rows)
    return "\n".join(out) + "\n"
