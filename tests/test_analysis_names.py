"""Name normalisation, categories, user rule files, hotspot groupings."""

import json

import numpy as np
import pandas as pd
import pytest

from tui_prof.analysis.hotspots import hotspots, process_order
from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES, load_category_rules, normalize_name
from tui_prof.model import make_table


@pytest.mark.parametrize(
    "raw, expected",
    [
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >"
            "(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)",
            "at::native::vectorized_elementwise_kernel",
        ),
        ("my_kernel.kd", "my_kernel"),
        ("my_kernel(float*, int) [clone .kd]", "my_kernel"),
        ("void ck_tile::kentry<1, ck_tile::BatchedGemmKernel<int> >(ck_tile::BatchedGemmKernel<int>::Args)", "ck_tile::kentry"),
        ("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32", "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32"),
        ("triton_poi_fused_add_0", "triton_poi_fused_add_0"),
        ("float reduce_sum<256>(float const*)", "reduce_sum"),
        # a scope, not an argument list: no empty "::::" segment is left where it stood
        (
            "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*)",
            "at::native::(anonymous namespace)::vectorized_layer_norm_kernel",
        ),
        ("(anonymous namespace)::helper(int)", "(anonymous namespace)::helper"),
        ("void f<(anonymous namespace)::Op>((anonymous namespace)::Op const&)", "f"),
    ],
)
def test_normalize_name(raw, expected):
    assert normalize_name(raw) == expected


@pytest.mark.parametrize(
    "name, category",
    [
        ("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32", "GEMM"),
        ("void ck_tile::kentry<1, ck_tile::BatchedGemmKernel<int> >()", "GEMM"),
        ("__amd_rocclr_fillBufferAligned", "copy/fill"),
        ("__amd_rocclr_copyBuffer", "copy/fill"),
        ("ncclDevKernel_AllReduce_Sum_f16_RING_LL", "communication"),
        ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128> >()", "attention"),
        ("fmha_fwd_d128_bf16", "attention"),
        ("miopenSp3AsmConv_v21_1_3_gfx9_fp32", "convolution"),
        ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>()", "normalisation"),
        ("void at::native::reduce_kernel<512, 1>()", "reduction"),
        ("void at::native::vectorized_elementwise_kernel<4>()", "elementwise"),
        ("mystery", "other"),
    ],
)
def test_default_categories(name, category):
    assert DEFAULT_CATEGORY_RULES.classify(name) == category


def test_user_rules_toml_and_json(tmp_path):
    toml = tmp_path / "rules.toml"
    toml.write_text('[[rules]]\ncategory = "GEMM"\npattern = "mystery"\n')
    rules = load_category_rules(toml)
    assert rules.classify("mystery_kernel") == "GEMM"
    assert rules.classify("ncclKernel") == "communication"  # defaults kept
    js = tmp_path / "rules.json"
    js.write_text(json.dumps({"replace_defaults": True, "rules": [{"category": "mine", "pattern": "^k"}]}))
    rules = load_category_rules(js)
    assert rules.classify("kx") == "mine" and rules.classify("ncclKernel") == "other"
    bad = tmp_path / "bad.toml"
    bad.write_text("[[rules]]\ncategory = 1\n")
    with pytest.raises(ValueError, match="bad.toml"):
        load_category_rules(bad)
    regex = tmp_path / "regex.json"
    regex.write_text('{"rules": [{"category": "x", "pattern": "("}]}')
    with pytest.raises(ValueError, match="bad regular expression"):
        load_category_rules(regex)


def test_hotspots_by_normalized_category_agent_with_wall_share():
    names = ["void k<1>(int)", "void k<2>(int)", "Cijk_X", "void k<1>(int)"]
    kernels = make_table("kernels", {"start": [0, 10, 20, 40], "end": [4, 16, 30, 48], "name": names, "agent": [1, 1, 2, 2], "pid": 5})
    norm = hotspots(kernels, by="normalized", wall_ns=100, processes=process_order(kernels))
    assert norm[["name", "calls", "total_ns", "min_ns", "max_ns"]].values.tolist() == [["k", 3, 18, 4, 8], ["Cijk_X", 1, 10, 10, 10]]
    assert norm["median_ns"].tolist() == [6.0, 10.0]
    assert norm["pct_wall"].tolist() == [18.0, 10.0]
    assert norm["stddev_ns"].iloc[0] == pytest.approx(np.std([4, 6, 8], ddof=1))
    cat = hotspots(kernels, by="category")
    assert dict(zip(cat["name"], cat["total_ns"])) == {"other": 18, "GEMM": 10}
    agent = hotspots(kernels, by="agent")
    assert dict(zip(agent["name"], agent["total_ns"])) == {"1": 10, "2": 18}
    # same columns as before for the default call
    assert list(hotspots(kernels).columns) == ["name", "calls", "total_ns", "avg_ns", "median_ns", "min_ns", "max_ns", "stddev_ns", "percent"]


def test_hotspots_match_pandas_groupby_on_random_data():
    rng = np.random.default_rng(3)
    n = 5000
    start = rng.integers(0, 10**9, n)
    kernels = make_table("kernels", {"start": start, "end": start + rng.integers(1, 10**6, n), "name": rng.choice(["a", "b", "c", "d"], n)})
    ours = hotspots(kernels).set_index("name")
    ref = (
        pd.DataFrame({"k": kernels["name"].astype(str), "d": kernels["end"] - kernels["start"]})
        .groupby("k")["d"]
        .agg(["count", "sum", "median", "min", "max", "std"])
    )
    ref = ref.loc[ours.index]
    assert ours["calls"].tolist() == ref["count"].tolist() and ours["total_ns"].tolist() == ref["sum"].tolist()
    assert np.allclose(ours["median_ns"], ref["median"]) and np.allclose(ours["stddev_ns"], ref["std"])
    assert ours["min_ns"].tolist() == ref["min"].tolist() and ours["max_ns"].tolist() == ref["max"].tolist()


def _reference_normalize(name: str) -> str:
    """The earlier regex + per-character implementation of normalize_name (short names)."""
    import re

    def strip(text, open_ch, close_ch):
        out, depth = [], 0
        for ch in text:
            if ch == open_ch:
                depth += 1
            elif ch == close_ch and depth:
                depth -= 1
            elif depth == 0:
                out.append(ch)
        return "".join(out)

    text = re.sub(r"(\s*\[clone [^\]]*\])+$", "", str(name).strip()).replace("(anonymous namespace)", "\ue000")
    if text.endswith(".kd"):
        text = text[:-3]
    text = strip(strip(text.replace("operator()", "operator_call"), "(", ")"), "<", ">")
    text = " ".join(text.split())
    if text.startswith("void "):
        text = text[5:]
    if " " in text:
        head, _, rest = text.partition(" ")
        if rest and "::" not in head and head.isidentifier():
            text = rest
    return text.strip().replace("\ue000", "(anonymous namespace)") or str(name)


def test_normalize_name_equals_reference_on_random_names():
    """Random names built from the characters the steps care about (brackets, clone
    suffixes, spaces, "void ", ".kd", "operator()") normalise as the reference does."""
    rng = np.random.default_rng(7)
    pieces = ["(", ")", "<", ">", " ", "\t", "[clone .kd]", "[clone ", "]", "void ", ".kd", "operator()", "::", "ns", "k", "float", "_", "1"]
    pieces.append("(anonymous namespace)")
    for _ in range(20000):
        name = "".join(rng.choice(pieces, size=int(rng.integers(0, 14))).tolist())
        assert normalize_name(name) == _reference_normalize(name), repr(name)


def test_absurdly_long_names_are_bounded():
    """A 10 MB name (fuzz case): key = normalised first MAX_NAME_CHARS characters + marker
    with the count of characters cut off; classify looks at the same head; each well under 1 s."""
    import time

    from tui_prof.analysis.names import MAX_NAME_CHARS

    big = "void big_gemm_kernel<" + "K" * (10 * 1024 * 1024) + ">(int)"
    t0 = time.perf_counter()
    key = normalize_name(big)
    category = DEFAULT_CATEGORY_RULES.classify(big)
    assert time.perf_counter() - t0 < 1.0
    assert key == f"big_gemm_kernel…[+{len(big) - MAX_NAME_CHARS} chars]"
    assert category == "GEMM"
    tail_only = "K" * MAX_NAME_CHARS + "gemm"  # a match past the head is not seen (documented)
    assert DEFAULT_CATEGORY_RULES.classify(tail_only) == "other"
    exact = "x" * MAX_NAME_CHARS  # at the limit: unchanged, no marker
    assert normalize_name(exact) == exact
    # inputs that made the old suffix regex backtrack quadratically
    for name, want in (("a" + " " * 60000 + "b", "b"), ("[clone " * 9000 + "x", "[clone " * 9000 + "x"), (")" * 60000 + "(", ")" * 60000)):
        t0 = time.perf_counter()
        assert normalize_name(name) == want
        assert time.perf_counter() - t0 < 0.5
