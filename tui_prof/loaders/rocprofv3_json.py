"""rocprofv3 JSON output (``--output-format json``, ``<prefix>_results.json``, maybe gzipped).

Layout (formats.md §3, writer ``generateJSON.cpp``, schema ``rocprofv3-schema.json``)::

    {"rocprofiler-sdk-tool": [ {metadata, agents, counters, strings, kernel_symbols,
                               callback_records{counter_collection}, buffer_records{...}}, ...]}

One Run per element of the top-level array (one element per process). Records carry
numeric ``kind``/``operation``; their names are looked up in ``strings.buffer_records``
(never hard-coded). Agents are keyed by ``id.handle`` in the records and become
``Agent.id = node_id``. Kernel names are ``kernel_symbols[].formatted_kernel_name`` (the
name rocprofv3 CSV prints in ``Kernel_Name``; falls back to ``demangled_kernel_name``,
then ``kernel_name``). ``correlation_id`` columns hold ``correlation_id.internal`` (what
links an API call to its kernel/copy; CSV ``Correlation_Id``). Timestamps are integer
ns (CLOCK_BOOTTIME) and stay Python ints -> int64, never floats.

The whole file is parsed with the stdlib ``json`` module (a 37 MB file takes about 1 s);
columns are then pulled out of the record dicts with one comprehension per column.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from tui_prof.loaders.base import (
    DetectedFile,
    IssueSink,
    LoadError,
    Sniffed,
    api_domain,
    check_cancelled,
    clean_json,
    copy_direction,
    describe_error,
    may_hold_surrogates,
    one_line,
    read_error,
    read_text,
    replaced_warning,
)
from tui_prof.loaders.specs import SPECS
from tui_prof.model import Agent, Run, RunMeta
from tui_prof.model.schema import make_table

LOADER = SPECS["rocprofv3_json"]
FORMAT = LOADER.format

_HEAD = re.compile(rb'^\s*\{\s*"rocprofiler-sdk-tool"\s*:')
API_KEYS = ("hip_api", "hsa_api", "marker_api", "rccl_api", "rocdecode_api", "rocjpeg_api")


def sniff(path: Path, head: bytes) -> Sniffed | None:
    """JSON whose first key is ``"rocprofiler-sdk-tool"`` (checked in the head bytes only)."""
    if _HEAD.match(head.removeprefix(b"\xef\xbb\xbf")):
        return Sniffed("results_json", str(path))
    return None


def load(files: list[DetectedFile], issues: IssueSink) -> list[Run]:
    runs: list[Run] = []
    for item in files:
        try:
            runs.extend(load_file(item.path))
        except LoadError as err:
            issues.error(item.path, str(err))
        except Exception as err:  # one damaged file must not lose the other files
            issues.error(item.path, f"cannot load: {describe_error(err)}")
    return runs


# --------------------------------------------------------------------------- shared helpers


def opt_int(value) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def agent_from_record(
    ext: dict,
    node: int,
    *,
    kind: str = "",
    name: str = "",
    product: str = "",
    vendor: str = "",
    logical_index: int | None = None,
    type_index: int | None = None,
    extra: dict | None = None,
) -> Agent:
    """An Agent from rocprofiler's agent record (JSON ``agents[]`` / rocpd ``extdata``).

    ``lds_size_in_kb`` * 1024 -> LDS bytes per CU; memory = sum of ``mem_banks[].size_in_bytes``;
    clock = ``max_engine_clk_fcompute`` (MHz). CPU agents keep only names and ids.
    """
    if not kind:
        kind = {1: "CPU", 2: "GPU"}.get(opt_int(ext.get("type")) or 0, "")
    kind = kind.upper()
    is_gpu = kind == "GPU"
    banks = ext.get("mem_banks")
    mem = sum(opt_int(b.get("size_in_bytes")) or 0 for b in banks if isinstance(b, dict)) if isinstance(banks, list) else 0
    lds_kb = opt_int(ext.get("lds_size_in_kb"))

    def gpu_int(key: str) -> int | None:
        value = opt_int(ext.get(key))
        return value if is_gpu and value else None

    skip = {"caches", "io_links", "mem_banks", "uuid", "capability", "size", "id"}
    info = dict(extra or {})
    info.update({k: v for k, v in ext.items() if k not in skip and not isinstance(v, (list, dict))})
    return Agent(
        id=int(node),
        type=kind,
        name=name or str(ext.get("name", "") or ""),
        product=product or str(ext.get("product_name", "") or ""),
        vendor=vendor or str(ext.get("vendor_name", "") or ""),
        node_id=int(node),
        logical_index=logical_index if logical_index is not None else opt_int(ext.get("logical_node_id")),
        type_index=type_index if type_index is not None else opt_int(ext.get("logical_node_type_id")),
        gfx_target_version=gpu_int("gfx_target_version"),
        cu_count=gpu_int("cu_count"),
        simd_per_cu=gpu_int("simd_per_cu"),
        simd_count=gpu_int("simd_count"),
        wave_size=gpu_int("wave_front_size"),
        max_waves_per_simd=gpu_int("max_waves_per_simd"),
        max_waves_per_cu=gpu_int("max_waves_per_cu"),
        lds_bytes_per_cu=lds_kb * 1024 if is_gpu and lds_kb else None,
        num_xcc=gpu_int("num_xcc"),
        max_clock_mhz=gpu_int("max_engine_clk_fcompute"),
        memory_bytes=mem or None,
        workgroup_max_size=gpu_int("workgroup_max_size"),
        extra=info,
    )


# --------------------------------------------------------------------------- loading


def load_file(path: Path) -> list[Run]:
    """Every process element of one rocprofv3 JSON file."""
    path = Path(path)
    try:
        text = read_text(path, bounded=True)  # a gzip may expand at most 64 times (base.GZIP_RATIO_LIMIT)
        data = json.loads(text)
    except OSError as err:  # read_text raises DamagedGzip / TooLarge (OSErrors) for broken or huge gzip data
        raise LoadError(read_error(err)) from None
    except json.JSONDecodeError as err:
        raise LoadError(f"invalid JSON at line {err.lineno} column {err.colno}: {err.msg} (truncated file?)") from None
    check_cancelled()  # json.loads is one C call: a cancel during it is seen here
    # Lone surrogates (JSON "\udcff" escapes) cannot be held by the tables' strings: replaced
    # before anything is built, and counted.
    replaced = 0
    if may_hold_surrogates(text):
        data, replaced = clean_json(data)
    del text
    top = data.get("rocprofiler-sdk-tool") if isinstance(data, dict) else None
    if isinstance(top, dict):
        top = [top]
    if not isinstance(top, list):
        raise LoadError('"rocprofiler-sdk-tool" is not a list of process objects')
    runs = []
    for index, element in enumerate(top):
        try:
            if not isinstance(element, dict):
                raise TypeError("not an object")
            run = _process(element, path)
            if replaced:
                run.warnings.append(replaced_warning(replaced, "strings (kernel symbols, names, metadata)"))
            runs.append(run)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as err:
            raise LoadError(f"process element {index} is malformed: {_malformed(err)}") from None
    return runs


def _malformed(err: Exception) -> str:
    """What is wrong with a process element, in words (a record of the wrong JSON type,
    a missing key, a number out of range)."""
    if isinstance(err, (AttributeError, TypeError)):
        return f"a value has the wrong JSON type ({one_line(str(err), 160)})"
    return describe_error(err)


class _Process:
    """Lookup tables of one process element."""

    def __init__(self, element: dict):
        strings = element.get("strings") or {}
        table = strings.get("buffer_records") or []
        self.kinds = [str(k.get("kind", "")) for k in table]
        self.operations = [list(k.get("operations") or []) for k in table]
        self.agents: list[Agent] = []
        self.node_of: dict[int, int] = {}
        self.type_of: dict[int, str] = {}
        for agent in element.get("agents") or []:
            handle = opt_int((agent.get("id") or {}).get("handle"))
            node = opt_int(agent.get("node_id"))
            node = node if node is not None else handle
            if node is None:
                continue
            built = agent_from_record(agent, node)
            self.agents.append(built)
            if handle is not None:
                self.node_of[handle] = node
                self.type_of[handle] = built.type
        symbols = element.get("kernel_symbols") or []
        if isinstance(symbols, dict):
            symbols = list(symbols.values())
        self.symbols = {}
        for sym in symbols:
            kid = opt_int(sym.get("kernel_id"))
            if kid is None:
                continue
            name = sym.get("formatted_kernel_name") or sym.get("demangled_kernel_name") or sym.get("kernel_name") or ""
            self.symbols[kid] = (str(name), sym.get("arch_vgpr_count"), sym.get("accum_vgpr_count"), sym.get("sgpr_count"))
        self.markers = {}
        for entry in strings.get("marker_api") or []:
            key = opt_int(entry.get("key"))
            if key is not None:
                self.markers[key] = str(entry.get("value", ""))
        self.counter_names = {}
        for counter in element.get("counters") or []:
            handle = opt_int((counter.get("id") or {}).get("handle"))
            if handle is not None:
                self.counter_names[handle] = str(counter.get("name", ""))

    def kind_name(self, kind: int) -> str:
        return self.kinds[kind] if 0 <= kind < len(self.kinds) else f"kind {kind}"

    def op_names(self, kinds: np.ndarray, ops: np.ndarray) -> pd.Categorical:
        """Operation names per row from ``strings.buffer_records[kind].operations[op]``."""
        if not len(kinds):
            return pd.Categorical([])
        keys = kinds.astype(np.int64) * (1 << 32) + ops.astype(np.int64)
        uniq, codes = np.unique(keys, return_inverse=True)
        labels = []
        for key in uniq.tolist():
            kind, op = divmod(key, 1 << 32)
            table = self.operations[kind] if 0 <= kind < len(self.operations) else []
            labels.append(str(table[op]) if 0 <= op < len(table) else f"{self.kind_name(kind)} op {op}")
        return _from_codes(codes, labels)

    def nodes(self, handles: list) -> np.ndarray:
        return np.array([self.node_of.get(h, -1) for h in handles], dtype=np.int64)

    def types(self, handles: list) -> np.ndarray:
        return np.array([self.type_of.get(h, "") for h in handles], dtype=object)


def _from_codes(codes: np.ndarray, labels: list[str]) -> pd.Categorical:
    uniq = list(dict.fromkeys(labels))
    remap = np.array([uniq.index(label) for label in labels], dtype=np.int64)
    return pd.Categorical.from_codes(remap[codes], categories=uniq)


def _record_ints(records: list, *keys: str) -> np.ndarray:
    """``records[i][k0][k1]...`` as int64, -1 where missing or not an integer.

    Fast path: one comprehension and one ``np.array`` for well-formed records; any missing
    key or odd value (None, hex string, handle object, > int64) falls back to a per-value
    conversion. (The fast path accepts decimal strings and truncates floats, as int() would.)
    """
    if not records:
        return np.empty(0, dtype=np.int64)
    try:
        if len(keys) == 1:
            (a,) = keys
            values = [r[a] for r in records]
        elif len(keys) == 2:
            a, b = keys
            values = [r[a][b] for r in records]
        elif len(keys) == 3:
            a, b, c = keys
            values = [r[a][b][c] for r in records]
        else:
            a, b, c, d = keys
            values = [r[a][b][c][d] for r in records]
        return np.array(values, dtype=np.int64)
    except (KeyError, TypeError, IndexError, OverflowError, ValueError):
        pass

    def get(rec):
        for key in keys:
            if not isinstance(rec, dict):
                return -1
            rec = rec.get(key)
        return _as_int(rec)

    return np.fromiter((get(r) for r in records), dtype=np.int64, count=len(records))


def _as_int(value) -> int:
    if isinstance(value, bool) or value is None:
        return -1
    if isinstance(value, int):
        return value if -(1 << 63) <= value < (1 << 63) else (value - (1 << 64) if value < (1 << 64) else -1)
    if isinstance(value, dict):  # rocprofiler handles/addresses: {"handle": n} / {"value": n} / {"ptr": n}
        for key in ("handle", "value", "ptr"):
            if key in value:
                return _as_int(value[key])
        return -1
    if isinstance(value, str):
        try:
            return _as_int(int(value, 0))
        except ValueError:
            return -1
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return -1


def _handles(records: list, *keys: str) -> list:
    """Handle values (``{"handle": n}``) at ``keys`` as a list of ints."""
    return _record_ints(records, *keys, "handle").tolist()


def _process(element: dict, path: Path) -> Run:
    if "metadata" not in element and "buffer_records" not in element:
        raise KeyError("metadata")
    meta_in = element.get("metadata") or {}
    if not isinstance(meta_in, dict):
        raise TypeError("metadata is not an object")
    node = meta_in.get("node") or {}
    pid = opt_int(meta_in.get("pid"))
    command = meta_in.get("command")
    meta = RunMeta(
        formats=[FORMAT],
        tool="rocprofv3",
        tool_version=str(meta_in.get("rocprofiler_version", "") or meta_in.get("version", "") or ""),
        hostname=str(node.get("hostname", "") or ""),
        pid=pid,
        command=" ".join(map(str, command)) if isinstance(command, list) else str(command or ""),
        files=[str(path)],
    )
    meta.label = f"{meta.hostname}/{pid}" if meta.hostname else str(pid if pid is not None else path.name)
    meta.extra.update(
        {
            "init_time_ns": opt_int(meta_in.get("init_time")),
            "fini_time_ns": opt_int(meta_in.get("fini_time")),
            "rocprofv3_config": meta_in.get("config") or {},
        }
    )
    proc = _Process(element)
    run = Run(meta=meta, agents=proc.agents)
    buffers = element.get("buffer_records")
    buffers = {} if buffers is None else buffers
    if not isinstance(buffers, dict):
        raise TypeError("buffer_records is not an object")
    for key, records in buffers.items():
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise TypeError(f"buffer_records.{key} is not a list of record objects")
    pid_value = pid if pid is not None else -1
    run.kernels = _kernels(proc, buffers.get("kernel_dispatch") or [], pid_value)
    run.api, run.markers = _api(proc, buffers, pid_value)
    run.copies = _copies(proc, buffers.get("memory_copy") or [], pid_value)
    run.allocations = _allocations(proc, buffers.get("memory_allocation") or [], pid_value)
    run.scratch = _scratch(proc, buffers.get("scratch_memory") or [])
    run.counters = _counters(proc, (element.get("callback_records") or {}).get("counter_collection") or [])
    for name in ("kernels", "api", "copies", "allocations", "scratch"):
        table = run.table(name)
        missing = int(((table["start"] < 0) | (table["end"] < 0)).sum())
        if missing:
            run.warnings.append(f"rocprofv3 JSON: {missing} {name} record(s) without start/end timestamps")
    summary = element.get("summary")
    if summary:
        meta.extra["summary"] = summary
    return run


def _kernels(proc: _Process, records: list, pid: int) -> pd.DataFrame:
    kid = _record_ints(records, "dispatch_info", "kernel_id")
    names = {k: s[0] for k, s in proc.symbols.items()}
    uniq, codes = np.unique(kid, return_inverse=True)
    name = _from_codes(codes.reshape(-1), [names.get(k, "") for k in uniq.tolist()]) if len(kid) else []

    def reg(i: int) -> np.ndarray:
        table = {k: _as_int(s[i]) for k, s in proc.symbols.items()}
        return np.array([table.get(k, -1) for k in kid.tolist()], dtype=np.int64)

    return make_table(
        "kernels",
        {
            "start": _record_ints(records, "start_timestamp"),
            "end": _record_ints(records, "end_timestamp"),
            "agent": proc.nodes(_handles(records, "dispatch_info", "agent_id")),
            "queue": _record_ints(records, "dispatch_info", "queue_id", "handle"),
            "stream": _record_ints(records, "stream_id", "handle"),
            "pid": np.full(len(records), pid, dtype=np.int64),
            "tid": _record_ints(records, "thread_id"),
            "correlation_id": _record_ints(records, "correlation_id", "internal"),
            "dispatch_id": _record_ints(records, "dispatch_info", "dispatch_id"),
            "kernel_id": kid,
            "name": name,
            "grid_x": _record_ints(records, "dispatch_info", "grid_size", "x"),
            "grid_y": _record_ints(records, "dispatch_info", "grid_size", "y"),
            "grid_z": _record_ints(records, "dispatch_info", "grid_size", "z"),
            "wg_x": _record_ints(records, "dispatch_info", "workgroup_size", "x"),
            "wg_y": _record_ints(records, "dispatch_info", "workgroup_size", "y"),
            "wg_z": _record_ints(records, "dispatch_info", "workgroup_size", "z"),
            "lds_bytes": _record_ints(records, "dispatch_info", "group_segment_size"),
            "scratch_bytes": _record_ints(records, "dispatch_info", "private_segment_size"),
            "arch_vgpr": reg(1),
            "accum_vgpr": reg(2),
            "sgpr": reg(3),
        },
    )


def _api(proc: _Process, buffers: dict, pid: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """hip/hsa/marker/rccl/rocdecode/rocjpeg API records -> api table; marker records with a
    message in ``strings.marker_api`` (keyed by internal correlation id) -> markers table."""
    records = [r for key in API_KEYS for r in (buffers.get(key) or [])]
    kinds = _record_ints(records, "kind")
    uniq, codes = np.unique(kinds, return_inverse=True)
    domain = _from_codes(codes.reshape(-1), [api_domain(proc.kind_name(k)) for k in uniq.tolist()]) if len(kinds) else []
    start, end = _record_ints(records, "start_timestamp"), _record_ints(records, "end_timestamp")
    tid, corr = _record_ints(records, "thread_id"), _record_ints(records, "correlation_id", "internal")
    api = make_table(
        "api",
        {
            "start": start,
            "end": end,
            "domain": domain,
            "name": proc.op_names(kinds, _record_ints(records, "operation")),
            "pid": np.full(len(records), pid, dtype=np.int64),
            "tid": tid,
            "correlation_id": corr,
        },
    )
    is_marker = np.asarray(pd.Series(domain, dtype=object) == "marker") if len(records) else np.zeros(0, bool)
    has_message = np.array([c in proc.markers for c in corr.tolist()], dtype=bool) & is_marker
    markers = make_table(
        "markers",
        {
            "start": start[has_message],
            "end": end[has_message],
            "name": [proc.markers[c] for c in corr[has_message].tolist()],
            "source": "roctx",
            "pid": np.full(int(has_message.sum()), pid, dtype=np.int64),
            "tid": tid[has_message],
        },
    )
    return api, markers


def _copies(proc: _Process, records: list, pid: int) -> pd.DataFrame:
    src, dst = _handles(records, "src_agent_id"), _handles(records, "dst_agent_id")
    src_node, dst_node = proc.nodes(src), proc.nodes(dst)
    return make_table(
        "copies",
        {
            "start": _record_ints(records, "start_timestamp"),
            "end": _record_ints(records, "end_timestamp"),
            "bytes": _record_ints(records, "bytes"),
            "direction": copy_direction(proc.types(src), proc.types(dst), src_node, dst_node),
            "src_agent": src_node,
            "dst_agent": dst_node,
            "stream": _record_ints(records, "stream_id", "handle"),
            "pid": np.full(len(records), pid, dtype=np.int64),
            "tid": _record_ints(records, "thread_id"),
            "correlation_id": _record_ints(records, "correlation_id", "internal"),
            "name": proc.op_names(_record_ints(records, "kind"), _record_ints(records, "operation")),
        },
    )


def recode(values: pd.Categorical, func) -> pd.Categorical:
    """Apply ``func`` to every category (not every row), merging equal results."""
    values = pd.Categorical(values)
    new = [func(c) for c in values.categories]
    uniq = list(dict.fromkeys(new))
    remap = np.array([uniq.index(n) for n in new], dtype=np.int64)
    codes = np.asarray(values.codes, dtype=np.int64)
    return pd.Categorical.from_codes(np.where(codes >= 0, remap[np.maximum(codes, 0)], -1) if len(remap) else codes, categories=uniq).remove_unused_categories()


def _strip_prefix(names: pd.Categorical, prefix: str) -> pd.Categorical:
    """MEMORY_ALLOCATION_ALLOCATE -> ALLOCATE."""
    return recode(names, lambda c: c[len(prefix) :] if c.startswith(prefix) else c)


def _allocations(proc: _Process, records: list, pid: int) -> pd.DataFrame:
    ops = proc.op_names(_record_ints(records, "kind"), _record_ints(records, "operation"))
    return make_table(
        "allocations",
        {
            "start": _record_ints(records, "start_timestamp"),
            "end": _record_ints(records, "end_timestamp"),
            "operation": _strip_prefix(ops, "MEMORY_ALLOCATION_"),
            "agent": proc.nodes(_handles(records, "agent_id")),
            "bytes": _record_ints(records, "allocation_size"),
            "address": _record_ints(records, "address"),
            "pid": np.full(len(records), pid, dtype=np.int64),
            "tid": _record_ints(records, "thread_id"),
            "correlation_id": _record_ints(records, "correlation_id", "internal"),
        },
    )


def _scratch(proc: _Process, records: list) -> pd.DataFrame:
    ops = proc.op_names(_record_ints(records, "kind"), _record_ints(records, "operation"))
    return make_table(
        "scratch",
        {
            "start": _record_ints(records, "start_timestamp"),
            "end": _record_ints(records, "end_timestamp"),
            "operation": _strip_prefix(ops, "SCRATCH_MEMORY_"),
            "agent": proc.nodes(_handles(records, "agent_id")),
            "queue": _record_ints(records, "queue_id", "handle"),
            "tid": _record_ints(records, "thread_id"),
            "flags": [str(r.get("flags", "")) for r in records],
            "bytes": _record_ints(records, "allocation_size"),
        },
    )


def _counters(proc: _Process, records: list) -> pd.DataFrame:
    """``callback_records.counter_collection``: values summed per (dispatch, counter) over
    instances/dimensions, as rocprofv3's counter_collection.csv does."""
    rows = []
    for rec in records:
        data = rec.get("dispatch_data") or {}
        info = data.get("dispatch_info") or {}
        dispatch = _as_int(info.get("dispatch_id"))
        corr = _as_int((data.get("correlation_id") or {}).get("internal"))
        agent = proc.node_of.get(_as_int(info.get("agent_id")), -1)
        for value in rec.get("records") or []:
            counter = _as_int(value.get("counter_id"))
            rows.append((dispatch, corr, agent, proc.counter_names.get(counter, f"counter {counter}"), float(value.get("value", 0.0))))
    if not rows:
        return make_table("counters", {})
    frame = pd.DataFrame(rows, columns=["dispatch_id", "correlation_id", "agent", "counter", "value"])
    frame = frame.groupby(["dispatch_id", "correlation_id", "agent", "counter"], sort=False, as_index=False)["value"].sum()
    return make_table("counters", {c: frame[c] for c in frame.columns})
