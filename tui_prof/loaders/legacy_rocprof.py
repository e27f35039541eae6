"""Legacy rocprof (v1) output: ``rocprof [--stats] [--hip-trace|--hsa-trace|--sys-trace] -o <prefix>.csv``.

Files of one run share a prefix (the ``-o`` name without ``.csv``):

* ``<prefix>.db`` — SQLite written by ``tblextr.py``: tables ``KERN`` (kernel dispatches
  with counters), ``OPS`` (kernels from ``--hip-trace``), ``COPY``, ``HIP``, ``HSA``, ``rocTX``;
* ``<prefix>.json`` — chrome trace of the same tables (first event ``{}``, ns kept in ``args``);
* ``<prefix>.csv`` — the ``KERN`` table (``Index,KernelName,...``; quoted header plus a
  ``DurationNs`` column when a DB was written, unquoted and without it for counter runs);
* ``<prefix>.stats.csv`` / ``.hip_stats.csv`` / ``.hsa_stats.csv`` / ``.copy_stats.csv`` —
  the profiler's own 5-column statistics, kept in ``Run.tool_stats``;
* ``<prefix>.sysinfo.txt`` — a ``rocminfo`` dump, read for the agents.

The DB, JSON and CSV of one prefix hold the same dispatches: exactly one of them is read
(preference db > json > csv; a broken one falls back to the next) and the others are
reported as skipped, so nothing is counted twice.

Agent ids: ``gpu-id`` (KERN) and ``dev-id`` (OPS/COPY) are KFD node ids — in the samples
they equal the ``Node:`` of the GPU agent in the run's rocminfo dump — so they are used as
``Agent.id`` directly.

How rocprof v1 computed its statistics (``dform.py`` ``post_process_data`` /
``gen_table_bins`` / ``gen_data_bins``, SQLite): per row ``DurationNs = EndNs - BeginNs``;
grouped by name, ``Calls = count``, ``TotalDurationNs = sum(DurationNs)``,
``AverageNs = TotalDurationNs / Calls`` in SQLite integer division (truncated toward zero),
``Percentage = TotalDurationNs * 100.0 / sum of all TotalDurationNs``; rows sorted by total
descending. Kernel stats come from ``OPS`` when it has rows (it is written last and overwrites
the ``KERN`` stats), else from ``KERN``; HIP/HSA stats from ``HIP``/``HSA`` (HSA includes the
zero-length ``hsa_dispatch`` rows), copy stats from ``COPY``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

from tui_prof.loaders import sqlguard
from tui_prof.loaders.base import (
    DetectedFile,
    IssueSink,
    LoadError,
    Sniffed,
    check_stats,
    csv_complete_rows,
    describe_error,
    ensure_regular,
    first_line,
    int_column,
    labelled_copies,
    load_groups,
    one_line,
    open_regular,
    process_pid,
    read_error,
    read_text,
    split_header,
    warn_negative_durations,
)
from tui_prof.loaders.rocpd import ALLOC_CALLS, FREE_CALLS, SIZE_ARGS, arg_int
from tui_prof.loaders.specs import SPECS
from tui_prof.model import Agent, Run, RunMeta
from tui_prof.model.schema import STATS_COLUMNS, UNKNOWN, concat_tables, make_table

LOADER = SPECS["legacy_rocprof"]
FORMAT = LOADER.format

SQLITE_MAGIC = b"SQLite format 3\x00"
LEGACY_TABLES = (b"KERN", b"OPS", b"COPY", b"HIP", b"HSA", b"rocTX")
STATS_HEADER = ["name", "calls", "totaldurationns", "averagens", "percentage"]
STATS_NAMES = {"name": "Name", "calls": "Calls", "totaldurationns": "TotalDurationNs", "averagens": "AverageNs", "percentage": "Percentage"}

# file-name suffix -> (kind, tool_stats key); the longest suffix is tried first.
SUFFIXES = (
    (".hip_stats.csv", "hip_api_stats"),
    (".hsa_stats.csv", "hsa_api_stats"),
    (".copy_stats.csv", "memory_copy_stats"),
    (".stats.csv", "kernel_stats"),
    (".sysinfo.txt", "sysinfo"),
    (".memcopy_info.csv", "memcopy_info"),
    (".csv", "kernel_csv"),
    (".json", "trace_json"),
    (".db", "trace_db"),
)
STATS_KINDS = {"hip_api_stats", "hsa_api_stats", "memory_copy_stats", "kernel_stats"}
TRACE_KINDS = ("trace_db", "trace_json", "kernel_csv")  # preference order for the dispatches

# Columns of the KERN table that are dispatch properties, not counters.
KERN_PROPERTIES = {
    "Index",
    "KernelName",
    "gpu-id",
    "queue-id",
    "queue-index",
    "pid",
    "tid",
    "grd",
    "wgr",
    "lds",
    "scr",
    "vgpr",
    "arch_vgpr",
    "accum_vgpr",
    "sgpr",
    "wave_size",
    "fbar",
    "sig",
    "obj",
    "DispatchNs",
    "BeginNs",
    "EndNs",
    "CompleteNs",
    "DurationNs",
}

# chrome-trace pids fixed by tblextr.py
JSON_MARKER_PID, JSON_COPY_PID, JSON_HIP_PID, JSON_HSA_PID, JSON_GPU_BASE_PID = 0, 1, 2, 3, 6


# --------------------------------------------------------------------------- sniffing


def _split_name(path: Path) -> tuple[str, str]:
    """(kind, prefix) from the file name; kind "" if the name has none of our suffixes."""
    name = path.name
    for suffix, kind in SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return kind, name[: -len(suffix)]
    return "", name


def _is_kernel_header(cells: list[str]) -> bool:
    """rocprof writes Index,KernelName first; columns are read by name, so any order is accepted."""
    return cells[:2] == ["index", "kernelname"] or ("index" in cells and "kernelname" in cells and "gpu-id" in cells)


def sniff(path: Path, head: bytes) -> Sniffed | None:
    kind, prefix = _split_name(path)
    group = f"{path.parent}/{prefix}"
    if head.startswith(SQLITE_MAGIC):
        # The schema (sqlite_master) lives in page 1: look for the tblextr.py CREATE statements.
        if any(b"CREATE TABLE " + t + b" (" in head for t in LEGACY_TABLES) and b"rocpd_" not in head:
            return Sniffed("trace_db", group)
        return None
    text = head.lstrip()
    if text.startswith(b"{"):
        if re.match(rb'\{\s*"traceEvents"\s*:\s*\[\s*\{\s*\}', text):
            return Sniffed("trace_json", group)
        return None
    line = first_line(head)
    if line.startswith("CMD: rocminfo") and kind == "sysinfo":
        return Sniffed("sysinfo", group)
    cells = split_header(line)
    if _is_kernel_header(cells):
        return Sniffed("kernel_csv", group)
    if sorted(cells) == sorted(STATS_HEADER):
        return Sniffed(kind if kind in STATS_KINDS else "kernel_stats", group)
    return None


# --------------------------------------------------------------------------- helpers


def _unquote(values: pd.Series) -> pd.Series:
    """Strip one pair of literal double quotes: tblextr.py stores names as '"name"' in the DB."""
    text = values.astype(str)
    quoted = text.str.startswith('"') & text.str.endswith('"') & (text.str.len() >= 2)
    if quoted.any():
        text = text.where(~quoted, text.str.slice(1, -1))
    return text


def _names(frame: pd.DataFrame, column: str, quoted: bool) -> pd.Series:
    """A name column as text, without tblextr.py's literal quotes when ``quoted``."""
    names = frame[column].astype(str)
    return _unquote(names) if quoted else names


def _span(frame: pd.DataFrame) -> dict:
    """The columns every tblextr.py table shares: start/end (BeginNs/EndNs), pid and tid."""
    return {
        "start": int_column(frame, "BeginNs", drop_fraction=False),
        "end": int_column(frame, "EndNs", drop_fraction=False),
        "pid": int_column(frame, "pid"),
        "tid": int_column(frame, "tid"),
    }


def _direction_labels(names: pd.Series) -> np.ndarray:
    """Direction label from the copy's name (CopyHostToDevice -> HtoD, Fill/Memset -> memset)."""
    text = names.astype(str)
    out = np.full(len(text), "unknown", dtype=object)
    for pattern, label in (
        ("HostToDevice", "HtoD"),
        ("DeviceToHost", "DtoH"),
        ("DeviceToDevice", "DtoD"),
        ("HostToHost", "HtoH"),
        ("PeerToPeer", "PtoP"),
        ("Fill|Memset", "memset"),
    ):
        out[text.str.contains(pattern, regex=True).to_numpy()] = label
    return out


# --------------------------------------------------------------------------- table builders


def kern_tables(frame: pd.DataFrame, quoted_names: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(kernels, counters) from a KERN-shaped frame (results.csv, KERN table, JSON KERN args)."""
    names = _names(frame, "KernelName", quoted_names)
    dispatch = int_column(frame, "Index")
    agent = int_column(frame, "gpu-id")
    kernels = make_table(
        "kernels",
        {
            **_span(frame),
            "agent": agent,
            "queue": int_column(frame, "queue-id"),
            "dispatch_id": dispatch,
            "name": names,
            "grid_x": int_column(frame, "grd"),
            "wg_x": int_column(frame, "wgr"),
            "lds_bytes": int_column(frame, "lds"),
            "scratch_bytes": int_column(frame, "scr"),
            "arch_vgpr": int_column(frame, "arch_vgpr" if "arch_vgpr" in frame.columns else "vgpr"),
            "accum_vgpr": int_column(frame, "accum_vgpr"),
            "sgpr": int_column(frame, "sgpr"),
        },
    )
    counter_cols = [c for c in frame.columns if c not in KERN_PROPERTIES and not str(c).startswith("__")]
    parts = []
    n = len(frame)
    for col in counter_cols:
        values = pd.to_numeric(frame[col], errors="coerce")
        parts.append(
            make_table(
                "counters",
                {
                    "dispatch_id": dispatch,
                    "agent": agent,
                    "counter": pd.Categorical([col] * n),
                    "value": values.to_numpy(dtype="float64"),
                },
            )
        )
    return kernels, concat_tables("counters", parts)


def ops_kernels(frame: pd.DataFrame, quoted_names: bool) -> pd.DataFrame:
    """Kernels (and barrier packets) from the OPS table of a --hip-trace run."""
    names = _names(frame, "Name", quoted_names)
    return make_table(
        "kernels",
        {
            **_span(frame),
            "agent": int_column(frame, "dev-id"),
            "queue": int_column(frame, "queue-id"),
            "stream": int_column(frame, "stream-id"),
            "correlation_id": int_column(frame, "Index"),
            "name": names,
        },
    )


def copy_table(frame: pd.DataFrame, quoted_names: bool) -> pd.DataFrame:
    names = _names(frame, "Name", quoted_names)
    direction, src, dst = labelled_copies(_direction_labels(names), device=int_column(frame, "dev-id"))
    return make_table(
        "copies",
        {
            **_span(frame),
            "direction": direction,
            "src_agent": src,
            "dst_agent": dst,
            "queue": int_column(frame, "queue-id"),
            "stream": int_column(frame, "stream-id"),
            "correlation_id": int_column(frame, "Index"),
            "name": names,
        },
    )


def api_table(frame: pd.DataFrame, domain: str, quoted_names: bool) -> pd.DataFrame:
    names = _names(frame, "Name", quoted_names)
    return make_table(
        "api",
        {
            **_span(frame),
            "domain": domain,
            "name": names,
            "correlation_id": int_column(frame, "Index"),
        },
    )


_ARG = re.compile(r"(\w+)\(([^()]*)\)")  # one "name(value)" of rocprof v1's args text "( ptr(0x7f..) size(4000))"


def api_allocations(frame: pd.DataFrame, quoted_names: bool) -> pd.DataFrame:
    """Device-memory allocation and free calls of the HIP table as ``allocations`` rows named
    after the function (analysis/memory.py's last memory source): the size from the args text
    (``size``/``sizeBytes``, width x height for a pitched allocation) and the pointer, which
    rocprof v1 prints after the call (the allocation's address, as the free's ``ptr`` is), so
    frees are matched by it."""
    if "args" not in frame.columns or not len(frame):
        return make_table("allocations", {})
    names = _names(frame, "Name", quoted_names).astype(str).to_numpy()
    keep = np.flatnonzero(np.isin(names, list(ALLOC_CALLS | FREE_CALLS)))
    if not len(keep):
        return make_table("allocations", {})
    sizes, addresses, taken = [], [], []
    for j, (i, text) in enumerate(zip(keep.tolist(), frame["args"].iloc[keep].astype(str).tolist(), strict=True)):
        args = {k.lower(): v.strip() for k, v in _ARG.findall(text)}
        if names[i] in FREE_CALLS:
            size: int | None = -1
        elif "pitch" in names[i].lower():
            width = next((arg_int(v) for k, v in args.items() if k.startswith("width")), None)
            height = arg_int(args.get("height", ""))
            size = width * height if width is not None and height is not None else None
        else:
            size = next((arg_int(v) for k, v in args.items() if k in SIZE_ARGS), None)
        if size is None:
            continue  # no readable size: not an allocation this source can count
        pointer = next((arg_int(v) for k, v in args.items() if k in ("ptr", "dev_ptr", "dptr")), None)
        taken.append(j)
        sizes.append(size)
        addresses.append(-1 if pointer is None else pointer)
    rows = keep[np.asarray(taken, dtype=np.int64)]
    span = _span(frame)
    return make_table(
        "allocations",
        {
            **{k: np.asarray(v)[rows] for k, v in span.items()},
            "operation": names[rows].astype(object),
            "agent": np.full(len(rows), UNKNOWN, np.int64),
            "bytes": np.asarray(sizes, np.int64),
            "address": np.asarray(addresses, np.int64),
            "correlation_id": np.asarray(int_column(frame, "Index"))[rows] if "Index" in frame.columns else UNKNOWN,
        },
    )


def marker_table(frame: pd.DataFrame, quoted_names: bool) -> pd.DataFrame:
    names = _names(frame, "Name", quoted_names)
    return make_table(
        "markers",
        {
            **_span(frame),
            "name": names,
            "source": "roctx",
        },
    )


# --------------------------------------------------------------------------- readers


def read_db(path: Path, run: Run) -> None:
    """Fill ``run`` from a tblextr.py SQLite file, opened read-only and immutable under the
    SQLite guard (:mod:`tui_prof.loaders.sqlguard`: value length, steps, time, text)."""
    try:
        guard = sqlguard.SqlGuard(os.stat(path).st_size)
        con = sqlguard.connect(path, guard=guard)
    except sqlite3.Error as err:
        raise LoadError(f"cannot open SQLite database: {err}") from None
    except OSError as err:
        raise LoadError(read_error(err)) from None
    try:
        try:
            tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as err:
            raise LoadError(f"cannot read SQLite database: {err}") from None
        if not tables & {"KERN", "OPS", "COPY", "HIP", "HSA", "rocTX"}:
            raise LoadError("SQLite database without the rocprof v1 tables KERN/OPS/COPY/HIP/HSA/rocTX")

        def table(name: str) -> pd.DataFrame | None:
            if name not in tables:
                return None
            try:
                return pd.read_sql_query(f'SELECT * FROM "{name}"', con)
            except (sqlite3.DatabaseError, pd.errors.DatabaseError) as err:
                cause = err.__cause__ if isinstance(err.__cause__, sqlite3.Error) else err
                meaning = guard.interrupted(cause) if isinstance(cause, sqlite3.Error) else None
                raise (meaning or LoadError(f"cannot read table {name}: {err}")) from None

        kern, ops = table("KERN"), table("OPS")
        _fill_kernels(run, kern, ops, quoted_names=True)
        copy = table("COPY")
        if copy is not None and len(copy):
            run.copies = copy_table(copy, True)
        apis = []
        for name, domain in (("HIP", "hip"), ("HSA", "hsa")):
            frame = table(name)
            if frame is not None and len(frame):
                apis.append(api_table(frame, domain, True))
                if name == "HIP":
                    run.allocations = api_allocations(frame, True)
        run.api = concat_tables("api", apis)
        roctx = table("rocTX")
        if roctx is not None and len(roctx):
            run.markers = marker_table(roctx, True)
    finally:
        con.close()


def is_packet_name(name: str) -> bool:
    """Whether ``name`` is one of rocprof v1's pseudo-kernel names for an AQL packet that is not
    a kernel dispatch (``"<barrier packet>"``: a barrier-AND/OR packet's wait, which can last
    seconds and is no GPU work)."""
    return name.startswith("<") and name.endswith(">") and "packet" in name


def note_packets(run: Run, source: str, names: pd.Series, durations: np.ndarray, calls: np.ndarray | None = None) -> np.ndarray:
    """Mask of the rows of ``names`` that are kernels; the packet rows left out are counted in
    ``run.meta.extra["non_kernel_packets"]`` (per source and name: rows, calls, total ns) and
    named in one warning, so the integrity check can say what was removed."""
    values = names.astype(str).to_numpy()
    unique = pd.unique(values)
    packets = [n for n in unique if is_packet_name(str(n))]
    if not packets:
        return np.ones(len(values), dtype=bool)
    drop = np.isin(values, packets)
    found = run.meta.extra.setdefault("non_kernel_packets", [])
    for name in packets:
        rows = values == name
        count = int(calls[rows].sum()) if calls is not None else int(rows.sum())
        total = int(np.clip(durations[rows], 0, None).sum())
        found.append({"source": source, "name": str(name), "rows": int(rows.sum()), "calls": count, "total_ns": total})
        run.warnings.append(f"{count} {name} rows ({source}) are not kernel dispatches: kept out of the kernel tables")
    return ~drop


def _fill_kernels(run: Run, kern: pd.DataFrame | None, ops: pd.DataFrame | None, quoted_names: bool) -> None:
    """Kernels from OPS when it has rows (as rocprof's own kernel stats), else from KERN; KERN
    counters are kept either way. Barrier packets (OPS ``"<barrier packet>"`` rows) are left out."""
    kern_rows = len(kern) if kern is not None and "KernelName" in kern.columns else 0
    kern_kernels = None
    if kern is not None and kern_rows:
        kern_kernels, run.counters = kern_tables(kern, quoted_names)
    if ops is not None and len(ops):
        kernels = ops_kernels(ops, quoted_names)
        keep = note_packets(run, "OPS", kernels["name"], (kernels["end"] - kernels["start"]).to_numpy())
        run.kernels = kernels if keep.all() else kernels[keep].reset_index(drop=True)
        if kern_rows:
            run.warnings.append(
                f"both KERN ({kern_rows} rows) and OPS ({len(ops)} rows) hold dispatches; kernels taken from OPS "
                "as rocprof's own kernel statistics are, KERN kept for its counters only"
            )
    elif kern_kernels is not None:
        run.kernels = kern_kernels


def read_json(path: Path, run: Run) -> dict:
    """Fill ``run`` from a rocprof v1 chrome trace; returns its ``otherData`` (rocminfo facts).

    Timestamps come from ``args.BeginNs``/``args.EndNs`` (exact ns), not from the µs ``ts``."""
    try:
        doc = json.loads(read_text(path))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise LoadError(f"invalid JSON ({err.__class__.__name__}: {err})") from None
    except OSError as err:
        raise LoadError(read_error(err)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise LoadError("JSON without a traceEvents list")
    events = doc["traceEvents"]
    lanes: dict[int, str] = {}
    for ev in events:
        if isinstance(ev, dict) and ev.get("ph") == "M" and ev.get("name") == "process_name":
            with contextlib.suppress(KeyError, TypeError, ValueError):
                lanes[int(ev["pid"])] = str((ev.get("args") or {}).get("name", ""))
    buckets: dict[str, list[dict]] = defaultdict(list)
    for ev in events:
        if not isinstance(ev, dict) or ev.get("ph") != "X":
            continue
        args = ev.get("args")
        if not isinstance(args, dict):
            continue
        try:
            pid = int(ev["pid"])
        except (KeyError, TypeError, ValueError):
            continue
        label = lanes.get(pid, "")
        if "KernelName" in args:
            buckets["kern"].append(args)
        elif pid == JSON_COPY_PID or label == "COPY":
            buckets["copy"].append(args)
        elif pid == JSON_HIP_PID or label == "CPU HIP API":
            buckets["hip"].append(args)
        elif pid == JSON_HSA_PID or label == "CPU HSA API":
            buckets["hsa"].append(args)
        elif pid == JSON_MARKER_PID or label == "Markers and Ranges":
            buckets["roctx"].append(args)
        elif pid >= JSON_GPU_BASE_PID or label.startswith("GPU"):
            buckets["ops"].append(args)
    frames = {key: pd.DataFrame.from_records(rows) for key, rows in buckets.items()}
    _fill_kernels(run, frames.get("kern"), frames.get("ops"), quoted_names=True)
    if "copy" in frames:
        run.copies = copy_table(frames["copy"], True)
    run.api = concat_tables("api", [api_table(frames[k], k, True) for k in ("hip", "hsa") if k in frames])
    if "hip" in frames:
        run.allocations = api_allocations(frames["hip"], True)
    if "roctx" in frames:
        run.markers = marker_table(frames["roctx"], True)
    other = doc.get("otherData")
    return other if isinstance(other, dict) else {}


def read_kernel_csv(path: Path, run: Run, issues: IssueSink) -> None:
    """Fill ``run`` from results.csv (KERN table dump). A last row cut short is dropped with an error."""
    try:
        text = read_text(path)
    except OSError as err:
        raise LoadError(read_error(err)) from None
    if not _is_kernel_header(split_header(first_line(text.partition("\n")[0].encode("utf-8", "replace")))):
        raise LoadError("not a rocprof kernel table (header must start with Index,KernelName)")
    # rocprof ends every row with a newline: without one the last row was cut short.
    frame, truncated = csv_complete_rows(text)
    if truncated:
        run.partial = True
        issues.error(path, f"truncated: last row cut short and dropped; {len(frame)} complete rows loaded")
    _fill_kernels(run, frame, None, quoted_names=False)


def read_stats(path: Path) -> pd.DataFrame:
    """A 5-column rocprof v1 stats file as a ``STATS_COLUMNS`` table (min/max/stddev NaN)."""
    try:
        ensure_regular(path)
    except OSError as err:
        raise LoadError(read_error(err)) from None
    try:
        with open_regular(path) as fh:  # never a FIFO swapped in after the check above
            frame = pd.read_csv(fh, dtype={"Name": str}, keep_default_na=False)
    except (pd.errors.ParserError, ValueError, OSError) as err:
        raise LoadError(f"malformed stats CSV: {one_line(str(err))}") from None
    cols = [c.strip() for c in frame.columns]
    if sorted(c.lower() for c in cols) != sorted(STATS_HEADER):
        raise LoadError(f"unexpected stats header {cols}")
    frame.columns = [STATS_NAMES[c.lower()] for c in cols]
    try:
        calls = pd.to_numeric(frame["Calls"], errors="raise").astype("int64")
        total = pd.to_numeric(frame["TotalDurationNs"], errors="raise").astype("int64")
        avg = pd.to_numeric(frame["AverageNs"], errors="raise").astype("float64")
        pct = pd.to_numeric(frame["Percentage"], errors="raise").astype("float64")
    except (ValueError, TypeError, OverflowError) as err:
        raise LoadError(f"non-numeric or out-of-range value in stats file (truncated?): {one_line(str(err))}") from None
    nan = np.full(len(frame), np.nan)
    return pd.DataFrame(
        {
            "name": frame["Name"].astype(str).to_numpy(),
            "calls": calls.to_numpy(),
            "total_ns": total.to_numpy(),
            "avg_ns": avg.to_numpy(),
            "percent": pct.to_numpy(),
            "min_ns": nan,
            "max_ns": nan.copy(),
            "stddev_ns": nan.copy(),
        },
        columns=list(STATS_COLUMNS),
    )


def _stats_kernels(run: Run, stats: pd.DataFrame) -> pd.DataFrame:
    """The kernel statistics without rocprof's packet pseudo-kernels, each share recomputed
    over the kernels left (rocprof's own percentages count the barrier waits as kernel time)."""
    keep = note_packets(run, "kernel stats", stats["name"], stats["total_ns"].to_numpy(), stats["calls"].to_numpy())
    if keep.all():
        return stats
    kept = stats[keep].reset_index(drop=True)
    total = float(kept["total_ns"].sum())
    kept["percent"] = kept["total_ns"] / total * 100.0 if total > 0 else np.nan
    return kept


# --------------------------------------------------------------------------- agents (rocminfo)


def parse_rocminfo(text: str) -> list[dict[str, str]]:
    """Agents of a rocminfo dump as flat ``{key: value}`` dicts; keys have whitespace removed and
    nested sections joined by dots ("PoolInfo.Pool1.Segment"), as in rocprof's JSON otherData."""
    agents: list[dict[str, str]] = []
    current: dict[str, str] | None = None
    stack: list[tuple[int, str]] = []
    for raw in text.splitlines():
        line = re.sub(r"\x1b\[[0-9;]*m", "", raw).rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith(("*", "=")):
            if stripped.startswith("*** Done"):
                current = None
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            match = re.fullmatch(r"Agent\s+(\d+)", stripped)
            if match:
                current = {}
                agents.append(current)
            else:
                current = None
            stack = []
            continue
        if current is None:
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        prefix = ".".join(name for _, name in stack)
        if ":" in stripped:
            key, value = stripped.split(":", 1)
            key = re.sub(r"\s+", "", key)
            value = value.strip()
            if value:
                current[f"{prefix}.{key}" if prefix else key] = value
            else:
                stack.append((indent, key))
        else:
            stack.append((indent, re.sub(r"\s+", "", stripped)))
    return agents


def agents_from_other_data(other: dict) -> list[dict[str, str]]:
    """Agents from the flattened rocminfo in a rocprof v1 JSON ``otherData`` ("Agent3.Name": ...)."""
    by_index: dict[int, dict[str, str]] = {}
    for key, value in other.items():
        match = re.match(r"Agent(\d+)\.(.+)$", str(key))
        if match:
            by_index.setdefault(int(match.group(1)), {})[match.group(2)] = str(value)
    return [by_index[i] for i in sorted(by_index)]


def _leading_int(value: str | None) -> int | None:
    if value is None:
        return None
    match = re.match(r"\s*(\d+)", value)
    return int(match.group(1)) if match else None


def _size_bytes(value: str | None) -> int | None:
    """ "64(0x40) KB" -> 65536."""
    number = _leading_int(value)
    if number is None:
        return None
    unit = re.search(r"([KMG]B)\s*$", value or "")
    scale = {"KB": 1024, "MB": 1024**2, "GB": 1024**3}.get(unit.group(1) if unit else "", 1)
    return number * scale


def agents_from_props(items: list[dict[str, str]]) -> list[Agent]:
    agents = []
    gpu_index = 0
    for props in items:
        node = _leading_int(props.get("Node"))
        dtype = props.get("DeviceType", "").strip().upper()
        if node is None or dtype not in ("GPU", "CPU"):
            continue
        lds = None
        pools: defaultdict[str, dict[str, str]] = defaultdict(dict)
        for key, value in props.items():
            match = re.match(r"PoolInfo\.(Pool\d+)\.(Segment|Size)$", key)
            if match:
                pools[match.group(1)][match.group(2)] = value
        for pool in pools.values():
            if pool.get("Segment", "").strip().upper() == "GROUP":
                lds = _size_bytes(pool.get("Size"))
        cu = _leading_int(props.get("ComputeUnit"))
        simd = _leading_int(props.get("SIMDsperCU"))
        agent = Agent(
            id=node,
            type=dtype,
            name=props.get("Name", ""),
            product=props.get("MarketingName", ""),
            vendor=props.get("VendorName", ""),
            node_id=node,
            type_index=gpu_index if dtype == "GPU" else None,
            cu_count=cu,
            simd_per_cu=simd if dtype == "GPU" else None,
            simd_count=cu * simd if (dtype == "GPU" and cu is not None and simd is not None) else None,
            wave_size=_leading_int(props.get("WavefrontSize")),
            max_waves_per_cu=_leading_int(props.get("MaxWavesPerCU")),
            lds_bytes_per_cu=lds,
            max_clock_mhz=_leading_int(props.get("MaxClockFreq.(MHz)")),
            workgroup_max_size=_leading_int(props.get("WorkgroupMaxSize")),
            extra={k: v for k, v in props.items() if "." not in k or k == "MaxClockFreq.(MHz)"},
        )
        if dtype == "GPU":
            gpu_index += 1
        agents.append(agent)
    return agents


# --------------------------------------------------------------------------- load


def _count_negative(run: Run) -> None:
    warn_negative_durations(run)
    if len(run.kernels) and (run.kernels["start"] == UNKNOWN).all():
        run.warnings.append("kernel table has no timestamps (counter-only rocprof run)")


def _load_group(prefix: str, files: list[DetectedFile], issues: IssueSink) -> Run | None:
    by_kind: dict[str, list[DetectedFile]] = defaultdict(list)
    for item in files:
        by_kind[item.kind].append(item)
    run = Run(meta=RunMeta(formats=[FORMAT], tool="rocprof", label=Path(prefix).name))
    other_data: dict = {}
    loaded_from = None
    for kind in TRACE_KINDS:
        for item in by_kind.get(kind, []):
            if loaded_from is not None:
                issues.skipped(item.path, f"same run already loaded from {loaded_from.name}")
                continue
            attempt = Run(meta=RunMeta(formats=[FORMAT]))
            try:
                if kind == "trace_db":
                    read_db(item.path, attempt)
                elif kind == "trace_json":
                    other_data = read_json(item.path, attempt)
                else:
                    read_kernel_csv(item.path, attempt, issues)
            except LoadError as err:
                issues.error(item.path, str(err))
                continue
            except OSError as err:
                issues.error(item.path, read_error(err))
                continue
            except sqlite3.Error as err:
                issues.error(item.path, f"cannot read SQLite database: {one_line(str(err))}")
                continue
            except Exception as err:  # a parsing bug on one file must not lose the other files
                issues.error(item.path, f"cannot load: {describe_error(err)}")
                continue
            for name in ("kernels", "api", "copies", "markers", "counters", "allocations"):
                setattr(run, name, attempt.table(name))
            run.warnings.extend(attempt.warnings)
            run.partial = run.partial or attempt.partial
            run.meta.files.append(str(item.path))
            loaded_from = item.path
    for kind, items in by_kind.items():
        if kind not in STATS_KINDS:
            continue
        for item in items:
            try:
                stats, notes = check_stats(read_stats(item.path), item.path)
                run.tool_stats[kind] = _stats_kernels(run, stats) if kind == "kernel_stats" else stats
                run.warnings.extend(notes)
                run.meta.files.append(str(item.path))
            except LoadError as err:
                issues.error(item.path, str(err))
            except Exception as err:  # one bad stats file must not lose the trace beside it
                issues.error(item.path, f"cannot load: {describe_error(err)}")
    agent_props: list[dict[str, str]] = []
    for item in by_kind.get("sysinfo", []):
        try:
            agent_props = parse_rocminfo(read_text(item.path))
            run.meta.files.append(str(item.path))
        except OSError as err:
            issues.error(item.path, read_error(err))
        except Exception as err:
            issues.error(item.path, f"cannot parse rocminfo text: {describe_error(err)}")
    try:
        if not agent_props and other_data:
            agent_props = agents_from_other_data(other_data)
        run.agents = agents_from_props(agent_props)
    except Exception as err:  # damaged agent properties: keep the trace, without agents
        run.warnings.append(f"agent properties not read: {describe_error(err)}")
    if not run.meta.files:
        return None
    run.meta.pid, several = process_pid(prefix, run.kernels["pid"], run.api["pid"], run.copies["pid"])
    if several:
        run.meta.extra["pids"] = several
    run.meta.extra["prefix"] = prefix
    _count_negative(run)
    return run


def load(files: list[DetectedFile], issues: IssueSink) -> list[Run]:
    return load_groups(files, issues, _load_group, "rocprof v1")
