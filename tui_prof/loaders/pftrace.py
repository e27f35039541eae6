"""rocprofv3 Perfetto trace loader (``--output-format pftrace``, ``<prefix>_results.pftrace``).

Format facts: formats.md §4 (writer ``generatePerfetto.cpp``). A trace file is a sequence
of ``Trace.packet`` records (protobuf field 1, length-delimited ``TracePacket``).

How it reads (streaming, bounded memory):

* the file is read in chunks into one reusable buffer; packet framing (tag 0x0A + varint
  length) is found by decoding a length after every 0x0A byte and following the chain of
  records from the first one (32 records per Python step, see ``_follow``); an incomplete
  last packet is carried to the next chunk;
* fast path, "layouts" (``_Shape``): the perfetto SDK writes the same packet layout again
  and again (same tags, same length prefixes, same interned name/category/annotation-name
  iids, varints of the same byte size; only values differ). The first packet of a length
  group is parsed once in Python into a byte mask; every packet of that length whose bytes
  agree under the mask has exactly that layout, so its timestamp, track, name iid and the
  wanted annotation values are read at fixed offsets for all such packets at once (numpy);
  annotations the model does not use are never decoded;
* general path, for the rest (packets carrying sequence state, inline names, unusual
  encodings, one-off lengths): all packets of a chunk are walked field by field in parallel
  with numpy (one round per field), then the TrackEvent and DebugAnnotation sub-messages
  the same way -- both paths give identical results (tests compare them);
* the rare "state" packets (interned data, track descriptors, clock snapshots, packet
  defaults, incremental-state resets) are decoded with the bundled ``perfetto`` protobuf
  classes, one packet at a time;
* interned ids are resolved per (trusted_packet_sequence_id, incremental-state generation):
  a packet with ``SEQ_INCREMENTAL_STATE_CLEARED`` (or ``incremental_state_cleared``) starts
  a new generation, and iids of an older generation are never reused for it.

Timestamps: ns. Packet ``timestamp`` in clock ``timestamp_clock_id`` (explicit, else the
sequence's ``trace_packet_defaults.timestamp_clock_id``, else BOOTTIME = 6). A clock that a
``ClockSnapshot`` of the same sequence marks ``is_incremental`` (perfetto SDK clock 64) is
decoded as ``boottime_at_snapshot + cumsum(deltas) * unit_multiplier_ns``. Other non-BOOTTIME
clocks are shifted by the offset of the latest snapshot that has both clocks; without one the
raw value is kept and a run warning says so. rocprofv3 writes CLOCK_BOOTTIME (formats.md §1).

Begin/end slices are paired per track by stack discipline in (timestamp, file order); when
every track simply alternates begin, end, begin, end (rocprofv3) the pairs are read off directly.
TrackEvent has no "complete" type; legacy (chrome JSON-style) events are not read. Flow ids
are not kept: rocprofv3 derives them from the correlation id, which is kept (``corr_id``).

Mapping (rocprofv3 layout, formats.md §4): categories ``hip_api``/``hsa_api``/``marker_api``/
``rccl_api``/``rocdecode_api``/``rocjpeg_api`` -> ``api`` (domain = the prefix);
``kernel_dispatch`` -> ``kernels``; ``memory_copy`` slices -> ``copies``; counter tracks
(COPY BYTES, ALLOCATE BYTES, SCRATCH MEMORY, PMC) -> ``series`` with value = counter value x
``unit_multiplier``. Kernel fields come from debug annotations (7.x names, SDK 0.5 names as
fallback); agents written as "Agent-4" keep their number (rocprofv3's default "relative"
index = logical node id; absolute node ids need agent info that pftrace does not carry).
pftrace records only grid/workgroup *products*: stored as (product, 1, 1). No dispatch id.

Midpoint rule: rocprofv3's pftrace writer (only) moves the end of a kernel and the start of
the next kernel on the same queue to their midpoint when they overlap, so afterwards they
share one exact ns value. We count consecutive kernels on one track with
``end[i] == start[i+1]`` (exact equality; real back-to-back dispatches are microseconds
apart) and, when there is any, add a run warning that pftrace kernel times may be adjusted
and CSV/JSON/rocpd times are exact. The count is in ``meta.extra["pftrace_touching_kernel_pairs"]``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

from tui_prof.loaders.base import (
    DetectedFile,
    IssueSink,
    LoadError,
    Sniffed,
    labelled_copies,
    one_line,
    open_binary,
)
from tui_prof.loaders.specs import SPECS
from tui_prof.model import Agent, Run, RunMeta
from tui_prof.model.schema import make_table

LOADER = SPECS["pftrace"]
FORMAT = LOADER.format

CHUNK_BYTES = 4 << 20  # bytes read per step; small enough that the numpy temporaries stay in cache
BOOTTIME = 6
SEQ_INCREMENTAL_STATE_CLEARED = 1
TYPE_SLICE_BEGIN, TYPE_SLICE_END, TYPE_INSTANT, TYPE_COUNTER = 1, 2, 3, 4

# TracePacket fields that change per-sequence state or describe tracks: decoded with protobuf.
_STATE_FIELDS = (6, 12, 41, 43, 44, 59, 60)  # clock_snapshot, interned_data, cleared, process/thread desc, defaults, track_descriptor

API_CATEGORIES = {
    "hip_api": "hip",
    "hsa_api": "hsa",
    "marker_api": "marker",
    "rccl_api": "rccl",
    "rocdecode_api": "rocdecode",
    "rocjpeg_api": "rocjpeg",
}

# Debug annotations kept (integer-valued, or strings like "Agent-4" reduced to their number).
INT_ARGS = (
    "corr_id",
    "tid",
    "queue",
    "kernel_id",
    "grid_size",
    "workgroup_size",
    "LDS_Block_Size",
    "group_segment_size",
    "Scratch_Size",
    "private_segment_size",
    "VGPR_Count",
    "Accum_VGPR_Count",
    "SGPR_Count",
    "stream_ID",
    "stream_id",
    "copy_bytes",
    "agent",
    "src_agent",
    "dst_agent",
)
_ARG_COLUMN = {name: i for i, name in enumerate(INT_ARGS)}
_KERNEL, _COPY, _OTHER = 0, 1, 2
_CLASS_NAMES = {
    _KERNEL: tuple(name for name in INT_ARGS if name not in ("copy_bytes", "src_agent", "dst_agent")),
    _COPY: ("corr_id", "tid", "copy_bytes", "src_agent", "dst_agent", "stream_ID", "stream_id"),
    _OTHER: ("corr_id", "tid"),
}
_CLASS_COLUMNS = {code: [_ARG_COLUMN[n] for n in names] for code, names in _CLASS_NAMES.items()}
MISSING = np.iinfo(np.int64).min

COUNTER_UNITS = {1: "ns", 2: "count", 3: "bytes"}  # CounterDescriptor.Unit

_COPY_DIRECTION = {
    "HOST_TO_DEVICE": "HtoD",
    "DEVICE_TO_HOST": "DtoH",
    "DEVICE_TO_DEVICE": "DtoD",
    "HOST_TO_HOST": "HtoH",
    "PEER_TO_PEER": "PtoP",
}

_TOP_WANTED = (8, 10, 11, 13, 41, 58) + _STATE_FIELDS
_EVENT_WANTED = (3, 4, 9, 10, 11, 22, 23, 30, 44)
_ANNOTATION_WANTED = (1, 2, 3, 4, 5, 6, 10)

_KNOWN_TOP_FIELDS = {1, 2, 3, 6, 8, 10, 11, 12, 13, 33, 35, 36, 41, 42, 43, 44, 45, 58, 59, 60, 79, 87}


# --------------------------------------------------------------------------------------
# sniffing


def _text(value: str | bytes) -> str:
    """A trace string as ``str``: the protobuf classes hand back ``bytes`` for a string field
    that is not valid UTF-8 (proto2); such bytes are decoded with U+FFFD replacements, the
    same rule as for inline strings read by the numpy paths."""
    return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else value


def _varint_at(data: bytes, pos: int) -> tuple[int, int]:
    """Decode one protobuf varint at ``pos``; returns (value, next position). Raises IndexError/ValueError."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def sniff(path: Path, head: bytes) -> Sniffed | None:
    """A Trace starts with field 1 (0x0A) whose payload is a TracePacket made of known fields."""
    if len(head) < 4 or head[0] != 0x0A:
        return None
    try:
        length, pos = _varint_at(head, 1)
        end = min(pos + length, len(head))
        if length == 0 or length > 64 << 20:
            return None
        complete = pos + length <= len(head)
        seen = 0
        trusted = False
        while pos < end:
            tag, pos = _varint_at(head, pos)
            field, wire = tag >> 3, tag & 7
            if field not in _KNOWN_TOP_FIELDS or wire not in (0, 1, 2, 5):
                return None
            trusted |= field in (3, 10) and wire == 0  # trusted_uid / trusted_packet_sequence_id
            if wire == 0:
                _, pos = _varint_at(head, pos)
            elif wire == 2:
                size, pos = _varint_at(head, pos)
                pos += size
            else:
                pos += 8 if wire == 1 else 4
            seen += 1
    except (IndexError, ValueError):
        return None
    if not complete or pos != end:  # the first packet (small in every perfetto writer) must parse exactly
        return None
    # perfetto stamps every packet with a trusted uid or sequence id
    return Sniffed("trace", str(path)) if seen and trusted else None


# --------------------------------------------------------------------------------------
# vectorised protobuf decoding


def _varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Decode varints starting at every offset in ``pos`` (buf is padded); returns (uint64 values, next offsets)."""
    byte = buf[pos]
    more = np.flatnonzero(byte >= 0x80)
    if not more.size:  # the common case: every varint is one byte
        return byte.astype(np.uint64), pos + 1
    value = (byte & 0x7F).astype(np.uint64)
    nxt = pos + 1
    shift = 7
    while more.size and shift < 70:
        byte = buf[nxt[more]]
        value[more] |= (byte & 0x7F).astype(np.uint64) << np.uint64(shift)
        nxt[more] += 1
        more = more[byte >= 0x80]
        shift += 7
    return value, nxt


def _fixed(buf: np.ndarray, pos: np.ndarray, size: int) -> np.ndarray:
    """Little-endian fixed64/fixed32 at each offset, as uint64."""
    raw = buf[pos[:, None] + np.arange(size)]
    return np.ascontiguousarray(raw).view(np.uint64 if size == 8 else np.uint32).ravel().astype(np.uint64)


class Fields:
    """The wanted fields of many messages, grouped by field number: for each number the
    message index, value (varint / fixed bits, or payload offset when length-delimited)
    and payload length, in (round, message) order so "last one wins" works per message."""

    def __init__(self, groups: dict):
        self.groups = groups

    def take(self, number: int):
        return self.groups[number]

    def last(self, number: int, count: int, default=0) -> tuple[np.ndarray, np.ndarray]:
        """Per message: the last value of field ``number`` (protobuf: last one wins) and a has-mask."""
        msg, value, _ = self.groups[number]
        out = np.full(count, default, dtype=np.uint64)
        has = np.zeros(count, dtype=bool)
        out[msg] = value
        has[msg] = True
        return out, has


def _walk(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, wanted: tuple[int, ...]) -> tuple[Fields, np.ndarray]:
    """Split every message ``buf[starts[i]:ends[i]]`` into fields, all messages in parallel
    (one numpy round per field position); keep only the field numbers in ``wanted``.

    Returns the fields and a mask of malformed messages (a field ran past the end or had
    an invalid wire type); all fields of a malformed message are dropped.
    """
    count = starts.size
    lut = np.full(256, -1, dtype=np.int64)
    for slot, number in enumerate(wanted):
        lut[number] = slot
    idx = np.flatnonzero(ends > starts)
    pos = starts[idx].astype(np.int64)
    bad = np.zeros(count, dtype=bool)
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    code: np.ndarray
    msg: np.ndarray
    value: np.ndarray
    length: np.ndarray
    while idx.size:
        tag, p = _varints(buf, pos)
        tag = tag.view(np.int64)
        wire = tag & 7
        code = lut[np.minimum(tag >> 3, 255)]
        # varint value (wire 0) and length prefix (wire 2) are decoded together
        is02 = (wire & 5) == 0  # wire 0 or 2
        length = np.zeros(idx.size, dtype=np.int64)
        all02 = bool(is02.all())
        if all02:
            value, nxt = _varints(buf, p)
            m2 = np.flatnonzero(wire == 2)
        else:
            nxt = p.copy()
            value = np.zeros(idx.size, dtype=np.uint64)
            m = np.flatnonzero(is02)
            value[m], nxt[m] = _varints(buf, p[m])
            m2 = m[wire[m] == 2]
            for wire_type, size in ((1, 8), (5, 4)):
                mf = np.flatnonzero(wire == wire_type)
                if mf.size:
                    value[mf] = _fixed(buf, np.minimum(p[mf], buf.size - size), size)
                    nxt[mf] += size
        if m2.size:
            size = np.minimum(value[m2], np.uint64(1 << 40)).view(np.int64)
            length[m2] = size
            value[m2] = nxt[m2].view(np.uint64)
            nxt[m2] += size
        end_here = ends[idx]
        broken = nxt > end_here
        if not all02:
            broken |= (wire == 3) | (wire == 4) | (wire > 5)
        if broken.any():
            bad[idx[broken]] = True
            nxt[broken] = end_here[broken]  # stop walking it
        wanted_here = code >= 0
        if wanted_here.all():
            parts.append((code, idx, value, length))
        else:
            keep = np.flatnonzero(wanted_here)
            parts.append((code[keep], idx[keep], value[keep], length[keep]))
        going = np.flatnonzero(nxt < end_here)
        idx, pos = idx[going], nxt[going]
    if parts:
        code, msg, value, length = (np.concatenate([p[i] for p in parts]) for i in range(4))
    else:
        code, msg, value, length = (np.zeros(0, t) for t in (np.int64, np.int64, np.uint64, np.int64))
    if bad.any():
        keep = ~bad[msg]
        code, msg, value, length = code[keep], msg[keep], value[keep], length[keep]
    order = np.argsort(code.astype(np.int8), kind="stable")  # radix sort: O(n)
    bounds = np.searchsorted(code[order], np.arange(len(wanted) + 1))
    groups = {}
    for c, number in enumerate(wanted):
        sel = order[bounds[c] : bounds[c + 1]]
        groups[number] = (msg[sel], value[sel], length[sel])
    return Fields(groups), bad


def _frame(padded: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """Find complete ``Trace.packet`` records in ``padded[:size]`` (followed by >= 16 zero bytes).

    Returns (payload starts, payload ends, offset after the last complete record, broken)
    where ``broken`` means a byte that is not a field-1 record was met. Every 0x0A byte is a
    candidate record start; the length after each is decoded vectorised, and the real chain
    of records is then followed from candidate to candidate (one list lookup per packet).
    """
    buf = padded[:size]
    cand = np.flatnonzero(buf == 0x0A)
    length, after = _varints(padded, cand + 1)
    nxt = after + np.minimum(length, np.uint64(1 << 40)).astype(np.int64)  # next record offset
    # candidate index of the record at nxt; -1 when nxt is past the data or not a candidate
    if cand.size:
        where = np.minimum(np.searchsorted(cand, nxt), cand.size - 1)
        link = np.where(cand[where] == nxt, where, -1)
    else:
        link = np.zeros(0, np.int64)
    link[nxt >= buf.size] = -2  # at or past the end of the data
    exact_end = nxt == buf.size
    chain_arr = _follow(link) if buf.size and buf[0] == 0x0A else np.zeros(0, np.int64)
    broken = False
    if chain_arr.size:
        last = chain_arr[-1]
        if link[last] == -1:  # the record after the last one does not start with 0x0A
            broken = True
        if nxt[last] > buf.size:  # incomplete last record
            chain_arr = chain_arr[:-1]
        elif not exact_end[last] and not broken:
            broken = True
    elif buf.size:
        broken = buf[0] != 0x0A
    if chain_arr.size:
        starts = after[chain_arr]
        ends = nxt[chain_arr]
        done = int(ends[-1])
    else:
        starts = ends = np.zeros(0, np.int64)
        done = 0
    return starts, ends, done, broken


def _follow(link: np.ndarray, stride: int = 32) -> np.ndarray:
    """The chain 0, link[0], link[link[0]], ... up to the first negative link, in order.

    Python steps ``stride`` records at a time (through ``link`` composed ``stride`` times by
    repeated squaring); the records in between are filled in with numpy."""
    sink = link.size
    nxt = np.append(np.where(link >= 0, link, sink), sink)  # negative links -> a sink that loops on itself
    jump = nxt
    for _ in range(stride.bit_length() - 1):
        jump = jump[jump]
    marks = []
    i = 0
    while i != sink:
        marks.append(i)
        i = int(jump[i])
    cur = np.asarray(marks, dtype=np.int64)
    rows = [cur]
    for _ in range(stride - 1):
        cur = nxt[cur]
        rows.append(cur)
    path = np.stack(rows, axis=1).ravel()
    return path[path != sink]


# --------------------------------------------------------------------------------------
# packet layouts ("shapes"): the fast path for the packets an SDK writes over and over

MAX_SHAPE_BYTES = 2048  # longer packets always take the general path
MIN_SHAPE_GROUP = 16  # a new layout is learnt only from a length group at least this big
MAX_SHAPES_PER_LENGTH = 32
_SHAPE_TOP_WANTED = {8, 10, 13, 58, 11}
_SHAPE_EVENT_WANTED = set(_EVENT_WANTED)


class _Shape:
    """The byte layout of one kind of event packet (payload of ``length`` bytes).

    Every tag and length prefix, every value that is constant for the layout (sequence id,
    flags, clock id, event type, category iid, annotation name iids) and the continuation
    bits of every varint are fixed: a packet whose bytes agree with ``want`` wherever
    ``mask`` is set parses exactly like the packet the layout was learnt from, so its
    varying values (timestamp, name iid, track uuid, annotation values) can be read at
    fixed offsets. Offsets below are into the packet payload; (offset, size) for varints.
    """

    def __init__(self, length: int) -> None:
        self.length = length
        self.width = (length + 7) // 8 * 8
        self.mask = bytearray(self.width)
        self.want = bytearray(self.width)
        self.seq = self.flags = 0
        self.clock: int | None = None
        self.event = False
        self.type = 0
        self.cat: int | None = None
        self.dcounter: int | None = None  # offset of the double counter value (fixed64)
        # varints at (offset, size)
        self.ts: tuple[int, int] | None = None
        self.name: tuple[int, int] | None = None
        self.track: tuple[int, int] | None = None
        self.counter: tuple[int, int] | None = None
        self.args: list[tuple[int | str, str, int, int]] = []  # (name iid or inline name, "int"|"double"|"string", offset, size)
        self.name_text: tuple[int, int] | None = None  # inline event name at (offset, size): its bytes vary
        self.cat_text: str | None = None  # inline category: part of the layout
        self.hits = 0

    def fixed(self, data: bytes, a: int, b: int) -> None:
        self.mask[a:b] = b"\xff" * (b - a)
        self.want[a:b] = data[a:b]

    def varying(self, a: int, b: int) -> None:
        """A varint of ``b - a`` bytes: only the continuation bits are fixed."""
        self.mask[a:b] = b"\x80" * (b - a)
        self.want[a : b - 1] = b"\x80" * (b - a - 1)
        self.want[b - 1] = 0

    def finish(self) -> _Shape:
        self.mask64 = np.frombuffer(bytes(self.mask), dtype=np.uint64)
        self.want64 = np.frombuffer(bytes(self.want), dtype=np.uint64)
        return self

    def matches(self, words: np.ndarray) -> np.ndarray:
        """Which rows of ``words`` (packets as uint64 words, ``width`` bytes each) have this layout."""
        return ((words & self.mask64) == self.want64).all(axis=1)


def _parse_shape(p: bytes) -> _Shape | None:
    """Learn the layout of event packet ``p`` (its payload), or None when the packet carries
    sequence state or anything the layout fast path does not handle (the general path does)."""
    shape = _Shape(len(p))
    try:
        pos = 0
        while pos < len(p):
            t0 = pos
            tag, pos = _varint_at(p, pos)
            shape.fixed(p, t0, pos)
            field, wire = tag >> 3, tag & 7
            if field in _STATE_FIELDS or field == 41:
                return None
            if wire == 0:
                v0 = pos
                value, pos = _varint_at(p, pos)
                if field == 8:
                    shape.ts = (v0, pos - v0)
                    shape.varying(v0, pos)
                elif field in (10, 13, 58):
                    shape.fixed(p, v0, pos)
                    if field == 10:
                        shape.seq = value
                    elif field == 13:
                        shape.flags = value
                    else:
                        shape.clock = value
                else:
                    shape.varying(v0, pos)
            elif wire == 2:
                l0 = pos
                size, pos = _varint_at(p, pos)
                shape.fixed(p, l0, pos)
                if field == 11:
                    if shape.event or not _parse_event_shape(p, pos, pos + size, shape):
                        return None
                    shape.event = True
                elif field in _SHAPE_TOP_WANTED:
                    return None
                pos += size
            elif wire in (1, 5) and field not in _SHAPE_TOP_WANTED:
                pos += 8 if wire == 1 else 4
            else:
                return None
            if pos > len(p):
                return None
    except (IndexError, ValueError):
        return None
    return shape.finish()


def _parse_event_shape(p: bytes, pos: int, end: int, shape: _Shape) -> bool:
    """Layout of a TrackEvent ``p[pos:end]``; False when it needs the general path."""
    while pos < end:
        t0 = pos
        tag, pos = _varint_at(p, pos)
        shape.fixed(p, t0, pos)
        field, wire = tag >> 3, tag & 7
        if wire == 0:
            v0 = pos
            value, pos = _varint_at(p, pos)
            if field in (9, 3):  # type, category iid: part of the layout (last one wins)
                shape.fixed(p, v0, pos)
                if field == 9:
                    shape.type = value
                else:
                    shape.cat = value
            else:
                shape.varying(v0, pos)
                if field == 10:
                    shape.name = (v0, pos - v0)
                elif field == 11:
                    shape.track = (v0, pos - v0)
                elif field == 30:
                    shape.counter = (v0, pos - v0)
                elif field in _SHAPE_EVENT_WANTED:
                    return False
        elif wire == 2:
            l0 = pos
            size, pos = _varint_at(p, pos)
            shape.fixed(p, l0, pos)
            if field == 4:
                if not _parse_annotation_shape(p, pos, pos + size, shape):
                    return False
            elif field == 23:  # inline name: the bytes vary, their place and length do not
                shape.name_text = (pos, size)
            elif field == 22:  # inline category: part of the layout (the last one wins)
                shape.fixed(p, pos, pos + size)
                shape.cat_text = p[pos : pos + size].decode("utf-8", "replace")
            elif field in _SHAPE_EVENT_WANTED:  # packed category iids: general path
                return False
            pos += size
        elif wire == 1 and field == 44:
            shape.dcounter = pos
            pos += 8
        elif wire in (1, 5) and field not in _SHAPE_EVENT_WANTED:
            pos += 8 if wire == 1 else 4
        else:
            return False
        if pos > end:
            return False
    return pos == end


def _parse_annotation_shape(p: bytes, pos: int, end: int, shape: _Shape) -> bool:
    """A DebugAnnotation as Perfetto writers lay it out: a name (``name_iid``, or an inline
    name, which is then part of the layout) and one int/uint/bool, double or string value,
    in either order, nothing else."""
    iid: int | str | None = None
    value: tuple[str, int, int] | None = None
    q = pos
    while q < end:
        tag = p[q]
        if tag == 0x08 and iid is None:  # name_iid
            iid, r = _varint_at(p, q + 1)
            shape.fixed(p, q, r)
        elif tag == 0x52 and iid is None:  # inline name
            size, r = _varint_at(p, q + 1)
            iid, r = p[r : r + size].decode("utf-8", "replace"), r + size
            if r > end:
                return False
            shape.fixed(p, q, r)
        elif tag in (0x10, 0x18, 0x20) and value is None:  # bool, uint, int
            shape.fixed(p, q, q + 1)
            _, r = _varint_at(p, q + 1)
            shape.varying(q + 1, r)
            value = ("int", q + 1, r - q - 1)
        elif tag == 0x29 and value is None:  # double
            value, r = ("double", q + 1, 8), q + 9
            shape.fixed(p, q, q + 1)
        elif tag == 0x32 and value is None:  # string ("Agent-4")
            size, r = _varint_at(p, q + 1)
            shape.fixed(p, q, r)
            value, r = ("string", r, size), r + size
        else:
            return False
        q = r
    if iid is None or value is None or q != end:
        return False
    shape.args.append((iid, *value))
    return True


def _column(sub: np.ndarray, offset: int, size: int) -> np.ndarray:
    """Varints of ``size`` bytes at column ``offset`` of the packet rows ``sub``, as uint64."""
    value = sub[:, offset].astype(np.uint64)
    if size > 1:
        value &= np.uint64(0x7F)
        for j in range(1, size):
            value |= (sub[:, offset + j] & 0x7F).astype(np.uint64) << np.uint64(7 * j)
    return value


def _shape_value(sub: np.ndarray, kind: str, offset: int, size: int) -> np.ndarray:
    """Annotation values at a fixed offset as int64 (MISSING where a string holds no number)."""
    if kind == "int":
        return _column(sub, offset, size).view(np.int64)
    if kind == "double":
        return np.ascontiguousarray(sub[:, offset : offset + 8]).view(np.float64).ravel().astype(np.int64)
    flat = np.ascontiguousarray(sub).ravel()
    off = np.arange(sub.shape[0], dtype=np.int64) * sub.shape[1] + offset
    return _Decoder._string_numbers(flat, off, np.full(sub.shape[0], size, dtype=np.int64))


class _Shapes:
    """Layouts learnt so far (per payload length, most used first) and the matching of a chunk's packets."""

    def __init__(self) -> None:
        self.by_length: dict[int, list[_Shape]] = {}

    def match(self, data: bytes, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray):
        """Returns ([(shape, packet indices, packet bytes as rows)], indices of the other packets)."""
        length = ends - starts
        order = np.argsort(length, kind="stable")
        lengths = length[order]
        cuts = np.flatnonzero(np.diff(lengths)) + 1
        groups, rest = [], []
        for a, b in zip(np.r_[0, cuts].tolist(), np.r_[cuts, lengths.size].tolist()):
            size = int(lengths[a])
            members = order[a:b]
            known = self.by_length.get(size, [])
            if size == 0 or size > MAX_SHAPE_BYTES or (not known and members.size < MIN_SHAPE_GROUP):
                rest.append(members)
                continue
            width = (size + 7) // 8 * 8
            rows = sliding_window_view(buf, width)[starts[members]]
            words = rows.view(np.uint64)
            left = np.arange(members.size)
            for shape in known:
                everyone = left.size == members.size
                hit = shape.matches(words if everyone else words[left])
                if everyone and hit.all():
                    groups.append((shape, members, rows))
                    shape.hits += members.size
                    left = left[:0]
                    break
                if hit.any():
                    take = left[hit]
                    groups.append((shape, members[take], rows[take]))
                    shape.hits += take.size
                    left = left[~hit]
                    if not left.size:
                        break
            tries = 0
            while left.size >= MIN_SHAPE_GROUP and tries < 8 and len(known) < MAX_SHAPES_PER_LENGTH:
                tries += 1
                first = int(starts[members[left[0]]])
                learnt = _parse_shape(bytes(data[first : first + size]))
                if learnt is None:
                    rest.append(members[left[:1]])
                    left = left[1:]
                    continue
                known = self.by_length.setdefault(size, known)
                known.append(learnt)
                hit = learnt.matches(words[left])
                take = left[hit]
                groups.append((learnt, members[take], rows[take]))
                learnt.hits += take.size
                left = left[~hit]
            rest.append(members[left])
            known.sort(key=lambda s: -s.hits)
        others = np.sort(np.concatenate(rest)) if rest else np.zeros(0, np.int64)
        return groups, others


def _distinct(values: np.ndarray) -> list:
    """Sorted distinct values as Python ints (fast when all are equal, the usual case)."""
    if values.size and (values == values[0]).all():
        return [values[0].item()]
    return np.unique(values).tolist()


class _EventColumns:
    """Per-event outputs of one chunk, filled by both decoding paths."""

    def __init__(self, m: int) -> None:
        self.etype = np.zeros(m, dtype=np.uint64)
        self.track = np.zeros(m, dtype=np.uint64)
        self.has_track = np.zeros(m, dtype=bool)
        self.name = np.full(m, -1, dtype=np.int64)
        self.cat = np.full(m, -1, dtype=np.int64)
        self.m = m
        self.args: dict[int, np.ndarray] = {}  # INT_ARGS column -> values (MISSING = not recorded), made on first use
        self.counters: list[tuple[np.ndarray, np.ndarray]] = []

    def column(self, j: int) -> np.ndarray:
        """Argument column ``j`` (of ``INT_ARGS``) to write into."""
        values = self.args.get(j)
        if values is None:
            values = self.args[j] = np.full(self.m, MISSING, dtype=np.int64)
        return values


# --------------------------------------------------------------------------------------
# decoding state


class _Sequence:
    """Incremental state of one trusted_packet_sequence_id."""

    def __init__(self) -> None:
        self.gen = -1  # global generation id (index into _Decoder.generations)
        self.clock_id = BOOTTIME  # trace_packet_defaults.timestamp_clock_id
        self.default_track = 0  # trace_packet_defaults.track_event_defaults.track_uuid
        self.incremental: dict[int, list[int]] = {}  # clock_id -> [last value ns (boottime), unit multiplier]


_HASH_MULTIPLIERS = np.random.default_rng(0x5EED).integers(1, 1 << 63, size=4096 // 8 + 1, dtype=np.uint64) | np.uint64(1)
"""Odd 64-bit multipliers of the words of an inline string (:meth:`_Decoder._block_ids`)."""


class _InlineIds(dict):
    """The bytes of an inline string -> its global string id: each distinct byte string is
    decoded and interned once (a trace that writes names inline repeats a few names millions
    of times)."""

    def __init__(self, sid) -> None:
        super().__init__()
        self._sid = sid

    def __missing__(self, key: bytes) -> int:
        value = self[key] = self._sid(key.decode("utf-8", "replace"))
        return value


class _Decoder:
    def __init__(self) -> None:
        self.sequences: dict[int, _Sequence] = {}
        self.gen_count = 0
        # (generation, iid) -> global string id, per interning table
        self.names: dict[tuple[int, int], int] = {}
        self.cats: dict[tuple[int, int], int] = {}
        self.arg_names: dict[tuple[int, int], int] = {}
        self.strings: list[str] = []
        self.string_ids: dict[str, int] = {}
        self.inline_ids = _InlineIds(self.sid)
        self._inline_buf: object = None  # the chunk whose bytes ``_inline_raw`` holds
        self._inline_raw = b""
        self.tracks: dict[int, dict] = {}  # uuid -> descriptor facts
        self.pids: list[int] = []
        self.clock_offsets: dict[int, int] = {}  # clock id -> boottime - clock
        self.warnings: list[str] = []
        self.chunks: list[dict] = []  # per chunk: event type, track index, ts, name id, category id
        self.n_events = 0
        self.counters: list[tuple] = []  # (global event index, value) of counter events
        self.args: dict[int, list] = {code: [] for code in _CLASS_NAMES}  # (event index, args matrix)
        self.track_index: dict[int, int] = {}  # track uuid -> small index
        self.packets = 0
        self.bad_packets = 0
        self.shapes = _Shapes()
        self.track_sorted = np.zeros(0, np.uint64)
        self.track_numbers = np.zeros(0, np.int32)

    def sid(self, text: str | bytes) -> int:
        text = _text(text)
        sid = self.string_ids.get(text)
        if sid is None:
            sid = self.string_ids[text] = len(self.strings)
            self.strings.append(text)
        return sid

    def sequence(self, seq_id: int) -> _Sequence:
        seq = self.sequences.get(seq_id)
        if seq is None:
            seq = self.sequences[seq_id] = _Sequence()
            self.new_generation(seq)
        return seq

    def new_generation(self, seq: _Sequence) -> None:
        seq.gen = self.gen_count
        self.gen_count += 1
        seq.clock_id = BOOTTIME
        seq.default_track = 0
        seq.incremental = {}

    # state packets ------------------------------------------------------------------
    def state_packet(self, raw: bytes, seq: _Sequence) -> None:
        """Apply one state-carrying packet (decoded with the perfetto protobuf classes)."""
        from google.protobuf.message import DecodeError
        from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import TracePacket

        try:
            pkt = TracePacket.FromString(raw)
        except DecodeError:
            self.bad_packets += 1
            return
        gen = seq.gen
        if pkt.HasField("interned_data"):
            data = pkt.interned_data
            for item in data.event_names:
                self.names[(gen, item.iid)] = self.sid(item.name)
            for item in data.event_categories:
                self.cats[(gen, item.iid)] = self.sid(item.name)
            for item in data.debug_annotation_names:
                self.arg_names[(gen, item.iid)] = self.sid(item.name)
        if pkt.HasField("trace_packet_defaults"):
            defaults = pkt.trace_packet_defaults
            if defaults.HasField("timestamp_clock_id"):
                seq.clock_id = defaults.timestamp_clock_id
            if defaults.track_event_defaults.HasField("track_uuid"):
                seq.default_track = defaults.track_event_defaults.track_uuid
        if pkt.HasField("clock_snapshot"):
            clocks = {c.clock_id: c for c in pkt.clock_snapshot.clocks}
            boot = clocks.get(BOOTTIME)
            for cid, clock in clocks.items():
                if boot is None or cid == BOOTTIME:
                    continue
                if clock.is_incremental:
                    seq.incremental[cid] = [boot.timestamp, clock.unit_multiplier_ns or 1]
                else:
                    self.clock_offsets[cid] = boot.timestamp - clock.timestamp * (clock.unit_multiplier_ns or 1)
        if pkt.HasField("track_descriptor"):
            desc = pkt.track_descriptor
            info = self.tracks.setdefault(desc.uuid, {})
            if desc.HasField("parent_uuid"):
                info["parent"] = desc.parent_uuid
            if desc.name or desc.static_name:
                info["name"] = _text(desc.name or desc.static_name)
            if desc.HasField("process"):
                info["pid"] = desc.process.pid
                info.setdefault("name", _text(desc.process.process_name))
                if desc.process.pid not in self.pids:
                    self.pids.append(desc.process.pid)
            if desc.HasField("thread"):
                info["pid"], info["tid"] = desc.thread.pid, desc.thread.tid
                info.setdefault("name", _text(desc.thread.thread_name))
            if desc.HasField("counter"):
                counter = desc.counter
                info["counter"] = True
                info["unit"] = _text(counter.unit_name) or COUNTER_UNITS.get(counter.unit, "")
                info["multiplier"] = counter.unit_multiplier or 1

    # chunks -------------------------------------------------------------------------
    def chunk(self, data, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
        """Decode the complete packets ``data[starts[i]:ends[i]]`` (``buf``: the same bytes as
        uint8, followed by >= 16 zero bytes for varint reads past the end): packets of a known
        layout (:class:`_Shape`) by offset arithmetic, the others field by field (:func:`_walk`)."""
        n = len(starts)
        self.packets += n
        s = np.asarray(starts, dtype=np.int64)
        e = np.asarray(ends, dtype=np.int64)
        seq_ids, flags, ts_raw, clock_ids, cleared = (np.zeros(n, np.uint64) for _ in range(5))
        has_ts, has_clock, special = (np.zeros(n, bool) for _ in range(3))
        groups, rest = self.shapes.match(data, buf, s, e)
        for shape, rows, sub in groups:
            seq_ids[rows] = shape.seq
            flags[rows] = shape.flags
            if shape.ts is not None:
                ts_raw[rows] = _column(sub, *shape.ts)
                has_ts[rows] = True
            if shape.clock is not None:
                clock_ids[rows] = shape.clock
                has_clock[rows] = True
        ev_msg = ev_off = ev_len = np.zeros(0, np.int64)
        if rest.size:
            top, bad = _walk(buf, s[rest], e[rest], _TOP_WANTED)
            self.bad_packets += int(bad.sum())
            for number, target, has in ((10, seq_ids, None), (13, flags, None), (8, ts_raw, has_ts), (58, clock_ids, has_clock), (41, cleared, None)):
                msg, value, _ = top.take(number)  # (round, message) order: the last one wins
                target[rest[msg]] = value
                if has is not None:
                    has[rest[msg]] = True
            for number in _STATE_FIELDS:
                special[rest[top.take(number)[0]]] = True
            msg, off, ev_len = top.take(11)
            ev_msg, ev_off = rest[msg], off.astype(np.int64)
        reset = ((flags & np.uint64(SEQ_INCREMENTAL_STATE_CLEARED)) != 0) | (cleared != 0)
        special |= reset

        # Sequence state is applied in file order; events between state packets share it.
        gen = np.empty(n, dtype=np.int64)
        clock = np.empty(n, dtype=np.int64)
        default_track = np.empty(n, dtype=np.uint64)
        ts = ts_raw.astype(np.int64)
        ts[~has_ts] = MISSING
        for seq_id in _distinct(seq_ids):
            members = np.flatnonzero(seq_ids == seq_id)
            seq = self.sequence(int(seq_id))
            cuts = members[special[members]]
            bounds = np.searchsorted(members, cuts).tolist() + [members.size]
            begin = 0
            for cut_pos, cut in zip(bounds, cuts.tolist() + [None]):
                part = members[begin:cut_pos]
                self._stamp(seq, part, gen, clock, default_track, ts, has_ts, has_clock, clock_ids)
                if cut is None:
                    break
                if reset[cut]:
                    self.new_generation(seq)
                self.state_packet(bytes(data[starts[cut] : ends[cut]]), seq)
                self._stamp(seq, np.array([cut]), gen, clock, default_track, ts, has_ts, has_clock, clock_ids)
                begin = cut_pos + 1
        self._events(buf, groups, ev_msg, ev_off, ev_len, gen, ts, default_track)

    def _stamp(self, seq, part, gen, clock, default_track, ts, has_ts, has_clock, clock_ids) -> None:
        """Give packets ``part`` (file order, one sequence, no state change) generation, track and ns time."""
        if not part.size:
            return
        gen[part] = seq.gen
        default_track[part] = seq.default_track
        cid = np.where(has_clock[part], clock_ids[part].astype(np.int64), seq.clock_id)
        clock[part] = cid
        timed = has_ts[part]
        for clock_id in _distinct(cid[timed]):
            sel = part[timed & (cid == clock_id)]
            if clock_id == BOOTTIME:
                continue
            if clock_id in seq.incremental:
                last, mult = seq.incremental[clock_id]
                values = last + np.cumsum(ts[sel]) * mult
                ts[sel] = values
                seq.incremental[clock_id][0] = int(values[-1])
            elif clock_id in self.clock_offsets:
                ts[sel] += self.clock_offsets[clock_id]
            else:
                note = f"timestamps on clock {clock_id} kept unconverted (no clock snapshot relates it to BOOTTIME)"
                if note not in self.warnings:
                    self.warnings.append(note)

    def _lookup(self, table: dict, gen: np.ndarray, iid: np.ndarray) -> np.ndarray:
        """Global string id of interned (generation, iid) pairs; -1 when not interned.

        Uses a dense (generation, iid) array when small (iids are small counters), else np.unique."""
        if not gen.size:
            return np.zeros(0, np.int64)
        gmin, gmax = int(gen.min()), int(gen.max())
        imax = int(iid.max())
        if (gmax - gmin + 1) * (imax + 1) <= 4_000_000:
            dense = np.full((gmax - gmin + 1, imax + 1), -1, dtype=np.int64)
            for (g, i), sid in table.items():
                if gmin <= g <= gmax and i <= imax:
                    dense[g - gmin, i] = sid
            return dense[gen - gmin, iid.astype(np.int64)]
        key = gen.astype(np.int64) * (1 << 32) + iid.astype(np.int64)
        uniq, inverse = np.unique(key, return_inverse=True)
        ids = np.array([table.get((int(k) >> 32, int(k) & 0xFFFFFFFF), -1) for k in uniq.tolist()], dtype=np.int64)
        return ids[inverse]

    def _inline(self, data: np.ndarray, off: np.ndarray, length: np.ndarray) -> np.ndarray:
        """Global string ids of inline strings at ``data[off : off + length]``. Strings of one
        length are gathered as rows and told apart with :meth:`_block_ids`; only a string not
        seen before is decoded and interned."""
        off, length = off.astype(np.int64), length.astype(np.int64)
        out = np.empty(off.size, dtype=np.int64)
        order = np.argsort(length, kind="stable")
        lengths = length[order]
        cuts = np.flatnonzero(np.diff(lengths)) + 1
        for a, b in zip(np.r_[0, cuts].tolist(), np.r_[cuts, lengths.size].tolist()):
            rows, size = order[a:b], int(lengths[a])
            if b - a < 16 or size > 4096:  # few rows, or long strings: one by one
                out[rows] = [self.inline_ids[data[o : o + size].tobytes()] for o in off[rows].tolist()]
            else:
                out[rows] = self._block_ids(data[off[rows, None] + np.arange(size)])
        return out

    def _block_ids(self, block: np.ndarray) -> np.ndarray:
        """Global string ids of the byte strings in the rows of ``block`` (n × k bytes).

        Rows are packed into 64-bit words and hashed (one wrapping dot product); every row is
        then compared with the first row of its hash, so equal hashes of different strings
        (collisions) are found and looked up one by one: the ids are exact."""
        n, k = block.shape
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        width = max((k + 7) // 8, 1) * 8
        padded = np.zeros((n, width), dtype=np.uint8)
        padded[:, :k] = block
        words = padded.view(np.uint64)
        key = words[:, 0] if words.shape[1] == 1 else words @ _HASH_MULTIPLIERS[: words.shape[1]]
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        ids = np.array([self.inline_ids[padded[i, :k].tobytes()] for i in first.tolist()], dtype=np.int64)[inverse]
        if words.shape[1] > 1:
            differ = np.flatnonzero((words != words[first[inverse]]).any(axis=1))
            for i in differ.tolist():
                ids[i] = self.inline_ids[padded[i, :k].tobytes()]
        return ids

    def _events(self, buf, groups, ev_msg, ev_off, ev_len, gen, ts, default_track) -> None:
        """Decode the TrackEvents of this chunk (general path ``ev_*`` and shaped ``groups``)
        into flat per-event arrays, in packet order."""
        shaped = [(shape, rows, sub) for shape, rows, sub in groups if shape.event]
        pkt = np.concatenate([ev_msg] + [rows for _, rows, _ in shaped])
        m = pkt.size
        if not m:
            return
        if ev_msg.size < 2 or (np.diff(ev_msg) > 0).all():  # at most one event per packet: number them by a count
            has_event = np.zeros(gen.size, dtype=bool)
            has_event[pkt] = True
            ev_pkt = np.flatnonzero(has_event)
            slot = (np.cumsum(has_event) - 1)[pkt]
        else:
            order = np.argsort(pkt, kind="stable")
            slot = np.empty(m, dtype=np.int64)
            slot[order] = np.arange(m)
            ev_pkt = pkt[order]
        out = _EventColumns(m)
        if ev_msg.size:
            self._events_general(buf, slot[: ev_msg.size], ev_msg, ev_off, ev_len, gen, out)
        pos = ev_msg.size
        col_of_sid = self._arg_columns()
        for shape, rows, sub in shaped:
            self._events_shaped(shape, rows, sub, slot[pos : pos + rows.size], gen, col_of_sid, out)
            pos += rows.size
        etype, cat = out.etype, out.cat
        track = np.where(out.has_track, out.track, default_track[ev_pkt])
        base = self.n_events
        self.n_events += m
        if out.counters:
            index = np.concatenate([c[0] for c in out.counters])
            value = np.concatenate([c[1] for c in out.counters])
            o = np.argsort(index, kind="stable")  # event order, whatever path decoded them
            self.counters.append((index[o] + base, value[o]))

        # keep only the argument columns of each event's table, rows by global event index
        begin_like = (etype == TYPE_SLICE_BEGIN) | (etype == TYPE_INSTANT)
        klass = np.full(m, _OTHER, dtype=np.int8)
        klass[cat == self.string_ids.get("kernel_dispatch", -2)] = _KERNEL
        klass[cat == self.string_ids.get("memory_copy", -2)] = _COPY
        for code, columns in _CLASS_COLUMNS.items():
            rows = np.flatnonzero(begin_like & (klass == code))
            if rows.size:
                kept = [out.args[j][rows] if j in out.args else None for j in columns]  # None: not recorded
                self.args[code].append((rows + base, kept))
        # tracks as small ints
        self.chunks.append(
            {
                "type": etype.astype(np.int8),
                "track": self._track_numbers(track),
                "ts": ts[ev_pkt],
                "name": out.name.astype(np.int32),
                "cat": cat.astype(np.int32),
            }
        )

    def _track_numbers(self, track: np.ndarray) -> np.ndarray:
        """Small int per track uuid (first-seen order across the file), via a sorted uuid table."""
        pos = np.minimum(np.searchsorted(self.track_sorted, track), max(self.track_sorted.size - 1, 0))
        known = self.track_sorted.size > 0
        if not known or not (self.track_sorted[pos] == track).all():
            missing = track if not known else track[self.track_sorted[pos] != track]
            for u in np.unique(missing).tolist():  # new tracks of a chunk are numbered in uuid order
                self.track_index.setdefault(int(u), len(self.track_index))
            self.track_sorted = np.array(sorted(self.track_index), dtype=np.uint64)
            self.track_numbers = np.array([self.track_index[u] for u in self.track_sorted.tolist()], dtype=np.int32)
            pos = np.searchsorted(self.track_sorted, track)
        return self.track_numbers[pos]

    def _events_general(self, buf, slot, ev_msg, ev_off, ev_len, gen, out) -> None:
        """TrackEvents ``buf[ev_off:ev_off+ev_len]`` of packets ``ev_msg``, field by field, into ``out[slot]``."""
        m = ev_msg.size
        fields, bad = _walk(buf, ev_off, ev_off + ev_len, _EVENT_WANTED)
        self.bad_packets += int(bad.sum())
        ev_gen = gen[ev_msg]
        etype, _ = fields.last(9, m)
        out.etype[slot] = etype
        msg, value, _ = fields.take(11)
        out.track[slot[msg]] = value
        out.has_track[slot[msg]] = True
        msg, value, _ = fields.take(10)
        out.name[slot[msg]] = self._lookup(self.names, ev_gen[msg], value)
        msg, off, length = fields.take(23)
        if msg.size:
            out.name[slot[msg]] = self._inline(buf, off.astype(np.int64), length)
        msg, value, length = fields.take(3)
        if msg.size:
            packed = np.flatnonzero(length > 0)  # packed encoding: first varint of the payload
            if packed.size:
                value = value.copy()
                value[packed], _ = _varints(buf, value[packed].astype(np.int64))
            first = np.unique(msg[::-1], return_index=True)[1]
            first = msg.size - 1 - first
            out.cat[slot[msg[first]]] = self._lookup(self.cats, ev_gen[msg[first]], value[first])
        msg, off, length = fields.take(22)
        if msg.size:
            out.cat[slot[msg]] = self._inline(buf, off.astype(np.int64), length)
        cmsg, value, _ = fields.take(30)
        dmsg, dvalue, _ = fields.take(44)
        if cmsg.size or dmsg.size:
            out.counters.append((slot[np.concatenate([cmsg, dmsg])], np.concatenate([value.view(np.int64).astype(np.float64), dvalue.view(np.float64)])))
        # debug annotations of slice begins and instants (ends carry none worth keeping)
        begin_like = (etype == TYPE_SLICE_BEGIN) | (etype == TYPE_INSTANT)
        msg, off, length = fields.take(4)
        keep = begin_like[msg]
        if keep.any():
            args = np.full((m, len(INT_ARGS)), MISSING, dtype=np.int64)
            self._annotations(buf, msg[keep], off[keep].astype(np.int64), length[keep], ev_gen, args)
            for j in np.flatnonzero((args != MISSING).any(axis=0)).tolist():
                out.column(j)[slot] = args[:, j]

    def _events_shaped(self, shape, rows, sub, slot, gen, col_of_sid, out) -> None:
        """TrackEvents of packets ``rows`` that all have layout ``shape`` (bytes in ``sub``), into ``out[slot]``."""
        g = gen[rows]
        g0 = int(g[0])
        one_gen = int(g.min()) == int(g.max()) == g0
        out.etype[slot] = shape.type
        if shape.track is not None:
            out.track[slot] = _column(sub, *shape.track)
            out.has_track[slot] = True
        if shape.name is not None:
            out.name[slot] = self._lookup(self.names, g, _column(sub, *shape.name))
        if shape.name_text is not None:
            o, k = shape.name_text
            out.name[slot] = self._block_ids(sub[:, o : o + k])
        if shape.cat is not None:
            if one_gen:
                out.cat[slot] = self.cats.get((g0, shape.cat), -1)
            else:
                out.cat[slot] = self._lookup(self.cats, g, np.full(g.size, shape.cat, np.uint64))
        if shape.cat_text is not None:
            out.cat[slot] = self.sid(shape.cat_text)
        if shape.counter is not None:
            out.counters.append((slot, _column(sub, *shape.counter).view(np.int64).astype(np.float64)))
        if shape.dcounter is not None:
            o = shape.dcounter
            out.counters.append((slot, np.ascontiguousarray(sub[:, o : o + 8]).view(np.float64).ravel()))
        if shape.type not in (TYPE_SLICE_BEGIN, TYPE_INSTANT):
            return
        for iid, kind, o, k in shape.args:  # in annotation order: a repeated name keeps the last
            if isinstance(iid, str) or one_gen:
                if isinstance(iid, str):  # inline name
                    self.sid(iid)
                    column = _ARG_COLUMN.get(iid, -1)
                else:
                    column = int(col_of_sid[self.arg_names.get((g0, iid), -1)])
                if column < 0:
                    continue
                value = _shape_value(sub, kind, o, k)
                ok = value != MISSING
                if ok.all():
                    out.column(column)[slot] = value
                else:
                    out.column(column)[slot[ok]] = value[ok]
            else:
                columns = col_of_sid[self._lookup(self.arg_names, g, np.full(g.size, iid, np.uint64))]
                sel = np.flatnonzero(columns >= 0)
                if not sel.size:
                    continue
                value = _shape_value(sub[sel], kind, o, k)
                ok = value != MISSING
                sel, value, columns = sel[ok], value[ok], columns[sel[ok]]
                for column in np.unique(columns).tolist():
                    mine = columns == column
                    out.column(column)[slot[sel[mine]]] = value[mine]

    def _arg_columns(self) -> np.ndarray:
        """string id -> column of ``INT_ARGS`` (-1: not kept); the extra last slot serves id -1."""
        col_of_sid = np.full(len(self.strings) + 1, -1, dtype=np.int64)
        for arg, column in _ARG_COLUMN.items():
            sid = self.string_ids.get(arg)
            if sid is not None:
                col_of_sid[sid] = column
        return col_of_sid

    def _annotations(self, buf, owner, off, length, ev_gen, args) -> None:
        """Fill ``args`` from DebugAnnotation messages ``buf[off:off+length]`` of events ``owner``.

        Fast path for the perfetto SDK's encoding (name_iid first, then one scalar or string
        value, nothing else); every other annotation goes through the general field walk."""
        end = off + length
        fast = np.flatnonzero((buf[off] == 0x08) & (length > 0))
        iid, p = _varints(buf, off[fast] + 1)
        column = self._arg_columns()[self._lookup(self.arg_names, ev_gen[owner[fast]], iid)]
        w = np.flatnonzero(column >= 0)  # annotations we keep
        fw, pw, cw = fast[w], p[w], column[w]
        tag = buf[pw].astype(np.int64)
        wire, number = tag & 7, tag >> 3
        value = np.full(w.size, MISSING, dtype=np.int64)
        after = np.full(w.size, -1, dtype=np.int64)
        m = np.flatnonzero((wire == 0) & (number >= 2) & (number <= 4))  # bool, uint, int
        if m.size:
            raw, after[m] = _varints(buf, pw[m] + 1)
            value[m] = raw.view(np.int64)
        m = np.flatnonzero((wire == 1) & (number == 5))  # double
        if m.size:
            value[m] = _fixed(buf, np.minimum(pw[m] + 1, buf.size - 8), 8).view(np.float64).astype(np.int64)
            after[m] = pw[m] + 9
        m = np.flatnonzero((wire == 2) & (number == 6))  # string: "Agent-4" -> 4
        if m.size:
            size, start = _varints(buf, pw[m] + 1)
            size = np.minimum(size, np.uint64(1 << 40)).astype(np.int64)
            after[m] = start + size
            value[m] = self._string_numbers(buf, start, size)
        done = after == end[fw]
        ok = done & (value != MISSING)
        args[owner[fw[ok]], cw[ok]] = value[ok]
        # general path: not name_iid-first, or a kept name whose value did not parse as expected
        slow = np.ones(owner.size, dtype=bool)
        slow[fast] = False
        slow[fw[~done]] = True
        slow = np.flatnonzero(slow)
        if slow.size:
            self._annotations_general(buf, owner[slow], off[slow], length[slow], ev_gen, args)

    def _annotations_general(self, buf, owner, off, length, ev_gen, args) -> None:
        fields, _ = _walk(buf, off, off + length, _ANNOTATION_WANTED)
        count = owner.size
        name = np.full(count, -1, dtype=np.int64)
        msg, value, _ = fields.take(1)
        name[msg] = self._lookup(self.arg_names, ev_gen[owner[msg]], value)
        msg, noff, nlen = fields.take(10)
        if msg.size:
            name[msg] = self._inline(buf, noff.astype(np.int64), nlen)
        column = self._arg_columns()[name]
        value = np.full(count, MISSING, dtype=np.int64)
        for number in (2, 3, 4):  # bool, uint, int
            msg, raw, _ = fields.take(number)
            value[msg] = raw.view(np.int64)
        msg, raw, _ = fields.take(5)  # double
        value[msg] = raw.view(np.float64).astype(np.int64)
        msg, soff, slen = fields.take(6)  # string: "Agent-4" -> 4, "12" -> 12
        wanted = column[msg] >= 0
        if wanted.any():
            value[msg[wanted]] = self._string_numbers(buf, soff[wanted].astype(np.int64), slen[wanted])
        ok = (column >= 0) & (value != MISSING)
        args[owner[ok], column[ok]] = value[ok]

    @staticmethod
    def _string_numbers(buf, off, length) -> np.ndarray:
        """The integer in short strings: "12" -> 12, "Agent-4" -> 4 (trailing digits); MISSING when none.

        Strings are compared as fixed-width byte keys (8 bytes -> one uint64) so only the
        distinct ones are parsed in Python; strings over 24 bytes are parsed one by one."""
        out = np.full(off.size, MISSING, dtype=np.int64)
        if not off.size:
            return out
        short = np.flatnonzero(length <= 24)
        width = 8 if length[short].max(initial=0) <= 8 else 24
        o, n = off[short], length[short]
        grid = buf[np.minimum(o[:, None] + np.arange(width), buf.size - 1)]
        grid = np.where(np.arange(width) < n[:, None], grid, 0).astype(np.uint8)
        keys = np.ascontiguousarray(grid).view(np.uint64 if width == 8 else f"S{width}").ravel()
        if keys.size and (keys == keys[0]).all():  # one distinct string: parse it once
            uniq, inverse = keys[:1], np.zeros(keys.size, dtype=np.int64)
        else:
            uniq, inverse = np.unique(keys, return_inverse=True)
        texts = [bytes(k.tobytes() if width == 8 else k).rstrip(b"\0") for k in uniq]
        out[short] = np.asarray([_parse_number(t) for t in texts], dtype=np.int64)[inverse]
        for i in np.flatnonzero(length > 24).tolist():
            out[i] = _parse_number(bytes(buf[off[i] : off[i] + length[i]]))
        return out


def _parse_number(text: bytes) -> int:
    text = text.strip()
    if re.fullmatch(rb"-?\d+", text):
        return int(text)
    found = re.search(rb"(\d+)$", text)  # "Agent-4": the dash is a separator, not a sign
    return int(found.group(1)) if found else MISSING


# --------------------------------------------------------------------------------------
# assembling the run


def _pair_slices(etype, track, ts, order=None):
    """Match SLICE_BEGIN/SLICE_END per track with stack discipline (ties in time: ``order``,
    default file order).

    Returns (begin indices, end indices, unmatched begins, unmatched ends)."""
    sel = np.flatnonzero((etype == TYPE_SLICE_BEGIN) | (etype == TYPE_SLICE_END))
    if not sel.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 0, 0
    # sort by (track, timestamp, file order); file order is usually time order within a track
    key = track[sel]
    if key.size and key.min() >= 0 and key.max() < 1 << 15:
        key = key.astype(np.int16)  # stable sort of 16-bit keys is a radix sort
    sel = sel[np.argsort(key, kind="stable")]
    t_sorted, s_ts = track[sel], ts[sel]
    if ((np.diff(s_ts) < 0) & (t_sorted[1:] == t_sorted[:-1])).any():
        tie = sel if order is None else order[sel]
        sel = sel[np.lexsort((tie, ts[sel], track[sel]))]
    is_begin = etype[sel] == TYPE_SLICE_BEGIN
    # fast path (rocprofv3): on every track B, E, B, E, ... -- each begin's end is the next event
    t_sorted = track[sel]
    first = np.r_[True, t_sorted[1:] != t_sorted[:-1]]
    last = np.r_[first[1:], True]
    if is_begin[first].all() and not is_begin[last].any() and (is_begin[:-1] != is_begin[1:])[~first[1:]].all():
        return sel[is_begin], sel[~is_begin], 0, 0
    step = np.where(is_begin, 1, -1)
    # An END that would take its track's depth below every earlier depth (and below 0) has
    # no BEGIN: drop it first, then depths are plain running sums.
    depth = _track_depth(step, track[sel])
    tidx = np.cumsum(np.r_[True, track[sel][1:] != track[sel][:-1]]) - 1
    big = 4 * (sel.size + 1)
    adj = depth - tidx * big  # later tracks lie strictly below earlier ones
    running = np.minimum.accumulate(adj)
    before = np.minimum(np.r_[adj[0] + 1, running[:-1]], -tidx * big)  # includes depth 0 at track start
    orphan = (step < 0) & (adj < before)
    n_orphan = int(orphan.sum())
    if n_orphan:
        sel, step = sel[~orphan], step[~orphan]
        depth = _track_depth(step, track[sel])
    track_sorted = track[sel]
    level = np.where(step > 0, depth, depth + 1)  # stack level the event opens / closes
    if level.max() == 1:  # no nesting (rocprofv3): pairs are consecutive B, E within a track
        group = np.arange(sel.size)
    else:
        group = np.lexsort((np.arange(sel.size), level, track_sorted))
    g_sel = sel[group]
    g_track, g_level, g_step = track_sorted[group], level[group], step[group]
    # within a (track, level) group events alternate B E B E ...; a B followed by E pairs up
    pair = (g_step[:-1] > 0) & (g_step[1:] < 0) & (g_track[:-1] == g_track[1:]) & (g_level[:-1] == g_level[1:])
    begins = g_sel[:-1][pair]
    ends = g_sel[1:][pair]
    n_begin = int((step > 0).sum())
    return begins, ends, n_begin - begins.size, int((step < 0).sum()) - ends.size + n_orphan


def _track_depth(step: np.ndarray, track: np.ndarray) -> np.ndarray:
    """Running sum of ``step`` restarting at each new track (rows grouped by track): depth after each event."""
    csum = np.cumsum(step)
    first = np.r_[True, track[1:] != track[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(step.size), 0))
    return csum - (csum - step)[start]


_AGENT_IN_NAME = re.compile(r"(?:AGENT|Agent|GPU|CPU)\s*\[\s*(\d+)\s*\]")
_STREAM_IN_NAME = re.compile(r"STREAM\s*\[\s*(\d+)\s*\]")


class _Args:
    """Argument columns of one event class for a list of slice-begin events (global indices).

    ``parts`` holds per chunk (event indices, one array per argument column or None when the
    chunk recorded none); a column is only concatenated when asked for."""

    def __init__(self, parts: list, code: int, events: np.ndarray) -> None:
        self.names = _CLASS_NAMES[code]
        self.parts = parts
        self.count = events.size
        index = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
        self.pos = self.found = None
        if not (index.size == events.size and np.array_equal(index, events)):  # usual case: same rows
            pos = np.searchsorted(index, events)
            found = pos < index.size
            found[found] &= index[pos[found]] == events[found]
            self.pos, self.found = pos, found

    def raw(self, name: str) -> np.ndarray:
        j = self.names.index(name)
        if not self.parts:
            return np.full(self.count, MISSING, dtype=np.int64)
        values = np.concatenate([p[1][j] if p[1][j] is not None else np.full(p[0].size, MISSING, dtype=np.int64) for p in self.parts])
        if self.pos is None:
            return values
        out = np.full(self.count, MISSING, dtype=np.int64)
        out[self.found] = values[self.pos[self.found]]
        return out

    def col(self, *names: str) -> np.ndarray:
        """First present of ``names`` per row; -1 when none is recorded."""
        out = self.raw(names[0])
        for name in names[1:]:
            out = np.where(out != MISSING, out, self.raw(name))
        return np.where(out != MISSING, out, -1)


def _counter_series(dec: _Decoder, event_track: np.ndarray, event_ts: np.ndarray, track_info: list[dict], uuids: list) -> pd.DataFrame:
    """The counter tracks' values as the ``series`` table (value = counter value * the
    track's unit multiplier)."""
    index = np.concatenate([p[0] for p in dec.counters])
    value = np.concatenate([p[1] for p in dec.counters])
    ctrack = event_track[index]
    uniq, inverse = np.unique(ctrack, return_inverse=True)
    infos = [track_info[u] for u in uniq.tolist()]
    labels = np.array([i.get("name", f"track {uuids[u]}") for i, u in zip(infos, uniq.tolist())], dtype=object)
    units = np.array([i.get("unit", "") for i in infos], dtype=object)
    mult = np.array([i.get("multiplier", 1) for i in infos], dtype=np.float64)
    agents = np.array([_match_int(_AGENT_IN_NAME, nm) for nm in labels], dtype=np.int64)
    return make_table(
        "series",
        {
            "track": labels[inverse],
            "agent": agents[inverse],
            "ts": event_ts[index],
            "value": value * mult[inverse],
            "unit": units[inverse],
        },
    )


def _note_touching_kernels(run: Run, kernel_tracks: np.ndarray) -> None:
    """Count (and warn about) consecutive kernels of one track that end and start at the same ns."""
    touching = _touching_kernels(run.kernels, kernel_tracks)
    run.meta.extra["pftrace_touching_kernel_pairs"] = touching
    if touching:
        run.warnings.append(
            f"{touching} pair(s) of consecutive kernels on one track end/start at the same ns: rocprofv3 "
            "moves overlapping kernel times to their midpoint in pftrace only; CSV/JSON/rocpd times are exact"
        )


def _copies_table(a: _Args, copy_names: pd.Series, start: np.ndarray, end: np.ndarray, pid: int, tids: Callable[[_Args], np.ndarray]) -> pd.DataFrame:
    """The memory copy slices as the ``copies`` table (``tids``: the thread id of each, from
    its args or its track)."""
    direction, src_agent, dst_agent = labelled_copies(_direction_labels(copy_names), src_agent=a.col("src_agent"), dst_agent=a.col("dst_agent"))
    return make_table(
        "copies",
        {
            "start": start,
            "end": end,
            "bytes": a.col("copy_bytes"),
            "direction": direction,
            "src_agent": src_agent,
            "dst_agent": dst_agent,
            "stream": a.col("stream_ID", "stream_id"),
            "pid": pid,
            "tid": tids(a),
            "correlation_id": a.col("corr_id"),
            "name": copy_names,
        },
    )


def _build_run(dec: _Decoder, path: Path) -> Run:
    keys = ("type", "track", "ts", "name", "cat")
    if dec.chunks:
        ev = {k: np.concatenate([c[k] for c in dec.chunks]) for k in keys}
    else:
        ev = {k: np.zeros(0, np.int32) for k in keys}
        ev["ts"] = np.zeros(0, np.int64)
    dec.chunks = []
    strings = np.asarray(dec.strings + [""], dtype=object)  # index -1 -> ""
    uuids = list(dec.track_index)  # track index -> uuid (dict keeps insertion order)
    begins, ends, open_b, orphan_e = _pair_slices(ev["type"], ev["track"], ev["ts"])
    run = Run(meta=RunMeta(formats=[FORMAT], tool="rocprofv3", files=[str(path)]))
    run.meta.label = path.name
    run.meta.pid = dec.pids[0] if dec.pids else None
    if len(dec.pids) > 1:
        run.meta.extra["pids"] = list(dec.pids)
    run.meta.extra["pftrace_sizes"] = "grid/workgroup sizes are x*y*z products (stored in grid_x/wg_x, y=z=1)"
    if open_b or orphan_e:
        run.warnings.append(f"{open_b} slice begin(s) without end and {orphan_e} end(s) without begin were dropped")

    track_info = [dec.tracks.get(u, {}) for u in uuids] + [{}]
    track_name = [i.get("name", "") for i in track_info]
    track_tid = np.array([i.get("tid", -1) for i in track_info], dtype=np.int64)

    cat_sid = {name: dec.string_ids.get(name, -2) for name in list(API_CATEGORIES) + ["kernel_dispatch", "memory_copy"]}
    start, end = ev["ts"][begins], ev["ts"][ends]
    cat = ev["cat"][begins]
    names = ev["name"][begins]
    tracks = ev["track"][begins]
    pid = run.meta.pid if run.meta.pid is not None else -1

    def tids(args: _Args, sel) -> np.ndarray:
        tid = args.col("tid")
        return np.where(tid < 0, track_tid[tracks[sel]], tid)

    # API calls (hip/hsa/marker/rccl/... categories)
    api_sel = np.flatnonzero(np.isin(cat, [cat_sid[c] for c in API_CATEGORIES]))
    a = _Args(dec.args[_OTHER], _OTHER, begins[api_sel])
    domain_of = np.array([API_CATEGORIES.get(str(x), "") for x in strings], dtype=object)
    run.api = make_table(
        "api",
        {
            "start": start[api_sel],
            "end": end[api_sel],
            "domain": _categorical(domain_of, cat[api_sel]),
            "name": _categorical(strings, names[api_sel]),
            "pid": pid,
            "tid": tids(a, api_sel),
            "correlation_id": a.col("corr_id"),
        },
    )

    # kernels
    k = np.flatnonzero(cat == cat_sid["kernel_dispatch"])
    a = _Args(dec.args[_KERNEL], _KERNEL, begins[k])
    kt = tracks[k]
    stream_in_name = np.array([_match_int(_STREAM_IN_NAME, t) for t in track_name], dtype=np.int64)
    agent_in_name = np.array([_match_int(_AGENT_IN_NAME, t) for t in track_name], dtype=np.int64)
    stream = a.col("stream_ID", "stream_id")
    stream = np.where(stream < 0, stream_in_name[kt], stream)
    agent = a.col("agent")
    agent = np.where(agent < 0, agent_in_name[kt], agent)
    grid, wg = a.col("grid_size"), a.col("workgroup_size")
    run.kernels = make_table(
        "kernels",
        {
            "start": start[k],
            "end": end[k],
            "agent": agent,
            "queue": a.col("queue"),
            "stream": stream,
            "pid": pid,
            "tid": tids(a, k),
            "correlation_id": a.col("corr_id"),
            "kernel_id": a.col("kernel_id"),
            "name": _categorical(strings, names[k]),
            "grid_x": grid,
            "grid_y": np.where(grid >= 0, 1, -1),
            "grid_z": np.where(grid >= 0, 1, -1),
            "wg_x": wg,
            "wg_y": np.where(wg >= 0, 1, -1),
            "wg_z": np.where(wg >= 0, 1, -1),
            "lds_bytes": a.col("LDS_Block_Size", "group_segment_size"),
            "scratch_bytes": a.col("Scratch_Size", "private_segment_size"),
            "arch_vgpr": a.col("VGPR_Count"),
            "accum_vgpr": a.col("Accum_VGPR_Count"),
            "sgpr": a.col("SGPR_Count"),
        },
    )
    for agent_id in sorted(set(np.unique(agent).tolist()) - {-1}):
        run.agents.append(Agent(id=int(agent_id), type="GPU", extra={"source": "pftrace kernel agent label"}))
    if k.size:
        _note_touching_kernels(run, kt)

    c = np.flatnonzero(cat == cat_sid["memory_copy"])
    run.copies = _copies_table(_Args(dec.args[_COPY], _COPY, begins[c]), _categorical(strings, names[c]), start[c], end[c], pid, lambda a: tids(a, c))
    if dec.counters:
        run.series = _counter_series(dec, ev["track"], ev["ts"], track_info, uuids)
    run.warnings.extend(dec.warnings)
    return run


def _match_int(pattern: re.Pattern, text: str) -> int:
    found = pattern.search(text or "")
    return int(found.group(1)) if found else -1


def _categorical(strings: np.ndarray, ids: np.ndarray):
    """A pandas Categorical of ``strings[ids]`` built from codes (no per-row Python)."""
    if not ids.size:
        return pd.Categorical([])
    present = np.zeros(strings.size, dtype=bool)  # the last slot of ``strings`` serves id -1
    present[ids] = True
    uniq = np.flatnonzero(present)
    if present[-1]:
        uniq = np.r_[-1, uniq[:-1]]  # id -1 first, as np.unique would sort it
    remap = np.zeros(strings.size, dtype=np.int64)
    remap[uniq] = np.arange(uniq.size)
    codes = remap[ids]
    labels = [str(s) for s in strings[uniq]]
    if len(set(labels)) != len(labels):  # "" both as a real name and as "unknown"
        return pd.Categorical(np.asarray(labels, dtype=object)[codes])
    return pd.Categorical.from_codes(codes, categories=labels)


def _direction_labels(names) -> np.ndarray:
    """Direction label from rocprofv3's operation name (MEMORY_COPY_HOST_TO_DEVICE -> HtoD)."""
    names = pd.Categorical(names)
    mapped = []
    for name in names.categories:
        text = str(name).upper()
        mapped.append(next((v for k, v in _COPY_DIRECTION.items() if k in text), "memset" if "MEMSET" in text else "unknown"))
    return np.asarray(mapped + ["unknown"], dtype=object)[names.codes]


def _touching_kernels(kernels, tracks: np.ndarray) -> int:
    """Consecutive kernels on one track where one ends exactly where the next starts.

    rocprofv3's pftrace writer sets ``end[i] = start[i+1] = midpoint`` when kernel i+1 starts
    before kernel i ends on the same queue (generatePerfetto.cpp, "firmware timestamp bug");
    exact equality is the detectable trace of that fix."""
    start = kernels["start"].to_numpy()
    end = kernels["end"].to_numpy()
    order = np.lexsort((start, tracks))
    same = tracks[order][1:] == tracks[order][:-1]
    return int((same & (end[order][:-1] == start[order][1:])).sum())


# --------------------------------------------------------------------------------------
# entry points


def read_trace(path: Path, chunk_bytes: int = CHUNK_BYTES) -> tuple[Run, str | None]:
    """Stream-decode one pftrace file; returns (run, problem) where problem is a one-line
    description of a damaged tail (the complete packets before it are kept)."""
    dec = _Decoder()
    problem = None
    consumed = 0
    with open_binary(path) as fh:
        # one reusable buffer: [incomplete packet carried over | new block | 16 zero bytes]
        store = bytearray(chunk_bytes + 64)
        fill = 0
        eof = False
        while not eof:
            if len(store) - 16 - fill < chunk_bytes:  # a packet longer than a chunk is pending
                bigger = bytearray(max(2 * len(store), fill + chunk_bytes + 64))
                bigger[:fill] = store[:fill]
                store = bigger
            try:
                with memoryview(store) as view:
                    got = fh.readinto(view[fill : fill + chunk_bytes]) or 0
            except (OSError, EOFError) as err:
                problem = f"read error after {consumed} bytes ({err}); kept {dec.packets} complete packets"
                got = 0
            eof = got == 0
            fill += got
            if not fill:
                break
            store[fill : fill + 16] = bytes(16)
            arr = np.frombuffer(store, dtype=np.uint8)
            starts, ends, pos, broken = _frame(arr, fill)
            if starts.size:
                dec.chunk(store, arr, starts, ends)
            del arr
            consumed += pos
            if pos:  # only when packets were taken: a long pending packet is not moved at every block
                store[: fill - pos] = store[pos:fill]
            fill -= pos
            if broken:
                problem = f"not a Trace packet at byte {consumed}; kept {dec.packets} complete packets"
                break
            if problem:
                break
    if fill and problem is None:
        problem = f"truncated: last packet incomplete ({fill} bytes at offset {consumed}); kept {dec.packets} complete packets"
    if dec.packets == 0:
        raise LoadError(problem or "no Trace packets")
    if dec.bad_packets:
        dec.warnings.append(f"{dec.bad_packets} malformed packet(s) or events skipped")
    run = _build_run(dec, path)
    return run, problem


def load(files: list[DetectedFile], issues: IssueSink) -> list[Run]:
    runs = []
    for item in files:
        try:
            run, problem = read_trace(item.path)
        except LoadError as err:
            issues.error(item.path, f"pftrace: {err}")
            continue
        except (OSError, ValueError, IndexError, MemoryError) as err:
            issues.error(item.path, f"pftrace: cannot decode ({type(err).__name__}: {one_line(str(err))})")
            continue
        if problem:
            run.partial = True
            run.warnings.append(f"{item.path.name}: {problem}")
            issues.error(item.path, f"pftrace {problem}")
        runs.append(run)
    return runs
