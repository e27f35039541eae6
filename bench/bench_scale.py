"""Scale and speed benchmark (issue 8): tuiprof beside its reference, each in its own process.

Every measurement runs in a fresh subprocess; the parent records its wall time, CPU time
(user + sys) and peak RSS from ``os.wait4``. The reference of each row runs in the same
invocation, interleaved with ours, so both see the same machine load. Rows:

* ``summary-csv``: ``tuiprof summary --no-cache`` of a 1M-dispatch + 2M-HIP-call rocprofv3
  CSV run vs ``pandas.read_csv`` of every CSV file of the same run;
* ``open-csv`` / ``open-rocpd`` / ``open-pftrace`` / ``open-kineto``: ``TuiProfApp`` started
  headless (``App.run_test``) until the run is loaded and the first screen rendered,
  measured from process start (so imports count); reference: ``pandas.read_csv`` / the
  ``kernels`` view of the rocpd database read with ``pandas.read_sql``;
* ``reopen-cache``: ``load_path(use_cache=True)`` of an unchanged run vs the first open;
* ``analysis``: ``build_summary`` after the run is loaded (in-process timer);
* ``help``: ``tuiprof --help`` vs ``python -c pass``;
* ``memory``: model bytes and RSS growth per dispatch after load vs the raw column sizes;
* ``ranks``: a 64-rank directory (``<host>/<pid>_*.csv``): serial vs parallel first load;
  with the per-unit cache the first open, the reopen, the reopen after one rank's file is
  touched, ``tuiprof summary``, and the cost of the cache keys;
* ``ranks-cli``: ``tuiprof summary --json`` of the rank directory, first open (empty cache
  folder) and from the cache, interleaved with ``--no-cache`` (e.g. ``--ranks 1000
  --rank-dispatches 1000``: wall, CPU and peak RSS of the whole command).

Generated runs are kept in ``--data`` (default ``$TMPDIR/tuiprof-bench``) and reused.

    python bench/bench_scale.py [--dispatches 1000000] [--ranks 64] [--rank-dispatches 20000]
                                [--rows summary-csv,open-csv,...] [--repeat 1] [--data DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _measure import run_child

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
ALL_ROWS = ("summary-csv", "open-csv", "open-rocpd", "reopen-cache", "analysis", "help", "memory", "ranks", "ranks-cli", "open-pftrace", "open-kineto")
DEFAULT_ROWS = ("summary-csv", "open-csv", "open-rocpd", "reopen-cache", "analysis", "help", "memory", "ranks")

# --------------------------------------------------------------------------- data


def _spec(dispatches: int, pid: int, seed: int = 0):
    from tui_prof.synth import SynthSpec

    iterations = max(1, math.ceil(dispatches / 10))
    return SynthSpec(iterations=iterations, kernels_per_iteration=10, sync="per_launch", seed=seed, pid=pid)


def make_run(data: Path, fmt: str, dispatches: int) -> Path:
    """One synthetic process (``dispatches`` kernels, one hipLaunchKernel + one
    hipDeviceSynchronize each) in ``fmt``; generated once and reused."""
    from tui_prof.synth import build

    out = data / f"{fmt}-{dispatches}"
    done = out / ".complete"
    if done.exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    run = build(_spec(dispatches, 4242), hostname="synthhost")
    if fmt == "csv":
        from tui_prof.synth.write_csv import write_rocprofv3_csv

        write_rocprofv3_csv(run, out, hostname="synthhost", pid=4242)
    elif fmt == "rocpd":
        from tui_prof.synth.write_rocpd import write_rocpd

        write_rocpd(run, out / "synthhost" / "4242_results.db", hostname="synthhost")
    elif fmt == "pftrace":
        from tui_prof.synth.write_pftrace import write_pftrace

        (out / "synthhost").mkdir(exist_ok=True)
        write_pftrace(run, out / "synthhost" / "4242_results.pftrace")
    elif fmt == "kineto":
        from tui_prof.synth.write_kineto import write_kineto

        write_kineto(run, out / "synthhost_4242.pt.trace.json")
    else:
        raise ValueError(fmt)
    done.write_text(json.dumps({"dispatches": run.expected.dispatches, "kernel_total_ns": run.expected.kernel_total_ns}))
    print(f"  generated {out} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return out


def make_ranks(data: Path, ranks: int, per_rank: int, fmt: str = "csv") -> Path:
    """``ranks`` processes as ``node<NN>/<pid>_*.csv`` (8 ranks per host), rank r with
    ``per_rank`` dispatches and seed r; the answers go to ``answers.json``."""
    from tui_prof.synth import build
    from tui_prof.synth.write_csv import write_rocprofv3_csv
    from tui_prof.synth.write_rocpd import write_rocpd

    out = data / f"ranks-{fmt}-{ranks}x{per_rank}"
    done = out / ".complete"
    if done.exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    answers = {}
    for r in range(ranks):
        host, pid = f"node{r // 8:02d}", 10_000 + r
        run = build(_spec(per_rank, pid, seed=r), hostname=host)
        if fmt == "csv":
            write_rocprofv3_csv(run, out, hostname=host, pid=pid)
        else:
            write_rocpd(run, out / host / f"{pid}_results.db", hostname=host)
        answers[f"{host}/{pid}"] = {"dispatches": run.expected.dispatches, "kernel_total_ns": run.expected.kernel_total_ns}
    (out / "answers.json").write_text(json.dumps(answers))
    done.write_text("ok")
    return out


# --------------------------------------------------------------------------- workers (run in a child)

READ_CSV = """
import sys, glob, pandas as pd
n = 0
for f in sorted(glob.glob(sys.argv[1] + '/**/*.csv', recursive=True)):
    n += len(pd.read_csv(f))
print('{"rows": %d}' % n)
"""

READ_SQL = """
import sys, glob, sqlite3, pandas as pd
db = glob.glob(sys.argv[1] + '/**/*.db', recursive=True)[0]
con = sqlite3.connect(db)
frame = pd.read_sql('SELECT * FROM kernels', con)
print('{"rows": %d}' % len(frame))
"""


def worker(name: str, path: str) -> dict:
    """Body of one measured child process; returns what it reports as JSON."""
    launched = float(os.environ.get("BENCH_LAUNCH", "0")) or time.time()
    if name == "tui":
        import asyncio

        from tui_prof.tui.app import TuiProfApp
        from tui_prof.tui.widgets.table import TableView

        async def main() -> dict:
            # as bench_open.py: the first paint with hotspot rows (the analyses run after it)
            app = TuiProfApp(path)
            async with app.run_test(size=(160, 50)):
                table = app.main.query_one("#hotspot-table", TableView)
                while not (app.main.view is not None and table.row_count > 0):
                    if app.workers and all(w.is_finished for w in app.workers) and app.main.view is None:
                        return {"first_screen_s": time.time() - launched, "loaded": False}
                    await asyncio.sleep(0.005)
                painted = asyncio.Event()
                app.main.call_after_refresh(painted.set)
                await painted.wait()
                ready = time.time() - launched
            return {"first_screen_s": ready, "loaded": True}

        return asyncio.run(main())
    if name.startswith("gen-"):  # generation runs in a child so the parent stays small (see measure)
        data, _, spec = path.partition("::")
        if name == "gen-ranks":
            ranks, per_rank = (int(x) for x in spec.split(","))
            return {"path": str(make_ranks(Path(data), ranks, per_rank))}
        return {"path": str(make_run(Path(data), name[4:], int(spec)))}
    if name in ("load", "load-cache"):
        from tui_prof.loaders import load_path

        t, c = time.perf_counter(), time.process_time()
        runset = load_path(path, use_cache=name == "load-cache")
        return {
            "load_s": time.perf_counter() - t,
            "load_cpu_s": time.process_time() - c,
            "runs": len(runset.runs),
            "dispatches": int(sum(len(r.kernels) for r in runset.runs)),
            "kernel_total_ns": {f"{r.meta.hostname}/{r.meta.pid}": int((r.kernels["end"] - r.kernels["start"]).sum()) for r in runset.runs},
        }
    if name == "ranks-keys":  # where a reopen from the per-unit cache spends its time (best of 3)
        from tui_prof.loaders import cache, detect
        from tui_prof.loaders.base import IssueSink

        def timed(fn):
            times, value = [], None
            for _ in range(3):
                t = time.perf_counter()
                value = fn()
                times.append(time.perf_counter() - t)
            return min(times), value

        scan_s, detected = timed(lambda: detect.scan(Path(path), IssueSink()))
        units = detect.work_units(detected)
        hash_s, keys = timed(lambda: [cache.unit_key(fmt, files) for fmt, files in units])
        edge = cache._edge_hash
        cache._edge_hash = lambda p, size: ""  # stat only
        stat_s, _ = timed(lambda: [cache.unit_key(fmt, files) for fmt, files in units])
        cache._edge_hash = edge
        read_s, hits = timed(lambda: cache.load_many(keys))
        fragments = [run for hit in hits if hit for run in hit.runs]
        t = time.perf_counter()
        detect.assemble(fragments, IssueSink())
        return {
            "scan_s": scan_s,
            "keys_hash_s": hash_s,
            "keys_stat_s": stat_s,
            "read_s": read_s,
            "assemble_s": time.perf_counter() - t,
            "units": len(units),
            "files": len(detected),
            "hits": sum(h is not None for h in hits),
        }
    if name == "analysis":
        from tui_prof.analysis.summary import SummaryOptions, build_summary
        from tui_prof.loaders import load_path

        runset = load_path(path, use_cache=True)
        best = None
        for _ in range(3):
            t, c = time.perf_counter(), time.process_time()
            build_summary(runset, SummaryOptions(top=20))
            w, u = time.perf_counter() - t, time.process_time() - c
            best = (w, u) if best is None or w < best[0] else best
        return {"analysis_wall_s": best[0], "analysis_cpu_s": best[1], "dispatches": int(sum(len(r.kernels) for r in runset.runs))}
    if name == "memory":
        import numpy as np
        import pandas as pd

        from tui_prof.loaders import load_path
        from tui_prof.model.schema import TABLES

        def rss() -> int:
            with open("/proc/self/statm") as fh:
                return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

        from tui_prof.loaders import loader_modules

        loader_modules()  # imports done before the baseline
        import pyarrow.csv  # noqa: F401

        before = rss()
        runset = load_path(path, use_cache=False)
        import gc

        gc.collect()
        after = rss()
        run = runset.runs[0]
        n = len(run.kernels)
        kernels_bytes = int(run.kernels.memory_usage(deep=False).sum())
        model_bytes = int(sum(run.table(t).memory_usage(deep=False).sum() for t in TABLES))
        # raw: each kernel_trace column as read_csv stores it (int64, name as an 8-byte object pointer)
        raw = pd.read_csv(next(Path(path).rglob("*_kernel_trace.csv")), nrows=1000)
        raw_per_row = int(sum(8 for _ in raw.columns))
        return {
            "dispatches": n,
            "kernels_bytes_per_dispatch": kernels_bytes / n,
            "model_bytes_per_dispatch": model_bytes / n,
            "rss_growth_per_dispatch": (after - before) / n,
            "raw_kernel_columns_bytes_per_dispatch": raw_per_row,
            "raw_kernel_columns": len(raw.columns),
            "api_rows": len(run.api),
            "np": np.__version__,
        }
    raise ValueError(name)


# --------------------------------------------------------------------------- parent


def measure(argv: list[str], env: dict | None = None) -> dict:
    """Run ``argv`` in a child; wall, CPU and peak RSS of that child alone (``wait4``).

    Linux carries ``ru_maxrss`` across exec, so the parent imports nothing heavy (data is
    generated in children too): a child's peak is then its own."""
    return run_child(argv, env, cwd=ROOT)


def child(name: str, path: str) -> list[str]:
    return [PY, str(Path(__file__).resolve()), "--worker", name, path]


def cli(*args: str) -> list[str]:
    return [PY, "-m", "tui_prof.cli", *args]


def best(results: list[dict]) -> dict:
    ok = [r for r in results if r.get("rc") == 0] or results
    return min(ok, key=lambda r: r["wall_s"])


def compare(
    label: str,
    ours: list[str],
    ref: list[str],
    repeat: int,
    env: dict | None = None,
    ref_env: dict | None = None,
    ours_key: str = "wall_s",
    ref_key: str = "wall_s",
    baseline: str | None = None,
) -> dict:
    a, b, c = [], [], []
    for _ in range(repeat):  # interleaved so both sides see the same load
        a.append(measure(ours, env() if callable(env) else env))  # a callable: a fresh env per run
        b.append(measure(ref, ref_env or (env() if callable(env) else env)))
        if baseline:
            c.append(run_child(ours, {**((env() if callable(env) else env) or {}), "PYTHONPATH": baseline}, cwd=baseline))  # -m puts the cwd first
    row = {"row": label, "ours": best(a), "ref": best(b), "ours_key": ours_key, "ref_key": ref_key}
    if baseline:  # the same command on an earlier tree, interleaved with the other two
        row["base"] = best(c)
        print(f"  {label}: baseline {row['base'].get(ours_key, float('nan')):.3f} s", file=sys.stderr)
    print(f"  {label}: ours {row['ours'].get(ours_key, float('nan')):.3f} s, ref {row['ref'].get(ref_key, float('nan')):.3f} s", file=sys.stderr)
    return row


def fmt_s(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def print_table(rows: list[dict], notes: list[str]) -> None:
    print()
    print("| row | tuiprof | cpu s | peak RSS MB | reference | cpu s | peak RSS MB | ratio | baseline tree | its ratio | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        o, f, unit = r["ours"], r["ref"], r.get("unit", "s")
        ov, fv = o.get(r["ours_key"]), f.get(r["ref_key"])
        ratio = f"{ov / fv:.2f}×" if ov and fv else "-"
        rss = lambda d: f"{d['peak_rss_mb']:.0f}" if d.get("peak_rss_mb") else "-"  # noqa: E731
        bv = r.get("base", {}).get(r["ours_key"])
        base = f"{fmt_s(bv)} {unit} | {bv / fv:.2f}×" if bv and fv else "- | -"
        print(
            f"| {r['row']} | {fmt_s(ov)} {unit} | {fmt_s(o.get('cpu_s'))} | {rss(o)} | {fmt_s(fv)} {unit} | {fmt_s(f.get('cpu_s'))} | {rss(f)} | {ratio} "
            f"| {base} | {o.get('load1', '-')} |"
        )
    for n in notes:
        print(f"- {n}")


def ranks_rows(ranks: Path, count: int, per_rank: int, no_cache_env: dict, notes: list[str]) -> list[dict]:
    """The ``ranks`` rows: serial vs parallel first load; with the per-unit cache the first
    open (parse + write), a reopen, a reopen after one rank's file is touched (that rank is
    reparsed), the CLI summary; and the cost of the cache keys (``ranks-keys`` worker)."""
    answers = json.loads((ranks / "answers.json").read_text())
    rows = []
    serial = measure(child("load", str(ranks)), {**no_cache_env, "TUIPROF_LOAD_WORKERS": "1"})
    parallel = measure(child("load", str(ranks)), no_cache_env)
    rows.append(
        {"row": f"{count} ranks × {per_rank:,}: parallel load (ref: serial)", "ours": parallel, "ref": serial, "ours_key": "wall_s", "ref_key": "wall_s"}
    )
    env = {"TUIPROF_CACHE_DIR": tempfile.mkdtemp(prefix="tuiprof-bench-cache-")}
    first = measure(child("load-cache", str(ranks)), env)
    again = measure(child("load-cache", str(ranks)), env)
    rows.append(
        {"row": f"{count} ranks: reopen from cache (ref: first open + cache write)", "ours": again, "ref": first, "ours_key": "wall_s", "ref_key": "wall_s"}
    )
    touched_file = sorted(ranks.rglob("*_kernel_trace.csv"))[0]  # one rank's file, content unchanged
    stat = touched_file.stat()
    os.utime(touched_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    touched = measure(child("load-cache", str(ranks)), env)
    rows.append(
        {"row": f"{count} ranks: reopen after touching one rank's file (ref: reopen)", "ours": touched, "ref": again, "ours_key": "wall_s", "ref_key": "wall_s"}
    )
    entries = [p for p in Path(env["TUIPROF_CACHE_DIR"]).iterdir()]
    summary_ranks = measure(cli("summary", str(ranks)), env)
    rows.append(
        {
            "row": f"{count} ranks: tuiprof summary from cache (ref: --no-cache)",
            "ours": summary_ranks,
            "ref": measure(cli("summary", "--no-cache", str(ranks)), env),
            "ours_key": "wall_s",
            "ref_key": "wall_s",
        }
    )
    keys = measure(child("ranks-keys", str(ranks)), env)
    ms = lambda v: None if v is None else v * 1000  # noqa: E731
    rows.append(
        {
            "row": f"{count} ranks: cache keys, size+mtime+ctime+4 KiB edge hash (ref: without the hash)",
            "ours": {"wall_s": ms(keys.get("keys_hash_s"))},
            "ref": {"wall_s": ms(keys.get("keys_stat_s"))},
            "ours_key": "wall_s",
            "ref_key": "wall_s",
            "unit": "ms",
        }
    )
    ok = parallel.get("runs") == count and parallel.get("kernel_total_ns") == {k: v["kernel_total_ns"] for k, v in answers.items()}
    same = all(r.get("kernel_total_ns") == parallel.get("kernel_total_ns") for r in (first, again, touched))
    notes.append(
        f"ranks: {parallel.get('runs')} runs loaded, per-rank kernel totals equal the generator's: {ok}; "
        f"equal after first open / reopen / touched reopen: {same}; cache entries: {len(entries)}"
    )
    notes.append(
        "ranks load averages (1 min, before each child): "
        + ", ".join(
            f"{name} {r.get('load1')}" for name, r in (("serial", serial), ("parallel", parallel), ("first", first), ("reopen", again), ("touched", touched))
        )
    )
    notes.append(
        "ranks in-process load_s: "
        + ", ".join(f"{name} {r.get('load_s', float('nan')):.2f} s" for name, r in (("first", first), ("reopen", again), ("touched", touched)))
    )
    notes.append(
        f"ranks keys ({keys.get('units')} units, {keys.get('files')} files; best of 3, warm page cache): "
        f"scan {keys.get('scan_s', float('nan')):.3f} s, keys with edge hash {keys.get('keys_hash_s', float('nan')):.3f} s, "
        f"stat only {keys.get('keys_stat_s', float('nan')):.3f} s, reading the {keys.get('units')} entries "
        f"{keys.get('read_s', float('nan')):.3f} s, assemble {keys.get('assemble_s', float('nan')):.3f} s"
    )
    return rows


def ranks_cli_rows(ranks: Path, count: int, per_rank: int, repeat: int, notes: list[str]) -> list[dict]:
    """``tuiprof summary`` of the rank directory as a user runs it: a first open (an empty
    cache folder: every rank parsed and its entry written), then from that cache, each
    interleaved with ``--no-cache`` (best of ``repeat``); the rank table's rows are counted."""
    first, cached, plain = [], [], []
    for _ in range(repeat):
        env = first_open_env_of(count)
        first.append(measure(cli("summary", "--json", str(ranks)), env))
        cached.append(measure(cli("summary", "--json", str(ranks)), env))
        plain.append(measure(cli("summary", "--json", "--no-cache", str(ranks)), env))
        shutil.rmtree(env["TUIPROF_CACHE_DIR"], ignore_errors=True)
    rows = [
        {"row": f"{count} ranks × {per_rank:,}: tuiprof summary, first open with the cache (ref: --no-cache)", "ours": best(first), "ref": best(plain)},
        {"row": f"{count} ranks: tuiprof summary from the cache (ref: first open)", "ours": best(cached), "ref": best(first)},
    ]
    for row in rows:
        row.update(ours_key="wall_s", ref_key="wall_s")
    notes.append(
        f"ranks-cli: exit statuses {[r['rc'] for r in first + cached + plain]}; loads "
        + ", ".join(f"{r['load1']}" for r in first + cached + plain)
        + f"; all runs wall s: first {[round(r['wall_s'], 1) for r in first]}, cached {[round(r['wall_s'], 1) for r in cached]}, "
        f"no-cache {[round(r['wall_s'], 1) for r in plain]}"
    )
    return rows


def first_open_env_of(count: int) -> dict:
    """An empty cache folder of its own, large enough for ``count`` ranks' entries."""
    return {"TUIPROF_CACHE_DIR": tempfile.mkdtemp(prefix="tuiprof-bench-ranks-cli-"), "TUIPROF_CACHE_MAX_BYTES": str(64 << 30)}


def reopen_rows(csv_run: Path, n: int, repeat: int, baseline: str | None, notes: list[str]) -> list[dict]:
    """The ``reopen-cache`` rows: ``load_path`` from a warm cache (and, with ``baseline``, the
    earlier tree's, interleaved, each tree with its own cache folder), then the CLI summary."""
    rows: list[dict] = []
    env = {"TUIPROF_CACHE_DIR": tempfile.mkdtemp(prefix="tuiprof-bench-cache-")}
    first = measure(child("load-cache", str(csv_run)), env)  # writes the entry
    base_env = {"TUIPROF_CACHE_DIR": tempfile.mkdtemp(prefix="tuiprof-bench-cache-"), "PYTHONPATH": baseline or ""}
    if baseline:  # the earlier tree's own entry (its cache format may differ)
        run_child(child("load-cache", str(csv_run)), base_env, cwd=baseline)
    reopen, base_reopen = [], []
    for _ in range(max(repeat, 2)):  # interleaved: both trees see the same load
        reopen.append(measure(child("load-cache", str(csv_run)), env))
        if baseline:
            base_reopen.append(run_child(child("load-cache", str(csv_run)), base_env, cwd=baseline))
    row = {"row": f"reopen from cache, CSV {n:,} (load_path)", "ours": best(reopen), "ref": first, "ours_key": "load_s", "ref_key": "load_s"}
    for name, runs in (("ours", reopen), ("baseline", base_reopen)):
        if runs:
            times = sorted(r.get("load_s", float("nan")) for r in runs)
            cpu = sorted(r.get("load_cpu_s", float("nan")) for r in runs)
            loads = [r.get("load1") for r in runs]
            print(
                f"  reopen-cache {name}: load_path {', '.join(f'{t:.3f}' for t in times)} s (median {times[len(times) // 2]:.3f}; "
                f"CPU median {cpu[len(cpu) // 2]:.3f} s); load1 {loads}",
                file=sys.stderr,
            )
    if base_reopen:
        row["base"] = best(base_reopen)
    rows.append(row)
    cli_reopen = [measure(cli("summary", str(csv_run)), env) for _ in range(max(repeat, 2))]
    rows.append(
        {
            "row": f"tuiprof summary from cache, CSV {n:,}",
            "ours": best(cli_reopen),
            "ref": measure(cli("summary", "--no-cache", str(csv_run)), env),
            "ours_key": "wall_s",
            "ref_key": "wall_s",
        }
    )
    notes.append("reopen rows: reference = the first open (which also writes the cache entry)")
    for folder in (env["TUIPROF_CACHE_DIR"], base_env["TUIPROF_CACHE_DIR"]):  # 1M-dispatch entries: hundreds of MB
        shutil.rmtree(folder, ignore_errors=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=2, metavar=("NAME", "PATH"), help=argparse.SUPPRESS)
    parser.add_argument("--dispatches", type=int, default=1_000_000)
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--rank-dispatches", type=int, default=20_000)
    parser.add_argument("--rows", default=",".join(DEFAULT_ROWS), help=f"comma list of {', '.join(ALL_ROWS)}")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "tuiprof-bench"))
    parser.add_argument(
        "--baseline", help="PYTHONPATH of an earlier tree (git archive REV | tar -x -C DIR): its summary-csv, reopen-cache and help run interleaved too"
    )
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker)))
        return 0

    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    wanted = [r.strip() for r in args.rows.split(",") if r.strip()]
    cache_dir = tempfile.mkdtemp(prefix="tuiprof-bench-cache-")
    no_cache_env = {"TUIPROF_CACHE_DIR": cache_dir}
    first_open_root = tempfile.mkdtemp(prefix="tuiprof-bench-first-open-")

    def first_open_env() -> dict:
        """An empty cache folder of its own, so every measured open is a first open."""
        return {"TUIPROF_CACHE_DIR": tempfile.mkdtemp(dir=first_open_root)}

    rows, notes = [], []
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]}", file=sys.stderr)
    n = args.dispatches

    def generate(kind: str, spec: str) -> Path:
        r = measure(child(f"gen-{kind}", f"{data}::{spec}"))
        if r.get("rc") != 0 or "path" not in r:
            raise SystemExit(f"generation of {kind} failed: {r.get('error')}")
        return Path(r["path"])

    csv_run = generate("csv", str(n)) if {"summary-csv", "open-csv", "reopen-cache", "analysis", "memory"} & set(wanted) else None
    if "summary-csv" in wanted:
        rows.append(
            compare(
                f"summary --no-cache, CSV {n:,} dispatches",
                cli("summary", "--no-cache", str(csv_run)),
                [PY, "-c", READ_CSV, str(csv_run)],
                args.repeat,
                no_cache_env,
                baseline=args.baseline,
            )
        )
        leftover = list(Path(cache_dir).iterdir())
        notes.append(f"--no-cache left {len(leftover)} entries in the cache folder")
    if "open-csv" in wanted:
        rows.append(
            compare(
                f"open → first screen, CSV {n:,}",
                child("tui", str(csv_run)),
                [PY, "-c", READ_CSV, str(csv_run)],
                args.repeat,
                first_open_env,
                ours_key="first_screen_s",
            )
        )
    if "open-rocpd" in wanted:
        db_run = generate("rocpd", str(n))
        rows.append(
            compare(
                f"open → first screen, rocpd {n:,}",
                child("tui", str(db_run)),
                [PY, "-c", READ_SQL, str(db_run)],
                args.repeat,
                first_open_env,
                ours_key="first_screen_s",
            )
        )
    for fmt in ("pftrace", "kineto"):
        if f"open-{fmt}" in wanted:
            path = generate(fmt, str(n))
            rows.append(
                compare(
                    f"open → first screen, {fmt} {n:,}",
                    child("tui", str(path)),
                    child("load", str(path)),
                    args.repeat,
                    first_open_env,
                    ours_key="first_screen_s",
                    ref_key="wall_s",
                )
            )
            notes.append(f"open-{fmt}: reference column is our own load_path in a child; the reference tools are measured by bench/bench_{fmt}.py")
    if "reopen-cache" in wanted:
        rows += reopen_rows(csv_run, n, args.repeat, args.baseline, notes)
    if "analysis" in wanted:
        env = {"TUIPROF_CACHE_DIR": tempfile.mkdtemp(prefix="tuiprof-bench-cache-")}
        measure(child("load-cache", str(csv_run)), env)
        r = measure(child("analysis", str(csv_run)), env)
        rows.append(
            {
                "row": f"summary analysis after load, {n:,} (best of 3, in-process; ref column: its CPU time)",
                "ours": {"wall_s": r.get("analysis_wall_s")},
                "ref": {"wall_s": r.get("analysis_cpu_s")},
                "ours_key": "wall_s",
                "ref_key": "wall_s",
            }
        )
    if "help" in wanted:
        rows.append(compare("tuiprof --help", cli("--help"), [PY, "-c", "pass"], max(args.repeat, 3), baseline=args.baseline))
    if "memory" in wanted:
        m = measure(child("memory", str(csv_run)), no_cache_env)
        rows.append(
            {
                "row": "bytes per dispatch after load: kernels table (ref: raw kernel_trace columns × 8 B)",
                "ours": {"wall_s": m.get("kernels_bytes_per_dispatch")},
                "unit": "B",
                "ref": {"wall_s": m.get("raw_kernel_columns_bytes_per_dispatch")},
                "ours_key": "wall_s",
                "ref_key": "wall_s",
            }
        )
        notes.append(
            f"memory: kernels table {m.get('kernels_bytes_per_dispatch', 0):.0f} B/dispatch, all tables "
            f"{m.get('model_bytes_per_dispatch', 0):.0f} B/dispatch (incl. {m.get('api_rows', 0):,} API rows), "
            f"RSS growth after load {m.get('rss_growth_per_dispatch', 0):.0f} B/dispatch, peak RSS of the load "
            f"{m.get('peak_rss_mb', 0):.0f} MB; raw kernel_trace: {m.get('raw_kernel_columns')} columns × 8 B "
            ""
        )
    if "ranks" in wanted:
        rows += ranks_rows(generate("ranks", f"{args.ranks},{args.rank_dispatches}"), args.ranks, args.rank_dispatches, no_cache_env, notes)
    if "ranks-cli" in wanted:
        rows += ranks_cli_rows(generate("ranks", f"{args.ranks},{args.rank_dispatches}"), args.ranks, args.rank_dispatches, args.repeat, notes)
    print_table(rows, notes)
    shutil.rmtree(first_open_root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
