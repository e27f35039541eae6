"""FLOPs and bytes of framework operators from their recorded input shapes (PyTorch
``record_shapes``: a ``cpu_op``'s ``Input Dims`` and ``Input type``), and the rates they
reach against the GPU's peak: an estimate where hardware counters are missing.

Per operator call (formulas and worked examples: docs/metrics.md, "FLOPs and bytes from
shapes"): GEMM (``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``linear``, ``matmul``) 2·M·N·K
(times the batch); attention (SDPA and its flash/efficient/cuDNN variants) 2·B·H·P·(E + Ev)
forward over the P (query, key) pairs the causal mask keeps (``is_causal`` from the call's
``Concrete Inputs``), 2.5× that backward; convolution forward (stride, padding, dilation,
groups from the Concrete Inputs) and backward (grad_output gives the output size)
2·N·C_out·(C_in/groups)·∏kernel·∏out; elementwise one FLOP per output element; reductions
one per input element; copies none. Bytes: every tensor input once plus the output once
(GEMM, attention, elementwise, convolution), the inputs once (reductions: the reduced dims
are not in the shapes), source + destination (copies). A call whose shapes are missing or
cut, whose operator has no formula, or whose convolution arguments were not recorded gets
no figure: never a guess.

Rates per operator use the GPU time of the kernels of the calls that have a figure only.
Peaks: :data:`PEAKS` (per product, per data type, sourced in docs/metrics.md) or, for
gfx950/gfx1151, rocprof-compute's per-CU-per-clock factors times the agent's CUs and clock.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.analysis.counters import hbm_peak_gbs
from tui_prof.model import Agent

# bytes per element of a PyTorch "Input type"
ELEMENT_BYTES = {
    "float": 4,
    "double": 8,
    "c10::Half": 2,
    "c10::BFloat16": 2,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
    "c10::Float8_e4m3fnuz": 1,
    "c10::Float8_e5m2fnuz": 1,
    "c10::Float8_e8m0fnu": 1,
    "long int": 8,
    "long": 8,
    "long long": 8,
    "long long int": 8,
    "int64_t": 8,
    "int": 4,
    "short int": 2,
    "short": 2,
    "signed char": 1,
    "unsigned char": 1,
    "unsigned short": 2,
    "unsigned short int": 2,
    "unsigned int": 4,
    "unsigned long": 8,
    "unsigned long int": 8,
    "unsigned long long": 8,
    "bool": 1,
    "c10::complex<c10::Half>": 4,
    "c10::complex<float>": 8,
    "c10::complex<double>": 16,
    "c10::qint8": 1,
    "c10::quint8": 1,
    "c10::qint32": 4,
    "c10::bits8": 1,
    "c10::bits16": 2,
}
"""Bytes per element of a tensor by its Kineto ``Input type``: the C++ name of the torch
dtype's element type as the compiler spells it (GCC ``long int``, Clang and older PyTorch
``long`` for torch.int64, ...). Packed sub-byte types (``c10::quint4x2``,
``c10::Float4_e2m1fn_x2``) are left out: an element is not a whole byte."""
DTYPE = {
    "float": "fp32",
    "double": "fp64",
    "c10::Half": "fp16",
    "c10::BFloat16": "bf16",
    "c10::Float8_e4m3fn": "fp8",
    "c10::Float8_e5m2": "fp8",
    "c10::Float8_e4m3fnuz": "fp8",
    "c10::Float8_e5m2fnuz": "fp8",
    "signed char": "int8",
    "unsigned char": "uint8",
    "short int": "int16",
    "short": "int16",
    "int": "int32",
    **dict.fromkeys(("long int", "long", "long long", "long long int", "int64_t"), "int64"),
    "bool": "bool",
}
"""The data type's name in PyTorch's words (``torch.int64`` -> int64; one name for every
spelling of one type); a type not listed keeps its spelling."""

GEMM = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::linear", "aten::matmul", "aten::_addmm_activation"}
SDPA_BHLE = re.compile(r"^aten::(scaled_dot_product_attention|_scaled_dot_product_(flash|efficient|cudnn)_attention|_cudnn_attention_forward)$")
SDPA_BLHE = re.compile(r"^aten::(_flash_attention_forward|_efficient_attention_forward)$")
SDPA_BACKWARD = re.compile(r"^aten::(_scaled_dot_product_(flash|efficient|cudnn)_attention_backward|_cudnn_attention_backward)$")
# index of is_causal in each attention op's arguments (its "Concrete Inputs"); the efficient
# forward has custom_mask_type instead (0: none, 1/2: causal from the top-left/bottom-right)
CAUSAL_AT = {
    "aten::scaled_dot_product_attention": 5,
    "aten::_scaled_dot_product_flash_attention": 4,
    "aten::_scaled_dot_product_efficient_attention": 6,
    "aten::_scaled_dot_product_cudnn_attention": 6,
    "aten::_cudnn_attention_forward": 10,
    "aten::_flash_attention_forward": 8,
    "aten::_efficient_attention_forward": 9,
    "aten::_scaled_dot_product_flash_attention_backward": 11,
    "aten::_scaled_dot_product_efficient_attention_backward": 11,
    "aten::_scaled_dot_product_cudnn_attention_backward": 14,
    "aten::_cudnn_attention_backward": 14,
}
# (stride, padding, dilation, groups, transposed or None) argument positions of forward convolutions
CONV_ARGS = {
    "aten::conv1d": (3, 4, 5, 6, None),
    "aten::conv2d": (3, 4, 5, 6, None),
    "aten::conv3d": (3, 4, 5, 6, None),
    "aten::convolution": (3, 4, 5, 8, 6),
    "aten::_convolution": (3, 4, 5, 8, 6),
    "aten::cudnn_convolution": (3, 2, 4, 5, None),
    "aten::miopen_convolution": (4, 3, 5, 6, None),
}
CONV_BACKWARD = re.compile(r"^aten::(convolution_backward|cudnn_convolution_backward|miopen_convolution_backward)$")
ELEMENTWISE = re.compile(
    r"^aten::(add|sub|rsub|mul|div|neg|pow|exp|log|log1p|sqrt|rsqrt|reciprocal|abs|sign|relu|gelu|silu|sigmoid|tanh|leaky_relu|elu"
    r"|threshold_backward|gelu_backward|silu_backward|sigmoid_backward|tanh_backward|where|clamp|clamp_min|clamp_max|masked_fill"
    r"|maximum|minimum|eq|ne|lt|le|gt|ge|erf|cos|sin|lerp|addcmul|addcdiv)_?$"
)
REDUCTION = re.compile(r"^aten::(sum|mean|prod|amax|amin|max|min|argmax|argmin|var|std|norm|linalg_vector_norm|logsumexp|any|all)$")
COPY = re.compile(r"^aten::(copy_|_to_copy|clone|contiguous|fill_|zero_)$")


def _numel(shape: list[int]) -> int:
    return math.prod(shape) if shape else 1


def _parse(text: str) -> list | None:
    """A recorded Input Dims / Input type (JSON text); None when absent or cut ("…")."""
    if not text or text.endswith("…"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, list) else None


def _tensors(dims: list, types: list) -> list[tuple[list[int], str]]:
    """(shape, type) of each tensor input: a non-empty list of ints with a known element type.
    A tensor of an unknown element type gives no tensors at all: the formulas read inputs by
    position, so leaving it out would cost the operator with the wrong shapes."""
    out = []
    for d, t in zip(dims, types, strict=False):
        if isinstance(d, list) and d and all(isinstance(x, int) and x >= 0 for x in d):
            if t not in ELEMENT_BYTES:
                return []
            out.append((d, t))
    return out


def _broadcast(shapes: list[list[int]]) -> list[int] | None:
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(1, rank + 1):
        sizes = {s[-i] for s in shapes if len(s) >= i} - {1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return out[::-1]


def _gemm(op: str, ts: list[tuple[list[int], str]]) -> tuple[int, int] | None:
    """(FLOPs, elements moved) of a GEMM call; None when the shapes do not fit its signature."""
    shapes = [s for s, _ in ts]
    if op in ("aten::addmm", "aten::_addmm_activation", "aten::baddbmm"):
        if len(shapes) < 3:
            return None
        bias, a, b = shapes[0], shapes[1], shapes[2]
        extra = _numel(bias)
    elif op == "aten::linear":
        if len(shapes) < 2 or len(shapes[1]) != 2:
            return None
        x, w = shapes[0], shapes[1]
        n, k = w
        if x[-1] != k:
            return None
        m = _numel(x[:-1])
        extra = _numel(shapes[2]) if len(shapes) > 2 else 0
        return 2 * m * n * k, m * k + n * k + extra + m * n
    else:
        if len(shapes) < 2:
            return None
        a, b = shapes[0], shapes[1]
        extra = 0
    if len(a) == 1:
        a = [1, a[0]]
    if len(b) == 1:
        b = [b[0], 1]
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        return None
    batch_shape = _broadcast([a[:-2] or [1], b[:-2] or [1]])
    if batch_shape is None:
        return None
    batch = _numel(batch_shape)
    m, k, n = a[-2], a[-1], b[-1]
    return 2 * batch * m * n * k, _numel(a) + _numel(b) + extra + batch * m * n


def _causal_pairs(lq: int, lk: int) -> int:
    """Unmasked (query, key) pairs under PyTorch's causal mask (top-left aligned: query i
    sees keys 0..i): sum over i < lq of min(i + 1, lk)."""
    full = min(lq, lk)
    return full * (full + 1) // 2 + max(lq - lk, 0) * lk


def _attention(op: str, ts: list[tuple[list[int], str]], causal: bool = False) -> tuple[int, int] | None:
    """(FLOPs, elements moved) of an attention call from q, k, v."""
    shapes = [s for s, _ in ts]
    if SDPA_BACKWARD.match(op):
        if len(shapes) < 4:
            return None
        q, k, v = shapes[1], shapes[2], shapes[3]  # (grad_out, q, k, v, out, ...)
        scale, layout = 2.5, "bhle"
    else:
        if len(shapes) < 3:
            return None
        q, k, v = shapes[0], shapes[1], shapes[2]
        scale, layout = 1.0, "blhe" if SDPA_BLHE.match(op) else "bhle"
    if not (len(q) == len(k) == len(v) == 4):
        return None
    if layout == "blhe":
        q, k, v = ([s[0], s[2], s[1], s[3]] for s in (q, k, v))
    b, h, lq, e = q
    lk, ev = k[2], v[3]
    pairs = _causal_pairs(lq, lk) if causal else lq * lk  # (query, key) pairs the kernel computes
    forward = 2 * b * h * pairs * e + 2 * b * h * pairs * ev
    out = b * h * lq * ev
    moved = _numel(q) + _numel(k) + _numel(v) + out
    if scale != 1.0:  # backward: reads q, k, v, out, grad_out; writes dq, dk, dv
        moved = 2 * (_numel(q) + _numel(k) + _numel(v)) + 2 * out
    return int(forward * scale), moved


def _conv_backward(ts: list[tuple[list[int], str]], output_mask: Any = None) -> tuple[int, int] | None:
    """convolution_backward(grad_output, input, weight, ..., output_mask): the forward's
    FLOPs once for each of grad input and grad weight the output mask asks for (both when
    not recorded); grad_output gives the output's spatial size."""
    shapes = [s for s, _ in ts]
    if len(shapes) < 3:
        return None
    go, x, w = shapes[0], shapes[1], shapes[2]
    if len(go) < 3 or len(go) != len(x) or len(w) != len(x):
        return None
    n, c_out, out_spatial = go[0], go[1], go[2:]
    c_in_per_group, kernel = w[1], w[2:]
    forward = 2 * n * c_out * c_in_per_group * _numel(kernel) * _numel(out_spatial)
    grads = (bool(output_mask[0]), bool(output_mask[1])) if isinstance(output_mask, list) and len(output_mask) >= 2 else (True, True)
    if not any(grads):
        return None
    # reads grad_output, input and weight; writes the grads asked for
    moved = _numel(go) + _numel(x) + _numel(w) + (_numel(x) if grads[0] else 0) + (_numel(w) if grads[1] else 0)
    return forward * sum(grads), moved


def _scalar(concrete: list | None, i: int | None) -> Any:
    """Argument ``i`` of a call's Concrete Inputs as a Python value ("[2, 2]" -> [2, 2],
    "True" -> True); None when not recorded."""
    if concrete is None or i is None or i >= len(concrete) or not isinstance(concrete[i], str) or not concrete[i]:
        return None
    text = concrete[i].strip()
    if text in ("True", "False"):
        return text == "True"
    try:
        return json.loads(text.replace("True", "true").replace("False", "false"))  # "[True, False]": Python's repr
    except ValueError:
        return text  # "same", "valid"


def _causal(op: str, concrete: list | None) -> bool | None:
    v = _scalar(concrete, CAUSAL_AT.get(op))
    if op == "aten::_efficient_attention_forward":
        return None if v is None else bool(v)
    return v if isinstance(v, bool) else None


def _per_dim(value: Any, n: int) -> list[int] | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return [value] * n
    if isinstance(value, list) and value and all(isinstance(x, int) for x in value):
        return value * n if len(value) == 1 else value if len(value) == n else None
    return None


def _conv_forward(op: str, ts: list[tuple[list[int], str]], concrete: list | None) -> tuple[int, int] | None:
    """A forward convolution: the output size from stride, padding and dilation (its
    Concrete Inputs); None without them or for a transposed convolution."""
    shapes = [s for s, _ in ts]
    if len(shapes) < 2 or len(shapes[0]) < 3 or len(shapes[1]) != len(shapes[0]):
        return None
    x, w = shapes[0], shapes[1]
    n_sp = len(x) - 2
    si, pi, di, gi, ti = CONV_ARGS[op]
    if ti is not None and _scalar(concrete, ti) is not False:
        return None  # transposed, or not recorded
    stride, dilation = _per_dim(_scalar(concrete, si), n_sp), _per_dim(_scalar(concrete, di), n_sp)
    padding_value = _scalar(concrete, pi)
    groups = _scalar(concrete, gi)
    if padding_value == "valid":
        padding_value = 0
    padding = _per_dim(padding_value, n_sp)
    if stride is None or dilation is None or padding is None or not isinstance(groups, int) or groups < 1:
        return None
    out_spatial = [(x[2 + i] + 2 * padding[i] - dilation[i] * (w[2 + i] - 1) - 1) // stride[i] + 1 for i in range(n_sp)]
    if any(o <= 0 for o in out_spatial):
        return None
    n, c_out, c_in_per_group, kernel = x[0], w[0], w[1], w[2:]
    flops = 2 * n * c_out * c_in_per_group * _numel(kernel) * _numel(out_spatial)
    bias = _numel(shapes[2]) if len(shapes) > 2 and len(shapes[2]) == 1 else 0
    return flops, _numel(x) + _numel(w) + bias + n * c_out * _numel(out_spatial)


def op_cost(op: str, dims_text: str, types_text: str, concrete_text: str = "") -> dict[str, Any] | None:
    """FLOPs, bytes, formula kind and data type of one operator call; None when no figure.
    ``concrete_text``: the call's Concrete Inputs (stride, padding, is_causal ...)."""
    dims, types = _parse(dims_text), _parse(types_text)
    concrete = _parse(concrete_text)
    note = ""
    if dims is None or types is None:
        return None
    ts = _tensors(dims, types)
    if not ts:
        return None
    size = ELEMENT_BYTES[ts[0][1]]
    dtype = DTYPE.get(ts[0][1], ts[0][1])
    if op in GEMM:
        found, kind = _gemm(op, ts), "GEMM"
    elif SDPA_BHLE.match(op) or SDPA_BLHE.match(op) or SDPA_BACKWARD.match(op):
        causal = _causal(op, concrete)
        found, kind = _attention(op, ts, bool(causal)), "attention"
        if causal is None and found is not None:
            note = "causal flag not recorded: counted without the mask"
    elif op in CONV_ARGS:
        found, kind = _conv_forward(op, ts, concrete), "convolution"
    elif CONV_BACKWARD.match(op):
        found, kind = _conv_backward(ts, _scalar(concrete, 10)), "convolution"
    elif ELEMENTWISE.match(op):
        out = _broadcast([s for s, _ in ts])
        if out is None:
            return None
        moved = sum(_numel(s) * ELEMENT_BYTES[t] for s, t in ts) + _numel(out) * size
        return {"flops": _numel(out), "bytes": moved, "kind": "elementwise", "dtype": dtype}
    elif REDUCTION.match(op):
        return {"flops": _numel(ts[0][0]), "bytes": _numel(ts[0][0]) * size, "kind": "reduction", "dtype": dtype}
    elif COPY.match(op):
        if op == "aten::copy_":  # (dst, src): reads src, writes dst
            moved = sum(_numel(s) * ELEMENT_BYTES[t] for s, t in ts[:2])
        elif op in ("aten::fill_", "aten::zero_"):  # writes only
            moved = _numel(ts[0][0]) * size
        else:  # clone, contiguous, _to_copy: reads and writes the tensor (output dtype as the input's)
            moved = 2 * _numel(ts[0][0]) * size
        return {"flops": 0, "bytes": moved, "kind": "copy", "dtype": dtype}
    else:
        return None
    if found is None:
        return None
    flops, elements = found
    cost: dict[str, Any] = {"flops": int(flops), "bytes": int(elements * size), "kind": kind, "dtype": dtype}
    if note:
        cost["note"] = note
    return cost


# Peak dense TFLOP/s per data type and peak memory bandwidth (GB/s) per product (the first
# pattern that matches the agent's product name wins); sources in docs/metrics.md.
PEAKS: tuple[tuple[str, dict[str, float], float, str], ...] = (
    (
        r"H200",
        {"fp8": 1978.9, "fp16": 989.4, "bf16": 989.4, "tf32": 494.7, "fp32": 67.0, "fp64": 34.0},
        4800.0,
        "NVIDIA H200 datasheet (SXM, dense)",
    ),
    (
        r"H100.*PCIe",
        {"fp8": 1513.0, "fp16": 756.5, "bf16": 756.5, "tf32": 378.0, "fp32": 51.0, "fp64": 26.0},
        2000.0,
        "NVIDIA H100 datasheet (PCIe, dense)",
    ),
    (
        r"H100",
        {"fp8": 1978.9, "fp16": 989.4, "bf16": 989.4, "tf32": 494.7, "fp32": 67.0, "fp64": 34.0},
        3350.0,
        "NVIDIA H100 datasheet (SXM5, dense)",
    ),
    (r"A100.*80GB.*PCIe", {"fp16": 312.0, "bf16": 312.0, "tf32": 156.0, "fp32": 19.5, "fp64": 9.7}, 1935.0, "NVIDIA A100 datasheet (80GB PCIe, dense)"),
    (r"A100.*80GB", {"fp16": 312.0, "bf16": 312.0, "tf32": 156.0, "fp32": 19.5, "fp64": 9.7}, 2039.0, "NVIDIA A100 datasheet (80GB SXM, dense)"),
    (r"A100", {"fp16": 312.0, "bf16": 312.0, "tf32": 156.0, "fp32": 19.5, "fp64": 9.7}, 1555.0, "NVIDIA A100 datasheet (40GB SXM, dense)"),
    (
        r"MI300X",
        {"fp8": 2614.9, "int8": 2614.9, "fp16": 1307.4, "bf16": 1307.4, "tf32": 653.7, "fp32": 163.4, "fp64": 163.4},
        5300.0,
        "ROCm docs conceptual/gpu-arch/mi300.md (MI300X, dense)",
    ),
)
# FLOPs per CU per clock (rocprof-compute's MFMA/VALU peak factors), for parts with no
# product row: TFLOP/s = max_sclk [MHz] x CUs x factor / 1e6
PER_CU_CLOCK: dict[str, dict[str, int]] = {
    "gfx942": {"fp8": 4096, "int8": 4096, "fp16": 2048, "bf16": 2048, "fp32": 256, "fp64": 256},
    "gfx950": {"fp8": 8192, "int8": 8192, "fp16": 4096, "bf16": 4096, "fp32": 256, "fp64": 128},
    "gfx1151": {"fp16": 256, "bf16": 256, "fp32": 128},
}


def memory_peak_gbs(agent: Agent | None) -> float | None:
    """The agent's memory peak as the counters' bandwidth metric takes it (rocprof-compute's
    $hbmBandwidth from sysinfo, else the arch table); None when unknown."""
    return hbm_peak_gbs(agent, agent.arch)[0] if agent is not None else None


def gpu_peak(agent: Agent | None, hbm_gbs: float | None = None) -> dict[str, Any] | None:
    """{tflops: {dtype: TFLOP/s}, gbs, source} of ``agent``; None when unknown."""
    if agent is None:
        return None
    for pattern, tflops, gbs, source in PEAKS:
        if re.search(pattern, agent.product or agent.name or ""):
            return {"tflops": dict(tflops), "gbs": gbs, "source": source}
    arch = (agent.arch or "").split(":")[0]
    factors = PER_CU_CLOCK.get(arch)
    if factors and agent.cu_count and agent.max_clock_mhz:
        tflops = {k: agent.max_clock_mhz * agent.cu_count * f / 1e6 for k, f in factors.items()}
        return {"tflops": tflops, "gbs": hbm_gbs, "source": f"max_sclk x CUs x FLOPs/CU/clock (rocprof-compute {arch} peaks)"}
    return None


def operator_costs(kernels: pd.DataFrame, links: pd.DataFrame, markers: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per launching operator: the summed ``flops`` and ``bytes`` of its calls that have a
    figure, how many calls (``calls``, ``costed_calls``), the GPU time of the costed calls'
    kernels (``costed_ns``), and the data type with the most FLOPs."""
    if not len(kernels) or "input_dims" not in markers.columns:
        return {}
    op_row = links["op_row"].to_numpy()
    linked = op_row >= 0
    if not linked.any():
        return {}
    dur = (kernels["end"].to_numpy() - kernels["start"].to_numpy())[linked]
    per_call = pd.DataFrame({"row": op_row[linked], "dur": dur}).groupby("row", sort=False)["dur"].sum()
    rows = per_call.index.to_numpy()
    # the calls grouped by (name, dims, types, concrete) codes: one formula per distinct call
    keys: dict[str, np.ndarray] = {}
    texts: dict[str, Any] = {}
    for column in ("name", "input_dims", "input_types", "input_concrete"):
        if column not in markers.columns:
            keys[column], texts[column] = np.zeros(len(rows), dtype=np.int64), [""]
            continue
        values = markers[column]
        if isinstance(values.dtype, pd.CategoricalDtype):
            keys[column], texts[column] = values.cat.codes.to_numpy()[rows].astype(np.int64), values.cat.categories
        else:
            keys[column], texts[column] = pd.factorize(values.to_numpy()[rows])
    frame = pd.DataFrame({**keys, "dur": per_call.to_numpy()})
    grouped = frame.groupby(list(keys), sort=False)["dur"].agg(["count", "sum"]).reset_index()
    out: dict[str, dict[str, Any]] = {}
    for n_code, d_code, t_code, c_code, calls, ns in grouped.itertuples(index=False):
        name, d, t, c = (str(texts[col][code]) if code >= 0 else "" for col, code in zip(keys, (n_code, d_code, t_code, c_code), strict=True))
        cost = op_cost(name, d, t, c)
        entry = out.setdefault(name, {"calls": 0, "costed_calls": 0, "flops": 0, "bytes": 0, "costed_ns": 0, "by_dtype": {}})
        entry["calls"] += int(calls)
        if cost is None:
            continue
        entry["costed_calls"] += int(calls)
        entry["flops"] += cost["flops"] * int(calls)
        entry["bytes"] += cost["bytes"] * int(calls)
        entry["costed_ns"] += int(ns)
        entry["kind"] = cost["kind"]
        if cost.get("note"):
            entry.setdefault("notes", set()).add(cost["note"])
        entry["by_dtype"][cost["dtype"]] = entry["by_dtype"].get(cost["dtype"], 0) + max(cost["flops"], 1) * int(calls)
    return {k: v for k, v in out.items() if v["costed_calls"]}


def merge_costs(parts: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The per-operator costs of several processes summed."""
    out: dict[str, dict[str, Any]] = {}
    for part in parts:
        for op, c in part.items():
            mine = out.setdefault(op, {"calls": 0, "costed_calls": 0, "flops": 0, "bytes": 0, "costed_ns": 0, "by_dtype": {}, "kind": c.get("kind")})
            for k in ("calls", "costed_calls", "flops", "bytes", "costed_ns"):
                mine[k] += c[k]
            for dt, f in c["by_dtype"].items():
                mine["by_dtype"][dt] = mine["by_dtype"].get(dt, 0) + f
            if c.get("notes"):
                mine.setdefault("notes", set()).update(c["notes"])
    return out


def rates(cost: dict[str, Any], peak: dict[str, Any] | None) -> dict[str, Any]:
    """The fields an operator row carries: flops, bytes (ints), the calls they cover, the
    achieved TFLOP/s and GB/s over those calls' kernel time, the share of the peak for the
    operator's data type, and a roofline point from the shapes (an estimate)."""
    dtype = max(cost["by_dtype"], key=lambda k: cost["by_dtype"][k]) if cost["by_dtype"] else ""
    ns = cost["costed_ns"]
    row: dict[str, Any] = {
        "flops": int(cost["flops"]),
        "bytes": int(cost["bytes"]),
        "flops_kind": cost.get("kind"),
        "flops_dtype": dtype,
        "costed_calls": int(cost["costed_calls"]),
        "calls": int(cost["calls"]),
        "costed_ns": int(ns),
        "flops_source": "estimate from recorded shapes (docs/metrics.md)",
    }
    if cost.get("notes"):
        row["flops_note"] = "; ".join(sorted(cost["notes"]))
    if ns <= 0:
        return row
    tflops = cost["flops"] / ns / 1e3  # FLOP/ns = GFLOP/s; /1e3 = TFLOP/s
    gbs = cost["bytes"] / ns
    row["achieved_tflops"] = tflops
    row["achieved_gbs"] = gbs
    if peak is None:
        return row
    p_flops = peak["tflops"].get(dtype)
    p_gbs = peak.get("gbs")
    row["peak_source"] = peak["source"]
    if p_flops:
        row["peak_tflops"] = p_flops
        row["pct_of_peak_flops"] = 100.0 * tflops / p_flops
    if p_gbs:
        row["peak_gbs"] = p_gbs
        row["pct_of_peak_bw"] = 100.0 * gbs / p_gbs
    if p_flops and p_gbs and cost["bytes"]:
        ai = cost["flops"] / cost["bytes"]
        ridge = p_flops * 1e3 / p_gbs  # FLOP/B where the roofs meet
        attainable = min(p_flops, ai * p_gbs / 1e3)
        row["roofline_estimate"] = {
            "ai": ai,
            "ridge": ridge,
            "bound": "memory" if ai < ridge else "compute",
            "attainable_tflops": attainable,
            "pct_of_attainable": 100.0 * tflops / attainable if attainable else None,
            "label": "estimate from recorded shapes, not measured",
        }
    return row
