"""Operator attribution in the run model and analysis.operators: External id on every
table, the cpu_op's recorded input shapes, module paths, op-first categories and graph
replays attributed to their capture. Expected values are read from the trace JSON here."""

import gzip
import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from tui_prof.analysis.operators import GRAPH, NO_MODULE, kernel_categories_by_op, link_operators, module_key, op_category, operator_shapes
from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.loaders import load_path
from tui_prof.model.schema import UNKNOWN

KINETO = Path(__file__).parent / "data" / "kineto"
GPT2 = KINETO / "h200" / "gpt2_shapes_modules.pt.trace.json.gz"
BERT = KINETO / "h100__gaunernst_bert-small-uncased__1016001.json.gz"


@cache
def events(path: Path) -> list[dict]:
    with gzip.open(path, "rt") as fh:
        return json.load(fh)["traceEvents"]


@cache
def run_of(path: Path):
    return load_path(path, use_cache=False).runs[0]


def us_ns(e: dict) -> int:
    return round(e["ts"] * 1000)


def test_external_id_on_every_table():
    """kernels, copies (memsets), launch calls and cpu_ops keep Kineto's External id, each
    row equal to its event's (matched by start time and name)."""
    run = run_of(GPT2)
    evs = events(GPT2)
    for table, cats in ((run.kernels, ("kernel",)), (run.copies, ("gpu_memset",)), (run.api, ("cuda_runtime", "cuda_driver"))):
        want = sorted((us_ns(e), e["name"], e["args"].get("External id", UNKNOWN)) for e in evs if e.get("cat") in cats)
        got = sorted(zip(table["start"].tolist(), table["name"].astype(str).tolist(), table["external_id"].tolist()))
        assert got == want, cats
    ops = run.markers[run.markers["source"].astype(str) == "cpu_op"]
    want = sorted((us_ns(e), e["name"], e["args"]["External id"]) for e in evs if e.get("cat") == "cpu_op")
    assert sorted(zip(ops["start"].tolist(), ops["name"].astype(str).tolist(), ops["external_id"].tolist())) == want
    assert run.kernels["external_id"].dtype.kind == "i" and (run.kernels["external_id"] >= 0).all()


def test_operator_inputs_as_recorded():
    """record_shapes: Input Dims and Input type of each cpu_op as JSON text (categorical)."""
    run = run_of(GPT2)
    ops = run.markers[run.markers["source"].astype(str) == "cpu_op"]
    by_id = {e["args"]["External id"]: e["args"] for e in events(GPT2) if e.get("cat") == "cpu_op"}
    for ext, dims, types in zip(ops["external_id"], ops["input_dims"].astype(str), ops["input_types"].astype(str)):
        args = by_id[ext]
        assert dims == (json.dumps(args["Input Dims"]) if "Input Dims" in args else "")
        assert types == (json.dumps(args["Input type"]) if "Input type" in args else "")
    assert str(ops["input_dims"].dtype) == "category"
    addmm = ops[ops["name"].astype(str) == "aten::addmm"]
    assert addmm["input_dims"].astype(str).iloc[0] == "[[2304], [2048, 768], [768, 2304], [], []]"


def test_registers_per_thread_on_kernels():
    run = run_of(GPT2)
    want = sorted((us_ns(e), e["args"]["registers per thread"]) for e in events(GPT2) if e.get("cat") == "kernel")
    assert sorted(zip(run.kernels["start"].tolist(), run.kernels["arch_vgpr"].tolist())) == want


def test_shapes_per_operator_from_the_json():
    """Each operator's recorded shapes by GPU time: kernels and time per (op, Input Dims),
    summed here from the kernels' External ids."""
    run = run_of(GPT2)
    links = link_operators(run.kernels, run.api, run.markers)
    shapes = operator_shapes(run.kernels, links, run.markers, limit=100)
    evs = events(GPT2)
    op_by_id = {e["args"]["External id"]: e for e in evs if e.get("cat") == "cpu_op"}
    expected: dict[tuple[str, str], list[int]] = {}
    for e in evs:
        if e.get("cat") == "kernel":
            op = op_by_id[e["args"]["External id"]]
            if "Input Dims" in op["args"]:
                acc = expected.setdefault((op["name"], json.dumps(op["args"]["Input Dims"])), [0, 0])
                acc[0] += 1
                acc[1] += round((e["ts"] + e["dur"]) * 1000) - round(e["ts"] * 1000)
    got = {(op, s["input_dims"]): [s["kernels"], s["total_ns"]] for op, rows in shapes.items() for s in rows}
    assert got == {k: [n, pytest.approx(t, abs=n)] for k, (n, t) in expected.items()}
    doc = build_summary(load_path(GPT2, use_cache=False), SummaryOptions(logs=False))
    top = {o["name"]: o for o in doc["hotspots_by_operator"]}
    assert top["aten::addmm"]["shapes"][0]["input_dims"] == max(((d, t) for (op, d), (_, t) in expected.items() if op == "aten::addmm"), key=lambda x: x[1])[0]


def module_path_in_json(evs: list[dict], op: dict) -> str:
    """nn.Module python_function events around ``op`` on its thread, outermost first."""
    around = [
        e
        for e in evs
        if e.get("cat") == "python_function"
        and e["name"].startswith("nn.Module: ")
        and (e["pid"], e["tid"]) == (op["pid"], op["tid"])
        and e["ts"] <= op["ts"]
        and op["ts"] + op["dur"] <= e["ts"] + e["dur"]
    ]
    return "/".join(e["name"][len("nn.Module: ") :] for e in sorted(around, key=lambda e: (e["ts"], -e["dur"])))


def test_module_path_of_each_kernel():
    run = run_of(BERT)
    links = link_operators(run.kernels, run.api, run.markers)
    key = module_key(links, run.markers).astype(str).tolist()
    evs = events(BERT)
    op_by_id = {e["args"]["External id"]: e for e in evs if e.get("cat") == "cpu_op"}
    kernels = sorted((e for e in evs if e.get("cat") == "kernel"), key=lambda e: (us_ns(e), e["name"]))
    order = np.lexsort((run.kernels["name"].astype(str).to_numpy(), run.kernels["start"].to_numpy()))
    paths = [module_path_in_json(evs, op_by_id[e["args"]["External id"]]) or NO_MODULE for e in kernels]
    assert [key[i] for i in order] == paths
    assert "BertLMHeadModel_0/BertModel_0/BertEncoder_0/BertLayer_0/BertAttention_0/BertSdpaSelfAttention_0/Linear_0" in paths


@pytest.mark.parametrize(
    "name, category",
    [
        ("aten::addmm", "GEMM"),
        ("aten::_addmm_activation", "GEMM"),
        ("aten::mm", "GEMM"),
        ("aten::_scaled_mm", "GEMM"),
        ("aten::addmm_backward_helper", ""),  # anchored: not every name starting "addmm"
        ("aten::cudnn_convolution", "convolution"),
        ("aten::convolution_backward", "convolution"),
        ("aten::_scaled_dot_product_flash_attention", "attention"),
        ("aten::_cudnn_attention_backward", "attention"),
        ("aten::native_layer_norm", "normalisation"),
        ("aten::native_batch_norm_backward", "normalisation"),
        ("aten::_softmax", "normalisation"),
        ("c10d::allreduce_", "communication"),
        ("record_param_comms", "communication"),
        ("aten::sum", "reduction"),
        ("aten::argmax", "reduction"),
        ("aten::copy_", "copy/fill"),
        ("aten::add_", "elementwise"),
        ("aten::_foreach_mul_", "elementwise"),
        ("aten::embedding_dense_backward", ""),
        ("aten::convert_something", ""),
    ],
)
def test_op_rules(name, category):
    assert op_category(name) == category


def test_categories_from_the_operator_first():
    """Kernels a known operator launched take its category whatever their name; the rest
    keep their name rule (graph replays, unknown operators)."""
    run = run_of(KINETO / "h200" / "train_sync.pt.trace.json.gz")
    links = link_operators(run.kernels, run.api, run.markers)
    cats = kernel_categories_by_op(run.kernels, links).astype(str).to_numpy()
    names = run.kernels["name"].astype(str).to_numpy()
    ops = links["op"].to_numpy()
    layout = np.array(["nchwToNhwc" in n or "nhwcToNchw" in n for n in names])
    assert layout.sum() == 996 and set(ops[layout]) == {"aten::cudnn_convolution", "aten::convolution_backward"}
    assert set(cats[layout]) == {"convolution"}
    graph = run_of(KINETO / "h200" / "decode_graph.pt.trace.json.gz")
    glinks = link_operators(graph.kernels, graph.api, graph.markers)
    gcats = kernel_categories_by_op(graph.kernels, glinks).astype(str).to_numpy()
    replay = glinks["op"].to_numpy() == GRAPH
    assert replay.sum() == 2420
    gnames = graph.kernels["name"].astype(str).to_numpy()
    assert set(gcats[replay & np.char.startswith(gnames.astype(str), "nvjet_")]) == {"GEMM"}


# --- graph replays attributed to their capture -------------------------------------------


def capture_trace(path: Path, replay_kernels: int = 3, with_capture: bool = True) -> Path:
    """A small CUDA Kineto trace: aten::mm / aten::relu / aten::sum launched during a graph
    capture (no kernels: captured launches do not run), then one cudaGraphLaunch whose
    replay runs ``replay_kernels`` kernels."""
    evs = []
    corr = [100]

    def host(name, ts, dur, cat="cuda_runtime", ext=None):
        corr[0] += 1
        args = {"correlation": corr[0]}
        if ext is not None:
            args["External id"] = ext
        evs.append({"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur, "args": args})
        return corr[0]

    if with_capture:
        host("cudaStreamBeginCapture", 10, 1)
        for i, op in enumerate(("aten::mm", "aten::relu", "aten::sum")):
            t0 = 20 + 10 * i
            evs.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": t0, "dur": 8, "args": {"External id": 10 + i}})
            host("cudaLaunchKernel", t0 + 2, 3, ext=10 + i)
        host("cudaStreamEndCapture", 60, 1)
        host("cudaGraphInstantiate", 62, 5)
    launch = host("cudaGraphLaunch", 100, 10)
    for i in range(replay_kernels):
        name = ("nvjet_sm90_tst_64x64", "vectorized_elementwise_kernel", "reduce_kernel")[i % 3]
        evs.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": name,
                "pid": 0,
                "tid": 7,
                "ts": 120 + 10 * i,
                "dur": 5,
                "args": {"device": 0, "stream": 7, "correlation": launch, "grid": [1, 1, 1], "block": [128, 1, 1]},
            }
        )
    doc = {"schemaVersion": 1, "cuda_runtime_version": 12040, "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}], "traceEvents": evs}
    path.write_text(json.dumps(doc))
    return path


def test_graph_replay_takes_the_captured_operators(tmp_path):
    run = load_path(capture_trace(tmp_path / "capture.pt.trace.json"), use_cache=False).runs[0]
    links = link_operators(run.kernels, run.api, run.markers)
    assert links["op"].tolist() == ["aten::mm", "aten::relu", "aten::sum"]
    assert links["via"].tolist() == ["capture"] * 3 and links["graph"].all()
    assert kernel_categories_by_op(run.kernels, links).astype(str).tolist() == ["GEMM", "elementwise", "reduction"]


def test_graph_replay_without_its_capture_is_graph(tmp_path):
    for name, kwargs in (("none.pt.trace.json", {"with_capture": False}), ("other.pt.trace.json", {"replay_kernels": 4})):
        run = load_path(capture_trace(tmp_path / name, **kwargs), use_cache=False).runs[0]
        links = link_operators(run.kernels, run.api, run.markers)
        assert set(links["op"]) == {GRAPH} and (links["op_row"] == -1).all(), name
        # no operator: the name rules decide
        assert kernel_categories_by_op(run.kernels, links).astype(str).tolist()[:3] == ["GEMM", "elementwise", "reduction"]


# --- the TUI's groupings ---------------------------------------------------------------------


def test_view_groups_by_operator_and_module():
    """RunView offers "operator" where cpu_ops are recorded and "module" where nn.Module
    scopes are; its operator hotspots equal the summary's, its dispatches of an operator
    are that operator's kernels."""
    from tui_prof.tui.panes.hotspots import next_group
    from tui_prof.tui.view.runview import build_view

    bert = build_view(load_path(BERT, use_cache=False), lazy=True)
    assert bert.groups == ("name", "normalised name", "category", "operator", "module", "agent", "process")
    gpt2 = build_view(load_path(GPT2, use_cache=False), lazy=True)
    assert gpt2.groups == ("name", "normalised name", "category", "operator", "agent", "process")
    rocpd = build_view(load_path(KINETO.parent / "rocpd" / "28_results.db", use_cache=False), lazy=True)
    assert rocpd.groups == ("name", "normalised name", "category", "agent", "process")
    assert [next_group(gpt2.groups, g) for g in ("category", "operator", "module")] == ["operator", "agent", "name"]

    table = gpt2.hotspots("operator")
    doc = build_summary(load_path(GPT2, use_cache=False), SummaryOptions(top=None, logs=False))
    assert {r.name: (int(r.calls), int(r.total_ns)) for r in table.itertuples()} == {
        o["name"]: (o["kernels"], o["total_ns"]) for o in doc["hotspots_by_operator"]
    }
    cats = gpt2.hotspots("category")
    assert {r.name: int(r.total_ns) for r in cats.itertuples()} == doc["categories"]
    rows = gpt2.dispatches("operator", "aten::addmm")
    assert len(rows) == dict(zip(table["name"], table["calls"]))["aten::addmm"]
    modules = bert.hotspots("module")
    bdoc = build_summary(load_path(BERT, use_cache=False), SummaryOptions(top=None, logs=False))
    assert {r.name: int(r.total_ns) for r in modules.itertuples()} == {o["name"]: o["total_ns"] for o in bdoc["hotspots_by_module"]}


def test_module_paths_keep_their_innermost_modules_when_cut():
    from tui_prof.render.summary import module_tail

    path = "BertLMHeadModel_0/BertModel_0/BertEncoder_0/BertLayer_0/BertAttention_0/BertSdpaSelfAttention_0/Linear_0"
    assert module_tail(path, len(path)) == path
    assert module_tail(path, 51) == "…/BertAttention_0/BertSdpaSelfAttention_0/Linear_0"  # 51 characters
    assert module_tail(path, 48) == "…/BertSdpaSelfAttention_0/Linear_0"  # a whole module name or none
    assert module_tail("Alpha_0/Beta_0/Gamma_0", 5) == "…ma_0"  # no "/" fits: the last characters
