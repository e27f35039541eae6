"""Write a :class:`~tui_prof.synth.spec.SynthRun` as rocprofv3 (ROCm 7.x) CSV files.

Layout and formatting follow formats.md §1-2 (rocprofiler-sdk ``generateCSV.cpp`` /
``csv.hpp``): files ``<dir>/<hostname>/<pid>_<name>.csv``; header quoted; string values
quoted, numbers bare; agent ids written ``"Agent <logical_node_id>"`` (7.x default
``--agent-index relative``); 22-column kernel_trace. Stats files: rows sorted by total
duration descending, ``Percentage`` of the domain total with 2 decimals, ``StdDev`` the
sample standard deviation (n-1), floats >= 1 as fixed with 6 decimals and floats < 1 in
scientific notation with 8 digits (``0.00000000e+00``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv

from tui_prof.model.run import Agent
from tui_prof.synth.spec import SynthRun

KERNEL_TRACE_COLUMNS = (
    "Kind",
    "Agent_Id",
    "Queue_Id",
    "Stream_Id",
    "Thread_Id",
    "Dispatch_Id",
    "Kernel_Id",
    "Kernel_Name",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
    "LDS_Block_Size",
    "Scratch_Size",
    "VGPR_Count",
    "Accum_VGPR_Count",
    "SGPR_Count",
    "Workgroup_Size_X",
    "Workgroup_Size_Y",
    "Workgroup_Size_Z",
    "Grid_Size_X",
    "Grid_Size_Y",
    "Grid_Size_Z",
)
API_TRACE_COLUMNS = (
    "Domain",
    "Function",
    "Process_Id",
    "Thread_Id",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
)
MEMORY_COPY_COLUMNS = (
    "Kind",
    "Direction",
    "Stream_Id",
    "Source_Agent_Id",
    "Destination_Agent_Id",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
)
STATS_COLUMNS = ("Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage", "MinNs", "MaxNs", "StdDev")
AGENT_INFO_COLUMNS = (
    "Node_Id",
    "Logical_Node_Id",
    "Agent_Type",
    "Cpu_Cores_Count",
    "Simd_Count",
    "Cpu_Core_Id_Base",
    "Simd_Id_Base",
    "Max_Waves_Per_Simd",
    "Lds_Size_In_Kb",
    "Gds_Size_In_Kb",
    "Num_Gws",
    "Wave_Front_Size",
    "Num_Xcc",
    "Cu_Count",
    "Array_Count",
    "Num_Shader_Banks",
    "Simd_Arrays_Per_Engine",
    "Cu_Per_Simd_Array",
    "Simd_Per_Cu",
    "Max_Slots_Scratch_Cu",
    "Gfx_Target_Version",
    "Vendor_Id",
    "Device_Id",
    "Location_Id",
    "Domain",
    "Drm_Render_Minor",
    "Num_Sdma_Engines",
    "Num_Sdma_Xgmi_Engines",
    "Num_Sdma_Queues_Per_Engine",
    "Num_Cp_Queues",
    "Max_Engine_Clk_Ccompute",
    "Max_Engine_Clk_Fcompute",
    "Sdma_Fw_Version",
    "Fw_Version",
    "Capability",
    "Cu_Per_Engine",
    "Max_Waves_Per_Cu",
    "Family_Id",
    "Workgroup_Max_Size",
    "Grid_Max_Size",
    "Local_Mem_Size",
    "Hive_Id",
    "Gpu_Id",
    "Workgroup_Max_Dim_X",
    "Workgroup_Max_Dim_Y",
    "Workgroup_Max_Dim_Z",
    "Grid_Max_Dim_X",
    "Grid_Max_Dim_Y",
    "Grid_Max_Dim_Z",
    "Name",
    "Vendor_Name",
    "Product_Name",
    "Model_Name",
)
_AGENT_STRING_FIELDS = {"Agent_Type", "Name", "Vendor_Name", "Product_Name", "Model_Name"}

# rocprofv3 has no peer label: a copy between two GPUs is DEVICE_TO_DEVICE, its agents tell them apart.
COPY_DIRECTION_LABEL = {
    "HtoD": "MEMORY_COPY_HOST_TO_DEVICE",
    "DtoH": "MEMORY_COPY_DEVICE_TO_HOST",
    "DtoD": "MEMORY_COPY_DEVICE_TO_DEVICE",
    "PtoP": "MEMORY_COPY_DEVICE_TO_DEVICE",
    "HtoH": "MEMORY_COPY_HOST_TO_HOST",
}


def agent_record(agent: Agent) -> dict:
    """KFD-style properties of a synthetic agent, keyed by lower-case agent_info field name.

    Values for the MI300X GPU are those of a real MI300X (rocpd sample
    ``rocpd-batched-gemm/28_results.db``, ``rocpd_info_agent.extdata``); packed firmware
    and capability words are written as integers as rocprofv3's CSV does.
    """
    rec: dict[str, object] = {c.lower(): 0 for c in AGENT_INFO_COLUMNS}
    rec.update(
        node_id=agent.node_id, logical_node_id=agent.logical_index, agent_type=agent.type, name=agent.name, product_name=agent.product, vendor_name=agent.vendor
    )
    if agent.type == "CPU":
        cores = agent.extra.get("cpu_cores_count", agent.cu_count or 0)
        rec.update(cpu_cores_count=cores, cu_count=cores, num_xcc=1, max_engine_clk_ccompute=3800, family_id=6, model_name="")
        return rec
    rec.update(
        simd_count=agent.simd_count,
        simd_id_base=2147487744,
        max_waves_per_simd=agent.max_waves_per_simd,
        lds_size_in_kb=(agent.lds_bytes_per_cu or 0) // 1024,
        num_gws=64,
        wave_front_size=agent.wave_size,
        num_xcc=agent.num_xcc,
        cu_count=agent.cu_count,
        array_count=32,
        num_shader_banks=32,
        simd_arrays_per_engine=1,
        cu_per_simd_array=10,
        simd_per_cu=agent.simd_per_cu,
        max_slots_scratch_cu=32,
        gfx_target_version=agent.gfx_target_version,
        vendor_id=4098,
        device_id=agent.extra.get("device_id", 0),
        location_id=3072 + 256 * (agent.type_index or 0),
        drm_render_minor=128 + 8 * (agent.type_index or 0),
        num_sdma_engines=2,
        num_sdma_xgmi_engines=14,
        num_sdma_queues_per_engine=8,
        num_cp_queues=24,
        max_engine_clk_ccompute=3800,
        max_engine_clk_fcompute=agent.max_clock_mhz,
        sdma_fw_version=24,
        fw_version=185,
        capability=1013424768,
        cu_per_engine=9,
        max_waves_per_cu=agent.max_waves_per_cu,
        family_id=agent.extra.get("family_id", 141),
        workgroup_max_size=agent.workgroup_max_size,
        grid_max_size=4294967295,
        hive_id=16755515690413798653,
        gpu_id=9845 + 1000 * (agent.type_index or 0),
        workgroup_max_dim_x=1024,
        workgroup_max_dim_y=1024,
        workgroup_max_dim_z=1024,
        grid_max_dim_x=4294967295,
        grid_max_dim_y=4294967295,
        grid_max_dim_z=4294967295,
        model_name=agent.extra.get("model_name", ""),
    )
    return rec


def format_float(values) -> list[str]:
    """rocprofv3 float text: fixed 6 decimals when >= 1, else scientific with 8 digits."""
    return [f"{v:.6f}" if v >= 1.0 else f"{v:.8e}" for v in np.asarray(values, dtype=np.float64)]


def compute_stats(names, durations) -> pd.DataFrame:
    """Per-name statistics as rocprofv3 writes them (``*_stats.csv``), numeric columns.

    Returns columns Name, Calls, TotalDurationNs, AverageNs, Percentage, MinNs, MaxNs,
    StdDev; sorted by TotalDurationNs descending; Percentage = 100 * total / domain
    total; StdDev = sample standard deviation (ddof 1; 0 for a single call).
    """
    frame = pd.DataFrame({"name": pd.Series(names).astype(str).to_numpy(), "dur": np.asarray(durations, dtype=np.int64)})
    grouped = frame.groupby("name", sort=False)["dur"]
    stats = pd.DataFrame(
        {
            "Calls": grouped.size().astype(np.int64),
            "TotalDurationNs": grouped.sum().astype(np.int64),
            "MinNs": grouped.min().astype(np.int64),
            "MaxNs": grouped.max().astype(np.int64),
            "StdDev": grouped.std(ddof=1).fillna(0.0),
        }
    )
    stats["AverageNs"] = stats["TotalDurationNs"] / stats["Calls"]
    total = int(stats["TotalDurationNs"].sum())
    stats["Percentage"] = stats["TotalDurationNs"] * 100.0 / total if total else 0.0
    stats = stats.rename_axis("Name").reset_index()
    stats = stats.sort_values("TotalDurationNs", ascending=False, kind="stable").reset_index(drop=True)
    return stats[list(STATS_COLUMNS)]


def _stats_text(stats: pd.DataFrame) -> str:
    lines = [",".join(f'"{c}"' for c in STATS_COLUMNS)]
    for row, avg, std in zip(stats.itertuples(index=False), format_float(stats["AverageNs"]), format_float(stats["StdDev"])):
        lines.append(f'"{row.Name}",{row.Calls},{row.TotalDurationNs},{avg},{row.Percentage:.2f},{row.MinNs},{row.MaxNs},{std}')
    return "\n".join(lines) + "\n"


def _write_table(path: Path, header: tuple[str, ...], columns: dict) -> None:
    """Write columns (numpy int arrays or string arrays/categoricals) with rocprofv3 quoting."""
    arrays = []
    for name in header:
        values = columns[name]
        if isinstance(values, pd.Series) and isinstance(values.dtype, pd.CategoricalDtype):
            arrays.append(
                pa.DictionaryArray.from_arrays(
                    pa.array(values.cat.codes.to_numpy(), pa.int32()), pa.array(values.cat.categories.astype(str).tolist(), pa.string())
                )
            )
        elif isinstance(values, pd.Series):
            arrays.append(pa.array(values.to_numpy()))
        else:
            arrays.append(pa.array(values))
    table = pa.Table.from_arrays(arrays, names=list(header))
    with open(path, "wb") as out:
        out.write((",".join(f'"{c}"' for c in header) + "\n").encode())
        if len(table):
            pacsv.write_csv(table, out, pacsv.WriteOptions(include_header=False, quoting_style="needed", batch_size=1 << 16))


def _agent_labels(ids: np.ndarray, agents: list[Agent]) -> pd.Series:
    """Agent.id array -> categorical ``"Agent <logical_index>"`` strings."""
    by_id = {a.id: a.logical_index for a in agents}
    uniq, codes = np.unique(ids, return_inverse=True)
    return pd.Series(pd.Categorical.from_codes(codes, categories=[f"Agent {by_id[int(u)]}" for u in uniq]))


MARKER_TRACE_COLUMNS = ("Domain", "Function", "Process_Id", "Thread_Id", "Correlation_Id", "Start_Timestamp", "End_Timestamp")
ALLOCATION_TRACE_COLUMNS = ("Kind", "Operation", "Agent_Id", "Allocation_Size", "Address", "Correlation_Id", "Start_Timestamp", "End_Timestamp")


def _write_markers_and_allocations(run: SynthRun, prefix: Path, pid: int, tid_shift: int) -> None:
    """``_marker_api_trace.csv`` (roctx ranges, MARKER_CORE_API) and ``_memory_allocation_trace.csv``
    (rocprofv3 7.x columns as in the rocprofv3 docs' sample; a free row has no agent and size 0)
    when the run has them; correlation ids continue after the HIP calls'."""
    first = int(run.api["correlation_id"].max()) + 1 if len(run.api) else 1
    m = run.markers
    if len(m):
        _write_table(
            Path(f"{prefix}_marker_api_trace.csv"),
            MARKER_TRACE_COLUMNS,
            {
                "Domain": ["MARKER_CORE_API"] * len(m),
                "Function": m["name"],
                "Process_Id": np.full(len(m), pid, np.int64),
                "Thread_Id": m["tid"] + tid_shift,
                "Correlation_Id": np.arange(first, first + len(m), dtype=np.int64),
                "Start_Timestamp": m["start"],
                "End_Timestamp": m["end"],
            },
        )
        first += len(m)
    a = run.allocations
    if len(a):
        free = a["operation"].astype(str).to_numpy() == "FREE"
        agents = _agent_labels(a["agent"].to_numpy(), run.agents).astype(str).to_numpy()
        _write_table(
            Path(f"{prefix}_memory_allocation_trace.csv"),
            ALLOCATION_TRACE_COLUMNS,
            {
                "Kind": ["MEMORY_ALLOCATION"] * len(a),
                "Operation": ["MEMORY_ALLOCATION_" + op for op in a["operation"].astype(str).tolist()],
                "Agent_Id": np.where(free, "", agents).tolist(),
                "Allocation_Size": np.where(free, 0, a["bytes"].to_numpy()),
                "Address": [f"0x{x:016x}" for x in a["address"].tolist()],
                "Correlation_Id": np.arange(first, first + len(a), dtype=np.int64),
                "Start_Timestamp": a["start"],
                "End_Timestamp": a["end"],
            },
        )


def write_rocprofv3_csv(run: SynthRun, directory, hostname: str = "synthhost", pid: int = 4242) -> Path:
    """Write ``run`` as rocprofv3 7.x CSV into ``<directory>/<hostname>/``; return that folder.

    Files: ``<pid>_agent_info.csv``, ``_kernel_trace.csv``, ``_hip_api_trace.csv``,
    ``_memory_copy_trace.csv``, ``_kernel_stats.csv``, ``_hip_api_stats.csv``,
    ``_memory_copy_stats.csv``, ``_domain_stats.csv``. ``pid`` is written as Process_Id and
    thread ids are shifted by ``pid - run.spec.pid`` so the main thread id stays equal to it.
    """
    out = Path(directory) / hostname
    out.mkdir(parents=True, exist_ok=True)
    prefix = out / str(pid)
    k, api, cp = run.kernels, run.api, run.copies
    tid_shift = pid - run.spec.pid  # keep "main thread id == pid" when writing under another pid

    # agent_info.csv (small: plain text)
    lines = [",".join(f'"{c}"' for c in AGENT_INFO_COLUMNS)]
    for agent in run.agents:
        rec = agent_record(agent)
        cells = [f'"{rec[c.lower()]}"' if c in _AGENT_STRING_FIELDS else str(int(rec[c.lower()] or 0)) for c in AGENT_INFO_COLUMNS]
        lines.append(",".join(cells))
    Path(f"{prefix}_agent_info.csv").write_text("\n".join(lines) + "\n")

    # LDS_Block_Size: group segment rounded up to 512 bytes (formats.md §2)
    lds = (k["lds_bytes"].to_numpy(np.int64) + 511) // 512 * 512
    _write_table(
        Path(f"{prefix}_kernel_trace.csv"),
        KERNEL_TRACE_COLUMNS,
        {
            "Kind": pd.Series(pd.Categorical.from_codes(np.zeros(len(k), np.int8), ["KERNEL_DISPATCH"])),
            "Agent_Id": _agent_labels(k["agent"].to_numpy(), run.agents),
            "Queue_Id": k["queue"],
            "Stream_Id": k["stream"],
            "Thread_Id": k["tid"] + tid_shift,
            "Dispatch_Id": k["dispatch_id"],
            "Kernel_Id": k["kernel_id"],
            "Kernel_Name": k["name"],
            "Correlation_Id": k["correlation_id"],
            "Start_Timestamp": k["start"],
            "End_Timestamp": k["end"],
            "LDS_Block_Size": lds,
            "Scratch_Size": k["scratch_bytes"].astype(np.int64),
            "VGPR_Count": k["arch_vgpr"].astype(np.int64),
            "Accum_VGPR_Count": k["accum_vgpr"].astype(np.int64),
            "SGPR_Count": k["sgpr"].astype(np.int64),
            "Workgroup_Size_X": k["wg_x"].astype(np.int64),
            "Workgroup_Size_Y": k["wg_y"].astype(np.int64),
            "Workgroup_Size_Z": k["wg_z"].astype(np.int64),
            "Grid_Size_X": k["grid_x"],
            "Grid_Size_Y": k["grid_y"],
            "Grid_Size_Z": k["grid_z"],
        },
    )

    _write_table(
        Path(f"{prefix}_hip_api_trace.csv"),
        API_TRACE_COLUMNS,
        {
            "Domain": pd.Series(pd.Categorical.from_codes(np.zeros(len(api), np.int8), [run.HIP_DOMAIN])),
            "Function": api["name"],
            "Process_Id": np.full(len(api), pid, np.int64),
            "Thread_Id": api["tid"] + tid_shift,
            "Correlation_Id": api["correlation_id"],
            "Start_Timestamp": api["start"],
            "End_Timestamp": api["end"],
        },
    )

    labels = cp["direction"].astype(str).map(COPY_DIRECTION_LABEL).to_numpy()
    _write_table(
        Path(f"{prefix}_memory_copy_trace.csv"),
        MEMORY_COPY_COLUMNS,
        {
            "Kind": ["MEMORY_COPY"] * len(cp),
            "Direction": labels.astype(str).tolist(),
            "Stream_Id": cp["stream"].clip(lower=0),
            "Source_Agent_Id": _agent_labels(cp["src_agent"].to_numpy(), run.agents),
            "Destination_Agent_Id": _agent_labels(cp["dst_agent"].to_numpy(), run.agents),
            "Correlation_Id": cp["correlation_id"],
            "Start_Timestamp": cp["start"],
            "End_Timestamp": cp["end"],
        },
    )

    _write_markers_and_allocations(run, prefix, pid, tid_shift)

    # statistics, computed from the written rows as rocprofv3 computes them
    domains = []
    for fname, domain, names, durations in (
        ("kernel_stats", "KERNEL_DISPATCH", k["name"], k["end"].to_numpy() - k["start"].to_numpy()),
        ("hip_api_stats", "HIP_API", api["name"], api["end"].to_numpy() - api["start"].to_numpy()),
        ("memory_copy_stats", "MEMORY_COPY", labels, cp["end"].to_numpy() - cp["start"].to_numpy()),
    ):
        if len(durations) == 0:
            continue
        Path(f"{prefix}_{fname}.csv").write_text(_stats_text(compute_stats(names, durations)))
        domains.append((domain, durations))
    dom_names = np.concatenate([np.full(len(d), n, dtype=object) for n, d in domains])
    dom_durs = np.concatenate([d for _, d in domains])
    Path(f"{prefix}_domain_stats.csv").write_text(_stats_text(compute_stats(dom_names, dom_durs)))
    return out
