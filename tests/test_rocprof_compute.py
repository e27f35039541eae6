"""rocprof-compute workload folders and analysis databases (issue 17): every value the loaders
store is compared with an exact parse of the sample file done here with the csv/sqlite3 modules."""

from __future__ import annotations

import csv
import re
import sqlite3
from pathlib import Path

import pytest

from tui_prof.loaders import load_path
from tui_prof.loaders import rocprof_compute as rc
from tui_prof.loaders.base import read_head

DATA = Path(__file__).parent / "data" / "rocprof_compute"
WORKLOADS = DATA / "workloads"
DB = DATA / "analysis_db" / "rocprof_compute_23ed6f36_slice.db"


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def workloads():
    runset = load_path(WORKLOADS)
    return runset, {run.meta.label: run for run in runset.runs}


@pytest.fixture(scope="module")
def db_run():
    runset = load_path(DB)
    assert not runset.issues
    (run,) = runset.runs
    return run


def _counter(run, dispatch: int, name: str) -> float:
    c = run.counters
    hit = c[(c["dispatch_id"] == dispatch) & (c["counter"].astype(str) == name)]["value"]
    assert len(hit) == 1, (dispatch, name, len(hit))
    return float(hit.iloc[0])


def test_every_workload_file_recognised(workloads):
    runset, runs = workloads
    assert runset.issues == []
    assert sorted(runs) == ["vcopy_MI100", "vcopy_MI300X_A1", "vcopy_MI300X_A1_rocpd", "vcopy_MI350"]
    assert {run.meta.formats[0] for run in runset.runs} == {"rocprof-compute"}
    kinds = {path.name: rc.sniff(path, read_head(path)).kind for path in WORKLOADS.iterdir()}
    assert kinds == {
        "vcopy_MI100_SQ_LEVEL_WAVES.csv": "pmc_wide",
        "vcopy_MI100_pmc_perf.csv": "pmc_wide",
        "vcopy_MI100_sysinfo.csv": "sysinfo",
        "vcopy_MI100_timestamps.csv": "timestamps",
        "vcopy_MI300X_A1_SQ_LEVEL_WAVES.csv": "pmc_wide",
        "vcopy_MI300X_A1_rocpd_pmc_perf.csv": "pmc_long",
        "vcopy_MI300X_A1_sysinfo.csv": "sysinfo",
        "vcopy_MI300X_A1_timestamps.csv": "timestamps",
        "vcopy_MI350_SQ_LEVEL_WAVES.csv": "pmc_wide",
        "vcopy_MI350_pmc_dispatch_info.csv": "dispatch_info",
        "vcopy_MI350_pmc_perf_0.csv": "pmc_wide",
        "vcopy_MI350_sysinfo.csv": "sysinfo",
    }


def test_rocprofv2_results_with_blank_line_stay_rocprofv2(tmp_path):
    # rocprofv2's own results file writes a blank line after the header when counters were collected.
    path = tmp_path / "results_1.csv"
    path.write_text(
        "Dispatch_ID,GPU_ID,Queue_ID,PID,TID,Grid_Size,Workgroup_Size,LDS_Per_Workgroup,Scratch_Per_Workitem,Arch_VGPR,Accum_VGPR,SGPR,"
        "Wave_Size,Kernel_Name,Start_Timestamp,End_Timestamp,Correlation_ID,SQ_WAVES\n\n"
        '1,2,1,7,7,64,64,0,0,4,0,16,64,"k",100,200,1,1.0\n'
    )
    assert rc.sniff(path, read_head(path)) is None
    assert load_path(path).runs[0].meta.formats == ["rocprofv2"]


def test_mi350_agent_from_sysinfo(workloads):
    _, runs = workloads
    run = runs["vcopy_MI350"]
    (row,) = _rows(WORKLOADS / "vcopy_MI350_sysinfo.csv")
    (agent,) = run.agents
    assert (agent.name, agent.product) == (row["gpu_arch"], row["gpu_model"]) == ("gfx950", "MI350")
    assert agent.cu_count == int(row["cu_per_gpu"]) == 128
    assert agent.num_xcc == int(row["num_xcd"]) == 8
    assert agent.max_waves_per_cu == 32 and agent.simd_per_cu == 4 and agent.wave_size == 64
    assert agent.extra["se_per_gpu"] == row["se_per_gpu"] == "16"
    assert agent.extra["num_hbm_channels"] == "128"
    assert agent.max_clock_mhz is None  # max_sclk is 0 in this pre-release sysinfo: not a clock
    assert agent.id == 0  # GPU_ID of its dispatches
    assert run.meta.hostname == row["hostname"]


def test_mi350_wide_counters_and_channel_sums(workloads):
    _, runs = workloads
    run = runs["vcopy_MI350"]
    info = _rows(WORKLOADS / "vcopy_MI350_pmc_dispatch_info.csv")
    assert run.kernels["name"].astype(str).tolist() == [r["Kernel_Name"] for r in info]
    perf = _rows(WORKLOADS / "vcopy_MI350_pmc_perf_0.csv")
    assert run.kernels["start"].tolist() == [int(r["Start_Timestamp"]) for r in perf]
    for r in perf:
        d = int(r["Dispatch_ID"])
        assert _counter(run, d, "SQ_ACTIVE_INST_VALU") == float(r["SQ_ACTIVE_INST_VALU"])
        assert _counter(run, d, "TCC_EA0_WRREQ_LEVEL_sum") == float(r["TCC_EA0_WRREQ_LEVEL_sum"])
    for r in _rows(WORKLOADS / "vcopy_MI350_SQ_LEVEL_WAVES.csv"):
        d = int(r["Dispatch_ID"])
        channels = [float(v) for k, v in r.items() if re.fullmatch(r"TCC_EA0_ATOMIC_LEVEL\[\d+\]", k)]
        assert len(channels) > 1
        assert _counter(run, d, "TCC_EA0_ATOMIC_LEVEL_sum") == sum(channels)
        assert _counter(run, d, "SQ_LEVEL_WAVES") == float(r["SQ_LEVEL_WAVES"])
    assert not run.counters["counter"].astype(str).str.contains(r"\[").any()


def test_mi300x_rocpd_long_table_sums_channels(workloads):
    _, runs = workloads
    run = runs["vcopy_MI300X_A1_rocpd"]
    rows = _rows(WORKLOADS / "vcopy_MI300X_A1_rocpd_pmc_perf.csv")
    for d in (1, 2):
        mine = [r for r in rows if r["Dispatch_ID"] == str(d)]
        plain = {r["Counter_Name"]: float(r["Counter_Value"]) for r in mine if "[" not in r["Counter_Name"]}
        for base in ("TCC_HIT", "TCC_MISS", "TCC_REQ"):
            channels = [float(r["Counter_Value"]) for r in mine if re.fullmatch(rf"{base}\[\d+\]", r["Counter_Name"])]
            assert len(channels) == 128
            # the profiler's own NAME_sum is what rocprof-compute reads; the channel sum differs by a few counts at most
            assert _counter(run, d, f"{base}_sum") == plain[f"{base}_sum"]
            assert abs(sum(channels) - plain[f"{base}_sum"]) <= 1e-3 * plain[f"{base}_sum"]
        assert _counter(run, d, "GRBM_GUI_ACTIVE") == plain["GRBM_GUI_ACTIVE"]
        assert _counter(run, d, "SQ_LEVEL_WAVES_ACCUM") == plain["SQ_LEVEL_WAVES_ACCUM"]
    assert _counter(run, 1, "TCC_MISS_sum") == 131200.0  # the 128 TCC_MISS[i] of dispatch 1 sum to 131218
    assert run.kernels["dispatch_id"].tolist() == [1, 2]
    assert run.agents == []  # this workload's sysinfo.csv is not among the samples


def test_channels_summed_where_no_sum_was_written():
    frame = rc.pd.DataFrame({"dispatch_id": [1, 1, 1, 2, 2], "counter": ["A[0]", "A[1]", "B", "A[0]", "A_sum"], "value": [1.0, 2.0, 5.0, 4.0, 9.0]})
    out = rc.sum_channels(frame).sort_values(["dispatch_id", "counter"])
    assert list(zip(out["dispatch_id"], out["counter"], out["value"], strict=True)) == [(1, "A_sum", 3.0), (1, "B", 5.0), (2, "A_sum", 9.0)]


def test_mi100_v1_backend_and_level_pass(workloads):
    _, runs = workloads
    run = runs["vcopy_MI100"]
    (agent,) = run.agents
    assert (agent.name, agent.cu_count, agent.num_xcc, agent.max_clock_mhz) == ("gfx908", 120, 1, 1502)
    perf = _rows(WORKLOADS / "vcopy_MI100_pmc_perf.csv")
    assert run.kernels["end"].tolist() == [int(r["End_Timestamp"]) for r in perf]
    for r in perf:
        d = int(r["Dispatch_ID"])
        assert _counter(run, d, "GRBM_GUI_ACTIVE") == float(r["GRBM_GUI_ACTIVE"])  # pmc_perf's value wins over SQ_LEVEL_WAVES.csv's
        assert _counter(run, d, "TCC_HIT_sum") == float(r["TCC_HIT_sum"])
    for r in _rows(WORKLOADS / "vcopy_MI100_SQ_LEVEL_WAVES.csv"):
        assert _counter(run, int(r["Dispatch_ID"]), "SQ_LEVEL_WAVES_ACCUM") == float(r["SQ_ACCUM_PREV_HIRES"])


def test_mi300x_lossy_timestamps_unknown(workloads):
    _, runs = workloads
    run = runs["vcopy_MI300X_A1"]
    assert run.kernels["start"].tolist() == [-1, -1, -1]
    assert any("scientific notation" in w for w in run.warnings)
    assert run.agents[0].name == "gfx942" and run.agents[0].cu_count == 304


def test_batched_gemm_roofline_and_kernel_top():
    runset = load_path(DATA / "batched_gemm")
    assert runset.issues == []
    (run,) = runset.runs
    (agent,) = run.agents
    assert (agent.name, agent.cu_count, agent.max_clock_mhz) == ("gfx942", 304, 2100)
    roof = _rows(DATA / "batched_gemm" / "roofline.csv")[0]  # device 0: the agent's id (no dispatches name one)
    assert agent.extra["roofline"]["HBMBw"] == float(roof["HBMBw"]) == 4244.3501
    assert agent.extra["roofline"]["MFMABF16Flops"] == float(roof["MFMABF16Flops"])
    assert "MFMAF4Flops" not in agent.extra["roofline"]  # 0 in the file: no peak
    top = _rows(DATA / "batched_gemm" / "pmc_kernel_top.csv")
    stats = run.tool_stats["kernel_stats"]
    assert stats["name"].tolist() == [r["Kernel_Name"] for r in top]
    assert stats["calls"].tolist() == [150, 151]
    assert stats["total_ns"].tolist() == [float(r["Sum(ns)"]) for r in top]


def test_analysis_db(db_run):
    run = db_run
    con = sqlite3.connect(f"file:{DB}?mode=ro", uri=True)
    (agent,) = run.agents
    assert (agent.name, agent.cu_count, agent.num_xcc, agent.max_clock_mhz) == ("gfx950", 256, 8, 2200)
    assert agent.extra["roofline"]["HBMBw"] == 4885.545015923266
    dispatches = con.execute(
        "SELECT d.dispatch_id, d.start_timestamp, d.end_timestamp, k.kernel_name FROM compute_dispatch d JOIN compute_kernel k USING (kernel_uuid) ORDER BY d.dispatch_id"
    ).fetchall()
    k = run.kernels
    assert list(zip(k["dispatch_id"], k["start"], k["end"], k["name"].astype(str), strict=True)) == dispatches
    values = con.execute("SELECT kernel_name, metric_id, value_name, value FROM compute_kernel_metric_view").fetchall()
    workload = con.execute("SELECT metric_id, value_name, value FROM compute_workload_metric_view").fetchall()
    m = run.metrics
    assert len(m) == len(values) + len(workload) == 1330 + 190
    mine = {(str(a), str(b), str(c)): v for a, b, c, v in zip(m["kernel"], m["metric_id"], m["stat"], m["value"], strict=True)}
    for name, mid, stat, value in values:
        got = mine[(name, mid, stat)]
        assert got == value or (value is None and got != got)
    assert run.meta.tool_version == "3.5.0"
    points = run.meta.extra["roofline_points"]
    (row,) = con.execute(
        "SELECT k.kernel_name, r.total_flops, r.hbm_cache_data FROM compute_kernel_roofline_data r JOIN compute_kernel k USING (kernel_uuid) WHERE k.kernel_uuid = 4"
    ).fetchall()
    assert points[row[0]]["gflops"] == row[1] and points[row[0]]["ai_hbm"] == row[2]
