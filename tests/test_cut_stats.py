"""Issue 33 item 1: a cut ``--stats`` table (its rows' Percentage sums below 100) shares
divide by the run's total, TotalDurationNs × 100 / Percentage, not by the rows present.

The expected shares are the tables' own Percentage column, read here with the csv module."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from test_stats_and_gate import FOUR_PROCESS, HEADER, ONE_PROCESS, RCCL

from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.cli import main
from tui_prof.exits import EXIT_OK
from tui_prof.loaders import load_path

# one rank's table of the 4-process srun run cut to its collective and batch-norm rows (the GEMM
# row dropped, as a top-N excerpt would): Σ Percentage 83.67
CUT_RANK = HEADER + "".join(line + "\n" for line in FOUR_PROCESS.splitlines()[1:] if "Cijk" not in line)
PIDS = (2117301, 2117302, 2117303, 2117304)


def rows_of(text: str) -> dict[str, dict]:
    return {r["Name"]: r for r in csv.DictReader(text.splitlines())}


@pytest.fixture()
def srun(tmp_path: Path) -> Path:
    for pid in PIDS:
        (tmp_path / f"{pid}_kernel_stats.csv").write_text(CUT_RANK)
    return tmp_path


def test_the_cut_4_process_table_shares_follow_the_percentage_column(srun, capsys):
    rows = rows_of(CUT_RANK)
    assert sum(float(r["Percentage"]) for r in rows.values()) < 100  # the fixture is a cut table
    doc = build_summary(load_path(srun, use_cache=False), SummaryOptions(logs=False))
    assert len(doc["processes"]) == 4
    # the profiler's share, to its two printed decimals (the rows alone would give 98.9)
    assert doc["hotspots"][0]["name"] == RCCL
    assert doc["hotspots"][0]["percent"] == pytest.approx(float(rows[RCCL]["Percentage"]), abs=0.01)
    comm = next(f for f in doc["findings"] if f["code"] == "communication-share")
    assert comm["numbers"]["pct_of_kernel_time"] == pytest.approx(82.74, abs=0.01)
    assert "82.7% of kernel time" in comm["message"]
    assert [r["top_kernel_pct"] for r in doc["ranks"]] == [pytest.approx(82.74, abs=0.01)] * 4
    table = next(t for t in doc["stats"]["tables"] if t["key"] == "kernel_stats")
    row_sum = 4 * sum(int(r["TotalDurationNs"]) for r in rows.values())
    assert table["cut"] and table["total_ns"] == row_sum
    run_total = 4 * int(rows[RCCL]["TotalDurationNs"]) * 100 / float(rows[RCCL]["Percentage"])
    assert table["run_total_ns"] == pytest.approx(run_total, rel=1e-4)
    assert any("the table is cut" in w and "KERNEL_DISPATCH" in w for w in doc["warnings"])
    assert main(["summary", str(srun), "--no-cache"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "the table is cut" in out and "98.9" not in out


def test_the_cut_single_process_table(tmp_path):
    (tmp_path / "2117183_kernel_stats.csv").write_text(ONE_PROCESS)
    rows = rows_of(ONE_PROCESS)
    doc = build_summary(load_path(tmp_path, use_cache=False), SummaryOptions(logs=False))
    assert {h["name"]: h["percent"] for h in doc["hotspots"]} == {n: float(r["Percentage"]) for n, r in rows.items()}
    assert doc["ranks"][0]["top_kernel_pct"] == pytest.approx(8.38, abs=0.01)  # was 56.5: the rows present
    table = next(t for t in doc["stats"]["tables"] if t["key"] == "kernel_stats")
    copy_row = rows["__amd_rocclr_copyBuffer"]
    assert table["cut"]
    # each row's total over the run's total gives back its printed Percentage
    for r in rows.values():
        assert 100.0 * int(r["TotalDurationNs"]) / table["run_total_ns"] == pytest.approx(float(r["Percentage"]), abs=0.005)
    assert table["run_total_ns"] == pytest.approx(int(copy_row["TotalDurationNs"]) * 100 / 8.38, rel=1e-3)


def test_a_whole_table_is_not_cut(tmp_path, capsys):
    (tmp_path / "2117301_kernel_stats.csv").write_text(FOUR_PROCESS)
    rows = rows_of(FOUR_PROCESS)
    assert sum(float(r["Percentage"]) for r in rows.values()) == pytest.approx(100.0)
    doc = build_summary(load_path(tmp_path, use_cache=False), SummaryOptions(logs=False))
    table = next(t for t in doc["stats"]["tables"] if t["key"] == "kernel_stats")
    assert not table["cut"] and table["run_total_ns"] == table["total_ns"] == sum(int(r["TotalDurationNs"]) for r in rows.values())
    assert not any("cut" in w for w in doc["warnings"])
    assert main(["summary", str(tmp_path), "--no-cache", "--json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["stats"]["tables"][0]["cut"] is False


# ---- issue 33 item 3: a statistics-only run's figures in the measurement contract ------------

SALTFISH = Path(__file__).parent / "data" / "legacy_rocprof" / "saltfish"


def test_stats_only_measurement_on_the_saltfish_table(capsys):
    with open(SALTFISH / "results.stats.csv", newline="") as fh:
        # rocprof's "<barrier packet>" row is not a kernel dispatch (issue 32: kept out of the kernel tables)
        every = list(csv.DictReader(fh))
    rows = [r for r in every if r["Name"] != "<barrier packet>"]
    assert len(rows) == len(every) - 1
    calls = sum(int(r["Calls"]) for r in rows)
    total = sum(int(r["TotalDurationNs"]) for r in rows)
    gemm = sum(int(r["TotalDurationNs"]) for r in rows if r["Name"].startswith("Cijk_"))  # Tensile GEMM kernels
    assert main(["summary", str(SALTFISH), "--no-cache", "--json"]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    m = doc["measurement"]
    assert (m["kernel_count"], m["kernel_time_ns"]) == (calls, total) == (doc["kernels"]["dispatches"], doc["kernels"]["total_ns"])
    assert doc["categories"]["GEMM"] == gemm  # 107.7 s of 256.9 s of kernels (399.9 s with the barrier packets)
    assert m["gemm_pct_of_kernel_time"] == pytest.approx(100.0 * gemm / total, abs=1e-4)
    # the profiler's own Percentage column agrees, renormalised to the kernels (its rows sum to 100 with the barrier packets)
    kernel_pct = sum(float(r["Percentage"]) for r in rows)
    gemm_pct = sum(float(r["Percentage"]) for r in rows if r["Name"].startswith("Cijk_"))
    assert m["gemm_pct_of_kernel_time"] == pytest.approx(100.0 * gemm_pct / kernel_pct, abs=1e-3)
    assert main(["summary", str(SALTFISH), "--no-cache"]) == EXIT_OK
    out = capsys.readouterr().out
    assert f"kernel dispatches          {calls}" in out and f"GEMM share of kernel time  {100.0 * gemm / total:.2f}%" in out
    assert "span, idle, sync, launch and copy shares need a trace" in out


def test_stats_only_measurement_of_a_cut_table_shares_the_run_total(tmp_path):
    # the 4-process table's GEMM and batch-norm rows alone: Σ Percentage 17.26
    cut = HEADER + "".join(line + "\n" for line in FOUR_PROCESS.splitlines()[1:] if RCCL not in line)
    (tmp_path / "2117301_kernel_stats.csv").write_text(cut)
    rows = rows_of(cut)
    m = build_summary(load_path(tmp_path, use_cache=False), SummaryOptions(logs=False))["measurement"]
    assert m["kernel_count"] == sum(int(r["Calls"]) for r in rows.values())
    assert m["kernel_time_ns"] == sum(int(r["TotalDurationNs"]) for r in rows.values())
    gemm_row = next(r for n, r in rows.items() if n.startswith("Cijk_"))
    assert m["gemm_pct_of_kernel_time"] == pytest.approx(float(gemm_row["Percentage"]), abs=0.01)  # not 94.6 (of the rows)
