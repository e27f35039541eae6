"""Rank analysis at scale (issue 14): the rank table, communication and stragglers
(analysis.ranks.ranks_sections) and the whole summary of a generated multi-rank run,
in-process timers after the run is built (tui_prof.synth.ranks: one GPU per rank,
``compute_kernels`` compute kernels and one AllReduce per step).

    python bench/bench_ranks.py [--ranks 64] [--dispatches 20000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tui_prof.analysis import engine, ranks
from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES
from tui_prof.analysis.summary import build_summary
from tui_prof.synth.ranks import RankSpec, build_ranks


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--dispatches", type=int, default=20_000, help="per rank")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    per_step = 10  # 9 compute kernels + 1 AllReduce
    t = time.perf_counter()
    built = build_ranks(RankSpec(ranks=args.ranks, iterations=max(1, args.dispatches // per_step), compute_kernels=per_step - 1, slow_rank=1, slow_pct=20))
    gen_s = time.perf_counter() - t
    runset = built.runset()
    inputs = engine.run_inputs(runset)
    rows = []
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        table, comm, strag = ranks.ranks_sections(
            [r.run for r in inputs], [r.label for r in inputs], [r.wall_ns for r in inputs], [r.index.classes for r in inputs], DEFAULT_CATEGORY_RULES
        )
        rows.append({"ranks_sections_s": round(time.perf_counter() - t0, 3), "cpu_s": round(time.process_time() - c0, 3)})
    t0 = time.perf_counter()
    doc = build_summary(runset, logs=False)
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


if __name__ == "__main__":
    main()
