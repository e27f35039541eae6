"""The fast paths added for 1M-dispatch runs (issue 8) give exactly the answers of the
straightforward code they replace: compared on random inputs against that code."""

import numpy as np
import pandas as pd
import pytest

from tui_prof.analysis import occupancy
from tui_prof.analysis.gpu_idle import longest_first
from tui_prof.analysis.hostapi import unique_match
from tui_prof.analysis.timeline import _Names, gpu_gaps, gpu_timeline
from tui_prof.model import make_table


def _unique_match_by_search(sorted_keys, queries):
    """The binary-search definition: the key at the left insertion point equals the query
    and the next key differs; -1 otherwise or for negative queries."""
    n = len(sorted_keys)
    left = np.searchsorted(sorted_keys, queries, side="left")
    hit = (left < n) & (sorted_keys[np.minimum(left, n - 1)] == queries)
    unique = (left + 1 >= n) | (sorted_keys[np.minimum(left + 1, n - 1)] != queries)
    return np.where((queries >= 0) & hit & unique, left, -1)


@pytest.mark.parametrize("seed", range(5))
def test_unique_match_dense_table_equals_binary_search(seed):
    rng = np.random.default_rng(seed)
    for _ in range(60):
        n = int(rng.integers(1, 500))
        keys = np.sort(rng.integers(-5, int(rng.integers(1, 3 * n + 10)), n))  # duplicates and negatives
        queries = rng.integers(-10, 4 * n + 20, int(rng.integers(65, 400)))
        assert (unique_match(keys, queries) == _unique_match_by_search(keys, queries)).all()


@pytest.mark.parametrize("keep", [None, 0, 1, 5, 37, 199, 200, 201, 10_000])
def test_longest_first_equals_stable_argsort(keep):
    rng = np.random.default_rng(3)
    durations = rng.integers(1, 50, 200)  # many ties
    expected = np.argsort(-durations, kind="stable")
    expected = expected if keep is None else expected[:keep]
    assert longest_first(durations, keep).tolist() == expected.tolist()


def test_occupancy_grouping_by_name_equals_pandas_groupby(monkeypatch):
    rng = np.random.default_rng(1)
    vgpr_of = {"a": 64, "b": 128, "c": 32, "d": 256, "e": 16}
    for trial in range(24):
        n = int(rng.integers(1, 3000))
        names = np.array(list(vgpr_of))[rng.integers(0, 5, n)]
        vgpr = np.array([vgpr_of[x] for x in names])
        if trial % 3 == 0:
            vgpr = vgpr + 8 * rng.integers(0, 2, n)  # several configurations per name: pandas path
        start = rng.integers(0, 10**9, n)
        kernels = make_table(
            "kernels",
            {
                "start": start,
                "end": start + rng.integers(1, 10**5, n),
                "name": names,
                "agent": rng.integers(1, 3, n) if trial % 2 else 1,
                "wg_x": 256,
                "wg_y": 1,
                "wg_z": 1,
                "arch_vgpr": vgpr,
                "accum_vgpr": 0,
                "sgpr": 32,
                "lds_bytes": 0,
                "scratch_bytes": 0,
            },
        )
        fast = occupancy.kernel_occupancy(kernels, {1: "gfx942", 2: "gfx90a"}, {})
        with monkeypatch.context() as m:
            m.setattr(occupancy, "_configurations_by_name", lambda *args: None)
            slow = occupancy.kernel_occupancy(kernels, {1: "gfx942", 2: "gfx90a"}, {})
        assert fast == slow and fast


def test_names_union_of_kernel_and_copy_categories():
    kernels = make_table("kernels", {"name": ["k1", "k2", "k1"]})["name"]
    copies = make_table("copies", {"name": ["MEMORY_COPY_HOST_TO_DEVICE", "k2"]})["name"]
    names = _Names([kernels, copies])
    assert list(names(np.array([0, 1, 2, 3, 4, -1]))) == ["k1", "k2", "k1", "MEMORY_COPY_HOST_TO_DEVICE", "k2", ""]


def test_gap_frame_of_chosen_rows_equals_rows_of_full_frame():
    from tests.test_analysis_timeline import sync_loop_run

    run = sync_loop_run(n=30)
    _, full = gpu_timeline(run, threshold_ns=1)
    _, gaps = gpu_gaps(run, threshold_ns=1)
    rows = np.array([7, 2, 19])
    part = gaps.frame(rows)
    expected = full.take(rows).reset_index(drop=True)
    for column in full.columns:
        assert part[column].astype(str).tolist() == expected[column].astype(str).tolist(), column


@pytest.mark.parametrize("seed", range(4))
def test_corr_index_equals_unique_match_over_all_calls_and_launch_calls(seed):
    """CorrIndex (built once per run, shared by gpu_gaps and link_launches) answers as
    unique_match over every call and over the launch-class calls, for consecutive, unique
    unsorted, and repeated ids (e.g. HSA calls sharing a HIP call's id)."""
    import pandas as pd

    from tui_prof.analysis.hostapi import LAUNCH, CorrIndex

    rng = np.random.default_rng(seed)
    for trial in range(40):
        n = int(rng.integers(1, 300))
        kind = trial % 4
        if kind == 0:
            corr = np.arange(n) + int(rng.integers(-3, 5))  # consecutive (rocprofv3)
        elif kind == 1:
            corr = rng.permutation(np.arange(n) * 3 + 1)  # unique, unsorted
        else:
            corr = rng.integers(-2, n // 2 + 2, n)  # repeats and negatives
            if kind == 3:
                corr = np.sort(corr)
        classes = rng.integers(0, 6, n).astype(np.int8)
        api = pd.DataFrame({"correlation_id": corr.astype(np.int64)})
        index = CorrIndex(api, classes)
        queries = rng.integers(-4, n + 10, int(rng.integers(1, 200)))

        def by_search(rows, corr=corr, queries=queries):
            order = rows[np.argsort(corr[rows], kind="stable")]
            pos = _unique_match_by_search(corr[order], queries) if len(order) else np.full(len(queries), -1)
            return np.where(pos >= 0, order[np.maximum(pos, 0)] if len(order) else -1, -1)

        assert index.rows(queries).tolist() == by_search(np.arange(n)).tolist()
        assert index.launch_rows(queries).tolist() == by_search(np.flatnonzero(classes >= LAUNCH)).tolist()


@pytest.mark.parametrize("groups", [1, 3])
def test_hotspots_single_group_path_equals_pandas_groupby(groups):
    """hotspots() skips the group sort when every row has one group (one GPU, one process);
    both paths must give pandas' own per-group statistics (sample std, midpoint median)."""
    from tui_prof.analysis.hotspots import hotspots

    rng = np.random.default_rng(groups)
    n = 5_000
    start = np.cumsum(rng.integers(1, 1_000, n)).astype(np.int64)
    dur = rng.integers(1, 10_000, n).astype(np.int64)
    agent = rng.integers(0, groups, n).astype(np.int32)
    kernels = make_table("kernels", {"start": start, "end": start + dur, "agent": agent, "name": np.array(["k"] * n, dtype=object)})
    got = hotspots(kernels, by="agent").set_index("name").sort_index()
    want = pd.DataFrame({"agent": agent.astype(str), "dur": dur}).groupby("agent")["dur"]
    assert list(got.index) == sorted(want.groups)
    assert got["calls"].tolist() == want.count().tolist()
    assert got["total_ns"].tolist() == want.sum().tolist()
    assert got["min_ns"].tolist() == want.min().tolist() and got["max_ns"].tolist() == want.max().tolist()
    assert np.allclose(got["median_ns"], want.median()) and np.allclose(got["stddev_ns"], want.std(ddof=1))
