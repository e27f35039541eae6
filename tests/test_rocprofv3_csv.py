"""rocprofv3 CSV loader on real rocprofv3 / rocpd2csv files (tests/data/rocprofv3_csv, see
PROVENANCE.md) and on files derived from them whose answer is known by construction.

Expected values come from Python's stdlib ``csv`` module reading the same file (an
independent parser), from the profiler's own stats files, or from the construction.
"""

from __future__ import annotations

import csv
import gzip
import importlib
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from tui_prof.loaders import detect
from tui_prof.loaders import rocprofv3_csv as v3
from tui_prof.loaders.base import DetectedFile, IssueSink, read_head
from tui_prof.model.schema import STATS_COLUMNS, UNKNOWN

DATA = Path(__file__).parent / "data" / "rocprofv3_csv"
DOCS7 = DATA / "rocprofv3-docs-rocm7"
DOCS63 = DATA / "rocprofv3-docs-rocm6.3"
HPC = DATA / "hpctraining-extracted"


# --------------------------------------------------------------------------- helpers


def csv_rows(path: Path) -> list[dict[str, str]]:
    """Rows of a CSV via the stdlib parser, keys lower-cased (the independent oracle)."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [{k.lower(): v for k, v in row.items()} for row in rows if any(row.values())]


def sniffed(path: Path):
    return v3.sniff(path, read_head(path))


def load_files(*paths: Path, issues: IssueSink | None = None):
    issues = issues if issues is not None else IssueSink()
    detected = []
    for path in paths:
        hit = sniffed(path)
        assert hit is not None, path
        detected.append(DetectedFile(path, v3.FORMAT, hit.kind, hit.group))
    return v3.load(detected, issues)


def load_one(*paths: Path, issues: IssueSink | None = None):
    runs = load_files(*paths, issues=issues)
    assert len(runs) == 1
    return runs[0]


def copy_as(src: Path, dst: Path, transform=None) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    text = src.read_text()
    dst.write_text(transform(text) if transform else text)
    return dst


def agent_token(value: str) -> int:
    """Expected Agent.id of a CSV agent spelling when there is no agent_info."""
    value = value.strip()
    if not value:
        return UNKNOWN
    return int(value.split()[-1])


# --------------------------------------------------------------------------- sniffing


@pytest.mark.parametrize(
    "path, kind",
    [
        (DOCS7 / "kernel_trace.csv", "kernel_trace"),
        (DOCS63 / "kernel_trace.csv", "kernel_trace"),
        (HPC / "omp_kernel_trace_head.csv", "kernel_trace"),
        (HPC / "rocpd2csv_out_kernel_trace_head.csv", "kernel_trace"),
        (DOCS7 / "hip_trace.csv", "hip_api_trace"),
        (DOCS63 / "hip_runtime_trace.csv", "hip_api_trace"),
        (DOCS7 / "hsa_core_api_trace.csv", "hsa_api_trace"),
        (DOCS7 / "marker_api_trace.csv", "marker_api_trace"),
        (DOCS7 / "rccl_trace.csv", "rccl_api_trace"),
        (DOCS7 / "rocdecode_api_trace.csv", "rocdecode_api_trace"),
        (DOCS7 / "rocjpeg_api_trace.csv", "rocjpeg_api_trace"),
        (DOCS7 / "rocpd-to-csv.csv", "hip_api_trace"),
        (DOCS7 / "memory_copy_trace.csv", "memory_copy_trace"),
        (DOCS63 / "memory_copy_trace.csv", "memory_copy_trace"),
        (DOCS7 / "memory_allocation_trace.csv", "memory_allocation_trace"),
        (DOCS7 / "scratch_memory_trace.csv", "scratch_memory_trace"),
        (DOCS7 / "counter_collection.csv", "counter_collection"),
        (DOCS63 / "counter_collection.csv", "counter_collection"),
        (DOCS7 / "kernel_names.csv", "counter_collection"),
        (DOCS7 / "238_agent_info.csv", "agent_info"),
        (HPC / "omp_agent_info.csv", "agent_info"),
        (DOCS7 / "hip_api_stats.csv", "hip_api_stats"),
        (DOCS7 / "hip_domain_stats.csv", "domain_stats"),
        (DOCS7 / "pc_sampling_host_trap.csv", "pc_sampling_host_trap"),
        (DOCS7 / "pc_sampling_stochastic_debug.csv", "pc_sampling_stochastic"),
    ],
)
def test_sniff_real_files(path, kind):
    assert sniffed(path).kind == kind


def test_sniff_groups_by_directory_and_prefix():
    assert sniffed(DOCS7 / "kernel_trace.csv").group == f"{DOCS7}/"
    assert sniffed(DOCS7 / "238_agent_info.csv").group == f"{DOCS7}/238"
    assert sniffed(HPC / "omp_agent_info.csv").group == f"{HPC}/omp"
    assert sniffed(HPC / "omp_kernel_trace_head.csv").group == f"{HPC}/omp"
    assert sniffed(HPC / "rocpd2csv_out_kernel_trace_head.csv").group == f"{HPC}/rocpd2csv_out"
    # "-o hip" prefix: hip_domain_stats.csv = <hip>_domain_stats
    assert sniffed(DOCS7 / "hip_domain_stats.csv").group == f"{DOCS7}/hip"


@pytest.mark.parametrize(
    "header, kind",
    [
        # unquoted and upper-case headers
        (b"KIND,AGENT_ID,QUEUE_ID,KERNEL_ID,KERNEL_NAME,CORRELATION_ID,START_TIMESTAMP,END_TIMESTAMP\n", "kernel_trace"),
        # ROCm 6.2 scratch trace spelling Alloc_flags
        (
            b'"Kind","Operation","Agent_Id","Queue_Id","Thread_Id","Alloc_flags","Start_Timestamp","End_Timestamp"\n',
            "scratch_memory_trace",
        ),
        # ROCm 6.2 stats names
        (b'"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"\n', "hip_api_stats"),
    ],
)
def test_sniff_header_variants(tmp_path, header, kind):
    name = "1234_hip_stats.csv" if kind == "hip_api_stats" else "x.csv"
    path = tmp_path / name
    path.write_bytes(header)
    assert sniffed(path).kind == kind


@pytest.mark.parametrize(
    "header",
    [
        # legacy rocprof v1 kernel table and 5-column stats (formats.md §7)
        b"Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,arch_vgpr,accum_vgpr,sgpr\n",
        b'"Index","KernelName","gpu-id","queue-id","DispatchNs","BeginNs","EndNs","CompleteNs","DurationNs"\n',
        b'"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n"hipMalloc",2,10,5,100.0\n',
        # rocprofv2 (formats.md §8)
        b"Dispatch_ID,GPU_ID,Queue_ID,PID,TID,Grid_Size,Workgroup_Size,LDS_Per_Workgroup,Scratch_Per_Workitem,"
        b"Arch_VGPR,Accum_VGPR,SGPR,Wave_Size,Kernel_Name,Start_Timestamp,End_Timestamp,Correlation_ID\n",
        b'Domain,Function,Start_Timestamp,End_Timestamp,Correlation_ID\n\nHIP_API_DOMAIN,"hipMalloc",1,2,3\n',
        b"Domain,ROCTX_ID,Message,Timestamp\n",
        b"not,a,profiler\n1,2,3\n",
    ],
)
def test_sniff_rejects_other_tools(tmp_path, header):
    path = tmp_path / "results_stats.csv"
    path.write_bytes(header)
    assert sniffed(path) is None


# --------------------------------------------------------------------------- kernel layouts


KERNEL_FIELDS = {
    "start": "start_timestamp",
    "end": "end_timestamp",
    "correlation_id": "correlation_id",
    "kernel_id": "kernel_id",
    "queue": "queue_id",
    "dispatch_id": "dispatch_id",
    "tid": "thread_id",
    "stream": "stream_id",
    "wg_x": "workgroup_size_x",
    "wg_y": "workgroup_size_y",
    "wg_z": "workgroup_size_z",
    "grid_x": "grid_size_x",
    "grid_y": "grid_size_y",
    "grid_z": "grid_size_z",
    "lds_bytes": ("lds_block_size", "group_segment_size"),
    "scratch_bytes": ("scratch_size", "private_segment_size"),
    "arch_vgpr": "vgpr_count",
    "accum_vgpr": "accum_vgpr_count",
    "sgpr": "sgpr_count",
}


@pytest.mark.parametrize(
    "path, ncols",
    [
        (HPC / "omp_kernel_trace_head.csv", 16),  # ROCm 6.2
        (DOCS63 / "kernel_trace.csv", 18),  # ROCm 6.3/6.4
        (DOCS7 / "kernel_trace.csv", 22),  # ROCm 7.x
        (HPC / "rocpd2csv_out_kernel_trace_head.csv", 23),  # rocpd2csv (Guid + 22)
    ],
)
def test_kernel_trace_layouts_match_stdlib_csv(path, ncols):
    rows = csv_rows(path)
    assert len(rows[0]) == ncols
    run = load_one(path)
    k = run.kernels
    assert len(k) == len(rows)
    # the loader does not reorder rows of one file; finish() sorts later
    assert k["name"].astype(str).tolist() == [r["kernel_name"] for r in rows]
    assert k["agent"].tolist() == [agent_token(r["agent_id"]) for r in rows]
    for column, source in KERNEL_FIELDS.items():
        sources = source if isinstance(source, tuple) else (source,)
        present = [s for s in sources if s in rows[0]]
        expected = [int(r[present[0]]) for r in rows] if present else [UNKNOWN] * len(rows)
        assert k[column].tolist() == expected, column
    assert k["start"].dtype == np.int64
    assert (k["end"] >= k["start"]).all()


def test_kernel_trace_values_spot_checks():
    omp = load_one(HPC / "omp_kernel_trace_head.csv").kernels
    # 6.2 layout: Group_Segment_Size -> lds_bytes (first row 4360), no dispatch/thread ids
    assert omp["lds_bytes"].iloc[0] == 4360
    assert (omp["dispatch_id"] == UNKNOWN).all() and (omp["tid"] == UNKNOWN).all()
    assert omp["start"].iloc[0] == 5329321973213203  # exact int64, no float round trip

    rocpd = load_one(HPC / "rocpd2csv_out_kernel_trace_head.csv").kernels
    # rocpd2csv Title-case Lds_Block_Size / Vgpr_Count / Accum_Vgpr_Count / Sgpr_Count
    assert rocpd["lds_bytes"].iloc[0] == 8456
    assert rocpd["arch_vgpr"].iloc[0] == 16 and rocpd["sgpr"].iloc[0] == 32
    assert rocpd["accum_vgpr"].iloc[2] == 4
    assert rocpd["stream"].iloc[0] == 0 and rocpd["tid"].iloc[0] == 714789


def test_truncate_kernels_sample_is_complete_rows_with_short_names():
    # kernel_trace_truncated.csv is rocprofv3 --truncate-kernels output (short names),
    # not a file cut short: every row is complete.
    run = load_one(DOCS7 / "kernel_trace_truncated.csv")
    assert run.kernels["name"].astype(str).tolist() == [
        "addition_kernel",
        "divide_kernel",
        "multiply_kernel",
        "subtract_kernel",
    ]
    assert not run.partial and run.warnings == []


def test_cut_off_last_line_loads_complete_rows_and_marks_partial(tmp_path):
    text = (DOCS7 / "kernel_trace.csv").read_text()
    cut = text.rstrip("\n")
    cut = cut[: cut.rfind("\n") + 60]  # last row cut in the middle of the kernel name
    path = copy_as(DOCS7 / "kernel_trace.csv", tmp_path / "host" / "77_kernel_trace.csv", lambda _: cut)
    run = load_one(path)
    assert len(run.kernels) == len(csv_rows(DOCS7 / "kernel_trace.csv")) - 1
    assert run.partial
    assert any(str(path) in w and "incomplete" in w for w in run.warnings)


def test_cut_at_a_field_boundary_is_also_detected(tmp_path):
    text = (DOCS7 / "kernel_trace.csv").read_text().rstrip("\n")
    cut = text[: text.rfind(",1550151853")]  # ends right after Correlation_Id
    path = copy_as(DOCS7 / "kernel_trace.csv", tmp_path / "h" / "5_kernel_trace.csv", lambda _: cut)
    run = load_one(path)
    assert len(run.kernels) == 8 and run.partial


def test_unescaped_quotes_in_kernel_names(tmp_path):
    names = ['kern<"a">(int)', 'op "x", then y', "plain(float*, int)"]
    header = (DOCS7 / "kernel_trace.csv").read_text().splitlines()[0]
    body = "\n".join(
        f'"KERNEL_DISPATCH","Agent 4",1,1,9,{i + 1},{i},"{name}",{i + 1},{100 * i},{100 * i + 50},0,0,8,0,16,64,1,1,1024,1,1' for i, name in enumerate(names)
    )
    path = tmp_path / "q_kernel_trace.csv"
    path.write_text(header + "\n" + body + "\n")
    run = load_one(path)
    assert run.kernels["name"].astype(str).tolist() == names
    assert run.kernels["end"].tolist() == [50, 150, 250]
    assert not run.partial


def test_unescaped_quotes_and_cut_last_line_together(tmp_path):
    rows = (DOCS7 / "kernel_trace.csv").read_text().splitlines()
    rows[3] = rows[3].replace("multiply_kernel(", 'multiply_kernel<"x">(')
    text = "\n".join(rows)
    path = tmp_path / "qc_kernel_trace.csv"
    path.write_text(text[: text.rfind("\n") + 70])
    run = load_one(path)
    names = [r["kernel_name"] for r in csv_rows(DOCS7 / "kernel_trace.csv")][:-1]
    names[2] = names[2].replace("multiply_kernel(", 'multiply_kernel<"x">(')
    assert run.kernels["name"].astype(str).tolist() == names
    assert run.partial


def test_header_only_file_and_blank_timestamps(tmp_path):
    header = (DOCS7 / "kernel_trace.csv").read_text().splitlines()[0]
    empty = tmp_path / "e" / "1_kernel_trace.csv"
    empty.parent.mkdir()
    empty.write_text(header + "\n")
    issues = IssueSink()
    run = load_one(empty, issues=issues)
    assert len(run.kernels) == 0 and issues.issues == [] and not run.partial

    rows = (DOCS7 / "kernel_trace.csv").read_text().splitlines()
    rows[2] = rows[2].replace(",1550151853075237,", ",,")  # End_Timestamp of dispatch 4 blank
    blank = tmp_path / "e" / "2_kernel_trace.csv"
    blank.write_text("\n".join(rows) + "\n")
    run = load_one(blank)
    assert len(run.kernels) == 8 and 4 not in run.kernels["dispatch_id"].tolist()
    assert any("1 row(s) without" in w for w in run.warnings) and not run.partial


def test_unescaped_quote_in_marker_message(tmp_path):
    header = (DOCS7 / "marker_api_trace.csv").read_text().splitlines()[0]
    path = tmp_path / "m_marker_api_trace.csv"
    path.write_text(header + '\n"MARKER_CORE_API","load "a.bin", step 2",5,5,1,10,20\n')
    run = load_one(path)
    assert run.api["name"].astype(str).tolist() == ['load "a.bin", step 2']
    assert run.markers["name"].astype(str).tolist() == ['load "a.bin", step 2']


def test_bad_file_is_one_error_and_other_files_still_load(tmp_path):
    good = copy_as(DOCS7 / "kernel_trace.csv", tmp_path / "h" / "9_kernel_trace.csv")
    bad = copy_as(
        DOCS7 / "memory_copy_trace.csv",
        tmp_path / "h" / "9_memory_copy_trace.csv",
        lambda t: t.replace(",1057963336487172,", ",not-a-number,"),
    )
    issues = IssueSink()
    run = load_one(good, bad, issues=issues)
    assert len(run.kernels) == 9
    assert [i.path for i in issues.issues] == [str(bad)]
    assert "\n" not in issues.issues[0].message
    assert run.partial


def test_the_kernel_trace_is_read_while_the_api_trace_parses_beside_it(tmp_path, monkeypatch):
    """The API trace ("9_hip_api_trace.csv") sorts before the kernel trace: its background
    read is waited for last, so the two parses overlap; the tables are the same as when
    each file is read alone, in file order."""
    api = copy_as(DOCS7 / "hip_runtime_trace.csv", tmp_path / "h" / "9_hip_api_trace.csv")
    kernels = copy_as(DOCS7 / "kernel_trace.csv", tmp_path / "h" / "9_kernel_trace.csv")
    alone = [load_one(api), load_one(kernels)]
    spans: dict[str, list[float]] = {}
    read = v3.read_csv_table

    def timed(path, kind):
        spans[kind] = [time.monotonic()]
        if kind == "api_trace":
            time.sleep(0.5)  # a long API trace
        try:
            return read(path, kind)
        finally:
            spans[kind].append(time.monotonic())

    monkeypatch.setattr(v3, "read_csv_table", timed)
    run = load_one(api, kernels)
    assert spans["kernel_trace"][0] < spans["api_trace"][1]  # started before the API trace was in
    assert run.api.equals(alone[0].api) and run.kernels.equals(alone[1].kernels)
    assert run.meta.files == [str(api), str(kernels)]


def test_a_failed_api_trace_read_beside_the_kernel_trace_is_its_own_error(tmp_path):
    api = copy_as(DOCS7 / "hip_runtime_trace.csv", tmp_path / "h" / "9_hip_api_trace.csv", lambda t: t.replace(",238,238,2,", ",x238,238,2,"))
    kernels = copy_as(DOCS7 / "kernel_trace.csv", tmp_path / "h" / "9_kernel_trace.csv")
    issues = IssueSink()
    run = load_one(api, kernels, issues=issues)
    assert len(run.kernels) == 9 and not len(run.api) and run.partial
    assert [i.path for i in issues.issues] == [str(api)]
    assert run.meta.files == [str(kernels)]


def test_bom_and_crlf(tmp_path):
    path = tmp_path / "6_kernel_trace.csv"
    path.write_bytes(b"\xef\xbb\xbf" + (DOCS7 / "kernel_trace.csv").read_bytes().replace(b"\n", b"\r\n"))
    run = load_one(path)
    assert run.kernels["end"].tolist() == [int(r["end_timestamp"]) for r in csv_rows(DOCS7 / "kernel_trace.csv")]
    assert not run.partial


def test_gzipped_file(tmp_path):
    path = tmp_path / "3_kernel_trace.csv.gz"
    path.write_bytes(gzip.compress((DOCS7 / "kernel_trace.csv").read_bytes()))
    run = load_one(path)
    assert len(run.kernels) == 9 and run.meta.pid == 3


# --------------------------------------------------------------------------- agents


def test_agent_info_mi300a():
    run = load_one(HPC / "omp_agent_info.csv", HPC / "omp_kernel_trace_head.csv")
    rows = {int(r["node_id"]): r for r in csv_rows(HPC / "omp_agent_info.csv")}
    assert [a.id for a in run.agents] == sorted(rows)
    assert [a.type for a in run.agents] == ["CPU"] * 4 + ["GPU"] * 4
    gpu = run.agent(4)
    row = rows[4]
    assert gpu.name == "gfx942" == gpu.arch
    assert gpu.product == "AMD Instinct MI300A" and gpu.vendor == "AMD"
    assert gpu.node_id == 4 and gpu.logical_index == 4 and gpu.type_index == 0
    assert gpu.gfx_target_version == int(row["gfx_target_version"]) == 90402
    assert gpu.cu_count == int(row["cu_count"]) == 228
    assert gpu.simd_count == int(row["simd_count"]) == 912
    assert gpu.simd_per_cu == 4 and gpu.wave_size == 64
    assert gpu.max_waves_per_simd == 8 and gpu.max_waves_per_cu == 32
    assert gpu.lds_bytes_per_cu == 64 * 1024
    assert gpu.num_xcc == 6 and gpu.max_clock_mhz == 2100 and gpu.workgroup_max_size == 1024
    assert gpu.extra["gpu_id"] == int(row["gpu_id"]) and gpu.extra["model_name"] == "ip discovery"
    assert run.agent(0).name == "AMD Instinct MI300A Accelerator" and run.agent(0).type_index == 0
    # integer Agent_Id (ROCm <= 6.4) is the node id: every kernel ran on GPU node 4
    assert set(run.kernels["agent"]) == {4}
    assert run.meta.extra["agent_index"] == ["node_id"]


def test_agent_n_without_agent_info_is_kept_as_index():
    run = load_one(DOCS7 / "kernel_trace.csv")
    assert set(run.kernels["agent"]) == {4}
    assert [(a.id, a.type, a.logical_index) for a in run.agents] == [(4, "GPU", 4)]


def test_agent_n_maps_through_logical_node_id(tmp_path):
    # Agent info where the GPU's logical index (1) differs from its KFD node id (7).
    def renumber(text):
        lines = text.splitlines()
        lines[2] = "7" + lines[2][1:]  # GPU row: Node_Id 1 -> 7, Logical_Node_Id stays 1
        return "\n".join(lines) + "\n"

    info = copy_as(DOCS7 / "238_agent_info.csv", tmp_path / "node" / "55_agent_info.csv", renumber)
    relative = copy_as(DOCS7 / "kernel_trace.csv", tmp_path / "node" / "55_kernel_trace.csv", lambda t: t.replace('"Agent 4"', '"Agent 1"'))
    copies = copy_as(
        DOCS7 / "memory_copy_trace.csv",
        tmp_path / "node" / "55_memory_copy_trace.csv",
        lambda t: t.replace('"Agent 4"', '"GPU 0"').replace('"Agent 0"', '"CPU 0"'),
    )
    run = load_one(info, relative, copies)
    assert [(a.id, a.type, a.logical_index) for a in run.agents] == [(0, "CPU", 0), (7, "GPU", 1)]
    assert set(run.kernels["agent"]) == {7}
    assert run.copies["src_agent"].tolist() == [0, 0, 7, 7]
    assert run.copies["dst_agent"].tolist() == [7, 7, 0, 0]
    assert run.agent(7).name == "gfx900"
    assert run.warnings == []


# --------------------------------------------------------------------------- other tables


def test_api_traces_domains_and_markers():
    expected_domain = {
        "hip_compile_trace.csv": "hip",
        "hip_runtime_trace.csv": "hip",
        "hsa_api_trace.csv": "hsa",
        "marker_api_trace.csv": "marker",
        "rccl_trace.csv": "rccl",
        "rocdecode_api_trace.csv": "rocdecode",
        "rocjpeg_api_trace.csv": "rocjpeg",
        "rocpd-to-csv.csv": "hip",
    }
    for name, domain in expected_domain.items():
        for folder in (DOCS7, DOCS63):
            path = folder / name
            if not path.exists():
                continue
            rows = csv_rows(path)
            run = load_one(path)
            api = run.api
            assert len(api) == len(rows)
            assert set(api["domain"].astype(str)) == {domain}
            assert api["name"].astype(str).tolist() == [r["function"] for r in rows]
            assert api["pid"].tolist() == [int(r["process_id"]) for r in rows]
            assert api["tid"].tolist() == [int(r["thread_id"]) for r in rows]
            assert api["correlation_id"].tolist() == [int(r["correlation_id"]) for r in rows]
            assert (api["end"] - api["start"]).tolist() == [int(r["end_timestamp"]) - int(r["start_timestamp"]) for r in rows]
            assert run.meta.pid == int(rows[0]["process_id"])
            if domain == "marker":
                assert run.markers["name"].astype(str).tolist() == [r["function"] for r in rows]
                assert set(run.markers["source"].astype(str)) == {"roctx"}
            else:
                assert len(run.markers) == 0


@pytest.mark.parametrize("folder, with_stream", [(DOCS7, True), (DOCS63, False)])
def test_memory_copies(folder, with_stream):
    path = folder / "memory_copy_trace.csv"
    rows = csv_rows(path)
    run = load_one(path)
    c = run.copies
    short = {"MEMORY_COPY_HOST_TO_DEVICE": "HtoD", "MEMORY_COPY_DEVICE_TO_HOST": "DtoH"}
    assert c["direction"].astype(str).tolist() == [short[r["direction"]] for r in rows]
    assert c["name"].astype(str).tolist() == [r["direction"] for r in rows]
    assert c["src_agent"].tolist() == [agent_token(r["source_agent_id"]) for r in rows]
    assert c["dst_agent"].tolist() == [agent_token(r["destination_agent_id"]) for r in rows]
    assert c["start"].tolist() == [int(r["start_timestamp"]) for r in rows]
    assert (c["bytes"] == UNKNOWN).all()  # rocprofv3 CSV has no byte count
    assert c["stream"].tolist() == ([int(r["stream_id"]) for r in rows] if with_stream else [UNKNOWN] * len(rows))
    # minimal agents: host side of HtoD is a CPU, device side a GPU
    src = agent_token(rows[0]["source_agent_id"])
    dst = agent_token(rows[0]["destination_agent_id"])
    assert run.agent(src).type == "CPU" and run.agent(dst).type == "GPU"


def test_memory_copy_size_column_is_used_when_present(tmp_path):
    path = copy_as(
        DOCS7 / "memory_copy_trace.csv",
        tmp_path / "s_memory_copy_trace.csv",
        lambda t: "\n".join(line + (',"Size"' if i == 0 else f",{4096 * i}") for i, line in enumerate(t.strip().splitlines())),
    )
    assert load_one(path).copies["bytes"].tolist() == [4096, 8192, 12288, 16384]


def test_memory_allocations():
    path = DOCS7 / "memory_allocation_trace.csv"
    rows = csv_rows(path)
    a = load_one(path).allocations
    assert a["operation"].astype(str).tolist() == ["ALLOCATE", "ALLOCATE", "FREE", "FREE"]
    assert a["agent"].tolist() == [agent_token(r["agent_id"]) for r in rows] == [0, 0, UNKNOWN, UNKNOWN]
    assert a["bytes"].tolist() == [int(r["allocation_size"]) for r in rows]
    assert a["address"].tolist() == [int(r["address"], 16) for r in rows]
    assert a["correlation_id"].tolist() == [1, 2, 7, 8]


@pytest.mark.parametrize("variant", ["rocm7-docs", "rocm6.2-Alloc_flags", "with-Allocation_Size"])
def test_scratch_memory_layouts(tmp_path, variant):
    src = DOCS7 / "scratch_memory_trace.csv"
    if variant == "rocm7-docs":
        path = src
    elif variant == "rocm6.2-Alloc_flags":
        path = copy_as(src, tmp_path / "a_scratch_memory_trace.csv", lambda t: t.replace('"Alloc_Flags"', '"Alloc_flags"'))
    else:
        path = copy_as(
            src,
            tmp_path / "b_scratch_memory_trace.csv",
            lambda t: "\n".join(line + (',"Allocation_Size"' if i == 0 else f",{1000 * i}") for i, line in enumerate(t.strip().splitlines())),
        )
    rows = csv_rows(path)
    s = load_one(path).scratch
    assert s["operation"].astype(str).tolist() == ["ALLOC", "ALLOC"]
    assert s["agent"].tolist() == [4, 4]
    assert s["tid"].tolist() == [int(r["thread_id"]) for r in rows]
    assert s["flags"].astype(str).tolist() == ["0", "0"]
    assert s["end"].tolist() == [int(r["end_timestamp"]) for r in rows]
    assert s["bytes"].tolist() == ([1000, 2000] if variant == "with-Allocation_Size" else [UNKNOWN, UNKNOWN])


def _drop_column(text: str, name: str) -> str:
    rows = list(csv.reader(text.splitlines()))
    index = rows[0].index(name)
    out = []
    for row in rows:
        del row[index]
        out.append(row)
    lines = []
    for row in out:
        lines.append(",".join(v if v.replace(".", "").isdigit() else f'"{v}"' for v in row))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "path, ncols",
    [
        (DOCS7 / "kernel_names.csv", 15),  # ROCm 6.2 layout
        (DOCS63 / "counter_collection.csv", 16),  # 6.3-dev: Kernel_Id, no timestamps
        (None, 18),  # ROCm 6.3: 19-col minus Accum_VGPR_Count (derived)
        (DOCS7 / "counter_collection.csv", 19),  # ROCm 6.4 / 7.x
    ],
)
def test_counter_only_runs_reconstruct_kernels(tmp_path, path, ncols):
    if path is None:
        path = copy_as(
            DOCS7 / "counter_collection.csv",
            tmp_path / "c18_counter_collection.csv",
            lambda t: _drop_column(t, "Accum_VGPR_Count"),
        )
    rows = csv_rows(path)
    assert len(rows[0]) == ncols
    run = load_one(path)
    counters = run.counters
    assert len(counters) == len(rows)
    assert counters["counter"].astype(str).tolist() == [r["counter_name"] for r in rows]
    assert counters["value"].tolist() == [float(r["counter_value"]) for r in rows]
    assert counters["dispatch_id"].tolist() == [int(r["dispatch_id"]) for r in rows]
    assert counters["agent"].tolist() == [agent_token(r["agent_id"]) for r in rows]

    first = {}
    for r in rows:
        first.setdefault(int(r["dispatch_id"]), r)
    k = run.kernels
    assert k["dispatch_id"].tolist() == list(first)
    assert k["name"].astype(str).tolist() == [r["kernel_name"] for r in first.values()]
    assert k["grid_x"].tolist() == [int(r["grid_size"]) for r in first.values()]
    assert k["wg_x"].tolist() == [int(r["workgroup_size"]) for r in first.values()]
    assert k["arch_vgpr"].tolist() == [int(r["vgpr_count"]) for r in first.values()]
    assert k["tid"].tolist() == [int(r["thread_id"]) for r in first.values()]
    assert k["queue"].tolist() == [int(r["queue_id"]) for r in first.values()]
    if "start_timestamp" in rows[0]:
        assert k["start"].tolist() == [int(r["start_timestamp"]) for r in first.values()]
        assert k["end"].tolist() == [int(r["end_timestamp"]) for r in first.values()]
    else:
        assert (k["start"] == UNKNOWN).all()
    assert v3.COUNTER_WARNING in run.warnings
    assert run.meta.pid == int(rows[0]["process_id"])


def test_counters_with_kernel_trace_do_not_replace_kernels(tmp_path):
    kt = copy_as(DOCS7 / "kernel_trace.csv", tmp_path / "h" / "8_kernel_trace.csv")
    cc = copy_as(DOCS7 / "counter_collection.csv", tmp_path / "h" / "8_counter_collection.csv")
    run = load_one(kt, cc)
    assert len(run.kernels) == 9 and len(run.counters) == 4
    assert v3.COUNTER_WARNING not in run.warnings


def test_pc_sampling():
    host = DOCS7 / "pc_sampling_host_trap.csv"
    rows = csv_rows(host)
    s = load_one(host).pc_samples
    assert len(s) == len(rows) == 79  # last line has no newline
    assert s["ts"].tolist() == [int(r["sample_timestamp"]) for r in rows]
    assert s["instruction"].astype(str).tolist() == [r["instruction"] for r in rows]
    assert s["exec_mask"].tolist() == [int(r["exec_mask"]) for r in rows]

    sto = DOCS7 / "pc_sampling_stochastic_debug.csv"
    rows = csv_rows(sto)
    s = load_one(sto).pc_samples
    assert len(s) == len(rows)
    assert s["stall_reason"].astype(str).tolist() == [r["stall_reason"] for r in rows]
    assert s["comment"].astype(str).tolist() == [r["instruction_comment"] for r in rows]
    # exec mask 2**64-1 is kept bit-for-bit in the int64 column
    assert s["exec_mask"].to_numpy().view(np.uint64).tolist() == [int(r["exec_mask"]) for r in rows]


# --------------------------------------------------------------------------- stats


@pytest.mark.parametrize("folder", [DOCS7, DOCS63])
def test_stats_file_parsed_exactly(folder):
    path = folder / "hip_api_stats.csv"
    rows = csv_rows(path)
    run = load_one(path)
    stats = run.tool_stats["hip_api_stats"]
    assert list(stats.columns) == list(STATS_COLUMNS)
    assert stats["name"].tolist() == [r["name"] for r in rows]
    assert stats["calls"].tolist() == [int(r["calls"]) for r in rows]
    assert stats["total_ns"].tolist() == [int(r["totaldurationns"]) for r in rows]
    assert stats["min_ns"].tolist() == [int(r["minns"]) for r in rows]
    assert stats["max_ns"].tolist() == [int(r["maxns"]) for r in rows]
    assert stats["avg_ns"].tolist() == [float(r["averagens"]) for r in rows]
    assert stats["percent"].tolist() == [float(r["percentage"]) for r in rows]
    assert stats["stddev_ns"].tolist() == [float(r["stddev"]) for r in rows]
    # internal consistency of the profiler's numbers: avg = total / calls, percent of the total
    assert np.allclose(stats["avg_ns"], stats["total_ns"] / stats["calls"], rtol=1e-9)
    share = 100 * stats["total_ns"] / stats["total_ns"].sum()
    assert np.allclose(stats["percent"], share, rtol=5e-3)
    assert (stats["min_ns"] <= stats["avg_ns"]).all() and (stats["avg_ns"] <= stats["max_ns"]).all()


def test_docs_stats_and_traces_are_from_different_runs():
    """The docs folder's hip_api_stats.csv does not describe any HIP trace shipped beside it
    (different processes), so it cannot be cross-checked against a recomputation: the stats
    test above checks the parse exactly instead. This test records that fact."""
    stats = load_one(DOCS7 / "hip_api_stats.csv").tool_stats["hip_api_stats"].set_index("name")
    for name in ("hip_trace.csv", "hip_runtime_trace.csv", "rocpd-to-csv.csv"):
        api = load_one(DOCS7 / name).api
        calls = api.groupby(api["name"].astype(str)).size()
        assert not all(calls.get(n, 0) == stats.loc[n, "calls"] for n in stats.index)


def test_recomputed_stats_equal_profiler_stats_by_construction(tmp_path):
    """A generated run whose stats file is written from the trace with rocprofv3's
    formulas (statistics.hpp: sample stddev, percent of the domain total)."""
    rng = np.random.default_rng(3)
    names = ["hipMalloc", "hipLaunchKernel", "hipMemcpy"]
    lines = ['"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"']
    durations: dict[str, list[int]] = {n: [] for n in names}
    t = 10**15
    for i in range(60):
        name = names[int(rng.integers(0, 3))]
        dur = int(rng.integers(100, 10**6))
        durations[name].append(dur)
        lines.append(f'"HIP_RUNTIME_API_EXT","{name}",42,43,{i + 1},{t},{t + dur}')
        t += dur + 7
    total = sum(sum(d) for d in durations.values())
    stat_lines = ['"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"']
    for name, d in sorted(durations.items(), key=lambda kv: -sum(kv[1])):
        stat_lines.append(f'"{name}",{len(d)},{sum(d)},{np.mean(d):.6f},{100 * sum(d) / total:.2f},{min(d)},{max(d)},{np.std(d, ddof=1):.6f}')
    (tmp_path / "gen").mkdir()
    trace = tmp_path / "gen" / "42_hip_api_trace.csv"
    trace.write_text("\n".join(lines) + "\n")
    stats_path = tmp_path / "gen" / "42_hip_api_stats.csv"
    stats_path.write_text("\n".join(stat_lines) + "\n")
    run = load_one(trace, stats_path)
    stats = run.tool_stats["hip_api_stats"].set_index("name")
    dur = (run.api["end"] - run.api["start"]).groupby(run.api["name"].astype(str))
    ours = dur.agg(["count", "sum", "min", "max", "mean", "std"])
    for name in names:
        assert ours.loc[name, "count"] == stats.loc[name, "calls"]
        assert ours.loc[name, "sum"] == stats.loc[name, "total_ns"]
        assert ours.loc[name, "min"] == stats.loc[name, "min_ns"]
        assert ours.loc[name, "max"] == stats.loc[name, "max_ns"]
        assert ours.loc[name, "mean"] == pytest.approx(stats.loc[name, "avg_ns"], abs=1e-6)
        assert ours.loc[name, "std"] == pytest.approx(stats.loc[name, "stddev_ns"], abs=1e-6)


def test_domain_stats_and_rocm62_stats_names(tmp_path):
    run = load_one(DOCS7 / "hip_domain_stats.csv")
    d = run.tool_stats["domain_stats"]
    assert d.to_dict("records") == [
        {
            "name": "HIP_API",
            "calls": 13,
            "total_ns": 458514859,
            "avg_ns": 35270373.769231,
            "percent": 100.0,
            "min_ns": 2300,
            "max_ns": 352276613,
            "stddev_ns": 99315857.54624,
        }
    ]
    assert run.meta.label == "hip"  # "<prefix>_domain_stats" with prefix "hip"
    old = copy_as(DOCS7 / "hip_api_stats.csv", tmp_path / "h" / "12_hip_stats.csv")
    assert list(load_one(old).tool_stats) == ["hip_api_stats"]


# --------------------------------------------------------------------------- runs / groups


def test_default_layout_hostname_pid(tmp_path):
    host = tmp_path / "node017"
    kt = copy_as(DOCS7 / "kernel_trace.csv", host / "1234_kernel_trace.csv")
    api = copy_as(DOCS7 / "hip_runtime_trace.csv", host / "1234_hip_api_trace.csv")
    other = copy_as(DOCS7 / "kernel_trace.csv", host / "999_kernel_trace.csv")
    runs = {r.meta.label: r for r in load_files(kt, api, other)}
    assert set(runs) == {"node017/1234", "node017/999"}
    run = runs["node017/1234"]
    assert run.meta.pid == 1234 and run.meta.hostname == "node017"
    assert run.meta.tool == "rocprofv3" and run.meta.formats == ["rocprofv3-csv"]
    assert set(run.kernels["pid"]) == {1234}  # kernel_trace has no Process_Id column
    assert len(run.kernels) == 9 and len(run.api) == 8
    assert sorted(run.meta.files) == sorted([str(kt), str(api)])


def test_named_prefix_takes_pid_from_process_id(tmp_path):
    api = copy_as(DOCS7 / "hip_runtime_trace.csv", tmp_path / "out" / "myrun_hip_api_trace.csv")
    kt = copy_as(DOCS7 / "kernel_trace.csv", tmp_path / "out" / "myrun_kernel_trace.csv")
    run = load_one(api, kt)
    assert run.meta.label == "myrun" and run.meta.hostname == ""
    assert run.meta.pid == 238  # Process_Id of every API row
    assert set(run.kernels["pid"]) == {238}


def _patched_modules(monkeypatch):
    monkeypatch.setattr(detect, "loader_modules", lambda: [v3])


def test_load_path_directory(monkeypatch):
    _patched_modules(monkeypatch)
    runset = detect.load_path(DATA)
    assert runset.errors == []
    by_label = {r.meta.label: r for r in runset.runs}
    # the counter files name other processes (Process_Id) than the traced one: runs of their own
    passes = {"rocprofv3-docs-rocm7 counters pid 15606", "rocprofv3-docs-rocm7 counters pid 36499"}
    passes |= {f"rocprofv3-docs-rocm6.3 counters pid {pid}" for pid in (19396, 36499)}
    assert set(by_label) == {"rocprofv3-docs-rocm7", "rocprofv3-docs-rocm6.3", "omp", "rocpd2csv_out", "hip", "rocprofv3-docs-rocm7/238"} | passes
    docs7 = by_label["rocprofv3-docs-rocm7"]
    n = lambda *names: sum(len(csv_rows(DOCS7 / x)) for x in names)  # noqa: E731
    assert len(docs7.kernels) == n("kernel_trace.csv", "kernel_trace_truncated.csv")
    assert len(docs7.counters) == 0
    assert len(by_label["rocprofv3-docs-rocm7 counters pid 15606"].counters) == n("counter_collection.csv")
    assert len(by_label["rocprofv3-docs-rocm7 counters pid 36499"].counters) == n("kernel_names.csv")
    assert len(docs7.pc_samples) == n("pc_sampling_host_trap.csv", "pc_sampling_host_trap_debug.csv", "pc_sampling_stochastic_debug.csv")
    api_files = [p.name for p in DOCS7.glob("*.csv") if v3._read_kind(sniffed(p).kind) == "api_trace"]
    assert len(docs7.api) == n(*api_files) == 127
    assert docs7.kernels["start"].is_monotonic_increasing  # finish() sorted
    omp = by_label["omp"]
    assert len(omp.kernels) == 9 and omp.agent(4).product == "AMD Instinct MI300A"
    skipped = {Path(i.path).name for i in runset.skipped}
    assert "PROVENANCE.md" in skipped


def test_load_path_with_every_registered_loader():
    """Same directory through the full registry: no other loader takes these files."""
    from tui_prof.loaders import LOADER_MODULES

    for name in LOADER_MODULES:
        importlib.import_module(f"tui_prof.loaders.{name}")
    runset = detect.load_path(DATA)
    assert runset.errors == []
    assert runset.formats == ["rocprofv3-csv"]
    assert sum(len(r.kernels) for r in runset.runs) == 9 + 4 + 7 + 9 + 9 + (7 + 4) + (4 + 4)  # + the four counter passes, kernels rebuilt from their rows


def test_load_path_never_writes(tmp_path, monkeypatch):
    _patched_modules(monkeypatch)
    root = tmp_path / "copy"
    shutil.copytree(DOCS7, root)
    before = sorted(p.name for p in root.iterdir())
    detect.load_path(root)
    assert sorted(p.name for p in root.iterdir()) == before


# --------------------------------------------------------------------------- fuzz findings (issue 7)


def test_good_files_take_the_strict_fast_path(monkeypatch):
    """Well-formed files parse once with no per-row Python callback and no lenient re-read."""

    def no_fallback(data):
        raise AssertionError("lenient re-read used for a well-formed file")

    monkeypatch.setattr(v3, "_utf8", no_fallback)
    for path in (DOCS7 / "kernel_trace.csv", DOCS7 / "memory_copy_trace.csv", DOCS63 / "kernel_trace.csv"):
        issues = IssueSink()
        run = load_one(path, issues=issues)
        assert issues.issues == [] and not run.partial


def test_non_utf8_bad_row_is_skipped_without_unraisable(tmp_path, monkeypatch):
    """Fuzz case: an extra cell with non-UTF-8 bytes. pyarrow decodes an invalid row strictly
    before calling the handler; the loader must hand it valid UTF-8 (no 'Exception ignored')."""
    import sys

    lines = (DOCS7 / "kernel_trace.csv").read_bytes().split(b"\n")
    lines[1] += b",\xff\xfeextra"
    path = tmp_path / "h" / "3_kernel_trace.csv"
    path.parent.mkdir()
    path.write_bytes(b"\n".join(lines))
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(repr(u.exc_value)))
    issues = IssueSink()
    run = load_one(path, issues=issues)
    assert unraisable == []
    expected = csv_rows(DOCS7 / "kernel_trace.csv")[1:]  # the stdlib oracle without the damaged first row
    assert run.kernels["dispatch_id"].tolist() == [int(r["dispatch_id"]) for r in expected]
    assert run.kernels["end"].tolist() == [int(r["end_timestamp"]) for r in expected]
    assert [(i.path, i.severity) for i in issues.issues] == [(str(path), "error")]
    assert "1 malformed row(s)" in issues.issues[0].message
    assert f"{len(expected)} complete rows loaded" in issues.issues[0].message
    assert any("1 malformed row(s) skipped" in w for w in run.warnings)


def test_non_utf8_byte_in_kernel_name_loads_with_replacement(tmp_path):
    """A kernel name with a byte that is not UTF-8 (a well-formed row) loads with U+FFFD."""
    data = (DOCS7 / "kernel_trace.csv").read_bytes().replace(b"void addition_kernel", b"void addition\xffkernel", 1)
    path = tmp_path / "4_kernel_trace.csv"
    path.write_bytes(data)
    issues = IssueSink()
    run = load_one(path, issues=issues)
    expected = csv_rows(DOCS7 / "kernel_trace.csv")
    names = [r["kernel_name"] for r in expected]
    first = next(i for i, n in enumerate(names) if "void addition_kernel" in n)
    names[first] = names[first].replace("void addition_kernel", "void addition\ufffdkernel", 1)
    assert run.kernels["name"].astype(str).tolist() == names
    assert issues.issues == []
    assert any("not UTF-8" in w for w in run.warnings)


@pytest.mark.parametrize("gz", [False, True])
def test_truncated_file_is_a_load_issue_and_keeps_complete_rows(tmp_path, gz):
    """Fuzz case: kernel_trace.csv cut inside its last row -> partial Run, one LoadIssue naming
    the file, every complete row loaded (count from the stdlib parser on the intact file)."""
    src = (DOCS7 / "kernel_trace.csv").read_bytes()
    cut = src[: len(src) - 40]
    path = tmp_path / ("1234_kernel_trace.csv" + (".gz" if gz else ""))
    path.write_bytes(gzip.compress(cut) if gz else cut)
    issues = IssueSink()
    run = load_one(path, issues=issues)
    expected = csv_rows(DOCS7 / "kernel_trace.csv")[:-1]
    assert run.partial
    assert run.kernels["start"].tolist() == [int(r["start_timestamp"]) for r in expected]
    assert [(i.path, i.severity) for i in issues.issues] == [(str(path), "error")]
    assert issues.issues[0].message == f"truncated: last row cut short and dropped; {len(expected)} complete rows loaded"


def _with_cell(src: Path, dst: Path, row: int, cell: int, value: bytes) -> Path:
    lines = src.read_bytes().split(b"\n")
    cells = lines[row].split(b",")
    cells[cell] = value
    lines[row] = b",".join(cells)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(b"\n".join(lines))
    return dst


HUGE = b"99999999999999999999999999"  # > 2**63


def test_agent_id_beyond_int64_is_unknown_and_siblings_load(tmp_path):
    """Fuzz case: Source_Agent_Id beyond int64 (ROCm 6.3 node-id spelling) -> -1 with a warning;
    the sibling kernel_trace.csv and the other copy rows are unaffected."""
    kernels = copy_as(DOCS63 / "kernel_trace.csv", tmp_path / "kernel_trace.csv")
    copies = _with_cell(DOCS63 / "memory_copy_trace.csv", tmp_path / "memory_copy_trace.csv", 1, 2, HUGE)
    issues = IssueSink()
    run = load_one(kernels, copies, issues=issues)
    assert issues.issues == []
    assert len(run.kernels) == len(csv_rows(DOCS63 / "kernel_trace.csv"))
    rows = csv_rows(DOCS63 / "memory_copy_trace.csv")
    src = [agent_token(r["source_agent_id"]) for r in rows]
    src[0] = UNKNOWN
    assert run.copies["src_agent"].tolist() == src
    assert run.copies["start"].tolist() == [int(r["start_timestamp"]) for r in rows]
    assert any("1 agent id value(s) beyond int64" in w for w in run.warnings)


def test_agent_index_beyond_int64_is_unknown(tmp_path):
    """The 7.x "Agent N" spelling with N beyond int64 is unknown too."""
    path = _with_cell(DOCS7 / "memory_copy_trace.csv", tmp_path / "memory_copy_trace.csv", 1, 3, b'"Agent ' + HUGE + b'"')
    issues = IssueSink()
    run = load_one(path, issues=issues)
    rows = csv_rows(DOCS7 / "memory_copy_trace.csv")
    assert issues.issues == [] and len(run.copies) == len(rows)
    assert run.copies["src_agent"].tolist()[0] == UNKNOWN
    assert run.copies["src_agent"].tolist()[1:] == [agent_token(r["source_agent_id"]) for r in rows[1:]]


def test_timestamp_beyond_int64_fails_that_file_alone(tmp_path):
    """An integer column beyond int64 cannot be read: that file is one one-line error, the
    sibling still loads."""
    kernels = copy_as(DOCS63 / "kernel_trace.csv", tmp_path / "kernel_trace.csv")
    copies = _with_cell(DOCS63 / "memory_copy_trace.csv", tmp_path / "memory_copy_trace.csv", 1, 5, HUGE)
    issues = IssueSink()
    run = load_one(kernels, copies, issues=issues)
    assert [i.path for i in issues.issues] == [str(copies)]
    assert "\n" not in issues.issues[0].message and "memory_copy_trace" in issues.issues[0].message
    assert len(run.kernels) == len(csv_rows(DOCS63 / "kernel_trace.csv")) and len(run.copies) == 0
    assert run.partial


def test_address_beyond_64_bits_is_unknown():
    assert v3._hex_or_int("0x" + "f" * 17) == UNKNOWN
    assert v3._hex_or_int("9" * 30) == UNKNOWN
    assert v3._hex_or_int("0xffffffffffffffff") == -1  # 2**64 - 1 as two's complement
    assert v3._hex_or_int("0x00007ffb26354000") == 0x7FFB26354000


# --------------------------------------------------------------------------- read speed paths (issue 18)


def test_int_columns_are_int32_only_when_every_value_fits(tmp_path):
    """A trace column whose values all fit comes out of Arrow as int32; one value beyond
    int32 keeps the column int64 with that value exact; stats files stay int64."""
    with open(DOCS7 / "kernel_trace.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    column = [h.lower() for h in rows[0]].index("correlation_id")
    rows[1][column] = str(3_000_000_000)
    path = tmp_path / "7_kernel_trace.csv"
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    cols, _, truncated, malformed = v3.read_csv_table(path, "kernel_trace")
    expected = [int(r[column]) for r in rows[1:]]
    assert (truncated, malformed) == (False, 0)
    assert cols["correlation_id"].dtype == np.int64
    assert cols["correlation_id"].tolist() == expected
    assert cols["queue_id"].dtype == np.int32
    assert cols["queue_id"].tolist() == [int(r["queue_id"]) for r in csv_rows(path)]
    assert cols["start_timestamp"].dtype == np.int64  # ns since boot: beyond int32
    run = load_one(path)
    assert run.kernels["correlation_id"].dtype == np.int64
    assert run.kernels["correlation_id"].tolist() == expected
    stats, _, _, _ = v3.read_csv_table(DOCS7 / "hip_api_stats.csv", "stats")
    assert stats["calls"].dtype == np.int64
    assert stats["calls"].tolist() == [int(r["calls"]) for r in csv_rows(DOCS7 / "hip_api_stats.csv")]


def test_api_file_read_beside_the_kernel_file_gives_the_same_run(tmp_path, monkeypatch):
    """The API trace parses in a thread of its own while the kernel trace is read: the run is
    the one a file-by-file read gives, and a broken API file is still one issue naming it."""
    kernels = copy_as(DOCS7 / "kernel_trace.csv", tmp_path / "h" / "5_kernel_trace.csv")
    api = copy_as(DOCS7 / "hsa_api_trace.csv", tmp_path / "h" / "5_hsa_api_trace.csv")
    beside = load_one(kernels, api)
    monkeypatch.setattr(v3, "_read_early", lambda files: {})
    serial = load_one(kernels, api)
    assert len(beside.api) == len(csv_rows(api))
    assert beside.api.equals(serial.api) and beside.kernels.equals(serial.kernels)
    assert beside.meta.files == serial.meta.files
    monkeypatch.undo()
    api.write_text(api.read_text().replace(",197,197,1,", ",197,197,x1,", 1))  # not an integer: the read raises in its thread
    issues = IssueSink()
    run = load_one(kernels, api, issues=issues)
    assert len(run.kernels) == 9 and len(run.api) == 0
    assert [i.path for i in issues.issues] == [str(api)]
    assert "cannot parse CSV" in issues.issues[0].message
