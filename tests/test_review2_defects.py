"""Defects reported by the line-by-line review and left open there: each test reproduces one
and holds its fix."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from tui_prof.analysis import summary as summary_module
from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.guard import jsonout
from tui_prof.model import Run, RunSet
from tui_prof.synth.spec import GEMM_NAME, SynthSpec, build


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


def test_a_tensor_of_unknown_data_type_skips_the_operator_instead_of_shifting_shapes():
    """The FLOPs formulas read tensor inputs by position: dropping an input whose data type
    has no size used to shift the others (the add below costed as a [3072] add, the
    attention backward with k read as q)."""
    from tui_prof.analysis.flops import op_cost

    dims = "[[8, 256, 3072], [3072], []]"
    assert op_cost("aten::add", dims, '["float", "float", "Scalar"]')["flops"] == 8 * 256 * 3072  # the known-type call is costed
    assert op_cost("aten::add", dims, '["c10::Float4_e2m1fn_x2", "float", "Scalar"]') is None  # packed sub-byte: no whole-byte size
    q = "[8, 12, 256, 64]"
    bwd_dims = f"[{q}, {q}, [8, 12, 512, 64], [8, 12, 512, 64], {q}, [8, 12, 256]]"
    f = '"float"'
    assert op_cost("aten::_scaled_dot_product_flash_attention_backward", bwd_dims, f"[{f}, {f}, {f}, {f}, {f}, {f}]") is not None
    assert op_cost("aten::_scaled_dot_product_flash_attention_backward", bwd_dims, f'["c10::quint4x2", {f}, {f}, {f}, {f}, {f}]') is None


def test_a_projection_longer_than_the_run_saves_nothing_in_every_number(monkeypatch):
    """``saving_ns`` was clamped at 0 where a finding took it, its share and per-step figure
    not: a projection that lengthens the run rendered as "0 ns (-x %)"."""
    from tui_prof.analysis import savings
    from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES
    from tui_prof.analysis.whatif import Edits

    windows: list = []

    def keep(findings, w, rules):
        windows.append(w)
        return findings

    monkeypatch.setattr(summary_module, "add_savings", keep)
    s = build(SynthSpec(iterations=8, kernels_per_iteration=3, gemm_share=0.8, sync="per_iteration", htod_copies=0, dtoh_copies=0))
    run = Run(agents=s.agents, kernels=s.kernels, api=s.api, copies=s.copies, markers=s.markers)
    build_summary(RunSet(root="x", runs=[run]), SummaryOptions(logs=False))
    parts = savings.parts_of(windows[0])
    assert parts and parts[0].steps > 0
    longer = savings.saving(parts, Edits(scales=[(GEMM_NAME, 3.0)]), DEFAULT_CATEGORY_RULES)
    assert longer is not None
    assert longer["saving_ns"] == 0 and longer["saving_pct"] == 0.0 and longer["saving_step_ns"] == 0
    shorter = savings.saving(parts, Edits(scales=[(GEMM_NAME, 0.5)]), DEFAULT_CATEGORY_RULES)
    assert shorter is not None and shorter["saving_ns"] > 0
    assert shorter["saving_pct"] == round(100.0 * shorter["saving_ns"] / shorter["window_ns"], 4) > 0 and shorter["saving_step_ns"] > 0


def test_no_critical_path_group_or_row_is_negative_or_more_than_the_path():
    """h200 copies with every sync removed: a call returning just before its copy's end was a
    negative interval, and the projected path showed "sync -0.1 %". The overlap now comes off
    the intervals before it: every group and row within [0, total], and they add up."""
    from pathlib import Path

    from tui_prof.analysis.whatif import Edits, run_what_if
    from tui_prof.loaders import load_path

    trace = Path(__file__).parent / "data" / "kineto" / "h200" / "copies.pt.trace.json.gz"
    doc = run_what_if(load_path(str(trace)), Edits(removes=["sync"]))
    for which in ("baseline", "projected"):
        path = doc["processes"][0]["critical_path"][which]
        total, groups = path["total_ns"], path["groups"]
        assert total > 0 and sum(groups.values()) == total, which
        assert all(0 <= v <= total for v in groups.values()), (which, groups)
        assert all(0 <= row["ns"] <= total and 0 <= row["pct"] <= 100 for row in path["top"]), which


def test_times_past_2_to_the_61_ns_keep_the_schedule_in_dependency_order():
    """depgraph._order sorted on start x 4: past 2^61 ns (inside the span build_graph
    accepts) the key wrapped negative, a long run of calls on one thread was processed
    before the calls it follows, and a longer first call did not move them."""
    from tui_prof.analysis import depgraph as dg
    from tui_prof.model import make_table

    n = 200
    starts = np.concatenate([[0], (1 << 61) + 100 * np.arange(n, dtype=np.int64)])
    api = make_table(
        "api", {"start": starts, "end": starts + 10, "domain": "cuda", "name": "cudaGetDevice", "pid": 1, "tid": 1, "correlation_id": np.arange(n + 1) + 1}
    )
    g = dg.build_graph(Run(api=api))
    assert g.size == n + 1 and int(g.start.max()) < dg.MAX_SPAN_NS
    s, e = dg.schedule(g, g.dur, g.gap, g.lat, g.ret, g.wait >= 0)
    assert (s == g.start).all() and (e == g.end).all()
    longer = g.dur.copy()
    longer[0] += 1_000
    s2, e2 = dg.schedule(g, longer, g.gap, g.lat, g.ret, g.wait >= 0)
    assert (s2[1:] - g.start[1:] == 1_000).all()


@pytest.fixture
def long_name_run(tmp_path):
    """An allowed folder holding a Kineto trace with a kernel named by 20,000 ``a``."""
    events = [
        {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": 2, "pid": 0, "tid": 7, "args": {"device": 0, "stream": 7}}
        for name, ts in (("a" * 20_000, 1), ("plain", 5))
    ]
    (tmp_path / "t.json").write_text(json.dumps({"traceEvents": events}))
    return tmp_path


@pytest.mark.parametrize("edits", [{"scale": ["(a+)+$=2"]}, {"scale": ["(a|aa)*!=2"]}, {"remove": ["host:(x?){40}x{40}"]}, {"scale": ["(a)\\1+!=2"]}])
def test_a_pattern_that_backtracks_exponentially_is_refused_at_once(long_name_run, edits):
    """``(a+)+$`` against a long name of ``a`` took exponential time in a worker thread that
    nothing could stop; such shapes are refused before any matching."""
    from tui_prof import mcp_server
    from tui_prof.analysis.whatif import Edits, WhatIfError

    ctx = mcp_server.Context(mcp_server.allowed_roots([str(long_name_run)]), use_cache=False)
    t = time.monotonic()
    with pytest.raises(mcp_server.Refused, match="exponential|back-reference"):
        mcp_server.tool_whatif(ctx, "t.json", edits)
    with pytest.raises(WhatIfError):
        Edits(scales=[(s.rsplit("=", 1)[0], 2.0) for s in edits.get("scale", [])], removes=edits.get("remove", [])).check()
    assert time.monotonic() - t < 5


def test_ordinary_patterns_are_accepted_and_match():
    from tui_prof.analysis.saferegex import BoundedPattern

    names = ["ncclKernel_AllReduce_RING", "void gemm<float>", "conv2d_fwd", "abab"]
    assert BoundedPattern("nccl.*allreduce").search_all(names).tolist() == [True, False, False, False]
    assert BoundedPattern("^(gemm|void gemm)|conv").search_all(names).tolist() == [False, True, True, False]
    assert BoundedPattern("(ab){2}$|[<>]+").search_all(names).tolist() == [False, True, False, True]


def test_a_slow_polynomial_match_stops_at_the_time_budget(long_name_run, monkeypatch):
    """``.*a.*b`` is no exponential shape but backtracks cubically on 20,000 ``a``: matched
    under a time budget (the regex module, in the mcp extra), then refused."""
    pytest.importorskip("regex")
    from tui_prof import mcp_server
    from tui_prof.analysis import saferegex

    monkeypatch.setattr(saferegex, "SECONDS", 0.5)
    ctx = mcp_server.Context(mcp_server.allowed_roots([str(long_name_run)]), use_cache=False)
    t = time.monotonic()
    with pytest.raises(mcp_server.Refused, match="took more than 0.5 s"):
        mcp_server.tool_whatif(ctx, "t.json", {"scale": [".*a.*a.*b=2"]})
    assert time.monotonic() - t < 10


@pytest.mark.parametrize(
    ("run", "sibling"),
    [("run.db", "run.db-wal"), ("run.db", "run.db-journal"), ("w_pmc_perf.csv", "w_sysinfo.csv"), ("pmc_perf.csv", "sysinfo.csv")],
)
def test_mcp_refuses_a_file_run_whose_sibling_links_outside(tmp_path, run, sibling):
    """A single-file run's loader reads files beside it (rocpd: ``X.db-wal``; rocprof-compute:
    the workload's ``sysinfo.csv``): a link there led outside the allowed folders."""
    from tui_prof import mcp_server

    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    (outside / "secret").write_text("not yours")
    (allowed / run).write_text("x")
    roots = mcp_server.allowed_roots([str(allowed)])
    (allowed / "other.txt").symlink_to(outside / "secret")  # not read by this run's load
    assert mcp_server.resolve_run(run, roots) == allowed / run
    (allowed / "inside").write_text("y")
    (allowed / sibling).symlink_to(allowed / "inside")  # a link that stays inside
    assert mcp_server.resolve_run(run, roots) == allowed / run
    (allowed / sibling).unlink()
    (allowed / sibling).symlink_to(outside / "secret")
    with pytest.raises(mcp_server.Refused, match="outside the allowed directories"):
        mcp_server.resolve_run(run, roots)


def test_a_long_escaped_kernel_name_is_a_pattern_and_deep_nesting_is_refused():
    """A finding's what-if scales one kernel by its escaped, anchored name (thousands of
    characters for a templated kernel): accepted; nesting too deep for the parser: refused."""
    import re

    from tui_prof.analysis.saferegex import BoundedPattern, PatternError

    name = "void ck_tile::kentry<1, ck_tile::BatchedGemmKernel<" + "ck_tile::sequence<256, 128>, " * 200 + "void> >"
    assert BoundedPattern("^" + re.escape(name) + "$").search_all([name, name + "x"]).tolist() == [True, False]
    with pytest.raises(PatternError, match="nested too deeply"):
        BoundedPattern("(" * 5000 + "a" + ")" * 5000)


def test_numpy_integers_are_written_as_json_numbers_not_strings():
    values = {"i64": np.int64(-5), "u8": np.uint8(200), "i32": [np.int32(7)], "flag": True}
    text = jsonout.dumps(values, default=str)
    assert json.loads(text) == {"i64": -5, "u8": 200, "i32": [7], "flag": True}
