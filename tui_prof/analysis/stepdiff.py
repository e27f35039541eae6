"""Step-aligned diff: one steady step of A against one of B, kernel by kernel (issue 35).

Definitions (docs/diff.md, "Step-aligned diff", has the long form):

* **The steps compared.** Each run's steps come from :mod:`tui_prof.analysis.steps` (the
  process with the most kernels when a run has several). The step of a run is its
  *median steady step*: among the steps after the warm-up, the one whose wall time is
  closest to the steady median (the first of equals); ``step=N`` picks the step numbered N
  instead (the number in its label: ``ProfilerStep#N``, ``step N``, ``name [N]``). A run
  without steps is compared as one window: its whole traced span.
* **What belongs to a step.** Kernels and copies whose launching call starts inside the
  step's host range (the steps module's rule), API calls that start inside it.
* **Alignment.** Kernels are split into lanes (agent, queue, stream); lanes of A and B
  are paired by their kernel counts (most with most). Within a pair of lanes the kernel
  sequences in start order are aligned by normalised name
  (:func:`tui_prof.analysis.names.normalize_name`, so renamed template arguments still
  match) with a longest common subsequence (:mod:`tui_prof.analysis.align`). Kernels in B
  only are **inserted**, in A only **removed**. When fewer than half of the kernels align
  by name and both runs link most kernels to their launching framework operator
  (:mod:`tui_prof.analysis.operators`) — the same model on an AMD and an NVIDIA GPU —
  the units aligned are operator calls instead (consecutive kernels of one operator call
  summed), keyed by operator name, and the result says so. API calls are aligned the same
  way per host thread (threads paired by call count).
* **Slower / faster.** Per key, the matched units' durations are summed on each side
  (``a_ns``, ``b_ns``); the key is slower (faster) when ``b_ns - a_ns`` exceeds the key's
  noise band: the larger of ``noise_pct`` and the spread of that key's per-step total over
  A's steady steps (interquartile range in % of the median) — the same kernel's own
  step-to-step jitter is never a verdict.
* **Gaps.** GPU idle gaps between the step's consecutive GPU work items (kernels and copies
  of all agents of the process, overlapping work counted once), each with the cause of
  :mod:`tui_prof.analysis.timeline` (graph, sync, copy, launch, other). The gap before a
  matched unit in A and in B are compared: **grown** or **shrunk** when the change exceeds
  ``max(gap_noise_ns, noise_pct % of the A gap)``. Totals per cause on each side.
* **Contributions.** Step wall = host time before the first and after the last GPU work of
  the step + GPU idle gaps + kernel time + copy time − overlap of concurrent work, so the
  change of the step wall (B − A) is exactly the sum of: kernels inserted, kernels removed,
  slower kernels, faster kernels, kernel time within noise, copy time, idle gaps per cause,
  overlap and host time at the step's edges. The **verdict** names the largest
  contribution in the direction of the change; a change within the step noise band (the
  larger of ``noise_pct`` and A's steady step-time spread) is "within noise".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.analysis import hostapi
from tui_prof.analysis.align import lcs_pairs
from tui_prof.analysis.names import normalize_name
from tui_prof.analysis.operators import link_operators
from tui_prof.analysis.platform import detect_platform
from tui_prof.analysis.steps import assign, launch_times, steps_of
from tui_prof.analysis.timeline import CAUSES, gpu_gaps, union_length
from tui_prof.model import Run, RunSet
from tui_prof.percent import fmt_pct

STEPS_VERSION = 1
DEFAULT_NOISE_PCT = 2.0  # [P] as analysis.diff: run-to-run noise on a quiet GPU
DEFAULT_GAP_NOISE_NS = 1_000  # [P] 1 µs: below the launch-latency scale, above timestamp rounding
KERNEL_NOISE_NS = 1_000  # [P] a kernel (or a key's sum) must move by more than 1 µs to be slower/faster
NAME_MATCH_MIN = 0.5  # [P] below this share of kernels aligned by name, try operators
OP_LINKED_MIN = 0.5  # [P] ...when both runs link at least this share of kernels to an operator
LIST_LIMIT = 20  # gaps listed as grown / shrunk (the largest changes); totals cover all
LABEL_NUMBER = re.compile(r"(\d+)\D*$")

GAP_WHAT = {
    "launch": "idle gaps waiting for kernel launches",
    "sync": "idle gaps after synchronisation",
    "copy": "idle gaps around host copies",
    "graph": "idle gaps inside graph replays",
    "other": "idle gaps with no host cause (dependencies)",
}
WHAT = {
    "inserted": "kernels inserted",
    "removed": "kernels removed",
    "slower": "slower kernels",
    "faster": "faster kernels",
    "noise": "kernel time changes within noise",
    "copies": "copy time",
    "overlap": "overlap of concurrent GPU work",
    "host": "host time before the first and after the last GPU work of the step",
}


class StepChoiceError(ValueError):
    """A requested step number a run does not have (one line, names the run side)."""


@dataclass(frozen=True)
class StepChoice:
    """The window of one run that is compared."""

    label: str
    number: int | None  # the number in the label; None for a whole-run window
    start_ns: int
    end_ns: int
    how: str  # "median steady step", "--step N", "whole run (no steps)"
    steps: int  # steps detected (0: none)
    warmup: int
    process: str

    @property
    def wall_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def whole(self) -> bool:
        """The whole run is compared, not one step."""
        return self.how.startswith("whole run")


@dataclass
class StepSide:
    """One side's step: its choice, its aligned units and the tables behind them."""

    choice: StepChoice
    units: pd.DataFrame  # UNIT_COLUMNS; one row per kernel (or per operator call)
    copies: pd.DataFrame  # the step's copies: start, end, bytes, key
    api: pd.DataFrame  # the step's API calls: start, end, name, tid, cls
    gaps: pd.DataFrame  # start, end, duration_ns, cause, before (unit row or -1)
    steady_totals: pd.DataFrame | None  # per steady step x key: the key's total ns (A's noise)
    platform: str
    linked_share: float  # kernels linked to an operator
    edges_ns: int = 0  # host time before the first and after the last GPU work
    overlap_ns: int = 0
    occurrence_bands: pd.Series | None = None  # (lane, key, occurrence) -> band % (kernel units only)
    ops: pd.DataFrame | None = None  # the step's host ops (operators, ranges): start, name, tid


UNIT_COLUMNS = ("start", "end", "dur", "key", "name", "lane", "kernels", "status", "partner", "gap_ns", "gap_cause", "gap_status")


@dataclass
class StepDiff:
    """The step-aligned diff of B against A (``to_json`` in render/diff.py)."""

    a: StepSide
    b: StepSide
    aligned_by: str  # "name" or "operator"
    noise_pct: float
    gap_noise_ns: int
    exact: bool  # every lane aligned exactly (not in blocks)
    lanes: list[dict[str, Any]]
    inserted: list[dict[str, Any]]
    removed: list[dict[str, Any]]
    slower: list[dict[str, Any]]
    faster: list[dict[str, Any]]
    gaps: dict[str, Any]
    copies: dict[str, Any]
    syncs: dict[str, Any]
    host: dict[str, Any]
    contributions: list[dict[str, Any]]
    step_band_pct: float
    verdict: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    @property
    def wall_delta_ns(self) -> int:
        return self.b.choice.wall_ns - self.a.choice.wall_ns

    def differences(self) -> list[tuple[str, int, int]]:
        """Every marked difference once, as (side "a"/"b", unit row, ns since the step's
        start), in time order: removed units and matched pairs (slower, faster, or a gap
        grown/shrunk before them) by their A unit, inserted units by their B unit."""
        out = []
        for name, side in (("a", self.a), ("b", self.b)):
            u = side.units
            rel = u["start"].to_numpy() - side.choice.start_ns
            status = u["status"].to_numpy()
            if name == "a":
                marked = (status != "matched") | (u["gap_status"] != "").to_numpy()
            else:
                marked = status == "inserted"
            out += [(name, int(i), int(rel[i])) for i in np.flatnonzero(marked)]
        return sorted(out, key=lambda t: (t[2], t[0], t[1]))


# --- choosing the steps --------------------------------------------------------------------


def main_run(runset: RunSet) -> Run:
    """The process compared: the one with the most kernels (the first of equals)."""
    if not runset.runs:
        raise ValueError(f"{runset.root}: nothing loaded")
    counts = [len(r.kernels) for r in runset.runs]
    return runset.runs[int(np.argmax(counts))]


def label_number(label: str) -> int | None:
    m = LABEL_NUMBER.search(label)
    return int(m.group(1)) if m else None


def _run_window(run: Run) -> tuple[int, int]:
    starts = [int(t["start"].min()) for t in (run.kernels, run.copies, run.api) if len(t)]
    ends = [int(t["end"].max()) for t in (run.kernels, run.copies, run.api) if len(t)]
    return (min(starts), max(ends)) if starts else (0, 0)


def choose_step(run: Run, side: str, number: int | None = None, *, whole: bool = False) -> tuple[StepChoice, Any]:
    """(the compared window of ``run``, its steps part or None). ``whole``: the whole run
    even when it has steps (the other side has none)."""
    label = run.meta.label or side
    part, frame = steps_of(run, label)
    if frame is None or not part["detected"] or whole:
        if number is not None and (frame is None or not part["detected"]):
            raise StepChoiceError(f"{side}: --step {number}: the run has no steps ({part['how']})")
        s, e = _run_window(run)
        how = "whole run (no steps)" if frame is None or not part["detected"] else "whole run (the other run has no steps)"
        return StepChoice("whole run", None, s, e, how, len(part["steps"]), 0, label), (part if frame is not None else None)
    records = part["steps"]
    warm = int(part["warmup_steps"])
    if number is not None:
        hits = [i for i, r in enumerate(records) if label_number(r["label"]) == number]
        if not hits:
            have = ", ".join(r["label"] for r in records[:5]) + (" ..." if len(records) > 5 else "")
            raise StepChoiceError(f"{side}: no step numbered {number} (steps: {have})")
        i, how = hits[0], f"step {number} (chosen)"
    else:
        steady = list(range(warm, len(records))) or list(range(len(records)))
        walls = np.array([records[k]["wall_ns"] for k in steady], dtype=np.float64)
        i = steady[int(np.argmin(np.abs(walls - float(np.median(walls)))))]
        how = f"median steady step (of {len(steady)} steady, {warm} warm-up)"
    r = records[i]
    return StepChoice(r["label"], label_number(r["label"]), int(r["start_ns"]), int(r["end_ns"]), how, len(records), warm, label), part


# --- one side's units ------------------------------------------------------------------------


def _lane_labels(k: pd.DataFrame) -> np.ndarray:
    cols = [k[c].to_numpy().astype(np.int64) for c in ("agent", "queue", "stream")]
    return np.array([f"GPU {a} queue {q} stream {s}" if q >= 0 else f"GPU {a} stream {s}" for a, q, s in zip(*cols, strict=True)], dtype=object)


def _kernel_keys(k: pd.DataFrame) -> np.ndarray:
    names = k["name"]
    if isinstance(names.dtype, pd.CategoricalDtype):
        cats = names.cat.categories
        keys = np.array([normalize_name(str(c)) for c in cats], dtype=object)
        codes = names.cat.codes.to_numpy()
        return np.where(codes >= 0, keys[np.maximum(codes, 0)], "")
    return np.array([normalize_name(str(x)) for x in names], dtype=object)


def _step_rows(run: Run, choice: StepChoice, index: hostapi.CorrIndex) -> tuple[np.ndarray, np.ndarray]:
    """Kernel and copy rows of the compared window (launch-time rule)."""
    if choice.whole:
        return np.arange(len(run.kernels)), np.arange(len(run.copies))
    kt, ct = launch_times(run, index)
    starts, ends = np.array([choice.start_ns], np.int64), np.array([choice.end_ns], np.int64)
    return np.flatnonzero(assign(kt, starts, ends) == 0), np.flatnonzero(assign(ct, starts, ends) == 0)


def _units(k: pd.DataFrame, keys: np.ndarray, ops: pd.DataFrame | None) -> pd.DataFrame:
    """The step's units in lane then start order: one per kernel, or (``ops``: the
    kernels' operator links) one per operator call — consecutive kernels of a lane with the
    same operator row, keyed by the operator's name (kernels no operator launched stay
    single units under their normalised name)."""
    lanes = _lane_codes(k)
    start, end = k["start"].to_numpy().astype(np.int64), k["end"].to_numpy().astype(np.int64)
    order = np.lexsort((start, pd.factorize(lanes, sort=True)[0]))
    names = k["name"].astype(str).to_numpy()
    frame = pd.DataFrame(
        {"start": start[order], "end": end[order], "dur": (end - start)[order], "key": keys[order], "name": names[order], "lane": lanes[order], "kernels": 1}
    )
    frame["row"] = order  # position in the step's kernel table
    if ops is None:
        return frame.reset_index(drop=True)
    op_row = ops["op_row"].to_numpy()[order]
    op = ops["op"].to_numpy()[order]
    linked = op_row >= 0
    frame.loc[linked, "key"] = op[linked]
    lane_change = np.concatenate([[True], frame["lane"].to_numpy()[1:] != frame["lane"].to_numpy()[:-1]])
    new = lane_change | ~linked | np.concatenate([[True], op_row[1:] != op_row[:-1]])
    group = np.cumsum(new) - 1
    g = frame.groupby(group, sort=True)
    out = pd.DataFrame(
        {
            "start": g["start"].min(),
            "end": g["end"].max(),
            "dur": g["dur"].sum(),
            "key": g["key"].first(),
            "name": g["name"].first(),
            "lane": g["lane"].first(),
            "kernels": g["kernels"].sum(),
            "row": g["row"].first(),
        }
    )
    return out.reset_index(drop=True)


def _sub_run(run: Run, k: pd.DataFrame, c: pd.DataFrame, api: pd.DataFrame) -> Run:
    """The step's work as a one-GPU run, so the idle gaps are those of all its GPUs together."""
    gpu = next((a.id for a in run.gpu_agents), int(k["agent"].iloc[0]) if len(k) else 0)
    k = k.assign(agent=gpu)
    if len(c):
        c = c.assign(dst_agent=gpu, src_agent=gpu)
    return Run(meta=run.meta, agents=run.agents, kernels=k.reset_index(drop=True), api=api.reset_index(drop=True), copies=c.reset_index(drop=True))


def _step_gaps(run: Run, k: pd.DataFrame, c: pd.DataFrame, api: pd.DataFrame, unit_of_kernel: np.ndarray) -> pd.DataFrame:
    """Every idle gap between the step's GPU work, with its cause and the unit after it."""
    cols: dict[str, list] = {"start": [], "end": [], "duration_ns": [], "cause": [], "before": []}
    if not len(k) and not len(c):
        return pd.DataFrame(cols)
    _, gapset = gpu_gaps(_sub_run(run, k, c, api), threshold_ns=1)
    if not len(gapset):
        return pd.DataFrame(cols)
    nxt = gapset.column("next_row")  # activity rows: the kernels first, then the copies
    before = np.full(len(nxt), -1, dtype=np.int64)
    is_kernel = nxt < len(k)
    before[is_kernel] = unit_of_kernel[nxt[is_kernel]]
    gs, ge = gapset.column("start"), gapset.column("end")
    return pd.DataFrame({"start": gs, "end": ge, "duration_ns": ge - gs, "cause": np.asarray(CAUSES, dtype=object)[gapset.column("cause")], "before": before})


def _steady_totals(run: Run, part: Any, keys: np.ndarray, index: hostapi.CorrIndex) -> pd.DataFrame | None:
    """Per steady step (rows) and key (columns): the key's kernel time in that step."""
    if part is None or not part["detected"]:
        return None
    steady = part["steps"][int(part["warmup_steps"]) :]
    if not steady:
        return None
    starts = np.array([r["start_ns"] for r in steady], np.int64)
    ends = np.array([r["end_ns"] for r in steady], np.int64)
    kt, _ = launch_times(run, index)
    step = assign(kt, starts, ends)
    k = run.kernels
    dur = k["end"].to_numpy().astype(np.int64) - k["start"].to_numpy().astype(np.int64)
    ok = step >= 0
    table = pd.DataFrame({"step": step[ok], "key": keys[ok], "dur": dur[ok]}).pivot_table(
        index="step", columns="key", values="dur", aggfunc="sum", fill_value=0
    )
    return table.reindex(range(len(steady)), fill_value=0)


def _lane_codes(k: pd.DataFrame) -> np.ndarray:
    """Each kernel's lane label, built once per distinct (agent, queue, stream)."""
    cols = k[["agent", "queue", "stream"]].astype(np.int64)
    group = cols.groupby(["agent", "queue", "stream"], sort=False).ngroup().to_numpy()
    first = np.unique(group, return_index=True)[1]
    labels = _lane_labels(cols.iloc[first])
    return labels[group]


def occurrence_bands(run: Run, part: Any, keys: np.ndarray, index: hostapi.CorrIndex, floor_pct: float) -> pd.Series | None:
    """Per (lane, key, occurrence): the noise band in % of one kernel — the larger of
    ``floor_pct`` and the interquartile range of the duration of the same kernel (the n-th
    kernel of that name on that lane) over A's steady steps, in % of its median. None
    with fewer than 2 steady steps."""
    if part is None or not part["detected"]:
        return None
    steady = part["steps"][int(part["warmup_steps"]) :]
    if len(steady) < 2:
        return None
    starts = np.array([r["start_ns"] for r in steady], np.int64)
    ends = np.array([r["end_ns"] for r in steady], np.int64)
    kt, _ = launch_times(run, index)
    step = assign(kt, starts, ends)
    ok = np.flatnonzero(step >= 0)
    k = run.kernels.iloc[ok]
    start = k["start"].to_numpy().astype(np.int64)
    frame = pd.DataFrame({"step": step[ok], "lane": _lane_codes(k), "key": keys[ok], "start": start, "dur": k["end"].to_numpy().astype(np.int64) - start})
    frame = frame.sort_values(["step", "lane", "start"], kind="stable")
    frame["occ"] = frame.groupby(["step", "lane", "key"], sort=False).cumcount()
    g = frame.groupby(["lane", "key", "occ"], sort=False)["dur"]
    q75, q25, med = g.quantile(0.75), g.quantile(0.25), g.median()
    band = (100.0 * (q75 - q25) / med.where(med > 0)).fillna(0.0)
    return band.clip(lower=floor_pct)


def build_side(run: Run, choice: StepChoice, part: Any, *, by_operator: bool, noise_pct: float = DEFAULT_NOISE_PCT, bands: bool = True) -> StepSide:
    """One side's units, copies, API calls and gaps for the window ``choice``."""
    index = hostapi.CorrIndex(run.api)
    k_rows, c_rows = _step_rows(run, choice, index)
    k = run.kernels.iloc[k_rows].reset_index(drop=True)
    c = run.copies.iloc[c_rows].reset_index(drop=True)
    links = link_operators(run.kernels, run.api, run.markers, index) if len(run.kernels) else None
    all_keys = _kernel_keys(run.kernels) if len(run.kernels) else np.array([], dtype=object)
    linked_share = float((links["op_row"].to_numpy() >= 0).mean()) if links is not None and len(links) else 0.0
    if by_operator and links is not None:
        op_keys = np.where(links["op_row"].to_numpy() >= 0, links["op"].to_numpy(), all_keys)
        all_keys = op_keys.astype(object)
    keys = all_keys[k_rows] if len(k_rows) else np.array([], dtype=object)
    units = _units(k, keys, links.iloc[k_rows].reset_index(drop=True) if by_operator and links is not None else None)
    unit_of_kernel = np.full(len(k), -1, dtype=np.int64)
    if len(units):
        per = units["kernels"].to_numpy()
        unit_of_kernel[_kernel_order(k)] = np.repeat(np.arange(len(units)), per)
    a_start = run.api["start"].to_numpy().astype(np.int64) if len(run.api) else np.array([], np.int64)
    gpu_end = max([choice.end_ns] + [int(t["end"].max()) for t in (k, c) if len(t)])
    in_step = (a_start >= choice.start_ns) & (a_start < choice.end_ns) if len(run.api) else np.zeros(0, bool)
    around = (a_start < gpu_end) & (run.api["end"].to_numpy() > choice.start_ns) if len(run.api) else np.zeros(0, bool)
    gaps = _step_gaps(run, k, c, run.api[around], unit_of_kernel)
    api = run.api[in_step]
    api = pd.DataFrame(
        {
            "start": api["start"].to_numpy(),
            "end": api["end"].to_numpy(),
            "name": api["name"].astype(str).to_numpy(),
            "tid": api["tid"].to_numpy(),
            "cls": index.classes[in_step] if len(run.api) else np.array([], np.int64),
        }
    )
    copies = pd.DataFrame(
        {
            "start": c["start"].to_numpy(),
            "end": c["end"].to_numpy(),
            "bytes": c["bytes"].to_numpy() if len(c) else np.array([], np.int64),
            "key": (c["direction"].astype(str) + " " + c["name"].astype(str)).to_numpy() if len(c) else np.array([], dtype=object),
        }
    )
    side = StepSide(choice, _blank_status(units), copies, api, gaps, _steady_totals(run, part, all_keys, index), _platform(run), linked_share)
    side.ops = host_ops(run, choice)
    if bands and not by_operator:  # the noise bands come from A: B's are not needed
        side.occurrence_bands = occurrence_bands(run, part, all_keys, index, noise_pct)
    _attach_gaps(side)
    side.edges_ns, side.overlap_ns = _edges_and_overlap(side, k, c)
    return side


HOST_OP_SKIP = frozenset({"gpu_user_annotation", "python_function"})  # GPU-side ranges; Python frames (thousands, not ops)


def host_ops(run: Run, choice: StepChoice) -> pd.DataFrame:
    """The host ops of the window (framework operators, roctx/NVTX and user ranges; not
    Python frames, not GPU-side ranges, not the step ranges themselves) that start inside
    it: start, name, tid, in start order."""
    m = run.markers
    if not len(m):
        return pd.DataFrame({"start": [], "name": [], "tid": []})
    start = m["start"].to_numpy().astype(np.int64)
    keep = (start >= choice.start_ns) & (start < choice.end_ns) & ~m["source"].astype(str).isin(HOST_OP_SKIP).to_numpy()
    if not choice.whole:
        keep &= ~((start == choice.start_ns) & (m["end"].to_numpy().astype(np.int64) == choice.end_ns))
    rows = np.flatnonzero(keep)
    rows = rows[np.argsort(start[rows], kind="stable")]
    return pd.DataFrame({"start": start[rows], "name": m["name"].astype(str).to_numpy()[rows], "tid": m["tid"].to_numpy()[rows]})


def _kernel_order(k: pd.DataFrame) -> np.ndarray:
    """The step's kernel rows in the units' (lane, start) order."""
    lanes = _lane_codes(k)
    return np.lexsort((k["start"].to_numpy().astype(np.int64), pd.factorize(lanes, sort=True)[0]))


def _platform(run: Run) -> str:
    return str(detect_platform(RunSet(root="", runs=[run]))["vendor"])


def _blank_status(units: pd.DataFrame) -> pd.DataFrame:
    units = units.copy()
    units["status"] = "matched"
    units["partner"] = -1
    units["gap_ns"] = 0
    units["gap_cause"] = ""
    units["gap_status"] = ""
    return units


def _attach_gaps(side: StepSide) -> None:
    g = side.gaps
    if not len(g):
        return
    has = g["before"].to_numpy() >= 0
    rows = g["before"].to_numpy()[has]
    side.units.loc[rows, "gap_ns"] = g["duration_ns"].to_numpy()[has]
    side.units.loc[rows, "gap_cause"] = g["cause"].to_numpy()[has]


def _edges_and_overlap(side: StepSide, k: pd.DataFrame, c: pd.DataFrame) -> tuple[int, int]:
    """(host time before the first and after the last GPU work, overlap of GPU work)."""
    s = np.concatenate([k["start"].to_numpy(), c["start"].to_numpy()]).astype(np.int64)
    e = np.concatenate([k["end"].to_numpy(), c["end"].to_numpy()]).astype(np.int64)
    if not len(s):
        return side.choice.wall_ns, 0
    busy = union_length(s, e)
    span = int(e.max() - s.min())
    idle = span - busy
    total = int((e - s).sum())
    gap_sum = int(side.gaps["duration_ns"].sum()) if len(side.gaps) else 0
    # wall = edges + busy + idle and busy = total - overlap; idle is taken as the listed gaps'
    # sum, so any difference (none when every gap is listed) stays inside the overlap term
    return side.choice.wall_ns - span, total - busy - (idle - gap_sum)


# --- alignment -------------------------------------------------------------------------------


def _pair_groups(a: pd.Series, b: pd.Series) -> list[tuple[str | None, str | None]]:
    """Groups (lanes, threads) of A and B paired by size, largest with largest."""
    ca, cb = a.value_counts(sort=False), b.value_counts(sort=False)
    la = sorted(ca.index, key=lambda x: (-ca[x], str(x)))
    lb = sorted(cb.index, key=lambda x: (-cb[x], str(x)))
    n = max(len(la), len(lb))
    return [(la[i] if i < len(la) else None, lb[i] if i < len(lb) else None) for i in range(n)]


def align_units(a: pd.DataFrame, b: pd.DataFrame, key: str = "key", group: str = "lane") -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]], bool]:
    """(matched rows of ``a``, matched rows of ``b``, the group pairs, exact): a longest
    common subsequence of ``key`` within each pair of groups, rows in each group's order."""
    codes, _ = pd.factorize(pd.concat([a[key], b[key]], ignore_index=True))
    code_a, code_b = codes[: len(a)], codes[len(a) :]
    out_a, out_b, pairs, exact = [], [], [], True
    rows_a = a.groupby(group, sort=False).indices if len(a) else {}
    rows_b = b.groupby(group, sort=False).indices if len(b) else {}
    empty = np.array([], np.int64)
    for la, lb in _pair_groups(a[group], b[group]):
        ra = np.asarray(rows_a[la], dtype=np.int64) if la is not None else empty
        rb = np.asarray(rows_b[lb], dtype=np.int64) if lb is not None else empty
        ia, ib, ok = lcs_pairs(code_a[ra], code_b[rb])
        exact &= ok
        out_a.append(ra[ia])
        out_b.append(rb[ib])
        pairs.append({"a": None if la is None else str(la), "b": None if lb is None else str(lb), "units_a": len(ra), "units_b": len(rb), "matched": len(ia)})
    if not out_a:
        return empty, empty, [], True
    return np.concatenate(out_a), np.concatenate(out_b), pairs, exact


def _per_key(units: pd.DataFrame, rows: np.ndarray) -> list[dict[str, Any]]:
    """Units ``rows`` summed per key: key, count, total_ns, names (up to 3 raw names), lanes."""
    if not len(rows):
        return []
    u = units.iloc[rows]
    out = []
    for key, g in u.groupby("key", sort=False):
        out.append(
            {
                "key": str(key),
                "count": len(g),
                "total_ns": int(g["dur"].sum()),
                "names": [str(x) for x in pd.unique(g["name"])[:3]],
                "lanes": [str(x) for x in pd.unique(g["lane"])],
            }
        )
    return sorted(out, key=lambda r: (-r["total_ns"], r["key"]))


def key_bands(totals: pd.DataFrame | None, keys: list[str], floor_pct: float) -> dict[str, float]:
    """Per key: the noise band in % (the larger of ``floor_pct`` and the interquartile range
    of the key's per-step total over the steady steps in % of their median)."""
    out = {}
    for key in keys:
        band = floor_pct
        if totals is not None and key in totals.columns and len(totals) >= 2:
            v = totals[key].to_numpy(dtype=np.float64)
            med = float(np.median(v))
            if med > 0:
                band = max(band, 100.0 * float(np.percentile(v, 75) - np.percentile(v, 25)) / med)
        out[key] = band
    return out


def _slower_faster(sa: StepSide, sb: StepSide, ia: np.ndarray, ib: np.ndarray, floor_pct: float) -> tuple[list, list, np.ndarray]:
    """(slower keys, faster keys, each matched pair's verdict "slower", "faster" or "matched").

    A pair is slower (faster) when its own change exceeds its band (the same kernel's spread
    over A's steady steps: :func:`occurrence_bands`) and ``KERNEL_NOISE_NS``, or when its
    key's summed change exceeds the key's band (:func:`key_bands`) and it moved that way."""
    ua, ub = sa.units, sb.units
    keys = ua["key"].to_numpy(dtype=object)[ia]  # object arrays: a fixed-width str copy of long names costs their longest
    lanes = ua["lane"].to_numpy(dtype=object)[ia]
    occ = ua.groupby(["lane", "key"], sort=False).cumcount().to_numpy()[ia]
    da, db = ua["dur"].to_numpy()[ia].astype(np.int64), ub["dur"].to_numpy()[ib].astype(np.int64)
    delta = db - da
    band = np.full(len(ia), float(floor_pct))
    if sa.occurrence_bands is not None and len(ia):
        found = sa.occurrence_bands.reindex(pd.MultiIndex.from_arrays([lanes, keys, occ])).to_numpy(dtype=np.float64)
        band = np.where(np.isnan(found), band, np.maximum(found, band))
    flagged = np.abs(delta) > np.maximum(band / 100.0 * da, KERNEL_NOISE_NS)
    frame = pd.DataFrame({"key": keys, "a": da, "b": db})
    g = frame.groupby("key", sort=True).agg(a_ns=("a", "sum"), b_ns=("b", "sum"))
    bands = key_bands(sa.steady_totals, list(g.index), floor_pct)
    key_delta = (g["b_ns"] - g["a_ns"]).to_numpy()
    key_band = np.array([bands[str(x)] for x in g.index])
    key_dir = pd.Series(
        np.where(np.abs(key_delta) > np.maximum(key_band / 100.0 * g["a_ns"].to_numpy(), KERNEL_NOISE_NS), np.sign(key_delta), 0), index=g.index
    )
    by_key = key_dir.reindex(keys).to_numpy() if len(keys) else np.zeros(0)
    with_key = (by_key != 0) & (np.sign(delta) == by_key)
    band = np.where(with_key & ~flagged, pd.Series(bands, dtype=np.float64).reindex(keys).to_numpy() if len(keys) else band, band)
    flagged |= with_key
    status = np.where(flagged & (delta > 0), "slower", np.where(flagged & (delta < 0), "faster", "matched")).astype(object)
    rows = pd.DataFrame({"status": status, "key": keys, "a": da, "b": db, "band": band})[flagged & (delta != 0)]
    out: dict[str, list[dict[str, Any]]] = {"slower": [], "faster": []}
    for (verdict_, key), r in rows.groupby(["status", "key"], sort=True):
        a_ns, b_ns = int(r["a"].sum()), int(r["b"].sum())
        out[str(verdict_)].append(
            {
                "key": str(key),
                "count": len(r),
                "a_ns": a_ns,
                "b_ns": b_ns,
                "delta_ns": b_ns - a_ns,
                "ratio": b_ns / a_ns if a_ns else None,
                "band_pct": round(float(r["band"].max()), 4),
            }
        )
    out["slower"].sort(key=lambda r: (-r["delta_ns"], r["key"]))
    out["faster"].sort(key=lambda r: (r["delta_ns"], r["key"]))
    return out["slower"], out["faster"], status


def _mark(sa: StepSide, sb: StepSide, ia: np.ndarray, ib: np.ndarray, status: np.ndarray) -> None:
    ua, ub = sa.units, sb.units
    ua["status"] = "removed"
    ub["status"] = "inserted"
    ua.loc[ia, "partner"] = ib
    ub.loc[ib, "partner"] = ia
    ua.loc[ia, "status"] = status
    ub.loc[ib, "status"] = status


def _gap_changes(sa: StepSide, sb: StepSide, ia: np.ndarray, ib: np.ndarray, noise_pct: float, gap_noise_ns: int) -> dict[str, Any]:
    """Gaps before matched units compared, and the idle totals per cause of each side."""
    ga = sa.units["gap_ns"].to_numpy()[ia].astype(np.int64)
    gb = sb.units["gap_ns"].to_numpy()[ib].astype(np.int64)
    delta = gb - ga
    band = np.maximum(gap_noise_ns, noise_pct / 100.0 * ga)
    grown, shrunk = np.flatnonzero(delta > band), np.flatnonzero(-delta > band)
    sa.units["gap_status"] = ""
    sb.units["gap_status"] = ""
    for rows, label in ((grown, "grown"), (shrunk, "shrunk")):
        sa.units.loc[ia[rows], "gap_status"] = label
        sb.units.loc[ib[rows], "gap_status"] = label

    def listed(rows: np.ndarray, largest_first: int) -> list[dict[str, Any]]:
        top = rows[np.argsort(largest_first * delta[rows], kind="stable")][:LIST_LIMIT]
        return [
            {
                "before": str(sb.units["key"].iat[int(ib[i])]),
                "a_ns": int(ga[i]),
                "b_ns": int(gb[i]),
                "delta_ns": int(delta[i]),
                "cause_a": str(sa.units["gap_cause"].iat[int(ia[i])]) or None,
                "cause_b": str(sb.units["gap_cause"].iat[int(ib[i])]) or None,
                "at_a_ns": int(sa.units["start"].iat[int(ia[i])] - sa.choice.start_ns),
                "at_b_ns": int(sb.units["start"].iat[int(ib[i])] - sb.choice.start_ns),
            }
            for i in top
        ]

    def by_cause(side: StepSide) -> dict[str, int]:
        g = side.gaps
        return {c: int(g["duration_ns"][g["cause"] == c].sum()) if len(g) else 0 for c in CAUSES}

    ca, cb = by_cause(sa), by_cause(sb)
    return {
        "a_ns": sum(ca.values()),
        "b_ns": sum(cb.values()),
        "delta_ns": sum(cb.values()) - sum(ca.values()),
        "count_a": len(sa.gaps),
        "count_b": len(sb.gaps),
        "by_cause": [{"cause": c, "a_ns": ca[c], "b_ns": cb[c], "delta_ns": cb[c] - ca[c]} for c in CAUSES],
        "grown_count": len(grown),
        "shrunk_count": len(shrunk),
        "grown_ns": int(delta[grown].sum()),
        "shrunk_ns": int(delta[shrunk].sum()),
        "grown": listed(grown, -1),
        "shrunk": listed(shrunk, 1),
        "noise": f"max({gap_noise_ns} ns, {noise_pct:g}% of the A gap)",
    }


def _added_gone(a: pd.DataFrame, b: pd.DataFrame, key: str, group: str | None, weight: str | None = None) -> tuple[list[dict], list[dict], int]:
    """Per key, what B has that the alignment of A and B does not match (added) and the
    reverse (gone): count (and ``weight`` summed); plus the groups paired."""
    if group is None:
        a, b = a.assign(_g=0), b.assign(_g=0)
        group = "_g"
    ia, ib, pairs, _ = align_units(a, b, key, group)

    def rows(frame: pd.DataFrame, matched: np.ndarray) -> list[dict]:
        rest = np.setdiff1d(np.arange(len(frame)), matched)
        if not len(rest):
            return []
        g = frame.iloc[rest].groupby(key, sort=True)
        out = [{"name": str(n), "count": len(x)} | ({weight: int(x[weight].sum())} if weight else {}) for n, x in g]
        return sorted(out, key=lambda r: (-r["count"], r["name"]))

    return rows(b, ib), rows(a, ia), len(pairs)


RUNTIME_PREFIX = re.compile(r"^(hip|cuda|cu)(?=[A-Z])")


def _host_changes(sa: StepSide, sb: StepSide) -> tuple[dict, dict]:
    """(API calls per thread added/gone, syncs added/gone). Runs of different vendors are
    aligned on the call names without their runtime prefix (``hipDeviceSynchronize`` and
    ``cudaDeviceSynchronize`` are both ``DeviceSynchronize``)."""
    a_api, b_api = sa.api, sb.api
    if sa.platform != sb.platform:
        a_api = a_api.assign(name=[RUNTIME_PREFIX.sub("", n) for n in a_api["name"]])
        b_api = b_api.assign(name=[RUNTIME_PREFIX.sub("", n) for n in b_api["name"]])
    added, gone, threads = _added_gone(a_api, b_api, "name", "tid")
    sync_names = {str(n) for api in (a_api, b_api) if len(api) for n in api["name"].to_numpy()[hostapi.sync_mask(api["cls"].to_numpy())]}
    host: dict[str, Any] = {"calls_a": len(sa.api), "calls_b": len(sb.api), "threads_paired": threads, "added": added[:LIST_LIMIT], "gone": gone[:LIST_LIMIT]}
    host["added_count"] = sum(r["count"] for r in added)
    host["gone_count"] = sum(r["count"] for r in gone)
    ops_a = sa.ops if sa.ops is not None else pd.DataFrame({"start": [], "name": [], "tid": []})
    ops_b = sb.ops if sb.ops is not None else pd.DataFrame({"start": [], "name": [], "tid": []})
    op_added, op_gone, _ = _added_gone(ops_a, ops_b, "name", "tid")
    host["ops"] = {
        "a": len(ops_a),
        "b": len(ops_b),
        "added": op_added[:LIST_LIMIT],
        "gone": op_gone[:LIST_LIMIT],
        "added_count": sum(r["count"] for r in op_added),
        "gone_count": sum(r["count"] for r in op_gone),
    }
    syncs = {
        "a": int(hostapi.sync_mask(sa.api["cls"].to_numpy()).sum()) if len(sa.api) else 0,
        "b": int(hostapi.sync_mask(sb.api["cls"].to_numpy()).sum()) if len(sb.api) else 0,
        "added": [r for r in added if r["name"] in sync_names],
        "gone": [r for r in gone if r["name"] in sync_names],
    }
    return host, syncs


def _copy_changes(sa: StepSide, sb: StepSide) -> dict[str, Any]:
    ca = sa.copies.assign(dur=sa.copies["end"] - sa.copies["start"])
    cb = sb.copies.assign(dur=sb.copies["end"] - sb.copies["start"])
    added, gone, _ = _added_gone(ca, cb, "key", None, "bytes")
    return {
        "a": len(ca),
        "b": len(cb),
        "a_ns": int(ca["dur"].sum()),
        "b_ns": int(cb["dur"].sum()),
        "a_bytes": int(np.maximum(ca["bytes"].to_numpy(), 0).sum()) if len(ca) else 0,
        "b_bytes": int(np.maximum(cb["bytes"].to_numpy(), 0).sum()) if len(cb) else 0,
        "added": added,
        "gone": gone,
    }


def contributions(d_in: dict[str, Any], sa: StepSide, sb: StepSide, unit: str = "kernels") -> list[dict[str, Any]]:
    """The parts of the step-time change (B − A), which sum to it exactly (module docstring);
    ``unit``: what the aligned units are ("kernels" or "operator calls")."""
    ua, ub = sa.units, sb.units
    matched_a = ua[ua["partner"] >= 0]
    pa = ub["dur"].to_numpy()[matched_a["partner"].to_numpy()]
    delta = pa - matched_a["dur"].to_numpy()
    status = matched_a["status"].to_numpy()
    parts = {
        "inserted": int(ub["dur"][ub["status"] == "inserted"].sum()),
        "removed": -int(ua["dur"][ua["status"] == "removed"].sum()),
        "slower": int(delta[status == "slower"].sum()),
        "faster": int(delta[status == "faster"].sum()),
        "noise": int(delta[status == "matched"].sum()),
        "copies": d_in["copies"]["b_ns"] - d_in["copies"]["a_ns"],
    }
    out = [{"what": k, "label": WHAT[k].replace("kernels", unit), "delta_ns": v} for k, v in parts.items()]
    out += [{"what": f"gaps:{r['cause']}", "label": GAP_WHAT[r["cause"]], "delta_ns": r["delta_ns"]} for r in d_in["gaps"]["by_cause"]]
    out.append({"what": "overlap", "label": WHAT["overlap"], "delta_ns": -(sb.overlap_ns - sa.overlap_ns)})
    out.append({"what": "host", "label": WHAT["host"], "delta_ns": sb.edges_ns - sa.edges_ns})
    return out


def step_band(sa: StepSide, floor_pct: float, part_a: Any) -> float:
    """The step-time noise band in %: the larger of ``floor_pct`` and A's steady spread."""
    steady = (part_a or {}).get("steady") or {}
    return max(floor_pct, float(steady.get("spread_pct") or 0.0))


def verdict(parts: list[dict[str, Any]], wall_a: int, wall_b: int, band_pct: float) -> dict[str, Any]:
    """The largest contribution in the direction of the change (``what`` None: within
    noise); ``share_pct``: its share of all the contributions in that direction."""
    total = wall_b - wall_a
    pct = 100.0 * total / wall_a if wall_a else None
    base = {"delta_ns": total, "delta_pct": pct, "band_pct": band_pct, "what": None, "label": None, "part_ns": 0, "share_pct": None}
    if total == 0 or (pct is not None and abs(pct) <= band_pct):
        return base
    same = [p for p in parts if p["delta_ns"] * total > 0]
    if not same:
        return base
    top = max(same, key=lambda p: abs(p["delta_ns"]))
    share = 100.0 * top["delta_ns"] / sum(p["delta_ns"] for p in same)
    return base | {"what": top["what"], "label": top["label"], "part_ns": top["delta_ns"], "share_pct": share}


def diff_steps(
    a: RunSet,
    b: RunSet,
    *,
    step: int | None = None,
    step_b: int | None = None,
    noise_pct: float = DEFAULT_NOISE_PCT,
    gap_noise_ns: int = DEFAULT_GAP_NOISE_NS,
) -> StepDiff:
    """The step-aligned diff of B against A (module docstring). Raises
    :class:`StepChoiceError` for a step number a run lacks."""
    run_a, run_b = main_run(a), main_run(b)
    step_b = step if step_b is None else step_b
    ca, part_a = choose_step(run_a, "A", step)
    cb, part_b = choose_step(run_b, "B", step_b)
    notes = []
    if ca.whole != cb.whole and step is None and step_b is None:  # one run has no steps: both whole runs
        ca, part_a = choose_step(run_a, "A", None, whole=True)
        cb, part_b = choose_step(run_b, "B", None, whole=True)
        notes.append("one run has no steps: both are compared as whole runs")
    for side, runset in (("A", a), ("B", b)):
        if len(runset.runs) > 1:
            notes.append(f"{side}: {len(runset.runs)} processes; the one with the most kernels ({main_run(runset).meta.label}) is compared")
    sa, sb = build_side(run_a, ca, part_a, by_operator=False, noise_pct=noise_pct), build_side(run_b, cb, part_b, by_operator=False, bands=False)
    ia, ib, lanes, exact = align_units(sa.units, sb.units)
    aligned_by = "name"
    total = max(len(sa.units), len(sb.units))
    share = len(ia) / total if total else 1.0
    vendors_differ = sa.platform != sb.platform and "unknown" not in (sa.platform, sb.platform)
    linked = min(sa.linked_share, sb.linked_share) >= OP_LINKED_MIN
    if (share < NAME_MATCH_MIN or vendors_differ) and linked:
        oa, ob = build_side(run_a, ca, part_a, by_operator=True), build_side(run_b, cb, part_b, by_operator=True)
        ja, jb, op_lanes, op_exact = align_units(oa.units, ob.units)
        op_share = len(ja) / max(len(oa.units), len(ob.units), 1)
        if op_share >= share:
            why = f"A {sa.platform}, B {sb.platform}: vendor libraries name their kernels differently" if vendors_differ else "few kernel names match"
            notes.append(
                f"aligned by launching operator, not kernel name ({why}; {fmt_pct(100 * share, 0)} of kernels align by normalised name, "
                f"{fmt_pct(100 * op_share, 0)} of operator calls by operator); a unit is one operator call: its kernels summed"
            )
            sa, sb, ia, ib, lanes, exact, aligned_by = oa, ob, ja, jb, op_lanes, op_exact, "operator"
    elif share < NAME_MATCH_MIN:
        notes.append(
            f"only {fmt_pct(100 * share, 0)} of kernels align by normalised name and the runs do not link kernels to operators: expect many inserted/removed"
        )
    if not exact:
        notes.append("a lane was too long for one exact alignment: aligned in blocks (a common subsequence, not necessarily the longest)")
    return _assemble(sa, sb, ia, ib, lanes, exact, aligned_by, noise_pct, gap_noise_ns, notes, part_a)


def _assemble(
    sa: StepSide,
    sb: StepSide,
    ia: np.ndarray,
    ib: np.ndarray,
    lanes: list[dict[str, Any]],
    exact: bool,
    aligned_by: str,
    noise_pct: float,
    gap_noise_ns: int,
    notes: list[str],
    part_a: Any,
) -> StepDiff:
    slower, faster, status = _slower_faster(sa, sb, ia, ib, noise_pct)
    _mark(sa, sb, ia, ib, status)
    inserted = _per_key(sb.units, np.flatnonzero(sb.units["status"].to_numpy() == "inserted"))
    removed = _per_key(sa.units, np.flatnonzero(sa.units["status"].to_numpy() == "removed"))
    gaps = _gap_changes(sa, sb, ia, ib, noise_pct, gap_noise_ns)
    copies = _copy_changes(sa, sb)
    host, syncs = _host_changes(sa, sb)
    parts = contributions({"gaps": gaps, "copies": copies}, sa, sb, "operator calls" if aligned_by == "operator" else "kernels")
    band = step_band(sa, noise_pct, part_a)
    if sa.platform != sb.platform and "unknown" not in (sa.platform, sb.platform):
        notes.append(f"platforms differ: A {sa.platform}, B {sb.platform}; host calls are aligned without their hip/cuda prefix")
    return StepDiff(
        sa,
        sb,
        aligned_by,
        float(noise_pct),
        int(gap_noise_ns),
        exact,
        lanes,
        inserted,
        removed,
        slower,
        faster,
        gaps,
        copies,
        syncs,
        host,
        parts,
        band,
        verdict(parts, sa.choice.wall_ns, sb.choice.wall_ns, band),
        notes,
    )
