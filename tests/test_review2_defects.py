"""Defects reported by the line-by-line review and left open there: each test reproduces one
and holds its fix."""

from __future__ import annotations

import json

import numpy as np

from tui_prof.guard import jsonout


def test_a_numpy_float32_nan_is_written_as_null_and_counted():
    seen = jsonout.NonFinite()
    text = jsonout.dumps({"a": np.float32("nan"), "b": [np.float32("inf"), np.float32(1.5)]}, seen=seen, default=str)
    assert json.loads(text) == {"a": None, "b": [None, 1.5]}
    assert seen.count == 2 and seen.paths == ["$.a", "$.b[0]"]


def test_nested_compile_ranges_count_their_time_once():
    """torch.compile inside an inductor range inside a dynamo range: the warm-up's
    compile time is the union of the ranges (the outer one, 1,000 ns, plus a disjoint
    200 ns), not the sum of the nested ones."""
    from tui_prof.analysis.warmup import warmup_breakdown
    from tui_prof.model import Run, RunMeta, make_table

    markers = make_table(
        "markers",
        {
            "start": [0, 100, 300, 2_000, 10_000],
            "end": [1_000, 900, 600, 2_200, 10_500],
            "name": ["dynamo", "inductor", "compile_fx", "triton", "forward"],
            "source": "user_annotation",
            "pid": 1,
            "tid": [1, 1, 1, 2, 1],
        },
    )
    run = Run(meta=RunMeta(label="r"), markers=markers)
    steps = {
        "steps": [{"warmup": True, "start_ns": 0, "end_ns": 5_000, "wall_ns": 5_000}, {"warmup": False, "start_ns": 5_000, "end_ns": 6_000, "wall_ns": 1_000}]
    }
    w = warmup_breakdown(run, steps)
    assert w is not None
    assert w["compilation"]["compile_ranges"] == 4
    assert w["compilation"]["compile_range_ns"] == 1_000 + 200
