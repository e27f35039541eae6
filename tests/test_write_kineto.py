"""Synthetic Kineto traces (tui_prof.synth.write_kineto): shape against a real ROCm trace, and
round trip through the loader against the answers known by construction (SynthRun.expected)."""

import gzip
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from tui_prof.analysis.timeline import gpu_timeline
from tui_prof.loaders import kineto, load_path
from tui_prof.loaders.base import read_head
from tui_prof.synth import SynthSpec, build
from tui_prof.synth.write_kineto import us_text, write_kineto

REAL = Path(__file__).parent / "data" / "kineto" / "mi300__resnet_act_checkpoint.json.gz"

SPECS = {
    "per_launch": SynthSpec(iterations=30, kernels_per_iteration=6, sync="per_launch", seed=1),
    "per_iteration": SynthSpec(iterations=20, kernels_per_iteration=8, sync="per_iteration", gpus=2, streams=2, seed=2),
    "end": SynthSpec(iterations=40, kernels_per_iteration=5, sync="end", gemm_share=0.2, gap_ns=500, seed=3),
}


def test_us_text_is_exact_3_decimals():
    ns = np.array([0, 1, 999, 1000, 1_550_151_853_000_001, 3_743_411_222_894_405])
    assert list(us_text(ns)) == ["0.000", "0.001", "0.999", "1.000", "1550151853000.001", "3743411222894.405"]


def keys_by_cat(events):
    """(cat, ph) -> set of top-level keys, and -> set of args keys."""
    top, args = {}, {}
    for e in events:
        key = (e.get("cat"), e.get("ph"), e.get("name") if e.get("ph") == "M" else None)
        top.setdefault(key, set()).update(e)
        args.setdefault(key, set()).update(e.get("args") or {})
    return top, args


def test_shape_matches_real_rocm_trace(tmp_path):
    """Same top-level keys, same event keys per category and the same arg keys as the real
    MI300X trace (the real kernels lack grid/block and External id: older Kineto shape, as in
    the bert MI300X trace), µs with exactly 3 decimals as libkineto prints them."""
    path = write_kineto(build(SPECS["per_iteration"]), tmp_path / "synth.json.gz")
    text = gzip.open(path, "rt").read()
    ours = json.loads(text)
    real = json.load(gzip.open(REAL))
    assert set(ours) <= set(real) | {"hip_driver_version"}
    assert {"schemaVersion", "deviceProperties", "traceEvents", "hip_runtime_version", "roctracer_version", "baseTimeNanoseconds"} <= set(ours)
    assert set(ours["deviceProperties"][0]) == set(real["deviceProperties"][0])
    o_top, o_args = keys_by_cat(ours["traceEvents"])
    r_top, r_args = keys_by_cat(real["traceEvents"])
    for key in o_top:
        assert key in r_top, key
        assert o_top[key] == r_top[key], key
    assert o_args[("kernel", "X", None)] - r_args[("kernel", "X", None)] <= {"External id", "grid", "block"}
    assert o_args[("cuda_runtime", "X", None)] <= r_args[("cuda_runtime", "X", None)]
    assert o_args[("gpu_memcpy", "X", None)] <= r_args[("gpu_memcpy", "X", None)] | {"bytes", "memory bandwidth (GB/s)"}
    runtime = {e["name"] for e in ours["traceEvents"] if e.get("cat") == "cuda_runtime"}
    assert runtime == {"hipLaunchKernel", "hipDeviceSynchronize", "hipMemcpy"}
    numbers = re.findall(r'"(?:ts|dur)": ([0-9.]+)', text)
    assert numbers and all(len(t.split(".")[1]) == 3 for t in numbers)
    flows = Counter(e["ph"] for e in ours["traceEvents"] if e.get("cat") == "ac2g")
    run = build(SPECS["per_iteration"])
    assert flows == {"s": len(run.kernels) + len(run.copies), "f": len(run.kernels) + len(run.copies)}
    assert kineto.sniff(path, read_head(path))


@pytest.mark.parametrize("mode", sorted(SPECS))
@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_round_trip_through_load_path(tmp_path, mode, suffix):
    run = build(SPECS[mode])
    exp = run.expected
    write_kineto(run, tmp_path / f"rank0_trace{suffix}")
    runset = load_path(tmp_path)
    assert not runset.errors, runset.errors
    (loaded,) = runset.runs
    assert loaded.meta.formats == ["kineto"] and loaded.meta.pid == run.spec.pid
    k = loaded.kernels
    assert len(k) == exp.dispatches
    totals = k.assign(d=k["end"] - k["start"]).groupby(k["name"].astype(str))["d"].agg(["size", "sum", "min", "max"])
    assert set(totals.index) == set(exp.kernels.index)
    for name, row in exp.kernels.iterrows():
        assert tuple(int(x) for x in totals.loc[name]) == (row.calls, row.total_ns, row.min_ns, row.max_ns)
    # every kernel interval, launch geometry (grid written in blocks, loaded as work-items) and link
    ours = k.sort_values(["agent", "start"]).reset_index(drop=True)
    theirs = run.kernels.sort_values(["agent", "start"]).reset_index(drop=True)
    for col in ("start", "end", "agent", "stream", "tid", "correlation_id", "grid_x", "grid_y", "grid_z", "wg_x", "wg_y", "wg_z", "lds_bytes"):
        assert np.array_equal(ours[col].to_numpy(), theirs[col].to_numpy()), col
    # copies
    c = loaded.copies
    assert c.groupby(c["direction"].astype(str))["bytes"].sum().to_dict() == exp.copy_bytes
    assert c["direction"].astype(str).value_counts().to_dict() == exp.copy_calls
    # API calls
    api = loaded.api
    assert set(api["domain"].astype(str)) == {"hip"}
    got_api = api.assign(d=api["end"] - api["start"]).groupby(api["name"].astype(str))["d"].agg(["size", "sum"])
    for name, row in exp.api.iterrows():
        assert (int(got_api.loc[name, "size"]), int(got_api.loc[name, "sum"])) == (row.calls, row.total_ns)
    # GPU agents: one per synthetic GPU, with the MI300X properties attached
    assert [a.id for a in loaded.gpu_agents] == [a.id for a in run.gpu_agents]
    assert all(a.cu_count == 304 and a.wave_size == 64 for a in loaded.gpu_agents)
    # analysis: every idle gap (threshold 1 ns) equals the constructed one, busy and span too
    agents, gaps = gpu_timeline(loaded, threshold_ns=1)
    by_agent = {a["agent"]: a for a in agents}
    for agent, expected_gaps in exp.gaps.items():
        got = gaps[gaps["agent"] == agent].sort_values("start")
        assert np.array_equal(got["start"].to_numpy(), expected_gaps["start"].to_numpy())
        assert np.array_equal(got["end"].to_numpy(), expected_gaps["end"].to_numpy())
        assert by_agent[agent]["busy_ns"] == exp.busy_ns[agent]
        assert by_agent[agent]["span_ns"] == exp.span_ns[agent]


def test_causes_of_gaps_match_construction(tmp_path):
    """gpu_timeline's cause of each gap (sync/copy/launch) equals the constructed cause."""
    for mode in ("per_launch", "end"):
        run = build(SPECS[mode])
        write_kineto(run, tmp_path / mode / "t.json")
        (loaded,) = load_path(tmp_path / mode).runs
        _, gaps = gpu_timeline(loaded, threshold_ns=1)
        for agent, expected_gaps in run.expected.gaps.items():
            got = gaps[gaps["agent"] == agent].sort_values("start")
            assert list(got["cause"].astype(str)) == list(expected_gaps["cause"].astype(str)), mode


def test_large_run_writes_fast_and_loads(tmp_path):
    """100k dispatches: vectorised writer; loader gets every dispatch and the exact kernel total."""
    import time

    run = build(SynthSpec(iterations=10_000, kernels_per_iteration=10, sync="per_iteration"))
    t = time.perf_counter()
    path = write_kineto(run, tmp_path / "big.json")
    elapsed = time.perf_counter() - t
    assert elapsed < 30, elapsed  # ~2 s on the dev box; per-event json.dumps takes several times longer
    loaded = kineto.load_file(path)
    assert len(loaded.kernels) == run.expected.dispatches == 100_000
    assert int((loaded.kernels["end"] - loaded.kernels["start"]).sum()) == run.expected.kernel_total_ns
