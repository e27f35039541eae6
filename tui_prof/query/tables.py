"""The tables ``tuiprof sql`` shows DuckDB: the run model's and the analysis results', as Arrow.

Every table is built on first use (a query that reads only ``kernels`` never runs the
analysis) and converted by :func:`tui_prof.export.parquet.to_arrow`, the one conversion of a
table to Arrow (numeric columns are views of the model's arrays, not copies). A model table
of several processes is one Arrow table with a chunk per process and a leading ``process``
column (the row of ``processes``), as in the Parquet export.

Adding an analysis table is one entry in :data:`ANALYSIS_TABLES`: its name, what it holds,
and the function that builds its ``DataFrame`` from a :class:`Catalogue`.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.analysis.api import DEFAULT_CATEGORY_RULES, RunInput, SummaryResult, instances, operators_section, rank_cores, rank_numbers, run_inputs
from tui_prof.export.common import analyse
from tui_prof.export.parquet import (
    PROCESS,
    agents_table,
    findings_table,
    gaps_table,
    hotspots_table,
    processes_table,
    to_arrow,
    tool_stats_names,
    tool_stats_table,
)
from tui_prof.guard import jsonout
from tui_prof.model import RunSet
from tui_prof.model.schema import TABLES, empty_table

# Views added over the model tables: ``dur`` (ns) wherever a table has start and end; the
# aliases the vocabulary uses.
ALIASES = {"memory": "allocations"}


@dataclass(frozen=True)
class TableInfo:
    """One table of the catalogue: its name, kind (model, analysis or stats) and what a row is."""

    name: str
    kind: str
    doc: str


def _records_frame(records: list[dict], columns: list[str] | None = None) -> pd.DataFrame:
    """Records as a frame: integer fields (None where unknown) as nullable int64, lists and
    dicts as JSON text, other fields as pandas infers them."""
    names = columns if columns is not None else list(dict.fromkeys(k for r in records for k in r))
    data: dict[str, Any] = {}
    for name in names:
        values = [r.get(name) for r in records]
        present = [v for v in values if v is not None]
        if present and all(isinstance(v, (list, dict)) for v in present):
            data[name] = pd.Series([None if v is None else jsonout.dumps(v, default=str) for v in values], dtype="str")
        elif present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            data[name] = pd.Series(values, dtype="Int64")
        elif present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
            data[name] = pd.Series([math.nan if v is None else float(v) for v in values], dtype="float64")
        elif present and all(isinstance(v, str) for v in present):
            data[name] = pd.Series(values, dtype="str")
        else:
            data[name] = pd.Series(values, dtype="object" if present else "str")
    return pd.DataFrame(data, columns=names)


def _steps(cat: Catalogue) -> pd.DataFrame:
    """The summary's steps; ``process`` is the row of ``processes`` (for steps combined over
    several processes, the process each step row comes from)."""
    part = cat.analysis().summary["steps"]
    labels = [r.label for r in cat.inputs()]
    rows = []
    for i, record in enumerate(part.get("steps") or []):
        label = record.get("process", part.get("process"))
        rows.append({"step": i, **record, "process": labels.index(label) if isinstance(label, str) and label in labels else None})
    frame = _records_frame(rows) if rows else pd.DataFrame({"step": pd.Series([], dtype="int64"), "label": pd.Series([], dtype="str")})
    if "warmup" not in frame:
        warmup = int(part.get("warmup_steps") or 0)
        frame["warmup"] = pd.Series(frame["step"].to_numpy(dtype=np.int64) < warmup, dtype="bool")
    return frame


def _ranks(cat: Catalogue) -> pd.DataFrame:
    rows = cat.analysis().summary["ranks"]  # one per process, in run order
    return _records_frame([{"process": i, **r} for i, r in enumerate(rows)]) if rows else pd.DataFrame({"process": pd.Series([], dtype="int64")})


def _operators(cat: Catalogue) -> pd.DataFrame:
    rows = operators_section(cat.inputs(), None)
    frame = _records_frame([dict(r) for r in rows], ["name", "kernels", "total_ns", "percent", "shapes"])
    return frame


def _collectives(cat: Catalogue) -> pd.DataFrame:
    inputs = cat.inputs()
    runs = [r.run for r in inputs]
    cores = rank_cores(runs, [r.label for r in inputs], [r.wall_ns for r in inputs], [r.index.classes for r in inputs], DEFAULT_CATEGORY_RULES)
    listed, _waits, _last = instances(cores, [n for n, _ in rank_numbers(runs)])
    columns = ["type", "index", "straggler", "fastest_ns", "slowest_ns", "wait_ns"]
    if not listed:
        return pd.DataFrame({c: pd.Series([], dtype="str" if c == "type" else "int64") for c in columns})
    return _records_frame([dict(r) for r in listed], columns)


def _hotspots(by: str) -> Callable[[Catalogue], pd.DataFrame]:
    return lambda cat: hotspots_table(cat.runset, by)


# name -> (what a row is, builder). Registering a new analysis table is one line here.
ANALYSIS_TABLES: dict[str, tuple[str, Callable[[Catalogue], pd.DataFrame]]] = {
    "hotspots": ("Kernel time per kernel name: calls, total, mean, median, min, max, stddev, % of kernel time and of wall.", _hotspots("name")),
    "hotspots_by_normalized": ("Kernel time per normalised name (templates and arguments stripped).", _hotspots("normalized")),
    "hotspots_by_category": ("Kernel time per category (GEMM, attention, communication, ...).", _hotspots("category")),
    "hotspots_by_agent": ("Kernel time per GPU agent.", _hotspots("agent")),
    "hotspots_by_pid": ("Kernel time per process id.", _hotspots("pid")),
    "gaps": (
        "Every GPU idle gap at least the threshold long, with its cause and the API call before it.",
        lambda cat: gaps_table(cat.analysis(), len(cat.runset.runs)),
    ),
    "findings": ("The summary's ranked findings: severity, code, message, numbers (JSON) and fix.", lambda cat: findings_table(cat.analysis())),
    "steps": ("One row per training/inference step (ProfilerStep#N or the detected repeated range).", _steps),
    "ranks": ("One row per process (rank): busy, compute, communication, overlap, waits.", _ranks),
    "operators": ("GPU time per launching framework operator (aten::..., cpu_op markers), with its input shapes.", _operators),
    "collectives": ("Every collective instance seen on two or more ranks: the k-th of its type on each rank.", _collectives),
}


class Catalogue:
    """The tables of one run set, each built and converted to Arrow on first use (thread-safe)."""

    def __init__(self, runset: RunSet, gap_threshold_ns: int | None = None):
        self.runset: RunSet = runset
        self.gap_threshold_ns: int | None = gap_threshold_ns
        self._arrow: dict[str, Any] = {}
        self._analysis: SummaryResult | None = None
        self._inputs: list[RunInput] | None = None
        self._lock = threading.RLock()

    def tables(self) -> list[TableInfo]:
        """Every table name a query may use, model tables first."""
        out = [TableInfo("processes", "model", "One row per profiled process."), TableInfo("agents", "model", "One row per CPU/GPU agent of each process.")]
        out += [TableInfo(name, "model", spec.doc) for name, spec in TABLES.items()]
        out += [TableInfo(alias, "model", f"The {target} table under the name {alias!r}.") for alias, target in ALIASES.items()]
        out += [TableInfo(f"tool_stats_{n}", "stats", f"The profiler's own statistics file {n!r}.") for n in tool_stats_names(self.runset)]
        out += [TableInfo(name, "analysis", doc) for name, (doc, _) in ANALYSIS_TABLES.items()]
        return out

    def names(self) -> list[str]:
        return [t.name for t in self.tables()]

    def analysis(self) -> SummaryResult:
        """The summary document and the full gap sets (computed once, the CLI's defaults)."""
        with self._lock:
            if self._analysis is None:
                self._analysis = analyse(self.runset, self.gap_threshold_ns)
            return self._analysis

    def inputs(self) -> list[RunInput]:
        with self._lock:
            if self._inputs is None:
                self._inputs = run_inputs(self.runset)
            return self._inputs

    def arrow(self, name: str):
        """Table ``name`` as a ``pyarrow.Table`` (KeyError: no such table)."""
        with self._lock:
            if name not in self._arrow:
                self._arrow[name] = self._build(name)
            return self._arrow[name]

    def _build(self, name: str):
        if name in TABLES:
            return model_arrow(self.runset, name)
        if name == "processes":
            return to_arrow(processes_table(self.runset))
        if name == "agents":
            return to_arrow(agents_table(self.runset))
        if name.startswith("tool_stats_") and name[len("tool_stats_") :] in tool_stats_names(self.runset):
            return to_arrow(tool_stats_table(self.runset, name[len("tool_stats_") :]))
        if name in ANALYSIS_TABLES:
            return to_arrow(ANALYSIS_TABLES[name][1](self))
        raise KeyError(name)


def model_arrow(runset: RunSet, name: str):
    """Model table ``name`` of every process as one Arrow table, a chunk per process (the
    columns are the model's arrays, not copies), with the leading ``process`` column and,
    where the table has ``start`` and ``end``, a trailing ``dur`` (``end - start``, ns). A
    column whose type differs between processes (an int32 id in one, int64 in another) is
    widened."""
    import pyarrow as pa

    parts = []
    frames = [run.table(name) for run in runset.runs] or [empty_table(name)]
    for index, frame in enumerate(frames):
        table = to_arrow(frame)
        parts.append(table.add_column(0, PROCESS, pa.array(np.full(len(frame), index, dtype=np.int32))))
    table = parts[0] if len(parts) == 1 else pa.concat_tables(parts, promote_options="permissive")
    if "start" in table.column_names and "end" in table.column_names:
        import pyarrow.compute as pc

        table = table.append_column("dur", pc.subtract(table["end"], table["start"]))
    return table
