"""Seed file sets for the fuzzer, one or more per loader, built from the real samples in
``tests/data`` (the pftrace seed is the synthetic ``tests/data/pftrace`` sample: no real
.pftrace is public). A seed is a small run directory: ``files`` (relative name -> bytes)
and ``targets``, the names a mutation may hit; the other files are the siblings that must
keep loading.

The rocprofv3 JSON sample (1.6 MB gzipped, 43,915 dispatches) is trimmed to its first 40
dispatches and the kernel symbols they use, so one load takes milliseconds; the trimmed
file is still the profiler's own records, byte-for-byte values.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"


@dataclass(frozen=True)
class Seed:
    loader: str  # loader module name (tui_prof.loaders.<loader>)
    name: str
    files: dict = field(hash=False)  # relative path -> bytes
    targets: tuple[str, ...] = ()  # files a mutation may hit (default: all)

    def mutable(self) -> tuple[str, ...]:
        return self.targets or tuple(sorted(self.files))


def _read(*parts: str) -> bytes:
    return (DATA.joinpath(*parts)).read_bytes()


def _dir(loader: str, name: str, subdir: str, names: list[str] | None = None, targets=()) -> Seed:
    root = DATA / subdir
    chosen = names or sorted(p.name for p in root.iterdir() if p.is_file() and p.name != "PROVENANCE.md")
    return Seed(loader, name, {n: (root / n).read_bytes() for n in chosen}, tuple(targets))


def trimmed_rocprofv3_json(keep: int = 40) -> bytes:
    """The real 908_results.json with only its first ``keep`` dispatches (see module doc)."""
    data = json.loads(gzip.decompress(_read("rocprofv3_json", "908_results.json.gz")))
    for proc in data["rocprofiler-sdk-tool"]:
        records = proc["buffer_records"]["kernel_dispatch"][:keep]
        proc["buffer_records"]["kernel_dispatch"] = records
        used = {r["dispatch_info"]["kernel_id"] for r in records}
        proc["kernel_symbols"] = [s for s in proc["kernel_symbols"] if s.get("kernel_id") in used]
    return json.dumps(data).encode()


@cache
def all_seeds() -> dict[str, list[Seed]]:
    """loader module name -> its seeds."""
    small_json = trimmed_rocprofv3_json()
    return {
        "rocpd": [Seed("rocpd", "28_results.db", {"28_results.db": _read("rocpd", "28_results.db")})],
        "rocprofv3_json": [
            Seed("rocprofv3_json", "908_results.json (trimmed)", {"908_results.json": small_json}),
            Seed("rocprofv3_json", "908_results.json.gz (trimmed)", {"908_results.json.gz": gzip.compress(small_json, 6, mtime=0)}),
        ],
        "rocprofv3_csv": [
            _dir(
                "rocprofv3_csv",
                "rocm6.3 docs",
                "rocprofv3_csv/rocprofv3-docs-rocm6.3",
                ["kernel_trace.csv", "memory_copy_trace.csv", "hip_api_stats.csv", "hip_runtime_trace.csv", "counter_collection.csv"],
            ),
            _dir(
                "rocprofv3_csv",
                "rocm7 docs",
                "rocprofv3_csv/rocprofv3-docs-rocm7",
                ["kernel_trace.csv", "238_agent_info.csv", "marker_api_trace.csv", "memory_allocation_trace.csv", "scratch_memory_trace.csv"],
            ),
            _dir("rocprofv3_csv", "hpctraining omp", "rocprofv3_csv/hpctraining-extracted", ["omp_kernel_trace_head.csv", "omp_agent_info.csv"]),
        ],
        "legacy_rocprof": [
            _dir("legacy_rocprof", "hip-programming", "legacy_rocprof/hip-programming"),
            _dir(
                "legacy_rocprof",
                "rocm-blogs HSA",
                "legacy_rocprof/rocm-blogs",
                ["HSA_trace_results.csv", "HSA_trace_results.stats.csv", "HSA_trace_results.hsa_stats.csv", "HSA_trace_results.copy_stats.csv"],
            ),
            _dir(
                "legacy_rocprof",
                "rocm-blogs HIP json",
                "legacy_rocprof/rocm-blogs",
                ["HIP_trace_results.json", "HIP_trace_results.hip_stats.csv", "HIP_trace_results.stats.csv"],
            ),
        ],
        "rocprofv2": [
            _dir("rocprofv2", "saltfish", "rocprofv2/saltfish"),
            _dir("rocprofv2", "golden", "rocprofv2/golden"),
        ],
        "kineto": [
            Seed("kineto", name, {name: _read("kineto", name)})
            for name in (
                "triton_example__triton_example.json.gz",
                "critical_path__cuda_event_sync__event_sync_trace.json.gz",
                "torch_compile_triton__trace.json.gz",
            )
        ],
        "pftrace": [Seed("pftrace", "synth_small.pftrace", {"synth_small.pftrace": _read("pftrace", "synth_small.pftrace")})],
        "smi_csv": [_dir("smi_csv", "madengine sampler", "smi")],
    }


LOADERS = ("rocpd", "rocprofv3_json", "rocprofv3_csv", "legacy_rocprof", "rocprofv2", "kineto", "pftrace", "smi_csv")
