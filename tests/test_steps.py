"""Steps, warm-up, outliers and memory (issue 21), each number against an independent source:
exact parses of the real H200 traces' JSON, and the stepped generator's known answers
(tui_prof/synth/steps.py) written as Kineto and as rocprofv3 CSV."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from synthetic import synthetic_runset

from tui_prof.analysis import diff
from tui_prof.analysis import steps as st
from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.cli import main
from tui_prof.exits import EXIT_USAGE
from tui_prof.loaders import load_path
from tui_prof.model import Run, RunMeta, RunSet
from tui_prof.model.schema import make_table
from tui_prof.synth.steps import StepSpec, build_steps
from tui_prof.synth.write_csv import write_rocprofv3_csv
from tui_prof.synth.write_kineto import write_kineto

H200 = Path(__file__).parent / "data" / "kineto" / "h200"
TRAIN_SYNC = H200 / "train_sync.pt.trace.json.gz"
COLD = H200.parent / "h200_cold" / "cold_train_memory.pt.trace.json.gz"


def _events(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as fh:
        return json.load(fh)["traceEvents"]


def _ns(us: float) -> int:
    return round(us * 1000)


def _host_ranges(events: list[dict], match) -> list[tuple[str, int, int]]:
    """(name, start ns, end ns) of the host user_annotation ranges whose name matches, by start."""
    out = [
        (e["name"], _ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation" and match(e["name"])
    ]
    return sorted(out, key=lambda r: r[1])


@pytest.fixture(scope="module")
def train_sync():
    return build_summary(load_path(TRAIN_SYNC, use_cache=False), SummaryOptions(logs=False)), _events(TRAIN_SYNC)


@pytest.fixture(scope="module")
def cold():
    return build_summary(load_path(COLD, use_cache=False), SummaryOptions(logs=False)), _events(COLD)


def test_profiler_steps_of_the_real_training_run(train_sync):
    doc, events = train_sync
    steps = doc["steps"]
    ranges = _host_ranges(events, lambda n: n.startswith("ProfilerStep#"))
    assert [r[0] for r in ranges] == [f"ProfilerStep#{i}" for i in range(2, 8)]
    assert steps["source"] == "profiler_step" and steps["detected"]
    assert [s["label"] for s in steps["steps"]] == [r[0] for r in ranges]
    assert [(s["start_ns"], s["end_ns"]) for s in steps["steps"]] == [(r[1], r[2]) for r in ranges]
    walls = [r[2] - r[1] for r in ranges]
    assert [s["wall_ns"] for s in steps["steps"]] == walls
    assert steps["distribution"]["median_ns"] == float(np.median(walls))
    assert steps["distribution"]["min_ns"] == min(walls) and steps["distribution"]["max_ns"] == max(walls)
    # kernels by their launching call's start (correlation id), parsed here from the JSON
    launch_ts = {
        e["args"]["correlation"]: _ns(e["ts"]) for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    per_step = [0] * len(ranges)
    for e in events:
        if e.get("cat") == "kernel":
            t = launch_ts[e["args"]["correlation"]]
            for i, (_, s, end) in enumerate(ranges):
                if s <= t < end:
                    per_step[i] += 1
    assert per_step == [455] * 6
    assert [s["kernels"] for s in steps["steps"]] == per_step
    assert steps["warmup_steps"] == 0  # the profiler's own warm-up step is not recorded: all six are steady
    assert steps["outliers"] == []


def test_user_range_steps_warmup_and_memory_of_the_cold_run(cold):
    doc, events = cold
    steps = doc["steps"]
    ranges = _host_ranges(events, lambda n: n == "train_step")
    assert steps["source"] == "marker" and steps["name"] == "train_step"
    assert [(s["start_ns"], s["end_ns"]) for s in steps["steps"]] == [(r[1], r[2]) for r in ranges]
    walls = [r[2] - r[1] for r in ranges]
    steady_median = float(np.median(walls[2:]))
    # step 1 (3.02 s: cuDNN autotuning) and step 2 (allocator growth) are the slow prefix
    assert walls[0] > 50 * steady_median and walls[1] > 1.3 * steady_median
    assert all(w < 1.3 * steady_median for w in walls[2:])
    assert steps["warmup_steps"] == 2
    assert [s["warmup"] for s in steps["steps"]] == [True, True] + [False] * 8
    assert steps["steady"]["median_wall_ns"] == steady_median
    assert steps["steady_distribution"]["max_ns"] == max(walls[2:])
    # memory: the peak is the largest Total Allocated of the GPU's [memory] events
    mem = [e["args"] for e in events if e.get("name") == "[memory]" and e.get("ph") == "i"]
    gpu = [a for a in mem if a.get("Device Type") == 1 and a.get("Device Id") == 0]
    assert len(mem) == 21638 and gpu
    peak = max(a["Total Allocated"] for a in gpu)
    assert doc["memory"]["source"] == "allocator totals"
    assert doc["memory"]["peak_allocated_bytes"] == peak
    assert doc["memory"]["peak_reserved_bytes"] == max(a["Total Reserved"] for a in gpu)
    assert doc["measurement"]["peak_memory_bytes"] == peak
    # per-step high-water mark: the largest Total Allocated inside each step (or held at its start)
    mem_ts = sorted((_ns(e["ts"]), e["args"]["Total Allocated"]) for e in events if e.get("name") == "[memory]" and e.get("args", {}).get("Device Type") == 1)
    for s, (_, lo, hi) in zip(steps["steps"], ranges, strict=True):
        before = [v for t, v in mem_ts if t < lo]
        inside = [v for t, v in mem_ts if lo <= t < hi]
        assert s["memory_peak_bytes"] == max(([before[-1]] if before else []) + inside)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    run, answers = build_steps(StepSpec())
    root = tmp_path_factory.mktemp("steps")
    write_kineto(run, root / "kineto" / "steps.pt.trace.json")
    write_rocprofv3_csv(run, root / "csv")
    docs = {fmt: build_summary(load_path(root / fmt, use_cache=False), SummaryOptions(logs=False)) for fmt in ("kineto", "csv")}
    return docs, answers


@pytest.mark.parametrize("fmt", ["kineto", "csv"])
def test_synthetic_step_table_is_known_by_construction(synthetic, fmt):
    docs, ans = synthetic
    steps = docs[fmt]["steps"]
    assert steps["source"] == "marker" and steps["name"] == "train_step"
    rows = steps["steps"]
    assert [r["label"] for r in rows] == ans.labels
    assert [r["wall_ns"] for r in rows] == ans.walls
    assert [r["kernels"] for r in rows] == ans.kernels
    assert [r["copies"] for r in rows] == ans.copies
    assert [r["gpu_ns"] for r in rows] == ans.gpu_ns
    assert steps["warmup_steps"] == ans.warmup == 1
    steady = ans.walls[ans.warmup :]
    assert steps["steady"]["median_wall_ns"] == float(np.median(steady))
    assert steps["distribution"]["mean_ns"] == pytest.approx(float(np.mean(ans.walls)), abs=1e-3)
    assert steps["steady"]["kernels"] == sum(ans.kernels[ans.warmup :])
    # memory: high-water mark of every step and the peak (the CSV's frees name no agent)
    assert [r["memory_peak_bytes"] for r in rows] == ans.memory_marks
    assert docs[fmt]["memory"]["peak_allocated_bytes"] == ans.peak_allocated
    assert docs[fmt]["measurement"]["peak_memory_bytes"] == ans.peak_allocated
    assert docs[fmt]["memory"]["step_growth_bytes"] == ans.growth_steady
    if fmt == "kineto":
        assert docs[fmt]["memory"]["peak_reserved_bytes"] == ans.peak_reserved


@pytest.mark.parametrize("fmt", ["kineto", "csv"])
def test_outlier_step_says_what_differs(synthetic, fmt):
    docs, ans = synthetic
    steps = docs[fmt]["steps"]
    (o,) = steps["outliers"]
    assert o["label"] == ans.labels[ans.outlier]
    assert o["wall_ns"] == ans.walls[ans.outlier]
    assert o["extra_copies"] == 1 and o["extra_kernels"] == [] and o["missing_kernels"] == []
    assert o["reasons"][0].startswith("1 more copy")
    if fmt == "kineto":  # rocprofv3 CSV records no copy sizes
        assert o["extra_copy_bytes"] == 64 << 20
    codes = [f["code"] for f in docs[fmt]["findings"]]
    assert "slow-step" in codes and "memory-growth" in codes
    slow = next(f for f in docs[fmt]["findings"] if f["code"] == "slow-step")
    assert ans.labels[ans.outlier] in slow["message"] and "1 more copy" in slow["message"]


def test_outlier_threshold_is_strict():
    run, ans = build_steps(StepSpec(steps=6))
    rs = RunSet(root="s", runs=[Run(meta=RunMeta(label="s"), agents=run.agents, kernels=run.kernels, api=run.api, copies=run.copies, markers=run.markers)])
    steady = ans.walls[1:]
    ratio = ans.walls[ans.outlier] / float(np.median(steady))
    just_below = build_summary(rs, SummaryOptions(logs=False, outlier_factor=ratio - 1e-6))["steps"]["outliers"]
    at = build_summary(rs, SummaryOptions(logs=False, outlier_factor=ratio))["steps"]["outliers"]
    assert [o["label"] for o in just_below] == [ans.labels[ans.outlier]]
    assert at == []


def test_given_warmup_and_step_name(train_sync):
    rs = load_path(TRAIN_SYNC, use_cache=False)
    doc = build_summary(rs, SummaryOptions(logs=False, warmup=2))
    walls = [s["wall_ns"] for s in doc["steps"]["steps"]]
    assert doc["steps"]["warmup_steps"] == 2 and doc["steps"]["warmup_source"] == "given"
    assert doc["steps"]["steady"]["median_wall_ns"] == float(np.median(walls[2:]))
    named = build_summary(rs, SummaryOptions(logs=False, step_name="Optimizer.step#SGD.step"))["steps"]
    ranges = _host_ranges(train_sync[1], lambda n: n == "Optimizer.step#SGD.step")
    assert named["source"] == "marker" and [s["wall_ns"] for s in named["steps"]] == [r[2] - r[1] for r in ranges]
    assert "Optimizer.step#SGD.step" in train_sync[0]["steps"]["candidates"]
    missing = build_summary(rs, SummaryOptions(logs=False, step_name="no such range"))["steps"]
    assert not missing["detected"] and "no such range" in missing["how"]


def test_kernel_belongs_to_the_step_of_its_launch():
    """A kernel launched at the end of step 1 that runs during step 2 counts in step 1."""
    api = make_table(
        "api", {"start": [90, 150], "end": [95, 155], "domain": "cuda", "name": ["cudaLaunchKernel"] * 2, "pid": 1, "tid": 1, "correlation_id": [1, 2]}
    )
    kernels = make_table("kernels", {"start": [120, 160], "end": [140, 170], "agent": 0, "pid": 1, "tid": 1, "correlation_id": [1, 2], "name": ["a", "b"]})
    markers = make_table("markers", {"start": [0, 100, 200], "end": [100, 200, 300], "name": "step", "source": "user_annotation", "pid": 1, "tid": 1})
    run = Run(meta=RunMeta(label="r"), api=api, kernels=kernels, markers=markers)
    part, _ = st.steps_of(run, "r")
    assert [s["kernels"] for s in part["steps"]] == [1, 1, 0]
    assert [s["top_kernel"] for s in part["steps"]] == ["a", "b", None]
    assert [s["busy_ns"] for s in part["steps"]] == [0, 30, 0]  # GPU busy inside each host range


def test_steps_inferred_from_the_launch_sync_pattern():
    runset, synth = synthetic_runset(sync="per_iteration", iterations=6)
    steps = build_summary(runset, SummaryOptions(logs=False))["steps"]
    assert steps["source"] == "inferred" and "inferred" in steps["how"] and "hipDeviceSynchronize" in steps["how"]
    assert [s["kernels"] for s in steps["steps"]] == [5] * 6
    # each step: first launch of the iteration to the end of its sync
    api = synth.api
    launches = api[api["name"] == "hipLaunchKernel"]["start"].to_numpy()
    syncs = api[api["name"] == "hipDeviceSynchronize"]["end"].to_numpy()
    assert [s["start_ns"] for s in steps["steps"]] == launches[::5].tolist()
    assert [s["end_ns"] for s in steps["steps"]] == syncs.tolist()
    per_launch, _ = synthetic_runset(sync="per_launch", iterations=6)  # one launch per sync: no steps
    assert not build_summary(per_launch, SummaryOptions(logs=False))["steps"]["detected"]


def test_cli_step_options(capsys, synthetic, tmp_path):
    run, _ = build_steps(StepSpec())
    path = write_kineto(run, tmp_path / "s.pt.trace.json")
    assert main(["summary", "--json", "--no-cache", "--warmup", "2", "--outlier-factor", "20", str(path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["steps"]["warmup_steps"] == 2 and doc["steps"]["outlier_factor"] == 20 and doc["steps"]["outliers"] == []
    assert main(["summary", "--no-cache", str(path)]) == 0
    text = capsys.readouterr().out
    assert "Steps (8)" in text and "w train_step [1]" in text and "slow: train_step [6]" in text and "GPU memory" in text
    assert main(["summary", "--outlier-factor", "1", str(path)]) == EXIT_USAGE


def _stepped_runset(**changes) -> RunSet:
    run, _ = build_steps(StepSpec(**changes))
    return RunSet(root="s", runs=[Run(meta=RunMeta(label="s"), agents=run.agents, kernels=run.kernels, api=run.api, copies=run.copies, markers=run.markers)])


def test_diff_compares_steady_state_medians():
    a = _stepped_runset()
    slower = _stepped_runset(kernel_ns=60_000, steps=6)  # 6 x 10 us more GPU time per step; fewer steps
    result = diff.diff_runsets(a, slower)
    _, ans_a = build_steps(StepSpec())
    _, ans_b = build_steps(StepSpec(kernel_ns=60_000, steps=6))
    row = result.metric("step_median_ns")
    assert row["a"] == float(np.median(ans_a.walls[1:])) and row["b"] == float(np.median(ans_b.walls[1:]))
    assert row["status"] == "regressed"
    assert result.metric("step_kernels")["status"] == "within noise"
    assert "step_median_ns" in [m["key"] for m in diff.regressions(result, 1.0)]
    same = diff.diff_runsets(a, _stepped_runset(steps=6))
    assert same.metric("step_median_ns")["delta"] == 0 and same.metric("step_median_ns")["status"] == "within noise"
    assert any(n.startswith("steps: A 7 steady of 8") for n in same.notes)


def test_diff_step_noise_band_is_the_step_spread(train_sync):
    """train_sync's steps spread by ~8 % (interquartile): a 5 % slower median is within its noise."""
    a = load_path(TRAIN_SYNC, use_cache=False)
    doc = train_sync[0]
    rows = [r for r in doc["steps"]["steps"] if not r["warmup"]]
    walls = np.array([r["wall_ns"] for r in rows], dtype=np.float64)
    band = 100.0 * float(np.percentile(walls, 75) - np.percentile(walls, 25)) / float(np.median(walls))
    scaled = [dict(r, wall_ns=int(r["wall_ns"] * 1.05)) for r in doc["steps"]["steps"]]
    b_doc = dict(doc, steps=dict(doc["steps"], steps=scaled))
    (row, *_), _ = diff.step_metric_rows(doc, b_doc)
    assert row["threshold"] == pytest.approx(band) and band > 5
    assert row["status"] == "within noise"
    assert diff.step_metric_rows(doc, build_summary(load_path(COLD, use_cache=False), SummaryOptions(logs=False)))[0][0]["status"] == "regressed"
    assert diff.diff_runsets(a, a).metric("step_median_ns")["status"] == "within noise"
