"""rocpd loader: checked against the database's own views (top_kernels, regions, busy,
memory_copies, counters_collection ...) queried here with plain sqlite3, and against rows
inserted into a copy of the real database whose answer is known by construction."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from tests.test_kineto import union_ns as union_length  # the tests' own interval union, not the project's
from tui_prof.analysis import memory
from tui_prof.analysis.hotspots import hotspots
from tui_prof.loaders import load_path, rocpd
from tui_prof.loaders.base import DetectedFile, IssueSink, read_head

DATA = Path(__file__).parent / "data" / "rocpd"
DB = DATA / "28_results.db"


def query(path: Path, sql: str, params: tuple = ()) -> list[tuple]:
    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def run():
    runs = rocpd.load_db(DB)
    assert len(runs) == 1
    return runs[0]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- real database


def test_sniff_claims_rocpd_only(tmp_path):
    assert rocpd.sniff(DB, read_head(DB)).kind == "rocpd_db"
    legacy = tmp_path / "results.db"  # legacy rocprof v1 layout: not ours
    con = sqlite3.connect(legacy)
    con.execute('CREATE TABLE KERN ("Index" INTEGER, "KernelName" TEXT)')
    con.execute("CREATE TABLE HIP (BeginNs INTEGER)")
    con.commit()
    con.close()
    assert rocpd.sniff(legacy, read_head(legacy)) is None
    compute = tmp_path / "rocprof_compute.db"  # rocprofiler-compute analysis DB: not ours
    con = sqlite3.connect(compute)
    con.execute("CREATE TABLE compute_dispatch (id INTEGER)")
    con.commit()
    con.close()
    assert rocpd.sniff(compute, read_head(compute)) is None
    json_file = tmp_path / "x.json"
    json_file.write_text('{"rocprofiler-sdk-tool": []}')
    assert rocpd.sniff(json_file, read_head(json_file)) is None


def test_dispatch_count_equals_kernels_view(run):
    (view,) = query(DB, "SELECT count(*) FROM kernels")[0]
    (table,) = query(DB, "SELECT count(*) FROM rocpd_kernel_dispatch")[0]
    assert len(run.kernels) == view == table == 151


def test_hotspots_equal_top_kernels_view(run):
    """top_kernels: name, total_calls, total_duration (µs = SUM/1000.0), average (µs, integer
    SUM/COUNT then /1000.0), percentage of all dispatch time."""
    ours = hotspots(run.kernels)
    theirs = query(DB, "SELECT name, total_calls, total_duration, average, percentage FROM top_kernels")
    assert len(ours) == len(theirs) == 2
    for row, (name, calls, total_us, avg_us, percent) in zip(ours.itertuples(), theirs):
        assert row.name == name
        assert row.calls == calls
        assert row.total_ns == round(total_us * 1000)
        assert row.total_ns // row.calls == round(avg_us * 1000)
        assert row.percent == pytest.approx(percent, rel=1e-12)


def test_kernel_columns_equal_kernels_view(run):
    rows = query(
        DB,
        "SELECT start, end, agent_abs_index, queue_id, tid, dispatch_id, kernel_id, grid_x, grid_y, grid_z, "
        "workgroup_x, workgroup_y, workgroup_z, lds_size, scratch_size, vgpr_count, accum_vgpr_count, sgpr_count, "
        "stack_id, pid FROM kernels ORDER BY dispatch_id",
    )
    k = run.kernels.sort_values("dispatch_id")
    cols = [
        "start",
        "end",
        "agent",
        "queue",
        "tid",
        "dispatch_id",
        "kernel_id",
        "grid_x",
        "grid_y",
        "grid_z",
        "wg_x",
        "wg_y",
        "wg_z",
        "lds_bytes",
        "scratch_bytes",
        "arch_vgpr",
        "accum_vgpr",
        "sgpr",
        "correlation_id",
        "pid",
    ]
    assert [tuple(int(v) for v in r) for r in k[cols].itertuples(index=False)] == rows
    assert k["start"].dtype == np.int64 and k["end"].dtype == np.int64


def test_regions_by_category(run):
    by_category = dict(query(DB, "SELECT category, count(*) FROM regions GROUP BY category"))
    assert by_category == {"HIP_COMPILER_API_EXT": 304, "HIP_RUNTIME_API_EXT": 325}
    assert len(run.api) == sum(by_category.values()) == 629
    assert set(run.api["domain"].astype(str)) == {"hip"}
    by_name = dict(query(DB, "SELECT name, count(*) FROM regions GROUP BY name"))
    assert run.api["name"].astype(str).value_counts().to_dict() == by_name
    (total,) = query(DB, "SELECT SUM(duration) FROM regions")[0]
    assert int((run.api["end"] - run.api["start"]).sum()) == total
    assert run.markers.empty


def test_correlation_links_regions_to_kernels(run):
    """The database's own join (kernels.stack_id = regions.stack_id, the internal correlation id)
    names the API call that launched each dispatch; our correlation_id join must agree."""
    expected = dict(query(DB, "SELECT k.dispatch_id, r.name FROM kernels k JOIN regions r ON r.stack_id = k.stack_id"))
    api = run.api.set_index("correlation_id")["name"].astype(str)
    assert api.index.is_unique
    ours = {int(d): api[c] for d, c in zip(run.kernels["dispatch_id"], run.kernels["correlation_id"])}
    assert ours == expected
    assert sorted(set(ours.values())) == ["hipLaunchKernel", "hipMemset"]


def test_agents_from_info_agent_and_extdata(run):
    rows = query(
        DB,
        "SELECT absolute_index, type, name, json_extract(extdata, '$.cu_count'), json_extract(extdata, '$.simd_per_cu'), "
        "json_extract(extdata, '$.wave_front_size'), json_extract(extdata, '$.lds_size_in_kb'), "
        "json_extract(extdata, '$.max_engine_clk_fcompute'), json_extract(extdata, '$.mem_banks[0].size_in_bytes'), "
        "json_extract(extdata, '$.num_xcc'), json_extract(extdata, '$.gfx_target_version') FROM rocpd_info_agent "
        "ORDER BY absolute_index",
    )
    assert len(run.agents) == len(rows) == 10
    assert [a.type for a in run.agents] == ["CPU"] * 2 + ["GPU"] * 8
    for agent, (node, kind, name, cus, simd, wave, lds_kb, clock, mem, xcc, gfx) in zip(run.agents, rows):
        assert (agent.id, agent.node_id, agent.type, agent.name) == (node, node, kind, name)
        if kind == "GPU":
            assert agent.arch == "gfx942" and agent.product == "AMD Instinct MI300X"
            assert (agent.cu_count, agent.simd_per_cu, agent.wave_size) == (cus, simd, wave) == (304, 4, 64)
            assert agent.lds_bytes_per_cu == lds_kb * 1024
            assert (agent.max_clock_mhz, agent.memory_bytes, agent.num_xcc, agent.gfx_target_version) == (clock, mem, xcc, gfx)
        else:
            assert agent.cu_count is None
    assert set(run.kernels["agent"]) <= {a.id for a in run.gpu_agents}


def test_meta(run):
    (host,) = query(DB, "SELECT hostname FROM rocpd_info_node")[0]
    pid, command = query(DB, "SELECT pid, command FROM rocpd_info_process")[0]
    assert (run.meta.hostname, run.meta.pid, run.meta.command) == (host, pid, command)
    assert run.meta.tool == "rocprofv3" and run.meta.formats == ["rocpd"]
    assert run.meta.extra["rocpd_schema_version"] == "3"


def test_busy_view_vs_union_of_intervals(run):
    """The ``busy`` view's GpuTime is SUM(end - start) per agent over dispatches and copies
    (no copies here), so overlapping work is counted twice; WallTime is max(end) - min(start).
    A union of intervals counts overlap once. All 151 dispatches went to one queue, yet in 5
    consecutive pairs the next dispatch's start is 7-175 ns before the previous end (timestamp
    jitter at back-to-back dispatches), 569 ns in total: so GpuTime = our duration sum, and
    the union is exactly those 569 ns smaller."""
    busy = query(DB, "SELECT agent_id, GpuTime, WallTime FROM busy")
    assert len(busy) == 1
    (agent_row_id, gpu_time, wall_time) = busy[0]
    (node,) = query(DB, "SELECT absolute_index FROM rocpd_info_agent WHERE id = ?", (agent_row_id,))[0]
    k = run.kernels[run.kernels["agent"] == node].sort_values("start")
    starts, ends = k["start"].to_numpy(), k["end"].to_numpy()
    assert int((ends - starts).sum()) == gpu_time
    overlap = np.maximum(np.maximum.accumulate(ends)[:-1] - starts[1:], 0)
    assert (int(np.count_nonzero(overlap)), int(overlap.sum())) == (5, 569)
    assert union_length(starts, ends) == gpu_time - 569
    assert int(ends.max() - starts.min()) == wall_time


def test_loading_leaves_directory_untouched(tmp_path):
    run_dir = tmp_path / "host"
    run_dir.mkdir()
    db = run_dir / "28_results.db"
    shutil.copy(DB, db)
    db.chmod(0o444)
    before = sha256(db)
    runset = load_path(tmp_path)
    assert [r.meta.formats for r in runset.runs] == [["rocpd"]]
    assert not runset.errors
    assert len(runset.runs[0].kernels) == 151
    assert sha256(db) == before == sha256(DB)
    assert sorted(p.name for p in run_dir.iterdir()) == ["28_results.db"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["host"]


# --------------------------------------------------------------------------- bad input


def _load_one(path: Path) -> tuple[list, list]:
    sink = IssueSink()
    runs = rocpd.load([DetectedFile(path, rocpd.FORMAT, "rocpd_db", str(path))], sink)
    return runs, sink.issues


def test_truncated_database_is_one_line_error(tmp_path):
    bad = tmp_path / "28_results.db"
    bad.write_bytes(DB.read_bytes()[: DB.stat().st_size // 2])
    assert rocpd.sniff(bad, read_head(bad)) is not None  # first page still names rocpd tables
    runs, issues = _load_one(bad)
    assert runs == []
    assert len(issues) == 1 and "\n" not in issues[0].message
    assert "truncated SQLite database" in issues[0].message and "800768 bytes" in issues[0].message
    runset = load_path(tmp_path)
    assert runset.runs == [] and len(runset.errors) == 1 and "truncated" in runset.errors[0].message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["28_results.db"]


def test_unrelated_sqlite_schema_is_one_line_error(tmp_path):
    other = tmp_path / "results.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE people (name TEXT)")
    con.commit()
    con.close()
    assert rocpd.sniff(other, read_head(other)) is None
    runs, issues = _load_one(other)
    assert runs == [] and len(issues) == 1
    assert issues[0].message.startswith("SQLite database without rocpd tables")
    runset = load_path(tmp_path)
    assert runset.runs == [] and len(runset.errors) == 1 and "\n" not in runset.errors[0].message


def test_damaged_page_is_one_line_error(tmp_path):
    bad = tmp_path / "28_results.db"
    data = bytearray(DB.read_bytes())
    data[4096 * 50 : 4096 * 200] = b"\xff" * (4096 * 150)  # overwrite table pages, keep the size
    bad.write_bytes(bytes(data))
    runs, issues = _load_one(bad)
    assert runs == [] and len(issues) == 1 and "\n" not in issues[0].message
    assert "rocpd" in issues[0].message or "SQLite" in issues[0].message


# --------------------------------------------------------------------------- rows added by construction


def _suffix(con: sqlite3.Connection) -> str:
    return con.execute("SELECT value FROM rocpd_metadata WHERE tag = 'uuid'").fetchone()[0]


def _string_id(con, sfx, text) -> int:
    row = con.execute(f"SELECT id FROM rocpd_string{sfx} WHERE string = ?", (text,)).fetchone()
    if row:
        return row[0]
    return con.execute(f"INSERT INTO rocpd_string{sfx} (string) VALUES (?)", (text,)).lastrowid


def _event(con, sfx, category, stack_id) -> int:
    cat = _string_id(con, sfx, category)
    return con.execute(
        f"INSERT INTO rocpd_event{sfx} (category_id, stack_id, parent_stack_id, correlation_id) VALUES (?, ?, 0, 0)",
        (cat, stack_id),
    ).lastrowid


@pytest.fixture(scope="module")
def augmented(tmp_path_factory):
    """The real DB plus: a second process (pid 99) with 3 dispatches on its own agent rows,
    3 memory copies, 2 allocations + 1 scratch event, and 2 PMC instances of one counter."""
    path = tmp_path_factory.mktemp("aug") / "aug_results.db"
    shutil.copy(DB, path)
    path.chmod(0o644)
    con = sqlite3.connect(path)
    sfx = _suffix(con)
    nid = con.execute(f"SELECT id FROM rocpd_info_node{sfx}").fetchone()[0]
    con.execute(f"INSERT INTO rocpd_info_process{sfx} (id, nid, ppid, pid, command) VALUES (99, ?, 1, 99, 'second')", (nid,))
    con.execute(f"INSERT INTO rocpd_info_thread{sfx} (id, nid, ppid, pid, tid) VALUES (100, ?, 1, 99, 4242)", (nid,))
    con.execute(
        f"INSERT INTO rocpd_info_agent{sfx} (id, nid, pid, type, absolute_index, logical_index, type_index, name, extdata) "
        "VALUES (20, ?, 99, 'GPU', 5, 5, 3, 'gfx942', ?)",
        (nid, json.dumps({"cu_count": 304, "node_id": 5})),
    )
    con.execute(f"INSERT INTO rocpd_info_queue{sfx} (id, nid, pid, name) VALUES (77, ?, 99, 'Queue 7')", (nid,))
    region = _string_id(con, sfx, "")
    for i in range(3):
        ev = _event(con, sfx, "KERNEL_DISPATCH", 5000 + i)
        con.execute(
            f"INSERT INTO rocpd_kernel_dispatch{sfx} (nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, "
            "start, end, private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z, "
            "grid_size_x, grid_size_y, grid_size_z, region_name_id, event_id) "
            "VALUES (?, 99, 100, 20, 10, ?, 77, 0, ?, ?, 0, 0, 64, 1, 1, 64, 1, 1, ?, ?)",
            (nid, i + 1, 10_000 + 100 * i, 10_000 + 100 * i + 10 * (i + 1), region, ev),
        )
    copies = [  # src agent row, dst agent row, bytes, name
        (0, 2, 4096, "MEMORY_COPY_HOST_TO_DEVICE"),
        (2, 1, 1024, "MEMORY_COPY_DEVICE_TO_HOST"),
        (2, 3, 10, "MEMORY_COPY_DEVICE_TO_DEVICE"),
    ]
    for i, (src, dst, size, name) in enumerate(copies):
        ev = _event(con, sfx, "MEMORY_COPY", 6000 + i)
        con.execute(
            f"INSERT INTO rocpd_memory_copy{sfx} (nid, pid, tid, start, end, name_id, dst_agent_id, dst_address, "
            "src_agent_id, src_address, size, queue_id, stream_id, region_name_id, event_id) "
            "VALUES (?, 28, 28, ?, ?, ?, ?, 0, ?, 0, ?, 0, 0, ?, ?)",
            (nid, 20_000 + i, 20_050 + i, _string_id(con, sfx, name), dst, src, size, region, ev),
        )
    allocs = [("ALLOC", "REAL", 2, 1 << 20, 0x1000, "{}"), ("FREE", "REAL", 2, 0, 0x1000, "{}"), ("ALLOC", "SCRATCH", 3, 65536, 0, '{"flags": 1}')]
    for i, (kind, level, agent, size, address, ext) in enumerate(allocs):
        ev = _event(con, sfx, "MEMORY_ALLOCATION" if level != "SCRATCH" else "SCRATCH_MEMORY", 7000 + i)
        con.execute(
            f"INSERT INTO rocpd_memory_allocate{sfx} (nid, pid, tid, agent_id, type, level, start, end, address, size, "
            "queue_id, stream_id, event_id, extdata) VALUES (?, 28, 28, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?)",
            (nid, agent, kind, level, 30_000 + i, 30_005 + i, address, size, ev, ext),
        )
    pmc = con.execute(
        f"INSERT INTO rocpd_info_pmc{sfx} (nid, pid, agent_id, target_arch, name, symbol, value_type, is_constant, is_derived) "
        "VALUES (?, 28, 2, 'GPU', 'SQ_WAVES', 'SQ_WAVES', 'ABS', 0, 0)",
        (nid,),
    ).lastrowid
    (ev,) = con.execute(f"SELECT event_id FROM rocpd_kernel_dispatch{sfx} WHERE dispatch_id = 1 AND pid = 28").fetchone()
    for value in (3.0, 4.5):  # two instances; the view and the loader sum them
        con.execute(f"INSERT INTO rocpd_pmc_event{sfx} (event_id, pmc_id, value) VALUES (?, ?, ?)", (ev, pmc, value))
    con.commit()
    con.close()
    runs = rocpd.load_db(path)
    return path, {r.meta.pid: r for r in runs}


def test_two_processes_are_two_runs(augmented):
    path, runs = augmented
    assert sorted(runs) == [28, 99]
    second = runs[99]
    assert second.meta.command == "second"
    assert [a.id for a in second.agents] == [5] and second.agents[0].cu_count == 304
    assert len(second.kernels) == 3 and set(second.kernels["agent"]) == {5}
    assert second.kernels["tid"].tolist() == [4242] * 3
    assert (second.kernels["end"] - second.kernels["start"]).tolist() == [10, 20, 30]
    assert second.kernels["correlation_id"].tolist() == [5000, 5001, 5002]
    assert second.kernels["queue"].tolist() == [77] * 3
    assert len(runs[28].kernels) == 151 and len(runs[28].agents) == 10
    (total,) = query(path, "SELECT count(*) FROM rocpd_kernel_dispatch")[0]
    assert sum(len(r.kernels) for r in runs.values()) == total


def test_memory_copies(augmented):
    path, runs = augmented
    c = runs[28].copies
    assert c["direction"].astype(str).tolist() == ["HtoD", "DtoH", "PtoP"]
    assert c["bytes"].tolist() == [4096, 1024, 10]
    view = query(path, "SELECT src_agent_abs_index, dst_agent_abs_index, size, name, stack_id FROM memory_copies ORDER BY id")
    ours = [
        (int(a), int(b), int(s), str(n), int(k)) for a, b, s, n, k in c[["src_agent", "dst_agent", "bytes", "name", "correlation_id"]].itertuples(index=False)
    ]
    assert ours == view


def test_allocations_and_scratch(augmented):
    path, runs = augmented
    a, s = memory.trace_rows(runs[28].allocations), runs[28].scratch  # the hipMalloc calls' rows: tests/test_memory_sources.py
    view = query(path, "SELECT type, agent_abs_index, size, address FROM memory_allocations WHERE level != 'SCRATCH' ORDER BY id")
    assert [(str(o), int(g), int(b), int(d)) for o, g, b, d in a[["operation", "agent", "bytes", "address"]].itertuples(index=False)] == view
    scratch_view = query(path, "SELECT operation, agent_abs_index, size, alloc_flags, end - start FROM scratch_memory")
    assert len(s) == 1
    row = s.iloc[0]
    assert (str(row["operation"]), int(row["agent"]), int(row["bytes"]), str(row["flags"]), int(row["end"] - row["start"])) == (
        scratch_view[0][0],
        scratch_view[0][1],
        scratch_view[0][2],
        str(scratch_view[0][3]),
        scratch_view[0][4],
    )


def test_counters_equal_counters_collection_view(augmented):
    path, runs = augmented
    view = query(path, "SELECT dispatch_id, counter_name, value, agent_abs_index FROM counters_collection")
    assert view == [(1, "SQ_WAVES", 7.5, 2)]
    c = runs[28].counters
    assert [(int(d), str(n), float(v), int(a)) for d, n, v, a in c[["dispatch_id", "counter", "value", "agent"]].itertuples(index=False)] == view
    assert runs[99].counters.empty


def test_many_rows_across_read_chunks(tmp_path, monkeypatch):
    """5,000 generated dispatches read in chunks of 777 ids: per-kernel counts and total
    time are known by construction (dispatch i lasts 100 + i % 7 ns, kernel 13 if i % 3 else 10)."""
    path = tmp_path / "big_results.db"
    shutil.copy(DB, path)
    path.chmod(0o644)
    con = sqlite3.connect(path)
    sfx = _suffix(con)
    n = 5000
    nid = con.execute(f"SELECT id FROM rocpd_info_node{sfx}").fetchone()[0]
    first_event = con.execute(f"SELECT MAX(id) FROM rocpd_event{sfx}").fetchone()[0] + 1
    con.executemany(
        f"INSERT INTO rocpd_event{sfx} (id, category_id, stack_id, parent_stack_id, correlation_id) VALUES (?, 26, ?, 0, 0)",
        [(first_event + i, 100_000 + i) for i in range(n)],
    )
    con.executemany(
        f"INSERT INTO rocpd_kernel_dispatch{sfx} (nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, start, end, "
        "workgroup_size_x, workgroup_size_y, workgroup_size_z, grid_size_x, grid_size_y, grid_size_z, region_name_id, event_id) "
        "VALUES (?, 28, 28, ?, ?, ?, 16, 0, ?, ?, 256, 1, 1, 512, 1, 1, 1, ?)",
        [
            (nid, 2 + i % 8, 13 if i % 3 else 10, 1000 + i, 2_000_000_000_000_000 + 1000 * i, 2_000_000_000_000_000 + 1000 * i + 100 + i % 7, first_event + i)
            for i in range(n)
        ],
    )
    con.commit()
    con.close()
    monkeypatch.setattr(rocpd, "CHUNK_ROWS", 777)
    (run,) = rocpd.load_db(path)
    assert len(run.kernels) == 151 + n
    new = run.kernels[run.kernels["dispatch_id"] >= 1000].sort_values("dispatch_id")
    i = np.arange(n)
    assert new["correlation_id"].tolist() == (100_000 + i).tolist()
    assert new["start"].tolist() == (2_000_000_000_000_000 + 1000 * i).tolist()
    assert int((new["end"] - new["start"]).sum()) == int((100 + i % 7).sum())
    assert new["agent"].tolist() == (2 + i % 8).tolist()
    top = {name: (calls, total) for name, calls, total in query(path, "SELECT name, total_calls, total_duration FROM top_kernels")}
    for row in hotspots(run.kernels).itertuples():
        assert (row.calls, row.total_ns) == (top[row.name][0], round(top[row.name][1] * 1000))


# --------------------------------------------------------------------------- fast path (physical tables) vs views


TABLES = ("kernels", "api", "markers", "copies", "allocations", "scratch", "counters")


def assert_same_runs(a: list, b: list) -> None:
    import pandas as pd

    assert [r.meta.pid for r in a] == [r.meta.pid for r in b]
    for x, y in zip(a, b):
        assert [ag.id for ag in x.agents] == [ag.id for ag in y.agents]
        for name in TABLES:
            pd.testing.assert_frame_equal(getattr(x, name), getattr(y, name), check_exact=True)


def test_plain_views_resolve_to_their_physical_tables():
    con = rocpd.connect(DB)
    try:
        found = rocpd.physical_tables(con)
        sfx = _suffix(con)
        tables = {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        con.close()
    for view in (
        "rocpd_kernel_dispatch",
        "rocpd_region",
        "rocpd_event",
        "rocpd_string",
        "rocpd_info_kernel_symbol",
        "rocpd_info_agent",
        "rocpd_info_process",
        "rocpd_memory_copy",
        "rocpd_memory_allocate",
    ):
        assert found[view] == view + sfx and found[view] in tables
    assert not {"kernels", "regions", "top_kernels", "busy", "memory_copies", "counters_collection"} & set(found)


@pytest.mark.parametrize("threads", [1, 2])
def test_fast_path_equals_view_path_on_real_db(monkeypatch, threads):
    monkeypatch.setattr(rocpd, "THREADS", threads)
    fast, views = rocpd.load_db(DB), rocpd.load_db(DB, physical=False)
    assert len(fast[0].kernels) == 151 and len(fast[0].api) == 629
    assert_same_runs(fast, views)


def test_fast_path_equals_view_path_on_augmented_db(augmented):
    """Two processes, copies, allocations, scratch and counters: both paths agree."""
    path, runs = augmented
    views = rocpd.load_db(path, physical=False)
    assert_same_runs(sorted(runs.values(), key=lambda r: r.meta.pid), sorted(views, key=lambda r: r.meta.pid))


def test_fast_path_equals_view_path_on_generated_db(tmp_path):
    """A generated database (tui_prof.synth, schema of the real one): both paths agree and
    per-kernel calls and total time equal the generator's answer, known by construction."""
    from tui_prof.synth.spec import SynthSpec, build
    from tui_prof.synth.write_rocpd import write_rocpd

    synth = build(SynthSpec(iterations=300, kernels_per_iteration=10, streams=2, sync="per_launch"))
    path = write_rocpd(synth, tmp_path / "synthhost" / f"{synth.spec.pid}_results.db")
    with sqlite3.connect(path) as con:  # the writer made plain views over suffixed tables
        assert "rocpd_region" in rocpd.physical_tables(con)
    (fast,) = rocpd.load_db(path)
    (views,) = rocpd.load_db(path, physical=False)
    assert_same_runs([fast], [views])
    assert len(fast.kernels) == synth.expected.dispatches == 3000
    assert len(fast.api) == len(synth.api)
    ours = hotspots(fast.kernels).set_index("name")
    for name, row in synth.expected.kernels.iterrows():
        assert (ours.loc[name, "calls"], ours.loc[name, "total_ns"]) == (row["calls"], row["total_ns"])


def _rewrite_view(path: Path, view: str, select: str) -> None:
    con = sqlite3.connect(path)
    con.execute(f"DROP VIEW `{view}`")
    con.execute(f"CREATE VIEW `{view}` AS {select}")
    con.commit()
    con.close()


def test_view_that_is_not_plain_is_queried_as_it_is(tmp_path):
    """A view that filters its table is not a plain rename: the loader must read the view
    (every other dispatch), not the physical table behind it (all 151)."""
    path = tmp_path / "filtered_results.db"
    shutil.copy(DB, path)
    path.chmod(0o644)
    with sqlite3.connect(path) as con:
        sfx = _suffix(con)
    _rewrite_view(path, "rocpd_kernel_dispatch", f"SELECT * FROM `rocpd_kernel_dispatch{sfx}` WHERE id % 2 = 0")
    _rewrite_view(path, "rocpd_region", f"SELECT * FROM `rocpd_region{sfx}` UNION ALL SELECT * FROM `rocpd_region{sfx}` WHERE 0")
    with sqlite3.connect(path) as con:
        found = rocpd.physical_tables(con)
    assert "rocpd_kernel_dispatch" not in found and "rocpd_region" not in found and "rocpd_event" in found
    (expected,) = query(path, "SELECT count(*) FROM rocpd_kernel_dispatch")[0]
    assert expected == 75
    (run,) = rocpd.load_db(path)
    assert len(run.kernels) == expected and len(run.api) == 629
    assert sorted(run.kernels["dispatch_id"].tolist()) == sorted(d for (d,) in query(path, "SELECT dispatch_id FROM kernels"))
    assert_same_runs([run], rocpd.load_db(path, physical=False))


def test_view_over_missing_or_foreign_table_is_not_resolved(tmp_path):
    """A view over a table of another name (not <view>_<suffix>) is read through the view;
    a dropped view means the table is absent on both paths."""
    path = tmp_path / "renamed_results.db"
    shutil.copy(DB, path)
    path.chmod(0o644)
    with sqlite3.connect(path) as con:
        sfx = _suffix(con)
        con.execute(f"CREATE TABLE dispatch_copy AS SELECT * FROM `rocpd_kernel_dispatch{sfx}` WHERE id <= 10")
    _rewrite_view(path, "rocpd_kernel_dispatch", "SELECT * FROM dispatch_copy")
    with sqlite3.connect(path) as con:
        con.execute("DROP VIEW rocpd_memory_copy")
        found = rocpd.physical_tables(con)
    assert "rocpd_kernel_dispatch" not in found and "rocpd_memory_copy" not in found
    (run,) = rocpd.load_db(path)
    assert len(run.kernels) == 10 and run.copies.empty
    assert_same_runs([run], rocpd.load_db(path, physical=False))


def test_null_and_real_values_read_like_the_view_path(tmp_path):
    """Nullable columns holding NULL read as -1, a REAL in an INTEGER column as its integer
    part (CAST), on both paths; NOT NULL columns skip the NULL guard only on the fast path."""
    path = tmp_path / "odd_results.db"
    shutil.copy(DB, path)
    path.chmod(0o644)
    with sqlite3.connect(path) as con:
        sfx = _suffix(con)
        first, second = [i for (i,) in con.execute(f"SELECT id FROM rocpd_kernel_dispatch{sfx} ORDER BY id LIMIT 2")]
        con.execute(f"UPDATE rocpd_kernel_dispatch{sfx} SET private_segment_size = NULL, tid = NULL WHERE id = ?", (first,))
        con.execute(f"UPDATE rocpd_kernel_dispatch{sfx} SET grid_size_x = 12.75 WHERE id = ?", (second,))
    (run,) = rocpd.load_db(path)
    k = run.kernels.set_index("dispatch_id")
    (d1,), (d2,) = query(path, f"SELECT dispatch_id FROM rocpd_kernel_dispatch{sfx} WHERE id IN (?, ?) ORDER BY id", (first, second))
    assert (k.loc[d1, "scratch_bytes"], k.loc[d1, "tid"]) == (-1, -1)
    assert k.loc[d2, "grid_x"] == 12
    assert_same_runs([run], rocpd.load_db(path, physical=False))


@pytest.mark.parametrize("workers, readers", [("1", None), ("3", 3)])
def test_reader_threads_follow_tuiprof_load_workers(monkeypatch, workers, readers):
    """Without a THREADS override the reader pool has TUIPROF_LOAD_WORKERS threads (1: none)."""
    made = []

    class Spy(rocpd._Readers):
        def __init__(self, path, threads, *bounds):
            made.append(threads)
            super().__init__(path, threads, *bounds)

    monkeypatch.setattr(rocpd, "THREADS", None)
    monkeypatch.setattr(rocpd, "_Readers", Spy)
    monkeypatch.setenv("TUIPROF_LOAD_WORKERS", workers)
    runs = rocpd.load_db(DB)
    assert len(runs[0].kernels) == 151
    assert made == ([] if readers is None else [readers])
