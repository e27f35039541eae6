"""Column schemas of the run model's tables.

Every table is a ``pandas.DataFrame`` with exactly the columns listed here, in this
order and with these dtypes:

* timestamps and durations are ``int64`` nanoseconds on the profiler's own clock
  (rocprofv3: CLOCK_BOOTTIME; Kineto: µs converted to ns);
* identifiers and sizes declared :data:`COMPACT` (pid, tid, queue, stream, correlation and
  dispatch ids, grid sizes) are ``int32`` when every value of the column fits in 32 bits and
  ``int64`` otherwise: the values are always exact, and a million-dispatch run's tables take
  4 bytes per such field instead of 8 (code that combines them into wider keys casts first);
  those declared :data:`SMALL` (kernel grid and workgroup sizes, LDS and scratch bytes, queue,
  stream and kernel ids) are ``int16`` when every value fits, else as ``COMPACT``;
* integer fields that a format does not record hold ``UNKNOWN`` (-1); the optional ones
  declared ``int8|…`` (:data:`OPTIONAL_ID`: Kineto's External id, collective message sizes
  and group sizes) are ``int8`` when no row records them, so a format without them pays one
  byte per row, and the declared rest (e.g. :data:`COMPACT`) once any row does;
* strings are ``category`` columns, so each distinct name is stored once (interned)
  and rows hold small integer codes;
* float fields that are not recorded hold NaN.

Loaders build tables with :func:`make_table`, which fills missing columns with the
"unknown" value and casts every column to its declared dtype, so analysis code can
rely on the schema whatever the source format was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sized
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

UNKNOWN = -1
"""Sentinel stored in integer columns when the source format does not record the value."""

CATEGORY = "category"

COMPACT = "int32|int64"
"""Declared dtype of an integer column stored as ``int32`` when all its values fit, else ``int64``."""

SMALL = "int16|" + COMPACT
"""Declared dtype of an integer column whose values are usually small (workgroup and grid
sizes, LDS and scratch bytes, queue and stream ids, kernel ids): ``int16`` when every value
fits, else as :data:`COMPACT` (values are never clipped; code that multiplies them casts first)."""

OPTIONAL_ID = "int8|" + COMPACT
"""Declared dtype of an identifier many formats do not record: ``int8`` when every value is
``UNKNOWN`` (none recorded), else as :data:`COMPACT`."""

_INT32 = np.iinfo(np.int32)
_INT16 = np.iinfo(np.int16)


def compact_int(array: np.ndarray) -> np.ndarray:
    """Integer ``array`` as ``int32`` when every value fits, else as ``int64`` (no copy when it already is)."""
    if array.dtype == np.int32:
        return array
    if array.size == 0:
        return array.astype(np.int32)
    if array.dtype.itemsize < 4 or (array.dtype.kind in "iu" and _INT32.min <= array.min() and array.max() <= _INT32.max):
        return array.astype(np.int32)
    return array.astype(np.int64, copy=False)


def small_int(array: np.ndarray) -> np.ndarray:
    """Integer ``array`` as ``int16`` when every value fits, else as :func:`compact_int` does."""
    if array.dtype == np.int16:
        return array
    if array.size == 0:
        return array.astype(np.int16)
    if array.dtype.kind in "iu" and _INT16.min <= array.min() and array.max() <= _INT16.max:
        return array.astype(np.int16)
    return compact_int(array)


def dtype_matches(declared: str, actual: object) -> bool:
    """Whether a column of dtype ``actual`` meets the schema's ``declared`` dtype."""
    return str(actual) in declared.split("|")


@dataclass(frozen=True)
class TableSpec:
    """Name and ordered ``column -> dtype`` mapping of one model table."""

    name: str
    columns: Mapping[str, str]
    doc: str


KERNELS = TableSpec(
    "kernels",
    {
        "start": "int64",  # ns
        "end": "int64",  # ns
        "agent": "int32",  # Agent.id of the GPU that ran it
        "queue": SMALL,  # HSA queue id / handle as the profiler wrote it
        "stream": SMALL,  # HIP/CUDA stream id
        "pid": COMPACT,
        "tid": COMPACT,  # host thread that launched it
        "correlation_id": COMPACT,  # equals the launching API call's correlation_id
        "dispatch_id": COMPACT,
        "kernel_id": SMALL,
        "name": CATEGORY,  # kernel name as the profiler wrote it (usually demangled)
        "grid_x": SMALL,  # grid size in work-items
        "grid_y": SMALL,
        "grid_z": SMALL,
        "wg_x": SMALL,  # workgroup size in work-items
        "wg_y": SMALL,
        "wg_z": SMALL,
        "lds_bytes": SMALL,  # LDS (group segment) bytes per workgroup
        "scratch_bytes": SMALL,  # scratch (private segment) bytes per work-item
        "arch_vgpr": "int16",  # per work-item; NVIDIA (CUPTI): registers per thread
        "accum_vgpr": "int16",
        "sgpr": "int16",
        "external_id": OPTIONAL_ID,  # Kineto "External id": the launching framework op (markers.external_id)
        # collective kernels (NCCL/RCCL) whose trace records the collective's arguments (Kineto
        # "Collective name", "In/Out msg nelems", "dtype", "Group size"); "" / -1 elsewhere
        "collective": CATEGORY,  # the collective as the framework names it: allreduce, _allgather_base, ...
        "coll_bytes": OPTIONAL_ID,  # message size: the larger of input and output nelems × dtype size (NCCL-tests' S)
        "coll_ranks": "int8|int16",  # ranks in the collective's process group ("Group size")
    },
    "One row per kernel dispatch (GPU execution interval).",
)

API_CALLS = TableSpec(
    "api",
    {
        "start": "int64",
        "end": "int64",
        "domain": CATEGORY,  # normalised: hip, hsa, marker, rccl, cuda, rocdecode, rocjpeg, ...
        "name": CATEGORY,  # function name, e.g. hipLaunchKernel
        "pid": COMPACT,
        "tid": COMPACT,
        "correlation_id": COMPACT,  # links to kernels/copies launched by this call
        "external_id": OPTIONAL_ID,  # Kineto "External id" of the framework op around the call
    },
    "One row per host API call (HIP, HSA, roctx marker API, RCCL, CUDA runtime ...).",
)

COPIES = TableSpec(
    "copies",
    {
        "start": "int64",
        "end": "int64",
        "bytes": "int64",
        "direction": CATEGORY,  # HtoD, DtoH, DtoD, HtoH, PtoP, memset, unknown
        "src_agent": "int32",
        "dst_agent": "int32",
        "queue": COMPACT,
        "stream": COMPACT,
        "pid": COMPACT,
        "tid": COMPACT,
        "correlation_id": COMPACT,
        "name": CATEGORY,  # the profiler's label, e.g. MEMORY_COPY_HOST_TO_DEVICE
        "external_id": OPTIONAL_ID,  # Kineto "External id" of the framework op that issued it
    },
    "One row per asynchronous memory copy or memset executed by a copy engine / GPU.",
)

ALLOCATIONS = TableSpec(
    "allocations",
    {
        "start": "int64",
        "end": "int64",
        "operation": CATEGORY,  # ALLOCATE, FREE, REALLOC, ...; an allocation call read from its arguments: the function (hipMalloc, hipFree)
        "agent": "int32",
        "bytes": "int64",
        "address": "int64",
        "pid": COMPACT,
        "tid": COMPACT,
        "correlation_id": COMPACT,
    },
    "Memory allocation and free events.",
)

SCRATCH = TableSpec(
    "scratch",
    {
        "start": "int64",
        "end": "int64",
        "operation": CATEGORY,  # ALLOC, FREE, ASYNC_RECLAIM
        "agent": "int32",
        "queue": COMPACT,
        "tid": COMPACT,
        "flags": CATEGORY,
        "bytes": "int64",
    },
    "Scratch-memory events reported by the runtime.",
)

MARKERS = TableSpec(
    "markers",
    {
        "start": "int64",  # an instant marker has end == start
        "end": "int64",
        "name": CATEGORY,  # the user's message / annotation
        "source": CATEGORY,  # roctx, user_annotation, gpu_user_annotation, ...
        "pid": COMPACT,
        "tid": COMPACT,
        "external_id": OPTIONAL_ID,  # Kineto "External id" (cpu_op, user_annotation): joins kernels/api/copies
        "input_dims": CATEGORY,  # Kineto cpu_op "Input Dims" as JSON text ("[[2048, 768], [768]]"), "" if not recorded
        "input_types": CATEGORY,  # Kineto cpu_op "Input type" as JSON text ('["float", "Scalar"]'), "" if not recorded
        "input_concrete": CATEGORY,  # Kineto cpu_op "Concrete Inputs" as JSON text ("['', '', '[2, 2]', 'True']"), "" if not recorded
    },
    "User markers and regions (roctx ranges, PyTorch record_function annotations and cpu_op operators).",
)

COUNTERS = TableSpec(
    "counters",
    {
        "dispatch_id": COMPACT,  # joins kernels.dispatch_id of the same run
        "correlation_id": COMPACT,
        "agent": "int32",
        "counter": CATEGORY,  # e.g. SQ_WAVES, TCC_HIT_sum
        "value": "float64",  # summed over instances/dimensions as the profiler does
    },
    "Hardware counter values, one row per (dispatch, counter).",
)

SERIES = TableSpec(
    "series",
    {
        "track": CATEGORY,  # e.g. "COPY BYTES to Agent [1] (GPU)", "power (W)"
        "agent": "int32",
        "ts": "int64",
        "value": "float64",
        "unit": CATEGORY,  # bytes, W, %, ...
    },
    "Counter time series (perfetto counter tracks, rocm-smi samples).",
)

PC_SAMPLES = TableSpec(
    "pc_samples",
    {
        "ts": "int64",
        "dispatch_id": COMPACT,
        "correlation_id": COMPACT,
        "exec_mask": "int64",
        "instruction": CATEGORY,
        "comment": CATEGORY,
        "stall_reason": CATEGORY,
    },
    "Program-counter samples (host-trap or stochastic).",
)

METRICS = TableSpec(
    "metrics",
    {
        "kernel": CATEGORY,  # kernel name as the profiler wrote it; "" for a workload-wide value
        "metric_id": CATEGORY,  # the profiler's id of the metric (rocprof-compute "2.1.22")
        "metric": CATEGORY,  # the profiler's name of the metric ("L2 Cache Hit Rate")
        "stat": CATEGORY,  # which value of the metric: Avg, Peak, Pct of Peak, Value, Min, Max ...
        "value": "float64",  # NaN where the profiler stored none
        "unit": CATEGORY,  # the profiler's unit ("Percent", "Gb/s", "Wavefronts")
        "agent": "int32",
    },
    "Metric values a profiler computed itself per kernel (rocprof-compute's analysis database).",
)

TABLES: dict[str, TableSpec] = {spec.name: spec for spec in (KERNELS, API_CALLS, COPIES, ALLOCATIONS, SCRATCH, MARKERS, COUNTERS, SERIES, PC_SAMPLES, METRICS)}

STATS_COLUMNS = ("name", "calls", "total_ns", "avg_ns", "percent", "min_ns", "max_ns", "stddev_ns")
"""Columns of a profiler-written statistics table kept in ``Run.tool_stats``.
Min/max/stddev are NaN when the file does not have them (legacy rocprof)."""


def _fill_value(dtype: str):
    if dtype == CATEGORY:
        return ""
    if dtype.startswith("float"):
        return np.nan
    return UNKNOWN


def _categorical(values) -> pd.Series:
    """Category series of ``values`` with missing values as "" and every value as ``str``.

    Equivalent to ``Series(values).fillna("").astype(str).astype("category")`` (sorted
    categories) but hashes the raw values once and converts only the distinct ones to
    text, which is several times faster for millions of rows.
    """
    if isinstance(values, pd.Series):
        values = values.to_numpy()
    codes, uniques = pd.factorize(np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values, use_na_sentinel=True)
    texts = ["" if (u is None or (isinstance(u, float) and u != u)) else str(u) for u in uniques]
    if (codes < 0).any():
        texts.append("")
        codes = np.where(codes < 0, len(texts) - 1, codes)
    categories = pd.Index(sorted(set(texts)), dtype="str")
    position = {c: i for i, c in enumerate(categories)}
    lookup = np.array([position[t] for t in texts], dtype=np.int64)
    new_codes = lookup[codes] if len(lookup) else codes
    return pd.Series(pd.Categorical.from_codes(new_codes, categories=categories), copy=False)


def _unrecorded(dtype: str) -> str | None:
    """The dtype a column declared ``int8|rest`` takes once any row records it (``rest``); None
    for every other declaration."""
    return dtype[len("int8|") :] if dtype.startswith("int8|") else None


def _coerce(values: object, dtype: str) -> pd.Series:
    """``values`` as a Series of ``dtype``; numeric arrays already of that dtype are not copied."""
    recorded = _unrecorded(dtype)
    if recorded is not None:
        array = values.to_numpy() if isinstance(values, pd.Series) else np.asarray(values)
        if array.dtype.kind in "iu" and (array.size == 0 or bool((array == UNKNOWN).all())):
            return pd.Series(array.astype(np.int8, copy=False), copy=False)
        return _coerce(array, recorded)
    if dtype == CATEGORY:
        if isinstance(values, pd.Series) and isinstance(values.dtype, pd.CategoricalDtype):
            return values.reset_index(drop=True)
        if isinstance(values, pd.Categorical):
            return pd.Series(values, copy=False)
        return _categorical(values)
    if dtype.startswith("float"):
        return pd.Series(pd.to_numeric(values, errors="coerce"), dtype=dtype, copy=False).reset_index(drop=True)
    if dtype in (COMPACT, SMALL):
        array = values.to_numpy() if isinstance(values, pd.Series) else np.asarray(values)
        if array.dtype.kind not in "iu" or array.dtype == np.uint64:
            array = _coerce(array, "int64").to_numpy()
        return pd.Series((compact_int if dtype == COMPACT else small_int)(array), copy=False)
    array = values.to_numpy() if isinstance(values, pd.Series) else np.asarray(values)
    if array.dtype.kind in "iub":
        limits = np.iinfo(dtype)
        if array.dtype != np.dtype(dtype) and array.size and (array.min() < limits.min or array.max() > limits.max):
            array = np.clip(array, limits.min, limits.max)
        return pd.Series(array.astype(dtype, copy=False), copy=False)
    numeric = pd.to_numeric(pd.Series(array), errors="coerce")
    numeric = numeric.fillna(UNKNOWN).to_numpy()
    limits = np.iinfo(dtype)
    numeric = np.clip(numeric, limits.min, limits.max)
    return pd.Series(numeric.astype(dtype), copy=False)


def make_table(spec: TableSpec | str, columns: Mapping[str, object] | None = None) -> pd.DataFrame:
    """Build a table of ``spec`` from a mapping ``column -> array-like``.

    Columns the mapping lacks are filled with the unknown value (-1, "" or NaN);
    keys that are not in the schema raise ``KeyError`` so typos cannot hide data.
    All given arrays must have the same length. Numeric arrays that already have the
    column's dtype are used without a copy (the table shares their memory: do not modify
    them afterwards), so building a million-row table costs no extra copy.
    """
    if isinstance(spec, str):
        spec = TABLES[spec]
    columns = dict(columns or {})
    extra = set(columns) - set(spec.columns)
    if extra:
        raise KeyError(f"{spec.name}: unknown column(s) {sorted(extra)}")
    lengths = {len(cast(Sized, v)) for v in columns.values() if not np.isscalar(v)}
    if len(lengths) > 1:
        raise ValueError(f"{spec.name}: columns have different lengths {sorted(lengths)}")
    length = lengths.pop() if lengths else 0
    data = {}
    for name, dtype in spec.columns.items():
        if name in columns:
            values = columns[name]
            if np.isscalar(values):
                if dtype == CATEGORY:
                    values = pd.Categorical.from_codes(np.zeros(length, dtype=np.int8), categories=[str(values)])
                else:
                    values = np.full(length, values)
        else:
            fill = _fill_value(dtype)
            if dtype == CATEGORY:
                values = pd.Categorical.from_codes(np.zeros(length, dtype=np.int8), categories=pd.Index([fill] if length else [], dtype="str"))
            else:
                values = np.full(length, fill, dtype="int8" if _unrecorded(dtype) else "int16" if dtype == SMALL else "int32" if dtype == COMPACT else dtype)
        data[name] = _coerce(values, dtype)
    # copy=False: keep one block per column instead of copying same-dtype columns into a 2-D block.
    return pd.DataFrame(data, columns=list(spec.columns), copy=False)


def _block_values(frame: pd.DataFrame, position: int) -> Any:
    """The values of the column at ``position`` as its block holds them (a view, no Series),
    through pandas' private ``_get_column_array``; where a pandas lacks it, the public
    ``frame.iloc[:, position].array``/``to_numpy()`` (slower, same values)."""
    getter = getattr(frame, "_get_column_array", None)
    if getter is not None:
        return getter(position)
    column = frame.iloc[:, position]
    return column.array if isinstance(column.dtype, pd.CategoricalDtype) else column.to_numpy()


def column_array(frame: pd.DataFrame, name: str) -> np.ndarray:
    """``frame[name].to_numpy()`` of a numpy column, read-only, without building a Series
    (a Series per column read costs more than a one-row table's arithmetic: code that reads
    columns of thousands of small tables reads them here). Other columns (categories,
    extension arrays, duplicate names): as ``frame[name].to_numpy()``."""
    loc = frame.columns.get_loc(name)
    if isinstance(loc, int):
        values = _block_values(frame, loc)  # the block's values: a view, made read-only below
        if isinstance(values, np.ndarray):
            view = values.view()
            view.flags.writeable = False
            return view
    return frame[name].to_numpy()


def category_array(frame: pd.DataFrame, name: str) -> pd.Categorical:
    """``frame[name].array`` of a category column (its Categorical), without building a Series."""
    loc = frame.columns.get_loc(name)
    if isinstance(loc, int):
        values = _block_values(frame, loc)
        if isinstance(values, pd.Categorical):
            return values
    column = frame[name]
    return (column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")).array


_EMPTY: dict[tuple, pd.DataFrame] = {}


def empty_table(spec: TableSpec | str) -> pd.DataFrame:
    """An empty table with the schema of ``spec`` (a copy of one built once per schema:
    building it column by column costs ~8 ms, a run holds nine tables)."""
    if isinstance(spec, str):
        spec = TABLES[spec]
    key = (spec.name, tuple(spec.columns.items()))
    table = _EMPTY.get(key)
    if table is None:  # kept consolidated (a block per dtype): copies of it cost a third
        table = _EMPTY[key] = make_table(spec, {}).copy()
    return table.copy()


_SHARED: dict[tuple, pd.DataFrame] = {}


def shared_empty(spec: TableSpec | str) -> pd.DataFrame:
    """The one empty table of ``spec``'s schema that every run without such rows holds (not a
    copy: a run keeps ten tables, most of them empty in a run of one small file, and a copy
    of each costs kilobytes per run). Never change it in place (add, drop or rename columns);
    derived frames are independent of it (pandas copy-on-write)."""
    if isinstance(spec, str):
        spec = TABLES[spec]
    key = (spec.name, tuple(spec.columns.items()))
    table = _SHARED.get(key)
    if table is None:
        table = _SHARED[key] = empty_table(spec)
    return table


def concat_tables(spec: TableSpec | str, tables: list[pd.DataFrame]) -> pd.DataFrame:
    """Concatenate tables of one schema, keeping category columns categorical (no rows at
    all: :func:`shared_empty`)."""
    if isinstance(spec, str):
        spec = TABLES[spec]
    tables = [t for t in tables if len(t)]
    if not tables:
        return shared_empty(spec)
    if len(tables) == 1:
        return tables[0].reset_index(drop=True)
    columns = list(spec.columns)
    fast = _concat_columns(spec, tables)
    if fast is not None:
        return pd.DataFrame(fast, columns=columns)
    # One pandas concatenation for the numeric columns: taking each column of each table
    # costs a Series per (table, column), the bulk of the work for many small tables.
    whole = None
    if all(t.shape[1] == len(columns) for t in tables):
        whole = pd.concat(tables, ignore_index=True)
        if set(whole.columns) != set(columns) or whole.shape[1] != len(columns):
            whole = None  # tables of other columns: the column-by-column path names the problem
    data = {}
    for name, dtype in spec.columns.items():
        if whole is not None:
            joined = whole[name]
            if dtype == CATEGORY and isinstance(joined.dtype, pd.CategoricalDtype):
                # pandas keeps a category column only when every table has the same categories in
                # the same order: what their union is
                data[name] = joined
                continue
            # numpy dtypes of one kind promote as np.concatenate does; others (bool with ints,
            # strings, arrow types) take the column-by-column path below
            if isinstance(joined.dtype, np.dtype) and joined.dtype.kind in "iuf":
                data[name] = _coerce(joined.to_numpy(), dtype)
                continue
        parts = [t[name] for t in tables]
        if dtype == CATEGORY:
            data[name] = pd.api.types.union_categoricals(parts, ignore_order=True)
            data[name] = pd.Series(data[name])
        else:
            data[name] = _coerce(np.concatenate([p.to_numpy() for p in parts]), dtype)
    return pd.DataFrame(data, columns=columns)


def _concat_columns(spec: TableSpec, tables: list[pd.DataFrame]) -> dict[str, pd.Series] | None:
    """:func:`concat_tables`'s columns read straight from each table's blocks (no Series per
    table and column, no pandas concatenation plan: many small tables, e.g. the kernel
    tables of thousands of one-row processes), or None when a table needs the general path
    (other columns or column order, non-numeric values in a numeric column, ordered or
    differently typed categories). Category columns are the union in first-appearance
    order, as ``union_categoricals(..., ignore_order=True)`` gives it."""
    columns = pd.Index(list(spec.columns))
    if not all(t.columns.equals(columns) for t in tables):
        return None
    data: dict[str, pd.Series] = {}
    for position, (name, dtype) in enumerate(spec.columns.items()):
        parts = [_block_values(t, position) for t in tables]  # the block's values, not copied
        if dtype == CATEGORY:
            joined = _union_categories(parts)
            if joined is None:
                return None
            data[name] = pd.Series(joined)
        elif all(isinstance(p, np.ndarray) and p.dtype.kind in "iuf" for p in parts):
            data[name] = _coerce(np.concatenate(parts), dtype)
        else:
            return None
    return data


def _union_categories(parts: list) -> pd.Categorical | None:
    """The Categoricals ``parts`` joined with the union of their categories, in the order
    they first appear; None unless every part is an unordered Categorical whose categories
    have one dtype."""
    if not all(isinstance(p, pd.Categorical) and not p.ordered for p in parts):
        return None
    first = parts[0].categories
    if not all(p.categories.dtype == first.dtype for p in parts):
        return None
    if all(p.categories is first for p in parts):  # one dtype object shared (e.g. a batch's cut)
        return pd.Categorical.from_codes(np.concatenate([p.codes for p in parts]), dtype=parts[0].dtype)
    names = np.concatenate([np.asarray(p.categories, dtype=object) for p in parts])
    categories = pd.Index(pd.unique(names), dtype=first.dtype)
    where = categories.get_indexer(names)  # each part's category -> its union position
    sizes = np.array([len(p.categories) for p in parts], dtype=np.int64)
    offsets = np.repeat(np.cumsum(sizes) - sizes, [len(p) for p in parts])
    codes = np.concatenate([p.codes for p in parts]).astype(np.int64)
    union = np.where(codes >= 0, where[np.maximum(codes + offsets, 0)] if len(where) else -1, -1)
    return pd.Categorical.from_codes(union, dtype=pd.CategoricalDtype(categories, ordered=False))
