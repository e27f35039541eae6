"""PyTorch (Kineto) traces on NVIDIA and AMD: kernel categories on real names, GEMM and
convolution shares against the launching operators, graph-launch accounting, copies by
memory kind, and platform-aware wording. Every expected number is computed here from the
trace JSON itself (External id -> cpu_op, event durations), not from tuiprof."""

import gzip
import json
import re
from functools import cache
from pathlib import Path

import pytest

from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES, rule_text
from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.loaders import load_path

DATA = Path(__file__).parent / "data"
KINETO = DATA / "kineto"
H200 = KINETO / "h200"


@cache
def events(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as fh:
        return json.load(fh)["traceEvents"]


@cache
def summary(path: Path) -> dict:
    return build_summary(load_path(path), SummaryOptions(logs=False))


# --- kernel-name rules on names taken from the samples ---------------------------------------


@pytest.mark.parametrize(
    "name, category",
    [
        # cuBLAS / cuBLASLt (H200 decode, GPT-2, resnet)
        ("nvjet_sm90_hsh_8x64_64x16_2x1_v_bz_bias_TNN", "GEMM"),
        ("nvjet_sm90_hsh_64x8_64x16_4x1_v_bz_relubias_TNT", "GEMM"),  # "relu" in the epilogue: still GEMM
        ("nvjet_sm90_tst_64x64_64x13_1x2_h_bz_splitK_NTT", "GEMM"),
        (
            "void cublasLt::splitKreduce_kernel<32, 16, int, float, __half, float, __half, false, float, __half, __half, true>(cublasLt::cublasSplitKParams<float>, float const*)",
            "GEMM",
        ),
        ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas", "GEMM"),
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", "GEMM"),
        (
            "void cutlass::Kernel2<cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1>(cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_tn_align1::Params)",
            "GEMM",
        ),
        ("ampere_sgemm_128x128_tn", "GEMM"),
        # hipBLASLt / Tensile, CK
        ("Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1_AFC1", "GEMM"),
        ("void ck_tile::kentry<1, ck_tile::BatchedGemmKernel<int> >(ck_tile::BatchedGemmKernel<int>::Args)", "GEMM"),
        ("void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm>(ck::device_gemm_args)", "GEMM"),
        # convolutions: implicit GEMM, cutlass fprop, cuDNN, MIOpen, CK
        ("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1_execute_kernel__5x_cudnn", "convolution"),
        ("sm90_xmma_wgrad_indexed_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize64x64x64", "convolution"),
        ("sm90_xmma_dgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x64x32", "convolution"),
        (
            "void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8>(cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8::Params)",
            "convolution",
        ),
        ("_ZN17cutlass__5x_cudnn6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock22ImplicitGemmMultistage", "convolution"),
        ("igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2", "convolution"),
        ("void precomputed_convolve_sgemm<__nv_bfloat16, 128, 6, 7, 3, 3, 5, 1, false>(int, int, int, __nv_bfloat16 const*)", "convolution"),
        ("cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1", "convolution"),
        ("miopenSp3AsmConv_v21_1_3_gfx9_fp32", "convolution"),
        ("_ZN2ck16tensor_operation6device37kernel_batched_gemm_xdlops_bwd_weightINS_47GridwiseGemm_bk0mk1", "convolution"),
        ("void cudnn::cnn::kern_precompute_indices<false>(int*, int, int, int, int, int)", "convolution"),
        # no "conv" in "convert"
        ("void cudnn::fusion::convert_dq_to_16bits<__half>(float const*, __half*, int)", "elementwise"),
        # layout transforms
        (
            "void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, false, true, (cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, __nv_bfloat16 const*, __nv_bfloat16*)",
            "layout",
        ),
        (
            "void cudnn::engines_precompiled::nhwcToNchwKernel<__nv_bfloat16, __nv_bfloat16, float, true, false, (cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nhwc2nchw_params_t<float>, __nv_bfloat16 const*, __nv_bfloat16*)",
            "layout",
        ),
        (
            "void nhwcAddPaddingKernel<__nv_bfloat16, __nv_bfloat16, float, true, (cudnnKernelDataType_t)0>(int, int, __nv_bfloat16 const*, cudnn::reduced_divisor)",
            "layout",
        ),
        ("batched_transpose_32x32_half", "layout"),
        ("transpose_NCHW2CNHW_V2_2D_WG_off64", "layout"),
        # attention
        (
            "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::half_t> >(pytorch_flash::Flash_fwd_params)",
            "attention",
        ),
        ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0", "attention"),
        ("fmha_fwd_d128_bf16", "attention"),
        ("void ck_tile::kentry<1, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVS> >()", "attention"),
        # collectives
        ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "communication"),
        ("ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)", "communication"),
        # the parameter list does not decide: these argument types name other libraries
        ("void fft2d_r2c_32x32<float, false, 0u, false>(float2*, float const*, cudnn::reduced_divisor, bool)", "other"),
        ("void bounds_check_indices_kernel<long, false>(long*, fbgemm_gpu::FixedDivisor)", "other"),
        # normalisation, and "normal" (random) is not
        ("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate<float, float, 32u, 32u, 256u, false>(long, long)", "normalisation"),
        ("void at::native::batch_norm_backward_kernel<c10::BFloat16, float, float, int>(at::GenericPackedTensorAccessor)", "normalisation"),
    ],
)
def test_category_rules_on_real_names(name, category):
    assert DEFAULT_CATEGORY_RULES.classify(name) == category


def test_rule_text_drops_only_the_parameter_list():
    assert rule_text("void k<float, f(int)>(float*, g(int)) [clone .kd]") == "void k<float, f(int)>"
    assert rule_text("void at::native::f<void (*)(int)>::operator()(int)") == "void at::native::f<void (*)(int)>::operator()"
    assert rule_text("Cijk_Alik_Bljk") == "Cijk_Alik_Bljk"
    assert rule_text("unbalanced)") == "unbalanced)"


# --- GEMM and convolution shares against the launching operator ----------------------------

GEMM_OPS = {
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::matmul",
    "aten::linear",
    "aten::_addmm_activation",
    "aten::addmv",
    "aten::mv",
    "aten::_scaled_mm",
    "aten::addbmm",
    "aten::dot",
    "aten::vdot",
}
CONV_OPS = {
    "aten::cudnn_convolution",
    "aten::convolution_backward",
    "aten::_convolution",
    "aten::convolution",
    "aten::conv2d",
    "aten::cudnn_convolution_transpose",
    "aten::miopen_convolution",
}
# the test's own name rule for kernels no cpu_op links (graph replays, GPU-only traces):
# BLAS library names, not implicit-GEMM convolutions, not FBGEMM's embedding kernels
GEMM_NAME = re.compile(
    r"^(void )?(nvjet_|ampere_\w*gemm|sm\d+_xmma_gemm|cutlass::Kernel2<cutlass_\w*gemm|Cijk_|cublas)|splitKreduce|"
    r"(?<!fb)gemm(?!\w*(conv|implicit))",
    re.IGNORECASE,
)
NOT_GEMM_NAME = re.compile(r"implicit_gemm|igemm_|fprop|dgrad|wgrad|conv|bwd_weight|fbgemm|split_embedding", re.IGNORECASE)


def op_of_kernels(path: Path) -> list[tuple[str, float, str | None]]:
    """(kernel name, duration µs, launching cpu_op name or None) of every kernel: the
    cpu_op with the kernel's ``External id`` when it contains the kernel's launch call
    (old Kineto wrote the correlation id as the kernel's External id), else the innermost
    cpu_op containing the launch call (``correlation``) on its thread; graph replays None."""
    evs = events(path)
    ops = [e for e in evs if e.get("cat") == "cpu_op"]
    op_by_id = {}
    for e in ops:
        if "External id" in e.get("args", {}):
            op_by_id.setdefault(e["args"]["External id"], e)
    calls = {}
    for e in evs:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
            calls.setdefault(e["args"]["correlation"], e)

    def contains(op, call):
        return (op["pid"], op["tid"]) == (call["pid"], call["tid"]) and op["ts"] <= call["ts"] and call["ts"] + call["dur"] <= op["ts"] + op["dur"]

    out = []
    for e in evs:
        if e.get("cat") != "kernel":
            continue
        args = e.get("args", {})
        call = calls.get(args.get("correlation"))
        op = op_by_id.get(args.get("External id"))
        if op is not None and call is not None and not contains(op, call):
            op = None
        if op is None and call is not None and "GraphLaunch" not in call["name"]:
            around = [o for o in ops if contains(o, call)]
            op = min(around, key=lambda o: o["dur"]) if around else None
        out.append((e["name"], e["dur"], op["name"] if op is not None else None))
    return out


def gemm_share_by_operator(path: Path) -> float:
    rows = op_of_kernels(path)
    total = sum(d for _, d, _ in rows)
    gemm = sum(d for n, d, op in rows if (op in GEMM_OPS if op is not None else bool(GEMM_NAME.search(n)) and not NOT_GEMM_NAME.search(n)))
    return 100 * gemm / total


KINETO_SAMPLES = sorted(H200.glob("*.json.gz")) + sorted(p for p in KINETO.glob("*.json.gz"))


@pytest.mark.parametrize("path", KINETO_SAMPLES, ids=lambda p: p.name[:40])
def test_gemm_share_equals_the_launching_operators(path):
    expected = gemm_share_by_operator(path)
    got = summary(path)["measurement"]["gemm_pct_of_kernel_time"]
    assert got == pytest.approx(expected, abs=0.5)


def test_decode_eager_gemm_share_is_addmm():
    path = H200 / "decode_eager.pt.trace.json.gz"
    rows = op_of_kernels(path)
    assert all(op is not None for _, _, op in rows)  # every eager kernel links to its cpu_op
    total = sum(d for _, d, _ in rows)
    by_op = {op: 100 * sum(d for _, d, o in rows if o == op) / total for op in ("aten::addmm", "aten::_addmm_activation")}
    assert by_op["aten::addmm"] == pytest.approx(50.1, abs=0.05)
    assert by_op["aten::_addmm_activation"] == pytest.approx(12.7, abs=0.05)
    assert summary(path)["measurement"]["gemm_pct_of_kernel_time"] == pytest.approx(62.8, abs=0.05)


def test_train_sync_convolution_share_by_operator():
    """Every kernel a convolution op launches is a convolution, a layout transform or a
    split-K reduction by name; categories come from the operator first, so the
    convolution category is the convolution ops' share of kernel time (the layout
    transforms cuDNN runs for them included)."""
    path = H200 / "train_sync.pt.trace.json.gz"
    rows = op_of_kernels(path)
    assert all(op is not None for _, _, op in rows)
    total = sum(d for _, d, _ in rows)
    conv_rows = [(n, d) for n, d, op in rows if op in CONV_OPS]
    assert {DEFAULT_CATEGORY_RULES.classify(n) for n, _ in conv_rows} == {"convolution", "layout", "reduction"}
    conv_op_share = 100 * sum(d for _, d in conv_rows) / total
    layout_share = 100 * sum(d for n, d, _ in rows if DEFAULT_CATEGORY_RULES.classify(n) == "layout") / total
    doc = summary(path)
    ktime = doc["kernels"]["total_ns"]
    cats = {k: 100 * v / ktime for k, v in doc["categories"].items()}
    assert layout_share == pytest.approx(17.5, abs=0.05)  # the number: nchwToNhwc + nhwcToNchw
    assert "layout" not in cats  # every layout transform here is launched by aten::cudnn_convolution
    assert cats["convolution"] == pytest.approx(conv_op_share, abs=0.5)
    assert conv_op_share == pytest.approx(37.28, abs=0.01)


# --- launch accounting --------------------------------------------------------------------


def launch_api_us(path: Path) -> tuple[float, float]:
    """(all launch calls, graph launches) in µs, summed from the runtime events."""
    evs = [e for e in events(path) if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    launch = sum(e["dur"] for e in evs if re.match(r"^(cuda|cu|hip)\w*Launch\w*$", e["name"]))
    graph = sum(e["dur"] for e in evs if re.match(r"^(cuda|cu|hip)GraphLaunch\w*$", e["name"]))
    return launch, graph


def test_decode_graph_launch_time_includes_graph_launches():
    path = H200 / "decode_graph.pt.trace.json.gz"
    launch_us, graph_us = launch_api_us(path)
    lc = summary(path)["launch"]
    assert lc["api_total_ns"] == pytest.approx(4.04e6, rel=0.01)
    assert lc["api_total_ns"] == pytest.approx(launch_us * 1e3, abs=lc["launch_calls"] + lc["graph_launch_calls"])
    assert lc["graph_launch_api_ns"] == pytest.approx(3.83e6, rel=0.01)
    assert lc["graph_launch_api_ns"] == pytest.approx(graph_us * 1e3, abs=lc["graph_launch_calls"])
    assert (lc["graph_launch_calls"], lc["graph_dispatches"], lc["direct_kernels"]) == (20, 2420, 20)
    assert lc["launches_per_graph"] == 121.0
    assert lc["many_tiny_kernels"] is False
    assert "many-tiny-kernels" not in {f["code"] for f in summary(path)["findings"]}


def test_decode_eager_many_tiny_kernels_fires():
    doc = summary(H200 / "decode_eager.pt.trace.json.gz")
    lc = doc["launch"]
    assert (lc["graph_launch_calls"], lc["graph_launch_api_ns"], lc["direct_kernels"]) == (0, 0, 2440)
    assert lc["many_tiny_kernels"] is True
    assert "many-tiny-kernels" in {f["code"] for f in doc["findings"]}


# --- copies by memory kind ----------------------------------------------------------------


def copy_bandwidths(path: Path, label: str) -> list[float]:
    """GB/s (bytes per ns) of each copy whose name contains ``label``, in start order."""
    evs = sorted((e for e in events(path) if e.get("cat") == "gpu_memcpy" and label in e["name"]), key=lambda e: e["ts"])
    return [e["args"]["bytes"] / (e["dur"] * 1e3) for e in evs]


def test_copies_by_kind_on_h200():
    path = H200 / "copies.pt.trace.json.gz"
    evs = [e for e in events(path) if e.get("cat") == "gpu_memcpy"]
    kinds = summary(path)["copies"]["by_kind"]
    assert set(kinds) == {"pinned", "pageable"}
    for kind, label in (("pinned", "Pinned"), ("pageable", "Pageable")):
        mine = [e for e in evs if label in e["name"]]
        k = kinds[kind]
        assert k["count"] == len(mine)
        assert k["bytes"] == sum(e["args"]["bytes"] for e in mine)
        assert k["time_ns"] == pytest.approx(sum(e["dur"] for e in mine) * 1e3, abs=len(mine))
        assert k["bandwidth_gbs"] == pytest.approx(k["bytes"] / k["time_ns"], abs=1e-4)
    assert kinds["pinned"]["bandwidth_gbs"] == pytest.approx(54.8, abs=0.05)
    assert kinds["pageable"]["bandwidth_gbs"] == pytest.approx(10.4, abs=0.05)
    pageable = kinds["pageable"]["by_direction"]["HtoD"]
    first = copy_bandwidths(path, "Pageable")[0]
    assert pageable["first_bandwidth_gbs"] == pytest.approx(first, rel=1e-3)
    assert first == pytest.approx(3.2, abs=0.05)
    assert set(kinds["pinned"]["by_direction"]) == {"HtoD", "DtoH"}
    slow = [f for f in summary(path)["findings"] if f["code"] == "slow-copy"]
    assert len(slow) == 1 and "pageable" in slow[0]["message"] and "pin_memory()" in slow[0]["fix"]


def test_copy_kinds_of_other_formats():
    doc = summary(KINETO / "trace_filter__sampled_rank-0.json.gz")
    assert set(doc["copies"]["by_kind"]) == {"pageable", "pinned", "device", "memset"}
    rocprof = summary(DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7")
    assert set(rocprof["copies"]["by_kind"]) == {"host"}  # rocprofv3 does not record the host memory kind


# --- platform and wording -----------------------------------------------------------------

NOT_ON_NVIDIA = re.compile(r"rocprof|omniperf|\bhip[A-Z]\w*|HIP graph", re.IGNORECASE)
NOT_ON_AMD = re.compile(r"\bncu\b|\bnsys\b|Nsight|\bcuda[A-Z]\w*|CUDA graph|cudaHost")


def every_sample() -> list[Path]:
    out = []
    for fmt in sorted(p for p in DATA.iterdir() if p.is_dir()):
        out.extend(sorted(p for p in fmt.iterdir() if p.name != "PROVENANCE.md" and not p.name.startswith(".")))
    return out


def advice(doc: dict) -> list[str]:
    """Every finding message and fix, and every GPU agent's capability text."""
    out = [f["message"] for f in doc["findings"] if f["code"] not in ("dominant-kernel", "low-occupancy")] + [f["fix"] for f in doc["findings"]]
    for agent in doc["agents"]:
        caps = agent.get("capabilities") or {}
        out.extend(str(caps.get(k, "")) for k in ("counters", "pc_sampling", "thread_trace", "rocprof_compute", "roofline"))
        out.extend(caps.get("notes", []))
    return out


@pytest.mark.parametrize("path", every_sample(), ids=lambda p: f"{p.parent.name}/{p.name[:40]}")
def test_wording_matches_the_platform(path):
    try:
        runset = load_path(path)
    except Exception:
        pytest.skip("not loadable on its own")
    if not runset.runs:
        pytest.skip("no runs")
    doc = build_summary(runset, SummaryOptions(logs=False))
    vendor = doc["platform"]["vendor"]
    text = "\n".join(advice(doc))
    if vendor == "nvidia":
        assert not NOT_ON_NVIDIA.search(text), NOT_ON_NVIDIA.search(text)
    elif vendor == "amd":
        assert not NOT_ON_AMD.search(text), NOT_ON_AMD.search(text)
    else:
        assert not NOT_ON_NVIDIA.search(text) and not NOT_ON_AMD.search(text)


def test_wording_covers_both_vendors():
    vendors = {}
    for path in (H200, KINETO / "mi300__resnet_act_checkpoint.json.gz", DATA / "rocprofv3_json" / "908_results.json.gz"):
        doc = summary(path)
        vendors[path.name] = doc["platform"]["vendor"]
        text = "\n".join(advice(doc))
        if doc["platform"]["vendor"] == "nvidia":
            assert "CUDA graph" in text or "torch.cuda.graph" in text
            assert "ncu --metrics" in text
        else:
            assert "rocprofv3 --kernel-trace --pmc" in text
    assert vendors == {"h200": "nvidia", "mi300__resnet_act_checkpoint.json.gz": "amd", "908_results.json.gz": "amd"}


def test_unknown_and_mixed_platforms_get_neutral_words():
    from tui_prof.analysis.platform import detect_platform, phrases
    from tui_prof.model import Run, RunSet
    from tui_prof.model.schema import make_table

    bare = Run()
    bare.kernels = make_table("kernels", {"start": [0], "end": [10], "name": ["k"]})
    assert detect_platform(RunSet("x", [bare]))["vendor"] == "unknown"
    cuda, rocm = Run(), Run()
    cuda.meta.extra["platform"], rocm.meta.extra["platform"] = "cuda", "rocm"
    assert detect_platform(RunSet("x", [cuda, rocm]))["vendor"] == "mixed"
    for key, words in phrases("mixed").items():
        assert not NOT_ON_NVIDIA.search(words) and not NOT_ON_AMD.search(words), key


def test_platform_detection_on_known_samples():
    assert summary(H200 / "decode_eager.pt.trace.json.gz")["platform"] == {"vendor": "nvidia", "pytorch": True, "evidence": "pytorch-profiler platform cuda"}
    assert summary(KINETO / "mi300__resnet_act_checkpoint.json.gz")["platform"]["vendor"] == "amd"
    assert summary(DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7")["platform"]["vendor"] == "amd"


def test_nvidia_hardware_text_says_what_the_trace_knows():
    caps = summary(H200 / "copies.pt.trace.json.gz")["agents"][0]["capabilities"]
    props = next(p for p in json.load(gzip.open(H200 / "copies.pt.trace.json.gz", "rt"))["deviceProperties"] if p["id"] == 0)
    assert caps["device"]["sm_count"] == props["numSms"] == 132
    assert caps["device"]["memory_bytes"] == props["totalGlobalMem"]
    assert caps["device"]["compute_capability"] == f"{props['computeMajor']}.{props['computeMinor']}" == "9.0"
    assert caps["arch"] == "sm_90" and caps["limits"] is None
    assert any("132 SMs" in n and "compute capability 9.0" in n for n in caps["notes"])
    assert any("AMD" in n and "do not apply" in n for n in caps["notes"])


# --- operator attribution from the model's tables -----------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "h200/decode_eager.pt.trace.json.gz",
        "h200/train_sync.pt.trace.json.gz",
        "h200/copies.pt.trace.json.gz",
        "h200/decode_graph.pt.trace.json.gz",
        "h100__gaunernst_bert-small-uncased__1016001.json.gz",
        "mi300__resnet_act_checkpoint.json.gz",
    ],
)
def test_launching_operator_equals_the_external_id_link(name):
    """The operator found by time containment (correlation -> launch call -> innermost
    cpu_op on its thread) is the cpu_op the kernel's External id names, for every kernel
    the trace links; graph replays are "graph"."""
    from tui_prof.analysis.operators import GRAPH, link_operators

    path = KINETO / name
    run = load_path(path).runs[0]
    links = link_operators(run.kernels, run.api, run.markers)
    evs = events(path)
    op_by_id = {}
    for e in evs:
        if e.get("cat") == "cpu_op" and "External id" in e.get("args", {}):
            op_by_id.setdefault(e["args"]["External id"], e["name"])
    graph_corr = {e["args"]["correlation"] for e in evs if e.get("cat") in ("cuda_runtime", "cuda_driver") and "GraphLaunch" in e["name"]}
    expected = {}
    for e in evs:
        if e.get("cat") == "kernel":
            corr = e["args"]["correlation"]
            expected[corr] = GRAPH if corr in graph_corr else op_by_id.get(e["args"].get("External id"), "")
    got = dict(zip(run.kernels["correlation_id"].tolist(), links["op"].tolist(), strict=True))
    assert got == expected
    assert sum(1 for v in expected.values() if v) > 0


def test_hotspots_by_operator():
    doc = summary(H200 / "decode_eager.pt.trace.json.gz")
    ops = {o["name"]: o for o in doc["hotspots_by_operator"]}
    rows = op_of_kernels(H200 / "decode_eager.pt.trace.json.gz")
    total = sum(d for _, d, _ in rows)
    for op in ("aten::addmm", "aten::_addmm_activation"):
        assert ops[op]["kernels"] == sum(1 for _, _, o in rows if o == op)
        assert ops[op]["percent"] == pytest.approx(100 * sum(d for _, d, o in rows if o == op) / total, abs=0.01)
    graph = {o["name"]: o for o in summary(H200 / "decode_graph.pt.trace.json.gz")["hotspots_by_operator"]}
    assert graph["graph"]["kernels"] == 2420 and graph["aten::argmax"]["kernels"] == 20
    assert summary(DATA / "rocpd" / "28_results.db")["hotspots_by_operator"] == []
