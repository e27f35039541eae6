"""Step-aligned diff (issue 35): the alignment, generated pairs with known edits, real traces.

Expected answers come from the generator's construction (tui_prof.synth.steps: every kernel
lasts ``kernel_ns``, an inserted kernel ``kernel_ns``, a slowed one ``slow_factor`` x) and
from a reference dynamic-programming LCS written here — never from the code under test.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui_prof.analysis.align import lcs_pairs
from tui_prof.analysis.stepdiff import StepChoiceError, diff_steps, label_number
from tui_prof.loaders import load_path
from tui_prof.model import Run, RunMeta, RunSet
from tui_prof.synth.steps import INSERTED, StepSpec, build_steps

KINETO = Path(__file__).parent / "data" / "kineto"
BASE = StepSpec(kinds=5)


def reference_lcs(a: list[int], b: list[int]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    return table[-1][-1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=40), st.lists(st.integers(0, 4), max_size=40))
def test_lcs_is_a_longest_common_subsequence(a, b):
    ia, ib, exact = lcs_pairs(np.array(a, dtype=np.int64), np.array(b, dtype=np.int64))
    assert exact
    assert len(ia) == len(ib) == reference_lcs(a, b)
    assert np.array_equal(np.array(a)[ia], np.array(b)[ib]) if len(ia) else True
    assert np.all(np.diff(ia) > 0) and np.all(np.diff(ib) > 0)


def test_lcs_blocks_when_too_long(monkeypatch):
    from tui_prof.analysis import align

    monkeypatch.setattr(align, "MAX_CELLS", 100)
    monkeypatch.setattr(align, "BLOCK", 8)
    a = np.arange(40) % 7
    b = np.concatenate([[9], a[:20], [9], a[20:]])
    ia, ib, exact = lcs_pairs(a, b)
    assert not exact
    assert np.array_equal(a[ia], b[ib]) and np.all(np.diff(ia) > 0) and np.all(np.diff(ib) > 0)


def runset(spec: StepSpec, root: str) -> RunSet:
    synth, _ = build_steps(spec)
    meta = RunMeta(formats=["synthetic"], tool="synth", label=root, pid=spec.pid)
    run = Run(meta=meta, agents=synth.agents, kernels=synth.kernels, api=synth.api, copies=synth.copies, markers=synth.markers)
    return RunSet(root=root, runs=[run])


def names(rows):
    return [(r["key"], r["count"]) for r in rows]


def check_sum(d):
    assert sum(p["delta_ns"] for p in d.contributions) == d.wall_delta_ns


def test_same_program_reports_nothing():
    d = diff_steps(runset(BASE, "a"), runset(BASE, "b"))
    assert (d.inserted, d.removed, d.slower, d.faster) == ([], [], [], [])
    assert d.gaps["grown_count"] == d.gaps["shrunk_count"] == 0
    assert d.syncs["added"] == d.syncs["gone"] == [] and d.copies["added"] == d.copies["gone"] == []
    assert d.verdict["what"] is None and d.wall_delta_ns == 0
    # the median steady step: the warm-up step 1 and the outlier step 6 (its copy) are not it
    assert d.a.choice.label == "train_step [2]" and d.a.choice.warmup == 1
    assert len(d.a.units) == BASE.kernels_per_step


def test_inserted_kernel_found_exactly():
    d = diff_steps(runset(BASE, "a"), runset(replace(BASE, insert_after=2), "b"))
    assert names(d.inserted) == [("at::native::reduce_kernel", 1)]
    assert d.inserted[0]["total_ns"] == BASE.kernel_ns and d.inserted[0]["names"] == [INSERTED.name]
    assert (d.removed, d.slower, d.faster) == ([], [], [])
    assert d.gaps["grown_count"] == d.gaps["shrunk_count"] == 0
    assert d.host["added"] == [{"name": "hipLaunchKernel", "count": 1}] and d.host["gone"] == []
    assert d.syncs["added"] == [] and d.copies["added"] == []
    # GPU-bound: the step grows by the kernel's time, and the verdict says so
    assert d.wall_delta_ns == BASE.kernel_ns
    assert d.verdict["what"] == "inserted" and d.verdict["part_ns"] == BASE.kernel_ns
    check_sum(d)


def test_removed_kernel_found_exactly():
    d = diff_steps(runset(BASE, "a"), runset(replace(BASE, drop=3), "b"))
    assert names(d.removed) == [("at::native::vectorized_elementwise_kernel", 1)]
    assert d.removed[0]["total_ns"] == BASE.kernel_ns
    assert (d.inserted, d.slower, d.faster) == ([], [], [])
    assert d.gaps["grown_count"] == d.gaps["shrunk_count"] == 0
    assert d.wall_delta_ns == -BASE.kernel_ns and d.verdict["what"] == "removed"
    check_sum(d)


def test_slower_kernel_found_exactly():
    d = diff_steps(runset(BASE, "a"), runset(replace(BASE, slow=1), "b"))
    assert [(r["key"], r["count"], r["delta_ns"], r["ratio"]) for r in d.slower] == [("ck_tile::kentry", 1, BASE.kernel_ns, 2.0)]
    assert d.slower[0]["band_pct"] == 2.0  # identical steady steps: no spread, the floor
    assert (d.inserted, d.removed, d.faster) == ([], [], [])
    assert d.gaps["grown_count"] == d.gaps["shrunk_count"] == 0
    assert d.wall_delta_ns == BASE.kernel_ns and d.verdict["what"] == "slower"
    marked = d.b.units[d.b.units["status"] != "matched"]
    assert list(marked["status"]) == ["slower"] and list(marked["key"]) == ["ck_tile::kentry"]
    check_sum(d)


def test_sync_added_found_exactly():
    s = BASE
    d = diff_steps(runset(s, "a"), runset(replace(s, sync_after=2), "b"))
    assert d.syncs["added"] == [{"name": "hipDeviceSynchronize", "count": 1}] and d.syncs["gone"] == []
    assert (d.inserted, d.removed, d.slower, d.faster) == ([], [], [], [])
    # the gap the sync opens: sync return + host gap + next launch + its latency (the generator's timing)
    opened = s.sync_return_ns + s.gap_ns + s.launch_ns + s.latency_ns
    assert d.gaps["grown_count"] == 1 and d.gaps["shrunk_count"] == 0
    g = d.gaps["grown"][0]
    assert (g["a_ns"], g["b_ns"], g["cause_b"]) == (0, opened, "sync")
    assert d.verdict["what"] == "gaps:sync" and d.wall_delta_ns == opened
    check_sum(d)


def test_step_numbers_choose_the_steps():
    d = diff_steps(runset(BASE, "a"), runset(BASE, "b"), step=4, step_b=6)
    assert (d.a.choice.label, d.b.choice.label) == ("train_step [4]", "train_step [6]")
    # step 6 is the outlier (one 64 MiB copy): the copy and its blocking call are added
    assert [r["count"] for r in d.copies["added"]] == [1] and d.syncs["added"] == [{"name": "hipMemcpy", "count": 1}]
    assert (d.inserted, d.removed) == ([], [])
    with pytest.raises(StepChoiceError, match="B: no step numbered 99"):
        diff_steps(runset(BASE, "a"), runset(BASE, "b"), step=4, step_b=99)
    assert [label_number(x) for x in ("ProfilerStep#12", "step 3", "train_step [7]", "x")] == [12, 3, 7, None]


def test_hostile_kernel_name_is_only_data():
    # the name reaches the result unchanged (renderers sanitise it; tests/test_stepdiff_render.py)
    hostile = "\x1b]52;c;SGVsbG8=\x07evil[/bold]`rm -rf`"
    b = runset(replace(BASE, insert_after=0), "b")
    run = b.runs[0]
    run.kernels["name"] = run.kernels["name"].cat.rename_categories({INSERTED.name: hostile})
    d = diff_steps(runset(BASE, "a"), b)
    assert d.inserted[0]["names"] == [hostile]


# ---- real traces ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def decode_pair():
    return load_path(str(KINETO / "h200" / "decode_eager.pt.trace.json.gz")), load_path(str(KINETO / "h200" / "decode_graph.pt.trace.json.gz"))


def test_real_decode_eager_vs_graph(decode_pair):
    eager, graph = decode_pair
    d = diff_steps(eager, graph)
    assert d.aligned_by == "name"
    assert d.inserted == [] and d.removed == []  # the same 122 kernels per step
    assert len(d.a.units) == len(d.b.units) == 122
    assert d.gaps["b_ns"] < d.gaps["a_ns"] / 10  # the gaps between kernels shrink
    assert d.gaps["shrunk_count"] > 100 and d.gaps["grown_count"] == 0
    launch = next(r for r in d.gaps["by_cause"] if r["cause"] == "launch")
    assert launch["b_ns"] == 0 and launch["a_ns"] > 0.9 * d.gaps["a_ns"]
    assert d.verdict["what"] == "gaps:launch" and "launch" in d.verdict["label"]
    # B launches one graph per step in place of the per-kernel launches
    assert {"name": "cudaGraphLaunch", "count": 1} in d.host["added"]
    assert d.host["gone_count"] >= 122
    # ... and none of the eager step's framework operators: the graph replays their kernels
    ops = d.host["ops"]
    assert ops["added_count"] == 0 and ops["gone_count"] >= ops["a"] - ops["b"] > 1000
    check_sum(d)


def test_real_training_trace_against_itself():
    path = str(KINETO / "h200" / "train_sync.pt.trace.json.gz")
    d = diff_steps(load_path(path), load_path(path))
    assert (d.inserted, d.removed, d.slower, d.faster) == ([], [], [], [])
    assert d.gaps["grown_count"] == d.gaps["shrunk_count"] == d.gaps["delta_ns"] == 0
    assert d.host["added"] == d.host["gone"] == [] and d.verdict["what"] is None
    assert d.host["ops"]["a"] > 1000 and d.host["ops"]["added_count"] == d.host["ops"]["gone_count"] == 0
    assert all(p["delta_ns"] == 0 for p in d.contributions)
    assert len(d.a.units) == 455  # the trace's kernels per ProfilerStep


def test_real_amd_vs_nvidia_aligned_by_operator():
    """The same BERT-small step on an H100 and an MI300X (TraceLens test traces)."""
    h100 = load_path(str(KINETO / "h100__gaunernst_bert-small-uncased__1016001.json.gz"))
    mi300 = load_path(str(KINETO / "mi300__gaunernst_bert-small-uncased__1016001.json.gz"))
    d = diff_steps(h100, mi300)
    assert d.aligned_by == "operator"
    assert any("aligned by launching operator" in n and "nvidia" in n and "amd" in n for n in d.notes)
    assert d.inserted == [] and d.removed == []  # every operator call of the step has its partner
    assert len(d.a.units) == len(d.b.units) == 60
    keys = {r["key"] for r in d.slower + d.faster}
    assert "aten::addmm" in keys  # cuBLAS/CUTLASS vs hipBLASLt GEMMs, compared per operator call
    # host calls compare across runtimes without their prefix: both sides synchronise once per step
    assert d.syncs["a"] == d.syncs["b"] == 2
    check_sum(d)


def test_runs_without_steps_align_the_whole_run():
    from test_diff_support import REDUCE, as_runset, remove_kernel, spec

    from tui_prof.synth import build

    synth = build(spec("end"))  # one sync after the loop: no steps
    k, api = remove_kernel(synth.kernels, synth.api, REDUCE)
    d = diff_steps(as_runset(synth, "a"), as_runset(synth, "b", kernels=k, api=api))
    assert d.a.choice.whole and d.b.choice.whole and d.a.choice.how == "whole run (no steps)"
    calls = int(synth.expected.kernels.loc[REDUCE, "calls"])
    assert names(d.removed) == [("at::native::reduce_kernel", calls)]
    assert d.removed[0]["total_ns"] == int(synth.expected.kernels.loc[REDUCE, "total_ns"])
    assert (d.inserted, d.slower, d.faster) == ([], [], [])
    assert d.host["gone"] == [{"name": "hipLaunchKernel", "count": calls}]
    check_sum(d)


def test_one_slower_kernel_among_many_of_its_name():
    """The 12th of 20 same-named kernels of each step is 2x slower: that one is found (its
    own band), not hidden in its name's total (+1/20 of it)."""
    base = StepSpec(kernels_per_step=40, kinds=2)
    d = diff_steps(runset(base, "a"), runset(replace(base, slow=23), "b"))
    assert [(r["key"], r["count"], r["delta_ns"], r["ratio"]) for r in d.slower] == [("ck_tile::kentry", 1, base.kernel_ns, 2.0)]
    assert (d.inserted, d.removed, d.faster) == ([], [], [])
    marked = d.a.units.index[d.a.units["status"] == "slower"].tolist()
    assert marked == [23]  # the 24th kernel of the step, as built


def test_all_four_edits_at_once():
    """Inserted, removed, 2x slower and a sync added in the same steps: each found, nothing else."""
    base = StepSpec(kernels_per_step=12, kinds=5)
    edited = replace(base, insert_after=1, drop=3, slow=7, sync_after=9)
    d = diff_steps(runset(base, "a"), runset(edited, "b"))
    assert names(d.inserted) == [("at::native::reduce_kernel", 1)]
    assert names(d.removed) == [("at::native::vectorized_elementwise_kernel", 1)]  # kernel 3: kind 3, elementwise
    assert [(r["key"], r["count"], r["delta_ns"]) for r in d.slower] == [
        ("at::native::(anonymous namespace)::vectorized_layer_norm_kernel", 1, base.kernel_ns)
    ]  # kernel 7: kind 2
    assert d.faster == []
    assert d.syncs["added"] == [{"name": "hipDeviceSynchronize", "count": 1}] and d.syncs["gone"] == []
    assert d.gaps["grown_count"] == 1 and d.gaps["grown"][0]["cause_b"] == "sync" and d.gaps["shrunk_count"] == 0
    opened = base.sync_return_ns + base.gap_ns + base.launch_ns + base.latency_ns
    # inserted +50 us, removed -50 us, slower +50 us, the sync's gap: the step grows by their sum
    assert d.wall_delta_ns == base.kernel_ns + opened
    check_sum(d)


@settings(max_examples=15, deadline=None)
@given(
    st.integers(3, 10),
    st.sampled_from([2, 3, 5]),
    st.one_of(st.none(), st.integers(0, 9)),
    st.one_of(st.none(), st.integers(0, 9)),
    st.one_of(st.none(), st.integers(0, 9)),
    st.one_of(st.none(), st.integers(0, 9)),
)
def test_invariants_of_any_edit(n, kinds, insert_after, drop, slow, sync_after):
    """Whatever the edits: every unit is matched, inserted or removed once; the parts sum to
    the step-time change; shares stay within 0..100 %; what was edited is what is found."""
    base = StepSpec(kernels_per_step=n, kinds=kinds)
    d = diff_steps(runset(base, "a"), runset(replace(base, insert_after=insert_after, drop=drop, slow=slow, sync_after=sync_after), "b"))
    ua, ub = d.a.units, d.b.units
    matched = int((ua["partner"] >= 0).sum())
    assert matched == int((ub["partner"] >= 0).sum())
    assert matched + sum(r["count"] for r in d.removed) == len(ua)
    assert matched + sum(r["count"] for r in d.inserted) == len(ub)
    check_sum(d)
    share = d.verdict["share_pct"]
    assert share is None or 0 < share <= 100
    inserted = insert_after is not None and insert_after < n
    dropped = drop is not None and drop < n
    assert sum(r["count"] for r in d.inserted) == int(inserted)
    assert sum(r["count"] for r in d.removed) == int(dropped)
    assert d.faster == []
    assert sum(r["count"] for r in d.slower) == int(slow is not None and slow < n and slow != drop)
    assert d.syncs["added"] == ([{"name": "hipDeviceSynchronize", "count": 1}] if sync_after is not None and sync_after < n and sync_after != drop else [])
