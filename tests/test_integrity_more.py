"""More integrity checks (issue 32): an abrupt end of one record kind, bandwidth and cycles
above what the GPU allows, work counters in separated modes across passes, and known-defective
counters bounded by ROCm version. Each finds a defect injected into a real small trace at the
right place; the real samples of tests/test_integrity.py's CLEAN list raise none of them."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from test_integrity import CLEAN, codes

from tui_prof.analysis.api import check_run
from tui_prof.loaders import load_path
from tui_prof.model import Agent, RunSet

DATA = Path(__file__).parent / "data"
DOCS7 = DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7"
FETCH = DATA / "counters" / "fetch-size-pass"
TRAIN_SYNC = DATA / "kineto" / "h200" / "train_sync.pt.trace.json.gz"
COPIES = DATA / "kineto" / "h200" / "copies.pt.trace.json.gz"
NEW_CODES = {"records-stop", "bandwidth-above-peak", "counter-above-peak", "counter-multimodal", "counter-known-defective"}


# beside CLEAN: real rocprof-compute passes with GRBM cycle, SQ_INSTS_* and SQ_WAVES counters
# on MI100, MI300X and MI350 (their folder mixes recordings: clock-domains, not a new code)
WITH_COUNTERS = ["rocprof_compute/workloads", "counters/fetch-size-pass", "rocprofv3_csv/rocprofv3-docs-rocm7"]


@pytest.mark.parametrize("path", CLEAN + WITH_COUNTERS)
def test_no_false_alarm_on_the_real_samples(path):
    found = codes(check_run(load_path(DATA / path)))
    assert {c: [i.message for i in v] for c, v in found.items() if c in NEW_CODES} == {}


# --- work counters in modes ------------------------------------------------------------------


def _passes_with(counter: str) -> tuple[RunSet, list]:
    """The docs rocm7 folder's two counter passes (other processes: the same four kernels and
    grids), their SQ_WAVES readings renamed ``counter`` (a work count of the same dispatches)."""
    runset = load_path(DOCS7)
    passes = [r for r in runset.runs if "counters pid" in r.meta.label]
    for run in passes:
        run.counters["counter"] = run.counters["counter"].astype(str).replace({"SQ_WAVES": counter})
    return runset, passes


def _common_row(passes: list, which: int) -> tuple[str, int, int]:
    """(kernel name, dispatch id, counter row) in pass ``which`` of a kernel and grid that
    both passes ran."""
    shapes = [set(zip(r.kernels["name"].astype(str), r.kernels["grid_x"], r.kernels["wg_x"], strict=True)) for r in passes]
    name = sorted(shapes[0] & shapes[1])[0][0]
    run = passes[which]
    did = int(run.kernels.loc[run.kernels["name"].astype(str) == name, "dispatch_id"].iat[0])
    return name, did, int(np.flatnonzero(run.counters["dispatch_id"].to_numpy() == did)[0])


def test_instruction_counts_in_two_modes_are_found():
    runset, passes = _passes_with("SQ_INSTS_VALU")
    assert "counter-multimodal" not in codes(check_run(runset))
    run = passes[1]
    name, did, row = _common_row(passes, 1)
    run.counters.loc[row, "value"] *= 1.03  # a little data-dependent variation: one mode
    assert "counter-multimodal" not in codes(check_run(runset))
    run.counters.loc[row, "value"] *= 2  # doubled (#3828's signature): two modes
    (issue,) = codes(check_run(runset))["counter-multimodal"]
    assert issue.affects["counters"] == ["SQ_INSTS_VALU"] and issue.affects["kernels"] == [name]
    assert issue.affects["dispatch_ids"][0] in {did, *passes[0].kernels["dispatch_id"].tolist()}
    assert sorted(issue.affects["processes"]) == sorted(r.meta.label for r in passes)


def test_a_zero_reading_beside_non_zero_ones_is_a_mode():
    runset, passes = _passes_with("SPI_CSN_WAVE")
    _, _, row = _common_row(passes, 0)
    passes[0].counters.loc[row, "value"] = 0.0
    (issue,) = codes(check_run(runset))["counter-multimodal"]
    assert issue.affects["counters"] == ["SPI_CSN_WAVE"] and issue.affects["modes"][0] == 0.0 and len(issue.affects["modes"]) == 2


# --- known-defective counters and ROCm versions -------------------------------------------------


def _on(arch: str, rocm: str | None, value: float) -> RunSet:
    run = copy.deepcopy(next(r for r in load_path(DOCS7).runs if r.meta.label.endswith("pid 15606")))
    run.agents = [Agent(id=a, type="GPU", name=arch) for a in sorted(set(run.counters["agent"].tolist()))]
    if rocm:
        run.meta.extra["rocm_version_from_env"] = rocm
    run.counters["value"] = value
    return RunSet("x", [run])


def test_known_zero_counters_on_gfx11_carry_their_rocm_bound():
    """gfx1100: counters reading all zero are a known defect before ROCm 7.13 (rocm-systems
    #5683) and in TheRock #6476 (no version given): the first is left out on ROCm 7.13."""
    old = codes(check_run(_on("gfx1100", "6.4.1", 0.0)))["counter-known-defective"]
    assert len(old) == 2
    bounded = next(i for i in old if "5683" in i.affects["issue"])
    assert bounded.affects["rocm"] == "6.4.1" and bounded.affects["rocm_versions"] == "ROCm before 7.13.0"
    assert "this run's ROCm: 6.4.1" in bounded.message
    new = codes(check_run(_on("gfx1100", "7.13.0", 0.0)))["counter-known-defective"]
    assert [i.affects["issue"] for i in new] == ["ROCm/TheRock#6476"]
    unknown = codes(check_run(_on("gfx1100", None, 0.0)))["counter-known-defective"]
    assert any("not recorded" in i.message for i in unknown)  # may apply: said, with the range
    assert "counter-known-defective" not in codes(check_run(_on("gfx1100", "6.4.1", 16384.0)))  # read, not zero


def test_sq_waves_on_gfx1151_is_unbounded():
    (issue,) = codes(check_run(_on("gfx1151", "7.2.1", 16384.0)))["counter-known-defective"]
    assert issue.affects["counters"] == ["SQ_WAVES"] and "#3828" in issue.affects["issue"]
    assert issue.affects["rocm_versions"] == "all known versions"


# --- one kind of record ending early -----------------------------------------------------------


@pytest.mark.parametrize("kind", ["api", "markers", "kernels"])
def test_a_kind_of_record_stopping_early_is_found(kind):
    """train_sync: every record of one kind after 60 % of the process's span dropped (a full
    buffer for that kind) while the other kinds go on: found, at the last kept record."""
    runset = load_path(TRAIN_SYNC)
    run = runset.runs[0]
    assert "records-stop" not in codes(check_run(runset))
    starts = np.concatenate([run.table(t)["start"].to_numpy() for t in ("kernels", "api", "copies", "markers")])
    lo, hi = int(starts.min()), int(starts.max())
    table = run.table(kind)
    kept = table[table["start"] < lo + 0.6 * (hi - lo)].reset_index(drop=True)
    setattr(run, kind, kept)
    (issue,) = codes(check_run(runset))["records-stop"]
    assert issue.affects["table"] == kind and issue.severity == "degraded"
    assert issue.affects["last_ns"] == int(kept["start"].max()) and issue.affects["time_range_ns"][0] == int(kept["start"].max())
    assert issue.affects["missing"] >= 100


def test_a_kind_ending_a_little_early_is_not_a_stop():
    runset = load_path(TRAIN_SYNC)
    run = runset.runs[0]
    cut = np.quantile(run.api["start"], 0.95)
    run.api = run.api[run.api["start"] < cut].reset_index(drop=True)
    assert "records-stop" not in codes(check_run(runset))


# --- bandwidth and clock peaks -------------------------------------------------------------------


def test_a_copy_faster_than_the_gpus_memory_is_found():
    """h200 copies: 64 MiB pinned copies at about 52 GB/s (PCIe) pass; one shrunk to 2 µs
    (33,554 GB/s, above the H200's 4,800 GB/s HBM) is found at its row."""
    runset = load_path(COPIES)
    run = runset.runs[0]
    assert any(a.product == "NVIDIA H200" for a in run.gpu_agents)
    assert "bandwidth-above-peak" not in codes(check_run(runset))
    cp = run.copies
    row = int(np.flatnonzero(cp["bytes"].to_numpy() == 64 << 20)[0])
    cp.loc[row, "end"] = cp["start"].iat[row] + 2_000
    (issue,) = codes(check_run(runset))["bandwidth-above-peak"]
    assert issue.affects["table"] == "copies" and issue.affects["rows"] == 1 and issue.affects["examples"][0]["row"] == row
    assert issue.affects["peak_gbs"] == 4800.0 and issue.severity == "unreliable"


def _fetch_pass(arch: str, clock: int | None = None) -> RunSet:
    runset = load_path(FETCH)
    run = runset.runs[0]
    run.agents = [Agent(id=a.id, type="GPU", name=arch, max_clock_mhz=clock or a.max_clock_mhz, num_xcc=1) for a in run.gpu_agents]
    return runset


def test_kernel_traffic_above_the_memory_peak_is_found():
    """fetch-size-pass (4 dispatches, 8,192 KB fetched each in about 50 µs: 161 GB/s) read as an
    MI250X GCD's (1,600 GB/s): nothing; one dispatch's FETCH_SIZE times 100: found there."""
    runset = _fetch_pass("gfx90a")
    assert "bandwidth-above-peak" not in codes(check_run(runset))
    run = runset.runs[0]
    run.counters.loc[2, "value"] *= 100
    (issue,) = codes(check_run(runset))["bandwidth-above-peak"]
    assert issue.affects["dispatch_ids"] == [int(run.counters["dispatch_id"].iat[2])]


def test_cycles_above_the_clock_are_found():
    """The same pass with its FETCH_SIZE rows turned into GRBM_GUI_ACTIVE readings: 90 % of
    duration x the agent's 1,630 MHz passes, ten times that is above what the clock allows
    (twice the duration plus 50 µs of counter window)."""
    runset = _fetch_pass("gfx900")
    run = runset.runs[0]
    k = run.kernels.set_index("dispatch_id")
    c = run.counters
    c["counter"] = c["counter"].astype(str).replace({"FETCH_SIZE": "GRBM_GUI_ACTIVE"})
    dur = (k["end"] - k["start"]).reindex(c["dispatch_id"]).to_numpy()
    c["value"] = 0.9 * dur * 1630 / 1000
    assert "counter-above-peak" not in codes(check_run(runset))
    c.loc[1, "value"] *= 10
    (issue,) = codes(check_run(runset))["counter-above-peak"]
    assert issue.affects["counters"] == ["GRBM_GUI_ACTIVE"] and issue.affects["dispatch_ids"] == [int(c["dispatch_id"].iat[1])]


def test_hostile_counter_names_in_new_messages_are_sanitised():
    """A work counter named with escape sequences (a damaged or hostile file) in the modes and
    known-defect messages: the check's text report prints it without control characters."""
    from tui_prof.render.integrity import check_text

    hostile = "SQ_INSTS_\x1b]52;c;ZXZpbA==\x07\x1b[31mevil"
    runset, passes = _passes_with(hostile)
    _, _, row = _common_row(passes, 0)
    passes[0].counters.loc[row, "value"] *= 4
    for run in passes:
        run.agents = [Agent(id=a, type="GPU", name="gfx1100") for a in sorted(set(run.counters["agent"].tolist()))]
    passes[1].counters["value"] = 0.0  # reads 0 on every dispatch: gfx11's known zeros
    record = check_run(runset).record()
    found = {i["code"] for i in record["issues"]}
    assert {"counter-multimodal", "counter-known-defective"} <= found
    text = check_text(record)
    assert "evil" in text and "\x1b" not in text and "\x07" not in text
