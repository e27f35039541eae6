"""The summary's GPU busy/idle and gaps sections: :func:`run_timeline` per process
(:func:`~tui_prof.analysis.timeline.gpu_gaps`) combined over processes. Per-agent results
are computed per process (agent ids are per run) and then combined: ``gpu.busy_pct`` = sum
of busy / sum of spans over all (process, agent) pairs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tui_prof.analysis import aggregate
from tui_prof.analysis.runinput import RunInput
from tui_prof.analysis.sections import GapRecord, GapsSection, GpuSection, Record
from tui_prof.analysis.timeline import CAUSES, GapSet, gpu_gaps


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


def gpu_section(timelines: Sequence[RunTimeline]) -> GpuSection:
    """``span_ns``: the GPU active span (per host the union of each (process, GPU)'s first
    to last activity, the largest over hosts: a part of the run's wall); ``agent_span_ns``:
    the (process, GPU) spans summed, the whole of ``busy_ns`` and ``idle_ns``."""
    return gpu_of_rows([(t.clock, t.agents) for t in timelines])


def gpu_of_rows(per_process: Sequence[tuple[str, list[Record]]]) -> GpuSection:
    """:func:`gpu_section` from each process's (clock, per-agent rows)."""
    rows = [a for _, agents in per_process for a in agents]
    span = sum(a["span_ns"] for a in rows)
    busy = sum(a["busy_ns"] for a in rows)
    active = aggregate.group_union(
        [(clock, int(a["first_ns"]), int(a["last_ns"])) for clock, agents in per_process for a in agents if a["first_ns"] is not None]
    )
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
            frame["host_op"] = t.gaps.host_ops(mine)
            frames.append(frame)
    if not frames:
        return pd.DataFrame()
    listed = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    listed = listed.take(np.searchsorted(chosen, order))  # back to longest-first order
    return listed.sort_values(["process", "agent", "start"], kind="stable")


def gap_records(listed: pd.DataFrame) -> list[GapRecord]:
    """The ``gaps.listed`` records of :func:`listed_gaps`' rows."""
    return [
        {
            "process": r.process,
            "agent": int(r.agent),
            "start_ns": int(r.start),
            "duration_ns": int(r.duration_ns),
            "cause": r.cause,
            "api_cause": r.api_cause or None,
            "api_before": r.api_before or None,
            "host_op": r.host_op if isinstance(r.host_op, str) else None,
            "prev": r.prev_name,
            "next": r.next_name,
        }
        for r in listed.itertuples(index=False)
    ]


def gaps_section(timelines: Sequence[RunTimeline], threshold_ns: int, max_gaps: int | None) -> GapsSection:
    count = sum(len(t.gaps) for t in timelines)
    return gaps_of_rows([a for t in timelines for a in t.agents], count, threshold_ns, gap_records(listed_gaps(timelines, max_gaps)))


def gaps_of_rows(rows: Sequence[Record], count: int, threshold_ns: int, records: list[GapRecord]) -> GapsSection:
    """The ``gaps`` section from the per-agent rows, the gap count and the listed records."""
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
