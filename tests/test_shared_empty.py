"""A run's tables without rows are one shared empty table per schema (issue 30, point 15:
a run of one small file holds ten tables, most of them empty). Nothing may change the
shared tables: every command that reads runs with empty tables leaves them as built."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

from tui_prof import cli
from tui_prof.loaders import load_path
from tui_prof.model import Run
from tui_prof.model.schema import TABLES, concat_tables, make_table, shared_empty

DATA = Path(__file__).parent / "data"
SAMPLES = [
    DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7",
    DATA / "synth",
    DATA / "rocpd" / "28_results.db",
    DATA / "kineto" / "critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz",
]


def _schema(frame) -> list:
    return [(name, str(dtype), list(getattr(dtype, "categories", []))) for name, dtype in frame.dtypes.items()]


def _assert_pristine() -> None:
    for name in TABLES:
        shared, fresh = shared_empty(name), make_table(name, {})
        assert len(shared) == 0 and list(shared.columns) == list(fresh.columns), name
        assert _schema(shared) == _schema(fresh), name
        assert shared.index.equals(fresh.index), name


def test_runs_share_one_empty_table_per_schema() -> None:
    one, two = Run(), Run()
    for name in TABLES:
        assert one.table(name) is two.table(name) is shared_empty(name)
        assert _schema(one.table(name)) == _schema(make_table(name, {}))
    assert concat_tables("kernels", [one.kernels, two.kernels]) is shared_empty("kernels")
    one.merge(two)
    assert all(one.table(name) is shared_empty(name) for name in TABLES)


def test_frames_derived_from_a_shared_table_are_independent() -> None:
    run = Run()
    derived = run.kernels.assign(extra=np.zeros(0))
    view = run.kernels[["start", "end"]]
    view["end"] = view["end"] * 2
    copy = run.kernels.copy(deep=False)
    copy["other"] = np.zeros(0)
    assert "extra" in derived.columns and "other" in copy.columns
    _assert_pristine()


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.name)
def test_summary_leaves_the_shared_tables_as_built(sample: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    runset = load_path(str(sample), use_cache=False)
    assert runset.runs
    # the sample has empty tables, so the commands below read shared ones
    assert any(run.table(name) is shared_empty(name) for run in runset.runs for name in TABLES)
    for argv in (["summary", "--no-cache", str(sample)], ["summary", "--no-cache", "--json", str(sample)]):
        with redirect_stdout(io.StringIO()) as out, redirect_stderr(io.StringIO()):
            rc = cli.main(argv)
        assert rc == 0 and out.getvalue()
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        rc = cli.main(["export", "--no-cache", "--parquet", str(tmp_path / "pq"), "--perfetto", str(tmp_path / "t.json"), str(sample)])
    assert rc == 0 and (tmp_path / "t.json").stat().st_size
    _assert_pristine()
