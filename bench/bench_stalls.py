"""Event-loop stalls of the TUI on a run of many ranks (issue 18), and what the loop's
thread was doing in them.

Each child opens ``TuiProfApp`` headless (160×50) on the generated 64-rank run of
``bench/bench_ranks.py`` (rocprofv3 CSV, one process group per rank) and ticks a 5 ms
timer; per interval between two ticks it keeps the wall gap and the CPU the loop's thread
used (``time.thread_time``: waiting for the CPU or the GIL does not count). A sampler
thread takes the loop thread's stack every 2 ms; for each interval with more than
``--worst-ms`` of loop CPU it reports the interval's phase, gap, CPU and the code its
samples were in (tuiprof and Textual frames: outermost two, innermost two). ``--gil-ms MS``
reports the intervals whose wall gap is longer than MS while the loop's CPU is not (the
loop waited for the GIL): where the other threads were each time the sampler itself had
waited more than MS for the GIL (the statement right after a long hold), and the
collector's passes longer than MS with the thread that ran them.

Phases as in bench_ranks.py: ``loading`` (rank rows on screen, the rest loading), ``first
screen`` (run view set, until painted), ``background`` (until every lazy part is shown).
Cases: ``first`` (an empty cache folder) and ``cached`` (the folder the round's first open
filled). ``--baseline DIR`` runs each child on an earlier tree (``git archive REV | tar -x
-C DIR``) just before the same child on this tree, same code, interleaved.

    python bench/bench_stalls.py [--data DIR] [--repeat N] [--cases first,cached] [--baseline DIR] [--gil-ms MS]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import cProfile
import gc
import json
import os
import pstats
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

GENERIC = {
    "_dispatch_message",
    "_process_messages",
    "_process_messages_loop",
    "_pre_process",
    "_on_message",
    "on_event",
    "_invoke",
    "invoke",
    "_dispatch",
    "_on_timer",
    "_run",
    "_tick",
    "_flush_next_callbacks",
    "_run_callback",
    "run_callback",
    "process_callbacks",
    "__call__",
    "<lambda>",
    "_post_message",
    "post_message",
}


def stack_label(frame) -> str:
    """Outermost two and innermost two tuiprof/Textual frames of ``frame``'s stack."""
    names = []
    while frame is not None:
        code = frame.f_code
        if ("tui_prof" in code.co_filename or "textual" in code.co_filename) and code.co_name not in GENERIC:
            names.append(f"{Path(code.co_filename).stem}.{code.co_name}")
        frame = frame.f_back
    names.reverse()
    if not names:
        return "(asyncio/other)"
    picked = names[:2] + (["…"] if len(names) > 4 else []) + names[-2:] if len(names) > 4 else names
    return " > ".join(picked)


def line_label(frame) -> str:
    """Outermost and innermost tuiprof frames of ``frame``'s stack, the innermost with its
    line (the statement a thread was at when it let the GIL go)."""
    found = []
    while frame is not None:
        if "tui_prof" in frame.f_code.co_filename:
            found.append(frame)
        frame = frame.f_back
    if not found:
        return "(not tuiprof)"
    inner, outer = found[0], found[-1]
    label = f"{Path(inner.f_code.co_filename).stem}.{inner.f_code.co_name}:{inner.f_lineno}"
    return label if inner is outer else f"{Path(outer.f_code.co_filename).stem}.{outer.f_code.co_name} > {label}"


def top_calls(prof) -> list:
    """The tuiprof and Textual functions with the most cumulative time in ``prof`` (ms)."""
    stats = pstats.Stats(prof).stats  # type: ignore[attr-defined]
    rows = []
    for (filename, _, name), (_, _, _, cum, _) in stats.items():
        if ("tui_prof" in filename or "textual" in filename) and name not in GENERIC:
            rows.append((round(cum * 1e3, 1), f"{Path(filename).stem}.{name}"))
    rows.sort(reverse=True)
    return rows[:14]


def child(run: str, worst_ms: float, profile: bool, gil_ms: float) -> dict:
    from tui_prof.tui.app import TuiProfApp
    from tui_prof.tui.panes.ranks import RanksPane

    loop_thread = threading.get_ident()
    state: dict = {"last": None, "cpu": 0.0, "phase": None, "interval": 0, "done": False}
    samples: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    # per interval: where the other threads were when the sampler got the GIL back after
    # waiting more than gil_ms for it (ms waited, summed per place)
    held: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
    # per interval: the collector's passes longer than gil_ms (thread, generation, ms): a pass
    # holds the GIL whichever thread's allocation started it
    passes: dict[int, list] = collections.defaultdict(list)
    gc_start: dict[int, float] = {}

    def on_gc(phase: str, info: dict) -> None:
        ident = threading.get_ident()
        if phase == "start":
            gc_start[ident] = time.perf_counter()
        elif ident in gc_start:
            ms = (time.perf_counter() - gc_start.pop(ident)) * 1e3
            if gil_ms and ms > gil_ms:
                name = "loop" if ident == loop_thread else threading.current_thread().name
                passes[state["interval"]].append((name, info.get("generation"), round(ms, 1)))

    gc.callbacks.append(on_gc)
    intervals: list[dict] = []

    profiles: dict[int, list] = {}
    prof: list = [None]

    def on_tick() -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        if prof[0] is not None:
            prof[0].disable()
        if state["last"] is not None and state["phase"]:
            intervals.append({"i": state["interval"], "phase": state["phase"], "gap_ms": (now - state["last"]) * 1e3, "cpu_ms": (cpu - state["cpu"]) * 1e3})
            if profile and prof[0] is not None and (cpu - state["cpu"]) * 1e3 > worst_ms:
                profiles[state["interval"]] = top_calls(prof[0])
        state["interval"] += 1
        if profile:
            prof[0] = cProfile.Profile()
            prof[0].enable()
        state["last"], state["cpu"] = time.perf_counter(), time.thread_time()

    def sampler() -> None:
        me = threading.get_ident()
        while not state["done"]:
            asleep = time.perf_counter()
            time.sleep(0.002)
            waited_ms = (time.perf_counter() - asleep) * 1e3 - 2.0
            if state["phase"] in (None, "done"):
                continue
            frames = sys._current_frames()
            if gil_ms and waited_ms > gil_ms:
                for ident, other in frames.items():
                    if ident not in (me, loop_thread):
                        label = line_label(other)
                        if label != "(not tuiprof)":
                            held[state["interval"]][label] += round(waited_ms)
            frame = frames.get(loop_thread)
            if frame is not None:
                samples[state["interval"]][stack_label(frame)] += 1

    out: dict = {}

    def painted() -> None:
        state["phase"] = "background"

    async def main() -> None:
        app = TuiProfApp(run, use_cache=True)
        threading.Thread(target=sampler, daemon=True).start()
        async with app.run_test(size=(160, 50)) as pilot:
            app.set_interval(0.005, on_tick)
            pane = app.main.query_one(RanksPane)
            t0 = time.perf_counter()
            for _ in range(40_000):
                await asyncio.sleep(0.005)
                if state["phase"] is None and app.main.query_one("#tabs").display and pane.table.row_count:
                    state["phase"] = "loading"
                if state["phase"] in (None, "loading") and app.main.view is not None:
                    state["phase"] = "first screen"
                    app.main.call_after_refresh(painted)
                if app.main.complete:
                    break
            await pilot.pause()
            state["phase"] = "done"
            out["all_s"] = round(time.perf_counter() - t0, 2)
            out["ranks_rows"] = pane.table.row_count
            out["steps_rows"] = app.main.query_one("#steps-table").row_count

    asyncio.run(main())
    state["done"] = True
    worst: dict[str, list[float]] = {}
    for iv in intervals:
        w = worst.setdefault(iv["phase"], [0.0, 0.0])
        w[0], w[1] = max(w[0], iv["gap_ms"]), max(w[1], iv["cpu_ms"])
    out["stall_ms"] = {p: [round(a, 1), round(b, 1)] for p, (a, b) in worst.items()}
    out["long"] = [
        {
            "phase": iv["phase"],
            "gap_ms": round(iv["gap_ms"], 1),
            "cpu_ms": round(iv["cpu_ms"], 1),
            "where": profiles.get(iv["i"]) or samples.get(iv["i"], collections.Counter()).most_common(4),
        }
        for iv in intervals
        if iv["cpu_ms"] > worst_ms
    ]
    out["gil"] = [
        {
            "phase": iv["phase"],
            "gap_ms": round(iv["gap_ms"], 1),
            "cpu_ms": round(iv["cpu_ms"], 1),
            "held": held[iv["i"]].most_common(3),
            "gc": passes.get(iv["i"], []),
        }
        for iv in intervals
        if gil_ms and iv["gap_ms"] > gil_ms and iv["cpu_ms"] <= worst_ms
    ]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "tuiprof-bench"))
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--dispatches", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--cases", default="first,cached")
    ap.add_argument("--baseline", help="an earlier tree: each child on it just before the same child on this tree")
    ap.add_argument("--worst-ms", type=float, default=25.0, help="report the intervals with more loop CPU than this")
    ap.add_argument("--profile", action="store_true", help="cProfile the loop's thread per interval (slower: for where, not how long)")
    ap.add_argument(
        "--gil-ms",
        type=float,
        default=0.0,
        help="also report the intervals with a longer wall gap than this but little loop CPU, and where the other threads were when the GIL came back",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.worst_ms, args.profile, args.gil_ms)))
        return
    here = Path(__file__).resolve()
    root = here.parents[1]
    run = json.loads(
        subprocess.run(
            [sys.executable, str(here.parent / "bench_ranks.py"), "--write", args.data, "--ranks", str(args.ranks), "--dispatches", str(args.dispatches)],
            check=True,
            capture_output=True,
            text=True,
            env=dict(os.environ, PYTHONPATH=str(root)),
        ).stdout.splitlines()[-1]
    )["path"]
    trees = ([("baseline", Path(args.baseline).resolve())] if args.baseline else []) + [("this tree", root)]
    caches = Path(tempfile.mkdtemp(prefix="tuiprof-bench-stalls-"))
    cases = args.cases.split(",")
    print(f"{args.ranks} ranks × {args.dispatches:,} dispatches, {os.cpu_count()} CPUs; run {run}")
    for r in range(args.repeat):
        for name, tree in trees:
            cache = caches / f"{name.replace(' ', '-')}-{r}"
            for case in cases:
                if case == "cached" and not cache.exists():
                    continue
                load = os.getloadavg()[0]
                env = dict(os.environ, PYTHONPATH=str(tree), TUIPROF_CACHE_DIR=str(cache))
                proc = subprocess.run(
                    [
                        sys.executable,
                        str(here),
                        "--child",
                        run,
                        "--worst-ms",
                        str(args.worst_ms),
                        "--gil-ms",
                        str(args.gil_ms),
                        *(["--profile"] if args.profile else []),
                    ],
                    capture_output=True,
                    text=True,
                    env=env,
                )
                if proc.returncode:
                    print(f"- round {r + 1} {name} {case}: failed: {proc.stderr.strip().splitlines()[-1:]}")
                    continue
                res = json.loads(proc.stdout.strip().splitlines()[-1])
                print(f"- round {r + 1} {name} {case}, load {load:.2f}: all panes {res['all_s']} s, stalls [gap, loop CPU] ms {res['stall_ms']}")
                for iv in res["long"]:
                    print(f"    {iv['phase']}: gap {iv['gap_ms']} cpu {iv['cpu_ms']}: {iv['where']}")
                for iv in res["gil"]:
                    print(f"    {iv['phase']}: gap {iv['gap_ms']} cpu {iv['cpu_ms']}, GIL held by: {iv['held']}; collector passes: {iv['gc']}")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
