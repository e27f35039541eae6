"""Integrity checks: can the figures of a run be believed? (issue 32, docs/reliability.md)

A registry of small check functions, like :mod:`tui_prof.analysis.findings`: each takes the
run set and returns :class:`Issue` records, each with a code, a severity and what it affects
(the summary sections whose figures it bends, the processes, rows, files and time range).

Severities: ``info`` (something was noticed or corrected; no figure is worse for it),
``degraded`` (some figures of the named sections are off by a bounded amount) and
``unreliable`` (the named sections' figures should not be trusted). A section's trust label
is the worst severity among the issues that name it (``ok`` when none does).

======================  ==============================================================  ==========
code                    trigger                                                         severity
======================  ==============================================================  ==========
clock-domains           the run set's events fall in time clusters more than 1 h apart  unreliable
                        (files of separate recordings, or clocks that cannot be aligned)
queue-overlap           kernels overlapping their predecessor on one in-order stream     degraded
                        by > 1 µs (CUDA programmatic dependent launch, cudaLaunchKernelExC,
                        under 50% of the kernel, and AMD tails under 25% apart)
duration-overflow       a kernel or copy longer than 1 h (an overflowed duration)        unreliable
negative-duration       a kernel, copy or API row whose end lies before its start        degraded
kernel-before-launch    kernels starting > 1 ms before the call that launched them       degraded
timestamps-out-of-order a kernel starting > 1 µs before a kernel launched before it on     degraded
                        its stream, or a call before an earlier call of its thread (by
                        correlation id)
buffer-full             the last >= 10 (and >= 1%) launch calls have no kernel: the      degraded
                        kernel records stop while the calls go on
unlinked-launches       > 5% of launch calls have no kernel (dropped GPU records)        degraded
unlinked-kernels        > 5% of the kernels launched after the first traced call (by       degraded
                        correlation id) have no API call (dropped API records)
counter-duplicated      one dispatch's counter recorded more than once in one process    unreliable
                        (counter passes of other processes with the same dispatch ids)
counter-impossible      a negative or infinite counter value                             unreliable
counter-above-peak      SQ_WAVES above the waves the dispatch's grid launches, GRBM      unreliable
                        cycles above what the clock allows over the kernel's duration
counter-multimodal      SQ_WAVES takes several values, SQ_INSTS_*/SPI_CSN_* readings fall unreliable
                        in modes 2x apart, for one kernel with one grid and workgroup
                        (across every process and pass of the run set)
counter-known-defective a counter the counter dictionary lists as wrong or reading zeros  unreliable
                        on this GPU, within the ROCm versions its source names
records-stop            one kind of record stops >= 20% of the span before the others,   degraded
                        which go on (a full buffer for that kind)
bandwidth-above-peak    a copy or a dispatch's FETCH_SIZE+WRITE_SIZE moving bytes faster  unreliable
                        than the GPU's documented memory peak; a copy faster than the
                        link it crosses (PCIe host link, NVLink / Infinity Fabric peers)
graph-without-kernels   > 5% of graph launches have no kernel rows                       degraded
counter-all-zero        a counter no running dispatch can read as 0 (SQ_WAVES, GRBM_*)   unreliable
                        reads 0 on every one of >= 2 dispatches
non-kernel-packets      profiler rows for AQL packets that are not kernels (rocprof's    info
                        ``<barrier packet>``): kept out of the kernel tables
packet-in-kernels       such rows still inside a kernel table                            unreliable
file-unreadable         a file could not be loaded, or only in part (truncated)          degraded
separate-recordings     the run set holds several recordings (processes or profiler      info
                        sessions that did not run together)
======================  ==============================================================  ==========
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.analysis import counterdict
from tui_prof.analysis.counters import hbm_peak_gbs
from tui_prof.analysis.hostapi import GRAPH_LAUNCH, LAUNCH, api_classes
from tui_prof.analysis.platform import AMD, run_vendor
from tui_prof.analysis.runinput import run_label, time_range
from tui_prof.loaders.sessions import SESSION_GAP_NS, process_identity
from tui_prof.model import Agent, LoadIssue, Run, RunMeta, RunSet
from tui_prof.model.schema import TABLES, category_array, column_array

SCHEMA = "tuiprof.check/1"
SEVERITIES = ("info", "degraded", "unreliable")
TRUST_LEVELS = ("ok", "degraded", "unreliable")
HOUR_NS = 3_600 * 1_000_000_000
CLUSTER_GAP_NS = HOUR_NS  # no event at all for this long: two recordings or two clocks [P]
# SESSION_GAP_NS (loaders/sessions.py, [P]): a same-host process starting this long after the others ended: another session
OVERFLOW_NS = HOUR_NS  # one kernel or copy longer than this: an overflowed duration [P]
EARLY_KERNEL_NS = 1_000_000  # a kernel starting this much before its launch call: clocks disagree [P]
UNLINKED_SHARE = 0.05  # [P] launch calls without kernels (or kernels without calls) worth a flag
BUFFER_TAIL_MIN = 10  # [P] trailing launch calls without kernels that make the buffer-full signature
BUFFER_TAIL_SHARE = 0.01  # [P] ... and at least this share of the launch calls
PDL_MAX_OVERLAP = 0.5  # [P] cudaLaunchKernelExC kernels overlapping their predecessor by less: real
# [P] real rocprofv3/rocpd recordings show consecutive kernels of one HIP stream overlapping by
# up to 12% of the later one (tests/data rocprofv3_json 908, rocpd 28): tolerated below this
AMD_TAIL_OVERLAP = 0.25
OVERLAP_TOLERANCE_NS = 1_000  # Kineto's µs timestamps: sub-µs overlaps are rounding
MAX_EXAMPLES = 5
# Counters no dispatch that ran can read 0 (it ran waves, on a busy GPU, for some cycles); stall
# and event counters may well read 0 and are not here. rocm-systems #3828: SQ_WAVES reads 0 on gfx1151.
NEVER_ZERO = frozenset(
    {"SQ_WAVES", "SQ_WAVE_CYCLES", "SQ_BUSY_CYCLES", "SQ_CYCLES", "GRBM_GUI_ACTIVE", "GRBM_COUNT", "SPI_CSN_WAVE", "SPI_CSN_NUM_THREADGROUPS", "Wavefronts"}
)

# The summary sections each kind of damage bends (the keys of ``summary --json``).
TIME_SECTIONS = ("measurement", "gpu", "gaps", "sync", "launch", "steps", "ranks", "communication", "stragglers", "wall_ns")
KERNEL_SECTIONS = ("kernels", "hotspots", "hotspots_by", "hotspots_by_operator", "hotspots_by_module", "categories", "measurement")
COUNTER_SECTIONS = ("counters", "occupancy")


@dataclass
class Issue:
    """One integrity problem: ``affects`` holds ``sections`` (summary keys), and where known
    ``processes``, ``rows``, ``files``, ``time_range_ns`` and ``examples``."""

    code: str
    severity: str
    message: str
    affects: dict[str, Any] = field(default_factory=dict)

    @property
    def fix(self) -> str:
        """What to do about it (:data:`FIXES`)."""
        return FIXES.get(self.code, "")

    def record(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "message": self.message, "affects": self.affects, "fix": self.fix}


@dataclass
class CheckReport:
    """What :func:`check_run` found: the issues, most severe first."""

    root: str
    issues: list[Issue]
    checks: list[str]

    @property
    def degrading(self) -> list[Issue]:
        return [i for i in self.issues if i.severity != "info"]

    def trust(self, section: str) -> tuple[str, list[str]]:
        """The section's trust label and the issues that set it ("<severity> <code>: <message>")."""
        level, reasons = 0, []
        for issue in self.issues:
            if issue.severity == "info" or section not in issue.affects.get("sections", ()):
                continue
            level = max(level, TRUST_LEVELS.index(issue.severity))
            reasons.append(f"{issue.severity} {issue.code}: {issue.message}")
        return TRUST_LEVELS[level], reasons

    def record(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "run": self.root,
            "checks": list(self.checks),
            "degraded": bool(self.degrading),
            "issues": [i.record() for i in self.issues],
        }


Check = Callable[[RunSet], list[Issue]]

# What to do about each issue (the ``fix`` of its record; the TUI's Integrity pane shows it).
FIXES = {
    "clock-domains": "use one recording at a time: --recording N of summary, check, open, export and diff (summary lists them); record each run into its own folder",
    "queue-overlap": "treat the per-kernel times of this stream as approximate; confirm a figure that matters on a run recorded again",
    "duration-overflow": "leave these rows out (tuiprof query) or record again: kernel totals, spans and idle time count them",
    "negative-duration": "these rows' timestamps are damaged; their durations count as negative in totals: record again if they matter",
    "timestamps-out-of-order": "the rows' clocks jumped or wrapped: trust their durations, not their placement (gaps, overlap, idle time)",
    "records-stop": "records of that kind after the stop were dropped: record fewer steps or give the profiler a larger buffer; its figures are lower bounds",
    "bandwidth-above-peak": "the bytes or times of these rows are wrong: leave them out of bandwidth figures and check the profiler's byte counts",
    "buffer-full": "records after the stop were dropped: record fewer steps, or give the profiler a larger buffer; totals are lower bounds",
    "counter-above-peak": "leave these counters out; collect them again in a pass of their own and check the counter's definition for this GPU",
    "kernel-before-launch": "the host and GPU clocks disagree: trust kernel durations, not launch latency, queue delay or sync figures",
    "unlinked-launches": "GPU records were lost (a full profiler buffer, a trace stopped early): record fewer steps; kernel totals are lower bounds",
    "unlinked-kernels": "API records were lost: launch and sync figures undercount; record fewer steps",
    "graph-without-kernels": "kernel totals miss the replays' kernels: treat them as lower bounds, or record with per-kernel graph tracing",
    "counter-duplicated": "open each counter pass on its own: the summed values are not per-dispatch counts",
    "counter-impossible": "leave these counters out, or collect them again in a pass of their own",
    "counter-multimodal": "collect the counter again in one pass of its own on this GPU; compare passes only from the same build and input",
    "counter-known-defective": "do not use this counter on this GPU (see the report named in the message)",
    "counter-all-zero": "collect the counter again in a pass of its own, or use another counter: it was not collected or reads 0 on this GPU",
    "separate-recordings": "pick one with --recording N (summary lists them; key R in the TUI), or record each run into its own folder",
    "non-kernel-packets": "nothing to do: these rows are listed apart from the kernels",
    "packet-in-kernels": "kernel totals include non-kernel packets: leave them out by name (tuiprof query)",
    "file-unreadable": "the load issues name each file and its error (TUI tab 6); the figures leave out what could not be read",
}


def _span(start: np.ndarray, end: np.ndarray) -> list[int]:
    return [int(start.min()), int(end.max())] if len(start) else []


def _where(run: Run, table: str, rows: np.ndarray, frame: pd.DataFrame | None = None) -> dict[str, Any]:
    """``affects`` entries for ``rows`` (positions) of one run's table."""
    frame = run.table(table) if frame is None else frame
    start, end = frame["start"].to_numpy()[rows], frame["end"].to_numpy()[rows]
    examples = [
        {"row": int(r), "name": str(frame["name"].iat[int(r)]), "start_ns": int(frame["start"].iat[int(r)]), "end_ns": int(frame["end"].iat[int(r)])}
        for r in rows[:MAX_EXAMPLES]
    ]
    return {"processes": [run_label(run)], "table": table, "rows": int(len(rows)), "time_range_ns": _span(start, end), "examples": examples}


# --- facts shared by the checks of one run --------------------------------------------------------


def _is_sorted(values: np.ndarray) -> bool:
    return len(values) < 2 or bool(np.all(values[1:] >= values[:-1]))


class TableFacts:
    """What several checks read from one table's ``start`` and ``end`` columns, each computed
    at most once (the checks of one :func:`check_run` share them through :func:`run_facts`)."""

    def __init__(self, start: np.ndarray, end: np.ndarray) -> None:
        self.start, self.end = start, end

    @cached_property
    def start_sorted(self) -> bool:
        """Rows in start order (the model's tables are sorted by start, -1 rows first)."""
        return _is_sorted(self.start)

    @cached_property
    def end_sorted(self) -> bool:
        return _is_sorted(self.end)

    @cached_property
    def all_known(self) -> bool:
        """No start or end is UNKNOWN (-1)."""
        start = self.start
        if self.start_sorted and len(start):  # -1 rows would sit where -1 sorts in: one look instead of a pass
            at = int(np.searchsorted(start, -1))
            unknown_start = at < len(start) and int(start[at]) == -1
        else:
            unknown_start = bool((start == -1).any())
        return not unknown_start and not bool((self.end == -1).any())

    @cached_property
    def known(self) -> np.ndarray:
        """Per row: both the start and the end are known."""
        return np.ones(len(self.start), dtype=bool) if self.all_known else (self.start != -1) & (self.end != -1)


# [P] id tables (a byte per id; the id-to-row table 4) for ids spanning up to this many times
# the rows: real Kineto traces hold about one id in 4 (the runtime numbers calls it does not trace)
DENSE_SPAN = 8


class IdLinks:
    """Correlation ids of one run's API calls and kernels, matched once for the link, early
    kernel and graph checks: dense lookup tables indexed by id where the ids span a range not
    much larger than the tables (correlation ids count up from 1), else the sorted ids searched
    (``dense=False`` forces that path; both answer the same)."""

    def __init__(self, api_ids: np.ndarray, kernel_ids: np.ndarray, dense: bool | None = None) -> None:
        self.api_ids, self.kernel_ids = api_ids, kernel_ids
        both = [ids for ids in (api_ids, kernel_ids) if len(ids)]
        self.lo = min((int(ids.min()) for ids in both), default=0)  # an id -1 (none) present gets a slot: never a match
        span = max((int(ids.max()) for ids in both), default=0) - self.lo + 1
        # a table no larger than a few times the rows (a small process searches instead: no table of the ids' magnitude)
        self.dense = span <= DENSE_SPAN * (len(api_ids) + len(kernel_ids)) if dense is None else dense
        self.span = span

    def _index(self, ids: np.ndarray) -> np.ndarray:
        """Positions of ``ids`` in the dense tables (as intp: numpy indexes fastest by it)."""
        index = ids.astype(np.intp)
        index -= self.lo
        return index

    @cached_property
    def _call_rows(self) -> np.ndarray | None:
        """Per id: its API row (-1: none); None where the table would be far larger than the
        ids or an id is on several rows (the sorted search then picks the first, as stably)."""
        ids = self.api_ids
        if not self.dense or self.span > DENSE_SPAN * len(ids):
            return None
        rows = np.full(self.span, -1, dtype=np.int64 if len(ids) >= 1 << 31 else np.int32)
        first = int(ids[0]) if len(ids) else -1
        if first != -1 and int(ids[-1]) - first == len(ids) - 1 and bool(np.all(ids[1:] > ids[:-1])):  # one id per call, counting up
            rows[first - self.lo : first - self.lo + len(ids)] = np.arange(len(ids), dtype=rows.dtype)
            return rows
        known = ids != -1
        rows[self._index(ids[known])] = np.flatnonzero(known)
        return rows if int(np.count_nonzero(rows != -1)) == int(np.count_nonzero(known)) else None

    @cached_property
    def call_has_kernel(self) -> np.ndarray:
        """Per API row: some kernel holds its id (never for id -1)."""
        if not self.dense:
            return (self.api_ids != -1) & np.isin(self.api_ids, self.kernel_ids)
        has = np.zeros(self.span, dtype=bool)
        has[self._index(self.kernel_ids)] = True
        if self.lo <= -1 < self.lo + self.span:
            has[-1 - self.lo] = False
        return np.take(has, self._index(self.api_ids))

    @cached_property
    def kernel_call(self) -> np.ndarray:
        """Per kernel row: the first API row with its id (-1: none, and for id -1)."""
        rows = self._call_rows
        if rows is not None:
            return np.take(rows, self._index(self.kernel_ids))
        ids, api = self.kernel_ids, self.api_ids
        if not len(api):
            return np.full(len(ids), -1, dtype=np.int64)
        order = np.arange(len(api)) if _is_sorted(api) else np.argsort(api, kind="stable")
        in_order = api[order]
        pos = np.clip(np.searchsorted(in_order, ids), 0, len(api) - 1)
        return np.where((ids != -1) & (in_order[pos] == ids), order[pos], -1)


class RunFacts:
    """One run's shared facts (:class:`TableFacts` per table, its API classes, :class:`IdLinks`),
    each computed the first time a check asks."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._tables: dict[str, TableFacts] = {}

    def table(self, name: str) -> TableFacts:
        if name not in self._tables:
            frame = self.run.table(name)
            self._tables[name] = TableFacts(column_array(frame, "start"), column_array(frame, "end"))
        return self._tables[name]

    @cached_property
    def classes(self) -> np.ndarray:
        """:func:`~tui_prof.analysis.hostapi.api_classes` of the API table."""
        return api_classes(self.run.api) if len(self.run.api) else np.empty(0, dtype=np.int8)

    @cached_property
    def links(self) -> IdLinks:
        return IdLinks(column_array(self.run.api, "correlation_id"), column_array(self.run.kernels, "correlation_id"))


_SHARED: ContextVar[dict[int, RunFacts] | None] = ContextVar("integrity_facts", default=None)


@contextmanager
def shared_facts() -> Iterator[None]:
    """Within it, the checks share each run's facts (:func:`run_facts`): :func:`check_run`
    runs its checks in one, as may a caller running checks one by one on the same runs (which
    must not change the runs' tables meanwhile)."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


def run_facts(run: Run) -> RunFacts:
    """``run``'s facts: the ones the checks of the :func:`check_run` in progress share, else new."""
    shared = _SHARED.get()
    if shared is None:
        return RunFacts(run)
    facts = shared.get(id(run))
    if facts is None or facts.run is not run:
        facts = shared[id(run)] = RunFacts(run)
    return facts


# --- time and clocks ---------------------------------------------------------------------------


def _segments(start: np.ndarray, end: np.ndarray, facts: TableFacts | None = None) -> list[tuple[int, int]]:
    """The table's time split where no row starts for CLUSTER_GAP_NS (rows sorted by start)."""
    facts = TableFacts(start, end) if facts is None else facts
    ordered = facts.start_sorted
    if not facts.all_known:
        known = facts.known
        start, end = start[known], end[known]
    if not len(start):
        return []
    if not ordered and not _is_sorted(start):
        order = np.argsort(start, kind="stable")
        start, end = start[order], end[order]
    if int(start[-1]) - int(start[0]) <= CLUSTER_GAP_NS:  # no gap can be longer than the whole: one segment
        return [(int(start[0]), max(int(end.max()), int(start[-1])))]
    reach = np.maximum.accumulate(np.maximum(end, start))
    cuts = np.flatnonzero(start[1:] - reach[:-1] > CLUSTER_GAP_NS) + 1
    bounds = np.concatenate(([0], cuts, [len(start)]))
    return [(int(start[a]), int(reach[b - 1])) for a, b in itertools.pairwise(bounds.tolist())]


def clock_pieces(run: Run) -> list[tuple[int, int, str]]:
    """The time segments of ``run``'s kernels, API calls and copies (split where nothing
    happens for CLUSTER_GAP_NS), each with what it holds: :func:`clock_domains` of one process."""
    pieces: list[tuple[int, int, str]] = []
    facts = run_facts(run)
    for name in ("kernels", "api", "copies"):
        if len(run.table(name)):
            table = facts.table(name)
            pieces.extend((a, b, f"{run_label(run)} {name}") for a, b in _segments(table.start, table.end, table))
    return pieces


def clock_domains(runset: RunSet) -> list[Issue]:
    """Events of the run set in clusters more than an hour apart."""
    return clock_domains_of([piece for run in runset.runs for piece in clock_pieces(run)])


def clock_domains_of(pieces: list[tuple[int, int, str]]) -> list[Issue]:
    """:func:`clock_domains` of the processes' :func:`clock_pieces` (in any order)."""
    pieces = sorted(pieces)
    clusters: list[list[Any]] = []
    for a, b, what in pieces:
        if clusters and a - clusters[-1][1] <= CLUSTER_GAP_NS:
            clusters[-1][1] = max(clusters[-1][1], b)
            clusters[-1][2].append(what)
        else:
            clusters.append([a, b, [what]])
    if len(clusters) < 2:
        return []
    apart = (clusters[-1][0] - clusters[0][1]) / 1e9
    listed = [{"time_range_ns": [c[0], c[1]], "holds": sorted(set(c[2]))} for c in clusters[:MAX_EXAMPLES]]
    return [
        Issue(
            "clock-domains",
            "unreliable",
            f"events fall in {len(clusters)} time clusters up to {apart:,.0f} s apart: files of separate recordings or clocks "
            "that cannot be aligned, pooled into one span",
            {"sections": list(TIME_SECTIONS), "clusters": listed, "time_range_ns": [clusters[0][0], clusters[-1][1]]},
        )
    ]


def durations(runset: RunSet) -> list[Issue]:
    """Overflowed (> 1 h) and negative durations of kernels, copies and API calls."""
    out: list[Issue] = []
    for run in runset.runs:
        facts = run_facts(run)
        for name in ("kernels", "copies", "api"):
            if not len(run.table(name)):
                continue
            table = facts.table(name)
            dur = table.end - table.start
            if int(dur.min()) >= 0 and (name == "api" or int(dur.max()) <= OVERFLOW_NS):  # nothing to find, whatever is known
                continue
            known = table.known
            sections = (
                list(KERNEL_SECTIONS + TIME_SECTIONS) if name == "kernels" else (["copies", "measurement"] if name == "copies" else ["api", "sync", "launch"])
            )
            over = np.flatnonzero(known & (dur > OVERFLOW_NS)) if name != "api" else np.empty(0, dtype=np.int64)
            if len(over):
                where = _where(run, name, over)
                out.append(
                    Issue(
                        "duration-overflow", "unreliable", f"{len(over)} {name} rows last over an hour (overflowed durations)", {"sections": sections, **where}
                    )
                )
            negative = np.flatnonzero(known & (dur < 0))
            if len(negative):
                where = _where(run, name, negative)
                out.append(Issue("negative-duration", "degraded", f"{len(negative)} {name} rows end before they start", {"sections": sections, **where}))
    return out


# --- order -------------------------------------------------------------------------------------


def _against_launch_order(lane: np.ndarray, ids: np.ndarray, start: np.ndarray, start_sorted: bool | None = None) -> np.ndarray:
    """Rows that start more than OVERLAP_TOLERANCE_NS before a row of their lane with a lower
    correlation id (issued earlier: an in-order stream runs, and a host thread makes, its calls
    in the order of their ids). Only rows with a lane (>= 0) and an id (> 0) count.
    ``start_sorted``: whether ``start`` is known to be in order (None: look)."""
    if (_is_sorted(start) if start_sorted is None else start_sorted) and _is_sorted(ids):
        return np.empty(0, dtype=np.int64)  # ids in start order: every subset is too, none can run against it
    lane = lane.astype(np.int64, copy=False)
    known = np.flatnonzero((lane >= 0) & (ids > 0) & (start != -1))
    if len(known) < 2:
        return np.empty(0, dtype=np.int64)
    ln, cid, st = lane[known], ids[known], start[known]
    if bool(np.all(cid[1:] >= cid[:-1])) and bool(np.all(st[1:] >= st[:-1])):  # ids in start order: none can run against it
        return np.empty(0, dtype=np.int64)
    order = np.lexsort((st, cid, ln))
    ln, cid, st = ln[order], cid[order], st[order]
    same = np.r_[False, ln[1:] == ln[:-1]]
    # the latest start among earlier ids of the lane: a running max restarted per lane, then
    # taken from the last row of the previous id (rows of one id, a graph's kernels, may interleave)
    reach = pd.Series(st).groupby(np.cumsum(~same)).cummax().to_numpy()
    new_id = np.r_[True, (cid[1:] != cid[:-1]) | ~same[1:]]
    prior = np.where(same, np.r_[np.iinfo(np.int64).min, reach[:-1]], np.iinfo(np.int64).min)
    prior = prior[np.maximum.accumulate(np.where(new_id, np.arange(len(st)), 0))]  # rows of one id share their first row's bound
    hit = same & (st + OVERLAP_TOLERANCE_NS < prior)  # not prior - st: the int64 floor minus a start wraps round
    return np.sort(known[order[np.flatnonzero(hit)]])


def out_of_order(runset: RunSet) -> list[Issue]:
    """Timestamps that run against the order of issue: a kernel starting before a kernel
    launched before it on the same stream, a call starting before an earlier call of its thread."""
    out: list[Issue] = []
    for run in runset.runs:
        facts = run_facts(run)
        found = []
        for name, lane in (("kernels", "stream"), ("api", "tid")):
            table = run.table(name)
            if len(table) > 1:
                times = facts.table(name)
                found.append((name, _against_launch_order(column_array(table, lane), column_array(table, "correlation_id"), times.start, times.start_sorted)))
        for name, rows in found:
            if not len(rows):
                continue
            lane = "stream" if name == "kernels" else "thread"
            sections = list(KERNEL_SECTIONS + ("gpu", "gaps")) if name == "kernels" else ["api", "sync", "launch"]
            message = f"{len(rows)} {name} rows start before a row issued earlier on their {lane} (by correlation id): timestamps out of order"
            out.append(Issue("timestamps-out-of-order", "degraded", message, {"sections": sections, **_where(run, name, rows)}))
    return out


# --- streams and launches ----------------------------------------------------------------------


def _launch_names(run: Run, correlation: np.ndarray) -> np.ndarray:
    """The name of the API call with each correlation id ("" when none)."""
    api = run.api
    if not len(api) or not len(correlation):
        return np.full(len(correlation), "", dtype=object)
    ids = api["correlation_id"].to_numpy()
    hit = np.flatnonzero(np.isin(ids, correlation))
    names = dict(zip(ids[hit].tolist(), api["name"].to_numpy()[hit].astype(str).tolist(), strict=True))
    return np.array([names.get(int(c), "") for c in correlation], dtype=object)


def _overlaps(k: pd.DataFrame, times: TableFacts | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(row, overlapped share of its duration) of each kernel that starts before an earlier
    kernel of its stream ends by more than OVERLAP_TOLERANCE_NS (``times``: the table's
    :class:`TableFacts`, shared with the other checks)."""
    times = TableFacts(column_array(k, "start"), column_array(k, "end")) if times is None else times
    stream, agent = column_array(k, "stream"), column_array(k, "agent")
    if times.start_sorted and int(stream.min()) == int(stream.max()) >= 0 and int(agent.min()) == int(agent.max()):
        return _one_lane_overlaps(times)
    stream = stream.astype(np.int64)
    # HIP may put several streams on one HSA queue: only a recorded stream is an in-order lane
    key = np.where(stream >= 0, (agent.astype(np.int64) << 42) + stream, -1)
    start, end = times.start, times.end
    one_lane = bool((key == key[0]).all())
    if times.start_sorted:  # the model's tables are sorted by start
        order = np.arange(len(key)) if one_lane else np.argsort(key, kind="stable")
    else:
        order = np.lexsort((start, key))
    ks, ss, es = key[order], start[order], end[order]
    same = np.r_[False, ks[1:] == ks[:-1]] & (ks != -1)
    # the latest end among earlier kernels of the same lane: a running max restarted per lane
    reach = np.maximum.accumulate(es) if one_lane else pd.Series(es).groupby(np.cumsum(~same)).cummax().to_numpy()
    before = np.r_[np.iinfo(np.int64).min, reach[:-1]]
    hit = same & (before - ss > OVERLAP_TOLERANCE_NS) & (es > ss)
    rows = np.flatnonzero(hit)
    share = (np.minimum(before[rows], es[rows]) - ss[rows]) / (es[rows] - ss[rows])
    return order[rows], share


def _one_lane_overlaps(times: TableFacts) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_overlaps` of kernels of one recorded stream, in start order: no sort, and where
    the ends are in order too (no kernel ends before an earlier one), each row's earlier
    kernels end at its predecessor's end, so no running max either."""
    start, end = times.start, times.end
    reach = end if times.end_sorted else np.maximum.accumulate(end)
    rows = np.flatnonzero(reach[:-1] - start[1:] > OVERLAP_TOLERANCE_NS) + 1
    rows = rows[end[rows] > start[rows]]
    before = reach[rows - 1]
    share = (np.minimum(before, end[rows]) - start[rows]) / (end[rows] - start[rows])
    return rows, share


def queue_overlap(runset: RunSet) -> list[Issue]:
    """Kernels overlapping an earlier kernel of the same in-order stream."""
    out: list[Issue] = []
    for run in runset.runs:
        k = run.kernels
        if len(k) < 2:
            continue
        rows, share = _overlaps(k, run_facts(run).table("kernels"))
        if not len(rows):
            continue
        names = _launch_names(run, k["correlation_id"].to_numpy()[rows])
        pdl = np.array(["LaunchKernelEx" in n for n in names], dtype=bool) & (share < PDL_MAX_OVERLAP)
        tail = share < AMD_TAIL_OVERLAP if run_vendor(run)[0] == AMD else np.zeros(len(rows), dtype=bool)
        rows = np.sort(rows[~(pdl | tail)])
        if not len(rows):
            continue
        where = _where(run, "kernels", rows)
        out.append(
            Issue(
                "queue-overlap",
                "degraded",
                f"{len(rows)} kernels start before the previous kernel of their stream ends (one in-order stream cannot overlap): their timestamps are off",
                {"sections": list(KERNEL_SECTIONS + ("gpu", "gaps")), **where},
            )
        )
    return out


def _member(values: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """``np.isin(values, pool)``; by a lookup table (linear time) when the ids span a range
    not much larger than the arrays, as correlation ids do."""
    if not len(values) or not len(pool):
        return np.zeros(len(values), dtype=bool)
    lo, hi = min(int(values.min()), int(pool.min())), max(int(values.max()), int(pool.max()))
    if hi - lo < 8 * (len(values) + len(pool)) + (1 << 20):
        return np.isin(values, pool, kind="table")
    return np.isin(values, pool)


def _linked(run: Run, classes: np.ndarray, links: IdLinks | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """(launch-call rows without a kernel, kernel rows without a call) when both are traced."""
    api, k = run.api, run.kernels
    if not len(api) or not len(k) or not ((classes == LAUNCH) | (classes == GRAPH_LAUNCH)).any():
        return None
    links = run_facts(run).links if links is None else links
    kernel_ids = links.kernel_ids
    if not (kernel_ids != -1).any():
        return None
    api_ids = links.api_ids
    lonely_calls = np.flatnonzero((classes == LAUNCH) & ~links.call_has_kernel)
    # correlation ids grow with every call: kernels with ids below the first traced call's were
    # launched before the host trace began (Kineto records their GPU activity, not their calls)
    traced_ids = api_ids[api_ids != -1] if (api_ids == -1).any() else api_ids
    if not len(traced_ids):
        return lonely_calls, np.empty(0, dtype=np.int64)
    lonely_kernels = np.flatnonzero((kernel_ids >= int(traced_ids.min())) & (links.kernel_call == -1) & (kernel_ids != -1))
    return lonely_calls, lonely_kernels


def launch_links(runset: RunSet) -> list[Issue]:
    """Dropped records: launch calls without kernels, kernels without calls, beyond a share;
    kernels that start before their own launch call."""
    out: list[Issue] = []
    for run in runset.runs:
        classes = run_facts(run).classes
        found = _linked(run, classes)
        if found is None:
            continue
        calls, kernels = found
        n_calls = int(np.count_nonzero(classes == LAUNCH))
        if n_calls and len(calls) > UNLINKED_SHARE * n_calls:
            where = _where(run, "api", calls)
            message = f"{len(calls)} of {n_calls} launch calls ({len(calls) / n_calls:.1%}) have no kernel: GPU records were dropped"
            out.append(Issue("unlinked-launches", "degraded", message, {"sections": list(KERNEL_SECTIONS + ("gpu", "gaps", "launch")), **where}))
        n_k = len(run.kernels)
        if len(kernels) > UNLINKED_SHARE * n_k:
            where = _where(run, "kernels", kernels)
            message = f"{len(kernels)} of {n_k} kernels ({len(kernels) / n_k:.1%}) have no launch call: API records were dropped"
            out.append(Issue("unlinked-kernels", "degraded", message, {"sections": ["launch", "sync", "hotspots_by_operator", "hotspots_by_module"], **where}))
        out.extend(_graph_replays(run, classes))
        out.extend(_early_kernels(run))
        out.extend(_records_stop(run, classes, calls))
    return out


def _records_stop(run: Run, classes: np.ndarray, lonely: np.ndarray) -> list[Issue]:
    """The buffer-full signature: the kernel records stop while the launch calls go on (the
    last BUFFER_TAIL_MIN or more launch calls, and at least BUFFER_TAIL_SHARE of them, have
    no kernel: a profiler buffer with the discard fill policy drops every record once full)."""
    if not len(lonely):
        return []
    launches = np.flatnonzero(classes == LAUNCH)  # in start order: the tables are sorted by start
    if len(launches) < 2:
        return []
    linked = ~_member(launches, lonely)
    last = np.flatnonzero(linked)
    tail = len(launches) - (int(last[-1]) + 1 if len(last) else 0)
    if not len(last) or tail < max(BUFFER_TAIL_MIN, BUFFER_TAIL_SHARE * len(launches)):
        return []
    rows = launches[len(launches) - tail :]
    where = _where(run, "api", rows)
    stop = int(run.kernels["end"].max())
    message = (
        f"the kernel records stop at {stop} ns while the last {tail} of {len(launches)} launch calls go on: a profiler buffer filled "
        "and dropped the records after it, or the GPU trace was cut"
    )
    return [Issue("buffer-full", "degraded", message, {"sections": list(KERNEL_SECTIONS + ("gpu", "gaps", "launch")), **where})]


def _graph_replays(run: Run, classes: np.ndarray) -> list[Issue]:
    """Graph launches whose replay left no kernel rows (the profiler recorded the launch only)."""
    graphs = np.flatnonzero(classes == GRAPH_LAUNCH)
    if not len(graphs):
        return []
    bare = graphs[~run_facts(run).links.call_has_kernel[graphs]]
    if len(bare) <= UNLINKED_SHARE * len(graphs):
        return []
    where = _where(run, "api", bare)
    message = f"{len(bare)} of {len(graphs)} graph launches have no kernel rows: their replays' kernels are missing from the kernel tables"
    return [Issue("graph-without-kernels", "degraded", message, {"sections": list(KERNEL_SECTIONS + ("gpu", "gaps")), **where})]


def _early_kernels(run: Run, links: IdLinks | None = None) -> list[Issue]:
    row = (run_facts(run).links if links is None else links).kernel_call
    launched_at = np.take(column_array(run.api, "start"), row)  # row -1 (no call): any value, left out below
    early = np.flatnonzero((row != -1) & (column_array(run.kernels, "start") < launched_at - EARLY_KERNEL_NS))
    if not len(early):
        return []
    where = _where(run, "kernels", early)
    message = f"{len(early)} kernels start over 1 ms before the call that launched them: the GPU and host clocks disagree"
    return [Issue("kernel-before-launch", "degraded", message, {"sections": ["launch", "sync", "gaps", "steps"], **where})]


# --- one kind of record ending early ------------------------------------------------------------

RECORD_KINDS = ("kernels", "api", "copies", "markers", "counters")
HOST_KINDS = ("api", "markers")
STOP_MIN_ROWS = 200  # [P] a kind with fewer rows is too sparse to say it stopped
STOP_SILENT_SHARE = 0.2  # [P] silent for this share of the process's span while the others go on
STOP_ACTIVE_SHARE = 0.3  # [P] ... after being active over at least this share (not a phase at the start)
STOP_MISSING = 100  # [P] rows the kind would have written in its silence at its own rate
STOP_OTHERS = 10  # [P] rows of other kinds in the silence
STOP_TAIL_RATE = 0.5  # [P] its rate over the last tenth of its active time, against its mean: still busy
STOP_OTHERS_RATE = 0.25  # [P] the other kinds' rate in the silence, against theirs while it ran: they went on as before
KIND_SECTIONS = {
    "kernels": KERNEL_SECTIONS + ("gpu", "gaps", "launch"),
    "api": ("api", "sync", "launch"),
    "copies": ("copies", "measurement"),
    "markers": ("steps", "hotspots_by_operator", "hotspots_by_module"),
    "counters": COUNTER_SECTIONS,
}


def _kind_starts(run: Run, kind: str) -> np.ndarray:
    """The start times of one kind's records (counters: their dispatches' kernel starts), sorted."""
    empty = np.empty(0, dtype=np.int64)
    if kind == "counters":
        c, k = run.counters, run.kernels
        if not len(c) or not len(k):
            return empty
        ids = np.unique(c["dispatch_id"].to_numpy())
        start = k["start"].to_numpy()[_member(k["dispatch_id"].to_numpy(), ids)]
        in_order = _is_sorted(start)
    elif kind in ("kernels", "api", "copies"):  # their order is one of the run's shared facts
        if not len(run.table(kind)):
            return empty
        facts = run_facts(run).table(kind)
        start, in_order = facts.start, facts.start_sorted
    else:
        table = run.table(kind)
        start = column_array(table, "start") if len(table) and "start" in table.columns else empty
        in_order = _is_sorted(start)
    if len(start) > 1 and in_order:  # the model's tables are sorted by start: a view, -1 rows first
        return start[int(np.searchsorted(start, 0)) :] if start[0] == -1 else start
    return np.sort(start[start != -1])


def _stopped(starts: np.ndarray, others: list[np.ndarray], lo: int, hi: int) -> dict[str, Any] | None:
    """Why ``starts`` (one kind) stopped early against ``others`` (every other kind's starts,
    each sorted) in a process spanning [lo, hi]; None when it did not."""
    n, span = len(starts), hi - lo
    first, last = int(starts[0]), int(starts[-1])
    active = last - first
    silent = max((int(o[-1]) for o in others), default=last) - last
    if n < STOP_MIN_ROWS or span <= 0 or active <= 0 or silent < STOP_SILENT_SHARE * span or active < STOP_ACTIVE_SHARE * span:
        return None
    after = sum(len(o) - int(np.searchsorted(o, last, side="right")) for o in others)
    during = sum(int(np.searchsorted(o, last, side="right")) - int(np.searchsorted(o, first, side="left")) for o in others)
    missing = n / active * silent
    tail = n - int(np.searchsorted(starts, last - active // 10, side="left"))
    if after < STOP_OTHERS or missing < STOP_MISSING or tail < STOP_TAIL_RATE * n / 10:
        return None
    if after / silent < STOP_OTHERS_RATE * during / active:  # the others slowed down too: the program changed phase
        return None
    return {"last_ns": last, "silent_ns": silent, "others_after": after, "missing": int(missing)}


def record_ends(runset: RunSet) -> list[Issue]:
    """One kind of record (kernels, API calls, copies, markers, counters) stops long before the
    others while it was still busy: the signature of a profiler buffer for that kind filling up
    and dropping what came after (rocprofv3 keeps a buffer per kind), or a stream cut short."""
    out: list[Issue] = []
    for run in runset.runs:
        if sum(len(run.table(kind)) >= STOP_MIN_ROWS for kind in RECORD_KINDS) == 0:
            continue
        starts = {kind: _kind_starts(run, kind) for kind in RECORD_KINDS}
        timed = [s for s in starts.values() if len(s)]
        if len(timed) < 2:
            continue
        lo, hi = min(int(s[0]) for s in timed), max(int(s[-1]) for s in timed)
        for kind, mine in starts.items():
            if len(mine) < STOP_MIN_ROWS:
                continue
            # host records are compared with host records: the GPU drains its queue after the last call
            others = [s for k, s in starts.items() if k not in (kind, "counters") and len(s) and (kind not in HOST_KINDS or k in HOST_KINDS)]
            found = _stopped(mine, others, lo, hi)
            if found is None:
                continue
            message = (
                f"the {kind} records stop at {found['last_ns']} ns, {found['silent_ns'] / 1e9:,.3f} s before the process's last record, while "
                f"{found['others_after']:,} records of other kinds go on (about {found['missing']:,} {kind} rows missing at its own rate): "
                "a profiler buffer for this kind filled and dropped the rest"
            )
            affects = {"sections": list(KIND_SECTIONS[kind]), "processes": [run_label(run)], "table": kind, "time_range_ns": [found["last_ns"], hi], **found}
            out.append(Issue("records-stop", "degraded", message, affects))
    return out


# --- bandwidth and clock peaks -------------------------------------------------------------------

PEAK_MARGIN = 1.1  # [P] measured above the documented peak by more than this: impossible
# [P] L2-to-fabric bytes (FETCH_SIZE/WRITE_SIZE) may come from the Infinity Cache (MALL) on
# CDNA3/CDNA4, faster than HBM: bounded there by this multiple of the HBM peak (MI300X's MALL
# peak is about 3.2x its HBM's, ROCm mi300.md)
MALL_FACTOR = {"gfx942": 4.0, "gfx950": 4.0}
# Documented peak memory bandwidth (GB/s) of NVIDIA GPUs by product name (NVIDIA datasheets);
# the highest of a family's variants where the name does not tell them apart.
NVIDIA_HBM_GBS = (("H200", 4800.0), ("H100 PCIe", 2000.0), ("H100", 3900.0), ("A100-PCIE-40GB", 1555.0), ("A100", 2039.0))
COPY_FLOOR_NS = 1_000  # [P] shorter copies: their µs-rounded times make any rate meaningless
# The link a copy crosses, by the GPU's product name, in GB/s a direction (a copy moves its bytes
# one way). Host links: PCIe x16 at the link's raw rate before encoding (PCI-SIG: 16 GT/s a lane
# for PCIe 4.0, 32 GT/s for 5.0: 32 and 64 GB/s a direction), the generation from the product's
# data sheet (NVIDIA H200, H100 and A100 datasheets: "PCIe Gen5: 128GB/s", "PCIe Gen4: 64GB/s",
# both directions; AMD Instinct MI300X, MI210, MI100 data sheets: PCIe Gen 5 x16, Gen 4 x16).
# APUs and superchips are left out: their host memory is on the package or over NVLink-C2C
# (MI300A, GH200/GB200: "\b" keeps GH200 from matching H200). So is MI250X/MI250: on HPE Cray
# EX235a (Frontier-class) nodes each GCD reaches the host over coherent Infinity Fabric at
# 36 GB/s a direction, above the PCIe 4.0 x16 bound, and the product name does not say which.
HOST_LINK_GBS = (
    (r"\bH200\b", 64.0, "PCIe 5.0 x16 (NVIDIA H200 datasheet)"),
    (r"\bH100\b", 64.0, "PCIe 5.0 x16 (NVIDIA H100 datasheet)"),
    (r"\bA100\b", 32.0, "PCIe 4.0 x16 (NVIDIA A100 datasheet)"),
    (r"\bMI300X\b", 64.0, "PCIe 5.0 x16 (AMD Instinct MI300X data sheet)"),
    (r"\bMI210\b", 32.0, "PCIe 4.0 x16 (AMD Instinct MI210 data sheet)"),
    (r"\bMI100\b", 32.0, "PCIe 4.0 x16 (AMD Instinct MI100 data sheet)"),
)
# GPU-to-GPU links: half the data sheet's total over every link and both directions, so a bound
# no pair of GPUs can pass however the links are wired (NVIDIA datasheets: NVLink 900 GB/s on
# H200 and H100 SXM, 600 GB/s on H100 PCIe/NVL and A100; AMD MI300X data sheet: 7 Infinity
# Fabric links, 896 GB/s peak aggregate).
PEER_LINK_GBS = (
    (r"\bH200\b", 450.0, "NVLink 4 (NVIDIA H200 datasheet: 900 GB/s both directions)"),
    (r"\bH100\b.*\b(PCIe|NVL)\b", 300.0, "NVLink bridge (NVIDIA H100 PCIe/NVL datasheet: 600 GB/s both directions)"),
    (r"\bH100\b", 450.0, "NVLink 4 (NVIDIA H100 datasheet: 900 GB/s both directions)"),
    (r"\bA100\b", 300.0, "NVLink 3 (NVIDIA A100 datasheet: 600 GB/s both directions)"),
    (r"\bMI300X\b", 448.0, "Infinity Fabric (AMD Instinct MI300X data sheet: 896 GB/s aggregate both directions)"),
)


def _peak_gbs(agent: Agent | None) -> tuple[float | None, str]:
    """The agent's documented peak memory bandwidth (GB/s) and its source: the AMD tables
    (analysis/occupancy.py ARCHS, or rocprof-compute's own figure), NVIDIA by product name."""
    if agent is None:
        return None, ""
    if agent.name.startswith("gfx") or agent.gfx_target_version:
        return hbm_peak_gbs(agent, agent.arch)
    product = agent.product or agent.name
    for name, gbs in NVIDIA_HBM_GBS:
        if all(part.lower() in product.lower() for part in name.split()):
            return gbs, f"NVIDIA {name} datasheet"
    return None, ""


def _copy_rate(cp: pd.DataFrame) -> np.ndarray:
    """Each copy's rate in GB/s (bytes per ns); NaN under COPY_FLOOR_NS."""
    dur = (column_array(cp, "end") - column_array(cp, "start")).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(dur >= COPY_FLOOR_NS, cp["bytes"].to_numpy().astype(np.float64) / dur, np.nan)


def _copy_memory_peak(run: Run, cp: pd.DataFrame) -> np.ndarray | None:
    """Each copy's bound by the device memory at its faster end (NaN: neither end's peak is
    known); None when no GPU's is."""
    known = {a.id: gbs for a in run.gpu_agents if (gbs := _peak_gbs(a)[0])}
    if not known:
        return None
    return np.fmax(_by_agent(column_array(cp, "src_agent"), known), _by_agent(column_array(cp, "dst_agent"), known))


def _by_agent(ids: np.ndarray, values: dict[int, float]) -> np.ndarray:
    """``values`` of each row's agent id (NaN: not in it); a pass per agent, of which a run has few."""
    out = np.full(len(ids), np.nan)
    for agent, value in values.items():
        out[ids == agent] = value
    return out


def _in_category(frame: pd.DataFrame, column: str, names: tuple[str, ...]) -> np.ndarray:
    """Per row: ``column`` (a category) is one of ``names``."""
    cat = category_array(frame, column)
    return np.isin(cat.codes, [i for i, c in enumerate(cat.categories) if str(c) in names])


def _copy_rates(run: Run) -> list[Issue]:
    """Copies moving bytes faster than the device memory at either end can: every byte of a
    host-device or device-device copy is read from or written to a GPU's memory."""
    cp = run.copies
    if not len(cp) or "bytes" not in cp.columns:
        return []
    peak = _copy_memory_peak(run, cp)
    if peak is None:
        return []
    rate = _copy_rate(cp)
    rows = np.flatnonzero(rate > peak * PEAK_MARGIN)
    if not len(rows):
        return []
    where = _where(run, "copies", rows)
    message = (
        f"{len(rows)} copies move bytes faster than the GPU memory they read or write can (up to {np.nanmax(rate[rows]):,.0f} GB/s against a "
        f"peak of {np.nanmax(peak[rows]):,.0f} GB/s): their byte counts or times are wrong"
    )
    return [Issue("bandwidth-above-peak", "unreliable", message, {"sections": ["copies", "measurement"], **where, "peak_gbs": float(np.nanmax(peak[rows]))})]


def _kernel_rates(run: Run) -> list[Issue]:
    """Kernels whose L2-to-memory traffic (1024 x (FETCH_SIZE + WRITE_SIZE), rocprofv3's
    KB counters) over their duration exceeds the GPU's memory peak (times MALL_FACTOR)."""
    c, k = run.counters, run.kernels
    if not len(c) or not len(k):
        return []
    names = c["counter"].astype(str).to_numpy()
    traffic = c[np.isin(names, ("FETCH_SIZE", "WRITE_SIZE"))]
    if not len(traffic):
        return []
    kb = traffic.groupby("dispatch_id")["value"].sum()
    first = k.drop_duplicates("dispatch_id").set_index("dispatch_id")
    dur = (first["end"] - first["start"]).reindex(kb.index).to_numpy().astype(np.float64)
    known = {a.id: gbs * MALL_FACTOR.get(a.arch, 1.0) for a in run.gpu_agents if (gbs := _peak_gbs(a)[0])}
    if not known:
        return []
    peak = first["agent"].reindex(kb.index).map(known).to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(dur >= COPY_FLOOR_NS, 1024.0 * kb.to_numpy() / dur, np.nan)
    over = rate > peak * PEAK_MARGIN
    if not over.any():
        return []
    ids = kb.index.to_numpy()[over]
    message = (
        f"{len(ids)} dispatches read and write memory faster than the GPU can (FETCH_SIZE + WRITE_SIZE over the kernel's time: up to "
        f"{np.nanmax(rate[over]):,.0f} GB/s against {np.nanmax(peak[over]):,.0f} GB/s): the counters or the kernel times are wrong"
    )
    affects = {
        "sections": list(COUNTER_SECTIONS),
        "processes": [run_label(run)],
        "counters": ["FETCH_SIZE", "WRITE_SIZE"],
        "dispatch_ids": sorted(int(i) for i in ids)[:MAX_EXAMPLES],
    }
    return [Issue("bandwidth-above-peak", "unreliable", message, affects)]


def _link_gbs(agent: Agent, table: tuple[tuple[str, float, str], ...]) -> tuple[float, str] | None:
    """The agent's link peak (GB/s a direction) and its name from ``table`` (None: not listed)."""
    product = agent.product or agent.name
    for pattern, gbs, link in table:
        if re.search(pattern, product, flags=re.IGNORECASE):
            return gbs, link
    return None


def _copy_links(run: Run) -> list[Issue]:
    """Copies moving bytes faster than the link they cross can: host-device copies (HtoD,
    DtoH) against the GPU's host link, copies between two GPUs against their peer links
    (the faster end's, where both ends' are listed); one issue per link kind, each naming its
    fastest copy, so a fast peer copy is never reported under the host link's name and peak."""
    cp = run.copies
    if not len(cp) or "bytes" not in cp.columns:
        return []
    host = {a.id: found for a in run.gpu_agents if (found := _link_gbs(a, HOST_LINK_GBS))}
    peer = {a.id: found for a in run.gpu_agents if (found := _link_gbs(a, PEER_LINK_GBS))}
    if not host and not peer:
        return []
    src, dst = column_array(cp, "src_agent"), column_array(cp, "dst_agent")
    to_gpu = _in_category(cp, "direction", ("HtoD",))
    gpu_end = np.where(to_gpu, dst, src)
    host_peak = np.where(to_gpu | _in_category(cp, "direction", ("DtoH",)), _by_agent(gpu_end, {k: v[0] for k, v in host.items()}), np.nan)
    ends = [_by_agent(end, {k: v[0] for k, v in peer.items()}) for end in (src, dst)]
    between = (src != dst) & _in_category(cp, "direction", ("DtoD", "PtoP"))
    peer_peak = np.where(between, np.maximum(ends[0], ends[1]), np.nan)  # NaN unless both ends' links are listed
    rate = _copy_rate(cp)
    memory = _copy_memory_peak(run, cp)
    over_memory = rate > memory * PEAK_MARGIN if memory is not None else np.zeros(len(cp), dtype=bool)
    # the link that bounds each row: the GPU end's host link, or the faster end's peer link
    peer_end = np.where(ends[0] >= ends[1], src, dst)
    kinds = (("host-device copies", "host link", host_peak, gpu_end, host), ("copies between GPUs", "peer link", peer_peak, peer_end, peer))
    out: list[Issue] = []
    for what, kind, peak, agent, links in kinds:
        rows = np.flatnonzero((rate > peak * PEAK_MARGIN) & ~over_memory)  # above the memory's peak too: _copy_rates names them
        if not len(rows):
            continue
        fastest = int(rows[np.argmax(rate[rows])])
        message = (
            f"{len(rows)} {what} move bytes faster than their {kind} can (up to {rate[fastest]:,.0f} GB/s over "
            f"{links[int(agent[fastest])][1]}, peak {peak[fastest]:,.0f} GB/s a direction): their byte counts or times are wrong"
        )
        affects = {"sections": ["copies", "measurement"], **_where(run, "copies", rows), "peak_gbs": float(peak[fastest])}
        out.append(Issue("bandwidth-above-peak", "unreliable", message, affects))
    return out


def bandwidth(runset: RunSet) -> list[Issue]:
    """Copies and kernels moving bytes faster than the device's documented memory peak, and
    copies faster than the link they cross."""
    out: list[Issue] = []
    for run in runset.runs:
        out.extend(_copy_rates(run))
        out.extend(_copy_links(run))
        out.extend(_kernel_rates(run))
    return out


# --- counters ----------------------------------------------------------------------------------


def counters(runset: RunSet) -> list[Issue]:
    """Counter rows recorded twice for one dispatch, impossible and all-zero counters."""
    out: list[Issue] = []
    for run in runset.runs:
        c = run.counters
        if not len(c):
            continue
        label = run_label(run)
        dup = c.duplicated(["dispatch_id", "agent", "counter"], keep=False).to_numpy()
        if dup.any():
            ids = sorted(set(c["dispatch_id"].to_numpy()[dup].tolist()))
            message = (
                f"{int(dup.sum())} counter rows repeat a (dispatch, counter) of this process: counter passes of other processes "
                "with the same dispatch ids, summed as if one"
            )
            out.append(
                Issue(
                    "counter-duplicated", "unreliable", message, {"sections": list(COUNTER_SECTIONS), "processes": [label], "dispatch_ids": ids[:MAX_EXAMPLES]}
                )
            )
        value = c["value"].to_numpy()
        bad = np.isinf(value) | (value < 0)  # NaN: not recorded (model/schema.py)
        if bad.any():
            names = sorted(set(c["counter"].astype(str).to_numpy()[bad].tolist()))
            ids = sorted(set(c["dispatch_id"].to_numpy()[bad].tolist()))
            message = f"{int(bad.sum())} counter values are negative or infinite ({', '.join(names[:MAX_EXAMPLES])})"
            out.append(
                Issue(
                    "counter-impossible",
                    "unreliable",
                    message,
                    {"sections": list(COUNTER_SECTIONS), "processes": [label], "counters": names, "dispatch_ids": ids[:MAX_EXAMPLES]},
                )
            )
        out.extend(_all_zero(c, label))
        out.extend(_known_defective(run, c, label))
        out.extend(_above_peak(run, c, label))
    return out


def _grid_waves(run: Run) -> pd.Series:
    """The most waves each dispatch can launch (index: dispatch id): workgroups times waves
    per workgroup at the smallest wave size the GPU runs (32 on RDNA, gfx1*; else 64)."""
    k = run.kernels.drop_duplicates("dispatch_id")
    wg = k["wg_x"].to_numpy().astype(np.float64) * np.maximum(k["wg_y"].to_numpy(), 1) * np.maximum(k["wg_z"].to_numpy(), 1)
    grid = k["grid_x"].to_numpy().astype(np.float64) * np.maximum(k["grid_y"].to_numpy(), 1) * np.maximum(k["grid_z"].to_numpy(), 1)
    sizes = {a.id: a.wave_size or (32 if a.name.startswith("gfx1") else 64) for a in run.gpu_agents}
    wave = np.array([min(sizes.get(int(a), 32), 64) for a in k["agent"].to_numpy()], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        waves = np.where((wg > 0) & (grid > 0), np.ceil(wg / wave) * np.ceil(grid / wg), np.nan)
    return pd.Series(waves, index=k["dispatch_id"].to_numpy())


# GPU clock cycles over the dispatch (per XCC; rocprofv3 sums the XCCs of an MI300). A dispatch
# cannot count more than its duration times the agent's highest clock, times CYCLE_MARGIN (the
# counter window opens before the kernel starts and closes after it ends) plus CYCLE_SLACK_NS.
CYCLE_COUNTERS = ("GRBM_COUNT", "GRBM_GUI_ACTIVE")
CYCLE_MARGIN = 2.0  # [P] a real MI300X rocpd pass counts GRBM_COUNT over 17.7 µs for an 8.7 µs kernel
CYCLE_SLACK_NS = 50_000  # [P] the counter window's fixed overhead around a short kernel
XCC_MOST = {"gfx940": 6, "gfx941": 8, "gfx942": 8, "gfx950": 8}  # [P] an agent whose XCC count is not recorded: the most its family has


def _cycles_over(run: Run, c: pd.DataFrame, names: np.ndarray) -> dict[str, list[int]]:
    """Dispatches whose GPU clock counters exceed duration x highest clock (x XCCs), by counter."""
    out: dict[str, list[int]] = {}
    k = run.kernels
    if not len(k):
        return out
    # cycles per ns each agent can count: its highest clock times its XCCs
    clocks = {a.id: a.max_clock_mhz * (a.num_xcc or XCC_MOST.get(a.arch, 1)) / 1000.0 for a in run.gpu_agents if a.max_clock_mhz}
    if not clocks or not np.isin(names, CYCLE_COUNTERS).any():
        return out
    first = k.drop_duplicates("dispatch_id").set_index("dispatch_id")
    for counter in CYCLE_COUNTERS:
        rows = c[names == counter]
        if not len(rows):
            continue
        ids = rows["dispatch_id"].to_numpy()
        timed = first[(first["start"] != -1) & (first["end"] != -1)]  # a counter-only pass has no kernel times: nothing to bound by
        dur = (timed["end"] - timed["start"]).reindex(ids).to_numpy().astype(np.float64)
        per_ns = first["agent"].reindex(ids).map(clocks).to_numpy(dtype=np.float64)
        most = (dur * CYCLE_MARGIN + CYCLE_SLACK_NS) * per_ns
        over = rows["value"].to_numpy() > most  # NaN (no clock or kernel recorded): never over
        if over.any():
            out[counter] = ids[over].tolist()
    return out


def _above_peak(run: Run, c: pd.DataFrame, label: str) -> list[Issue]:
    """Counters above what the dispatch can reach: SQ_WAVES above the waves its grid launches
    (every real rocprofv3 and rocprof-compute pass of tests/data reads exactly that number), and
    GPU clock counters (CYCLE_COUNTERS) above what the agent's clock allows over the kernel's
    duration (:func:`_cycles_over`). GRBM_GUI_ACTIVE is not compared with GRBM_COUNT: counters
    of one dispatch come from different replays when collected in different passes (a real
    MI300X workload reads 2% more busy than elapsed cycles)."""
    names = c["counter"].astype(str).to_numpy()
    bad: dict[str, list[int]] = {}
    waves = c[names == "SQ_WAVES"]
    if len(waves) and len(run.kernels):
        most = _grid_waves(run).reindex(waves["dispatch_id"].to_numpy()).to_numpy()
        over = waves["value"].to_numpy() > most  # an exact count: one wave more is impossible; NaN (no grid recorded): never over
        if over.any():
            bad["SQ_WAVES"] = waves["dispatch_id"].to_numpy()[over].tolist()
    bad.update(_cycles_over(run, c, names))
    if not bad:
        return []
    ids = sorted({i for v in bad.values() for i in v})
    detail = ", ".join(f"{n} on {len(v)}" for n, v in bad.items())
    message = f"counters above what their dispatch can reach ({detail} dispatches): a counter read from another dispatch or GPU, or defective"
    return [
        Issue(
            "counter-above-peak",
            "unreliable",
            message,
            {"sections": list(COUNTER_SECTIONS), "processes": [label], "counters": sorted(bad), "dispatch_ids": ids[:MAX_EXAMPLES]},
        )
    ]


# The known-defective counters are the counter dictionaries' defects of kind "wrong" (the
# counter reads wrong values) and "zeros" (counters read all zero), each with the ROCm versions
# its source names (analysis/counterdict/*.toml, research/counters_hw.md): SQ_WAVES on gfx1151
# (ROCm/rocm-systems #3828, open), zero counters on gfx11 (#5683: fixed in 7.13; TheRock #6476).
DEFECT_KINDS = ("wrong", "zeros")


def _rocm_version(run: Run) -> str | None:
    """The ROCm version the run was recorded with, where a file says it (rocpd: the
    environment's ROCm path; rocprof-compute: sysinfo's ``rocm_version``); None when none does
    (rocprofv3's own version is the SDK's, not ROCm's)."""
    for extra in (run.meta.extra, *(a.extra for a in run.gpu_agents)):
        for key in ("rocm_version_from_env", "rocm_version"):
            value = extra.get(key)
            if value:
                return str(value)
    return None


def _arch_defects(arch: str) -> tuple[Any, ...]:
    try:
        d = counterdict.load(arch)
    except counterdict.UnknownArch:
        return ()
    return tuple((d, defect) for defect in d.defects if defect.kind in DEFECT_KINDS)


def _known_defective(run: Run, c: pd.DataFrame, label: str) -> list[Issue]:
    """Counters of the run that a public report says are wrong on its GPU (and ROCm version,
    where the report bounds it): a "wrong" defect when the counter was collected, a "zeros"
    defect when a counter it names reads 0 on every dispatch."""
    names = sorted({str(n) for n in pd.unique(c["counter"])})
    grouped = c.groupby("counter", observed=True)["value"]
    top, count = grouped.max(), grouped.count()
    zero = {str(n) for n in top.index if top[n] == 0 and count[n] >= 2}
    rocm = _rocm_version(run)
    out = []
    for arch in sorted({a.arch for a in run.gpu_agents if a.arch}):
        for d, defect in _arch_defects(arch):
            applies = defect.applies(rocm)
            if applies is False:
                continue
            hit = [n for n in names if defect.touches(n, d.block_of(n)) and (defect.kind != "zeros" or n in zero)]
            if not hit:
                continue
            bounded = bool(defect.rocm_from or defect.rocm_fixed)
            versions = f"; affects {defect.versions()}, this run's ROCm: {rocm or 'not recorded'}" if bounded else ""
            message = f"{', '.join(hit[:MAX_EXAMPLES])} on {arch}: {defect.text} ({defect.issue}{versions})"
            affects = {"sections": list(COUNTER_SECTIONS), "processes": [label], "counters": hit, "arch": arch, "issue": defect.issue}
            affects.update({"rocm": rocm, "rocm_versions": defect.versions()})
            out.append(Issue("counter-known-defective", "unreliable", message, affects))
    return out


def _all_zero(c: pd.DataFrame, label: str) -> list[Issue]:
    grouped = c.groupby("counter", observed=True)["value"]
    top, count = grouped.max(), grouped.count()
    zero = [str(n) for n in top.index if str(n) in NEVER_ZERO and top[n] == 0 and count[n] >= 2]
    if not zero:
        return []
    message = f"{len(zero)} counters read 0 on every dispatch ({', '.join(zero[:MAX_EXAMPLES])}): not collected, or defective on this GPU"
    return [Issue("counter-all-zero", "unreliable", message, {"sections": list(COUNTER_SECTIONS), "processes": [label], "counters": zero})]


# Counters that count work, not time: for one kernel with one grid and workgroup they do not
# depend on timing or on the pass. SQ_WAVES is exact (any second value is a defect); the others
# (instructions issued, workgroups and waves the SPI launched) may vary a little with the data,
# but not in modes a factor MODE_RATIO apart (or 0 beside non-zero readings: #3828's signature,
# 18.7% zeros and 18.8% doubled on gfx1151).
EXACT_WORK_COUNTERS = frozenset({"SQ_WAVES"})
WORK_COUNTER_PREFIXES = ("SQ_WAVES", "SQ_INSTS_", "SPI_CSN_")
MODE_RATIO = 2.0  # [P] consecutive sorted readings this far apart split two modes
SHAPE = ["name", "grid_x", "grid_y", "grid_z", "wg_x", "wg_y", "wg_z"]


def _work_counter_rows(runset: RunSet) -> pd.DataFrame | None:
    """Every work counter's reading joined to its dispatch's kernel name, grid and workgroup,
    with the process it came from (every process and pass of the run set)."""
    return concat_work_rows([frame for run in runset.runs if (frame := work_counter_rows(run)) is not None])


def work_counter_rows(run: Run, distinct: bool = False) -> pd.DataFrame | None:
    """:func:`_work_counter_rows` of one process (None: none); ``distinct``: only the rows that
    can change :func:`counter_modes`' issue (per counter, kernel shape, value and process, the
    MAX_EXAMPLES lowest dispatch ids), so the table does not grow with the dispatches."""
    c, k = run.counters, run.kernels
    if not len(c) or not len(k):
        return None
    names = c["counter"].astype(str)
    c = c[names.str.startswith(WORK_COUNTER_PREFIXES).to_numpy()]
    if not len(c):
        return None
    shape = k.drop_duplicates("dispatch_id").set_index("dispatch_id")[SHAPE]
    joined = shape.reindex(c["dispatch_id"].to_numpy())
    joined["counter"] = c["counter"].astype(str).to_numpy()
    joined["value"] = c["value"].to_numpy()
    joined["process"] = run_label(run)
    rows = joined.dropna(subset=["name", "value"]).reset_index()
    if distinct:
        rows["name"] = rows["name"].astype(str)
        rows = rows.sort_values("dispatch_id", kind="stable").groupby([*SHAPE, "counter", "value", "process"], dropna=False, observed=True).head(MAX_EXAMPLES)
        rows = rows.reset_index(drop=True)
    return rows


def concat_work_rows(frames: list[pd.DataFrame]) -> pd.DataFrame | None:
    """The processes' :func:`work_counter_rows` as one table (None: none)."""
    if not frames:
        return None
    rows = pd.concat(frames, ignore_index=True)
    rows["name"] = rows["name"].astype(str)
    return rows


def _modes(values: np.ndarray) -> list[float]:
    """The lowest reading of each mode of ``values``: sorted readings split where the next is
    MODE_RATIO times the last or more (or the last is 0 and the next is not)."""
    v = np.sort(values)
    cut = np.flatnonzero(np.where(v[:-1] > 0, v[1:] >= MODE_RATIO * v[:-1], v[1:] > 0)) + 1
    return [float(v[0])] + [float(x) for x in v[cut]]


def _multimodal_groups(rows: pd.DataFrame, counter: str) -> tuple[pd.Index, list[float]]:
    """(the kernel shapes whose readings of ``counter`` split, the readings' modes)."""
    mine = rows[rows["counter"].to_numpy() == counter]
    bad: list = []
    modes: set[float] = set()
    for key, values in mine.groupby(SHAPE, observed=True, dropna=True)["value"]:
        found = sorted(set(values.tolist())) if counter in EXACT_WORK_COUNTERS else _modes(values.to_numpy())
        if len(found) > 1:
            bad.append(key)
            modes.update(found)
    return pd.MultiIndex.from_tuples(bad, names=SHAPE) if bad else pd.Index([]), sorted(modes)


def counter_modes(runset: RunSet) -> list[Issue]:
    """A work count read differently for the same work: dispatches of one kernel with one grid
    and workgroup (in any process or pass of the run set) whose SQ_WAVES takes more than one
    value, or whose instruction, wave or workgroup counts (SQ_INSTS_*, SPI_CSN_*) fall in
    modes a factor MODE_RATIO apart. The work a grid does does not depend on the pass: modes are
    a defective counter (reported multi-modal on RDNA), or passes of different builds or inputs."""
    return counter_modes_of(_work_counter_rows(runset))


def counter_modes_of(rows: pd.DataFrame | None) -> list[Issue]:
    """:func:`counter_modes` of the processes' work counter rows (:func:`work_counter_rows`)."""
    if rows is None:
        return []
    out = []
    for counter in sorted(set(rows["counter"])):
        bad, modes = _multimodal_groups(rows, counter)
        if not len(bad):
            continue
        mine = rows[rows["counter"].to_numpy() == counter]
        hit = mine.set_index(SHAPE).index.isin(bad)
        names = sorted({str(i[0]) for i in bad})
        exact = "the waves a grid launches do not vary" if counter in EXACT_WORK_COUNTERS else f"readings {MODE_RATIO:g}x or more apart"
        message = (
            f"{counter} takes several values for the same kernel and grid ({len(names)} kernel(s), values "
            f"{', '.join(f'{v:g}' for v in modes[:MAX_EXAMPLES])}): {exact}, so the counter (or the passes compared) is not to be trusted"
        )
        affects = {
            "sections": list(COUNTER_SECTIONS),
            "processes": sorted(set(mine.loc[hit, "process"])),
            "counters": [counter],
            "modes": modes[:MAX_EXAMPLES],
            "kernels": names[:MAX_EXAMPLES],
            "dispatch_ids": sorted({int(d) for d in mine.loc[hit, "dispatch_id"]})[:MAX_EXAMPLES],
        }
        out.append(Issue("counter-multimodal", "unreliable", message, affects))
    return out


# --- what the loaders noticed ------------------------------------------------------------------


def packets(runset: RunSet) -> list[Issue]:
    """Non-kernel AQL packets: those the loaders kept out, and any still in a kernel table."""
    out: list[Issue] = []
    for run in runset.runs:
        for item in run.meta.extra.get("non_kernel_packets", []):
            message = (
                f"{item['calls']} {item['name']} rows ({item['source']}, {item['total_ns'] / 1e9:,.1f} s) are not kernel dispatches: "
                "kept out of the kernel tables"
            )
            out.append(Issue("non-kernel-packets", "info", message, {"sections": [], "processes": [run_label(run)], **item}))
        k = run.kernels
        if not len(k):
            continue
        cats = category_array(k, "name").categories
        bad = [str(n) for n in cats if str(n).startswith("<") and str(n).endswith(">") and "packet" in str(n)]
        if bad:
            rows = np.flatnonzero(k["name"].isin(bad).to_numpy())
            if len(rows):
                where = _where(run, "kernels", rows)
                out.append(
                    Issue(
                        "packet-in-kernels",
                        "unreliable",
                        f"{len(rows)} kernel rows are AQL packets, not kernels ({bad[0]})",
                        {"sections": list(KERNEL_SECTIONS), **where},
                    )
                )
    return out


def files(runset: RunSet) -> list[Issue]:
    """Files that could not be loaded, or only in part."""
    return files_unloaded(runset.errors) + [issue for run in runset.runs for issue in run_read_in_part(run)]


def files_unloaded(errors: list[LoadIssue]) -> list[Issue]:
    """The files the load could not read (:func:`files`' first issue)."""
    if not errors:
        return []
    message = f"{len(errors)} files could not be loaded: " + "; ".join(str(e) for e in errors[:MAX_EXAMPLES])
    return [Issue("file-unreadable", "degraded", message, {"sections": ["source", "measurement"], "files": [e.path for e in errors]})]


def run_read_in_part(run: Run) -> list[Issue]:
    """``run`` read only in part (:func:`files` of one process)."""
    if not run.partial:
        return []
    message = f"{run_label(run)}: some of its files were read only in part (truncated or damaged rows dropped)"
    affects = {"sections": list(KERNEL_SECTIONS + TIME_SECTIONS), "processes": [run_label(run)], "files": list(run.meta.files)}
    return [Issue("file-unreadable", "degraded", message, affects)]


# --- separate recordings in one folder ---------------------------------------------------------


def _after_on_one_clock(metas: Sequence[RunMeta], group: list[int], i: int) -> bool:
    """Process ``i`` starts after every process of ``group`` ended, on the same host (one
    clock: the order is real) and without a distributed rank beside ranked ones: a program
    run after the others (one more session in the folder), not a rank of their job."""
    meta = metas[i]
    hosts = {metas[j].hostname for j in group}
    ranked = meta.rank is not None and all(metas[j].rank is not None for j in group)
    return hosts == {meta.hostname} and not ranked


def recordings(runset: RunSet) -> list[list[int]]:
    """The run set's processes grouped into recordings: processes whose time ranges (with every
    row's timestamps, :func:`time_range`) overlap are one recording; so are processes within an
    hour of each other on different hosts (clocks the ranks' alignment may still correct) or
    all with distributed ranks, while a process that starts more than SESSION_GAP_NS after the
    others ended on the same host is a recording of its own (a program run later; processes of
    one script or test suite that run one after another within a minute stay one recording), and
    so is a process (host, pid, rank) already in the recording: another profiler session of it
    (the assembly keeps sessions apart, loaders/sessions.py); processes without timestamps join the recording before them in load order
    (the first when none), except counter passes recorded by another process than the trace
    (``meta.extra["counter_pass_of"]``, loaders/rocprofv3_csv.py): each is a recording of its
    own. Indices into ``runset.runs``; one group when all belong together."""
    return recordings_of([time_range(run) for run in runset.runs], [run.meta for run in runset.runs])


def recordings_of(ranges: Sequence[tuple[int, int] | None], metas: Sequence[RunMeta]) -> list[list[int]]:
    """:func:`recordings` of processes given by their time ranges (:func:`time_range`) and
    metadata, in the run set's order."""
    spans = list(enumerate(ranges))
    timed = sorted((span[0], span[1], i) for i, span in spans if span is not None)
    groups: list[list[int]] = []
    reach = None
    held: set[tuple] = set()  # the processes of the last recording
    for lo, hi, i in timed:
        pooled = lo - reach <= SESSION_GAP_NS or not _after_on_one_clock(metas, groups[-1], i) if reach is not None else False
        process = process_identity(metas[i])
        again = process is not None and process in held  # another profiler session of a process already in it
        if groups and reach is not None and lo - reach <= CLUSTER_GAP_NS and pooled and not again:
            groups[-1].append(i)
            if process is not None:
                held.add(process)
            reach = max(reach, hi)
        else:
            groups.append([i])
            reach = hi
            held = {process} if process is not None else set()
    if not groups:
        return [list(range(len(metas)))]
    alone = []
    for i, span in spans:
        if span is None and "counter_pass_of" in metas[i].extra:
            alone.append([i])  # a counter pass another process recorded: a recording of its own, never a rank of the trace
        elif span is None:
            before = [g for g in groups if min(g) < i]
            (before[-1] if before else groups[0]).append(i)
    return [sorted(g) for g in groups] + alone


def _time_column(table: pd.DataFrame) -> str | None:
    return "start" if "start" in table.columns else ("ts" if "ts" in table.columns else None)


def _clusters(run: Run) -> list[tuple[int, int]]:
    """The time ranges of ``run``'s timed rows (every table with a start or ts column), split
    where no row at all starts for CLUSTER_GAP_NS; in time order."""
    pieces: list[tuple[int, int]] = []
    for name in TABLES:
        table = run.table(name)
        col = _time_column(table)
        if col is None or not len(table):
            continue
        start = table[col].to_numpy()
        end = table["end"].to_numpy() if "end" in table.columns else start
        pieces.extend(_segments(start, end))
    pieces.sort()
    merged: list[list[int]] = []
    for a, b in pieces:
        if merged and a - merged[-1][1] <= CLUSTER_GAP_NS:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def _known_start_range(start: np.ndarray, in_order: bool) -> tuple[int, int] | None:
    """(first, last) of the starts that are not UNKNOWN (-1): a look at each end when they are
    in order (-1 rows first), else a pass."""
    if not len(start):
        return None
    if in_order:
        at = 0 if int(start[0]) != -1 else int(np.searchsorted(start, -1, side="right"))
        return (int(start[at]), int(start[-1])) if at < len(start) else None
    known = start[start != -1]
    return (int(known.min()), int(known.max())) if len(known) else None


def _may_split(run: Run) -> bool:
    """Whether :func:`split_run` could cut ``run``: a cut needs a gap of more than
    CLUSTER_GAP_NS between starts, so the starts must span more than that."""
    facts = run_facts(run)
    lo, hi = None, None
    for name in TABLES:
        table = run.table(name)
        col = _time_column(table)
        if col is None or not len(table):
            continue
        start = column_array(table, col)
        found = _known_start_range(start, facts.table(name).start_sorted if col == "start" and "end" in table.columns else _is_sorted(start))
        if found is not None:
            lo, hi = found if lo is None or hi is None else (min(lo, found[0]), max(hi, found[1]))
    return lo is not None and hi is not None and hi - lo > CLUSTER_GAP_NS


def split_run(run: Run) -> list[Run]:
    """``run`` cut into one run per recording when a loader merged files of separate
    recordings into one process (its rows fall in time clusters more than an hour apart: the
    rocprofv3 documentation's sample folder). Rows go to the cluster holding their start;
    rows without a timestamp to the first; counter and metric rows follow their dispatch;
    the profiler's statistics files cover every recording and are left out of the parts (said
    in each part's warnings). ``[run]`` when it is one recording."""
    if not _may_split(run):
        return [run]
    clusters = _clusters(run)
    if len(clusters) < 2:
        return [run]
    bounds = np.array([b for _, b in clusters[:-1]], dtype=np.int64)
    parts = [
        Run(
            meta=replace(
                run.meta, label=f"{run_label(run)} · part {n}", formats=list(run.meta.formats), files=list(run.meta.files), extra=dict(run.meta.extra)
            ),
            agents=list(run.agents),
            warnings=list(run.warnings)
            + ([f"the statistics files ({', '.join(sorted(run.tool_stats))}) cover every recording: left out"] if run.tool_stats else []),
            partial=run.partial,
        )
        for n in range(1, len(clusters) + 1)
    ]
    for name in TABLES:
        table = run.table(name)
        col = _time_column(table)
        if not len(table) or col is None:
            continue
        t = table[col].to_numpy()
        which = np.where(t == -1, 0, np.searchsorted(bounds, t, side="left"))
        for n, part in enumerate(parts):
            setattr(part, name, table[which == n].reset_index(drop=True))
    for name in ("counters", "metrics"):  # no time of their own: with their dispatch's kernel
        table = run.table(name)
        if not len(table) or "dispatch_id" not in table.columns:
            continue
        for part in parts:
            setattr(part, name, table[_member(table["dispatch_id"].to_numpy(), part.kernels["dispatch_id"].to_numpy())].reset_index(drop=True))
    return [part for part in parts if any(len(part.table(name)) for name in TABLES)]


def split_recordings(runset: RunSet) -> RunSet:
    """``runset`` with every process that holds several recordings cut into one run per
    recording (:func:`split_run`); the same object when none does."""
    runs = [part for run in runset.runs for part in split_run(run)]
    return runset if len(runs) == len(runset.runs) else RunSet(runset.root, runs, list(runset.issues))


def separate_recordings(runset: RunSet) -> list[Issue]:
    """A note when the run set holds several recordings (:func:`recordings` of the processes
    cut at their own gaps, :func:`split_recordings`, as :func:`pick_recording` counts them:
    processes that did not run together, separate profiler sessions of one process): each
    figure of ``summary``, ``open`` and ``export`` comes from one of them (``--recording N``),
    never from their pool."""
    parts = split_recordings(runset).runs
    if len(parts) < 2:  # one recording: no time range needed
        return []
    return separate_recordings_of([time_range(part) for part in parts], [part.meta for part in parts], [run_label(part) for part in parts])


def recording_units(run: Run) -> list[tuple[tuple[int, int] | None, RunMeta, str]]:
    """(time range, metadata, label) of each recording ``run`` holds (:func:`split_run`): what
    :func:`separate_recordings_of` groups."""
    return [(time_range(part), part.meta, run_label(part)) for part in split_run(run)]


def separate_recordings_of(ranges: Sequence[tuple[int, int] | None], metas: Sequence[RunMeta], labels: Sequence[str]) -> list[Issue]:
    """:func:`separate_recordings` of processes given by their time ranges, metadata and labels."""
    if len(metas) < 2:
        return []
    groups = recordings_of(ranges, metas)
    if len(groups) < 2:
        return []
    listed = [{"recording": n, "processes": [labels[i] for i in g[:MAX_EXAMPLES]]} for n, g in enumerate(groups[:MAX_EXAMPLES], 1)]
    message = (
        f"the run holds {len(groups)} separate recordings (processes or profiler sessions that did not run together): summary, open and "
        "export use one of them at a time"
    )
    return [Issue("separate-recordings", "info", message, {"sections": [], "recordings": listed, "count": len(groups)})]


def recording_runset(runset: RunSet, indices: list[int]) -> RunSet:
    """The run set of one recording (same root and load issues)."""
    return RunSet(runset.root, [runset.runs[i] for i in indices], list(runset.issues))


@dataclass
class RecordingChoice:
    """What :func:`pick_recording` chose: ``runset`` (the chosen recording's run set; the
    whole when it holds one), ``chosen`` (1-based) of ``count``, ``listing`` (one line per
    recording: processes, dispatches, start, labels; ``*`` marks the chosen), ``error`` (a bad
    N: what is wrong; ``runset`` is then the whole), ``split`` and ``groups`` (where it holds
    several: what the listing was made from, for a picker to list them without splitting again)."""

    runset: RunSet
    count: int
    chosen: int
    listing: list[str]
    error: str | None = None
    split: RunSet | None = None  # the whole, each process cut into its recordings (:func:`split_recordings`)
    groups: list[list[int]] = field(default_factory=list)  # each recording's runs of ``split``, in ``--recording N`` order


def pick_recording(runset: RunSet, wanted: int | None = None) -> RecordingChoice:
    """One recording of ``runset`` (issue 32): processes that hold several recordings are split
    (:func:`split_recordings`), the processes grouped (:func:`recordings`), and recording
    ``wanted`` (1-based) chosen, else the one with the most kernel dispatches."""
    split = split_recordings(runset)
    runs = split.runs
    found = choose_recording(
        [time_range(run) for run in runs], [run.meta for run in runs], [run_label(run) for run in runs], [len(run.kernels) for run in runs], wanted
    )
    if found.count < 2 or found.error:
        return RecordingChoice(runset, found.count, found.chosen, [], found.error)
    return RecordingChoice(recording_runset(split, found.groups[found.chosen - 1]), found.count, found.chosen, found.listing, split=split, groups=found.groups)


@dataclass(frozen=True)
class RecordingPick:
    """What :func:`choose_recording` decided: ``count`` recordings, ``chosen`` (1-based; 0 on
    a bad N), one ``listing`` line per recording where there are several, each recording's
    processes (``groups``: indices in the run set's order) and the ``error`` of a bad N."""

    count: int
    chosen: int
    listing: list[str]
    groups: list[list[int]]
    error: str | None = None


def choose_recording(
    ranges: Sequence[tuple[int, int] | None], metas: Sequence[RunMeta], labels: Sequence[str], dispatches: Sequence[int], wanted: int | None = None
) -> RecordingPick:
    """:func:`pick_recording`'s rule over processes given by their time ranges, metadata,
    labels and kernel dispatches (in the run set's order, each process already cut into its
    recordings): the processes grouped (:func:`recordings_of`) and recording ``wanted``
    (1-based) chosen, else the one with the most kernel dispatches (ties: the first)."""
    groups = recordings_of(ranges, metas)
    if len(groups) < 2:
        error = None if wanted in (None, 1) else f"--recording {wanted}: the run holds one recording"
        return RecordingPick(1, 1, [], groups, error)
    if wanted is not None and not 1 <= wanted <= len(groups):
        return RecordingPick(len(groups), 0, [], groups, f"--recording {wanted}: the run holds {len(groups)} recordings (1..{len(groups)})")
    sizes = [sum(dispatches[i] for i in g) for g in groups]
    chosen = wanted if wanted is not None else 1 + max(range(len(groups)), key=lambda g: (sizes[g], -g))
    listing = []
    for n, group in enumerate(groups, 1):
        spans = [r for r in (ranges[i] for i in group) if r]
        start = f"starts at {min(lo for lo, _ in spans)} ns" if spans else "no timestamps"
        names = ", ".join(labels[i] for i in group[:4]) + (f" and {len(group) - 4} more" if len(group) > 4 else "")
        listing.append(f"[{n}] {'*' if n == chosen else ' '} {len(group)} process(es), {sizes[n - 1]} dispatches, {start}: {names}")
    return RecordingPick(len(groups), chosen, listing, groups)


# --- the registry ------------------------------------------------------------------------------

# Every check with its name, in the order the report lists them. A new check: a function and a line here.
CHECKS: tuple[tuple[str, Check], ...] = (
    ("clock-domains", clock_domains),
    ("durations", durations),
    ("queue-overlap", queue_overlap),
    ("order", out_of_order),
    ("launch-links", launch_links),
    ("record-ends", record_ends),
    ("bandwidth", bandwidth),
    ("counters", counters),
    ("counter-modes", counter_modes),
    ("packets", packets),
    ("files", files),
    ("recordings", separate_recordings),
)


def check_run(runset: RunSet, checks: Iterable[tuple[str, Check]] = CHECKS) -> CheckReport:
    """Every check of ``checks`` on ``runset``; the issues most severe first (ties in check order)."""
    names, issues = [], []
    with shared_facts():
        for name, check in checks:
            names.append(name)
            issues.extend(check(runset))
    issues.sort(key=lambda i: -SEVERITIES.index(i.severity))
    return CheckReport(runset.root, issues, names)


def check_document(run: RunSet) -> dict[str, Any]:
    """The ``tuiprof.check/1`` document of ``run`` (what ``tuiprof check --json`` prints)."""
    return check_run(run).record()
