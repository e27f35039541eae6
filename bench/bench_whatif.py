"""Whole-run what-if re-schedule benchmark (issue 31): the array passes
(depgraph.schedule_chains) beside the node-by-node walk (depgraph.schedule_walk, the
reference) on the same graph and edit in the same process, and whether they agree.

    python bench/bench_whatif.py [--dispatches 1000000] [--repeat 3] [--sync end] [--edit gemm|launch-free|none]
                                 [--kernels-per-iteration 10]

--sync end: one synchronisation after the loop (the GPU-bound regime: the passes settle in a
few rounds); per_launch / per_iteration: the host waits for the GPU after every launch or
iteration, each a turn on the path: the chains do not settle there (chains_worth_it), the
blocks (depgraph.schedule_blocks, one per sync) pay when the iterations are long
(--kernels-per-iteration 1000: a sync per step of 1,000 launches; blocks_worth_it), else
schedule() takes the walk.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dispatches", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sync", default="end")
    ap.add_argument("--edit", default="gemm", choices=("gemm", "launch-free", "none"))
    ap.add_argument("--kernels-per-iteration", type=int, default=10)
    args = ap.parse_args()
    import numpy as np

    from tui_prof.analysis import depgraph as dg
    from tui_prof.analysis.whatif import Edits, apply_edits
    from tui_prof.model import Run
    from tui_prof.synth.spec import SynthSpec, build

    k = args.kernels_per_iteration
    s = build(SynthSpec(iterations=max(args.dispatches // k, 1), kernels_per_iteration=k, sync=args.sync))
    run = Run(agents=s.agents, kernels=s.kernels, api=s.api, copies=s.copies)
    g = dg.build_graph(run)
    edits = {"gemm": Edits(scales=[("Cijk_", 0.5)]), "launch-free": Edits(launch_free=True), "none": Edits()}[args.edit]
    a = apply_edits(run, g, edits)
    arrays = (g, a.dur, a.gap, a.lat, a.ret, a.waits)
    print(f"{len(run.kernels):,} dispatches, {g.size:,} nodes, sync {args.sync}, edit {args.edit}, load {os.getloadavg()[0]:.1f}")
    print(f"chains_worth_it: {dg.chains_worth_it(g, a.waits)}, blocks_worth_it: {dg.blocks_worth_it(g, a.waits)}")
    best: dict[str, float] = {}
    out: dict[str, object] = {}
    for _ in range(args.repeat):
        for label, fn in (
            ("schedule_chains (array passes)", dg.schedule_chains),
            ("schedule_blocks (block by block)", dg.schedule_blocks),
            ("schedule_walk (reference)", dg.schedule_walk),
            ("schedule (what runs)", dg.schedule),
        ):
            t = time.perf_counter()
            out[label] = fn(*arrays)
            best[label] = min(best.get(label, float("inf")), time.perf_counter() - t)
    ref = out["schedule_walk (reference)"]
    for label, seconds in best.items():
        got = out[label]
        same = "fell back (None)" if got is None else "same times" if all(np.array_equal(x, y) for x, y in zip(got, ref, strict=True)) else "DIFFERENT"  # type: ignore[arg-type]
        print(f"{label:34s} {seconds:7.3f} s best of {args.repeat}  {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
