"""Cost of ``tuiprof check`` on a clean run (issue 32): ``check_run`` beside ``build_summary``.

A synthetic rocprofv3-like process (``tui_prof.synth``: N kernel dispatches, one
hipLaunchKernel and one hipDeviceSynchronize each, known clean) is built in memory once;
then, interleaved ``--repeat`` times in this process, ``check_run(runset)`` and
``build_summary(runset)`` (which includes the check, since it sets the trust labels) are
timed, in wall seconds (``time.perf_counter``) and in CPU seconds of the process
(``time.process_time``: every thread; the summary runs sections in two). The target: the
check's median ≤ 10 % of the summary's. Also printed: each check's median milliseconds
within ``check_run`` (the checks share each run's facts there) and the load average.

    python bench/bench_check.py [--dispatches 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import math
import os
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
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from tui_prof.analysis.api import INTEGRITY_CHECKS, build_summary, check_run

    runset = runset_of(args.dispatches)
    per_check: dict[str, list[float]] = {name: [] for name, _ in INTEGRITY_CHECKS}

    def timed(name, check):
        def run(rs):
            t = time.perf_counter()
            found = check(rs)
            per_check[name].append(time.perf_counter() - t)
            return found

        return run

    load = [os.getloadavg()]
    wall: dict[str, list[float]] = {"check": [], "summary": []}
    cpu: dict[str, list[float]] = {"check": [], "summary": []}
    for _ in range(args.repeat):
        t, c = time.perf_counter(), time.process_time()
        report = check_run(runset)
        wall["check"].append(time.perf_counter() - t)
        cpu["check"].append(time.process_time() - c)
        t, c = time.perf_counter(), time.process_time()
        build_summary(runset)
        wall["summary"].append(time.perf_counter() - t)
        cpu["summary"].append(time.process_time() - c)
        check_run(runset, [(name, timed(name, check)) for name, check in INTEGRITY_CHECKS])
    load.append(os.getloadavg())
    assert not report.degrading, [i.record() for i in report.degrading]
    med = {k: {what: statistics.median(v) for what, v in d.items()} for k, d in (("wall", wall), ("cpu", cpu))}
    print(
        json.dumps(
            {
                "dispatches": len(runset.runs[0].kernels),
                "api_calls": len(runset.runs[0].api),
                "repeat": args.repeat,
                "check_s": round(med["wall"]["check"], 4),
                "summary_s": round(med["wall"]["summary"], 4),
                "check_pct_of_summary": round(100 * med["wall"]["check"] / med["wall"]["summary"], 2),
                "check_cpu_s": round(med["cpu"]["check"], 4),
                "summary_cpu_s": round(med["cpu"]["summary"], 4),
                "check_pct_of_summary_cpu": round(100 * med["cpu"]["check"] / med["cpu"]["summary"], 2),
                "target_pct": 10,
                "per_check_ms": {name: round(1000 * statistics.median(v), 1) for name, v in per_check.items()},
                "load_average_before_after": [[round(x, 2) for x in one] for one in load],
            }
        )
    )


if __name__ == "__main__":
    main()
