"""Step-aligned diff benchmark (issue 35): two steps of 5,000 kernels each, target <= 0.5 s.

The runs are the generator's stepped loop (tui_prof.synth.steps) with ``--kernels`` kernels
per step cycling over five kernel names; B has the four known edits in every step (a kernel
inserted, one dropped, one 2x slower, a sync added), so the alignment has work to do.
Measured in this process, best of ``--repeat`` wall times:

* ``align``: :func:`tui_prof.analysis.stepdiff.align_units` on the two chosen steps' units
  (the longest-common-subsequence alignment by normalised name per lane) — the issue's target;
* ``diff_steps``: the whole step-aligned diff (steps, steady state, units, gaps and their
  causes, host calls, noise bands, contributions) of the two runs;
* ``align_random``: :func:`tui_prof.analysis.align.lcs_pairs` on two unrelated random
  sequences of ``--kernels`` codes over 50 names (no common prefix or suffix to trim: the
  whole table is computed);
* reference, beside it: ``difflib.SequenceMatcher(autojunk=False).get_matching_blocks()``
  on the same two code sequences (the standard library's sequence alignment, not an LCS).

    python bench/bench_stepdiff.py [--kernels 5000] [--steps 4] [--repeat 5]
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from tui_prof.analysis.align import lcs_pairs
from tui_prof.analysis.stepdiff import align_units, diff_steps
from tui_prof.model import Run, RunMeta, RunSet
from tui_prof.synth.steps import StepSpec, build_steps


def runset(spec: StepSpec, root: str) -> RunSet:
    synth, _ = build_steps(spec)
    meta = RunMeta(formats=["synthetic"], tool="synth", label=root, pid=spec.pid)
    return RunSet(root=root, runs=[Run(meta=meta, agents=synth.agents, kernels=synth.kernels, api=synth.api, copies=synth.copies, markers=synth.markers)])


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kernels", type=int, default=5000)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    base = StepSpec(steps=args.steps, kernels_per_step=args.kernels, kinds=5, first_step_extra_ns=0, outlier_step=-1)
    k = args.kernels
    edited = replace(base, insert_after=k // 5, drop=2 * k // 5, slow=3 * k // 5, sync_after=4 * k // 5)
    a, b = runset(base, "a"), runset(edited, "b")
    d = diff_steps(a, b)
    ua, ub = d.a.units, d.b.units
    codes_a = ua["key"].astype(str).tolist()
    codes_b = ub["key"].astype(str).tolist()
    rng = np.random.default_rng(35)
    rand_a, rand_b = rng.integers(0, 50, k), rng.integers(0, 50, k)
    out = {
        "kernels_a": len(ua),
        "kernels_b": len(ub),
        "found": {
            "inserted": [(r["key"], r["count"]) for r in d.inserted],
            "removed": [(r["key"], r["count"]) for r in d.removed],
            "slower": [(r["key"], r["count"]) for r in d.slower],
            "syncs_added": d.syncs["added"],
        },
        "align_s": round(best(lambda: align_units(ua, ub), args.repeat), 4),
        "align_random_s": round(best(lambda: lcs_pairs(rand_a, rand_b), args.repeat), 4),
        "diff_steps_s": round(best(lambda: diff_steps(a, b), max(1, args.repeat // 2)), 4),
        "reference_difflib_s": round(best(lambda: difflib.SequenceMatcher(None, codes_a, codes_b, autojunk=False).get_matching_blocks(), args.repeat), 4),
        "target_s": 0.5,
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
