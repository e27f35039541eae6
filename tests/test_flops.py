"""FLOPs and bytes from recorded shapes (issue 34), checked against an independent reading
of the real traces: each kernel's External id names its cpu_op; that op's ``Input Dims``
give 2·M·N·K (GEMM) or 4·B·H·Lq·Lk·E (attention), summed here over the ops that launched
kernels, and compared with ``summary --json``'s per-operator ``flops``. The formulas'
worked examples are those of docs/metrics.md."""

import gzip
import json
import math
from collections import defaultdict
from pathlib import Path

import pytest

from tui_prof import cli
from tui_prof.analysis.flops import PEAKS, PER_CU_CLOCK, gpu_peak, op_cost
from tui_prof.model import Agent

DATA = Path(__file__).parent / "data" / "kineto"
GPT2 = DATA / "h200" / "gpt2_shapes_modules.pt.trace.json.gz"
BERT_MI300 = DATA / "mi300__gaunernst_bert-small-uncased__1016001.json.gz"
BERT_H100 = DATA / "h100__gaunernst_bert-small-uncased__1016001.json.gz"
HTA_RANK0 = DATA / "trace_filter__sampled_rank-0.json.gz"
NO_SHAPES = DATA / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
RESNET = DATA / "mi300__resnet_act_checkpoint.json.gz"


def _summary(path: Path, capsys) -> dict:
    assert cli.main(["summary", str(path), "--json", "--top", "0", "--no-cache"]) == 0
    return {o["name"]: o for o in json.loads(capsys.readouterr().out)["hotspots_by_operator"]}


def _independent(path: Path, formula) -> dict[str, tuple[int, int]]:
    """op name -> (sum of formula(dims) over the cpu_ops that launched a kernel, kernels' ns)."""
    events = json.load(gzip.open(path))["traceEvents"]
    cpu_ops = [e for e in events if e.get("cat") == "cpu_op"]
    ops = {id(e): e for e in cpu_ops}
    order = {id(e): i for i, e in enumerate(cpu_ops)}
    by_ext = {e["args"]["External id"]: e for e in cpu_ops if "External id" in e.get("args", {})}
    launches = {e["args"]["correlation"]: e for e in events if e.get("cat") in ("cuda_runtime", "hip_runtime") and "correlation" in e.get("args", {})}
    launched: dict[int, float] = defaultdict(float)
    for e in events:
        if e.get("cat") != "kernel":
            continue
        op = by_ext.get(e.get("args", {}).get("External id"))
        call = launches.get(e.get("args", {}).get("correlation"))
        if call is not None and op is not None and not (op["tid"] == call["tid"] and op["ts"] <= call["ts"] <= op["ts"] + op["dur"]):
            op = None  # old Kineto wrote the correlation id as External id: an unrelated op
        if op is None:  # the innermost cpu_op on the launch call's thread that contains the call
            if call is None:
                continue
            around = [o for o in cpu_ops if o["tid"] == call["tid"] and o["ts"] <= call["ts"] and o["ts"] + o["dur"] >= call["ts"] + call["dur"]]
            if not around:
                continue
            op = max(around, key=lambda o: (o["ts"], -o["dur"], order[id(o)]))  # equal ranges: the later event is the child
        launched[id(op)] += e["dur"] * 1000
    out: dict[str, list] = defaultdict(lambda: [0, 0.0])
    for key, ns in launched.items():
        op = ops[key]
        args = op["args"]
        value = formula(op["name"], args.get("Input Dims"), args.get("Concrete Inputs")) if formula in CONCRETE else formula(op["name"], args.get("Input Dims"))
        if value is not None:
            out[op["name"]][0] += value
            out[op["name"]][1] += ns
    return {k: (v[0], v[1]) for k, v in out.items()}


def _gemm(name, dims):
    if not dims:
        return None
    if name == "aten::mm":
        (m, k), (_, n) = dims[0], dims[1]
        return 2 * m * n * k
    if name == "aten::addmm":
        (m, k), (_, n) = dims[1], dims[2]
        return 2 * m * n * k
    if name == "aten::bmm":
        (b, m, k), (_, _, n) = dims[0], dims[1]
        return 2 * b * m * n * k
    return None


def _pairs(lq, lk, causal):
    """(query, key) pairs: all, or under the causal mask query i sees keys 0..i (counted)."""
    return sum(min(i + 1, lk) for i in range(lq)) if causal else lq * lk


def _attention_forward(name, dims, concrete=None):
    if name == "aten::_cudnn_attention_forward":  # (B, H, L, E); is_causal is argument 10
        b, h, lq, e = dims[0]
        return 4 * b * h * _pairs(lq, dims[1][2], concrete[10] == "True") * e
    if name == "aten::_flash_attention_forward":  # (B, L, H, E); is_causal is argument 8
        b, lq, h, e = dims[0]
        return 4 * b * h * _pairs(lq, dims[1][1], concrete[8] == "True") * e
    return None


def _conv_forward(name, dims, concrete=None):
    """miopen_convolution(input, weight, bias, padding, stride, dilation, groups, ...)."""
    if name != "aten::miopen_convolution":
        return None
    (n, _c, *spatial), (c_out, c_in_g, *kernel) = dims[0], dims[1]
    padding, stride, dilation = (json.loads(concrete[i]) for i in (3, 4, 5))
    out = [(spatial[i] + 2 * padding[i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(len(spatial))]
    return 2 * n * c_out * c_in_g * math.prod(kernel) * math.prod(out)


def _conv_backward(name, dims, concrete=None):
    """convolution_backward(grad_output, input, weight, ..., output_mask at 10)."""
    if name != "aten::convolution_backward":
        return None
    (n, c_out, *out), (_c_out, c_in_g, *kernel) = dims[0], dims[2]
    mask = concrete[10].strip("[]").split(", ")
    return 2 * n * c_out * c_in_g * math.prod(kernel) * math.prod(out) * (mask[0] == "True") + 2 * n * c_out * c_in_g * math.prod(kernel) * math.prod(out) * (
        mask[1] == "True"
    )


CONCRETE = set()  # formulas that read the Concrete Inputs (filled below)


@pytest.mark.parametrize(
    ("path", "formula", "ops"),
    [
        (GPT2, _gemm, {"aten::mm", "aten::addmm"}),
        (GPT2, _attention_forward, {"aten::_cudnn_attention_forward"}),
        (BERT_MI300, _gemm, {"aten::addmm"}),
        (BERT_MI300, _attention_forward, {"aten::_flash_attention_forward"}),
        (BERT_H100, _gemm, {"aten::addmm"}),
        (HTA_RANK0, _gemm, {"aten::mm", "aten::bmm", "aten::addmm"}),
        (RESNET, _conv_forward, {"aten::miopen_convolution"}),
        (RESNET, _conv_backward, {"aten::convolution_backward"}),
    ],
    ids=["gpt2-gemm", "gpt2-attention", "mi300-bert-gemm", "mi300-bert-flash", "h100-bert-gemm", "hta-rank0-gemm", "resnet-conv", "resnet-conv-bwd"],
)
def test_flops_match_the_trace_s_input_dims(path, formula, ops, capsys):
    rows = _summary(path, capsys)
    expected = _independent(path, formula)
    checked = 0
    for op in ops:
        if op not in expected:
            continue
        flops, ns = expected[op]
        assert rows[op]["flops"] == flops, op
        assert isinstance(rows[op]["flops"], int) and isinstance(rows[op]["bytes"], int)
        assert rows[op]["costed_calls"] == rows[op]["calls"]
        assert abs(rows[op]["achieved_tflops"] - flops / ns / 1e3) <= 1e-6 * rows[op]["achieved_tflops"]
        checked += 1
    assert checked


CONCRETE.update({_attention_forward, _conv_forward, _conv_backward})


def test_no_percentage_over_100_and_parts_within_wholes(capsys):
    for path in (GPT2, BERT_MI300, BERT_H100, HTA_RANK0, RESNET):
        for row in _summary(path, capsys).values():
            if "flops" not in row:
                continue
            assert 0 <= row["costed_calls"] <= row["calls"] and row["costed_ns"] <= row["total_ns"]
            for key in ("pct_of_peak_flops", "pct_of_peak_bw"):
                assert row.get(key, 0) <= 100, (path.name, row["name"], key, row.get(key))


def test_ops_without_shapes_get_no_figure(capsys):
    rows = _summary(NO_SHAPES, capsys)
    assert rows and all("flops" not in r and "bytes" not in r for r in rows.values())


# ---------------------------------------------------------- worked examples (docs/metrics.md)
BF16 = '"c10::BFloat16"'


def test_worked_example_gemm():
    # aten::mm [2048, 768] x [768, 50257] in bf16: 2*2048*50257*768 FLOPs; bytes 2*(A + B + C)
    cost = op_cost("aten::mm", "[[2048, 768], [768, 50257]]", f"[{BF16}, {BF16}]")
    assert cost["flops"] == 158_094_852_096
    assert cost["bytes"] == 2 * (2048 * 768 + 768 * 50257 + 2048 * 50257) == 286_193_152
    linear = op_cost("aten::linear", "[[8, 256, 768], [2304, 768], [2304]]", '["float", "float", "float"]')
    assert linear["flops"] == 2 * (8 * 256) * 2304 * 768
    assert linear["bytes"] == 4 * (8 * 256 * 768 + 2304 * 768 + 2304 + 8 * 256 * 2304)
    bmm = op_cost("aten::baddbmm", "[[4, 8, 16], [4, 8, 32], [4, 32, 16], [], []]", '["float", "float", "float", "Scalar", "Scalar"]')
    assert bmm["flops"] == 2 * 4 * 8 * 16 * 32
    matmul = op_cost("aten::matmul", "[[2, 1, 8, 32], [3, 32, 16]]", '["float", "float"]')
    assert matmul["flops"] == 2 * 6 * 8 * 16 * 32  # batch broadcast [2, 1] x [3] -> 6


def test_worked_example_attention():
    q = "[8, 12, 256, 64]"
    fwd = op_cost("aten::scaled_dot_product_attention", f"[{q}, {q}, {q}, [], []]", f'[{BF16}, {BF16}, {BF16}, "", "Scalar"]')
    assert fwd["flops"] == 4 * 8 * 12 * 256 * 256 * 64 == 1_610_612_736
    assert fwd["bytes"] == 2 * 4 * 8 * 12 * 256 * 64
    bwd = op_cost(
        "aten::_scaled_dot_product_flash_attention_backward", f"[{q}, {q}, {q}, {q}, {q}, [8, 12, 256]]", f'[{BF16}, {BF16}, {BF16}, {BF16}, {BF16}, "float"]'
    )
    assert bwd["flops"] == int(2.5 * fwd["flops"])
    flash = op_cost("aten::_flash_attention_forward", "[[8, 256, 12, 64], [8, 256, 12, 64], [8, 256, 12, 64]]", f"[{BF16}, {BF16}, {BF16}]")
    assert flash["flops"] == fwd["flops"] and flash["note"]  # causal flag not recorded: the full count, said so
    causal = op_cost(
        "aten::scaled_dot_product_attention",
        f"[{q}, {q}, {q}, [], []]",
        f'[{BF16}, {BF16}, {BF16}, "", "Scalar"]',
        '["", "", "", "", "0.", "True", "", "False"]',
    )
    assert causal["flops"] == 4 * 8 * 12 * (256 * 257 // 2) * 64 and "note" not in causal


def test_worked_example_convolution_backward():
    # grad_output [32, 64, 56, 56], input [32, 64, 56, 56], weight [64, 64, 3, 3]
    cost = op_cost("aten::convolution_backward", "[[32, 64, 56, 56], [32, 64, 56, 56], [64, 64, 3, 3], []]", '["float", "float", "float", ""]')
    assert cost["flops"] == 2 * (2 * 32 * 64 * 64 * 9 * 56 * 56)
    types = '["float", "float", "", "ScalarList", "ScalarList", "ScalarList", "Scalar", "ScalarList", "Scalar"]'
    dims = "[[32, 64, 56, 56], [64, 64, 3, 3], [], [], [], [], [], [], []]"
    assert op_cost("aten::convolution", dims, types) is None  # stride/padding not recorded
    # stride 2, padding 1, dilation 1: out = (56 + 2 - 2 - 1) // 2 + 1 = 28
    fwd = op_cost("aten::convolution", dims, types, '["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]')
    assert fwd["flops"] == 2 * 32 * 64 * 64 * 9 * 28 * 28
    assert op_cost("aten::convolution", dims, types, '["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[0, 0]", "1"]') is None  # transposed
    only_weight = op_cost(
        "aten::convolution_backward",
        "[[32, 64, 56, 56], [32, 64, 56, 56], [64, 64, 3, 3], [], [], [], [], [], [], [], []]",
        '["float", "float", "float"]',
        '["", "", "", "[0]", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[False, True, False]"]',
    )
    assert only_weight["flops"] == cost["flops"] // 2


def test_worked_example_elementwise_reduction_copy():
    add = op_cost("aten::add", "[[8, 256, 3072], [3072], []]", '["float", "float", "Scalar"]')
    n = 8 * 256 * 3072
    assert add["flops"] == n and add["bytes"] == 4 * (n + 3072 + n)
    s = op_cost("aten::sum", "[[2048, 768], [], [], []]", f'[{BF16}, "ScalarList", "Scalar", ""]')
    assert s["flops"] == 2048 * 768 and s["bytes"] == 2 * 2048 * 768
    copy = op_cost("aten::copy_", "[[8, 256, 50257], [8, 256, 50257], []]", f'[{BF16}, "float", "Scalar"]')
    assert copy["flops"] == 0 and copy["bytes"] == 8 * 256 * 50257 * (2 + 4)


@pytest.mark.parametrize(
    ("dims", "types"),
    [("", ""), ("[[2048, 768], [768", '["float"'), ("[[2048, 768], [768, 50257]]…", '["float", "float"]'), ("[[], []]", '["TensorList", "Scalar"]')],
)
def test_missing_or_cut_shapes_give_nothing(dims, types):
    assert op_cost("aten::mm", dims, types) is None


def test_peak_table_agrees_with_the_per_cu_factors():
    # MI300X: 304 CUs at 2100 MHz x 2048 FLOPs/CU/clock (rocprof-compute) = ROCm's 1307.4 TFLOP/s
    table = next(t for p, t, _g, _s in PEAKS if p == "MI300X")
    assert math.isclose(304 * 2100 * PER_CU_CLOCK["gfx942"]["fp16"] / 1e6, table["fp16"], rel_tol=1e-3)
    assert math.isclose(304 * 2100 * PER_CU_CLOCK["gfx942"]["fp32"] / 1e6, table["fp32"], rel_tol=1e-3)
    strix = gpu_peak(Agent(id=1, type="GPU", name="gfx1151", product="AMD Radeon 8060S Graphics", cu_count=40, max_clock_mhz=2900), 256.0)
    assert strix is not None and math.isclose(strix["tflops"]["fp16"], 40 * 2900 * 256 / 1e6)
    assert gpu_peak(Agent(id=0, type="GPU", name="gfx1151", product="x"), None) is None  # no CUs or clock: unknown


def test_counters_pane_shows_the_shape_estimates_without_counters(capsys):
    from rich.console import Console

    from tui_prof.analysis.api import SummaryOptions, build_summary
    from tui_prof.loaders import load_path
    from tui_prof.tui.panes.counters import counters_renderable

    doc = build_summary(load_path(GPT2), SummaryOptions(logs=False))
    console = Console(width=200, color_system=None, record=True)
    console.print(counters_renderable(doc, None, False))
    text = console.export_text()
    assert "Estimates from recorded shapes (not measured" in text
    mm = next(o for o in doc["hotspots_by_operator"] if o["name"] == "aten::mm")
    line = next(line for line in text.splitlines() if line.startswith("aten::mm "))
    assert f"{mm['achieved_tflops']:.3g} ({mm['pct_of_peak_flops']:.3g}% bf16)" in line and "compute" in line
    copy = [c.strip() for c in next(line for line in text.splitlines() if line.startswith("aten::copy_ ")).split("│")]
    assert copy[2] == "-"  # no FLOPs: no FLOP rate (its GB/s stays)
    assert "Roofline estimate from shapes: aten::mm (bf16)" in text  # the top operator with FLOPs, on its roofline
    assert copy[3].startswith(f"{next(o for o in doc['hotspots_by_operator'] if o['name'] == 'aten::copy_')['achieved_gbs']:,.0f}")


NOT_TENSORS = {"", "Scalar", "ScalarList", "TensorList", "GenericList"}
"""Input type entries of arguments that are not one tensor (no element size)."""


def test_every_input_type_of_the_real_traces_has_an_element_size():
    """Every ``Input type`` string of the real Kineto traces in tests/data is a tensor element
    type tuiprof knows the size of, or an argument that is not a tensor."""
    from tui_prof.analysis.flops import ELEMENT_BYTES

    seen = set()
    for path in sorted(DATA.rglob("*.json.gz")):
        for e in json.load(gzip.open(path))["traceEvents"]:
            types = (e.get("args") or {}).get("Input type")
            if isinstance(types, list):
                seen |= {t for t in types if isinstance(t, str)}
    assert {"long", "long int", "int", "float", "c10::BFloat16"} <= seen  # the spellings seen in these traces
    assert sorted(seen - NOT_TENSORS - set(ELEMENT_BYTES)) == []


def test_int64_spelled_long_gets_its_bytes():
    """HTA's sampled traces spell torch.int64 ``long`` (GCC builds: ``long int``): a copy of
    an int32 tensor into an int64 one reads 4 and writes 8 bytes per element, whatever the
    spelling; both name the type int64."""
    events = json.load(gzip.open(HTA_RANK0))["traceEvents"]
    copy = next(e["args"] for e in events if e.get("name") == "aten::copy_" and (e.get("args") or {}).get("Input type", [None])[0] == "long")
    (rows, cols), src = copy["Input Dims"][0], copy["Input Dims"][1]
    assert copy["Input type"][:2] == ["long", "int"] and src == [rows, cols]
    for spelling in ("long", "long int"):
        cost = op_cost("aten::copy_", json.dumps(copy["Input Dims"]), json.dumps([spelling, "int", "Scalar"]))
        assert cost == {"flops": 0, "bytes": rows * cols * (8 + 4), "kind": "copy", "dtype": "int64"}
