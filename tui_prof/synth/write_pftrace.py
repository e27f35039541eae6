"""Write a :class:`~tui_prof.synth.spec.SynthRun` as a rocprofv3 Perfetto trace (``.pftrace``).

Packets are built with the protobuf classes bundled in the ``perfetto`` package and laid
out the way rocprofv3's ``generatePerfetto.cpp`` drives the perfetto SDK (formats.md §4):

* one writer sequence; its first packet clears incremental state and carries
  ``trace_packet_defaults`` (default track = main thread track) and, for ``sdk="7"``,
  a ClockSnapshot defining the SDK's incremental clock 64 (timestamps are then deltas;
  a timestamp smaller than the previous one is written absolute with clock BOOTTIME = 6,
  as the SDK does). ``sdk="0.5"`` writes absolute BOOTTIME timestamps;
* process / thread / named / counter TrackDescriptors; API slices on thread tracks
  (main thread = the default track, others ``THREAD <i> (<tid>)``);
* kernel slices per queue (``layout="queue"``: ``COMPUTE Agent [n] QUEUE [q] GPU`` (7),
  ``COMPUTE AGENT [n] QUEUE [q] (GPU)`` (0.5)) or per HIP stream (``layout="stream"``:
  ``STREAM [ s ]`` (7), ``COMPUTE AGENT [n] STREAM [s] (GPU)`` (0.5)), sorted by start per
  queue with rocprofv3's midpoint fix for overlapping kernels;
* event names, categories and debug-annotation names interned per incremental-state
  generation, emitted in the packet that first uses them (SDK behaviour); with
  ``names="inline"`` every event carries its name, category and annotation names as
  strings instead (``TrackEvent.name``/``categories``, ``DebugAnnotation.name``: the
  layout of Perfetto writers that do not intern);
* ``COPY BYTES to …`` counter tracks (unit bytes, multiplier 1024, value bytes/1024).

``clear_every=N`` clears incremental state every N packets (new interning, re-sent
defaults and descriptors) to exercise a reader's state handling.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import TracePacket, TrackEvent

SEQ_ID = 7
CLOCK_INCREMENTAL = 64
BOOTTIME = 6
CLEARED, NEEDS = 1, 2
BYTES_MULTIPLIER = 1024


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class _Writer:
    def __init__(self, fh, pid: int, main_tid: int, sdk: str, clear_every: int | None, inline: bool = False) -> None:
        self.fh, self.pid, self.main_tid, self.sdk = fh, pid, main_tid, sdk
        self.inline = inline
        self.clear_every = clear_every
        self.packets = 0
        self.process_uuid = 0x1000 + pid
        self.main_track = 0x2000 + main_tid
        self.descriptors: list[TracePacket] = []  # custom tracks, re-sent after a reset
        self.generation = 0
        self.last_ts = 0
        self.start_ts = 0

    # sequence state ------------------------------------------------------------------
    def _reset(self, ts: int) -> None:
        self.names: dict[str, int] = {}
        self.cats: dict[str, int] = {}
        self.args: dict[str, int] = {}
        pkt = TracePacket()
        pkt.trusted_packet_sequence_id = SEQ_ID
        pkt.sequence_flags = CLEARED
        defaults = pkt.trace_packet_defaults
        defaults.track_event_defaults.track_uuid = self.main_track
        if self.sdk == "7":
            defaults.timestamp_clock_id = CLOCK_INCREMENTAL
            boot = pkt.clock_snapshot.clocks.add()
            boot.clock_id, boot.timestamp = BOOTTIME, ts
            incr = pkt.clock_snapshot.clocks.add()
            incr.clock_id, incr.timestamp, incr.is_incremental = CLOCK_INCREMENTAL, ts, True
            self.last_ts = ts
        self._emit(pkt, count=False)
        proc = TracePacket()
        proc.trusted_packet_sequence_id = SEQ_ID
        proc.sequence_flags = NEEDS
        proc.track_descriptor.uuid = self.process_uuid
        proc.track_descriptor.process.pid = self.pid
        proc.track_descriptor.process.process_name = "synth_app"
        self._emit(proc, count=False)
        thread = TracePacket()
        thread.trusted_packet_sequence_id = SEQ_ID
        thread.sequence_flags = NEEDS
        thread.track_descriptor.uuid = self.main_track
        thread.track_descriptor.parent_uuid = self.process_uuid
        thread.track_descriptor.thread.pid = self.pid
        thread.track_descriptor.thread.tid = self.main_tid
        self._emit(thread, count=False)
        for desc in self.descriptors:
            self._emit(desc, count=False)
        self.generation += 1

    def _emit(self, pkt: TracePacket, count: bool = True) -> None:
        raw = pkt.SerializeToString()
        self.fh.write(b"\x0a" + _varint(len(raw)) + raw)
        if count:
            self.packets += 1

    def track(self, uuid: int, name: str, counter: bool = False) -> int:
        pkt = TracePacket()
        pkt.trusted_packet_sequence_id = SEQ_ID
        desc = pkt.track_descriptor
        desc.uuid = uuid
        desc.parent_uuid = self.process_uuid
        desc.name = name
        if counter:
            desc.counter.unit = 3  # UNIT_SIZE_BYTES
            desc.counter.unit_multiplier = BYTES_MULTIPLIER
            desc.counter.is_incremental = False
        self.descriptors.append(pkt)
        self._emit(pkt, count=False)
        return uuid

    def _iid(self, table: dict, text: str, interned, kind: str) -> int:
        iid = table.get(text)
        if iid is None:
            iid = table[text] = len(table) + 1
            item = getattr(interned, kind).add()
            item.iid, item.name = iid, text
        return iid

    # events --------------------------------------------------------------------------
    def event(
        self,
        ts: int,
        etype: int,
        category: str,
        track: int,
        name: str | None = None,
        args: list | None = None,
        flow: int | None = None,
        counter: int | None = None,
    ) -> None:
        if self.packets == 0 or (self.clear_every and self.packets % self.clear_every == 0):
            self._reset(ts)
        pkt = TracePacket()
        pkt.trusted_packet_sequence_id = SEQ_ID
        pkt.sequence_flags = NEEDS
        if self.sdk == "7" and ts >= self.last_ts:
            pkt.timestamp = ts - self.last_ts
            self.last_ts = ts
        else:
            pkt.timestamp = ts
            if self.sdk == "7":
                pkt.timestamp_clock_id = BOOTTIME
        ev = pkt.track_event
        ev.type = etype
        if track != self.main_track:
            ev.track_uuid = track
        interned = pkt.interned_data
        if self.inline:
            ev.categories.append(category)
            if name is not None:
                ev.name = name
        else:
            ev.category_iids.append(self._iid(self.cats, category, interned, "event_categories"))
            if name is not None:
                ev.name_iid = self._iid(self.names, name, interned, "event_names")
        if counter is not None:
            ev.counter_value = counter
        if flow is not None:
            ev.flow_ids.append(flow)
        for key, value in args or ():
            ann = ev.debug_annotations.add()
            if self.inline:
                ann.name = key
            else:
                ann.name_iid = self._iid(self.args, key, interned, "debug_annotation_names")
            if isinstance(value, str):
                ann.string_value = value
            elif value < 0:
                ann.int_value = value
            else:
                ann.uint_value = value
        if not pkt.interned_data.ByteSize():
            pkt.ClearField("interned_data")
        self._emit(pkt)


def _agent_label(agent: int, sdk: str):
    """How rocprofv3 writes an agent in debug annotations: "Agent-4" (7.x) or the integer (0.5)."""
    return f"Agent-{agent}" if sdk == "7" else int(agent)


def midpoint_fix(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """rocprofv3's pftrace fix for kernels of one queue (sorted by start): when kernel i+1
    starts before kernel i ends, both times become ``s + (min(e_i, e_{i+1}) - s) // 2`` with
    ``s = start[i+1]`` (generatePerfetto.cpp, applied sequentially in start order)."""
    start, end = start.copy(), end.copy()
    for i in range(len(start) - 1):
        if start[i + 1] < end[i]:
            s = int(start[i + 1])
            mid = s + (min(int(end[i]), int(end[i + 1])) - s) // 2
            end[i], start[i + 1] = mid, mid
    return start, end


def _write_api(w: _Writer, api: pd.DataFrame, thread_tracks: dict[int, int], sdk: str) -> None:
    """API calls (hip_api category), per thread in start order."""
    for row in api.sort_values(["tid", "start"], kind="stable").itertuples(index=False):
        args = [
            ("begin_ns", row.start),
            ("end_ns", row.end),
            ("delta_ns", row.end - row.start),
            ("tid", row.tid),
            ("kind", 21),
            ("operation", 1),
            ("corr_id", row.correlation_id),
        ]
        if sdk == "7":
            args += [("ancestor_id", 0), ("stream_ID", 0)]
        track = thread_tracks[row.tid]
        category = f"{row.domain}_api"
        w.event(row.start, TrackEvent.TYPE_SLICE_BEGIN, category, track, str(row.name), args, flow=row.correlation_id)
        w.event(row.end, TrackEvent.TYPE_SLICE_END, category, track)


def _write_copies(w: _Writer, copies: pd.DataFrame, tids: list[int], main_tid: int, sdk: str) -> None:
    """Memory copies on "COPY to AGENT [n] THREAD [i] (GPU|CPU)" tracks."""
    copy_tracks: dict[tuple, int] = {}
    for row in copies.itertuples(index=False):
        key = (row.dst_agent, row.tid)
        if key not in copy_tracks:
            kind = "CPU" if row.dst_agent == 0 else "GPU"
            index = 0 if row.tid == main_tid else tids.index(row.tid)
            copy_tracks[key] = w.track(0x4000 + len(copy_tracks), f"COPY to AGENT [{row.dst_agent}] THREAD [{index}] ({kind})")
        args = [
            ("begin_ns", row.start),
            ("end_ns", row.end),
            ("delta_ns", row.end - row.start),
            ("kind", 10),
            ("operation", 1),
            ("src_agent", _agent_label(row.src_agent, sdk)),
            ("dst_agent", _agent_label(row.dst_agent, sdk)),
            ("copy_bytes", row.bytes),
            ("corr_id", row.correlation_id),
            ("tid", row.tid),
        ]
        if sdk == "7":
            args.append(("stream_ID", max(int(row.stream), 0)))
        track = copy_tracks[key]
        w.event(row.start, TrackEvent.TYPE_SLICE_BEGIN, "memory_copy", track, str(row.name), args, flow=row.correlation_id)
        w.event(row.end, TrackEvent.TYPE_SLICE_END, "memory_copy", track)


def _kernel_args(row: Any, agent: Any, s: int, e: int, sdk: str) -> list[tuple[str, Any]]:
    """The debug annotations of one kernel dispatch, as rocprofv3 ``sdk`` writes them."""
    grid = int(row.grid_x) * int(row.grid_y) * int(row.grid_z)
    wg = int(row.wg_x) * int(row.wg_y) * int(row.wg_z)
    args: list[tuple[str, Any]] = [("begin_ns", s), ("end_ns", e), ("delta_ns", e - s), ("kind", 11)]
    if sdk == "7":
        return args + [
            ("agent", _agent_label(agent, sdk)),
            ("agent_type", "GPU"),
            ("corr_id", row.correlation_id),
            ("queue", row.queue),
            ("tid", row.tid),
            ("kernel_id", row.kernel_id),
            ("Scratch_Size", row.scratch_bytes),
            ("LDS_Block_Size", row.lds_bytes),
            ("VGPR_Count", row.arch_vgpr),
            ("Accum_VGPR_Count", row.accum_vgpr),
            ("SGPR_Count", row.sgpr),
            ("workgroup_size", wg),
            ("grid_size", grid),
            ("stream_ID", row.stream),
        ]
    return args + [
        ("agent", _agent_label(agent, sdk)),
        ("corr_id", row.correlation_id),
        ("queue", row.queue),
        ("tid", row.tid),
        ("kernel_id", row.kernel_id),
        ("private_segment_size", row.scratch_bytes),
        ("group_segment_size", row.lds_bytes),
        ("workgroup_size", wg),
        ("grid_size", grid),
    ]


def _write_kernels(w: _Writer, kernels: pd.DataFrame, layout: str, sdk: str) -> None:
    """Kernels: per (agent, queue), sorted by start, midpoint fix, on queue or stream tracks."""
    kernel_tracks: dict[tuple, int] = {}
    for (agent, queue), group in kernels.groupby(["agent", "queue"], sort=True, observed=True):
        group = group.sort_values("start", kind="stable")
        start, end = midpoint_fix(group["start"].to_numpy(), group["end"].to_numpy())
        for i, row in enumerate(group.itertuples(index=False)):
            if layout == "queue":
                key = ("q", agent, queue)
                label = f"COMPUTE Agent [{agent}] QUEUE [{queue}] GPU" if sdk == "7" else f"COMPUTE AGENT [{agent}] QUEUE [{queue}] (GPU)"
            else:
                key = ("s", agent, row.stream)
                label = f"STREAM [ {row.stream} ]" if sdk == "7" else f"COMPUTE AGENT [{agent}] STREAM [{row.stream}] (GPU)"
            if key not in kernel_tracks:
                kernel_tracks[key] = w.track(0x5000 + len(kernel_tracks), label)
            s, e = int(start[i]), int(end[i])
            track = kernel_tracks[key]
            w.event(s, TrackEvent.TYPE_SLICE_BEGIN, "kernel_dispatch", track, str(row.name), _kernel_args(row, agent, s, e, sdk), flow=row.correlation_id)
            w.event(e, TrackEvent.TYPE_SLICE_END, "kernel_dispatch", track)


def _write_copy_counters(w: _Writer, copies: pd.DataFrame, sdk: str) -> None:
    """COPY BYTES counter track per destination agent: bytes/1024 at copy start, 0 at end."""
    counter_tracks: dict[int, int] = {}
    for row in copies.sort_values("start", kind="stable").itertuples(index=False):
        agent = int(row.dst_agent)
        if agent not in counter_tracks:
            kind = "CPU" if agent == 0 else "GPU"
            label = f"COPY BYTES to Agent [{agent}] ({kind})" if sdk == "7" else f"COPY BYTES to AGENT [{agent}] ({kind})"
            counter_tracks[agent] = w.track(0x6000 + agent, label, counter=True)
        w.event(row.start, TrackEvent.TYPE_COUNTER, "memory_copy", counter_tracks[agent], counter=int(row.bytes) // BYTES_MULTIPLIER)
        w.event(row.end, TrackEvent.TYPE_COUNTER, "memory_copy", counter_tracks[agent], counter=0)


def write_pftrace(run, path, layout: str = "queue", sdk: str = "7", clear_every: int | None = None, names: str = "interned") -> Path:
    """Write ``run`` (a SynthRun or anything with model-schema ``kernels``/``api``/``copies``
    tables and ``spec.pid``) to ``path``; returns the path. ``names``: ``"interned"`` (as
    rocprofv3) or ``"inline"`` (strings on every event)."""
    if layout not in ("queue", "stream") or sdk not in ("7", "0.5") or names not in ("interned", "inline"):
        raise ValueError("layout must be queue|stream, sdk 7|0.5 and names interned|inline")
    path = Path(path)
    pid = int(run.spec.pid)
    kernels, api, copies = run.kernels, run.api, run.copies
    main_tid = pid
    with open(path, "wb") as fh:
        w = _Writer(fh, pid, main_tid, sdk, clear_every, inline=names == "inline")
        w._reset(int(api["start"].min()) if len(api) else 0)
        # thread tracks for non-main threads
        thread_tracks = {main_tid: w.main_track}
        tids = sorted(set(api["tid"].tolist()) | set(copies["tid"].tolist()) | set(kernels["tid"].tolist()))
        for index, tid in enumerate([t for t in tids if t != main_tid], start=1):
            thread_tracks[tid] = w.track(0x3000 + tid, f"THREAD {index} ({tid})")
        _write_api(w, api, thread_tracks, sdk)
        _write_copies(w, copies, tids, main_tid, sdk)
        _write_kernels(w, kernels, layout, sdk)
        _write_copy_counters(w, copies, sdk)
    return path
