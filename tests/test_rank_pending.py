"""The rank table holds no sentinel numbers: a figure not known yet (a rank still loading,
a wait that needs every rank) is a missing cell of a nullable column, shown "…" and sorted
after every value in both directions; real values sort and print as before."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tui_prof.loaders.detect import ScannedProcess
from tui_prof.render.fmt import fmt_value
from tui_prof.tui.panes.ranks import RANK_COLUMNS, pending_text, ranks_frame
from tui_prof.tui.view.rankrows import pending_row
from tui_prof.tui.widgets.table import TableModel, stable_order

NUMERIC = [c for c in RANK_COLUMNS if c.kind != "text"]


def _row(rank: int, label: str, base: int) -> dict:
    return {
        "rank": rank,
        "rank_source": "environment",
        "label": label,
        "host": "node",
        "gpus": "0",
        "span_ns": 10 * base,
        "compute_ns": 7 * base,
        "communication_ns": 2 * base,
        "copy_ns": base,
        "idle_pct": 100.0 / base,
        "sync_ns": 3 * base,
        "wait_ns": 5 * base,
        "wait_pct": 1.0,
        "top_kernel": f"k{rank}",
    }


@pytest.fixture
def doc() -> dict:
    loaded = [_row(3, "c", 7), _row(0, "a", 3), _row(1, "b", 5)]
    loaded[2]["wait_ns"] = loaded[2]["wait_pct"] = None  # its wait needs ranks still loading
    process = ScannedProcess(label="rank-2-host", files=("x.csv",), traced=True)
    return {"ranks": [*loaded, pending_row(process)]}


def test_pending_figures_are_missing_not_numbers(doc):
    frame = ranks_frame(doc, ["a", "b", "c"])
    for column in NUMERIC:
        assert str(frame[column.key].dtype) == ("Float64" if column.kind == "pct" else "Int64")
    assert frame["rank"].isna().tolist() == [False, False, False, True]
    assert frame["wait_ns"].isna().tolist() == [False, False, True, True]
    assert frame.loc[3, NUMERIC[1].key] is pd.NA
    assert frame["run"].tolist() == [2, 0, 1, -1]  # a pending row opens nothing


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("key", [c.key for c in NUMERIC])
def test_real_values_sort_as_before_and_pending_rows_last(doc, key, descending):
    frame = ranks_frame(doc, ["a", "b", "c"])
    order = TableModel(frame).sorted_rows(key, descending).tolist()
    values = [r[key] for r in doc["ranks"]]
    known = [i for i, v in enumerate(values) if v is not None]
    # an independent stable sort of the known values (Python's sorted), then the missing rows
    expected = sorted(known, key=lambda i: -values[i] if descending else values[i])
    assert order == expected + [i for i, v in enumerate(values) if v is None]


def test_a_column_without_missing_cells_sorts_as_a_plain_one():
    values = np.array([5, -1, 9, 5, 0], dtype=np.int64)
    nullable = pd.DataFrame({"x": pd.array(values, dtype="Int64")})
    for descending in (False, True):
        assert TableModel(nullable).sorted_rows("x", descending).tolist() == stable_order(values, descending).tolist()


def test_pending_cells_print_as_pending_and_values_as_before(doc):
    frame = ranks_frame(doc, ["a", "b", "c"])
    model = TableModel(frame)
    for column in NUMERIC:
        cells = [model.cells(i, [column.key])[column.key] for i in range(len(frame))]
        shown = [pending_text(column.kind)(v) for v in cells]
        for record, text in zip(doc["ranks"], shown):
            value = record[column.key]
            assert text == ("…" if value is None else fmt_value(value, column.kind))
