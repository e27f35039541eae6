"""Small in-memory runs for tests, screenshots and demos (built by tui_prof.synth)."""

from __future__ import annotations

import dataclasses

import numpy as np

from tui_prof.model import LoadIssue, Run, RunMeta, RunSet, make_table


def synthetic_counters(kernels, seed: int = 0):
    """A counters table for ``kernels``: GRBM_COUNT = duration in cycles at 2.1 GHz,
    GRBM_GUI_ACTIVE = a per-kernel-name busy share (30 % for names with "reduce", else
    90 %), SQ_WAVES = grid size / 64. Values are set, not measured: tests recompute the
    derived metrics with analysis.counters and compare with what the TUI shows."""
    rng = np.random.default_rng(seed)
    n = len(kernels)
    cycles = np.round((kernels["end"].to_numpy() - kernels["start"].to_numpy()) * 2.1)
    share = np.where(kernels["name"].astype(str).str.contains("reduce").to_numpy(), 0.3, 0.9) + rng.uniform(-0.02, 0.02, n)
    waves = kernels["grid_x"].to_numpy() * np.maximum(kernels["grid_y"].to_numpy(), 1) // 64
    ids = kernels["dispatch_id"].to_numpy()
    values = {"GRBM_COUNT": cycles, "GRBM_GUI_ACTIVE": np.round(cycles * share), "SQ_WAVES": waves.astype(float)}
    return make_table(
        "counters",
        {
            "dispatch_id": np.tile(ids, len(values)),
            "correlation_id": np.tile(kernels["correlation_id"].to_numpy(), len(values)),
            "agent": np.tile(kernels["agent"].to_numpy(), len(values)),
            "counter": np.repeat(list(values), n),
            "value": np.concatenate(list(values.values())),
        },
    )


def synthetic_runset(sync: str = "per_launch", iterations: int = 20, streams: int = 1, issues: bool = False, counters: bool = False, arch: str | None = None):
    """(RunSet, SynthRun): a synthetic run whose answers are known by construction.

    ``counters``: add :func:`synthetic_counters`; ``arch``: rename the GPU agents to this
    gfx target (e.g. "gfx1151", to show that arch's capability notes)."""
    from tui_prof.synth import SynthSpec, build

    synth = build(SynthSpec(iterations=iterations, kernels_per_iteration=5, sync=sync, streams=streams))
    meta = RunMeta(formats=["synthetic"], tool="synth", label="synthhost/4242", hostname="synthhost", pid=4242)
    agents = synth.agents
    if arch:
        agents = [dataclasses.replace(a, name=arch, gfx_target_version=None) if a.type == "GPU" else a for a in agents]
    run = Run(meta=meta, agents=agents, kernels=synth.kernels, api=synth.api, copies=synth.copies)
    if counters:
        run.counters = synthetic_counters(synth.kernels)
    runset = RunSet(root=f"synthetic_sync_{sync}", runs=[run])
    if issues:
        runset.issues.append(LoadIssue("broken_kernel_trace.csv", "line 3: expected 18 columns, found 2"))
    return runset, synth
