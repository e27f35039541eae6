"""COMPACT id columns: int32 when every value fits, int64 (exact) otherwise."""

from __future__ import annotations

import numpy as np

from tui_prof.model.schema import COMPACT, TABLES, compact_int, concat_tables, dtype_matches, empty_table, make_table

BIG = 2**40 + 7  # a 64-bit queue handle or correlation id


def test_small_ids_are_int32_and_big_ones_stay_exact():
    small = make_table("kernels", {"start": [1, 2], "end": [3, 4], "pid": [4242, 4242], "correlation_id": [1, 2], "queue": [0, 1]})
    assert str(small["pid"].dtype) == str(small["correlation_id"].dtype) == "int32"
    assert str(small["queue"].dtype) == "int16"  # declared SMALL: see tests/test_narrow_ints.py
    assert str(small["start"].dtype) == "int64"  # times are never narrowed
    assert str(small["tid"].dtype) == "int32" and small["tid"].tolist() == [-1, -1]  # unknown fill
    big = make_table("kernels", {"start": [1, 2], "end": [3, 4], "queue": [BIG, 1], "correlation_id": [-(2**33), 5]})
    assert str(big["queue"].dtype) == str(big["correlation_id"].dtype) == "int64"
    assert big["queue"].tolist() == [BIG, 1] and big["correlation_id"].tolist() == [-(2**33), 5]
    both = concat_tables("kernels", [small, big])
    assert str(both["queue"].dtype) == "int64" and both["queue"].tolist() == [0, 1, BIG, 1]
    assert str(both["pid"].dtype) == "int32" and both["pid"].tolist() == [4242, 4242, -1, -1]


def test_compact_int_and_dtype_matches():
    assert compact_int(np.array([], dtype=np.int64)).dtype == np.int32
    assert compact_int(np.array([2**31 - 1, -(2**31)], dtype=np.int64)).dtype == np.int32
    assert compact_int(np.array([2**31], dtype=np.int64)).dtype == np.int64
    assert compact_int(np.array([5], dtype=np.uint8)).dtype == np.int32
    assert dtype_matches(COMPACT, "int32") and dtype_matches(COMPACT, "int64") and not dtype_matches(COMPACT, "int16")
    for name, spec in TABLES.items():
        table = empty_table(name)
        assert all(dtype_matches(dtype, table[col].dtype) for col, dtype in spec.columns.items()), name
    a = empty_table("api")
    a["pid"] = np.zeros(0, np.int64)  # a copy: the next empty table is untouched
    assert str(empty_table("api")["pid"].dtype) == "int32"


def test_optional_ids_take_one_byte_until_a_row_records_one():
    """Kineto's External id and the collective columns: int8 (-1) where no row records them,
    the declared rest (COMPACT, int16) exactly once one does, also after a concat."""
    none = make_table("kernels", {"start": [1, 2], "end": [3, 4]})
    assert {c: str(none[c].dtype) for c in ("external_id", "coll_bytes", "coll_ranks")} == {"external_id": "int8", "coll_bytes": "int8", "coll_ranks": "int8"}
    assert none["external_id"].tolist() == none["coll_bytes"].tolist() == none["coll_ranks"].tolist() == [-1, -1]
    some = make_table("kernels", {"start": [1, 2], "end": [3, 4], "external_id": [-1, 70_000], "coll_bytes": [BIG, -1], "coll_ranks": [-1, 128]})
    assert (str(some["external_id"].dtype), str(some["coll_bytes"].dtype), str(some["coll_ranks"].dtype)) == ("int32", "int64", "int16")
    both = concat_tables("kernels", [none, some])
    assert both["external_id"].tolist() == [-1, -1, -1, 70_000] and str(both["external_id"].dtype) == "int32"
    assert both["coll_bytes"].tolist() == [-1, -1, BIG, -1] and both["coll_ranks"].tolist() == [-1, -1, -1, 128]
    assert str(make_table("api", {"start": [1], "end": [2], "external_id": [-1]})["external_id"].dtype) == "int8"
    for name, spec in TABLES.items():  # every declaration still admits what the tables hold
        for table in (empty_table(name), make_table(name, {c: [-1] for c, d in spec.columns.items() if d.startswith("int")})):
            assert all(dtype_matches(dtype, table[col].dtype) for col, dtype in spec.columns.items()), name
