"""PyTorch profiler (Kineto) chrome trace JSON (``*.json``, ``*.json.gz``, ``*.pt.trace.json[.gz]``).

Format facts: research/formats.md §10 (Kineto ``libkineto/src/output_json.cpp`` and real
CUDA/ROCm traces). One file is one profiled process (one rank): several rank files in a
directory load as several runs.

Mapping into the run model:

* ``cat: kernel`` -> ``kernels``; ``gpu_memcpy``/``gpu_memset`` -> ``copies``;
  ``cuda_runtime``/``cuda_driver`` -> ``api`` with domain ``hip`` for ``hip*`` names and
  ``cuda`` otherwise; ``cuda_sync`` (CUPTI synchronization activities such as
  "Stream Sync", CUDA only) -> ``api`` with domain ``cuda_sync`` so they are not counted
  twice with the ``cudaStreamSynchronize`` runtime call they overlap; those that name the
  cudaEventRecord they wait on ("Stream Wait Event", "Event Sync":
  ``wait_on_cuda_event_record_corr_id``, ``wait_on_stream``) and "Stream Sync" (its
  ``stream``) also -> ``meta.extra["cuda_sync_links"]`` (:func:`sync_links`);
  ``cpu_op``/``user_annotation``/``gpu_user_annotation``/``python_function`` -> ``markers``
  (``source`` = category; pid/tid as written, which for ``gpu_user_annotation`` are the
  device and stream); ``cpu_instant_event`` "[memory]" -> ``allocations`` (and its
  ``Total Allocated``/``Total Reserved`` -> ``series`` tracks "allocated"/"reserved").
* Time: ``ts``/``dur`` are µs on Kineto's clock; we store ``start = ns(ts)``,
  ``end = start + ns(dur)``. Kineto prints µs with 3 decimals derived from integer ns,
  so rounding ``ts`` and ``dur`` separately recovers the exact integers and back-to-back
  events stay back-to-back (rounding ``ts + dur`` could be off by 1 ns). Integer ``ts``
  are multiplied exactly in int64. A float ``ts`` is exact in float64 up to 2**43 µs
  (~102 days); beyond that the run gets a warning.
* Agents: CUDA events carry ``device`` = CUDA device index = ``deviceProperties[i].id``.
  On ROCm (roctracer builds) the ``device``/pid of GPU events is *not* the
  deviceProperties index: single-GPU MI300X traces put kernels on device 2 while
  deviceProperties only has id 0, consistent with the KFD topology node id (CPU nodes
  first). Agent ids are therefore the event ``device`` values; properties are attached
  when every deviceProperties entry is identical, or when the number of distinct devices
  equals the number of entries (then in sorted order); otherwise left empty, with a warning.
* Reading: the file is streamed (gunzipped on the fly) through a sliding text window;
  small top-level keys are decoded whole wherever they appear, and ``traceEvents`` is
  decoded with the C scanner of ``json.JSONDecoder.raw_decode``, a batch of ~64 K
  characters of events per call (falling back to one event per call wherever a batch does
  not parse, which also gives the error messages). Only the fields the run model needs are
  kept, in ``array`` columns per table (float64 µs, int64 ids, int32 string codes), so
  memory grows with the events kept rather than with the file's JSON object graph. Integer
  µs up to 2**53 convert exactly through float64.
* Files of at least PARALLEL_MIN_BYTES of JSON text: ``traceEvents`` is cut into byte
  ranges at event boundaries, decoded by worker processes (fresh interpreters) and this one,
  and merged in file order to exactly the serial result; any failure (bad JSON, a guessed
  boundary that was none) reads the file again serially. gzip workers inflate from the
  start and skip to their range (see :func:`read_events_parallel`).
* A truncated or damaged file is an error, not a partial run: Kineto writes events
  grouped by kind (CPU ops, then GPU activities), so the readable prefix of a cut file can
  lack whole categories (e.g. every kernel) and its totals would be silently wrong.
"""

from __future__ import annotations

import ast
import atexit
import codecs
import dataclasses
import gc
import gzip
import itertools
import json
import os
import pickle
import re
import subprocess
import sys
import weakref
import zlib
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from tui_prof.guard import jsonout
from tui_prof.loaders.base import (
    IssueSink,
    LoadCancelled,
    LoadError,
    Sniffed,
    cancel_event,
    check_cancelled,
    clean_text,
    configured_workers,
    has_surrogate,
    is_gzip,
    labelled_copies,
    one_line,
    open_binary,
    open_regular,
    read_error,
    replaced_warning,
)
from tui_prof.loaders.specs import SPECS
from tui_prof.model import Agent, Run, RunMeta
from tui_prof.model.schema import UNKNOWN, compact_int, concat_tables, make_table

LOADER = SPECS["kineto"]
FORMAT = LOADER.format

_CAT_MARKER = re.compile(rb'"cat"\s*:\s*"(kernel|cuda_runtime|cuda_driver|cpu_op|gpu_memcpy|user_annotation|python_function)"')
_LEGACY_ROCPROF = re.compile(rb'"traceEvents"\s*:\s*\[\s*\{\s*\}')

MARKER_CATS = ("cpu_op", "user_annotation", "gpu_user_annotation", "python_function")
COPY_CATS = ("gpu_memcpy", "gpu_memset")
COPY_DIRECTIONS = ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP")

# ROCm launch calls whose recorded "grid" is already the global size in work-items
# (hipExtModuleLaunchKernel(globalWorkSizeX, ..., localWorkSizeX, ...)); every other
# launch call (and CUPTI on CUDA) records the grid in blocks.
WORK_ITEM_GRID_LAUNCHES = ("hipExtModuleLaunchKernel", "hipHccModuleLaunchKernel")

VERSION_KEYS = (
    "cuda_runtime_version",
    "cuda_driver_version",
    "cupti_version",
    "hip_runtime_version",
    "hip_driver_version",
    "roctracer_version",
    "rocprofiler-sdk_version",
)

MAX_ABS_US = float(2**62) / 1000.0
"""Largest |ts| or |dur| in µs kept: start + dur in ns then fits int64."""

FLOAT_EXACT_LIMIT_US = float(2**43)
"""Below this a float µs value with 3 decimals converts to the exact integer ns."""


def sniff(path: Path, head: bytes) -> Sniffed | None:
    """A JSON object with ``traceEvents`` plus a Kineto marker (schemaVersion, deviceProperties
    or a Kineto event category); not rocprofv3 JSON, not legacy rocprof v1 ``results.json``."""
    text = head.lstrip()
    if not text.startswith(b"{"):
        return None
    if b'"rocprofiler-sdk-tool"' in head or _LEGACY_ROCPROF.search(head) or b'"otherData"' in head:
        return None
    has_events = b'"traceEvents"' in head
    has_schema = b'"schemaVersion"' in head
    has_props = b'"deviceProperties"' in head
    if has_events and (has_schema or has_props or _CAT_MARKER.search(head)):
        return Sniffed("trace", group=str(path))
    if has_schema and has_props:  # traceEvents beyond the sniffed head (large metadata)
        return Sniffed("trace", group=str(path))
    return None


def load(files, issues: IssueSink) -> list[Run]:
    runs = []
    for item in files:
        try:
            runs.extend(load_runs(item.path))
        except LoadError as err:
            issues.error(item.path, str(err))
        except MemoryError:
            issues.error(item.path, "out of memory while reading the Kineto trace")
        except Exception as err:  # one file's unforeseen failure must not fail its siblings
            issues.error(item.path, f"cannot load Kineto trace ({type(err).__name__}: {one_line(str(err))})")
    return runs


# --------------------------------------------------------------------------- streaming reader

CHUNK_BYTES = 4 << 20
"""Bytes read (and gunzipped) per step."""
LOW_WATER = 1 << 20
"""Characters kept ahead of the parse position before an event is decoded."""
ERROR_MARGIN = 1024
"""A JSON error further than this before the window's end is bad JSON, not a cut window."""
LONG_STRING = 64 << 20
"""An unterminated string this long (characters) is bad JSON, not a cut window."""

_WS = re.compile(r"[ \t\n\r]*")
# The whitespace pattern matches (possibly empty) at every position: never None.
_ws_match = cast("Callable[[str, int], re.Match[str]]", _WS.match)
_EVENT_SEPARATOR = re.compile(r"\}[ \t\n\r]*,[ \t\n\r]*\{")
BATCH_CHARS = 64 << 10
"""Characters of events decoded by one scanner call in :func:`read_events`."""


class TextWindow:
    """A sliding window of decoded text over a (gunzipped) byte stream.

    ``buf[pos:]`` is the unparsed text; text before ``pos`` is dropped when the window is
    refilled, so memory holds one chunk plus the event being decoded, never the file.
    Values are decoded with the C scanner of :class:`json.JSONDecoder` (``raw_decode``).
    """

    def __init__(self, fh):
        self.fh = fh
        self.utf8 = codecs.getincrementaldecoder("utf-8-sig")()
        self.decode = json.JSONDecoder().raw_decode
        self.buf = ""
        self.pos = 0
        self.lines = 0  # newlines in the dropped text (for error messages)
        self.eof = False
        self.read_bytes = 0  # bytes read from ``fh`` so far

    def byte_offset(self, at: int) -> int:
        """Offset in the byte stream of text position ``at`` (counted from where ``fh`` started)."""
        pending = len(self.utf8.getstate()[0])  # bytes of a character cut by the chunk end
        return self.read_bytes - pending - len(self.buf[at:].encode("utf-8"))

    def more(self) -> bool:
        """Drop parsed text and append the next chunk; False when the file is exhausted."""
        while not self.eof:
            check_cancelled()
            data = self.fh.read(CHUNK_BYTES)
            self.read_bytes += len(data)
            text = self.utf8.decode(data, final=not data)
            self.eof = not data
            if text or self.pos:
                self.lines += self.buf.count("\n", 0, self.pos)
                self.buf = self.buf[self.pos :] + text
                self.pos = 0
            if text:
                return True
        return False

    def ensure(self, n: int) -> None:
        """At least ``n`` characters after ``pos`` unless the file ends sooner."""
        while len(self.buf) - self.pos < n and self.more():
            pass

    def peek(self) -> str:
        """Skip whitespace; the next character, "" at end of file."""
        while True:
            self.pos = _ws_match(self.buf, self.pos).end()
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def expect(self, allowed: str, where: str) -> str:
        c = self.peek()
        if c == "" or c not in allowed:
            found = "end of file" if c == "" else repr(c)
            raise LoadError(f"not valid JSON (expected one of {allowed!r} {where}, found {found} at line {self.line()}); truncated or damaged file?")
        self.pos += 1
        return c

    def value(self):
        """Decode the JSON value at ``pos`` (after :meth:`peek`), growing the window as needed."""
        while True:
            try:
                obj, self.pos = self.decode(self.buf, self.pos)
                return obj
            except json.JSONDecodeError as err:
                if not (self.cut(err) and self.more()):
                    raise self.invalid(err) from None

    def cut(self, err: json.JSONDecodeError) -> bool:
        """Could ``err`` come from the window ending inside the value (not from bad JSON)?"""
        if err.msg.startswith("Unterminated string"):
            return len(self.buf) - err.pos < LONG_STRING
        return err.pos >= len(self.buf) - ERROR_MARGIN

    def line(self, at: int | None = None) -> int:
        return self.lines + self.buf.count("\n", 0, self.pos if at is None else at) + 1

    def invalid(self, err: json.JSONDecodeError) -> LoadError:
        return LoadError(f"not valid JSON ({err.msg} at line {self.line(err.pos)}); truncated or damaged file?")


class Malformed(TypeError):
    """An event field of the wrong JSON type; the event is skipped and counted."""


def _text_key(value) -> str:
    """Event name as stored: None -> "", numbers -> str(); objects, lists and booleans are
    malformed (raise :class:`Malformed`)."""
    if value is None:
        return ""
    if type(value) in (int, float):
        return str(value)
    raise Malformed("name")


def _num(value) -> float:
    """A µs value that is not a JSON number: numeric strings parse, anything else is NaN
    (the row is dropped as malformed after collection, see :func:`drop_malformed`)."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return float("nan")
    return float("nan")


def _int(value) -> int:
    """An id/size that is not a plain JSON integer: integral floats and numeric strings
    convert; None, other strings, 2.5 and values out of int64 range are UNKNOWN; objects
    and lists are malformed (raise :class:`Malformed`)."""
    if isinstance(value, (list, dict)):
        raise Malformed("id")
    if isinstance(value, str):
        try:
            value = float(value) if not value.strip().lstrip("-").isdigit() else int(value)
        except ValueError:
            return UNKNOWN
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and -(2**63) <= value < 2**63:
        return value
    return UNKNOWN


def _triple(arr, value) -> None:
    """Append grid/block [x, y, z] to an int64 array: non-integers and missing entries are UNKNOWN."""
    if type(value) is list and len(value) == 3:
        try:
            arr.extend(value)
            return
        except (TypeError, OverflowError):
            del arr[len(arr) - len(arr) % 3 :]
    items = value[:3] if isinstance(value, list) else []
    for j in range(3):
        x = items[j] if j < len(items) else None
        arr.append(x if isinstance(x, int) and -(2**63) <= x < 2**63 else UNKNOWN)


DTYPE_BYTES = {
    "Bool": 1,
    "Byte": 1,
    "Char": 1,
    "Short": 2,
    "Int": 4,
    "Long": 8,
    "Half": 2,
    "BFloat16": 2,
    "Float": 4,
    "Double": 8,
    "ComplexHalf": 4,
    "ComplexFloat": 8,
    "ComplexDouble": 16,
    "QInt8": 1,
    "QUInt8": 1,
    "QInt32": 4,
    "UInt16": 2,
    "UInt32": 4,
    "UInt64": 8,
    "Float8_e5m2": 1,
    "Float8_e4m3fn": 1,
    "Float8_e5m2fnuz": 1,
    "Float8_e4m3fnuz": 1,
    "Float8_e8m0fnu": 1,
}
"""Bytes per element of the ``dtype`` names PyTorch writes in a collective's args
(``c10::toString(ScalarType)``); a dtype not listed leaves the message size unknown."""

MAX_GROUP = int(np.iinfo(np.int16).max)


def collective_args(args: dict) -> tuple[str, int, int]:
    """(collective name, message bytes, group size) from the args of an NCCL kernel or a
    ``record_param_comms`` op: bytes = max(In, Out msg nelems) × the dtype's size, which is
    NCCL-tests' message size S for every collective (AllGather's output, ReduceScatter's
    input, the buffer otherwise). A value that is missing or of the wrong type is unknown
    ("" / -1); never raises (a malformed argument must not cost the kernel)."""
    name = args.get("Collective name")
    name = name if type(name) is str else ""
    nelems = [v for v in (args.get("In msg nelems"), args.get("Out msg nelems")) if type(v) is int and 0 <= v < 2**62]
    dtype = args.get("dtype")
    size = DTYPE_BYTES.get(dtype) if isinstance(dtype, str) else None
    nbytes = max(nelems) * size if nelems and size is not None and max(nelems) * size < 2**63 else UNKNOWN
    group = args.get("Group size")
    ranks = group if type(group) is int and 0 < group <= MAX_GROUP else UNKNOWN
    return name, nbytes, ranks


class Columns:
    """Compact per-table columns: ``array`` of float64 µs (``d``), int64 (``q``) and int32
    string codes (``i``), plus a string -> code dict per string column."""

    if TYPE_CHECKING:  # the columns are attributes named at construction

        def __getattr__(self, name: str) -> array[Any]: ...

    def __init__(
        self,
        floats: tuple[str, ...] = (),
        ints: tuple[str, ...] = (),
        codes: tuple[str, ...] = (),
        triples: tuple[str, ...] = (),
    ) -> None:
        self.widths: dict[str, int] = {}
        for name in floats:
            setattr(self, name, array("d"))
            self.widths[name] = 1
        for name in ints:
            setattr(self, name, array("q"))
            self.widths[name] = 3 if name in triples else 1
        for name in codes:
            setattr(self, name, array("i"))
            self.widths[name] = 1
        self.strings: dict[str, dict[str, int]] = defaultdict(dict)

    def rollback(self) -> None:
        """Drop a partly appended row (after an event failed midway): every column is cut
        to the number of complete rows."""
        rows = min(len(getattr(self, c)) // w for c, w in self.widths.items())
        for c, w in self.widths.items():
            del getattr(self, c)[rows * w :]

    def drop_malformed(self) -> int:
        """Drop rows whose ``ts``/``dur`` is not a usable µs number (NaN from :func:`_num`,
        ±inf, or beyond ±2**62 ns); returns how many. Vectorised, after collection."""
        if not len(getattr(self, "ts", ())):
            return 0
        ok = np.abs(as_float64(self.ts)) < MAX_ABS_US  # False for NaN
        if "dur" in self.widths:
            ok &= np.abs(as_float64(self.dur)) < MAX_ABS_US
        bad = int(len(ok) - np.count_nonzero(ok))
        if not bad:
            return 0
        for c, w in self.widths.items():
            arr = getattr(self, c)
            kept = np.frombuffer(arr, dtype=arr.typecode).reshape(-1, w)[ok].reshape(-1)
            setattr(self, c, array(arr.typecode, kept.tobytes()))
        for c, lookup in self.strings.items():  # forget strings only dropped rows used
            codes = np.frombuffer(getattr(self, c), dtype=np.int32) if len(getattr(self, c)) else np.array([], dtype=np.int32)
            used = np.unique(codes)
            names = list(lookup)
            recode = np.full(len(names), -1, dtype=np.int32)
            recode[used] = np.arange(len(used), dtype=np.int32)
            setattr(self, c, array("i", recode[codes].astype(np.int32).tobytes()))
            self.strings[c] = {names[i]: j for j, i in enumerate(used.tolist())}
        return bad

    def categorical(self, column: str) -> pd.Categorical:
        """String column as a Categorical with sorted categories (as ``astype("category")``)."""
        lookup = self.strings[column]
        names = np.array(list(lookup), dtype=object)
        order = np.argsort(names, kind="stable") if len(names) else np.array([], dtype=np.int64)
        recode = np.empty(len(names), dtype=np.int32)
        recode[order] = np.arange(len(names), dtype=np.int32)
        codes = np.frombuffer(getattr(self, column), dtype=np.int32)
        return pd.Categorical.from_codes(recode[codes] if len(codes) else codes, categories=list(names[order]))

    def subset(self, rows: np.ndarray) -> Columns:
        """A copy holding only ``rows`` (ascending row numbers); each string column keeps
        the strings those rows use, in first-seen order."""
        out = Columns()
        out.widths = dict(self.widths)
        for c, w in self.widths.items():
            arr = getattr(self, c)
            values = np.frombuffer(arr, dtype=arr.typecode).reshape(-1, w)[rows].reshape(-1) if len(arr) else np.array([], dtype=arr.typecode)
            setattr(out, c, array(arr.typecode, values.tobytes()))
        for c, lookup in self.strings.items():
            codes = np.frombuffer(getattr(out, c), dtype=np.int32) if len(getattr(out, c)) else np.array([], dtype=np.int32)
            names = list(lookup)
            used = np.unique(codes)
            recode = np.full(len(names), -1, dtype=np.int32)
            recode[used] = np.arange(len(used), dtype=np.int32)
            setattr(out, c, array("i", recode[codes].astype(np.int32).tobytes()))
            out.strings[c] = {names[i]: j for j, i in enumerate(used.tolist())}
        return out

    def strings_of(self, column: str) -> np.ndarray:
        """Per-row object array of a string column."""
        names = np.array(list(self.strings[column]) or [""], dtype=object)
        return names[np.frombuffer(getattr(self, column), dtype=np.int32)]


def as_int64(arr) -> np.ndarray:
    return np.frombuffer(arr, dtype=np.int64) if len(arr) else np.array([], dtype=np.int64)


def as_float64(arr) -> np.ndarray:
    return np.frombuffer(arr, dtype=np.float64) if len(arr) else np.array([], dtype=np.float64)


# category codes within the tables that mix categories (row order = this order, then file order)
API_ORDER = ("cuda_runtime", "cuda_driver", "cuda_sync")
COPY_ORDER = COPY_CATS
MARKER_CODE: dict[object, int] = {cat: i for i, cat in enumerate(MARKER_CATS)}  # looked up with any JSON value
API_CODE = {cat: i for i, cat in enumerate(API_ORDER)}
COPY_CODE = {cat: i for i, cat in enumerate(COPY_ORDER)}


class Events:
    """What a Kineto trace contributes to the run, kept as compact columns while streaming."""

    def __init__(self):
        self.top: dict = {}  # every top-level key except traceEvents
        # proc: the event's own pid (a tuiprof export writes each process's events under its pid)
        # coll/coll_bytes/coll_ranks: a collective kernel's "Collective name", message bytes and "Group size" (see collective_args)
        self.kernels = Columns(
            ("ts", "dur"),
            ("device", "stream", "corr", "grid", "block", "shared", "ext", "regs", "coll_bytes", "coll_ranks", "proc"),
            ("name", "coll"),
            ("grid", "block"),
        )
        self.api = Columns(("ts", "dur"), ("pid", "tid", "corr", "ext", "proc"), ("name", "cat"))
        self.launch_shared = Columns((), ("corr", "shared"))  # runtime calls that record "shared memory"
        # cuda_sync events naming the cudaEventRecord they wait on (see sync_links): their
        # correlation, device, waiting stream (-1: the host waits), the event's stream and record call
        self.sync_args = Columns((), ("corr", "device", "stream", "wait_stream", "record_corr"))
        self.copies = Columns(("ts", "dur"), ("device", "stream", "corr", "bytes", "ext", "proc"), ("name", "cat", "kind"))
        # ext: "External id"; dims/types/concrete: repr() of cpu_op "Input Dims"/"Input type"/"Concrete Inputs" (see marker_inputs)
        self.markers = Columns(("ts", "dur"), ("pid", "tid", "ext"), ("name", "cat", "dims", "types", "concrete"))
        self.memory = Columns(("ts",), ("bytes", "dev_type", "dev_id", "addr", "pid", "tid", "total_allocated", "total_reserved"))
        self.flows: Counter = Counter()
        self.comm_ops: dict[int, tuple[str, int, int]] = {}  # record_param_comms External id -> collective_args()
        self.api_cats: dict[str, int] = {}  # "api_<domain>" category -> its api.cat code (after API_ORDER)
        self.process_labels: dict = {}
        self.first_ts: dict[str, object] = {}  # category -> raw ts of its first event
        self.count = 0  # traceEvents entries read
        self.malformed = 0  # events skipped for a field of the wrong JSON type

    def tables(self) -> tuple[Columns, ...]:
        return (self.kernels, self.api, self.launch_shared, self.copies, self.markers, self.memory, self.sync_args)


def read_trace(path: Path) -> Events:
    """Stream the (possibly gzipped) trace; raise LoadError with a one-line reason.

    A big file (plain or gzip) is first read in parallel pieces (:func:`read_events_parallel`); if that
    fails for any reason (damaged file, a piece boundary that was not one), the file is read
    again serially, which gives the result or the error of a serial read."""
    pieces = parallel_pieces(path)
    if pieces > 1:
        try:
            return read_trace_with(path, pieces)
        except Exception:  # the serial read below decides what is wrong
            pass
    return read_trace_with(path, 1)


def read_trace_with(path: Path, pieces: int) -> Events:
    """:func:`read_trace` with ``traceEvents`` split into at most ``pieces`` pieces."""
    try:
        with open_binary(path) as fh:
            return parse_trace(TextWindow(fh), path, pieces)
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise LoadError(f"damaged or truncated gzip data ({one_line(str(err))})") from err
    except UnicodeDecodeError:
        raise LoadError("not UTF-8 JSON text") from None
    except OSError as err:
        raise LoadError(read_error(err)) from err
    except RecursionError:
        raise LoadError("JSON nested too deeply") from None


def parse_trace(win: TextWindow, path: Path | None = None, pieces: int = 1) -> Events:
    """Top-level object: small keys decoded whole, ``traceEvents`` streamed event by event.
    Keys may come in any order; the rest of the file is read to the end (gzip CRC check).
    ``pieces`` > 1: the first ``traceEvents`` list is read by :func:`read_events_parallel`
    (``path``: the file ``win`` reads)."""
    ev = Events()
    if win.peek() != "{":
        raise LoadError("not a Kineto trace: top level is not a JSON object")
    win.pos += 1
    seen_events = False
    if win.peek() == "}":
        win.pos += 1
    else:
        while True:
            if win.peek() != '"':
                win.expect('"', "for a key of the top-level object")
            key = win.value()
            win.expect(":", f"after top-level key {key!r}")
            if win.peek() == "[" and key == "traceEvents":
                win.pos += 1
                if pieces > 1 and path is not None and not seen_events:
                    win = read_events_parallel(win, ev, path, pieces)
                else:
                    read_events(win, ev)
                seen_events = True
            else:
                ev.top[key] = win.value()
            if win.expect(",}", "between top-level keys") == "}":
                break
    if win.peek() != "":
        raise LoadError(f"not valid JSON (extra data after the top-level object at line {win.line()})")
    if not seen_events:
        raise LoadError("not a Kineto trace: no traceEvents list")
    return ev


def _kernel_event(ev: Events, e: dict, name: str, ts: Any) -> Columns:
    """The columns of a ``kernel`` event but ts/dur (appended by the caller); returns its table."""
    k = ev.kernels
    a = e.get("args") or {}
    for arr, v in (
        (k.device, a.get("device", e.get("pid"))),
        (k.stream, a.get("stream", e.get("tid"))),
        (k.corr, a.get("correlation")),
        (k.shared, a.get("shared memory")),
        (k.ext, a.get("External id", UNKNOWN)),
        (k.regs, a.get("registers per thread", UNKNOWN)),
        (k.proc, e.get("pid")),
    ):
        try:
            arr.append(v)
        except (TypeError, OverflowError):
            arr.append(_int(v))
    _triple(k.grid, a.get("grid"))
    _triple(k.block, a.get("block"))
    if "Collective name" in a:
        coll_name, coll_bytes, coll_ranks = collective_args(a)
    else:
        coll_name, coll_bytes, coll_ranks = "", UNKNOWN, UNKNOWN
    k_colls = k.strings["coll"]
    k.coll.append(k_colls.setdefault(coll_name, len(k_colls)))
    k.coll_bytes.append(coll_bytes)
    k.coll_ranks.append(coll_ranks)
    k_names = k.strings["name"]
    k.name.append(k_names.setdefault(name, len(k_names)))
    if "kernel" not in ev.first_ts:
        ev.first_ts["kernel"] = ts
    return k


def _api_event(ev: Events, e: dict, cat: str, name: str, ts: Any) -> Columns:
    """The columns of a host API event (``cuda_runtime``, ``cuda_driver``, ...) but ts/dur."""
    api, lds = ev.api, ev.launch_shared
    a = e.get("args") or {}
    corr = a.get("correlation")
    pid: Any
    tid: Any
    if cat == "cuda_sync":  # written on the device/stream row; no host thread
        pid = tid = UNKNOWN
        if type(a.get("wait_on_cuda_event_record_corr_id")) is int and a["wait_on_cuda_event_record_corr_id"] >= 0:
            _sync_args(ev.sync_args, a, corr)
        elif a.get("cuda_sync_kind") == "Stream Sync" and type(a.get("stream")) is int and a["stream"] >= 0:  # the host waits for one stream
            _sync_args(
                ev.sync_args,
                {"device": a.get("device", UNKNOWN), "stream": UNKNOWN, "wait_on_stream": a["stream"], "wait_on_cuda_event_record_corr_id": UNKNOWN},
                corr,
            )
    else:
        pid, tid = e.get("pid"), e.get("tid")
    for arr, v in ((api.pid, pid), (api.tid, tid), (api.corr, corr), (api.ext, a.get("External id", UNKNOWN)), (api.proc, e.get("pid"))):
        try:
            arr.append(v)
        except (TypeError, OverflowError):
            arr.append(_int(v))
    if cat == "cuda_runtime" and "shared memory" in a:
        v = a["shared memory"]
        try:
            lds.shared.append(v)
        except (TypeError, OverflowError):
            lds.shared.append(_int(v))
        lds.corr.append(api.corr[-1])
    code = API_CODE.get(cat)
    if code is None:  # "api_<domain>" (tuiprof export): a code of this trace's own after API_ORDER
        code = ev.api_cats.setdefault(cat, len(API_ORDER) + len(ev.api_cats))
    api.cat.append(code)
    api_names = api.strings["name"]
    api.name.append(api_names.setdefault(name, len(api_names)))
    if cat not in ev.first_ts:
        ev.first_ts[cat] = ts
    return api


def _sync_args(sa: Columns, a: dict, corr: Any) -> None:
    """The wait of a ``cuda_sync`` event (Stream Wait Event, Event Sync naming its
    cudaEventRecord; Stream Sync: record -1); a row with a non-integer field is not kept."""
    values = (corr, a.get("device", UNKNOWN), a.get("stream", UNKNOWN), a.get("wait_on_stream", UNKNOWN), a["wait_on_cuda_event_record_corr_id"])
    if all(type(v) is int and -(2**62) < v < 2**62 for v in values):
        for arr, v in zip((sa.corr, sa.device, sa.stream, sa.wait_stream, sa.record_corr), values, strict=True):
            arr.append(v)


def sync_links(sa: Columns) -> dict[str, list[int]]:
    """The ``cuda_sync`` event waits as ``meta.extra["cuda_sync_links"]``: per wait, the
    correlation id of the runtime call that waited (cudaStreamWaitEvent: its ``stream``
    waits on the GPU; cudaEventSynchronize, cudaStreamSynchronize: ``stream`` -1, the host
    waits), the ``device``, the stream the event was recorded on (a Stream Sync: the stream
    synchronised) and the correlation id of that cudaEventRecord (-1 for a Stream Sync)
    (analysis.streamwaits turns them into cross-stream and synchronisation edges)."""
    columns = ("correlation", "device", "stream", "wait_on_stream", "record_correlation")
    arrays = (sa.corr, sa.device, sa.stream, sa.wait_stream, sa.record_corr)
    return {name: as_int64(arr).tolist() for name, arr in zip(columns, arrays, strict=True)}


def _copy_event(ev: Events, e: dict, cat: str, name: str) -> Columns:
    """The columns of a memcpy/memset event but ts/dur."""
    cp = ev.copies
    a = e.get("args") or {}
    kind = a.get("kind")
    for arr, v in (
        (cp.device, a.get("device", e.get("pid"))),
        (cp.stream, a.get("stream", e.get("tid"))),
        (cp.corr, a.get("correlation")),
        (cp.bytes, a.get("bytes")),
        (cp.ext, a.get("External id", UNKNOWN)),
        (cp.proc, e.get("pid")),
    ):
        try:
            arr.append(v)
        except (TypeError, OverflowError):
            arr.append(_int(v))
    cp.cat.append(COPY_CODE[cat])
    cp_names, cp_kinds = cp.strings["name"], cp.strings["kind"]
    cp.name.append(cp_names.setdefault(name, len(cp_names)))
    cp.kind.append(cp_kinds.setdefault(kind if kind in COPY_DIRECTIONS else "", len(cp_kinds)))
    return cp


def _memory_event(ev: Events, e: dict) -> None:
    """A ``[memory]`` instant event (the allocator's record of one allocation or free)."""
    mem = ev.memory
    a = e.get("args") or {}
    for arr, v in (
        (mem.bytes, a.get("Bytes")),
        (mem.dev_type, a.get("Device Type")),
        (mem.dev_id, a.get("Device Id")),
        (mem.addr, a.get("Addr")),
        (mem.pid, e.get("pid")),
        (mem.tid, e.get("tid")),
        (mem.total_allocated, a.get("Total Allocated")),
        (mem.total_reserved, a.get("Total Reserved")),
    ):
        try:
            arr.append(v)
        except (TypeError, OverflowError):
            arr.append(_int(v))
    ts = e["ts"]
    try:
        mem.ts.append(ts)
    except (TypeError, OverflowError):
        mem.ts.append(_num(ts))


def _other_phase(ev: Events, e: dict, ph: Any) -> None:
    """``[memory]`` instants and the process labels."""
    if ph == "i":
        if e.get("cat") == "cpu_instant_event" and "ts" in e and e.get("name") == "[memory]":
            _memory_event(ev, e)
    elif ph == "M" and e.get("name") == "process_labels":
        ev.process_labels[e.get("pid")] = (e.get("args") or {}).get("labels")


def _take_events(ev: Events, batch: Any) -> None:
    """Append the decoded events of ``batch`` to ``ev``'s columns. Markers (most events of a
    real trace) are appended here, inline; a failing event is skipped, counted and its
    partial row rolled back."""
    mk = ev.markers
    mk_names, mk_dim_codes, mk_type_codes = mk.strings["name"], mk.strings["dims"], mk.strings["types"]
    mk_concrete_codes = mk.strings["concrete"]
    mk_cat, mk_name, mk_ts, mk_dur, mk_pid, mk_tid = mk.cat.append, mk.name.append, mk.ts.append, mk.dur.append, mk.pid.append, mk.tid.append
    mk_ext, mk_dims, mk_types, mk_concrete = mk.ext.append, mk.dims.append, mk.types.append, mk.concrete.append
    comm_ops, flows, marker_code = ev.comm_ops, ev.flows, MARKER_CODE.get
    for e in batch:
        # Fields that can fail (unhashable cat/pid, non-object args, object/list ids or names)
        # are read before the first append of a row; ts/dur never fail (bad ones become NaN and
        # the row is dropped after collection).
        if type(e) is not dict:
            continue
        try:
            ph = e.get("ph")
            if ph != "X" or "ts" not in e:
                if ph == "s" or ph == "f":
                    flows[(e.get("cat"), ph)] += 1
                else:
                    _other_phase(ev, e, ph)
                continue
            cat = e.get("cat")
            ts = e["ts"]
            dur = e.get("dur", 0)
            name = e.get("name", "")
            if type(name) is not str:
                name = _text_key(name)
            mc = marker_code(cat)  # TypeError when cat is unhashable
            if mc is None:  # a kernel, a host API call or a copy (other events are ignored)
                if cat == "kernel":
                    t = _kernel_event(ev, e, name, ts)
                elif cat in API_CODE:
                    t = _api_event(ev, e, cat, name, ts)
                elif cat in COPY_CODE:
                    t = _copy_event(ev, e, cat, name)
                elif type(cat) is str and cat.startswith("api_"):  # a tuiprof export's other API domains
                    t = _api_event(ev, e, cat, name, ts)
                else:
                    continue
                try:
                    t.ts.append(ts)
                except (TypeError, OverflowError):
                    t.ts.append(_num(ts))
                try:
                    t.dur.append(dur)
                except (TypeError, OverflowError):
                    t.dur.append(_num(dur))
                continue
            v = e.get("pid")
            try:
                mk_pid(v)
            except (TypeError, OverflowError):
                mk_pid(_int(v))
            v = e.get("tid")
            try:
                mk_tid(v)
            except (TypeError, OverflowError):
                mk_tid(_int(v))
            mk_cat(mc)
            code = mk_names.get(name)
            if code is None:
                code = mk_names[name] = len(mk_names)
            mk_name(code)
            try:
                mk_ts(ts)
            except (TypeError, OverflowError):
                mk_ts(_num(ts))
            try:
                mk_dur(dur)
            except (TypeError, OverflowError):
                mk_dur(_num(dur))
            a = e.get("args")
            if type(a) is dict and a:  # the operator's External id and record_shapes inputs
                v = a.get("External id", UNKNOWN)
                try:
                    mk_ext(v)
                except (TypeError, OverflowError):
                    mk_ext(UNKNOWN if isinstance(v, (list, dict)) else _int(v))
                v = a.get("Input Dims")
                mk_dims(mk_dim_codes.setdefault("" if v is None else repr(v), len(mk_dim_codes)))
                v = a.get("Input type")
                mk_types(mk_type_codes.setdefault("" if v is None else repr(v), len(mk_type_codes)))
                v = a.get("Concrete Inputs")  # the scalar arguments (stride, padding, is_causal) the FLOPs formulas read
                mk_concrete(mk_concrete_codes.setdefault("" if v is None else repr(v), len(mk_concrete_codes)))
                if name == "record_param_comms" and "Collective name" in a:
                    coll = collective_args(a)
                    if coll[0] and mk.ext[-1] != UNKNOWN:
                        comm_ops[mk.ext[-1]] = coll
            else:
                mk_ext(UNKNOWN)
                mk_dims(mk_dim_codes.setdefault("", len(mk_dim_codes)))
                mk_types(mk_type_codes.setdefault("", len(mk_type_codes)))
                mk_concrete(mk_concrete_codes.setdefault("", len(mk_concrete_codes)))
        except (TypeError, AttributeError):  # unhashable cat/pid, args not an object, Malformed
            ev.malformed += 1
            for table in ev.tables():
                table.rollback()


def _next_batch(win: TextWindow, pos: int, retry_at: int) -> tuple[Any, int, int]:
    """(events, position after them or -1, retry_at): a batch of events (a run of about
    BATCH_CHARS up to a "}, {" separator, decoded as one JSON array: fewer scanner calls,
    shared key strings), or None when none is tried at ``pos`` or it does not parse (the cut
    fell inside a string, bad JSON: the caller reads one event; no batch is tried again
    before the returned ``retry_at``). A batch that parses is exactly the events a
    one-by-one read gives there."""
    if pos < retry_at:
        return None, -1, retry_at
    buf = win.buf
    cut = _EVENT_SEPARATOR.search(buf, pos + BATCH_CHARS)
    if cut is None:
        return None, -1, retry_at
    text = "[" + buf[pos : cut.start() + 1] + "]"
    try:
        batch, end = win.decode(text)
        if end == len(text):
            return batch, cut.end() - 1, retry_at  # after: the "{" of the next event
    except (json.JSONDecodeError, RecursionError):
        pass
    return None, -1, cut.end()


def read_events(win: TextWindow, ev: Events, piece: bool = False) -> None:
    """Decode the ``traceEvents`` array (in batches of events, :func:`_next_batch`), keeping
    only the fields the run model needs in ``ev``'s columns (no event dict outlives its batch).

    ``piece``: ``win`` holds a byte range of the array that starts at an event and ends
    right after the ``,`` (and whitespace) of its last event; reaching that end is success,
    anything else (an event cut by the range end, the array's ``]``) raises LoadError."""
    decode, ws = win.decode, _ws_match
    count = 0
    if win.peek() == "]":
        win.pos += 1
        return
    buf, pos = win.buf, win.pos
    retry_at = 0  # no batch is tried before this position (one failed up to there)
    cancel = cancel_event()
    while True:
        if cancel is not None and cancel.is_set():  # once per batch of events: the load was cancelled
            raise LoadCancelled()
        batch, after, retry_at = _next_batch(win, pos, retry_at)
        if batch is None:
            try:
                e, pos = decode(buf, pos)
            except json.JSONDecodeError as err:
                win.pos = pos
                if not (win.cut(err) and win.more()):
                    raise win.invalid(err) from None
                buf, pos = win.buf, win.pos
                retry_at = 0
                continue
            batch = (e,)
        count += len(batch)
        _take_events(ev, batch)
        if after >= 0:
            pos = after
            if len(buf) - pos < LOW_WATER and not win.eof:
                win.pos = pos
                win.ensure(LOW_WATER)
                buf, pos = win.buf, win.pos
                retry_at = 0
            continue
        # separator: "," then the next event, or "]"
        if len(buf) - pos < LOW_WATER and not win.eof:
            win.pos = pos
            win.ensure(LOW_WATER)
            buf, pos = win.buf, win.pos
            retry_at = 0
        pos = ws(buf, pos).end()
        c = buf[pos : pos + 1]
        if c == ",":
            pos = ws(buf, pos + 1).end()
            if pos >= len(buf):  # only at end of file: the array is cut after a comma
                win.pos = pos
                win.ensure(1)
                buf, pos = win.buf, win.pos
                retry_at = 0
                if piece and pos >= len(buf):  # the piece ends exactly before an event
                    ev.count = count
                    return
            continue
        win.pos = pos
        ev.count = count
        if c == "]" and not piece:
            win.pos += 1
            return
        found = "end of file" if c == "" else repr(c)
        raise LoadError(
            f"not valid JSON (traceEvents cut or damaged after {count} events: expected ',' or ']', "
            f"found {found} at line {win.line()}); truncated or damaged file?"
        )


# --------------------------------------------------------------------------- parallel reading

PARALLEL_MIN_BYTES = 64 << 20
"""Files with at least this many bytes of JSON text (gzip: inflated) are read in parallel pieces."""
PIECE_MIN_BYTES = 16 << 20
"""Smallest piece worth a worker process (bytes)."""
PROBE_BYTES = 1 << 20
"""Bytes searched for a piece boundary after each split point."""
WORKER_START_BYTES = 16 << 20
"""Bytes this process decodes while a worker starts (interpreter + imports, ~0.4 s): each
worker's piece is that much smaller than this process's own (the last) piece."""

_BOUNDARY = re.compile(rb"\}[ \t\n\r]*,[ \t\n\r]*\{")


def parallel_pieces(path: Path) -> int:
    """How many pieces to read ``path``'s events in: 1 (serial) for files under
    PARALLEL_MIN_BYTES (gzip: inflated size), else ``TUIPROF_LOAD_WORKERS`` (as for
    directories, see loaders/detect.py) or the number of CPUs (at most 8), bounded so each
    piece has at least PIECE_MIN_BYTES."""
    try:
        size = text_size(path)
    except OSError:
        return 1
    if size < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(configured_workers(), size // max(1, PIECE_MIN_BYTES)))


def text_size(path: Path) -> int:
    """Bytes of JSON text: the file size, or for gzip the size its trailer records (exact
    for one member under 4 GiB; only a guess for split points, never trusted for data)."""
    if not is_gzip(path):
        return path.stat().st_size
    with open_regular(path) as fh:
        fh.seek(-4, os.SEEK_END)
        return int.from_bytes(fh.read(4), "little")


def find_boundary(data: bytes, at: int, limit: int) -> int | None:
    """Offset (in ``[at, limit)``) of a ``{`` in ``data`` (the bytes from offset ``at``)
    that looks like the start of an event: it follows ``}`` ``,`` and decodes to an object
    with "ph" followed by ``,`` or ``]``. A guess only: :func:`read_events_parallel`
    verifies it (the previous piece must end exactly there). None when none is found."""
    decode = json.JSONDecoder().raw_decode
    for tries, match in enumerate(_BOUNDARY.finditer(data)):
        start = at + match.end() - 1
        if tries == 20 or start >= limit:
            break
        text = data[match.end() - 1 :].decode("utf-8", errors="replace")
        try:
            obj, end = decode(text)
        except json.JSONDecodeError:
            continue
        if type(obj) is dict and "ph" in obj and text[end : end + 64].lstrip(" \t\n\r")[:1] in (",", "]"):
            return start
    return None


def skip_to(fh, offset: int) -> None:
    """Position ``fh`` at ``offset`` (forward only for gzip: inflating and discarding in
    1 MiB steps, ~0.15-0.2 s per 100 MB)."""
    if not isinstance(fh, gzip.GzipFile):
        fh.seek(offset)
        return
    if fh.tell() > offset:
        fh.seek(0)
    while fh.tell() < offset and fh.read(min(offset - fh.tell(), 1 << 20)):
        pass


class ByteRange:
    """A binary stream read for at most ``size`` bytes, after ``head`` (bytes already read)."""

    def __init__(self, fh, size: int, head: bytes = b""):
        self.fh, self.left, self.head = fh, size, head[:size]
        self.left -= len(self.head)

    def read(self, n: int) -> bytes:
        if self.head:
            data, self.head = self.head, b""
            return data
        data = self.fh.read(min(n, self.left))
        self.left -= len(data)
        return data


def decode_piece(path: str, start: int, end: int) -> Events:
    """Worker: the events in bytes ``[start, end)`` of ``path``'s (inflated) text
    (see ``read_events(piece=True)``)."""
    ev = Events()
    with open_binary(Path(path)) as fh:
        skip_to(fh, start)
        read_events(TextWindow(ByteRange(fh, end - start)), ev, piece=True)
    return ev


PIECE_WORKER = "import sys; sys.path[:] = {path!r}; from tui_prof.loaders.kineto import piece_worker; piece_worker(sys.argv[1])"
"""A worker's ``-c`` code: this process's ``sys.path`` replaces the one ``-c`` gives (which
starts with the working directory, whose ``json.py`` or ``numpy/`` would be imported), so
the worker imports exactly what this process imports, editable install or not."""


def piece_worker(path: str) -> None:
    """Entry point of a worker process: reads "start end" from stdin (nothing: exit), writes
    the pickled :func:`decode_piece` result to stdout. The cyclic garbage collector is off
    (this process only makes acyclic, short-lived event objects; the collector's passes
    over them cost about 7% of the decoding)."""
    gc.disable()
    line = sys.stdin.readline().split()
    if len(line) == 2:
        ev = decode_piece(path, int(line[0]), int(line[1]))
        pickle.dump(ev, sys.stdout.buffer, protocol=pickle.HIGHEST_PROTOCOL)
        sys.stdout.buffer.flush()


def start_worker(path: Path) -> subprocess.Popen:
    """A fresh interpreter (never a fork: loaders run in threads of the TUI; and unlike
    multiprocessing it does not re-import the caller's ``__main__``) that imports this
    module and waits for its byte range on stdin (:func:`piece_worker`)."""
    argv = [sys.executable, "-c", PIECE_WORKER.format(path=sys.path), str(path)]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _WORKERS.add(proc)
    return proc


_WORKERS: weakref.WeakSet[subprocess.Popen] = weakref.WeakSet()
"""Worker processes started and not yet collected: killed when this process exits (a quit
while a unit is parsed must not leave them decoding for nobody)."""


@atexit.register
def _kill_workers() -> None:
    for proc in list(_WORKERS):
        if proc.poll() is None:
            proc.kill()


def worker_result(proc: subprocess.Popen) -> Events:
    """The worker's pickled result; waits in steps of 0.1 s, so a cancelled load stops
    waiting at once (the caller's ``finally`` kills the worker)."""
    while True:
        try:
            out, err = proc.communicate(timeout=0.1)
            break
        except subprocess.TimeoutExpired:
            check_cancelled()
    if proc.returncode != 0 or not out:
        raise LoadError(f"piece worker failed ({one_line(err.decode(errors='replace'))})")
    return pickle.loads(out)


def read_events_parallel(win: TextWindow, ev: Events, path: Path, pieces: int) -> TextWindow:
    """Read the ``traceEvents`` array whose first event is at ``win.pos`` in up to ``pieces``
    byte ranges: worker processes (:func:`start_worker`) decode all but the last, this
    process the last (to the array's ``]``). Returns the window to go on with (positioned
    after ``]``, reading on from ``win.fh``).

    Split points are guessed by :func:`find_boundary`; a piece must end exactly where the
    next one starts (``read_events(piece=True)``), so by induction from the first piece
    (which starts at a real event) every piece starts at a real event, and the merged
    columns equal a serial read's. Any failure raises (the caller then reads serially).

    gzip: every worker inflates the file from its start and discards the text before its
    piece (inflating costs ~12% of decoding, so the decoding still runs in parallel); this
    process inflates up to the last piece while looking for the split points. The workers
    are started first, so their imports overlap that search."""
    if win.peek() != "{":
        read_events(win, ev)
        return win
    start = win.byte_offset(win.pos)
    size = text_size(path)
    head_start = min(WORKER_START_BYTES, max(0, size - start) // (2 * pieces))
    step = max(0, size - start - head_start) // pieces  # bytes per worker piece
    workers: list[subprocess.Popen] = []
    try:
        for _ in range(pieces - 1):  # inside the try: a failed start stops those started
            workers.append(start_worker(path))
        fh, bounds, head = win.fh, [start], b""
        for k in range(1, pieces):
            at = start + step * k
            skip_to(fh, at)
            data = fh.read(PROBE_BYTES)
            found = find_boundary(data, at, at + len(data))
            if found is not None and found > bounds[-1]:
                bounds.append(found)
                head = data[found - at :]
        for proc, (a, b) in zip(workers, itertools.pairwise(bounds)):
            stdin = cast("IO[bytes]", proc.stdin)  # a pipe: start_worker passes stdin=PIPE
            stdin.write(f"{a} {b}\n".encode())
            stdin.flush()
        for proc in workers[len(bounds) - 1 :]:  # not needed (a split point was not found)
            proc.kill()
            proc.communicate()
        if len(bounds) == 1:
            skip_to(fh, start)
            win = TextWindow(fh)
            read_events(win, ev)
            return win
        if fh.tell() != bounds[-1] + len(head):  # a later split point was not found
            skip_to(fh, bounds[-1])
            head = b""
        tail = TextWindow(ByteRange(fh, 1 << 62, head))
        last = Events()
        read_events(tail, last)
        for proc in workers[: len(bounds) - 1]:
            merge_events(ev, worker_result(proc))
        merge_events(ev, last)
    finally:
        for proc in workers:  # only after a failure: stop the workers still running
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return tail


def merge_events(ev: Events, part: Events) -> None:
    """Append ``part`` (the events after those in ``ev``) to ``ev`` as a serial read would
    have: columns concatenated, string codes remapped in first-seen order, first ``ts`` per
    category kept, flow and malformed counts added, later process labels winning."""
    if part.api_cats:  # the piece's own codes of "api_<domain>" categories, as this read numbers them
        recode = np.arange(len(API_ORDER) + len(part.api_cats), dtype=np.int32)
        for cat, code in part.api_cats.items():
            recode[code] = ev.api_cats.setdefault(cat, len(API_ORDER) + len(ev.api_cats))
        if len(part.api.cat):
            part.api.cat = array("i", recode[np.frombuffer(part.api.cat, dtype=np.int32)].tobytes())
    for mine, theirs in zip(ev.tables(), part.tables()):
        for column in mine.widths:
            values = getattr(theirs, column)
            lookup = theirs.strings.get(column)
            if lookup is not None:  # every name gets its code, also those of rolled-back rows
                target = mine.strings[column]
                recode = np.array([target.setdefault(name, len(target)) for name in lookup], dtype=np.int32)
                if len(values):
                    values = array("i", recode[np.frombuffer(values, dtype=np.int32)].tobytes())
            getattr(mine, column).extend(values)
    ev.flows.update(part.flows)
    ev.comm_ops.update(part.comm_ops)
    ev.process_labels.update(part.process_labels)
    for cat, ts in part.first_ts.items():
        ev.first_ts.setdefault(cat, ts)
    ev.count += part.count
    ev.malformed += part.malformed


# --------------------------------------------------------------------------- loading


def us_to_ns(values) -> np.ndarray:
    """Convert µs values (float64, or int64 read exactly) to int64 ns.

    Integers are multiplied exactly; floats are split into whole and fractional µs so the
    whole part is exact and only the fraction (< 1 µs) is rounded: ``whole*1000 +
    rint(frac*1000)``. NaN becomes 0.
    """
    arr = np.asarray(values)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64) * 1000
    arr = np.nan_to_num(arr.astype(np.float64, copy=False), nan=0.0)
    whole = np.floor(arr)
    return whole.astype(np.int64) * 1000 + np.rint((arr - whole) * 1000.0).astype(np.int64)


def times(cols: Columns) -> tuple[np.ndarray, np.ndarray]:
    """start/end ns: ``start = ns(ts)``, ``end = start + ns(dur)`` (rounded separately)."""
    start = us_to_ns(as_float64(cols.ts))
    return start, start + us_to_ns(as_float64(cols.dur))


def category_order(codes) -> np.ndarray | None:
    """Stable row order grouping a mixed table by category code (None when already grouped)."""
    arr = np.frombuffer(codes, dtype=np.int32) if len(codes) else np.array([], dtype=np.int32)
    if len(arr) < 2 or np.all(arr[1:] >= arr[:-1]):
        return None
    return np.argsort(arr, kind="stable")


def reorder(columns: dict, order: np.ndarray | None) -> dict:
    if order is None:
        return columns
    out = {}
    for key, value in columns.items():
        if isinstance(value, (pd.Categorical, np.ndarray)):
            out[key] = value[order]
        else:
            out[key] = value
    return out


def load_file(path: Path) -> Run:
    """Load one Kineto trace file into one Run."""
    return build_run(read_trace(Path(path)), Path(path))


def load_runs(path: Path) -> list[Run]:
    """The runs of one file: one, or each process of a tuiprof export (:func:`exported_runs`)."""
    ev = read_trace(Path(path))
    processes = exported_processes(ev.top)
    return [build_run(ev, Path(path))] if processes is None else exported_runs(ev, Path(path), processes)


EXPORT_PREFIX = "tuiprof.perfetto-export/"
EXPORT_KIND = EXPORT_PREFIX + "3"
"""``tuiprof_export.kind`` of the files ``tuiprof export --perfetto`` writes (tui_prof.export.perfetto):
Kineto-style events of every process under its own pid, and after them ``tuiprof_processes``,
each process's pid in the file, metadata and agents. Times are µs from ``tuiprof_export.origin_ns``.
Version 3 adds what a Kineto trace has no field for: each process's kernels' queue, dispatch
id and host pid/tid, its API calls' own pid and tid, and an allocation's agent as its
``Device Id`` (:func:`restore_exported_columns`)."""

_META_FIELDS = {f.name for f in dataclasses.fields(RunMeta)}
_AGENT_FIELDS = {f.name for f in dataclasses.fields(Agent)}


def exported_processes(top: dict) -> list[dict] | None:
    """The ``tuiprof_processes`` entries of a tuiprof export (each with an int ``pid``), or
    None for any other trace (an export of an earlier version loads as one process)."""
    header = top.get("tuiprof_export")
    processes = top.get("tuiprof_processes")
    if not (isinstance(header, dict) and str(header.get("kind", "")).startswith(EXPORT_PREFIX) and isinstance(processes, list)):
        return None
    good = [p for p in processes if isinstance(p, dict) and type(p.get("pid")) is int]
    return good or None


def exported_runs(ev: Events, path: Path, processes: list[dict]) -> list[Run]:
    """Each exported process as the run it was: its events (by pid), its metadata and agents
    as written, its times back on the profiler's clock (``origin_ns`` added)."""
    header = ev.top.get("tuiprof_export") or {}
    origin = header.get("origin_ns") if type(header.get("origin_ns")) is int else 0
    runs = []
    for entry in processes:
        pid = entry["pid"]
        part = Events()
        part.top = ev.top
        part.flows, part.first_ts, part.api_cats = ev.flows, ev.first_ts, ev.api_cats
        for name, column in (("kernels", "proc"), ("api", "proc"), ("copies", "proc"), ("markers", "pid"), ("memory", "pid")):
            table = getattr(ev, name)
            rows = np.flatnonzero(as_int64(getattr(table, column)) == pid)
            setattr(part, name, table.subset(rows))
        run = build_run(part, path)
        meta = entry.get("meta")
        meta = meta if isinstance(meta, dict) else {}
        restored = RunMeta(**{k: v for k, v in meta.items() if k in _META_FIELDS})
        restored.extra = dict(restored.extra) if isinstance(restored.extra, dict) else {}
        restored.extra["exported"] = {"source": header.get("source"), "files": restored.files}
        restored.files = [str(path)]
        run.meta = restored
        if restored.pid is not None:  # GPU work no host call claims belongs to the process (as build_kernels' host pid)
            for table in (run.kernels, run.copies):
                if len(table) and bool((table["pid"].to_numpy() == UNKNOWN).any()):
                    table["pid"] = compact_int(np.where(table["pid"].to_numpy() == UNKNOWN, restored.pid, table["pid"].to_numpy()))
        written = entry.get("agents")
        if isinstance(written, list):  # the agents as written, none included (a counter pass without an agent file)
            agents = [a for a in written if isinstance(a, dict) and type(a.get("id")) is int]
            run.agents = [Agent(**{k: v for k, v in a.items() if k in _AGENT_FIELDS}) for a in agents]
        if header.get("kind") == EXPORT_KIND:
            restore_exported_columns(run, part, entry)
        if origin:
            shift_times(run, origin)
        runs.append(run)
    return runs


EXPORTED_COLUMNS = {
    "kernels": ("queue", "dispatch_id", "pid", "tid"),
    "api": ("pid", "tid"),
    "copies": ("src_agent", "dst_agent", "queue", "pid", "tid"),
}
"""The columns a version-3 export keeps in ``tuiprof_processes`` (``columns``), per table: a
Kineto event has no field for them (a kernel's queue, dispatch id, host pid/tid; a copy's
host agent), or writes the process's pid and a track's tid in their place (an API call's own
pid and thread; -1: not recorded). Rows in the order this reader builds them: kernels and
API calls as written, copies memcpys first, then memsets (:func:`build_copies`)."""


def decode_runs(encoded: object, rows: int) -> np.ndarray | None:
    """The int64 column of ``rows`` values run-length encoded as ``[v0, n0, v1, n1, ...]`` over
    the differences from the previous value (from 0 for the first), as
    :func:`tui_prof.export.perfetto.encode_runs` writes it; None when it is not that (the
    counts must add up to ``rows``: nothing larger is built from the file)."""
    if not isinstance(encoded, list) or len(encoded) % 2 or not all(type(v) is int and -(2**62) < v < 2**62 for v in encoded):
        return None
    values, counts = np.array(encoded[0::2], dtype=np.int64), np.array(encoded[1::2], dtype=np.int64)
    if (counts <= 0).any() or int(counts.sum()) != rows:
        return None
    return np.cumsum(np.repeat(values, counts))


def restore_exported_columns(run: Run, part: Events, entry: dict) -> None:
    """What a version-3 export keeps for tuiprof's reader, as it was: the
    :data:`EXPORTED_COLUMNS` of the kernels and API calls (``entry["columns"]``, rows in the
    order :data:`EXPORTED_COLUMNS` says; a column whose count is not the table's is left as
    read), each allocation's agent
    (``Device Id``, -1: none, whatever the ``Device Type``) and the memory tracks on those agents."""
    written = entry.get("columns")
    for name, columns in EXPORTED_COLUMNS.items():
        table = getattr(run, name)
        kept = written.get(name) if isinstance(written, dict) else None
        if not len(table) or not isinstance(kept, dict):
            continue
        decoded = {c: v for c in columns if (v := decode_runs(kept.get(c), len(table))) is not None}
        if decoded:  # as the schema declares them (make_table: the narrow dtypes)
            typed = make_table(name, decoded)
            for column in decoded:
                table[column] = typed[column].to_numpy()
    if len(run.allocations):
        dev_id = as_int64(part.memory.dev_id)
        run.allocations["agent"] = compact_int(np.where(dev_id >= 0, dev_id, UNKNOWN))
        run.series = build_memory_series(part.memory, run.allocations)


def shift_times(run: Run, by: int) -> None:
    """Add ``by`` ns to every time column of ``run``'s tables."""
    for table in (run.kernels, run.api, run.copies, run.markers, run.allocations, run.series):
        for column in ("start", "end", "ts"):
            if column in table.columns and len(table):
                table[column] = table[column].to_numpy() + np.int64(by)


def build_run(ev: Events, path: Path) -> Run:
    """The Run of the events ``ev`` read from ``path``."""
    top = ev.top
    if "traceEvents" in top:  # a second traceEvents key that is not a list
        raise LoadError("not a Kineto trace: traceEvents is not a list")
    skipped = ev.malformed + sum(table.drop_malformed() for table in ev.tables())
    replaced = clean_events(ev)
    top = ev.top

    run = Run()
    if replaced:
        run.warnings.append(replaced_warning(replaced, "strings (names, categories, metadata)"))
    if skipped:
        run.warnings.append(f"{skipped} events with malformed fields skipped (a field of the wrong JSON type, or ts/dur not a finite µs number)")
    meta = run.meta
    meta.formats = [FORMAT]
    meta.tool = "pytorch-profiler"
    if "schemaVersion" in top:
        meta.tool_version = f"kineto schema {top['schemaVersion']}"
    meta.files = [str(path)]
    meta.label = trace_label(Path(path))
    dist_info = top.get("distributedInfo")
    dist: dict = dist_info if isinstance(dist_info, dict) else {}
    if isinstance(dist.get("rank"), int):
        meta.rank = dist["rank"]
    versions = {k: top[k] for k in VERSION_KEYS if k in top}
    platform = detect_platform(top, runtime_names(ev.api))
    meta.extra.update(
        {
            "platform": platform,
            "versions": versions,
            "runtime": runtime_string(versions),
            "trace_name": top.get("traceName", ""),
            "base_time_ns": top.get("baseTimeNanoseconds"),
            "trace_id": top.get("trace_id", ""),
            "distributed": {k: v for k, v in dist.items() if k != "pg_config"},
            "flows": {f"{cat}:{ph}": n for (cat, ph), n in sorted(ev.flows.items(), key=str)},
        }
    )
    if len(ev.sync_args.corr):
        meta.extra["cuda_sync_links"] = sync_links(ev.sync_args)

    host_pid = find_host_pid(ev, ev.process_labels)
    meta.pid = host_pid

    run.api = build_api(ev.api, ev.api_cats, file_order=exported_processes(top) is not None)
    launch = launch_lookup(run.api)
    run.kernels = build_kernels(ev.kernels, launch, ev.launch_shared, platform, host_pid, ev.comm_ops)
    run.copies = build_copies(ev.copies, launch, host_pid)
    run.markers = build_markers(ev.markers)
    seen = set(run.kernels["agent"].unique().tolist()) | set(run.copies["src_agent"].unique().tolist())
    seen |= set(run.copies["dst_agent"].unique().tolist())
    gpu_devices = sorted(int(d) for d in seen if d != UNKNOWN)
    run.agents, warning = build_agents(top.get("deviceProperties"), gpu_devices, platform)
    if warning:
        run.warnings.append(warning)
    run.allocations = build_allocations(ev.memory, platform, run.agents)
    run.series = build_memory_series(ev.memory, run.allocations)

    first = [ev.first_ts[c] for c in ("kernel", "cuda_runtime") if c in ev.first_ts]
    floats = bool(first) and isinstance(first[0], float)
    latest = max([int(t["start"].max()) for t in (run.kernels, run.api) if len(t)], default=0)
    if floats and latest >= FLOAT_EXACT_LIMIT_US * 1000:
        run.warnings.append("timestamps are fractional µs beyond 2**43 µs: float64 parsing may shift them by about 1 ns")
    return run


def clean_events(ev: Events) -> int:
    """Replace lone surrogates (``\\udcff`` escapes, which JSON allows and no UTF-8 or Arrow
    string can hold) by U+FFFD in every string ``ev`` keeps: the string columns (names
    that become equal are merged), process labels and the top-level metadata. Returns how
    many strings were changed. Runs before any table is built."""
    replaced = 0
    for cols in ev.tables():
        for column, lookup in list(cols.strings.items()):
            if not any(map(has_surrogate, lookup)):
                continue
            merged: dict[str, int] = {}
            recode = np.zeros(max(lookup.values(), default=-1) + 1, dtype=np.int32)
            for name, code in lookup.items():
                fixed = clean_text(name)
                replaced += fixed != name
                recode[code] = merged.setdefault(fixed, len(merged))
            arr = getattr(cols, column)
            codes = np.frombuffer(arr, dtype=np.int32) if len(arr) else np.empty(0, dtype=np.int32)
            setattr(cols, column, array("i", recode[codes].astype(np.int32).tobytes()))
            cols.strings[column] = merged
    counter = [0]
    ev.top = _clean_value(ev.top, counter)
    ev.process_labels = _clean_value(ev.process_labels, counter)
    return replaced + counter[0]


def _clean_value(value: Any, counter: list[int]) -> Any:
    """A JSON value (or a dict with any keys) with :func:`clean_text` applied to every string."""
    if isinstance(value, str):
        if has_surrogate(value):
            counter[0] += 1
            return clean_text(value)
        return value
    if isinstance(value, dict):
        return {_clean_value(k, counter): _clean_value(v, counter) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean_value(v, counter) for v in value]
    if isinstance(value, tuple):
        return tuple(_clean_value(v, counter) for v in value)
    return value


def trace_label(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".json", ".pt.trace"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def runtime_names(api: Columns) -> list[str]:
    """Names of the first 50 ``cuda_runtime`` calls, in file order."""
    cats = np.frombuffer(api.cat, dtype=np.int32) if len(api.cat) else np.array([], dtype=np.int32)
    rows = np.flatnonzero(cats == API_CODE["cuda_runtime"])[:50]
    names = api.strings_of("name") if len(api.name) else np.array([], dtype=object)
    return [str(n) for n in names[rows]]


def detect_platform(top: dict, first_runtime_names: list[str]) -> str:
    """ "rocm" or "cuda": version keys first, then deviceProperties, then API names."""
    if any(k in top for k in ("hip_runtime_version", "roctracer_version", "rocprofiler-sdk_version")):
        return "rocm"
    if any(k in top for k in ("cuda_runtime_version", "cupti_version")):
        return "cuda"
    props = top.get("deviceProperties")
    if isinstance(props, list) and props and isinstance(props[0], dict):
        if "maxSharedMemoryPerMultiProcessor" in props[0] or str(props[0].get("name", "")).startswith("AMD"):
            return "rocm"
        return "cuda"
    if any(name.startswith("hip") for name in first_runtime_names):
        return "rocm"
    return "cuda"


def runtime_string(versions: dict) -> str:
    """Human form of the runtime version: HIP 60443483 -> "HIP 6.4.43483", CUDA 12040 -> "CUDA 12.4"."""
    hip = versions.get("hip_runtime_version")
    if isinstance(hip, int) and hip > 0:
        return f"HIP {hip // 10_000_000}.{(hip // 100_000) % 100}.{hip % 100_000}"
    cuda = versions.get("cuda_runtime_version")
    if isinstance(cuda, int) and cuda > 0:
        return f"CUDA {cuda // 1000}.{(cuda % 1000) // 10}"
    return ""


def find_host_pid(ev: Events, process_labels: dict) -> int | None:
    """The profiled process id: the pid labelled "CPU", else the most common pid among the
    first 1000 host events of each of cuda_runtime, cpu_op, cuda_driver, user_annotation."""
    for pid, label in process_labels.items():
        if label == "CPU" and isinstance(pid, int):
            return pid
    counts: Counter = Counter()
    for table, codes, cat in (
        (ev.api, API_CODE, "cuda_runtime"),
        (ev.markers, MARKER_CODE, "cpu_op"),
        (ev.api, API_CODE, "cuda_driver"),
        (ev.markers, MARKER_CODE, "user_annotation"),
    ):
        if not len(table.cat):
            continue
        rows = np.flatnonzero(np.frombuffer(table.cat, dtype=np.int32) == codes[cat])[:1000]
        pids = as_int64(table.pid)[rows]
        counts.update(pids[pids != UNKNOWN].tolist())
    for pid, _ in counts.most_common():
        return int(pid)
    return None


def build_api(cols: Columns, api_cats: dict[str, int] | None = None, file_order: bool = False):
    """The ``api`` table; ``api_cats``: the trace's "api_<domain>" categories (a tuiprof
    export's HSA, marker, RCCL ... calls) and their codes, their domain taken from the name;
    ``file_order``: rows as written (a tuiprof export writes them in the run's order), else
    grouped by category as Kineto writes them."""
    api_cats = api_cats or {}
    if not len(cols.ts):
        return make_table("api", {})
    start, end = times(cols)
    names = cols.categorical("name")
    is_hip = np.array([str(c).startswith("hip") for c in names.categories], dtype=bool)
    cat = np.frombuffer(cols.cat, dtype=np.int32)
    hip = is_hip[names.codes] if len(is_hip) else np.zeros(len(cat), dtype=bool)
    labels = sorted({"cuda", "cuda_sync", "hip"} | {extra[len("api_") :] for extra in api_cats})  # "api_hsa" -> domain "hsa"
    domain_code = np.where(cat == API_CODE["cuda_sync"], labels.index("cuda_sync"), np.where(hip, labels.index("hip"), labels.index("cuda")))
    if api_cats and len(cat):  # one lookup over the rows, however many categories the trace names
        index = {label: n for n, label in enumerate(labels)}
        lut = np.full(max(int(cat.max()), max(api_cats.values())) + 1, -1, dtype=np.int64)
        for extra, code in api_cats.items():
            if code >= 0:
                lut[code] = index[extra[len("api_") :]]
        mapped = np.where(cat >= 0, lut[np.maximum(cat, 0)], -1)
        domain_code = np.where(mapped >= 0, mapped, domain_code)
    domains = pd.Categorical.from_codes(domain_code, categories=labels)
    domains = domains.remove_unused_categories()
    columns = {
        "start": start,
        "end": end,
        "domain": domains,
        "name": names,
        "pid": as_int64(cols.pid),
        "tid": as_int64(cols.tid),
        "correlation_id": as_int64(cols.corr),
        **operator_columns(cols),
    }
    return make_table("api", columns if file_order else reorder(columns, category_order(cols.cat)))


def launch_lookup(api: pd.DataFrame) -> pd.DataFrame:
    """Runtime/driver calls indexed by correlation id (first call per id), for joining GPU work."""
    calls = api[(api["domain"] != "cuda_sync") & (api["correlation_id"] != UNKNOWN)]
    calls = calls.drop_duplicates("correlation_id")
    return calls.set_index("correlation_id")[["pid", "tid", "name"]]


def join_launch(correlation: np.ndarray, launch: pd.DataFrame, host_pid: int | None):
    """(pid, tid, launch name) of the host call that launched each GPU operation."""
    found = launch.reindex(correlation)
    pid = found["pid"].fillna(host_pid if host_pid is not None else UNKNOWN).to_numpy(dtype=np.int64)
    tid = found["tid"].fillna(UNKNOWN).to_numpy(dtype=np.int64)
    name = found["name"].astype(object).fillna("").to_numpy()
    return pid, tid, name


def build_kernels(cols: Columns, launch: pd.DataFrame, launch_shared: Columns, platform: str, host_pid, comm_ops: dict | None = None):
    if not len(cols.ts):
        return make_table("kernels", {})
    start, end = times(cols)
    correlation = as_int64(cols.corr)
    pid, tid, launch_name = join_launch(correlation, launch, host_pid)
    comm_ops = comm_ops or {}
    grid = as_int64(cols.grid).reshape(-1, 3)
    block = as_int64(cols.block).reshape(-1, 3)
    grid_items = grid_in_work_items(grid, block, launch_name, platform)
    lds = as_int64(cols.shared).copy()
    if platform == "rocm" and len(launch_shared.corr):
        # ROCm kernel events lack "shared memory"; the launch call records it.
        by_corr = pd.Series(as_int64(launch_shared.shared), index=as_int64(launch_shared.corr))
        by_corr = by_corr[~by_corr.index.duplicated()]
        missing = lds == UNKNOWN
        if missing.any():
            lds[missing] = by_corr.reindex(correlation[missing]).fillna(UNKNOWN).to_numpy(dtype=np.int64)
    return make_table(
        "kernels",
        {
            "start": start,
            "end": end,
            "agent": as_int64(cols.device),
            "stream": as_int64(cols.stream),
            "pid": pid,
            "tid": tid,
            "correlation_id": correlation,
            "name": cols.categorical("name"),
            "grid_x": grid_items[:, 0],
            "grid_y": grid_items[:, 1],
            "grid_z": grid_items[:, 2],
            "wg_x": block[:, 0],
            "wg_y": block[:, 1],
            "wg_z": block[:, 2],
            "lds_bytes": lds,
            **operator_columns(cols),
            **collective_columns(cols, comm_ops),
        },
    )


COMM_KERNEL = re.compile(r"nccl|rccl|msccl", re.IGNORECASE)
"""Kernel names that may take a ``record_param_comms`` op's collective args (collective_columns)."""


def collective_columns(cols: Columns, comm_ops: dict[int, tuple[str, int, int]]) -> dict:
    """``collective``, ``coll_bytes``, ``coll_ranks`` of the kernels: the kernel's own
    collective args; for an NCCL/RCCL kernel without them, those of the ``record_param_comms``
    op with its External id (traces that record the args on the op only). Empty when no
    kernel has any (make_table then fills "" / -1)."""
    if "coll" not in cols.widths or not len(cols.coll):
        return {}
    names = list(cols.strings["coll"])
    codes = np.frombuffer(cols.coll, dtype=np.int32).copy()
    nbytes = as_int64(cols.coll_bytes).copy()
    ranks = as_int64(cols.coll_ranks).copy()
    if comm_ops:
        blank = np.array([n == "" for n in names], dtype=bool)
        kernel_names = list(cols.strings["name"])
        is_comm = np.array([bool(COMM_KERNEL.search(n)) for n in kernel_names] or [False], dtype=bool)
        rows = np.flatnonzero(blank[codes] & is_comm[np.frombuffer(cols.name, dtype=np.int32)])
        ext = as_int64(cols.ext)
        position = {n: i for i, n in enumerate(names)}
        for i in rows.tolist():  # NCCL/RCCL kernels only: few
            found = comm_ops.get(int(ext[i]))
            if found is not None:
                codes[i] = position.setdefault(found[0], len(position))
                nbytes[i], ranks[i] = found[1], found[2]
        names = list(position)
    used = np.unique(codes)
    if all(names[c] == "" for c in used.tolist()):
        return {}
    categories = sorted({names[c] for c in used.tolist()})
    recode = np.array([categories.index(n) if n in categories else 0 for n in names], dtype=np.int32)
    return {"collective": pd.Categorical.from_codes(recode[codes], categories=categories), "coll_bytes": nbytes, "coll_ranks": ranks}


def grid_in_work_items(grid: np.ndarray, block: np.ndarray, launch_name: np.ndarray, platform: str) -> np.ndarray:
    """Grid size in work-items (rocprofv3 semantics), from Kineto's grid and block.

    CUPTI (CUDA) records the grid in blocks: work-items = grid * block. roctracer (ROCm)
    records the launch call's own arguments: blocks for hipLaunchKernel/hipModuleLaunchKernel/
    hipExtLaunchKernel, but global work size (already work-items) for
    hipExtModuleLaunchKernel/hipHccModuleLaunchKernel. A ROCm kernel whose launch call is not
    in the trace has an ambiguous grid and gets -1.
    """
    known = (grid != UNKNOWN) & (block != UNKNOWN)
    items = np.where(known, grid * block, UNKNOWN)
    if platform == "rocm":
        is_items = np.isin(launch_name, WORK_ITEM_GRID_LAUNCHES)
        unknown_launch = launch_name == ""
        items = np.where(is_items[:, None], grid, items)
        items = np.where(unknown_launch[:, None], UNKNOWN, items)
    return items


def build_copies(cols: Columns, launch: pd.DataFrame, host_pid):
    """Copies and memsets; direction from args ``kind``, else from the name ("Memcpy HtoD (…)")."""
    if not len(cols.ts):
        return make_table("copies", {})
    start, end = times(cols)
    names = cols.categorical("name")
    from_name = np.array([_name_direction(str(n)) for n in names.categories] or ["unknown"], dtype=object)
    label = from_name[names.codes]
    kinds = cols.strings_of("kind")
    has_kind = kinds != ""
    label[has_kind] = kinds[has_kind]
    cats = np.frombuffer(cols.cat, dtype=np.int32)
    label[cats == COPY_CODE["gpu_memset"]] = "memset"
    direction, src, dst = labelled_copies(label, device=as_int64(cols.device))
    correlation = as_int64(cols.corr)
    pid, tid, _ = join_launch(correlation, launch, host_pid)
    columns = {
        "start": start,
        "end": end,
        "bytes": as_int64(cols.bytes),
        "direction": direction,
        "src_agent": src,
        "dst_agent": dst,
        "stream": as_int64(cols.stream),
        "pid": pid,
        "tid": tid,
        "correlation_id": correlation,
        "name": names,
        **operator_columns(cols),
    }
    return make_table("copies", reorder(columns, category_order(cols.cat)))


def _name_direction(name: str) -> str:
    match = re.match(r"Memcpy (\w+)", name)
    return match.group(1) if match and match.group(1) in COPY_DIRECTIONS else "unknown"


def build_markers(cols: Columns):
    if not len(cols.ts):
        return make_table("markers", {})
    start, end = times(cols)
    cats = np.frombuffer(cols.cat, dtype=np.int32)
    present = sorted(set(np.unique(cats).tolist()), key=lambda c: MARKER_CATS[c])
    labels = sorted(MARKER_CATS[c] for c in present)
    recode = np.zeros(len(MARKER_CATS), dtype=np.int32)
    for c in present:
        recode[c] = labels.index(MARKER_CATS[c])
    columns = {
        "start": start,
        "end": end,
        "name": cols.categorical("name"),
        "source": pd.Categorical.from_codes(recode[cats], categories=labels),
        "pid": as_int64(cols.pid),
        "tid": as_int64(cols.tid),
        **operator_columns(cols),
    }
    return make_table("markers", reorder(columns, category_order(cols.cat)))


MAX_INPUT_TEXT = 4096
"""Longest operator-input text kept (characters); longer ones are cut and end in "…"."""


def operator_columns(cols: Columns) -> dict:
    """The operator link of a table's rows: ``external_id`` (Kineto "External id"; -1 when
    absent) on every table that has it, CUPTI's "registers per thread" as ``arch_vgpr`` on
    kernels, and on markers the cpu_op's "Input Dims", "Input type" and "Concrete Inputs" as JSON text
    (categorical: each distinct text once)."""
    out: dict = {}
    if "ext" in cols.widths:
        out["external_id"] = as_int64(cols.ext)
    if "regs" in cols.widths:
        out["arch_vgpr"] = as_int64(cols.regs)
    for column, key in (("dims", "input_dims"), ("types", "input_types"), ("concrete", "input_concrete")):
        if column in cols.widths:
            lookup = cols.strings[column]
            texts = [input_text(t) for t in lookup] or [""]
            categories = sorted(set(texts))
            recode = (
                np.array([categories.index(t) for t in texts], dtype=np.int32) if len(texts) < 64 else pd.Index(categories).get_indexer(texts).astype(np.int32)
            )
            codes = np.frombuffer(getattr(cols, column), dtype=np.int32) if len(getattr(cols, column)) else np.array([], dtype=np.int32)
            out[key] = pd.Categorical.from_codes(recode[codes], categories=categories)
    return out


def input_text(text: str) -> str:
    """JSON text of an operator-input value kept as its ``repr`` while streaming: lists of
    numbers read the same; strings get JSON quotes. Bounded to MAX_INPUT_TEXT characters."""
    if not text:
        return ""
    if "'" in text:
        try:
            text = jsonout.dumps(ast.literal_eval(text[: 4 * MAX_INPUT_TEXT]))
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
            pass  # keep the repr: still one readable line
    return text if len(text) <= MAX_INPUT_TEXT else text[: MAX_INPUT_TEXT - 1] + "…"


def build_allocations(cols: Columns, platform: str, agents: list[Agent]):
    """PyTorch caching-allocator "[memory]" instant events: Bytes > 0 allocates, < 0 frees.

    ``Device Id`` is the framework's device index; on CUDA that is the agent id, on ROCm
    it is only mapped when the run has exactly one GPU agent.
    """
    if not len(cols.ts):
        return make_table("allocations", {})
    start = us_to_ns(as_float64(cols.ts))
    size = as_int64(cols.bytes)
    dev_type = as_int64(cols.dev_type)
    dev_id = as_int64(cols.dev_id)
    gpus = [a.id for a in agents if a.type == "GPU"]
    if platform == "cuda":
        agent = np.where(dev_type > 0, dev_id, UNKNOWN)
    elif len(gpus) == 1:
        agent = np.where(dev_type > 0, gpus[0], UNKNOWN)
    else:
        agent = np.full(len(start), UNKNOWN)
    return make_table(
        "allocations",
        {
            "start": start,
            "end": start,
            "operation": np.where(size >= 0, "ALLOCATE", "FREE"),
            "agent": agent,
            "bytes": np.abs(size),
            "address": as_int64(cols.addr),
            "pid": as_int64(cols.pid),
            "tid": as_int64(cols.tid),
        },
    )


MEMORY_TRACKS = (("total_allocated", "allocated"), ("total_reserved", "reserved"))
"""The caching allocator's totals after each "[memory]" event -> ``series`` tracks."""


def build_memory_series(cols: Columns, allocations: pd.DataFrame):
    """``Total Allocated`` / ``Total Reserved`` of each GPU "[memory]" event as the ``series``
    tracks "allocated" and "reserved" (bytes on the event's agent, as :func:`build_allocations`
    maps it); events without a total (older PyTorch) are left out."""
    if not len(cols.ts) or allocations.empty:
        return make_table("series", {})
    agent = allocations["agent"].to_numpy()
    gpu = (as_int64(cols.dev_type) > 0) & (agent != UNKNOWN)
    parts = []
    for column, track in MEMORY_TRACKS:
        value = as_int64(getattr(cols, column))
        keep = gpu & (value >= 0)
        if keep.any():
            parts.append(
                make_table(
                    "series",
                    {
                        "track": track,
                        "agent": agent[keep],
                        "ts": allocations["start"].to_numpy()[keep],
                        "value": value[keep].astype(np.float64),
                        "unit": "bytes",
                    },
                )
            )
    return concat_tables("series", parts)


def build_agents(props, devices: list[int], platform: str) -> tuple[list[Agent], str]:
    """GPU agents from the devices seen in GPU events and ``deviceProperties`` (see module doc)."""
    entries = [p for p in props if isinstance(p, dict)] if isinstance(props, list) else []
    warning = ""
    mapping: dict[int, dict] = {}
    if platform == "cuda":
        by_id = {p.get("id"): p for p in entries if isinstance(p.get("id"), int)}
        ids = sorted(set(devices) | {i for i in by_id if isinstance(i, int)})
        mapping = {i: by_id.get(i, {}) for i in ids}
    else:
        ids = list(devices)
        if not ids:
            ids = [p["id"] for p in entries if isinstance(p.get("id"), int)]
            mapping = {p["id"]: p for p in entries if isinstance(p.get("id"), int)}
        else:
            stripped = [{k: v for k, v in p.items() if k != "id"} for p in entries]
            if entries and all(s == stripped[0] for s in stripped):
                mapping = dict.fromkeys(ids, entries[0])
            elif len(entries) == len(ids):
                mapping = dict(zip(ids, entries))
            elif entries:
                warning = f"cannot match {len(entries)} deviceProperties entries to GPU devices {ids}: device properties not attached"
    agents = [make_agent(i, mapping.get(i, {}), platform) for i in ids]
    return agents, warning


def make_agent(device: int, prop: dict, platform: str) -> Agent:
    def num(key):
        value = prop.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    major, minor = num("computeMajor"), num("computeMinor")
    product = str(prop.get("name", "") or "")
    agent = Agent(id=int(device), type="GPU", product=product)
    if platform == "rocm":
        agent.vendor = "AMD"
        agent.node_id = int(device)  # observed to match the KFD node id (see module doc)
        # HIP reports gfx942 as 9.4; the stepping digit is not recorded.
        agent.name = f"gfx{major}{minor:x}x" if major is not None and minor is not None else product
        agent.lds_bytes_per_cu = num("maxSharedMemoryPerMultiProcessor")
    else:
        agent.vendor = "NVIDIA" if product.startswith("NVIDIA") or prop else ""
        agent.name = product
        agent.type_index = int(device)
        agent.lds_bytes_per_cu = num("sharedMemPerMultiprocessor")
    agent.cu_count = num("numSms")
    agent.wave_size = num("warpSize")
    agent.memory_bytes = num("totalGlobalMem")
    agent.workgroup_max_size = num("maxThreadsPerBlock")
    if major is not None and minor is not None:
        agent.extra["compute_capability"] = f"{major}.{minor}"
    if prop:
        agent.extra["device_properties"] = dict(prop)
    return agent
