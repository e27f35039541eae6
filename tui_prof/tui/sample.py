"""Small in-memory runs for tests, screenshots and demos (built by tui_prof.synth)."""

from __future__ import annotations

from tui_prof.model import LoadIssue, Run, RunMeta, RunSet


def synthetic_runset(sync: str = "per_launch", iterations: int = 20, streams: int = 1, issues: bool = False):
    """(RunSet, SynthRun): a synthetic run whose answers are known by construction."""
    from tui_prof.synth import SynthSpec, build

    synth = build(SynthSpec(iterations=iterations, kernels_per_iteration=5, sync=sync, streams=streams))
    meta = RunMeta(formats=["synthetic"], tool="synth", label="synthhost/4242", hostname="synthhost", pid=4242)
    run = Run(meta=meta, agents=synth.agents, kernels=synth.kernels, api=synth.api, copies=synth.copies)
    runset = RunSet(root=f"synthetic_sync_{sync}", runs=[run])
    if issues:
        runset.issues.append(LoadIssue("broken_kernel_trace.csv", "line 3: expected 18 columns, found 2"))
    return runset, synth
