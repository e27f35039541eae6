"""Open → first interactive screen of ``tuiprof open`` (issues 5 and 8), each case in its own process.

The child starts ``TuiProfApp`` headless (``App.run_test``, 160×50) and polls until the
hotspot table holds rows and the screen has been refreshed with them; the time is taken
from the child's process start (``BENCH_LAUNCH``, set by the parent just before the
spawn), so interpreter start and imports count. It then records when the measurement
table appears (``analysis.summary`` done in a background worker) and when every lazy
pane is computed, plus the event loop's stalls meanwhile, per interval between two ticks
of a 10 ms timer: the longest gap (``max_loop_stall_ms``: wall time, which the machine's
load and the workers' hold on the GIL stretch) and the most CPU the loop's own thread used
(``max_loop_cpu_ms``, ``p99_loop_cpu_ms``: ``time.thread_time``, the loop's own work; of
it the garbage collector's passes on that thread: ``max_loop_gc_ms``, and the most without
them: ``max_loop_cpu_without_gc_ms``). The intervals up to the first paint with the rows, that paint included, are reported apart
(``loading_*``), and so is the loop's CPU from the moment the rows are there to that paint
(``first_paint_loop_cpu_ms``). The parent reads the child's CPU time (user + sys) with
``os.wait4`` and notes ``os.getloadavg()`` before each case: other jobs share the 2 CPUs,
so wall times vary with the load. ``--baseline DIR`` runs each case on an earlier tree
(``git archive REV | tar -x -C DIR``) just before the same run on this one;
``--switch-ms MS`` adds a run of this tree with ``sys.setswitchinterval(MS / 1000)`` in
the child. A first open's child waits for its cache entries to be written
(``cache_written_s``; a tree that writes them while loading reports none). ``phases``: when
(s from the process start) and at what process CPU (s) the imports ended, the app's screen
was mounted (``app_running``), the load worker's ``load_runset`` and ``build_view`` started
and ended, and the first paint with the rows came. ``--bytecode`` adds, interleaved, a run
of each tree whose child reads compiled modules from a cache filled before the runs (as an
installed tuiprof does) rather than compiling every tuiprof module at each start, as a
checkout run with ``PYTHONDONTWRITEBYTECODE=1`` does (label ``..., compiled``).

Cases, on a synthetic run of N dispatches + 2N HIP calls (``python -m tui_prof.synth
OUT --format csv|rocpd --dispatches N --sync per_launch``):

* ``csv-first``: rocprofv3 CSV, empty cache directory (loads the CSVs, writes the cache);
* ``rocpd-first``: the rocpd SQLite database, empty cache directory;
* ``csv-reopen``: the CSV run again, cache filled by ``csv-first``.

    python bench/bench_open.py [--dispatches 1000000] [--data DIR] [--cases csv-first,rocpd-first,csv-reopen] [--repeat N] [--baseline DIR] [--switch-ms MS] [--bytecode]

Measured here (2026-11-26, 2-core VM, quiet: load 1.2), 1M dispatches + 2M HIP calls
(wall s to the first paint with hotspot rows / to the measurement table / to every pane;
child CPU s in total):

    case          load  first screen  measurement  all panes  child CPU  max loop stall
    csv-first     1.25  2.44 s        3.17 s       4.42 s     5.59 s     32 ms
    rocpd-first   1.18  2.80 s        3.59 s       4.78 s     6.95 s     25 ms
    csv-reopen    1.17  1.08 s        1.60 s       2.29 s     2.88 s     29 ms

Earlier figures (first session, load ≈ 5, first paint timed with ``pilot.pause()``, which
also waits up to 1 s for the process to go idle): csv-first 5.33 s, rocpd-first 10.98 s,
csv-reopen 3.92 s. See docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _measure import run_child

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
CASES = ("csv-first", "rocpd-first", "csv-reopen")


# --------------------------------------------------------------------------- child


def timed(func, before: str, after: str, mark):
    """``func`` calling ``mark(before)`` and ``mark(after)`` around each call."""

    def wrapper(*args, **kwargs):
        mark(before)
        result = func(*args, **kwargs)
        mark(after)
        return result

    return wrapper


def child(path: str, use_cache: bool) -> dict:
    """Body of the measured process: open the app, report the times as one JSON line."""
    launched = float(os.environ["BENCH_LAUNCH"])
    if os.environ.get("BENCH_SWITCH_MS"):  # --switch-ms: the interpreter's thread switch interval
        sys.setswitchinterval(float(os.environ["BENCH_SWITCH_MS"]) / 1000)
    import asyncio

    phases: dict[str, list[float]] = {}

    def mark(name: str) -> None:
        phases[name] = [round(time.time() - launched, 3), round(time.process_time(), 3)]

    # as tuiprof open does: a tree with tui_prof.tui.view.early starts the load before it
    # imports Textual and the app
    early = None
    try:
        from tui_prof.tui.view import early as early_module
    except ImportError:
        early_module = None
    if early_module is not None:
        early_module.load_runset = timed(early_module.load_runset, "load_start", "load_done", mark)
        early = early_module.EarlyLoad(path, Path(path).name, use_cache=use_cache)

    from tui_prof.tui import app as app_module
    from tui_prof.tui.app import TuiProfApp
    from tui_prof.tui.widgets.table import TableView

    imported = time.time() - launched
    # phases of the way to the first screen, (s from the process start, process CPU s), taken
    # by wrapping the load's two calls (the same names on the trees compared)
    mark("imports")

    app_module.load_runset = timed(app_module.load_runset, "load_start", "load_done", mark)
    app_module.build_view = timed(app_module.build_view, "build_view_start", "build_view_done", mark)

    import collections
    import gc
    import threading
    import traceback

    async def main() -> dict:
        app = TuiProfApp(path, use_cache=use_cache, **({"early": early} if early is not None else {}))
        out: dict = {"imports_s": imported}
        # Per interval between two ticks of a 10 ms timer: its length (the gap) and the CPU
        # the loop's thread used in it (its own work, whatever the machine's load: waits
        # for the GIL or the CPU do not count). "loading" holds the intervals up to the
        # first paint with the rows (that paint included), "after" those from then until
        # every pane is shown, while the background analyses run. sources: where the loop's
        # thread was when a watchdog found the tick more than 20 ms late (one sample per
        # 5 ms of lateness)
        # gc: the garbage collector's passes on the loop's thread, which count in its CPU
        # (``max_loop_gc_ms``: the most of it in one interval)
        stall: dict = {"last": None, "last_cpu": 0.0, "on": False, "gc": 0.0, "last_gc": 0.0, "gc_start": 0.0}
        slices: dict[str, list[tuple[float, float, float]]] = {"loading": [], "after": []}
        sources: collections.Counter = collections.Counter()
        loop_thread = threading.get_ident()

        def collecting(phase: str, info: dict) -> None:
            if threading.get_ident() == loop_thread:
                if phase == "start":
                    stall["gc_start"] = time.thread_time()
                else:
                    stall["gc"] += time.thread_time() - stall["gc_start"]

        gc.callbacks.append(collecting)

        def tick() -> None:
            now, cpu = time.perf_counter(), time.thread_time()
            if stall["last"] is not None and stall["on"] is not None:
                slices["after" if stall["on"] else "loading"].append((now - stall["last"], cpu - stall["last_cpu"], stall["gc"] - stall["last_gc"]))
            stall["last"], stall["last_cpu"], stall["last_gc"] = now, cpu, stall["gc"]

        def watchdog() -> None:
            while stall["on"] is not None:
                time.sleep(0.005)
                if stall["on"] and stall["last"] is not None and time.perf_counter() - stall["last"] > 0.02:
                    frame = sys._current_frames().get(loop_thread)
                    if frame is not None:
                        stack = [f for f in traceback.extract_stack(frame) if "tui_prof" in f.filename or "textual" in f.filename or "rich" in f.filename]
                        if stack:
                            sources[" < ".join(f"{Path(f.filename).stem}.{f.name}:{f.lineno}" for f in reversed(stack[-3:]))] += 1

        threading.Thread(target=watchdog, daemon=True).start()

        async with app.run_test(size=(160, 50)) as pilot:
            mark("app_running")  # the app's screen composed and mounted (run_test's start)
            app.set_interval(0.01, tick)
            table = app.main.query_one("#hotspot-table", TableView)
            while not (app.main.view is not None and table.row_count > 0):
                await asyncio.sleep(0.005)
                if app.main.query_one("#load-progress").display is False and app.main.view is None:
                    return {"error": "load failed"}
            # the first paint with the rows (not pilot.pause(): it also waits up to 1 s
            # for the process to go idle, and the analyses start right after the paint)
            painted = asyncio.Event()
            seen_cpu = time.thread_time()
            app.main.call_after_refresh(painted.set)
            await painted.wait()
            out["first_screen_s"] = time.time() - launched
            mark("first_paint")
            out["phases"] = phases
            # the process's CPU (every thread) from its start to that paint: what the load
            # adds to wall time much less than to the first_screen_s
            out["first_screen_cpu_s"] = round(time.process_time(), 3)
            # the loop's CPU from the poll that saw the rows to the paint (this thread)
            out["first_paint_loop_cpu_ms"] = round((time.thread_time() - seen_cpu) * 1000, 1)
            out["hotspot_rows"] = table.row_count
            out["dispatches"] = int(len(app.main.view.kernels))
            tick()  # closes the interval with the paint; the next one starts after it
            stall["on"] = True
            while "summary" not in app.main.filled:
                await asyncio.sleep(0.005)
            out["measurement_s"] = time.time() - launched
            while not app.main.complete:
                await asyncio.sleep(0.005)
            await pilot.pause()
            out["all_panes_s"] = time.time() - launched
            stall["on"] = None
            for phase, prefix in (("after", ""), ("loading", "loading_")):
                gaps = sorted(g for g, _, _ in slices[phase]) or [0.0]
                cpus = sorted(c for _, c, _ in slices[phase]) or [0.0]
                out[f"{prefix}max_loop_gc_ms"] = round(max((gc_cpu for _, _, gc_cpu in slices[phase]), default=0.0) * 1000, 1)
                out[f"{prefix}max_loop_cpu_without_gc_ms"] = round(max((c - g for _, c, g in slices[phase]), default=0.0) * 1000, 1)
                out[f"{prefix}max_loop_stall_ms"] = round(gaps[-1] * 1000, 1)
                out[f"{prefix}max_loop_cpu_ms"] = round(cpus[-1] * 1000, 1)
                out[f"{prefix}p99_loop_cpu_ms"] = round(cpus[int(0.99 * (len(cpus) - 1))] * 1000, 1)
                out[f"{prefix}ticks"] = len(slices[phase])
            out["stall_sources"] = sources.most_common(6)
            # a first open writes its cache entries after the first screen (a tree that
            # writes them while loading has no cache_written): wait for them, so the child's
            # CPU holds the write on either tree and the cache is filled for a reopen
            if use_cache and hasattr(app, "cache_written"):
                waited = time.time()
                while app.cache_written is None and time.time() - waited < 60:
                    await asyncio.sleep(0.01)
                out["cache_written_s"] = round(time.time() - launched, 3)
                out["cache_entries"] = app.cache_written
            await pilot.press("2")  # the timeline tab renders at once
            await pilot.pause()
        return out

    return asyncio.run(main())


# --------------------------------------------------------------------------- parent


def generate(data: Path, fmt: str, dispatches: int) -> Path:
    out = data / f"{fmt}-{dispatches}"
    if not (out / ".complete").exists():
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([PY, "-m", "tui_prof.synth", str(out), "--format", fmt, "--dispatches", str(dispatches), "--sync", "per_launch"], check=True, cwd=ROOT)
        (out / ".complete").write_text("ok")
    return out


def bytecode_env(prefix: Path, trees: list[Path]) -> dict:
    """The children's environment for ``--bytecode``: compiled modules read from (and
    written to) ``prefix`` (``PYTHONPYCACHEPREFIX``), as an installed tuiprof reads its
    ``.pyc`` files, instead of compiling every tuiprof module at each start (a checkout run
    with ``PYTHONDONTWRITEBYTECODE=1`` has none). Each tree is compiled, and the modules the
    first screen imports from site-packages are imported once, before any measured run."""
    env = {"PYTHONPYCACHEPREFIX": str(prefix), "PYTHONDONTWRITEBYTECODE": ""}
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | env
    for tree in trees:
        subprocess.run([PY, "-m", "compileall", "-q", str(tree / "tui_prof")], check=True, env=environment, cwd=tree)
        warm = "import tui_prof.tui.app, tui_prof.loaders.rocprofv3_csv, tui_prof.loaders.cache"
        subprocess.run([PY, "-c", warm], check=True, env=environment | {"PYTHONPATH": str(tree)}, cwd=tree)
    return env


def measure(path: Path, use_cache: bool, cache_dir: Path, tree: Path = ROOT, switch_ms: float | None = None, extra_env: dict | None = None) -> dict:
    """One child on ``tree``'s tuiprof (this file's child code, ``PYTHONPATH=tree``;
    ``switch_ms``: ``sys.setswitchinterval`` in the child, in ms, before it imports tuiprof;
    ``extra_env``: more of the child's environment, e.g. :func:`bytecode_env`)."""
    env = {"TUIPROF_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(tree), **(extra_env or {})}
    if switch_ms is not None:
        env["BENCH_SWITCH_MS"] = str(switch_ms)
    result = run_child([PY, __file__, "--child", str(path), "--use-cache", str(int(use_cache))], env=env, cwd=tree)
    result["cpu_s"] = round(result["cpu_s"], 2)
    result["peak_rss_mb"] = round(result["peak_rss_mb"])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dispatches", type=int, default=1_000_000)
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "tuiprof-bench-open"))
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--use-cache", default="1", help=argparse.SUPPRESS)
    parser.add_argument("--repeat", type=int, default=1, help="runs of each case (the figures vary with the machine's load)")
    parser.add_argument("--baseline", help="an earlier tree (git archive REV | tar -x -C DIR): each run of a case on it just before the same run on this tree")
    parser.add_argument(
        "--switch-ms",
        type=float,
        help="also run this tree with sys.setswitchinterval(MS/1000) in the child (Python's default: 5 ms), interleaved with the other runs",
    )
    parser.add_argument(
        "--bytecode",
        action="store_true",
        help="also run each tree with compiled modules read from a cache filled before the runs (as an installed tuiprof does), interleaved with the other runs",
    )
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.use_cache == "1")))
        return
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    caches = Path(tempfile.mkdtemp(prefix="tuiprof-bench-open-cache-"))
    try:
        trees_used = [ROOT] + ([Path(args.baseline).resolve()] if args.baseline else [])
        extra_env = bytecode_env(caches / "pyc", trees_used) if args.bytecode else None
        for case in args.cases.split(","):
            fmt = case.split("-")[0]
            path = generate(data, fmt, args.dispatches)
            cache = caches / fmt  # one cache directory per run
            if case.endswith("-first"):
                shutil.rmtree(cache, ignore_errors=True)
            cache.mkdir(exist_ok=True)
            if case.endswith("-reopen") and not any(cache.iterdir()):  # reopen needs a filled cache
                measure(path, True, cache)
            trees = [("baseline", Path(args.baseline).resolve())] if args.baseline else []
            runs: list[tuple[str, Path, float | None, dict | None]] = [(label, tree, None, None) for label, tree in trees]
            runs.append(("this tree", ROOT, None, None))
            if extra_env is not None:
                runs += [(f"{label}, compiled", tree, None, extra_env) for label, tree, _, _ in list(runs)]
            if args.switch_ms is not None:
                runs.append((f"this tree, switch interval {args.switch_ms:g} ms", ROOT, args.switch_ms, None))
            for repeat in range(args.repeat):
                turn = repeat % len(runs)  # each kind of run goes first in turn (the load drifts)
                for label, tree, switch_ms, env in runs[turn:] + runs[:turn]:
                    if case.endswith("-first"):
                        shutil.rmtree(cache, ignore_errors=True)
                        cache.mkdir()
                    result = measure(path, True, cache, tree, switch_ms, env)
                    print(json.dumps({"case": case, "tree": label, "dispatches": args.dispatches, **result}), flush=True)
    finally:
        shutil.rmtree(caches, ignore_errors=True)


if __name__ == "__main__":
    main()
