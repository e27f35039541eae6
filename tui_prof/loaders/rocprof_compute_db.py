"""rocprof-compute analysis databases (``compute_*`` tables; the file ROCm Optiq opens).

rocprof-compute 3.5 writes one SQLite file per analysed workload (schema_version 1.3.0 in
``compute_metadata``; public sample ``roc-optiq-sample/rocprof_compute_23ed6f36.db``):

* ``compute_workload``: name, ``sys_info_extdata`` (JSON: the same fields as a workload's
  ``sysinfo.csv``) → the GPU agent; ``roofline_bench_extdata`` (JSON: measured peaks,
  ``HBMBw`` GB/s, ``FP32Flops`` GFLOP/s …) → ``Agent.extra["roofline"]``;
* ``compute_kernel`` + ``compute_dispatch`` (dispatch id, gpu id, start/end ns) → kernels;
* ``compute_metric_definition`` (name, metric id such as ``2.1.22``, unit, description) with
  ``compute_kernel_metric_value`` (per kernel: Avg, Peak, Pct of Peak, Min, Max …) and
  ``compute_workload_metric_value`` (whole workload, kernel "") → the ``metrics`` table;
* ``compute_kernel_roofline_data`` / ``compute_workload_roofline_data``: ``total_flops``
  (GFLOP/s achieved) and the arithmetic intensity at L1, L2 and HBM (FLOP/byte; each equals
  the kernel's VALU FLOPs over that level's bandwidth in the metric values) →
  ``Run.meta.extra["roofline_points"]``.

Opened read-only and immutable and queried under the SQLite guard (:mod:`tui_prof.loaders.sqlguard`:
value length, steps, time, text; views checked); a row whose values do not convert is
skipped and counted in a warning, the rest of the database loads.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.loaders import sqlguard
from tui_prof.loaders.base import DetectedFile, IssueSink, LoadError, Sniffed, replaced_warning
from tui_prof.loaders.rocpd import SQLITE_MAGIC, _json, connect, load_databases
from tui_prof.loaders.rocprof_compute import ROOFLINE_PEAKS, sysinfo_agent
from tui_prof.loaders.specs import SPECS
from tui_prof.model import Run, RunMeta
from tui_prof.model.schema import make_table

LOADER = SPECS["rocprof_compute_db"]
FORMAT = LOADER.format

REQUIRED = ("compute_workload", "compute_kernel", "compute_dispatch", "compute_metric_definition", "compute_kernel_metric_value")


def sniff(path: Path, head: bytes) -> Sniffed | None:
    """A SQLite file with rocprof-compute's ``compute_workload`` and ``compute_kernel`` tables."""
    if not head.startswith(SQLITE_MAGIC):
        return None
    try:
        con = connect(path)
        try:
            names = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        finally:
            con.close()
    except sqlite3.Error:
        return Sniffed("compute_db", str(path)) if b"compute_workload" in head else None
    return Sniffed("compute_db", str(path)) if {"compute_workload", "compute_kernel"} <= names else None


INT64 = (-(2**63), 2**63 - 1)


def _convert(value: Any, kind: str) -> Any:
    """One value as ``kind``: ``i`` an int64 (required), ``n`` an int64 or None, ``f`` a
    float or None, ``t`` text or None (a blob or number as its text). ValueError/TypeError
    when it does not convert."""
    if kind == "t":
        return value if value is None or isinstance(value, str) else str(value)
    if value is None:
        if kind == "i":
            raise TypeError("missing")
        return None
    if kind == "f":
        if isinstance(value, (bytes, bool)):
            raise TypeError("not a number")
        return float(value)
    number = sqlguard.as_int(value)
    if not INT64[0] <= number <= INT64[1]:
        raise ValueError("outside int64")
    return number


def _typed(rows: list[tuple], kinds: str, table: str, errors: sqlguard.RowErrors) -> list[tuple]:
    """``rows`` with each value converted as ``kinds`` says (:func:`_convert`); a row with a
    value that does not convert is skipped and counted in ``errors``."""
    out = []
    for row in rows:
        try:
            out.append(tuple(_convert(v, k) for v, k in zip(row, kinds, strict=True)))
        except (TypeError, ValueError, OverflowError):
            errors.skip(table)
    return out


READ_TABLES = (
    "compute_metadata",
    "compute_workload",
    "compute_kernel",
    "compute_dispatch",
    "compute_metric_definition",
    "compute_kernel_metric_value",
    "compute_workload_metric_value",
    "compute_kernel_roofline_data",
)


def _query(path: Path) -> tuple[dict[str, list[tuple]], sqlguard.RowErrors, int]:
    """Every table this loader reads, typed (:func:`_typed`), under the SQLite guard; returns
    (rows by table, the rows skipped, text values replaced)."""
    guard = sqlguard.SqlGuard(os.stat(path).st_size)
    con = connect(path, guard=guard)
    errors = sqlguard.RowErrors()
    queries = {
        "compute_metadata": ("SELECT compute_version, schema_version FROM compute_metadata LIMIT 1", "tt"),
        "compute_workload": (
            "SELECT workload_id, name, sub_name, sys_info_extdata, roofline_bench_extdata FROM compute_workload ORDER BY workload_id",
            "itttt",
        ),
        "compute_kernel": ("SELECT kernel_uuid, workload_id, kernel_name FROM compute_kernel", "iit"),
        "compute_dispatch": ("SELECT kernel_uuid, dispatch_id, gpu_id, start_timestamp, end_timestamp FROM compute_dispatch ORDER BY dispatch_id", "innnn"),
        "compute_metric_definition": ("SELECT metric_uuid, workload_id, name, metric_id, unit FROM compute_metric_definition", "iittt"),
        "compute_kernel_metric_value": ("SELECT metric_uuid, kernel_uuid, value_name, value FROM compute_kernel_metric_value", "iitf"),
        "compute_workload_metric_value": ("SELECT metric_uuid, workload_id, value_name, value FROM compute_workload_metric_value", "iitf"),
        "compute_kernel_roofline_data": (
            "SELECT kernel_uuid, total_flops, l1_cache_data, l2_cache_data, hbm_cache_data FROM compute_kernel_roofline_data",
            "iffff",
        ),
    }
    try:
        names = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        missing = [t for t in REQUIRED if t not in names]
        if missing:
            raise LoadError(f"rocprof-compute database without table(s) {', '.join(missing)}")
        sqlguard.check_views(con, READ_TABLES, "rocprof-compute")
        rows = {table: _typed(con.execute(sql).fetchall(), kinds, table, errors) if table in names else [] for table, (sql, kinds) in queries.items()}
    except sqlite3.Error as err:
        raise guard.error(err, "cannot read rocprof-compute database") from None
    finally:
        con.close()
    return rows, errors, guard.replaced


def load_db(path: Path) -> list[Run]:
    tables, errors, replaced = _query(path)
    version = tables["compute_metadata"]
    workloads = tables["compute_workload"]
    kernels = tables["compute_kernel"]
    dispatches = tables["compute_dispatch"]
    definitions = tables["compute_metric_definition"]
    kernel_values = tables["compute_kernel_metric_value"]
    workload_values = tables["compute_workload_metric_value"]
    kernel_roofline = tables["compute_kernel_roofline_data"]
    kernel_name = {int(k): str(name or "") for k, _w, name in kernels}
    kernel_workload = {int(k): int(w) for k, w, _n in kernels}
    definition = {int(m): (int(w), str(name or ""), str(mid or ""), str(unit or "")) for m, w, name, mid, unit in definitions}
    runs: list[Run] = []
    for workload_id, wname, sub_name, sys_json, roof_json in workloads:
        run = Run(meta=RunMeta(formats=[FORMAT], tool="rocprof-compute", label=f"{wname or 'workload'}/{sub_name or ''}".rstrip("/")))
        run.meta.files.append(str(path))
        if version:
            run.meta.tool_version = str(version[0][0] or "")
            run.meta.extra["schema_version"] = str(version[0][1] or "")
        wanted = [d for d in dispatches if kernel_workload.get(int(d[0])) == workload_id]
        gpu_ids = [int(d[2]) for d in wanted if d[2] is not None]
        agent_id = gpu_ids[0] if gpu_ids else 0
        sysinfo = _json(sys_json)
        if sysinfo:
            agent, row = sysinfo_agent(pd.DataFrame([{k: "" if v is None else str(v) for k, v in sysinfo.items()}]), agent_id)
            agent.extra["source"] = "rocprof-compute analysis database"
            run.agents.append(agent)
            run.meta.hostname = row.get("hostname", "")
            run.meta.command = row.get("command", "")
            peaks = {k: float(v) for k, v in _json(roof_json).items() if k in ROOFLINE_PEAKS and isinstance(v, int | float) and v > 0}
            if peaks:
                agent.extra["roofline"] = peaks
        run.kernels = make_table(
            "kernels",
            {
                "start": np.array([d[3] if d[3] is not None else -1 for d in wanted], dtype=np.int64),
                "end": np.array([d[4] if d[4] is not None else -1 for d in wanted], dtype=np.int64),
                "agent": np.array([d[2] if d[2] is not None else agent_id for d in wanted], dtype=np.int32),
                "dispatch_id": np.array([d[1] if d[1] is not None else -1 for d in wanted], dtype=np.int64),
                "kernel_id": np.array([d[0] for d in wanted], dtype=np.int64),
                "name": [kernel_name.get(int(d[0]), "") for d in wanted],
            },
        )
        rows = [(kernel_name.get(int(k), ""), m, stat, v) for m, k, stat, v in kernel_values if kernel_workload.get(int(k)) == workload_id]
        rows += [("", m, stat, v) for m, w, stat, v in workload_values if int(w) == workload_id]
        known = [(name, definition[int(m)], stat, v) for name, m, stat, v in rows if int(m) in definition]
        run.metrics = make_table(
            "metrics",
            {
                "kernel": [r[0] for r in known],
                "metric_id": [r[1][2] for r in known],
                "metric": [r[1][1] for r in known],
                "stat": [str(r[2] or "") for r in known],
                "value": np.array([np.nan if r[3] is None else float(r[3]) for r in known], dtype=float),
                "unit": [r[1][3] for r in known],
                "agent": np.int32(agent_id),
            },
        )
        points = {}
        for k, flops, l1, l2, hbm in kernel_roofline:
            if kernel_workload.get(int(k)) == workload_id:
                points[kernel_name.get(int(k), "")] = {"gflops": flops, "ai_l1": l1, "ai_l2": l2, "ai_hbm": hbm}
        if points:
            run.meta.extra["roofline_points"] = points
        run.warnings.extend(errors.warnings())
        if replaced:
            run.warnings.append(replaced_warning(replaced, "rocprof-compute text values (names, metric names)"))
        runs.append(run)
    return runs


def load(files: list[DetectedFile], issues: IssueSink) -> list[Run]:
    return load_databases(files, issues, load_db, "rocprof-compute database")
