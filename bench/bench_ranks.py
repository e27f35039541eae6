"""Rank analysis at scale (issue 14): the rank table, communication and stragglers
(analysis.ranks.ranks_sections) and the whole summary of a generated multi-rank run,
in-process timers after the run is built (tui_prof.synth.ranks: one GPU per rank,
``compute_kernels`` compute kernels and one AllReduce per step).

    python bench/bench_ranks.py [--ranks 64] [--dispatches 20000] [--repeat 2]

``--tui N`` measures the TUI instead, each case in a child process of its own, N rounds
interleaved (best of N reported, with the 1-minute load average before each child and
the child's CPU seconds):

* ``first open``: ``TuiProfApp`` on the generated run written as rocprofv3 CSV (one
  process group per rank), an empty cache folder (so the cache entries are written too);
* ``cached``: the same with the cache folder the round's first open filled;
* ``in memory``: ``TuiProfApp`` on the built RunSet (built in the child before the app);
* ``reference``: ``python -c "import tui_prof.tui.app"`` (the interpreter and imports alone).

With ``--baseline DIR`` (another checkout, e.g. ``git archive main | tar -x -C
/tmp/ro-base``) the first-open and cached cases run as well with DIR's ``tui_prof`` (the same
child code, ``BENCH_ROOT``; a cache folder of their own), interleaved with this tree's.

Each child reports, in seconds from the process's start (``BENCH_LAUNCH``: the
interpreter and imports count), ``screen_s`` the rank screen with a row per rank (pending
rows "…" included), ``rows_s`` the first loaded rank's row on screen, ``table_s``
every rank's row with the waits and the straggler, ``view_s`` the first full screen
(hotspots), ``all_s`` every lazy pane computed, with the process's CPU seconds at the
first two; and per phase (``loading``: rank rows shown, the rest loading; ``first
screen``: the full screen being laid out; ``background``: the lazy panes computing) the
longest gap between ticks of a 5 ms timer and the most CPU the loop's thread used between
two ticks (bench/bench_open.py's method), with where the loop's thread was when a tick was
more than 20 ms late in the background phase. The rank table's figures are checked
against the generator's (wait and compute per rank).

    python bench/bench_ranks.py --tui 3 [--ranks 64] [--dispatches 20000] [--data DIR] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import resource
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

# BENCH_ROOT: the tree whose tui_prof a child imports (--baseline runs the same child code
# against another checkout)
sys.path.insert(0, os.environ.get("BENCH_ROOT") or str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

PER_STEP = 10  # 9 compute kernels + 1 AllReduce
PENDING_RANK = 1 << 31  # tui.view.rankrows.PENDING_RANK: a rank still loading (not imported: a baseline tree may lack it)


def spec_of(ranks: int, dispatches: int):
    from tui_prof.synth.ranks import RankSpec

    return RankSpec(ranks=ranks, iterations=max(1, dispatches // PER_STEP), compute_kernels=PER_STEP - 1, slow_rank=1, slow_pct=20)


def analysis_bench(args) -> None:
    from tui_prof.analysis import ranks, runinput
    from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES
    from tui_prof.analysis.summary import SummaryOptions, build_summary
    from tui_prof.synth.ranks import build_ranks

    t = time.perf_counter()
    built = build_ranks(spec_of(args.ranks, args.dispatches))
    gen_s = time.perf_counter() - t
    runset = built.runset()
    inputs = runinput.run_inputs(runset)
    rows = []
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        table, comm, strag = ranks.ranks_sections(
            [r.run for r in inputs], [r.label for r in inputs], [r.wall_ns for r in inputs], [r.index.classes for r in inputs], DEFAULT_CATEGORY_RULES
        )
        rows.append({"ranks_sections_s": round(time.perf_counter() - t0, 3), "cpu_s": round(time.process_time() - c0, 3)})
    t0 = time.perf_counter()
    doc = build_summary(runset, SummaryOptions(logs=False))
    summary_s = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "ranks": args.ranks,
                "dispatches_per_rank": len(runset.runs[0].kernels),
                "generate_s": round(gen_s, 1),
                "ranks_sections": rows,
                "build_summary_s": round(summary_s, 2),
                "straggler": strag["rank"],
                "instances": strag["instances"],
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                "rank_rows": len(doc["ranks"]),
                "comm_by_type": [(c["type"], c["count"]) for c in comm["by_type"]],
                "table_rows": len(table),
            }
        )
    )


# --------------------------------------------------------------------------- TUI (in a child)


def tui_child(source: str, ranks: int, dispatches: int, stop_at_view: bool = False) -> dict:
    """Open the app headless on ``source`` (a run directory, or "memory": the built run
    set) and time its stages from the process start."""
    launch = float(os.environ.get("BENCH_LAUNCH", time.time()))
    from tui_prof.tui.app import TuiProfApp
    from tui_prof.tui.panes.ranks import RanksPane

    if source == "memory":
        from tui_prof.synth.ranks import build_ranks  # only here: a run directory's open imports what tuiprof open does

        built = build_ranks(spec_of(ranks, dispatches))
        app_source: object = built.runset()
        expected = {"wait_ns": built.expected.wait_by_rank, "compute_ns": built.expected.compute_ns}
    else:
        app_source = source
        expected = json.loads((Path(source).parent / "answers.json").read_text())
    out: dict = {"app_start_s": time.time() - launch, "app_start_cpu_s": time.process_time()}
    tick: dict = {"last": None, "cpu": 0.0, "phase": None}
    worst: dict[str, list[float]] = {}
    sources: collections.Counter = collections.Counter()
    loop_thread = threading.get_ident()

    def on_tick() -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        phase = tick["phase"]
        if tick["last"] is not None and phase:
            w = worst.setdefault(phase, [0.0, 0.0])
            w[0], w[1] = max(w[0], now - tick["last"]), max(w[1], cpu - tick["cpu"])
        tick["last"], tick["cpu"] = now, cpu

    def watchdog() -> None:
        while tick["phase"] != "done":
            time.sleep(0.005)
            if tick["phase"] == "background" and tick["last"] is not None and time.perf_counter() - tick["last"] > 0.02:
                frame = sys._current_frames().get(loop_thread)
                if frame is not None:
                    stack = [f for f in traceback.extract_stack(frame) if "tui_prof" in f.filename or "textual" in f.filename]
                    if stack:
                        sources[" < ".join(f"{Path(f.filename).stem}.{f.name}:{f.lineno}" for f in reversed(stack[-3:]))] += 1

    def painted() -> None:
        out["painted_s"] = time.time() - launch
        tick["phase"] = "background"

    async def main() -> None:
        app = TuiProfApp(app_source, use_cache=source != "memory")  # type: ignore[arg-type]
        threading.Thread(target=watchdog, daemon=True).start()
        async with app.run_test(size=(160, 50)) as pilot:
            app.set_interval(0.005, on_tick)
            pane = app.main.query_one(RanksPane)
            tabs = app.main.query_one("#tabs")
            for _ in range(40_000):
                await asyncio.sleep(0.005)
                now = time.time()
                if "screen_s" not in out and tabs.display and pane.table.row_count:
                    out["screen_s"], out["screen_cpu_s"], out["screen_rows"] = now - launch, time.process_time(), pane.table.row_count
                    out["screen_tab"] = tabs.active
                    tick["phase"] = "loading"
                if "rows_s" not in out and pane.table.row_count and bool((pane.table.model.frame["rank"] != PENDING_RANK).any()):
                    out["rows_s"], out["rows_cpu_s"], out["rows_at_first"] = now - launch, time.process_time(), pane.table.row_count
                if "table_s" not in out and pane.final:
                    out["table_s"], out["table_cpu_s"] = now - launch, time.process_time()
                if "view_s" not in out and app.main.view is not None:
                    out["view_s"] = now - launch
                    tick["phase"] = "first screen"
                    app.main.call_after_refresh(painted)
                if app.main.complete:
                    out["all_s"] = now - launch
                    break
                if stop_at_view and "view_s" in out and "table_s" in out:
                    break
            await pilot.pause()
            tick["phase"] = "done"
            frame = pane.table.model.frame
            out["rows"] = len(frame)
            out["numbers_ok"] = bool(frame["wait_ns"].tolist() == expected["wait_ns"] and frame["compute_ns"].tolist() == expected["compute_ns"])
            out["active_tab"] = app.main.query_one("#tabs").active

    asyncio.run(main())
    out["stall_ms"] = {phase: [round(w[0] * 1000, 1), round(w[1] * 1000, 1)] for phase, w in worst.items()}
    out["stall_sources"] = sources.most_common(5)
    return out


def write_run(data: Path, ranks: int, dispatches: int) -> Path:
    """The generated run as rocprofv3 CSV under ``data`` (reused), its answers beside it."""
    from tui_prof.synth.ranks import build_ranks, write_ranks

    out = data / f"synth-ranks-{ranks}x{dispatches}"
    if (out / ".complete").exists():
        return out / "run"
    out.mkdir(parents=True, exist_ok=True)
    built = build_ranks(spec_of(ranks, dispatches))
    write_ranks(built, out / "run", "csv")
    (out / "answers.json").write_text(json.dumps({"wait_ns": built.expected.wait_by_rank, "compute_ns": built.expected.compute_ns}))
    (out / ".complete").write_text("ok")
    return out / "run"


def tui_bench(args) -> None:
    from _measure import run_checked, run_child

    me = [sys.executable, str(Path(__file__).resolve())]
    sizes = ["--ranks", str(args.ranks), "--dispatches", str(args.dispatches)]
    run = Path(run_checked([*me, "--write", args.data, *sizes])["path"])
    if args.stop_at_view:
        sizes.append("--stop-at-view")
    caches = Path(tempfile.mkdtemp(prefix="tuiprof-bench-ranks-"))
    cases: dict[str, list[dict]] = {"first open": [], "cached": []}
    base_env: dict[str, str] = {}
    if args.baseline:
        base = str(Path(args.baseline).resolve())
        base_env = {"BENCH_ROOT": base, "PYTHONPATH": base}
        cases.update({"baseline first open": [], "baseline cached": []})
    cases.update({"in memory": [], "reference": []})
    root = str(Path(__file__).resolve().parents[1])
    for i in range(args.tui):  # interleaved: every case sees the same load
        cache = {"TUIPROF_CACHE_DIR": str(caches / f"c{i}")}
        cases["first open"].append(run_child([*me, "--child", str(run), *sizes], cache))
        cases["cached"].append(run_child([*me, "--child", str(run), *sizes], cache))
        if args.baseline:
            base_cache = {"TUIPROF_CACHE_DIR": str(caches / f"b{i}"), **base_env}
            cases["baseline first open"].append(run_child([*me, "--child", str(run), *sizes], base_cache))
            cases["baseline cached"].append(run_child([*me, "--child", str(run), *sizes], base_cache))
        if not args.no_memory:
            cases["in memory"].append(run_child([*me, "--child", "memory", *sizes], cache))
        cases["reference"].append(run_child([sys.executable, "-c", "import tui_prof.tui.app"], {"PYTHONPATH": root}))
        print(f"  round {i + 1} done, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    print(f"{args.ranks} ranks × {args.dispatches:,} dispatches, {os.cpu_count()} CPUs; best of {args.tui} by time to the rank screen")
    print(
        "| case | rank screen (CPU s) | first rank loaded (CPU s) | rank table (CPU s) | first full screen | all panes | process wall | CPU s | "
        "peak RSS MiB | numbers | load |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for name, results in cases.items():
        ok = [r for r in results if r.get("rc") == 0]
        if not ok:
            if results:
                print(f"| {name} | failed: {results[0].get('error')} |")
            continue
        best = min(ok, key=lambda r: r.get("screen_s", r["wall_s"]))
        s = lambda key, b=best: f"{b[key]:.2f} s" if key in b else "-"  # noqa: E731
        c = lambda key, b=best: f" ({b[key]:.2f})" if key in b else ""  # noqa: E731
        print(
            f"| {name} | {s('screen_s')}{c('screen_cpu_s')} | {s('rows_s')}{c('rows_cpu_s')} | {s('table_s')}{c('table_cpu_s')} | {s('view_s')} | "
            f"{s('all_s')} | {best['wall_s']:.2f} s | {best['cpu_s']:.2f} | {best['peak_rss_mb']:.0f} | {best.get('numbers_ok', '-')} | {best['load1']} |"
        )
    for r in cases["in memory"]:
        if r.get("rc") == 0 and "rows_s" in r:  # the generator ran in the child first: times from the app's start
            start, cpu = r["app_start_s"], r["app_start_cpu_s"]
            print(
                f"| in memory, from the app's start | {r['screen_s'] - start:.2f} s ({r['screen_cpu_s'] - cpu:.2f}) | "
                f"{r['rows_s'] - start:.2f} s ({r['rows_cpu_s'] - cpu:.2f}) | "
                f"{r['table_s'] - start:.2f} s ({r['table_cpu_s'] - cpu:.2f}) | {r['view_s'] - start:.2f} s | {r['all_s'] - start:.2f} s | | | | | {r['load1']} |"
            )
    print()
    print(
        "every run: load; seconds to the rank screen (its rows: N pending) / the first loaded rank / the table; "
        "per phase the longest tick gap and the loop thread's CPU in it (ms); late-tick sources"
    )
    for name, results in cases.items():
        for r in results:
            if r.get("rc") == 0 and "stall_ms" in r:
                print(
                    f"- {name}, load {r['load1']}: screen {r.get('screen_s', 0):.2f} s ({r.get('screen_rows')} rows, tab {r.get('screen_tab')}), "
                    f"rows {r.get('rows_s', 0):.2f} s, table {r.get('table_s', 0):.2f} s, stalls {r['stall_ms']}, sources {r['stall_sources'][:3]}"
                )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--dispatches", type=int, default=20_000, help="per rank")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--tui", type=int, default=0, help="measure the TUI: this many interleaved rounds")
    ap.add_argument("--no-memory", action="store_true", help="--tui without the in-memory case")
    ap.add_argument("--stop-at-view", action="store_true", help="--tui: end each child at the first full screen (no 'all panes')")
    ap.add_argument("--baseline", help="--tui: also open the run with this checkout's tui_prof (e.g. main), interleaved")
    ap.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "tuiprof-bench"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--write", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(tui_child(args.child, args.ranks, args.dispatches, args.stop_at_view)))
    elif args.write:
        print(json.dumps({"path": str(write_run(Path(args.write), args.ranks, args.dispatches))}))
    elif args.tui:
        tui_bench(args)
    else:
        analysis_bench(args)


if __name__ == "__main__":
    main()
