"""Per-rank partials: a rank's contribution to the summary, small and serialisable, and their exact merge.

A run of thousands of ranks is summarised without holding every kernel in one process:
each rank (a process) is reduced on its own (:func:`rank_partials`, in a worker process or
on a cluster) to a :class:`RankPartial`, and the driver merges the partials
(:class:`PartialMerge`) into the sections of the ``tuiprof.summary/1`` document that are
exact functions of them (``MERGED_SECTIONS``; docs/cluster.md):

* ``hotspots``, ``hotspots_by`` (normalized, category, agent, process), ``categories``,
  ``kernels``: per group the distinct durations and how often each occurs (integers), and
  the group's busy time (the union of its kernels' intervals in the process). Calls, total,
  min, max and the median are read off the merged counts exactly; the sample standard
  deviation comes from the exact integer moments (n, Σd, Σd²) and is rounded to 0.01 ns
  as the in-process two-pass figure is, so both print the same value;
* ``ranks``, ``communication``, ``stragglers``: the rank's :class:`~tui_prof.analysis.ranks.RankCore`
  figures (integers) and its collectives in start order (type, duration, bytes, group
  size, start: one entry per collective kernel), fed into the one instance reducer
  (:class:`~tui_prof.analysis.ranks.InstanceTable`, the in-process summary's too) as the
  partial arrives and dropped: the driver keeps O(instances) per collective type, not
  O(ranks × collectives); the critical path's wait table and ranks on the path come from it
  (:meth:`PartialMerge.wait_table`, :meth:`PartialMerge.ranks_on_path`);
* ``gpu``, ``gaps``: the process's per-agent timeline rows (busy, idle, gaps by cause) and
  its ``max_gaps`` longest gaps; the run's listed gaps are the longest of those, ties in
  rank then (agent, start) order, as over the whole run;
* ``sync``: the process's sync and blocking-copy figures (integers, its call names in
  first-seen order, its own share of its wall), folded in the run set's order;
* ``copies``, ``copies_source``: per (kind, direction) the process's copy counts, bytes and
  time (integers), its slowest, fastest and first copy's bandwidth, the union of its copies;
* ``platform``, ``agents``: the process's own vendor evidence and agent records (for the
  vendor-dependent wording, both variants), combined in the run set's order;
* ``processes`` and ``wall_ns``: the process record and the (clock, time range) of each rank;
* ``launch``: the launch counts (integers) and the distinct queue delays, API times and
  kernel durations with their counts; medians and the p90 are read off the merged counts as
  numpy computes them over every value;
* ``api``: (calls, ns) per (domain, function), or the API statistics tables without a trace;
* ``counters``, ``occupancy``: the process's counters block (both vendor wordings) and its
  occupancy rows; ``hotspots_by_operator``, ``hotspots_by_module``: the process's parts of
  the operator fold (:func:`~tui_prof.analysis.operators.operator_part`);
* ``trust`` (of the merged sections) and ``tuiprof check``: the process's part of the
  integrity report (:class:`CheckPartial`), merged by :func:`merged_check`;
* ``stats``, ``source``, ``warnings``: the process's statistics tables as the profiler wrote
  them (one row per name), their disagreements with its own trace and its load warnings
  (:class:`StatsPartial`); the tables are combined over the processes by the in-process
  function (:func:`~tui_prof.analysis.stats.stats_tables`), the load's errors and skipped
  files come from the driver's scan and the ranks' loads. Without any kernel trace the
  kernel statistics stand in for ``kernels``, ``hotspots`` and ``categories``, as in one process.

The steps, the warm-up, the memory and the measurement need the slowest rank's events for
the combined steps' outliers (the rank is loaded again: ``PartialMerge.load``); the critical
path, its ``critical_ns`` columns and the findings need a second pass over the ranks once the
steps are combined (:mod:`tui_prof.analysis.pathpartials`, run by :func:`merged_sections`'
``paths``). A partial's size grows with the distinct kernel durations of the rank, not with
its dispatches' count.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from tui_prof.analysis import aggregate, hostapi
from tui_prof.analysis import stats as tool_stats
from tui_prof.analysis.copies import copies_of_parts, copies_part
from tui_prof.analysis.counters import counter_metrics
from tui_prof.analysis.critical import has_window, ranks_on_path_of, step_parts
from tui_prof.analysis.gpu_idle import RunTimeline, gap_records, gaps_of_rows, gpu_of_rows, listed_gaps, run_timeline
from tui_prof.analysis.hostcalls import api_of_totals, api_totals, launch_links, sync_of_parts, sync_part
from tui_prof.analysis.hotspots import HOTSPOT_COLUMNS, group_busy, group_key, hotspot_records, process_order
from tui_prof.analysis.integrity import (
    CHECKS,
    SEVERITIES,
    CheckReport,
    Issue,
    clock_domains_of,
    clock_pieces,
    concat_work_rows,
    counter_modes_of,
    files_unloaded,
    recording_units,
    run_read_in_part,
    separate_recordings_of,
    shared_facts,
    split_run,
    work_counter_rows,
)
from tui_prof.analysis.kernel_tables import GROUPED_BY, stats_categories, stats_hotspots
from tui_prof.analysis.measurement import measurement_section, peak_memory
from tui_prof.analysis.memory import API as MEMORY_API
from tui_prof.analysis.memory import TOTALS as MEMORY_TOTALS
from tui_prof.analysis.memory import api_requests, memory_devices, memory_of_parts, trace_rows
from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES, CategoryRules
from tui_prof.analysis.occupancy import kernel_occupancy
from tui_prof.analysis.operators import (
    OperatorPart,
    has_operators,
    kernel_categories_by_op,
    link_operators,
    module_part,
    modules_of_parts,
    operator_part,
    operators_of_parts,
)
from tui_prof.analysis.platform import MIXED, UNKNOWN, detect_platform
from tui_prof.analysis.processes import agent_records, logs_section, process_records, source_section_of, warnings_of
from tui_prof.analysis.ranks import InstanceTable, RankCore, WaitTable, rank_numbers, sections_of_table
from tui_prof.analysis.runinput import RunInput, has_gpu_activity, run_inputs, run_label, time_range
from tui_prof.analysis.sections import (
    ApiSection,
    CommunicationSection,
    GapRecord,
    GapsSection,
    GpuSection,
    LaunchSection,
    MemoryDevice,
    MemoryRequest,
    MemorySection,
    PlatformSection,
    ProcessRecord,
    RankRecord,
    Record,
    SourceSection,
    StatsSection,
    StepRecord,
    StepsSection,
    StragglerSection,
)
from tui_prof.analysis.stats import API_STATS
from tui_prof.analysis.steps import OUTLIER_FACTOR, StepsFold, describe_by_label, empty_steps_section, steps_of
from tui_prof.analysis.timeline import DEFAULT_GAP_THRESHOLD_NS
from tui_prof.analysis.warmup import warmup_of
from tui_prof.model import Agent, LoadIssue, Run, RunMeta, RunSet
from tui_prof.model.schema import TABLES, empty_table

if TYPE_CHECKING:
    from tui_prof.analysis.pathpartials import PathMerge, PathPlan

PARTIAL_SCHEMA = "tuiprof.rankpartial/1"
GROUPINGS = ("name",) + GROUPED_BY  # name, category, normalized, agent, pid

# the summary's sections a merge of partials reproduces exactly, in the document's order
MERGED_SECTIONS = (
    "source",
    "processes",
    "agents",
    "platform",
    "kernels",
    "hotspots",
    "hotspots_source",
    "warnings",
    "wall_ns",
    "gpu",
    "gaps",
    "sync",
    "launch",
    "copies",
    "copies_source",
    "api",
    "categories",
    "category_rules",
    "hotspots_by",
    "hotspots_by_operator",
    "hotspots_by_module",
    "measurement",
    "counters",
    "occupancy",
    "logs",
    "stats",
    "steps",
    "memory",
    "findings",
    "ranks",
    "communication",
    "stragglers",
    "critical_path",
    "warmup",
    "trust",
)


@dataclass(frozen=True)
class GroupCounts:
    """One group (a kernel name, a category, ...) of one rank: its distinct durations
    (ascending, int64 ns), how many kernels lasted each, and its busy time (ns)."""

    values: np.ndarray
    counts: np.ndarray
    busy_ns: int


@dataclass(frozen=True)
class TimelinePartial:
    """The GPU timeline of one process: its per-agent rows (busy, idle, gaps by cause), its
    gap count and its ``max_gaps`` longest gaps as records, in (agent, start) order."""

    agents: list[Record]
    count: int
    listed: list[tuple[int, GapRecord]]  # (duration ns, record)


# integrity checks whose issues are the processes' own, concatenated in the run set's order;
# the others (clock-domains, counter-modes, files) compare processes and are merged from parts
PER_PROCESS_CHECKS = ("durations", "queue-overlap", "order", "launch-links", "record-ends", "bandwidth", "counters", "packets")


@dataclass(frozen=True)
class CheckPartial:
    """One process's part of the integrity report (:func:`~tui_prof.analysis.integrity.check_run`):
    the issues of the checks that look at one process at a time (by check name), its clock
    segments, its distinct work counter readings, its read-in-part issue, and its time range,
    metadata and label (how the recordings are told apart)."""

    root: str
    issues: dict[str, list[Issue]]
    pieces: list[tuple[int, int, str]]
    work: pd.DataFrame | None
    in_part: list[Issue]
    range: tuple[int, int] | None = None
    meta: RunMeta | None = None
    label: str = ""
    # (range, meta, label) of each recording the process holds (integrity.recording_units)
    units: list[tuple[tuple[int, int] | None, RunMeta, str]] = field(default_factory=list)


def check_partial(root: str, run: Run) -> CheckPartial:
    one = RunSet(root, [run])
    with shared_facts():  # the checks and the clock pieces share the process's facts, as in check_run
        issues = {name: check(one) for name, check in CHECKS if name in PER_PROCESS_CHECKS}
        pieces, units = clock_pieces(run), recording_units(run)
    work = work_counter_rows(run, distinct=True)
    return CheckPartial(root, issues, pieces, work, run_read_in_part(run), time_range(run), run.meta, run_label(run), units)


def merged_check(parts: Sequence[CheckPartial], errors: Sequence[LoadIssue], root: str) -> CheckReport:
    """The integrity report of the whole run from its processes' parts (in the run set's
    order) and the load's errors: what :func:`~tui_prof.analysis.integrity.check_run` gives."""
    names: list[str] = []
    issues: list[Issue] = []
    for name, _check in CHECKS:
        names.append(name)
        if name in PER_PROCESS_CHECKS:
            issues.extend(i for part in parts for i in part.issues.get(name, []))
        elif name == "clock-domains":
            issues.extend(clock_domains_of([piece for part in parts for piece in part.pieces]))
        elif name == "counter-modes":
            issues.extend(counter_modes_of(concat_work_rows([part.work for part in parts if part.work is not None])))
        elif name == "files":
            issues.extend(files_unloaded(list(errors)) + [i for part in parts for i in part.in_part])
        elif name == "recordings":
            units = [unit for part in parts for unit in (part.units or [(part.range, part.meta or RunMeta(), part.label)])]
            issues.extend(separate_recordings_of([u[0] for u in units], [u[1] for u in units], [u[2] for u in units]))
        else:  # a check added to the registry without a partial: the merged report would miss it
            raise ValueError(f"integrity check {name!r} has no partial")
    issues.sort(key=lambda i: -SEVERITIES.index(i.severity))
    return CheckReport(root, issues, names)


Counts = tuple[np.ndarray, np.ndarray]  # distinct values (ascending int64) and how often each occurs


def value_counts(values: np.ndarray) -> Counts:
    uniq, counts = np.unique(np.asarray(values, dtype=np.int64), return_counts=True)
    return uniq, counts.astype(np.int64)


def merged_counts(parts: Sequence[Counts]) -> Counts:
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    values = np.concatenate([p[0] for p in parts])
    uniq, inverse = np.unique(values, return_inverse=True)
    return uniq, _sum_by(inverse, np.concatenate([p[1] for p in parts]), len(uniq))


def _at(values: np.ndarray, cum: np.ndarray, i: int) -> int:
    """The ``i``-th smallest (0-based) of the values counted in ``cum`` (their cumulative counts)."""
    return int(values[int(np.searchsorted(cum, i, side="right"))])


def median_of(c: Counts) -> float:
    """``np.median`` of the values ``c`` counts (not empty)."""
    values, counts = c
    n = int(counts.sum())
    cum = np.cumsum(counts)
    return (float(_at(values, cum, (n - 1) // 2)) + float(_at(values, cum, n // 2))) / 2.0


def percentile_of(c: Counts, q: float) -> float:
    """``np.percentile(..., q)`` (linear) of the values ``c`` counts (not empty): numpy's
    virtual index and its interpolation, step for step."""
    values, counts = c
    n = int(counts.sum())
    cum = np.cumsum(counts)
    index = np.float64(n - 1) * np.true_divide(q, 100)
    below = np.floor(index)
    gamma = float(index - below)
    lo = _at(values, cum, int(below))
    hi = _at(values, cum, min(int(below) + 1, n - 1))
    diff = float(hi - lo)
    return hi - diff * (1 - gamma) if gamma >= 0.5 else lo + diff * gamma


def _sum_below(c: Counts, limit: int) -> tuple[int, int]:
    """(how many, their sum) of the counted values below ``limit``."""
    values, counts = c
    below = values < limit
    return int(counts[below].sum()), int((values[below] * counts[below]).sum())


LAUNCH_COUNTS = ("launch_calls", "graph_launch_calls", "api_total_ns", "graph_launch_api_ns", "linked_dispatches", "graph_dispatches")


@dataclass(frozen=True)
class LaunchPartial:
    """One process's part of the ``launch`` section: its launch counts (integers), the counted
    queue delays and API times of its directly launched dispatches, its kernels' durations
    (all, and those no graph replayed) and the union of its launch calls (ns)."""

    counts: dict[str, int]
    queue: Counts
    api: Counts
    kernels: Counts
    direct: Counts
    launching: int


def launch_partial(r: RunInput) -> LaunchPartial:
    """What one process adds to :func:`~tui_prof.analysis.hostcalls.launch_section`."""
    run, classes = r.run, r.index.classes
    links = launch_links(r)
    direct = ~links["graph"].to_numpy()
    kd = run.kernels["end"].to_numpy() - run.kernels["start"].to_numpy()
    replayed = np.zeros(len(kd), dtype=bool)
    replayed[links["kernel_row"].to_numpy()[~direct]] = True
    launching = 0
    if len(run.api):
        mask = (classes == hostapi.LAUNCH) | (classes == hostapi.GRAPH_LAUNCH)
        launching = int(aggregate.interval_union(run.api["start"].to_numpy(), run.api["end"].to_numpy(), mask))
    return LaunchPartial(
        {k: int(v) for k, v in hostapi.launch_counts(run.api, classes, links).items()},  # type: ignore[call-overload]
        value_counts(links["queue_delay_ns"].to_numpy()[direct]),
        value_counts(links["api_dur_ns"].to_numpy()[direct]),
        value_counts(kd),
        value_counts(kd[~replayed]),
        launching,
    )


def launch_of_parts(parts: Sequence[LaunchPartial], process_ns: int) -> LaunchSection:
    """:func:`~tui_prof.analysis.hostcalls.launch_section` from the processes' parts (exact:
    medians and the p90 from the merged counts, as numpy computes them over every value)."""
    counts = {key: sum(p.counts.get(key, 0) for p in parts) for key in LAUNCH_COUNTS}
    queue, api = merged_counts([p.queue for p in parts]), merged_counts([p.api for p in parts])
    kd, direct = merged_counts([p.kernels for p in parts]), merged_counts([p.direct for p in parts])
    n, nd = int(kd[1].sum()), int(direct[1].sum())
    total, direct_total = int((kd[0] * kd[1]).sum()), int((direct[0] * direct[1]).sum())
    linked = bool(api[1].sum())
    tiny, tiny_ns = _sum_below(kd, hostapi.TINY_KERNEL_NS)
    graphs = counts["graph_launch_calls"]
    direct_avg = float(np.float64(direct_total) / np.float64(nd)) if nd else None
    return {
        "launch_calls": counts["launch_calls"],
        "graph_launch_calls": graphs,
        "linked_dispatches": counts["linked_dispatches"],
        "graph_dispatches": counts["graph_dispatches"],
        "api_total_ns": int(counts["api_total_ns"]),
        "graph_launch_api_ns": int(counts["graph_launch_api_ns"]),
        "api_pct_of_wall": aggregate.pct(sum(p.launching for p in parts), process_ns),
        "median_api_ns": median_of(api) if linked else None,
        "median_queue_delay_ns": median_of(queue) if linked else None,
        "p90_queue_delay_ns": percentile_of(queue, 90) if linked else None,
        "median_kernel_ns": median_of(kd) if n else None,
        "avg_kernel_ns": float(np.float64(total) / np.float64(n)) if n else None,
        "tiny_kernel_threshold_ns": hostapi.TINY_KERNEL_NS,
        "tiny_kernels": tiny,
        "tiny_kernel_time_ns": tiny_ns,
        "many_tiny_kernels": bool(nd > hostapi.MANY_LAUNCHES and direct_avg is not None and direct_avg < hostapi.TINY_KERNEL_NS) if nd else False,
        "direct_kernels": nd,
        "direct_avg_kernel_ns": direct_avg,
        "direct_tiny_kernels": _sum_below(direct, hostapi.TINY_KERNEL_NS)[0],
        "launches_per_graph": round(counts["graph_dispatches"] / graphs, 4) if graphs else None,
    }


def _merged_launch(parts: Sequence[LaunchPartial]) -> LaunchPartial:
    """Several processes' launch parts as one (sums and merged counts)."""
    return LaunchPartial(
        {key: sum(p.counts.get(key, 0) for p in parts) for key in LAUNCH_COUNTS},
        merged_counts([p.queue for p in parts]),
        merged_counts([p.api for p in parts]),
        merged_counts([p.kernels for p in parts]),
        merged_counts([p.direct for p in parts]),
        sum(p.launching for p in parts),
    )


@dataclass(frozen=True)
class StatsPartial:
    """One process's part of the ``stats``, ``source`` and ``warnings`` sections: its
    statistics tables as the profiler wrote them (one row per name: small), how they were
    written (:func:`~tui_prof.analysis.stats.tool_of`), whether it recorded trace rows, the
    names on which its statistics disagree with its own trace, its load warnings and whether
    it holds counter values (the serialisation warning)."""

    tool: str
    tables: dict[str, pd.DataFrame]
    traced: bool
    checks: list[Record]
    warnings: list[str]
    counters: bool


def stats_partial(r: RunInput) -> StatsPartial:
    """What one process adds to the ``stats`` and ``warnings`` sections."""
    run = r.run
    one = RunSet("", [run])
    checks = [dict(c) for c in tool_stats.trace_checks(one, {id(run): r.label})]
    tables = {key: table for key, table in run.tool_stats.items() if len(table)}
    return StatsPartial(tool_stats.tool_of(run), tables, tool_stats.trace_recorded(one), checks, list(run.warnings), bool(len(run.counters)))


@dataclass(frozen=True)
class RankPartial:
    """What one process contributes to the merged summary (see the module's doc)."""

    meta: RunMeta  # the process's meta (host, pid, rank, label, files)
    label: str
    record: ProcessRecord
    clock: str
    range: tuple[int, int] | None
    wall_ns: int
    dispatches: int
    kernel_ns: int
    overlapping: bool  # two of its kernels overlap (busy time != total per group)
    groups: dict[str, dict[str, GroupCounts]]  # grouping -> group -> counts
    core: dict[str, Any] | None  # RankCore's figures; None for a counter pass of another process
    timeline: TimelinePartial | None = None  # None: no GPU activity (no timeline, as in the summary)
    sync: dict[str, Any] = field(default_factory=dict)  # analysis.hostcalls.sync_part
    copies: dict[str, Any] = field(default_factory=dict)  # analysis.copies.copies_part
    platform: PlatformSection | None = None  # of this process alone (analysis.platform.detect_platform)
    agents: dict[str, list[Record]] = field(default_factory=dict)  # its agent records, per platform vendor they depend on ("nvidia", "other")
    check: CheckPartial | None = None  # its part of the integrity report
    launch: LaunchPartial | None = None  # its part of the launch section
    api: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)  # (calls, ns) per (domain, name) of its traced API calls
    api_stats: dict[str, pd.DataFrame] = field(default_factory=dict)  # its API statistics tables (the api section without a trace)
    counters: dict[str, Record] = field(default_factory=dict)  # its counters block per platform vendor it depends on ("nvidia", "other"); {}: none
    occupancy: list[Record] = field(default_factory=list)  # its kernels' occupancy rows (analysis.occupancy.kernel_occupancy)
    operators: OperatorPartial | None = None  # its part of the operator and module tables
    steps: StepsPartial | None = None  # its steps, warm-up and memory parts
    stats: StatsPartial | None = None  # its statistics tables, load warnings (stats, source, warnings)
    # a part of a process that holds several recordings (integrity.split_run): the process's
    # own label and the part's place among its parts (1-based); None: the whole process
    split_of: tuple[str, int] | None = None
    schema: str = PARTIAL_SCHEMA

    @property
    def key(self) -> tuple:
        """The run set's order of processes (loaders.detect.assemble), a process's parts in
        their order in its place (integrity.split_recordings)."""
        m = self.meta
        label, part = self.split_of if self.split_of is not None else (m.label, 0)
        return (*_process_of(m), label, part)


def _process_of(m: RunMeta) -> tuple:
    """A process's host, pid and rank, as :attr:`RankPartial.key` begins."""
    return (m.hostname, m.pid if m.pid is not None else -1, m.rank or 0)


def _codes(key: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Group code per row (-1: none) and the groups' labels of a grouping key."""
    if isinstance(key.dtype, pd.CategoricalDtype):
        return key.cat.codes.to_numpy().astype(np.int64), np.asarray(key.cat.categories, dtype=object)
    codes, labels = pd.factorize(key, sort=False)
    return codes.astype(np.int64), np.asarray(labels, dtype=object)


def _group_counts(dur: np.ndarray, codes: np.ndarray, labels: np.ndarray, busy: np.ndarray | None) -> dict[str, GroupCounts]:
    """Per group (``codes`` per kernel row, ``labels`` per code) the distinct durations and counts."""
    valid = codes >= 0
    c, d = codes[valid], dur[valid].astype(np.int64)
    order = np.lexsort((d, c))
    c, d = c[order], d[order]
    new = np.ones(len(c), dtype=bool)
    new[1:] = (c[1:] != c[:-1]) | (d[1:] != d[:-1])
    first = np.flatnonzero(new)
    counts = np.diff(np.append(first, len(c))).astype(np.int64)
    uc, ud = c[first], d[first]
    out: dict[str, GroupCounts] = {}
    bounds = np.flatnonzero(np.r_[True, uc[1:] != uc[:-1]]) if len(uc) else np.zeros(0, dtype=np.int64)
    ends = np.append(bounds[1:], len(uc))
    for lo, hi in zip(bounds.tolist(), ends.tolist(), strict=True):
        code = int(uc[lo])
        values, n = ud[lo:hi].copy(), counts[lo:hi].copy()
        total = int((values * n).sum())
        out[str(labels[code])] = GroupCounts(values, n, int(busy[code]) if busy is not None else total)
    return out


def _keys(run: Run, rules: CategoryRules, categories: np.ndarray | None) -> dict[str, pd.Series]:
    k = run.kernels
    keys = {by: group_key(k, by, rules if by == "category" else None).reset_index(drop=True) for by in GROUPINGS if by != "category"}
    keys["category"] = pd.Series(categories, dtype="category") if categories is not None else group_key(k, "category", rules).reset_index(drop=True)
    return keys


def keys_of(r: RunInput, rules: CategoryRules, link: pd.DataFrame | None) -> dict[str, pd.Series]:
    """The group of each kernel row of a process per grouping (``link``: its operators, None: none)."""
    return _keys(r.run, rules, _categories(r, rules, link))


def _groups(run: Run, rules: CategoryRules, categories: np.ndarray | None) -> tuple[dict[str, dict[str, GroupCounts]], bool]:
    k = run.kernels
    if not len(k):
        return {by: {} for by in GROUPINGS}, False
    dur = (k["end"].to_numpy() - k["start"].to_numpy()).astype(np.int64)
    out: dict[str, dict[str, GroupCounts]] = {}
    overlapping = False
    processes = process_order(k)
    for by, key in _keys(run, rules, categories).items():
        codes, labels = _codes(key)
        busy = group_busy(k, codes, len(labels), processes)
        overlapping = overlapping or busy is not None
        out[by] = _group_counts(dur, codes, labels, busy)
    return out, overlapping


def _categories(r: RunInput, rules: CategoryRules, link: pd.DataFrame | None) -> np.ndarray | None:
    """The process's kernels' categories, operator first (analysis.operators); None: by name."""
    if link is None:
        return None
    return kernel_categories_by_op(r.run.kernels, link, rules).astype(str).to_numpy(dtype=object)


@dataclass(frozen=True)
class StepOptions:
    """How the steps are found (SummaryOptions' ``step_name``, ``warmup``, ``outlier_factor``)."""

    name: str | None = None
    warmup: int | None = None
    factor: float = OUTLIER_FACTOR


@dataclass(frozen=True)
class StepsPartial:
    """One process's steps (:func:`~tui_prof.analysis.steps.steps_of`: small, one row per
    step), its warm-up section were it the run's only process, its memory devices and
    requests (analysis.memory) and the peak of its allocation trace."""

    steps: StepsSection
    warmup: dict | None
    devices: list[MemoryDevice]
    requested: MemoryRequest | None
    peak: int | None


@dataclass(frozen=True)
class OperatorPartial:
    """One process's part of the operator and module tables (None where it records no
    operators) and its first GPU (the FLOP rates' peak)."""

    operators: OperatorPart | None
    modules: pd.DataFrame | None
    gpu: Agent | None


def operator_partial(r: RunInput, link: pd.DataFrame | None) -> OperatorPartial:
    gpu = r.run.gpu_agents[0] if r.run.gpu_agents else None
    if link is None:
        return OperatorPartial(None, None, gpu)
    return OperatorPartial(operator_part(r, link), module_part(r, link), gpu)


def timeline_partial(r: RunInput, threshold_ns: int, max_gaps: int | None, timeline: RunTimeline | None = None) -> TimelinePartial | None:
    """The process's GPU timeline as the summary computes it (None: no GPU activity);
    ``timeline``: its :func:`~tui_prof.analysis.gpu_idle.run_timeline`, when already made."""
    if not has_gpu_activity(r.run):
        return None
    t = timeline or run_timeline(r, threshold_ns)
    records = gap_records(listed_gaps([t], max_gaps))
    return TimelinePartial(t.agents, len(t.gaps), [(g["duration_ns"], g) for g in records])


def rank_partial(
    r: RunInput,
    record: ProcessRecord,
    rules: CategoryRules,
    threshold_ns: int = DEFAULT_GAP_THRESHOLD_NS,
    max_gaps: int | None = 200,
    root: str = "",
    step_options: StepOptions = StepOptions(),
) -> RankPartial:
    """The partial of one process (``r``: its :class:`RunInput`, ``record``: its process
    record; ``threshold_ns`` and ``max_gaps`` as :class:`~tui_prof.analysis.summary.SummaryOptions`')."""
    run = r.run
    timeline = run_timeline(r, threshold_ns) if has_gpu_activity(run) else None
    gaps = timeline.gaps if timeline is not None else None
    steps, _frame = steps_of(run, r.label, r.index, gaps, step_name=step_options.name, warmup=step_options.warmup, factor=step_options.factor)
    link = link_operators(run.kernels, run.api, run.markers, r.index) if has_operators(run) else None
    categories = _categories(r, rules, link)
    groups, overlapping = _groups(run, rules, categories)
    core = None
    if "counter_pass_of" not in run.meta.extra:  # a counter pass of another process is not a rank (issue 32)
        figures = RankCore(run, r.label, r.wall_ns, r.index.classes, rules, categories)
        core = {name: value for name, value in vars(figures).items() if name != "run"}
    k = run.kernels
    return RankPartial(
        meta=run.meta,
        label=r.label,
        record=record,
        clock=aggregate.clock_key(run),
        range=r.range,
        wall_ns=int(r.wall_ns),
        dispatches=int(len(k)),
        kernel_ns=int(np.sum(k["end"].to_numpy() - k["start"].to_numpy())) if len(k) else 0,
        overlapping=overlapping,
        groups=groups,
        core=core,
        timeline=timeline_partial(r, threshold_ns, max_gaps, timeline),
        steps=StepsPartial(steps, warmup_of([r], steps), memory_devices(run, r.label), api_requests(run, r.label), peak_memory(trace_rows(run.allocations))),
        sync=sync_part(r),
        copies=copies_part(run),
        platform=detect_platform(RunSet(root="", runs=[run])),
        agents={"nvidia": agent_records([r], "nvidia"), "other": agent_records([r], UNKNOWN)},
        check=check_partial(root, run),
        launch=launch_partial(r),
        api=api_totals(run),
        counters=counters_blocks(r),
        occupancy=occupancy_rows(r),
        operators=operator_partial(r, link),
        api_stats={key: table for key, table in run.tool_stats.items() if key in API_STATS and len(table)},
        stats=stats_partial(r),
    )


def counters_blocks(r: RunInput) -> dict[str, Record]:
    """The process's block of the ``counters`` section, for an NVIDIA run set and any other
    (the run set's vendor decides the wording and commands); {} when it has none."""
    run = r.run
    if not (len(run.counters) or (len(run.kernels) and run.gpu_agents)):
        return {}
    out = {}
    for which, vendor in (("nvidia", "nvidia"), ("other", UNKNOWN)):
        block = counter_metrics(run, vendor)
        block["process"] = r.label
        out[which] = block
    return out


def occupancy_rows(r: RunInput) -> list[Record]:
    """The process's rows of the ``occupancy`` section (before the run's sort and cut)."""
    gpus = r.run.gpu_agents
    rows = kernel_occupancy(r.run.kernels, {a.id: a.arch for a in gpus}, {a.id: a.wave_size for a in gpus if a.wave_size})
    for occ in rows:
        occ["process"] = r.label
    return rows


def rank_partials(
    runset: RunSet,
    rules: CategoryRules | None = None,
    threshold_ns: int | None = None,
    max_gaps: int | None = 200,
    step_options: StepOptions = StepOptions(),
    split: bool = False,
) -> list[RankPartial]:
    """The partial of every process of ``runset`` (one rank's files, as a worker loads them);
    ``threshold_ns`` (None: 10 µs), ``max_gaps`` and ``step_options`` as the summary's options.
    ``split``: a process that holds several recordings gives a partial per recording
    (:func:`~tui_prof.analysis.integrity.split_run`, as ``summary`` cuts it before it picks one)."""
    threshold = DEFAULT_GAP_THRESHOLD_NS if threshold_ns is None else int(threshold_ns)
    rules = rules or DEFAULT_CATEGORY_RULES
    out = []
    for run in runset.runs:
        parts = split_run(run) if split else [run]
        inputs = run_inputs(RunSet(runset.root, parts))
        for n, (r, rec) in enumerate(zip(inputs, process_records(inputs), strict=True), 1):
            partial = rank_partial(r, rec, rules, threshold, max_gaps, runset.root, step_options)
            out.append(replace(partial, split_of=(run.meta.label, n)) if len(parts) > 1 else partial)
    return out


def check_partials(runset: RunSet) -> list[RankPartial]:
    """Partials of ``runset``'s processes that carry only what ``tuiprof check`` merges (their
    part of the integrity report, with their identity): the summary's parts are left empty."""
    inputs = run_inputs(runset)
    return [
        RankPartial(
            meta=r.run.meta,
            label=r.label,
            record=record,
            clock=aggregate.clock_key(r.run),
            range=r.range,
            wall_ns=int(r.wall_ns),
            dispatches=int(len(r.run.kernels)),
            kernel_ns=0,
            overlapping=False,
            groups={by: {} for by in GROUPINGS},
            core=None,
            check=check_partial(runset.root, r.run),
        )
        for r, record in zip(inputs, process_records(inputs), strict=True)
    ]


class _Merged:
    """One group's counts over ranks, compacted now and then (bounded memory per group)."""

    __slots__ = ("busy", "parts")

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.busy = 0

    def add(self, g: GroupCounts) -> None:
        self.parts.append((g.values, g.counts))
        self.busy += g.busy_ns
        if len(self.parts) >= 32:
            self.compact()

    def compact(self) -> tuple[np.ndarray, np.ndarray]:
        if len(self.parts) != 1:
            values = np.concatenate([p[0] for p in self.parts])
            counts = np.concatenate([p[1] for p in self.parts])
            uniq, inverse = np.unique(values, return_inverse=True)
            self.parts = [(uniq, _sum_by(inverse, counts, len(uniq)))]
        return self.parts[0]


def _sum_by(inverse: np.ndarray, counts: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=np.int64)
    np.add.at(out, inverse, counts)
    return out


class StepsNotMerged(Exception):
    """The combined steps need a rank loaded again and the merge has no way to load one."""


@dataclass
class PartialMerge:
    """The merge of partials, one at a time (the driver keeps no rank's kernels)."""

    rules: CategoryRules = DEFAULT_CATEGORY_RULES
    groups: dict[str, dict[str, _Merged]] = field(default_factory=lambda: {by: {} for by in GROUPINGS})
    ranks: list[tuple[tuple, str, ProcessRecord, dict[str, Any] | None, RunMeta]] = field(default_factory=list)
    spans: list[tuple[str, tuple[int, int] | None]] = field(default_factory=list)
    process_total: int = 0
    dispatches: int = 0
    kernel_ns: int = 0
    overlapping: bool = False
    threshold_ns: int = DEFAULT_GAP_THRESHOLD_NS
    max_gaps: int | None = 200
    agents: list[tuple[tuple, str, list[Record]]] = field(default_factory=list)  # (rank key, clock, per-agent rows)
    gap_count: int = 0
    gaps: list[tuple[int, tuple, int, GapRecord]] = field(default_factory=list)  # (-duration, rank key, position, record)
    syncs: list[tuple[tuple, dict[str, Any]]] = field(default_factory=list)  # (rank key, sync part)
    copies: list[tuple[tuple, dict[str, Any]]] = field(default_factory=list)  # (rank key, copies part)
    platforms: list[tuple[tuple, PlatformSection, bool, str, dict[str, list[Record]]]] = field(default_factory=list)
    checks: list[tuple[tuple, CheckPartial]] = field(default_factory=list)  # (rank key, its part of the integrity report)
    launches: list[LaunchPartial] = field(default_factory=list)
    counters: list[tuple[tuple, dict[str, Record]]] = field(default_factory=list)  # (rank key, its counters blocks)
    occupancy: list[tuple[tuple, list[Record]]] = field(default_factory=list)  # (rank key, its occupancy rows)
    operators: list[tuple[tuple, OperatorPartial]] = field(default_factory=list)  # (rank key, its operator part)
    # (rank key, label, its steps part without step rows or warm-up); the steps themselves are
    # folded as they arrive (O(steps), analysis.steps.StepsFold), and the whole steps part of
    # the first process (the lowest key) is kept
    steps: list[tuple[tuple, str, StepsPartial]] = field(default_factory=list)
    steps_fold: StepsFold = field(default_factory=StepsFold)
    steps_first: tuple[tuple, StepsPartial] | None = None
    # a rank loaded again by its label (its own files only): the combined steps' slow steps are
    # described from the events of the rank that was slowest; None: the steps are not merged
    load: Callable[[str], RunSet] | None = None
    load_errors: list[LoadIssue] = field(default_factory=list)  # the files the run's load could not read (the trust of measurement)
    step_options: StepOptions = StepOptions()  # as the partials were made with
    logs_root: str | None = None  # the run's path, whose log files the ``logs`` section scans (None: no logs section)
    api: dict[tuple[str, str], list[int]] = field(default_factory=dict)  # summed api totals
    api_stats: list[tuple[tuple, RunMeta, dict[str, pd.DataFrame]]] = field(default_factory=list)  # kept while no traced API call is seen
    windows: int = 0  # processes that get a critical-path window (analysis.critical.has_window)
    stepped: tuple[StepsSection, MemorySection, dict | None] | None = None  # steps_memory's result, once made
    # the stats, source and warnings sections: the processes' statistics tables (only those
    # that have some), their checks against their trace, their load warnings (only where any)
    tool_stats: list[tuple[tuple, RunMeta, dict[str, pd.DataFrame]]] = field(default_factory=list)
    tools: set[str] = field(default_factory=set)  # how the kept tables were written
    stats_checks: list[tuple[tuple, list[Record]]] = field(default_factory=list)
    warned: list[tuple[tuple, str, list[str]]] = field(default_factory=list)  # (rank key, label, its load warnings)
    traced: bool = False  # some process recorded trace rows
    counted: bool = False  # some process holds counter values
    load_skipped: list[LoadIssue] = field(default_factory=list)  # the files the run's load skipped (the source section)
    root: str | None = None  # the run's path as the load names it (None: the one the workers loaded)
    # the ranks' collectives, reduced as they arrive (O(instances), analysis.ranks.InstanceTable);
    # each rank core's arrival in it, and the collective starts per type of the first process
    # (in the run set's order) with steps: the reference ranks_on_path places instances by
    instances: InstanceTable = field(default_factory=InstanceTable)
    arrivals: dict[tuple, int] = field(default_factory=dict)
    reference: tuple[tuple, str, dict[str, np.ndarray]] | None = None
    reference_steps: list[StepRecord] = field(default_factory=list)  # that process's own step rows

    def add(self, p: RankPartial) -> None:
        for by, groups in p.groups.items():
            mine = self.groups[by]
            for name, g in groups.items():
                mine.setdefault(name, _Merged()).add(g)
        self.ranks.append((p.key, p.label, p.record, self._add_core(p), p.meta))
        self.spans.append((p.clock, p.range))
        self.process_total += p.wall_ns
        self.dispatches += p.dispatches
        self.kernel_ns += p.kernel_ns
        self.overlapping = self.overlapping or p.overlapping
        self.syncs.append((p.key, p.sync))
        self.copies.append((p.key, p.copies))
        if p.check is not None:
            self.checks.append((p.key, p.check))
        if p.counters:
            self.counters.append((p.key, p.counters))
        if p.occupancy:
            self.occupancy.append((p.key, p.occupancy))
        if p.steps is not None:
            self._add_steps(p.key, p.label, p.steps)
        if p.operators is not None and (p.operators.operators is not None or p.operators.gpu is not None):
            self.operators.append((p.key, p.operators))
        for pair, (calls, total) in p.api.items():
            acc = self.api.setdefault(pair, [0, 0])
            acc[0] += calls
            acc[1] += total
        if self.api:  # the statistics stand in only when no process traced its calls
            self.api_stats.clear()
        elif p.api_stats:
            self.api_stats.append((p.key, p.meta, p.api_stats))
        if p.stats is not None:
            self._add_stats(p, p.stats)
        if p.launch is not None:
            self.launches.append(p.launch)
            if len(self.launches) >= 64:  # compacted: the driver's memory stays bounded by the distinct values
                self.launches = [_merged_launch(self.launches)]
        if p.platform is not None:
            self.platforms.append((p.key, p.platform, p.dispatches > 0, p.meta.tool, p.agents))
        if has_window(p.timeline is not None, p.range):
            self.windows += 1
        if p.timeline is not None:
            self.agents.append((p.key, p.clock, p.timeline.agents))
            self.gap_count += p.timeline.count
            self.gaps.extend((-d, p.key, pos, g) for pos, (d, g) in enumerate(p.timeline.listed))
            if self.max_gaps is not None and len(self.gaps) > 2 * self.max_gaps + 64:
                self.gaps = sorted(self.gaps, key=_gap_order)[: self.max_gaps]

    def _add_stats(self, p: RankPartial, part: StatsPartial) -> None:
        if part.tables:
            self.tool_stats.append((p.key, p.meta, part.tables))
            self.tools.add(part.tool)
        if part.checks:
            self.stats_checks.append((p.key, part.checks))
        if part.warnings:
            self.warned.append((p.key, p.label, part.warnings))
        self.traced = self.traced or part.traced
        self.counted = self.counted or part.counters

    def stats_runset(self) -> RunSet:
        """The processes' statistics tables as a run set of runs that hold only them (and their
        meta), in the run set's order: what :mod:`~tui_prof.analysis.stats` combines."""
        return _tables_runset(self.tool_stats)

    def stats_section(self, top: int | None) -> StatsSection:
        """The ``stats`` section: the statistics tables combined over the processes, as
        :func:`~tui_prof.analysis.stats.stats_section` combines them in one process."""
        tables = tool_stats.stats_tables(self.stats_runset(), top)
        checks = [c for _key, mine in sorted(self.stats_checks, key=lambda x: x[0]) for c in mine]
        return tool_stats.stats_section_of(tables, checks, tool_stats.source_label_of(self.tools, self.traced), self.traced)  # type: ignore[arg-type]

    def warnings_section(self, stats: StatsSection) -> list[str]:
        """The ``warnings`` section: each process's load warnings, the load's errors, the
        counter-serialisation warning, then the statistics' disagreements and cut tables."""
        per_process = [(label, mine) for _key, label, mine in sorted(self.warned, key=lambda x: x[0])]
        warnings = warnings_of(per_process, self.load_errors, self.counted)
        return warnings + tool_stats.stats_warnings(stats["checks"]) + tool_stats.cut_warnings(stats["tables"])

    def source_section(self) -> SourceSection:
        """The ``source`` section: the run's path, its processes' formats (first seen first in
        the run set's order) and what its load could not read or skipped."""
        formats: list[str] = []
        for *_rest, meta in sorted(self.ranks, key=lambda x: x[0]):
            formats.extend(f for f in meta.formats if f not in formats)
        root = self.root if self.root is not None else next((part.root for _key, part in self.checks), "")
        return source_section_of(root, formats, [*self.load_errors, *self.load_skipped])

    def _add_core(self, p: RankPartial) -> dict[str, Any] | None:
        """The rank's core figures without its collectives, which go into the instance table
        (and, for the first process with steps so far, their starts)."""
        if p.core is None:
            return None
        figures = dict(p.core)
        kinds = figures.pop("coll_types")
        durs, sizes, groups = figures.pop("coll_dur"), figures.pop("coll_bytes"), figures.pop("coll_ranks")
        starts = figures.pop("coll_start", None)
        figures.setdefault("collectives", len(durs))
        self.arrivals[p.key] = self.instances.add(p.key, kinds, durs, sizes, groups, figures["source"] == "trace")
        stepped = p.steps is not None and p.steps.steps.get("detected")
        if stepped and starts is not None and (self.reference is None or p.key < self.reference[0]):
            self.reference = (p.key, p.label, {str(t): np.asarray(starts)[kinds == t] for t in sorted({str(k) for k in kinds.tolist()})})
            self.reference_steps = p.steps.steps["steps"] if p.steps is not None else []
        return figures

    def _add_steps(self, key: tuple, label: str, part: StepsPartial) -> None:
        """The rank's steps into the fold; what else the steps, memory and warm-up sections
        read of it is kept (its devices, requests and peak: O(devices))."""
        if self.steps_first is None or key < self.steps_first[0]:
            self.steps_first = (key, part)
        kept = self.steps_fold.add(key, label, part.steps) if part.steps["detected"] else part.steps
        self.steps.append((key, label, replace(part, steps=kept, warmup=None)))

    def _core_order(self) -> tuple[list[RankCore], list[tuple[int, str]], list[int]]:
        """The merged cores in the run set's order, their rank numbers and their arrivals in the instance table."""
        cores = merged_cores(self)
        keys = sorted(k for k, *_rest, figures, _m in self.ranks if figures is not None)
        return cores, rank_numbers([c.run for c in cores]), [self.arrivals[k] for k in keys]

    def wait_table(self) -> WaitTable:
        """The run's :data:`~tui_prof.analysis.ranks.WaitTable` (as the in-process summary's)."""
        _cores, numbers, order = self._core_order()
        return self.instances.wait_table([n for n, _ in numbers], order)

    def ranks_on_path(self, steps: StepsSection) -> dict | None:
        """:func:`~tui_prof.analysis.critical.ranks_on_path` of the merged ranks with the
        combined ``steps`` section (the in-process answer on the same run)."""
        if len(self.ranks) < 2 or not steps.get("detected") or self.reference is None:
            return None
        _key, label, starts = self.reference
        if label not in step_parts(steps):
            return None
        return ranks_on_path_of(steps, self.reference_steps, starts, self.wait_table())

    def rank_sections(self) -> tuple[list[RankRecord], CommunicationSection, StragglerSection]:
        """The ``ranks``, ``communication`` and ``stragglers`` sections."""
        cores, numbers, order = self._core_order()
        return sections_of_table(cores, numbers, self.instances, order)

    def platform_agents(self) -> tuple[PlatformSection, list[Record]]:
        """The ``platform`` and ``agents`` sections: one vendor over the processes (the first
        process's evidence for it), mixed or unknown; every process's agent records."""
        ordered = sorted(self.platforms, key=lambda x: x[0])
        vendors = [(found["vendor"], found["evidence"]) for _k, found, *_ in ordered if found["vendor"] != UNKNOWN]
        kinds = {v for v, _ in vendors}
        if len(kinds) == 1:
            vendor, evidence = vendors[0]
        elif kinds:
            vendor, evidence = MIXED, "runs of both vendors"
        else:
            vendor, evidence = UNKNOWN, "no runtime, agent or format evidence"
        tools = [tool for _k, _f, kernels, tool, _a in ordered if kernels]
        platform: PlatformSection = {"vendor": vendor, "pytorch": bool(tools) and all(t == "pytorch-profiler" for t in tools), "evidence": evidence}
        which = "nvidia" if vendor == "nvidia" else "other"
        return platform, [a for *_rest, agents in ordered for a in agents[which]]

    def check_report(self, errors: Sequence[LoadIssue] | None = None, root: str | None = None) -> CheckReport:
        """The integrity report of the merged processes and the load's ``errors`` (None:
        ``load_errors``; ``root``: the run's; None: the one the workers loaded)."""
        parts = [part for _key, part in sorted(self.checks, key=lambda x: x[0])]
        return merged_check(parts, self.load_errors if errors is None else errors, root if root is not None else (parts[0].root if parts else ""))

    def counters_occupancy(self, vendor: str, top: int | None) -> tuple[list[Record], list[Record]]:
        """The ``counters`` (each process's block in the run set's order, worded for the run
        set's ``vendor``) and ``occupancy`` (every process's rows by kernel time, ties in process
        order; the first ``top``) sections."""
        which = "nvidia" if vendor == "nvidia" else "other"
        counters = [blocks[which] for _key, blocks in sorted(self.counters, key=lambda x: x[0])]
        rows = [row for _key, mine in sorted(self.occupancy, key=lambda x: x[0]) for row in mine]
        rows.sort(key=lambda o: -o["total_ns"])
        return counters, rows[:top] if top else rows

    def steps_memory(self) -> tuple[StepsSection, MemorySection, dict | None]:
        """The ``steps`` (each process's own, combined over several as in one process; slow
        steps described from their rank, loaded again), ``memory`` and ``warmup`` sections;
        :class:`StepsNotMerged` when slow steps need a rank and ``load`` is None."""
        if self.stepped is None:
            self.stepped = self._steps_memory()
        return self.stepped

    def _steps_memory(self) -> tuple[StepsSection, MemorySection, dict | None]:
        ordered = sorted(self.steps, key=lambda x: x[0])
        o = self.step_options
        growths = []
        if self.steps_fold.parts:
            steps = self.steps_fold.section(len(ordered), self._describe, warmup=o.warmup, factor=o.factor)
            growths = self.steps_fold.growths()
        else:
            steps = self.steps_first[1].steps if self.steps_first is not None else empty_steps_section(factor=o.factor)
        devices = [d for _key, _label, part in ordered for d in part.devices]
        requested = [part.requested for _key, _label, part in ordered if part.requested is not None]
        memory = memory_of_parts(devices, requested, steps["steps"], growths)
        warmup = self.steps_first[1].warmup if len(ordered) == 1 and self.steps_first is not None else None
        return steps, memory, warmup

    def _describe(self, key: tuple, label: str, slow: list[str], ref: str, med: float) -> list:
        """The slow steps of the rank ``label`` whose partial's key is ``key`` (by step label),
        loaded again (steps.describe_by_label). Of the loaded processes labelled ``label``, the
        one of that key's host, pid and rank: labels need not be unique (two ranks' ``run.pftrace``)."""
        if self.load is None:
            raise StepsNotMerged(f"the slow steps of {label} need that rank loaded again")
        mine = [r for r in run_inputs(self.load(label)) if r.label == label]
        r = next((r for r in mine if _process_of(r.run.meta) == key[:3]), mine[0])
        timeline = run_timeline(r, self.threshold_ns) if has_gpu_activity(r.run) else None
        o = self.step_options
        gaps = timeline.gaps if timeline is not None else None
        _steps, frame = steps_of(r.run, r.label, r.index, gaps, step_name=o.name, warmup=o.warmup, factor=o.factor)
        assert frame is not None  # its steps were found in the worker from the same files
        return describe_by_label(r.run, frame, slow, ref, med)

    def peak_memory(self, memory: MemorySection) -> int | None:
        """The measurement's peak memory: the largest allocation-trace peak of the processes,
        or the memory section's when it comes from the allocator's totals or call sizes."""
        if memory["source"] in (MEMORY_TOTALS, MEMORY_API):
            return memory["peak_allocated_bytes"]
        peaks = [part.peak for _key, _label, part in self.steps if part.peak is not None]
        return max(peaks) if peaks else None

    def operator_tables(self, top: int | None) -> tuple[list, list]:
        """The ``hotspots_by_operator`` and ``hotspots_by_module`` sections (the processes'
        parts in the run set's order; the FLOP rates' peak from the run set's first GPU)."""
        ordered = [part for _key, part in sorted(self.operators, key=lambda x: x[0])]
        gpu = next((p.gpu for p in ordered if p.gpu is not None), None)
        ops = [p.operators for p in ordered if p.operators is not None]
        modules = [p.modules for p in ordered if p.modules is not None]
        return operators_of_parts(ops, self.kernel_ns, gpu, top), modules_of_parts(modules, self.kernel_ns, top)

    def api_section(self, top: int | None) -> ApiSection:
        """The ``api`` section: the summed traced calls, else the processes' API statistics."""
        return api_of_totals(self.api, _tables_runset(self.api_stats), top)

    def gpu_gaps(self) -> tuple[GpuSection, GapsSection]:
        """The ``gpu`` and ``gaps`` sections: the longest gaps over every rank, ties in rank
        then (agent, start) order, listed in (process, agent, start) order, as the summary."""
        per_process = [(clock, rows) for _key, clock, rows in sorted(self.agents, key=lambda x: x[0])]
        chosen = sorted(self.gaps, key=_gap_order)
        if self.max_gaps is not None:
            chosen = chosen[: self.max_gaps]
        listed = sorted((g for *_, g in chosen), key=lambda g: (g["process"], g["agent"], g["start_ns"]))
        rows = [a for _, agents in per_process for a in agents]
        return gpu_of_rows(per_process), gaps_of_rows(rows, self.gap_count, self.threshold_ns, listed)

    def table(self, by: str) -> pd.DataFrame:
        """:func:`~tui_prof.analysis.hotspots.hotspots` of the merged groups (with ``pct_wall``)."""
        rows = []
        for name, merged in self.groups[by].items():
            values, counts = merged.compact()
            rows.append((name, *_stats(values, counts), merged.busy))
        columns = list(HOTSPOT_COLUMNS[:-1])
        table = pd.DataFrame(rows, columns=columns + ["busy"]) if rows else pd.DataFrame({c: [] for c in columns + ["busy"]})
        table = table.astype({"name": "object", "calls": "int64", "total_ns": "int64", "min_ns": "int64", "max_ns": "int64", "busy": "int64"})
        grand = float(table["total_ns"].sum())
        table["percent"] = 100.0 * table["total_ns"] / grand if grand else 0.0
        table = table.sort_values(["total_ns", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)
        wall = self.process_total
        part = table["busy"] if self.overlapping else table["total_ns"]
        table["pct_wall"] = 100.0 * part.astype(np.float64) / wall if wall > 0 else 0.0
        return table[list(HOTSPOT_COLUMNS) + ["pct_wall"]]


def _gap_order(item: tuple[int, tuple, int, GapRecord]) -> tuple:
    return item[:3]


def _stats(values: np.ndarray, counts: np.ndarray) -> tuple[int, int, float, float, int, int, float]:
    """calls, total, mean, median, min, max, sample stddev of a group from its counts."""
    n = int(counts.sum())
    total = int((values * counts).sum())
    mean = float(np.float64(total) / np.float64(n))
    median = median_of((values, counts))
    if n > 1:
        s1 = sum(int(v) * int(c) for v, c in zip(values.tolist(), counts.tolist(), strict=True))
        s2 = sum(int(v) * int(v) * int(c) for v, c in zip(values.tolist(), counts.tolist(), strict=True))
        std = math.sqrt(float(Fraction(n * s2 - s1 * s1, n * (n - 1))))
    else:
        std = 0.0
    return n, total, mean, median, int(values[0]), int(values[-1]), std


def _tables_runset(entries: Sequence[tuple[tuple, RunMeta, dict[str, pd.DataFrame]]]) -> RunSet:
    """Statistics tables kept per process, (rank key, meta, tables), as a run set of runs that
    hold only them, in the run set's order (shared empty tables for the rest)."""
    shared = {name: empty_table(name) for name in TABLES}
    runs = []
    for _key, meta, tables in sorted(entries, key=lambda x: x[0]):
        run = _meta_run(meta, shared)
        run.tool_stats = dict(tables)
        runs.append(run)
    return RunSet("", runs)


def _meta_run(meta: RunMeta, shared: dict[str, pd.DataFrame]) -> Run:
    """A run that holds only ``meta`` (what the rank table reads of a core's run)."""
    return Run(meta=meta, **shared)


def merged_cores(merge: PartialMerge) -> list[RankCore]:
    shared = {name: empty_table(name) for name in TABLES}
    cores = []
    for _key, _label, _record, figures, meta in sorted(merge.ranks, key=lambda x: x[0]):
        if figures is None:
            continue
        core = RankCore.__new__(RankCore)
        core.__dict__.update(figures)
        core.run = _meta_run(meta, shared)
        cores.append(core)
    return cores


def merged_sections(
    merge: PartialMerge, top: int | None = 20, paths: Callable[[PathPlan], PathMerge] | None = None, plan: PathPlan | None = None
) -> dict[str, Any]:
    """The ``MERGED_SECTIONS`` of the summary from the merged partials (same values and order
    as :func:`~tui_prof.analysis.summary.summarise` writes them). ``paths``: the second pass
    (analysis.pathpartials: every rank's path partials for a plan), which adds
    ``critical_path``, the ``critical_ns`` columns and ``findings``; None: not those;
    ``plan``: the one it was given (None: made here, pathpartials.path_plan)."""
    by_name = merge.table("name")
    tables = {by: merge.table(by) for by in GROUPED_BY}
    ordered = sorted(merge.ranks, key=lambda x: x[0])
    ranks, communication, stragglers = merge.rank_sections()
    cats = tables["category"]
    gpu, gaps = merge.gpu_gaps()
    platform, agents = merge.platform_agents()
    counters, occupancy = merge.counters_occupancy(platform["vendor"], top)
    try:
        stepped: tuple[StepsSection, MemorySection, dict | None] | None = merge.steps_memory()
    except StepsNotMerged:
        stepped = None
    by_operator, by_module = merge.operator_tables(top)
    copies, copies_source = copies_of_parts([part for _key, part in sorted(merge.copies, key=lambda x: x[0])], merge.process_total)
    stats = merge.stats_section(top)
    out: dict[str, Any] = {
        "source": merge.source_section(),
        "processes": [rec for _k, _l, rec, _f, _m in ordered],
        "agents": agents,
        "platform": platform,
        "kernels": {"dispatches": merge.dispatches, "unique_names": int(len(by_name)), "total_ns": merge.kernel_ns},
        "hotspots": hotspot_records(by_name, top),
        "hotspots_source": "trace" if merge.dispatches else "none",
        "warnings": merge.warnings_section(stats),
        "wall_ns": aggregate.group_span(merge.spans),
        "gpu": gpu,
        "gaps": gaps,
        "sync": sync_of_parts([part for _key, part in sorted(merge.syncs, key=lambda x: x[0])]),
        "launch": launch_of_parts(merge.launches, merge.process_total),
        "copies": copies,
        "copies_source": copies_source,
        "api": merge.api_section(top),
        "categories": {str(r.name): int(r.total_ns) for r in cats.itertuples(index=False)},
        "category_rules": merge.rules.source,
        "hotspots_by": {
            "normalized": hotspot_records(tables["normalized"], top),
            "category": hotspot_records(cats, None),
            "agent": hotspot_records(tables["agent"], None),
            "process": hotspot_records(tables["pid"], None),
        },
        "hotspots_by_operator": by_operator,
        "hotspots_by_module": by_module,
        "counters": counters,
        "occupancy": occupancy,
        "stats": stats,
        "ranks": ranks,
        "communication": communication,
        "stragglers": stragglers,
    }
    kernel_whole = None
    if not merge.dispatches and any(t["key"] == tool_stats.KERNEL_STATS for t in stats["tables"]):
        kernel_whole = _stats_stand_in(merge, out, top)
    if stepped is not None:
        out.update(_stepped(merge, out, *stepped, kernel_whole=kernel_whole))
    if merge.logs_root is not None:  # read-only, on the driver: the run directory's log files
        out["logs"] = logs_section(RunSet(merge.logs_root))
    if paths is not None and stepped is not None:  # the critical path needs the combined steps
        from tui_prof.analysis.pathpartials import add_path_sections, path_plan

        plan = plan or path_plan(merge)
        if plan is not None:
            add_path_sections(out, merge, paths(plan), plan)
    out = {key: out[key] for key in MERGED_SECTIONS if key in out}  # the document's order
    report = merge.check_report()
    # every merged section's trust label (issue 32)
    out["trust"] = {key: dict(zip(("trust", "reasons"), report.trust(key), strict=True)) for key in out}
    return out


def _stats_stand_in(merge: PartialMerge, doc: dict[str, Any], top: int | None) -> int | None:
    """No kernel trace in any process, a kernel statistics table in some: the statistics stand
    in for ``kernels``, ``hotspots`` and ``categories`` (hotspots_source "stats"), combined over
    the processes as in one process (kernel_tables.stats_hotspots); the run's kernel time as
    the measurement reads it (the table's run total: a cut table's rows hold less)."""
    found = merge.stats_runset()
    doc["hotspots"], doc["kernels"] = stats_hotspots(found, top)
    doc["hotspots_source"] = "stats"
    doc["categories"] = stats_categories(found, merge.rules)
    return next((int(t["run_total_ns"]) for t in doc["stats"]["tables"] if t["key"] == tool_stats.KERNEL_STATS), None)


def _stepped(
    merge: PartialMerge, doc: dict[str, Any], steps: StepsSection, memory: MemorySection, warmup: dict | None, kernel_whole: int | None = None
) -> dict[str, Any]:
    """The ``steps``, ``memory``, ``warmup`` and ``measurement`` sections (``kernel_whole``:
    the kernel statistics' run total where they stand in for a trace)."""
    measurement = measurement_section(
        doc["wall_ns"],
        doc["kernels"],
        doc["categories"],
        doc["gpu"],
        doc["sync"],
        doc["launch"],
        doc["copies"],
        merge.peak_memory(memory),
        len(merge.ranks),
        merge.process_total,
        kernel_whole,
    )
    return {"steps": steps, "memory": memory, "warmup": warmup, "measurement": measurement}


def merge_partials(
    partials: Iterable[RankPartial],
    rules: CategoryRules | None = None,
    top: int | None = 20,
    threshold_ns: int | None = None,
    max_gaps: int | None = 200,
    load: Callable[[str], RunSet] | None = None,
    step_options: StepOptions = StepOptions(),
    issues: Sequence[LoadIssue] = (),
) -> dict[str, Any]:
    """:func:`merged_sections` of ``partials`` (in any order; made with the same
    ``threshold_ns`` and ``max_gaps``); ``load``: a rank by its label (PartialMerge.load), with
    which the second pass (the critical path, its columns and the findings) runs here;
    ``issues``: what the run's load could not read or skipped (RunSet.issues)."""
    threshold = DEFAULT_GAP_THRESHOLD_NS if threshold_ns is None else int(threshold_ns)
    merge = PartialMerge(rules or DEFAULT_CATEGORY_RULES, threshold_ns=threshold, max_gaps=max_gaps, load=load, step_options=step_options)
    merge.load_errors = [i for i in issues if i.severity == "error"]
    merge.load_skipped = [i for i in issues if i.severity != "error"]
    for p in partials:
        merge.add(p)
    if load is None:
        return merged_sections(merge, top)
    from tui_prof.analysis.pathpartials import run_in_process

    return merged_sections(merge, top, lambda plan: run_in_process(merge, plan, load, merge.rules))


def comparable(doc: dict[str, Any], sections: Sequence[str] = MERGED_SECTIONS) -> dict[str, Any]:
    """The merged sections of a summary document: what a merge of partials must equal."""
    out = {key: doc[key] for key in sections if key in doc}
    if "trust" in out:  # the labels of the compared sections
        out["trust"] = {k: out["trust"][k] for k in sections if k in out["trust"] and k != "trust"}
    return out
