"""The ``tuiprof.summary/1`` document: the stable JSON contract behind ``tuiprof summary``.

Later analyses add keys; existing keys keep their meaning and units (ns, bytes, %).
:func:`summarise` runs each section's function (``<name>_section`` in the module the
section is about: :mod:`~tui_prof.analysis.gpu_idle`, :mod:`~tui_prof.analysis.hostcalls`,
...) and is the one place where the document is assembled from their typed sections
(:class:`~tui_prof.analysis.sections.Summary`); :func:`build_summary` is its document.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tui_prof import __version__
from tui_prof.analysis import ranks
from tui_prof.analysis.copies import copies_section, copies_source
from tui_prof.analysis.counters import counters_section
from tui_prof.analysis.critical import add_critical_ns, add_group_critical, critical_section, operator_groups, process_windows, ranks_on_path, sums_by_process
from tui_prof.analysis.findings import build_findings
from tui_prof.analysis.gpu_idle import RunTimeline, gaps_section, gpu_section, run_timeline
from tui_prof.analysis.hostcalls import api_section, launch_links, launch_section, sync_section
from tui_prof.analysis.hotspots import all_kernels, duration_order, group_key, hotspot_records, hotspots, process_order, run_codes
from tui_prof.analysis.integrity import CheckReport, check_run
from tui_prof.analysis.kernel_tables import (
    categories_section,
    grouped_hotspots,
    hotspots_source,
    kernel_durations,
    kernels_section,
    stats_categories,
    stats_hotspots,
)
from tui_prof.analysis.measurement import measurement_section, peak_memory_of
from tui_prof.analysis.memory import API, TOTALS, memory_section_of
from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES, CategoryRules
from tui_prof.analysis.occupancy import occupancy_section
from tui_prof.analysis.operators import categories_per_process, kernel_categories_of, modules_section, operator_links, operators_section
from tui_prof.analysis.platform import detect_platform
from tui_prof.analysis.processes import agent_records, logs_section, process_records, source_section, warnings_section
from tui_prof.analysis.runinput import RunInput, has_gpu_activity, process_ns, run_inputs, wall_ns
from tui_prof.analysis.savings import add_savings
from tui_prof.analysis.sections import CommunicationSection, RankRecord, StatsSection, StepRecord, StepsSection, StragglerSection, Summary, TrustLabel
from tui_prof.analysis.stats import cut_warnings, stats_section, stats_warnings
from tui_prof.analysis.steps import OUTLIER_FACTOR, found_steps
from tui_prof.analysis.timeline import DEFAULT_GAP_THRESHOLD_NS, GapSet
from tui_prof.analysis.warmup import warmup_of
from tui_prof.model import RunSet
from tui_prof.threads import Job, Lane, collector_paused, threaded_lane

SCHEMA = "tuiprof.summary/1"

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class SummaryOptions:
    """What the summary reports and how (the CLI's ``tuiprof summary`` flags).

    ``top``: kernels listed in ``hotspots``, ``hotspots_by.normalized`` and ``occupancy``
    (None: all); ``gap_threshold_ns``: idle gaps at least this long are listed and
    classified (None: 10 µs); ``rules``: :class:`~tui_prof.analysis.names.CategoryRules`
    (None: the default rules); ``max_gaps``: gaps listed in the document (longest first;
    None = all); ``logs``: scan the run directory's log files for known profiler errors
    (read-only). Steps (:mod:`tui_prof.analysis.steps`): ``step_name`` picks the host range
    name the steps are taken from (``--step``), ``warmup`` the number of warm-up steps
    (``--warmup``; None: detected), ``outlier_factor`` the slow-step threshold as a multiple
    of the steady median.
    """

    top: int | None = 20
    gap_threshold_ns: int | None = None
    rules: CategoryRules | None = None
    max_gaps: int | None = 200
    logs: bool = True
    step_name: str | None = None
    warmup: int | None = None
    outlier_factor: float = OUTLIER_FACTOR


@dataclass(frozen=True)
class SummaryResult:
    """The summary and the full per-run results behind it, so a caller needs not compute
    them again: ``gaps[run_index]`` (:class:`~tui_prof.analysis.timeline.GapSet`: every gap
    >= the threshold, not only the listed ones; only runs with GPU activity) and
    ``links[run_index]`` (:func:`~tui_prof.analysis.hostapi.link_launches`, every run);
    ``check``: the integrity report behind the summary's trust labels (the TUI's Integrity pane)."""

    summary: Summary
    gaps: dict[int, GapSet]
    links: dict[int, pd.DataFrame]
    check: CheckReport | None = None
    # ns on the critical path of each kernel / copy name (analysis.critical: every name, not
    # only the listed hotspots' ``critical_ns``), scaled to each process's whole window
    critical_ns: dict[str, int] = field(default_factory=dict)
    # ns on the critical path of each kernel row of the run set's kernels (all processes in run
    # order, as analysis.hotspots.all_kernels), None without a path: any grouping's critical column
    critical_rows: np.ndarray | None = None


def build_summary(runset: RunSet, options: SummaryOptions = SummaryOptions(), *, progress: Progress | None = None, lane: Lane = threaded_lane) -> Summary:
    """Everything ``tuiprof summary`` reports, as plain JSON-ready data (the document of :func:`summarise`)."""
    return summarise(runset, options, progress=progress, lane=lane).summary


@dataclass(frozen=True)
class _Lanes:
    """The jobs of the summary's two lanes of background work (:func:`_start_lanes`)."""

    grouped: Job
    occupancy: Job
    api: Job
    timelines: list[Job | None]  # per process; None: no GPU activity
    ranks: Job
    stats: Job


def _start_lanes(
    runset: RunSet, inputs: list[RunInput], kernels: pd.DataFrame, order: np.ndarray, options: SummaryOptions, process_total: int, lane: Lane
) -> _Lanes:
    """Start the two lanes: the GPU timeline of each process (the costliest part) and the
    grouped hotspots first, while the caller runs the host-API sections; numpy releases the
    GIL in its array loops, so threaded lanes overlap on a 2-core machine. The rank
    sections, the statistics checks, the occupancy and the API table are worth a lane's
    thread too when the run has one process (numpy passes over long arrays); with several
    processes they are mostly Python per process, which a busier thread only interleaves at
    the GIL (slower at 64 ranks, docs/performance.md), so they run in the caller's thread,
    when their result is needed."""
    top = options.top
    rules = options.rules or DEFAULT_CATEGORY_RULES
    threshold = DEFAULT_GAP_THRESHOLD_NS if options.gap_threshold_ns is None else int(options.gap_threshold_ns)
    more = len(inputs) == 1

    def grouped() -> tuple[tuple[pd.DataFrame, ...], list[pd.DataFrame | None], pd.Series | None]:
        op_links = operator_links(inputs)
        categories = kernel_categories_of(inputs, op_links, rules)
        return grouped_hotspots(kernels, process_total, rules, order, categories, run_codes(runset)), op_links, categories

    def timeline_of(r: RunInput) -> Callable[[], RunTimeline]:
        return lambda: run_timeline(r, threshold)

    def rank_sections() -> tuple[list[RankRecord], CommunicationSection, StragglerSection, ranks.WaitTable]:
        # a counter pass recorded by another process is another recording, not a rank (issue 32)
        keep = [i for i, r in enumerate(inputs) if "counter_pass_of" not in r.run.meta.extra]
        rank_inputs = [inputs[i] for i in keep]
        # the category table's categories (operator first): one summary, one compute/copy split
        assert grouped_job is not None  # started below, before any lane runs this
        per_process = categories_per_process(grouped_job.result()[2], inputs)
        categories = None if per_process is None else [per_process[i] for i in keep]
        return ranks.ranks_and_waits(
            [r.run for r in rank_inputs],
            [r.label for r in rank_inputs],
            [r.wall_ns for r in rank_inputs],
            [r.index.classes for r in rank_inputs],
            rules,
            categories,
        )

    grouped_job, occupancy_job, api_job = lane([grouped], [lambda: occupancy_section(inputs, top), lambda: api_section(runset, top)], "tuiprof-hotspots", more)
    *timeline_jobs, ranks_job, stats_job = lane(
        [timeline_of(r) if has_gpu_activity(r.run) else None for r in inputs],
        [rank_sections, lambda: stats_section(runset, inputs, top)],
        "tuiprof-timeline",
        more,
    )
    assert grouped_job and occupancy_job and api_job and ranks_job and stats_job  # a lane gives a job for every function
    return _Lanes(grouped_job, occupancy_job, api_job, timeline_jobs, ranks_job, stats_job)


def _launch_links(inputs: list[RunInput], progress: Progress | None) -> list[pd.DataFrame]:
    """:func:`launch_links` of each process, reporting progress per process."""
    links = []
    for step, r in enumerate(inputs):
        if progress:
            progress("analysing", step, len(inputs))
        links.append(launch_links(r))
    return links


def _kernel_whole(source: str, stats_found: StatsSection) -> int | None:
    """The run's kernel time when the kernel statistics stand in for a trace (a cut table's
    rows hold less; :func:`~tui_prof.analysis.stats.run_total_ns`), else None."""
    if source != "stats":
        return None
    return next((int(t["run_total_ns"]) for t in stats_found["tables"] if t["key"] == "kernel_stats"), None)


PAUSE_COLLECTOR_PROCESSES = 256
"""From this many processes on, :func:`summarise` runs with Python's cyclic collector paused."""


def summarise(runset: RunSet, options: SummaryOptions = SummaryOptions(), *, progress: Progress | None = None, lane: Lane = threaded_lane) -> SummaryResult:
    """The summary document with the per-run gap sets and launch links behind it.

    ``progress(stage, done, total)`` is called once per analysed process. ``lane``
    (:mod:`tui_prof.threads`) runs the two lanes of background work: the default
    :func:`~tui_prof.threads.threaded_lane` overlaps them with this thread (the CLI);
    :func:`~tui_prof.threads.inline_lane` runs everything in the calling thread (the TUI: its
    event loop would take turns at the GIL with them, and its other panes' work already
    runs beside). The document is the same either way.
    """
    # thousands of processes: no oldest-generation collector pass over all their objects at
    # every step (a few big processes keep it: a cycle holding a large array is freed sooner)
    with collector_paused() if len(runset.runs) >= PAUSE_COLLECTOR_PROCESSES else contextlib.nullcontext():
        return _summarise(runset, options, progress, lane)


def _summarise(runset: RunSet, options: SummaryOptions, progress: Progress | None, lane: Lane) -> SummaryResult:
    """:func:`summarise`'s work."""
    top, max_gaps = options.top, options.max_gaps
    gap_threshold_ns = options.gap_threshold_ns
    threshold = DEFAULT_GAP_THRESHOLD_NS if gap_threshold_ns is None else int(gap_threshold_ns)
    rules = options.rules or DEFAULT_CATEGORY_RULES
    kernels = all_kernels(runset)
    order = duration_order(kernels)
    inputs = run_inputs(runset)
    wall = wall_ns(inputs)
    process_total = process_ns(inputs)  # the whole of figures summed over processes
    platform = detect_platform(runset)

    jobs = _start_lanes(runset, inputs, kernels, order, options, process_total, lane)
    processes = process_order(kernels, run_codes(runset)) if len(kernels) else None
    by_name = hotspots(kernels, dur_order=order, wall_ns=process_total, processes=processes)  # here: the threads need only the order
    sync = sync_section(inputs)
    links = _launch_links(inputs, progress)
    kernel_dur = kernel_durations(kernels)
    launch = launch_section(inputs, links, kernel_dur)
    copies = copies_section(runset, inputs)
    counters = counters_section(inputs, platform["vendor"])
    peak = peak_memory_of(runset)
    timelines = [job.result() for job in jobs.timelines if job is not None]
    gapsets = {step: job.result().gaps for step, job in enumerate(jobs.timelines) if job is not None}
    found = found_steps(inputs, gapsets, step_name=options.step_name, warmup=options.warmup, outlier_factor=options.outlier_factor)
    steps_found = found.section
    memory_found = memory_section_of(inputs, steps_found, found.growths)
    # the allocator's own totals count what was allocated before the trace began; the level of
    # matched allocation/free calls is the peak when no trace records memory
    if memory_found["source"] in (TOTALS, API):
        peak = memory_found["peak_allocated_bytes"]
    gpu = gpu_section(timelines)
    grouped_tables, op_links, kernel_cats = jobs.grouped.result()
    cats = categories_section(grouped_tables, rules, top)
    source = hotspots_source(runset)
    if source == "stats":  # no kernel trace: the profiler's kernel statistics stand in
        hot, kernels_found = stats_hotspots(runset, top)
        cats["categories"] = stats_categories(runset, rules)
    else:
        hot, kernels_found = hotspot_records(by_name, top), kernels_section(kernels, by_name)
    occupancy = jobs.occupancy.result()
    stats_found = jobs.stats.result()
    doc: Summary = {
        "schema": SCHEMA,
        "tuiprof_version": __version__,
        "source": source_section(runset),
        "processes": process_records(inputs),
        "agents": agent_records(inputs, platform["vendor"]),
        "platform": platform,
        "kernels": kernels_found,
        "hotspots": hot,
        "hotspots_source": source,
        "warnings": warnings_section(runset, inputs) + stats_warnings(stats_found["checks"]) + cut_warnings(stats_found["tables"]),
        "wall_ns": int(wall),
        "gpu": gpu,
        "gaps": gaps_section(timelines, threshold, max_gaps),
        "sync": sync,
        "launch": launch,
        "copies": copies,
        "copies_source": copies_source(runset),
        "api": jobs.api.result(),
        "categories": cats["categories"],
        "category_rules": cats["category_rules"],
        "hotspots_by": cats["hotspots_by"],
        "hotspots_by_operator": operators_section(inputs, top, op_links),
        "hotspots_by_module": modules_section(inputs, top, op_links),
        "measurement": measurement_section(
            wall, kernels_found, cats["categories"], gpu, sync, launch, copies, peak, len(inputs), process_total, _kernel_whole(source, stats_found)
        ),
        "counters": counters,
        "occupancy": occupancy,
        "logs": logs_section(runset) if options.logs else [],
        "stats": stats_found,
        "steps": steps_found,
        "memory": memory_found,
        "findings": [],
    }
    rank_rows, communication, stragglers, waits = jobs.ranks.result()
    doc["ranks"] = rank_rows
    doc["communication"] = communication
    doc["stragglers"] = stragglers
    on_path, on_path_rows = _add_decisions(
        doc, inputs, steps_found, source, rules, waits, categories_per_process(kernel_cats, inputs) if len(inputs) > 1 else None, found.rows
    )
    if on_path_rows is not None:  # the critical column of the category and operator tables
        sizes = [len(r.run.kernels) for r in inputs]
        by = doc["hotspots_by"]
        add_group_critical(by["category"], sums_by_process(_category_keys(kernels, kernel_cats, rules), on_path_rows, sizes))
        for rows, key in ((by["normalized"], "normalized"), (by["agent"], "agent"), (by["process"], "pid")):
            add_group_critical(rows, sums_by_process(group_key(kernels, key).reset_index(drop=True), on_path_rows, sizes))
        if doc["hotspots_by_operator"]:  # a process records operators
            add_group_critical(doc["hotspots_by_operator"], sums_by_process(_operator_keys(inputs, op_links), on_path_rows, sizes))
    report = check_run(runset)
    doc["trust"] = trust_labels(report, doc)
    return SummaryResult(doc, gapsets, dict(enumerate(links)), report, on_path, on_path_rows)


def _category_keys(kernels: pd.DataFrame, categories: pd.Series | None, rules: CategoryRules) -> pd.Series:
    """The category table's group of each kernel row (operator first where recorded)."""
    key = categories if categories is not None else group_key(kernels, "category", rules)
    return key.reset_index(drop=True)


def _operator_keys(inputs: list[RunInput], op_links: list[pd.DataFrame | None]) -> pd.Series:
    """The operator table's group of each kernel row (no group where a process records no operators)."""
    parts = [operator_groups(len(r.run.kernels), link) for r, link in zip(inputs, op_links, strict=True)]
    return pd.Series(pd.api.types.union_categoricals([p.array for p in parts], ignore_order=True)) if parts else pd.Series([], dtype=object)


def _add_decisions(
    doc: Summary,
    inputs: list[RunInput],
    steps_found: StepsSection,
    source: str,
    rules: CategoryRules,
    waits: ranks.WaitTable,
    categories: list[np.ndarray | None] | None,
    step_rows: Sequence[Sequence[StepRecord]],
) -> tuple[dict[str, int], np.ndarray | None]:
    """The critical path, the warm-up and the findings ranked by their projected saving;
    returns the ns on the critical path of each kernel / copy name, and of each kernel row
    of the run set's kernels (all processes in run order; None without a path). ``waits``:
    the run's collective instances (the rank sections'), ``categories``: each process's kernel
    categories, operator first (which kernels are collectives); ``step_rows``: each process's
    own step rows by its position in ``inputs`` (analysis.steps.FoundSteps.rows)."""
    windows = process_windows(inputs, steps_found, categories=categories) if source != "stats" else {}  # the critical path and the savings need the trace
    doc["critical_path"] = None
    on_path: dict[str, int] = {}
    rows: np.ndarray | None = None
    if windows:
        section, on_path, by_row = critical_section(windows, rules, waits if len(windows) > 1 else None)
        rows = np.concatenate([by_row.get(i, np.zeros(len(r.run.kernels))) for i, r in enumerate(inputs)]) if inputs else None
        add_critical_ns(doc["hotspots"], on_path)
        on_path_ranks = ranks_on_path(inputs, steps_found, rules, waits, categories, step_rows)
        if on_path_ranks:
            section["ranks_on_path"] = on_path_ranks
        doc["critical_path"] = section
    doc["warmup"] = warmup_of(inputs, steps_found)
    doc["findings"] = add_savings(build_findings(doc), windows, rules) if windows else build_findings(doc)
    return on_path, rows


def trust_labels(report: CheckReport, doc: Summary) -> dict[str, TrustLabel]:
    """Every section's trust label from the integrity report (issue 32)."""
    out: dict[str, TrustLabel] = {}
    for key in doc:
        if key in ("schema", "tuiprof_version", "trust"):
            continue
        level, reasons = report.trust(key)
        out[key] = {"trust": level, "reasons": reasons}
    return out
