"""Which GPU platform a run was recorded on, and the words findings use for it.

A fix is only useful when it names what exists on the user's platform: CUDA graphs,
``cudaStreamSynchronize``, ``ncu``/``nsys`` on NVIDIA; HIP graphs, ``hipDeviceSynchronize``,
``rocprofv3 --pmc`` on AMD. On a PyTorch trace the PyTorch-level fix comes first
(``torch.compile(mode="reduce-overhead")``, ``pin_memory()`` + ``non_blocking=True``),
since that is the code the user writes.

Detection (:func:`detect_platform`), first evidence wins per run:

1. the loader's own answer (Kineto: ``meta.extra["platform"]`` = ``"cuda"``/``"rocm"``,
   from the runtime version keys and deviceProperties);
2. the GPU agents: a ``gfx*`` arch or vendor AMD -> AMD; vendor/product NVIDIA -> NVIDIA;
3. the runtime API names: ``hip*`` -> AMD, ``cuda*``/``cu*`` -> NVIDIA;
4. the format: rocprofv3 / rocpd / rocprof / pftrace from rocprofv3 only exist on AMD.

A run set whose runs disagree is ``"mixed"``; none with evidence is ``"unknown"``. Both
get vendor-neutral wording that names neither vendor's tools.
"""

from __future__ import annotations

from typing import TypedDict

import pandas as pd

from tui_prof.analysis.sections import PlatformSection
from tui_prof.model import Run, RunSet

NVIDIA, AMD, MIXED, UNKNOWN = "nvidia", "amd", "mixed", "unknown"
AMD_FORMATS = ("rocprof", "rocpd", "pftrace", "rocm-smi")  # rocprof covers rocprof-v1, rocprofv2, rocprofv3-*


class Phrases(TypedDict):
    graphs: str  # the graph API that batches launches
    sync_calls: str  # the synchronisation calls to move out of loops
    wait_event: str  # cross-stream dependency without a host wait
    async_copy: str  # an asynchronous copy call
    pinned_alloc: str  # how to allocate pinned host memory
    counters_tool: str  # what collects hardware counters


PHRASES: dict[str, Phrases] = {
    NVIDIA: {
        "graphs": "CUDA graphs",
        "sync_calls": "cudaDeviceSynchronize/cudaStreamSynchronize",
        "wait_event": "cudaStreamWaitEvent",
        "async_copy": "cudaMemcpyAsync",
        "pinned_alloc": "cudaHostAlloc/cudaMallocHost",
        "counters_tool": "Nsight Compute (ncu) or Nsight Systems (nsys)",
    },
    AMD: {
        "graphs": "HIP graphs",
        "sync_calls": "hipDeviceSynchronize/hipStreamSynchronize",
        "wait_event": "hipStreamWaitEvent",
        "async_copy": "hipMemcpyAsync",
        "pinned_alloc": "hipHostMalloc",
        "counters_tool": "rocprofv3 --pmc",
    },
    UNKNOWN: {
        "graphs": "GPU graphs (capture the loop once, replay it)",
        "sync_calls": "device/stream synchronisation calls",
        "wait_event": "stream events",
        "async_copy": "asynchronous copies",
        "pinned_alloc": "pinned (page-locked) host memory",
        "counters_tool": "the vendor's counter profiler",
    },
}

# The PyTorch-level fix, said first on PyTorch traces. torch.cuda is PyTorch's device
# namespace on ROCm too, so "torch.cuda.graph" is the right call on AMD as well.
TORCH_PHRASES = {
    "graphs": 'torch.compile(mode="reduce-overhead") or torch.cuda.graph capture',
    "fuse": "torch.compile",
    "pinned_copy": "tensor.pin_memory() and .to(device, non_blocking=True)",
    "sync": "avoid .item()/.cpu()/.tolist() and torch.cuda.synchronize() inside the step",
}


def _run_vendor(run: Run) -> tuple[str, str]:
    """(vendor, evidence) of one run, or (UNKNOWN, "") when nothing tells."""
    platform = str(run.meta.extra.get("platform", "")).lower()
    if platform in ("cuda", "rocm"):
        return (NVIDIA if platform == "cuda" else AMD), f"{run.meta.tool or 'loader'} platform {platform}"
    for agent in run.gpu_agents:
        vendor = (agent.vendor or "").upper()
        if agent.arch.startswith("gfx") or vendor.startswith("AMD") or "AMD" in (agent.product or ""):
            return AMD, f"GPU agent {agent.arch or agent.product}"
        if vendor.startswith("NVIDIA") or (agent.product or "").startswith("NVIDIA"):
            return NVIDIA, f"GPU agent {agent.product}"
    if len(run.api):
        names = run.api["name"]
        cats = names.cat.categories if isinstance(names.dtype, pd.CategoricalDtype) else pd.unique(names.astype(str))
        hip = any(str(c).startswith("hip") for c in cats)
        cuda = any(str(c).startswith("cu") for c in cats)
        if hip != cuda:
            return (AMD, "hip* runtime calls") if hip else (NVIDIA, "cuda* runtime calls")
    for fmt in run.meta.formats:
        if fmt.lower().startswith(AMD_FORMATS):
            return AMD, f"{fmt} files (a ROCm profiler)"
    return UNKNOWN, ""


def run_vendor(run: Run) -> tuple[str, str]:
    """(vendor, evidence) of one run, or (UNKNOWN, "") when nothing tells."""
    return _run_vendor(run)


def detect_platform(runset: RunSet) -> PlatformSection:
    """The run set's platform (module docstring) and whether it is a PyTorch trace."""
    found = [_run_vendor(run) for run in runset.runs]
    vendors = {v for v, _ in found if v != UNKNOWN}
    if len(vendors) == 1:
        vendor = vendors.pop()
        evidence = next(e for v, e in found if v == vendor)
    elif vendors:
        vendor, evidence = MIXED, "runs of both vendors"
    else:
        vendor, evidence = UNKNOWN, "no runtime, agent or format evidence"
    with_kernels = [run for run in runset.runs if len(run.kernels)]
    pytorch = bool(with_kernels) and all(run.meta.tool == "pytorch-profiler" for run in with_kernels)
    return {"vendor": vendor, "pytorch": pytorch, "evidence": evidence}


def phrases(vendor: str) -> Phrases:
    """The wording for ``vendor``; mixed and unknown get the vendor-neutral words."""
    return PHRASES.get(vendor, PHRASES[UNKNOWN])


def torch_first(platform: PlatformSection | None, torch_fix: str, platform_fix: str) -> str:
    """``platform_fix``, preceded by ``torch_fix`` on a PyTorch trace."""
    if platform and platform.get("pytorch"):
        return f"In PyTorch: {torch_fix}. Otherwise: {platform_fix}"
    return platform_fix


class CollectivePhrases(TypedDict):
    library: str  # the collective library the kernels come from
    overlap: str  # how to overlap collectives with compute
    bucketing: str  # gradient bucketing: fewer, larger collectives
    topology: str  # how to see the GPU interconnect the collectives use


# The words of the communication advice (a collective kernel dominating kernel time).
COLLECTIVE_PHRASES: dict[str, CollectivePhrases] = {
    NVIDIA: {
        "library": "NCCL",
        "overlap": "overlap the collectives with compute (DDP/FSDP overlap each gradient bucket's all-reduce with the backward pass; a separate CUDA stream)",
        "bucketing": "bucket gradients into fewer, larger collectives (DDP bucket_cap_mb)",
        "topology": "check the topology the rings use (nvidia-smi topo -m; NCCL_DEBUG=INFO prints the rings: NVLink or PCIe)",
    },
    AMD: {
        "library": "RCCL",
        "overlap": "overlap the collectives with compute (DDP/FSDP overlap each gradient bucket's all-reduce with the backward pass; a separate HIP stream)",
        "bucketing": "bucket gradients into fewer, larger collectives (DDP bucket_cap_mb)",
        "topology": "check the topology the rings use (rocm-smi --showtopo; NCCL_DEBUG=INFO, which RCCL reads, prints the rings: xGMI or PCIe)",
    },
    UNKNOWN: {
        "library": "the collective library",
        "overlap": "overlap the collectives with compute (DDP/FSDP overlap each gradient bucket's all-reduce with the backward pass; a separate stream)",
        "bucketing": "bucket gradients into fewer, larger collectives (DDP bucket_cap_mb)",
        "topology": "check the GPU interconnect topology the collectives run over (the library's debug output prints its rings)",
    },
}


def collective_phrases(vendor: str) -> CollectivePhrases:
    """The communication advice's words for ``vendor``; mixed and unknown get neutral words."""
    return COLLECTIVE_PHRASES.get(vendor, COLLECTIVE_PHRASES[UNKNOWN])
