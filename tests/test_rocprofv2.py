"""rocprofv2 loader: real file-plugin / CLI-plugin outputs (tests/data/rocprofv2, see PROVENANCE.md)
read back independently with the csv module / regexes, plus generated files with known answers."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import tui_prof.loaders.detect as detect
from tui_prof.loaders import rocprofv2 as v2
from tui_prof.loaders.base import read_head

DATA = Path(__file__).parent / "data" / "rocprofv2"


def test_file_plugin_hip_api_trace_matches_the_file():
    path = DATA / "saltfish" / "hip_api_trace_hiptrace.csv"
    rows = [r for r in csv.reader(path.open()) if r][1:]  # header, then an empty line
    runset = detect.load_path(path.parent)
    assert runset.errors == [] and len(runset.runs) == 1
    run = runset.runs[0]
    assert run.meta.formats == ["rocprofv2"] and run.meta.label == "hiptrace"
    assert len(run.api) == len(rows) == 426
    api = run.api.sort_values("correlation_id").reset_index(drop=True)
    rows.sort(key=lambda r: int(r[4]))
    assert set(api["domain"]) == {"hip"}
    assert list(api["name"].astype(str)) == [r[1] for r in rows]
    assert api["start"].tolist() == [int(r[2]) for r in rows]  # exact int64 ns (16 digits)
    assert api["end"].tolist() == [int(r[3]) for r in rows]
    assert api["correlation_id"].tolist() == [int(r[4]) for r in rows]


def cli_fields(line: str) -> dict[str, str]:
    return dict(re.findall(r'(\w+)\("?([^")]*)"?\)', line))


def test_cli_golden_traces():
    runset = detect.load_path(DATA / "golden")
    assert runset.errors == []
    by_file = {Path(r.meta.files[0]).name: r for r in runset.runs}
    profiler = by_file["profiler_hip_vectoradd_golden_traces.txt"]
    line = next(l for l in (DATA / "golden" / "profiler_hip_vectoradd_golden_traces.txt").read_text().splitlines() if l.startswith("Dispatch_ID("))
    f = cli_fields(line)
    k = profiler.kernels.iloc[0]
    assert len(profiler.kernels) == 1
    assert str(k["name"]) == f["Kernel_Name"]
    assert (int(k["start"]), int(k["end"])) == (int(f["Begin_Timestamp"]), int(f["End_Timestamp"]))
    assert (int(k["dispatch_id"]), int(k["agent"]), int(k["queue"]), int(k["pid"]), int(k["grid_x"]), int(k["wg_x"])) == tuple(
        int(f[c]) for c in ("Dispatch_ID", "GPU_ID", "Queue_ID", "Process_ID", "Grid_Size", "Workgroup_Size")
    )
    counter = profiler.counters.iloc[0]
    assert (str(counter["counter"]), float(counter["value"])) == ("GRBM_COUNT", float(f["GRBM_COUNT"]))
    assert int(counter["dispatch_id"]) == int(k["dispatch_id"])

    tracer = by_file["tracer_hip_helloworld_golden_traces.txt"]
    lines = [cli_fields(l) for l in (DATA / "golden" / "tracer_hip_helloworld_golden_traces.txt").read_text().splitlines() if l.startswith("Domain(")]
    assert len(tracer.api) == len(lines) == 10
    assert list(tracer.api["name"].astype(str)) == [l["Function"] for l in lines]
    assert tracer.api["correlation_id"].tolist() == [int(l["Correlation_ID"]) for l in lines]
    assert (tracer.api["end"] - tracer.api["start"]).tolist() == [int(l["End_Timestamp"]) - int(l["Start_Timestamp"]) for l in lines]


def write_run(root: Path, pid: int = 4242) -> None:
    """A generated rocprofv2 run: 2 dispatches x 2 XCCs with 2 counters, HIP API, hcc ops, roctx."""
    (root / f"results_{pid}.csv").write_text(
        "Dispatch_ID,GPU_ID,Queue_ID,PID,TID,Grid_Size,Workgroup_Size,LDS_Per_Workgroup,Scratch_Per_Workitem,"
        "Arch_VGPR,Accum_VGPR,SGPR,Wave_Size,Kernel_Name,Start_Timestamp,End_Timestamp,Correlation_ID,XCC_Index,SQ_WAVES,GRBM_COUNT\n"
        "\n"
        f'1,4,1,{pid},11,1024,256,512,0,8,0,16,64,"kern_a(int, float)",1000000000000001,1000000000000101,7,0,16.000000,5.500000\n'
        f'1,4,1,{pid},11,1024,256,512,0,8,0,16,64,"kern_a(int, float)",1000000000000001,1000000000000101,7,1,16.000000,6.500000\n'
        f'2,4,1,{pid},11,64,64,0,0,4,0,8,64,"kern_b",1000000000000201,1000000000000251,9,0,1.000000,1.000000\n'
        f'2,4,1,{pid},11,64,64,0,0,4,0,8,64,"kern_b",1000000000000201,1000000000000251,9,1,3.000000,2.000000\n'
    )
    (root / f"hip_api_trace_{pid}.csv").write_text(
        "Domain,Function,Start_Timestamp,End_Timestamp,Correlation_ID\n\n"
        'HIP_API_DOMAIN,"hipLaunchKernel",999999999999990,999999999999999,7\n'
        'HIP_API_DOMAIN,"hipMemcpy",1000000000000150,1000000000000190,8\n'
        'HIP_API_DOMAIN,"hipLaunchKernel",1000000000000195,1000000000000199,9\n'
    )
    (root / f"hcc_ops_trace_{pid}.csv").write_text(
        "Domain,Operation,Kernel_Name,Start_Timestamp,Stop_Timestamp,Correlation_ID\n\n"
        'HIP_OPS_DOMAIN,"KernelExecution","kern_a(int, float)",1000000000000001,1000000000000101,7\n'
        'HIP_OPS_DOMAIN,"CopyHostToDevice",,1000000000000160,1000000000000180,8\n'
        'HIP_OPS_DOMAIN,"KernelExecution","kern_b",1000000000000201,1000000000000251,9\n'
    )
    (root / f"roctx_trace_{pid}.csv").write_text(
        'Domain,ROCTX_ID,Message,Timestamp\n\nROCTX_DOMAIN,0,"phase 1",1000000000000000\nROCTX_DOMAIN,1,,1000000000000300\n'
    )


def test_generated_run_known_answers(tmp_path):
    write_run(tmp_path)
    runset = detect.load_path(tmp_path)
    assert runset.errors == [] and len(runset.runs) == 1
    run = runset.runs[0]
    assert run.meta.pid == 4242
    # one kernel row per dispatch (not per XCC), and the hcc_ops kernels are not added again
    assert run.kernels["dispatch_id"].tolist() == [1, 2]
    assert run.kernels["name"].astype(str).tolist() == ["kern_a(int, float)", "kern_b"]
    assert (run.kernels["end"] - run.kernels["start"]).tolist() == [100, 50]
    assert int(run.kernels["lds_bytes"].iloc[0]) == 512
    # counters summed over the XCCs of a dispatch
    got = {(int(d), str(c)): float(v) for d, c, v in run.counters[["dispatch_id", "counter", "value"]].itertuples(index=False)}
    assert got == {(1, "SQ_WAVES"): 32.0, (1, "GRBM_COUNT"): 12.0, (2, "SQ_WAVES"): 4.0, (2, "GRBM_COUNT"): 3.0}
    # launch -> kernel by correlation id
    launches = run.api[run.api["name"] == "hipLaunchKernel"]["correlation_id"].tolist()
    assert sorted(launches) == sorted(run.kernels["correlation_id"].tolist()) == [7, 9]
    assert set(run.api["domain"]) == {"hip"}
    # the copy comes from hcc_ops (no kernel name)
    assert len(run.copies) == 1 and str(run.copies["direction"].iloc[0]) == "HtoD"
    assert int(run.copies["correlation_id"].iloc[0]) == 8
    assert run.markers["name"].astype(str).tolist() == ["phase 1", ""]
    assert (run.markers["start"] == run.markers["end"]).all()
    assert any("hcc_ops_trace" in w for w in run.warnings)


def test_truncated_csv_is_one_error_and_other_files_load(tmp_path):
    write_run(tmp_path)
    path = tmp_path / "hip_api_trace_4242.csv"
    path.write_bytes(path.read_bytes()[:-8])
    runset = detect.load_path(tmp_path)
    assert [Path(i.path).name for i in runset.errors] == ["hip_api_trace_4242.csv"]
    assert "truncated" in runset.errors[0].message and "\n" not in runset.errors[0].message
    run = runset.runs[0]
    assert len(run.api) == 2 and len(run.kernels) == 2 and run.partial


def test_sniff_does_not_claim_rocprofv3_or_legacy_files():
    v3_api = b'"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
    v3_kernel = b'"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name"\n'
    legacy = b'"Index","KernelName","gpu-id","queue-id"\n'
    for head in (v3_api, v3_kernel, legacy):
        assert v2.sniff(Path("x.csv"), head) is None
    path = DATA / "saltfish" / "hip_api_trace_hiptrace.csv"
    assert v2.sniff(path, read_head(path)).kind == "api_trace"
