"""Text of a counter plan (:func:`tui_prof.analysis.counterplan.plan`) for ``tuiprof counters plan``.

Requested names come from the command line: every line passes through ``safe_text``.
"""

from __future__ import annotations

from typing import Any

from tui_prof.render.safe import safe_text


def _metric_lines(m: dict[str, Any]) -> list[str]:
    where = ", ".join(str(i) for i in m["passes"]) or "-"
    head = f"  {m.get('label') or m['requested']}"
    names = [f"rocprof-compute '{m['rocprof_compute']}'" if m.get("rocprof_compute") else "", f"rocprofv3 {m['rocprofv3']}" if m.get("rocprofv3") else ""]
    names = [n for n in names if n]
    if names:
        head += f" ({'; '.join(names)})"
    head += f" · pass{'es' if len(m['passes']) > 1 else ''} {where}"
    lines = [head]
    if m.get("formula"):
        lines.append(f"      = {m['formula']} [{m.get('unit', '')}]; {m.get('threshold', 'descriptive')}")
    else:
        lines.append(f"      counter {' '.join(m['counters'])}")
    if m.get("split"):
        lines.append("      its counters are in different passes: the ratio mixes two runs (check the kernel behaves the same in each)")
    if m.get("ncu"):
        lines.append(f"      nearest ncu: {m['ncu']}")
    return lines


def _amd_lines(p: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    inferred = set(p.get("limits_inferred") or ())
    limits = ", ".join(f"{b} {n}" + (" (inferred)" if b in inferred else "") for b, n in p["limits"].items())
    lines.append(f"Counters per pass by block: {limits}")
    lines.append(f"  (source: {p['limits_source']})")
    if not p.get("rocprof_compute"):
        lines.append(f"rocprof-compute does not support {p['arch']}: collect with rocprofv3 as below")
    n = len(p["passes"])
    if n:
        lines.append(f"{n} pass{'es' if n != 1 else ''} (the fewest under these limits: {p['min_passes']}), one rocprofv3 run each:")
        for ps in p["passes"]:
            blocks = ", ".join(f"{b} {k}" for b, k in ps["blocks"].items())
            lines.append(f"  pass {ps['index']}: --pmc {' '.join(ps['pmc'])}   [{blocks}]")
            if ps["pmc"] != ps["counters"]:  # derived metrics rocprofv3 expands in the pass
                lines.append(f"      hardware counters: {' '.join(ps['counters'])}")
        lines.append("")
        lines.append("Commands:")
        lines.extend(f"  {c}" for c in p["commands"])
        lines.append("")
        lines.append("Or one invocation over all passes: save this as input.txt and run rocprofv3 -i input.txt --kernel-trace -- <app>")
        lines.extend(f"  {line}" for line in p["input_file"].splitlines())
        lines.append("")
        lines.append("Metrics:")
        for m in p["metrics"]:
            lines.extend(_metric_lines(m))
    else:
        lines.append("Nothing to collect.")
    return lines


def plan_text(p: dict[str, Any]) -> str:
    """The plan as plain text (one block per section)."""
    products = f"; {', '.join(p['products'])}" if p.get("products") else ""
    rocm = f" · ROCm {p['rocm']}" if p.get("rocm") else (" · ROCm version not given" if p["vendor"] == "amd" else "")
    lines = [f"Counter plan for {p['arch']} ({p['family']}{products}){rocm}"]
    if p["vendor"] == "nvidia":
        for m in p["metrics"]:
            lines.append(f"  {m['requested']}: {m['ncu']}  ({m['label']})")
        lines.extend(f"  {c}" for c in p["commands"])
        lines.extend(p.get("notes", []))
    else:
        lines.extend(_amd_lines(p))
    if p.get("cannot"):
        lines.append("")
        lines.append("Cannot be measured here:")
        lines.extend(f"  - {c['name']}: {c['why']}" for c in p["cannot"])
    if p.get("warnings"):
        lines.append("")
        lines.append("Known defects:")
        for w in p["warnings"]:
            maybe = "" if w["applies"] else " (if your ROCm is in the affected range)"
            lines.append(f"  ⚠ {', '.join(w['counters'])}: {w['text']} [{w['issue']}; {w['versions']}]{maybe}")
    if p.get("notes") and p["vendor"] == "amd":
        lines.append("")
        lines.extend(f"note: {n}" for n in p["notes"])
    return "\n".join(safe_text(line) for line in lines)


def metric_names_markdown(cdna: str = "gfx942", rdna: str = "gfx1151", nvidia: str = "sm_90") -> str:
    """The dictionary's metrics across tools as a Markdown table (docs/counters.md holds it;
    a test keeps the two equal): tuiprof key, rocprof-compute and rocprofv3 names, the
    formula on a CDNA and an RDNA arch, the nearest Nsight Compute metric."""
    from tui_prof.analysis.api import counter_dictionary

    c, r, n = counter_dictionary(cdna), counter_dictionary(rdna), counter_dictionary(nvidia)
    rows = [
        f"| key | rocprof-compute | rocprofv3 | {c.arch} formula | {r.arch} formula | nearest ncu ({n.arch}) |",
        "|---|---|---|---|---|---|",
    ]
    for key in dict.fromkeys([*c.metrics, *r.metrics]):
        m = c.metrics.get(key) or r.metrics[key]
        nv = n.metrics.get(key)
        ncu = (nv.ncu if nv else m.ncu) or "–"

        def formula(d, k=key) -> str:
            if k in d.metrics:
                return f"`{d.metrics[k].formula}`"
            return f"not on {d.arch}" if k in d.absent else "–"

        rows.append(f"| `{key}` | {m.rpc or '–'} | {m.sdk or '–'} | {formula(c)} | {formula(r)} | {'–' if ncu == '–' else f'`{ncu}`'} |")
    return "\n".join(rows) + "\n"
