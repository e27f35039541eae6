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
        return (Edits(scales=[("^" + re.escape(name) + "$", 0.5)]), "this kernel at half its time") if name else None
    edits = EDIT_OF.get(code)
    if edits is None:
        return None
    parts = [f"{p} x{f:g}" for p, f in edits.scales]  # every edit named: gpu-idle removes syncs and frees launches
    if edits.removes:
        parts.append("remove " + " ".join(edits.removes))
    if edits.launch_free:
        parts.append("launches free")
    return edits, ", ".join(parts)


SAVING_NODES = 50_000  # [P] graph nodes re-scheduled per what-if at most (whole steps); the saving is scaled to the window


@dataclass
class Part:
    """The part of a process window that the what-ifs re-schedule."""

    window: ProcessWindow
    graph: dg.DepGraph
    span_ns: int  # the time it stands for (from the window's start)
    steps: int  # whole steady steps in it


def parts_of(windows: dict[int, ProcessWindow], max_nodes: int = SAVING_NODES) -> list[Part]:
    """The part of each window re-scheduled: its first ``max_nodes`` nodes shared by the processes (at least 2,000 each)."""
    out = []
    max_nodes = max(max_nodes // max(len(windows), 1), 2_000)
    for w in windows.values():
        g = w.graph
        if not g.size:
            continue
        hi, steps = w.hi, len(w.steps)
        if g.size > max_nodes:
            cut = int(np.sort(g.start)[max_nodes])
            if w.steps:
                ends = np.array([r["end_ns"] for r in w.steps], dtype=np.int64) - g.t0
                steps = max(int(np.searchsorted(ends, cut, side="right")), 1)
                cut = int(ends[steps - 1])
            g = dg.subgraph(g, g.start < cut)
            hi = g.t0 + cut
        out.append(Part(w, g, hi - w.lo, steps))
    return out


def saving(parts: list[Part], edits: Edits, rules: CategoryRules) -> dict | None:
    """The projected saving of ``edits``: of the process it saves most in (processes run side by
    side, so their savings do not add up; each process's own graph, no cross-rank edges), with
    that process's window; None without a window."""
    best: dict | None = None
    for part in parts:
        g, w = part.graph, part.window
        applied = apply_edits(w.run, g, edits, rules)
        s, e = dg.schedule(g, applied.dur, applied.gap, applied.lat, applied.ret, applied.waits)
        base = int(g.end.max() - g.start.min())
        proj = int(e.max() - s.min())
        scale = w.window_ns / part.span_ns if part.span_ns > 0 else 1.0
        gain = max(base - proj, 0)  # a projection longer than the run saves nothing, in every number below
        total = int(round(gain * scale))
        if best is not None and total <= best["saving_ns"]:
            continue
        best = {
            "saving_ns": total,
            "saving_pct": round(100.0 * total / w.window_ns, 4) if w.window_ns else 0.0,
            "window_ns": w.window_ns,
            "sampled": scale > 1.0,
        }
        if len(parts) > 1:
            best["process"] = w.label
        if part.steps:
            best["saving_step_ns"] = int(round(gain / part.steps))
    return best


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
    wanted = [(f, edit_of(f)) for f in findings]
    if not any(w for _, w in wanted):
        return findings
    ranked: list[tuple[int, int, Finding]] = []
    parts: list[Part] | None = None  # built on the first projection
    done: dict[str, dict | None] = {}  # one projection per distinct edit (idle-sync and sync-overhead share one)
    rest: list[Finding] = []
    own: list[Finding] = []
    first_of: dict[str, str] = {}
    for pos, (finding, want) in enumerate(wanted):
        key = repr(want[0]) if want else ""
        if want and key not in done:
            parts = parts if parts is not None else parts_of(windows)
            done[key] = saving(parts, want[0], rules)
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
