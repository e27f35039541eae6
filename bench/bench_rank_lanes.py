"""The timeline's rank lanes at scale (issue 14 item 5): RunView._rank_timeline (one lane
per process, its communication, its gaps, the alignment of analysis.ranks.rank_offsets) on
a generated multi-rank run (tui_prof.synth.ranks, as bench/bench_ranks.py), interleaved
with the whole timeline part (every lane plus the rank lanes) as the reference; best of
``--repeat``, wall and thread CPU seconds, and the load average.

    python bench/bench_rank_lanes.py [--ranks 64] [--dispatches 20000] [--hosts 1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tui_prof.synth.ranks import RankSpec, build_ranks
from tui_prof.tui.view.runview import build_view
from tui_prof.tui.widgets.timeline import build_frame


def timed(func) -> tuple[float, float, object]:
    t0, c0 = time.perf_counter(), time.thread_time()
    out = func()
    return time.perf_counter() - t0, time.thread_time() - c0, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--dispatches", type=int, default=20_000, help="per rank")
    ap.add_argument("--hosts", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    per_step = 10  # 9 compute kernels + 1 AllReduce, as bench/bench_ranks.py
    spec = RankSpec(ranks=args.ranks, iterations=max(1, args.dispatches // per_step), compute_kernels=per_step - 1, slow_rank=1, slow_pct=20, hosts=args.hosts)
    runset = build_ranks(spec).runset()
    view = build_view(runset, lazy=True)
    gaps = view.gaps
    lanes, whole = [], []
    model = None
    for _ in range(args.repeat):  # interleaved: the machine's load hits both alike
        w, c, model = timed(lambda: view._rank_timeline(gaps))
        lanes.append((w, c))
        w, c, _ = timed(view._compute_timeline)
        whole.append((w, c))
    assert model is not None
    frame_s = min(timed(lambda: build_frame(model, 0, model.span, 140))[0] for _ in range(args.repeat))
    print(
        json.dumps(
            {
                "ranks": args.ranks,
                "dispatches_per_rank": len(runset.runs[0].kernels),
                "hosts": args.hosts,
                "gaps": len(gaps),
                "rank_lanes_wall_s": round(min(w for w, _ in lanes), 3),
                "rank_lanes_cpu_s": round(min(c for _, c in lanes), 3),
                "timeline_part_wall_s": round(min(w for w, _ in whole), 3),
                "timeline_part_cpu_s": round(min(c for _, c in whole), 3),
                "frame_140_cells_s": round(frame_s, 4),
                "header": model.header,
                "load_avg": os.getloadavg(),
            }
        )
    )


if __name__ == "__main__":
    main()
