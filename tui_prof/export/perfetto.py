"""``tuiprof export PATH --perfetto OUT.json[.gz]``: the run as a Chrome trace-event JSON.

The file opens in the Perfetto UI (ui.perfetto.dev) and ``chrome://tracing`` and is also
a Kineto-style trace (``schemaVersion``, ``cat`` kernel / cuda_runtime / gpu_memcpy, a
kernel's ``args.device`` and ``args.stream``), so tuiprof's own Kineto loader reads it
back as the run it was: each process under its own pid, its metadata and agents in
``tuiprof_processes`` (after the events; with the kernels', API calls' and copies' columns a
Kineto event has no field for, :func:`encode_runs`), times back on the profiler's clock from
``origin_ns``; an export reopened gives the summary of its source (tests/test_export_reopen.py).

Layout (Chrome trace-event format, ``ts``/``dur`` in µs written as exact decimals of the
model's int64 ns):

* one process (``pid``) per profiled process: its real pid when every process has a
  distinct known one, else 1, 2, ...; named by the process label (``process_name``);
* tracks (``tid``): one per host thread (API calls, markers), one per GPU queue/stream
  (kernels: "GPU 2 stream 0", or "GPU 2 queue 1" when the format records queues only),
  one per GPU for copies ("GPU 2 copies"), one for calls without a recorded thread (when
  there are such calls); work
  that overlaps other work of its track (concurrent kernels of one queue) goes to
  "GPU 2 queue 1 (overlap 1)", ... (:func:`sub_lanes`), since Perfetto draws the slices of
  one track as nested; GPU tracks get synthetic tids from :data:`TRACK_BASE` up, named by
  ``thread_name`` metadata and sorted before the host threads;
* kernels (``cat: kernel``), API calls (``cat: cuda_runtime`` for HIP/CUDA calls,
  ``cuda_sync`` for CUDA synchronisation activities, ``api_<domain>`` for the others),
  copies (``gpu_memcpy``/``gpu_memset``) and markers (their source as ``cat`` when it is
  a Kineto category, else ``user_annotation``) as complete events (``ph: X``), with the
  args in which Kineto records what the analysis reads: ``External id`` (the operator link),
  a collective's ``Collective name``/``In msg nelems``/``dtype``/``Group size``,
  ``shared memory``, ``registers per thread``, an operator's ``Input Dims``/``Input type``/
  ``Concrete Inputs``; allocations and frees as the allocator's "[memory]" instants;
* a flow (``ph: s`` on the launching call, ``ph: f``, ``bp: e`` on the kernel or copy)
  per GPU operation whose correlation id names an API call of the same process;
* tuiprof's analysis: the idle gaps (>= the threshold) of each GPU as slices named by
  their cause ("idle: sync after hipDeviceSynchronize") on a track "GPU 2 idle (tuiprof)";
  counter time series as counter tracks (``ph: C``); the findings on a "tuiprof findings"
  track of their own process, each at its evidence (:mod:`tui_prof.export.evidence`: the
  longest gap of its cause, the longest dispatch of its kernel, ...), a finding about the
  whole run as a slice over the exported range;
* per-dispatch values as counter tracks, one per name per process and GPU: hardware counters
  (``counters``: "GPU 2 SQ_WAVES", ``cat: hw_counter``) and rocprof-compute's per-kernel
  metrics (``metrics``: "GPU 2 2.1.0 VALU FLOPs Avg (Gflop/s)", ``cat: kernel_metric``, at
  every dispatch of the kernel of that name); the value at the dispatch's start, 0 at its end
  (:class:`_Placement` says which kernel a row belongs to; the header's ``not_placed`` counts
  the rows no timed kernel carries).

``--window START:END`` keeps the events that overlap [START, END) (whole, not clipped).
Output is written in chunks of :data:`CHUNK` rows: memory does not grow with the file.
Every string from the trace is written JSON-escaped (ASCII), so any name survives the round trip.
"""

from __future__ import annotations

import dataclasses
import gzip
import heapq
import io
import math
import os
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, cast

import numpy as np
import pandas as pd

from tui_prof import __version__
from tui_prof.analysis.api import SummaryResult, copy_agents
from tui_prof.export.common import ExportError, analyse, check_destination
from tui_prof.export.evidence import Place, place_of
from tui_prof.guard import jsonout
from tui_prof.guard.write import WriteRefused, atomic_file, check_file_destination, open_existing
from tui_prof.loaders.kineto import EXPORT_KIND, EXPORT_PREFIX, EXPORTED_COLUMNS
from tui_prof.model import Run, RunSet
from tui_prof.model.schema import UNKNOWN

KIND = EXPORT_KIND
CHUNK = 8192
"""Rows formatted and written per step (a kernel chunk with its flows is about 7 MB of text)."""
TRACK_BASE = 1_000_000_000
"""First synthetic tid of a GPU or analysis track (above any real Linux tid)."""
EXACT_LIMIT_NS = 2**43 * 1000
"""Times (ns) below this are written on the profiler's clock: a µs value with 3 decimals
below 2**43 µs reads back exactly as float64 (Perfetto, the Kineto loader). Larger clocks
(epoch ns) are written relative to an origin kept in the header (``origin_ns``)."""
KINETO_MARKER_CATS = ("cpu_op", "user_annotation", "gpu_user_annotation", "python_function")
MEMSET, MEMCPY = '"gpu_memset"', '"gpu_memcpy"'
GAP_WORDS = {"sync": "after", "copy": "during", "launch": "waiting for", "graph": "inside"}
_FRAC = np.array([f".{i:03d}" for i in range(1000)], dtype=object)

Window = tuple[int, int]


def us_text(ns: np.ndarray) -> list[str]:
    """int64 ns -> exact µs decimal strings ("12.345"; "-0.001" for -1 ns)."""
    ns = np.asarray(ns, dtype=np.int64)
    mag = np.abs(ns)
    text = (mag // 1000).astype(str).astype(object) + _FRAC[mag % 1000]
    if (ns < 0).any():
        text = np.where(ns < 0, "-" + text, text)
    return text.tolist()


def jstr(value: object) -> str:
    """A JSON string literal (ASCII; any character escaped as JSON requires)."""
    return jsonout.dumps(str(value), ensure_ascii=True)


def num(value: float) -> str:
    """A JSON number for ``value``; ``null`` for NaN and the infinities (not JSON: strict
    parsers and the Perfetto UI refuse the file)."""
    return repr(value) if math.isfinite(value) else "null"


def _escaped(column: pd.Series) -> tuple[list[str], list[int]]:
    """(JSON literal of each category, code of each row) of a category column; code -1 is ""."""
    cats = [jstr(c) for c in column.cat.categories] + ['""']
    codes = column.cat.codes.to_numpy()
    return cats, np.where(codes < 0, len(cats) - 1, codes).tolist()


def codes_of(column: pd.Series) -> np.ndarray:
    """The category codes of a category column (-1: missing)."""
    return column.cat.codes.to_numpy()


def _rows(mask: np.ndarray | None, n: int) -> Iterator[np.ndarray]:
    """Row numbers to write, in chunks of CHUNK."""
    rows = np.arange(n) if mask is None else np.flatnonzero(mask)
    for first in range(0, len(rows), CHUNK):
        yield rows[first : first + CHUNK]


def _in_window(start: np.ndarray, end: np.ndarray, window: Window | None) -> np.ndarray | None:
    """Rows overlapping [lo, hi) (an instant at lo counts), or None for every row."""
    if window is None:
        return None
    lo, hi = window
    return (start < hi) & (np.maximum(end, start + 1) > lo)


class _Out:
    """The traceEvents array being written: events separated by ",\\n"."""

    def __init__(self, fh: IO[str]):
        self.fh = fh
        self.count = 0

    def write(self, events: list[str]) -> None:
        if not events:
            return
        self.fh.write(("\n" if self.count == 0 else ",\n") + ",\n".join(events))
        self.count += len(events)


class _Tracks:
    """tid and name of each track of one process; GPU and analysis tracks get synthetic tids."""

    def __init__(self, host_tids: Iterable[int]):
        self.names: dict[int, str] = {}
        self.sort: dict[int, int] = {}
        self.taken = set(host_tids)
        self.next = TRACK_BASE
        self.keyed: dict[tuple, int] = {}

    def synthetic(self, key: tuple, name: str, order: int) -> int:
        if key not in self.keyed:
            while self.next in self.taken:
                self.next += 1
            self.keyed[key] = self.next
            self.taken.add(self.next)
            self.names[self.next] = name
            self.sort[self.next] = order
        return self.keyed[key]


def _pids(runset: RunSet) -> list[int]:
    pids = [r.meta.pid for r in runset.runs]
    if all(p is not None and p > 0 for p in pids) and len(set(pids)) == len(pids):
        return [int(p) for p in pids if p is not None]
    return list(range(1, len(runset.runs) + 1))


def _lanes(table: pd.DataFrame) -> tuple[np.ndarray, str]:
    """A kernel's GPU lane: its stream when the table records streams, else its queue."""
    stream = table["stream"].to_numpy()
    if len(stream) and (stream >= 0).any():
        return stream, "stream"
    return table["queue"].to_numpy(), "queue"


def sub_lanes(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """For intervals of one GPU track, a lane per interval such that intervals of one lane
    never overlap (0 for all when none do; else the lowest free lane, in start order):
    Perfetto draws intervals of one track as nested slices, which concurrent kernels are not."""
    n = len(start)
    lanes = np.zeros(n, dtype=np.int64)
    if n < 2:
        return lanes
    order = np.argsort(start, kind="stable")
    s, e = start[order], np.maximum(end[order], start[order])
    if not (s[1:] < np.maximum.accumulate(e)[:-1]).any():
        return lanes
    free: list[int] = []  # lanes whose last interval has ended
    busy: list[tuple[int, int]] = []  # (end, lane) of the lanes in use
    count = 0
    out = np.empty(n, dtype=np.int64)
    for i, (si, ei) in enumerate(zip(s.tolist(), e.tolist(), strict=True)):
        while busy and busy[0][0] <= si:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            lane, count = count, count + 1
        out[i] = lane
        heapq.heappush(busy, (ei, lane))
    lanes[order] = out
    return lanes


def _track_ids(keys: np.ndarray, start: np.ndarray, end: np.ndarray, track: Callable[[tuple[int, ...], int], int]) -> np.ndarray:
    """The tid of each row: ``track(key, sub-lane)`` of its key (a row of ``keys``) and its
    :func:`sub_lanes` lane among the rows of that key."""
    combined = np.zeros(len(start), dtype=np.int64)
    for column in keys.T:  # one int64 code per distinct key row (np.unique(axis=0) is 20× slower)
        codes, uniq = pd.factorize(column, sort=True)
        combined = combined * len(uniq) + codes
    _, first, group = np.unique(combined, return_index=True, return_inverse=True)
    order = np.argsort(group.reshape(-1), kind="stable")
    bounds = np.searchsorted(group.reshape(-1)[order], np.arange(len(first) + 1))
    tids = np.empty(len(start), dtype=np.int64)
    for g, row in enumerate(first.tolist()):
        rows = order[bounds[g] : bounds[g + 1]]
        subs = sub_lanes(start[rows], end[rows])
        key = tuple(int(x) for x in keys[row])
        ids = np.array([track(key, sub) for sub in range(int(subs.max()) + 1)], dtype=np.int64)
        tids[rows] = ids[subs]
    return tids


def _kernel_tids(run: Run, tracks: _Tracks) -> np.ndarray:
    """The tid of each kernel's track ("GPU 2 stream 0", "GPU 2 queue 1 (overlap 1)")."""
    k = run.kernels
    start, end = k["start"].to_numpy(), k["end"].to_numpy()
    agent = k["agent"].to_numpy().astype(np.int64)
    lane, lane_word = _lanes(k)

    def track(key: tuple[int, ...], sub: int) -> int:
        a, q = key[0], key[1]
        name = f"GPU {a} {lane_word} {q}" if q >= 0 else f"GPU {a}"
        return tracks.synthetic(("kernels", a, q, sub), name + (f" (overlap {sub})" if sub else ""), a * 1000 + 1 + min(sub, 99))

    return _track_ids(np.stack([agent, lane], axis=1), start, end, track)


def _int_args(table: pd.DataFrame, fields: tuple[tuple[str, str], ...]) -> np.ndarray | None:
    """Per row, the ``,"key":value`` text of the integer ``fields`` (JSON key, column) it
    records (value not UNKNOWN), or None when no row records any."""
    out: np.ndarray | None = None
    for key, column in fields:
        if column not in table.columns:
            continue
        values = table[column].to_numpy()
        known = values != UNKNOWN
        if not known.any():
            continue
        text = np.where(known, f',"{key}":' + values.astype(np.int64).astype(str).astype(object), "")
        out = text if out is None else out + text
    return out


def _collective_args(k: pd.DataFrame) -> np.ndarray | None:
    """Per kernel, a collective's arguments in Kineto's words (``Collective name``, the message
    size as ``In/Out msg nelems`` of ``dtype`` Byte, ``Group size``), "" for other kernels; None
    when no kernel is a collective."""
    coll = k["collective"]
    if not len(k) or not (coll.cat.codes.to_numpy() >= 0).any() or all(str(c) == "" for c in coll.cat.categories):
        return None
    names = [jstr(c) for c in coll.cat.categories]
    codes = coll.cat.codes.to_numpy()
    nbytes = k["coll_bytes"].to_numpy().astype(np.int64).tolist()
    ranks = k["coll_ranks"].to_numpy().astype(np.int64).tolist()
    blank = {i for i, c in enumerate(coll.cat.categories) if str(c) == ""}
    return np.array(
        [
            "" if c < 0 or c in blank else f',"Collective name":{names[c]},"In msg nelems":{b},"Out msg nelems":{b},"dtype":"Byte","Group size":{r}'
            for c, b, r in zip(codes.tolist(), nbytes, ranks, strict=True)
        ],
        dtype=object,
    )


def _json_args(table: pd.DataFrame, fields: tuple[tuple[str, str], ...]) -> np.ndarray | None:
    """Per row, ``,"key":<JSON>`` of the category columns ``fields`` (JSON key, column) that
    hold JSON text (the operator inputs Kineto records, kept as JSON text), "" where empty
    or not JSON; None when no row has any."""
    out: np.ndarray | None = None
    for key, column in fields:
        if column not in table.columns or not len(table):
            continue
        texts = []
        for c in table[column].cat.categories:
            try:
                texts.append(f',"{key}":{jsonout.dumps(jsonout.loads(str(c)), ensure_ascii=True)}' if str(c) else "")
            except (ValueError, RecursionError):
                texts.append("")
        if not any(texts):
            continue
        lookup = np.array(texts + [""], dtype=object)
        codes = table[column].cat.codes.to_numpy()
        text = lookup[np.where(codes < 0, len(texts), codes)]
        out = text if out is None else out + text
    return out


def _tail(extra: np.ndarray | None, rows: np.ndarray) -> list[str]:
    """The extra args text of ``rows`` ("" each when there is none)."""
    return [""] * len(rows) if extra is None else extra[rows].tolist()


def _join(*parts: np.ndarray | None) -> np.ndarray | None:
    present = [p for p in parts if p is not None]
    if not present:
        return None
    out = present[0]
    for p in present[1:]:
        out = out + p
    return out


EXT_ID = (("External id", "external_id"),)
KERNEL_INTS = (("External id", "external_id"), ("shared memory", "lds_bytes"), ("registers per thread", "arch_vgpr"))
OPERATOR_INPUTS = (("Input Dims", "input_dims"), ("Input type", "input_types"), ("Concrete Inputs", "input_concrete"))


def _kernel_events(run: Run, pid: int, tid_all: np.ndarray, window: Window | None, origin: int, flows: _Launches, flow_id: list[int]) -> Iterator[list[str]]:
    k = run.kernels
    if not len(k):
        return
    start, end = k["start"].to_numpy(), k["end"].to_numpy()
    agent = k["agent"].to_numpy().astype(np.int64)
    names, codes = _escaped(k["name"])
    cols = {c: k[c].to_numpy() for c in ("stream", "queue", "correlation_id", "dispatch_id", "grid_x", "grid_y", "grid_z", "wg_x", "wg_y", "wg_z")}
    extra = _join(_int_args(k, KERNEL_INTS), _collective_args(k))
    for rows in _rows(_in_window(start, end, window), len(k)):
        tail = _tail(extra, rows)
        ts = us_text(start[rows] - origin)
        dur = us_text(np.maximum(end[rows] - start[rows], 0))
        a = agent[rows].tolist()
        c = {n: v[rows].tolist() for n, v in cols.items()}
        tids = tid_all[rows].tolist()
        events = [
            f'{{"ph":"X","cat":"kernel","name":{names[codes[r]]},"pid":{pid},"tid":{tids[i]},"ts":{ts[i]},"dur":{dur[i]},'
            f'"args":{{"device":{a[i]},"stream":{c["stream"][i]},"queue":{c["queue"][i]},"correlation":{c["correlation_id"][i]},'
            f'"dispatch_id":{c["dispatch_id"][i]},"grid_size":[{c["grid_x"][i]},{c["grid_y"][i]},{c["grid_z"][i]}],'
            f'"workgroup_size":[{c["wg_x"][i]},{c["wg_y"][i]},{c["wg_z"][i]}]{tail[i]}}}}}'
            for i, r in enumerate(rows.tolist())
        ]
        events += flows.flows(cols["correlation_id"][rows], ts, pid, tids, origin, flow_id)
        yield events


class _Launches:
    """The API calls GPU work can be linked to: the first call of each correlation id (not a
    CUDA synchronisation activity), as arrays sorted by id (looked up a chunk at a time)."""

    def __init__(self, run: Run, pid: int, unknown_tid: int):
        api = run.api
        self.pid = pid
        if not len(api):
            self.corr = self.start = self.tid = np.array([], dtype=np.int64)
            return
        keep = (api["correlation_id"].to_numpy() >= 0) & (api["domain"].astype(str).to_numpy() != "cuda_sync")
        calls = api[keep].drop_duplicates("correlation_id")
        order = np.argsort(calls["correlation_id"].to_numpy(), kind="stable")
        self.corr = calls["correlation_id"].to_numpy()[order]
        self.start = calls["start"].to_numpy()[order]
        tid = calls["tid"].to_numpy()[order]
        self.tid = np.where(tid >= 0, tid, unknown_tid)

    def flows(self, corr: np.ndarray, ts: list[str], pid: int, tids: list[int], origin: int, flow_id: list[int]) -> list[str]:
        """A flow (start on the launching call, end on the GPU operation at ``ts``) per
        operation whose correlation id names a call; ids numbered on from ``flow_id[0]``."""
        if not len(self.corr) or not len(corr):
            return []
        at = np.minimum(np.searchsorted(self.corr, corr), len(self.corr) - 1)
        rows = np.flatnonzero(self.corr[at] == corr)
        if not len(rows):
            return []
        call = at[rows]
        call_ts = us_text(self.start[call] - origin)
        call_tid = self.tid[call].tolist()
        first = flow_id[0] + 1
        flow_id[0] += len(rows)
        out = []
        for j, i in enumerate(rows.tolist()):
            fid = first + j
            out.append(f'{{"ph":"s","cat":"ac2g","name":"launch","id":{fid},"pid":{self.pid},"tid":{call_tid[j]},"ts":{call_ts[j]}}}')
            out.append(f'{{"ph":"f","bp":"e","cat":"ac2g","name":"launch","id":{fid},"pid":{pid},"tid":{tids[i]},"ts":{ts[i]}}}')
        return out


def _api_category(domain: str, hip_name: bool = True) -> str:
    """A call's ``cat``: Kineto's ``cuda_runtime`` for a HIP/CUDA call whose domain the Kineto
    loader gives back from its name (``hip*`` -> hip, else cuda), ``cuda_sync``, else
    ``api_<domain>`` (read back with that domain)."""
    if domain in ("hip", "cuda") and hip_name == (domain == "hip"):
        return "cuda_runtime"
    if domain == "cuda_sync":
        return "cuda_sync"
    return f"api_{domain}" if domain else "api"


def _api_events(run: Run, pid: int, unknown_tid: int, window: Window | None, origin: int) -> Iterator[list[str]]:
    api = run.api
    if not len(api):
        return
    start, end = api["start"].to_numpy(), api["end"].to_numpy()
    names, codes = _escaped(api["name"])
    domain_names = [str(d) for d in api["domain"].cat.categories] + [""]
    domains = [jstr(d) for d in domain_names]
    dcodes = api["domain"].cat.codes.to_numpy()
    dcodes = np.where(dcodes < 0, len(domains) - 1, dcodes)
    hip_name = np.array([str(n).startswith("hip") for n in api["name"].cat.categories] + [False], dtype=bool)
    by_name = [[jstr(_api_category(d, h)) for h in (False, True)] for d in domain_names]  # [domain][hip name]
    is_hip = hip_name[np.where(codes_of(api["name"]) < 0, len(hip_name) - 1, codes_of(api["name"]))]
    tid_all, corr_all = api["tid"].to_numpy(), api["correlation_id"].to_numpy()
    extra = _int_args(api, EXT_ID)
    for rows in _rows(_in_window(start, end, window), len(api)):
        tail = _tail(extra, rows)
        ts = us_text(start[rows] - origin)
        dur = us_text(np.maximum(end[rows] - start[rows], 0))
        tid = np.where(tid_all[rows] >= 0, tid_all[rows], unknown_tid).tolist()
        corr, dc, hn = corr_all[rows].tolist(), dcodes[rows].tolist(), is_hip[rows].tolist()
        yield [
            f'{{"ph":"X","cat":{by_name[dc[i]][hn[i]]},"name":{names[codes[r]]},"pid":{pid},"tid":{tid[i]},"ts":{ts[i]},"dur":{dur[i]},'
            f'"args":{{"correlation":{corr[i]},"domain":{domains[dc[i]]}{tail[i]}}}}}'
            for i, r in enumerate(rows.tolist())
        ]


def _copy_events(run: Run, pid: int, tracks: _Tracks, window: Window | None, origin: int, flows: _Launches, flow_id: list[int]) -> Iterator[list[str]]:
    c = run.copies
    if not len(c):
        return
    gpu_ids = {a.id for a in run.gpu_agents} or set(np.unique(run.kernels["agent"].to_numpy()).tolist())
    agent = copy_agents(c, gpu_ids)
    start, end = c["start"].to_numpy(), c["end"].to_numpy()

    def track(key: tuple[int, ...], sub: int) -> int:
        a = key[0]
        return tracks.synthetic(("copies", a, sub), f"GPU {a} copies" + (f" (overlap {sub})" if sub else ""), a * 1000 + 500 + min(sub, 99))

    tid_all = _track_ids(agent[:, None], start, end, track)
    names, codes = _escaped(c["name"])
    direction = c["direction"].astype(str).to_numpy()
    cols = {n: c[n].to_numpy() for n in ("bytes", "src_agent", "dst_agent", "stream", "queue", "correlation_id")}
    extra = _int_args(c, EXT_ID)
    for rows in _rows(_in_window(start, end, window), len(c)):
        tail = _tail(extra, rows)
        ts = us_text(start[rows] - origin)
        dur = us_text(np.maximum(end[rows] - start[rows], 0))
        a = agent[rows].tolist()
        d = direction[rows].tolist()
        v = {n: col[rows].tolist() for n, col in cols.items()}
        tids = tid_all[rows].tolist()
        cats = [MEMSET if x == "memset" else MEMCPY for x in d]
        events = [
            f'{{"ph":"X","cat":{cats[i]},"name":{names[codes[r]]},"pid":{pid},"tid":{tids[i]},'
            f'"ts":{ts[i]},"dur":{dur[i]},"args":{{"device":{a[i]},"stream":{v["stream"][i]},"queue":{v["queue"][i]},'
            f'"correlation":{v["correlation_id"][i]},"bytes":{v["bytes"][i]},"kind":{jstr(d[i])},'
            f'"src_agent":{v["src_agent"][i]},"dst_agent":{v["dst_agent"][i]}{tail[i]}}}}}'
            for i, r in enumerate(rows.tolist())
        ]
        events += flows.flows(cols["correlation_id"][rows], ts, pid, tids, origin, flow_id)
        yield events


def _marker_events(run: Run, pid: int, unknown_tid: int, window: Window | None, origin: int) -> Iterator[list[str]]:
    m = run.markers
    if not len(m):
        return
    start, end = m["start"].to_numpy(), m["end"].to_numpy()
    names, codes = _escaped(m["name"])
    sources = [jstr(s) for s in m["source"].cat.categories] + ['""']
    mcats = [jstr(s if s in KINETO_MARKER_CATS else "user_annotation") for s in m["source"].cat.categories] + ['"user_annotation"']
    scodes = m["source"].cat.codes.to_numpy()
    scodes = np.where(scodes < 0, len(sources) - 1, scodes)
    tid_all = m["tid"].to_numpy()
    extra = _join(_int_args(m, EXT_ID), _json_args(m, OPERATOR_INPUTS))
    for rows in _rows(_in_window(start, end, window), len(m)):
        tail = _tail(extra, rows)
        ts = us_text(start[rows] - origin)
        dur = us_text(np.maximum(end[rows] - start[rows], 0))
        tid = np.where(tid_all[rows] >= 0, tid_all[rows], unknown_tid).tolist()
        sc = scodes[rows].tolist()
        yield [
            f'{{"ph":"X","cat":{mcats[sc[i]]},"name":{names[codes[r]]},"pid":{pid},"tid":{tid[i]},"ts":{ts[i]},"dur":{dur[i]},"args":{{"source":{sources[sc[i]]}{tail[i]}}}}}'
            for i, r in enumerate(rows.tolist())
        ]


def gap_name(cause: str, api_cause: str) -> str:
    """A gap slice's name: "idle: sync after hipDeviceSynchronize", "idle: other"."""
    if api_cause and cause in GAP_WORDS:
        return f"idle: {cause} {GAP_WORDS[cause]} {api_cause}"
    return f"idle: {cause}"


def _gap_events(run_index: int, analysis: SummaryResult, pid: int, tracks: _Tracks, window: Window | None, origin: int) -> Iterator[list[str]]:
    gapset = analysis.gaps.get(run_index)
    if gapset is None or not len(gapset):
        return
    start, end = gapset.column("start"), gapset.column("end")
    for rows in _rows(_in_window(start, end, window), len(start)):
        frame = gapset.frame(rows)
        ts = us_text(frame["start"].to_numpy() - origin)
        dur = us_text(frame["duration_ns"].to_numpy())
        events = []
        for i, g in enumerate(frame.itertuples(index=False)):
            tid = tracks.synthetic(("gaps", int(g.agent)), f"GPU {g.agent} idle (tuiprof)", int(g.agent) * 1000 + 900)
            events.append(
                f'{{"ph":"X","cat":"tuiprof_gap","name":{jstr(gap_name(str(g.cause), str(g.api_cause)))},"pid":{pid},"tid":{tid},"ts":{ts[i]},"dur":{dur[i]},'
                f'"args":{{"cause":{jstr(g.cause)},"api_cause":{jstr(g.api_cause)},"api_before":{jstr(g.api_before)},'
                f'"prev":{jstr(g.prev_name)},"next":{jstr(g.next_name)}}}}}'
            )
        yield events


def _counter_events(run: Run, pid: int, window: Window | None, origin: int) -> Iterator[list[str]]:
    s = run.series
    if not len(s):
        return
    ts_all, value_all = s["ts"].to_numpy(), s["value"].to_numpy()
    ok = np.isfinite(value_all)
    if window is not None:
        ok &= (ts_all >= window[0]) & (ts_all < window[1])
    labels = [jstr(f"{t} ({u})" if u else str(t)) for t, u in zip(s["track"].astype(str), s["unit"].astype(str), strict=True)]
    for rows in _rows(ok, len(s)):
        ts = us_text(ts_all[rows] - origin)
        values = [num(float(v)) for v in value_all[rows].tolist()]
        yield [
            f'{{"ph":"C","cat":"tuiprof_counter","name":{labels[r]},"pid":{pid},"ts":{ts[i]},"args":{{"value":{values[i]}}}}}'
            for i, r in enumerate(rows.tolist())
        ]


def _allocator_samples(run: Run) -> dict[str, dict[tuple[int, int], deque[int]]]:
    """The allocator's ``Total Allocated`` / ``Total Reserved`` samples (the ``series`` tracks
    "allocated" and "reserved" the Kineto loader builds from them) by (time, agent), in
    record order: built once per run, consumed by :func:`_allocator_totals`."""
    s = run.series
    out: dict[str, dict[tuple[int, int], deque[int]]] = {}
    track_names = s["track"].astype(str) if len(s) else None
    for key, track in (("Total Allocated", "allocated"), ("Total Reserved", "reserved")):
        samples: dict[tuple[int, int], deque[int]] = {}
        if track_names is not None:
            mine = (track_names == track).to_numpy()
            for t, g, v in zip(s["ts"].to_numpy()[mine].tolist(), s["agent"].to_numpy()[mine].tolist(), s["value"].to_numpy()[mine].tolist(), strict=True):
                samples.setdefault((t, g), deque()).append(int(v))
        out[key] = samples
    return out


def _allocator_totals(samples: dict[str, dict[tuple[int, int], deque[int]]], starts: list[int], agents: list[int]) -> dict[str, list[int]]:
    """The allocator's totals after each allocation (``starts``/``agents``, in record order
    across every chunk), -1 where none was recorded: the k-th GPU event at a time and agent
    is paired with the k-th sample of the track there (taken from ``samples``)."""
    out = {}
    for key, by_place in samples.items():
        values = [-1] * len(starts)
        if by_place:
            for i, (t, g) in enumerate(zip(starts, agents, strict=True)):
                queue = by_place.get((t, g))
                if g != UNKNOWN and queue:
                    values[i] = queue.popleft()
        out[key] = values
    return out


def _allocation_events(run: Run, pid: int, window: Window | None, origin: int) -> Iterator[list[str]]:
    """Allocations and frees as the PyTorch allocator's "[memory]" instants (Bytes < 0 frees),
    with its totals: the Kineto loader reads them back as ``allocations`` and the memory
    tracks. ``Device Type`` is 1 on a GPU agent, 0 on a CPU agent or none; ``Device Id`` is
    the agent (-1: none), which an export's reader takes as it is. Other operations (a
    profiler's own allocation calls) are left out."""
    a = run.allocations
    if not len(a):
        return
    op = a["operation"].astype(str).to_numpy()
    start = a["start"].to_numpy()
    keep = np.isin(op, ("ALLOCATE", "FREE"))
    cpus = {ag.id for ag in run.agents if ag.type == "CPU"}  # host memory: Device Type 0, the agent still named
    inside = _in_window(start, start, window)
    if inside is not None:
        keep &= inside
    samples = _allocator_samples(run)
    for rows in _rows(keep, len(a)):
        ts = us_text(start[rows] - origin)
        size = np.where(op[rows] == "FREE", -a["bytes"].to_numpy()[rows], a["bytes"].to_numpy()[rows]).tolist()
        agent = a["agent"].to_numpy()[rows].tolist()
        addr, tid = a["address"].to_numpy()[rows].tolist(), a["tid"].to_numpy()[rows].tolist()
        totals = _allocator_totals(samples, start[rows].tolist(), agent)
        alloc, reserved = totals["Total Allocated"], totals["Total Reserved"]
        events = []
        for i in range(len(rows)):
            gpu = agent[i] != UNKNOWN and agent[i] not in cpus
            tail = (f',"Total Allocated":{alloc[i]}' if alloc[i] >= 0 else "") + (f',"Total Reserved":{reserved[i]}' if reserved[i] >= 0 else "")
            events.append(
                f'{{"ph":"i","s":"t","cat":"cpu_instant_event","name":"[memory]","pid":{pid},"tid":{tid[i]},"ts":{ts[i]},'
                f'"args":{{"Bytes":{size[i]},"Device Type":{1 if gpu else 0},"Device Id":{agent[i]},"Addr":{addr[i]}{tail}}}}}'
            )
        yield events


class _Placement:
    """Where a run's per-dispatch values go. A counter row belongs to the kernel whose
    ``dispatch_id`` it carries, when exactly one kernel with a recorded start carries that id
    (``counter_kernel``: its kernel row, -1 when none or several do); a metric row (values
    rocprof-compute computed per kernel name) belongs to every timed dispatch of the kernel of
    that name (``metric_rows``: name code -> metric rows). Rows whose value is not finite are
    not placed (JSON has no NaN); ``not_placed`` counts the rows left out of the trace."""

    def __init__(self, run: Run):
        k, c, m = run.kernels, run.counters, run.metrics
        self.timed = k["start"].to_numpy() != UNKNOWN
        dispatch = np.where(self.timed, k["dispatch_id"].to_numpy().astype(np.int64), UNKNOWN)
        once = (dispatch != UNKNOWN) & ~pd.Series(dispatch).duplicated(keep=False).to_numpy()
        rows = np.flatnonzero(once)
        order = np.argsort(dispatch[rows], kind="stable")
        keys, kernel_rows = dispatch[rows][order], rows[order]
        self.counter_kernel = np.full(len(c), -1, dtype=np.int64)
        if len(c) and len(keys):
            wanted = c["dispatch_id"].to_numpy().astype(np.int64)
            at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
            hit = (keys[at] == wanted) & np.isfinite(c["value"].to_numpy())
            self.counter_kernel[hit] = kernel_rows[at[hit]]
        self.metric_rows: dict[int, np.ndarray] = {}
        if len(m) and len(k):
            code_of = {str(n): i for i, n in enumerate(k["name"].cat.categories)}
            timed_codes = set(np.unique(k["name"].cat.codes.to_numpy()[self.timed]).tolist())
            finite = np.isfinite(m["value"].to_numpy())
            names = m["kernel"].astype(str).to_numpy()
            for name in np.unique(names[finite]).tolist():
                code = code_of.get(name, -1)
                if code in timed_codes:
                    self.metric_rows[code] = np.flatnonzero(finite & (names == name))
        placed_metrics = sum(len(r) for r in self.metric_rows.values())
        self.not_placed = {"counters": int((self.counter_kernel < 0).sum()), "metrics": len(m) - placed_metrics}


def _value_events(cat: str, labels: list[str], values: list[str], kernel_rows: np.ndarray, run: Run, pid: int, tid_all: np.ndarray, origin: int) -> list[str]:
    """Counter events ``labels[i]`` = ``values[i]`` at the start of kernel ``kernel_rows[i]``
    and 0 at its end (at least 1 ns later), so that a value belongs visibly to its dispatch."""
    start = run.kernels["start"].to_numpy()[kernel_rows]
    end = np.maximum(run.kernels["end"].to_numpy()[kernel_rows], start + 1)
    ts0, ts1 = us_text(start - origin), us_text(end - origin)
    tids = tid_all[kernel_rows].tolist()
    head = f'{{"ph":"C","cat":"{cat}","name":'
    events = [f'{head}{labels[i]},"pid":{pid},"tid":{tids[i]},"ts":{ts0[i]},"args":{{"value":{values[i]}}}}}' for i in range(len(tids))]
    events += [f'{head}{labels[i]},"pid":{pid},"tid":{tids[i]},"ts":{ts1[i]},"args":{{"value":0}}}}' for i in range(len(tids))]
    return events


def _dispatch_counter_events(run: Run, pid: int, tid_all: np.ndarray, place: _Placement, window: Window | None, origin: int) -> Iterator[list[str]]:
    """Hardware counters (``counters`` table) as counter tracks "GPU <agent of the kernel> <counter>"."""
    c = run.counters
    keep = place.counter_kernel >= 0
    if not keep.any():
        return
    if window is not None:
        k = run.kernels
        inside = _in_window(k["start"].to_numpy(), k["end"].to_numpy(), window)
        assert inside is not None
        keep &= inside[np.maximum(place.counter_kernel, 0)]
    agent = run.kernels["agent"].to_numpy().astype(np.int64)
    counters, codes = list(c["counter"].cat.categories) + [""], c["counter"].cat.codes.to_numpy()
    value_all = c["value"].to_numpy()
    label: dict[tuple[int, int], str] = {}
    for rows in _rows(keep, len(c)):
        kernel_rows = place.counter_kernel[rows]
        keys = list(zip(agent[kernel_rows].tolist(), codes[rows].tolist(), strict=True))
        for key in keys:
            if key not in label:
                label[key] = jstr(f"GPU {key[0]} {counters[key[1]]}")
        values = [num(float(v)) for v in value_all[rows].tolist()]
        yield _value_events("hw_counter", [label[key] for key in keys], values, kernel_rows, run, pid, tid_all, origin)


def _metric_events(run: Run, pid: int, tid_all: np.ndarray, place: _Placement, window: Window | None, origin: int) -> Iterator[list[str]]:
    """rocprof-compute's per-kernel metrics (``metrics`` table) at every dispatch of their
    kernel, as counter tracks "GPU <agent> <metric id> <metric> <stat> (<unit>)"."""
    if not place.metric_rows:
        return
    k, m = run.kernels, run.metrics
    codes = k["name"].cat.codes.to_numpy()
    keep = place.timed & np.isin(codes, list(place.metric_rows))
    inside = _in_window(k["start"].to_numpy(), k["end"].to_numpy(), window)
    if inside is not None:
        keep &= inside
    agent = k["agent"].to_numpy().astype(np.int64)
    suffix = [
        " ".join(x for x in (str(i), str(n), str(st)) if x) + (f" ({u})" if str(u) else "")
        for i, n, st, u in zip(m["metric_id"], m["metric"], m["stat"], m["unit"], strict=True)
    ]
    value_text = [num(float(v)) for v in m["value"].to_numpy().tolist()]
    label: dict[tuple[int, int], str] = {}
    per_kernel = max(len(r) for r in place.metric_rows.values())
    kernels = np.flatnonzero(keep)
    step = max(1, CHUNK // per_kernel)
    for first in range(0, len(kernels), step):
        kernel_rows, metric_rows = [], []
        for kr in kernels[first : first + step].tolist():
            rows = place.metric_rows[int(codes[kr])].tolist()
            kernel_rows += [kr] * len(rows)
            metric_rows += rows
        a = agent[kernel_rows].tolist()
        for ai, mr in zip(a, metric_rows, strict=True):
            if (ai, mr) not in label:
                label[(ai, mr)] = jstr(f"GPU {ai} {suffix[mr]}")
        labels = [label[(ai, mr)] for ai, mr in zip(a, metric_rows, strict=True)]
        yield _value_events("kernel_metric", labels, [value_text[mr] for mr in metric_rows], np.array(kernel_rows, dtype=np.int64), run, pid, tid_all, origin)


def _metadata(pid: int, label: str, sort: int, tracks: _Tracks, host_tids: Iterable[int]) -> list[str]:
    events = [
        f'{{"ph":"M","name":"process_name","pid":{pid},"tid":0,"ts":0,"args":{{"name":{jstr(label)}}}}}',
        f'{{"ph":"M","name":"process_sort_index","pid":{pid},"tid":0,"ts":0,"args":{{"sort_index":{sort}}}}}',
    ]
    for tid in sorted(host_tids):
        events.append(f'{{"ph":"M","name":"thread_name","pid":{pid},"tid":{tid},"ts":0,"args":{{"name":{jstr(f"thread {tid}")}}}}}')
        events.append(f'{{"ph":"M","name":"thread_sort_index","pid":{pid},"tid":{tid},"ts":0,"args":{{"sort_index":{10**9 + tid % 10**9}}}}}')
    for tid, name in tracks.names.items():
        events.append(f'{{"ph":"M","name":"thread_name","pid":{pid},"tid":{tid},"ts":0,"args":{{"name":{jstr(name)}}}}}')
        events.append(f'{{"ph":"M","name":"thread_sort_index","pid":{pid},"tid":{tid},"ts":0,"args":{{"sort_index":{tracks.sort[tid]}}}}}')
    return events


def _finding_events(runset: RunSet, analysis: SummaryResult, pid: int, pids: list[int], span: Window, origin: int) -> list[str]:
    """The findings on a track of their own process: each at its evidence
    (:func:`~tui_prof.export.evidence.place_of`), a finding about the whole run as a slice
    over ``span`` (the run's range, or the window); ``args.evidence`` says which, and
    ``args.process`` the exported pid of the evidence's process."""
    events = [
        f'{{"ph":"M","name":"process_name","pid":{pid},"tid":0,"ts":0,"args":{{"name":"tuiprof findings"}}}}',
        f'{{"ph":"M","name":"process_sort_index","pid":{pid},"tid":0,"ts":0,"args":{{"sort_index":-1}}}}',
        f'{{"ph":"M","name":"thread_name","pid":{pid},"tid":1,"ts":0,"args":{{"name":"findings"}}}}',
    ]
    for f in analysis.summary["findings"]:
        place = place_of(f, runset, analysis, span)
        if not (place.start < span[1] and max(place.end, place.start + 1) > span[0]):  # evidence outside the window
            place = Place(-1, span[0], span[1], "the whole window (its evidence lies outside)")
        title = jstr(f"{f['severity']}: {f['message']}")
        body: dict[str, object] = {
            "code": f["code"],
            "severity": f["severity"],
            "message": f["message"],
            "fix": f["fix"],
            "numbers": f["numbers"],
            "evidence": place.what,
        }
        if place.run >= 0:
            body["process"] = pids[place.run]
        args = jsonout.dumps(body, default=str, ensure_ascii=True)
        ts, dur = us_text(np.array([place.start - origin, max(place.end - place.start, 0)]))
        head = f'"cat":"tuiprof_finding","name":{title},"pid":{pid},"tid":1,"ts":{ts}'
        if place.end > place.start:
            events.append(f'{{"ph":"X",{head},"dur":{dur},"args":{args}}}')
        else:
            events.append(f'{{"ph":"i","s":"t",{head},"args":{args}}}')
    return events


def time_range(runset: RunSet) -> tuple[int, int] | None:
    """(first start, last end) in ns over every process's API calls, kernels, copies and markers."""
    lo, hi = [], []
    for run in runset.runs:
        for table in (run.api, run.kernels, run.copies, run.markers):
            if len(table):
                lo.append(int(table["start"].min()))
                hi.append(int(table["end"].max()))
    return (min(lo), max(hi)) if lo else None


def time_origin(span: tuple[int, int] | None) -> int:
    """The time written as ``ts`` 0: 0 (the profiler's own clock) when every time is below
    :data:`EXACT_LIMIT_NS`, else the first event's start rounded down to a whole second."""
    if span is None or (abs(span[0]) < EXACT_LIMIT_NS and abs(span[1]) < EXACT_LIMIT_NS):
        return 0
    return span[0] - span[0] % 1_000_000_000


def run_start(runset: RunSet) -> int:
    """The first event's start (ns): the origin of ``--window``; 0 for a run without events."""
    span = time_range(runset)
    return span[0] if span else 0


def write_trace(runset: RunSet, fh: IO[str], window: Window | None = None, analysis: SummaryResult | None = None) -> int:
    """Write the trace-event JSON of ``runset`` to the text stream ``fh``; returns the
    number of events. ``analysis``: :func:`~tui_prof.export.common.analyse` of the run set."""
    analysis = analysis if analysis is not None else analyse(runset)
    span = time_range(runset)
    origin = time_origin(span)
    placements = [_Placement(run) for run in runset.runs]
    header = {
        "schemaVersion": 1,
        "displayTimeUnit": "ns",
        "traceName": runset.name,
        "tuiprof_export": {
            "kind": KIND,
            "tuiprof_version": __version__,
            "source": runset.root,
            "window_ns": list(window) if window else None,
            "origin_ns": origin,
            "not_placed": {t: sum(p.not_placed[t] for p in placements) for t in ("counters", "metrics")},
        },
    }
    fh.write(jsonout.dumps(header, ensure_ascii=True)[:-1] + ',\n"traceEvents": [')
    out = _Out(fh)
    pids = _pids(runset)
    flow_id = [0]
    for index, (run, pid) in enumerate(zip(runset.runs, pids, strict=True)):
        host_tids = {int(t) for table in (run.api, run.markers) for t in np.unique(table["tid"].to_numpy()).tolist() if t >= 0}
        tracks = _Tracks(host_tids)
        unthreaded = any(len(t) and bool((t["tid"].to_numpy() < 0).any()) for t in (run.api, run.markers))
        unknown_tid = tracks.synthetic(("host", -1), "host (thread not recorded)", 10**9 - 1) if unthreaded else UNKNOWN
        flows = _Launches(run, pid, unknown_tid)
        for events in _api_events(run, pid, unknown_tid, window, origin):
            out.write(events)
        for events in _marker_events(run, pid, unknown_tid, window, origin):
            out.write(events)
        kernel_tids = _kernel_tids(run, tracks)
        for events in _kernel_events(run, pid, kernel_tids, window, origin, flows, flow_id):
            out.write(events)
        for events in _copy_events(run, pid, tracks, window, origin, flows, flow_id):
            out.write(events)
        for events in _gap_events(index, analysis, pid, tracks, window, origin):
            out.write(events)
        for events in _counter_events(run, pid, window, origin):
            out.write(events)
        for events in _allocation_events(run, pid, window, origin):
            out.write(events)
        for events in _dispatch_counter_events(run, pid, kernel_tids, placements[index], window, origin):
            out.write(events)
        for events in _metric_events(run, pid, kernel_tids, placements[index], window, origin):
            out.write(events)
        label = run.meta.label or f"{run.meta.hostname}/{run.meta.pid}"
        out.write(_metadata(pid, label if run.meta.rank is None else f"rank {run.meta.rank}: {label}", index, tracks, host_tids))
    if analysis.summary["findings"] and span is not None:
        shown = (max(span[0], window[0]), min(span[1], window[1])) if window else span
        out.write(_finding_events(runset, analysis, max(pids) + 1, pids, shown, origin))
    fh.write('\n],\n"tuiprof_processes": ' + jsonout.dumps(_processes(runset, pids, window), default=str, ensure_ascii=True) + "}\n")
    return out.count


def encode_runs(values: np.ndarray) -> list[int]:
    """An int column as ``[v0, n0, v1, n1, ...]``: runs of equal differences from the
    previous value (from 0 for the first), so a constant pid or a dispatch id counting up is
    one pair (the Kineto loader's :func:`~tui_prof.loaders.kineto.decode_runs`)."""
    if not len(values):
        return []
    diffs = np.diff(values.astype(np.int64), prepend=np.int64(0))
    starts = np.concatenate(([0], np.flatnonzero(diffs[1:] != diffs[:-1]) + 1))
    counts = np.diff(np.append(starts, len(diffs)))
    return np.stack([diffs[starts], counts], axis=1).reshape(-1).tolist()


def _rows_read_back(name: str, table: pd.DataFrame, window: Window | None) -> np.ndarray:
    """The rows of ``table`` written (in ``window``), in the order the Kineto loader reads
    them back: as written, but copies, memcpys first, then memsets."""
    mask = _in_window(table["start"].to_numpy(), table["end"].to_numpy(), window)
    rows = np.arange(len(table)) if mask is None else np.flatnonzero(mask)
    if name == "copies":
        memset = table["direction"].astype(str).to_numpy()[rows] == "memset"
        rows = rows[np.argsort(memset, kind="stable")]
    return rows


def _processes(runset: RunSet, pids: list[int], window: Window | None) -> list[dict]:
    """What a reader needs to give each exported process back as the run it was (the Kineto
    loader reads it, :data:`~tui_prof.loaders.kineto.EXPORT_KIND`): its pid in the file, its
    metadata (hostname, pid, rank, label, formats, tool), its agents, and the columns of the
    kernels and API calls written that a Kineto event has no field for
    (:data:`~tui_prof.loaders.kineto.EXPORTED_COLUMNS`, :func:`encode_runs`). Written after
    the events, so the file's head stays short whatever the number of processes."""
    out = []
    for run, pid in zip(runset.runs, pids, strict=True):
        columns = {}
        for name, names in EXPORTED_COLUMNS.items():
            table = getattr(run, name)
            if len(table):
                rows = _rows_read_back(name, table, window)
                columns[name] = {c: encode_runs(table[c].to_numpy()[rows]) for c in names}
        out.append({"pid": pid, "meta": dataclasses.asdict(run.meta), "agents": [dataclasses.asdict(a) for a in run.agents], "columns": columns})
    return out


def _is_ours(path: Path) -> bool:
    """Whether the existing regular file ``path`` is a trace this exporter wrote (read
    without following a link or blocking on a FIFO)."""
    try:
        with open_existing(path) as raw:
            head = raw.read(2)
            raw.seek(0)
            stream = cast(IO[bytes], gzip.GzipFile(fileobj=raw) if head == b"\x1f\x8b" else raw)
            text = stream.read(4096)
    except (OSError, EOFError, zlib.error):
        return False
    return EXPORT_PREFIX.encode() in text  # this version's exports and earlier ones


def export_perfetto(
    runset: RunSet,
    out: str | os.PathLike,
    window: Window | None = None,
    *,
    gap_threshold_ns: int | None = None,
    progress: Callable[[str], None] | None = None,
    analysis: SummaryResult | None = None,
) -> tuple[Path, int]:
    """Write the trace of ``runset`` to ``out`` (gzipped when the name ends in ``.gz``);
    returns the path and the number of events. ``analysis``: the run set's summary when the
    caller has it (the TUI's, whose findings its panes show), else computed here. The file
    is written beside ``out`` under a temporary name and renamed into place
    (:func:`tui_prof.guard.write.atomic_file`). Raises :class:`ExportError` for a destination
    inside the run, a link, a FIFO or another non-regular file, or an existing file that is
    not a tuiprof export."""
    target = check_destination(out, runset.root)
    if os.path.isdir(target) and not os.path.islink(target):
        raise ExportError(f"{os.fspath(out)!r} is a folder (give a file name ending in .json or .json.gz)")
    try:
        exists = check_file_destination(target)
    except WriteRefused as err:
        raise ExportError(str(err)) from None
    if exists and not _is_ours(target):
        raise ExportError(f"refusing to overwrite {os.fspath(out)!r}: it is not a trace tuiprof exported")
    if not target.parent.is_dir():
        raise ExportError(f"no such folder: {str(target.parent)!r}")
    if analysis is None:
        if progress:
            progress("analysing")
        analysis = analyse(runset, gap_threshold_ns)
    if progress:
        progress("writing")
    try:
        with atomic_file(target, 0o644) as raw:
            binary = cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=3, mtime=0) if target.name.endswith(".gz") else raw)
            with io.TextIOWrapper(binary, encoding="ascii", write_through=False) as text:
                count = write_trace(runset, text, window, analysis)
    except WriteRefused as err:
        raise ExportError(str(err)) from None
    return target, count
