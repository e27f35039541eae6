"""Which framework operator launched each kernel, and what that says about the kernel.

Two links, the first that holds wins:

1. **External id.** Kineto writes an ``External id`` on each kernel (and copy, and launch
   call) and on the ``cpu_op`` that launched it; the model keeps it (``external_id``), so a
   kernel's operator is the ``cpu_op`` marker with the same id — when that operator contains
   the kernel's launch call on its thread (old Kineto builds wrote the correlation id as
   the kernel's External id, which can name an unrelated operator).
2. **Time containment.** Traces without the id (or whose id names no ``cpu_op``) still
   link every kernel to its launching runtime call (``correlation_id``). A launch call runs
   inside the operator that issued it, on the same thread, so the launching operator is the
   innermost ``cpu_op`` on the call's (pid, tid) whose range contains the call — the same
   operator the External id names, since Kineto takes the id from the innermost operator
   active on the thread at launch time.

Kernels launched by a graph launch (``cudaGraphLaunch``/``hipGraphLaunch``) are replays:
the operator around the graph launch did not issue them. When the graph's capture is in
the trace (``*StreamBeginCapture`` … ``*StreamEndCapture`` on a thread, whose launch calls
produced no kernel), the replay's kernels in start order are the captured launches in
call order and get their operators; otherwise they get the operator ``GRAPH``. Kernels
with no launch call in the trace, or whose call no ``cpu_op`` contains (GPU-only traces,
rocprofv3 runs), get ``""``.

Each linked operator also has its module path (the ``nn.Module: X`` python_function scopes
around it on its thread, outermost first, joined by "/"; ``""`` when not recorded) and its
recorded input shapes (``record_shapes``: the cpu_op's ``Input Dims``).

Categories (:func:`op_category`) come from the operator first: an operator the op rules
know decides its kernels' category; kernel-name rules (analysis/names.py) decide the rest
(unlinked kernels, graph replays, operators the op rules do not know).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.analysis import flops, hostapi
from tui_prof.analysis.hotspots import group_key
from tui_prof.analysis.names import CategoryRules, kernel_categories, map_categorical
from tui_prof.analysis.runinput import RunInput
from tui_prof.analysis.sections import OperatorRecord, ShapeRecord
from tui_prof.model import Agent, Run

GRAPH = "graph"  # the operator of a graph-replayed kernel
OP_SOURCE = "cpu_op"


def _parents(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Position of each range's parent (the innermost range containing it; -1 for none)
    for ranges sorted by (start, -end) that nest, with one stack pass."""
    n = len(starts)
    parent = np.full(n, -1, dtype=np.int64)
    stack: list[int] = []
    for i in range(n):
        while stack and ends[i] > ends[stack[-1]]:  # the top ends before i does: not its parent
            stack.pop()
        parent[i] = stack[-1] if stack else -1
        stack.append(i)
    return parent


def _innermost(starts: np.ndarray, ends: np.ndarray, q_start: np.ndarray, q_end: np.ndarray) -> np.ndarray:
    """Per query interval, the position of the innermost interval containing it, or -1.

    ``starts``/``ends`` are one thread's operator ranges sorted by (start, -end), which
    nest (a thread's operators form a call tree). The last range starting at or before the
    query is the deepest candidate; its ancestors (``parent``, found with one stack pass)
    are the others, so a query walks up until a range contains it."""
    parent = _parents(starts, ends)
    pos = np.searchsorted(starts, q_start, side="right") - 1
    while True:
        valid = pos >= 0
        safe = np.maximum(pos, 0)
        bad = valid & (ends[safe] < q_end)
        if not bad.any():
            return pos
        pos = np.where(bad, parent[safe], pos)


def _contained_ops(ops: pd.DataFrame, q_pid: np.ndarray, q_tid: np.ndarray, q_start: np.ndarray, q_end: np.ndarray) -> np.ndarray:
    """Per query interval, the row label in ``ops`` of the innermost range on the same
    (pid, tid) that contains it, or -1."""
    out = np.full(len(q_start), -1, dtype=np.int64)
    if not len(q_start) or not len(ops):
        return out
    o_rows = ops.index.to_numpy()
    o_start, o_end = ops["start"].to_numpy(), ops["end"].to_numpy()
    o_pid, o_tid = ops["pid"].to_numpy(), ops["tid"].to_numpy()
    for (pid, tid), group in pd.Series(np.arange(len(o_rows))).groupby([o_pid, o_tid]):
        mine = np.flatnonzero((q_pid == pid) & (q_tid == tid))
        if not len(mine):
            continue
        g = group.to_numpy()
        order = g[np.lexsort((-o_end[g], o_start[g]))]
        pos = _innermost(o_start[order], o_end[order], q_start[mine], q_end[mine])
        out[mine] = np.where(pos >= 0, o_rows[order[np.maximum(pos, 0)]], -1)
    return out


def _where(column: pd.Series, test) -> np.ndarray:
    """Rows of a string column whose value passes ``test``; on a category column the test
    runs once per distinct value."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        hits = [i for i, c in enumerate(column.cat.categories) if test(str(c))]
        return np.isin(column.cat.codes.to_numpy(), hits) if hits else np.zeros(len(column), dtype=bool)
    return np.array([bool(test(str(v))) for v in column], dtype=bool)


def _ops_by_external_id(ops: pd.DataFrame) -> pd.Series:
    """Marker row label of the first ``cpu_op`` of each External id (ids < 0 left out)."""
    ext = ops["external_id"].to_numpy() if "external_id" in ops.columns else np.array([], dtype=np.int64)
    keep = ext >= 0
    by_id = pd.Series(ops.index.to_numpy()[keep], index=ext[keep])
    return by_id[~by_id.index.duplicated()]


def _contains_launch(markers: pd.DataFrame, api: pd.DataFrame, op_rows: np.ndarray, api_rows: np.ndarray) -> np.ndarray:
    """Per pair: the operator may have launched through the call — it contains the launch
    call on the call's thread, or the call is not in the trace. Old Kineto builds wrote the
    correlation id as the kernel's External id, which can name an unrelated operator."""
    ok = op_rows >= 0
    check = ok & (api_rows >= 0)
    if check.any():
        o, a = op_rows[check], api_rows[check]
        inside = (markers["start"].to_numpy()[o] <= api["start"].to_numpy()[a]) & (api["end"].to_numpy()[a] <= markers["end"].to_numpy()[o])
        inside &= (markers["pid"].to_numpy()[o] == api["pid"].to_numpy()[a]) & (markers["tid"].to_numpy()[o] == api["tid"].to_numpy()[a])
        ok[np.flatnonzero(check)[~inside]] = False
    return ok


CAPTURE_BEGIN = re.compile(r"^(cuda|hip)StreamBeginCapture\w*$")
CAPTURE_END = re.compile(r"^(cuda|hip)StreamEndCapture\w*$")


def _captured_launches(api: pd.DataFrame, classes: np.ndarray, kernel_corr: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Graph captures in the trace: (end of the capture, api rows of its launch calls in
    call order) for each ``*StreamBeginCapture`` … ``*StreamEndCapture`` pair on one thread.
    A captured launch records no kernel (its correlation id has none)."""
    names = api["name"] if isinstance(api["name"].dtype, pd.CategoricalDtype) else api["name"].astype("category")
    codes = names.cat.codes.to_numpy()
    labels = [str(c) for c in names.cat.categories]
    begin_codes = [i for i, c in enumerate(labels) if CAPTURE_BEGIN.match(c)]
    if not begin_codes:
        return []
    begins = np.flatnonzero(np.isin(codes, begin_codes))
    ends = np.flatnonzero(np.isin(codes, [i for i, c in enumerate(labels) if CAPTURE_END.match(c)]))
    pid, tid = api["pid"].to_numpy(), api["tid"].to_numpy()
    start, end = api["start"].to_numpy(), api["end"].to_numpy()
    corr = api["correlation_id"].to_numpy()
    launched = np.isin(corr, kernel_corr)
    out = []
    for b in begins:
        later = ends[(pid[ends] == pid[b]) & (tid[ends] == tid[b]) & (start[ends] >= start[b])]
        if not len(later):
            continue
        e = later[np.argmin(start[later])]
        inside = (pid == pid[b]) & (tid == tid[b]) & (start >= end[b]) & (end <= start[e]) & (classes == hostapi.LAUNCH) & ~launched
        rows = np.flatnonzero(inside)
        out.append((int(end[e]), rows[np.argsort(start[rows], kind="stable")]))
    return out


def link_operators(kernels: pd.DataFrame, api: pd.DataFrame, markers: pd.DataFrame, corr_index: hostapi.CorrIndex | None = None) -> pd.DataFrame:
    """One row per kernel (same order): ``api_row`` (launching call, -1 if none),
    ``op_row`` (the ``cpu_op`` marker row, -1 if none), ``op`` (its name; ``GRAPH`` for
    graph replays whose capture is not in the trace, ``""`` when no operator launched it),
    ``via`` ("external id", "time", "capture" or "") and ``graph`` (a graph replay).
    See the module docstring."""
    n = len(kernels)
    out = pd.DataFrame({"api_row": np.full(n, -1, dtype=np.int64), "op_row": np.full(n, -1, dtype=np.int64)})
    op_names = np.full(n, "", dtype=object)
    via = np.full(n, "", dtype=object)
    graph = np.zeros(n, dtype=bool)
    ops = markers[_where(markers["source"], lambda s: s == OP_SOURCE)] if len(markers) else markers
    op_row = np.full(n, -1, dtype=np.int64)
    if n and len(api):
        index = hostapi.CorrIndex(api) if corr_index is None else corr_index.check(api)
        rows = index.launch_rows(kernels["correlation_id"].to_numpy())
        out["api_row"] = rows
        linked = rows >= 0
        graph = linked & (index.classes[np.maximum(rows, 0)] == hostapi.GRAPH_LAUNCH)
    else:
        index, rows, linked = None, np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=bool)
    if n and len(ops):
        # 1. External id
        if "external_id" in kernels.columns:
            ext = kernels["external_id"].to_numpy()
            by_id = _ops_by_external_id(ops)
            candidates = np.flatnonzero((ext >= 0) & ~graph)
            if len(candidates) and len(by_id):
                found = by_id.reindex(ext[candidates]).to_numpy()
                hit = ~pd.isna(found)
                found_rows = np.where(hit, found, -1).astype(np.int64)
                hit &= _contains_launch(markers, api, found_rows, rows[candidates])
                op_row[candidates[hit]] = found_rows[hit]
                via[candidates[hit]] = "external id"
        # 2. time containment of the launch call
        direct = np.flatnonzero(linked & ~graph & (op_row < 0))
        if len(direct):
            r = rows[direct]
            found = _contained_ops(ops, api["pid"].to_numpy()[r], api["tid"].to_numpy()[r], api["start"].to_numpy()[r], api["end"].to_numpy()[r])
            op_row[direct] = found
            via[direct[found >= 0]] = "time"
        # 3. graph replays: the captured launches, when the capture is in the trace
        if graph.any() and index is not None:
            _link_replays(kernels, api, ops, index.classes, rows, graph, op_row, via)
    out["op_row"] = op_row
    hit = op_row >= 0
    if hit.any():
        names = markers["name"].astype(str).to_numpy()
        op_names[hit] = names[op_row[hit]]
    op_names[graph & ~hit] = GRAPH
    out["op"] = op_names
    out["via"] = via
    out["graph"] = graph
    return out


def _link_replays(
    kernels: pd.DataFrame, api: pd.DataFrame, ops: pd.DataFrame, classes: np.ndarray, rows: np.ndarray, graph: np.ndarray, op_row: np.ndarray, via: np.ndarray
) -> None:
    """Operators of graph-replayed kernels from the graph's capture (module docstring):
    each graph launch's kernels in start order take the captured launches' operators in
    call order, from the latest capture that ended before the launch and captured as many
    launches as the replay ran kernels. Writes into ``op_row``/``via``."""
    captures = _captured_launches(api, classes, kernels["correlation_id"].to_numpy())
    if not captures:
        return
    by_id = _ops_by_external_id(ops)
    captured_ops = []
    for _, launch_rows in captures:
        ext = api["external_id"].to_numpy()[launch_rows] if "external_id" in api.columns else np.full(len(launch_rows), -1)
        found = by_id.reindex(ext).to_numpy() if len(by_id) else np.full(len(launch_rows), np.nan)
        known = ~pd.isna(found)
        op = np.full(len(launch_rows), -1, dtype=np.int64)
        op[known] = found[known].astype(np.int64)
        rest = np.flatnonzero(~known)
        if len(rest):
            r = launch_rows[rest]
            op[rest] = _contained_ops(ops, api["pid"].to_numpy()[r], api["tid"].to_numpy()[r], api["start"].to_numpy()[r], api["end"].to_numpy()[r])
        captured_ops.append(op)
    replay = np.flatnonzero(graph)
    starts = kernels["start"].to_numpy()
    a_start = api["start"].to_numpy()
    for launch in np.unique(rows[replay]):
        mine = replay[rows[replay] == launch]
        mine = mine[np.argsort(starts[mine], kind="stable")]
        fits = [i for i, (end, launch_rows) in enumerate(captures) if end <= a_start[launch] and len(launch_rows) == len(mine)]
        if not fits:
            continue
        best = max(fits, key=lambda i: captures[i][0])
        op_row[mine] = captured_ops[best]
        via[mine[captured_ops[best] >= 0]] = "capture"


def operator_time(kernels: pd.DataFrame, links: pd.DataFrame) -> pd.DataFrame:
    """GPU time per launching operator: op, kernels (dispatches), total_ns, percent (of
    kernel time), sorted by total time; kernels no operator launched are under ``""``."""
    dur = kernels["end"].to_numpy() - kernels["start"].to_numpy()
    frame = pd.DataFrame({"op": links["op"].to_numpy(), "dur": dur})
    grouped = frame.groupby("op", sort=False)["dur"].agg(["count", "sum"]).reset_index()
    grouped.columns = ["op", "kernels", "total_ns"]
    total = int(dur.sum())
    grouped["percent"] = 100.0 * grouped["total_ns"] / total if total else 0.0
    return grouped.sort_values(["total_ns", "op"], ascending=[False, True], kind="stable").reset_index(drop=True)


# --- categories from the operator ----------------------------------------------------------

# Ordered (category, pattern) over operator names; the first match wins, an operator none
# matches leaves its kernels to the kernel-name rules. Anchored on the op's own name
# ("aten::addmm", not "aten::addmm_backward_helper"): a namespace, the name, an optional
# in-place "_" or "_backward"/"Backward0" suffix.
OP_RULES: tuple[tuple[str, str], ...] = (
    (
        "communication",
        r"^(c10d|c10d_functional|_c10d_functional|nccl|rccl)::|^record_param_comms$|^aten::_?(all_reduce|all_gather\w*|reduce_scatter\w*|broadcast|all_to_all\w*)_?$",
    ),
    (
        "attention",
        r"^aten::(_?scaled_dot_product\w*|_flash_attention\w*|_efficient_attention\w*|_cudnn_attention\w*|_native_multi_head_attention|_fused_sdp\w*)$"
        r"|^(flash_attn|vllm|sgl_kernel)\w*::\w*attention\w*$|attention\w*::",
    ),
    (
        "convolution",
        r"^aten::(_?convolution|conv\d?d|conv_transpose\d?d|_convolution_double_backward|convolution_backward\w*|cudnn_convolution\w*"
        r"|miopen_\w*convolution\w*|mkldnn_convolution|slow_conv\w*|thnn_conv\w*|_nnpack_spatial_convolution)$",
    ),
    ("GEMM", r"^aten::(mm|addmm|_addmm_activation|bmm|baddbmm|addbmm|matmul|linear|mv|addmv|dot|vdot|_scaled_mm|_int_mm|_grouped_mm|_scaled_grouped_mm)_?$"),
    (
        "normalisation",
        r"^aten::(native_|_)?(layer_norm|batch_norm|group_norm|instance_norm|rms_norm|fused_rms_norm)(_backward)?\w*$|^aten::(cudnn|miopen)_batch_norm\w*$"
        r"|^aten::_?(log_)?softmax(_backward_data)?$",
    ),
    (
        "pooling",
        r"^aten::(max_pool[123]d|avg_pool[123]d|adaptive_(max|avg)_pool[123]d|fractional_max_pool[23]d|max_unpool[23]d)(_with_indices)?(_backward)?_?$",
    ),
    (
        "reduction",
        r"^aten::(sum|mean|prod|amax|amin|max|min|argmax|argmin|aminmax|cumsum|cumprod|var|std|var_mean|std_mean|norm|linalg_vector_norm"
        r"|logsumexp|topk|sort|argsort|any|all|nll_loss\w*|cross_entropy_loss)_?$",
    ),
    ("copy/fill", r"^aten::(copy_|_to_copy|clone|contiguous|_copy_from\w*|fill_|zero_|zeros|zeros_like|ones|ones_like|full|full_like|cat|stack)$"),
    (
        "elementwise",
        r"^aten::(add|sub|rsub|mul|div|neg|pow|exp|log|log1p|sqrt|rsqrt|reciprocal|abs|sign|relu|gelu|silu|sigmoid|tanh|hardtanh|leaky_relu|elu"
        r"|threshold_backward|gelu_backward|silu_backward|sigmoid_backward|tanh_backward|where|clamp\w*|masked_fill|dropout|native_dropout\w*"
        r"|maximum|minimum|eq|ne|lt|le|gt|ge|erf|cos|sin|lerp|addcmul|addcdiv|_foreach_\w+|_fused_adam\w*|_fused_sgd\w*)_?$",
    ),
)
OP_CATEGORY_RULES = tuple((category, re.compile(pattern)) for category, pattern in OP_RULES)


def op_category(name: str) -> str:
    """The category an operator's name decides, or ``""`` when the op rules do not know it
    (its kernels are then categorised by their own names)."""
    for category, pattern in OP_CATEGORY_RULES:
        if pattern.search(name):
            return category
    return ""


def kernel_categories_by_op(kernels: pd.DataFrame, links: pd.DataFrame, rules: CategoryRules | None = None) -> pd.Series:
    """Category of every kernel (category column, kernels' order): the launching
    operator's (:func:`op_category`) where one is linked and known, else the kernel-name
    rule's (:func:`~tui_prof.analysis.names.kernel_categories`)."""
    by_name = kernel_categories(kernels["name"], rules).reset_index(drop=True)
    ops = pd.Series(links["op"].to_numpy(), dtype="category")
    by_op = map_categorical(ops, op_category)
    use_op = (by_op.astype(str) != "").to_numpy() & (links["op_row"].to_numpy() >= 0)
    if not use_op.any():
        return by_name
    merged = np.where(use_op, by_op.astype(str).to_numpy(), by_name.astype(str).to_numpy())
    return pd.Series(merged, dtype="category")


# --- module paths and shapes ----------------------------------------------------------------

MODULE_PREFIX = "nn.Module: "
MODULE_SOURCE = "python_function"


def has_module_scopes(markers: pd.DataFrame) -> bool:
    """The markers record nn.Module scopes (python_function ``nn.Module: X`` ranges);
    checked on the distinct names only."""
    if not len(markers):
        return False
    names = markers["name"]
    labels = names.cat.categories if isinstance(names.dtype, pd.CategoricalDtype) else pd.Index(names.unique())
    return bool(pd.Index(labels).astype(str).str.startswith(MODULE_PREFIX).any())


def module_paths(markers: pd.DataFrame, op_rows: np.ndarray) -> np.ndarray:
    """Module path of each marker row in ``op_rows`` (-1: ``""``): the ``nn.Module: X``
    python_function ranges on the op's thread that contain it, outermost first, joined by
    "/" (``"BertModel_0/BertEncoder_0/BertLayer_1"``); ``""`` when none is recorded."""
    out = np.full(len(op_rows), "", dtype=object)
    if not len(markers) or not len(op_rows):
        return out
    is_module = _where(markers["source"], lambda s: s == MODULE_SOURCE) & _where(markers["name"], lambda s: s.startswith(MODULE_PREFIX))
    if not is_module.any():
        return out
    modules = markers[is_module]
    valid = op_rows >= 0
    unique_rows, inverse = np.unique(op_rows[valid], return_inverse=True)
    found = _contained_ops(
        modules,
        markers["pid"].to_numpy()[unique_rows],
        markers["tid"].to_numpy()[unique_rows],
        markers["start"].to_numpy()[unique_rows],
        markers["end"].to_numpy()[unique_rows],
    )
    path = _module_path_by_row(modules)
    per_unique = np.array([path[int(r)] if r >= 0 else "" for r in found], dtype=object)
    out[valid] = per_unique[inverse]
    return out


def _module_path_by_row(modules: pd.DataFrame) -> dict[int, str]:
    """Path of every module range (row label -> "Outer_0/Inner_0"): ranges of one thread
    nest, so sorted by (start, -end) each one's parent comes before it."""
    path: dict[int, str] = {}
    rows = modules.index.to_numpy()
    starts, ends = modules["start"].to_numpy(), modules["end"].to_numpy()
    names = [n[len(MODULE_PREFIX) :] for n in modules["name"].astype(str)]
    for _, group in pd.Series(np.arange(len(rows))).groupby([modules["pid"].to_numpy(), modules["tid"].to_numpy()]):
        g = group.to_numpy()
        order = g[np.lexsort((-ends[g], starts[g]))]
        parent = _parents(starts[order], ends[order])
        texts: list[str] = []
        for i, j in enumerate(order):
            texts.append(names[j] if parent[i] < 0 else f"{texts[parent[i]]}/{names[j]}")
            path[int(rows[j])] = texts[-1]
    return path


# --- per-kernel keys and tables ---------------------------------------------------------------

NOT_LINKED = "(not linked)"
NO_MODULE = "(no module)"


def operator_key(links: pd.DataFrame) -> pd.Series:
    """Per kernel, its launching operator's name as a hotspot grouping key (category
    column): ``GRAPH`` for graph replays, ``NOT_LINKED`` when no operator launched it."""
    ops = links["op"].to_numpy().copy()
    ops[ops == ""] = NOT_LINKED
    return pd.Series(ops, dtype="category")


def module_key(links: pd.DataFrame, markers: pd.DataFrame) -> pd.Series:
    """Per kernel, the module path of its launching operator (:func:`module_paths`) as a
    grouping key: ``NO_MODULE`` for a linked operator outside any recorded module,
    ``GRAPH``/``NOT_LINKED`` as in :func:`operator_key`."""
    paths = module_paths(markers, links["op_row"].to_numpy())
    linked = links["op_row"].to_numpy() >= 0
    paths[linked & (paths == "")] = NO_MODULE
    ops = links["op"].to_numpy()
    paths[~linked] = np.where(ops[~linked] == GRAPH, GRAPH, NOT_LINKED)
    return pd.Series(paths, dtype="category")


def operator_shapes(kernels: pd.DataFrame, links: pd.DataFrame, markers: pd.DataFrame, limit: int = 3) -> dict[str, list[ShapeRecord]]:
    """Per operator, its recorded input shapes (``record_shapes``: the cpu_op's Input Dims)
    by GPU time: up to ``limit`` of {"input_dims", "kernels", "total_ns"}, largest first.
    Operators without recorded shapes are left out (an empty dict when none has them)."""
    if "input_dims" not in markers.columns or not len(kernels):
        return {}
    op_row = links["op_row"].to_numpy()
    linked = np.flatnonzero(op_row >= 0)
    if not len(linked):
        return {}
    dims = markers["input_dims"].astype(str).to_numpy()[op_row[linked]]
    has = dims != ""
    if not has.any():
        return {}
    dur = kernels["end"].to_numpy()[linked] - kernels["start"].to_numpy()[linked]
    frame = pd.DataFrame({"op": links["op"].to_numpy()[linked][has], "dims": dims[has], "dur": dur[has]})
    grouped = frame.groupby(["op", "dims"], sort=False)["dur"].agg(["count", "sum"]).reset_index()
    grouped = grouped.sort_values(["op", "sum", "dims"], ascending=[True, False, True], kind="stable")
    out: dict[str, list[ShapeRecord]] = {}
    for row in grouped.itertuples(index=False):
        mine = out.setdefault(str(row.op), [])
        if len(mine) < limit:
            mine.append({"input_dims": str(row.dims), "kernels": int(row.count), "total_ns": int(row.sum)})
    return out


# --- the summary sections: operators and modules ---


def has_operators(run: Run) -> bool:
    """The run records framework operators (Kineto ``cpu_op`` markers) to link kernels to
    (checked on the category codes: no per-row strings)."""
    if not len(run.kernels) or not len(run.markers):
        return False
    source = run.markers["source"]
    if not isinstance(source.dtype, pd.CategoricalDtype):
        return bool((source.astype(str) == "cpu_op").any())
    labels = [str(c) for c in source.cat.categories]
    return "cpu_op" in labels and bool((source.cat.codes.to_numpy() == labels.index("cpu_op")).any())


def operator_links(inputs: Sequence[RunInput]) -> list[pd.DataFrame | None]:
    """:func:`~tui_prof.analysis.link_operators` of each process (None where it
    records no operators), computed once for the categories and the operator tables."""
    return [link_operators(r.run.kernels, r.run.api, r.run.markers, r.index) if has_operators(r.run) else None for r in inputs]


def kernel_categories_of(inputs: Sequence[RunInput], links: Sequence[pd.DataFrame | None], rules: CategoryRules) -> pd.Series | None:
    """Category of every kernel of the run set (rows in ``all_kernels`` order): operator
    first where a process records operators, kernel-name rules elsewhere; None when no
    process records operators (the name rules alone, as ``hotspots(by="category")``)."""
    if all(link is None for link in links):
        return None
    parts = []
    for r, link in zip(inputs, links):
        if link is not None:
            parts.append(kernel_categories_by_op(r.run.kernels, link, rules).astype(str))
        else:
            parts.append(group_key(r.run.kernels, "category", rules).astype(str).reset_index(drop=True))
    return pd.Series(pd.concat(parts, ignore_index=True), dtype="category")


def categories_per_process(categories: pd.Series | None, inputs: Sequence[RunInput]) -> list[np.ndarray | None] | None:
    """Each process's slice of :func:`kernel_categories_of` (rows in ``inputs`` order, its
    kernels' order): what the rank table's compute/copy split uses. None: no operators."""
    if categories is None:
        return None
    values = categories.astype(str).to_numpy(dtype=object)
    ends = np.cumsum([len(r.run.kernels) for r in inputs])
    if not len(ends) or int(ends[-1]) != len(values):
        return None
    return list(np.split(values, ends[:-1]))


def process_categories(run: Run, rules: CategoryRules, index: hostapi.CorrIndex | None = None) -> np.ndarray | None:
    """One process's kernel categories, operator first, as the summary's category table
    gives them (:func:`kernel_categories_of` for that process alone, which is per
    process): what the rank table's compute/copy split uses while the run loads, so the
    rank rows and the summary give one answer. None where it records no operators (the
    rank figures then go by kernel name, as the summary's do)."""
    if not has_operators(run):
        return None
    link = link_operators(run.kernels, run.api, run.markers, index)
    return kernel_categories_by_op(run.kernels, link, rules).astype(str).to_numpy(dtype=object)


def _records(table: pd.DataFrame, total: int, top: int | None) -> list[OperatorRecord]:
    table = table.sort_values(["total_ns", "op"], ascending=[False, True], kind="stable")
    records: list[OperatorRecord] = [
        {
            "name": str(row.op) or NOT_LINKED,
            "kernels": int(row.kernels),
            "total_ns": int(row.total_ns),
            "percent": round(100.0 * int(row.total_ns) / total, 4) if total else 0.0,
        }
        for row in table.itertuples(index=False)
    ]
    return records[:top] if top else records


def operators_section(inputs: Sequence[RunInput], top: int | None, links: Sequence[pd.DataFrame | None] | None = None) -> list[OperatorRecord]:
    """GPU time per launching operator (:func:`~tui_prof.analysis.link_operators`)
    over every process, largest first, the first ``top`` (None: all), each with its
    recorded input shapes (``shapes``, where ``record_shapes`` recorded them); empty when no
    process records ``cpu_op`` markers (nothing to link to). ``links``: :func:`operator_links`."""
    links = operator_links(inputs) if links is None else links
    parts = [operator_part(r, link) for r, link in zip(inputs, links) if link is not None]
    if not parts:  # no process records operators: no kernel total to add up (two Series per process)
        return []
    total = int(sum(int(r.run.kernels["end"].sum() - r.run.kernels["start"].sum()) for r in inputs))
    agent = next((r.run.gpu_agents[0] for r in inputs if r.run.gpu_agents), None)
    return operators_of_parts(parts, total, agent, top)


OperatorPart = tuple[pd.DataFrame, dict[str, list[ShapeRecord]], dict[str, dict[str, Any]]]


def operator_part(r: RunInput, link: pd.DataFrame) -> OperatorPart:
    """What one process that records operators adds to :func:`operators_section`: its
    (op, kernels, total_ns) table, its operators' shapes and their FLOP costs."""
    k, markers = r.run.kernels, r.run.markers
    return operator_time(k, link)[["op", "kernels", "total_ns"]], operator_shapes(k, link, markers), flops.operator_costs(k, link, markers)


def operators_of_parts(parts: Sequence[OperatorPart], total: int, agent: Agent | None, top: int | None) -> list[OperatorRecord]:
    """:func:`operators_section` from the processes' :func:`operator_part` (in process
    order); ``total``: every process's kernel time, ``agent``: the first GPU of the run set."""
    if not parts:
        return []
    table = pd.concat([p[0] for p in parts]).groupby("op", sort=False)[["kernels", "total_ns"]].sum().reset_index()
    shapes: dict[str, list[ShapeRecord]] = {}
    for _table, mine, _costs in parts:
        for op, rows in mine.items():
            shapes.setdefault(op, []).extend(rows)
    records = _records(table, total, top)
    for record in records:
        best = sorted(shapes.get(record["name"], []), key=lambda x: -x["total_ns"])[:3]
        if best:
            record["shapes"] = best
    costs = flops.merge_costs([p[2] for p in parts])
    if costs:
        peak = flops.gpu_peak(agent, flops.memory_peak_gbs(agent))
        for record in records:
            cost = costs.get(record["name"])
            if cost:
                record.update(flops.rates(cost, peak))  # type: ignore[typeddict-item]  # rates() returns these NotRequired keys
    return records


def modules_section(inputs: Sequence[RunInput], top: int | None, links: Sequence[pd.DataFrame | None] | None = None) -> list[OperatorRecord]:
    """GPU time per module path of the launching operator (nn.Module scopes, where the
    trace records them; :func:`~tui_prof.analysis.module_key`), largest first;
    empty when no process records a module scope."""
    links = operator_links(inputs) if links is None else links
    frames = [module_part(r, link) for r, link in zip(inputs, links) if link is not None]
    if not frames:  # as in operators_section
        return []
    total = int(sum(int(r.run.kernels["end"].sum() - r.run.kernels["start"].sum()) for r in inputs))
    return modules_of_parts(frames, total, top)


def module_part(r: RunInput, link: pd.DataFrame) -> pd.DataFrame:
    """One process's (op: module path, kernels, total_ns) table for :func:`modules_section`."""
    key = module_key(link, r.run.markers)
    dur = r.run.kernels["end"].to_numpy() - r.run.kernels["start"].to_numpy()
    frame = pd.DataFrame({"op": key.astype(str).to_numpy(), "dur": dur})
    return frame.groupby("op", sort=False)["dur"].agg(["count", "sum"]).reset_index().set_axis(["op", "kernels", "total_ns"], axis=1)


def modules_of_parts(frames: Sequence[pd.DataFrame], total: int, top: int | None) -> list[OperatorRecord]:
    """:func:`modules_section` from the processes' :func:`module_part`."""
    if not frames:
        return []
    table = pd.concat(frames).groupby("op", sort=False)[["kernels", "total_ns"]].sum().reset_index()
    if not (~table["op"].isin([NO_MODULE, NOT_LINKED, GRAPH])).any():
        return []
    return _records(table, total, top)
