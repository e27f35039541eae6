"""What the TUI shows of a loaded run set, prepared in two steps.

:func:`build_view` does only what the first screen needs (the kernels table with its
display columns, the lane layout and the name hotspots): a few vectorised passes over
the kernels. The rest is computed on demand, once, by :meth:`RunView.ensure` — the run
screen calls it from its piece worker (in the background after the first screen is up, or when a
tab is first shown) and shows "computing…" meanwhile; plain attribute access (``view.timeline``,
``view.summary``, ...) computes a missing piece synchronously, for scripts and tests.

Lazy pieces (:data:`PIECES`): ``summary`` (analysis.summary.build_summary: measurement,
findings, counters, capabilities, log hits), ``gaps`` (analysis.timeline.gpu_timeline per
run), ``timeline`` (lanes + packed intervals; needs gaps), ``launches``
(analysis.hostapi.link_launches per run).

Every number comes from :mod:`tui_prof.analysis` or straight from the model tables;
this module only arranges them (lane layout, relative times, group columns). No Textual
or Rich import: the panes and screens render what it returns.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.analysis.api import (
    DEFAULT_CATEGORY_RULES,
    MEMORY_FROM_API,
    NOT_LINKED,
    RankAlignment,
    RunInput,
    StepsSection,
    Summary,
    SummaryOptions,
    SummaryResult,
    all_kernels,
    allocated_levels,
    api_classes,
    communication_mask,
    gpu_timeline,
    group_key,
    has_module_scopes,
    has_operators,
    host_markers,
    hotspots,
    inline_lane,
    kernel_categories_of,
    link_launches,
    module_key,
    nesting_depth,
    operator_key,
    operator_links,
    path_segments,
    rank_numbers,
    rank_offsets,
    run_inputs,
    steps_section,
    summarise,
    sync_mask,
)
from tui_prof.loaders import load_path
from tui_prof.model import Run, RunSet
from tui_prof.tui.view.lanes import Lane, PackedLanes, TimelineModel, merge_intervals
from tui_prof.tui.view.stats import StatsFrame, stats_frames

# group-by choices: label -> ``by`` of analysis.hotspots.hotspots / group_key; "operator" and
# "module" (and "category", where operators are recorded) come from analysis.operators
GROUPS = ("name", "normalised name", "category", "operator", "module", "agent", "process")
GROUP_BY = {"name": "name", "normalised name": "normalized", "category": "category", "agent": "agent", "process": "pid"}
OPERATOR_GROUPS = ("category", "operator", "module")
PIECES = ("summary", "gaps", "timeline", "launches")  # computed lazily, in this order in the background
SUMMARY_TOP = 50
OP_LANES = 4  # host-op lanes per thread: depths 0, 1, 2 and 3 and deeper


def split_by(codes: np.ndarray, n: int) -> list[np.ndarray]:
    """Row indices of each code 0..n-1 (ascending rows within a code), one stable sort."""
    if n <= 1:
        return [np.arange(len(codes))] if n == 1 else []
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(1, n))
    return np.split(order, bounds)


def factor(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique values, code of each value): a hash factorisation (no 1M-row sort)."""
    codes, uniques = pd.factorize(values, sort=True)
    return np.asarray(uniques), codes.astype(np.int64)


class _GpuLayout:
    """The GPU lanes of one run: one per (agent, queue), the stream when the queue is unknown."""

    def __init__(self, kernels: pd.DataFrame) -> None:
        agent = kernels["agent"].to_numpy().astype(np.int64)
        queue = kernels["queue"].to_numpy().astype(np.int64)
        queue = np.where(queue >= 0, queue, kernels["stream"].to_numpy().astype(np.int64))
        # one int64 key per (agent, queue): agent in the high bits, queue + 1 in the low 40
        keys, self.codes = factor(agent * (np.int64(1) << 40) + (queue + 1))
        self.agents = keys >> 40
        self.queues = (keys & ((np.int64(1) << 40) - 1)) - 1


def op_lanes(markers: pd.DataFrame, origin: int) -> list[tuple[str, np.ndarray, np.ndarray, tuple]]:
    """(label, start, end relative to ``origin``, key) of the host-op lanes of one run: per
    thread one lane per nesting depth (analysis.hostops.nesting_depth) up to
    :data:`OP_LANES`, deeper ops drawn on the last."""
    markers = host_markers(markers)
    if not len(markers):
        return []
    start = markers["start"].to_numpy().astype(np.int64)
    end = markers["end"].to_numpy().astype(np.int64)
    tid = markers["tid"].to_numpy().astype(np.int64)
    raw = nesting_depth(start, end, tid)
    depth = np.minimum(raw, OP_LANES - 1)
    lanes = []
    tids, codes = factor(tid)
    for t, rows in zip(tids, split_by(codes, len(tids))):
        for d in range(int(depth[rows].max()) + 1):
            mine = rows[depth[rows] == d]
            name = f"{d}+" if d == OP_LANES - 1 and int(raw[rows].max()) > d else str(d)
            label = f"ops T{t} {name}" if t >= 0 else f"ops {name}"
            lanes.append((label, start[mine] - origin, end[mine] - origin, ("ops", int(t), d)))
    return lanes


class RunView:
    """A loaded run set arranged for the TUI; see the module docstring for the lazy pieces."""

    def __init__(self, runset: RunSet, kernels: pd.DataFrame, origin: int, span: int, layout: list[dict]) -> None:
        self.runset = runset
        self.kernels = kernels  # all runs' kernels + display columns t (rel ns), dur, lane, run, row
        self.origin = origin
        self.span = span
        self.layout = layout  # per run: host tids, GPU layout, lane bases (see build_view)
        self._hotspots: dict[str, pd.DataFrame] = {}
        self._groups: dict[str, pd.Series] = {}
        self._done: dict[str, object] = {}
        self._locks = {piece: threading.Lock() for piece in PIECES}
        self._result: SummaryResult | None = None  # the summary with its full gap sets and launch links per run
        self._group_lock = threading.Lock()
        self._links: list[pd.DataFrame | None] | None = None
        self._links_lock = threading.Lock()
        self._inputs: list[RunInput] | None = None
        self._critical: PackedLanes | None = None
        self._critical_lock = threading.Lock()
        self.stats: list[StatsFrame] = []  # the profiler's statistics tables (tui.view.stats)

    # -- lazy pieces ----------------------------------------------------------------------
    def ready(self, piece: str) -> bool:
        """``piece`` is computed (its value is kept: reading it costs nothing)."""
        return piece in self._done

    def ensure(self, piece: str) -> Any:
        """Compute ``piece`` once (thread-safe: a second caller waits for the first) and return it."""
        if piece in self._done:
            return self._done[piece]
        with self._locks[piece]:
            if piece not in self._done:
                self._done[piece] = getattr(self, f"_compute_{piece}")()
        return self._done[piece]

    @property
    def summary(self) -> Summary:
        """The analysis' summary document (findings, measurement, ...; analysis.api.Summary)."""
        return self.ensure("summary")

    @property
    def summary_result(self) -> SummaryResult:
        """The summary with the full gap sets and launch links behind it (what the exports
        need: they reuse the summary on screen)."""
        self.ensure("summary")
        assert self._result is not None  # set with the summary
        return self._result

    @property
    def gaps(self) -> pd.DataFrame | None:
        """analysis gaps of every run (+ run, rel t), sorted by start, or None."""
        return self.ensure("gaps")

    @property
    def timeline(self) -> TimelineModel:
        return self.ensure("timeline")

    @property
    def launches(self) -> pd.DataFrame | None:
        """analysis link_launches per kernel row (index: kernel_row), or None."""
        return self.ensure("launches")

    # -- hotspots / groups ------------------------------------------------------------------
    def group_column(self, group: str) -> pd.Series:
        """analysis.hotspots.group_key of the kernels for ``group``, computed once
        (category, operator, module: :meth:`operator_group` where operators are recorded)."""
        if group not in self._groups:
            with self._group_lock:
                if group not in self._groups:
                    key = self.operator_group(group) if group in OPERATOR_GROUPS else None
                    self._groups[group] = key if key is not None else group_key(self.kernels, GROUP_BY[group]).reset_index(drop=True)
        return self._groups[group]

    @property
    def groups(self) -> tuple[str, ...]:
        """The groupings this run set has: "operator" where a run records framework
        operators (Kineto cpu_op), "module" where one records nn.Module scopes."""
        if not hasattr(self, "_available"):
            runs = self.runset.runs
            has_ops = any(has_operators(run) for run in runs)
            has_modules = has_ops and any(has_module_scopes(run.markers) for run in runs)
            self._available = tuple(g for g in GROUPS if (g != "operator" or has_ops) and (g != "module" or has_modules))
        return self._available

    def operator_links(self) -> list[pd.DataFrame | None]:
        """analysis' operator links of each run (None where it records no operators), computed once."""
        with self._links_lock:
            if self._links is None:
                self._links = operator_links(self.inputs)
        return self._links

    @property
    def inputs(self) -> list[RunInput]:
        """The analysis' inputs of each run (label, time range, correlation index), built once."""
        if self._inputs is None:
            self._inputs = run_inputs(self.runset)
        return self._inputs

    def operator_group(self, group: str) -> pd.Series | None:
        """Per kernel row: its category (operator first, analysis.operators), launching
        operator or module path; None when no run records operators."""
        links = self.operator_links()
        if all(link is None for link in links):
            return None
        if group == "category":
            key = kernel_categories_of(self.inputs, links, DEFAULT_CATEGORY_RULES)
            return None if key is None else key.reset_index(drop=True)
        parts = []
        for run, link in zip(self.runset.runs, links):
            if link is None:
                parts.append(pd.Series(np.full(len(run.kernels), NOT_LINKED, dtype=object)))
            else:
                parts.append((operator_key(link) if group == "operator" else module_key(link, run.markers)).astype(str))
        return pd.Series(pd.concat(parts, ignore_index=True), dtype="category")

    def has_hotspots(self, group: str) -> bool:
        """The hotspot table of ``group`` is computed (showing it costs no analysis)."""
        return group in self._hotspots

    def hotspots(self, group: str = "name") -> pd.DataFrame:
        """Hotspot table of analysis.hotspots.hotspots(kernels, by=GROUP_BY[group])."""
        if group not in self._hotspots:
            if group in OPERATOR_GROUPS:
                self._hotspots[group] = hotspots(self.kernels, by=GROUP_BY.get(group, "name"), key=self.group_column(group))
            else:
                self._hotspots[group] = hotspots(self.kernels, by=GROUP_BY[group])
        return self._hotspots[group]

    def dispatches(self, group: str, value: str) -> pd.DataFrame:
        """Kernel rows whose ``group`` key equals ``value`` (a display-ready frame)."""
        key = self.group_column(group)
        if isinstance(key.dtype, pd.CategoricalDtype):
            cats = key.cat.categories
            where = np.flatnonzero(cats.astype(str) == str(value))
            mask = np.isin(key.cat.codes.to_numpy(), where) if len(where) else np.zeros(len(key), bool)
        elif key.dtype.kind in "iu":
            try:
                mask = key.to_numpy() == int(value)
            except ValueError:
                mask = np.zeros(len(key), bool)
        else:
            mask = key.astype(str).to_numpy() == str(value)
        return self.kernels[mask]

    def critical_ns(self) -> dict[str, int] | None:
        """ns on the critical path of each kernel / copy name (the summary's steady-state
        window, analysis.critical), or None while the summary is not computed."""
        return self._result.critical_ns if self.ready("summary") and self._result is not None else None

    def critical_rows(self) -> np.ndarray | None:
        """ns on the critical path of each kernel row (:attr:`kernels`' ``row``), or None while
        the summary is not computed or found no path."""
        return self._result.critical_rows if self.ready("summary") and self._result is not None else None

    def critical_marks(self) -> PackedLanes:
        """The critical path of each process's whole recorded run (analysis.whatif.path_segments)
        on the timeline's lanes (every lane; not the rank lanes), computed once: host-thread
        segments on the thread's API lane, GPU operations and the launch or queue wait before
        them on their (GPU, queue) lane, copies on the copies lane. Each process's path is
        its own: no edge crosses processes."""
        with self._critical_lock:
            if self._critical is None:
                model = self.timeline
                index = {lane.key: i for i, lane in enumerate(model.lanes)}
                parts: list[list[tuple[np.ndarray, np.ndarray]]] = [[] for _ in model.lanes]
                for ri, run in enumerate(self.runset.runs):
                    if len(run.kernels) or len(run.copies):
                        self._critical_of_run(ri, path_segments(run), index, parts)
                intervals = [(np.concatenate([s for s, _ in p]), np.concatenate([e for _, e in p])) if p else (np.zeros(0, np.int64),) * 2 for p in parts]
                self._critical = PackedLanes(intervals, model.span)
        return self._critical

    def _critical_of_run(self, ri: int, seg: pd.DataFrame, index: dict, parts: list) -> None:
        """Add run ``ri``'s critical-path segments to ``parts`` (per lane), relative to the origin."""
        if not len(seg):
            return
        queue = seg["queue"].to_numpy()
        lane_queue = np.where(queue >= 0, queue, seg["stream"].to_numpy())
        where = seg["where"].tolist()
        tids, agents, lq = seg["tid"].tolist(), seg["agent"].tolist(), lane_queue.tolist()
        lane = np.array(
            [
                index.get((ri, "host", t) if w == "host" else (ri, "copy") if w == "copy" else (ri, a, q), -1)
                for w, t, a, q in zip(where, tids, agents, lq, strict=True)
            ],
            dtype=np.int64,
        )
        start = seg["start"].to_numpy().astype(np.int64) - self.origin
        end = seg["end"].to_numpy().astype(np.int64) - self.origin
        for li in np.unique(lane[lane >= 0]).tolist():
            mine = lane == li
            parts[li].append((start[mine], end[mine]))

    def run_of(self, row: pd.Series) -> Run:
        return self.runset.runs[int(row["run"])]

    # -- computations (thread workers) -----------------------------------------------------
    def _compute_summary(self) -> Summary:
        # the full gap sets and launch links the summary computed are kept, so the gaps and
        # launches pieces reuse them instead of running the analysis again; inline_lane: in
        # this worker alone, no busy thread more beside the event loop
        self._result = summarise(self.runset, SummaryOptions(top=SUMMARY_TOP), lane=inline_lane)
        return self._result.summary

    def steps_for(self, step_name: str | None) -> StepsSection:
        """The summary's ``steps`` section with the steps taken from the host ranges named
        ``step_name`` (``--step``); the outliers use the summary's gap sets when computed."""
        return steps_section(self.inputs, self._result.gaps if self._result is not None else {}, step_name=step_name)

    def _summary_result(self) -> SummaryResult | None:
        """The summary's result when it is already computed (the background order computes
        it first), else None: then the piece computes its own rather than wait for the
        whole summary (the diff screen never needs one)."""
        return self._result if self.ready("summary") else None

    def _compute_gaps(self) -> pd.DataFrame | None:
        result = self._summary_result()
        gap_sets = result.gaps if result is not None else None
        parts = []
        for ri, run in enumerate(self.runset.runs):
            if gap_sets is not None:
                gaps = gap_sets[ri].frame() if ri in gap_sets else None
            elif len(run.kernels) or len(run.copies):
                _, gaps = gpu_timeline(run)
            else:
                gaps = None
            if gaps is not None and len(gaps):
                parts.append(gaps.assign(run=ri))
        if not parts:
            return pd.DataFrame({"agent": [], "start": [], "end": [], "duration_ns": [], "run": [], "t": []}, dtype=np.int64)
        gaps = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
        if not gaps["start"].is_monotonic_increasing:
            gaps = gaps.sort_values("start", kind="stable").reset_index(drop=True)
        gaps["t"] = gaps["start"].to_numpy() - self.origin
        return gaps

    def _compute_timeline(self) -> TimelineModel:
        """Lanes (host threads, GPU queues, copies per run) with their intervals, sync calls
        (analysis.hostapi.api_classes) and idle gaps (analysis.timeline, per agent)."""
        gaps = self.gaps
        lanes: list[Lane] = []
        origin = self.origin
        gpu_lanes: dict[tuple[int, int], list[int]] = {}
        for ri, (run, lay) in enumerate(zip(self.runset.runs, self.layout)):
            prefix = lay["prefix"]
            api = run.api
            if len(api):
                s_all = api["start"].to_numpy() - origin
                e_all = api["end"].to_numpy() - origin
                classes = api_classes(api)
                sync = sync_mask(classes)
                tids = lay["tids"]
                for t, rows in zip(tids, split_by(lay["tid_codes"], len(tids))):
                    label = f"{prefix}host T{t}" if t >= 0 else f"{prefix}host"
                    lane = Lane(label, "host", s_all[rows], e_all[rows], key=(ri, "host", int(t)))
                    srows = rows[sync[rows]]
                    lane.sync_start, lane.sync_end = s_all[srows], e_all[srows]
                    lanes.append(lane)
            for label, start, end, key in lay["ops"]:
                lanes.append(Lane(f"{prefix}{label}", "ops", start, end, key=(ri, *key)))
            gpu = lay["gpu"]
            if gpu is not None:
                k = run.kernels
                ks = k["start"].to_numpy() - origin
                ke = k["end"].to_numpy() - origin
                for code, rows in enumerate(split_by(gpu.codes, len(gpu.agents))):
                    a, q = int(gpu.agents[code]), int(gpu.queues[code])
                    same = gpu.agents == a
                    label = f"{prefix}GPU{a}" + (f" q{int(np.sum(same[:code]))}" if same.sum() > 1 else "")
                    gpu_lanes.setdefault((ri, a), []).append(len(lanes))
                    lanes.append(Lane(label, "gpu", ks[rows], ke[rows], key=(ri, a, q)))
            c = run.copies
            if len(c):
                lanes.append(Lane(f"{prefix}copies", "copy", c["start"].to_numpy() - origin, c["end"].to_numpy() - origin, key=(ri, "copy")))
            source, memory = allocated_levels(run)
            for a, (mt, mv) in sorted(memory.items()):
                agent = run.agent(a)
                if not len(mt) or (a < 0 and source != MEMORY_FROM_API) or (agent is not None and agent.type != "GPU"):
                    continue  # host allocations (rocprofv3 records them too) are not a GPU row
                rel = mt - origin
                # device allocation calls (hipMalloc/cudaMalloc) whose frees match name no device: agent -1
                lane = Lane(f"{prefix}GPU{a if a >= 0 else ''} memory", "memory", rel[:1], rel[-1:], key=(ri, "memory", a))
                lane.level_t, lane.level_v = rel, mv
                lanes.append(lane)
        gap_array = gap_lanes = None
        if gaps is not None:
            gs = gaps["start"].to_numpy().astype(np.int64) - origin
            ge = gaps["end"].to_numpy().astype(np.int64) - origin
            gap_array = np.stack([gs, ge], axis=1) if len(gaps) else np.zeros((0, 2), np.int64)
            gap_lanes = np.full(len(gaps), -1, dtype=np.int64)
            if len(gaps):
                g_run = gaps["run"].to_numpy().astype(np.int64)
                g_agent = gaps["agent"].to_numpy().astype(np.int64)
                for (ri, a), members in gpu_lanes.items():
                    m = (g_run == ri) & (g_agent == a)
                    gap_lanes[m] = members[0]  # the gap's lane: the first lane of its agent
                    for i in members:  # drawn as idle on every lane of the agent (kernels or not)
                        lanes[i].idle_start, lanes[i].idle_end = gs[m], ge[m]
        model = TimelineModel(lanes, origin=origin, span=self.span, gaps=gap_array, gap_lanes=gap_lanes)
        # rank lanes draw GPU activity: a multi-process run with none (host calls only) keeps every lane
        if len(self.runset.runs) > 1 and any(len(run.kernels) or len(run.copies) for run in self.runset.runs):
            model.ranks = self._rank_timeline(gaps)
            model.header = f"{len(self.runset.runs)} processes, every lane · r: one lane per rank"
        return model

    def _rank_timeline(self, gaps: pd.DataFrame | None) -> TimelineModel:
        """One lane per process (rank), in rank order (analysis.ranks.rank_numbers): the busy
        union of its kernels and copies on all its GPUs, its communication kernels
        (analysis.ranks.communication_mask) and its agents' idle gaps, on one time axis
        (analysis.ranks.rank_offsets: the shared clock, or each rank shifted so that its first
        collective starts with the reference rank's)."""
        runs = self.runset.runs
        masks = [communication_mask(run.kernels, DEFAULT_CATEGORY_RULES) for run in runs]  # once per run: offsets and lanes
        align = rank_offsets(runs, DEFAULT_CATEGORY_RULES, masks)
        numbers = rank_numbers(runs)
        offsets = np.array(align.offsets, dtype=np.int64)
        if align.shared_clock:  # the full lanes' axis: kernel, gap and step times stay as they are
            origin, span = self.origin, self.span
        else:
            lo = [int(t["start"].min()) + int(offsets[ri]) for ri, r in enumerate(runs) for t in (r.kernels, r.api, r.copies) if len(t)]
            hi = [int(t["end"].max()) + int(offsets[ri]) for ri, r in enumerate(runs) for t in (r.kernels, r.api, r.copies) if len(t)]
            origin = min(lo) if lo else 0
            span = max((max(hi) - origin) if hi else 1, 1)
        run_shift = offsets + np.int64(self.origin - origin)
        order = sorted(range(len(runs)), key=lambda i: (numbers[i][0], i))
        run_lane = np.empty(len(runs), dtype=np.int64)
        run_lane[order] = np.arange(len(runs), dtype=np.int64)
        lanes: list[Lane] = []
        for ri in order:
            run = runs[ri]
            k, c = run.kernels, run.copies
            shift = np.int64(int(offsets[ri]) - origin)
            ks, ke = k["start"].to_numpy().astype(np.int64) + shift, k["end"].to_numpy().astype(np.int64) + shift
            cs, ce = c["start"].to_numpy().astype(np.int64) + shift, c["end"].to_numpy().astype(np.int64) + shift
            busy_s, busy_e = merge_intervals(np.concatenate([ks, cs]), np.concatenate([ke, ce]))
            host = f" {run.meta.hostname}" if align.hosts > 1 and run.meta.hostname else ""
            lane = Lane(f"rank {numbers[ri][0]}{host}", "rank", busy_s, busy_e, key=(ri, "rank"))
            comm = masks[ri]
            lane.comm_start, lane.comm_end = merge_intervals(ks[comm], ke[comm])
            lanes.append(lane)
        gap_array = gap_lanes = gap_rows = None
        if gaps is not None:
            g_run = gaps["run"].to_numpy().astype(np.int64)
            gs = gaps["start"].to_numpy().astype(np.int64) - self.origin + run_shift[g_run]
            ge = gaps["end"].to_numpy().astype(np.int64) - self.origin + run_shift[g_run]
            gap_rows = np.argsort(gs, kind="stable")  # shifted ranks: start order again, for n / N
            gap_array = np.stack([gs[gap_rows], ge[gap_rows]], axis=1) if len(gaps) else np.zeros((0, 2), np.int64)
            gap_lanes = run_lane[g_run][gap_rows]
            for ri in range(len(runs)):
                m = g_run == ri
                lanes[int(run_lane[ri])].idle_start, lanes[int(run_lane[ri])].idle_end = gs[m], ge[m]
        model = TimelineModel(lanes, origin=origin, span=span, gaps=gap_array, gap_lanes=gap_lanes, gap_rows=gap_rows, run_lane=run_lane, run_shift=run_shift)
        model.header = rank_header(align, runs) + " · r: every lane"
        return model

    def _compute_launches(self) -> pd.DataFrame | None:
        result = self._summary_result()
        links = result.links if result is not None else None
        parts = []
        row_base = 0
        for ri, run in enumerate(self.runset.runs):
            if len(run.kernels) and len(run.api):
                linked = links[ri] if links is not None else link_launches(run.kernels, run.api)
                parts.append(linked.assign(kernel_row=linked["kernel_row"].to_numpy() + row_base))
            row_base += len(run.kernels)
        if not parts:
            return None
        return pd.concat(parts, ignore_index=True).set_index("kernel_row")


def rank_header(align: RankAlignment, runs: list[Run]) -> str:
    """What the rank lanes' time axis is: one clock (and whose), or aligned at the first collective."""
    n = len(runs)
    if align.shared_clock:
        host = runs[0].meta.hostname if runs else ""
        return f"{n} ranks on one clock ({f'host {host}' if host else 'no host recorded: one clock assumed'})"
    if align.reference is None:
        return f"{n} ranks on {align.hosts} unrelated clocks, none with a collective: unshifted"
    text = f"{n} ranks aligned at their first collective: {align.hosts} hosts"
    if align.unaligned:
        text += f", {align.unaligned} without a collective unshifted"
    return text


class NothingToShow(Exception):
    """A source that gives nothing to show; the message is what the app displays."""


def load_failure(err: Exception, what: str) -> str:
    """What an app shows when loading ``what`` raised ``err``: a :class:`NothingToShow`'s own
    message, else the exception's type and message (never a traceback)."""
    if isinstance(err, NothingToShow):
        return str(err)
    return f"Could not load {what}: {type(err).__name__}: {err}"


def load_runset(source, name: str | None = None, *, use_cache: bool = True, progress=None, on_unit=None, pending=None, on_scan=None) -> RunSet:
    """``source`` as a run set (a RunSet is returned as is; a path is read by
    :func:`tui_prof.loaders.load_path`, ``on_scan`` handed the processes its scan found
    before any unit loads, ``on_unit`` each work unit's runs as it loads, the cache entries
    kept in ``pending`` when given); :class:`NothingToShow` when it
    is missing or nothing in it could be loaded (``name``: how the message names it,
    default the path)."""
    if isinstance(source, RunSet):
        runset = source
    else:
        if not Path(source).exists():
            raise NothingToShow(f"{source}: no such file or directory")
        runset = load_path(source, use_cache=use_cache, progress=progress, on_unit=on_unit, pending=pending, on_scan=on_scan)
    if not runset.runs:
        lines = [f"Nothing could be loaded from {name or source}."] + [f"  {issue}" for issue in runset.issues[:20]]
        raise NothingToShow("\n".join(lines))
    return runset


def build_view(runset: RunSet, progress=None, *, lazy: bool = False) -> RunView:
    """Arrange a loaded run set for the TUI: kernels + display columns, lane layout, the
    name hotspots. With ``lazy`` the other pieces are left for :meth:`RunView.ensure`;
    without, everything is computed here (scripts, tests)."""
    runs = runset.runs
    lo = [int(t["start"].min()) for r in runs for t in (r.kernels, r.api, r.copies) if len(t)]
    hi = [int(t["end"].max()) for r in runs for t in (r.kernels, r.api, r.copies) if len(t)]
    origin = min(lo) if lo else 0
    span = max((max(hi) - origin) if hi else 1, 1)
    multi = len(runs) > 1

    # lane layout per run: host threads first, then (agent, queue) GPU lanes, then copies
    layout = []
    lane_parts = []
    base = 0
    for ri, run in enumerate(runs):
        lay: dict[str, Any] = {"prefix": f"{run.meta.pid or ri}:" if multi else "", "tids": np.zeros(0, np.int64), "gpu": None}
        if len(run.api):
            lay["tids"], lay["tid_codes"] = factor(run.api["tid"].to_numpy().astype(np.int64))
        base += len(lay["tids"])
        lay["ops"] = op_lanes(run.markers, origin)
        base += len(lay["ops"])
        if len(run.kernels):
            gpu = lay["gpu"] = _GpuLayout(run.kernels)
            lane_parts.append(gpu.codes + base)
            base += len(gpu.agents)
        if len(run.copies):
            base += 1
        layout.append(lay)
        if progress:
            progress("preparing", ri + 1, len(runs))

    kernels = all_kernels(runset)
    start = kernels["start"].to_numpy()
    extra = pd.DataFrame(
        {
            "t": start - origin,
            "dur": kernels["end"].to_numpy() - start,
            "lane": np.concatenate(lane_parts) if lane_parts else np.zeros(0, np.int64),
            "run": np.repeat(np.arange(len(runs), dtype=np.int64), [len(r.kernels) for r in runs]),
            "row": np.arange(len(kernels), dtype=np.int64),
        },
        # the arrays were made for this frame: kept as they are, not stacked into one new
        # 2D block (40 MB at 1M dispatches, 0.15 s of page faults right after a CSV parse)
        copy=False,
    )
    # a new frame; copy-on-write (pandas 3) shares the model's columns instead of copying them
    kernels = pd.concat([kernels.reset_index(drop=True), extra], axis=1)
    view = RunView(runset, kernels, origin, span, layout)
    view.hotspots("name")
    _ = view.groups  # which groupings exist (a scan of the markers): here in the load worker, not on a key press
    view.stats = stats_frames(runset)
    if not lazy:
        for i, piece in enumerate(PIECES):
            if progress:
                progress("analysing", i, len(PIECES))
            view.ensure(piece)
    return view
