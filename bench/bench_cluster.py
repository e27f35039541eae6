"""``tuiprof summary --cluster local:N`` at scale (issue 36): the driver's peak RSS and wall
time against the rank count, and the in-process summary beside it.

For each ``--ranks`` value a generated multi-rank Kineto run (tui_prof.synth.ranks:
``--dispatches`` per rank, 9 compute kernels and one AllReduce per step, a straggler) is
written under ``--dir`` rank by rank (kept between calls: generating is slow), then summarised in a child
process with ``--cluster local:WORKERS`` (each rank loaded and reduced in a worker; the
driver merges partials), and, up to ``--inprocess-max`` ranks, in-process too (the whole
run in one process, as ``tuiprof summary`` without ``--cluster``). Each path's wall time,
CPU time (its own and its reaped descendants', the cluster's workers included), both per
rank, and the load average during it; the in-process figures over the cluster's side by
side. The driver's peak RSS is its own VmHWM (read from /proc while it runs, so the
workers' memory is not counted); the workers' is reported apart. Every run is cold
(``--no-cache``) unless ``--warm``.
``--tui`` measures instead the TUI's first rank screen (``open RUN --cluster local:N``: the
merge, then the app until its rank table holds every rank), cold (a new cache) then warm,
``--repeat`` times each: from the merged document the cold open cached, and, for
reference, from every rank's cached partials (the document cache off). ``--driver-only`` measures the driver alone: N copies of
one generated rank's partial merged as the workers' results are, and the document built.

    python bench/bench_cluster.py --ranks 256 1024 --dispatches 20000 --workers 2 --dir /tmp/bench_cluster
    python bench/bench_cluster.py --ranks 1024 --dispatches 1000 --workers 2 --tui
    python bench/bench_cluster.py --ranks 256 512 1024 --dispatches 20000 --driver-only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tui_prof.synth.ranks import RankSpec, write_ranks_streaming

PER_STEP = 10  # 9 compute kernels + 1 AllReduce


def generate(root: Path, ranks: int, dispatches: int) -> Path:
    run = root / f"r{ranks}_d{dispatches}"
    if (run / "done").exists():
        return run
    spec = RankSpec(ranks=ranks, iterations=max(1, dispatches // PER_STEP), compute_kernels=PER_STEP - 1, slow_rank=1, slow_pct=20)
    write_ranks_streaming(spec, run, "kineto")  # one rank's events in memory at a time
    (run / "done").write_text("")
    return run


def hwm_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def children_rss_kb(pid: int) -> int:
    """Summed RSS of ``pid``'s descendants (the cluster's scheduler side and workers)."""
    out = subprocess.run(["ps", "-o", "pid=,ppid=,rss=", "-e"], capture_output=True, text=True).stdout.split()
    rows = [(int(out[i]), int(out[i + 1]), int(out[i + 2])) for i in range(0, len(out) - 2, 3)]
    kids, total, frontier = set(), 0, {pid}
    while frontier:
        nxt = {p for p, pp, _ in rows if pp in frontier and p not in kids}
        kids |= nxt
        frontier = nxt
    for p, _, rss in rows:
        if p in kids:
            total += rss
    return total


def per_rank(m: dict, ranks: int) -> None:
    """Per-rank cost of one measured path: wall and CPU (the workers' included) over the rank count."""
    m["per_rank_ms"] = round(1000 * m["wall_s"] / ranks, 1)
    m["cpu_per_rank_ms"] = round(1000 * m["cpu_s"] / ranks, 1)


def measure(argv: list[str], env: dict) -> dict:
    """Run ``argv``; its wall time, its own peak RSS (VmHWM polled) and its descendants' peak summed RSS."""
    t = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        peak, kids, polls, load = 0, 0, 0, [os.getloadavg()[0]]
        while True:
            done, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if done:
                break
            peak = max(peak, hwm_kb(proc.pid))
            if polls % 10 == 0:
                kids = max(kids, children_rss_kb(proc.pid))
                load.append(os.getloadavg()[0])
            polls += 1
            time.sleep(0.05)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        doc = json.loads(out.read() or b"{}")
        tail = err.read().decode(errors="replace").strip().splitlines()[-1:]
    return {
        "rc": proc.returncode,
        "wall_s": round(wall, 2),
        # the child's CPU with its reaped descendants' (the cluster's workers): less noisy than wall on a shared machine
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "load1_min_max": [round(min(load), 2), round(max(load), 2)],
        "driver_peak_rss_mb": round(peak / 1024, 1),
        "workers_peak_rss_mb": round(kids / 1024, 1),
        "ranks_in_doc": len(doc.get("ranks", [])),
        "straggler": (doc.get("stragglers") or {}).get("rank"),
        "error": tail[0] if proc.returncode else None,
    }


FIRST_SCREEN = """
import asyncio, json, sys, time
t0 = time.perf_counter()
from tui_prof import cluster
from tui_prof.cli import _merged_document
from tui_prof.tui.cluster_app import MergedRanksApp
from tui_prof.tui.panes.ranks import RanksTable
path, where, ranks, source = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if source == "partials":  # the reference: merged from every rank's cached partials, as before the document cache
    cluster.cached_document = lambda key, sections=None: None
    cluster.save_document = lambda key, merged, doc: False
found, status = _merged_document(path, where, None, 20, use_cache=True, sections=cluster.HEAD_SECTIONS)  # as open --cluster
merged_s = time.perf_counter() - t0
app = MergedRanksApp(*found, use_cache=True)

async def flow():
    async with app.run_test(size=(160, 50)) as pilot:
        while True:
            tables = app.screen.query(RanksTable)
            if tables and tables.first().model is not None and len(tables.first().model.frame) == ranks:
                break
            await pilot.pause(0.01)
        first = time.perf_counter() - t0
        print(json.dumps({"first_screen_s": round(first, 2), "cpu_s": round(time.process_time(), 2), "merged_s": round(merged_s, 2), "rows": ranks}))

asyncio.run(flow())
"""


DRIVER_ONLY = """
import dataclasses, json, pickle, sys, time
from tui_prof.analysis.api import DEFAULT_CATEGORY_RULES
from tui_prof.cluster import RankResult, _merge, plan, rank_task
run, ranks = sys.argv[1], int(sys.argv[2])
tasks = plan(run, use_cache=False).tasks
blob = pickle.dumps(rank_task(tasks[0]))  # what a worker sends back for one rank
def hwm():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1]) // 1024
before = hwm()
t = time.perf_counter()
out = _merge([tasks[0]] * ranks, DEFAULT_CATEGORY_RULES)
for i in range(ranks):  # rank i: rank 0's partial on its own host, pid and rank number
    r = pickle.loads(blob)
    p = r.partials[0]
    meta = dataclasses.replace(p.meta, hostname=f"node{i // 8}", pid=p.meta.pid + i, rank=i, label=f"rank{i}")
    out.add(RankResult(f"rank{i}.pt.trace.json.gz", [dataclasses.replace(p, meta=meta, label=f"rank{i}")], [], r.root, r.files))
merged = hwm()
doc = out.document(20)
print(json.dumps({"peak_before_mb": before, "peak_after_merge_mb": merged, "peak_mb": hwm(), "wall_s": round(time.perf_counter() - t, 2), "ranks_in_doc": len(doc["ranks"])}))
"""


def driver_only(run: Path, ranks: int, env: dict) -> dict:
    """The driver's own cost, apart from the workers': one rank of ``run`` reduced once, then
    ``ranks`` copies of its partial (each on its own host, pid and rank) unpickled and merged
    as the driver merges workers' results, and the document built; VmHWM in MB."""
    proc = subprocess.run([sys.executable, "-c", DRIVER_ONLY, str(run), str(ranks)], capture_output=True, text=True, env=env)
    if proc.returncode:
        return {"rc": proc.returncode, "error": (proc.stderr.strip().splitlines() or [""])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def first_screen(run: Path, ranks: int, where: str, env: dict, source: str = "document") -> dict:
    """Seconds from the start of ``open RUN --cluster WHERE`` (as the CLI runs it: the merge,
    then the app) to its rank table painted with every rank, in a child process. ``source``
    "partials": the merged-document cache off (every rank's cached partials merged)."""
    t = time.perf_counter()
    argv = [sys.executable, "-c", FIRST_SCREEN, str(run), where, str(ranks), source]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if proc.returncode:
        return {"rc": proc.returncode, "error": (proc.stderr.strip().splitlines() or [""])[-1]}
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    row["process_wall_s"] = round(wall, 2)  # with the interpreter's start and imports
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--dispatches", type=int, default=20_000, help="per rank")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--inprocess-max", type=int, default=256, help="also summarise in-process up to this many ranks")
    ap.add_argument("--dir", default="/tmp/bench_cluster")
    ap.add_argument("--warm", action="store_true", help="keep the per-rank cache (second run of a cluster reads it)")
    ap.add_argument("--driver-only", action="store_true", help="instead: the driver's peak RSS merging N copies of one rank's partial (no workers)")
    ap.add_argument("--tui", action="store_true", help="instead: the TUI's first rank screen (open --cluster), cold (empty cache) then warm")
    ap.add_argument("--repeat", type=int, default=3, help="--tui: warm opens of each kind")
    args = ap.parse_args()
    root = Path(args.dir)
    repo = str(Path(__file__).resolve().parents[1])
    for ranks in args.ranks:
        t = time.perf_counter()
        run = generate(root, 2 if args.driver_only else ranks, args.dispatches)
        gen_s = time.perf_counter() - t
        env = dict(os.environ, PYTHONPATH=repo, TUIPROF_CACHE_DIR=str(root / "cache"))
        if args.driver_only:
            row = {"ranks": ranks, "dispatches_per_rank": args.dispatches, "load1": round(os.getloadavg()[0], 2)}
            row["driver_only"] = driver_only(run, ranks, env)
            print(json.dumps(row), flush=True)
            continue
        if args.tui:
            env["TUIPROF_CACHE_DIR"] = tempfile.mkdtemp(prefix="tuiprof-cache-", dir=root)  # cold: a new cache
            where = f"local:{args.workers}"
            row = {"ranks": ranks, "dispatches_per_rank": args.dispatches, "open": f"--cluster {where}"}
            row["cold"] = {"load1": round(os.getloadavg()[0], 2), **first_screen(run, ranks, where, env)}
            # warm, alternately from the merged document and from every rank's partials (the reference)
            for source in ("document", "partials") * args.repeat:
                row.setdefault(f"warm_{source}", []).append({"load1": round(os.getloadavg()[0], 2), **first_screen(run, ranks, where, env, source)})
            print(json.dumps(row), flush=True)
            continue
        cache = [] if args.warm else ["--no-cache"]
        base = [sys.executable, "-m", "tui_prof.cli", "summary", str(run), "--json", *cache]
        row = {"ranks": ranks, "dispatches_per_rank": args.dispatches, "generate_s": round(gen_s, 1), "load1": round(os.getloadavg()[0], 2)}
        row["cluster"] = measure(base + ["--cluster", f"local:{args.workers}"], env)
        per_rank(row["cluster"], ranks)
        if ranks <= args.inprocess_max:
            row["in_process"] = measure(base, env)
            per_rank(row["in_process"], ranks)
            # side by side: how many times the cluster path's cost the in-process one is
            row["in_process_over_cluster"] = {
                k: round(row["in_process"][k] / row["cluster"][k], 2) for k in ("wall_s", "cpu_s", "driver_peak_rss_mb") if row["cluster"][k]
            }
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
