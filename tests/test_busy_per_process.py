"""``pct_wall`` of every hotspot table unites kernel intervals per process, not per pid: two
ranks on different hosts with the same pid (common in containers and multi-node jobs) are on
clocks that cannot be compared, so their kernels are never united across them. The expected
busy time is each process's union computed independently (a boolean nanosecond grid)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tui_prof.analysis.api import MERGED_SECTIONS, build_summary, comparable, merge_partials, rank_partials, run_label
from tui_prof.analysis.hotspots import all_kernels, hotspots, process_order, run_codes
from tui_prof.export.parquet import hotspots_table
from tui_prof.model import Run, RunSet, make_table
from tui_prof.model.run import RunMeta

PID = 4242


def _process(host: str, rng: np.random.Generator) -> Run:
    """One rank: overlapping kernels on two streams, times on the host's own clock (from 0)."""
    n = 60
    start = np.sort(rng.integers(0, 20_000, n))
    kernels = make_table(
        "kernels",
        {
            "start": start,
            "end": start + rng.integers(1, 900, n),
            "name": pd.Categorical(rng.choice(["gemm", "add"], n)),
            "agent": np.ones(n, dtype=np.int64),
            "stream": rng.integers(1, 3, n),
            "pid": np.full(n, PID),
        },
    )
    return Run(meta=RunMeta(hostname=host, pid=PID, label=f"{host}/{PID}"), kernels=kernels)


def _grid_union(start: np.ndarray, end: np.ndarray) -> int:
    on = np.zeros(int(end.max()) + 1, dtype=bool)
    for s, e in zip(start.tolist(), end.tolist(), strict=True):
        on[s:e] = True
    return int(on.sum())


def _expected_busy(runset: RunSet, column: str) -> dict[str, int]:
    """Per group: the union of its kernels' intervals within each process, summed."""
    out: dict[str, int] = {}
    for run in runset.runs:
        k = run.kernels
        for label, rows in k.groupby(k[column].astype(str), observed=True):
            out[str(label)] = out.get(str(label), 0) + _grid_union(rows["start"].to_numpy(), rows["end"].to_numpy())
    return out


@pytest.fixture
def runset() -> RunSet:
    rng = np.random.default_rng(7)
    return RunSet("two hosts, one pid", [_process("node-a", rng), _process("node-b", rng)])


def test_the_two_ranks_share_a_pid_and_their_intervals_interleave(runset):
    # the premise: united by pid, the ranks' kernels would overlap and the figure would shrink
    kernels = all_kernels(runset)
    assert set(kernels["pid"].tolist()) == {PID}
    by_pid = _grid_union(kernels["start"].to_numpy(), kernels["end"].to_numpy())
    assert by_pid < sum(_grid_union(r.kernels["start"].to_numpy(), r.kernels["end"].to_numpy()) for r in runset.runs)


@pytest.mark.parametrize("by", ["name", "pid", "agent"])
def test_hotspot_busy_time_is_united_per_process(runset, by):
    kernels = all_kernels(runset)
    table = hotspots(kernels, by=by, wall_ns=1, processes=process_order(kernels, run_codes(runset))).set_index("name")
    expected = _expected_busy(runset, by)
    assert {n: round(v / 100.0) for n, v in table["pct_wall"].items()} == expected


def test_a_wall_share_needs_the_process_of_each_kernel(runset):
    """The kernels table of two processes of one pid on two hosts does not say which host a
    row came from: asked for a % of wall without the processes, hotspots refuses instead of
    uniting the two hosts' kernels (which shrinks the busy time by the hosts' overlap)."""
    kernels = all_kernels(runset)
    with pytest.raises(TypeError, match="processes"):
        hotspots(kernels, by="pid", wall_ns=1)
    one = hotspots(kernels, by="pid", wall_ns=1, processes=process_order(kernels, run_codes(runset)))
    united = hotspots(kernels, by="pid", wall_ns=1, processes=process_order(kernels))  # each pid one process: what was wrong
    assert one["pct_wall"].tolist() == [100.0 * sum(_grid_union(r.kernels["start"].to_numpy(), r.kernels["end"].to_numpy()) for r in runset.runs)]
    assert united["pct_wall"].iloc[0] < one["pct_wall"].iloc[0]
    assert hotspots(kernels, by="pid")["total_ns"].tolist() == one["total_ns"].tolist()  # no wall share: nothing needed


def test_summary_and_table_export_give_each_process_its_own_busy_time(runset):
    doc = build_summary(runset)
    process_ns = sum(int(r.kernels["end"].max() - r.kernels["start"].min()) for r in runset.runs)
    expected = _expected_busy(runset, "name")
    for row in doc["hotspots"]:
        assert row["pct_wall"] == pytest.approx(round(100.0 * expected[row["name"]] / process_ns, 4))
    (pid_row,) = doc["hotspots_by"]["process"]
    assert pid_row["pct_wall"] == pytest.approx(round(100.0 * _expected_busy(runset, "pid")[str(PID)] / process_ns, 4))
    assert pid_row["pct_wall"] <= 100.0
    table = hotspots_table(runset, "name").set_index("name")
    wall = max(int(r.kernels["end"].max() - r.kernels["start"].min()) for r in runset.runs)  # the largest host's span
    for name, value in table["pct_wall"].items():
        assert value == pytest.approx(100.0 * expected[str(name)] / wall)


def test_cluster_partials_merge_equal_to_the_summary_with_a_repeated_pid(runset):
    doc = build_summary(runset)
    merged = merge_partials(rank_partials(runset), load=lambda label: RunSet(runset.root, [r for r in runset.runs if run_label(r) == label]))
    assert len(merged["critical_path"]["processes"]) == 2  # one path per host's process, not one per pid
    compared = [key for key in MERGED_SECTIONS if key != "logs"]  # logs: read by the driver from a run folder; this run set has none
    assert json.dumps(comparable(merged, compared)) == json.dumps(comparable(doc, compared))
