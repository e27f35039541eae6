"""``tuiprof sql`` benchmark (issue 38): ``SELECT name, sum(dur) ... GROUP BY name`` over a
generated run of ``--dispatches`` kernel dispatches, from a warm columnar cache.

The run (rocprofv3 CSV, ``python -m tui_prof.synth DIR --format csv --dispatches N``) is
generated once into ``--data`` and its cache warmed by a first load. Then, in one fresh
child process (figures of the same process, same table):

* ``load_s``: ``load_path`` from the warm cache (what ``tuiprof sql`` does first);
* ``first_query_s``: the first query of a new session: the kernels table converted to
  Arrow, registered, grouped (the figure ``tuiprof sql RUN "..."`` adds to the load);
* ``query_s``: the same query again on the session (median of ``--repeat``);
* reference ``pandas_s``: the same aggregation in pandas on the same table
  (``groupby(name, observed=True)`` of ``end - start``; median of ``--repeat``);
* reference ``pyarrow_s``: ``Table.group_by("name").aggregate([("dur", "sum")])`` on the
  same Arrow table (median of ``--repeat``);

and the whole command, ``tuiprof sql RUN "<query>" --csv`` in its own process
(``cli_wall_s``: interpreter start, imports, cache load, query, output). The answers of
DuckDB, pandas and pyarrow are checked to be the same, and equal to the generator's own
per-name totals (``--answers``), before any figure is printed.

    python bench/bench_sql.py [--dispatches 1000000] [--repeat 5] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _measure import run_checked

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
QUERY = "SELECT name, sum(dur) AS total_ns FROM kernels GROUP BY name"


def _median_time(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def child(path: str, repeat: int, answers: str) -> dict:
    from tui_prof.loaders import load_path
    from tui_prof.query.engine import Session
    from tui_prof.query.tables import Catalogue

    t = time.perf_counter()
    runset = load_path(path, use_cache=True)
    load_s = time.perf_counter() - t
    session = Session(Catalogue(runset))
    t = time.perf_counter()
    first = session.run(QUERY)
    first_s = time.perf_counter() - t
    query_s, again = _median_time(lambda: session.run(QUERY), repeat)
    kernels = runset.runs[0].kernels

    def pandas_sum():
        return (kernels["end"] - kernels["start"]).groupby(kernels["name"], observed=True).sum()

    pandas_s, by_pandas = _median_time(pandas_sum, repeat)
    table = session.catalogue.arrow("kernels")
    pyarrow_s, by_arrow = _median_time(lambda: table.group_by("name").aggregate([("dur", "sum")]), repeat)
    ours = dict(first.rows)
    assert ours == dict(again.rows)
    known = json.loads(Path(answers).read_text())["kernels"]  # the generator's answers, known by construction
    assert ours == {name: k["total_ns"] for name, k in known.items()}
    assert ours == {str(k): int(v) for k, v in by_pandas.items()}  # type: ignore[union-attr]
    assert ours == dict(zip(by_arrow.column("name").to_pylist(), by_arrow.column("dur_sum").to_pylist()))  # type: ignore[union-attr]
    return {
        "dispatches": sum(len(r.kernels) for r in runset.runs),
        "names": len(ours),
        "load_s": round(load_s, 4),
        "first_query_s": round(first_s, 4),
        "load_and_first_query_s": round(load_s + first_s, 4),
        "query_s": round(query_s, 4),
        "pandas_s": round(pandas_s, 4),
        "pyarrow_s": round(pyarrow_s, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dispatches", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "tuiprof-bench"))
    parser.add_argument("--child", nargs=3, metavar=("PATH", "REPEAT", "ANSWERS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), args.child[2])))
        return
    run = Path(args.data) / f"sql-csv-{args.dispatches}"
    env = {"PYTHONPATH": str(ROOT), "TUIPROF_CACHE_DIR": str(Path(args.data) / "cache")}
    answers = Path(args.data) / f"sql-csv-{args.dispatches}.answers.json"
    if not run.exists() or not answers.exists():
        argv = [PY, "-m", "tui_prof.synth", str(run), "--format", "csv", "--dispatches", str(args.dispatches), "--answers", str(answers)]
        subprocess.run(argv, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    # warm the cache (a first load writes it)
    subprocess.run([PY, "-m", "tui_prof.cli", "sql", str(run), "SELECT 1"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL, env=dict(os.environ, **env))
    figures = run_checked([PY, __file__, "--child", str(run), str(args.repeat), str(answers)], env=env, cwd=ROOT)
    cli = run_checked([PY, "-m", "tui_prof.cli", "sql", str(run), QUERY, "--csv"], env=env, cwd=ROOT)
    figures["cli_wall_s"] = round(cli["wall_s"], 3)
    print(json.dumps({k: v for k, v in figures.items() if k not in ("rc", "error")}, indent=2))


if __name__ == "__main__":
    main()
