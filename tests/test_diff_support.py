"""Before/after run pairs for the diff tests, built by transforming a synthetic run's tables.

* :func:`slow_down` makes every dispatch of one kernel ``factor`` times longer by a time
  warp: at the end of each such dispatch, ``(factor - 1) * duration`` ns are inserted into
  the clock, so every later timestamp moves by the inserted time and intervals that span
  the point stretch. Other kernels, every idle gap and the kernel order are unchanged;
  the run gets longer by exactly the inserted time.
* :func:`remove_kernel` drops one kernel's dispatches and their launch calls; nothing moves,
  so the removed time becomes GPU idle time.

The tests below check those properties on the tables themselves (not with the diff code).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tui_prof.model import Run, RunMeta, RunSet
from tui_prof.synth import SynthSpec, build

ATTENTION = (
    "void ck_tile::kentry<256, 2, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<ck_tile::half_t> > >"
    "(ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<ck_tile::half_t> >::Kargs)"
)
REDUCE = (
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, "
    "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)"
)


def spec(sync: str, **kw) -> SynthSpec:
    """The test program: 30 iterations x 6 kernels (GEMM, elementwise, reduce, layer norm, attention, copy
    kernel), 1 GPU, small copies so the kernel loop dominates the span."""
    base = dict(iterations=30, kernels_per_iteration=6, sync=sync, htod_bytes=1 << 20, dtoh_bytes=1 << 20, seed=3)
    base.update(kw)
    return SynthSpec(**base)


def as_runset(synth, root: str, kernels=None, api=None, copies=None) -> RunSet:
    meta = RunMeta(formats=["synthetic"], tool="synth", label="synthhost/4242", hostname="synthhost", pid=4242)
    run = Run(
        meta=meta,
        agents=synth.agents,
        kernels=synth.kernels if kernels is None else kernels,
        api=synth.api if api is None else api,
        copies=synth.copies if copies is None else copies,
    )
    return RunSet(root=root, runs=[run])


def _warp(table: pd.DataFrame, points: np.ndarray, cum: np.ndarray) -> pd.DataFrame:
    out = table.copy()
    for col in ("start", "end"):
        t = table[col].to_numpy()
        k = np.searchsorted(points, t, side="right") - 1
        out[col] = t + np.where(k >= 0, cum[np.maximum(k, 0)], 0)
    return out


def slow_down(kernels, api, copies, name: str, factor: int = 2):
    """(kernels, api, copies) with every dispatch of ``name`` ``factor`` x longer (time warp)."""
    sel = kernels["name"].astype(str).to_numpy() == name
    ends = kernels["end"].to_numpy()[sel]
    extra = (factor - 1) * (ends - kernels["start"].to_numpy()[sel])
    order = np.argsort(ends, kind="stable")
    points, cum = ends[order], np.cumsum(extra[order])
    return _warp(kernels, points, cum), _warp(api, points, cum), _warp(copies, points, cum)


def remove_kernel(kernels, api, name: str):
    """(kernels, api) without the dispatches of ``name`` and the calls that launched them."""
    sel = kernels["name"].astype(str).to_numpy() == name
    corr = kernels["correlation_id"].to_numpy()[sel]
    keep_api = ~np.isin(api["correlation_id"].to_numpy(), corr)
    k = kernels[~sel].reset_index(drop=True)
    k["name"] = k["name"].cat.remove_unused_categories()
    return k, api[keep_api].reset_index(drop=True)


def test_slow_down_is_a_pure_time_warp():
    synth = build(spec("per_iteration"))
    k, a, c = slow_down(synth.kernels, synth.api, synth.copies, ATTENTION)
    dur0 = synth.kernels["end"].to_numpy() - synth.kernels["start"].to_numpy()
    dur1 = k["end"].to_numpy() - k["start"].to_numpy()
    sel = synth.kernels["name"].astype(str).to_numpy() == ATTENTION
    assert sel.sum() == synth.expected.kernels.loc[ATTENTION, "calls"]
    assert np.array_equal(dur1[sel], 2 * dur0[sel])
    assert np.array_equal(dur1[~sel], dur0[~sel])
    # idle holes between consecutive GPU activities keep their lengths
    starts0 = np.concatenate([synth.kernels["start"], synth.copies["start"]])
    ends0 = np.concatenate([synth.kernels["end"], synth.copies["end"]])
    starts1 = np.concatenate([k["start"], c["start"]])
    ends1 = np.concatenate([k["end"], c["end"]])
    o0, o1 = np.argsort(starts0, kind="stable"), np.argsort(starts1, kind="stable")
    assert np.array_equal(o0, o1)
    assert np.array_equal(starts0[o0][1:] - ends0[o0][:-1], starts1[o1][1:] - ends1[o1][:-1])
    total = int(synth.expected.kernels.loc[ATTENTION, "total_ns"])
    assert int(max(a["end"].max(), c["end"].max())) - int(synth.expected.wall_span[1]) == total


def test_remove_kernel_drops_dispatches_and_launches():
    synth = build(spec("per_iteration"))
    k, a = remove_kernel(synth.kernels, synth.api, REDUCE)
    calls = int(synth.expected.kernels.loc[REDUCE, "calls"])
    assert len(k) == len(synth.kernels) - calls
    assert len(a) == len(synth.api) - calls
    assert REDUCE not in set(k["name"].astype(str))
