"""The kernel-name shortener (issue 20 item 9) on real names: ``void``, argument lists
and namespaces go first, then an ellipsis in the middle; distinct names stay distinct;
the hotspot table at 120 columns shows distinguishable rows."""

from __future__ import annotations

from pathlib import Path

from tui_harness import column, drive, hot, press

from tui_prof.loaders import load_path
from tui_prof.render.fmt import shorten_name, shorten_names
from tui_prof.tui.app import TuiProfApp

DATA = Path(__file__).parent / "data"
TRACES = [
    DATA / "kineto" / "h200" / "decode_eager.pt.trace.json.gz",
    DATA / "rocpd" / "28_results.db",
    DATA / "kineto" / "mi300__resnet_act_checkpoint.json.gz",
    DATA / "kineto" / "inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
    DATA / "kineto" / "h100__gaunernst_bert-small-uncased__1016001.json.gz",
]


def _real_names() -> list[str]:
    names: set[str] = set()
    for path in TRACES:
        for run in load_path(path, use_cache=False).runs:
            names |= set(run.kernels["name"].astype(str))
    return sorted(names)


def test_steps_on_real_names():
    eight = (
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>, "
        "std::array<char*, 1ul> >(int, at::native::FillFunctor<c10::Half>, std::array<char*, 1ul>)"
    )
    # void, the arguments, the namespaces: the template's distinguishing part remains
    short = shorten_name(eight, 70)
    assert len(short) <= 70 and not short.startswith("void") and "at::native::" not in short
    assert short == "vectorized_elementwise_kernel<4, F…lFunctor<Half>, array<char*, 1ul> >"
    assert shorten_name("nvjet_sm90_hsh_8x64_64x16_2x1_v_bz_bias_TNN", 60) == "nvjet_sm90_hsh_8x64_64x16_2x1_v_bz_bias_TNN"
    assert shorten_name("a" * 20 + "b" * 20, 11) == "aaaaa…bbbbb"


def test_distinct_real_names_stay_distinct():
    names = _real_names()
    assert len(names) == 105
    for width in (30, 40, 45, 60, 80):
        short = shorten_names(names, width)
        assert all(len(s) <= width for s in short)
        assert len(set(short)) == len(names), width


def test_hotspot_rows_distinguishable_at_120_columns():
    path = DATA / "kineto" / "h200" / "decode_eager.pt.trace.json.gz"

    async def flow(app, pilot):
        await press(app, pilot, "1")
        table = hot(app)
        names = [str(n) for n in column(table, "name")]
        rows = [table.render_line(1 + i).text for i in range(min(len(names), table.size.height - 1))]
        assert len(set(rows)) == len(rows)
        shown = [r.split("  ")[0].strip() for r in rows]
        assert len(set(shown)) == len(shown), shown
        assert not any(s.startswith("void ") for s in shown)

    drive(TuiProfApp(path, use_cache=False), flow, size=(120, 30))
