"""The second pass of ``summary --cluster`` (issue 36: each rank's critical path, its savings)
on a generated run (``bench_cluster.generate``: 9 compute kernels and one AllReduce per step, a
straggler), on a process pool of 2, in a fresh cache folder:

A = the first pass alone, cold; B = both passes with the first pass's partials cached (B - C is
the second pass: each rank loaded again from the unit cache A wrote); C = the first pass alone,
cached; D = both passes, everything cached (a warm run: no path work). CPU seconds include the
pool's worker processes.

    python bench/bench_cluster.py --ranks 64 --dispatches 20000 --inprocess-max 0 --dir /tmp/bc  # writes the run (or generate it)
    python bench/bench_paths.py /tmp/bc/r64_d20000 [local:2]   # a Dask LocalCluster instead of the pool
"""

import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tui_prof import cluster
from tui_prof.analysis.api import DEFAULT_CATEGORY_RULES


def cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def main() -> None:
    run = sys.argv[1]
    where = sys.argv[2] if len(sys.argv) > 2 else "pool:2"
    os.environ["TUIPROF_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench_paths_")

    out: dict[str, dict] = {}
    for name, second in (("A_first_cold", False), ("B_both_first_cached", True), ("C_first_cached", False), ("D_both_cached", True)):
        t0, c0 = time.perf_counter(), cpu()
        paths = cluster.path_task if second else None
        if where.startswith("pool"):
            merged = cluster.summarise_pool(cluster.plan(run).tasks, DEFAULT_CATEGORY_RULES, int(where.split(":")[1]), paths=paths)
        else:
            merged = cluster.summarise_cluster(cluster.plan(run).tasks, DEFAULT_CATEGORY_RULES, where, paths=paths)
        doc = merged.document(20)
        out[name] = {"wall_s": round(time.perf_counter() - t0, 2), "cpu_s": round(cpu() - c0, 2), "load1": round(os.getloadavg()[0], 2)}
        if second:
            out[name]["paths"] = len(merged.paths.parts)
            out[name]["critical_path_processes"] = len(doc["critical_path"]["processes"])
            out[name]["findings"] = [f["code"] for f in doc["findings"]]
        print(name, json.dumps(out[name]), flush=True)
    ranks = len(cluster.plan(run).tasks)
    b, c = out["B_both_first_cached"], out["C_first_cached"]
    print(
        "second pass:",
        json.dumps(
            {
                "wall_s": round(b["wall_s"] - c["wall_s"], 2),
                "cpu_s": round(b["cpu_s"] - c["cpu_s"], 2),
                "cpu_ms_per_rank": round(1000 * (b["cpu_s"] - c["cpu_s"]) / ranks, 1),
                "first_pass_cpu_ms_per_rank": round(1000 * out["A_first_cold"]["cpu_s"] / ranks, 1),
            }
        ),
    )


if __name__ == "__main__":  # a LocalCluster spawns its workers: they import this file
    main()
