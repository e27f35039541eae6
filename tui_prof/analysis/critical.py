"""The summary's ``critical_path`` section and the ``critical_ns`` of its hotspot rows.

For each process, the window analysed is its steady state (the first steady step's start
to the last step's end) when the summary found steps for one process, else the whole run.
A window holding more than its share of ``MAX_NODES`` host calls and GPU operations (the
budget is split between the processes, at least ``MIN_NODES`` each) is cut to its first ones
(whole steps when it is made of steps) so that the cost is bounded at a
million dispatches; the section then says so (``sampled_ns`` < ``window_ns``) and the
per-kernel ``critical_ns`` are scaled by ``window_ns / sampled_ns``.

Per process: the critical path (:func:`tui_prof.analysis.whatif.critical_path`) of that
window, its breakdown by group and the largest items; per steady step, the ns of each
group on the path (each interval's part inside the step) and the group
with the most.

With several processes, the waits on other ranks (``waiting_on_ranks``) and ``ranks_on_path``
read the run's collective instances over whole processes (the rank table's:
:class:`~tui_prof.analysis.ranks.InstanceTable`, its :data:`~tui_prof.analysis.ranks.WaitTable`),
whatever part of each process its window covers or samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from tui_prof.analysis import depgraph as dg
from tui_prof.analysis.arrays import code_totals, in_order
from tui_prof.analysis.names import CategoryRules
from tui_prof.analysis.operators import NOT_LINKED
from tui_prof.analysis.runinput import RunInput
from tui_prof.analysis.sections import StepRecord, StepsSection
from tui_prof.analysis.whatif import GROUPS, PathSummary, critical_path, path_json
from tui_prof.model import Run
from tui_prof.model.schema import category_array, column_array

if TYPE_CHECKING:
    from tui_prof.analysis.ranks import WaitTable

MAX_STEP_ROWS = 200  # steady steps listed per process (the first ones)
MAX_NODES = 150_000  # [P] host calls + GPU operations analysed at most, shared by the processes (bounded cost)
MIN_NODES = 5_000  # [P] but at least this many per process


@dataclass
class ProcessWindow:
    """The part of one process that the critical path and the savings look at."""

    label: str
    run: Run  # the process's events that start inside [lo, hi)
    graph: dg.DepGraph
    lo: int  # absolute ns: the part analysed
    hi: int
    window_ns: int  # the whole window (steady state or run) it stands for
    steps: list[dict]  # steady step records inside [lo, hi)
    steady_steps: int  # steady steps in the whole window
    kernel_rows: np.ndarray | None = None  # the process's kernel row of each of ``run``'s kernels (None: the same rows)
    process_kernels: int = 0  # kernels of the whole process
    process: Run | None = None  # the whole process when ``run`` is a slice of it (its collectives before the window)
    categories: np.ndarray | None = None  # the whole process's kernel categories, operator first (None: by kernel name)

    @property
    def scale(self) -> float:
        return self.window_ns / (self.hi - self.lo) if self.hi > self.lo else 1.0


def steady_records(steps: StepsSection, label: str, processes: int) -> list[dict]:
    """The steady steps of process ``label`` when the summary's steps are this one process's."""
    if processes != 1 or not steps.get("detected") or steps.get("process") != label:
        return []
    return [dict(rec) for rec in steps.get("steps", []) if not rec.get("warmup")]


def _sorted_starts(run: Run) -> list[np.ndarray]:
    """The start times of the run's calls, kernels and copies, each sorted (as loaded: no copy)."""
    out = []
    for t in (run.api, run.kernels, run.copies):
        if len(t):
            s = column_array(t, "start")
            out.append(s if in_order(s) else np.sort(s))
    return out


def _count_before(starts: list[np.ndarray], lo: int, times: np.ndarray) -> np.ndarray:
    """Events starting in [lo, t) for each t of ``times``."""
    total = np.zeros(len(times), dtype=np.int64)
    for s in starts:
        total += np.searchsorted(s, times, side="left") - np.searchsorted(s, lo, side="left")
    return total


def _cut(starts: list[np.ndarray], lo: int, hi: int, max_nodes: int) -> int:
    """The latest t <= hi with at most ``max_nodes`` events starting in [lo, t) (bisection on time)."""
    if _count_before(starts, lo, np.array([hi]))[0] <= max_nodes:
        return hi
    a, b = lo, hi
    while b - a > 1:
        mid = (a + b) // 2
        if _count_before(starts, lo, np.array([mid]))[0] <= max_nodes:
            a = mid
        else:
            b = mid
    return max(a, lo + 1)


def _slice(run: Run, lo: int, hi: int) -> Run:
    """The events of ``run`` that start inside [lo, hi) (host ranges: those overlapping it)."""

    def part(table: pd.DataFrame, overlap: bool = False) -> pd.DataFrame:
        if table.empty:
            return table
        s = table["start"].to_numpy()
        keep = (table["end"].to_numpy() > lo) & (s < hi) if overlap else (s >= lo) & (s < hi)
        return table if keep.all() else table[keep].reset_index(drop=True)

    return Run(meta=run.meta, agents=run.agents, kernels=part(run.kernels), api=part(run.api), copies=part(run.copies), markers=part(run.markers, True))


def window_budget(processes: int, max_nodes: int = MAX_NODES) -> int:
    """Each process's share of ``max_nodes`` (at least ``MIN_NODES``): 64 ranks stay as cheap as one process."""
    return max(max_nodes // max(processes, 1), MIN_NODES)


def process_windows(
    inputs: Sequence[RunInput], steps: StepsSection, max_nodes: int = MAX_NODES, categories: Sequence[np.ndarray | None] | None = None
) -> dict[int, ProcessWindow]:
    """Per process with GPU work (by its position in ``inputs``): the window analysed
    (``categories``: each process's kernel categories, operator first, which say its collectives)."""
    out: dict[int, ProcessWindow] = {}
    budget = window_budget(len(inputs), max_nodes)
    for pos, r in enumerate(inputs):
        w = process_window(r, steady_records(steps, r.label, len(inputs)), budget, categories[pos] if categories is not None else None)
        if w is not None:
            out[pos] = w
    return out


def has_window(gpu_work: bool, span: tuple[int, int] | None) -> bool:
    """Whether a process gets a window: GPU work (kernels or copies) and a time range
    (``span``) the graph's int64 times hold (where its graph can be built: hostile times aside)."""
    return gpu_work and span is not None and span[1] - span[0] < dg.MAX_SPAN_NS


def process_window(r: RunInput, records: list[dict], max_nodes: int, categories: np.ndarray | None = None) -> ProcessWindow | None:
    """The window of one process: its steady steps ``records`` (else the whole run), cut to
    ``max_nodes`` events; None without GPU work or where the graph cannot be built
    (``categories``: its kernel categories, operator first, which say its collectives)."""
    run = r.run
    if not has_window(bool(len(run.kernels) or len(run.copies)), r.range):
        return None
    assert r.range is not None  # has_window
    if records:
        starts = np.array([rec["start_ns"] for rec in records], dtype=np.int64)
        ends = np.array([rec["end_ns"] for rec in records], dtype=np.int64)
    else:
        starts, ends = np.array([r.range[0]], np.int64), np.array([r.range[1]], np.int64)
    lo, hi = int(starts[0]), int(ends[-1])
    bound = hi if records else hi + 1  # exclusive: the whole run's last event starts at its end at the latest
    every = _sorted_starts(run)
    cut_hi, kept = bound, records
    counts = _count_before(every, lo, ends if records else np.array([bound]))
    if counts[-1] > max_nodes:
        if records:  # whole steps: those that fit (at least one)
            k = max(int(np.searchsorted(counts, max_nodes, side="right")), 1)
            cut_hi, kept = int(ends[k - 1]), records[:k]
        else:
            cut_hi = _cut(every, lo, bound, max_nodes)
    whole = all(len(s) == 0 or (lo <= s[0] and cut_hi > s[-1]) for s in every)
    sliced = run if whole else _slice(run, lo, cut_hi)
    index = r.index if sliced is run else None
    try:
        graph = dg.build_graph(sliced, index)
    except ValueError:  # hostile times: no critical path for this process
        return None
    rows = None if sliced is run else np.flatnonzero((run.kernels["start"].to_numpy() >= lo) & (run.kernels["start"].to_numpy() < cut_hi))
    return ProcessWindow(
        r.label, sliced, graph, lo, min(cut_hi, hi), hi - lo, kept, len(records), rows, len(run.kernels), None if sliced is run else run, categories
    )


def collective_waits(windows: dict[int, ProcessWindow], rules: CategoryRules, table: WaitTable | None = None) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per process window: for each kernel row of its run, the time its collective instance
    waited for the last rank to arrive and that rank's number (0 and -1 for other kernels).
    Instances are whole-process (analysis.ranks.InstanceTable: the k-th collective of a type
    in each process; the last to arrive spends the least time in it, so host clocks need not
    agree); ``table`` is their :data:`~tui_prof.analysis.ranks.WaitTable` (None: made from the
    windows' runs, each standing for its whole process). A window is a time slice of its
    process, so its collectives of a type are the process's from the count before it on.
    A row waits dur - fastest where its instance names a rank and it spent longer."""
    from tui_prof.analysis.ranks import collective_rows, run_instance_table

    if table is None:
        if len(windows) < 2:
            return {}
        table = run_instance_table([windows[p].run for p in windows], rules)
    if not table:
        return {}
    out = {}
    for p, w in windows.items():
        k = w.run.kernels
        wait, last = np.zeros(len(k), np.int64), np.full(len(k), -1, np.int64)
        cats = w.categories if w.categories is None or w.kernel_rows is None or len(w.categories) != w.process_kernels else w.categories[w.kernel_rows]
        rows, kinds = collective_rows(k, rules, cats)
        before = _collectives_before(w, rules) if len(rows) else {}
        if len(rows):
            dur = column_array(k, "end").astype(np.int64)[rows] - column_array(k, "start").astype(np.int64)[rows]
            for kind in sorted(set(kinds.tolist()) & set(table)):
                fastest, named = table[kind]
                mine = np.flatnonzero(kinds == kind)
                index = before.get(kind, 0) + np.arange(len(mine))  # the k of each in the whole process
                inside = index < len(fastest)
                mine, index = mine[inside], index[inside]
                hit = (named[index] >= 0) & (dur[mine] > fastest[index])
                wait[rows[mine[hit]]] = dur[mine[hit]] - fastest[index[hit]]
                last[rows[mine[hit]]] = named[index[hit]]
        out[p] = (wait, last)
    return out


def _collectives_before(w: ProcessWindow, rules: CategoryRules) -> dict[str, int]:
    """Per collective type: the whole process's collectives that start before the window."""
    from tui_prof.analysis.ranks import collective_rows

    if w.process is None:
        return {}
    k = w.process.kernels
    rows, kinds = collective_rows(k, rules, w.categories)
    early = column_array(k, "start")[rows] < w.lo
    found = sorted(set(kinds[early].tolist()))
    return {str(t): int(np.count_nonzero(kinds[early] == t)) for t in found}


def waiting_on_ranks(path: PathSummary, waits: tuple[np.ndarray, np.ndarray] | None) -> list[dict]:
    """The critical path's time inside collectives spent waiting for another rank, per rank
    waited for (an interval's waiting part: at most its instance's wait), largest first."""
    if waits is None or not len(path.kernel_row):
        return []
    on = path.kernel_row >= 0
    rows = path.kernel_row[on]
    wait, last = waits[0][rows], waits[1][rows]
    part = np.minimum(path.length[on], wait)
    hit = (last >= 0) & (part > 0)
    ranks = sorted(set(last[hit].tolist()))
    found = [{"rank": int(r), "ns": int(part[hit][last[hit] == r].sum()), "instances": int(np.count_nonzero(last[hit] == r))} for r in ranks]
    return sorted(found, key=lambda x: -x["ns"])


def kernel_row_ns(w: ProcessWindow, path: PathSummary) -> np.ndarray:
    """ns on ``path`` of each kernel row of the whole process (its own time on the path; a
    sampled window's scaled to the whole window, as ``by_kernel``; 0 outside the window)."""
    on = path.kernel_row >= 0
    local = np.bincount(path.kernel_row[on], weights=path.length[on].astype(np.float64), minlength=len(w.run.kernels))[: len(w.run.kernels)] * w.scale
    out = np.zeros(max(w.process_kernels, len(local)), dtype=np.float64)
    out[w.kernel_rows if w.kernel_rows is not None else np.arange(len(local))] = local
    return out


def critical_section(
    windows: dict[int, ProcessWindow], rules: CategoryRules, wait_table: WaitTable | None = None
) -> tuple[dict, dict[str, int], dict[int, np.ndarray]]:
    """(the ``critical_path`` section, ns on the path per kernel / copy name over all processes,
    ns on the path of each kernel row per process position; both scaled to each process's
    whole window); ``wait_table``: the run's collective instances (:func:`collective_waits`)."""
    per: list[dict] = []
    by_kernel: dict[str, int] = {}
    by_row: dict[int, np.ndarray] = {}
    waits = collective_waits(windows, rules, wait_table)
    for pos, w in windows.items():
        record, mine, by_row[pos] = process_path(w, rules, waits.get(pos), bool(waits))
        for name, ns in mine.items():
            by_kernel[name] = by_kernel.get(name, 0) + ns
        per.append(record)
    return {"processes": per}, by_kernel, by_row


def process_path(
    w: ProcessWindow, rules: CategoryRules, waits: tuple[np.ndarray, np.ndarray] | None, with_waits: bool
) -> tuple[dict, dict[str, int], np.ndarray]:
    """One process's record of the ``critical_path`` section, its ns on the path per kernel /
    copy name (rounded, scaled to the whole window) and per kernel row of the process
    (:func:`kernel_row_ns`); ``with_waits``: the run's collectives were compared (several
    processes), so the record says whom it waited for (``waits``: its rows' waits)."""
    g = w.graph
    lo, hi = w.lo - g.t0, w.hi - g.t0
    path = critical_path(w.run, g, g.start, g.end, lo, hi, rules=rules)
    by_kernel = {name: int(round(ns * w.scale)) for name, ns in path.by_kernel.items()}
    record = {
        "process": w.label,
        "window": "steady state" if w.steady_steps else "whole run",
        "window_ns": w.window_ns,
        "sampled_ns": w.hi - w.lo,
        **path_json(path),
        "links": g.links,
        "kernel_ns_by_category": kernel_ns_by_category(w.run, rules),
    }
    if with_waits:
        record["waiting_on_ranks"] = waiting_on_ranks(path, waits)
    if w.steps:
        starts = np.array([rec["start_ns"] for rec in w.steps], dtype=np.int64) - g.t0
        ends = np.array([rec["end_ns"] for rec in w.steps], dtype=np.int64) - g.t0
        table = path.per_window(starts, ends)
        record["steps"] = [
            {
                "label": rec["label"],
                "wall_ns": int(rec["wall_ns"]),
                "path_ns": int(row.sum()),
                "top_group": GROUPS[int(np.argmax(row))] if row.sum() else None,
            }
            | {grp: int(v) for grp, v in zip(GROUPS, row.tolist(), strict=True) if v}
            for rec, row in zip(w.steps[:MAX_STEP_ROWS], table[:MAX_STEP_ROWS], strict=False)
        ]
    return record, by_kernel, kernel_row_ns(w, path)


def kernel_ns_by_category(run: Run, rules: CategoryRules) -> dict[str, int]:
    """Kernel time by category of the window's kernels (launched inside it)."""
    k = run.kernels
    if k.empty:
        return {}
    column = category_array(k, "name")  # the Categorical: no Series per ``.cat`` access
    names = column.categories
    cats = sorted({rules.classify(str(n)) for n in names} | {"other"})
    of = np.array([cats.index(rules.classify(str(n))) for n in names] + [cats.index("other")], dtype=np.int64)
    codes = column.codes.astype(np.int64)
    _, sums = code_totals(of[np.where(codes >= 0, codes, len(names))], column_array(k, "end") - column_array(k, "start"), len(cats))
    return {cats[i]: int(sums[i]) for i in np.flatnonzero(sums).tolist()}


def add_critical_ns(rows: list, by_kernel: dict[str, int]) -> None:
    """Each hotspot row gets ``critical_ns``: its kernel's time on the critical path, at most
    its own time (a sampled path's figure is scaled to the whole window: an estimate)."""
    for row in rows:
        row["critical_ns"] = min(int(by_kernel.get(row["name"], 0)), int(row["total_ns"]))


def _codes_labels(key: pd.Series | np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Each row's group code (-1: none) and each code's label (as text) of a grouping key: the
    codes of a Categorical, the distinct values of integers, else by hashing (no string per
    row where the key has codes)."""
    column = key if isinstance(key, pd.Series) else pd.Series(key)
    if isinstance(column.dtype, pd.CategoricalDtype):
        return column.cat.codes.to_numpy().astype(np.int64), [str(c) for c in column.cat.categories]
    if column.dtype.kind in "iu":
        uniq, codes = np.unique(column.to_numpy(), return_inverse=True)
        return codes.astype(np.int64).reshape(-1), [str(u) for u in uniq.tolist()]
    codes, uniq = pd.factorize(column, use_na_sentinel=True)
    return codes.astype(np.int64), [str(u) for u in uniq]


def _labelled(labels: list[str], sums: np.ndarray) -> dict[str, float]:
    out: dict[str, float] = {}
    for label, v in zip(labels, sums.tolist(), strict=True):
        out[label] = out.get(label, 0.0) + v
    return out


def sums_by_key(key: pd.Series | np.ndarray, values: np.ndarray) -> dict[str, float]:
    """``values`` summed per distinct ``key`` (as text)."""
    codes, labels = _codes_labels(key)
    ok = codes >= 0
    return _labelled(labels, np.bincount(codes[ok], weights=values[ok], minlength=len(labels)))


def sums_by_process(key: pd.Series | np.ndarray, values: np.ndarray, sizes: Sequence[int]) -> dict[str, float] | None:
    """``values`` summed per distinct ``key`` within each process (``sizes``: its kernel rows,
    the processes in run order), then over the processes in run order: :func:`group_sums` of
    each process's :func:`sums_by_key`, one pass over the codes); None where ``key`` is not one per row."""
    if len(key) != len(values):
        return None
    codes, labels = _codes_labels(key)
    total = np.zeros(len(labels), dtype=np.float64)
    at = 0
    for n in sizes:
        c, v = codes[at : at + n], values[at : at + n]
        ok = c >= 0
        total = total + np.bincount(c[ok], weights=v[ok], minlength=len(labels))
        at += n
    return _labelled(labels, total)


def add_group_critical(rows: list, sums: dict[str, float] | None) -> None:
    """Each row of a grouped hotspot table (``name``: the group) gets ``critical_ns``: the
    time on the critical path of the kernels of its group (``sums``: :func:`group_sums`),
    at most the group's own total (None: no column)."""
    if not rows or sums is None:
        return
    for row in rows:
        row["critical_ns"] = min(int(round(sums.get(str(row["name"]), 0.0))), int(row["total_ns"]))


def group_sums(parts: Sequence[dict[str, float]]) -> dict[str, float]:
    """Each group's ns on the path over the processes: each process's own sums
    (:func:`sums_by_key` of its kernel rows) added in run order, so that a sum made from
    per-rank parts is the same float."""
    out: dict[str, float] = {}
    for part in parts:
        for label, v in part.items():
            out[label] = out[label] + v if label in out else v
    return out


def operator_groups(kernels: int, link: pd.DataFrame | None) -> pd.Series:
    """The operator table's group of each of a process's ``kernels`` rows (``link``: its
    :func:`~tui_prof.analysis.operators.link_operators`; None: no group, it records no operators)."""
    if link is None:
        return pd.Series(pd.Categorical.from_codes(np.full(kernels, -1), categories=[NOT_LINKED]))
    ops = link["op"].astype("category").reset_index(drop=True)
    cats = list(ops.cat.categories)
    if "" in cats and NOT_LINKED not in cats:  # the operator table's name of kernels no operator launched
        return ops.cat.rename_categories([NOT_LINKED if c == "" else c for c in cats])
    if "" in cats:  # an operator named so as well: the table merges them too
        return pd.Series(pd.Categorical(ops.astype(str).replace("", NOT_LINKED)))
    return ops


CHRONIC_SHARE = 0.5  # [P] a rank on the path in at least half of the steady steps is a chronic straggler


def ranks_on_path(
    inputs: Sequence[RunInput],
    steps: StepsSection,
    rules: CategoryRules,
    table: WaitTable,
    categories: Sequence[np.ndarray | None] | None,
    step_rows: Sequence[Sequence[StepRecord]],
) -> dict | None:
    """For a run of several processes with steps: per steady step, the rank whose work bounds
    the step -- the rank that arrived last at most of the step's collectives (whole-process
    collective instances, analysis.ranks.InstanceTable: the last to arrive spends the least
    time in it, so clocks of different hosts need not agree). Each rank's process is a graph
    of its own (no cross-rank edges): the collectives say which rank the others waited for.
    ``table``: the rank table's :data:`~tui_prof.analysis.ranks.WaitTable` (its ranks: counter
    passes of another process left out); ``categories`` as :func:`process_windows`;
    ``step_rows``: each process's own step rows by its position in ``inputs``
    (analysis.steps.FoundSteps.rows; a combined section lists no process's own rows). Both
    required: a default made here would pair other inputs, or find no rows. None for one
    process or without collectives."""
    from tui_prof.analysis.ranks import collective_rows

    if len(inputs) < 2 or not steps.get("detected"):
        return None
    # the reference: the first rank (a counter pass of another process is none) with steps
    ref = next((i for i, r in enumerate(inputs) if r.label in step_parts(steps) and "counter_pass_of" not in r.run.meta.extra), None)
    if ref is None:
        return None
    k = inputs[ref].run.kernels
    rows, kinds = collective_rows(k, rules, categories[ref] if categories is not None else None)
    starts = column_array(k, "start").astype(np.int64)[rows] if len(rows) else np.zeros(0, np.int64)
    ref_starts = {str(t): starts[kinds == t] for t in sorted(set(kinds.tolist()))}
    return ranks_on_path_of(steps, step_rows[ref], ref_starts, table)


def step_parts(steps: StepsSection) -> dict:
    """The steps part of each process that has steps, by its label."""
    return {p.get("process"): p for p in steps.get("per_process", [])} or {steps.get("process"): steps}


def ranks_on_path_of(steps: StepsSection, ref_steps: Sequence[StepRecord], ref_starts: dict[str, np.ndarray], table: WaitTable) -> dict | None:
    """:func:`ranks_on_path` from the reference process (the first with steps: its own step
    rows ``ref_steps`` and its collectives' starts per type in start order) and the wait
    table: each named instance falls in the reference's step that holds its start there."""
    steady_labels = {rec["label"] for rec in steps.get("steps", []) if not rec.get("warmup")}
    starts = np.array([rec["start_ns"] for rec in ref_steps], dtype=np.int64)
    ends = np.array([rec["end_ns"] for rec in ref_steps], dtype=np.int64)
    last_by_step: dict[int, list[int]] = {}
    for kind in sorted(ref_starts):
        if kind not in table:
            continue
        s_ref = ref_starts[kind][: len(table[kind][1])]
        named = table[kind][1][: len(s_ref)]
        hit = named >= 0  # nobody arrived last where one rank only has it, or all spent the same
        pos = np.searchsorted(starts, s_ref[hit], side="right") - 1
        inside = (pos >= 0) & (s_ref[hit] < ends[np.maximum(pos, 0)]) if len(ends) else np.zeros(len(pos), dtype=bool)
        for p, rank in zip(pos[inside].tolist(), named[hit][inside].tolist(), strict=True):
            last_by_step.setdefault(p, []).append(int(rank))
    rows = []
    for pos_, rec in enumerate(ref_steps):
        if rec["label"] not in steady_labels:
            continue
        lasts = last_by_step.get(pos_, [])
        top = max(set(lasts), key=lambda x: (lasts.count(x), -x)) if lasts else None
        on = top if top is not None and 2 * lasts.count(top) >= len(lasts) else None
        rows.append({"label": rec["label"], "rank": on, "last_in": lasts.count(top) if top is not None else 0, "instances": len(lasts)})
    if not any(r["instances"] for r in rows):
        return None
    counts = [r["rank"] for r in rows if r["rank"] is not None]
    chronic = max(set(counts), key=counts.count) if counts else None
    share = counts.count(chronic) / len(rows) if rows and chronic is not None else 0.0
    return {
        "steps": rows[:MAX_STEP_ROWS],
        "rank": chronic if share >= CHRONIC_SHARE else None,
        "steady_steps_on_path": counts.count(chronic) if chronic is not None else 0,
        "steady_steps": len(rows),
    }
