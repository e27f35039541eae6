"""The summary of many small processes (issue 30, point 15): its per-process shortcuts
(processes without host API calls, without linked dispatches, without collectives; one
concatenation of the kernel tables) give what each process's own summary gives, summed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.synthetic import synthetic_runset
from tui_prof.analysis.api import build_summary
from tui_prof.loaders import load_path
from tui_prof.model import RunSet
from tui_prof.model.schema import CATEGORY, TABLES, _coerce, concat_tables, make_table

HEADER = (
    '"Kind","Agent_Id","Queue_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id",'
    '"Start_Timestamp","End_Timestamp","Private_Segment_Size","Group_Segment_Size",'
    '"Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"'
)


def _reference_concat(spec_name: str, tables: list[pd.DataFrame]) -> pd.DataFrame:
    """Column by column: each column of each table, numpy-concatenated, categories unioned."""
    spec = TABLES[spec_name]
    tables = [t for t in tables if len(t)]
    data = {}
    for name, dtype in spec.columns.items():
        parts = [t[name] for t in tables]
        if dtype == CATEGORY:
            data[name] = pd.Series(pd.api.types.union_categoricals(parts, ignore_order=True))
        else:
            data[name] = _coerce(np.concatenate([p.to_numpy() for p in parts]), dtype)
    return pd.DataFrame(data, columns=list(spec.columns))


def _kernels(rng: np.random.Generator, rows: int, wide: bool) -> pd.DataFrame:
    start = rng.integers(0, 10**12, rows)
    names = [f"k{int(i)}" for i in rng.integers(0, 5, rows)]
    return make_table(
        "kernels",
        {
            "start": start,
            "end": start + rng.integers(1, 1000, rows),
            "agent": rng.integers(0, 4, rows),
            "pid": rng.integers(1, 7 if not wide else 3_000_000_000, rows),  # int32 beyond in some tables
            "correlation_id": rng.integers(0, 200 if not wide else 70_000, rows),
            "name": names,
            "grid_x": rng.integers(1, 100 if not wide else 100_000, rows),
        },
    )


def test_concat_tables_matches_column_by_column():
    rng = np.random.default_rng(3)
    tables = [_kernels(rng, int(rng.integers(0, 4)), wide=i % 7 == 3) for i in range(60)]
    assert len({str(t["pid"].dtype) for t in tables if len(t)}) > 1  # the tables differ in dtype
    got = concat_tables("kernels", tables)
    want = _reference_concat("kernels", tables)
    pd.testing.assert_frame_equal(got, want)
    assert list(got["name"].cat.categories) == list(want["name"].cat.categories)
    assert len(got) == sum(len(t) for t in tables)


def test_concat_tables_same_categories_in_other_orders():
    """Tables whose category columns hold the same categories (in one order or another, as
    pandas keeps the column categorical then) join as their union does."""
    rng = np.random.default_rng(5)
    tables = [_kernels(rng, 3, False) for _ in range(6)]
    cats = ["k0", "k1", "k2", "k3", "k4"]
    for i, t in enumerate(tables):
        order = cats if i % 2 else cats[::-1]
        t["name"] = pd.Categorical([cats[j % 5] for j in range(i, i + 3)], categories=order)
    got = concat_tables("kernels", tables)
    want = _reference_concat("kernels", tables)
    pd.testing.assert_frame_equal(got, want)
    assert list(got["name"].cat.categories) == list(want["name"].cat.categories)


def test_concat_tables_of_other_columns_still_refused():
    rng = np.random.default_rng(4)
    a, b = _kernels(rng, 2, False), _kernels(rng, 2, False)
    with pytest.raises(KeyError):
        concat_tables("kernels", [a, b.drop(columns=["grid_x"])])
    with pytest.raises(KeyError):
        concat_tables("kernels", [a, b.rename(columns={"grid_x": "other"})])


def _tiny_processes(root: Path, n: int) -> list:
    for p in range(n):
        pid, start = 7000 + p, 1_700_000_000_000_000_000 + p * 5000
        row = f'"KERNEL_DISPATCH",1,1,{pid},1,16,"kern_{p % 3}(float*)",{p + 1},{start},{start + 300 + p},0,0,64,1,1,1024,1,1'
        (root / f"{pid}_kernel_trace.csv").write_text(f"{HEADER}\n{row}\n")
    return load_path(str(root), use_cache=False).runs


def _synth(sync: str, pid: int):
    run = synthetic_runset(sync=sync, iterations=6)[0].runs[0]
    return dataclasses.replace(run, meta=dataclasses.replace(run.meta, pid=pid, label=f"synthhost/{pid}"))


SUMMED = {
    "sync": ("calls", "total_ns", "blocking_copy_calls", "exposed_ns", "waiting_ns", "union_ns", "exposed_union_ns", "process_ns"),
    "launch": ("launch_calls", "graph_launch_calls", "linked_dispatches", "graph_dispatches", "api_total_ns", "graph_launch_api_ns"),
}


def test_many_processes_sum_their_own_summaries(tmp_path):
    """Processes with API calls among many without: every summed figure of the sync and
    launch sections, the dispatches and the kernel time equal the sums of each process's
    own summary (the reference: one process at a time, no shortcut shared)."""
    runs = [_synth("per_launch", 4242), *_tiny_processes(tmp_path, 25), _synth("per_iteration", 4243)]
    whole = build_summary(RunSet(root="many", runs=runs))
    alone = [build_summary(RunSet(root="one", runs=[run])) for run in runs]
    for section, keys in SUMMED.items():
        for key in keys:
            assert whole[section][key] == sum(s[section][key] for s in alone), (section, key)
    assert whole["sync"]["calls"] > 0 and whole["launch"]["linked_dispatches"] > 0  # the API processes count
    by_name: dict[str, int] = {}
    for s in alone:
        for name, v in s["sync"]["by_name"].items():
            by_name[name] = by_name.get(name, 0) + v["calls"]
    assert {name: v["calls"] for name, v in whole["sync"]["by_name"].items()} == by_name
    sal = [s["sync"]["sync_after_launch"] for s in alone]
    assert whole["sync"]["sync_after_launch"]["launches"] == sum(x["launches"] for x in sal)
    assert whole["sync"]["sync_after_launch"]["followed_by_sync"] == sum(x["followed_by_sync"] for x in sal)
    assert sum(p["dispatches"] for p in whole["processes"]) == sum(len(r.kernels) for r in runs)
    kernel_ns = sum(int((r.kernels["end"] - r.kernels["start"]).sum()) for r in runs)
    assert whole["kernels"]["total_ns"] == kernel_ns == sum(s["kernels"]["total_ns"] for s in alone)
    assert whole["kernels"]["dispatches"] == sum(s["kernels"]["dispatches"] for s in alone)
    # each process's rank row: what its own summary's row says (collectives, busy and compute time, top kernel)
    own = {s["ranks"][0]["label"]: s["ranks"][0] for s in alone}
    assert len(whole["ranks"]) == len(runs)
    for row in whole["ranks"]:
        for key in RANK_OWN:
            assert row[key] == own[row["label"]][key], (row["label"], key)


RANK_OWN = (
    "dispatches",
    "gpus",
    "busy_ns",
    "compute_ns",
    "communication_ns",
    "copy_ns",
    "collectives",
    "sync_ns",
    "overlap_ns",
    "compute_exposed_ns",
    "top_kernel",
    "top_kernel_pct",
)
