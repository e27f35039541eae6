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
