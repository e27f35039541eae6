"""SMALL columns (workgroup and grid sizes, LDS and scratch bytes, queue, stream and kernel
ids): int16 while every value fits, int32/int64 otherwise, never clipped, and arithmetic on
them is done in Python ints or int64 so a product of two int16 values cannot wrap."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from tui_prof.analysis.occupancy import kernel_occupancy
from tui_prof.loaders import load_path
from tui_prof.model.schema import COMPACT, SMALL, TABLES, concat_tables, dtype_matches, make_table, small_int

DATA = Path(__file__).parent / "data"
SAMPLE = DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7"

SMALL_KERNEL_COLUMNS = ("queue", "stream", "kernel_id", "grid_x", "grid_y", "grid_z", "wg_x", "wg_y", "wg_z", "lds_bytes", "scratch_bytes")


def test_the_kernel_columns_declared_small():
    assert {c for c, d in TABLES["kernels"].columns.items() if d == SMALL} == set(SMALL_KERNEL_COLUMNS)
    assert dtype_matches(SMALL, "int16") and dtype_matches(SMALL, "int32") and dtype_matches(SMALL, "int64")
    assert not dtype_matches(COMPACT, "int16")


@pytest.mark.parametrize(
    ("values", "dtype"),
    [
        ([], "int16"),
        ([-1, 0, 32767, -32768], "int16"),
        ([32768], "int32"),
        ([-32769], "int32"),
        ([2**31 - 1], "int32"),
        ([2**31], "int64"),
        ([2**40 + 7, 1], "int64"),
    ],
)
def test_small_int_takes_the_narrowest_exact_type(values, dtype):
    out = small_int(np.array(values, dtype=np.int64))
    assert str(out.dtype) == dtype
    assert out.tolist() == values  # exact: never clipped


def test_a_table_widens_a_column_only_where_a_value_needs_it():
    lds = 65536  # 64 KiB of LDS per workgroup: does not fit int16
    a = make_table("kernels", {"start": [1], "end": [2], "wg_x": [256], "lds_bytes": [512], "grid_x": [1024]})
    b = make_table("kernels", {"start": [3], "end": [4], "wg_x": [1024], "lds_bytes": [lds], "grid_x": [2**31 + 5]})
    assert str(a["wg_x"].dtype) == str(a["lds_bytes"].dtype) == str(a["grid_x"].dtype) == "int16"
    assert str(b["wg_x"].dtype) == "int16" and str(b["lds_bytes"].dtype) == "int32" and str(b["grid_x"].dtype) == "int64"
    both = concat_tables("kernels", [a, b])
    assert both["lds_bytes"].tolist() == [512, lds] and str(both["lds_bytes"].dtype) == "int32"
    assert both["grid_x"].tolist() == [1024, 2**31 + 5] and str(both["grid_x"].dtype) == "int64"
    assert both["wg_x"].tolist() == [256, 1024] and str(both["wg_x"].dtype) == "int16"


def test_occupancy_multiplies_int16_sizes_without_wrapping():
    """A 32 × 32 × 32-item workgroup as int16 columns: 32,768 items, one more than int16 holds;
    a 32 × 32 one: 1,024 items, the size the occupancy is computed for."""
    kernels = make_table(
        "kernels",
        {
            "start": [0, 10],
            "end": [5, 20],
            "agent": [0, 0],
            "name": ["big", "ok"],
            "wg_x": [32, 32],
            "wg_y": [32, 32],
            "wg_z": [32, 1],
            "arch_vgpr": [32, 32],
            "accum_vgpr": [0, 0],
            "sgpr": [16, 16],
            "lds_bytes": [0, 0],
        },
    )
    assert str(kernels["wg_z"].dtype) == "int16"
    by_name = {o["name"]: o for o in kernel_occupancy(kernels, {0: "gfx942"})}
    assert by_name["ok"]["workgroup_size"] == 1024
    if "big" in by_name:  # more items than a workgroup may hold: skipped or reported exactly
        assert by_name["big"]["workgroup_size"] == 32 * 32 * 32


def _exact_kernel_rows() -> list[dict[str, int]]:
    """The sample's kernel_trace.csv, parsed with the csv module."""
    names = {
        "Queue_Id": "queue",
        "Stream_Id": "stream",
        "Kernel_Id": "kernel_id",
        "Grid_Size_X": "grid_x",
        "Grid_Size_Y": "grid_y",
        "Grid_Size_Z": "grid_z",
        "Workgroup_Size_X": "wg_x",
        "Workgroup_Size_Y": "wg_y",
        "Workgroup_Size_Z": "wg_z",
        "LDS_Block_Size": "lds_bytes",
        "Scratch_Size": "scratch_bytes",
    }
    with open(SAMPLE / "kernel_trace.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    rows.sort(key=lambda r: (int(r["Start_Timestamp"]), int(r["Dispatch_Id"])))
    return [{ours: int(r[theirs]) for theirs, ours in names.items()} for r in rows]


@pytest.mark.parametrize("cached", [False, True])
def test_real_rocprofv3_sizes_load_exactly_as_int16(tmp_path, monkeypatch, cached):
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    if cached:
        load_path(SAMPLE / "kernel_trace.csv", use_cache=True)  # fills the cache; the next load reads it
    runs = load_path(SAMPLE / "kernel_trace.csv", use_cache=cached).runs
    kernels = concat_tables("kernels", [r.kernels for r in runs])
    order = np.lexsort((kernels["dispatch_id"].to_numpy(), kernels["start"].to_numpy()))
    expected = _exact_kernel_rows()
    assert len(expected) == len(kernels) > 0
    for column in SMALL_KERNEL_COLUMNS:
        values = kernels[column].to_numpy()[order]
        assert values.tolist() == [row[column] for row in expected], column
        assert str(kernels[column].dtype) == "int16", column  # every value of this sample fits
