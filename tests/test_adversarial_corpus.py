"""The adversarial corpus of issue 30: every reproducer, generated at test time (small files),
loaded in a subprocess under a memory cap (``resource.setrlimit(RLIMIT_AS)``) and a time cap.

Each case builds a run directory, runs ``load_path`` (and the summary) in a child process and
checks what the issue promised: the load ends within the caps, the hostile file is reported on
one line that says why, the good files beside it still load."""

from __future__ import annotations

import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data"
MEMORY_CAP = 3 << 30  # address space of the child: pandas, pyarrow, their threads and one bounded read fit; a bomb (4 GiB) does not
TIME_CAP = 90  # seconds per case (a loaded 2-core machine; the cases take 1-5 s alone)

CHILD = textwrap.dedent(
    """
    import json, os, sys, warnings
    warnings.simplefilter("ignore")
    from tui_prof.loaders import load_path
    from tui_prof.analysis.api import SummaryOptions, build_summary
    root = os.fsdecode(sys.argv[1].encode("utf-8", "surrogateescape"))
    rs = load_path(root, use_cache=sys.argv[2] == "cache")
    out = {"runs": len(rs.runs), "kernels": sum(len(r.kernels) for r in rs.runs),
           "issues": [[os.path.basename(i.path), i.message] for i in rs.issues if i.severity == "error"],
           "warnings": [w for r in rs.runs for w in r.warnings], "partial": any(r.partial for r in rs.runs)}
    if rs.runs and sys.argv[3] == "summary":
        doc = build_summary(rs, SummaryOptions(logs=False))
        out["hotspots"] = len(doc["hotspots"])
    print(json.dumps(out, ensure_ascii=True))
    """
)


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def contained(root: Path | bytes, cache: bool = False, summary: bool = False, env: dict | None = None) -> dict:
    """Load ``root`` in a child process under the memory and time caps; its result."""
    arg = os.fsdecode(root) if isinstance(root, bytes) else str(root)
    child_env = {**os.environ, **(env or {})}
    child_env.setdefault("TUIPROF_CACHE_DIR", str(Path(os.fsdecode(root)).parent / "cache"))
    started = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            CHILD,
            arg.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape"),
            "cache" if cache else "none",
            "summary" if summary else "-",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIME_CAP,
        preexec_fn=_cap,
        env=child_env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    result["seconds"] = time.monotonic() - started
    return result


# --------------------------------------------------------------------------- 4: gzip bombs

ZERO_MEMBER = gzip.compress(b"\0" * (16 << 20), 9)  # 16 MiB of output from ~16 KB


def gzip_bomb(path: Path, head: bytes, out_mib: int = 4096) -> None:
    """``head`` gzipped, then members of zeros until the content is ``out_mib`` MiB: a file of
    about 1 MB whose first 64 KiB sniff as the format of ``head``."""
    with open(path, "wb") as fh:
        fh.write(gzip.compress(head))
        for _ in range(out_mib // 16):
            fh.write(ZERO_MEMBER)


def _pftrace_head() -> bytes:
    """The sample's packets, then a packet whose length prefix claims 2^40 bytes (the zeros
    after it are its pending body)."""
    data = (DATA / "pftrace" / "synth_small.pftrace").read_bytes()
    length, n = [], 1 << 40
    while n >= 0x80:
        length.append(n & 0x7F | 0x80)
        n >>= 7
    length.append(n)
    return data + b"\x0a" + bytes(length)


BOMBS = {
    # reader: (file name, first member's content)
    "rocprofv3_csv": ("1_kernel_trace.csv.gz", (DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7" / "kernel_trace.csv").read_bytes()),
    "rocprofv2": ("hip_api_trace_hiptrace.csv.gz", (DATA / "rocprofv2" / "saltfish" / "hip_api_trace_hiptrace.csv").read_bytes()),
    "smi": ("gpu_info_power_profiler_output.csv.gz", (DATA / "smi" / "gpu_info_power_profiler_output.csv").read_bytes()),
    "rocprof_compute": ("pmc_kernel_top.csv.gz", (DATA / "rocprof_compute" / "batched_gemm" / "pmc_kernel_top.csv").read_bytes()),
    "rocprofv3_summary": ("summary.txt.gz", (DATA / "rocprofv3_summary" / "summary.txt").read_bytes()),
    "legacy_rocprof": ("results.json.gz", (DATA / "legacy_rocprof" / "hip-programming" / "results.json").read_bytes()),
    "pftrace": ("t.pftrace.gz", _pftrace_head()),
}


@pytest.mark.parametrize("reader", sorted(BOMBS))
def test_gzip_bomb_is_stopped_at_the_bound(reader, tmp_path):
    """Reproducer 4: seven readers inflated gzip without a bound (a 4 MB gzip reached
    8.46 GB); pftrace also took 215 s (quadratic buffer moves) and lost its good packets."""
    root = tmp_path / "run"
    root.mkdir()
    name, head = BOMBS[reader]
    gzip_bomb(root / name, head)
    assert (root / name).stat().st_size < 5 << 20
    result = contained(root)
    if reader == "pftrace":  # the good packets before the pending one are kept, the file marked partial
        assert result["runs"] == 1 and result["partial"], result
        assert any("gzip content larger than" in m and "kept" in m for _, m in result["issues"]), result
    else:
        assert [m for _, m in result["issues"] if m.startswith("cannot read file: gzip content larger than")], result


# --------------------------------------------------------------------------- 3: non-UTF-8 names


@pytest.mark.parametrize("cache", [True, False], ids=["cache", "no-cache"])
def test_non_utf8_folder_and_file_names_load(tmp_path, cache):
    """Reproducer 3: one non-UTF-8 byte in a folder or file name made every command exit 3
    with the cache, and lost every CSV and rocpd database without it."""
    root = os.path.join(os.fsencode(tmp_path), b"run\xff")
    os.mkdir(root)
    src = DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7"
    for name in ("238_agent_info.csv", "kernel_trace.csv", "hip_api_trace.csv" if (src / "hip_api_trace.csv").exists() else "hip_trace.csv"):
        shutil.copy(src / name, os.path.join(root, os.fsencode(name)))
    shutil.copy(DATA / "rocpd" / "28_results.db", os.path.join(root, b"db\xfe_results.db"))
    first = contained(root, cache=cache, summary=True)
    assert first["issues"] == [] and first["runs"] >= 2 and first["kernels"] > 0, first
    if cache:  # the second load reads the cache entries back
        again = contained(root, cache=True)
        assert (again["runs"], again["kernels"], again["issues"]) == (first["runs"], first["kernels"], [])


# --------------------------------------------------------------------------- 9: FIFOs


def test_cache_key_of_a_fifo_swapped_in_does_not_block(tmp_path):
    """Reproducer 9: a FIFO swapped in after the scan blocked the cache key's plain open."""
    from tui_prof.loaders import cache
    from tui_prof.loaders.base import DetectedFile

    fifo = tmp_path / "1_kernel_trace.csv"
    os.mkfifo(fifo)
    started = time.monotonic()
    assert cache.unit_key("rocprofv3-csv", [DetectedFile(fifo, "rocprofv3-csv", "kernel_trace", "g")]) is None
    assert time.monotonic() - started < 5


# --------------------------------------------------------------------------- 5, 7, 8: SQLite

COMPUTE_DB = DATA / "rocprof_compute" / "analysis_db" / "rocprof_compute_23ed6f36_slice.db"
ROCPD_DB = DATA / "rocpd" / "28_results.db"


def _db(root: Path, source: Path, name: str, *statements: str) -> Path:
    """A copy of ``source`` named ``name`` in ``root`` with ``statements`` applied."""
    import sqlite3

    path = root / name
    shutil.copy(source, path)
    path.chmod(0o644)
    con = sqlite3.connect(path)
    for sql in statements:
        con.execute(sql)
    con.commit()
    con.close()
    return path


def _as_view(table: str, select: str) -> tuple[str, str, str]:
    """Statements that move ``table`` aside and put view ``select`` (over ``<table>_t``) in its place."""
    return (f"ALTER TABLE {table} RENAME TO {table}_t", "DROP VIEW IF EXISTS compute_kernel_view", f"CREATE VIEW {table} AS {select}")


COMPUTE_CASES = {
    # name: (statements, what the one issue or warning says; None: loads cleanly)
    "recursive_view": (
        _as_view("compute_dispatch", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT d.* FROM compute_dispatch_t d, r"),
        "holds a WITH clause (rocprof-compute writes none",
    ),
    "cross_join_view": (
        _as_view(
            "compute_kernel_metric_value", "SELECT a.* FROM compute_kernel_metric_value_t a, compute_kernel_metric_value_t b, compute_kernel_metric_value_t c"
        ),
        "SQLite steps",
    ),
    "bad_utf8_name": (("UPDATE compute_kernel SET kernel_name = CAST(X'6B8FFF' AS TEXT) WHERE rowid = 1",), "invalid UTF-8"),
    "text_timestamp": (("UPDATE compute_dispatch SET start_timestamp = 'soon' WHERE rowid = 1",), "1 row(s) of compute_dispatch skipped"),
    "huge_timestamp": (("UPDATE compute_dispatch SET end_timestamp = 1e30 WHERE rowid = 2",), "1 row(s) of compute_dispatch skipped"),
    "10mb_name": (("UPDATE compute_kernel SET kernel_name = 'k' || hex(zeroblob(5000000)) WHERE rowid = 1",), None),
}


@pytest.mark.parametrize("case", sorted(COMPUTE_CASES))
def test_rocprof_compute_database_under_the_sqlite_guard(case, tmp_path):
    """Reproducer 5: the rocprof-compute analysis database had none of rocpd's guards (a
    recursive view hung, a cross join took 94 s, one bad byte or one text timestamp lost the
    database, a 10 MB name exited 3)."""
    root = tmp_path / "run"
    root.mkdir()
    statements, expected = COMPUTE_CASES[case]
    _db(root, COMPUTE_DB, "rocprof_compute_x.db", *statements)
    result = contained(root, summary=True)
    said = [m for _, m in result["issues"]] + result["warnings"]
    if expected is None:
        assert result["issues"] == [] and result["runs"] >= 1 and result["hotspots"] >= 1, result
    elif case.endswith("_view"):
        assert result["runs"] == 0 and any(expected in m for m in said), result
    else:  # the database loads, the damage is said
        assert result["runs"] >= 1 and result["kernels"] >= 9 and any(expected in m for m in said), result
    assert result["seconds"] < 60


def test_a_slow_view_is_stopped_by_the_time_budget(tmp_path):
    """Reproducer 7: a view with a large intermediate per row ran 107 s on a 1.6 MB file
    (the budget counted steps, not time)."""
    root = tmp_path / "run"
    root.mkdir()
    import sqlite3

    path = _db(root, ROCPD_DB, "28_results.db")
    con = sqlite3.connect(path)
    (table,) = con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_string_%'").fetchone()
    con.execute("DROP VIEW rocpd_string")
    con.execute(
        f"CREATE VIEW rocpd_string AS SELECT a.id, a.guid, a.string FROM `{table}` a, `{table}` b, `{table}` c WHERE length(a.string || b.string || c.string) < 0"
    )
    # 20 MB of unrelated padding lifts the step budget (steps per byte) to about 236M steps,
    # far more than any machine runs in the 1 s time budget: the time budget must stop it
    con.execute("CREATE TABLE padding (data BLOB)")
    con.execute("INSERT INTO padding VALUES (zeroblob(?))", (20 << 20,))
    con.commit()
    con.close()
    result = contained(root, env={"TUIPROF_SQLITE_SECONDS": "1"})
    assert any("SQLite ran past 1 s" in m for _, m in result["issues"]), result
    assert result["seconds"] < 30


def test_a_sparse_write_ahead_log_is_not_copied_whole(tmp_path):
    """Reproducer 8: a 1.6 MB database with a sparse ``-wal`` claiming 2 GB filled the
    temporary folder and the database was lost. Only a log's valid frames are copied."""
    root = tmp_path / "run"
    root.mkdir()
    path = _db(root, ROCPD_DB, "28_results.db")
    with open(f"{path}-wal", "wb") as fh:
        fh.truncate(2 << 30)  # sparse: no valid header, no valid frame
    result = contained(root, env={"TMPDIR": str(tmp_path)})
    assert result["issues"] == [] and result["kernels"] > 0, result
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("tuiprof-wal")] == []
    from tui_prof.loaders import sqlguard

    with open(f"{path}-wal", "rb") as fh:
        assert sqlguard.valid_wal_bytes(fh, 1 << 40) == 0


# --------------------------------------------------------------------------- 6: one long name


LONG_NAME_CHILD = textwrap.dedent(
    """
    import json, warnings
    warnings.simplefilter("ignore")
    import numpy as np, pandas as pd
    from tui_prof.analysis.api import SummaryOptions, build_summary
    from tui_prof.model import Run, RunMeta, RunSet, make_table
    from tui_prof.synth import SynthSpec, build
    synth = build(SynthSpec(iterations=300, kernels_per_iteration=10))
    kernels = synth.kernels.copy()
    names = kernels["name"].astype(str).to_numpy(dtype=object)
    names[0] = "k" * (1 << 20)  # one 1 MiB name among 3,000 dispatches
    kernels["name"] = pd.Categorical(names)
    n = 20_000
    ops = np.array(["ALLOCATE", "FREE"] * (n // 2), dtype=object)
    ops[7] = "ALLOCATE" + "x" * (1 << 20)  # one 1 MiB operation among 20k rows
    allocations = make_table("allocations", {"start": np.arange(n, dtype=np.int64) * 10, "end": np.arange(n, dtype=np.int64) * 10 + 5,
        "operation": ops, "agent": np.zeros(n, np.int32), "bytes": np.full(n, 4096, np.int64), "address": np.repeat(np.arange(n // 2, dtype=np.int64), 2)})
    run = Run(meta=RunMeta(formats=["synthetic"], tool="synth", label="long/1", hostname="h" * 1000, pid=1),
              agents=synth.agents, kernels=kernels, api=synth.api, copies=synth.copies, allocations=allocations)
    doc = build_summary(RunSet(root="long", runs=[run]), SummaryOptions(logs=False))
    print(json.dumps({"hotspots": len(doc["hotspots"]), "longest": max(len(h["name"]) for h in doc["hotspots"])}))
    """
)


def test_one_long_name_costs_its_length_not_count_times_longest(tmp_path):
    """Reproducer 6: fixed-width name arrays (count x longest): one 1 MiB name among 3,000
    kernels needed 750 MiB, a 1 MiB allocation operation among 20k rows asked for 7 GB."""
    proc = subprocess.run([sys.executable, "-c", LONG_NAME_CHILD], cwd=ROOT, capture_output=True, text=True, timeout=TIME_CAP, preexec_fn=_cap)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["hotspots"] >= 2 and result["longest"] == 1 << 20


NAME_ARRAY = ("np.char.", ".to_numpy().astype(str)", "dtype=str)", ".astype(str), return_inverse")


def test_no_fixed_width_string_arrays_of_names():
    """Names stay codes + categories: a scan of the package for the constructs that build a
    fixed-width numpy string array (count x longest name)."""
    hits = []
    for path in sorted((ROOT / "tui_prof").rglob("*.py")):
        if "synth" in path.parts:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if any(pattern in line for pattern in NAME_ARRAY) and not line.lstrip().startswith("#"):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert hits == [], "use names.row_flags / row_strings / unique_strings instead:\n" + "\n".join(hits)


# --------------------------------------------------------------------------- 12: stats tables

STATS_ROWS = """"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"
"big",9223372036854775000,9223372036854775000,1.0,50.0,1,1,0.0
"neg",-5,100,20.0,10.0,1,40,1.0
"pct",3,300,100.0,450.5,90,110,1.0
"infavg",2,200,inf,10.0,90,110,1.0
"ok",4,400,100.0,20.0,90,110,1.0
"""


def test_stats_tables_sum_exactly_and_drop_impossible_rows(tmp_path):
    """Reproducer 12: sums wrapped int64 (-9,223,372,036,854,775,808 dispatches), a
    Percentage of 450.5 and negative calls were accepted, one inf cell lost the file."""
    from tui_prof.analysis.stats import stats_tables
    from tui_prof.loaders import load_path

    for host in ("h1", "h2"):
        (tmp_path / host).mkdir()
        (tmp_path / host / "11_kernel_stats.csv").write_text(STATS_ROWS)
    runset = load_path(tmp_path)
    assert runset.errors == []
    notes = [w for run in runset.runs for w in run.warnings if "statistics row(s) dropped" in w]
    assert len(notes) == 2 and all("3 statistics row(s)" in n for n in notes)
    (table,) = stats_tables(runset)
    big = 9223372036854775000
    assert table["calls"] == 2 * big + 2 * 4 and table["total_ns"] == 2 * big + 2 * 400  # exact Python ints
    assert [(r["name"], r["calls"]) for r in table["rows"]] == [("big", 2 * big), ("ok", 8)]
    assert all(0 <= r["percent"] <= 100 for r in table["rows"])


# --------------------------------------------------------------------------- 16: overlapping steps


def test_overlapping_profiler_steps_are_reported():
    """Reproducer 16: overlapping ``ProfilerStep#N`` ranges dropped 25 of 50 steps without a note."""
    import numpy as np

    from tui_prof.analysis.steps import detect_steps
    from tui_prof.model import Run, RunMeta, make_table

    n = 50
    starts = np.arange(n, dtype=np.int64) * 1000
    ends = starts + np.where(np.arange(n) % 2 == 0, 1500, 800)  # every even step overlaps the next one's start
    markers = make_table("markers", {"start": starts, "end": ends, "name": [f"ProfilerStep#{i}" for i in range(n)], "source": ["user_annotation"] * n})
    ranges = detect_steps(Run(meta=RunMeta(pid=1), markers=markers))
    assert ranges is not None and len(ranges) == 25
    assert "25 of 50 ProfilerStep ranges left out" in ranges.how


def test_infinite_metric_values_reach_no_text_no_finding_and_no_json(tmp_path):
    """Reproducer 10: a non-finite value showed as "hit rate -inf %", raised findings and
    was written as ``Infinity`` in ``--json``."""
    root = tmp_path / "run"
    root.mkdir()
    _db(
        root,
        COMPUTE_DB,
        "rocprof_compute_x.db",
        "UPDATE compute_kernel_metric_value SET value = 9e999",
        "UPDATE compute_workload_metric_value SET value = -9e999",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "tui_prof.cli", "summary", str(root), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=TIME_CAP
    )
    assert proc.returncode == 0, proc.stderr
    import re

    assert not re.search(r"\b(inf|nan|infinity)\b|∞", proc.stdout.replace(str(root), "RUN"), re.IGNORECASE), proc.stdout
    proc = subprocess.run(
        [sys.executable, "-m", "tui_prof.cli", "summary", str(root), "--no-cache", "--json"], cwd=ROOT, capture_output=True, text=True, timeout=TIME_CAP
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert not [f for f in doc["findings"] if "inf" in json.dumps(f).lower().replace("info", "")]


# --------------------------------------------------------------------------- the earlier reproducers (issue 13)
# The defects of issue 13, each rebuilt here and run through the same harness as the cases
# above (a child process under the memory and time caps). Their in-process tests, which
# also check chunk bounds, peak memory and the loaders' internals, stay where they were
# written (tests/test_hostile_files.py, test_hostile_inputs.py, test_cli_validation.py).

ESC_NAME = "k\x1b]0;pwned\x07\x1b]52;c;cHduZWQ=\x07\x1b]8;;http://x\x07\x1b[2J\x9b31m\u202eevil[b]x[/b]`![i](http://x)`"
RAW_CONTROL = __import__("re").compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def _rocpd_case(root: Path, edit) -> None:
    import sqlite3

    from test_hostile_files import _db_copy

    path = _db_copy(root)
    with sqlite3.connect(path) as con:
        edit(con)
    sqlite3.connect(path).close()


def _view(con, view: str, select: str) -> None:
    con.execute(f"DROP VIEW `{view}`")
    con.execute(f"CREATE VIEW `{view}` AS {select}")


def _table_of(con, view: str) -> str:
    from test_hostile_files import _table

    return _table(con, view)


def _id_9e18(con) -> None:
    t = _table_of(con, "rocpd_kernel_dispatch")
    (last,) = con.execute(f"SELECT MAX(id) FROM `{t}`").fetchone()
    con.execute(f"UPDATE `{t}` SET id = 9000000000000000000 WHERE id = ?", (last,))


def _recursive(con) -> None:
    t = _table_of(con, "rocpd_kernel_dispatch")
    _view(con, "rocpd_kernel_dispatch", f"WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT X.* FROM `{t}` X, r")


def _recursive_inner(con) -> None:
    t = _table_of(con, "rocpd_region")
    con.execute(f"CREATE VIEW inner_loop AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT X.* FROM `{t}` X, r")
    _view(con, "rocpd_region", "SELECT * FROM inner_loop")


def _cross_join(con) -> None:
    t = _table_of(con, "rocpd_kernel_dispatch")
    _view(con, "rocpd_kernel_dispatch", f"SELECT A.* FROM `{t}` A, `{t}` B, `{t}` C, `{t}` D")


def _printf(con) -> None:
    t = _table_of(con, "rocpd_string")
    _view(con, "rocpd_string", f"SELECT id, guid, printf('%.*c', 900000000, 'x') AS string FROM `{t}`")


def _replace(con) -> None:
    t = _table_of(con, "rocpd_string")
    grow = "'xx'"
    for _ in range(10):
        grow = f"replace({grow}, 'x', 'xxxxxxxx')"
    _view(con, "rocpd_string", f"SELECT id, guid, {grow} AS string FROM `{t}`")


def _bad_utf8(con) -> None:
    node, sym, string = (_table_of(con, v) for v in ("rocpd_info_node", "rocpd_info_kernel_symbol", "rocpd_string"))
    con.execute(f"UPDATE `{node}` SET hostname = CAST(x'686f7374ff6e616d65' AS TEXT)")
    (sid,) = con.execute(f"SELECT kernel_id FROM `{_table_of(con, 'rocpd_kernel_dispatch')}` LIMIT 1").fetchone()
    con.execute(f"UPDATE `{sym}` SET display_name = CAST(display_name || x'c3' AS TEXT) WHERE id = ?", (sid,))
    (string_id,) = con.execute(f"SELECT name_id FROM `{_table_of(con, 'rocpd_region')}` LIMIT 1").fetchone()
    con.execute(f"UPDATE `{string}` SET string = CAST(x'6d61726b80' AS TEXT) WHERE id = ?", (string_id,))


def _wal(root: Path) -> None:
    from test_hostile_files import _wal_database

    work = root.parent / "writer"
    work.mkdir()
    assert _wal_database(work, root) == 302


def _kineto_surrogate(root: Path) -> None:
    from test_hostile_files import _kineto_with

    _kineto_with({"kernel": "\udcff", "cpu_op": "\udcff"}, root / "trace.json")


def _json_surrogate(root: Path) -> None:
    from fuzz.seeds import trimmed_rocprofv3_json

    doc = json.loads(trimmed_rocprofv3_json())
    proc = doc["rocprofiler-sdk-tool"][0]
    used = proc["buffer_records"]["kernel_dispatch"][0]["dispatch_info"]["kernel_id"]
    (symbol,) = [s for s in proc["kernel_symbols"] if s["kernel_id"] == used]
    symbol["formatted_kernel_name"] += "\udcff"
    (root / "908_results.json").write_text(json.dumps(doc))


def _json_gz_bomb(root: Path) -> None:
    from test_hostile_files import _gzip_bomb

    _gzip_bomb(root / "1_results.json.gz", 200)


def _fifo(root: Path) -> None:
    shutil.copy(DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7" / "kernel_trace.csv", root / "7_kernel_trace.csv")
    os.mkfifo(root / "8_kernel_trace.csv")


def _hostile_names(root: Path) -> None:
    header = '"Kind","Agent_Id","Queue_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
    row = '"KERNEL_DISPATCH",1,1,"{}",{},{},{}\n'
    text = header + "".join(row.format(name, i + 1, 1000 + 100 * i, 1050 + 100 * i) for i, name in enumerate([ESC_NAME, "plain", ESC_NAME]))
    (root / "5_kernel_trace.csv").write_text(text)


def _rocpd(edit):
    return lambda root: _rocpd_case(root, edit)


def _budget_message() -> str:
    from tui_prof.loaders import rocpd

    size = (DATA / "rocpd" / "28_results.db").stat().st_size
    budget = rocpd.STEP_BUDGET_FLOOR + rocpd.STEP_BUDGET_PER_BYTE * size
    return f"a query ran past {budget:,} SQLite steps (10 per byte of this {size:,}-byte database): a view that does not end (a recursion or a cross join)? not read"


def _bomb_message(root: Path) -> str:
    packed = (root / "1_results.json.gz").stat().st_size
    limit = max(64 << 20, 64 * packed)
    return (
        f"cannot read file: gzip content larger than {limit >> 20} MiB (64 times its {packed} bytes; "
        "a real trace expands about 25 times): not read beyond it; gunzip it (or raise TUIPROF_GZIP_MAX_RATIO) to read it anyway"
    )


UTF8_WARNING = "3 rocpd text values (names, hostnames, symbols) held invalid UTF-8 or lone surrogates; shown with U+FFFD in their place"
EARLIER = {
    # case: (builder, check(result, root))
    "rocpd-id-9e18": (_rocpd(_id_9e18), lambda r, root: r["kernels"] == 151 and not r["issues"]),
    "rocpd-recursive-view": (
        _rocpd(_recursive),
        lambda r, root: (
            r["runs"] == 0
            and r["issues"]
            == [["28_results.db", "view rocpd_kernel_dispatch holds a WITH clause (rocprofv3 writes none; a recursive one never ends): not read"]]
        ),
    ),
    "rocpd-recursion-in-a-named-view": (
        _rocpd(_recursive_inner),
        lambda r, root: len(r["issues"]) == 1 and r["issues"][0][1].startswith("view inner_loop holds a WITH clause"),
    ),
    "rocpd-cross-join": (_rocpd(_cross_join), lambda r, root: [m for _f, m in r["issues"]] == [_budget_message()]),
    "rocpd-printf-900mb": (
        _rocpd(_printf),
        lambda r, root: (
            [m for _f, m in r["issues"]] == ["view rocpd_string calls printf() (rocprofv3's views call none; it can build a value of any size): not read"]
        ),
    ),
    "rocpd-replace-2gb": (
        _rocpd(_replace),
        lambda r, root: (
            [m for _f, m in r["issues"]] == ["view rocpd_string calls replace() (rocprofv3's views call none; it can build a value of any size): not read"]
        ),
    ),
    "rocpd-invalid-utf8": (_rocpd(_bad_utf8), lambda r, root: r["kernels"] == 151 and not r["issues"] and r["warnings"] == [UTF8_WARNING]),
    "rocpd-wal-committed-rows": (_wal, lambda r, root: r["kernels"] == 302 and not r["issues"]),
    "kineto-lone-surrogate": (
        _kineto_surrogate,
        lambda r, root: (
            not r["issues"]
            and "2 strings (names, categories, metadata) held invalid UTF-8 or lone surrogates; shown with U+FFFD in their place" in r["warnings"]
        ),
    ),
    "rocprofv3-json-lone-surrogate": (
        _json_surrogate,
        lambda r, root: (
            r["kernels"] == 40
            and r["warnings"] == ["1 strings (kernel symbols, names, metadata) held invalid UTF-8 or lone surrogates; shown with U+FFFD in their place"]
        ),
    ),
    "rocprofv3-json-gz-bomb": (_json_gz_bomb, lambda r, root: [m for _f, m in r["issues"]] == [_bomb_message(root)]),
    "fifo-among-traces": (
        _fifo,
        lambda r, root: r["kernels"] > 0 and r["issues"] == [["8_kernel_trace.csv", "not a regular file (FIFO, socket or device); not read"]],
    ),
    "terminal-and-markup-in-names": (_hostile_names, lambda r, root: r["kernels"] == 3 and r["raw_controls"] == 0 and r["escaped"]),
}


TEXT_CHILD = textwrap.dedent(
    """
    import json, os, re, sys
    from tui_prof.loaders import load_path
    from tui_prof.analysis.api import SummaryOptions, build_summary
    from tui_prof.render.summary import summary_text
    rs = load_path(sys.argv[1])
    text = summary_text(build_summary(rs, SummaryOptions(logs=False)))
    raw = re.compile(sys.argv[2].encode("ascii").decode("unicode_escape"))
    print(json.dumps({"raw_controls": len(raw.findall(text)), "escaped": "\\\\x1b" in text}))
    """
)


@pytest.mark.parametrize("case", sorted(EARLIER))
def test_earlier_reproducer_is_contained(case, tmp_path):
    """Issue 13's reproducers through this corpus's harness: each ends within the caps with
    what its in-process test checks (the rows kept, the one line that says why), and
    nothing is written into the run directory."""
    build, check = EARLIER[case]
    root = tmp_path / "run"
    root.mkdir()
    build(root)
    before = sorted(os.listdir(root))
    result = contained(root, summary=True)
    if case == "terminal-and-markup-in-names":
        proc = subprocess.run(
            [sys.executable, "-c", TEXT_CHILD, str(root), RAW_CONTROL.pattern.encode("unicode_escape").decode("ascii")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=TIME_CAP,
            preexec_fn=_cap,
            env={**os.environ, "TUIPROF_CACHE_DIR": str(tmp_path / "cache")},
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        result.update(json.loads(proc.stdout))
    assert check(result, root), result
    assert sorted(os.listdir(root)) == before


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["summary", "--gap-threshold", "inf", "RUN"], "--gap-threshold"),
        (["summary", "--gap-threshold", "1e309", "RUN"], "--gap-threshold"),
        (["diff", "--fail-on-regression", "nan", "RUN", "RUN"], "--fail-on-regression"),
        (["diff", "--noise", "-1", "RUN", "RUN"], "--noise"),
        (["summary", ""], "empty"),
        (["summary", "RUN/" + "x" * 300], "too long"),
        (["summary", "RUN/bad\nname"], "\\n"),
    ],
    ids=["gap-inf", "gap-1e309", "gate-nan", "noise-negative", "empty-path", "name-too-long", "newline-in-name"],
)
def test_earlier_command_line_reproducer_is_one_line(argv, says, tmp_path):
    """Issue 13's command-line reproducers in a capped child: a usage or input error on one
    line that names the problem, never a traceback or a silent success."""
    root = tmp_path / "run"
    root.mkdir()
    shutil.copy(DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7" / "kernel_trace.csv", root / "7_kernel_trace.csv")
    args = [a.replace("RUN", str(root)) for a in argv]
    proc = subprocess.run(
        [sys.executable, "-m", "tui_prof.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIME_CAP,
        preexec_fn=_cap,
        env={**os.environ, "TUIPROF_CACHE_DIR": str(tmp_path / "cache")},
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode in (1, 2), (proc.returncode, proc.stderr[-1000:])
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-1000:]
    assert says in lines[0], lines[0]


def test_earlier_cache_reproducers_are_contained(tmp_path):
    """Issue 13's cache reproducers through the harness: a cache folder that holds other
    things is neither used nor pruned (its dot-folders and manifest-holding folders stay),
    and flipped bytes in a cached table are a miss, never other numbers."""
    root = tmp_path / "run"
    root.mkdir()
    shutil.copy(DATA / "rocpd" / "28_results.db", root / "28_results.db")
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("key")
    (home / "project").mkdir()
    (home / "project" / "manifest.json").write_text("{}")
    old = time.time() - 7 * 86400
    os.utime(home / ".ssh", (old, old))
    result = contained(root, cache=True, env={"TUIPROF_CACHE_DIR": str(home), "TUIPROF_CACHE_MAX_BYTES": "0"})
    assert result["kernels"] == 151
    assert (home / ".ssh" / "id_ed25519").read_text() == "key" and (home / "project" / "manifest.json").exists()
    assert sorted(p.name for p in home.iterdir()) == [".ssh", "project"]  # nothing written there either

    cache = tmp_path / "cache"
    fresh = contained(root, cache=True, env={"TUIPROF_CACHE_DIR": str(cache)})
    tables = sorted(cache.rglob("*.arrow"))
    assert tables
    for table in tables:  # one flipped byte in the middle of every cached table
        data = bytearray(table.read_bytes())
        data[len(data) // 2] ^= 0xFF
        table.write_bytes(bytes(data))
    again = contained(root, cache=True, env={"TUIPROF_CACHE_DIR": str(cache)})
    assert (again["runs"], again["kernels"], again["issues"], again["warnings"]) == (fresh["runs"], fresh["kernels"], fresh["issues"], fresh["warnings"])
