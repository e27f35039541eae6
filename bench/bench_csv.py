"""CSV summary benchmark (issue 18): ``tuiprof summary --no-cache`` of the 1M-dispatch + 2M-API
rocprofv3 CSV run beside ``pandas.read_csv`` of every CSV file of the same run.

Each measured command runs in its own process (``_measure.run_child``: wall time, CPU time =
user + sys of the child from ``os.wait4``, peak RSS, 1-minute load average before the start).
The reference and ours (and, with ``--baseline``, the same command on an earlier tree) run
interleaved, round after round, so every round's sides see about the same machine load.
Reported per side: best wall and best CPU over the rounds; ratios: best over best, and the
median of the per-round ratios (each round's pair shares its load, so that median is the
figure least moved by other jobs on a shared machine).

``--phases`` adds one in-process run of the summary's steps (imports, load, analysis,
rendering), each timed in wall and CPU seconds (``time.process_time``: all threads), and of
``pandas.read_csv`` per file, to show where the CPU time goes.

    python bench/bench_csv.py [--data DIR] [--dispatches 1000000] [--repeat 5]
                              [--baseline DIR ...] [--phases]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _measure import run_child

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable

READ_CSV = """
import sys, glob, pandas as pd
n = 0
for f in sorted(glob.glob(sys.argv[1] + '/**/*.csv', recursive=True)):
    n += len(pd.read_csv(f))
print('{"rows": %d}' % n)
"""

PHASES = """
import json, os, sys, time
def now():
    return time.perf_counter(), time.process_time()
def since(start):
    end = now()
    return [round(end[0] - start[0], 3), round(end[1] - start[1], 3)]
out = {}
t = now()
import numpy, pandas, pyarrow, pyarrow.csv
out["import numpy/pandas/pyarrow"] = since(t)
t = now()
from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.loaders import load_path
from tui_prof.render.summary import summary_text
out["import tuiprof"] = since(t)
t = now()
runset = load_path(sys.argv[1], use_cache=False)
out["load_path"] = since(t)
t = now()
doc = build_summary(runset, SummaryOptions(top=20))
out["build_summary"] = since(t)
t = now()
summary_text(doc)
out["render"] = since(t)
import glob
for f in sorted(glob.glob(sys.argv[1] + '/**/*_trace.csv', recursive=True)):
    t = now()
    pandas.read_csv(f)
    out["pandas.read_csv " + os.path.basename(f)] = since(t)
print(json.dumps({"phases": out, "load1_end": round(os.getloadavg()[0], 2)}))
"""


def generate(data: Path, dispatches: int) -> Path:
    """The run of ``bench_scale.py`` (generated once in a child, reused)."""
    result = run_child([PY, str(ROOT / "bench" / "bench_scale.py"), "--worker", "gen-csv", f"{data}::{dispatches}"], cwd=ROOT)
    if result.get("rc") != 0 or "path" not in result:
        raise SystemExit(f"generation failed: {result.get('error')}")
    return Path(result["path"])


def summarise(name: str, runs: list[dict]) -> dict:
    ok = [r for r in runs if r.get("rc") == 0]
    if not ok:
        raise SystemExit(f"{name} failed: {runs[-1].get('error')}")
    return {
        "best_wall_s": min(r["wall_s"] for r in ok),
        "best_cpu_s": min(r["cpu_s"] for r in ok),
        "median_wall_s": statistics.median(r["wall_s"] for r in ok),
        "median_cpu_s": statistics.median(r["cpu_s"] for r in ok),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in ok),
        "loads": [r["load1"] for r in ok],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(Path(tempfile.gettempdir()) / "tuiprof-bench"))
    parser.add_argument("--dispatches", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds")
    parser.add_argument(
        "--baseline", action="append", default=[], help="an earlier tree (git archive REV | tar -x -C DIR): its summary runs in each round too (repeatable)"
    )
    parser.add_argument("--phases", action="store_true", help="also time the summary's steps in one process")
    parser.add_argument("--json", help="write the raw results here")
    args = parser.parse_args(argv)

    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    run = generate(data, args.dispatches)
    env = {"TUIPROF_CACHE_DIR": tempfile.mkdtemp(prefix="tuiprof-bench-cache-")}
    sides = {
        "ref": ([PY, "-c", READ_CSV, str(run)], None, ROOT),
        "ours": ([PY, "-m", "tui_prof.cli", "summary", "--no-cache", str(run)], {**env, "PYTHONPATH": str(ROOT)}, ROOT),
    }
    for tree in args.baseline:
        sides[Path(tree).name] = ([PY, "-m", "tui_prof.cli", "summary", "--no-cache", str(run)], {**env, "PYTHONPATH": tree}, tree)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; python {sys.version.split()[0]}; run {run}", file=sys.stderr)
    rounds: list[dict[str, dict]] = []
    for index in range(args.repeat):
        row = {}
        for name, (argv_, environment, cwd) in sides.items():
            row[name] = run_child(argv_, environment, cwd=cwd)
        rounds.append(row)
        print(
            f"  round {index + 1}: " + ", ".join(f"{name} {r['wall_s']:.2f} s / {r['cpu_s']:.2f} CPU-s (load {r['load1']})" for name, r in row.items()),
            file=sys.stderr,
        )
    stats = {name: summarise(name, [row[name] for row in rounds]) for name in sides}
    ref = stats["ref"]
    print()
    print(
        "| side | best wall s | best CPU s | median wall s | median CPU s | peak RSS MB | ratio wall (best/best) | ratio CPU (best/best) | median round ratio wall / CPU | load (1 min) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, s in stats.items():
        paired_wall = statistics.median(row[name]["wall_s"] / row["ref"]["wall_s"] for row in rounds)
        paired_cpu = statistics.median(row[name]["cpu_s"] / row["ref"]["cpu_s"] for row in rounds)
        print(
            f"| {name} | {s['best_wall_s']:.2f} | {s['best_cpu_s']:.2f} | {s['median_wall_s']:.2f} | {s['median_cpu_s']:.2f} | {s['peak_rss_mb']:.0f} "
            f"| {s['best_wall_s'] / ref['best_wall_s']:.2f}× | {s['best_cpu_s'] / ref['best_cpu_s']:.2f}× | {paired_wall:.2f}× / {paired_cpu:.2f}× "
            f"| {min(s['loads']):.1f}–{max(s['loads']):.1f} |"
        )
    result = {"stats": stats, "rounds": rounds}
    if args.phases:
        started = time.time()
        phases = run_child([PY, "-c", PHASES, str(run)], {**env, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
        result["phases"] = phases
        print(f"\nphases in one process (load {phases.get('load1')} before, {phases.get('load1_end')} after; {time.time() - started:.0f} s): wall s / CPU s")
        for step, (wall, cpu) in phases.get("phases", {}).items():
            print(f"- {step}: {wall:.2f} / {cpu:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
