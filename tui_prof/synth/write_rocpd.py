"""Write a :class:`~tui_prof.synth.spec.SynthRun` as a rocpd SQLite database (ROCm 7, schema 3).

Structure mirrors a real rocprofv3 7.1 database (sample ``rocpd-batched-gemm/28_results.db``;
formats.md §5): physical tables ``rocpd_<name>_<uuid>`` with the real column lists, an
un-suffixed ``rocpd_<name>`` view over each, ``rocpd_metadata`` rows ``schema_version=3``,
``uuid``, ``guid``, and the convenience views ``kernels``, ``regions``, ``memory_copies``,
``top_kernels``, ``top``, ``busy``, ``processes``, ``threads`` with the real views' column
names (SQL written here). As in the real file, ``rocpd_event.stack_id`` holds the internal
correlation id that links an API region to its kernel or copy (``parent_stack_id`` of a
kernel/copy event = the launching call's id) and ``rocpd_event.correlation_id`` (the
external id) is 0. Row ids: ``rocpd_info_agent.id`` = node id, ``rocpd_info_process.id`` =
pid, ``rocpd_info_thread.id`` = tid, ``rocpd_info_kernel_symbol.id`` = kernel_id.
"""

from __future__ import annotations

import json
import sqlite3
import uuid as uuidlib
from pathlib import Path

import numpy as np
import pandas as pd

from tui_prof.synth.spec import SynthRun
from tui_prof.synth.write_csv import COPY_DIRECTION_LABEL, agent_record

SCHEMA_VERSION = "3"

# (table, [(column, declaration)]) in the real column order; "id" and "guid" come first.
_TABLES: list[tuple[str, list[tuple[str, str]]]] = [
    ("metadata", [("tag", "TEXT NOT NULL"), ("value", "TEXT NOT NULL")]),
    ("string", [("string", "TEXT NOT NULL UNIQUE")]),
    (
        "info_node",
        [
            ("hash", "BIGINT NOT NULL UNIQUE"),
            ("machine_id", "TEXT NOT NULL UNIQUE"),
            ("system_name", "TEXT"),
            ("hostname", "TEXT"),
            ("release", "TEXT"),
            ("version", "TEXT"),
            ("hardware_name", "TEXT"),
            ("domain_name", "TEXT"),
        ],
    ),
    (
        "info_process",
        [
            ("nid", "INTEGER NOT NULL"),
            ("ppid", "INTEGER"),
            ("pid", "INTEGER NOT NULL"),
            ("init", "BIGINT"),
            ("fini", "BIGINT"),
            ("start", "BIGINT"),
            ("end", "BIGINT"),
            ("command", "TEXT"),
            ("environment", "JSONB DEFAULT '{}' NOT NULL"),
            ("extdata", "JSONB DEFAULT '{}' NOT NULL"),
        ],
    ),
    (
        "info_thread",
        [
            ("nid", "INTEGER NOT NULL"),
            ("ppid", "INTEGER"),
            ("pid", "INTEGER NOT NULL"),
            ("tid", "INTEGER NOT NULL"),
            ("name", "TEXT"),
            ("start", "BIGINT"),
            ("end", "BIGINT"),
            ("extdata", "JSONB DEFAULT '{}' NOT NULL"),
        ],
    ),
    (
        "info_agent",
        [
            ("nid", "INTEGER NOT NULL"),
            ("pid", "INTEGER NOT NULL"),
            ("type", "TEXT CHECK (\"type\" IN ('CPU', 'GPU'))"),
            ("absolute_index", "INTEGER"),
            ("logical_index", "INTEGER"),
            ("type_index", "INTEGER"),
            ("uuid", "INTEGER"),
            ("name", "TEXT"),
            ("model_name", "TEXT"),
            ("vendor_name", "TEXT"),
            ("product_name", "TEXT"),
            ("user_name", "TEXT"),
            ("extdata", "JSONB DEFAULT '{}' NOT NULL"),
        ],
    ),
    ("info_queue", [("nid", "INTEGER NOT NULL"), ("pid", "INTEGER NOT NULL"), ("name", "TEXT"), ("extdata", "JSONB DEFAULT '{}' NOT NULL")]),
    ("info_stream", [("nid", "INTEGER NOT NULL"), ("pid", "INTEGER NOT NULL"), ("name", "TEXT"), ("extdata", "JSONB DEFAULT '{}' NOT NULL")]),
    (
        "info_pmc",
        [
            ("nid", "INTEGER NOT NULL"),
            ("pid", "INTEGER NOT NULL"),
            ("agent_id", "INTEGER"),
            ("target_arch", "TEXT"),
            ("event_code", "INT"),
            ("instance_id", "INTEGER"),
            ("name", "TEXT NOT NULL"),
            ("symbol", "TEXT NOT NULL"),
            ("description", "TEXT"),
            ("long_description", "TEXT DEFAULT ''"),
            ("component", "TEXT"),
            ("units", "TEXT DEFAULT ''"),
            ("value_type", "TEXT"),
            ("block", "TEXT"),
            ("expression", "TEXT"),
            ("is_constant", "INTEGER"),
            ("is_derived", "INTEGER"),
            ("extdata", "JSONB DEFAULT '{}' NOT NULL"),
        ],
    ),
    (
        "info_code_object",
        [
            ("nid", "INTEGER NOT NULL"),
            ("pid", "INTEGER NOT NULL"),
            ("agent_id", "INTEGER"),
            ("uri", "TEXT"),
            ("load_base", "BIGINT"),
            ("load_size", "BIGINT"),
            ("load_delta", "BIGINT"),
            ("storage_type", "TEXT CHECK (\"storage_type\" IN ('FILE', 'MEMORY'))"),
            ("extdata", "JSONB DEFAULT '{}' NOT NULL"),
        ],
    ),
    (
        "info_kernel_symbol",
        [
            ("nid", "INTEGER NOT NULL"),
            ("pid", "INTEGER NOT NULL"),
            ("code_object_id", "INTEGER NOT NULL"),
            ("kernel_name", "TEXT"),
            ("display_name", "TEXT"),
            ("kernel_object", "INTEGER"),
            ("kernarg_segment_size", "INTEGER"),
            ("kernarg_segment_alignment", "INTEGER"),
            ("group_segment_size", "INTEGER"),
            ("private_segment_size", "INTEGER"),
            ("sgpr_count", "INTEGER"),
            ("arch_vgpr_count", "INTEGER"),
            ("accum_vgpr_count", "INTEGER"),
            ("extdata", "JSONB DEFAULT '{}' NOT NULL"),
        ],
    ),
    ("track", [("nid", "INTEGER NOT NULL"), ("pid", "INTEGER"), ("tid", "INTEGER"), ("name_id", "INTEGER"), ("extdata", "JSONB DEFAULT '{}' NOT NULL")]),
    (
        "event",
        [
            ("category_id", "INTEGER"),
            ("stack_id", "INTEGER"),
            ("parent_stack_id", "INTEGER"),
            ("correlation_id", "INTEGER"),
            ("call_stack", "JSONB DEFAULT '{}' NOT NULL"),
            ("line_info", "JSONB DEFAULT '{}' NOT NULL"),
            ("extdata", "JSONB DEFAULT '{}' NOT NULL"),
        ],
    ),
    (
        "arg",
        [
            ("event_id", "INTEGER NOT NULL"),
            ("position", "INTEGER NOT NULL"),
            ("type", "TEXT NOT NULL"),
            ("name", "TEXT NOT NULL"),
            ("value", "TEXT"),
            ("extdata", "JSONB DEFAULT '{}' NOT NULL"),
        ],
    ),
    ("pmc_event", [("event_id", "INTEGER"), ("pmc_id", "INTEGER NOT NULL"), ("value", "REAL DEFAULT 0.0"), ("extdata", "JSONB DEFAULT '{}' NOT NULL")]),
    (
        "region",
        [
            ("nid", "INTEGER NOT NULL"),
            ("pid", "INTEGER NOT NULL"),
            ("tid", "INTEGER NOT NULL"),
            ("start", "BIGINT NOT NULL"),
            ("end", "BIGINT NOT NULL"),
            ("name_id", "INTEGER NOT NULL"),
            ("event_id", "INTEGER"),
            ("extdata", "JSONB DEFAULT '{}' NOT NULL"),
        ],
    ),
    ("sample", [("track_id", "INTEGER NOT NULL"), ("timestamp", "BIGINT NOT NULL"), ("event_id", "INTEGER"), ("extdata", "JSONB DEFAULT '{}' NOT NULL")]),
    (
        "kernel_dispatch",
        [
            ("nid", "INTEGER NOT NULL"),
            ("pid", "INTEGER NOT NULL"),
            ("tid", "INTEGER"),
            ("agent_id", "INTEGER NOT NULL"),
            ("kernel_id", "INTEGER NOT NULL"),
            ("dispatch_id", "INTEGER NOT NULL"),
            ("queue_id", "INTEGER NOT NULL"),
            ("stream_id", "INTEGER NOT NULL"),
            ("start", "BIGINT NOT NULL"),
            ("end", "BIGINT NOT NULL"),
            ("private_segment_size", "INTEGER"),
            ("group_segment_size", "INTEGER"),
            ("workgroup_size_x", "INTEGER NOT NULL"),
            ("workgroup_size_y", "INTEGER NOT NULL"),
            ("workgroup_size_z", "INTEGER NOT NULL"),
            ("grid_size_x", "INTEGER NOT NULL"),
            ("grid_size_y", "INTEGER NOT NULL"),
            ("grid_size_z", "INTEGER NOT NULL"),
            ("region_name_id", "INTEGER"),
            ("event_id", "INTEGER"),
            ("extdata", "JSONB DEFAULT '{}' NOT NULL"),
        ],
    ),
    (
        "memory_copy",
        [
            ("nid", "INTEGER NOT NULL"),
            ("pid", "INTEGER NOT NULL"),
            ("tid", "INTEGER"),
            ("start", "BIGINT NOT NULL"),
            ("end", "BIGINT NOT NULL"),
            ("name_id", "INTEGER NOT NULL"),
            ("dst_agent_id", "INTEGER"),
            ("dst_address", "INTEGER"),
            ("src_agent_id", "INTEGER"),
            ("src_address", "INTEGER"),
            ("size", "INTEGER NOT NULL"),
            ("queue_id", "INTEGER"),
            ("stream_id", "INTEGER"),
            ("region_name_id", "INTEGER"),
            ("event_id", "INTEGER"),
            ("extdata", "JSONB DEFAULT '{}' NOT NULL"),
        ],
    ),
    (
        "memory_allocate",
        [
            ("nid", "INTEGER NOT NULL"),
            ("pid", "INTEGER NOT NULL"),
            ("tid", "INTEGER"),
            ("agent_id", "INTEGER"),
            ("type", "TEXT CHECK (\"type\" IN ('ALLOC', 'FREE', 'REALLOC', 'RECLAIM'))"),
            ("level", "TEXT CHECK (\"level\" IN ('REAL', 'VIRTUAL', 'SCRATCH'))"),
            ("start", "BIGINT NOT NULL"),
            ("end", "BIGINT NOT NULL"),
            ("address", "INTEGER"),
            ("size", "INTEGER NOT NULL"),
            ("queue_id", "INTEGER"),
            ("stream_id", "INTEGER"),
            ("event_id", "INTEGER"),
            ("extdata", "JSONB DEFAULT '{}' NOT NULL"),
        ],
    ),
]

# Convenience views: same names and output columns as rocprofv3's data/summary views.
_VIEWS = {
    "processes": """
SELECT n.id AS nid, n.machine_id, n.system_name, n.hostname, n.release AS system_release,
       n.version AS system_version, p.guid, p.ppid, p.pid, p.init, p.start, p."end", p.fini, p.command
FROM rocpd_info_process p JOIN rocpd_info_node n ON n.id = p.nid AND n.guid = p.guid""",
    "threads": """
SELECT n.id AS nid, n.machine_id, n.system_name, n.hostname, n.release AS system_release,
       n.version AS system_version, p.guid, p.ppid, p.pid, t.tid, t.start, t."end", t.name
FROM rocpd_info_thread t
JOIN rocpd_info_process p ON p.id = t.pid AND p.guid = t.guid
JOIN rocpd_info_node n ON n.id = t.nid AND n.guid = t.guid""",
    "regions": """
SELECT r.id, r.guid, cat.string AS category, nm.string AS name, r.nid, p.pid, t.tid, r.start, r."end",
       r."end" - r.start AS duration, r.event_id, e.stack_id, e.parent_stack_id, e.correlation_id AS corr_id,
       e.extdata, e.call_stack, e.line_info
FROM rocpd_region r
JOIN rocpd_event e ON e.id = r.event_id AND e.guid = r.guid
LEFT JOIN rocpd_string cat ON cat.id = e.category_id AND cat.guid = e.guid
JOIN rocpd_string nm ON nm.id = r.name_id AND nm.guid = r.guid
JOIN rocpd_info_process p ON p.id = r.pid AND p.guid = r.guid
JOIN rocpd_info_thread t ON t.id = r.tid AND t.guid = r.guid""",
    "kernels": """
SELECT k.id, k.guid, t.tid, cat.string AS category, reg.string AS region, s.display_name AS name, k.nid, p.pid,
       a.absolute_index AS agent_abs_index, a.logical_index AS agent_log_index,
       a.type_index AS agent_type_index, a.type AS agent_type, s.code_object_id, k.kernel_id, k.dispatch_id,
       k.stream_id, k.queue_id, q.name AS queue, st.name AS stream, k.start, k."end",
       k."end" - k.start AS duration, k.grid_size_x AS grid_x, k.grid_size_y AS grid_y,
       k.grid_size_z AS grid_z, k.workgroup_size_x AS workgroup_x, k.workgroup_size_y AS workgroup_y,
       k.workgroup_size_z AS workgroup_z, k.group_segment_size AS lds_size,
       k.private_segment_size AS scratch_size, s.arch_vgpr_count AS vgpr_count, s.accum_vgpr_count,
       s.sgpr_count, s.group_segment_size AS static_lds_size, s.private_segment_size AS static_scratch_size,
       e.stack_id, e.parent_stack_id, e.correlation_id AS corr_id
FROM rocpd_kernel_dispatch k
JOIN rocpd_info_agent a ON a.id = k.agent_id AND a.guid = k.guid
JOIN rocpd_event e ON e.id = k.event_id AND e.guid = k.guid
LEFT JOIN rocpd_string cat ON cat.id = e.category_id AND cat.guid = e.guid
LEFT JOIN rocpd_string reg ON reg.id = k.region_name_id AND reg.guid = k.guid
JOIN rocpd_info_kernel_symbol s ON s.id = k.kernel_id AND s.guid = k.guid
LEFT JOIN rocpd_info_queue q ON q.id = k.queue_id AND q.guid = k.guid
LEFT JOIN rocpd_info_stream st ON st.id = k.stream_id AND st.guid = k.guid
JOIN rocpd_info_process p ON p.id = k.pid AND p.guid = k.guid
JOIN rocpd_info_thread t ON t.id = k.tid AND t.guid = k.guid""",
    "memory_copies": """
SELECT m.id, m.guid, cat.string AS category, m.nid, p.pid, t.tid, m.start, m."end",
       m."end" - m.start AS duration, nm.string AS name, reg.string AS region_name, m.stream_id, m.queue_id,
       st.name AS stream_name, q.name AS queue_name, m.size,
       dst.name AS dst_device, dst.absolute_index AS dst_agent_abs_index, dst.logical_index AS dst_agent_log_index,
       dst.type_index AS dst_agent_type_index, dst.type AS dst_agent_type, m.dst_address,
       src.name AS src_device, src.absolute_index AS src_agent_abs_index, src.logical_index AS src_agent_log_index,
       src.type_index AS src_agent_type_index, src.type AS src_agent_type, m.src_address,
       e.stack_id, e.parent_stack_id, e.correlation_id AS corr_id
FROM rocpd_memory_copy m
JOIN rocpd_string nm ON nm.id = m.name_id AND nm.guid = m.guid
LEFT JOIN rocpd_string reg ON reg.id = m.region_name_id AND reg.guid = m.guid
JOIN rocpd_info_agent dst ON dst.id = m.dst_agent_id AND dst.guid = m.guid
JOIN rocpd_info_agent src ON src.id = m.src_agent_id AND src.guid = m.guid
LEFT JOIN rocpd_info_queue q ON q.id = m.queue_id AND q.guid = m.guid
LEFT JOIN rocpd_info_stream st ON st.id = m.stream_id AND st.guid = m.guid
JOIN rocpd_event e ON e.id = m.event_id AND e.guid = m.guid
LEFT JOIN rocpd_string cat ON cat.id = e.category_id AND cat.guid = e.guid
JOIN rocpd_info_process p ON p.id = m.pid AND p.guid = m.guid
JOIN rocpd_info_thread t ON t.id = m.tid AND t.guid = m.guid""",
    # durations in microseconds (/1000.0) as in rocprofv3's summary views
    "top_kernels": """
SELECT s.display_name AS name, COUNT(*) AS total_calls, SUM(k."end" - k.start) / 1000.0 AS total_duration,
       SUM(k."end" - k.start) / COUNT(*) / 1000.0 AS average,
       SUM(k."end" - k.start) * 100.0 / (SELECT SUM("end" - start) FROM rocpd_kernel_dispatch) AS percentage
FROM rocpd_kernel_dispatch k JOIN rocpd_info_kernel_symbol s ON s.id = k.kernel_id AND s.guid = k.guid
GROUP BY s.display_name ORDER BY total_duration DESC""",
    "top": """
WITH ops(name, duration) AS (
    SELECT s.display_name, k."end" - k.start FROM rocpd_kernel_dispatch k
        JOIN rocpd_info_kernel_symbol s ON s.id = k.kernel_id AND s.guid = k.guid
    UNION ALL
    SELECT nm.string, m."end" - m.start FROM rocpd_memory_copy m
        JOIN rocpd_string nm ON nm.id = m.name_id AND nm.guid = m.guid
    UNION ALL
    SELECT nm.string, r."end" - r.start FROM rocpd_region r
        JOIN rocpd_string nm ON nm.id = r.name_id AND nm.guid = r.guid)
SELECT name, COUNT(*) AS total_calls, SUM(duration) / 1000.0 AS total_duration,
       SUM(duration) / COUNT(*) / 1000.0 AS average,
       SUM(duration) * 100.0 / (SELECT SUM(duration) FROM ops) AS percentage
FROM ops GROUP BY name ORDER BY total_duration DESC""",
    # GpuTime: kernels on the agent + copies whose destination is the agent; WallTime: whole span
    "busy": """
WITH work(agent_id, guid, start, stop) AS (
    SELECT agent_id, guid, start, "end" FROM rocpd_kernel_dispatch
    UNION ALL
    SELECT dst_agent_id, guid, start, "end" FROM rocpd_memory_copy),
per_agent AS (SELECT agent_id, guid, SUM(stop - start) AS GpuTime FROM work GROUP BY agent_id, guid),
wall AS (SELECT MAX(stop) - MIN(start) AS WallTime FROM work)
SELECT pa.agent_id, a.type, pa.GpuTime, wall.WallTime, pa.GpuTime * 1.0 / wall.WallTime AS Busy
FROM per_agent pa CROSS JOIN wall JOIN rocpd_info_agent a ON a.id = pa.agent_id AND a.guid = pa.guid""",
}


def _uuid7(seed: int) -> uuidlib.UUID:
    """A deterministic UUID with version-7 layout (rocpd suffixes are UUIDv7)."""
    rng = np.random.default_rng(seed + 0x5EED)
    value = int.from_bytes(rng.bytes(16), "big")
    value = (value & ~(0xF << 76)) | (0x7 << 76)  # version 7
    value = (value & ~(0x3 << 62)) | (0x2 << 62)  # RFC 4122 variant
    return uuidlib.UUID(int=value)


def write_rocpd(run: SynthRun, path, hostname: str | None = None) -> Path:
    """Write ``run`` as a rocpd database at ``path`` (conventionally ``<pid>_results.db``).

    If ``path`` is an existing directory the file ``<path>/<pid>_results.db`` is written.
    An existing file is replaced. Returns the database path.
    """
    path = Path(path)
    pid = run.spec.pid
    if path.is_dir():
        path = path / f"{pid}_results.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    hostname = hostname or run.hostname
    guid = str(_uuid7(run.spec.seed))
    suffix = "_" + guid.replace("-", "_")

    con = sqlite3.connect(path)
    try:
        con.execute("PRAGMA journal_mode=OFF")
        con.execute("PRAGMA synchronous=OFF")
        for name, cols in _TABLES:
            decl = '"id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT'
            if name != "metadata":
                decl += f",\n    \"guid\" TEXT DEFAULT '{guid}' NOT NULL"
            decl += "".join(f',\n    "{c}" {d}' for c, d in cols)
            con.execute(f"CREATE TABLE `rocpd_{name}{suffix}` (\n    {decl}\n)")
            con.execute(f"CREATE VIEW `rocpd_{name}` AS SELECT * FROM `rocpd_{name}{suffix}`")
        for name, sql in _VIEWS.items():
            con.execute(f"CREATE VIEW `{name}` AS {sql.strip()}")
        _fill(con, run, suffix, guid, hostname)
        con.commit()
    finally:
        con.close()
    return path


def _insert(con, table: str, suffix: str, columns: list[str], rows) -> None:
    names = ", ".join(f'"{c}"' for c in columns)
    marks = ", ".join("?" * len(columns))
    con.executemany(f"INSERT INTO `rocpd_{table}{suffix}` ({names}) VALUES ({marks})", rows)


def _fill_agents(con, suffix: str, run: SynthRun, nid: int, pid: int) -> None:
    """The info_agent rows of the run's agents (rocprofv3's JSON record in extdata)."""
    agent_rows = []
    for a in run.agents:
        rec = agent_record(a)
        rec.pop("agent_type", None)
        rec["type"] = 1 if a.type == "CPU" else 2
        rec["gpu_index"] = a.type_index if a.type == "GPU" else -1
        if a.memory_bytes:
            rec["mem_banks"] = [{"size_in_bytes": a.memory_bytes, "mem_clk_max": 1300, "width": 8192}]
        agent_rows.append(
            (
                a.id,
                nid,
                pid,
                a.type,
                a.node_id,
                a.logical_index,
                a.type_index,
                a.extra.get("device_id", 0),
                a.name,
                rec.get("model_name", ""),
                a.vendor,
                a.product,
                a.product,
                json.dumps(rec),
            )
        )
    _insert(
        con,
        "info_agent",
        suffix,
        [
            "id",
            "nid",
            "pid",
            "type",
            "absolute_index",
            "logical_index",
            "type_index",
            "uuid",
            "name",
            "model_name",
            "vendor_name",
            "product_name",
            "user_name",
            "extdata",
        ],
        agent_rows,
    )


def _fill_code_objects(con, suffix: str, run: SynthRun, nid: int, pid: int) -> None:
    """Queues and streams, one code object per GPU and one kernel symbol per kernel id."""
    k = run.kernels
    # queues/streams: id 0 is the default one (used by the copies), kernels use their own ids
    queue_ids = sorted(set(k["queue"].tolist()) - {0})
    stream_ids = sorted(set(k["stream"].tolist()) - {0})
    _insert(con, "info_queue", suffix, ["id", "nid", "pid", "name"], [(0, nid, pid, "Default Queue")] + [(q, nid, pid, f"Queue {q - 1}") for q in queue_ids])
    _insert(con, "info_stream", suffix, ["id", "nid", "pid", "name"], [(0, nid, pid, "Default Stream")] + [(s, nid, pid, f"Stream {s}") for s in stream_ids])

    # one code object per GPU; one kernel symbol per (GPU, kernel) = kernel_id
    gpus = run.gpu_agents
    _insert(
        con,
        "info_code_object",
        suffix,
        ["id", "nid", "pid", "agent_id", "uri", "load_base", "load_size", "load_delta", "storage_type"],
        [
            (
                i + 1,
                nid,
                pid,
                a.id,
                f"memory://{pid}#offset=0x{0x10000000 + i * 0x100000:x}&size=65536",
                0x7F0000000000 + i * 0x100000,
                65536,
                0x7F0000000000 + i * 0x100000,
                "MEMORY",
            )
            for i, a in enumerate(gpus)
        ],
    )
    sym = k.drop_duplicates("kernel_id").sort_values("kernel_id")
    gpu_index = {a.id: i for i, a in enumerate(gpus)}
    _insert(
        con,
        "info_kernel_symbol",
        suffix,
        [
            "id",
            "nid",
            "pid",
            "code_object_id",
            "kernel_name",
            "display_name",
            "kernel_object",
            "kernarg_segment_size",
            "kernarg_segment_alignment",
            "group_segment_size",
            "private_segment_size",
            "sgpr_count",
            "arch_vgpr_count",
            "accum_vgpr_count",
        ],
        [
            (
                int(r.kernel_id),
                nid,
                pid,
                gpu_index[int(r.agent)] + 1,
                f"{r.name}.kd",
                str(r.name),
                0x7F0000001000 + int(r.kernel_id) * 64,
                64,
                16,
                int(r.lds_bytes),
                int(r.scratch_bytes),
                int(r.sgpr),
                int(r.arch_vgpr),
                int(r.accum_vgpr),
            )
            for r in sym.itertuples(index=False)
        ],
    )


def _fill_events(con, suffix: str, run: SynthRun, nid: int, pid: int, cats: tuple[int, int, int], api_name_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The event rows (API regions first, then kernels, then copies) and the API regions;
    returns the event ids of the kernels and of the copies."""
    k, api, cp = run.kernels, run.api, run.copies
    cat_api, cat_kernel, cat_copy = cats
    # events: API regions first, then kernels, then copies
    n_api, n_k, n_c = len(api), len(k), len(cp)
    api_corr = api["correlation_id"].to_numpy()
    k_corr = k["correlation_id"].to_numpy()
    c_corr = cp["correlation_id"].to_numpy()
    ev_api = np.arange(1, n_api + 1, dtype=np.int64)
    ev_k = np.arange(n_api + 1, n_api + n_k + 1, dtype=np.int64)
    ev_c = np.arange(n_api + n_k + 1, n_api + n_k + n_c + 1, dtype=np.int64)
    ev_cols = ["id", "category_id", "stack_id", "parent_stack_id", "correlation_id"]
    _insert(con, "event", suffix, ev_cols, zip(ev_api.tolist(), [cat_api] * n_api, api_corr.tolist(), [0] * n_api, [0] * n_api))
    _insert(con, "event", suffix, ev_cols, zip(ev_k.tolist(), [cat_kernel] * n_k, k_corr.tolist(), k_corr.tolist(), [0] * n_k))
    _insert(con, "event", suffix, ev_cols, zip(ev_c.tolist(), [cat_copy] * n_c, c_corr.tolist(), c_corr.tolist(), [0] * n_c))

    name_ids = api_name_ids[api["name"].cat.codes.to_numpy()]
    _insert(
        con,
        "region",
        suffix,
        ["nid", "pid", "tid", "start", "end", "name_id", "event_id"],
        zip([nid] * n_api, [pid] * n_api, api["tid"].tolist(), api["start"].tolist(), api["end"].tolist(), name_ids.tolist(), ev_api.tolist()),
    )
    return ev_k, ev_c


def _fill_dispatches(con, suffix: str, k: pd.DataFrame, nid: int, pid: int, ev_k: np.ndarray) -> None:
    n_k = len(k)
    _insert(
        con,
        "kernel_dispatch",
        suffix,
        [
            "nid",
            "pid",
            "tid",
            "agent_id",
            "kernel_id",
            "dispatch_id",
            "queue_id",
            "stream_id",
            "start",
            "end",
            "private_segment_size",
            "group_segment_size",
            "workgroup_size_x",
            "workgroup_size_y",
            "workgroup_size_z",
            "grid_size_x",
            "grid_size_y",
            "grid_size_z",
            "region_name_id",
            "event_id",
        ],
        zip(
            [nid] * n_k,
            [pid] * n_k,
            k["tid"].tolist(),
            k["agent"].tolist(),
            k["kernel_id"].tolist(),
            k["dispatch_id"].tolist(),
            k["queue"].tolist(),
            k["stream"].tolist(),
            k["start"].tolist(),
            k["end"].tolist(),
            k["scratch_bytes"].tolist(),
            k["lds_bytes"].tolist(),
            k["wg_x"].tolist(),
            k["wg_y"].tolist(),
            k["wg_z"].tolist(),
            k["grid_x"].tolist(),
            k["grid_y"].tolist(),
            k["grid_z"].tolist(),
            [1] * n_k,
            ev_k.tolist(),
        ),
    )


def _fill_copies(con, suffix: str, cp: pd.DataFrame, nid: int, pid: int, copy_name_ids: list[int], ev_c: np.ndarray) -> None:
    n_c = len(cp)
    _insert(
        con,
        "memory_copy",
        suffix,
        [
            "nid",
            "pid",
            "tid",
            "start",
            "end",
            "name_id",
            "dst_agent_id",
            "dst_address",
            "src_agent_id",
            "src_address",
            "size",
            "queue_id",
            "stream_id",
            "region_name_id",
            "event_id",
        ],
        zip(
            [nid] * n_c,
            [pid] * n_c,
            cp["tid"].tolist(),
            cp["start"].tolist(),
            cp["end"].tolist(),
            copy_name_ids,
            cp["dst_agent"].tolist(),
            [0x7F1000000000] * n_c,
            cp["src_agent"].tolist(),
            [0x7F2000000000] * n_c,
            cp["bytes"].tolist(),
            [0] * n_c,
            [0] * n_c,
            [1] * n_c,
            ev_c.tolist(),
        ),
    )


def _fill(con, run: SynthRun, suffix: str, guid: str, hostname: str) -> None:
    spec, pid = run.spec, run.spec.pid
    k, api, cp = run.kernels, run.api, run.copies
    nid = 1_000_000_000 + spec.seed % 1_000_000
    start, end = run.expected.wall_span

    _insert(con, "metadata", suffix, ["tag", "value"], [("schema_version", SCHEMA_VERSION), ("uuid", suffix), ("guid", guid)])

    # interned strings; id 1 is the empty string as in the real database
    strings: dict[str, int] = {}

    def sid(text: str) -> int:
        if text not in strings:
            strings[text] = len(strings) + 1
        return strings[text]

    sid("")
    cat_api, cat_kernel, cat_copy = sid(run.HIP_DOMAIN), sid("KERNEL_DISPATCH"), sid("MEMORY_COPY")
    api_name_ids = np.array([sid(str(n)) for n in api["name"].cat.categories], dtype=np.int64)
    copy_labels = [COPY_DIRECTION_LABEL.get(str(d), "MEMORY_COPY_NONE") for d in cp["direction"].astype(str)]
    copy_name_ids = [sid(label) for label in copy_labels]

    _insert(
        con,
        "info_node",
        suffix,
        ["id", "hash", "machine_id", "system_name", "hostname", "release", "version", "hardware_name", "domain_name"],
        [(nid, nid * 7919, f"{spec.seed:032x}", "Linux", hostname, "6.8.0-synthetic", "#1 SMP synthetic", "x86_64", "(none)")],
    )
    command = f"synthetic program: iterations={spec.iterations} kernels_per_iteration={spec.kernels_per_iteration} sync={spec.sync} gpus={spec.gpus}"
    _insert(
        con,
        "info_process",
        suffix,
        ["id", "nid", "ppid", "pid", "init", "fini", "start", "end", "command", "environment", "extdata"],
        [(pid, nid, 1, pid, start, end, start, end, command, "{}", json.dumps({"synth_spec": spec.to_dict()}))],
    )
    tids = sorted(set(api["tid"].tolist()) | set(k["tid"].tolist()) | set(cp["tid"].tolist()))
    _insert(con, "info_thread", suffix, ["id", "nid", "ppid", "pid", "tid", "name", "start", "end"], [(t, nid, 1, pid, t, None, None, None) for t in tids])

    _fill_agents(con, suffix, run, nid, pid)
    _fill_code_objects(con, suffix, run, nid, pid)

    ev_k, ev_c = _fill_events(con, suffix, run, nid, pid, (cat_api, cat_kernel, cat_copy), api_name_ids)
    _fill_dispatches(con, suffix, k, nid, pid, ev_k)
    _fill_copies(con, suffix, cp, nid, pid, copy_name_ids, ev_c)

    _insert(con, "string", suffix, ["id", "string"], [(i, s) for s, i in strings.items()])
