"""Critical path and what-if benchmark (issue 31): at 1M dispatches (the per-launch-sync run
of bench_csv / bench_scale: 1M kernels, 1M launches, 1M syncs), in one process, each step
timed in wall seconds beside the whole summary of the same run (the reference: the
summary's own time, critical path included, on the same machine in the same process).

    python bench/bench_critical.py [--dispatches 1000000] [--repeat 3] [--sync per_launch]
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
    ap.add_argument("--sync", default="per_launch")
    args = ap.parse_args()
    from tui_prof.analysis import depgraph as dg
    from tui_prof.analysis.critical import critical_section, process_windows
    from tui_prof.analysis.findings import build_findings
    from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES
    from tui_prof.analysis.runinput import run_inputs
    from tui_prof.analysis.savings import add_savings
    from tui_prof.analysis.summary import build_summary
    from tui_prof.analysis.whatif import Edits, apply_edits
    from tui_prof.model import Run, RunSet
    from tui_prof.synth.spec import SynthSpec, build

    s = build(SynthSpec(iterations=max(args.dispatches // 10, 1), kernels_per_iteration=10, sync=args.sync))
    run = Run(agents=s.agents, kernels=s.kernels, api=s.api, copies=s.copies)
    run.meta.label = "bench"
    runset = RunSet(root="bench", runs=[run])
    print(f"{len(run.kernels):,} dispatches, {len(run.api):,} API calls, load {os.getloadavg()[0]:.1f}")
    rows: dict[str, list[float]] = {}

    def timed(label: str, fn, *args):
        t = time.perf_counter()
        out = fn(*args)
        rows.setdefault(label, []).append(time.perf_counter() - t)
        return out

    for _ in range(args.repeat):
        doc = timed("build_summary (critical path included)", build_summary, runset)
        inputs = run_inputs(runset)
        windows = timed("process_windows (slice + graph)", process_windows, inputs, doc["steps"])
        timed("critical_section (path + steps)", critical_section, windows, DEFAULT_CATEGORY_RULES)
        timed("add_savings (what-if per finding)", add_savings, build_findings(doc), windows, DEFAULT_CATEGORY_RULES)
        g = timed("build_graph (whole run: tuiprof whatif)", dg.build_graph, run, inputs[0].index)
        applied = apply_edits(run, g, Edits(removes=["sync-after-launch"]))
        timed("schedule (whole run, one what-if)", dg.schedule, g, applied.dur, applied.gap, applied.lat, applied.ret, applied.waits)
    for label, values in rows.items():
        print(f"{label:45s} best {min(values):6.2f} s  median {sorted(values)[len(values) // 2]:6.2f} s")
    print(f"load after {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
