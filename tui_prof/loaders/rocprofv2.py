"""rocprofv2 output: the file plugin's CSVs and the CLI (stdout) plugin's ``key(value)`` text.

File plugin (``rocprofv2 --plugin file``, ``projects/rocprofiler/plugin/file/file.cpp``) writes
``<name>_<pid>.csv`` or ``<name>_<-o name>.csv`` with name one of:

* ``results`` — one row per dispatch: ``Dispatch_ID,GPU_ID,Queue_ID,PID,TID,Grid_Size,
  Workgroup_Size,LDS_Per_Workgroup,Scratch_Per_Workitem,Arch_VGPR,Accum_VGPR,SGPR,Wave_Size,
  Kernel_Name,Start_Timestamp,End_Timestamp,Correlation_ID[,XCC_Index],<counters>`` (an empty
  line follows the header when counters were collected);
* ``hip_api_trace`` / ``hsa_api_trace`` — ``Domain,Function,Start_Timestamp,End_Timestamp,Correlation_ID``;
* ``roctx_trace`` — ``Domain,ROCTX_ID,Message,Timestamp`` (one instant per roctx call);
* ``hcc_ops_trace`` — ``Domain,Operation,Kernel_Name,Start_Timestamp,Stop_Timestamp,Correlation_ID``
  (GPU work launched through HIP: kernels, and copies which have no kernel name);
* ``async_copy_trace`` — ``Domain,Operation,Start_Timestamp,Stop_Timestamp,Correlation_ID`` (HSA copies).

Timestamps are ns integers. Domains are normalised: ``HIP_API_DOMAIN`` -> "hip",
``HSA_API_DOMAIN`` -> "hsa"; ``ROCTX_DOMAIN`` rows become markers. Files of one ``<pid>`` /
``<-o name>`` tag form one run. When both ``results`` and ``hcc_ops_trace`` hold the kernels,
``results`` (one row per dispatch, with properties) is used and the ops kernels are dropped.
"""

from __future__ import annotations

import csv
import io
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
    describe_error,
    first_line,
    int_column,
    labelled_copies,
    load_groups,
    pid_from_prefix,
    process_pid,
    read_error,
    read_text,
    split_header,
    warn_negative_durations,
)
from tui_prof.loaders.specs import SPECS
from tui_prof.model import Run, RunMeta
from tui_prof.model.schema import UNKNOWN, concat_tables, make_table

LOADER = SPECS["rocprofv2"]
FORMAT = LOADER.format

KERNEL_HEADER = ["dispatch_id", "gpu_id", "queue_id", "pid", "tid", "grid_size", "workgroup_size"]
API_HEADER = ["domain", "function", "start_timestamp", "end_timestamp", "correlation_id"]
ROCTX_HEADER = ["domain", "roctx_id", "message", "timestamp"]
HIP_OPS_HEADER = ["domain", "operation", "kernel_name", "start_timestamp", "stop_timestamp", "correlation_id"]
HSA_OPS_HEADER = ["domain", "operation", "start_timestamp", "stop_timestamp", "correlation_id"]
KERNEL_FIXED = (
    "Dispatch_ID",
    "GPU_ID",
    "Queue_ID",
    "PID",
    "TID",
    "Grid_Size",
    "Workgroup_Size",
    "LDS_Per_Workgroup",
    "Scratch_Per_Workitem",
    "Arch_VGPR",
    "Accum_VGPR",
    "SGPR",
    "Wave_Size",
    "Kernel_Name",
    "Start_Timestamp",
    "End_Timestamp",
    "Correlation_ID",
    "XCC_Index",
)
FILE_NAMES = ("results", "hip_api_trace", "hsa_api_trace", "roctx_trace", "hcc_ops_trace", "async_copy_trace", "pcs_trace")
DOMAINS = {"HIP_API_DOMAIN": "hip", "HSA_API_DOMAIN": "hsa", "ROCTX_DOMAIN": "marker"}
CLI_LINE = re.compile(r"^(Dispatch_ID\(\d+\)|Domain\([A-Z_]+\)), ")
# A field starts the line or follows ", " (anchoring keeps a 10 MB value linear, not quadratic).
CLI_FIELD = re.compile(r'(?:^|(?<=, ))(\w{1,64})\(("(?:[^"]*)"|[^()]*(?:\([^()]*\)[^()]*)*)\)(?:, |$)')


def _tag(path: Path) -> str:
    """The ``<pid>`` or ``<-o name>`` part of ``<name>_<tag>.csv``."""
    stem = path.name[:-4] if path.name.endswith(".csv") else path.stem
    for name in FILE_NAMES:
        if stem.startswith(name + "_"):
            return stem[len(name) + 1 :]
    return stem


def sniff(path: Path, head: bytes) -> Sniffed | None:
    line = first_line(head)
    cells = split_header(line)
    group = f"{path.parent}/{_tag(path)}"
    # Columns are read by name, so a header with the same columns in another order is accepted
    # (roctx rows are read by position and need the plugin's order).
    names = set(cells)
    if set(KERNEL_HEADER) <= names and "kernel_name" in names and "start_timestamp" in names:
        return Sniffed("kernel_trace", group)
    if names == set(API_HEADER) and len(cells) == len(API_HEADER):
        return Sniffed("api_trace", group)
    if cells == ROCTX_HEADER:
        return Sniffed("roctx_trace", group)
    if names == set(HIP_OPS_HEADER) and len(cells) == len(HIP_OPS_HEADER):
        return Sniffed("hip_ops_trace", group)
    if names == set(HSA_OPS_HEADER) and len(cells) == len(HSA_OPS_HEADER):
        return Sniffed("hsa_ops_trace", group)
    text = head.decode("utf-8", errors="replace")
    if any(CLI_LINE.match(l) for l in text.splitlines()[:50]):
        return Sniffed("cli_stdout", f"{path.parent}/{path.name}")
    return None


# --------------------------------------------------------------------------- readers


def _read_csv(path: Path) -> tuple[pd.DataFrame, bool]:
    """Whole CSV as strings (blank lines skipped); a last line without newline is dropped
    (the plugin ends every row with one) and reported through the returned flag."""
    try:
        text = read_text(path)
    except OSError as err:
        raise LoadError(read_error(err)) from None
    return csv_complete_rows(text)


def kernel_tables(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(kernels, counters) from a ``results_*.csv``. With XCC_Index there is one row per
    (dispatch, XCC): kernels keep the first row of a dispatch, counters are summed over XCCs."""
    counters_cols = [c for c in frame.columns if c not in KERNEL_FIXED]
    dispatch = int_column(frame, "Dispatch_ID")
    agent = int_column(frame, "GPU_ID")
    corr = int_column(frame, "Correlation_ID")
    first = np.ones(len(frame), dtype=bool)
    if "XCC_Index" in frame.columns and "Dispatch_ID" in frame.columns:
        first = ~pd.Series(dispatch).duplicated().to_numpy()
    rows = frame[first]
    kernels = make_table(
        "kernels",
        {
            "start": int_column(rows, "Start_Timestamp"),
            "end": int_column(rows, "End_Timestamp"),
            "agent": agent[first],
            "queue": int_column(rows, "Queue_ID"),
            "pid": int_column(rows, "PID"),
            "tid": int_column(rows, "TID"),
            "correlation_id": corr[first],
            "dispatch_id": dispatch[first],
            "name": rows["Kernel_Name"].astype(str).to_numpy() if "Kernel_Name" in rows else "",
            "grid_x": int_column(rows, "Grid_Size"),  # product x*y*z as written
            "wg_x": int_column(rows, "Workgroup_Size"),
            "lds_bytes": int_column(rows, "LDS_Per_Workgroup"),
            "scratch_bytes": int_column(rows, "Scratch_Per_Workitem"),
            "arch_vgpr": int_column(rows, "Arch_VGPR"),
            "accum_vgpr": int_column(rows, "Accum_VGPR"),
            "sgpr": int_column(rows, "SGPR"),
        },
    )
    parts = []
    if counters_cols:
        base = pd.DataFrame({"dispatch_id": dispatch, "correlation_id": corr, "agent": agent})
        for col in counters_cols:
            values = base.assign(value=pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype="float64"))
            summed = values.groupby(["dispatch_id", "correlation_id", "agent"], sort=False, as_index=False)["value"].sum()
            parts.append(
                make_table(
                    "counters",
                    {
                        "dispatch_id": summed["dispatch_id"].to_numpy(),
                        "correlation_id": summed["correlation_id"].to_numpy(),
                        "agent": summed["agent"].to_numpy(),
                        "counter": pd.Categorical([col] * len(summed)),
                        "value": summed["value"].to_numpy(),
                    },
                )
            )
    return kernels, concat_tables("counters", parts)


def api_table(frame: pd.DataFrame, pid: int | None) -> pd.DataFrame:
    """API rows; the Domain column is normalised (HIP_API_DOMAIN -> hip, HSA_API_DOMAIN -> hsa)."""
    domain = frame["Domain"].astype(str).str.strip()
    norm = domain.map(DOMAINS).fillna(domain.str.lower())
    return make_table(
        "api",
        {
            "start": int_column(frame, "Start_Timestamp"),
            "end": int_column(frame, "End_Timestamp"),
            "domain": norm.to_numpy(),
            "name": frame["Function"].astype(str).to_numpy(),
            "pid": pid if pid is not None else UNKNOWN,
            "correlation_id": int_column(frame, "Correlation_ID"),
        },
    )


def roctx_markers(path: Path, pid: int | None) -> pd.DataFrame:
    """roctx rows: ``ROCTX_DOMAIN,<id>,"<message>",<ts>``; message may be empty. Instants (end == start)."""
    text = read_text(path)
    names, stamps = [], []
    for row in csv.reader(io.StringIO(text)):
        if not row or row[0].strip() != "ROCTX_DOMAIN":
            continue
        ts = row[-1].strip()
        if not re.fullmatch(r"-?\d+", ts):
            continue
        names.append(row[2] if len(row) >= 4 else (row[1] if len(row) == 3 else ""))
        stamps.append(int(ts))
    ts_arr = np.array(stamps, dtype="int64")
    return make_table(
        "markers",
        {"start": ts_arr, "end": ts_arr, "name": names, "source": "roctx", "pid": pid if pid is not None else UNKNOWN},
    )


COPY_PATTERN = r"(?i)copy|memcpy|fill|memset"


def _direction_labels(names: pd.Series) -> np.ndarray:
    """Direction label from the operation name (HostToDevice/HtoD -> HtoD, fill/memset -> memset)."""
    text = names.astype(str)
    out = np.full(len(text), "unknown", dtype=object)
    for pattern, label in (
        (r"(?i)host_?to_?device|HtoD", "HtoD"),
        (r"(?i)device_?to_?host|DtoH", "DtoH"),
        (r"(?i)device_?to_?device|DtoD", "DtoD"),
        (r"(?i)fill|memset", "memset"),
    ):
        out[text.str.contains(pattern, regex=True).to_numpy()] = label
    return out


def ops_tables(frame: pd.DataFrame, has_kernel_name: bool, pid: int | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(kernels, copies) from hcc_ops_trace (kernels have a Kernel_Name) or async_copy_trace (all copies)."""
    op = frame["Operation"].astype(str)
    kname = frame["Kernel_Name"].astype(str).str.strip() if has_kernel_name else pd.Series([""] * len(frame))
    is_copy = (op.str.contains(COPY_PATTERN, regex=True) | (kname == "")).to_numpy() if has_kernel_name else np.ones(len(frame), bool)
    start, end, corr = int_column(frame, "Start_Timestamp"), int_column(frame, "Stop_Timestamp"), int_column(frame, "Correlation_ID")
    pid_value = pid if pid is not None else UNKNOWN
    k = ~is_copy
    kernels = make_table(
        "kernels",
        {"start": start[k], "end": end[k], "correlation_id": corr[k], "name": kname[k].to_numpy(), "pid": pid_value},
    )
    copies = make_table(
        "copies",
        {
            "start": start[is_copy],
            "end": end[is_copy],
            "correlation_id": corr[is_copy],
            "name": op[is_copy].to_numpy(),
            "direction": labelled_copies(_direction_labels(op[is_copy]))[0],
            "pid": pid_value,
        },
    )
    return kernels, copies


def parse_cli(path: Path) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(kernels, counters, api) from the CLI plugin's ``Key(value), Key(value)`` lines."""
    dispatch_rows: list[dict[str, str]] = []
    api_rows: list[dict[str, str]] = []
    for line in read_text(path).splitlines():
        if not CLI_LINE.match(line):
            continue
        fields = {m.group(1): m.group(2) for m in CLI_FIELD.finditer(line)}
        (dispatch_rows if "Dispatch_ID" in fields else api_rows).append(fields)
    kernels, counters, api = (make_table("kernels"), make_table("counters"), make_table("api"))
    if dispatch_rows:
        frame = pd.DataFrame(dispatch_rows).fillna("")
        frame = frame.rename(
            columns={
                "Process_ID": "PID",
                "Thread_ID": "TID",
                "LDS": "LDS_Per_Workgroup",
                "Scratch_Size": "Scratch_Per_Workitem",
                "Accumulative_VGPR": "Accum_VGPR",
                "Begin_Timestamp": "Start_Timestamp",
            }
        )
        if "Kernel_Name" in frame:
            frame["Kernel_Name"] = frame["Kernel_Name"].str.strip('"')
        kernels, counters = kernel_tables(frame)
    if api_rows:
        frame = pd.DataFrame(api_rows).fillna("")
        for column in ("Domain", "Function"):  # a damaged line may lack one: keep the row, name unknown
            if column not in frame:
                frame[column] = ""
        api = api_table(frame, None)
    return kernels, counters, api


# --------------------------------------------------------------------------- load


def _load_group(group: str, files: list[DetectedFile], issues: IssueSink) -> Run | None:
    tag = group.rsplit("/", 1)[-1]
    pid = pid_from_prefix(tag)
    run = Run(meta=RunMeta(formats=[FORMAT], tool="rocprofv2", label=tag, pid=pid))
    kernels, ops_kernels, copies, api, markers, counters = [], [], [], [], [], []
    for item in sorted(files, key=lambda f: str(f.path)):
        try:
            if item.kind == "cli_stdout":
                k, c, a = parse_cli(item.path)
                kernels.append(k)
                counters.append(c)
                api.append(a)
            elif item.kind == "roctx_trace":
                markers.append(roctx_markers(item.path, pid))
            else:
                frame, truncated = _read_csv(item.path)
                if truncated:
                    run.partial = True
                    issues.error(item.path, f"truncated: last row cut short and dropped; {len(frame)} complete rows loaded")
                if item.kind == "kernel_trace":
                    k, c = kernel_tables(frame)
                    kernels.append(k)
                    counters.append(c)
                elif item.kind == "api_trace":
                    api.append(api_table(frame, pid))
                elif item.kind in ("hip_ops_trace", "hsa_ops_trace"):
                    k, c = ops_tables(frame, item.kind == "hip_ops_trace", pid)
                    ops_kernels.append(k)
                    copies.append(c)
        except LoadError as err:
            issues.error(item.path, str(err))
            continue
        except OSError as err:
            issues.error(item.path, read_error(err))
            continue
        except Exception as err:  # a parsing bug on one file must not lose the other files
            issues.error(item.path, f"cannot load: {describe_error(err)}")
            continue
        run.meta.files.append(str(item.path))
    if not run.meta.files:
        return None
    have_dispatches = any(len(k) for k in kernels)
    if have_dispatches and any(len(k) for k in ops_kernels):
        run.warnings.append("kernels taken from results_*.csv; the hcc_ops_trace kernel rows (same dispatches) were not added")
        ops_kernels = []
    run.kernels = concat_tables("kernels", kernels + ops_kernels)
    run.copies = concat_tables("copies", copies)
    run.api = concat_tables("api", api)
    run.markers = concat_tables("markers", markers)
    run.counters = concat_tables("counters", counters)
    run.meta.pid, several = process_pid(tag, run.kernels["pid"])
    if several:
        run.meta.extra["pids"] = several
    warn_negative_durations(run)
    return run


def load(files: list[DetectedFile], issues: IssueSink) -> list[Run]:
    return load_groups(files, issues, _load_group, "rocprofv2")
