"""The loader registry as data: each format's :class:`~tui_prof.loaders.base.LoaderSpec`,
by loader module, in sniffing order (``tui_prof.loaders.LOADER_MODULES``).

Kept apart from the loader modules so that the loading machinery (``detect``) knows every
format without importing its loader: a reopen whose files all come from the cache imports
no loader module at all. Each loader module takes its own entry as ``LOADER``.
"""

from __future__ import annotations

from tui_prof.loaders.base import LoaderSpec

SPECS: dict[str, LoaderSpec] = {
    "rocpd": LoaderSpec(format="rocpd", file_names=r"results|rocpd", priority=0, parallel=True, kinds=("rocpd_db",)),
    "rocprof_compute_db": LoaderSpec(format="rocprof-compute-db", file_names=r"rocprof_compute", per_file=True, kinds=("compute_db",)),
    "rocprofv3_json": LoaderSpec(format="rocprofv3-json", file_names=r"results", priority=1, kinds=("results_json",)),
    "pftrace": LoaderSpec(format="pftrace", file_names=r"\.pftrace", priority=3, per_file=True, kinds=("trace",)),
    "kineto": LoaderSpec(format="kineto", file_names=r"pt\.trace|kineto", priority=4, per_file=True, kinds=("trace",)),
    "legacy_rocprof": LoaderSpec(
        format="rocprof-v1",
        file_names=r"results",
        kinds=("trace_db", "trace_json", "sysinfo", "kernel_csv", "hip_api_stats", "hsa_api_stats", "memory_copy_stats", "kernel_stats"),
    ),
    "rocprofv3_csv": LoaderSpec(
        format="rocprofv3-csv",
        file_names=r"_(kernel|hip_api|hsa_api|marker_api|rccl_api|memory_copy|memory_allocation|scratch_memory)_trace"
        r"|counter_collection|agent_info|_stats",
        priority=2,
        parallel=True,
        kinds=(
            "kernel_trace",
            "*_api_trace",
            "memory_copy_trace",
            "memory_allocation_trace",
            "scratch_memory_trace",
            "counter_collection",
            "agent_info",
            "pc_sampling_*",
            "*stats*",
        ),
        batch_kinds=(("kernel_trace",), ("agent_info", "kernel_trace")),  # a process's small kernel trace (loaders/csv_batch.py)
        batch_max_bytes=64 * 1024,
    ),
    "rocprof_compute": LoaderSpec(
        format="rocprof-compute",
        file_names=r"pmc_perf|pmc_kernel_top|pmc_dispatch_info",
        parallel=True,
        kinds=("pmc_wide", "pmc_long", "timestamps", "dispatch_info", "sysinfo", "roofline", "kernel_top"),
    ),
    "rocprofv2": LoaderSpec(
        format="rocprofv2",
        file_names=r"results",
        kinds=("kernel_trace", "api_trace", "roctx_trace", "hip_ops_trace", "hsa_ops_trace", "cli_stdout"),
    ),
    "smi_csv": LoaderSpec(format="rocm-smi-csv", kinds=("samples",)),
    "rocprofv3_summary": LoaderSpec(
        format="rocprofv3-summary",
        file_names=r"(^|_)summary\.txt$",  # --summary-output-file; stdout captures have any name
        per_file=True,
        kinds=("summary",),
    ),
}
