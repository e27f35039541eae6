"""The summary's memory copy section: counts, bytes, bandwidth and time per direction and
per kind of host memory (pinned, pageable, managed, ...), from the trace or the statistics."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from tui_prof.analysis import aggregate, stats
from tui_prof.analysis.runinput import RunInput, process_ns
from tui_prof.analysis.sections import CopiesSection, CopyDirection, CopyKind, CopyKindDirection
from tui_prof.analysis.timeline import union_length
from tui_prof.model import RunSet
from tui_prof.model.schema import concat_tables

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
    busy = sum(union_length(r.run.copies["start"].to_numpy(), r.run.copies["end"].to_numpy()) for r in inputs)
    section["busy_ns"] = int(busy)
    section["pct_of_wall"] = aggregate.pct(busy, process_ns(inputs))
    return section


def copies_source(runset: RunSet) -> str:
    if any(len(run.copies) for run in runset.runs):
        return "trace"
    return "stats" if stats.tables_with(runset, stats.COPY_STATS) else "none"
