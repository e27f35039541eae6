"""Which framework operator launched each kernel, from the tables the run model has.

Kineto writes an ``External id`` on each kernel and on the ``cpu_op`` that launched it; the
run model does not keep that id. It does keep, for every kernel, the ``correlation_id`` of
its launching runtime call (``api``) and, for every ``cpu_op`` marker, its host thread and
time range. A launch call runs inside the operator that issued it, on the same thread, so
the launching operator is the innermost ``cpu_op`` on the call's (pid, tid) whose range
contains the call — the same operator the External id names, since Kineto takes the
External id from the innermost operator active on the thread at launch time.

Kernels launched by a graph launch (``cudaGraphLaunch``/``hipGraphLaunch``) are replays:
the operator around the graph launch did not issue them, so they get the operator
``GRAPH`` and no marker row. Kernels with no launch call in the trace, or whose call no
``cpu_op`` contains (GPU-only traces, rocprofv3 runs), get ``""``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tui_prof.analysis import hostapi

GRAPH = "graph"  # the operator of a graph-replayed kernel
OP_SOURCE = "cpu_op"


def _innermost(starts: np.ndarray, ends: np.ndarray, q_start: np.ndarray, q_end: np.ndarray) -> np.ndarray:
    """Per query interval, the position of the innermost interval containing it, or -1.

    ``starts``/``ends`` are one thread's operator ranges sorted by (start, -end), which
    nest (a thread's operators form a call tree). The last range starting at or before the
    query is the deepest candidate; its ancestors (``parent``, found with one stack pass)
    are the others, so a query walks up until a range contains it."""
    n = len(starts)
    parent = np.full(n, -1, dtype=np.int64)
    stack: list[int] = []
    for i in range(n):
        while stack and ends[i] > ends[stack[-1]]:  # the top ends before i does: not its parent
            stack.pop()
        parent[i] = stack[-1] if stack else -1
        stack.append(i)
    pos = np.searchsorted(starts, q_start, side="right") - 1
    while True:
        valid = pos >= 0
        safe = np.maximum(pos, 0)
        bad = valid & (ends[safe] < q_end)
        if not bad.any():
            return pos
        pos = np.where(bad, parent[safe], pos)


def link_operators(kernels: pd.DataFrame, api: pd.DataFrame, markers: pd.DataFrame, corr_index: hostapi.CorrIndex | None = None) -> pd.DataFrame:
    """One row per kernel (same order): ``api_row`` (launching call, -1 if none),
    ``op_row`` (the ``cpu_op`` marker row, -1 if none) and ``op`` (its name; ``GRAPH`` for
    graph replays, ``""`` when no operator launched it). See the module docstring."""
    n = len(kernels)
    out = pd.DataFrame({"api_row": np.full(n, -1, dtype=np.int64), "op_row": np.full(n, -1, dtype=np.int64)})
    op_names = np.full(n, "", dtype=object)
    if n == 0 or len(api) == 0:
        out["op"] = op_names
        return out
    index = hostapi.CorrIndex(api) if corr_index is None else corr_index.check(api)
    rows = index.launch_rows(kernels["correlation_id"].to_numpy())
    out["api_row"] = rows
    linked = rows >= 0
    graph = linked & (index.classes[np.maximum(rows, 0)] == hostapi.GRAPH_LAUNCH)
    op_names[graph] = GRAPH
    direct = np.flatnonzero(linked & ~graph)
    ops = markers[markers["source"].astype(str) == OP_SOURCE] if len(markers) else markers
    if len(direct) and len(ops):
        a_start = api["start"].to_numpy()[rows[direct]]
        a_end = api["end"].to_numpy()[rows[direct]]
        a_thread = pd.MultiIndex.from_arrays([api["pid"].to_numpy()[rows[direct]], api["tid"].to_numpy()[rows[direct]]])
        o_rows = ops.index.to_numpy()
        o_start, o_end = ops["start"].to_numpy(), ops["end"].to_numpy()
        o_pid, o_tid = ops["pid"].to_numpy(), ops["tid"].to_numpy()
        op_row = np.full(len(direct), -1, dtype=np.int64)
        for (pid, tid), group in pd.Series(np.arange(len(o_rows))).groupby([o_pid, o_tid]):
            mine = np.flatnonzero((a_thread.get_level_values(0) == pid) & (a_thread.get_level_values(1) == tid))
            if not len(mine):
                continue
            g = group.to_numpy()
            order = g[np.lexsort((-o_end[g], o_start[g]))]
            pos = _innermost(o_start[order], o_end[order], a_start[mine], a_end[mine])
            op_row[mine] = np.where(pos >= 0, o_rows[order[np.maximum(pos, 0)]], -1)
        out.loc[direct, "op_row"] = op_row
        names = markers["name"].astype(str).to_numpy()
        hit = op_row >= 0
        op_names[direct[hit]] = names[op_row[hit]]
    out["op"] = op_names
    return out


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
