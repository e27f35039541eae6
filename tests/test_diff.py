"""``tuiprof diff``: kernel matching, kernel and summary deltas, JSON/Markdown/exit status.

Expected numbers come from the synthetic generator's known answers (``SynthRun.expected``)
or from the before/after transformations in test_diff_support.py (checked there on the
tables themselves) — never from the diff code under test.
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_diff_support import ATTENTION, REDUCE, as_runset, remove_kernel, slow_down, spec

from tui_prof.analysis import diff as diff_module
from tui_prof.analysis.diff import (
    METRIC_KEYS,
    METRICS,
    SCHEMA,
    diff_runsets,
    kernel_diff,
    metric_delta,
    regressions,
    rematch,
    side_metrics,
)
from tui_prof.analysis.hotspots import all_kernels
from tui_prof.cli import main
from tui_prof.exits import EXIT_REGRESSION
from tui_prof.loaders import load_path
from tui_prof.synth import GEMM_NAME, build

DATA = Path(__file__).parent / "data"


def expected_metrics(synth, *, extra_span=0, extra_kernel=0, removed=None, launch_api_ns=None):
    """The diff's summary metrics of a synthetic run (1 GPU) from its known answers."""
    e = synth.expected
    wall = e.wall_span[1] - e.wall_span[0] + extra_span
    gpu_span = e.span_ns[1] + extra_span
    busy = e.busy_ns[1] + extra_kernel
    ktime = e.kernel_total_ns + extra_kernel
    gemm = int(e.kernels.loc[GEMM_NAME, "total_ns"])
    count = e.dispatches
    if removed is not None:
        busy -= int(e.kernels.loc[removed, "total_ns"])
        ktime -= int(e.kernels.loc[removed, "total_ns"])
        count -= int(e.kernels.loc[removed, "calls"])
    return {
        "span_ns": wall,
        "kernel_count": count,
        "kernel_time_ns": ktime,
        "gemm_pct": 100.0 * gemm / ktime,
        "idle_pct": 100.0 * (gpu_span - busy) / gpu_span,
        "launch_api_ns": int(e.api.loc["hipLaunchKernel", "total_ns"]) if launch_api_ns is None else launch_api_ns,
        "copy_time_ns": sum(e.copy_busy_ns.values()),
    }


def check_metrics(result, side: str, expected: dict):
    for key, value in expected.items():
        got = result.metric(key)[side]
        assert got == pytest.approx(value, rel=1e-12, abs=1e-9), (key, side, got, value)


def row(result, key):
    rows = result.kernels[result.kernels["key"] == key]
    assert len(rows) == 1, key
    return rows.iloc[0]


# ---- a run against itself ---------------------------------------------------------------


@pytest.mark.parametrize("by", ["name", "normalized", "category"])
def test_synthetic_run_against_itself_is_all_zero(by):
    synth = build(spec("per_launch"))
    rs = as_runset(synth, "self")
    result = diff_runsets(rs, rs, by=by)
    assert (result.kernels["delta_ns"] == 0).all()
    assert (result.kernels["delta_calls"] == 0).all()
    assert set(result.kernels["status"]) == {"same"}
    assert np.allclose(result.kernels["ratio"], 1.0)
    assert result.counts()["added"] == result.counts()["removed"] == 0
    assert result.kernels["calls_a"].sum() == synth.expected.dispatches
    for m in result.metrics:
        assert m["delta"] == 0 and m["status"] == "within noise", m
    assert regressions(result, 0.0) == []


def test_real_rocpd_run_against_itself_is_all_zero():
    db = DATA / "rocpd" / "28_results.db"
    with sqlite3.connect(db) as con:  # the database's own count and time, read without the loader
        dispatches, kernel_ns = con.execute("SELECT count(*), sum(end - start) FROM rocpd_kernel_dispatch").fetchone()
    assert (dispatches, kernel_ns) == (151, 2_604_546)
    rs = load_path(db)
    result = diff_runsets(rs, rs)
    assert (result.kernels["delta_ns"] == 0).all()
    assert result.kernels["calls_a"].sum() == dispatches
    assert result.metric("kernel_count")["a"] == dispatches and result.metric("kernel_time_ns")["a"] == kernel_ns
    assert [m["delta"] for m in result.metrics] == [0] * len(METRICS)


# ---- before / after pairs with known deltas ---------------------------------------------


def test_sync_per_iteration_vs_once_matches_known_answers():
    a, b = build(spec("per_iteration")), build(spec("end"))
    # same seed, same draws: every kernel duration is identical, only the host sync pattern differs
    assert a.expected.kernels["total_ns"].equals(b.expected.kernels["total_ns"])
    result = diff_runsets(as_runset(a, "A"), as_runset(b, "B"))
    ea, eb = expected_metrics(a), expected_metrics(b)
    check_metrics(result, "a", ea)
    check_metrics(result, "b", eb)
    wall_a = a.expected.wall_span[1] - a.expected.wall_span[0]
    wall_b = b.expected.wall_span[1] - b.expected.wall_span[0]
    # sync overhead = hipDeviceSynchronize + blocking hipMemcpy call time (analysis.hostapi definition)
    for side, synth, wall in (("a", a, wall_a), ("b", b, wall_b)):
        sync_ns = synth.expected.sync_total_ns + int(synth.expected.api.loc["hipMemcpy", "total_ns"])
        assert result.metric("sync_pct")[side] == pytest.approx(100.0 * sync_ns / wall, rel=1e-12)
    assert result.metric("span_ns")["delta"] == wall_b - wall_a < 0
    assert (result.kernels["delta_ns"] == 0).all() and set(result.kernels["status"]) == {"same"}
    # the gaps disappear: idle time drops, "improved"; idle % drops too, but its denominator
    # (the GPU span) moved beyond the noise, so the share is "changed" with that reason
    idle = result.metric("idle_pct")
    assert idle["b"] < idle["a"] and idle["status"] == "changed" and idle["threshold"] == 1.0
    assert idle["reason"].startswith("a share whose denominator (GPU span) moved")
    assert result.metric("idle_ns")["status"] == "improved"
    assert result.metric("sync_pct")["better"] == "neutral"  # raw sync includes waiting for work: never a verdict
    assert result.metric("exposed_sync_ns")["status"] == "improved"
    assert regressions(result, 0.0) == []
    assert result.metric("span_ns")["status"] == "improved"
    assert result.metric("kernel_time_ns")["status"] == "within noise"


def test_one_kernel_twice_as_slow():
    synth = build(spec("per_iteration"))
    k, api, cp = slow_down(synth.kernels, synth.api, synth.copies, ATTENTION)
    result = diff_runsets(as_runset(synth, "A"), as_runset(synth, "B", k, api, cp))
    total = int(synth.expected.kernels.loc[ATTENTION, "total_ns"])
    r = row(result, ATTENTION)
    assert r["delta_ns"] == total and r["total_b_ns"] == 2 * total
    assert r["ratio"] == 2.0 and r["avg_ratio"] == 2.0 and r["status"] == "slower"
    assert r["delta_pct"] == pytest.approx(100.0)
    assert result.kernels.iloc[0]["key"] == ATTENTION  # largest |delta| first
    others = result.kernels[result.kernels["key"] != ATTENTION]
    assert (others["delta_ns"] == 0).all()
    check_metrics(result, "a", expected_metrics(synth))
    check_metrics(result, "b", expected_metrics(synth, extra_span=total, extra_kernel=total))
    assert result.metric("span_ns")["delta"] == total
    assert result.metric("span_ns")["status"] == "regressed"
    # the gate names the slowed kernel too: it doubled and its growth is beyond the noise share of kernel time;
    # the loop's steps (inferred: one sync per iteration) are slower by the same kernel in each step
    assert [m["key"] for m in regressions(result, 5.0)] == ["span_ns", "kernel_time_ns", "step_median_ns", f"kernel:{ATTENTION}"]
    per_step = result.metric("step_median_ns")
    assert per_step["delta"] == pytest.approx(total / synth.spec.iterations, rel=0.05)
    assert all(m["reason"] for m in regressions(result, 5.0))


def test_one_kernel_removed():
    synth = build(spec("per_iteration"))
    k, api = remove_kernel(synth.kernels, synth.api, REDUCE)
    result = diff_runsets(as_runset(synth, "A"), as_runset(synth, "B", k, api))
    e = synth.expected.kernels
    r = row(result, REDUCE)
    assert r["status"] == "removed" and r["calls_b"] == 0 and r["calls_a"] == e.loc[REDUCE, "calls"]
    assert r["delta_ns"] == -e.loc[REDUCE, "total_ns"] and math.isnan(r["ratio"])
    assert result.counts() == {"matched": len(e) - 1, "added": 0, "removed": 1}
    removed_launch = int((synth.api["end"] - synth.api["start"]).sum() - (api["end"] - api["start"]).sum())
    launch_b = int(synth.expected.api.loc["hipLaunchKernel", "total_ns"]) - removed_launch
    check_metrics(result, "b", expected_metrics(synth, removed=REDUCE, launch_api_ns=launch_b))
    assert result.metric("kernel_count")["delta"] == -e.loc[REDUCE, "calls"]
    # the reverse direction reports it as added
    back = diff_runsets(as_runset(synth, "B", k, api), as_runset(synth, "A"))
    assert row(back, REDUCE)["status"] == "added" and row(back, REDUCE)["delta_ns"] == e.loc[REDUCE, "total_ns"]


def test_combined_pair_sync_once_slower_and_removed():
    """The issue's pair: A syncs every iteration; B syncs once, one kernel 2x slower, one removed."""
    a, b = build(spec("per_iteration")), build(spec("end"))
    k, api, cp = slow_down(b.kernels, b.api, b.copies, ATTENTION)
    k, api = remove_kernel(k, api, REDUCE)
    result = diff_runsets(as_runset(a, "A"), as_runset(b, "B", k, api, cp))
    e = a.expected.kernels
    assert row(result, ATTENTION)["delta_ns"] == e.loc[ATTENTION, "total_ns"]
    assert row(result, ATTENTION)["ratio"] == 2.0
    assert row(result, REDUCE)["delta_ns"] == -e.loc[REDUCE, "total_ns"]
    rest = result.kernels[~result.kernels["key"].isin([ATTENTION, REDUCE])]
    assert len(rest) == len(e) - 2 and (rest["delta_ns"] == 0).all()
    assert list(result.kernels["key"][:2]) == [ATTENTION, REDUCE]  # |delta| order
    total = int(e.loc[ATTENTION, "total_ns"])
    eb = expected_metrics(
        b,
        extra_span=total,
        extra_kernel=total,
        removed=REDUCE,
        launch_api_ns=int((api["end"] - api["start"])[api["name"].astype(str) == "hipLaunchKernel"].sum()),
    )
    check_metrics(result, "b", eb)
    assert result.metric("idle_pct")["b"] < result.metric("idle_pct")["a"]


# ---- matching modes ---------------------------------------------------------------------


def test_normalized_matching_pairs_renamed_template_instances():
    synth = build(spec("per_iteration"))
    k = synth.kernels.copy()
    old = [c for c in k["name"].cat.categories if "vectorized_elementwise_kernel<4" in c][0]
    new = old.replace("vectorized_elementwise_kernel<4,", "vectorized_elementwise_kernel<8,")
    k["name"] = k["name"].cat.rename_categories({old: new})
    a, b = as_runset(synth, "A"), as_runset(synth, "B", kernels=k)
    by_name = diff_runsets(a, b, by="name")
    assert by_name.counts() == {"matched": 5, "added": 1, "removed": 1}
    assert row(by_name, new)["status"] == "added" and row(by_name, old)["status"] == "removed"
    by_norm = diff_runsets(a, b, by="normalized")
    assert by_norm.counts() == {"matched": 6, "added": 0, "removed": 0}
    assert (by_norm.kernels["delta_ns"] == 0).all()
    r = row(by_norm, "at::native::vectorized_elementwise_kernel")
    assert r["calls_a"] == r["calls_b"] == synth.expected.kernels.loc[old, "calls"]


def test_category_matching_sums_known_kernel_totals():
    synth = build(spec("per_iteration"))
    k, api, cp = slow_down(synth.kernels, synth.api, synth.copies, ATTENTION)
    result = diff_runsets(as_runset(synth, "A"), as_runset(synth, "B", k, api, cp), by="category")
    e = synth.expected.kernels
    assert row(result, "GEMM")["total_a_ns"] == e.loc[GEMM_NAME, "total_ns"]
    assert row(result, "attention")["delta_ns"] == e.loc[ATTENTION, "total_ns"]
    assert row(result, "reduction")["total_a_ns"] == e.loc[REDUCE, "total_ns"]
    assert result.kernels["total_a_ns"].sum() == synth.expected.kernel_total_ns
    assert (result.kernels.loc[result.kernels["key"] != "attention", "delta_ns"] == 0).all()


def test_csv_against_rocpd_of_the_same_run_is_zero(tmp_path):
    from tui_prof.synth.write_csv import write_rocprofv3_csv
    from tui_prof.synth.write_rocpd import write_rocpd

    synth = build(spec("per_launch"))
    write_rocprofv3_csv(synth, tmp_path / "csv")
    write_rocpd(synth, tmp_path / "db" / "synthhost" / "4242_results.db")
    a, b = load_path(tmp_path / "csv"), load_path(tmp_path / "db")
    assert a.formats != b.formats and not a.errors and not b.errors
    result = diff_runsets(a, b)
    assert result.counts() == {"matched": len(synth.expected.kernels), "added": 0, "removed": 0}
    assert (result.kernels["delta_ns"] == 0).all()
    assert list(result.kernels.sort_values("key")["total_a_ns"]) == list(synth.expected.kernels.sort_index()["total_ns"])
    for m in result.metrics:
        assert m["delta"] == 0, m
    assert any("formats differ" in n for n in result.notes)


# ---- separable parts: each side's metrics once, the kernel matching alone -------------


def test_side_metrics_equal_the_known_answers():
    synth = build(spec("per_iteration"))
    side = side_metrics(as_runset(synth, "A"))
    for key, value in expected_metrics(synth).items():
        assert side.metrics[key] == pytest.approx(value, rel=1e-12, abs=1e-9), key
    assert side.path == "A" and side.summary["kernels"]["dispatches"] == synth.expected.dispatches


def test_rematch_runs_only_the_kernel_matching(monkeypatch):
    """A new match mode: the same table as a fresh diff in that mode, the metrics and both
    summaries kept (no summary is built again)."""
    synth = build(spec("per_iteration"))
    k, api, cp = slow_down(synth.kernels, synth.api, synth.copies, ATTENTION)
    a, b = as_runset(synth, "A"), as_runset(synth, "B", k, api, cp)
    by_name = diff_runsets(a, b, by="name")
    fresh = diff_runsets(a, b, by="category")
    built = []
    real_build = diff_module.build_summary
    monkeypatch.setattr(diff_module, "build_summary", lambda *args, **kw: built.append(1) or real_build(*args, **kw))
    again = rematch(by_name, a, b, "category")
    assert built == []
    assert again.by == "category" and by_name.by == "name"
    pd.testing.assert_frame_equal(again.kernels, fresh.kernels)
    assert again.metrics == by_name.metrics == fresh.metrics
    assert again.summary_a is by_name.summary_a and again.summary_b is by_name.summary_b
    assert row(again, "attention")["delta_ns"] == synth.expected.kernels.loc[ATTENTION, "total_ns"]


def test_kernel_diff_alone_equals_the_diffs_table():
    synth = build(spec("per_iteration"))
    k, api = remove_kernel(synth.kernels, synth.api, REDUCE)
    a, b = as_runset(synth, "A"), as_runset(synth, "B", k, api)
    for by in ("name", "normalized", "category"):
        pd.testing.assert_frame_equal(kernel_diff(all_kernels(a), all_kernels(b), by=by), diff_runsets(a, b, by=by).kernels)


# ---- noise and verdicts -----------------------------------------------------------------


def test_noise_threshold_and_verdicts():
    span, idle, gemm = (next(m for m in METRICS if m.key == k) for k in ("span_ns", "idle_pct", "gemm_pct"))
    assert metric_delta(span, 1000, 1020, noise_pct=2.0)["status"] == "within noise"  # exactly 2 %
    assert metric_delta(span, 1000, 1021, noise_pct=2.0)["status"] == "regressed"
    assert metric_delta(span, 1000, 979, noise_pct=2.0)["status"] == "improved"
    assert metric_delta(span, 1000, 1100, noise_pct=20.0)["status"] == "within noise"
    assert metric_delta(idle, 30.0, 29.5, noise_pp=1.0)["status"] == "within noise"  # points, not percent
    assert metric_delta(idle, 30.0, 28.5, noise_pp=1.0)["status"] == "improved"
    assert metric_delta(gemm, 50.0, 60.0)["status"] == "changed"
    assert metric_delta(span, 0, 5)["delta_pct"] == math.inf
    assert set(METRIC_KEYS) >= {"span_ns", "kernel_count", "gemm_pct", "sync_pct", "idle_pct", "launch_api_ns", "copy_time_ns"}


def test_kernel_status_uses_noise():
    synth = build(spec("per_iteration"))
    k = synth.kernels.copy()
    sel = k["name"].astype(str).to_numpy() == GEMM_NAME
    k.loc[sel, "end"] = k.loc[sel, "end"] + 10  # +10 ns per dispatch: far below 2 %
    table = kernel_diff(synth.kernels, k)
    r = table[table["key"] == GEMM_NAME].iloc[0]
    assert r["delta_ns"] == 10 * sel.sum() and r["status"] == "same"
    assert kernel_diff(synth.kernels, k, noise_pct=0.0).set_index("key").loc[GEMM_NAME, "status"] == "slower"


# ---- CLI ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def csv_pair(tmp_path_factory):
    """A (sync per iteration) and B (sync once, attention 2x slower, reduce removed) as rocprofv3 CSV."""
    import dataclasses

    from tui_prof.synth.write_csv import write_rocprofv3_csv

    root = tmp_path_factory.mktemp("pair")
    a, b = build(spec("per_iteration")), build(spec("end"))
    k, api, cp = slow_down(b.kernels, b.api, b.copies, ATTENTION)
    k, api = remove_kernel(k, api, REDUCE)
    write_rocprofv3_csv(a, root / "A")
    write_rocprofv3_csv(dataclasses.replace(b, kernels=k, api=api, copies=cp), root / "B")
    return root / "A", root / "B", a


def test_cli_json_schema_and_values(csv_pair, capsys):
    a_dir, b_dir, a = csv_pair
    assert main(["diff", str(a_dir), str(b_dir), "--json", "--top", "0"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == SCHEMA == "tuiprof.diff/1"
    assert doc["match"] == "name" and doc["noise"] == {"pct": 2.0, "pp": 1.0}
    assert [m["key"] for m in doc["metrics"]] == list(METRIC_KEYS)
    rows = {r["key"]: r for r in doc["kernels"]["rows"]}
    assert rows[ATTENTION]["delta_ns"] == int(a.expected.kernels.loc[ATTENTION, "total_ns"])
    assert rows[REDUCE]["status"] == "removed" and rows[REDUCE]["ratio"] is None
    assert doc["kernels"]["removed"] == 1 and doc["kernels"]["truncated"] == 0
    assert doc["a"]["formats"] == ["rocprofv3-csv"]


def test_cli_fail_on_regression_exit_status(csv_pair, capsys):
    a_dir, b_dir, _ = csv_pair
    assert main(["diff", str(a_dir), str(b_dir), "--fail-on-regression", "1"]) == EXIT_REGRESSION == 4
    out = capsys.readouterr().out
    assert "REGRESSION beyond 1%" in out and "kernel time" in out
    assert main(["diff", str(a_dir), str(b_dir), "--fail-on-regression", "1000"]) == 0
    assert main(["diff", str(a_dir), str(a_dir), "--fail-on-regression", "0"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("No regression beyond 0%.")
    assert main(["diff", str(a_dir), str(b_dir), "--json", "--fail-on-regression", "1"]) == 4
    doc = json.loads(capsys.readouterr().out)
    assert doc["fail_on_regression"]["failed"] and "kernel_time_ns" in doc["fail_on_regression"]["metrics"]


def test_cli_diff_reuses_the_cache_and_no_cache_skips_it(csv_pair, capsys, tmp_path, monkeypatch):
    from tui_prof.loaders import rocprofv3_csv

    a_dir, b_dir, _ = csv_pair
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(cache_dir))
    assert main(["diff", str(a_dir), str(b_dir), "--json"]) == 0
    first = capsys.readouterr().out
    from tui_prof.loaders import cache

    assert len([p for p in cache_dir.iterdir() if cache.ENTRY_NAME.match(p.name)]) == 2  # one entry per run's process group

    def no_parsing(*_args, **_kw):
        raise AssertionError("parsed although both runs are cached")

    monkeypatch.setattr(rocprofv3_csv, "load", no_parsing)
    assert main(["diff", str(a_dir), str(b_dir), "--json"]) == 0
    assert capsys.readouterr().out == first
    # --no-cache parses (here: the failing loader), so nothing can be loaded
    assert main(["diff", str(a_dir), str(b_dir), "--json", "--no-cache"]) == 1  # EXIT_NOTHING_LOADED
    assert "nothing could be loaded" in capsys.readouterr().err


def test_cli_markdown_and_text(csv_pair, capsys):
    a_dir, b_dir, _ = csv_pair
    assert main(["diff", str(a_dir), str(b_dir), "--md"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("# tuiprof diff") and "| GPU idle % |" in md and "removed" in md
    assert main(["diff", str(a_dir), str(b_dir), "--by", "category"]) == 0
    text = capsys.readouterr().out
    assert "Kernels matched by category" in text and "attention" in text


def test_cli_missing_run(tmp_path, capsys):
    assert main(["diff", str(tmp_path / "nope"), str(tmp_path)]) == 1
    assert capsys.readouterr().err.splitlines() == [f"tuiprof: {tmp_path / 'nope'}: no such file or directory"]
