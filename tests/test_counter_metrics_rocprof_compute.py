"""Counter metrics on rocprof-compute data (issue 17): raw workloads against an independent
computation from the raw CSV columns, the analysis database's values shown as they are, and a
generated workload whose verdicts are known by construction."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pytest

from tui_prof.analysis.counters import absent_counters, counter_metrics
from tui_prof.loaders import load_path
from tui_prof.model import Agent, Run, make_table
from tui_prof.synth.write_rocprof_compute import DURATION_NS, HBM_GBS, MAX_WAVES, counter_workload, write_rocprof_compute

DATA = Path(__file__).parent / "data" / "rocprof_compute"
WORKLOADS = DATA / "workloads"


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def workloads():
    return {run.meta.label: run for run in load_path(WORKLOADS).runs}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    folder = write_rocprof_compute(tmp_path_factory.mktemp("synth") / "synth_counters" / "MI300X_A1")
    runset = load_path(folder)
    assert runset.issues == []
    (run,) = runset.runs
    return counter_metrics(run, "amd"), {k.name: k for k in counter_workload()}


def _kernel(block, name):
    (k,) = [k for k in block["kernels"] if k["name"] == name]
    return k


def test_l2_hit_rate_of_veccopy_from_summed_channels(workloads):
    rows = _rows(WORKLOADS / "vcopy_MI300X_A1_rocpd_pmc_perf.csv")
    from_channels, from_sums = [], []
    for d in ("1", "2"):
        mine = [r for r in rows if r["Dispatch_ID"] == d]
        hit = sum(float(r["Counter_Value"]) for r in mine if re.fullmatch(r"TCC_HIT\[\d+\]", r["Counter_Name"]))
        miss = sum(float(r["Counter_Value"]) for r in mine if re.fullmatch(r"TCC_MISS\[\d+\]", r["Counter_Name"]))
        from_channels.append(100 * hit / (hit + miss))
        sums = {r["Counter_Name"]: float(r["Counter_Value"]) for r in mine if r["Counter_Name"] in ("TCC_HIT_sum", "TCC_MISS_sum")}
        from_sums.append(100 * sums["TCC_HIT_sum"] / (sums["TCC_HIT_sum"] + sums["TCC_MISS_sum"]))  # rocprof-compute L2 Cache Hit Rate
    block = counter_metrics(workloads["vcopy_MI300X_A1_rocpd"], "amd")
    m = _kernel(block, "vecCopy(double*, double*, double*, int, int)")["metrics"]["l2_hit"]
    assert m["value"] == pytest.approx(sum(from_sums) / 2, rel=1e-12)
    # the summed channels (another replay pass: TCC_MISS differs by 18 of 131,200 on dispatch 1) agree to 0.01 %
    assert m["value"] == pytest.approx(sum(from_channels) / 2, rel=1e-4)
    assert round(m["value"], 2) == round(sum(from_channels) / 2, 2) == 34.30
    assert m["flagged"] and "L2" in m["meaning"]
    # no sysinfo.csv for this workload: the XCD count is unknown, so no occupancy in waves is claimed
    assert "wave_occupancy" not in _kernel(block, "vecCopy(double*, double*, double*, int, int)")["metrics"]


def test_mi100_occupancy_and_fabric_bandwidth_from_raw_columns(workloads):
    perf = _rows(WORKLOADS / "vcopy_MI100_pmc_perf.csv")
    level = {r["Dispatch_ID"]: r for r in _rows(WORKLOADS / "vcopy_MI100_SQ_LEVEL_WAVES.csv")}
    (sysinfo,) = _rows(WORKLOADS / "vcopy_MI100_sysinfo.csv")
    waves, read_bw = [], []
    for r in perf:
        waves.append(float(level[r["Dispatch_ID"]]["SQ_ACCUM_PREV_HIRES"]) / (float(r["GRBM_GUI_ACTIVE"]) / int(sysinfo["num_xcd"])))
        req, req32 = float(r["TCC_EA_RDREQ_sum"]), float(r["TCC_EA_RDREQ_32B_sum"])
        read_bw.append((64 * (req - req32) + 32 * req32) / (int(r["End_Timestamp"]) - int(r["Start_Timestamp"])))
    block = counter_metrics(workloads["vcopy_MI100"], "amd")
    assert block["arch"] == "gfx908"
    m = _kernel(block, perf[0]["Kernel_Name"])["metrics"]
    assert m["wave_occupancy"]["value"] == pytest.approx(np.mean(waves), rel=1e-12)
    assert m["wave_occupancy"]["peak"] == int(sysinfo["max_waves_per_cu"]) * int(sysinfo["cu_per_gpu"]) == 4800
    assert m["l2_fabric_read_bw"]["value"] == pytest.approx(np.mean(read_bw), rel=1e-12)
    # rocprof-compute's $hbmBandwidth from max_mclk and the channels equals sysinfo's own hbm_bw column
    assert m["l2_fabric_read_bw"]["peak"] == pytest.approx(float(sysinfo["hbm_bw"])) == 1228.8


def test_database_metrics_shown_equal_the_database(tmp_path):
    import sqlite3

    db = DATA / "analysis_db" / "rocprof_compute_23ed6f36_slice.db"
    (run,) = load_path(db).runs
    block = counter_metrics(run, "amd")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    checked = 0
    for kernel in block["kernels"]:
        assert kernel["origin"] == "rocprof-compute analysis database"
        for m in kernel["metrics"].values():
            name, stat = m["db_metric"].split(" (")[0], m["db_metric"].split(" (")[1].split(",")[0]
            (value,) = con.execute(
                "SELECT value FROM compute_kernel_metric_view WHERE kernel_name = ? AND metric_name = ? AND value_name = ? AND metric_id LIKE '2.1.%'",
                (kernel["name"], name, stat),
            ).fetchone()
            assert m["value"] == value
            checked += 1
    assert checked == 72
    main = _kernel(block, [k["name"] for k in block["kernels"] if k["name"].startswith("void rocprim")][0])
    occ = main["metrics"]["wave_occupancy"]
    assert (occ["value"], occ["peak"], occ["flagged"]) == (774.0973946822501, 8192.0, True)  # 9.4 % of the MI350's 8192
    roof = main["roofline"]
    assert roof["bound"] == "memory" and roof["ai"] == 0.008258286291075398
    assert roof["ridge"] == pytest.approx(137432.91975730713 / 4885.545015923266)


def test_counters_checked_against_database_values():
    kernels = make_table("kernels", {"start": [0, 100], "end": [50, 150], "agent": 1, "dispatch_id": [1, 2], "name": ["k", "k"]})
    counters = make_table("counters", {"dispatch_id": [1, 1, 2, 2], "agent": 1, "counter": ["TCC_HIT_sum", "TCC_MISS_sum"] * 2, "value": [30, 70, 50, 50]})
    metrics = make_table(
        "metrics",
        {
            "kernel": ["k", "k"],
            "metric_id": ["2.1.22", "2.1.22"],
            "metric": "L2 Cache Hit Rate",
            "stat": ["Avg", "Peak"],
            "value": [40.2, 100.0],
            "unit": "Percent",
        },
    )
    run = Run(agents=[Agent(id=1, name="gfx942", cu_count=304, num_xcc=8)], kernels=kernels, counters=counters, metrics=metrics)
    (k,) = counter_metrics(run, "amd")["kernels"]
    check = k["metrics"]["l2_hit"]["check"]
    assert k["metrics"]["l2_hit"]["value"] == 40.0
    assert check == {"rocprof_compute": 40.2, "diff_pct": pytest.approx(0.2 / 40.2 * 100), "agrees": True}


def test_generated_workload_verdicts_known_by_construction(generated):
    block, spec = generated
    assert block["arch"] == "gfx942"
    for name, k in spec.items():
        entry = _kernel(block, name)
        assert entry["dispatches"] == k.dispatches
        m = entry["metrics"]
        for key in (
            "l2_hit",
            "lds_conflicts_per_access",
            "wave_occupancy",
            "l2_fabric_read_bw",
            "l2_fabric_write_bw",
            "vl1d_hit",
            "sl1d_hit",
            "gpu_busy",
            "vl1d_stalled_on_l2",
        ):
            assert m[key]["value"] == pytest.approx(k.expected[key], rel=1e-12), (name, key)
        assert sorted(key for key, v in m.items() if v["flagged"]) == sorted(k.flagged), name
        assert entry["roofline"]["bound"] == (k.bound or "memory")
        assert entry["roofline"]["ai"] == pytest.approx(k.expected["ai"])
    lds = _kernel(block, "lds_transpose_tile")["metrics"]["lds_conflicts_per_access"]
    assert lds["value"] == 0.5 and "pad" in lds["meaning"]
    l2 = _kernel(block, "l2_miss_stream")
    assert l2["metrics"]["l2_hit"]["value"] == 20.0 and "tile/block sizes" in l2["metrics"]["l2_hit"]["meaning"]
    assert l2["roofline"]["ridge"] == pytest.approx(2100 * 304 * 128 / 1000 / HBM_GBS)
    assert l2["metrics"]["l2_fabric_read_bw"]["value"] == 64 * 400_000 / DURATION_NS
    gemm = _kernel(block, "vgpr_heavy_gemm")
    assert gemm["metrics"]["wave_occupancy"]["pct_of_peak"] == 12.5 and gemm["metrics"]["wave_occupancy"]["peak"] == MAX_WAVES
    assert gemm["occupancy"]["limiter"] == "VGPRs" and "fewer VGPRs" in gemm["occupancy"]["hint"]
    assert gemm["occupancy"]["static"]["limiter"] == "VGPR" and gemm["occupancy"]["static"]["waves_per_simd"] == 2
    assert gemm["roofline"]["ridge"] == pytest.approx(2100 * 304 * 2048 / 1000 / HBM_GBS)


def test_rdna_says_which_counters_do_not_exist():
    absent = absent_counters("gfx1151")
    assert any("MFMA" in k for k in absent) and any("SPI_RA_*" in k for k in absent)
    assert any("TA_BUFFER" in k for k in absent)
    assert absent_counters("gfx942") == {"ALU stalled by LDS": absent_counters("gfx950")["ALU stalled by LDS"]}
    assert absent_counters("gfx90a") == {}
    run = Run(agents=[Agent(id=1, name="gfx1151")], kernels=make_table("kernels", {"start": [0], "end": [1], "agent": 1, "name": ["k"]}))
    block = counter_metrics(run, "amd")
    assert block["absent"] == absent
    assert "wave_occupancy" not in block["missing"] and "mfma_utilization" not in block["missing"]


def test_cli_text_shows_the_roofline_row():
    from tui_prof.analysis.summary import build_summary
    from tui_prof.render.summary import summary_text

    runset = load_path(DATA / "analysis_db" / "rocprof_compute_23ed6f36_slice.db")
    text = summary_text(build_summary(runset))
    assert "roofline (HBM)" in text and "0.00826 FLOP/B, 8.167 GFLOP/s" in text and "ridge 28.1 FLOP/B" in text
