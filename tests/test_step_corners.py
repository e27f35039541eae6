"""Issue 33 item 4: steps on training traces.

* GPT-2 training (h200/gpt2_shapes_modules): the only repeated host ranges are the
  optimizer's ``Optimizer.step#AdamW.step`` (3.7 ms of ~31 ms iterations): they mark a phase,
  so the iterations run start to start, checked against an exact parse of the trace (the
  ranges' starts; kernels counted by their launching runtime call's start).
* An empty trailing ``ProfilerStep`` (no GPU work) stays in the table and out of the steady
  state: the steady median equals that of the unmodified trace."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.loaders import load_path

H200 = Path(__file__).parent / "data" / "kineto" / "h200"
GPT2 = H200 / "gpt2_shapes_modules.pt.trace.json.gz"
TRAIN = H200 / "train_sync.pt.trace.json.gz"
ADAMW = "Optimizer.step#AdamW.step"


def events(path: Path) -> list[dict]:
    with gzip.open(path) as fh:
        return json.load(fh)["traceEvents"]


def ns(us: float) -> int:
    return round(us * 1000)


def steps_of(path: Path) -> dict:
    return build_summary(load_path(path, use_cache=False), SummaryOptions(logs=False))["steps"]


def test_gpt2_iterations_run_start_to_start_of_the_optimizer_step():
    ev = events(GPT2)
    adamw = sorted(ns(e["ts"]) for e in ev if e.get("cat") == "user_annotation" and e.get("name") == ADAMW)
    assert len(adamw) == 2
    kernels = [e for e in ev if e.get("cat") == "kernel" and e.get("ph") == "X"]
    launch_at = {e["args"]["correlation"]: ns(e["ts"]) for e in ev if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    launched = [launch_at.get(k["args"].get("correlation"), ns(k["ts"])) for k in kernels]
    steps = steps_of(GPT2)
    assert steps["source"] == "marker" and steps["name"] == ADAMW
    assert "iterations start to start" in steps["how"] and "% of the GPU span" in steps["how"]
    [step] = steps["steps"]
    assert (step["start_ns"], step["end_ns"]) == (adamw[0], adamw[1])
    assert step["wall_ns"] == adamw[1] - adamw[0]  # ~30.9 ms, not the optimizer's 3.7 ms
    assert step["kernels"] == sum(adamw[0] <= t < adamw[1] for t in launched)
    assert steps["steady"]["median_wall_ns"] == adamw[1] - adamw[0]


def test_a_tiling_marker_keeps_its_own_ranges():
    """The ProfilerStep ranges of train_sync tile its run: the rule does not touch them, and
    a named marker (--step) is taken as given."""
    steps = steps_of(TRAIN)
    assert steps["source"] == "profiler_step"
    named = build_summary(load_path(GPT2, use_cache=False), SummaryOptions(logs=False, step_name=ADAMW))["steps"]
    assert [s["wall_ns"] for s in named["steps"]] == [3_657_024, 3_661_709]  # the ranges as recorded


def with_empty_trailing_step(out: Path, pid_shift: int = 0) -> list[dict]:
    """train_sync with one more ProfilerStep after its last, running no GPU work; its ProfilerStep events."""
    ev = events(TRAIN)
    prof = [e for e in ev if e.get("cat") == "user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#")]
    last = max(prof, key=lambda e: e["ts"])
    number = max(int(e["name"].split("#")[1]) for e in prof) + 1
    empty = {**last, "name": f"ProfilerStep#{number}", "ts": last["ts"] + last["dur"] + 10.0, "dur": 50.0}
    with gzip.open(TRAIN) as fh:
        doc = json.load(fh)
    doc["traceEvents"].append(empty)
    for e in doc["traceEvents"]:  # another process of the same program
        if isinstance(e.get("pid"), int):
            e["pid"] += pid_shift
    with gzip.open(out, "wt") as fh:
        json.dump(doc, fh)
    return prof


def test_an_empty_trailing_profiler_step_is_not_averaged(tmp_path):
    out = tmp_path / "train_sync_trailing.pt.trace.json.gz"
    prof = with_empty_trailing_step(out)
    before, after = steps_of(TRAIN), steps_of(out)
    assert len(after["steps"]) == len(before["steps"]) + 1 and after["steps"][-1]["kernels"] == 0
    assert after["steady_distribution"] == before["steady_distribution"]
    assert after["steady"] == before["steady"] and after["warmup_steps"] == before["warmup_steps"]
    # the steady median from the ProfilerStep ranges themselves (the JSON), warm-up steps left out
    walls = [ns(e["dur"]) for e in sorted(prof, key=lambda e: e["ts"])]
    assert after["steady"]["median_wall_ns"] == pytest.approx(float(np.median(walls[before["warmup_steps"] :])), abs=1)
    assert "empty trailing step" in after["how"]


def test_an_empty_trailing_step_of_every_process_is_not_averaged(tmp_path):
    """Two processes (the same training trace twice, one with the empty trailing step added)
    combined step by step: the whole run's steady state leaves the empty step out."""
    both = tmp_path / "both"
    both.mkdir()
    with_empty_trailing_step(both / "rank0.pt.trace.json.gz")
    with_empty_trailing_step(both / "rank1.pt.trace.json.gz", pid_shift=1)
    whole = build_summary(load_path(both, use_cache=False), SummaryOptions(logs=False))["steps"]
    assert whole["combined"] == "max" and whole["steps"][-1]["kernels"] == 0
    alone = steps_of(TRAIN)
    assert whole["steady_distribution"] == alone["steady_distribution"]
