"""What the warm-up steps cost and what they did (issue 31): never a steady-state problem.

Warm-up steps are the summary's (:func:`tui_prof.analysis.steps.warmup_count`, or
``--warmup N``). Their cost is their wall time minus as many steady steps (the steady
median); what they did, from the calls and kernels inside their host ranges:

* **autotuning**: kernels launched in the warm-up whose name never runs in a steady step
  (cuDNN/cuBLAS/Triton trying candidates: ``cudnn.benchmark``, autotune), with the
  synchronisation calls that time them;
* **allocator growth**: device allocation calls (``cudaMalloc``/``hipMalloc``/``cuMemAlloc``/
  ``cuMemCreate`` families) and their API time, against the steady steps';
* **first-call compilation / module loading**: module and library loads, runtime
  compilation (``cuModuleLoad*``, ``cuLibraryLoad*``, ``hipModuleLoad*``, ``nvrtc*``,
  ``hiprtc*``) and host ranges named like a compiler (``inductor``, ``dynamo``, ``compile``,
  ``triton``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from tui_prof.analysis.aggregate import interval_union
from tui_prof.analysis.hostapi import SYNC_RE
from tui_prof.analysis.runinput import RunInput
from tui_prof.analysis.sections import StepsSection
from tui_prof.model import Run

ALLOC_RE = re.compile(r"^(cuda|hip)Malloc(?!Host)\w*$|^cuMemAlloc(?!Host)\w*$|^cuMemCreate$|^hipExtMallocWithFlags$")
LOAD_RE = re.compile(r"^(cuModuleLoad|cuLibraryLoad|hipModuleLoad|cuLinkCreate|cuLinkComplete|nvrtc|hiprtc)\w*$")
COMPILE_MARKER_RE = re.compile(r"inductor|dynamo|compile|triton", re.IGNORECASE)


def _names(table, rows: np.ndarray) -> np.ndarray:
    column = table["name"]
    cats = np.array([str(c) for c in column.cat.categories] + [""], dtype=object)
    codes = column.cat.codes.to_numpy()[rows]
    return cats[np.where(codes >= 0, codes, len(cats) - 1)]


def warmup_breakdown(run: Run, steps: StepsSection) -> dict | None:
    """The warm-up of one process (module docstring), or None without warm-up steps."""
    records = steps.get("steps", [])
    warm = [r for r in records if r.get("warmup")]
    steady = [r for r in records if not r.get("warmup")]
    if not warm or not steady:
        return None
    median = float(np.median([r["wall_ns"] for r in steady]))
    wall = int(sum(r["wall_ns"] for r in warm))
    w_lo, w_hi = int(warm[0]["start_ns"]), int(warm[-1]["end_ns"])
    s_lo, s_hi = int(steady[0]["start_ns"]), int(steady[-1]["end_ns"])
    api = run.api
    a_start = api["start"].to_numpy().astype(np.int64)
    a_dur = api["end"].to_numpy().astype(np.int64) - a_start
    in_w = np.flatnonzero((a_start >= w_lo) & (a_start < w_hi))
    in_s = np.flatnonzero((a_start >= s_lo) & (a_start < s_hi))
    w_names, s_names = _names(api, in_w), _names(api, in_s)

    def calls(rx: re.Pattern, names: np.ndarray, rows: np.ndarray) -> tuple[int, int]:
        hit = np.array([bool(rx.match(str(n))) for n in names], dtype=bool) if len(names) else np.zeros(0, bool)
        return int(hit.sum()), int(a_dur[rows[hit]].sum())

    alloc_w, alloc_s = calls(ALLOC_RE, w_names, in_w), calls(ALLOC_RE, s_names, in_s)
    loads = calls(LOAD_RE, w_names, in_w)
    syncs_w, syncs_s = calls(SYNC_RE, w_names, in_w), calls(SYNC_RE, s_names, in_s)
    k = run.kernels
    k_start = k["start"].to_numpy().astype(np.int64)
    kw = np.flatnonzero((k_start >= w_lo) & (k_start < w_hi))
    ks = np.flatnonzero((k_start >= s_lo) & (k_start < s_hi))
    k_dur = k["end"].to_numpy().astype(np.int64) - k_start
    codes = k["name"].cat.codes.to_numpy() if len(k) else np.array([], np.int64)
    only_warm = ~np.isin(codes[kw], np.unique(codes[ks]))
    m = run.markers
    compile_ns = compile_n = 0
    if len(m):
        ms = m["start"].to_numpy().astype(np.int64)
        mw = np.flatnonzero((ms >= w_lo) & (ms < w_hi))
        names = _names(m, mw)
        hit = np.array([bool(COMPILE_MARKER_RE.search(str(n))) for n in names], dtype=bool) if len(mw) else np.zeros(0, bool)
        compile_n = int(hit.sum())
        # nested ranges (torch.compile inside inductor inside dynamo) count their time once
        compile_ns = interval_union(ms[mw[hit]], m["end"].to_numpy().astype(np.int64)[mw[hit]]) if compile_n else 0
    per_steady = len(steady)
    out: dict = {
        "steps": len(warm),
        "wall_ns": wall,
        "steady_median_ns": int(median),
        "cost_ns": max(int(wall - len(warm) * median), 0),
        "autotuning": {
            "kernels_not_in_steady_state": int(only_warm.sum()),
            "kernel_ns": int(k_dur[kw[only_warm]].sum()),
            "sync_calls": syncs_w[0],
            "sync_ns": syncs_w[1],
            "steady_sync_calls_per_step": round(syncs_s[0] / per_steady, 2),
        },
        "allocation": {"calls": alloc_w[0], "api_ns": alloc_w[1], "steady_calls_per_step": round(alloc_s[0] / per_steady, 2)},
        "compilation": {"module_loads": loads[0], "module_load_ns": loads[1], "compile_ranges": compile_n, "compile_range_ns": compile_ns},
    }
    what = []
    if out["autotuning"]["kernels_not_in_steady_state"] >= 10 or syncs_w[0] > 10 * max(syncs_s[0] / per_steady, 1) * len(warm):
        what.append("autotuning")
    if alloc_w[0] > 2 * max(alloc_s[0] / per_steady, 1) * len(warm):
        what.append("allocator growth")
    if loads[0] or compile_n:
        what.append("first-call compilation")
    out["what"] = what
    return out


def warmup_of(inputs: Sequence[RunInput], steps: StepsSection) -> dict | None:
    """The summary's ``warmup`` section: :func:`warmup_breakdown` of the process the steps are
    of (one process with steps and warm-up), with its label; None otherwise."""
    if len(inputs) != 1 or not steps.get("detected") or not steps.get("warmup_steps"):
        return None
    found = warmup_breakdown(inputs[0].run, steps)
    return {"process": inputs[0].label, **found} if found else None
