"""The summary's host API sections: synchronisation, kernel launches and the API table
(from the trace, else from the profiler's API statistics)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.analysis import aggregate, hostapi, stats
from tui_prof.analysis.arrays import code_totals
from tui_prof.analysis.runinput import RunInput, has_gpu_activity, process_ns
from tui_prof.analysis.sections import ApiRow, ApiSection, LaunchCounts, LaunchSection, SyncSection
from tui_prof.analysis.timeline import busy_intervals
from tui_prof.model import Run, RunSet


def sync_section(inputs: Sequence[RunInput]) -> SyncSection:
    """Sync and blocking-copy calls summed over processes, their exposed and
    waiting-for-work parts (:func:`hostapi.sync_exposure` against the GPU busy union of the
    same process), and sync-after-launch over every process's launches.

    Percentages: per process the union of its sync calls (threads inside sync calls at the
    same time count once) over its own wall; ``pct_of_wall`` = Σ unions / Σ walls (the
    wall-weighted mean), ``mean_pct_of_wall``/``max_pct_of_wall`` over the processes with
    host API calls; ``exposed_pct_of_wall`` likewise from the union of the exposed parts."""
    return sync_of_parts([sync_part(r) for r in inputs])


def sync_part(r: RunInput) -> dict[str, Any]:
    """What one process adds to :func:`sync_section` (integers, its names in first-seen order,
    its own share of its wall): :func:`sync_of_parts` folds them in process order."""
    if not len(r.run.api):  # no host API calls: no sync calls, nothing exposed, no launches
        return {
            "calls": 0, "total_ns": 0, "blocking": 0, "by_name": [], "exposed": 0, "waiting": 0, "union": 0,
            "exposed_union": 0, "wall": int(r.wall_ns), "pct": None, "launches": 0, "followed": 0, "has_trace": False,
        }  # fmt: skip
    s = hostapi.sync_stats(r.run.api, r.wall_ns, r.index.classes)
    busy_s, busy_e = busy_intervals(r.run)
    starts, lasts, ends = hostapi.sync_exposure_bounds(r.run.api, r.index.classes, busy_s, busy_e)
    mine = aggregate.interval_union(starts, ends)
    sal = hostapi.sync_after_launch(r.run.api, r.index.classes)
    return {
        "calls": int(s["calls"]),
        "total_ns": int(s["total_ns"]),
        "blocking": int(s["blocking_copy_calls"]),
        "by_name": [(str(name), int(v["calls"]), int(v["total_ns"])) for name, v in s["by_name"].items()],
        "exposed": int((ends - lasts).sum()),
        "waiting": int((lasts - starts).sum()),
        "union": int(mine),
        "exposed_union": int(aggregate.interval_union(lasts, ends)),
        "wall": int(r.wall_ns),
        "pct": aggregate.pct(mine, r.wall_ns) if len(r.run.api) and r.wall_ns else None,
        "launches": int(sal["launches"]),
        "followed": int(sal["followed_by_sync"]),
        "has_trace": bool(len(r.run.api) and has_gpu_activity(r.run)),
    }


def sync_of_parts(parts: Sequence[dict[str, Any]]) -> SyncSection:
    """:func:`sync_section` from each process's :func:`sync_part`, in process order."""
    by_name: dict[str, dict[str, int]] = {}
    for part in parts:
        for name, calls, total in part["by_name"]:
            acc = by_name.setdefault(name, {"calls": 0, "total_ns": 0})
            acc["calls"] += calls
            acc["total_ns"] += total
    union = sum(p["union"] for p in parts)
    exposed_union = sum(p["exposed_union"] for p in parts)
    walls = sum(p["wall"] for p in parts)
    launches = sum(p["launches"] for p in parts)
    followed = sum(p["followed"] for p in parts)
    per_process = [p["pct"] for p in parts if p["pct"] is not None]
    ratio = followed / launches if launches else 0.0
    return {
        "calls": sum(p["calls"] for p in parts),
        "total_ns": sum(p["total_ns"] for p in parts),
        "pct_of_wall": aggregate.pct(union, walls),
        "blocking_copy_calls": sum(p["blocking"] for p in parts),
        "by_name": {name: {"calls": v["calls"], "total_ns": v["total_ns"]} for name, v in sorted(by_name.items(), key=lambda kv: -kv[1]["total_ns"])},
        "sync_after_launch": {
            "launches": launches,
            "followed_by_sync": followed,
            "ratio": round(ratio, 4),
            "detected": bool(launches >= hostapi.SYNC_AFTER_LAUNCH_MIN and ratio >= hostapi.SYNC_AFTER_LAUNCH_RATIO),
        },
        "exposed_ns": sum(p["exposed"] for p in parts),
        "waiting_ns": sum(p["waiting"] for p in parts),
        "exposed_pct_of_wall": aggregate.pct(exposed_union, walls),
        "has_trace": any(p["has_trace"] for p in parts),
        "union_ns": int(union),
        "exposed_union_ns": int(exposed_union),
        "process_ns": int(walls),
        "mean_pct_of_wall": round(float(np.mean(per_process)), 4) if per_process else 0.0,
        "max_pct_of_wall": max(per_process, default=0.0),
    }


def launch_links(r: RunInput) -> pd.DataFrame:
    """:func:`~tui_prof.analysis.hostapi.link_launches` of one process."""
    return hostapi.link_launches(r.run.kernels, r.run.api, corr_index=r.index)


def launch_section(inputs: Sequence[RunInput], links: Sequence[pd.DataFrame], kernel_dur_ns: np.ndarray) -> LaunchSection:
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
    # processes with linked dispatches only (most have none when there are thousands of tiny ones)
    offsets = np.cumsum([0] + [len(r.run.kernels) for r in inputs])
    linked = [(int(offsets[i]), lk) for i, lk in enumerate(links) if len(lk)]
    direct = [~lk["graph"].to_numpy() for _, lk in linked]
    empty = np.array([], np.int64)
    queue = np.concatenate([lk["queue_delay_ns"].to_numpy()[d] for (_, lk), d in zip(linked, direct, strict=True)]) if linked else empty
    api = np.concatenate([lk["api_dur_ns"].to_numpy()[d] for (_, lk), d in zip(linked, direct, strict=True)]) if linked else empty
    # graph-replayed rows of the concatenated kernels table (all_kernels: runs in order)
    replayed = np.zeros(len(kernel_dur_ns), dtype=bool)
    for (offset, lk), d in zip(linked, direct, strict=True):
        replayed[offset + lk["kernel_row"].to_numpy()[~d]] = True
    section = hostapi.launch_section(counts, queue, api, kernel_dur_ns, process_ns(inputs), replayed)
    launching = 0
    for r in inputs:
        if len(r.run.api):
            classes = r.index.classes
            mask = (classes == hostapi.LAUNCH) | (classes == hostapi.GRAPH_LAUNCH)
            launching += aggregate.interval_union(r.run.api["start"].to_numpy(), r.run.api["end"].to_numpy(), mask)
    section["api_pct_of_wall"] = aggregate.pct(launching, process_ns(inputs))
    return section


def api_section(runset: RunSet, top: int | None) -> ApiSection:
    """Calls and time per API function and domain: from the trace when API calls were
    traced, else from the API statistics files; the first ``top`` of each domain."""
    totals: dict[tuple[str, str], list[int]] = {}
    for run in runset.runs:
        for pair, (calls, total) in api_totals(run).items():
            acc = totals.setdefault(pair, [0, 0])
            acc[0] += calls
            acc[1] += total
    return api_of_totals(totals, runset, top)


def api_totals(run: Run) -> dict[tuple[str, str], tuple[int, int]]:
    """(calls, ns) per (domain, name) of one process's traced API calls (integers)."""
    api = run.api
    if not len(api):
        return {}
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
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for k, c, t in zip(uniq.tolist(), counts.tolist(), sums.tolist(), strict=True):
        calls, total = out.get((dnames[k // width], nnames[k % width]), (0, 0))
        out[(dnames[k // width], nnames[k % width])] = (calls + int(c), total + int(round(t)))
    return out


def api_of_totals(totals: dict[tuple[str, str], list[int]], runset: RunSet, top: int | None) -> ApiSection:
    """:func:`api_section` from the summed :func:`api_totals` (in first-seen order); without
    traced calls, from ``runset``'s API statistics files."""
    rows: list[ApiRow] = []
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
