"""rocprofv3 CSV output (``--output-format csv``) and rocpd2csv output.

Files are recognised by their header (formats.md §2, §2.1, §5.4, §11), matched
case-insensitively with or without quotes; a leading ``Guid`` column (rocpd2csv) is
ignored. rocprofv3 names its files ``<prefix>_<kind>.csv`` (default prefix: the pid, in a
``<hostname>/`` directory); all files with one prefix in one directory form one Run.

Reading uses pyarrow.csv with column selection and explicit types. rocprofv3 does not
escape ``"`` inside strings, so a file whose free-text column (kernel / function name)
breaks the CSV grammar is re-quoted line by line and read again. A last line cut short
(killed job) is dropped and the run marked partial.
"""

from __future__ import annotations

import contextvars
import copy
import functools
import gzip
import os
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from tui_prof.loaders.base import (
    COPY_TYPES,
    HEAD_BYTES,
    DetectedFile,
    IssueSink,
    LoadError,
    Sniffed,
    api_domain,
    check_stats,
    first_line,
    labelled_copies,
    open_binary,
    open_regular,
    pid_from_prefix,
    process_pid,
    read_error,
    split_header,
)
from tui_prof.loaders.specs import SPECS
from tui_prof.model import Agent, Run, RunMeta, make_table
from tui_prof.model.schema import STATS_COLUMNS, UNKNOWN, column_array, compact_int, concat_tables
from tui_prof.threads import Job, background

LOADER = SPECS["rocprofv3_csv"]
FORMAT = LOADER.format

INT = pa.int64()
UINT = pa.uint64()
FLOAT = pa.float64()
TEXT = pa.dictionary(pa.int32(), pa.string())

STATS_HEADER = ["name", "calls", "totaldurationns", "averagens", "percentage", "minns", "maxns", "stddev"]

# Canonical file names (sdk/source/lib/output/domain_type.cpp), used only to split the
# "<prefix>_" off a file name; the kind itself comes from the header.
TRACE_NAMES = {
    "kernel_trace": ("kernel_trace",),
    "api_trace": (
        "hip_api_trace",
        "hsa_api_trace",
        "marker_api_trace",
        "rccl_api_trace",
        "rocdecode_api_trace",
        "rocjpeg_api_trace",
    ),
    "memory_copy_trace": ("memory_copy_trace",),
    "memory_allocation_trace": ("memory_allocation_trace",),
    "scratch_memory_trace": ("scratch_memory_trace",),
    "counter_collection": ("counter_collection",),
    "agent_info": ("agent_info",),
    "pc_sampling_host_trap": ("pc_sampling_host_trap",),
    "pc_sampling_stochastic": ("pc_sampling_stochastic",),
}
STATS_NAMES = (
    "kernel_stats",
    "hip_api_stats",
    "hsa_api_stats",
    "marker_api_stats",
    "rccl_api_stats",
    "rocdecode_api_stats",
    "rocjpeg_api_stats",
    "memory_copy_stats",
    "memory_allocation_stats",
    "scratch_memory_stats",
    "counter_collection_stats",
    "pc_sampling_host_trap_stats",
    "pc_sampling_stochastic_stats",
    "domain_stats",
    "hip_stats",  # ROCm 6.2 names
    "hsa_stats",
    "marker_stats",
)
STATS_RENAME = {"hip_stats": "hip_api_stats", "hsa_stats": "hsa_api_stats", "marker_stats": "marker_api_stats"}

# Columns read per kind: lower-case header name -> (model column, arrow type).
KERNEL_COLUMNS = {
    "agent_id": ("agent", TEXT),
    "queue_id": ("queue", INT),
    "stream_id": ("stream", INT),
    "thread_id": ("tid", INT),
    "dispatch_id": ("dispatch_id", INT),
    "kernel_id": ("kernel_id", INT),
    "kernel_name": ("name", TEXT),
    "correlation_id": ("correlation_id", INT),
    "start_timestamp": ("start", INT),
    "end_timestamp": ("end", INT),
    "lds_block_size": ("lds_bytes", INT),  # ROCm >= 7.0
    "scratch_size": ("scratch_bytes", INT),
    "group_segment_size": ("lds_bytes", INT),  # ROCm 6.x
    "private_segment_size": ("scratch_bytes", INT),
    "vgpr_count": ("arch_vgpr", INT),
    "accum_vgpr_count": ("accum_vgpr", INT),
    "sgpr_count": ("sgpr", INT),
    "workgroup_size_x": ("wg_x", INT),
    "workgroup_size_y": ("wg_y", INT),
    "workgroup_size_z": ("wg_z", INT),
    "grid_size_x": ("grid_x", INT),
    "grid_size_y": ("grid_y", INT),
    "grid_size_z": ("grid_z", INT),
}
API_COLUMNS = {
    "domain": ("domain", TEXT),
    "function": ("name", TEXT),
    "process_id": ("pid", INT),
    "thread_id": ("tid", INT),
    "correlation_id": ("correlation_id", INT),
    "start_timestamp": ("start", INT),
    "end_timestamp": ("end", INT),
}
COPY_COLUMNS = {
    "direction": ("name", TEXT),
    "stream_id": ("stream", INT),
    "source_agent_id": ("src_agent", TEXT),
    "destination_agent_id": ("dst_agent", TEXT),
    "correlation_id": ("correlation_id", INT),
    "start_timestamp": ("start", INT),
    "end_timestamp": ("end", INT),
    "size": ("bytes", INT),  # not written by rocprofv3 <= 7.0; accepted if present
    "bytes": ("bytes", INT),
    "copy_bytes": ("bytes", INT),
}
ALLOC_COLUMNS = {
    "operation": ("operation", TEXT),
    "agent_id": ("agent", TEXT),
    "allocation_size": ("bytes", INT),
    "address": ("address", TEXT),
    "correlation_id": ("correlation_id", INT),
    "start_timestamp": ("start", INT),
    "end_timestamp": ("end", INT),
}
SCRATCH_COLUMNS = {
    "operation": ("operation", TEXT),
    "agent_id": ("agent", TEXT),
    "queue_id": ("queue", INT),
    "thread_id": ("tid", INT),
    "alloc_flags": ("flags", TEXT),  # "Alloc_flags" in ROCm 6.2: same after lower-casing
    "start_timestamp": ("start", INT),
    "end_timestamp": ("end", INT),
    "allocation_size": ("bytes", INT),
}
COUNTER_COLUMNS = {
    "correlation_id": ("correlation_id", INT),
    "dispatch_id": ("dispatch_id", INT),
    "agent_id": ("agent", TEXT),
    "queue_id": ("queue", INT),
    "process_id": ("pid", INT),
    "pid": ("pid", INT),  # rocpd2csv
    "thread_id": ("tid", INT),
    "grid_size": ("grid_x", INT),  # product x*y*z
    "kernel_id": ("kernel_id", INT),
    "kernel_name": ("name", TEXT),
    "workgroup_size": ("wg_x", INT),  # product x*y*z
    "lds_block_size": ("lds_bytes", INT),
    "scratch_size": ("scratch_bytes", INT),
    "vgpr_count": ("arch_vgpr", INT),
    "accum_vgpr_count": ("accum_vgpr", INT),
    "sgpr_count": ("sgpr", INT),
    "counter_name": ("counter", TEXT),
    "counter_value": ("value", FLOAT),
    "start_timestamp": ("start", INT),
    "end_timestamp": ("end", INT),
}
PC_COLUMNS = {
    "sample_timestamp": ("ts", INT),
    "exec_mask": ("exec_mask", UINT),
    "dispatch_id": ("dispatch_id", INT),
    "instruction": ("instruction", TEXT),
    "instruction_comment": ("comment", TEXT),
    "correlation_id": ("correlation_id", INT),
    "stall_reason": ("stall_reason", TEXT),
}
STATS_TYPES = {
    "name": ("name", TEXT),
    "calls": ("calls", INT),
    "totaldurationns": ("total_ns", INT),
    "averagens": ("avg_ns", FLOAT),
    "percentage": ("percent", FLOAT),
    "minns": ("min_ns", INT),
    "maxns": ("max_ns", INT),
    "stddev": ("stddev_ns", FLOAT),
}

# kind -> (columns, free-text column that may hold unescaped quotes, columns that must be present)
READ_SPECS = {
    "kernel_trace": (KERNEL_COLUMNS, "kernel_name", ("start_timestamp", "end_timestamp")),
    "api_trace": (API_COLUMNS, "function", ("start_timestamp", "end_timestamp")),
    "memory_copy_trace": (COPY_COLUMNS, None, ("start_timestamp", "end_timestamp")),
    "memory_allocation_trace": (ALLOC_COLUMNS, None, ("start_timestamp", "end_timestamp")),
    "scratch_memory_trace": (SCRATCH_COLUMNS, None, ("start_timestamp", "end_timestamp")),
    "counter_collection": (COUNTER_COLUMNS, "kernel_name", ("dispatch_id",)),
    "pc_sampling": (PC_COLUMNS, None, ("sample_timestamp",)),
    "stats": (STATS_TYPES, "name", ("calls",)),
}

DIRECTIONS = {
    "MEMORY_COPY_HOST_TO_DEVICE": "HtoD",
    "MEMORY_COPY_DEVICE_TO_HOST": "DtoH",
    "MEMORY_COPY_DEVICE_TO_DEVICE": "DtoD",
    "MEMORY_COPY_HOST_TO_HOST": "HtoH",
}

COUNTER_WARNING = "kernel dispatches reconstructed from counter collection; counter collection serialises dispatches, so timing overlap is not representative"

_AGENT_TOKEN = re.compile(r"^\s*(agent|gpu|cpu)[\s\-_]*(\d+)\s*$", re.IGNORECASE)


# --------------------------------------------------------------------------- sniffing


def _header_kind(cols: list[str]) -> str | None:
    """File kind from lower-case header names (a leading rocpd2csv ``guid`` removed)."""
    names = set(cols)
    first = cols[0] if cols else ""
    if cols == STATS_HEADER:
        return "stats"
    if first == "kind":
        if {"kernel_name", "agent_id", "start_timestamp", "end_timestamp"} <= names:
            return "kernel_trace"
        if {"direction", "source_agent_id", "destination_agent_id", "start_timestamp"} <= names:
            return "memory_copy_trace"
        if {"operation", "agent_id", "address", "start_timestamp"} <= names:
            return "memory_allocation_trace"
        if {"operation", "agent_id", "alloc_flags", "start_timestamp"} <= names:
            return "scratch_memory_trace"
        return None
    if (
        cols[:2] == ["domain", "function"]
        and {
            "process_id",
            "thread_id",
            "correlation_id",
            "start_timestamp",
            "end_timestamp",
        }
        <= names
    ):
        return "api_trace"
    if {"dispatch_id", "agent_id", "kernel_name", "counter_name", "counter_value"} <= names:
        return "counter_collection"
    if first == "node_id" and {"logical_node_id", "agent_type"} <= names:
        return "agent_info"
    if first == "sample_timestamp" and {"exec_mask", "dispatch_id", "instruction"} <= names:
        if "stall_reason" in names or "wave_issued_instruction" in names:
            return "pc_sampling_stochastic"
        return "pc_sampling_host_trap"
    return None


def _columns(header_line: str) -> list[str]:
    cols = split_header(header_line)
    if cols and cols[0] == "guid":
        cols = cols[1:]
    return cols


def _split_prefix(stem: str, names: tuple[str, ...]) -> tuple[str, str | None]:
    """(prefix, matched canonical name) of a file stem such as ``1234_kernel_trace``."""
    for name in sorted(names, key=len, reverse=True):
        match = re.search(rf"(?:^|_){re.escape(name)}(?:_|$)", stem, re.IGNORECASE)
        if match:
            return stem[: match.start()], name
    return "", None


def sniff(path: Path, head: bytes) -> Sniffed | None:
    """Recognise a rocprofv3 / rocpd2csv CSV file by its header row."""
    line = first_line(head)
    if "," not in line:
        return None
    kind = _header_kind(_columns(line))
    if kind is None:
        return None
    stem = path.name
    for suffix in (".gz", ".csv"):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
    if kind == "stats":
        prefix, name = _split_prefix(stem, STATS_NAMES)
        kind = STATS_RENAME.get(name, name) if name else stem.lower()
    else:
        prefix, _ = _split_prefix(stem, TRACE_NAMES[kind])
        if kind == "api_trace":
            rows = head.split(b"\n", 2)
            if len(rows) > 1 and rows[1].strip():
                first = split_header(rows[1].decode("utf-8", "replace"))
                domain_index = 1 if split_header(line)[0] == "guid" else 0
                if len(first) > domain_index:
                    kind = f"{api_domain(first[domain_index])}_api_trace"
    return Sniffed(kind=kind, group=f"{path.parent}/{prefix.rstrip('_')}")


# --------------------------------------------------------------------------- reading


def _last_line(data) -> str | None:
    """The last non-empty line of ``data`` (bytes), or None when there is only a header."""
    end = len(data)
    while end and data[end - 1 : end] in (b"\n", b"\r"):
        end -= 1
    start = data.rfind(b"\n", 0, end) + 1
    if start == 0:
        return None
    return bytes(data[start:end]).rstrip(b"\r").decode("utf-8", "replace")


def _tail_of_file(fh: Any, size: int = 1 << 16) -> bytes:
    """The last ``size`` bytes of the open file ``fh``."""
    fh.seek(0, 2)
    length = fh.tell()
    fh.seek(max(0, length - size))
    tail = fh.read()
    fh.seek(0)
    return tail


def _all_of(fh: Any) -> bytes:
    """The whole of the open file ``fh``."""
    fh.seek(0)
    return fh.read()


def _after_check(path: Path) -> None:
    """Called once the file's descriptor is open and checked, before anything is read from
    it (a test swaps the file by name here: what is parsed must still be what was checked)."""


def _rewound(fh: Any) -> Any:
    """``fh`` at its start."""
    fh.seek(0)
    return fh


def _arrow_source(fh: Any) -> pa.NativeFile:
    """A pyarrow input that reads the open, checked descriptor of ``fh``, never the file's
    name again: on Linux through ``/proc/self/fd/N``, which opens the very file the
    descriptor holds (pyarrow then reads with its own buffered IO, outside the GIL);
    elsewhere through a Python file wrapper."""
    if os.path.exists(f"/proc/self/fd/{fh.fileno()}"):
        try:
            return pa.OSFile(f"/proc/self/fd/{fh.fileno()}")
        except (OSError, pa.ArrowException):
            pass
    return pa.PythonFile(fh, mode="r")


def _requote_line(line: bytes, header_cols: int, text_index: int) -> bytes:
    """Rewrite one data line so the free-text field at ``text_index`` is a properly quoted
    CSV field (embedded quotes doubled). The other fields hold no commas, so the text is
    what lies between the first ``text_index`` and the last ``header_cols - text_index - 1``
    commas. A line with too few commas (cut short) is returned unchanged."""
    body = line.rstrip(b"\r")
    if body.count(b",") < header_cols - 1:
        return line
    right = header_cols - text_index - 1
    head = body.split(b",", text_index)
    tail = head[-1].rsplit(b",", right) if right else [head[-1]]
    text = tail[0]
    if len(text) >= 2 and text[:1] == b'"' and text[-1:] == b'"':
        text = text[1:-1]
    field = b'"' + text.replace(b'"', b'""') + b'"'
    return b",".join(head[:-1] + [field] + tail[1:])


def _requote(data: bytes, header_cols: int, text_index: int, last_is_cut: bool = False) -> bytes:
    """Re-quote the free-text field of every line with more ``"`` than the fewest any
    complete row has (rocprofv3 quotes every string field, so well-formed rows of a file
    share one count and an embedded quote only adds). Lines are found with numpy; only
    the odd ones go through Python."""
    buf = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    quotes = np.flatnonzero(buf == 34)
    counts = np.bincount(np.searchsorted(newlines, quotes), minlength=len(newlines) + 1)
    starts = np.concatenate(([0], newlines + 1))
    ends = np.concatenate((newlines, [len(data)]))
    rows = counts[1:][ends[1:] > starts[1:]]  # non-empty data lines
    if not len(rows):
        return data
    usual = rows[:-1].min() if last_is_cut and len(rows) > 1 else rows.min()
    pieces, done = [], 0
    for index in np.flatnonzero(counts != usual):
        if index == 0 or ends[index] <= starts[index]:
            continue
        start, end = int(starts[index]), int(ends[index])
        pieces.append(data[done:start])
        pieces.append(_requote_line(data[start:end], header_cols, text_index))
        done = end
    pieces.append(data[done:])
    return b"".join(pieces)


def _utf8(data: bytes) -> tuple[bytes, bool]:
    """``data`` with every byte sequence that is not UTF-8 replaced by U+FFFD, and whether
    any was. pyarrow decodes an invalid row's text strictly before calling the
    invalid-row handler, so bytes read with a handler must be valid UTF-8."""
    if data.isascii():
        return data, False
    try:
        data.decode("utf-8")
        return data, False
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace").encode("utf-8"), True


_POOL: list[pa.MemoryPool] = []
_POOL_LOCK = threading.Lock()


def _parse_pool() -> pa.MemoryPool:
    """The memory pool the CSV parse allocates from: Arrow's jemalloc pool where pyarrow has
    it, else the default pool.

    pyarrow's default pool (mimalloc) hands the parse's freed blocks back to the OS one by
    one as it goes, and the parse threads fault the same pages in again: parsing the 1M
    dispatches' kernel trace took ≈ 3 s of system CPU time with it against ≈ 0.8 s with
    jemalloc, whose freed pages are reused and handed back after a decay time
    (docs/performance.md, issue 18). Nothing else in the process allocates from this pool."""
    with _POOL_LOCK:
        if not _POOL:
            try:
                pool = pa.jemalloc_memory_pool()
            except (NotImplementedError, pa.ArrowException):  # a pyarrow built without jemalloc
                pool = pa.default_memory_pool()
            _POOL.append(pool)
        return _POOL[0]


def _release_parse_memory() -> None:
    """Ask both pools to hand the parse's freed blocks back to the OS (jemalloc does so
    within its decay time, ≈ 1 s): the tables keep only what they hold, where the process
    would otherwise keep ~150 B per dispatch of parse buffers at 1M dispatches."""
    _parse_pool().release_unused()
    pa.default_memory_pool().release_unused()


def _arrow_read(
    source, include: list[str], types: dict, skip_bad: bool = True, reopen: Callable[[], pa.NativeFile] | None = None
) -> tuple[pa.Table, list[str]]:
    """Parse with pyarrow. ``skip_bad``: rows with the wrong number of fields are skipped
    and their text returned (``source`` must then hold valid UTF-8, see ``_utf8``);
    otherwise the first such row raises ArrowInvalid. ``reopen``: a fresh source for a
    retry (a file the failed read may still hold a read-ahead position in is not reused)."""
    bad: list[str] = []

    def on_invalid(row) -> str:
        bad.append(row.text or "")
        return "skip"

    # 1 MiB blocks are fastest; a row longer than a block (a multi-megabyte kernel name)
    # makes pyarrow refuse the file, so retry with blocks large enough to hold it.
    block_size = 1 << 20
    while True:
        try:
            table = pcsv.read_csv(
                source,
                read_options=pcsv.ReadOptions(use_threads=True, block_size=block_size),
                parse_options=pcsv.ParseOptions(invalid_row_handler=on_invalid if skip_bad else None),
                convert_options=pcsv.ConvertOptions(include_columns=include, column_types=types, strings_can_be_null=False),
                memory_pool=_parse_pool(),
            )
            return table, bad
        except pa.ArrowInvalid as err:
            if "straddl" not in str(err) or block_size >= 1 << 30:
                raise
            block_size <<= 4
            bad.clear()
            if reopen is not None:
                if isinstance(source, pa.OSFile):  # its own descriptor (a Python wrapper's is the caller's)
                    source.close()
                source = reopen()
            elif isinstance(source, pa.NativeFile):
                source.seek(0)


_INT32_RANGE = (-(1 << 31), (1 << 31) - 1)


def _int_column(arr: pa.ChunkedArray, narrow: bool) -> np.ndarray:
    """One integer column as a numpy array, -1 for blanks: int32 when ``narrow`` and every
    value fits (cast chunk by chunk in Arrow, so the one copy into numpy is half the size and
    the table's int32 columns take it as it is), else int64."""
    if arr.null_count:  # fill_null copies every chunk: skipped for the usual column without blanks
        arr = pc.fill_null(arr, UNKNOWN)
    if narrow and len(arr):
        bounds = pc.min_max(arr).as_py()
        if _INT32_RANGE[0] <= bounds["min"] and bounds["max"] <= _INT32_RANGE[1]:
            arr = pc.cast(arr, pa.int32(), safe=False, memory_pool=_parse_pool())
    return arr.to_numpy()


def _without_incomplete_rows(table: pa.Table, required: list[str]) -> tuple[pa.Table, bool, int]:
    """``table`` without the rows lacking a value in a ``required`` column (a last row cut
    inside the final field, or blanks); whether the last row was one of them; how many
    others were dropped."""
    if not table.num_rows:
        return table, False, 0
    valid = None
    for col in required:
        ok = pc.is_valid(table.column(col))
        valid = ok if valid is None else pc.and_(valid, ok)
    if valid is None or pc.all(valid).as_py():
        return table, False, 0
    mask = np.asarray(valid.to_numpy(zero_copy_only=False), dtype=bool)
    return table.filter(pa.array(mask)), not mask[-1], int((~mask).sum()) - (0 if mask[-1] else 1)


def read_csv_table(path: Path, kind: str) -> tuple[dict[str, Any], list[str], bool, int]:
    """Read one file of ``kind`` into ``{lower-case column: array}``.

    Returns (columns, warnings, truncated, malformed rows skipped). Integer columns come
    back as numpy arrays with -1 for blanks: int32 where every value fits and the file is
    a trace (its tables store such columns as int32, see ``model.schema.COMPACT``), else
    int64; text columns as pandas Categorical series, floats as float64 with NaN.
    Raises LoadError for a file that cannot be parsed.

    The first parse is strict (no per-row callback: the fast path for good files); a
    file with a malformed row is read again from memory, made valid UTF-8, with
    malformed rows skipped.

    The file is opened once (:func:`open_binary`: non-blocking, a regular file checked on
    its descriptor) and every byte parsed is read from that descriptor.
    """
    with open_binary(path) as fh:
        _after_check(path)
        return _read_open_csv(path, kind, fh)


def _read_open_csv(path: Path, kind: str, fh: Any) -> tuple[dict[str, Any], list[str], bool, int]:
    """:func:`read_csv_table` of the file open as ``fh``."""
    spec, text_col, required = READ_SPECS["pc_sampling" if kind.startswith("pc_sampling") else kind]
    gzipped = isinstance(fh, gzip.GzipFile)
    data = fh.read() if gzipped else None
    head = data[:HEAD_BYTES] if data is not None else fh.read(HEAD_BYTES)
    header_line = first_line(head)
    original = [c.strip().strip('"').strip() for c in header_line.split(",")]
    lower = [c.lower() for c in original]
    include = [o for o, low in zip(original, lower) if low in spec]
    types = {o: spec[low][1] for o, low in zip(original, lower) if low in spec}
    missing = [r for r in required if r not in lower]
    if missing:
        raise LoadError(f"header lacks column(s) {', '.join(missing)}")
    name_of = dict(zip(original, lower))

    # Plain files go to pyarrow through their checked descriptor; gzip is inflated here.
    last_line = _last_line(data if data is not None else _tail_of_file(fh))
    source = pa.BufferReader(data) if data is not None else _arrow_source(fh)
    if last_line is not None and last_line.strip() == header_line.strip():
        last_line = None

    replaced = False
    try:
        try:
            table, bad = _arrow_read(source, include, types, skip_bad=False, reopen=None if data is not None else lambda: _arrow_source(_rewound(fh)))
        except pa.ArrowInvalid as err:
            # Rows with the wrong number of fields, or text that is not UTF-8: read leniently.
            if not ("parse error" in str(err) or "invalid UTF8" in str(err)):
                raise
            if data is None:
                data = _all_of(fh)
            data, replaced = _utf8(data)
            table, bad = _arrow_read(pa.BufferReader(data), include, types)
        text_orig = next((o for o in include if name_of[o] == text_col), None)
        truncated = False
        if last_line is not None and last_line in bad:
            truncated = True
            bad.remove(last_line)
        needs_requote = bool(bad)
        if text_orig is not None and not needs_requote:
            # A name that kept a quote character was split by an unescaped embedded quote.
            needs_requote = any(pc.any(pc.match_substring(chunk.dictionary, '"')).as_py() for chunk in table.column(text_orig).chunks if len(chunk.dictionary))
        if text_orig is not None and text_col is not None and needs_requote:
            if data is None:
                data = _all_of(fh)
            data, was_replaced = _utf8(data)
            replaced = replaced or was_replaced
            fixed = _requote(data, len(original), lower.index(text_col), last_is_cut=truncated)
            table, bad = _arrow_read(pa.BufferReader(fixed), include, types)
            fixed_last = _last_line(fixed)
            truncated = fixed_last is not None and fixed_last in bad
            if fixed_last is not None and truncated:
                bad.remove(fixed_last)
        elif text_orig is not None and text_col is not None and last_line is not None and truncated:
            # Only the last line failed: a cut-off line, or one name with a quote in it.
            line = (header_line + "\n").encode() + _requote_line(last_line.encode(), len(original), lower.index(text_col))
            extra, extra_bad = _arrow_read(pa.BufferReader(line), include, types)
            complete = extra.num_rows == 1 and all(extra.column(o).null_count == 0 for o in include if name_of[o] in required)
            if complete and not extra_bad:
                table = pa.concat_tables([table, extra.cast(table.schema)], promote_options="permissive")
                truncated = False
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError) as err:
        raise LoadError(f"cannot parse CSV: {str(err).splitlines()[0]}") from None

    warnings = []
    if replaced:
        warnings.append(f"{path}: bytes that are not UTF-8 read as U+FFFD")
    if bad:
        warnings.append(f"{path}: {len(bad)} malformed row(s) skipped")
    table, cut, dropped = _without_incomplete_rows(table, [col for col in include if name_of[col] in required])
    truncated = truncated or (cut and last_line is not None)
    if dropped:
        warnings.append(f"{path}: {dropped} row(s) without {'/'.join(required)} skipped")

    return _table_columns(table, include, name_of, types, narrow=kind != "stats"), warnings, truncated, len(bad)


def _table_columns(table: pa.Table, include: list[str], name_of: dict[str, str], types: dict[str, str], narrow: bool) -> dict[str, Any]:
    """``{lower-case column: array}`` of a parsed table (see :func:`read_csv_table`)."""
    columns: dict[str, object] = {}
    for col in include:
        low = name_of[col]
        arr = table.column(col)
        dtype = types[col]
        if dtype == TEXT:
            series = arr.to_pandas(memory_pool=_parse_pool())
            if not isinstance(series.dtype, pd.CategoricalDtype):
                series = series.astype("category")
            if series.isna().any():
                series = series.cat.add_categories([""]).fillna("")
            columns[low] = series.reset_index(drop=True)
        elif dtype == FLOAT:
            columns[low] = arr.to_numpy(zero_copy_only=False).astype(np.float64)
        elif dtype == UINT:
            columns[low] = (arr if arr.null_count == 0 else pc.fill_null(arr, 0)).to_numpy().view(np.int64)
        else:
            columns[low] = _int_column(arr, narrow=narrow)
    return columns


# --------------------------------------------------------------------------- categories


def _map_categories(series: pd.Series, func) -> pd.Series:
    """Apply ``func`` to each distinct value of a categorical series (vectorised via codes)."""
    cats = [str(c) for c in series.cat.categories]
    mapped = [func(c) for c in cats]
    unique = sorted(set(mapped))
    index = {v: i for i, v in enumerate(unique)}
    lookup = np.array([index[v] for v in mapped], dtype=np.int32)
    codes = series.cat.codes.to_numpy()
    new_codes = np.where(codes >= 0, lookup[np.maximum(codes, 0)] if len(lookup) else -1, -1)
    return pd.Series(pd.Categorical.from_codes(new_codes, categories=unique))


def _map_to_ints(series: pd.Series, func) -> np.ndarray:
    """int64 array of ``func(value)`` for a categorical series, -1 where blank."""
    cats = [str(c) for c in series.cat.categories]
    lookup = np.array([func(c) for c in cats], dtype=np.int64)
    codes = series.cat.codes.to_numpy()
    if not len(lookup):
        return np.full(len(codes), UNKNOWN, dtype=np.int64)
    return np.where(codes >= 0, lookup[np.maximum(codes, 0)], UNKNOWN)


# --------------------------------------------------------------------------- agents


def _int_or_none(value) -> int | None:
    try:
        if value is None or (isinstance(value, float) and np.isnan(value)):
            return None
        return int(value)
    except (TypeError, ValueError):
        return None


def read_agent_info(path: Path) -> list[Agent]:
    """Agents from ``agent_info.csv`` (formats.md §2.2); sizes in bytes, clocks in MHz."""
    with open_regular(path) as fh:  # a regular file, checked on the descriptor pandas reads
        return agents_from(fh)


def agents_from(fh: Any) -> list[Agent]:
    """:func:`read_agent_info` of an open file (or a bytes buffer)."""
    frame = pd.read_csv(fh, dtype=str, keep_default_na=False, skipinitialspace=True)
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    if frame.columns[0] == "guid":
        frame = frame.iloc[:, 1:]
    fields = {
        "node_id": "node_id",
        "logical_node_id": "logical_index",
        "gfx_target_version": "gfx_target_version",
        "cu_count": "cu_count",
        "simd_per_cu": "simd_per_cu",
        "simd_count": "simd_count",
        "wave_front_size": "wave_size",
        "max_waves_per_simd": "max_waves_per_simd",
        "max_waves_per_cu": "max_waves_per_cu",
        "num_xcc": "num_xcc",
        "max_engine_clk_fcompute": "max_clock_mhz",
        "workgroup_max_size": "workgroup_max_size",
    }
    used = set(fields) | {"agent_type", "name", "product_name", "vendor_name", "lds_size_in_kb"}
    agents: list[Agent] = []
    type_counts: dict[str, int] = {}
    records = frame.to_dict("records")
    records.sort(key=lambda r: (_int_or_none(r.get("logical_node_id")) or 0, _int_or_none(r.get("node_id")) or 0))
    for rec in records:
        node = _int_or_none(rec.get("node_id"))
        if node is None:
            raise LoadError(f"agent row without an integer Node_Id: {rec.get('node_id')!r}")
        agent_type = str(rec.get("agent_type", "")).strip().upper() or "GPU"
        agent = Agent(id=node, type=agent_type)
        for column, attr in fields.items():
            if column in rec:
                setattr(agent, attr, _int_or_none(rec[column]))
        agent.name = str(rec.get("name", "")).strip()
        agent.product = str(rec.get("product_name", "")).strip()
        agent.vendor = str(rec.get("vendor_name", "")).strip()
        lds_kb = _int_or_none(rec.get("lds_size_in_kb"))
        agent.lds_bytes_per_cu = lds_kb * 1024 if lds_kb is not None else None
        if agent_type == "CPU":
            # KFD reports 0 for GPU-only properties of CPU agents.
            for attr in ("gfx_target_version", "simd_per_cu", "wave_size", "max_waves_per_simd", "max_waves_per_cu", "workgroup_max_size", "max_clock_mhz"):
                if getattr(agent, attr) == 0:
                    setattr(agent, attr, None)
            if not agent.lds_bytes_per_cu:
                agent.lds_bytes_per_cu = None
            # a CPU agent's clock is in Max_Engine_Clk_Ccompute (Fcompute is the GPU's)
            agent.max_clock_mhz = agent.max_clock_mhz or _int_or_none(rec.get("max_engine_clk_ccompute")) or None
        agent.type_index = type_counts.get(agent_type, 0)
        type_counts[agent_type] = agent.type_index + 1
        for column, value in rec.items():
            if column not in used:
                number = _int_or_none(value) if re.fullmatch(r"-?\d+", str(value).strip()) else None
                agent.extra[column] = number if number is not None else value
        agents.append(agent)
    agents.sort(key=lambda a: a.id)
    return agents


class AgentResolver:
    """Maps CSV agent spellings to Agent.id (= KFD node id).

    ``4`` (ROCm <= 6.4) is the node id; ``Agent 4`` (7.x default ``--agent-index relative``)
    is the logical index, mapped through agent_info's Logical_Node_Id when known;
    ``GPU 0`` / ``CPU 0`` (type-relative) map through the agent order within the type.
    """

    def __init__(self, agents: list[Agent]) -> None:
        self.agents = agents
        self.by_logical = {a.logical_index: a.id for a in agents if a.logical_index is not None}
        self.by_type = {(a.type, a.type_index): a.id for a in agents if a.type_index is not None}
        self.spellings: set[str] = set()
        self.unresolved: set[str] = set()
        self.types: dict[int, str] = {}  # implied type of ids seen without agent_info
        self.logical: set[int] = set()  # ids that came from "Agent N" without agent_info
        self.out_of_range = 0  # distinct id spellings beyond int64, read as UNKNOWN

    def resolve(self, token: str) -> int:
        text = token.strip()
        if not text:
            return UNKNOWN
        if re.fullmatch(r"-?\d+", text):
            self.spellings.add("node_id")
            return self._in_range(int(text))
        match = _AGENT_TOKEN.match(text)
        if not match:
            self.unresolved.add(text)
            return UNKNOWN
        label, index = match.group(1).upper(), self._in_range(int(match.group(2)))
        if index == UNKNOWN:
            return UNKNOWN
        if label == "AGENT":
            self.spellings.add("relative")
            if self.agents:
                if index in self.by_logical:
                    return self.by_logical[index]
                self.unresolved.add(text)
                return index
            self.logical.add(index)
            return index
        self.spellings.add("type-relative")
        if (label, index) in self.by_type:
            return self.by_type[(label, index)]
        if self.agents:
            self.unresolved.add(text)
        self.types[index] = label
        return index

    def _in_range(self, value: int) -> int:
        if -(1 << 63) <= value < 1 << 63:
            return value
        self.out_of_range += 1
        return UNKNOWN

    def column(self, series: pd.Series) -> np.ndarray:
        return _map_to_ints(series, self.resolve)


# --------------------------------------------------------------------------- tables


def _table(spec: str, cols: dict[str, Any], mapping: dict[str, str], extra: Mapping[str, object]) -> pd.DataFrame:
    data = {}
    for low, values in cols.items():
        target = mapping.get(low)
        if target:
            data[target] = values
    data.update(extra)
    return make_table(spec, data)


def _targets(spec: dict) -> dict[str, str]:
    return {low: target for low, (target, _) in spec.items()}


def _strip_prefix(prefix: str):
    return lambda value: value[len(prefix) :] if value.upper().startswith(prefix) else value


def _kernels(cols, resolver: AgentResolver) -> pd.DataFrame:
    extra = {"agent": resolver.column(cols["agent_id"])} if "agent_id" in cols else {}
    mapping = {k: v for k, v in _targets(KERNEL_COLUMNS).items() if k != "agent_id"}
    return _table("kernels", cols, mapping, extra)


def _api(cols) -> pd.DataFrame:
    extra = {"domain": _map_categories(cols["domain"], api_domain)}
    mapping = {k: v for k, v in _targets(API_COLUMNS).items() if k != "domain"}
    return _table("api", cols, mapping, extra)


def _copies(cols: dict[str, Any], resolver: AgentResolver) -> pd.DataFrame:
    extra: dict[str, object] = {}
    src = resolver.column(cols["source_agent_id"]) if "source_agent_id" in cols else UNKNOWN
    dst = resolver.column(cols["destination_agent_id"]) if "destination_agent_id" in cols else UNKNOWN
    if "direction" in cols:
        label = _map_categories(cols["direction"], lambda d: DIRECTIONS.get(d.upper(), "unknown"))
        extra["direction"], src, dst = labelled_copies(label, src_agent=src, dst_agent=dst)
    for low, target, value in (("source_agent_id", "src_agent", src), ("destination_agent_id", "dst_agent", dst)):
        if low in cols:
            extra[target] = value
    mapping = {k: v for k, v in _targets(COPY_COLUMNS).items() if k not in ("source_agent_id", "destination_agent_id")}
    return _table("copies", cols, mapping, extra)


def _hex_or_int(text: str) -> int:
    text = text.strip()
    try:
        value = int(text, 16) if text.lower().startswith("0x") else int(text)
    except ValueError:
        return UNKNOWN
    if not -(1 << 63) <= value < 1 << 64:
        return UNKNOWN  # beyond 64 bits: not an address
    return value - (1 << 64) if value >= 1 << 63 else value


def _allocations(cols, resolver: AgentResolver) -> pd.DataFrame:
    extra = {}
    if "operation" in cols:
        extra["operation"] = _map_categories(cols["operation"], _strip_prefix("MEMORY_ALLOCATION_"))
    if "agent_id" in cols:
        extra["agent"] = resolver.column(cols["agent_id"])
    if "address" in cols:
        extra["address"] = _map_to_ints(cols["address"], _hex_or_int)
    mapping = {k: v for k, v in _targets(ALLOC_COLUMNS).items() if k not in ("operation", "agent_id", "address")}
    return _table("allocations", cols, mapping, extra)


def _scratch(cols, resolver: AgentResolver) -> pd.DataFrame:
    extra = {}
    if "operation" in cols:
        extra["operation"] = _map_categories(cols["operation"], _strip_prefix("SCRATCH_MEMORY_"))
    if "agent_id" in cols:
        extra["agent"] = resolver.column(cols["agent_id"])
    mapping = {k: v for k, v in _targets(SCRATCH_COLUMNS).items() if k not in ("operation", "agent_id")}
    return _table("scratch", cols, mapping, extra)


def _counters(cols, resolver: AgentResolver) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(counters table, kernels reconstructed one per Dispatch_Id from the same rows)."""
    agent = resolver.column(cols["agent_id"])
    counters = make_table(
        "counters",
        {
            "dispatch_id": cols["dispatch_id"],
            "correlation_id": cols.get("correlation_id", UNKNOWN),
            "agent": agent,
            "counter": cols["counter_name"],
            "value": cols["counter_value"],
        },
    )
    dispatch = np.asarray(cols["dispatch_id"])
    _, first = np.unique(dispatch, return_index=True)
    first.sort()
    data = {}
    for low, (target, _) in COUNTER_COLUMNS.items():
        if low in cols and target not in ("counter", "value", "agent"):
            values = cols[low]
            data[target] = values.iloc[first].reset_index(drop=True) if isinstance(values, pd.Series) else values[first]
    data["agent"] = agent[first]
    return counters, make_table("kernels", data)


def _pc_samples(cols) -> pd.DataFrame:
    return _table("pc_samples", cols, _targets(PC_COLUMNS), {})


def _stats(cols) -> pd.DataFrame:
    """A profiler statistics file as a frame with STATS_COLUMNS (ns ints, avg/stddev float)."""
    frame = pd.DataFrame({target: cols[low] for low, (target, _) in STATS_TYPES.items() if low in cols})
    frame["name"] = frame["name"].astype(str)
    return frame[list(STATS_COLUMNS)]


# --------------------------------------------------------------------------- load


def _minimal_agents(run: Run, resolver: AgentResolver) -> list[Agent]:
    """Agent records for ids referenced by tables when there is no agent_info.csv."""
    types: dict[int, str] = {}

    def note(ids, agent_type):
        array = np.asarray(ids)
        if not array.size:  # most tables of a small run are empty
            return
        for value in np.unique(array).tolist():  # one type per call, so their order does not matter
            value = int(value)
            if value != UNKNOWN:
                types.setdefault(value, agent_type)

    copies = run.copies[["src_agent", "dst_agent", "direction"]].drop_duplicates() if len(run.copies) else None
    for _, row in copies.iterrows() if copies is not None else ():
        src_type, dst_type = COPY_TYPES.get(str(row["direction"]), ("GPU", "GPU"))
        note([row["src_agent"]], src_type)
        note([row["dst_agent"]], dst_type)
    for table in (run.kernels, run.counters, run.scratch):
        if len(table):  # no Series per (run, table): thousands of runs of one small file
            note(column_array(table, "agent"), "GPU")
    agents = []
    for agent_id in sorted(types):
        agent_type = resolver.types.get(agent_id, types[agent_id])
        agent = Agent(id=agent_id, type=agent_type)
        if agent_id in resolver.logical:
            agent.logical_index = agent_id
        elif "node_id" in resolver.spellings:
            agent.node_id = agent_id
        agents.append(agent)
    return agents


def _read_kind(kind: str) -> str:
    """Which READ_SPECS entry reads a file of Sniffed ``kind``."""
    if kind.endswith("api_trace"):
        return "api_trace"
    if kind.startswith("pc_sampling") and not kind.endswith("_stats"):
        return kind
    if kind in TRACE_NAMES:
        return kind
    return "stats"


def _read_early(files: list[DetectedFile]) -> dict[int, Job]:
    """Start reading the API trace files of a group in a daemon thread, so that they parse
    while the kernel trace is read in the calling thread (pyarrow parses without the GIL):
    ``{id(item): Job}``. The tables are still built in file order by the caller."""
    api = [item for item in files if _read_kind(item.kind) == "api_trace"]
    if not api or len(api) == len(files):
        return {}
    context = contextvars.copy_context()  # the load's cancel event
    jobs = background([functools.partial(context.run, read_csv_table, item.path, "api_trace") for item in api], name="tuiprof-csv-api")
    return {id(item): job for item, job in zip(api, jobs) if job is not None}


def _load_group(group: str, files: list[DetectedFile], issues: IssueSink, ready: Any = None) -> list[Run]:
    """The runs of one process group. ``ready`` (a :class:`tui_prof.loaders.csv_batch.Ready`):
    the group's one kernel trace already read with others and cut to this process, with
    its agent resolver."""
    directory, _, prefix = group.rpartition("/")
    run = Run()
    meta = run.meta
    meta.tool = "rocprofv3"
    meta.formats = [FORMAT]

    _group_agents(run, [f for f in files if f.kind == "agent_info"], issues, ready)
    resolver = ready.resolver if ready is not None else AgentResolver(run.agents)

    kernels, apis, copies, allocs, scratch, counters, synth, samples = ([] for _ in range(8))
    pids: set[int] = set()
    counter_pids: list[tuple[DetectedFile, set[int]]] = []  # per counter file: the processes its rows name
    early = _read_early(files)
    traces = [item for item in files if item.kind != "agent_info"]
    if ready is not None:
        kernels.append(ready.kernels)
        meta.files.extend(str(item.path) for item in traces)
        traces = []
    # The files read here first, the API traces parsing beside them last: waiting for a
    # background read before reading the kernel trace would parse the two one after the other.
    read: dict[int, tuple | BaseException] = {}
    for item in sorted(traces, key=lambda it: id(it) in early):
        job = early.get(id(item))
        try:
            read[id(item)] = job.result() if job is not None else read_csv_table(item.path, _read_kind(item.kind))
        except (LoadError, OSError, KeyError, ValueError, OverflowError, TypeError, IndexError, pa.ArrowException) as err:
            read[id(item)] = err
    for item in traces:  # the tables in file order
        kind = item.kind
        read_kind = _read_kind(kind)
        try:
            got = read.pop(id(item))
            if isinstance(got, BaseException):
                raise got
            cols, warnings, truncated, malformed = got
            if read_kind == "kernel_trace":
                kernels.append(_kernels(cols, resolver))
            elif read_kind == "api_trace":
                apis.append(_api(cols))
                pids.update(int(p) for p in pd.unique(cols.get("process_id", np.array([], dtype=np.int64))))
            elif read_kind == "memory_copy_trace":
                copies.append(_copies(cols, resolver))
            elif read_kind == "memory_allocation_trace":
                allocs.append(_allocations(cols, resolver))
            elif read_kind == "scratch_memory_trace":
                scratch.append(_scratch(cols, resolver))
            elif read_kind == "counter_collection":
                table, rebuilt = _counters(cols, resolver)
                counters.append(table)
                synth.append(rebuilt)
                counter_pids.append((item, {int(p) for key in ("process_id", "pid") if key in cols for p in pd.unique(cols[key])}))
            elif read_kind.startswith("pc_sampling"):
                samples.append(_pc_samples(cols))
            else:
                run.tool_stats[kind], notes = check_stats(_stats(cols), item.path)
                warnings.extend(notes)
        except (LoadError, OSError, KeyError, ValueError, OverflowError, TypeError, IndexError, pa.ArrowException) as err:
            issues.error(item.path, read_error(err) if isinstance(err, OSError) else f"cannot read rocprofv3 {kind} CSV: {err}")
            run.warnings.append(f"{item.path}: not loaded ({err})")
            run.partial = True
            continue
        meta.files.append(str(item.path))
        run.warnings.extend(warnings)
        _dropped_rows(run, item, cols, truncated, malformed, issues)

    passes = _other_passes(run, pids, counter_pids, counters, synth)
    moved = {p.meta.extra["pids"][0] for p in passes}
    pids.update(p for _, file_pids in counter_pids for p in file_pids if not file_pids & moved)
    for name, parts in (
        ("kernels", kernels),
        ("api", apis),
        ("copies", copies),
        ("allocations", allocs),
        ("scratch", scratch),
        ("counters", counters),
        ("pc_samples", samples),
    ):
        if ready is not None and name == "kernels" and len(parts) == 1:
            run.kernels = ready.kernels  # cut for this process alone, its index from 0: no copy to make
        elif parts:  # else the run keeps its empty table
            setattr(run, name, concat_tables(name, parts))
    if not kernels and synth:
        run.kernels = concat_tables("kernels", synth)
        if len(run.kernels):
            run.warnings.append(COUNTER_WARNING)
            meta.extra["kernels_from_counters"] = True

    _markers_from_api(run)
    _identify(run, directory, prefix, pids)
    _settle_agents(run, resolver)
    _name_passes(run, passes, directory)
    if not meta.files:
        return passes
    return [run, *passes]


def _group_agents(run: Run, agent_files: list[DetectedFile], issues: IssueSink, ready: Any) -> None:
    """The group's agents: read from its agent_info files, or those a batch read for it
    (``ready.agents``: the same agents, each id's first kept, copied for this run)."""
    if ready is None:
        _read_agents(run, agent_files, issues)
        return
    for agent in copy.deepcopy(ready.agents):
        if run.agent(agent.id) is None:
            run.agents.append(agent)
    run.meta.files.extend(str(item.path) for item in agent_files)


def _identify(run: Run, directory: str, prefix: str, pids: set[int]) -> None:
    """Process identity: "<hostname>/<pid>_<kind>.csv" by default (formats.md §1)."""
    meta = run.meta
    meta.pid, several = process_pid(prefix, sorted(pids))
    if several:
        meta.extra["pids"] = several
    if pid_from_prefix(prefix) is not None:
        meta.hostname = Path(directory).name
        meta.label = f"{meta.hostname}/{prefix}" if meta.hostname else prefix
    else:
        meta.label = prefix or Path(directory).name or directory
    if meta.pid is not None and len(run.kernels):
        pid = column_array(run.kernels, "pid")
        if (pid == UNKNOWN).any():  # else the column stays as it is (same values, same dtype)
            run.kernels["pid"] = compact_int(np.where(pid == UNKNOWN, meta.pid, pid))
    meta.extra["prefix"] = prefix
    meta.extra["directory"] = directory


def _name_passes(run: Run, passes: list[Run], directory: str) -> None:
    """Label, host and agents of the counter passes split off ``run``."""
    for other in passes:
        used = set(other.counters["agent"].tolist())
        other.agents = [a for a in run.agents if a.id in used]
        other.meta.hostname = run.meta.hostname
        other.meta.extra["directory"] = directory
        other.meta.label = f"{run.meta.label} counters pid {other.meta.extra['pids'][0]}"


def _other_passes(run: Run, pids: set[int], counter_pids: list, counters: list[pd.DataFrame], synth: list[pd.DataFrame]) -> list[Run]:
    """Counter files recorded by other processes than the group's trace, as runs of their own.

    rocprofv3 numbers dispatches from 1 in every process, so counter rows of two processes
    joined to one trace by dispatch id would add up (issue 32: 24,576 waves where each row holds
    16,384). A counter file stays with the group when it names one process and that process is
    the traced one (its API calls) or the group's only counter process with no API trace to
    contradict it; every other counter file becomes a run of its own process (its kernels
    rebuilt from its rows). ``counters``/``synth`` lose the entries moved (same order as
    ``counter_pids``)."""
    every = set().union(*(p for _, p in counter_pids)) if counter_pids else set()
    if len(every) <= 1 and (not pids or every <= pids):
        return []
    kept = [bool(p) and len(p) == 1 and p <= pids for _, p in counter_pids]
    moved: dict[int, Run] = {}
    for (item, file_pids), keep, table, rebuilt in zip(counter_pids, kept, list(counters), list(synth), strict=True):
        if keep:
            continue
        counters.remove(table)
        synth.remove(rebuilt)
        pid = min(file_pids) if file_pids else UNKNOWN
        # meta.pid stays None: the same pid in another folder is another process (pid reuse), not
        # one whose fragments assemble() should merge; the label and extra["pids"] name it
        other = moved.setdefault(pid, Run(meta=RunMeta(tool="rocprofv3", formats=[FORMAT], extra={"pids": [pid]})))
        other.counters = concat_tables("counters", [other.counters, table])
        other.kernels = concat_tables("kernels", [other.kernels, rebuilt])
        other.meta.files.append(str(item.path))
        if str(item.path) in run.meta.files:
            run.meta.files.remove(str(item.path))
    for other in moved.values():
        other.warnings.append(COUNTER_WARNING)
        other.meta.extra["kernels_from_counters"] = True
        other.meta.extra["counter_pass_of"] = sorted(pids)
    if moved:
        run.warnings.append(
            f"counter files of process(es) {', '.join(str(p) for p in sorted(moved))} are another recording than this trace: "
            "loaded as runs of their own, not joined to its dispatches"
        )
        run.meta.extra["counter_passes_apart"] = sorted(moved)
    return list(moved.values())


def _dropped_rows(run: Run, item: DetectedFile, cols: dict[str, Any], truncated: bool, malformed: int, issues: IssueSink) -> None:
    """Say that a file's last row was cut or that malformed rows were skipped (the run is partial)."""
    if truncated:
        run.partial = True
        run.warnings.append(f"{item.path}: last line is incomplete (file cut short?); complete rows loaded")
    if truncated or malformed:
        run.partial = True  # rows of this file were dropped
        rows = len(next(iter(cols.values()))) if cols else 0
        problems = []
        if truncated:
            problems.append("truncated: last row cut short and dropped")
        if malformed:
            problems.append(f"{malformed} malformed row(s) (wrong number of fields) skipped")
        issues.error(item.path, f"{'; '.join(problems)}; {rows} complete rows loaded")


def _read_agents(run: Run, agent_files: list[DetectedFile], issues: IssueSink) -> None:
    """The agents of the group's agent_info files (the first of each id kept)."""
    for item in agent_files:
        try:
            run.agents.extend(a for a in read_agent_info(item.path) if run.agent(a.id) is None)
            run.meta.files.append(str(item.path))
        except OSError as err:
            issues.error(item.path, read_error(err))
            run.partial = True
        except (LoadError, ValueError, pd.errors.ParserError) as err:
            issues.error(item.path, f"cannot read rocprofv3 agent_info: {err}")
            run.partial = True


def _markers_from_api(run: Run) -> None:
    """The roctx ranges (the API trace's ``marker`` domain) as the run's markers."""
    marker_rows = run.api[run.api["domain"] == "marker"] if len(run.api) else run.api
    if len(marker_rows):
        run.markers = make_table(
            "markers",
            {
                "start": marker_rows["start"].to_numpy(),
                "end": marker_rows["end"].to_numpy(),
                "name": marker_rows["name"].cat.remove_unused_categories().reset_index(drop=True),
                "source": "roctx",
                "pid": marker_rows["pid"].to_numpy(),
                "tid": marker_rows["tid"].to_numpy(),
            },
        )


def _settle_agents(run: Run, resolver: AgentResolver) -> None:
    """Minimal agents when no agent_info was read, and warnings for agent ids the resolver
    could not place."""
    if resolver.spellings:
        run.meta.extra["agent_index"] = sorted(resolver.spellings)
    if not run.agents:
        run.agents = _minimal_agents(run, resolver)
        if "type-relative" in resolver.spellings:
            run.warnings.append("type-relative agent ids (GPU N / CPU N) without agent_info.csv; agent ids are approximate")
    elif resolver.unresolved:
        run.warnings.append(f"agent id(s) not found in agent_info.csv: {', '.join(sorted(resolver.unresolved))}")
    if resolver.out_of_range:
        run.warnings.append(f"{resolver.out_of_range} agent id value(s) beyond int64 read as unknown (-1)")


def load(files: list[DetectedFile], issues: IssueSink) -> list[Run]:
    """One Run per (directory, file prefix) group."""
    groups: dict[str, list[DetectedFile]] = {}
    for item in files:
        groups.setdefault(item.group, []).append(item)
    runs = []
    for group, items in groups.items():
        runs.extend(_load_group(group, items, issues))
    _release_parse_memory()
    return runs


def load_batch(units: list[list[DetectedFile]]) -> list[tuple[list[Run], IssueSink]]:
    """Each unit's runs and issues, as :func:`load` gives them unit by unit, reading the
    small kernel traces of many processes together (:mod:`tui_prof.loaders.csv_batch`)."""
    from tui_prof.loaders import csv_batch

    return csv_batch.load_batch(units)
