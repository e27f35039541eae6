"""rocprof-compute (formerly Omniperf) workload folders: ``rocprof-compute profile -n NAME -- app``.

rocprof-compute runs the application once per counter group and rewrites what the
profiler wrote into its own CSVs in ``workloads/NAME/<GPU>/`` (formats.md §9). Every
layout of the public samples (``rocprof-compute-workloads/``, ``rocprof-compute-batched-gemm/``):

* ``pmc_perf.csv`` / ``pmc_perf_<n>.csv`` / ``SQ_*.csv`` — one row per dispatch, one column
  per counter (wide). Fixed columns are those of the backend profiler: rocprofv2's
  ``Dispatch_ID,GPU_ID,Queue_ID,PID,TID,…,Kernel_Name,Start_Timestamp,End_Timestamp,
  Correlation_ID`` (ROCm 6.2; rocprofv3 csv adds ``Kernel_ID``), or rocprof v1's renamed
  ``Dispatch_ID,Kernel_Name,GPU_ID,queue-id,…,DispatchNs,Start_Timestamp,End_Timestamp,CompleteNs``
  (ROCm 6.0). Unlike rocprofv2's own ``results_*.csv`` no blank line follows the header.
* ``pmc_perf.csv`` built from a rocpd database (rocprof-compute 3.2, ROCm 7.0) — long:
  ``…,Kernel_ID,Counter_Name,Counter_Value``, one row per (dispatch, counter).
* A level pass (``SQ_LEVEL_WAVES.csv``) accumulates its level counter into
  ``SQ_ACCUM_PREV_HIRES``; it is stored as ``<LEVEL>_ACCUM`` (``SQ_LEVEL_WAVES_ACCUM``), the
  name rocprofv3 gives the same value in the rocpd-built table.
* Per-instance counters ``NAME[i]`` (one per L2 channel / XCD) are summed into ``NAME_sum``,
  rocprof-compute's reduction, where the profiler did not write ``NAME_sum`` itself; where it
  did, its value is kept (the one rocprof-compute's formulas read), and the channels are not stored.
* ``timestamps.csv`` — the dispatches with their times (the kernel table);
  ``pmc_dispatch_info.csv`` — ``Dispatch_ID,Kernel_Name,GPU_ID``.
* ``sysinfo.csv`` — one row describing the GPU (``gpu_arch``, ``cu_per_gpu``, ``se_per_gpu``,
  clocks in MHz, ``num_xcd``, ``num_hbm_channels`` …) → the run's GPU agent.
* ``roofline.csv`` — measured peaks per device (``HBMBw`` GB/s, ``FP32Flops`` GFLOP/s …) →
  ``Agent.extra["roofline"]``.
* ``pmc_kernel_top.csv`` — per-kernel totals rocprof-compute computed → ``tool_stats["kernel_stats"]``.

Files are recognised by their header; files of one folder and one name prefix (the public
samples flatten folders as ``<prefix>_pmc_perf.csv``) form one run. The profiling passes run
as separate processes, so the run has no single pid. Timestamps written in scientific
notation (``8.1097E+14``: a spreadsheet round-trip lost their digits) are stored as unknown.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from tui_prof.loaders.base import (
    DetectedFile,
    IssueSink,
    LoadError,
    Sniffed,
    csv_complete_rows,
    first_line,
    int_column,
    load_groups,
    read_error,
    read_head,
    read_text,
    split_header,
)
from tui_prof.loaders.specs import SPECS
from tui_prof.model import Agent, Run, RunMeta
from tui_prof.model.schema import UNKNOWN, concat_tables, make_table

LOADER = SPECS["rocprof_compute"]
FORMAT = LOADER.format

# Names rocprof-compute gives its files; only used to find a file's folder prefix (grouping).
FILE_STEM = re.compile(r"(pmc_perf(?:_\d+)?|SQ_[A-Z0-9_]+|timestamps|sysinfo|roofline|pmc_kernel_top|pmc_dispatch_info)\.csv$")
SYSINFO_HEAD = ("workload_name", "command", "ip_blocks")
ROOFLINE_HEAD = ("device", "hbmbw")
KERNEL_TOP_HEAD = ["kernel_name", "count", "sum(ns)", "mean(ns)", "median(ns)", "pct"]
DISPATCH_INFO_HEAD = ["dispatch_id", "kernel_name", "gpu_id"]
LONG_TAIL = ("counter_name", "counter_value")
# Fixed (non-counter) columns of the wide tables, lower-case, over every backend.
FIXED = {
    "dispatch_id",
    "gpu_id",
    "queue_id",
    "queue-id",
    "queue-index",
    "pid",
    "tid",
    "grid_size",
    "workgroup_size",
    "lds_per_workgroup",
    "scratch_per_workitem",
    "arch_vgpr",
    "accum_vgpr",
    "sgpr",
    "wave_size",
    "kernel_name",
    "start_timestamp",
    "end_timestamp",
    "correlation_id",
    "kernel_id",
    "xcc_index",
    "sig",
    "obj",
    "dispatchns",
    "completens",
    "node",
}
CHANNEL = re.compile(r"^(.+)\[(\d+)\]$")
LEVEL = re.compile(r"^SQ_\w*LEVEL\w*$")
SYSINFO_INT = ("cu_per_gpu", "simd_per_cu", "se_per_gpu", "wave_size", "workgroup_max_size", "max_waves_per_cu", "max_sclk", "num_xcd")
ROOFLINE_PEAKS = (
    "HBMBw",
    "MALLBw",
    "L2Bw",
    "L1Bw",
    "LDSBw",
    "FP8Flops",
    "FP16Flops",
    "BF16Flops",
    "FP32Flops",
    "FP64Flops",
    "I8Ops",
    "I32Ops",
    "I64Ops",
    "MFMAF4Flops",
    "MFMAF6Flops",
    "MFMAF8Flops",
    "MFMAF16Flops",
    "MFMABF16Flops",
    "MFMAF32Flops",
    "MFMAF64Flops",
    "MFMAI8Ops",
)


def _prefix(path: Path) -> str:
    """The folder and name prefix shared by one workload's files."""
    match = FILE_STEM.search(path.name)
    stem = path.name[: match.start()] if match else ""
    return f"{path.parent}/{stem}"


def _is_sysinfo(cells: list[str]) -> bool:
    return tuple(cells[:3]) == SYSINFO_HEAD and "gpu_arch" in cells


def _sibling_sysinfo(path: Path) -> bool:
    """Whether the folder holds this workload's ``sysinfo.csv`` (checked by its header)."""
    match = FILE_STEM.search(path.name)
    stem = path.name[: match.start()] if match else ""
    candidate = path.parent / f"{stem}sysinfo.csv"
    try:
        return candidate.is_file() and _is_sysinfo(split_header(first_line(read_head(candidate, 4096))))
    except OSError:
        return False


def sniff(path: Path, head: bytes) -> Sniffed | None:
    line = first_line(head)
    cells = split_header(line)
    group = _prefix(path)
    if _is_sysinfo(cells):
        return Sniffed("sysinfo", group)
    if tuple(cells[:2]) == ROOFLINE_HEAD:
        return Sniffed("roofline", group)
    if cells == KERNEL_TOP_HEAD:
        return Sniffed("kernel_top", group)
    if cells == DISPATCH_INFO_HEAD:
        return Sniffed("dispatch_info", group)
    names = set(cells)
    if not {"dispatch_id", "kernel_name", "gpu_id"} <= names:  # rocprofv3's own tables name the agent "agent_id"
        return None
    if tuple(cells[-2:]) == LONG_TAIL and "kernel_id" in names:
        return Sniffed("pmc_long", group)
    counters = [c for c in cells if c not in FIXED]
    lines = head.split(b"\n", 2)
    blank_after_header = len(lines) > 1 and not lines[1].strip()
    v1_renamed = "dispatchns" in names and "start_timestamp" in names  # rocprof v1 columns under rocprof-compute's names
    after_correlation = "kernel_id" in names and "correlation_id" in names  # rocprofv3 csv through rocprof-compute
    if counters and not blank_after_header and (v1_renamed or after_correlation or _sibling_sysinfo(path)):
        return Sniffed("pmc_wide", group)
    if not counters and "start_timestamp" in names and (v1_renamed or _sibling_sysinfo(path)):
        return Sniffed("timestamps", group)
    return None


# --------------------------------------------------------------------------- readers


def _read(path: Path, issues: IssueSink, run: Run) -> pd.DataFrame:
    try:
        text = read_text(path)
    except OSError as err:  # unreadable, a damaged gzip or one past the bound: one line, not a loader failure
        raise LoadError(read_error(err)) from None
    frame, truncated = csv_complete_rows(text)
    if truncated:
        run.partial = True
        issues.error(path, "truncated: the last line was cut short (dropped)")
    return frame


def _column(frame: pd.DataFrame, name: str) -> str | None:
    """The frame's column whose lower-case name is ``name``."""
    for col in frame.columns:
        if col.lower() == name:
            return col
    return None


def _ints(frame: pd.DataFrame, name: str) -> np.ndarray:
    col = _column(frame, name)
    return int_column(frame, col) if col else np.full(len(frame), UNKNOWN, dtype=np.int64)


def _times(frame: pd.DataFrame, name: str) -> tuple[np.ndarray, int]:
    """(ns, count of values in scientific notation, stored as unknown)."""
    col = _column(frame, name)
    if col is None:
        return np.full(len(frame), UNKNOWN, dtype=np.int64), 0
    lossy = int(frame[col].astype(str).str.contains(r"[eE][+-]?\d", regex=True).sum())
    return int_column(frame, col), lossy


def kernel_table(frame: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """(kernels, values with lost precision) from a per-dispatch table, one row per dispatch."""
    dispatch = _ints(frame, "dispatch_id")
    first = ~pd.Series(dispatch).duplicated().to_numpy()
    rows = frame[first]
    start, lossy_start = _times(rows, "start_timestamp")
    end, lossy_end = _times(rows, "end_timestamp")
    name_col = _column(rows, "kernel_name")
    queue = _ints(rows, "queue_id")
    if (queue == UNKNOWN).all():
        queue = _ints(rows, "queue-id")
    table = make_table(
        "kernels",
        {
            "start": start,
            "end": end,
            "agent": _ints(rows, "gpu_id"),
            "queue": queue,
            "pid": _ints(rows, "pid"),
            "tid": _ints(rows, "tid"),
            "correlation_id": _ints(rows, "correlation_id"),
            "dispatch_id": dispatch[first],
            "kernel_id": _ints(rows, "kernel_id"),
            "name": rows[name_col].astype(str).to_numpy() if name_col else "",
            "grid_x": _ints(rows, "grid_size"),  # the product x*y*z as written
            "wg_x": _ints(rows, "workgroup_size"),
            "lds_bytes": _ints(rows, "lds_per_workgroup"),
            "scratch_bytes": _ints(rows, "scratch_per_workitem"),
            "arch_vgpr": _ints(rows, "arch_vgpr"),
            "accum_vgpr": _ints(rows, "accum_vgpr"),
            "sgpr": _ints(rows, "sgpr"),
        },
    )
    return table, lossy_start + lossy_end


def sum_channels(values: pd.DataFrame) -> pd.DataFrame:
    """Long ``dispatch_id, counter, value`` rows with every ``NAME[i]`` replaced by one
    ``NAME_sum`` row per dispatch (the sum over i). Where the table also holds the profiler's
    own ``NAME_sum`` for that dispatch, that value is kept: rocprof-compute evaluates its
    formulas on the ``NAME_sum`` column the profiler wrote (it may come from another replay
    pass and differ from the channel sum by a few counts)."""
    names = values["counter"].astype(str)
    base = names.str.extract(CHANNEL.pattern, expand=True)[0]
    per_channel = base.notna().to_numpy()
    if not per_channel.any():
        return values
    channels = values[per_channel].assign(counter=base[per_channel].to_numpy() + "_sum")
    summed = channels.groupby(["dispatch_id", "counter"], sort=False, as_index=False)["value"].sum(min_count=1)
    rest = values[~per_channel]
    written = pd.MultiIndex.from_frame(rest[["dispatch_id", "counter"]].astype({"counter": str}))
    fresh = ~pd.MultiIndex.from_frame(summed[["dispatch_id", "counter"]]).isin(written)
    return pd.concat([rest, summed[fresh]], ignore_index=True)


def wide_values(frame: pd.DataFrame) -> pd.DataFrame:
    """Long ``dispatch_id, counter, value`` from a wide table (one column per counter); the
    ~1000 counter columns are converted in one pass, not one column at a time."""
    counters = [c for c in frame.columns if c.lower() not in FIXED]
    dispatch = _ints(frame, "dispatch_id")
    if "SQ_ACCUM_PREV_HIRES" in counters:
        # The level pass (SQ_LEVEL_WAVES.csv, SQ_INST_LEVEL_LDS.csv ...) accumulates its one
        # level counter into SQ_ACCUM_PREV_HIRES; rocprofv3 names that value <LEVEL>_ACCUM.
        levels = [c for c in counters if LEVEL.match(c)]
        names = [f"{levels[0]}_ACCUM" if c == "SQ_ACCUM_PREV_HIRES" and len(levels) == 1 else c for c in counters]
    else:
        names = counters
    cells = frame[counters].to_numpy(dtype=object)  # rows x counters
    values = pd.to_numeric(pd.Series(cells.T.ravel(), dtype=object), errors="coerce").to_numpy(dtype=float)
    return pd.DataFrame({"dispatch_id": np.tile(dispatch, len(counters)), "counter": np.repeat(np.array(names, dtype=object), len(frame)), "value": values})


def long_values(frame: pd.DataFrame) -> pd.DataFrame:
    """Long ``dispatch_id, counter, value`` from rocprof-compute's rocpd-built table."""
    name_col, value_col = _column(frame, "counter_name"), _column(frame, "counter_value")
    if name_col is None or value_col is None:
        raise LoadError("Counter_Name/Counter_Value columns missing")
    return pd.DataFrame(
        {
            "dispatch_id": _ints(frame, "dispatch_id"),
            "counter": frame[name_col].astype(str).str.strip().to_numpy(),
            "value": pd.to_numeric(frame[value_col], errors="coerce").to_numpy(dtype=float),
        }
    )


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if value == value else None


def sysinfo_agent(frame: pd.DataFrame, agent_id: int) -> tuple[Agent, dict[str, str]]:
    """The GPU agent a ``sysinfo.csv`` row describes, and the row itself."""
    if not len(frame):
        raise LoadError("sysinfo.csv has no data row")
    row = {str(k): str(v).strip() for k, v in frame.iloc[0].items()}
    ints: dict[str, int | None] = {}
    for key in SYSINFO_INT:
        value = _number(row.get(key, ""))
        ints[key] = int(value) if value is not None and value > 0 else None
    memory_kib = _number(row.get("gpu_memory", ""))
    cu, simd = ints["cu_per_gpu"], ints["simd_per_cu"]
    extra: dict[str, object] = {
        key: row[key]
        for key in (
            "gpu_series",
            "gpu_chip_id",
            "gpu_l1",
            "gpu_l2",
            "se_per_gpu",
            "max_mclk",
            "cur_sclk",
            "cur_mclk",
            "l2_banks",
            "total_l2_chan",
            "lds_banks_per_cu",
            "sqc_per_gpu",
            "pipes_per_gpu",
            "hbm_bw",
            "num_hbm_channels",
            "compute_partition",
            "memory_partition",
            "rocm_version",
        )
        if row.get(key, "") not in ("", "NA")
    }
    extra["source"] = "rocprof-compute sysinfo.csv"
    agent = Agent(
        id=agent_id,
        type="GPU",
        name=row.get("gpu_arch", ""),
        product=row.get("gpu_model", ""),
        vendor="AMD",
        cu_count=cu,
        simd_per_cu=simd,
        simd_count=cu * simd if cu and simd else None,
        wave_size=ints["wave_size"],
        max_waves_per_cu=ints["max_waves_per_cu"],
        max_waves_per_simd=(ints["max_waves_per_cu"] // simd) if ints["max_waves_per_cu"] and simd else None,
        num_xcc=ints["num_xcd"],
        max_clock_mhz=ints["max_sclk"],
        memory_bytes=int(memory_kib) * 1024 if memory_kib else None,
        workgroup_max_size=ints["workgroup_max_size"],
        extra=extra,
    )
    return agent, row


def roofline_peaks(frame: pd.DataFrame, device: int) -> dict[str, float]:
    """Measured peaks of ``device`` (the first row when no row has that device index)."""
    if not len(frame):
        return {}
    devices = _ints(frame, "device")
    pick = np.flatnonzero(devices == device)
    row = frame.iloc[int(pick[0]) if len(pick) else 0]
    peaks = {}
    for key in ROOFLINE_PEAKS:
        if key in frame.columns:
            value = _number(str(row[key]))
            if value is not None and value > 0:
                peaks[key] = value
    return peaks


def kernel_top(frame: pd.DataFrame) -> pd.DataFrame:
    """``pmc_kernel_top.csv`` as a tool_stats table (Median(ns) kept as an extra column)."""

    def floats(col: str) -> np.ndarray:
        return pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=float)

    return pd.DataFrame(
        {
            "name": frame["Kernel_Name"].astype(str).to_numpy(),
            "calls": pd.to_numeric(frame["Count"], errors="coerce").fillna(-1).astype("int64").to_numpy(),
            "total_ns": floats("Sum(ns)"),
            "avg_ns": floats("Mean(ns)"),
            "percent": floats("Pct"),
            "min_ns": np.nan,
            "max_ns": np.nan,
            "stddev_ns": np.nan,
            "median_ns": floats("Median(ns)"),
        }
    )


# --------------------------------------------------------------------------- assembly

KIND_ORDER = ("sysinfo", "roofline", "kernel_top", "timestamps", "dispatch_info", "pmc_long", "pmc_wide")


def _file_order(item: DetectedFile) -> tuple[int, int, str]:
    # pmc_perf first among the counter tables: its values win over SQ_*.csv's for the same counter.
    return (KIND_ORDER.index(item.kind), 0 if item.path.name.endswith(("pmc_perf.csv",)) or "pmc_perf_" in item.path.name else 1, item.path.name)


def _load_group(group: str, files: list[DetectedFile], issues: IssueSink) -> Run | None:
    prefix = group.rsplit("/", 1)[-1].rstrip("_")
    folder = Path(group.rsplit("/", 1)[0]).name
    run = Run(meta=RunMeta(formats=[FORMAT], tool="rocprof-compute", label=prefix or folder))
    sysinfo: pd.DataFrame | None = None
    roofline: pd.DataFrame | None = None
    counted: list[tuple[pd.DataFrame, int]] = []
    timestamps: list[tuple[pd.DataFrame, int]] = []
    values: list[pd.DataFrame] = []
    names_by_dispatch: dict[int, str] = {}
    for item in sorted(files, key=_file_order):
        try:
            frame = _read(item.path, issues, run)
        except LoadError as err:
            issues.error(item.path, str(err))
            continue
        run.meta.files.append(str(item.path))
        if item.kind == "sysinfo":
            sysinfo = frame
        elif item.kind == "roofline":
            roofline = frame
        elif item.kind == "kernel_top":
            run.tool_stats["kernel_stats"] = kernel_top(frame)
        elif item.kind == "dispatch_info":
            ids, names = _ints(frame, "dispatch_id"), frame["Kernel_Name"].astype(str).to_numpy()
            names_by_dispatch.update(zip(ids.tolist(), names.tolist(), strict=True))
        elif item.kind == "timestamps":
            timestamps.append(kernel_table(frame))
        else:
            counted.append(kernel_table(frame))
            values.append(long_values(frame) if item.kind == "pmc_long" else wide_values(frame))
    # The first counter table gives the dispatches (its ids are the ones its counters carry;
    # timestamps.csv may number them differently); timestamps.csv only when no counter table loaded.
    kernels, lossy = (counted or timestamps or [(make_table("kernels"), 0)])[0]
    if not len(kernels) and names_by_dispatch:
        kernels = make_table("kernels", {"dispatch_id": np.array(list(names_by_dispatch), dtype=np.int64), "name": list(names_by_dispatch.values())})
    if names_by_dispatch and len(kernels):
        # pmc_dispatch_info names the dispatches where a counter table lacks names.
        missing = kernels["name"].astype(str).to_numpy() == ""
        if missing.any():
            names = kernels["name"].astype(str).to_numpy(dtype=object)
            ids = kernels["dispatch_id"].to_numpy()
            names[missing] = [names_by_dispatch.get(int(i), "") for i in ids[missing]]
            kernels = kernels.assign(name=pd.Categorical(names))
    agent_ids = kernels["agent"].to_numpy() if len(kernels) else np.array([], dtype=np.int32)
    known = agent_ids[agent_ids != UNKNOWN]
    agent_id = int(known[0]) if len(known) else 0
    if len(kernels) and not len(known):
        kernels = kernels.assign(agent=np.int32(agent_id))
    run.kernels = kernels
    if sysinfo is not None:
        try:
            agent, row = sysinfo_agent(sysinfo, agent_id)
        except LoadError as err:
            run.warnings.append(f"sysinfo.csv: {err}")
        else:
            run.agents.append(agent)
            run.meta.hostname = row.get("hostname", "")
            run.meta.command = row.get("command", "")
            run.meta.extra["workload_name"] = row.get("workload_name", "")
            run.meta.extra["sysinfo_version"] = row.get("version", "")  # the workload format's version, not the tool's
    if roofline is not None:
        peaks = roofline_peaks(roofline, agent_id)
        if peaks:
            if not run.agents:
                run.agents.append(Agent(id=agent_id, type="GPU", vendor="AMD"))
            run.agents[0].extra["roofline"] = peaks
    if values:
        tables = []
        seen: set[str] = set()
        for part in values:
            part = sum_channels(part)
            counters = set(part["counter"].astype(str))
            fresh = part[~part["counter"].astype(str).isin(seen).to_numpy()]
            seen |= counters
            tables.append(fresh)
        long = pd.concat(tables, ignore_index=True)
        long = long.drop_duplicates(["dispatch_id", "counter"], keep="first")
        agent_of = dict(zip(kernels["dispatch_id"].tolist(), kernels["agent"].tolist(), strict=True)) if len(kernels) else {}
        run.counters = concat_tables(
            "counters",
            [
                make_table(
                    "counters",
                    {
                        "dispatch_id": long["dispatch_id"].to_numpy(dtype=np.int64),
                        "agent": np.array([agent_of.get(int(d), agent_id) for d in long["dispatch_id"].to_numpy()], dtype=np.int32),
                        "counter": long["counter"].astype(str).to_numpy(),
                        "value": long["value"].to_numpy(dtype=float),
                    },
                )
            ],
        )
    if lossy:
        run.warnings.append(f"{lossy} timestamps are in scientific notation (digits lost, e.g. by a spreadsheet); stored as unknown")
    if not (len(run.kernels) or len(run.counters) or run.agents or run.tool_stats):
        return None
    return run


def load(files: list[DetectedFile], issues: IssueSink) -> list[Run]:
    return load_groups(files, issues, _load_group, "rocprof-compute")
