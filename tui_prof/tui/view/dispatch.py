"""One dispatch and one gap as the drill-down screens show them (computed in workers).

:func:`dispatch_detail` scans the run's API table (the launching call by correlation id)
and counters table (this dispatch's values), so the screens call it off the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from tui_prof.analysis.api import DominantOp, dominant_op, nvidia_hint, nvidia_occupancy, occupancy, ops_overlapping
from tui_prof.render.fmt import fmt_at, fmt_bytes, fmt_ns, fmt_pct, fmt_value
from tui_prof.tui.view.runview import RunView


def dispatch_occupancy(view: RunView, row: pd.Series) -> dict | None:
    """analysis.occupancy.occupancy for one dispatch's resources on its agent's arch."""
    run = view.run_of(row)
    agent = run.agent(int(row["agent"]))
    if agent is None or not agent.arch or int(row["arch_vgpr"]) < 0 or int(row["wg_x"]) <= 0:
        return None
    wg = max(int(row["wg_x"]), 1) * max(int(row["wg_y"]), 1) * max(int(row["wg_z"]), 1)
    return occupancy(
        agent.arch,
        wg,
        int(row["arch_vgpr"]),
        max(int(row["accum_vgpr"]), 0),
        max(int(row["sgpr"]), 0),
        max(int(row["lds_bytes"]), 0),
        agent.wave_size or None,
        max(int(row["scratch_bytes"]), 0),
    )


# analysis.occupancy limiter names, short enough for the detail's two columns
SHORT_LIMIT = {"VGPR + AGPR": "V+AGPR", "waves per CU": "waves", "workgroup slots": "slots"}


def nvidia_agent(agent) -> bool:
    """An NVIDIA GPU (CUDA names: blocks, threads, shared memory)."""
    return agent is not None and "NVIDIA" in f"{agent.vendor or ''} {agent.product or ''}".upper()


def nvidia_run(view: RunView) -> bool:
    """Every GPU of the run is NVIDIA's (a CUDA run: its dispatch list in CUDA words)."""
    gpus = [a for run in view.runset.runs for a in run.gpu_agents]
    return bool(gpus) and all(nvidia_agent(a) for a in gpus)


def _dims(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> pd.Categorical:
    """``XxYxZ`` per row (``-`` where a dimension is not recorded), an ordered categorical
    whose order is the product, then x, y, z: the table sorts it by size, not by text.
    Only the distinct triples are formatted (a run has few shapes, many dispatches)."""
    triples = np.stack([x, y, z], axis=1).astype(np.int64)
    uniques, codes = np.unique(triples, axis=0, return_inverse=True)
    known = [bool(v) for v in np.all(uniques > 0, axis=1)]
    labels = ["x".join(str(v) for v in t) if ok else "-" for t, ok in zip(uniques.tolist(), known)]
    order = sorted(range(len(uniques)), key=lambda i: (bool(known[i]), int(np.prod(uniques[i])) if known[i] else 0, *uniques[i].tolist()))
    categories = list(dict.fromkeys(labels[i] for i in order))
    return pd.Categorical(labels, categories=categories, ordered=True)[codes.reshape(-1)]


def cuda_dispatch_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Dispatch rows with ``grid_blocks`` (the grid in blocks, as CUPTI records it: the
    model keeps work-items, grid / block per dimension) and ``block_dims``, both ``XxYxZ``."""
    grid = [rows[f"grid_{d}"].to_numpy() for d in "xyz"]
    block = [rows[f"wg_{d}"].to_numpy() for d in "xyz"]
    blocks = [np.where((g > 0) & (b > 0), g // np.where(b > 0, b, 1), -1) for g, b in zip(grid, block)]
    return rows.assign(grid_blocks=_dims(*blocks), block_dims=_dims(*block))


def _grid_pairs(r: pd.Series, agent) -> list[tuple[str, str]]:
    """The grid as the profiler recorded it: CUPTI (an NVIDIA agent) in blocks, beside the
    model's work-items (threads); ROCm profilers record work-items."""
    items = [int(r[c]) for c in ("grid_x", "grid_y", "grid_z")]
    wg = [int(r[c]) for c in ("wg_x", "wg_y", "wg_z")]
    threads = " × ".join(fmt_value(v, "int") for v in items)
    if nvidia_agent(agent) and all(v > 0 for v in items) and all(w > 0 for w in wg) and all(v % w == 0 for v, w in zip(items, wg)):
        blocks = "[" + ", ".join(str(v // w) for v, w in zip(items, wg)) + "]"
        return [("grid (blocks)", blocks), ("grid (threads)", threads)]
    return [("grid", threads)]


def _register_pairs(r: pd.Series, agent) -> list[tuple[str, str]]:
    """Registers as the profiler recorded them: CUPTI's registers per thread on NVIDIA,
    arch/accum VGPRs and SGPRs on AMD."""
    if nvidia_agent(agent):
        return [("registers / thread", fmt_value(r["arch_vgpr"], "int"))]
    return [
        ("arch / accum VGPR", f"{fmt_value(r['arch_vgpr'], 'int')} / {fmt_value(r['accum_vgpr'], 'int')}"),
        ("SGPR", fmt_value(r["sgpr"], "int")),
    ]


def dispatch_nvidia_occupancy(agent, r: pd.Series) -> dict | None:
    """analysis.occupancy.nvidia_occupancy of one NVIDIA dispatch from its block size,
    registers per thread and shared memory per block and the agent's deviceProperties;
    with the "hint" of :func:`~tui_prof.analysis.occupancy.nvidia_hint`."""
    props = agent.extra.get("device_properties") or {}
    threads = max(int(r["wg_x"]), 1) * max(int(r["wg_y"]), 1) * max(int(r["wg_z"]), 1)
    regs, smem = int(r["arch_vgpr"]), max(int(r["lds_bytes"]), 0)
    if int(r["wg_x"]) <= 0 or regs < 0:
        return None
    occ = nvidia_occupancy(props, threads, regs, smem)
    if occ is not None:
        occ["hint"] = nvidia_hint(occ, regs, smem, props)
    return occ


NVIDIA_SHORT = {"registers": "regs", "shared memory": "smem", "warps per SM": "warps", "blocks per SM": "blocks"}


def nvidia_occupancy_pairs(occ: dict | None) -> list[tuple[str, str]]:
    if occ is None:
        return [("occupancy", "unknown (deviceProperties, block size or registers per thread not recorded)")]
    return [
        ("warps per SM", f"{occ['warps_per_sm']} of {occ['max_warps_per_sm']} ({fmt_pct(occ['occupancy_pct'], sig=6)})"),
        ("occupancy limiter", f"{occ['limiter']} · {occ['blocks_per_sm']} blocks/SM"),
        ("limits (blocks/SM)", ", ".join(f"{NVIDIA_SHORT.get(x['limit'], x['limit'])} {x['blocks_per_sm']}" for x in occ["limiters"])),
    ]


def _field_pairs(r: pd.Series, agent) -> list[tuple[str, str]]:
    """The dispatch's recorded fields in the platform's words: CUDA's (device, stream, grid
    in blocks, block, shared memory, registers per thread; CUPTI records no queue, scratch
    or dispatch id) on NVIDIA, rocprofv3's (agent, queue, workgroup, LDS, scratch, VGPR,
    SGPR, dispatch id) on AMD."""
    # start to a tenth of its duration, as the dispatch list
    where = [("start", fmt_at(r["t"], max(float(r["dur"]) / 10, 1.0))), ("duration", fmt_ns(r["dur"]))]
    dims = " × ".join(fmt_value(r[c], "int") for c in ("wg_x", "wg_y", "wg_z"))
    pid = ("pid / tid", f"{fmt_value(r['pid'], 'int')} / {fmt_value(r['tid'], 'int')}")
    if nvidia_agent(agent):
        return [
            *where,
            ("device", f"{int(r['agent'])} {agent.product or ''}".strip()),
            ("stream", fmt_value(r["stream"], "int")),
            *_grid_pairs(r, agent),
            ("block", dims),
            ("shared memory / block", fmt_bytes(r["lds_bytes"])),
            *_register_pairs(r, agent),
            pid,
            ("correlation id", fmt_value(r["correlation_id"], "int")),
        ]
    return [
        *where,
        ("agent", f"{int(r['agent'])} {agent.arch if agent else ''}".strip()),
        ("queue / stream", f"{fmt_value(r['queue'], 'int')} / {fmt_value(r['stream'], 'int')}"),
        *_grid_pairs(r, agent),
        ("workgroup", dims),
        ("LDS / workgroup", fmt_bytes(r["lds_bytes"])),
        ("scratch / item", fmt_bytes(r["scratch_bytes"])),
        *_register_pairs(r, agent),
        pid,
        ("correlation / dispatch", f"{fmt_value(r['correlation_id'], 'int')} / {fmt_value(r['dispatch_id'], 'int')}"),
    ]


@dataclass
class DispatchDetail:
    """(label, value) pairs of one dispatch and its analysis.occupancy result (None when
    the arch, workgroup size or VGPRs are not recorded)."""

    pairs: list[tuple[str, str]] = field(default_factory=list)
    occupancy: dict | None = None


def dispatch_detail(view: RunView, row: pd.Series) -> DispatchDetail:
    """Fields, launching API call (needs the ``launches`` part), occupancy and counters of
    one dispatch (a row of ``view.kernels``)."""
    r = row
    run = view.run_of(r)
    agent = run.agent(int(r["agent"]))
    pairs = _field_pairs(r, agent)
    launches = view.launches
    if launches is not None and int(r["row"]) in launches.index:
        link = launches.loc[int(r["row"])]
        api = run.api
        names = api.loc[api["correlation_id"].to_numpy() == int(r["correlation_id"]), "name"].astype(str)
        pairs += [
            ("launched by", names.iloc[0] if len(names) else "?"),
            ("API start", fmt_ns(int(link["api_start"]) - view.origin)),
            ("API duration", fmt_ns(link["api_dur_ns"])),
            ("queue delay", fmt_ns(link["queue_delay_ns"]) + "  (kernel start − API start)"),
        ]
    else:
        pairs.append(("launching call", "not linked" if launches is not None else "not available yet"))
    occ = dispatch_occupancy(view, r)
    if nvidia_agent(agent):
        occ = dispatch_nvidia_occupancy(agent, r)
        pairs += nvidia_occupancy_pairs(occ)
    elif occ is not None:
        pairs += [
            ("waves per SIMD", f"{occ['waves_per_simd']:g} of {occ['max_waves_per_simd']} ({fmt_pct(occ['occupancy_pct'], sig=6)})"),
            ("occupancy limiter", f"{occ['limiter']} · {occ['workgroups_per_cu']} workgroups/CU"),
            ("limits (WG/CU)", ", ".join(f"{SHORT_LIMIT.get(x['limit'], x['limit'])} {x['workgroups_per_cu']}" for x in occ["limiters"])),
        ]
    else:
        pairs.append(("occupancy", "unknown (arch, workgroup size or VGPRs not recorded)"))
    counters = run.counters
    found = 0
    if len(counters) and int(r["dispatch_id"]) >= 0:
        mine = counters[counters["dispatch_id"].to_numpy() == int(r["dispatch_id"])]
        found = len(mine)
        for name, value in zip(mine["counter"].astype(str), mine["value"]):
            pairs.append((name, f"{value:.6g}"))
    if not found:
        pairs.append(("counters", "none recorded for this dispatch"))
    return DispatchDetail(pairs, occ)


def gap_calls(view: RunView, gap_index: int) -> pd.DataFrame:
    """Host API calls of the gap's run that overlap the gap widened by its own length on
    each side, with display columns t (relative ns) and dur."""
    gaps = view.gaps
    assert gaps is not None, "a gap index needs the gaps part"
    gap = gaps.iloc[gap_index]
    api = view.runset.runs[int(gap["run"])].api
    gs, ge = int(gap["start"]), int(gap["end"])
    margin = max(ge - gs, 1)
    m = (api["end"].to_numpy() >= gs - margin) & (api["start"].to_numpy() <= ge + margin)
    calls = api[m].copy()
    calls["t"] = calls["start"].to_numpy() - view.origin
    calls["dur"] = calls["end"].to_numpy() - calls["start"].to_numpy()
    return calls


def first_call_in_gap(calls: pd.DataFrame, view: RunView, gap_index: int) -> int:
    """Row position in ``calls`` (sorted by start) of the first call that ends inside or
    after the gap's start: where the gap's host-call list opens."""
    gaps = view.gaps
    assert gaps is not None  # a gap's index: the run has gaps
    gs = int(gaps.iloc[gap_index]["start"])
    ends = calls["end"].to_numpy()
    at = np.flatnonzero(ends >= gs)
    return int(at[0]) if at.size else 0


@dataclass
class GapHost:
    """The host side of a gap: API calls around it (``calls``, sorted by start; ``first``:
    the row of the first call reaching into the gap) and the host ops overlapping it
    (``ops``, analysis.hostops) with the dominant one."""

    calls: pd.DataFrame
    first: int
    ops: pd.DataFrame
    dominant: DominantOp | None


def gap_host(view: RunView, gap_index: int) -> GapHost:
    """API calls and host ops of gap ``gap_index`` (in a worker: it scans the run's API
    and markers tables)."""
    gaps = view.gaps
    assert gaps is not None, "a gap index needs the gaps part"
    gap = gaps.iloc[gap_index]
    calls = gap_calls(view, gap_index).sort_values("start", kind="stable").reset_index(drop=True)
    run = view.runset.runs[int(gap["run"])]
    ops = ops_overlapping(run.markers, int(gap["start"]), int(gap["end"]))
    ops = ops.assign(t=ops["start"].to_numpy() - view.origin, dur=ops["end"].to_numpy() - ops["start"].to_numpy())
    return GapHost(calls, first_call_in_gap(calls, view, gap_index), ops, dominant_op(ops))
