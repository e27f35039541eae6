"""The per-name counts and sums of the summary's API, sync and hotspot sections, and the
interval unions behind its busy times, against independent computations: pandas
``groupby`` on the same rows, a brute-force union over a nanosecond grid, and the same
function without the shared or skipped work (each fast path against its general one)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tui_prof.analysis import hostapi, hostcalls, stats
from tui_prof.analysis.hotspots import hotspots, process_order
from tui_prof.analysis.steps import _inferred_steps
from tui_prof.analysis.timeline import union_length
from tui_prof.model import Run, RunSet, make_table
from tui_prof.model.run import RunMeta

NAMES = ["hipLaunchKernel", "hipDeviceSynchronize", "hipMemcpy", "hipStreamSynchronize", "hipMalloc", "roctxRangePush"]


def _api(rng: np.random.Generator, n: int, extra_categories: int = 0) -> pd.DataFrame:
    names = pd.Categorical(rng.choice(NAMES, n), categories=NAMES + [f"unused{i}" for i in range(extra_categories)])
    domains = pd.Categorical(rng.choice(["hip_api", "hsa_api", "marker"], n))
    start = np.sort(rng.integers(0, 10**9, n))
    return make_table(
        "api",
        {
            "start": start,
            "end": start + rng.integers(0, 10**6, n),
            "name": names,
            "domain": domains,
            "pid": np.full(n, 7),
            "tid": rng.choice([7, 8, 9], n),
            "correlation_id": np.arange(1, n + 1),
        },
    )


def _by_pandas(api: pd.DataFrame) -> dict[tuple[str, str], tuple[int, int]]:
    frame = pd.DataFrame({"domain": api["domain"].astype(str), "name": api["name"].astype(str), "dur": api["end"] - api["start"]})
    g = frame.groupby(["domain", "name"])["dur"].agg(["count", "sum"])
    return {key: (int(r["count"]), int(r["sum"])) for key, r in g.iterrows()}


@pytest.mark.parametrize("extra", [0, 70_000])  # a slot per (domain, name) pair; more names than calls: the sort
def test_api_part_counts_and_sums_every_domain_and_name_as_groupby_does(extra):
    rng = np.random.default_rng(extra)
    api = _api(rng, 3000, extra)
    part = hostcalls.api_section(RunSet("r", [Run(meta=RunMeta(), api=api)]), None)
    assert part["source"] == "trace"
    expected = _by_pandas(api)
    labels = {d: stats.TRACE_API_DOMAIN.get(d, d.upper()) for d in ("hip_api", "hsa_api", "marker")}
    got = {(d, r["name"]): (r["calls"], r["total_ns"]) for r in part["rows"] for d in labels if labels[d] == r["domain"]}
    assert got == expected
    assert sum(c for c, _ in got.values()) == len(api)
    for domain in {r["domain"] for r in part["rows"]}:
        rows = [r for r in part["rows"] if r["domain"] == domain]
        assert [r["total_ns"] for r in rows] == sorted((r["total_ns"] for r in rows), reverse=True)
        assert 99.99 <= sum(r["percent"] for r in rows) <= 100.01


def test_sync_stats_by_name_is_the_groupby_of_the_sync_and_blocking_copy_calls():
    rng = np.random.default_rng(3)
    api = _api(rng, 5000)
    classes = hostapi.api_classes(api)
    stats = hostapi.sync_stats(api, 10**9, classes)
    chosen = api[(classes == hostapi.SYNC) | (classes == hostapi.BLOCKING_COPY)]
    dur = (chosen["end"] - chosen["start"]).groupby(chosen["name"].astype(str)).agg(["count", "sum"])
    assert {n: (v["calls"], v["total_ns"]) for n, v in stats["by_name"].items()} == {n: (int(r["count"]), int(r["sum"])) for n, r in dur.iterrows()}
    assert list(stats["by_name"]) == sorted(stats["by_name"], key=lambda n: (-stats["by_name"][n]["total_ns"], n))
    assert stats["calls"] == len(chosen) and stats["total_ns"] == int((chosen["end"] - chosen["start"]).sum())


@pytest.mark.parametrize("seed", range(20))
def test_union_length_of_sorted_and_shuffled_intervals_is_the_grid_union(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    s = np.sort(rng.integers(0, 500, n))
    e = s + rng.integers(0, 40, n)
    grid = np.zeros(600, dtype=bool)
    for a, b in zip(s, e, strict=True):
        grid[a:b] = True
    shuffle = rng.permutation(n)
    assert union_length(s, e) == union_length(s[shuffle], e[shuffle]) == int(grid.sum())


@pytest.mark.parametrize("seed", range(10))
def test_interval_union_of_the_masked_intervals_is_the_grid_union(seed):
    from tui_prof.analysis.aggregate import interval_union

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    s = rng.integers(0, 500, n)
    e = s + rng.integers(0, 40, n)
    mask = rng.random(n) < 0.5
    grid = np.zeros(600, dtype=bool)
    for a, b in zip(s[mask], e[mask], strict=True):
        grid[a:b] = True
    assert interval_union(s, e, mask) == int(grid.sum())
    assert interval_union(s, e, np.zeros(n, dtype=bool)) == 0


@pytest.mark.parametrize("seed", range(10))
def test_sync_exposure_bounds_of_each_call_by_a_grid(seed):
    """b of each sync call: the last instant in [s, e) at which a GPU is busy (s when none),
    found here on a 1 ns grid of the busy union."""
    rng = np.random.default_rng(seed)
    start = np.sort(rng.integers(0, 10**4, 400))
    api = make_table(
        "api",
        {"start": start, "end": start + rng.integers(0, 60, 400), "name": pd.Categorical(rng.choice(NAMES, 400), categories=NAMES), "pid": 7, "tid": 7},
    )
    classes = hostapi.api_classes(api)
    bs = np.sort(rng.choice(np.arange(0, 10**4, 7), 30, replace=False))
    be = bs + rng.integers(1, 7, 30)  # disjoint, sorted
    busy = np.zeros(int(max(be.max(), api["end"].max())) + 1, dtype=bool)
    for a, b in zip(bs, be, strict=True):
        busy[a:b] = True
    s, b, e = hostapi.sync_exposure_bounds(api, classes, bs, be)
    chosen = api[(classes == hostapi.SYNC) | (classes == hostapi.BLOCKING_COPY)]
    assert s.tolist() == chosen["start"].tolist() and e.tolist() == chosen["end"].tolist()
    expected = []
    for start, end in zip(s.tolist(), e.tolist(), strict=True):
        on = np.flatnonzero(busy[start:end])
        expected.append(start + int(on[-1]) + 1 if len(on) else start)
    assert b.tolist() == expected


def _kernels(rng: np.random.Generator, n: int, pids: int) -> pd.DataFrame:
    start = rng.integers(0, 10**6, n)
    pid = rng.integers(0, pids, n)
    order = np.lexsort((start, pid))  # each process's kernels in start order, processes one after another
    start, pid = start[order], pid[order]
    return make_table(
        "kernels",
        {
            "start": start,
            "end": start + rng.integers(1, 5000, n),  # overlapping kernels: busy time below the total
            "name": pd.Categorical(rng.choice(["gemm", "add", "nccl_allreduce", "copy"], n)),
            "agent": rng.integers(1, 3, n),
            "pid": pid + 100,
        },
    )


@pytest.mark.parametrize("pids", [1, 3])
def test_the_shared_process_order_gives_each_grouping_its_own_busy_time(pids):
    rng = np.random.default_rng(pids)
    kernels = _kernels(rng, 4000, pids)
    shared = process_order(kernels)
    assert shared.overlapping
    spans = kernels.groupby("pid").agg(lo=("start", "min"), hi=("end", "max"))
    wall = int((spans["hi"] - spans["lo"]).sum())  # the processes' time, summed
    for by in ("name", "agent", "pid"):
        alone = hotspots(kernels, by=by, wall_ns=wall, processes=process_order(kernels))
        together = hotspots(kernels, by=by, wall_ns=wall, processes=shared)
        pd.testing.assert_frame_equal(alone, together)
        share = 100.0 * together["total_ns"] / wall  # a group's busy time is at most its summed time
        assert (together["pct_wall"] <= 100.0).all() and (together["pct_wall"] <= share + 1e-9).all()
        assert (together["pct_wall"] < share).any()  # its kernels overlap: counted once
    # busy time by name: each name's union over its own kernels, per process, summed
    table = hotspots(kernels, by="name", wall_ns=1, processes=shared).set_index("name")
    for name, rows in kernels.groupby(kernels["name"].astype(str)):
        expected = sum(union_length(p["start"].to_numpy(), p["end"].to_numpy()) for _, p in rows.groupby("pid"))
        assert table.loc[name, "pct_wall"] == pytest.approx(100.0 * expected)


def test_inferred_steps_follow_the_thread_that_launches_most_lowest_tid_on_a_tie():
    # two threads with 4 launch-then-sync steps each (a tie): the lower tid's steps are taken
    rows = []
    t = 0
    for tid in (9, 5):
        for _ in range(4):
            for _ in range(3):
                rows.append(("hipLaunchKernel", tid, t, t + 10))
                t += 20
            rows.append(("hipDeviceSynchronize", tid, t, t + 50))
            t += 60
    rows.sort(key=lambda r: r[2])
    api = make_table(
        "api",
        {
            "name": pd.Categorical([r[0] for r in rows]),
            "tid": np.array([r[1] for r in rows]),
            "start": np.array([r[2] for r in rows]),
            "end": np.array([r[3] for r in rows]),
            "pid": np.full(len(rows), 1),
            "domain": pd.Categorical(["hip_api"] * len(rows)),
            "correlation_id": np.arange(1, len(rows) + 1),
        },
    )
    run = Run(meta=RunMeta(), api=api)
    found = _inferred_steps(run, hostapi.CorrIndex(api))
    assert found is not None
    assert "thread 5" in found.how and len(found.starts) == 4
    first_launch_of_5 = min(r[2] for r in rows if r[1] == 5)
    assert int(found.starts[0]) == first_launch_of_5


def _grid(starts, ends, size: int = 6000) -> np.ndarray:
    grid = np.zeros(size, dtype=bool)
    for a, b in zip(starts, ends, strict=True):
        grid[a:b] = True
    return grid


@pytest.mark.parametrize(
    "names",
    [
        ["gemm_kernel", "elementwise_add"],  # every kernel computes
        ["gemm_kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "__amd_rocclr_copyBuffer"],
        ["ncclDevKernel_AllReduce_Sum_f32_RING_LL"],  # nothing computes
    ],
)
@pytest.mark.parametrize("seed", range(3))
def test_a_process_rank_figures_are_unions_on_a_grid(names, seed):
    """RankCore's compute, communication, copy, busy and exposed-compute time of one process
    with overlapping kernels and copies, each against a 1 ns grid of its intervals."""
    from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES
    from tui_prof.analysis.ranks import COMMUNICATION, COPY, RankCore

    rng = np.random.default_rng(seed)
    n = 120
    start = np.sort(rng.integers(0, 5000, n))
    end = start + rng.integers(1, 80, n)
    name = rng.choice(names, n)
    run = Run()
    run.kernels = make_table("kernels", {"start": start, "end": end, "name": pd.Categorical(name), "agent": 1, "pid": 7})
    cs = np.sort(rng.integers(0, 5000, 6))
    ce = cs + rng.integers(1, 200, 6)
    run.copies = make_table("copies", {"start": cs, "end": ce})
    core = RankCore(run, "p", int(end.max() - start.min()), np.zeros(0, dtype=np.int8), DEFAULT_CATEGORY_RULES)
    kind = np.array([DEFAULT_CATEGORY_RULES.classify(str(x)) for x in name])
    comm, copy = kind == COMMUNICATION, kind == COPY
    compute = ~(comm | copy)
    compute_grid, comm_grid = _grid(start[compute], end[compute]), _grid(start[comm], end[comm])
    assert core.compute_ns == int(compute_grid.sum())
    assert core.communication_ns == int(comm_grid.sum())
    assert core.copy_ns == int((_grid(start[copy], end[copy]) | _grid(cs, ce)).sum())
    assert core.busy_ns == int((_grid(start, end) | _grid(cs, ce)).sum())
    assert core.compute_exposed_ns == int((compute_grid & ~comm_grid).sum())
