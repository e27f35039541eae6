"""The summary's memory copy section: counts, bytes, bandwidth and time per direction and
per kind of host memory (pinned, pageable, managed, ...), from the trace or the statistics."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.analysis import aggregate, stats
from tui_prof.analysis.runinput import RunInput, process_ns
from tui_prof.analysis.sections import CopiesSection, CopyDirection, CopyKind, CopyKindDirection
from tui_prof.analysis.timeline import union_length
from tui_prof.model import Run, RunSet
from tui_prof.model.schema import column_array, concat_tables

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


def copy_stats(copies: pd.DataFrame, wall_ns: int) -> CopiesSection:
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


def copies_section(runset: RunSet, inputs: Sequence[RunInput]) -> CopiesSection:
    """:func:`copy_stats` over every process; ``busy_ns`` = Σ over processes of the union
    of that process's copies, ``pct_of_wall`` = that / the summed process walls."""
    section = copy_stats(concat_tables("copies", [run.copies for run in runset.runs]), 0)
    busy = sum(union_length(column_array(r.run.copies, "start"), column_array(r.run.copies, "end")) for r in inputs if len(r.run.copies))
    section["busy_ns"] = int(busy)
    section["pct_of_wall"] = aggregate.pct(busy, process_ns(inputs))
    return section


def copies_source(runset: RunSet) -> str:
    if any(len(run.copies) for run in runset.runs):
        return "trace"
    return "stats" if stats.tables_with(runset, stats.COPY_STATS) else "none"


def copies_part(run: Run) -> dict[str, Any]:
    """What one process adds to :func:`copies_section` (analysis.partials): per (kind,
    direction) the count, known bytes, unknown sizes and time (integers), the slowest and
    fastest single copy's bandwidth and its first copy's (start, bandwidth) in start order;
    the union of its copies; its ``copies_source``. :func:`copies_of_parts` folds them."""
    copies = run.copies
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    if len(copies):
        start = copies["start"].to_numpy()
        dur = copies["end"].to_numpy() - start
        nbytes = copies["bytes"].to_numpy()
        directions = copies["direction"].astype(str).replace("", "unknown").to_numpy()
        names = copies["name"].astype(str).to_numpy()
        for i in np.argsort(start, kind="stable").tolist():  # start order: a group's first copy comes first
            d = str(directions[i])
            g = groups.setdefault((copy_kind(str(names[i]), d), d), {"count": 0, "bytes": 0, "size_unknown": 0, "time_ns": 0, "first": None, "bw": []})
            g["count"] += 1
            g["bytes"] += int(nbytes[i]) if nbytes[i] >= 0 else 0
            g["size_unknown"] += int(nbytes[i] < 0)
            g["time_ns"] += int(dur[i])
            if nbytes[i] > 0 and dur[i] > 0:
                bw = float(nbytes[i] / dur[i])  # as _bandwidths: int64 / int64 in float64
                g["first"] = g["first"] or (int(start[i]), bw)
                g["bw"].append(bw)
        for g in groups.values():
            bws = g.pop("bw")
            g["min"], g["max"] = (min(bws), max(bws)) if bws else (None, None)
    return {
        "groups": groups,
        "busy": int(union_length(copies["start"].to_numpy(), copies["end"].to_numpy())),
        "source": copies_source(RunSet(root="", runs=[run])),
    }


def _summed(groups: Sequence[dict[str, Any]]) -> CopyDirection:
    t = sum(g["time_ns"] for g in groups)
    b = sum(g["bytes"] for g in groups)
    return {
        "count": sum(g["count"] for g in groups),
        "bytes": b,
        "size_unknown": sum(g["size_unknown"] for g in groups),
        "time_ns": t,
        "bandwidth_gbs": round(b / t, 4) if t > 0 and b > 0 else None,
    }


def copies_of_parts(parts: Sequence[dict[str, Any]], process_total: int) -> tuple[CopiesSection, str]:
    """``copies`` and ``copies_source`` from each process's :func:`copies_part`, in process
    order (a group's first copy: the earliest start, ties in process order, as one sort of
    every process's copies)."""
    merged: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for part in parts:
        for key, g in part["groups"].items():
            merged.setdefault(tuple(key), []).append(g)
    directions = sorted({d for _, d in merged})
    all_groups = [g for gs in merged.values() for g in gs]
    total = _summed(all_groups)
    busy = sum(part["busy"] for part in parts)
    by_kind: dict[str, CopyKind] = {}
    for kind in COPY_KINDS:
        mine = sorted(d for k, d in merged if k == kind)
        if not mine:
            continue
        inner: dict[str, CopyKindDirection] = {}
        for d in mine:
            gs = merged[(kind, d)]
            firsts = [(g["first"][0], n, g["first"][1]) for n, g in enumerate(gs) if g["first"] is not None]
            mins = [g["min"] for g in gs if g["min"] is not None]
            maxs = [g["max"] for g in gs if g["max"] is not None]
            inner[d] = {
                **_summed(gs),
                "first_bandwidth_gbs": round(min(firsts)[2], 4) if firsts else None,
                "min_bandwidth_gbs": round(min(mins), 4) if mins else None,
                "max_bandwidth_gbs": round(max(maxs), 4) if maxs else None,
            }
        by_kind[kind] = {**_summed([g for d in mine for g in merged[(kind, d)]]), "by_direction": inner}
    section: CopiesSection = {
        "count": total["count"],
        "bytes": total["bytes"],
        "size_unknown": total["size_unknown"],
        "time_ns": total["time_ns"],
        "busy_ns": int(busy),
        "pct_of_wall": aggregate.pct(busy, process_total),
        "by_direction": {d: _summed([g for (_, dd), gs in merged.items() if dd == d for g in gs]) for d in directions},
        "by_kind": by_kind,
    }
    sources = {part["source"] for part in parts}
    return section, "trace" if "trace" in sources else "stats" if "stats" in sources else "none"
