"""``tuiprof sql``: results against the summary and the profilers' own data, the sandbox,
hostile names, the output formats, the prompt, and every worked query of docs/sql.md."""

from __future__ import annotations

import gzip
import io
import json
import math
import re
import sqlite3
import sys
from pathlib import Path

import pytest

from tui_prof.analysis.summary import build_summary
from tui_prof.cli import main
from tui_prof.loaders import load_path
from tui_prof.model import Run, RunSet
from tui_prof.model.schema import make_table
from tui_prof.query import output
from tui_prof.query.engine import QueryError, Session
from tui_prof.query.repl import repl
from tui_prof.query.tables import Catalogue

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).parent.parent
H100 = DATA / "kineto" / "h100__gaunernst_bert-small-uncased__1016001.json.gz"
TRAIN = DATA / "kineto" / "h200" / "train_sync.pt.trace.json.gz"
ROCPD = DATA / "rocpd" / "28_results.db"
RANKS = DATA / "kineto" / "ranks"
REAL = [H100, TRAIN, ROCPD, RANKS]

_cache: dict[Path, tuple[RunSet, dict, Session]] = {}


def loaded(path: Path) -> tuple[RunSet, dict, Session]:
    """The run set, its summary (the CLI's defaults) and a session over it, once per file."""
    if path not in _cache:
        runset = load_path(str(path))
        _cache[path] = (runset, dict(build_summary(runset)), Session(Catalogue(runset)))
    return _cache[path]


def one(session: Session, sql: str):
    result = session.run(sql)
    assert len(result.rows) == 1
    return result.rows[0]


def doc_query(number: int) -> tuple[str, str]:
    """Worked query ``number`` of docs/sql.md: (sample under tests/data, SQL)."""
    return WORKED[number - 1]


WORKED = re.findall(r"<!-- run: (\S+) -->\s*```sql\n(.*?)```", (ROOT / "docs" / "sql.md").read_text(encoding="utf-8"), re.S)


# --- figures against the summary and the profilers' own data ---------------------------------


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_kernel_count_and_time_equal_the_summary(path):
    _, doc, session = loaded(path)
    count, total = one(session, "SELECT count(*), sum(dur) FROM kernels")
    assert count == doc["kernels"]["dispatches"] > 0
    assert total == doc["kernels"]["total_ns"] > 0


def test_kernel_count_and_time_equal_an_exact_parse_of_the_trace():
    """The Kineto file read here: every ``cat: kernel`` event, µs -> ns."""
    events = json.loads(gzip.open(H100).read())["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"]
    _, _, session = loaded(H100)
    count, total = one(session, "SELECT count(*), sum(dur) FROM kernels")
    assert count == len(kernels)
    assert abs(total - sum(e["dur"] * 1000 for e in kernels)) <= len(kernels)  # µs floats rounded to ns per event


def test_rocpd_kernels_equal_the_database_views():
    _, _, session = loaded(ROCPD)
    db = sqlite3.connect(f"file:{ROCPD}?mode=ro", uri=True)
    count, total = db.execute('SELECT count(*), sum("end" - start) FROM kernels').fetchone()
    assert one(session, "SELECT count(*), sum(dur) FROM kernels") == (count, total)
    theirs = db.execute("SELECT name, total_calls, total_duration FROM top_kernels ORDER BY total_duration DESC").fetchall()
    ours = session.run("SELECT name, count(*), sum(dur) FROM kernels GROUP BY name ORDER BY 3 DESC").rows
    assert [(n, c) for n, c, _ in ours] == [(n, c) for n, c, _ in theirs]
    for (_, _, ns), (_, _, us) in zip(ours, theirs):
        assert ns / 1000 == pytest.approx(us, abs=1e-6)


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_worked_top_kernels_equal_the_summary_hotspots(path):
    _, doc, session = loaded(path)
    rows = session.run(doc_query(1)[1]).rows
    expected = doc["hotspots"][: len(rows)]
    assert len(rows) == min(10, doc["kernels"]["unique_names"])
    assert {(r[0], r[1], r[2]) for r in rows} == {(h["name"], h["calls"], h["total_ns"]) for h in expected}
    assert [r[2] for r in rows] == [h["total_ns"] for h in expected]
    assert sum(r[4] for r in rows) <= 100 + 1e-6


@pytest.mark.parametrize("path", REAL + [DATA / "kineto" / "h200" / "copies.pt.trace.json.gz"], ids=lambda p: p.name)
def test_worked_busy_query_equals_the_summary_gpu_busy(path):
    """The interval-union query of docs/sql.md (kernels and copies per process and GPU)."""
    _, doc, session = loaded(path)
    (busy,) = one(session, doc_query(2)[1])
    assert busy == doc["gpu"]["busy_ns"] > 0
    (summed,) = one(session, "SELECT sum(dur) FROM kernels")
    assert busy <= summed + (one(session, "SELECT coalesce(sum(dur), 0) FROM copies")[0])


def test_busy_query_counts_overlapping_kernels_once():
    """Known by construction: [0,10) and [5,20) on one GPU, [30,40) on another -> 20 + 10."""
    kernels = make_table("kernels", {"start": [0, 5, 30], "end": [10, 20, 40], "agent": [1, 1, 2], "name": ["a", "b", "c"]})
    from tui_prof.model import Agent

    run = Run(agents=[Agent(id=1, type="GPU"), Agent(id=2, type="GPU")], kernels=kernels)
    session = Session(Catalogue(RunSet("mem", runs=[run])))
    assert one(session, doc_query(2)[1]) == (30,)


def test_analysis_tables_equal_the_summary():
    _, doc, session = loaded(TRAIN)
    assert one(session, "SELECT count(*) FROM steps") == (len(doc["steps"]["steps"]),)
    assert [r[0] for r in session.run("SELECT wall_ns FROM steps ORDER BY step").rows] == [s["wall_ns"] for s in doc["steps"]["steps"]]
    assert [r[0] for r in session.run("SELECT code FROM findings ORDER BY rank").rows] == [f["code"] for f in doc["findings"]]
    by_cause = dict(session.run("SELECT cause, sum(duration_ns) FROM gaps GROUP BY cause").rows)
    assert {k: v for k, v in doc["gaps"]["by_cause"].items() if v} == by_cause
    assert one(session, "SELECT count(*) FROM gaps") == (doc["gaps"]["count"],)
    _, rdoc, rsession = loaded(RANKS)
    assert [tuple(r) for r in rsession.run("SELECT rank, wait_ns, straggler_of FROM ranks ORDER BY process").rows] == [
        (r["rank"], r["wait_ns"], r["straggler_of"]) for r in rdoc["ranks"]
    ]
    # every collective instance; the summary lists the ones with the longest waits
    listed = {(c["type"], c["index"], c["straggler"], c["wait_ns"]) for c in rdoc["stragglers"]["listed"]}
    rows = set(rsession.run("SELECT type, index, straggler, wait_ns FROM collectives").rows)
    assert listed <= rows and len(rows) == rdoc["stragglers"]["instances"]
    last = dict(rsession.run("SELECT straggler, count(*) FROM collectives WHERE straggler IS NOT NULL GROUP BY straggler").rows)
    assert last == {r["rank"]: r["straggler_of"] for r in rdoc["ranks"] if r["straggler_of"]}


def test_model_tables_carry_process_and_dur_without_copying_numbers():
    runset, _, session = loaded(RANKS)
    assert session.run("SELECT process, count(*) FROM kernels GROUP BY process ORDER BY process").rows == [
        (i, len(run.kernels)) for i, run in enumerate(runset.runs)
    ]
    table = session.catalogue.arrow("kernels")
    start = table.column("start").chunk(0)
    assert start.buffers()[1].address == runset.runs[0].kernels["start"].to_numpy().ctypes.data  # a view, not a copy
    assert one(session, 'SELECT count(*) FROM kernels WHERE dur <> "end" - start') == (0,)


def test_analysis_runs_only_when_an_analysis_table_is_named():
    runset, _, _ = loaded(H100)
    catalogue = Catalogue(runset)
    session = Session(catalogue)
    session.run("SELECT count(*) FROM kernels k JOIN api a USING (correlation_id)")
    assert catalogue._analysis is None
    session.run("WITH g AS (SELECT * FROM gaps) SELECT count(*) FROM g")
    assert catalogue._analysis is not None


# --- the sandbox --------------------------------------------------------------------------------

HOSTILE = [
    "COPY kernels TO '{out}/stolen.csv'",
    "COPY (SELECT 1) TO '{out}/x.parquet' (FORMAT parquet)",
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM '/etc/passwd'",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SELECT * FROM read_parquet('https://example.com/x.parquet')",
    "ATTACH '{out}/x.db' AS x",
    "ATTACH ':memory:' AS y; CREATE TABLE y.t AS SELECT 1",
    "EXPORT DATABASE '{out}/dump'",
    "SET enable_external_access = true",
    "SET lock_configuration = false",
    "SET autoinstall_known_extensions = true",
    "SET temp_directory = '{out}'",
    "SELECT * FROM runset",
]


@pytest.mark.parametrize("sql", HOSTILE)
def test_hostile_queries_are_refused(sql, tmp_path):
    _, _, session = loaded(H100)
    with pytest.raises(QueryError) as err:
        session.run(sql.format(out=tmp_path))
    assert "\n" not in str(err.value) and str(err.value)
    assert list(tmp_path.iterdir()) == []
    # the session is still usable and still locked
    assert one(session, "SELECT current_setting('enable_external_access')") == (False,)


def test_sandbox_settings_are_locked():
    _, _, session = loaded(H100)
    settings = dict(session.run("SELECT name, value FROM duckdb_settings()").rows)
    assert settings["enable_external_access"] == "false"
    assert settings["lock_configuration"] == "true"
    assert settings["autoload_known_extensions"] == "false"
    assert settings["autoinstall_known_extensions"] == "false"
    assert settings["python_enable_replacements"] == "false"


EVIL = 'x\'); DROP TABLE kernels; --\x1b]0;pwned\x07 "q" \\n \u202e|[a](http://e)<b>'


@pytest.fixture(scope="module")
def evil_session():
    kernels = make_table("kernels", {"start": [0, 100], "end": [50, 160], "agent": [0, 0], "name": [EVIL, "plain"]})
    from tui_prof.model import Agent

    return Session(Catalogue(RunSet("mem", runs=[Run(agents=[Agent(id=0, type="GPU")], kernels=kernels)])))


def test_hostile_kernel_name_stays_data(evil_session):
    result = evil_session.run("SELECT name, dur FROM kernels ORDER BY start")
    assert result.rows == [(EVIL, 50), ("plain", 60)]
    assert one(evil_session, "SELECT count(*) FROM kernels") == (2,)  # nothing was dropped
    # the exact string in JSON (ASCII-escaped), never a raw control character
    text = output.to_json(result)
    assert json.loads(text)[0]["name"] == EVIL
    assert "\x1b" not in text and "\u202e" not in text
    # sanitised in the text table and Markdown
    for shown in (output.to_text(result), output.to_markdown(result), output.to_csv(result, terminal=True)):
        assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    md = output.to_markdown(result)
    assert "\\[a\\](http" in md and "\\<b\\>" in md and "<b>" not in md.replace("\\<b\\>", "")
    assert md.splitlines()[2].count(" | ") == 1  # the name's | does not open a cell
    # CSV for a file keeps the exact string
    import csv

    assert list(csv.reader(io.StringIO(output.to_csv(result))))[1][0] == EVIL


def test_json_is_strict(evil_session):
    result = evil_session.run("SELECT 'nan'::double AS a, 'inf'::double AS b, 1.5::decimal(4,2) AS c, [1, 2] AS d, 1 AS a")
    rows = json.loads(output.to_json(result), parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert rows == [{"a": None, "b": None, "c": 1.5, "d": [1, 2], "a_2": 1}]


# --- the command ---------------------------------------------------------------------------------


def test_cli_formats(capsys):
    query = "SELECT name, count(*) AS n FROM kernels GROUP BY name ORDER BY n DESC, name LIMIT 3"
    _, _, session = loaded(H100)
    expected = session.run(query).rows
    assert main(["sql", str(H100), query, "--json"]) == 0
    assert [(r["name"], r["n"]) for r in json.loads(capsys.readouterr().out)] == expected
    import csv

    assert main(["sql", str(H100), query, "--csv"]) == 0  # a pipe: pyarrow's writer
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows == [["name", "n"]] + [[name, str(n)] for name, n in expected]
    assert main(["sql", str(H100), "SELECT [1, 2] AS l, {'k': 'v'} AS s, NULL AS z", "--csv"]) == 0  # nested: the Python writer
    assert list(csv.reader(io.StringIO(capsys.readouterr().out))) == [["l", "s", "z"], ["[1, 2]", '{"k": "v"}', ""]]
    assert main(["sql", str(H100), query, "--md"]) == 0
    assert capsys.readouterr().out.startswith("| name | n |\n|---|---:|")
    assert main(["sql", str(H100), query]) == 0
    assert capsys.readouterr().out.rstrip().endswith("(3 rows)")


def test_text_table_shows_the_first_rows_and_counts_all():
    _, _, session = loaded(H100)
    with session.stream("SELECT name FROM kernels", batch_rows=7) as stream:
        text = output.to_text(*output.text_result(stream, limit=5))
    assert text.rstrip().endswith("(60 rows; the first 5 shown: use LIMIT, --csv or --json)")
    assert len(text.splitlines()) == 2 + 5 + 1


def test_cli_bad_sql_is_one_line_and_exit_2(capsys):
    assert main(["sql", str(H100), "SELEC name FROM kernels"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tuiprof: Parser Error:")
    assert main(["sql", str(H100), "SELECT * FROM nosuchtable"]) == 2
    assert "nosuchtable" in capsys.readouterr().err


def test_cli_without_duckdb_says_so(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "duckdb", None)
    assert main(["sql", str(H100), "SELECT 1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tuiprof[sql]" in err


def test_prompt_commands_and_statements():
    _, _, session = loaded(H100)
    script = io.StringIO(
        ".tables\n.schema kernels\nSELECT count(*) AS n\nFROM kernels;\nSELEC 1;\n.schema nosuch\n.bogus\nSELECT 42 AS answer;\n.quit\nSELECT 'never';\n"
    )
    out = io.StringIO()
    status = repl(session, stdin=script, out=out)
    text = out.getvalue()
    assert status == 2  # a statement of the script failed
    assert "kernels" in text and "collectives" in text and "analysis" in text
    assert "correlation_id" in text and "dur" in text  # .schema
    assert re.search(r"^\s*60\s*$", text, re.M)  # the two-line statement
    assert "error: Parser Error" in text and "no table named 'nosuch'" in text and "unknown command" in text
    assert "42" in text and "never" not in text


# --- docs/sql.md ---------------------------------------------------------------------------------


def test_docs_list_ten_worked_queries_and_every_table():
    assert len(WORKED) >= 10
    text = (ROOT / "docs" / "sql.md").read_text(encoding="utf-8")
    _, _, session = loaded(H100)
    for info in session.catalogue.tables():
        if not info.name.startswith("tool_stats_"):
            assert f"`{info.name}`" in text, info.name


@pytest.mark.parametrize("number", range(1, len(WORKED) + 1))
def test_worked_query_runs_and_answers(number):
    sample, sql = doc_query(number)
    _, _, session = loaded(DATA / sample)
    result = session.run(sql)
    assert result.rows, f"worked query {number} returns nothing on {sample}"
    for row in result.rows:
        for value in row:
            assert not (isinstance(value, float) and math.isnan(value))


def test_ctrl_c_cancels_the_query_not_the_session():
    """Ctrl-C (KeyboardInterrupt in the waiting thread) interrupts DuckDB; the session goes on."""
    import _thread
    import threading

    from tui_prof.query.repl import Cancelled, run_cancellable

    _, _, session = loaded(H100)
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    with pytest.raises(Cancelled):
        run_cancellable(session, lambda: session.run("SELECT count(*) FROM range(1000000000000) a, range(1000) b WHERE a.range % 7 = b.range"))
    timer.join()
    assert one(session, "SELECT count(*) FROM kernels") == (60,)


@pytest.mark.parametrize(
    "sample", ["rocprofv3_csv/rocprofv3-docs-rocm7", "rocprof_compute/analysis_db", "pftrace", "rocprofv3_summary", "legacy_rocprof"], ids=str
)
def test_every_table_of_every_format_is_queryable(sample):
    """Each format's tables reach DuckDB (several processes with other int widths, profiler
    statistics, rocprof-compute metrics, counter series), row counts as the model has them."""
    runset = load_path(str(DATA / sample))
    session = Session(Catalogue(runset))
    for info in session.catalogue.tables():
        (count,) = one(session, f'SELECT count(*) FROM "{info.name}"')
        if info.kind == "model" and info.name in ("kernels", "api", "copies", "markers", "counters", "series", "metrics"):
            assert count == sum(len(run.table(info.name)) for run in runset.runs), info.name
