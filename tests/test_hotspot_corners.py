"""Issue 33 item 5: ``hotspots[]`` rows carry ``pct_wall``; pooling kernels have a category;
an agent whose activity has no timestamps reports ``first_ns``/``last_ns`` null.

Expected values come from exact parses of the trace JSON (``json`` module) or the
profiler's own files, never from the code under test."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tui_prof.cli import main
from tui_prof.exits import EXIT_OK

DATA = Path(__file__).parent / "data"
MI210 = DATA / "kineto" / "mi210__gpu_only_trace__gpu_only_trace.json.gz"
ALEXNET = DATA / "kineto" / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"


def summary_json(path: Path, capsys) -> dict:
    assert main(["summary", str(path), "--no-cache", "--json", "--top", "0"]) == EXIT_OK
    return json.loads(capsys.readouterr().out)


def kernels_of(path: Path) -> list[dict]:
    with gzip.open(path) as fh:
        return [e for e in json.load(fh)["traceEvents"] if e.get("cat") == "kernel" and e.get("ph") == "X"]


def test_hotspot_rows_carry_pct_wall(capsys):
    doc = summary_json(MI210, capsys)
    kernels = kernels_of(MI210)
    with gzip.open(MI210) as fh:  # the process's span: its runtime calls and kernels
        timed = [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("kernel", "cuda_runtime")]
    first = min(round(e["ts"] * 1000) for e in timed)
    last = max(round((e["ts"] + e["dur"]) * 1000) for e in timed)
    assert doc["measurement"]["process_time_ns"] == last - first
    totals: dict[str, int] = {}
    for e in kernels:
        totals[e["name"]] = totals.get(e["name"], 0) + round(e["dur"] * 1000)
    assert doc["hotspots"]
    for h in doc["hotspots"]:
        # one stream: no kernel overlaps another, so the busy time is the total
        assert h["pct_wall"] == pytest.approx(100.0 * totals[h["name"]] / (last - first), abs=1e-4)
        assert 0.0 <= h["pct_wall"] <= 100.0


def test_process_rows_pct_wall_is_the_process_busy_share(capsys):
    """``hotspots_by.process`` names a process by its pid: the busy time is looked up by that
    name (it read 0.0 for every process)."""
    doc = summary_json(DATA / "kineto" / "ranks", capsys)
    for h in doc["hotspots_by"]["process"]:
        assert 0.0 < h["pct_wall"] <= 100.0 * h["total_ns"] / doc["measurement"]["process_time_ns"] + 1e-4


@pytest.mark.parametrize("path", [MI210, ALEXNET], ids=["gpu-only (by name)", "with operators (op first)"])
def test_pooling_kernels_have_their_category(path, capsys):
    doc = summary_json(path, capsys)
    pooled = sum(round(e["dur"] * 1000) for e in kernels_of(path) if "max_pool" in e["name"] or "avg_pool" in e["name"] or "average_pool" in e["name"])
    assert pooled and doc["categories"]["pooling"] == pooled


def test_an_agent_without_timestamps_has_null_first_and_last(capsys):
    """The legacy rocprof counter run (output_vec_add_gpu.csv) records a dispatch without
    times: its agent's first/last activity is unknown (null), not the model's -1."""
    doc = summary_json(DATA / "legacy_rocprof" / "hip-programming", capsys)
    agents = doc["gpu"]["agents"]
    untimed = [a for a in agents if a["process"] == "output_vec_add_gpu"]
    assert untimed and all(a["first_ns"] is None and a["last_ns"] is None for a in untimed)
    timed = [a for a in agents if a["process"] != "output_vec_add_gpu"]
    assert timed and all(a["first_ns"] > 0 and a["last_ns"] >= a["first_ns"] for a in timed)
