"""One function per section of the summary document, each returning its typed part
(:mod:`tui_prof.analysis.parts`); :func:`tui_prof.analysis.summary.build_summary`
runs them and assembles the document.

Wall time of a process = last end - first start over its API calls, kernels and copies.
Whole-run figures follow :mod:`tui_prof.analysis.aggregate`: the run set's wall is the
span per host (one clock) and the largest over hosts; figures summed over processes take
the summed process walls as their whole. Per-agent results are computed per process
(agent ids are per run) and then combined: ``gpu.busy_pct`` = sum of busy / sum of spans
over all (process, agent) pairs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from tui_prof.analysis import aggregate, flops, hostapi, memory, operators, stats, steps
from tui_prof.analysis.arrays import code_totals
from tui_prof.analysis.capability import SERIALISATION_WARNING, capabilities, nvidia_capabilities, scan_logs
from tui_prof.analysis.counters import counter_metrics, hbm_peak_gbs
from tui_prof.analysis.hotspots import group_key, hotspot_records, hotspots, kernel_time_ns, process_order
from tui_prof.analysis.names import CategoryRules
from tui_prof.analysis.occupancy import kernel_occupancy
from tui_prof.analysis.operators import kernel_categories_by_op, link_operators, module_key, operator_shapes, operator_time
from tui_prof.analysis.parts import (
    ApiPart,
    ApiRow,
    CategoriesPart,
    CopiesPart,
    CopyDirection,
    CopyKind,
    CopyKindDirection,
    GapRecord,
    GapsPart,
    GpuPart,
    HotspotRecord,
    KernelsPart,
    LaunchCounts,
    LaunchPart,
    LogHit,
    MeasurementPart,
    MemoryPart,
    OperatorRecord,
    ProcessRecord,
    Record,
    ShapeRecord,
    SourcePart,
    StatsPart,
    StepsPart,
    SyncPart,
)
from tui_prof.analysis.timeline import CAUSES, GapSet, busy_intervals, gpu_gaps, union_length
from tui_prof.model import Agent, Run, RunSet
from tui_prof.model.schema import concat_tables

SYNC_TARGET_PCT = 5.0  # the profiling guide's target for sync + blocking copies, % of wall


def time_range(run: Run) -> tuple[int, int] | None:
    """(first start, last end) in ns over the run's API calls, kernels and copies."""
    lo, hi = [], []
    for table in (run.api, run.kernels, run.copies):
        if len(table):
            lo.append(int(table["start"].min()))
            hi.append(int(table["end"].max()))
    return (min(lo), max(hi)) if lo else None


def run_label(run: Run) -> str:
    """A process's label in the summary: the loader's label, else host/pid."""
    return run.meta.label or f"{run.meta.hostname}/{run.meta.pid}"


@dataclass(frozen=True)
class RunInput:
    """One run with what several sections share: its label, time range, and the API
    classes and correlation-id index (built once, used by the timeline, sync and launch)."""

    run: Run
    label: str
    range: tuple[int, int] | None
    index: hostapi.CorrIndex

    @property
    def wall_ns(self) -> int:
        return (self.range[1] - self.range[0]) if self.range else 0


def run_inputs(runset: RunSet) -> list[RunInput]:
    """One :class:`RunInput` per process, in run order."""
    return [RunInput(run, run_label(run), time_range(run), hostapi.CorrIndex(run.api)) for run in runset.runs]


def wall_ns(inputs: Sequence[RunInput]) -> int:
    """First start to last end over the processes of one host; over several hosts (clocks
    not comparable) the largest such span (:func:`aggregate.group_span`)."""
    return aggregate.group_span([(aggregate.clock_key(r.run), r.range) for r in inputs])


def process_ns(inputs: Sequence[RunInput]) -> int:
    """The processes' walls summed: the whole of every figure summed over processes."""
    return sum(r.wall_ns for r in inputs)


# --- processes, agents, warnings ---------------------------------------------------------


def source_part(runset: RunSet) -> SourcePart:
    return {
        "path": runset.root,
        "formats": runset.formats,
        "errors": [{"path": i.path, "message": i.message} for i in runset.errors],
        "skipped": [{"path": i.path, "message": i.message} for i in runset.skipped],
    }


def process_records(inputs: Sequence[RunInput]) -> list[ProcessRecord]:
    out: list[ProcessRecord] = []
    for r in inputs:
        run = r.run
        out.append(
            {
                "label": r.label,
                "hostname": run.meta.hostname or None,
                "pid": run.meta.pid,
                "rank": run.meta.rank,
                "formats": list(run.meta.formats),
                "tool": run.meta.tool or None,
                "tool_version": run.meta.tool_version or None,
                "command": run.meta.command or None,
                "files": len(run.meta.files),
                "partial": run.partial,
                "dispatches": int(len(run.kernels)),
                "api_calls": int(len(run.api)),
                "copies": int(len(run.copies)),
                "counter_values": int(len(run.counters)),
            }
        )
    return out


def agent_record(agent: Agent, process: str) -> Record:
    record = {k: v for k, v in asdict(agent).items() if k != "extra"}
    record["arch"] = agent.arch or None
    record["process"] = process
    return record


def agent_records(inputs: Sequence[RunInput], vendor: str = "unknown") -> list[Record]:
    """Every agent of every process; a GPU's record ends with its ``capabilities`` (for
    the tool version of the first process with that label; on NVIDIA what the trace
    says about the device, :func:`~tui_prof.analysis.capability.nvidia_capabilities`)."""
    first_of: dict[str, Run] = {}
    for r in inputs:
        first_of.setdefault(r.label, r.run)
    out = []
    for r in inputs:
        for agent in r.run.agents:
            record = agent_record(agent, r.label)
            if record.get("type") == "GPU" and (agent.vendor.upper().startswith("NVIDIA") or vendor == "nvidia"):
                record["capabilities"] = nvidia_capabilities(agent)
            elif record.get("type") == "GPU":
                record["capabilities"] = capabilities(record.get("arch") or "", first_of[r.label].meta.tool_version)
            out.append(record)
    return out


def warnings_part(runset: RunSet, inputs: Sequence[RunInput]) -> list[str]:
    """Each process's load warnings, the files that failed, and the counter-serialisation warning."""
    warnings = [f"{r.label}: {w}" for r in inputs for w in r.run.warnings]
    warnings.extend(str(issue) for issue in runset.errors)
    if any(len(run.counters) for run in runset.runs):
        warnings.append(SERIALISATION_WARNING)
    return warnings


# --- kernels ---------------------------------------------------------------------------


def kernels_part(kernels: pd.DataFrame, table: pd.DataFrame) -> KernelsPart:
    """``table``: :func:`hotspots` of ``kernels`` by name."""
    return {"dispatches": int(len(kernels)), "unique_names": int(len(table)), "total_ns": kernel_time_ns(kernels)}


def kernel_durations(kernels: pd.DataFrame) -> np.ndarray:
    return kernels["end"].to_numpy() - kernels["start"].to_numpy()


# --- GPU busy / idle and gaps -------------------------------------------------------------


@dataclass(frozen=True)
class RunTimeline:
    """:func:`~tui_prof.analysis.timeline.gpu_gaps` of one process: per-agent rows
    (with their ``process``) and every gap >= the threshold."""

    label: str
    agents: list[Record]
    gaps: GapSet
    clock: str = aggregate.UNKNOWN_HOST  # aggregate.clock_key of the process


def run_timeline(r: RunInput, threshold_ns: int) -> RunTimeline:
    agents, gaps = gpu_gaps(r.run, threshold_ns, corr_index=r.index)
    for a in agents:
        a["process"] = r.label
    return RunTimeline(r.label, agents, gaps, aggregate.clock_key(r.run))


def has_gpu_activity(run: Run) -> bool:
    return bool(len(run.kernels) or len(run.copies))


def gpu_part(timelines: Sequence[RunTimeline]) -> GpuPart:
    """``span_ns``: the GPU active span (per host the union of each (process, GPU)'s first
    to last activity, the largest over hosts: a part of the run's wall); ``agent_span_ns``:
    the (process, GPU) spans summed, the whole of ``busy_ns`` and ``idle_ns``."""
    rows = [a for t in timelines for a in t.agents]
    span = sum(a["span_ns"] for a in rows)
    busy = sum(a["busy_ns"] for a in rows)
    active = aggregate.group_union([(t.clock, int(a["first_ns"]), int(a["last_ns"])) for t in timelines for a in t.agents])
    return {
        "span_ns": int(active),
        "agent_span_ns": int(span),
        "busy_ns": int(busy),
        "idle_ns": int(span - busy),
        "busy_pct": round(100.0 * busy / span, 4) if span else 0.0,
        "idle_pct": round(100.0 * (span - busy) / span, 4) if span else 0.0,
        "agents": rows,
    }


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


def listed_gaps(timelines: Sequence[RunTimeline], max_gaps: int | None) -> pd.DataFrame:
    """The ``max_gaps`` longest gaps (None: all) over every process, in (process, agent,
    start) order; names are looked up for the kept rows only."""
    if not sum(len(t.gaps) for t in timelines):
        return pd.DataFrame()
    # longest first, ties in process, agent, time order
    durations = np.concatenate([t.gaps.column("end") - t.gaps.column("start") for t in timelines])
    order = longest_first(durations, max_gaps)
    chosen = np.sort(order)
    bounds = np.cumsum([0] + [len(t.gaps) for t in timelines])
    frames = []
    for t, lo, hi in zip(timelines, bounds[:-1], bounds[1:], strict=True):
        mine = chosen[(chosen >= lo) & (chosen < hi)] - lo
        if len(mine):
            frame = t.gaps.frame(mine)
            frame.insert(0, "process", t.label)
            frames.append(frame)
    if not frames:
        return pd.DataFrame()
    listed = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    listed = listed.take(np.searchsorted(chosen, order))  # back to longest-first order
    return listed.sort_values(["process", "agent", "start"], kind="stable")


def gaps_part(timelines: Sequence[RunTimeline], threshold_ns: int, max_gaps: int | None) -> GapsPart:
    rows = [a for t in timelines for a in t.agents]
    count = sum(len(t.gaps) for t in timelines)
    listed = listed_gaps(timelines, max_gaps)
    records: list[GapRecord] = [
        {
            "process": r.process,
            "agent": int(r.agent),
            "start_ns": int(r.start),
            "duration_ns": int(r.duration_ns),
            "cause": r.cause,
            "api_cause": r.api_cause or None,
            "api_before": r.api_before or None,
            "prev": r.prev_name,
            "next": r.next_name,
        }
        for r in listed.itertuples(index=False)
    ]
    return {
        "count": int(count),
        "threshold_ns": threshold_ns,
        "by_cause": {c: int(sum(a["gaps_by_cause"][c] for a in rows)) for c in CAUSES},
        "count_by_cause": {c: int(sum(a["gaps_count_by_cause"][c] for a in rows)) for c in CAUSES},
        "below_threshold_ns": int(sum(a["below_threshold_ns"] for a in rows)),
        "below_threshold_count": int(sum(a["below_threshold_count"] for a in rows)),
        "listed": records,
        "truncated": int(count - len(records)),
    }


# --- host API: synchronisation and launch --------------------------------------------------


def sync_part(inputs: Sequence[RunInput]) -> SyncPart:
    """Sync and blocking-copy calls summed over processes, their exposed and
    waiting-for-work parts (:func:`hostapi.sync_exposure` against the GPU busy union of the
    same process), and sync-after-launch over every process's launches.

    Percentages: per process the union of its sync calls (threads inside sync calls at the
    same time count once) over its own wall; ``pct_of_wall`` = Σ unions / Σ walls (the
    wall-weighted mean), ``mean_pct_of_wall``/``max_pct_of_wall`` over the processes with
    host API calls; ``exposed_pct_of_wall`` likewise from the union of the exposed parts."""
    calls = total = blocking = launches = followed = exposed = waiting = 0
    union = exposed_union = walls = 0
    per_process: list[float] = []
    by_name: dict[str, dict[str, int]] = {}
    for r in inputs:
        s = hostapi.sync_stats(r.run.api, r.wall_ns, r.index.classes)
        busy_s, busy_e = busy_intervals(r.run)
        starts, lasts, ends = hostapi.sync_exposure_bounds(r.run.api, r.index.classes, busy_s, busy_e)
        exposed += int((ends - lasts).sum())
        waiting += int((lasts - starts).sum())
        mine = aggregate.interval_union(starts, ends)
        union += mine
        exposed_union += aggregate.interval_union(lasts, ends)
        walls += r.wall_ns
        if len(r.run.api) and r.wall_ns:
            per_process.append(aggregate.pct(mine, r.wall_ns))
        calls += s["calls"]
        total += s["total_ns"]
        blocking += s["blocking_copy_calls"]
        for name, v in s["by_name"].items():
            acc = by_name.setdefault(name, {"calls": 0, "total_ns": 0})
            acc["calls"] += v["calls"]
            acc["total_ns"] += v["total_ns"]
        sal = hostapi.sync_after_launch(r.run.api, r.index.classes)
        launches += sal["launches"]
        followed += sal["followed_by_sync"]
    ratio = followed / launches if launches else 0.0
    return {
        "calls": calls,
        "total_ns": total,
        "pct_of_wall": aggregate.pct(union, walls),
        "blocking_copy_calls": blocking,
        "by_name": {name: {"calls": v["calls"], "total_ns": v["total_ns"]} for name, v in sorted(by_name.items(), key=lambda kv: -kv[1]["total_ns"])},
        "sync_after_launch": {
            "launches": launches,
            "followed_by_sync": followed,
            "ratio": round(ratio, 4),
            "detected": bool(launches >= hostapi.SYNC_AFTER_LAUNCH_MIN and ratio >= hostapi.SYNC_AFTER_LAUNCH_RATIO),
        },
        "exposed_ns": exposed,
        "waiting_ns": waiting,
        "exposed_pct_of_wall": aggregate.pct(exposed_union, walls),
        "has_trace": any(len(r.run.api) and has_gpu_activity(r.run) for r in inputs),
        "union_ns": int(union),
        "exposed_union_ns": int(exposed_union),
        "process_ns": int(walls),
        "mean_pct_of_wall": round(float(np.mean(per_process)), 4) if per_process else 0.0,
        "max_pct_of_wall": max(per_process, default=0.0),
    }


def launch_links(r: RunInput) -> pd.DataFrame:
    """:func:`~tui_prof.analysis.hostapi.link_launches` of one process."""
    return hostapi.link_launches(r.run.kernels, r.run.api, corr_index=r.index)


def launch_part(inputs: Sequence[RunInput], links: Sequence[pd.DataFrame], kernel_dur_ns: np.ndarray) -> LaunchPart:
    """Launch calls summed over processes; queue delay and API time of the directly
    launched dispatches (graph replays apart); ``links``: :func:`launch_links` per process.
    ``api_pct_of_wall``: per process the union of its launch calls, summed, over the
    summed process walls (:mod:`aggregate`)."""
    parts = [hostapi.launch_counts(r.run.api, r.index.classes, lk) for r, lk in zip(inputs, links, strict=True)]
    counts: LaunchCounts = {
        "launch_calls": sum(p["launch_calls"] for p in parts),
        "graph_launch_calls": sum(p["graph_launch_calls"] for p in parts),
        "api_total_ns": sum(p["api_total_ns"] for p in parts),
        "graph_launch_api_ns": sum(p["graph_launch_api_ns"] for p in parts),
        "linked_dispatches": sum(p["linked_dispatches"] for p in parts),
        "graph_dispatches": sum(p["graph_dispatches"] for p in parts),
    }
    direct = [~lk["graph"].to_numpy() for lk in links]
    empty = np.array([], np.int64)
    queue = np.concatenate([lk["queue_delay_ns"].to_numpy()[d] for lk, d in zip(links, direct, strict=True)]) if links else empty
    api = np.concatenate([lk["api_dur_ns"].to_numpy()[d] for lk, d in zip(links, direct, strict=True)]) if links else empty
    # graph-replayed rows of the concatenated kernels table (all_kernels: runs in order)
    replayed = np.zeros(len(kernel_dur_ns), dtype=bool)
    offset = 0
    for r, lk, d in zip(inputs, links, direct, strict=True):
        replayed[offset + lk["kernel_row"].to_numpy()[~d]] = True
        offset += len(r.run.kernels)
    part = hostapi.launch_section(counts, queue, api, kernel_dur_ns, process_ns(inputs), replayed)
    launching = 0
    for r in inputs:
        if len(r.run.api):
            classes = r.index.classes
            mask = (classes == hostapi.LAUNCH) | (classes == hostapi.GRAPH_LAUNCH)
            launching += aggregate.interval_union(r.run.api["start"].to_numpy(), r.run.api["end"].to_numpy(), mask)
    part["api_pct_of_wall"] = aggregate.pct(launching, process_ns(inputs))
    return part


# --- copies ------------------------------------------------------------------------------

# Kineto (CUPTI) names a copy by its direction and the memory kinds of its two ends:
# "Memcpy HtoD (Pinned -> Device)", "Memcpy DtoH (Device -> Pageable)", "Memset (Device)".
_COPY_ENDS = re.compile(r"\((\w[\w ]*?) -> (\w[\w ]*?)\)")
_HOST_KINDS = {"pinned": "pinned", "pageable": "pageable", "managed": "managed", "managed static": "managed", "host": "host"}
COPY_KINDS = ("pinned", "pageable", "managed", "host", "device", "peer", "memset", "unknown")


def copy_kind(name: str, direction: str) -> str:
    """The kind of one copy (``COPY_KINDS``) from its profiler name and direction: the host
    end's memory kind where the name says it (pinned, pageable, managed); "host" for a host
    copy whose memory kind is not recorded (rocprofv3, rocprof); "device" (DtoD), "peer"
    (PtoP, or device to device across GPUs), "memset"; else "unknown"."""
    if direction == "memset" or name.startswith("Memset"):
        return "memset"
    if direction == "PtoP" or "peer" in name.lower():
        return "peer"
    ends = _COPY_ENDS.search(name)
    if ends:
        for end in ends.groups():
            kind = _HOST_KINDS.get(end.strip().lower())
            if kind:
                return kind
    if direction in ("HtoD", "DtoH", "HtoH"):
        return "host"
    if direction == "DtoD":
        return "device"
    return "unknown"


def _bandwidths(nbytes: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """Per-copy GB/s (bytes/ns) of the copies with a known size and a positive duration."""
    ok = (nbytes > 0) & (dur > 0)
    return nbytes[ok] / dur[ok]


def _copy_group(dur: np.ndarray, nbytes: np.ndarray, known: np.ndarray) -> CopyDirection:
    t = int(dur.sum())
    b = int(np.where(known, nbytes, 0).sum())
    return {
        "count": int(len(dur)),
        "bytes": b,
        "size_unknown": int((~known).sum()),
        "time_ns": t,
        "bandwidth_gbs": round(b / t, 4) if t > 0 and b > 0 else None,
    }


def copy_kinds(copies: pd.DataFrame, dur: np.ndarray) -> dict[str, CopyKind]:
    """Count, bytes, time and bandwidth per copy kind (:func:`copy_kind`) and, within a
    kind, per direction, with the first, slowest and fastest single copy's bandwidth.
    Rows are taken in start order (the first copy is the earliest)."""
    if not len(copies):
        return {}
    names = copies["name"].astype(str).to_numpy()
    directions = copies["direction"].astype(str).replace("", "unknown").to_numpy()
    pairs = {(n, d): copy_kind(n, d) for n, d in set(zip(names, directions, strict=True))}
    kinds = np.array([pairs[(n, d)] for n, d in zip(names, directions, strict=True)], dtype=object)
    start = copies["start"].to_numpy()
    order = np.argsort(start, kind="stable")
    nbytes = copies["bytes"].to_numpy()[order]
    known = nbytes >= 0
    dur, kinds, directions = dur[order], kinds[order], directions[order]
    out: dict[str, CopyKind] = {}
    for kind in COPY_KINDS:
        in_kind = kinds == kind
        if not in_kind.any():
            continue
        group = _copy_group(dur[in_kind], nbytes[in_kind], known[in_kind])
        by_direction: dict[str, CopyKindDirection] = {}
        for direction in sorted(set(directions[in_kind])):
            sel = in_kind & (directions == direction)
            bw = _bandwidths(np.where(known[sel], nbytes[sel], 0), dur[sel])
            by_direction[str(direction)] = {
                **_copy_group(dur[sel], nbytes[sel], known[sel]),
                "first_bandwidth_gbs": round(float(bw[0]), 4) if len(bw) else None,
                "min_bandwidth_gbs": round(float(bw.min()), 4) if len(bw) else None,
                "max_bandwidth_gbs": round(float(bw.max()), 4) if len(bw) else None,
            }
        out[kind] = {**group, "by_direction": by_direction}
    return out


def copy_stats(copies: pd.DataFrame, wall_ns: int) -> CopiesPart:
    """Bytes, count, time and achieved bandwidth (bytes/ns = GB/s) per direction, and per
    copy kind (:func:`copy_kinds`).

    Some formats do not record a copy's size (rocprofv3 CSV's memory_copy_trace):
    ``bytes`` sums the known sizes and ``size_unknown`` counts the copies without one."""
    dur = copies["end"].to_numpy() - copies["start"].to_numpy()
    nbytes = copies["bytes"].to_numpy()
    known = nbytes >= 0
    by_direction: dict[str, CopyDirection] = {}
    if len(copies):
        frame = pd.DataFrame(
            {"dir": copies["direction"].astype(str).replace("", "unknown"), "dur": dur, "bytes": np.where(known, nbytes, 0), "unknown": ~known}
        )
        for direction, g in frame.groupby("dir", sort=True):
            t = int(g["dur"].sum())
            b = int(g["bytes"].sum())
            by_direction[str(direction)] = {
                "count": int(len(g)),
                "bytes": b,
                "size_unknown": int(g["unknown"].sum()),
                "time_ns": t,
                "bandwidth_gbs": round(b / t, 4) if t > 0 and b > 0 else None,
            }
    busy = union_length(copies["start"].to_numpy(), copies["end"].to_numpy())
    return {
        "count": int(len(copies)),
        "bytes": int(nbytes[known].sum()) if len(copies) else 0,
        "size_unknown": int((~known).sum()),
        "time_ns": int(dur.sum()) if len(copies) else 0,
        "busy_ns": busy,
        "pct_of_wall": round(100.0 * busy / wall_ns, 4) if wall_ns > 0 else 0.0,
        "by_direction": by_direction,
        "by_kind": copy_kinds(copies, dur),
    }


def copies_part(runset: RunSet, inputs: Sequence[RunInput]) -> CopiesPart:
    """:func:`copy_stats` over every process; ``busy_ns`` = Σ over processes of the union
    of that process's copies, ``pct_of_wall`` = that / the summed process walls."""
    part = copy_stats(concat_tables("copies", [run.copies for run in runset.runs]), 0)
    busy = sum(union_length(r.run.copies["start"].to_numpy(), r.run.copies["end"].to_numpy()) for r in inputs)
    part["busy_ns"] = int(busy)
    part["pct_of_wall"] = aggregate.pct(busy, process_ns(inputs))
    return part


# --- categories and grouped hotspots ---------------------------------------------------------

GROUPED_BY = ("category", "normalized", "agent", "pid")


def grouped_hotspots(
    kernels: pd.DataFrame, wall: int, rules: CategoryRules, dur_order: np.ndarray, categories: pd.Series | None = None
) -> tuple[pd.DataFrame, ...]:
    """:func:`hotspots` by each of ``GROUPED_BY`` (with % of wall), one duration sort shared;
    ``categories`` (:func:`kernel_categories_of`: operator first) replaces the name-rule
    categories when given. The kernels' order by process (``pct_wall``'s busy time) is
    shared between the groupings too."""
    processes = process_order(kernels) if len(kernels) else None
    return tuple(
        hotspots(
            kernels,
            by=by,
            wall_ns=wall,
            rules=rules if by == "category" else None,
            dur_order=dur_order,
            key=categories if by == "category" else None,
            processes=processes,
        )
        for by in GROUPED_BY
    )


def categories_part(grouped: tuple[pd.DataFrame, ...], rules: CategoryRules, top: int | None) -> CategoriesPart:
    """``grouped``: :func:`grouped_hotspots`."""
    cats, by_normalized, by_agent, by_pid = grouped
    return {
        "categories": {str(r.name): int(r.total_ns) for r in cats.itertuples(index=False)},
        "category_rules": rules.source,
        "hotspots_by": {
            "normalized": hotspot_records(by_normalized, top),
            "category": hotspot_records(cats, None),
            "agent": hotspot_records(by_agent, None),
            "process": hotspot_records(by_pid, None),
        },
    }


# --- operators ---------------------------------------------------------------------------

NOT_LINKED = "(not linked)"


def has_operators(run: Run) -> bool:
    """The run records framework operators (Kineto ``cpu_op`` markers) to link kernels to
    (checked on the category codes: no per-row strings)."""
    if not len(run.kernels) or not len(run.markers):
        return False
    source = run.markers["source"]
    if not isinstance(source.dtype, pd.CategoricalDtype):
        return bool((source.astype(str) == "cpu_op").any())
    labels = [str(c) for c in source.cat.categories]
    return "cpu_op" in labels and bool((source.cat.codes.to_numpy() == labels.index("cpu_op")).any())


def operator_links(inputs: Sequence[RunInput]) -> list[pd.DataFrame | None]:
    """:func:`~tui_prof.analysis.operators.link_operators` of each process (None where it
    records no operators), computed once for the categories and the operator tables."""
    return [link_operators(r.run.kernels, r.run.api, r.run.markers, r.index) if has_operators(r.run) else None for r in inputs]


def kernel_categories_of(inputs: Sequence[RunInput], links: Sequence[pd.DataFrame | None], rules: CategoryRules) -> pd.Series | None:
    """Category of every kernel of the run set (rows in ``all_kernels`` order): operator
    first where a process records operators, kernel-name rules elsewhere; None when no
    process records operators (the name rules alone, as ``hotspots(by="category")``)."""
    if all(link is None for link in links):
        return None
    parts = []
    for r, link in zip(inputs, links):
        if link is not None:
            parts.append(kernel_categories_by_op(r.run.kernels, link, rules).astype(str))
        else:
            parts.append(group_key(r.run.kernels, "category", rules).astype(str).reset_index(drop=True))
    return pd.Series(pd.concat(parts, ignore_index=True), dtype="category")


def _records(table: pd.DataFrame, total: int, top: int | None) -> list[OperatorRecord]:
    table = table.sort_values(["total_ns", "op"], ascending=[False, True], kind="stable")
    records: list[OperatorRecord] = [
        {
            "name": str(row.op) or NOT_LINKED,
            "kernels": int(row.kernels),
            "total_ns": int(row.total_ns),
            "percent": round(100.0 * int(row.total_ns) / total, 4) if total else 0.0,
        }
        for row in table.itertuples(index=False)
    ]
    return records[:top] if top else records


def operators_part(inputs: Sequence[RunInput], top: int | None, links: Sequence[pd.DataFrame | None] | None = None) -> list[OperatorRecord]:
    """GPU time per launching operator (:func:`~tui_prof.analysis.operators.link_operators`)
    over every process, largest first, the first ``top`` (None: all), each with its
    recorded input shapes (``shapes``, where ``record_shapes`` recorded them); empty when no
    process records ``cpu_op`` markers (nothing to link to). ``links``: :func:`operator_links`."""
    links = operator_links(inputs) if links is None else links
    frames = []
    shapes: dict[str, list[ShapeRecord]] = {}
    for r, link in zip(inputs, links):
        if link is None:
            continue
        frames.append(operator_time(r.run.kernels, link))
        for op, rows in operator_shapes(r.run.kernels, link, r.run.markers).items():
            shapes.setdefault(op, []).extend(rows)
    if not frames:
        return []
    table = pd.concat(frames).groupby("op", sort=False)[["kernels", "total_ns"]].sum().reset_index()
    total = int(sum(int(r.run.kernels["end"].sum() - r.run.kernels["start"].sum()) for r in inputs))
    records = _records(table, total, top)
    for record in records:
        mine = sorted(shapes.get(record["name"], []), key=lambda x: -x["total_ns"])[:3]
        if mine:
            record["shapes"] = mine
    _add_flops(records, inputs, links)
    return records


def _add_flops(records: list[OperatorRecord], inputs: Sequence[RunInput], links: Sequence[pd.DataFrame | None]) -> None:
    """FLOPs, bytes and achieved rates from recorded shapes on each operator row that has
    them (analysis.flops; absent where the shapes are missing)."""
    costs = flops.merge_costs([flops.operator_costs(r.run.kernels, link, r.run.markers) for r, link in zip(inputs, links) if link is not None])
    if not costs:
        return
    agent = next((r.run.gpu_agents[0] for r in inputs if r.run.gpu_agents), None)
    peak = flops.gpu_peak(agent, hbm_peak_gbs(agent, agent.arch)[0] if agent else None)
    for record in records:
        cost = costs.get(record["name"])
        if cost:
            record.update(flops.rates(cost, peak))  # type: ignore[typeddict-item]  # rates() returns these NotRequired keys


def modules_part(inputs: Sequence[RunInput], top: int | None, links: Sequence[pd.DataFrame | None] | None = None) -> list[OperatorRecord]:
    """GPU time per module path of the launching operator (nn.Module scopes, where the
    trace records them; :func:`~tui_prof.analysis.operators.module_key`), largest first;
    empty when no process records a module scope."""
    links = operator_links(inputs) if links is None else links
    frames = []
    for r, link in zip(inputs, links):
        if link is None:
            continue
        key = module_key(link, r.run.markers)
        dur = r.run.kernels["end"].to_numpy() - r.run.kernels["start"].to_numpy()
        frame = pd.DataFrame({"op": key.astype(str).to_numpy(), "dur": dur})
        frames.append(frame.groupby("op", sort=False)["dur"].agg(["count", "sum"]).reset_index().set_axis(["op", "kernels", "total_ns"], axis=1))
    if not frames:
        return []
    table = pd.concat(frames).groupby("op", sort=False)[["kernels", "total_ns"]].sum().reset_index()
    if not (~table["op"].isin([operators.NO_MODULE, operators.NOT_LINKED, operators.GRAPH])).any():
        return []
    total = int(sum(int(r.run.kernels["end"].sum() - r.run.kernels["start"].sum()) for r in inputs))
    return _records(table, total, top)


# --- measurement ---------------------------------------------------------------------------


def peak_memory(allocations: pd.DataFrame) -> int | None:
    """Peak of (allocated - freed) bytes over time; frees without a size take the size of
    the last allocation at the same address. None when nothing is recorded."""
    if allocations.empty:
        return None
    op = allocations["operation"].astype(str).str.upper().to_numpy()
    is_alloc = np.char.find(op.astype(str), "ALLOC") >= 0
    is_free = np.char.find(op.astype(str), "FREE") >= 0
    nbytes = allocations["bytes"].to_numpy().astype(np.int64)
    if not (is_alloc.any() and (nbytes > 0).any()):
        return None
    frame = pd.DataFrame(
        {"t": allocations["start"].to_numpy(), "addr": allocations["address"].to_numpy(), "alloc": np.where(is_alloc & (nbytes > 0), nbytes, np.nan)}
    )
    frame = frame.sort_values("t", kind="stable")
    size_at_addr = frame.groupby("addr")["alloc"].ffill().fillna(0).to_numpy()
    order = frame.index.to_numpy()
    free_bytes = np.where(nbytes[order] > 0, nbytes[order], size_at_addr)
    delta = np.where(is_alloc[order] & ~is_free[order], np.maximum(nbytes[order], 0), 0) - np.where(is_free[order], free_bytes, 0)
    return int(max(np.cumsum(delta).max(), 0))


def peak_memory_of(runset: RunSet) -> int | None:
    """The largest :func:`peak_memory` over the processes' allocation traces (None when none
    records allocations; API calls' sizes are :mod:`~tui_prof.analysis.memory`'s last source)."""
    peaks = [p for p in (peak_memory(memory.trace_rows(run.allocations)) for run in runset.runs) if p is not None]
    return max(peaks) if peaks else None


def measurement_part(
    wall: int,
    kernel_dur_ns: np.ndarray,
    categories: dict[str, int],
    gpu: GpuPart,
    sync: SyncPart,
    launch: LaunchPart,
    copies: CopiesPart,
    peak_memory_bytes: int | None,
    processes: int = 1,
    process_time_ns: int | None = None,
) -> MeasurementPart:
    """The measurement table: the headline numbers of the other sections side by side;
    ``processes`` and ``process_time_ns`` (Σ process walls; None: ``wall``) are the wholes
    of the figures summed over processes."""
    ktime = int(kernel_dur_ns.sum()) if len(kernel_dur_ns) else 0
    return {
        "span_ns": int(wall),
        "gpu_span_ns": int(gpu["span_ns"]),
        "kernel_count": int(len(kernel_dur_ns)),
        "kernel_time_ns": ktime,
        "gemm_pct_of_kernel_time": round(100.0 * categories.get("GEMM", 0) / ktime, 4) if ktime else 0.0,
        "sync_pct_of_wall": sync["pct_of_wall"],
        "exposed_sync_pct_of_wall": sync["exposed_pct_of_wall"],
        "sync_target_pct": SYNC_TARGET_PCT,
        "launch_api_pct_of_wall": launch["api_pct_of_wall"],
        "median_queue_delay_ns": launch["median_queue_delay_ns"],
        "idle_pct": gpu["idle_pct"],
        "copy_pct_of_wall": copies["pct_of_wall"],
        "peak_memory_bytes": peak_memory_bytes,
        "processes": int(processes),
        "process_time_ns": int(wall if process_time_ns is None else process_time_ns),
    }


# --- counters, occupancy, logs -------------------------------------------------------------


def counters_part(inputs: Sequence[RunInput], vendor: str = "unknown") -> list[Record]:
    """:func:`counter_metrics` of each process that has counters or GPU kernels (``vendor``:
    the run set's platform, which decides the collection commands)."""
    blocks = []
    for r in inputs:
        run = r.run
        if len(run.counters) or (len(run.kernels) and run.gpu_agents):
            block = counter_metrics(run, vendor)
            block["process"] = r.label
            blocks.append(block)
    return blocks


def occupancy_part(inputs: Sequence[RunInput], top: int | None) -> list[Record]:
    """:func:`kernel_occupancy` over every process, by kernel time; the first ``top`` (0 or None: all)."""
    rows = []
    for r in inputs:
        gpus = r.run.gpu_agents
        arch_of = {a.id: a.arch for a in gpus}
        wave_of = {a.id: a.wave_size for a in gpus if a.wave_size}
        for occ in kernel_occupancy(r.run.kernels, arch_of, wave_of):
            occ["process"] = r.label
            rows.append(occ)
    rows.sort(key=lambda o: -o["total_ns"])
    return rows[:top] if top else rows


def logs_part(runset: RunSet) -> list[LogHit]:
    """Known profiler errors in the log files of the run's directory (read-only)."""
    if not runset.root:
        return []
    root = Path(runset.root)
    if not root.exists():
        return []
    return scan_logs(root if root.is_dir() else root.parent)


# --- statistics files: stats-only runs and the trace cross-check -----------------------------

# findings that need a trace, and the rocprofv3 flags that record what they need
TRACE_FINDINGS = ("gpu-idle", "idle-sync", "launch-bound", "sync-overhead", "sync-after-launch", "slow-copy", "low-occupancy")
TRACE_FLAGS = "rocprofv3 --kernel-trace --sys-trace (or --runtime-trace)"


has_trace = stats.has_trace


def hotspots_source(runset: RunSet) -> str:
    """ "trace" when kernels were traced, "stats" when only a kernel statistics file has them, else "none"."""
    if any(len(run.kernels) for run in runset.runs):
        return "trace"
    return "stats" if stats.tables_with(runset, stats.KERNEL_STATS) else "none"


def copies_source(runset: RunSet) -> str:
    if any(len(run.copies) for run in runset.runs):
        return "trace"
    return "stats" if stats.tables_with(runset, stats.COPY_STATS) else "none"


def stats_hotspots(runset: RunSet, top: int | None) -> tuple[list[HotspotRecord], KernelsPart]:
    """Hotspot records and the kernels part from the kernel statistics (no median: the files
    do not record one; ``percent``: the profiler's own Percentage for one process)."""
    table = stats.stats_table(runset, stats.KERNEL_STATS)
    if table is None:
        return [], {"dispatches": 0, "unique_names": 0, "total_ns": 0}
    records: list[HotspotRecord] = [
        {
            "name": r["name"],
            "calls": r["calls"],
            "total_ns": r["total_ns"],
            "avg_ns": r["avg_ns"],
            "median_ns": None,
            "min_ns": r["min_ns"],
            "max_ns": r["max_ns"],
            "stddev_ns": r["stddev_ns"],
            "percent": r["percent"],
        }
        for r in stats.stats_records(table, top)
    ]
    return records, {"dispatches": int(table["calls"].sum()), "unique_names": int(len(table)), "total_ns": int(table["total_ns"].sum())}


def api_part(runset: RunSet, top: int | None) -> ApiPart:
    """Calls and time per API function and domain: from the trace when API calls were
    traced, else from the API statistics files; the first ``top`` of each domain."""
    rows: list[ApiRow] = []
    totals: dict[tuple[str, str], list[int]] = {}
    for run in runset.runs:
        api = run.api
        if not len(api):
            continue
        # per (domain, name) category-code pair with bincount: no per-row strings on million-call tables
        dom = api["domain"].astype("category") if not isinstance(api["domain"].dtype, pd.CategoricalDtype) else api["domain"]
        name = api["name"].astype("category") if not isinstance(api["name"].dtype, pd.CategoricalDtype) else api["name"]
        dc, nc = dom.cat.codes.to_numpy().astype(np.int64), name.cat.codes.to_numpy().astype(np.int64)
        width = len(name.cat.categories) + 1
        key = (dc + 1) * width + (nc + 1)  # code -1 (missing) maps to slot 0
        dur = api["end"].to_numpy() - api["start"].to_numpy()
        slots = width * (len(dom.cat.categories) + 1)
        if slots <= max(len(key), 1 << 16):  # a slot per (domain, name) pair: no sort
            all_counts, all_sums = code_totals(key, dur, slots)
            uniq = np.flatnonzero(all_counts)
            counts, sums = all_counts[uniq], all_sums[uniq]
        else:  # more distinct names than calls could fill: by sorting the pairs
            order = np.argsort(key, kind="stable")
            ks = key[order]
            first = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
            uniq = ks[first]
            counts = np.diff(np.r_[first, len(ks)])
            sums = np.add.reduceat(dur[order], first)  # int64: exact
        dnames = ["", *map(str, dom.cat.categories)]
        nnames = ["", *map(str, name.cat.categories)]
        for k, c, t in zip(uniq.tolist(), counts.tolist(), sums.tolist(), strict=True):
            acc = totals.setdefault((dnames[k // width], nnames[k % width]), [0, 0])
            acc[0] += int(c)
            acc[1] += int(round(t))
    if totals:
        table = pd.DataFrame([(d, n, c, t) for (d, n), (c, t) in totals.items()], columns=["domain", "name", "calls", "total_ns"])
        for domain, part in table.groupby("domain", sort=True):
            whole = int(part["total_ns"].sum())
            part = part.sort_values(["total_ns", "name"], ascending=[False, True], kind="stable")
            label = stats.TRACE_API_DOMAIN.get(str(domain), str(domain).upper())
            for r in (part if top is None else part.head(top)).itertuples(index=False):
                rows.append(
                    {
                        "domain": label,
                        "name": str(r.name),
                        "calls": int(r.calls),
                        "total_ns": int(r.total_ns),
                        "avg_ns": round(r.total_ns / r.calls, 6),
                        "percent": round(100.0 * r.total_ns / whole, 6) if whole else 0.0,
                    }
                )
        return {"source": "trace", "rows": rows}
    for key, domain in stats.API_STATS.items():
        table = stats.stats_table(runset, key)
        if table is None:
            continue
        for rec in stats.stats_records(table, top):
            rows.append(
                {"domain": domain, "name": rec["name"], "calls": rec["calls"], "total_ns": rec["total_ns"], "avg_ns": rec["avg_ns"], "percent": rec["percent"]}
            )
    return {"source": "stats" if rows else "none", "rows": rows}


def stats_part(runset: RunSet, inputs: Sequence[RunInput], top: int | None) -> StatsPart:
    """Every statistics table, where it came from, and the names on which it disagrees with
    the trace of the same process."""
    tables = stats.stats_tables(runset, top)
    traced = has_trace(runset)
    source = stats.source_label(runset) if tables else ""
    checks = stats.trace_checks(runset, {id(r.run): r.label for r in inputs})
    return {
        "source": source,
        "tables": [dict(t) for t in tables],
        "checks": [dict(c) for c in checks],
        "needs_trace": [] if traced or not tables else list(TRACE_FINDINGS),
    }


def stats_warnings(checks: Sequence[Record]) -> list[str]:
    """One warning per (process, statistics file) whose numbers disagree with the trace."""
    out = []
    groups: dict[tuple[str, str], list[Record]] = {}
    for c in checks:
        groups.setdefault((c["process"], c["key"]), []).append(c)
    for (process, key), rows in groups.items():
        first = rows[0]
        out.append(
            f"{process}: {key} disagrees with the trace of the same run on {len(rows)} name(s), e.g. "
            f"{first['name'][:80]}: trace {first['trace_calls']} calls / {first['trace_total_ns']} ns, "
            f"stats {first['stats_calls']} calls / {first['stats_total_ns']} ns (a file cut short or dropped records?)"
        )
    return out


def stats_categories(runset: RunSet, rules: CategoryRules) -> dict[str, int]:
    """Kernel time (ns) per category from the kernel statistics, largest first."""
    table = stats.stats_table(runset, stats.KERNEL_STATS)
    if table is None:
        return {}
    cats = table.groupby(table["name"].map(rules.classify), sort=False)["total_ns"].sum()
    return {str(k): int(v) for k, v in sorted(cats.items(), key=lambda kv: (-kv[1], kv[0]))}


# --- steps and memory ----------------------------------------------------------------------


def steps_part(
    inputs: Sequence[RunInput],
    gaps: dict[int, GapSet],
    *,
    step_name: str | None = None,
    warmup: int | None = None,
    outlier_factor: float = steps.OUTLIER_FACTOR,
) -> StepsPart:
    """The steps of the processes that have any, combined over several
    (:func:`tui_prof.analysis.steps.steps_of_processes`); ``gaps``: run position -> its idle
    gaps (the outliers' longest gap and cause)."""
    return steps.steps_of_processes(
        [(r.run, r.label, r.index, gaps.get(i)) for i, r in enumerate(inputs)], step_name=step_name, warmup=warmup, factor=outlier_factor
    )


def memory_part_of(inputs: Sequence[RunInput], steps_found: StepsPart) -> MemoryPart:
    """Peak memory per device of every process; growth over the steps' high-water marks
    (each process's own steps where several have steps)."""
    per_process = [p["steps"] for p in steps_found.get("per_process") or []]
    return memory.memory_part([(r.run, r.label) for r in inputs], steps_found["steps"], per_process)
