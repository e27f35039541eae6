"""The cheap per-process paths for runs of thousands of tiny processes (issue 30, point 15)
give the same ``summary --json`` document, byte for byte, as the plain per-process paths
kept here as the reference: shared empty tables instead of a copy per run, column reads
without a Series (:func:`~tui_prof.model.schema.column_array`), one empty launch-link table
copied instead of built per process."""

from __future__ import annotations

import dataclasses
import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.synthetic import synthetic_runset
from tui_prof import cli
from tui_prof.analysis import copies, critical, depgraph, hostapi, integrity, occupancy, ranks, runinput, streamwaits, timeline, whatif
from tui_prof.analysis.api import build_summary
from tui_prof.loaders import load_path
from tui_prof.model import RunSet, run, schema
from tui_prof.model.schema import category_array, column_array, make_table

DATA = Path(__file__).parent / "data"
HEADER = (
    '"Kind","Agent_Id","Queue_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id",'
    '"Start_Timestamp","End_Timestamp","Private_Segment_Size","Group_Segment_Size",'
    '"Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"'
)
AGENT_INFO = '"Node_Id","Logical_Node_Id","Agent_Type","Name","Wave_Front_Size","Cu_Count"\n0,0,"CPU","AMD EPYC",0,0\n1,1,"GPU","gfx942",64,304\n'


def _slow_column(frame: pd.DataFrame, name: str) -> np.ndarray:
    return frame[name].to_numpy()


def _slow_category(frame: pd.DataFrame, name: str) -> pd.Categorical:
    column = frame[name]
    return (column if isinstance(column.dtype, pd.CategoricalDtype) else column.astype("category")).array


def _factorized_codes(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    key = (pid.astype(np.int64) << 32) ^ (tid.astype(np.int64) & 0xFFFFFFFF)
    return pd.factorize(key)[0].astype(np.int64)


def _fresh_no_links() -> pd.DataFrame:
    no_rows = np.array([], np.int64)
    columns = ("kernel_row", "api_start", "api_dur_ns", "queue_delay_ns", "kernel_dur_ns")
    return pd.DataFrame({**{c: no_rows.copy() for c in columns}, "graph": np.array([], bool)}, copy=False)


@pytest.fixture
def reference(monkeypatch):
    """The plain per-process paths: a copy of each empty table per run, a Series per column
    read, the empty launch-link table built per process, thread and queue codes always
    through ``pd.factorize``."""

    def apply() -> None:
        for module in (ranks, timeline, runinput, copies, integrity, occupancy, critical, depgraph, streamwaits, whatif):
            if hasattr(module, "column_array"):
                monkeypatch.setattr(module, "column_array", _slow_column)
            if hasattr(module, "category_array"):
                monkeypatch.setattr(module, "category_array", _slow_category)
        monkeypatch.setattr(run, "shared_empty", schema.empty_table)
        monkeypatch.setattr(schema, "shared_empty", schema.empty_table)
        monkeypatch.setattr(hostapi, "_no_links", _fresh_no_links)
        monkeypatch.setattr(depgraph, "_thread_codes", _factorized_codes)

    return apply


def _overlapping(root: Path, n: int, hosts: int = 2) -> Path:
    """``n`` tiny processes that ran together (one recording), a few with several rows,
    other names and agents, some with their agent_info."""
    for p in range(n):
        host = root / f"host{p % hosts}"
        host.mkdir(parents=True, exist_ok=True)
        pid, start = 30_000 + p, 1_700_000_000_000_000_000 + p * 100
        rows = [
            f'"KERNEL_DISPATCH",{1 + (p + i) % 2},1,{pid},{i + 1},16,"kern_{(p * 3 + i) % 7}(float*)",{i + 1},{start + i * 50},{start + 500 + p % 13 + i * 50},0,{p % 3 * 1024},64,1,1,1024,{1 + p % 4},1'
            for i in range(1 + p % 3)
        ]
        (host / f"{pid}_kernel_trace.csv").write_text(HEADER + "\n" + "\n".join(rows) + "\n")
        if p % 4 == 1:
            (host / f"{pid}_agent_info.csv").write_text(AGENT_INFO)
    return root


def _summary_json(path: Path) -> str:
    with redirect_stdout(io.StringIO()) as out, redirect_stderr(io.StringIO()) as err:
        rc = cli.main(["summary", "--no-cache", "--json", str(path)])
    return f"rc={rc}\n{err.getvalue()}\n{out.getvalue()}"


SAMPLES = [
    DATA / "kineto" / "ranks",
    DATA / "kineto" / "comm",
    DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7",
    DATA / "rocprofv3_csv" / "hpctraining-extracted",
    DATA / "rocpd" / "28_results.db",
]


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_samples_give_the_reference_document(sample: Path, reference, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    got = _summary_json(sample)
    reference()
    want = _summary_json(sample)
    assert got == want
    assert got.startswith("rc=0") and '"processes"' in got


def test_many_tiny_processes_give_the_reference_document(reference, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    root = _overlapping(tmp_path / "run", 150)
    got = _summary_json(root)
    doc = json.loads(got.split("\n", 2)[2])
    assert len(doc["processes"]) == 150 and doc["kernels"]["dispatches"] == sum(1 + p % 3 for p in range(150))
    reference()
    assert got == _summary_json(root)


def test_api_processes_among_tiny_ones_give_the_reference_document(reference, tmp_path) -> None:
    """Processes with host API calls, copies and markers (synth) among tiny loaded ones."""

    def runs() -> RunSet:
        synth = []
        for pid, sync in ((4242, "per_launch"), (4243, "per_iteration")):
            one = synthetic_runset(sync=sync, iterations=5)[0].runs[0]
            synth.append(dataclasses.replace(one, meta=dataclasses.replace(one.meta, pid=pid, label=f"synthhost/{pid}")))
        tiny = load_path(str(_overlapping(tmp_path / f"run{len(list(tmp_path.iterdir()))}", 30, hosts=1)), use_cache=False).runs
        return RunSet(root="many", runs=[synth[0], *tiny, synth[1]])

    got = json.dumps(build_summary(runs()), sort_keys=True)
    assert json.loads(got)["sync"]["calls"] > 0
    reference()
    assert got == json.dumps(build_summary(runs()), sort_keys=True)


def test_column_reads_equal_the_series_reads() -> None:
    table = make_table("kernels", {"start": np.arange(4), "end": np.arange(4) + 7, "name": ["b", "a", "b", "c"], "pid": [1, 2, 3, 2**40]})
    for name, dtype in schema.TABLES["kernels"].columns.items():
        if dtype == schema.CATEGORY:
            got, want = category_array(table, name), table[name].array
            assert list(got.categories) == list(want.categories) and (got.codes == want.codes).all()
        else:
            got_values = column_array(table, name)
            want_values = table[name].to_numpy()
            assert got_values.dtype == want_values.dtype and (got_values == want_values).all(), name
            assert not got_values.flags.writeable  # a read never lets a caller write into the table
    renamed = table.set_axis(["start", "start", *table.columns[2:]], axis=1)  # duplicate names: the Series path
    assert column_array(renamed, "start").shape == (4, 2)


def test_concat_of_many_tables_equals_the_union_of_their_categories() -> None:
    """The straight-from-the-blocks join of many small tables equals the column-by-column
    reference: categories unioned in first-appearance order (shared, permuted, disjoint,
    missing values), mixed integer widths, float columns."""
    from tests.test_summary_many_processes import _reference_concat

    rng = np.random.default_rng(11)
    shared = pd.CategoricalDtype(["s0", "s1", "s2"])
    tables = []
    for i in range(80):
        rows = int(rng.integers(1, 4))
        names = [f"k{int(x)}" for x in rng.integers(0, 6 if i % 3 else 40, rows)]
        start = rng.integers(0, 10**12 if i % 9 else 10**15, rows)
        table = make_table("kernels", {"start": start, "end": start + 5, "name": names, "pid": rng.integers(1, 9 if i % 5 else 3_000_000_000, rows)})
        if i % 4 == 0:
            table["name"] = pd.Categorical.from_codes(rng.integers(0, 3, rows), dtype=shared)
        if i % 13 == 7:
            table["name"] = pd.Categorical([None] + names[1:], categories=sorted(set(names[1:])) or ["x"])  # a missing value
        tables.append(table)
    got = schema.concat_tables("kernels", tables)
    want = _reference_concat("kernels", tables)
    pd.testing.assert_frame_equal(got, want)
    assert list(got["name"].cat.categories) == list(want["name"].cat.categories)
    assert schema._concat_columns(schema.TABLES["kernels"], tables) is not None  # the fast path took them
    same = [t.assign(name=pd.Categorical.from_codes(np.zeros(len(t), np.int8), dtype=shared)) for t in tables[:10]]
    pd.testing.assert_frame_equal(schema.concat_tables("kernels", same), _reference_concat("kernels", same))
    mixed = [*tables[:3], tables[3].assign(name=tables[3]["name"].astype(object).astype("category"))]
    pd.testing.assert_frame_equal(schema.concat_tables("kernels", mixed), _reference_concat("kernels", mixed))


@pytest.mark.parametrize("was_on", [True, False])
def test_the_summary_of_many_processes_pauses_the_collector_and_restores_it(tmp_path, monkeypatch, was_on) -> None:
    """From PAUSE_COLLECTOR_PROCESSES processes on the analysis runs with the cyclic
    collector off; afterwards it is as it was (fewer processes: never touched)."""
    import gc

    from tui_prof.analysis import summary

    monkeypatch.setattr(summary, "PAUSE_COLLECTOR_PROCESSES", 20)
    seen: list[bool] = []
    real = summary.all_kernels
    monkeypatch.setattr(summary, "all_kernels", lambda runset: (seen.append(gc.isenabled()), real(runset))[1])
    many = load_path(str(_overlapping(tmp_path / "many", 24)), use_cache=False)
    few = load_path(str(_overlapping(tmp_path / "few", 5)), use_cache=False)
    (gc.enable if was_on else gc.disable)()
    try:
        build_summary(many)
        assert gc.isenabled() is was_on
        build_summary(few)
        assert gc.isenabled() is was_on
    finally:
        gc.enable()
    assert seen == [False, was_on]


def test_column_reads_without_the_private_pandas_accessor(monkeypatch) -> None:
    """Where pandas has no ``DataFrame._get_column_array``, the same reads and the same join
    come from the public path."""
    table = make_table("kernels", {"start": np.arange(3), "end": np.arange(3) + 2, "name": ["x", "y", "x"], "pid": [5, 5, 6]})
    other = make_table("kernels", {"start": [9], "end": [11], "name": ["z"], "pid": [7]})
    with_private = (column_array(table, "end").copy(), category_array(table, "name"), schema.concat_tables("kernels", [table, other]))
    monkeypatch.delattr(pd.DataFrame, "_get_column_array")
    assert not hasattr(table, "_get_column_array")
    assert (column_array(table, "end") == with_private[0]).all()
    got_names = category_array(table, "name")
    assert list(got_names.categories) == list(with_private[1].categories) and (got_names.codes == with_private[1].codes).all()
    pd.testing.assert_frame_equal(schema.concat_tables("kernels", [table, other]), with_private[2])


@pytest.mark.parametrize(
    ("pid", "tid"),
    [([], []), ([7], [3]), ([7, 7, 7], [3, 3, 3]), ([7, 7, 8], [3, 4, 3]), ([1, 2, 1, 2], [5, 5, 5, 5]), ([-1, -1], [2**31, 2**31])],
)
def test_thread_codes_equal_factorize(pid: list[int], tid: list[int]) -> None:
    """The one-thread shortcut gives factorize's codes (all 0); several threads take factorize."""
    p, t = np.array(pid, dtype=np.int64), np.array(tid, dtype=np.int64)
    got, want = depgraph._thread_codes(p, t), _factorized_codes(p, t)
    assert got.dtype == want.dtype == np.int64
    assert got.tolist() == want.tolist()
