"""Counter advice: one sentence per derived metric of a kernel that crosses a threshold of
the counter dictionary, ordered by the kernel's bound (memory metrics first on a
memory-bound kernel, compute metrics first on a compute-bound one), each naming its formula,
the threshold and the rocprofv3 pass that collects it (the pass of the Counters pane's plan,
``tuiprof counters plan --arch ARCH``; a metric outside that plan: its own plan's passes).

Input: one kernel entry of :func:`tui_prof.analysis.counters.counter_metrics` (``metrics``
by tuiprof key with ``value`` and ``pct_of_peak``, optional ``roofline``). The thresholds
are the dictionary's (``bad_below``, ``bad_above``, ``good_above``, ``*_pct_of_peak``); a
metric the dictionary does not hold for the arch gives no sentence.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from tui_prof.analysis.counterdict import ArchDict, MetricInfo, load
from tui_prof.analysis.counterplan import default_metrics, plan
from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES
from tui_prof.percent import fmt_pct

# counter_metrics' keys -> the dictionary's (its rocprof-compute-named keys)
TO_DICT = {
    "waves": "wavefronts",
    "valu_utilization": "valu_active_threads",
    "valu_busy": "valu_utilization",
}
MEMORY = {
    "l2_hit",
    "hbm_bandwidth_pct",
    "vl1d_hit",
    "vl1d_stalled_on_l2",
    "l2_fabric_read_bw",
    "l2_fabric_write_bw",
    "mem_unit_busy",
    "mem_unit_stalled",
    "sl1d_hit",
}
COMPUTE = {
    "valu_active_threads",
    "valu_utilization",
    "mfma_utilization",
    "ipc",
    "dependency_wait",
    "vmem_utilization",
    "lds_bank_conflict",
    "lds_conflicts_per_access",
}


@cache
def _passes(arch: str) -> dict[str, list[int]]:
    """Dictionary metric key -> the passes of the Counters pane's plan that collect it."""
    p = plan(arch, default_metrics(arch))
    return {m["key"]: m["passes"] for m in p["metrics"] if m.get("key")}


@cache
def _own_passes(arch: str, key: str) -> list[int]:
    """The passes of a metric's own plan (a metric outside the Counters pane's plan)."""
    return plan(arch, [key])["metrics"][0]["passes"]


def _crossed(m: MetricInfo, value: float, pct: float | None) -> tuple[str, str] | None:
    """(which threshold, its text) when ``value`` (or its % of peak) crosses one."""
    t = m.thresholds
    checks = (
        ("bad_below", value, lambda v, x: v < x, "<"),
        ("bad_above", value, lambda v, x: v > x, ">"),
        ("bad_below_pct_of_peak", pct, lambda v, x: v < x, "% of peak <"),
        ("bad_above_pct_of_peak", pct, lambda v, x: v > x, "% of peak >"),
        ("good_above", value, lambda v, x: v > x, ">"),
    )
    for key, v, test, sign in checks:
        if key in t and v is not None and v == v and test(v, t[key]):
            return key, f"{sign} {t[key]:g}"
    return None


def _defect_sentences(d: ArchDict, kernel: dict[str, Any]) -> list[dict[str, Any]]:
    """A sentence per shown metric that reads a counter with a known wrong-value defect on
    this arch (gfx1151 SQ_WAVES), whatever its value."""
    out = []
    for key, entry in (kernel.get("metrics") or {}).items():
        m = d.metrics.get(TO_DICT.get(key, key))
        if m is None:
            continue
        for defect in d.defects:
            hit = [c for c in m.counters if defect.kind == "wrong" and defect.touches(c, d.block_of(c))]
            if hit:
                name = m.rpc or m.label
                text = f"{name} reads {', '.join(hit)}: {defect.text} [{defect.issue}]."
                out.append(
                    {
                        "metric": m.key,
                        "label": name,
                        "value": float(entry["value"]),
                        "unit": entry["unit"],
                        "threshold": "",
                        "formula": m.formula,
                        "passes": [],
                        "plan": "",
                        "good": False,
                        "defect": defect.issue,
                        "text": text,
                    }
                )
    return out


def advise(arch: str, kernel: dict[str, Any]) -> list[dict[str, Any]]:
    """Sentences for one kernel entry: {metric, label, value, unit, threshold, formula, passes,
    good, text}; bound-relevant ones first."""
    try:
        d = load(arch)
    except ValueError:
        return []
    if d.vendor != "amd":
        return []
    passes = _passes(d.arch)
    bound = (kernel.get("roofline") or {}).get("bound")
    out = []
    for key, entry in (kernel.get("metrics") or {}).items():
        dkey = TO_DICT.get(key, key)
        m = d.metrics.get(dkey)
        if m is None or not m.thresholds:
            continue
        pct = entry.get("pct_of_peak")
        crossed = _crossed(m, float(entry["value"]), pct)
        if crossed is None:
            continue
        which, threshold = crossed
        if dkey == "mfma_utilization" and which == "bad_below" and DEFAULT_CATEGORY_RULES.classify(str(kernel.get("name", ""))) != "GEMM":
            continue  # idle matrix cores are only a problem in a GEMM
        command = f"tuiprof counters plan --arch {d.arch}" + ("" if dkey in passes else f" {dkey}")
        where = passes.get(dkey) or _own_passes(d.arch, dkey)
        good = which == "good_above"
        name = m.rpc or m.label
        value = fmt_pct(entry["value"], sig=3) if entry["unit"] == "%" else f"{entry['value']:.3g} {entry['unit']}"
        shown = value + (f" = {fmt_pct(pct, sig=3)} of peak" if "pct_of_peak" in which and pct is not None else "")
        tag = m.threshold_source.split(" ")[0] if m.threshold_source.startswith("[") else m.threshold_source
        meaning = m.meaning or "threshold crossed"
        occ = kernel.get("occupancy") or {}
        if dkey in ("wave_occupancy", "occupancy_percent") and occ.get("limiter") == "none":
            meaning = "low occupancy with no register, LDS or slot limit: the grid is too small or too short to fill the GPU"
        elif dkey in ("wave_occupancy", "occupancy_percent") and occ.get("limiter"):
            meaning = f"low occupancy, limited by {occ['limiter']} ({occ.get('source', '')})"
        text = (
            f"{name} {shown} ({threshold}{' ' + tag if tag else ''}): {'good — ' if good else ''}{meaning}. Formula {m.formula}; "
            f"rocprofv3 pass{'es' if len(where) > 1 else ''} {', '.join(map(str, where))} of `{command}`."
        )
        out.append(
            {
                "metric": dkey,
                "label": name,
                "value": float(entry["value"]),
                "unit": entry["unit"],
                "threshold": threshold,
                "formula": m.formula,
                "passes": where,
                "plan": command,
                "good": good,
                "text": text,
            }
        )
    out.extend(_defect_sentences(d, kernel))
    first = MEMORY if bound == "memory" else COMPUTE if bound == "compute" else set()
    out.sort(key=lambda a: (a["good"], a["metric"] not in first))
    if bound and out:
        roof = kernel["roofline"]
        lead = f"{bound}-bound by its counters' roofline (intensity {roof['ai']:.3g} FLOP/B, ridge {roof['ridge']:.3g}): " + (
            "the memory metrics come first." if bound == "memory" else "the compute metrics come first."
        )
        out.insert(
            0,
            {
                "metric": "roofline",
                "label": "bound",
                "value": float(roof["ai"]),
                "unit": "FLOP/B",
                "threshold": "",
                "formula": "FLOPs / bytes (HBM)",
                "passes": [],
                "good": False,
                "text": lead,
            },
        )
    return out
