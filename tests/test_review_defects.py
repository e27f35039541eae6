"""Defects found by reading the decision analyses, the SQL sandbox and the MCP server line
by line: each test reproduces one and holds its fix."""

from __future__ import annotations

import functools
import re

import pytest

from tui_prof.analysis import critical
from tui_prof.analysis import summary as summary_module
from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.model import Run, RunSet
from tui_prof.synth.spec import GEMM_NAME, SynthSpec, build


@pytest.fixture
def sampled_host_bound(monkeypatch) -> dict:
    """A launch-bound run (a dominant GEMM, host work between launches) whose critical path
    is analysed over its first part only (a small node budget): the sampled case that a
    trace of more than ``critical.MAX_NODES`` calls and operations always is."""
    monkeypatch.setattr(critical, "MIN_NODES", 10)
    monkeypatch.setattr(summary_module, "process_windows", functools.partial(critical.process_windows, max_nodes=100))
    s = build(SynthSpec(iterations=200, kernels_per_iteration=2, gemm_share=0.9, gap_ns=20_000, sync="per_launch", htod_copies=0, dtoh_copies=0))
    run = Run(agents=s.agents, kernels=s.kernels, api=s.api, copies=s.copies)
    run.meta.label = "many-small"
    return build_summary(RunSet(root="x", runs=[run]), SummaryOptions(logs=False))


def test_sampled_path_share_of_the_dominant_kernel_stays_within_the_path(sampled_host_bound):
    """The kernel's time on the path is scaled to the whole window; the path's total must be
    too, or the share reads 500 %."""
    doc = sampled_host_bound
    cp = doc["critical_path"]["processes"][0]
    assert cp["sampled_ns"] < cp["window_ns"]  # the case under test
    dom = next(f for f in doc["findings"] if f["code"] == "dominant-kernel")
    assert "not the bottleneck" in dom["message"]
    share = float(re.search(r"this kernel ([\d.]+) %", dom["message"]).group(1))
    expected = 100 * dom["numbers"]["critical_ns"] / (cp["total_ns"] * cp["window_ns"] / cp["sampled_ns"])
    assert share == pytest.approx(expected, abs=0.06) and 0 < share <= 100


def test_sampled_critical_ns_is_never_more_than_the_kernels_own_time(sampled_host_bound):
    """A kernel cannot be on the critical path longer than it ran (part <= whole)."""
    hot = sampled_host_bound["hotspots"]
    top = next(r for r in hot if r["name"] == GEMM_NAME)
    assert top["critical_ns"] > 0
    assert all(r["critical_ns"] <= r["total_ns"] for r in hot)
