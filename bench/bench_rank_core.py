"""One process's rank-table figures (analysis.ranks.RankCore, what the TUI's rank rows
compute in the load worker) with the summary's operator-first categories
(analysis.operators.process_categories: one operator link of the process) against the
kernel-name split as the reference, interleaved; min of ``--repeat`` per round, two rounds,
and the load average.

    python bench/bench_rank_core.py PATH [PATH ...] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tui_prof.analysis.api import DEFAULT_CATEGORY_RULES, RankCore, api_classes, process_categories, run_label, time_range
from tui_prof.loaders import load_path


def core(run, categories: bool) -> RankCore:
    span = time_range(run)
    classes = api_classes(run.api) if len(run.api) else np.array([], dtype=np.int8)
    cats = process_categories(run, DEFAULT_CATEGORY_RULES) if categories else None
    return RankCore(run, run_label(run), (span[1] - span[0]) if span else 0, classes, DEFAULT_CATEGORY_RULES, cats)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for path in args.paths:
        for run in load_path(path, use_cache=False).runs:
            for categories in (False, True, False, True):
                times = []
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    core(run, categories)
                    times.append(time.perf_counter() - t0)
                split = "categories" if categories else "by name (reference)"
                print(f"{Path(path).name} {run_label(run)[-30:]} {len(run.kernels)} kernels  {split}: min {min(times) * 1e3:.1f} ms")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
