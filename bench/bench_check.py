"""Cost of ``tuiprof check`` on a clean run (issue 32): ``check_run`` beside ``build_summary``.

A synthetic rocprofv3-like process (``tui_prof.synth``: N kernel dispatches, one
hipLaunchKernel and one hipDeviceSynchronize each, known clean) is built in memory once;
then, interleaved ``--repeat`` times in this process, ``check_run(runset)`` and
``build_summary(runset)`` (which includes the check, since it sets the trust labels) are
timed with ``time.perf_counter``. The target: the check's median ≤ 10 % of the summary's.

    python bench/bench_check.py [--dispatches 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def runset_of(dispatches: int):
    from tui_prof.model import Run, RunMeta, RunSet
    from tui_prof.synth import SynthSpec, build

    synth = build(SynthSpec(iterations=max(1, math.ceil(dispatches / 10)), kernels_per_iteration=10, sync="per_launch", seed=0, pid=4242))
    run = Run(meta=RunMeta(formats=["synthetic"], tool="rocprofv3", hostname="synthhost", pid=4242, label="synthhost/4242"), agents=list(synth.agents))
    run.kernels, run.api, run.copies = synth.kernels, synth.api, synth.copies
    run.finish()
    return RunSet("synthetic", [run])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dispatches", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from tui_prof.analysis.api import build_summary, check_run

    runset = runset_of(args.dispatches)
    check_s, summary_s = [], []
    for _ in range(args.repeat):
        t = time.perf_counter()
        report = check_run(runset)
        check_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        build_summary(runset)
        summary_s.append(time.perf_counter() - t)
    assert not report.degrading, [i.record() for i in report.degrading]
    check, summary = statistics.median(check_s), statistics.median(summary_s)
    print(
        json.dumps(
            {
                "dispatches": len(runset.runs[0].kernels),
                "api_calls": len(runset.runs[0].api),
                "check_s": round(check, 4),
                "summary_s": round(summary, 4),
                "check_pct_of_summary": round(100 * check / summary, 2),
                "target_pct": 10,
            }
        )
    )


if __name__ == "__main__":
    main()
