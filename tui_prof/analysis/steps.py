"""Steps (iterations) of a run: detection, the per-step table, warm-up and outliers.

Where steps come from, first that applies (docs/metrics.md, Steps):

1. PyTorch profiler steps: host ranges named ``ProfilerStep#N`` (``prof.step()``);
2. a host range name that repeats (a ``record_function``/roctx range such as ``train_step``);
   when several names repeat, the first (by host time covered) whose ranges cover at least
   half of the GPU span (it tiles the run); when none does, the ranges of the one covering
   the most host time mark a phase of each iteration (``Optimizer.step``) and the
   iterations run start to start; or the ranges of the name the user gives (``--step NAME``);
3. inferred from the launch/sync pattern: the thread that launches most kernels calls a
   sync after runs of launches; each run of launches up to the end of its sync is a step
   (only when there are at least 3 such runs of a median of at least 2 launches, and at
   least half of them have the same number of launches: a period, not syncs at random).

GPU work belongs to the step whose host range contains its launching call's start (the
call found by correlation id; work without a linked call by its own start), so a kernel
launched in step k and run during step k+1 stays in step k.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.analysis import hostapi
from tui_prof.analysis.arrays import in_order
from tui_prof.analysis.memory import Growth, allocated_series, step_growth
from tui_prof.analysis.runinput import RunInput
from tui_prof.analysis.sections import SteadyState, StepDistribution, StepOutlier, StepRecord, StepsSection
from tui_prof.analysis.timeline import CAUSES, GapSet, busy_intervals
from tui_prof.model import Run

PROFILER_STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
PROFILER_STEP = "ProfilerStep#*"
GPU_SOURCES = frozenset({"gpu_user_annotation"})
# Host sources whose repeated names are offered as steps without being asked for: operators
# and Python frames repeat by the thousand and are never a step by themselves.
NOT_CANDIDATE_SOURCES = frozenset({"cpu_op", "python_function"}) | GPU_SOURCES
OUTLIER_FACTOR = 1.5  # [P] a steady step slower than median x this is an outlier (issue 21)
WARMUP_BAND_MIN = 0.10  # [P] a warm-up step is > 10% slower than the steady median...
WARMUP_MAD_K = 3.0  # ...and more than 3 robust standard deviations above it
MIN_INFERRED_STEPS = 3
MAX_OUTLIERS = 10  # the slowest outlier steps listed (steps.outlier_steps counts them all)
MIN_INFERRED_LAUNCHES = 2
MIN_PERIOD_SHARE = 0.5  # [P] the most common number of launches per step is that of at least half the steps
TILES_MIN_PCT = 50.0  # [P] repeated ranges covering less of the GPU span are a phase of an iteration, not the iteration


@dataclass(frozen=True)
class StepRanges:
    """The host ranges of the steps of one process, sorted and disjoint."""

    source: str  # "profiler_step", "marker", "inferred"
    name: str
    how: str
    labels: list[str]
    starts: np.ndarray
    ends: np.ndarray
    candidates: list[str]

    def __len__(self) -> int:
        return len(self.starts)


def _top_level(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Positions (in start order) of the ranges not inside an earlier kept range."""
    order = np.argsort(starts, kind="stable")
    keep: list[int] = []
    reach = None
    for i in order.tolist():
        if reach is None or starts[i] >= reach:
            keep.append(i)
            reach = ends[i]
    return np.asarray(keep, dtype=np.int64)


def _host_markers(run: Run) -> pd.DataFrame:
    m = run.markers
    if m.empty:
        return m
    return m[~m["source"].astype(str).isin(GPU_SOURCES) & (m["end"] > m["start"])]


def marker_candidates(run: Run) -> list[tuple[str, int, int]]:
    """(name, ranges, host ns covered) of each host range name that repeats, most covered first."""
    m = _host_markers(run)
    if m.empty:
        return []
    m = m[~m["source"].astype(str).isin(NOT_CANDIDATE_SOURCES)]
    names = m["name"].astype(str)
    m = m[~names.str.match(PROFILER_STEP_RE.pattern)]
    out = []
    for name, group in m.groupby(m["name"].astype(str), sort=True, observed=True):
        if len(group) < 2:
            continue
        s, e = group["start"].to_numpy(), group["end"].to_numpy()
        keep = _top_level(s, e)
        if len(keep) >= 2:
            out.append((str(name), len(keep), int((e[keep] - s[keep]).sum())))
    return sorted(out, key=lambda t: (-t[2], -t[1], t[0]))


def _marker_ranges(run: Run, name: str) -> tuple[np.ndarray, np.ndarray]:
    m = _host_markers(run)
    m = m[m["name"].astype(str) == name]
    s, e = m["start"].to_numpy().astype(np.int64), m["end"].to_numpy().astype(np.int64)
    keep = _top_level(s, e)
    return s[keep], e[keep]


def _profiler_steps(run: Run) -> tuple[list[str], np.ndarray, np.ndarray]:
    m = _host_markers(run)
    if m.empty:
        return [], np.array([], np.int64), np.array([], np.int64)
    names = m["name"].astype(str)
    m = m[names.str.match(PROFILER_STEP_RE.pattern).to_numpy()]
    s, e = m["start"].to_numpy().astype(np.int64), m["end"].to_numpy().astype(np.int64)
    keep = _top_level(s, e)
    labels = m["name"].astype(str).to_numpy()[keep].tolist()
    return labels, s[keep], e[keep]


def overlapping_note(total: int, kept: int, what: str) -> str:
    """The words added to a step source when ranges were left out because they start inside
    another (overlapping ``ProfilerStep#N`` are not nested steps: saying nothing would hide
    half the steps)."""
    dropped = total - kept
    return f"; {dropped} of {total} {what} left out: each starts inside an earlier one (overlapping ranges)" if dropped else ""


def _inferred_steps(run: Run, index: hostapi.CorrIndex) -> StepRanges | None:
    """Steps from runs of launches, each ended by a sync of the thread that launches most."""
    api = run.api
    classes = index.classes
    if api.empty or not len(classes):
        return None
    tid = api["tid"].to_numpy()
    launch = classes >= hostapi.LAUNCH
    if not launch.any():
        return None
    # the thread that launches most (the lowest such tid on a tie): hashed, not sorted
    codes, tids = pd.factorize(tid[launch])
    counts = np.bincount(codes, minlength=len(tids))
    main = tids[counts == counts.max()].min()
    on = tid == main
    sync_rows = np.flatnonzero(on & (classes == hostapi.SYNC))
    launch_rows = np.flatnonzero(on & launch)
    if len(sync_rows) < MIN_INFERRED_STEPS:
        return None
    start = api["start"].to_numpy().astype(np.int64)
    end = api["end"].to_numpy().astype(np.int64)
    s_start = start[sync_rows]
    order = np.argsort(s_start, kind="stable")
    sync_rows, s_start = sync_rows[order], s_start[order]
    l_start = start[launch_rows]
    if not in_order(l_start):  # a trace's calls are in start order already
        l_start = np.sort(l_start)
    # launches before each sync's start and after the previous sync's start
    upto = np.searchsorted(l_start, s_start, side="left")
    per = np.diff(np.concatenate([[0], upto]))
    keep = np.flatnonzero(per > 0)
    if len(keep) < MIN_INFERRED_STEPS or float(np.median(per[keep])) < MIN_INFERRED_LAUNCHES:
        return None
    counts, times = np.unique(per[keep], return_counts=True)
    if times.max() < MIN_PERIOD_SHARE * len(keep):  # no period: syncs at irregular places
        return None
    # a step: from its first launch (after the previous kept sync) to the end of its sync
    first_launch = l_start[np.concatenate([[0], upto])[keep]]
    starts = first_launch
    ends = end[sync_rows[keep]]
    name = str(api["name"].iloc[int(sync_rows[keep[0]])])
    period = int(counts[int(np.argmax(times))])
    how = (
        f"inferred: no ProfilerStep or repeated range; {len(keep)} runs of launches on thread {int(main)}, "
        f"each ended by {name} ({int(times.max())} of them {period} launches long)"
    )
    return StepRanges("inferred", name, how, [f"step {i + 1}" for i in range(len(keep))], starts, ends, [])


def detect_steps(run: Run, index: hostapi.CorrIndex | None = None, step_name: str | None = None) -> StepRanges | None:
    """The steps of one process (module docstring), or None when none are found.

    ``step_name``: a host range name to use (``--step NAME``); ``ProfilerStep`` picks
    PyTorch's steps. A name the run lacks gives None."""
    index = index or hostapi.CorrIndex(run.api)
    candidates = [c[0] for c in marker_candidates(run)]
    labels, s, e = _profiler_steps(run)
    if step_name is None or step_name.startswith("ProfilerStep"):
        if len(s):
            total = int(_host_markers(run)["name"].astype(str).str.match(PROFILER_STEP_RE.pattern).sum())
            how = f"{len(s)} PyTorch profiler steps (ProfilerStep#N host ranges)" + overlapping_note(total, len(s), "ProfilerStep ranges")
            return StepRanges("profiler_step", PROFILER_STEP, how, labels, s, e, candidates)
        if step_name is not None:
            return None
    if step_name is None and candidates:
        return _marker_steps(run, candidates)
    if step_name is not None:
        s, e = _marker_ranges(run, step_name)
        if len(s) == 0:
            return None
        others = [c for c in candidates if c != step_name]
        how = f"{len(s)} host ranges named {step_name!r}" + (f" (other repeated ranges: {len(others)}; --step NAME picks one)" if others else "")
        return StepRanges("marker", step_name, how, [f"{step_name} [{i + 1}]" for i in range(len(s))], s, e, candidates)
    return _inferred_steps(run, index)


def gpu_extent(run: Run) -> int:
    """First start to last end of the process's kernels and copies (0 without GPU work)."""
    parts = [t for t in (run.kernels, run.copies) if len(t)]
    if not parts:
        return 0
    first = min(int(t["start"].min()) for t in parts)
    last = max(int(t["end"].max()) for t in parts)
    return max(last - first, 0)


def _marker_steps(run: Run, candidates: list[str]) -> StepRanges:
    """Steps from the repeated host ranges (module docstring, rule 2). The first candidate
    (most host time) whose ranges cover at least ``TILES_MIN_PCT`` of the GPU extent tiles the
    run: its ranges are the steps. When none does, the ranges are a phase of each iteration
    (a training loop's ``Optimizer.step``): the iterations run start to start, from each
    range's start to the next one's (n ranges, n - 1 iterations)."""
    extent = gpu_extent(run)
    first = candidates[0]
    others = len(candidates) - 1
    more = f"; other repeated ranges: {others}, --step NAME picks one" if others else ""
    covered: dict[str, float] = {}
    for name in candidates:
        s, e = _marker_ranges(run, name)
        covered[name] = 100.0 * float((e - s).sum()) / extent if extent else 100.0
        if covered[name] >= TILES_MIN_PCT:
            if name == first:  # the usual case: the range with the most host time tiles the run
                how = f"{len(s)} host ranges named {name!r}" + (f" (other repeated ranges: {others}; --step NAME picks one)" if others else "")
            else:
                how = (
                    f"{len(s)} host ranges named {name!r}: they tile the run ({min(covered[name], 100.0):.0f}% of the GPU span; "
                    f"{first!r}, with more host time, covers {covered[first]:.0f}%{more})"
                )
            return StepRanges("marker", name, how, [f"{name} [{i + 1}]" for i in range(len(s))], s, e, candidates)
    s, _ = _marker_ranges(run, first)
    how = (
        f"iterations start to start: {len(s)} host ranges named {first!r} cover {covered[first]:.0f}% of the GPU span "
        f"(below {TILES_MIN_PCT:.0f}%: a phase of each iteration, and no repeated range tiles the run), so each iteration runs "
        f"from one range's start to the next one's ({len(s) - 1} iteration{'s' if len(s) != 2 else ''}{more})"
    )
    return StepRanges("marker", first, how, [f"{first} [{i + 1}]" for i in range(len(s) - 1)], s[:-1], s[1:], candidates)


def assign(times: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Step position of each time (the step whose [start, end) holds it), else -1."""
    if not len(starts):
        return np.full(len(times), -1, dtype=np.int64)
    i = np.searchsorted(starts, times, side="right") - 1
    ok = (i >= 0) & (times < ends[np.maximum(i, 0)])
    return np.where(ok, i, -1).astype(np.int64)


def launch_times(run: Run, index: hostapi.CorrIndex) -> tuple[np.ndarray, np.ndarray]:
    """(kernels, copies): the start of each one's launching call, else its own start."""
    k = run.kernels
    api_start = run.api["start"].to_numpy().astype(np.int64) if len(run.api) else np.array([], np.int64)
    if len(k):
        rows = index.launch_rows(k["correlation_id"].to_numpy())
        kt = np.where(rows >= 0, api_start[np.maximum(rows, 0)] if len(api_start) else 0, k["start"].to_numpy())
    else:
        kt = np.array([], np.int64)
    c = run.copies
    if len(c):
        rows = index.rows(c["correlation_id"].to_numpy())
        ct = np.where(rows >= 0, api_start[np.maximum(rows, 0)] if len(api_start) else 0, c["start"].to_numpy())
    else:
        ct = np.array([], np.int64)
    return kt.astype(np.int64), ct.astype(np.int64)


def busy_before(t: np.ndarray, bs: np.ndarray, be: np.ndarray) -> np.ndarray:
    """GPU busy ns before each time ``t`` over sorted disjoint intervals [bs, be)."""
    if not len(bs):
        return np.zeros(len(t), dtype=np.int64)
    cum = np.concatenate([[0], np.cumsum(be - bs)])
    i = np.searchsorted(bs, t, side="right") - 1
    j = np.maximum(i, 0)
    inside = np.clip(np.minimum(t, be[j]) - bs[j], 0, None)
    return np.where(i >= 0, cum[j] + inside, 0).astype(np.int64)


def distribution(values: np.ndarray) -> StepDistribution | None:
    """min, median, mean, p90, p99 (linear interpolation, numpy's default), max."""
    if not len(values):
        return None
    v = np.asarray(values, dtype=np.float64)
    return {
        "count": int(len(v)),
        "min_ns": int(v.min()),
        "median_ns": float(np.median(v)),
        "mean_ns": round(float(v.mean()), 3),
        "p90_ns": float(np.percentile(v, 90)),
        "p99_ns": float(np.percentile(v, 99)),
        "max_ns": int(v.max()),
    }


def warmup_count(walls: np.ndarray) -> int:
    """Warm-up steps: the leading steps slower than the steady state's spread.

    The steady state is judged on the later half of the steps (median m, median absolute
    deviation d): a step is outside its spread when slower than m + max(3 x 1.4826 d,
    10% of m). A faster first step is not a warm-up. At most half the steps are warm-up."""
    n = len(walls)
    if n < 3:
        return 0
    tail = np.asarray(walls[n // 2 :], dtype=np.float64)
    m = float(np.median(tail))
    mad = float(np.median(np.abs(tail - m)))
    limit = m + max(WARMUP_MAD_K * 1.4826 * mad, WARMUP_BAND_MIN * m)
    count = 0
    while count < n // 2 and walls[count] > limit:
        count += 1
    return count


@dataclass
class StepFrame:
    """Per-step arrays of one process, with what the outlier comparison needs."""

    ranges: StepRanges
    records: list[StepRecord]
    kernel_step: np.ndarray  # step position of each kernel (-1: none)
    copy_step: np.ndarray
    gap_step: np.ndarray  # step position of each idle gap of the GapSet (by the gap's start)
    gaps: GapSet | None


def step_frame(run: Run, ranges: StepRanges, index: hostapi.CorrIndex, gaps: GapSet | None = None) -> StepFrame:
    """The per-step table of one process (:class:`~tui_prof.analysis.sections.StepRecord` each)."""
    starts, ends = ranges.starts, ranges.ends
    n = len(starts)
    kt, ct = launch_times(run, index)
    ks, cs = assign(kt, starts, ends), assign(ct, starts, ends)
    k, c = run.kernels, run.copies
    k_start, k_end = k["start"].to_numpy().astype(np.int64), k["end"].to_numpy().astype(np.int64)
    c_start, c_end = c["start"].to_numpy().astype(np.int64), c["end"].to_numpy().astype(np.int64)
    k_dur = k_end - k_start
    bs, be = busy_intervals(run)
    busy = busy_before(ends, bs, be) - busy_before(starts, bs, be)
    rows, exposed, _ = hostapi.sync_exposure_calls(run.api, index.classes, bs, be) if len(run.api) else (np.array([], np.int64),) * 3
    sync_step = assign(run.api["start"].to_numpy()[rows].astype(np.int64), starts, ends) if len(rows) else np.array([], np.int64)
    c_bytes = c["bytes"].to_numpy().astype(np.int64) if len(c) else np.array([], np.int64)
    peaks = step_memory_peaks(run, starts, ends)
    # per-step sums by bincount and first/last by a grouped min/max: linear in the events
    # whatever the number of steps (a sync-per-iteration loop has tens of thousands)
    kv, cv = ks >= 0, cs >= 0
    n_kernels = np.bincount(ks[kv], minlength=n)
    kernel_ns = np.bincount(ks[kv], weights=k_dur[kv], minlength=n).astype(np.int64)
    n_copies = np.bincount(cs[cv], minlength=n)
    copy_bytes = np.bincount(cs[cv], weights=np.maximum(c_bytes[cv], 0), minlength=n).astype(np.int64)
    sv = sync_step >= 0
    n_sync = np.bincount(sync_step[sv], minlength=n)
    exposed_ns = np.bincount(sync_step[sv], weights=exposed[sv], minlength=n).astype(np.int64) if len(exposed) else np.zeros(n, np.int64)
    gpu_ns = _per_step_span(np.concatenate([ks[kv], cs[cv]]), np.concatenate([k_start[kv], c_start[cv]]), np.concatenate([k_end[kv], c_end[cv]]), n)
    codes, cats = name_codes(k)
    top_code, top_ns = _per_step_top(ks[kv], codes[kv], k_dur[kv], n)
    names = [str(x) for x in cats]
    start_l, end_l, busy_l = starts.tolist(), ends.tolist(), busy.tolist()
    peak_l = peaks if peaks is not None else [None] * n
    # one pass over the columns as Python lists (zip, no per-field indexing): a sync-per-step
    # loop has thousands of steps per process, each rank of a job as many
    records: list[StepRecord] = [
        {
            "label": label,
            "start_ns": s,
            "end_ns": e,
            "wall_ns": e - s,
            "gpu_ns": gpu,
            "kernels": nk,
            "kernel_ns": kns,
            "busy_ns": b,
            "busy_pct": round(100.0 * b / (e - s), 4) if e - s else 0.0,
            "idle_ns": e - s - b,
            "exposed_sync_ns": exp,
            "sync_calls": ns,
            "copies": nc,
            "copy_bytes": cb,
            "top_kernel": names[top] if top >= 0 else None,
            "top_kernel_ns": tns,
            "warmup": False,
            "memory_peak_bytes": peak,
        }
        for label, s, e, gpu, nk, kns, b, exp, ns, nc, cb, top, tns, peak in zip(
            ranges.labels,
            start_l,
            end_l,
            gpu_ns.tolist(),
            n_kernels.tolist(),
            kernel_ns.tolist(),
            busy_l,
            exposed_ns.tolist(),
            n_sync.tolist(),
            n_copies.tolist(),
            copy_bytes.tolist(),
            top_code.tolist(),
            top_ns.tolist(),
            peak_l,
            strict=True,
        )
    ]
    gap_step = assign(gaps.column("start").astype(np.int64), starts, ends) if gaps is not None and len(gaps) else np.array([], np.int64)
    return StepFrame(ranges, records, ks, cs, gap_step, gaps)


def name_codes(kernels: pd.DataFrame) -> tuple[np.ndarray, pd.Index]:
    """(code of each kernel's name, the names): the category codes, no string per row."""
    name = kernels["name"]
    if isinstance(name.dtype, pd.CategoricalDtype):
        return name.cat.codes.to_numpy().astype(np.int64), name.cat.categories
    codes, uniques = pd.factorize(name)
    return codes.astype(np.int64), pd.Index(uniques)


def _per_step_span(step: np.ndarray, start: np.ndarray, end: np.ndarray, n: int) -> np.ndarray:
    """Last end - first start of the work of each step (0 without work)."""
    out = np.zeros(n, np.int64)
    if not len(step):
        return out
    order = np.argsort(step, kind="stable")
    st = step[order]
    first = np.flatnonzero(np.concatenate([[True], st[1:] != st[:-1]]))
    out[st[first]] = np.maximum.reduceat(end[order], first) - np.minimum.reduceat(start[order], first)
    return out


def _per_step_top(step: np.ndarray, code: np.ndarray, dur: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(name code, total ns) of the kernel with the most time in each step (-1, 0 without
    kernels); ties go to the smaller code (the name first in sort order)."""
    top_code, top_ns = np.full(n, -1, np.int64), np.zeros(n, np.int64)
    if not len(step):
        return top_code, top_ns
    width = int(code.max()) + 1
    pairs, inverse = np.unique(step * width + code, return_inverse=True)
    total = np.bincount(inverse, weights=dur).astype(np.int64)
    p_step, p_code = pairs // width, pairs % width  # sorted by step, then code
    seg = np.flatnonzero(np.concatenate([[True], p_step[1:] != p_step[:-1]]))
    best = np.maximum.reduceat(total, seg)
    hit = np.flatnonzero(total == np.repeat(best, np.diff(np.append(seg, len(total)))))
    steps_hit, first = np.unique(p_step[hit], return_index=True)  # the smallest code of each step's maximum
    top_code[steps_hit] = p_code[hit[first]]
    top_ns[steps_hit] = total[hit[first]]
    return top_code, top_ns


def step_memory_peaks(run: Run, starts: np.ndarray, ends: np.ndarray) -> list[int | None] | None:
    """Allocated-bytes high-water mark of each step (None when the run records no memory)."""
    series = allocated_series(run)
    if series is None:
        return None
    t, v = series
    out: list[int | None] = []
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        lo = int(np.searchsorted(t, s, side="left"))
        hi = int(np.searchsorted(t, e, side="left"))
        before = int(v[lo - 1]) if lo > 0 else None  # the level held when the step starts
        inside = v[lo:hi]
        cands = ([before] if before is not None else []) + ([int(inside.max())] if len(inside) else [])
        out.append(max(cands) if cands else None)
    return out


def steady_state(records: list[StepRecord], warmup: int) -> SteadyState | None:
    steady = records[warmup:]
    if not steady:
        return None
    walls = np.array([r["wall_ns"] for r in steady], dtype=np.float64)
    med = float(np.median(walls))
    wall_sum = int(walls.sum())
    busy = sum(r["busy_ns"] for r in steady)
    exposed = sum(r["exposed_sync_ns"] for r in steady)
    return {
        "steps": len(steady),
        "span_ns": int(steady[-1]["end_ns"] - steady[0]["start_ns"]),
        "median_wall_ns": med,
        "spread_pct": round(100.0 * float(np.percentile(walls, 75) - np.percentile(walls, 25)) / med, 4) if med else 0.0,
        "median_kernels": float(np.median([r["kernels"] for r in steady])),
        "median_busy_pct": float(np.median([r["busy_pct"] for r in steady])),
        "median_exposed_sync_ns": float(np.median([r["exposed_sync_ns"] for r in steady])),
        "busy_pct": round(100.0 * busy / wall_sum, 4) if wall_sum else 0.0,
        "idle_pct": round(100.0 - 100.0 * busy / wall_sum, 4) if wall_sum else 0.0,
        "exposed_sync_pct_of_wall": round(100.0 * exposed / wall_sum, 4) if wall_sum else 0.0,
        "kernels": sum(r["kernels"] for r in steady),
        "copies": sum(r["copies"] for r in steady),
    }


def _longest_gap(frame: StepFrame, i: int) -> tuple[int, str | None]:
    if frame.gaps is None or not len(frame.gap_step):
        return 0, None
    rows = np.flatnonzero(frame.gap_step == i)
    if not len(rows):
        return 0, None
    dur = frame.gaps.column("end")[rows] - frame.gaps.column("start")[rows]
    j = int(np.argmax(dur))
    return int(dur[j]), CAUSES[int(frame.gaps.column("cause")[rows[j]])]


def trailing_empty(records: Sequence[StepRecord]) -> int:
    """How many steps at the end run no GPU work (no kernel, no copy) while an earlier one
    does: an empty trailing step (the profiler's last ``ProfilerStep`` opened and not used)."""
    n = 0
    while n < len(records) and not records[len(records) - 1 - n]["kernels"] and not records[len(records) - 1 - n]["copies"]:
        n += 1
    return n if n < len(records) else 0


def outliers(run: Run, frame: StepFrame, warmup: int, factor: float = OUTLIER_FACTOR, kept: int | None = None) -> list[StepOutlier]:
    """Steady steps slower than the steady median x ``factor`` (the ``MAX_OUTLIERS`` slowest,
    in step order), each compared with the
    median step (the steady step whose wall is closest to the median): kernels launched
    more or less often (by name), copies, exposed sync and the longest idle gap."""
    records = frame.records[:kept]
    found = slow_steps([r["wall_ns"] for r in records], warmup, factor)
    if found is None:
        return []
    slow, ref, med = found
    return describe_outliers(run, frame, slow, ref, med)


def slow_steps(walls: Sequence[int], warmup: int, factor: float) -> tuple[list[int], int, float] | None:
    """(the slowest ``MAX_OUTLIERS`` steady steps slower than the steady median x ``factor``,
    in step order; the median step: the steady step whose wall is closest to the median; the
    median), or None with fewer than 3 steady steps or no slow one."""
    steady = list(range(warmup, len(walls)))
    if len(steady) < 3:
        return None
    w = np.array([walls[i] for i in steady], dtype=np.float64)
    med = float(np.median(w))
    ref = steady[int(np.argmin(np.abs(w - med)))]
    slow = [i for i in steady if med and walls[i] > factor * med]
    slow = sorted(sorted(slow, key=lambda i: -walls[i])[:MAX_OUTLIERS])
    return (slow, ref, med) if slow else None


def describe_outliers(run: Run, frame: StepFrame, slow: list[int], ref: int, med: float) -> list[StepOutlier]:
    """Each of the ``slow`` steps (positions in ``frame``) against step ``ref``: kernels
    launched more or less often (by name), copies, exposed sync and the longest idle gap;
    ``med``: the median the ratio is taken to."""
    records = frame.records
    codes, cats = name_codes(run.kernels)
    cat_names = [str(x) for x in cats]
    wanted = np.isin(frame.kernel_step, [*slow, ref])
    by_step: dict[int, Counter] = {}
    for step_i, code in zip(frame.kernel_step[wanted].tolist(), codes[wanted].tolist(), strict=True):
        by_step.setdefault(step_i, Counter())[cat_names[code]] += 1
    ref_names = by_step.get(ref, Counter())
    ref_gap, _ = _longest_gap(frame, ref)
    c_bytes = run.copies["bytes"].to_numpy() if len(run.copies) else np.array([], np.int64)
    out: list[StepOutlier] = []
    for i in slow:
        r = records[i]
        got = by_step.get(i, Counter())
        extra = sorted(((n, c - ref_names.get(n, 0)) for n, c in got.items() if c > ref_names.get(n, 0)), key=lambda t: (-t[1], t[0]))
        missing = sorted(((n, c - got.get(n, 0)) for n, c in ref_names.items() if c > got.get(n, 0)), key=lambda t: (-t[1], t[0]))
        ref_r = records[ref]
        extra_copies = r["copies"] - ref_r["copies"]
        extra_bytes = int(np.maximum(c_bytes[frame.copy_step == i], 0).sum() - np.maximum(c_bytes[frame.copy_step == ref], 0).sum()) if len(c_bytes) else 0
        extra_sync = r["exposed_sync_ns"] - ref_r["exposed_sync_ns"]
        gap, cause = _longest_gap(frame, i)
        reasons = []
        if extra:
            reasons.append(f"{sum(c for _, c in extra)} more kernel launches ({', '.join(f'{n} x{c}' for n, c in extra[:3])})")
        if missing:
            reasons.append(f"{sum(c for _, c in missing)} fewer kernel launches")
        if extra_copies > 0:
            sized = f" ({extra_bytes / (1 << 20):.1f} MiB)" if extra_bytes > 0 else ""
            reasons.append(f"{extra_copies} more {'copy' if extra_copies == 1 else 'copies'}{sized}")
        if extra_sync > 0.1 * (r["wall_ns"] - ref_r["wall_ns"]):
            reasons.append(f"exposed sync {extra_sync} ns longer")
        if gap > 2 * max(ref_gap, 1) and gap > 0.1 * (r["wall_ns"] - ref_r["wall_ns"]):
            reasons.append(f"longest idle gap {gap} ns ({cause}) against {ref_gap} ns")
        out.append(
            {
                "label": r["label"],
                "wall_ns": r["wall_ns"],
                "ratio": round(r["wall_ns"] / med, 4),
                "median_step": ref_r["label"],
                "extra_kernels": [{"name": n, "count": c} for n, c in extra[:10]],
                "missing_kernels": [{"name": n, "count": c} for n, c in missing[:10]],
                "extra_copies": int(extra_copies),
                "extra_copy_bytes": extra_bytes,
                "extra_exposed_sync_ns": int(extra_sync),
                "longest_gap_ns": gap,
                "longest_gap_cause": cause,
                "median_longest_gap_ns": ref_gap,
                "reasons": reasons,
            }
        )
    return out


def outlier_count(steady_walls: np.ndarray, factor: float = OUTLIER_FACTOR) -> int:
    """Steady steps slower than their median x ``factor`` (as :func:`outliers`, which lists
    the slowest ``MAX_OUTLIERS``); 0 with fewer than 3 steady steps."""
    if len(steady_walls) < 3:
        return 0
    return int((steady_walls > factor * float(np.median(steady_walls))).sum())


def empty_steps_section(candidates: list[str] | None = None, factor: float = OUTLIER_FACTOR) -> StepsSection:
    return {
        "detected": False,
        "source": "",
        "name": "",
        "how": "no steps: no ProfilerStep range, no repeated host range, no launch/sync pattern",
        "process": None,
        "candidates": candidates or [],
        "warmup_steps": 0,
        "warmup_source": "detected",
        "outlier_factor": factor,
        "distribution": None,
        "steady_distribution": None,
        "steady": None,
        "outliers": [],
        "outlier_steps": 0,
        "steps": [],
        "combined": "",
        "per_process": [],
    }


def steps_of(
    run: Run,
    label: str,
    index: hostapi.CorrIndex | None = None,
    gaps: GapSet | None = None,
    *,
    step_name: str | None = None,
    warmup: int | None = None,
    factor: float = OUTLIER_FACTOR,
) -> tuple[StepsSection, StepFrame | None]:
    """The ``steps`` part of one process and the frame behind it (None when no steps)."""
    index = index or hostapi.CorrIndex(run.api)
    ranges = detect_steps(run, index, step_name)
    if ranges is None or not len(ranges):
        none = empty_steps_section([c[0] for c in marker_candidates(run)], factor)
        if step_name is not None:
            none["how"] = f"no host range named {step_name!r}"
        return none, None
    frame = step_frame(run, ranges, index, gaps)
    walls = np.array([r["wall_ns"] for r in frame.records], dtype=np.int64)
    # trailing steps without GPU work (an empty last ProfilerStep) stay in the table, out of the steady state
    kept = len(walls) - trailing_empty(frame.records)
    given = warmup is not None
    nwarm = min(max(int(warmup), 0), kept) if warmup is not None else warmup_count(walls[:kept])
    for r in frame.records[:nwarm]:
        r["warmup"] = True
    how = ranges.how
    if kept < len(walls):
        how += f"; the last {len(walls) - kept} step(s) run no GPU work (an empty trailing step): left out of the steady state"
    part: StepsSection = {
        "detected": True,
        "source": ranges.source,
        "name": ranges.name,
        "how": how,
        "process": label,
        "candidates": ranges.candidates,
        "warmup_steps": nwarm,
        "warmup_source": "given" if given else "detected",
        "outlier_factor": factor,
        "distribution": distribution(walls),
        "steady_distribution": distribution(walls[nwarm:kept]),
        "steady": steady_state(frame.records[:kept], nwarm),
        "outliers": outliers(run, frame, nwarm, factor, kept),
        "outlier_steps": outlier_count(walls[nwarm:kept], factor),
        "steps": frame.records,
        "combined": "",
        "per_process": [],
    }
    return part, frame


@dataclass
class ProcessSteps:
    """One process's steps as :func:`steps_of` found them, with what their outliers need
    (None: ``combine_steps``' ``describe`` finds them, e.g. a rank loaded again)."""

    run: Run | None
    label: str
    part: StepsSection
    frame: StepFrame | None


# (the process's key in the fold, its label, its slow steps' labels, the label of its reference
# step, the median): the slow steps of that process described (:func:`describe_outliers`) by a
# caller that holds its run (or loads it again). The key names the process: labels need not be
# unique (two ranks' ``run.pftrace``)
Describe = Callable[[Any, str, list[str], str, float], list[StepOutlier]]


def row_positions(records: Sequence[StepRecord]) -> dict[str, int]:
    """Each step label's position in a process's rows (the last row of a repeated label)."""
    return {r["label"]: i for i, r in enumerate(records)}


def without_rows(part: StepsSection) -> StepsSection:
    """A process's steps part as ``per_process`` lists it: every field but its rows, which
    ``step_count`` counts (the document stays O(processes + steps), not processes x steps)."""
    return {**part, "steps": [], "step_count": len(part["steps"])}


class StepsFold:
    """The whole run's steps folded one process at a time, in any order (``key``: the
    process's position in the run, anything ordered): per step label the slowest process's
    row (the lowest key among equal walls) and how many processes have the label; the whole
    rows of the first process (the lowest key: label order, how, source); each process's
    part without rows and its memory growth. O(steps + processes), never processes x steps."""

    def __init__(self) -> None:
        self.first: tuple[Any, StepsSection] | None = None
        self.slowest: dict[str, list[Any]] = {}  # step label -> [wall, key, process label, row, processes with it]
        self.parts: list[tuple[Any, StepsSection, Growth]] = []
        self.most = 0  # the largest step count of a process

    def add(self, key: Any, label: str, part: StepsSection) -> StepsSection:
        """One process's steps part (detected, with its rows; ``label``: the process's);
        returns the part kept of it (:func:`without_rows`)."""
        rows = part["steps"]
        if self.first is None or key < self.first[0]:
            self.first = (key, part)
        self.most = max(self.most, len(rows))
        for name, i in row_positions(rows).items():
            row = rows[i]
            best = self.slowest.get(name)
            if best is None:
                self.slowest[name] = [row["wall_ns"], key, label, row, 1]
                continue
            best[4] += 1
            if row["wall_ns"] > best[0] or (row["wall_ns"] == best[0] and key < best[1]):
                best[:4] = [row["wall_ns"], key, label, row]
        slim = without_rows(part)
        self.parts.append((key, slim, step_growth(rows)))
        return slim

    def growths(self) -> list[Growth]:
        """Each process's own memory growth (in key order) where the section combines several."""
        return [g for _key, _part, g in sorted(self.parts, key=lambda x: x[0])] if len(self.parts) > 1 and self._labels() else []

    def _labels(self) -> list[str]:
        """The labels every process has, in the first process's order."""
        assert self.first is not None
        n = len(self.parts)
        return [r["label"] for r in self.first[1]["steps"] if self.slowest[r["label"]][4] == n]

    def section(self, processes: int, describe: Describe, *, warmup: int | None = None, factor: float = OUTLIER_FACTOR) -> StepsSection:
        """The whole run's section (:func:`combine_steps`); ``processes``: of the run, with
        steps or not; ``describe``: how a process's slow steps are described."""
        assert self.first is not None
        first = self.first[1]
        if len(self.parts) == 1:
            return first
        labels = self._labels()
        if not labels:  # no step label in every process: the first process's own steps, said so
            alone: StepsSection = {**first}
            alone["how"] = f"{alone['how']}; the steps of the other {len(self.parts) - 1} process(es) share no label with these: not combined"
            return alone
        owners = [self.slowest[name] for name in labels]
        records: list[StepRecord] = []
        for best in owners:
            row = dict(best[3])
            row["warmup"] = False
            row["process"] = best[2]
            records.append(row)  # type: ignore[arg-type]  # a StepRecord copied with its process
        walls = np.array([r["wall_ns"] for r in records], dtype=np.int64)
        kept = len(walls) - trailing_empty(records)  # empty trailing steps (of the slowest process): out of the steady state
        given = warmup is not None
        nwarm = min(max(int(warmup), 0), kept) if warmup is not None else warmup_count(walls[:kept])
        for r in records[:nwarm]:
            r["warmup"] = True
        left_out = self.most - len(labels)
        how = (
            f"{first['how']}; in {len(self.parts)} of {processes} processes: the whole run's step k is the slowest process's step k "
            f"(max over processes: data-parallel ranks wait for each other)" + (f"; {left_out} step(s) not in every process left out" if left_out else "")
        )
        outlier_rows: list[StepOutlier] = []
        slow = slow_steps(walls[:kept].tolist(), nwarm, factor)
        if slow is not None:
            slow_k, ref_k, med = slow
            by_owner: dict[Any, tuple[str, list[str]]] = {}
            for k in slow_k:
                by_owner.setdefault(owners[k][1], (owners[k][2], []))[1].append(labels[k])
            for key, (label, mine) in sorted(by_owner.items(), key=lambda x: x[0]):
                for o in describe(key, label, mine, labels[ref_k], med):
                    o["process"] = label
                    outlier_rows.append(o)
            order = {labels[k]: i for i, k in enumerate(slow_k)}
            outlier_rows.sort(key=lambda o: order[o["label"]])
        return {
            "detected": True,
            "source": first["source"],
            "name": first["name"],
            "how": how,
            "process": None,
            "candidates": first["candidates"],
            "warmup_steps": nwarm,
            "warmup_source": "given" if given else "detected",
            "outlier_factor": factor,
            "distribution": distribution(walls),
            "steady_distribution": distribution(walls[nwarm:kept]),
            "steady": steady_state(records[:kept], nwarm),
            "outliers": outlier_rows,
            "outlier_steps": outlier_count(walls[nwarm:kept], factor),
            "steps": records,
            "combined": "max",
            "per_process": [part for _key, part, _g in sorted(self.parts, key=lambda x: x[0])],
        }


def describe_by_label(run: Run, frame: StepFrame, slow: list[str], ref: str, med: float) -> list[StepOutlier]:
    """:func:`describe_outliers` of the steps labelled ``slow`` against the step labelled ``ref``."""
    at = row_positions(frame.records)
    return describe_outliers(run, frame, [at[s] for s in slow], at[ref], med)


@dataclass(frozen=True)
class FoundSteps:
    """The ``steps`` section and what its readers need of the processes' own rows, which the
    section does not list: each process's memory growth where several were combined
    (analysis.memory.memory_of_parts; []: the section's own rows) and each input process's
    rows by its position in the inputs ([]: no steps found; critical.ranks_on_path's reference).
    By position, not label: labels need not be unique."""

    section: StepsSection
    growths: list[Growth]
    rows: list[list[StepRecord]]


def steps_of_processes(
    inputs: Sequence[tuple[Run, str, hostapi.CorrIndex | None, GapSet | None]],
    *,
    step_name: str | None = None,
    warmup: int | None = None,
    factor: float = OUTLIER_FACTOR,
) -> FoundSteps:
    """The ``steps`` part of a run of one or several processes ((run, label, index, gaps) each),
    with the processes' own rows and memory growths (:class:`FoundSteps`).

    One process with steps: its section. Several (data-parallel ranks): :func:`combine_steps`."""
    found: list[ProcessSteps] = []
    first: StepsSection | None = None
    rows: list[list[StepRecord]] = []
    for run, label, index, gaps in inputs:
        part, frame = steps_of(run, label, index, gaps, step_name=step_name, warmup=warmup, factor=factor)
        detected = frame is not None and part["detected"]
        if detected:
            found.append(ProcessSteps(run, label, part, frame))
        rows.append(part["steps"] if detected else [])
        first = first or part
    if len(found) == 1:
        return FoundSteps(found[0].part, [], rows)
    if found:
        fold = _fold(found)
        return FoundSteps(fold.section(len(inputs), _describer(found), warmup=warmup, factor=factor), fold.growths(), rows)
    return FoundSteps(first or empty_steps_section(factor=factor), [], rows)


def _fold(found: Sequence[ProcessSteps]) -> StepsFold:
    fold = StepsFold()
    for i, p in enumerate(found):
        fold.add(i, p.label, p.part)
    return fold


def _describer(found: Sequence[ProcessSteps]) -> Describe:
    """The slow steps of a process of ``found`` (by its key in :func:`_fold`: its position),
    from its run and frame."""

    def describe(key: Any, _label: str, slow: list[str], ref: str, med: float) -> list[StepOutlier]:
        p = found[key]
        assert p.run is not None and p.frame is not None  # steps_of_processes keeps both
        return describe_by_label(p.run, p.frame, slow, ref, med)

    return describe


def combine_steps(
    found: Sequence[ProcessSteps], processes: int, *, warmup: int | None = None, factor: float = OUTLIER_FACTOR, describe: Describe | None = None
) -> StepsSection:
    """The whole run's steps from the steps of several processes (:class:`StepsFold` fed in order).

    Steps are matched by label (``ProfilerStep#N`` numbers, the k-th range of a name, the
    k-th inferred step); a step some process lacks is left out of the whole-run table. The
    ranks of a data-parallel job wait for each other (the gradient all-reduce), so the job's
    step k lasts as long as its slowest process's step k: the whole-run row of step k is the
    row of the process whose step k is the longest (``process`` names it; the first such
    process among equal walls), and its wall is the maximum over processes. Warm-up, steady
    state and outliers are judged on these rows; an outlier is compared, inside its slowest
    process, with that process's step labelled as the whole-run median step. Each process's
    own part is in ``per_process`` without its rows (``step_count`` counts them).
    ``describe``: how the slow steps of a process are described (None: from its run and frame)."""
    return _fold(found).section(processes, describe or _describer(found), warmup=warmup, factor=factor)


# --- the summary section ---


def found_steps(
    inputs: Sequence[RunInput],
    gaps: dict[int, GapSet],
    *,
    step_name: str | None = None,
    warmup: int | None = None,
    outlier_factor: float = OUTLIER_FACTOR,
) -> FoundSteps:
    """The steps of the processes that have any, combined over several
    (:func:`tui_prof.analysis.steps_of_processes`), with the processes' own rows; ``gaps``:
    run position -> its idle gaps (the outliers' longest gap and cause)."""
    return steps_of_processes([(r.run, r.label, r.index, gaps.get(i)) for i, r in enumerate(inputs)], step_name=step_name, warmup=warmup, factor=outlier_factor)


def steps_section(
    inputs: Sequence[RunInput],
    gaps: dict[int, GapSet],
    *,
    step_name: str | None = None,
    warmup: int | None = None,
    outlier_factor: float = OUTLIER_FACTOR,
) -> StepsSection:
    """The ``steps`` section of :func:`found_steps`."""
    return found_steps(inputs, gaps, step_name=step_name, warmup=warmup, outlier_factor=outlier_factor).section
