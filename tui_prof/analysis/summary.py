"""The ``tuiprof.summary/1`` document: the stable JSON contract behind ``tuiprof summary``.

Later analyses add keys; existing keys keep their meaning and units (ns, bytes, %).
:func:`build_summary` runs the sections of :mod:`tui_prof.analysis.engine` and is the
one place where the document is assembled from their typed parts
(:class:`~tui_prof.analysis.parts.SummaryDoc`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from tui_prof import __version__
from tui_prof.analysis import engine, ranks
from tui_prof.analysis.critical import add_critical_ns, critical_section, process_windows
from tui_prof.analysis.findings import build_findings
from tui_prof.analysis.hotspots import (
    all_kernels,
    duration_order,
    hotspot_records,
    hotspots,
)
from tui_prof.analysis.memory import API, TOTALS
from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES, CategoryRules
from tui_prof.analysis.parts import CommunicationPart, RankRecord, StragglerPart, SummaryDoc
from tui_prof.analysis.platform import detect_platform
from tui_prof.analysis.savings import add_savings
from tui_prof.analysis.steps import OUTLIER_FACTOR
from tui_prof.analysis.timeline import DEFAULT_GAP_THRESHOLD_NS
from tui_prof.model import RunSet
from tui_prof.threads import Job, background

SCHEMA = "tuiprof.summary/1"

Progress = Callable[[str, int, int], None]


def build_summary(
    runset: RunSet,
    top: int | None = 20,
    *,
    gap_threshold_ns: int | None = None,
    rules: CategoryRules | None = None,
    max_gaps: int | None = 200,
    logs: bool = True,
    progress: Progress | None = None,
    details: dict[str, dict[int, Any]] | None = None,
    step_name: str | None = None,
    warmup: int | None = None,
    outlier_factor: float = OUTLIER_FACTOR,
    threads: bool | None = None,
) -> SummaryDoc:
    """Everything ``tuiprof summary`` reports, as plain JSON-ready data.

    ``top``: kernels listed in ``hotspots``, ``hotspots_by.normalized`` and ``occupancy``
    (None: all); ``gap_threshold_ns``: idle gaps at least this long are listed and
    classified (default 10 µs); ``rules``: :class:`~tui_prof.analysis.names.CategoryRules`;
    ``max_gaps``: gaps listed in the document (longest first; None = all); ``logs``: scan
    the run directory's log files for known profiler errors (read-only);
    ``progress(stage, done, total)`` is called once per analysed process.

    ``details`` (a dict): the full per-run results behind the document are kept there so a
    caller needs not compute them again: ``details["gaps"][run_index]``
    (:class:`~tui_prof.analysis.timeline.GapSet`, every gap, not only the listed ones) and
    ``details["links"][run_index]`` (:func:`~tui_prof.analysis.hostapi.link_launches`).

    Steps (:mod:`tui_prof.analysis.steps`): ``step_name`` picks the host range name the steps
    are taken from (``--step``), ``warmup`` the number of warm-up steps (``--warmup``; None:
    detected), ``outlier_factor`` the slow-step threshold as a multiple of the steady median.

    ``threads``: None: the summary's two threads, with more sections in them when the run
    has one process (see below); True: more sections whatever the run; False: no thread,
    every section in the calling thread (the TUI: its event loop would take turns at the
    GIL with them, and its other panes' work already runs beside).
    """
    threshold = DEFAULT_GAP_THRESHOLD_NS if gap_threshold_ns is None else int(gap_threshold_ns)
    rules = rules or DEFAULT_CATEGORY_RULES
    kernels = all_kernels(runset)
    order = duration_order(kernels)
    inputs = engine.run_inputs(runset)
    wall = engine.wall_ns(inputs)
    process_ns = engine.process_ns(inputs)  # the whole of figures summed over processes
    platform = detect_platform(runset)

    # The GPU timeline of each process (the costliest part) and the grouped hotspots run in
    # two daemon threads while the host-API sections run here: numpy releases the GIL in its
    # array loops, so on a 2-core machine they overlap. Results are taken in run order.
    # One process: its sections are numpy passes over long arrays, so the rank sections and
    # the statistics checks follow the timeline in its thread, the occupancy and the API
    # table the grouped hotspots in theirs. Several processes: those sections are mostly
    # Python per process, which a busier thread only interleaves at the GIL (slower at 64
    # ranks, docs/performance.md), so they run here, when their result is needed.
    more = len(inputs) == 1 if threads is None else threads

    def lane(first: list[Callable[[], Any] | None], then: list[Callable[[], Any]], name: str) -> list[Job | None]:
        if threads is False:
            return background([*first, *then], inline=True)
        return background([*first, *then], name=name) if more else background(first, name=name) + background(then, inline=True)

    def grouped() -> tuple[tuple[pd.DataFrame, ...], list[pd.DataFrame | None]]:
        op_links = engine.operator_links(inputs)
        categories = engine.kernel_categories_of(inputs, op_links, rules)
        return engine.grouped_hotspots(kernels, process_ns, rules, order, categories), op_links

    def timeline_of(r: engine.RunInput) -> Callable[[], engine.RunTimeline]:
        return lambda: engine.run_timeline(r, threshold)

    def rank_sections() -> tuple[list[RankRecord], CommunicationPart, StragglerPart]:
        return ranks.ranks_sections([r.run for r in inputs], [r.label for r in inputs], [r.wall_ns for r in inputs], [r.index.classes for r in inputs], rules)

    grouped_job, occupancy_job, api_job = lane(
        [grouped], [lambda: engine.occupancy_part(inputs, top), lambda: engine.api_part(runset, top)], "tuiprof-hotspots"
    )
    *timeline_jobs, ranks_job, stats_job = lane(
        [timeline_of(r) if engine.has_gpu_activity(r.run) else None for r in inputs],
        [rank_sections, lambda: engine.stats_part(runset, inputs, top)],
        "tuiprof-timeline",
    )
    by_name = hotspots(kernels, dur_order=order)  # here: the threads need only the order
    sync = engine.sync_part(inputs)
    links = []
    for step, r in enumerate(inputs):
        if progress:
            progress("analysing", step, len(inputs))
        links.append(engine.launch_links(r))
    kernel_dur = engine.kernel_durations(kernels)
    launch = engine.launch_part(inputs, links, kernel_dur)
    copies = engine.copies_part(runset, inputs)
    counters = engine.counters_part(inputs, platform["vendor"])
    peak = engine.peak_memory_of(runset)
    timelines = []
    gapsets = {}
    for step, job in enumerate(timeline_jobs):
        if job is not None:
            timelines.append(job.result())
            gapsets[step] = timelines[-1].gaps
            if details is not None:
                details.setdefault("gaps", {})[step] = timelines[-1].gaps
    steps_found = engine.steps_part(inputs, gapsets, step_name=step_name, warmup=warmup, outlier_factor=outlier_factor)
    memory_found = engine.memory_part_of(inputs, steps_found)
    # the allocator's own totals count what was allocated before the trace began; the level of
    # matched allocation/free calls is the peak when no trace records memory
    if memory_found["source"] in (TOTALS, API):
        peak = memory_found["peak_allocated_bytes"]
    if details is not None:
        details.setdefault("links", {}).update(enumerate(links))
    gpu = engine.gpu_part(timelines)
    assert grouped_job and occupancy_job and api_job and ranks_job and stats_job  # background() gives a job for every function
    grouped_tables, op_links = grouped_job.result()
    cats = engine.categories_part(grouped_tables, rules, top)
    source = engine.hotspots_source(runset)
    if source == "stats":  # no kernel trace: the profiler's kernel statistics stand in
        hot, kernels_part = engine.stats_hotspots(runset, top)
        cats["categories"] = engine.stats_categories(runset, rules)
    else:
        hot, kernels_part = hotspot_records(by_name, top), engine.kernels_part(kernels, by_name)
    occupancy = occupancy_job.result()
    stats_part = stats_job.result()
    doc: SummaryDoc = {
        "schema": SCHEMA,
        "tuiprof_version": __version__,
        "source": engine.source_part(runset),
        "processes": engine.process_records(inputs),
        "agents": engine.agent_records(inputs, platform["vendor"]),
        "platform": platform,
        "kernels": kernels_part,
        "hotspots": hot,
        "hotspots_source": source,
        "warnings": engine.warnings_part(runset, inputs) + engine.stats_warnings(stats_part["checks"]),
        "wall_ns": int(wall),
        "gpu": gpu,
        "gaps": engine.gaps_part(timelines, threshold, max_gaps),
        "sync": sync,
        "launch": launch,
        "copies": copies,
        "copies_source": engine.copies_source(runset),
        "api": api_job.result(),
        "categories": cats["categories"],
        "category_rules": cats["category_rules"],
        "hotspots_by": cats["hotspots_by"],
        "hotspots_by_operator": engine.operators_part(inputs, top, op_links),
        "hotspots_by_module": engine.modules_part(inputs, top, op_links),
        "measurement": engine.measurement_part(wall, kernel_dur, cats["categories"], gpu, sync, launch, copies, peak, len(inputs), process_ns),
        "counters": counters,
        "occupancy": occupancy,
        "logs": engine.logs_part(runset) if logs else [],
        "stats": stats_part,
        "steps": steps_found,
        "memory": memory_found,
        "findings": [],
    }
    rank_rows, communication, stragglers = ranks_job.result()
    doc["ranks"] = rank_rows
    doc["communication"] = communication
    doc["stragglers"] = stragglers
    doc["findings"] = build_findings(doc)
    if source != "stats":  # the critical path and the savings need the trace
        windows = process_windows(inputs, steps_found)
        doc["critical_path"], on_path = critical_section(windows, rules)
        add_critical_ns(doc["hotspots"], on_path)
        doc["findings"] = add_savings(doc["findings"], windows, rules)
    return doc
