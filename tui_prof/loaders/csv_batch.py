"""Many tiny rocprofv3 CSV processes read together (issue 30, "scale of tiny units").

A run of thousands of processes that each wrote a kernel trace of a few rows costs, per
process, one pyarrow parse and one pandas table build of about thirty columns: ≈ 10 ms
and ≈ 60 KB a process, so 5,000 of them took over a minute. Here the kernel traces of up
to :data:`tui_prof.loaders.detect.BATCH_UNITS` such processes of one host folder that share one header (and the
same agent_info content, parsed once, when they wrote one) are parsed as one CSV and built
as one table, then cut into one table per process.

The result is the one :func:`tui_prof.loaders.rocprofv3_csv.load` gives each process on
its own, value for value and dtype for dtype: integer columns whose dtype depends on their
values (``int16|int32|int64``, ``int8|...``) take the dtype the process's own values give,
category columns the categories the process's own rows hold in the order they first
appear, and agent ids are resolved per process. Anything the per-file reader treats
specially (a row with the wrong number of fields, a blank required value, a quote inside
a kernel name, bytes that are not UTF-8, a line cut short, a gzip file, carriage returns,
blank or multi-line rows) sends the files concerned to that reader instead, so they are
read exactly as before. Every file is opened with ``open_regular`` (non-blocking, checked
on the descriptor) and the bytes read from that descriptor are the bytes parsed.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa

from tui_prof.loaders import rocprofv3_csv as csv
from tui_prof.loaders.base import DetectedFile, IssueSink, check_cancelled, open_regular, spec_batchable
from tui_prof.loaders.specs import SPECS
from tui_prof.model import Agent, Run
from tui_prof.model.schema import CATEGORY, TABLES, UNKNOWN, category_array, make_table
from tui_prof.model.schema import _coerce as coerce_column
from tui_prof.threads import collector_paused

TINY_UNIT_BYTES = SPECS["rocprofv3_csv"].batch_max_bytes
"""A process whose files are a kernel trace (and its agent_info) of at most this many bytes
together is read in a batch."""

_KERNELS = TABLES["kernels"]
_CATEGORY_COLUMNS = [name for name, declared in _KERNELS.columns.items() if declared == CATEGORY]


def batchable(files: list[DetectedFile]) -> bool:
    """Whether the work unit ``files`` is one small kernel trace, with or without the
    process's agent_info (read in a batch): the spec's ``batch_kinds``/``batch_max_bytes``."""
    return spec_batchable(SPECS["rocprofv3_csv"], files)


@dataclass
class _File:
    """One unit's kernel trace as read for a batch."""

    slot: int
    item: DetectedFile
    header: bytes
    body: bytes
    rows: int
    agents: bytes = b""  # the process's agent_info file, when it has one


@dataclass
class _Batch:
    header: bytes
    agents: list[Agent]  # parsed from the agent_info all its processes share (none: [])
    files: list[_File] = field(default_factory=list)


def _read_bounded(item: DetectedFile) -> bytes | None:
    """The bytes of a small file, read from its checked descriptor; None when it cannot be
    read or has grown past the batch's bound (the per-file reader then reads it)."""
    try:
        with open_regular(item.path) as fh:
            data = fh.read(TINY_UNIT_BYTES + 1)
    except OSError:
        return None
    return data if len(data) <= TINY_UNIT_BYTES else None


def _read_small(slot: int, files: list[DetectedFile]) -> _File | None:
    """The unit's kernel trace split into header and body, and its agent_info's bytes, when
    they have the plain shape a batch needs (see the module docstring); None sends the unit
    to the per-file reader (which also reports what cannot be read)."""
    item = next(f for f in files if f.kind == "kernel_trace")
    agent_file = next((f for f in files if f.kind == "agent_info"), None)
    agents = _read_bounded(agent_file) if agent_file is not None else b""
    data = _read_bounded(item)
    if data is None or agents is None or (agent_file is not None and not agents):
        return None
    if not data.endswith(b"\n") or b"\r" in data or data[:2] == b"\x1f\x8b" or agents[:2] == b"\x1f\x8b":
        return None
    cut = data.find(b"\n") + 1
    header, body = data[:cut], data[cut:]
    if not body or body.startswith(b"\n") or b"\n\n" in body:
        return None
    if not body.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if b'"' in body and any(line.count(b'"') % 2 for line in body.split(b"\n")):
        return None  # a quoted field across lines, or an odd quote: the per-file reader's case
    return _File(slot, item, header, body, body.count(b"\n"), agents)


def load_batch(units: list[list[DetectedFile]]) -> list[tuple[list[Run], IssueSink]]:
    """Each unit's runs and issues, in order, as :func:`rocprofv3_csv.load` gives them one
    by one; units of :func:`batchable` shape share one parse and one table build."""
    with collector_paused():
        return _load_batch(units)


def _load_batch(units: list[list[DetectedFile]]) -> list[tuple[list[Run], IssueSink]]:
    out: list[tuple[list[Run], IssueSink] | None] = [None] * len(units)
    batches: dict[tuple[bytes, bytes], _Batch] = {}
    parsed_agents: dict[bytes, list[Agent] | None] = {}
    for slot, files in enumerate(units):
        small = _read_small(slot, files) if batchable(files) else None
        if small is None:
            continue
        if small.agents not in parsed_agents:
            parsed_agents[small.agents] = _parse_agents(small.agents)
        agents = parsed_agents[small.agents]
        if agents is not None:
            batches.setdefault((small.header, small.agents), _Batch(small.header, agents)).files.append(small)
    for batch in batches.values():
        check_cancelled()
        built = _build(batch)
        for small, run in zip(batch.files, built or (), strict=False):
            check_cancelled()
            sink = IssueSink()
            out[small.slot] = (csv._load_group(small.item.group, units[small.slot], sink, ready=run), sink)
    for slot, files in enumerate(units):
        if out[slot] is None:
            check_cancelled()
            sink = IssueSink()
            out[slot] = (csv.load(files, sink), sink)
    csv._release_parse_memory()
    return [result for result in out if result is not None]


def _parse(batch: _Batch) -> tuple[dict, list[str]] | None:
    """The batch's columns (``{lower-case column: array}``) as one strict parse gives them,
    or None when any file needs the per-file reader's care."""
    spec, text_col, required = csv.READ_SPECS["kernel_trace"]
    header_line = batch.header.decode("utf-8", "replace").rstrip("\n")
    original = [c.strip().strip('"').strip() for c in header_line.split(",")]
    lower = [c.lower() for c in original]
    if any(r not in lower for r in required) or len(set(lower)) != len(lower):
        return None
    include = [o for o, low in zip(original, lower) if low in spec]
    types = {o: spec[low][1] for o, low in zip(original, lower) if low in spec}
    name_of = dict(zip(original, lower))
    data = batch.header + b"".join(f.body for f in batch.files)
    try:
        table, _bad = csv._arrow_read(pa.BufferReader(data), include, types, skip_bad=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError):
        return None
    if table.num_rows != sum(f.rows for f in batch.files):
        return None
    if any(table.column(o).null_count for o in include if name_of[o] in required):
        return None
    text = next((o for o in include if name_of[o] == text_col), None)
    if text is not None and any(
        len(chunk.dictionary) and csv.pc.any(csv.pc.match_substring(chunk.dictionary, '"')).as_py() for chunk in table.column(text).chunks
    ):
        return None  # a quote inside a name: the per-file reader re-quotes such files
    return csv._table_columns(table, include, name_of, types, narrow=True), lower


def _parse_agents(data: bytes) -> list[Agent] | None:
    """The agents of agent_info bytes (none: []), or None when they do not parse (the
    per-file reader then reads the units and reports the file)."""
    if not data:
        return []
    try:
        agents = csv.agents_from(io.BytesIO(data))
    except (csv.LoadError, ValueError, TypeError, KeyError, IndexError, pd.errors.ParserError):
        return None
    first: dict[int, Agent] = {}
    for agent in agents:  # each id's first, as the per-file reader keeps them
        first.setdefault(agent.id, agent)
    return list(first.values())


@dataclass
class Ready:
    """One process's kernel table cut from a batch, its agents (as read from its
    agent_info) and its agent resolver."""

    kernels: pd.DataFrame
    agents: list[Agent]
    resolver: csv.AgentResolver


def _build(batch: _Batch) -> list[Ready] | None:
    """One :class:`Ready` per file of the batch, or None (the per-file reader reads them)."""
    parsed = _parse(batch)
    if parsed is None:
        return None
    cols, _lower = parsed
    bounds = np.cumsum([0] + [f.rows for f in batch.files])
    resolvers, agent = _agents(cols.get("agent_id"), bounds, batch.agents)
    mapping = {k: v for k, v in csv._targets(csv.KERNEL_COLUMNS).items() if k != "agent_id"}
    data = {mapping[low]: values for low, values in cols.items() if mapping.get(low)}
    if agent is not None:
        data["agent"] = agent
    table = make_table("kernels", data)
    fixes = _dtype_fixes(table, bounds)
    categories: dict[tuple, pd.CategoricalDtype] = {}
    # each category column's codes and categories, read once for the batch (not per process)
    columns = {name: (values.codes, values.categories) for name in _CATEGORY_COLUMNS for values in [category_array(table, name)]}
    return [
        Ready(_cut(table, int(bounds[i]), int(bounds[i + 1]), fixes.get(i, {}), categories, columns), batch.agents, resolvers[i])
        for i in range(len(batch.files))
    ]


def _dtype_fixes(table: pd.DataFrame, bounds: np.ndarray) -> dict[int, dict[str, np.dtype]]:
    """``{process: {column: dtype}}`` for the integer columns whose dtype a process's own
    values give differently from the batch's (``int16|int32|int64`` and ``int8|...``
    columns take the narrowest dtype their values fit, see ``model.schema``)."""
    fixes: dict[int, dict[str, np.dtype]] = {}
    starts = bounds[:-1]
    for name, declared in _KERNELS.columns.items():
        if "|" not in declared:
            continue
        values = table[name].to_numpy()
        low, high = np.minimum.reduceat(values, starts), np.maximum.reduceat(values, starts)
        for unit in np.flatnonzero(_narrowest(declared, low, high) != values.dtype.itemsize):
            lo, hi = int(low[unit]), int(high[unit])
            fixes.setdefault(int(unit), {})[name] = coerce_column(np.array([lo, hi], dtype=values.dtype), declared).dtype
    return fixes


def _narrowest(declared: str, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Per process, the item size of the dtype ``model.schema`` gives a column of
    ``declared`` dtype holding values from ``low`` to ``high``."""
    choices = declared.split("|")
    size = np.full(len(low), np.dtype(choices[-1]).itemsize)
    for choice in reversed(choices[:-1]):
        info = np.iinfo(choice)
        fits = (low >= info.min) & (high <= info.max)
        if choice == "int8" and declared.startswith("int8|"):  # int8 only when nothing is recorded
            fits = (low == UNKNOWN) & (high == UNKNOWN)
        size = np.where(fits, info.bits // 8, size)
    return size


def _cut(
    table: pd.DataFrame,
    start: int,
    stop: int,
    fixes: dict[str, np.dtype],
    categories: dict[tuple, pd.CategoricalDtype],
    columns: dict[str, tuple[np.ndarray, pd.Index]],
) -> pd.DataFrame:
    """Rows ``start:stop`` of the batch table as the table of that process alone: its own
    integer dtypes (``fixes``) and its own categories, in the order its rows first show
    them (``categories`` shares one dtype among processes with the same list; ``columns``:
    each category column's codes and categories in the batch table)."""
    frame = table.iloc[start:stop]
    frame.index = pd.RangeIndex(stop - start)
    for name, dtype in fixes.items():
        frame[name] = frame[name].to_numpy().astype(dtype)
    for name in _CATEGORY_COLUMNS:
        batch_codes, batch_categories = columns[name]
        codes = batch_codes[start:stop]
        order = _first_seen(codes)
        if len(order) == len(batch_categories) and (order == np.arange(len(order))).all():
            continue
        key = (name, tuple(order.tolist()))
        shared = categories.get(key)
        if shared is None:
            shared = categories[key] = pd.CategoricalDtype(batch_categories[order], ordered=False)
        remap = np.empty(len(batch_categories), dtype=codes.dtype)
        remap[order] = np.arange(len(order), dtype=codes.dtype)
        frame[name] = pd.Categorical.from_codes(remap[codes], dtype=shared)
    return frame


def _agents(tokens: pd.Series | None, bounds: np.ndarray, agents: list[Agent]) -> tuple[list[csv.AgentResolver], np.ndarray | None]:
    """Per process a resolver in the state its own rows leave it in, and the batch's agent
    column. Each distinct spelling is resolved once by a fresh resolver (with the agents
    every process of the batch shares, a spelling's id and what it teaches a resolver
    depend on the spelling alone); a process's resolver takes what its own spellings
    taught, in the order its rows first show them (the per-file reader's category order)."""
    count = len(bounds) - 1
    if tokens is None:
        return [csv.AgentResolver(agents) for _ in range(count)], None
    singles = []
    for token in tokens.cat.categories:
        one = csv.AgentResolver(agents)
        singles.append((one.resolve(str(token)), one))
    lookup = np.array([value for value, _ in singles], dtype=np.int64)
    codes = tokens.cat.codes.to_numpy()
    resolvers = []
    for i in range(count):
        mine = csv.AgentResolver(agents)
        for code in _first_seen(codes[bounds[i] : bounds[i + 1]]):
            taught = singles[code][1]
            mine.spellings |= taught.spellings
            mine.unresolved |= taught.unresolved
            mine.types.update(taught.types)
            mine.logical |= taught.logical
            mine.out_of_range += taught.out_of_range
        resolvers.append(mine)
    return resolvers, (lookup[codes] if len(lookup) else np.full(len(codes), UNKNOWN, dtype=np.int64))


def _first_seen(codes: np.ndarray) -> np.ndarray:
    """The distinct values of ``codes`` in the order they first appear."""
    if len(codes) == 1:  # a one-row process
        return codes.copy()
    values, first = np.unique(codes, return_index=True)
    return values[np.argsort(first, kind="stable")]
