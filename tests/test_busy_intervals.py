"""busy_intervals: the union of a process's kernels and copies, checked against a
brute-force union over a nanosecond grid and against the plain sort-and-merge, on random
runs with sorted and unsorted kernels, equal starts, nested and touching intervals."""

from __future__ import annotations

import numpy as np
import pytest

from tui_prof.analysis.timeline import busy_intervals, merged_intervals
from tui_prof.model import Agent, Run, make_table
from tui_prof.model.run import RunMeta


def _run(ks, ke, cs, ce) -> Run:
    kernels = make_table("kernels", {"start": ks, "end": ke, "agent": np.ones(len(ks), np.int64), "name": ["k"] * len(ks)})
    copies = make_table("copies", {"start": cs, "end": ce, "src_agent": np.zeros(len(cs), np.int64), "dst_agent": np.ones(len(cs), np.int64)})
    return Run(meta=RunMeta(), agents=[Agent(id=1, name="gfx942")], kernels=kernels, copies=copies)


def _grid_union(starts, ends, horizon) -> np.ndarray:
    busy = np.zeros(horizon, dtype=bool)
    for s, e in zip(starts, ends, strict=True):
        busy[s:e] = True
    return busy


@pytest.mark.parametrize("seed", range(40))
def test_busy_intervals_is_the_exact_union(seed):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(0, 60)), int(rng.integers(0, 9))
    ks = rng.integers(0, 400, n)
    if seed % 2 == 0:
        ks = np.sort(ks)  # the usual trace: kernels in start order
    ke = ks + rng.integers(0, 30, n)  # zero-length ones too
    cs = rng.integers(0, 400, m)
    ce = cs + rng.integers(1, 50, m)
    bs, be = busy_intervals(_run(ks, ke, cs, ce))
    assert (np.diff(bs) > 0).all() and (be >= bs).all() and (bs[1:] > be[:-1]).all()  # sorted, disjoint, not touching
    horizon = 500
    got = np.zeros(horizon, dtype=bool)
    for s, e in zip(bs, be, strict=True):
        got[s:e] = True
    all_s, all_e = np.concatenate([ks, cs]), np.concatenate([ke, ce])
    assert (got == _grid_union(all_s, all_e, horizon)).all()
    ref_s, ref_e = merged_intervals(all_s.astype(np.int64), all_e.astype(np.int64))
    assert bs.tolist() == ref_s.tolist() and be.tolist() == ref_e.tolist()  # zero-length runs included


def test_copies_slot_between_sorted_kernels():
    ks, ke = np.array([0, 10, 20, 30]), np.array([5, 15, 25, 35])
    cs, ce = np.array([12, 3]), np.array([18, 4])  # unsorted copies: [3, 4) inside the first kernel
    bs, be = busy_intervals(_run(ks, ke, cs, ce))
    assert bs.tolist() == [0, 10, 20, 30] and be.tolist() == [5, 18, 25, 35]
