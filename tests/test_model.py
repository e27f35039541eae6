import numpy as np
import pandas as pd
import pytest

from tui_prof.model import Agent, Run, make_table
from tui_prof.model.schema import TABLES, UNKNOWN, concat_tables


def test_make_table_fills_unknowns_and_casts_dtypes():
    table = make_table("kernels", {"start": [10, 20], "end": [15, 40], "name": ["a", "b"]})
    assert list(table.columns) == list(TABLES["kernels"].columns)
    assert table["start"].dtype == np.int64
    assert isinstance(table["name"].dtype, pd.CategoricalDtype)
    assert (table["agent"] == UNKNOWN).all()
    assert table["wg_x"].dtype == np.int16 and (table["wg_x"] == UNKNOWN).all()  # SMALL: int16 while the values fit


def test_make_table_rejects_unknown_columns():
    with pytest.raises(KeyError):
        make_table("kernels", {"strat": [1]})


def test_make_table_coerces_text_numbers_and_blanks():
    table = make_table("copies", {"bytes": ["1024", "", None], "start": [1, 2, 3], "end": [2, 3, 4]})
    assert table["bytes"].tolist() == [1024, UNKNOWN, UNKNOWN]


def test_concat_keeps_categories_and_values():
    a = make_table("kernels", {"start": [1], "end": [2], "name": ["x"]})
    b = make_table("kernels", {"start": [3], "end": [5], "name": ["y"]})
    both = concat_tables("kernels", [a, b])
    assert both["name"].tolist() == ["x", "y"]
    assert isinstance(both["name"].dtype, pd.CategoricalDtype)
    assert both["end"].tolist() == [2, 5]


def test_run_merge_and_finish_sort_by_time():
    first = Run(kernels=make_table("kernels", {"start": [30], "end": [40], "name": ["late"]}), agents=[Agent(id=1)])
    second = Run(kernels=make_table("kernels", {"start": [10], "end": [20], "name": ["early"]}), agents=[Agent(id=1), Agent(id=2)])
    first.merge(second)
    first.finish()
    assert first.kernels["name"].tolist() == ["early", "late"]
    assert [a.id for a in first.agents] == [1, 2]


def test_agent_arch_from_gfx_target_version():
    assert Agent(id=0, gfx_target_version=90402).arch == "gfx942"
    assert Agent(id=0, gfx_target_version=90010).arch == "gfx90a"
    assert Agent(id=0, name="gfx1100").arch == "gfx1100"
