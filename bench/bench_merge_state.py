"""What the driver's merge of partials keeps, per part, against the rank count (issue 36).

One generated rank (tui_prof.synth.ranks, Kineto: ``--iterations`` steps of 9 compute kernels
and one AllReduce) is reduced once; ``N`` copies of its partial (each on its own host, pid and
rank) are merged as the driver merges workers' results, and each attribute of the
``PartialMerge`` is measured as pickled bytes (a stable proxy of what it holds; Python objects
take more in memory). A part that grows with the ranks × something (steps, collectives) shows
a per-rank figure that grows with ``--iterations``; a per-rank record stays the same.
``--peak`` measures instead the driver's peak RSS (VmHWM, one child process per rank count)
after the merge and after the document, with the partials' ``--leave-out`` parts set to
None (what the driver would hold without them).

    python bench/bench_merge_state.py --ranks 64 256 1024 --iterations 200
    python bench/bench_merge_state.py --ranks 256 1024 --iterations 2000 --peak --leave-out steps
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tui_prof.analysis.api import DEFAULT_CATEGORY_RULES
from tui_prof.cluster import RankResult, _merge, plan, rank_task
from tui_prof.synth.ranks import RankSpec, write_ranks_streaming


def merged_copies(run: Path, ranks: int, leave_out: list[str]):
    """``ranks`` copies of the first rank's partial (each its own host, pid and rank), merged."""
    tasks = plan(str(run), use_cache=False).tasks
    blob = pickle.dumps(rank_task(tasks[0]))  # what a worker sends back for one rank
    merged = _merge([tasks[0]] * ranks, DEFAULT_CATEGORY_RULES)
    for i in range(ranks):
        r = pickle.loads(blob)
        p = r.partials[0]
        meta = dataclasses.replace(p.meta, hostname=f"node{i // 8}", pid=p.meta.pid + i, rank=i, label=f"rank{i}")
        p = dataclasses.replace(p, meta=meta, label=f"rank{i}", **dict.fromkeys(leave_out))
        merged.add(RankResult(f"rank{i}.pt.trace.json.gz", [p], [], r.root, r.files))
    return merged


def hwm_mb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmHWM:"))


def peak(run: Path, ranks: int, leave_out: list[str]) -> dict:
    """The driver's VmHWM (MB) before, after the merge and after the document."""
    before = hwm_mb()
    merged = merged_copies(run, ranks, leave_out)
    after = hwm_mb()
    doc = merged.document(20)
    rows = sum(len(p["steps"]) for p in (doc.get("steps") or {}).get("per_process", []))
    return {"ranks": ranks, "leave_out": leave_out, "before_mb": before, "after_merge_mb": after, "peak_mb": hwm_mb(), "per_process_step_rows": rows}


def kept(run: Path, ranks: int) -> dict[str, int]:
    merged = merged_copies(run, ranks, [])
    out = {}
    for name, value in vars(merged.merge).items():
        try:
            out[name] = len(pickle.dumps(value))
        except (TypeError, AttributeError, pickle.PicklingError):  # a callable (the loader): not state
            continue
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, nargs="+", default=[64, 256, 1024])
    ap.add_argument("--iterations", type=int, default=200, help="steps (and AllReduce collectives) per rank")
    ap.add_argument("--peak", action="store_true", help="instead: the driver's peak RSS, one child process per rank count")
    ap.add_argument("--leave-out", nargs="*", default=[], help="with --peak: partial fields set to None (e.g. steps)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)  # RUN RANKS: one --peak measurement
    args = ap.parse_args()
    if args.child:
        print(json.dumps(peak(Path(args.child[0]), int(args.child[1]), args.leave_out)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        write_ranks_streaming(RankSpec(ranks=2, iterations=args.iterations, compute_kernels=9, slow_rank=1, slow_pct=20), run, "kineto")
        if args.peak:
            for n in args.ranks:
                argv = [sys.executable, __file__, "--child", str(run), str(n), "--leave-out", *args.leave_out]
                print(subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip(), flush=True)
            return
        sizes = {n: kept(run, n) for n in args.ranks}
    low, high = min(sizes), max(sizes)
    rows = sorted(sizes[high], key=lambda k: -sizes[high][k])
    table = {
        name: {"bytes": {n: sizes[n].get(name, 0) for n in sizes}, "per_rank": round((sizes[high].get(name, 0) - sizes[low].get(name, 0)) / (high - low), 1)}
        for name in rows
    }
    print(json.dumps({"iterations": args.iterations, "parts": table}, indent=1))


if __name__ == "__main__":
    main()
