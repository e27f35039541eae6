"""A data-parallel step on two CUDA streams, with waits across streams known by construction.

:func:`build_xstream` turns an :class:`XStreamSpec` into one process (:class:`XStreamRun`):
gradient computation on a compute stream, an all-reduce per gradient bucket on a
communication stream that waits for its bucket's compute through a CUDA event, and an
optimizer kernel that waits for the last all-reduce through another event (PyTorch DDP's
shape). The program of its one host thread::

    for step in range(steps):
        for b in range(buckets):
            cudaLaunchKernel(compute kernel, stream COMPUTE)
            cudaEventRecord(ev_b, stream COMPUTE)
            cudaStreamWaitEvent(stream COMM, ev_b)
            cudaLaunchKernel(all-reduce kernel, stream COMM)      # waits for compute b
        cudaEventRecord(ev_c, stream COMM)
        cudaStreamWaitEvent(stream COMPUTE, ev_c)
        cudaLaunchKernel(optimizer kernel, stream COMPUTE)        # waits for the last all-reduce
        cudaDeviceSynchronize()

Timing (int64 ns, no jitter): every call lasts its ``*_ns`` and is followed by ``gap_ns`` of
host work; a kernel is ready ``dispatch_latency_ns`` after its launch call returns and starts
when it is ready, its stream is free and the kernel its event waits for has ended plus
``wake_ns``; cudaDeviceSynchronize returns ``sync_return_ns`` after the last kernel ends (at
the earliest ``sync_min_ns`` after it started). A run's ``span_ns`` is its first call's start
to its last call's end, so the saving of an edit is exactly ``span_ns`` of the run minus
``span_ns`` of the same spec with the edited durations (:meth:`XStreamSpec.edited`).

``links=True`` writes the trace's own event links as the Kineto loader keeps them
(``meta.extra["cuda_sync_links"]``: one per cudaStreamWaitEvent, as CUPTI's "Stream Wait
Event" records name them); ``links=False`` leaves only the runtime calls, as ROCm traces and
CUDA traces recorded without synchronisation events have them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from tui_prof.model import Agent, Run, RunMeta
from tui_prof.model.schema import make_table

COMPUTE_KERNEL = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
COMM_KERNEL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
OPT_KERNEL = "void at::native::multi_tensor_apply_kernel<at::native::FusedSgdMathFunctor<float, 2> >(int)"
COMPUTE_STREAM, COMM_STREAM = 7, 13
DEVICE = 0


@dataclass(frozen=True)
class XStreamSpec:
    """Parameters (ns) of the two-stream run (module docstring)."""

    steps: int = 3
    buckets: int = 4
    compute_ns: int = 100_000
    comm_ns: int = 60_000
    opt_ns: int = 30_000
    launch_ns: int = 5_000
    record_ns: int = 2_000
    wait_call_ns: int = 2_000
    gap_ns: int = 2_000
    dispatch_latency_ns: int = 3_000
    wake_ns: int = 1_000
    sync_return_ns: int = 4_000
    sync_min_ns: int = 1_000
    t0_ns: int = 1_700_000_000_000_000_000
    pid: int = 4343

    def __post_init__(self) -> None:
        if self.steps < 1 or self.buckets < 1:
            raise ValueError("steps and buckets must be >= 1")
        if min(self.compute_ns, self.comm_ns, self.opt_ns, self.launch_ns, self.sync_min_ns) <= 0:
            raise ValueError("durations must be > 0")

    def edited(self, **durations: int) -> XStreamSpec:
        """The same program with other kernel durations (the run an edit projects)."""
        return dataclasses.replace(self, **durations)


@dataclass
class XStreamRun:
    spec: XStreamSpec
    run: Run
    span_ns: int  # first call start -> last call end
    stream_waits: int  # cudaStreamWaitEvent calls (each a wait across streams)


def _program(spec: XStreamSpec) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """(calls (start, end, name, corr), kernels (start, end, name, stream, corr), links
    (wait corr, waiting stream, event stream, record corr)) of the run."""
    calls: list[tuple] = []
    kernels: list[tuple] = []
    links: list[tuple] = []
    t = spec.t0_ns
    free = {COMPUTE_STREAM: 0, COMM_STREAM: 0}

    def call(name: str, dur: int) -> tuple[int, int]:
        nonlocal t
        corr = len(calls) + 1
        calls.append((t, t + dur, name, corr))
        out = (t + dur, corr)
        t += dur + spec.gap_ns
        return out

    def kernel(name: str, stream: int, dur: int, after: int) -> int:
        ready, corr = call("cudaLaunchKernel", spec.launch_ns)
        start = max(ready + spec.dispatch_latency_ns, free[stream], after + spec.wake_ns if after else 0)
        kernels.append((start, start + dur, name, stream, corr))
        free[stream] = start + dur
        return start + dur

    def wait(waiting: int, event_stream: int) -> None:
        _, rec = call("cudaEventRecord", spec.record_ns)
        _, corr = call("cudaStreamWaitEvent", spec.wait_call_ns)
        links.append((corr, waiting, event_stream, rec))

    for _ in range(spec.steps):
        comm_end = 0
        for _b in range(spec.buckets):
            done = kernel(COMPUTE_KERNEL, COMPUTE_STREAM, spec.compute_ns, 0)
            wait(COMM_STREAM, COMPUTE_STREAM)
            comm_end = kernel(COMM_KERNEL, COMM_STREAM, spec.comm_ns, done)
        wait(COMPUTE_STREAM, COMM_STREAM)
        last = kernel(OPT_KERNEL, COMPUTE_STREAM, spec.opt_ns, comm_end)
        s = t
        e = max(s + spec.sync_min_ns, last + spec.sync_return_ns)
        calls.append((s, e, "cudaDeviceSynchronize", len(calls) + 1))
        t = e + spec.gap_ns
    return calls, kernels, links


def build_xstream(spec: XStreamSpec, *, links: bool = True) -> XStreamRun:
    """The run of ``spec`` as a loaded Kineto trace would hold it (module docstring)."""
    calls, kernels, waits = _program(spec)
    api = make_table(
        "api",
        {
            "start": np.array([c[0] for c in calls], np.int64),
            "end": np.array([c[1] for c in calls], np.int64),
            "domain": "cuda",
            "name": pd.Categorical([c[2] for c in calls]),
            "pid": spec.pid,
            "tid": spec.pid,
            "correlation_id": np.array([c[3] for c in calls], np.int64),
        },
    )
    k = sorted(kernels)
    names = [x[2] for x in k]
    table = make_table(
        "kernels",
        {
            "start": np.array([x[0] for x in k], np.int64),
            "end": np.array([x[1] for x in k], np.int64),
            "agent": DEVICE,
            "queue": np.array([x[3] for x in k], np.int64),
            "stream": np.array([x[3] for x in k], np.int64),
            "pid": spec.pid,
            "tid": spec.pid,
            "correlation_id": np.array([x[4] for x in k], np.int64),
            "dispatch_id": np.arange(1, len(k) + 1, dtype=np.int64),
            "kernel_id": np.unique(names, return_inverse=True)[1].astype(np.int64) + 1,
            "name": pd.Categorical(names),
            "grid_x": 132 * 256,
            "grid_y": 1,
            "grid_z": 1,
            "wg_x": 256,
            "wg_y": 1,
            "wg_z": 1,
            "lds_bytes": 0,
            "scratch_bytes": 0,
            "arch_vgpr": 64,
            "accum_vgpr": 0,
            "sgpr": 0,
        },
    )
    meta = RunMeta(formats=["synthetic"], tool="synth", hostname="synthhost", pid=spec.pid, label="xstream")
    if links:
        meta.extra["cuda_sync_links"] = {
            "correlation": [w[0] for w in waits],
            "device": [DEVICE] * len(waits),
            "stream": [w[1] for w in waits],
            "wait_on_stream": [w[2] for w in waits],
            "record_correlation": [w[3] for w in waits],
        }
    agents = [Agent(id=DEVICE, type="GPU", name="NVIDIA H200", node_id=DEVICE)]
    run = Run(meta=meta, agents=agents, kernels=table, api=api)
    return XStreamRun(spec, run, calls[-1][1] - calls[0][0], len(waits))
