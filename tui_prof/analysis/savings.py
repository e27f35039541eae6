"""What each finding would save, computed by the what-if engine (issue 31).

For a finding whose cause the what-if can remove (:data:`EDIT_OF`), the process's graph is
re-scheduled without it over the steady-state window (the summary's steady steps of one
process; the whole run otherwise) and the saving is the window's recorded length minus its
projected length. The window is :func:`tui_prof.analysis.critical.process_windows`': a
long one is projected over its first part and the saving scaled to the whole window by its
share of the window's time (``sampled`` in the finding's numbers), so the cost stays
bounded at a million dispatches.

Each finding then carries ``saving_ns`` (over the window), ``saving_pct`` (of the window:
the same share of the average steady step) and, with steps, ``saving_step_ns`` (per steady
step); findings are ranked by ``saving_ns``, those without a projection after them in their
own order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from tui_prof.analysis import depgraph as dg
from tui_prof.analysis.critical import ProcessWindow
from tui_prof.analysis.names import CategoryRules
from tui_prof.analysis.sections import Finding
from tui_prof.analysis.whatif import Edits, apply_edits

EDIT_OF: dict[str, Edits] = {
    "sync-after-launch": Edits(removes=["sync-after-launch"]),
    "idle-sync": Edits(removes=["sync"]),
    "sync-overhead": Edits(removes=["sync"]),
    "launch-bound": Edits(launch_free=True),
    "many-tiny-kernels": Edits(launch_free=True),
    "slow-copy": Edits(removes=["pageable-copy"]),
    "communication-share": Edits(scales=[("communication", 0.5)]),
    "gpu-idle": Edits(removes=["sync"], launch_free=True),
}
"""Finding code -> the edit that removes its cause. dominant-kernel: that kernel at half its
time (its name as the pattern); the others have no projection."""


def edit_of(finding: Finding) -> tuple[Edits, str] | None:
    """The what-if of a finding and a short description of it, or None."""
    code = finding["code"]
    if code == "dominant-kernel":
        name = str(finding["numbers"].get("name", ""))
        return (dominant_edit(name), "this kernel at half its time") if name else None
    edits = EDIT_OF.get(code)
    if edits is None:
        return None
    parts = [f"{p} x{f:g}" for p, f in edits.scales]  # every edit named: gpu-idle removes syncs and frees launches
    if edits.removes:
        parts.append("remove " + " ".join(edits.removes))
    if edits.launch_free:
        parts.append("launches free")
    return edits, ", ".join(parts)


def dominant_edit(name: str) -> Edits:
    """The dominant-kernel finding's what-if: that kernel (its name as the pattern) at half its time."""
    return Edits(scales=[("^" + re.escape(name) + "$", 0.5)])


SAVING_NODES = 50_000  # [P] graph nodes re-scheduled per what-if at most (whole steps); the saving is scaled to the window


@dataclass
class Part:
    """The part of a process window that the what-ifs re-schedule."""

    window: ProcessWindow
    graph: dg.DepGraph
    span_ns: int  # the time it stands for (from the window's start)
    steps: int  # whole steady steps in it


def saving_budget(windows: int, max_nodes: int = SAVING_NODES) -> int:
    """Each window's share of ``max_nodes`` re-scheduled (at least 2,000)."""
    return max(max_nodes // max(windows, 1), 2_000)


def parts_of(windows: dict[int, ProcessWindow], max_nodes: int = SAVING_NODES) -> list[Part]:
    """The part of each window re-scheduled: its first ``max_nodes`` nodes shared by the processes (at least 2,000 each)."""
    budget = saving_budget(len(windows), max_nodes)
    return [p for p in (part_of(w, budget) for w in windows.values()) if p is not None]


def part_of(w: ProcessWindow, max_nodes: int) -> Part | None:
    """The part of one window re-scheduled: its first ``max_nodes`` nodes (whole steps); None for an empty graph."""
    g = w.graph
    if not g.size:
        return None
    hi, steps = w.hi, len(w.steps)
    if g.size > max_nodes:
        cut = int(np.sort(g.start)[max_nodes])
        if w.steps:
            ends = np.array([r["end_ns"] for r in w.steps], dtype=np.int64) - g.t0
            steps = max(int(np.searchsorted(ends, cut, side="right")), 1)
            cut = int(ends[steps - 1])
        g = dg.subgraph(g, g.start < cut)
        hi = g.t0 + cut
    return Part(w, g, hi - w.lo, steps)


def part_saving(part: Part, edits: Edits, rules: CategoryRules) -> dict:
    """The projected saving of ``edits`` in one process's part, scaled to its window."""
    g, w = part.graph, part.window
    applied = apply_edits(w.run, g, edits, rules)
    s, e = dg.schedule(g, applied.dur, applied.gap, applied.lat, applied.ret, applied.waits)
    base = int(g.end.max() - g.start.min())
    proj = int(e.max() - s.min())
    scale = w.window_ns / part.span_ns if part.span_ns > 0 else 1.0
    gain = max(base - proj, 0)  # a projection longer than the run saves nothing, in every number below
    total = int(round(gain * scale))
    out = {
        "saving_ns": total,
        "saving_pct": round(100.0 * total / w.window_ns, 4) if w.window_ns else 0.0,
        "window_ns": w.window_ns,
        "sampled": scale > 1.0,
    }
    if part.steps:
        out["saving_step_ns"] = int(round(gain / part.steps))
    return out


def best_saving(results: Sequence[tuple[str, dict]]) -> dict | None:
    """The saving of the process it saves most in (``results``: (process label, its
    :func:`part_saving`) in run order; ties: the first), naming the process when there are
    several; None without a part."""
    best: dict | None = None
    label = ""
    for mine, r in results:
        if best is None or r["saving_ns"] > best["saving_ns"]:
            best, label = r, mine
    if best is None:
        return None
    out = {k: best[k] for k in ("saving_ns", "saving_pct", "window_ns", "sampled")}
    if len(results) > 1:
        out["process"] = label
    if "saving_step_ns" in best:
        out["saving_step_ns"] = best["saving_step_ns"]
    return out


def saving(parts: list[Part], edits: Edits, rules: CategoryRules) -> dict | None:
    """The projected saving of ``edits``: of the process it saves most in (processes run side by
    side, so their savings do not add up; each process's own graph, no cross-rank edges), with
    that process's window; None without a window."""
    return best_saving([(part.window.label, part_saving(part, edits, rules)) for part in parts])


SEVERITY_BY_SAVING = ((20.0, "high"), (5.0, "medium"), (1.0, "low"))  # [P] % of the steady-state window the fix would save


def severity_of(saving_pct: float) -> str:
    """A projected finding's severity from what it would save (share of the window)."""
    for floor, severity in SEVERITY_BY_SAVING:
        if saving_pct >= floor:
            return severity
    return "info"


def add_savings(findings: list[Finding], windows: dict[int, ProcessWindow], rules: CategoryRules) -> list[Finding]:
    """``findings`` with ``saving_ns`` (and the what-if behind it) where the what-if can
    project one, ranked by it (module docstring)."""
    parts: list[Part] | None = None  # built on the first projection

    def project(edits: Edits) -> dict | None:
        nonlocal parts
        parts = parts if parts is not None else parts_of(windows)
        return saving(parts, edits, rules)

    return ranked_savings(findings, project)


def edit_key(edits: Edits) -> str:
    """One projection per distinct edit (idle-sync and sync-overhead share one)."""
    return repr(edits)


def projected_edits(top_hotspot: str | None) -> list[Edits]:
    """Every edit a finding can ask for: the distinct edits of :data:`EDIT_OF` and the
    dominant-kernel edit of the top hotspot (what a rank projects before the findings are known)."""
    out: dict[str, Edits] = {}
    for edits in EDIT_OF.values():
        out.setdefault(edit_key(edits), edits)
    if top_hotspot:
        out.setdefault(edit_key(dominant_edit(top_hotspot)), dominant_edit(top_hotspot))
    return list(out.values())


def ranked_savings(findings: list[Finding], project: Callable[[Edits], dict | None]) -> list[Finding]:
    """``findings`` with the saving ``project(edits)`` gives for each one's edit (:func:`saving`:
    the best process's, None without a projection), ranked by it (module docstring)."""
    wanted = [(f, edit_of(f)) for f in findings]
    if not any(w for _, w in wanted):
        return findings
    ranked: list[tuple[int, int, Finding]] = []
    done: dict[str, dict | None] = {}
    rest: list[Finding] = []
    own: list[Finding] = []
    first_of: dict[str, str] = {}
    for pos, (finding, want) in enumerate(wanted):
        key = edit_key(want[0]) if want else ""
        if want and key not in done:
            done[key] = project(want[0])
        result = done.get(key) if want else None
        if result is None:
            (own if "saving_ns" in finding else rest).append(finding)  # warm-up: its own cost, not a steady-state saving
            continue
        finding["saving_ns"] = max(result["saving_ns"], 0)
        finding["severity"] = severity_of(result["saving_pct"])
        if key in first_of:  # the same edit as an earlier finding: the same saving, said once
            finding["numbers"] = {**finding["numbers"], "same_saving_as": first_of[key]}
            finding["severity"] = "info"
        first_of.setdefault(key, finding["code"])
        finding["numbers"] = {**finding["numbers"], "what_if": want[1] if want else "", **{k: v for k, v in result.items() if k != "saving_ns"}}
        ranked.append((-finding["saving_ns"], pos, finding))
    ranked.sort(key=lambda t: (t[0], t[1]))
    return [f for _, _, f in ranked] + own + rest
