"""Hostile files, resource bounds and cancellation (issue 13): hand-built inputs that once
exhausted memory, never ended, lost a whole file for one bad byte, read half of a WAL
database, or kept Ctrl-C / ``q`` waiting. Each test states the bound it checks."""

from __future__ import annotations

import gzip
import itertools
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fuzz.oracle import make_read_only, make_writable, snapshot
from fuzz.seeds import trimmed_rocprofv3_json

from tui_prof.analysis.hotspots import hotspots
from tui_prof.loaders import base, detect, kineto, load_path, rocpd, sqlguard
from tui_prof.loaders.base import LoadCancelled

DATA = Path(__file__).parent / "data"
DB = DATA / "rocpd" / "28_results.db"
KINETO = DATA / "kineto" / "triton_example__triton_example.json.gz"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def run_dir(tmp_path):
    root = tmp_path / "run dir \u00fc"
    root.mkdir()
    yield root
    make_writable(tmp_path)


def _db_copy(root: Path, name: str = "28_results.db") -> Path:
    path = root / name
    shutil.copy(DB, path)
    path.chmod(0o644)
    return path


def _table(con: sqlite3.Connection, view: str) -> str:
    (name,) = con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ?", (view + "_%",)).fetchone()
    return name


def _rewrite_view(path: Path, view: str, select: str) -> None:
    with sqlite3.connect(path) as con:
        con.execute(f"DROP VIEW `{view}`")
        con.execute(f"CREATE VIEW `{view}` AS {select}")
    sqlite3.connect(path).close()


def _errors(runset) -> list[str]:
    return [i.message for i in runset.issues if i.severity == "error"]


def _cross_join_db(path: Path, pad_bytes: int = 0) -> Path:
    """The sample with its dispatch view a 4-way cross join of 151 rows (5.2e8 rows, no
    WITH clause): every query of it runs until the step budget stops it. ``pad_bytes`` of
    an unrelated blob make the file, and so the budget (steps per byte), that much larger."""
    _db_copy(path.parent, path.name)
    with sqlite3.connect(path) as con:
        t = _table(con, "rocpd_kernel_dispatch")
        if pad_bytes:
            con.execute("CREATE TABLE padding (data BLOB)")
            con.execute("INSERT INTO padding VALUES (zeroblob(?))", (pad_bytes,))
    _rewrite_view(path, "rocpd_kernel_dispatch", f"SELECT A.* FROM `{t}` A, `{t}` B, `{t}` C, `{t}` D")
    return path


# --------------------------------------------------------------------------- rocpd bounds


@pytest.mark.parametrize("chunk_rows", [50, rocpd.CHUNK_ROWS])
def test_rocpd_id_9e18_chunks_by_the_ids_that_exist(run_dir, monkeypatch, chunk_rows):
    """One dispatch with id 9e18: the chunks follow the ids present (at most 151/50 + 1
    ranges), not the arithmetic span (4.5e12 ranges, 24 GB before); the rows are the same."""
    monkeypatch.setattr(rocpd, "CHUNK_ROWS", chunk_rows)
    path = _db_copy(run_dir)
    with sqlite3.connect(path) as con:
        t = _table(con, "rocpd_kernel_dispatch")
        (last,) = con.execute(f"SELECT MAX(id) FROM `{t}`").fetchone()
        con.execute(f"UPDATE `{t}` SET id = 9000000000000000000 WHERE id = ?", (last,))
        lo, hi = con.execute(f"SELECT MIN(id), MAX(id) FROM `{t}`").fetchone()
        chunks = rocpd._chunks(con, f"`{t}`", lo, hi)
    assert len(chunks) == (1 if chunk_rows > 151 else 4)
    assert chunks[0][0] == lo and chunks[-1][1] == 9000000000000000000
    assert all(a <= b < c for (a, b), (c, _) in itertools.pairwise(chunks))
    tracemalloc.start()
    try:
        (run,) = rocpd.load_db(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    (plain,) = rocpd.load_db(DB)
    assert len(run.kernels) == 151
    assert sorted(run.kernels["dispatch_id"].tolist()) == sorted(plain.kernels["dispatch_id"].tolist())
    assert peak < 64 << 20


def test_rocpd_recursive_view_is_refused_at_once(run_dir):
    path = _db_copy(run_dir)
    with sqlite3.connect(path) as con:
        t = _table(con, "rocpd_kernel_dispatch")
    _rewrite_view(path, "rocpd_kernel_dispatch", f"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT X.* FROM `{t}` X, r")
    started = time.monotonic()
    runset = load_path(run_dir)
    assert time.monotonic() - started < 10
    assert _errors(runset) == ["view rocpd_kernel_dispatch holds a WITH clause (rocprofv3 writes none; a recursive one never ends): not read"]
    assert not runset.runs


def test_rocpd_view_through_another_view_with_recursion_is_refused(run_dir):
    """The check follows the views a read view names."""
    path = _db_copy(run_dir)
    with sqlite3.connect(path) as con:
        t = _table(con, "rocpd_region")
        con.execute(f"CREATE VIEW inner_loop AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT X.* FROM `{t}` X, r")
    _rewrite_view(path, "rocpd_region", "SELECT * FROM inner_loop")
    (message,) = _errors(load_path(run_dir))
    assert message.startswith("view inner_loop holds a WITH clause")


def test_rocpd_cross_join_view_is_stopped_by_the_step_budget(run_dir):
    _cross_join_db(run_dir / "cj_results.db")
    started = time.monotonic()
    runset = load_path(run_dir)
    elapsed = time.monotonic() - started
    (message,) = _errors(runset)
    budget = rocpd.STEP_BUDGET_FLOOR + rocpd.STEP_BUDGET_PER_BYTE * DB.stat().st_size
    assert message == (
        f"a query ran past {budget:,} SQLite steps (10 per byte of this {DB.stat().st_size:,}-byte "
        "database): a view that does not end (a recursion or a cross join)? not read"
    )
    assert elapsed < 60


def _rss_of_load(path: Path) -> tuple[int, int, str]:
    """(resident KiB before the load, peak resident KiB during it, the issues) of a fresh
    process loading ``path``: the peak is the kernel's VmHWM, reset after start-up through
    /proc/self/clear_refs (ru_maxrss would carry the parent's size across fork and exec)."""
    code = (
        "import json, sys\n"
        "from tui_prof.loaders import load_path, loader_modules\n"
        "import tui_prof.loaders.detect\n"
        "loader_modules()  # every import done before the peak is reset\n"
        "def hwm():\n"
        "    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
        "open('/proc/self/clear_refs', 'w').write('5')\n"
        "before = hwm()\n"
        "rs = load_path(sys.argv[1])\n"
        "print(json.dumps([before, hwm(), [i.message for i in rs.issues]]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), TUIPROF_LOAD_WORKERS="1")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env, timeout=120)
    before, after, issues = json.loads(out.stdout.strip().splitlines()[-1])
    return before, after, " | ".join(issues)


def test_rocpd_view_calling_printf_for_a_900mb_value_is_refused_at_once(run_dir):
    """printf('%.*c', 900000000, 'x') spins for about 24 s per row inside SQLite (no
    progress handler call), even where the length limit refuses the value: refused by name."""
    path = _db_copy(run_dir)
    with sqlite3.connect(path) as con:
        t = _table(con, "rocpd_string")
    _rewrite_view(path, "rocpd_string", f"SELECT id, guid, printf('%.*c', 900000000, 'x') AS string FROM `{t}`")
    started = time.monotonic()
    (message,) = _errors(load_path(run_dir))
    assert time.monotonic() - started < 10
    assert message == ("view rocpd_string calls printf() (rocprofv3's views call none; it can build a value of any size): not read")


def test_rocpd_view_making_a_huge_value_is_refused_in_bounded_memory(run_dir):
    """Nested replace() multiplies 'xx' by 8 per level: 2 x 8^10 = 2.1 GB from a 1.6 MB
    file. The view is refused before it runs (replace() amplifies: issue 30 reproducer 7);
    a query that builds one anyway is stopped by the length limit (64 MiB + the file size)."""
    path = _db_copy(run_dir)
    with sqlite3.connect(path) as con:
        t = _table(con, "rocpd_string")
    grow = "'xx'"
    for _ in range(10):
        grow = f"replace({grow}, 'x', 'xxxxxxxx')"
    _rewrite_view(path, "rocpd_string", f"SELECT id, guid, {grow} AS string FROM `{t}`")
    before, after, issues = _rss_of_load(path)
    limit_mib = (rocpd.VALUE_FLOOR_BYTES + DB.stat().st_size) >> 20
    assert issues == "view rocpd_string calls replace() (rocprofv3's views call none; it can build a value of any size): not read"
    assert after - before < 400 * 1024  # KiB: never 2.1 GB
    from tui_prof.loaders import sqlguard

    guard = sqlguard.SqlGuard(path.stat().st_size)
    con = sqlguard.connect(path, guard=guard)
    with pytest.raises(sqlite3.DataError) as caught:
        con.execute(f"SELECT length({grow})").fetchall()
    con.close()
    meaning = guard.interrupted(caught.value)
    assert str(meaning) == f"a value longer than {limit_mib} MiB from a {DB.stat().st_size:,}-byte database (a view computes it): not read"


# --------------------------------------------------------------------------- one bad byte


def test_rocpd_invalid_utf8_in_hostname_symbol_and_roctx_string_is_replaced(run_dir):
    path = _db_copy(run_dir)
    with sqlite3.connect(path) as con:
        node, sym, string = (_table(con, v) for v in ("rocpd_info_node", "rocpd_info_kernel_symbol", "rocpd_string"))
        con.execute(f"UPDATE `{node}` SET hostname = CAST(x'686f7374ff6e616d65' AS TEXT)")  # host\xffname
        (sid,) = con.execute(f"SELECT kernel_id FROM `{_table(con, 'rocpd_kernel_dispatch')}` LIMIT 1").fetchone()
        con.execute(f"UPDATE `{sym}` SET display_name = CAST(display_name || x'c3' AS TEXT) WHERE id = ?", (sid,))
        (string_id,) = con.execute(f"SELECT name_id FROM `{_table(con, 'rocpd_region')}` LIMIT 1").fetchone()
        con.execute(f"UPDATE `{string}` SET string = CAST(x'6d61726b80' AS TEXT) WHERE id = ?", (string_id,))
    with pytest.raises(sqlite3.OperationalError, match="decode"):  # what a plain read does with these bytes
        sqlite3.connect(path).execute(f"SELECT hostname FROM `{node}`").fetchall()
    runset = load_path(run_dir)
    assert not _errors(runset)
    (run,) = runset.runs
    assert run.meta.hostname == "host\ufffdname"
    assert len(run.kernels) == 151 and len(run.api) == 629
    assert sum(name.endswith("\ufffd") for name in run.kernels["name"].unique()) == 1
    assert "mark\ufffd" in set(run.api["name"].astype(str))
    assert run.warnings == ["3 rocpd text values (names, hostnames, symbols) held invalid UTF-8 or lone surrogates; shown with U+FFFD in their place"]


def _wal_database(work: Path, run_dir: Path) -> int:
    """A copy of the sample in WAL mode whose 151 dispatches are doubled by a committed
    transaction still in its ``-wal`` (copied beside the database while the writer held it
    open, so it was never checkpointed). Returns the committed dispatch count."""
    path = _db_copy(work)
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA wal_autocheckpoint = 0")
    t = _table(con, "rocpd_kernel_dispatch")
    cols = [r[1] for r in con.execute(f"PRAGMA table_info(`{t}`)")]
    rest = ", ".join(c for c in cols if c != "id")
    con.execute(f"INSERT INTO `{t}` (id, {rest}) SELECT id + 100000, {rest} FROM `{t}`")
    con.commit()
    (count,) = con.execute(f"SELECT COUNT(*) FROM `{t}`").fetchone()
    for name in (path.name, path.name + "-wal"):
        shutil.copy(work / name, run_dir / name)
    con.close()
    assert (run_dir / (path.name + "-wal")).stat().st_size > 0
    return count


def test_rocpd_wal_database_reads_committed_rows_without_writing_to_the_run_dir(tmp_path, run_dir):
    work = tmp_path / "writer"
    work.mkdir()
    count = _wal_database(work, run_dir)
    assert count == 302
    made: list[Path] = []
    real_copy = rocpd._private_copy

    def spy(path, wal):
        folder, copy = real_copy(path, wal)
        made.append(folder)
        assert (folder.stat().st_mode & 0o777) == 0o700
        return folder, copy

    make_read_only(run_dir)
    before = snapshot(run_dir)
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(rocpd, "_private_copy", spy)
            runset = load_path(run_dir)
    finally:
        after = snapshot(run_dir)
        make_writable(run_dir)
    assert after == before  # byte for byte (sizes, mtimes, SHA-1), and no -shm created
    assert sorted(p.name for p in run_dir.iterdir()) == ["28_results.db", "28_results.db-wal"]
    assert not _errors(runset)
    (run,) = runset.runs
    assert len(run.kernels) == count == 302
    assert run.meta.files == [str(run_dir / "28_results.db")]
    assert [(Path(i.path).name, i.severity, i.message) for i in runset.issues] == [
        ("28_results.db-wal", "skipped", "the write-ahead log of the SQLite database 28_results.db; read with it")
    ]
    assert made and not any(folder.exists() for folder in made)  # the private copy is removed


def test_wal_changes_the_cache_key(tmp_path, run_dir):
    from tui_prof.loaders import cache

    _db_copy(run_dir)
    units = detect.work_units(detect.scan(run_dir, base.IssueSink()))
    plain = cache.unit_key(*units[0])
    (run_dir / "28_results.db-wal").write_bytes(b"\0" * 32)
    assert cache.unit_key(*units[0]) != plain


def _kineto_with(names: dict[str, str], path: Path) -> tuple[int, int]:
    """The Kineto sample with ``\\udcff`` appended to the first event of each category in
    ``names`` (written as a JSON escape); returns (kernels, markers) of the original."""
    doc = json.loads(gzip.decompress(KINETO.read_bytes()))
    done = set()
    for event in doc["traceEvents"]:
        cat = event.get("cat")
        if cat in names and cat not in done:
            event["name"] += names[cat]
            done.add(cat)
    assert done == set(names)
    text = json.dumps(doc)
    assert "\\udcff" in text
    path.write_text(text)
    original = load_path(KINETO).runs[0]
    return len(original.kernels), len(original.markers)


def test_kineto_lone_surrogate_keeps_the_file(run_dir):
    kernels, markers = _kineto_with({"kernel": "\udcff", "cpu_op": "\udcff"}, run_dir / "trace.json")
    runset = load_path(run_dir)
    assert not _errors(runset)
    (run,) = runset.runs
    assert (len(run.kernels), len(run.markers)) == (kernels, markers)
    assert sum("\ufffd" in n for n in run.kernels["name"].unique()) == 1
    assert sum("\ufffd" in n for n in run.markers["name"].unique()) == 1
    assert "2 strings (names, categories, metadata) held invalid UTF-8 or lone surrogates; shown with U+FFFD in their place" in run.warnings


def test_kineto_names_equal_after_replacement_are_merged():
    ev = kineto.Events()
    cols = ev.kernels
    cols.strings["name"].update({"a" + chr(0xDCFF): 0, "a" + chr(0xD800): 1, "b": 2})  # two lone surrogates
    cols.name.extend([0, 1, 2, 0])
    assert kineto.clean_events(ev) == 2
    assert cols.strings["name"] == {"a\ufffd": 0, "b": 1}
    assert list(cols.name) == [0, 0, 1, 0]


def test_rocprofv3_json_lone_surrogate_in_a_kernel_symbol_keeps_the_file(run_dir):
    doc = json.loads(trimmed_rocprofv3_json())
    proc = doc["rocprofiler-sdk-tool"][0]
    used = proc["buffer_records"]["kernel_dispatch"][0]["dispatch_info"]["kernel_id"]
    (symbol,) = [s for s in proc["kernel_symbols"] if s["kernel_id"] == used]
    symbol["formatted_kernel_name"] += "\udcff"
    (run_dir / "908_results.json").write_text(json.dumps(doc))
    runset = load_path(run_dir)
    assert not _errors(runset)
    (run,) = runset.runs
    assert len(run.kernels) == 40
    expected = symbol["formatted_kernel_name"][:-1] + "\ufffd"
    assert int((run.kernels["name"] == expected).sum()) == sum(r["dispatch_info"]["kernel_id"] == used for r in proc["buffer_records"]["kernel_dispatch"])
    assert run.warnings == ["1 strings (kernel symbols, names, metadata) held invalid UTF-8 or lone surrogates; shown with U+FFFD in their place"]


def test_clean_json_reaches_keys_and_any_depth():
    deep: object = "x\udcff"
    for _ in range(10_000):
        deep = [deep]
    value, count = base.clean_json({"k\udcff": deep, "ok": ["\ud800", 1, None]})
    assert count == 3 and list(value) == ["k\ufffd", "ok"] and value["ok"][0] == "\ufffd"


# --------------------------------------------------------------------------- json.gz bound


def _gzip_bomb(path: Path, text_mib: int) -> None:
    """A rocprofv3 JSON head, ``text_mib`` MiB of spaces, then its end: valid JSON that
    gzip packs about 1000 to 1."""
    with gzip.open(path, "wb", compresslevel=9) as fh:
        fh.write(b'{"rocprofiler-sdk-tool": [{"metadata": {"pid": 1}, "agents": [], ')
        block = b" " * (1 << 20)
        for _ in range(text_mib):
            fh.write(block)
        fh.write(b'"strings": {}}]}')


def test_rocprofv3_json_gz_expanding_past_the_bound_is_refused_in_bounded_memory(run_dir):
    path = run_dir / "1_results.json.gz"
    _gzip_bomb(path, 200)
    packed = path.stat().st_size
    assert packed < 400_000
    before, after, issues = _rss_of_load(path)
    limit = max(base.GZIP_FLOOR_BYTES, base.GZIP_RATIO_LIMIT * packed)
    assert issues == (
        f"cannot read file: gzip content larger than {limit >> 20} MiB (64 times its {packed} bytes; "
        "a real trace expands about 25 times): not read beyond it; gunzip it (or raise TUIPROF_GZIP_MAX_RATIO) to read it anyway"
    )
    assert after - before < 100 * 1024  # KiB: the 64 MiB read and no more, never the 200 MiB text and its objects


def test_rocprofv3_json_gz_within_the_bound_loads():
    text = base.read_text(DATA / "rocprofv3_json" / "908_results.json.gz", bounded=True)
    assert len(text) == 37_455_763


# --------------------------------------------------------------------------- hotspot labels


def test_hotspots_of_a_1mib_name_among_3000_grow_with_the_sum_of_lengths():
    n = 3000
    names = [f"kernel_{i}" for i in range(n)]
    names[1234] = "k" * (1 << 20)
    start = np.arange(n, dtype=np.int64) * 100
    kernels = pd.DataFrame({"start": start, "end": start + 10 + np.arange(n), "name": pd.Categorical(names)})
    tracemalloc.start()
    try:
        table = hotspots(kernels)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 << 20  # count x longest would be 3000 x 4 MiB = 11.7 GiB
    assert len(table) == n and table["name"].str.len().max() == 1 << 20  # the full name is kept
    assert table.loc[table["name"] == "kernel_7", "total_ns"].item() == 17


# --------------------------------------------------------------------------- cancellation


def _load_in_thread(root: Path, cancel: threading.Event) -> dict:
    state: dict = {}

    def work():
        try:
            state["runset"] = load_path(root, cancel=cancel)
        except BaseException as err:
            state["error"] = err
        state["ended"] = time.monotonic()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    state["thread"] = thread
    return state


def test_cancel_reaches_two_slow_sqlite_units_within_a_second(run_dir, monkeypatch):
    monkeypatch.setenv("TUIPROF_LOAD_WORKERS", "2")
    # the step budget must not end the queries first, however fast this machine steps
    monkeypatch.setattr(sqlguard, "STEP_BUDGET_FLOOR", 10**15)
    for name in ("a_results.db", "b_results.db"):
        _cross_join_db(run_dir / name)
    cancel = threading.Event()
    state = _load_in_thread(run_dir, cancel)
    time.sleep(1.0)  # both units are inside their cross-join query
    assert "ended" not in state
    asked = time.monotonic()
    cancel.set()
    state["thread"].join(5)
    assert isinstance(state.get("error"), LoadCancelled)
    assert state["ended"] - asked < 1.0


def test_cancel_loads_stops_a_kineto_unit_and_its_worker_processes(tmp_path, monkeypatch):
    """A 60 MB Kineto trace read in 2 pieces (one worker process): cancel_loads() ends the
    load within a second and the worker process is gone."""
    from tui_prof.loaders import cancel_loads
    from tui_prof.synth.spec import SynthSpec, build
    from tui_prof.synth.write_kineto import write_kineto

    monkeypatch.setenv("TUIPROF_LOAD_WORKERS", "2")
    started: list[subprocess.Popen] = []
    real_start = kineto.start_worker

    def spy(path):
        proc = real_start(path)
        started.append(proc)
        return proc

    monkeypatch.setattr(kineto, "start_worker", spy)
    synth = build(SynthSpec(iterations=8000, kernels_per_iteration=10, streams=2, sync="per_launch"))
    path = write_kineto(synth, tmp_path / "big" / "trace.json", gzipped=False)
    assert path.stat().st_size > 30 << 20
    state = _load_in_thread(path.parent, threading.Event())
    deadline = time.monotonic() + 20
    while not started and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    assert started and "ended" not in state
    asked = time.monotonic()
    cancel_loads()
    state["thread"].join(5)
    assert isinstance(state.get("error"), LoadCancelled)
    assert state["ended"] - asked < 1.0
    assert all(proc.poll() is not None for proc in started)


def test_ctrl_c_on_the_command_line_exits_within_a_second(run_dir):
    # 32 MB of padding: a step budget ≈ 20× the plain copy's, so the query still runs a
    # second after the load began on a fast machine too (the plain copy's ends in ≈ 1 s)
    _cross_join_db(run_dir / "cj_results.db", pad_bytes=32 << 20)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui_prof.cli", "summary", "--no-cache", str(run_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # wait until the unit is being parsed
            time.sleep(0.2)
            if proc.poll() is not None:
                break
            children = Path(f"/proc/{proc.pid}/task")
            if children.exists() and len(list(children.iterdir())) > 1:
                time.sleep(1.0)
                break
        assert proc.poll() is None
        asked = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(10)
        assert time.monotonic() - asked < 1.0
        assert proc.returncode == 130
        assert b"Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_ctrl_c_as_the_command_exits_keeps_its_exit_status():
    """A Ctrl-C that lands after the command's work is done (main returned, the interpreter
    not yet gone) neither prints a traceback nor turns the status into a signal's."""
    code = "import os, signal, sys; from tui_prof import cli; cli.main = lambda: 3; c = cli.run(); os.kill(os.getpid(), signal.SIGINT); sys.exit(c)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)
    assert (done.returncode, done.stderr) == (3, b"")
    code = "import sys; from tui_prof import cli; cli.main = lambda: (_ for _ in ()).throw(KeyboardInterrupt); sys.exit(cli.run())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)
    assert (done.returncode, done.stderr) == (130, b"")


@pytest.mark.parametrize(
    "name, src",
    [
        ("28_results.db", DB),
        ("trace.json.gz", KINETO),
        ("908_results.json", None),
        ("1_kernel_trace.csv", DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7" / "kernel_trace.csv"),
        ("results.stats.csv", DATA / "legacy_rocprof" / "hip-programming" / "results.stats.csv"),
        ("results.db", DATA / "legacy_rocprof" / "hip-programming" / "results.db"),
    ],
)
def test_fifo_swapped_in_after_the_scan_is_not_waited_on(run_dir, monkeypatch, name, src):
    target = run_dir / name
    if src is None:
        target.write_bytes(trimmed_rocprofv3_json())
    else:
        shutil.copy(src, target)
    real_scan = detect.scan

    def scan_then_swap(*args, **kwargs):
        found = real_scan(*args, **kwargs)
        target.unlink()
        os.mkfifo(target)
        return found

    monkeypatch.setattr(detect, "scan", scan_then_swap)
    state = _load_in_thread(run_dir, threading.Event())
    state["thread"].join(10)
    assert "ended" in state, "the load waited on the FIFO"
    assert "error" not in state
    messages = _errors(state["runset"])
    assert messages and all("not a regular file (FIFO, socket or device); not read" in m for m in messages), messages
