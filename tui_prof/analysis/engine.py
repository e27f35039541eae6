"""Runs every analysis over a run set and adds its sections to the summary document.

Wall time of a process = last end - first start over its API calls, kernels and copies;
the run set's wall is the same over all processes (one clock per host). Per-agent results
are computed per process (agent ids are per run) and then combined:
``gpu.busy_pct`` = sum of busy / sum of spans over all (process, agent) pairs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tui_prof.analysis import hostapi
from tui_prof.analysis.capability import SERIALISATION_WARNING, capabilities, scan_logs
from tui_prof.analysis.counters import counter_metrics
from tui_prof.analysis.hotspots import hotspot_records, hotspots
from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES
from tui_prof.analysis.occupancy import kernel_occupancy
from tui_prof.analysis.timeline import (
    CAUSES,
    DEFAULT_GAP_THRESHOLD_NS,
    gpu_gaps,
    union_length,
)
from tui_prof.model import Run, RunSet
from tui_prof.threads import background


def time_range(run: Run) -> tuple[int, int] | None:
    """(first start, last end) in ns over the run's API calls, kernels and copies."""
    lo, hi = [], []
    for table in (run.api, run.kernels, run.copies):
        if len(table):
            lo.append(int(table["start"].min()))
            hi.append(int(table["end"].max()))
    return (min(lo), max(hi)) if lo else None


def copy_stats(copies: pd.DataFrame, wall_ns: int) -> dict:
    """Bytes, count, time and achieved bandwidth (bytes/ns = GB/s) per direction.

    Some formats do not record a copy's size (rocprofv3 CSV's memory_copy_trace):
    ``bytes`` sums the known sizes and ``size_unknown`` counts the copies without one."""
    dur = copies["end"].to_numpy() - copies["start"].to_numpy()
    nbytes = copies["bytes"].to_numpy()
    known = nbytes >= 0
    by_direction = {}
    if len(copies):
        frame = pd.DataFrame({"dir": copies["direction"].astype(str).replace("", "unknown"), "dur": dur,
                              "bytes": np.where(known, nbytes, 0), "unknown": ~known})
        for direction, g in frame.groupby("dir", sort=True):
            t = int(g["dur"].sum())
            b = int(g["bytes"].sum())
            by_direction[direction] = {"count": int(len(g)), "bytes": b, "size_unknown": int(g["unknown"].sum()),
                                       "time_ns": t,
                                       "bandwidth_gbs": round(b / t, 4) if t > 0 and b > 0 else None}
    time_ns = int(dur.sum()) if len(copies) else 0
    busy = union_length(copies["start"].to_numpy(), copies["end"].to_numpy())
    return {
        "count": int(len(copies)),
        "bytes": int(nbytes[known].sum()) if len(copies) else 0,
        "size_unknown": int((~known).sum()),
        "time_ns": time_ns,
        "busy_ns": busy,
        "pct_of_wall": round(100.0 * busy / wall_ns, 4) if wall_ns > 0 else 0.0,
        "by_direction": by_direction,
    }


def peak_memory(allocations: pd.DataFrame) -> int | None:
    """Peak of (allocated - freed) bytes over time; frees without a size take the size of
    the last allocation at the same address. None when nothing is recorded."""
    if allocations.empty:
        return None
    op = allocations["operation"].astype(str).str.upper().to_numpy()
    is_alloc = np.char.find(op.astype(str), "ALLOC") >= 0
    is_free = np.char.find(op.astype(str), "FREE") >= 0
    nbytes = allocations["bytes"].to_numpy().astype(np.int64)
    frame = pd.DataFrame({"t": allocations["start"].to_numpy(), "addr": allocations["address"].to_numpy(),
                          "alloc": np.where(is_alloc & (nbytes > 0), nbytes, np.nan)})
    frame = frame.sort_values("t", kind="stable")
    size_at_addr = frame.groupby("addr")["alloc"].ffill().fillna(0).to_numpy()
    order = frame.index.to_numpy()
    free_bytes = np.where(nbytes[order] > 0, nbytes[order], size_at_addr)
    delta = np.where(is_alloc[order] & ~is_free[order], np.maximum(nbytes[order], 0), 0) - np.where(is_free[order], free_bytes, 0)
    if not (is_alloc.any() and (nbytes > 0).any()):
        return None
    return int(max(np.cumsum(delta).max(), 0))


def longest_first(durations: np.ndarray, keep: int | None) -> np.ndarray:
    """Positions of the ``keep`` longest durations, longest first, ties in position order:
    the same as ``np.argsort(-durations, kind="stable")[:keep]`` (``keep`` None: all), but
    for a small ``keep`` only the kept rows are sorted (one partition of the rest)."""
    n = len(durations)
    if keep is None or keep < 0 or keep >= n:
        order = np.argsort(-durations, kind="stable")
        return order if keep is None else order[:keep]
    if keep == 0:
        return np.array([], dtype=np.int64)
    threshold = np.partition(durations, n - keep)[n - keep]  # the keep-th longest
    above = np.flatnonzero(durations > threshold)
    ties = np.flatnonzero(durations == threshold)[: keep - len(above)]
    chosen = np.sort(np.concatenate([above, ties]))
    return chosen[np.argsort(-durations[chosen], kind="stable")]


def run_label(run: Run) -> str:
    """A process's label in the summary: the loader's label, else host/pid."""
    return run.meta.label or f"{run.meta.hostname}/{run.meta.pid}"


def add_analysis(doc: dict, runset: RunSet, kernels: pd.DataFrame, *, dur_order=None, top: int | None = 20, gap_threshold_ns: int | None = None,
                 rules=None, max_gaps: int | None = 200, logs: bool = True, progress=None,
                 details: dict | None = None) -> None:
    """Add every analysis section to ``doc``. With ``details`` (a dict), the full per-run
    results behind the document are kept there so a caller needs not compute them again:
    ``details["gaps"][run_index]`` (:class:`~tui_prof.analysis.timeline.GapSet`, every gap,
    not only the listed ones) and ``details["links"][run_index]``
    (:func:`~tui_prof.analysis.hostapi.link_launches`)."""
    threshold = DEFAULT_GAP_THRESHOLD_NS if gap_threshold_ns is None else int(gap_threshold_ns)
    rules = rules or DEFAULT_CATEGORY_RULES
    ranges_of = [time_range(run) for run in runset.runs]
    ranges = [r for r in ranges_of if r]
    wall = (max(r[1] for r in ranges) - min(r[0] for r in ranges)) if ranges else 0
    doc["wall_ns"] = int(wall)

    agent_rows, gap_sets = [], []
    sync_tot = {"calls": 0, "total_ns": 0, "blocking_copy_calls": 0, "by_name": {}}
    sal_tot = {"launches": 0, "followed_by_sync": 0}
    launch_parts, copy_frames, counter_blocks, occupancy_rows = [], [], [], []
    queue_delays = []
    peak = None
    # The GPU timeline (the costliest part) of each run runs in a worker thread while the
    # host-API analyses run here: numpy releases the GIL in its array loops, so on a
    # 2-core machine the two overlap. Results are combined in run order.
    # API classes and the correlation-id index of each run: built once, shared by the
    # timeline and link_launches
    index_of = [hostapi.CorrIndex(run.api) for run in runset.runs]
    # The hotspots grouped by category, normalised name, agent and process (one duration
    # sort shared) run in another worker thread beside them: the main thread's host-API
    # analyses were the long pole (≈ 0.33 s against ≈ 0.15 s at 1M dispatches).
    from tui_prof.analysis.hotspots import duration_order

    by_duration = duration_order(kernels) if dur_order is None else dur_order

    def grouped(by_duration=by_duration, wall=wall, rules=rules) -> tuple:  # bound now, not when the thread runs
        return tuple(hotspots(kernels, by=by, wall_ns=wall, rules=rules if by == "category" else None, dur_order=by_duration)
                     for by in ("category", "normalized", "agent", "pid"))

    (grouped_job,) = background([grouped], name="tuiprof-hotspots")
    timelines = background([(lambda run=run, i=i: gpu_gaps(run, threshold, corr_index=i))
                             if (len(run.kernels) or len(run.copies)) else None
                             for run, i in zip(runset.runs, index_of)])
    for step, (run, timeline_job) in enumerate(zip(runset.runs, timelines)):
        if progress:
            progress("analysing", step, len(runset.runs))
        label = run_label(run)
        rng = ranges_of[step]
        run_wall = (rng[1] - rng[0]) if rng else 0
        classes = index_of[step].classes
        s = hostapi.sync_stats(run.api, run_wall, classes)
        sync_tot["calls"] += s["calls"]
        sync_tot["total_ns"] += s["total_ns"]
        sync_tot["blocking_copy_calls"] += s["blocking_copy_calls"]
        for name, v in s["by_name"].items():
            acc = sync_tot["by_name"].setdefault(name, {"calls": 0, "total_ns": 0})
            acc["calls"] += v["calls"]
            acc["total_ns"] += v["total_ns"]
        sal = hostapi.sync_after_launch(run.api, classes)
        sal_tot["launches"] += sal["launches"]
        sal_tot["followed_by_sync"] += sal["followed_by_sync"]
        links = hostapi.link_launches(run.kernels, run.api, corr_index=index_of[step])
        if details is not None:
            details.setdefault("links", {})[step] = links
        launch_parts.append(hostapi.launch_counts(run.api, classes, links))
        direct = ~links["graph"].to_numpy()
        queue_delays.append((links["queue_delay_ns"].to_numpy()[direct], links["api_dur_ns"].to_numpy()[direct]))
        copy_frames.append(run.copies)
        if len(run.counters) or (len(run.kernels) and run.gpu_agents):
            block = counter_metrics(run)
            block["process"] = label
            counter_blocks.append(block)
        arch_of = {a.id: a.arch for a in run.gpu_agents}
        wave_of = {a.id: a.wave_size for a in run.gpu_agents if a.wave_size}
        for occ in kernel_occupancy(run.kernels, arch_of, wave_of):
            occ["process"] = label
            occupancy_rows.append(occ)
        p = peak_memory(run.allocations)
        if p is not None:
            peak = p if peak is None else max(peak, p)
        if timeline_job is not None:
            agents, gaps = timeline_job.result()
            for a in agents:
                a["process"] = label
            agent_rows.extend(agents)
            gap_sets.append((label, gaps))
            if details is not None:
                details.setdefault("gaps", {})[step] = gaps

    # GPU busy / idle
    span = sum(a["span_ns"] for a in agent_rows)
    busy = sum(a["busy_ns"] for a in agent_rows)
    doc["gpu"] = {
        "span_ns": int(span),
        "busy_ns": int(busy),
        "idle_ns": int(span - busy),
        "busy_pct": round(100.0 * busy / span, 4) if span else 0.0,
        "idle_pct": round(100.0 * (span - busy) / span, 4) if span else 0.0,
        "agents": agent_rows,
    }
    by_cause = {c: int(sum(a["gaps_by_cause"][c] for a in agent_rows)) for c in CAUSES}
    count_by_cause = {c: int(sum(a["gaps_count_by_cause"][c] for a in agent_rows)) for c in CAUSES}
    gap_count = sum(len(g) for _, g in gap_sets)
    if gap_count:
        # longest first (ties in run, agent, time order); names are looked up for the kept rows only
        durations = np.concatenate([g.column("end") - g.column("start") for _, g in gap_sets])
        order = longest_first(durations, max_gaps)
        chosen = np.sort(order)
        bounds = np.cumsum([0] + [len(g) for _, g in gap_sets])
        frames = []
        for (label, gaps), lo, hi in zip(gap_sets, bounds[:-1], bounds[1:]):
            mine = chosen[(chosen >= lo) & (chosen < hi)] - lo
            if len(mine):
                frame = gaps.frame(mine)
                frame.insert(0, "process", label)
                frames.append(frame)
        listed = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0] if frames else pd.DataFrame()
        if len(listed):
            listed = listed.take(np.searchsorted(chosen, order))  # back to longest-first order
    else:
        listed = pd.DataFrame()
    listed = listed.sort_values(["process", "agent", "start"], kind="stable") if len(listed) else listed
    doc["gaps"] = {
        "count": int(gap_count),
        "threshold_ns": threshold,
        "by_cause": by_cause,
        "count_by_cause": count_by_cause,
        "below_threshold_ns": int(sum(a["below_threshold_ns"] for a in agent_rows)),
        "below_threshold_count": int(sum(a["below_threshold_count"] for a in agent_rows)),
        "listed": [
            {"process": r.process, "agent": int(r.agent), "start_ns": int(r.start), "duration_ns": int(r.duration_ns),
             "cause": r.cause, "api_cause": r.api_cause or None, "api_before": r.api_before or None,
             "prev": r.prev_name, "next": r.next_name}
            for r in listed.itertuples(index=False)
        ],
        "truncated": int(gap_count - len(listed)),
    }
    # synchronisation
    launches = sal_tot["launches"]
    ratio = sal_tot["followed_by_sync"] / launches if launches else 0.0
    doc["sync"] = {
        "calls": sync_tot["calls"],
        "total_ns": sync_tot["total_ns"],
        "pct_of_wall": round(100.0 * sync_tot["total_ns"] / wall, 4) if wall else 0.0,
        "blocking_copy_calls": sync_tot["blocking_copy_calls"],
        "by_name": dict(sorted(sync_tot["by_name"].items(), key=lambda kv: -kv[1]["total_ns"])),
        "sync_after_launch": {
            "launches": launches,
            "followed_by_sync": sal_tot["followed_by_sync"],
            "ratio": round(ratio, 4),
            "detected": bool(launches >= hostapi.SYNC_AFTER_LAUNCH_MIN and ratio >= hostapi.SYNC_AFTER_LAUNCH_RATIO),
        },
    }
    # launch overhead
    kd = kernels["end"].to_numpy() - kernels["start"].to_numpy()
    counts = {key: sum(p[key] for p in launch_parts) for key in
              ("launch_calls", "graph_launch_calls", "api_total_ns", "linked_dispatches", "graph_dispatches")}
    empty = np.array([], np.int64)
    doc["launch"] = hostapi.launch_section(counts, np.concatenate([q for q, _ in queue_delays]) if queue_delays else empty,
                                           np.concatenate([a for _, a in queue_delays]) if queue_delays else empty, kd, wall)
    # copies
    from tui_prof.model.schema import concat_tables

    copies = concat_tables("copies", copy_frames)
    doc["copies"] = copy_stats(copies, wall)
    # categories and grouped hotspots (computed in the background, started above)
    cats, by_normalized, by_agent, by_pid = grouped_job.result()
    doc["categories"] = {str(r.name): int(r.total_ns) for r in cats.itertuples(index=False)}
    doc["category_rules"] = rules.source
    doc["hotspots_by"] = {
        "normalized": hotspot_records(by_normalized, top),
        "category": hotspot_records(cats, None),
        "agent": hotspot_records(by_agent, None),
        "process": hotspot_records(by_pid, None),
    }
    # measurement table
    ktime = int(kd.sum()) if len(kd) else 0
    gemm = doc["categories"].get("GEMM", 0)
    doc["measurement"] = {
        "span_ns": int(wall),
        "gpu_span_ns": int(span),
        "kernel_count": int(len(kernels)),
        "kernel_time_ns": ktime,
        "gemm_pct_of_kernel_time": round(100.0 * gemm / ktime, 4) if ktime else 0.0,
        "sync_pct_of_wall": doc["sync"]["pct_of_wall"],
        "sync_target_pct": 5.0,
        "launch_api_pct_of_wall": doc["launch"]["api_pct_of_wall"],
        "median_queue_delay_ns": doc["launch"]["median_queue_delay_ns"],
        "idle_pct": doc["gpu"]["idle_pct"],
        "copy_pct_of_wall": doc["copies"]["pct_of_wall"],
        "peak_memory_bytes": peak,
    }
    # counters, occupancy, capabilities, logs
    doc["counters"] = counter_blocks
    occupancy_rows.sort(key=lambda o: -o["total_ns"])
    doc["occupancy"] = occupancy_rows[:top] if top else occupancy_rows
    for record in doc["agents"]:
        if record.get("type") == "GPU":
            run = next((r for r in runset.runs if run_label(r) == record["process"]), None)
            record["capabilities"] = capabilities(record.get("arch") or "", run.meta.tool_version if run else "")
    if any(len(run.counters) for run in runset.runs):
        doc["warnings"].append(SERIALISATION_WARNING)
    root = Path(runset.root)
    doc["logs"] = scan_logs(root if root.is_dir() else root.parent) if logs and runset.root and root.exists() else []
    from tui_prof.analysis.findings import build_findings

    doc["findings"] = build_findings(doc)
