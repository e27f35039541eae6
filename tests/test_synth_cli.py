"""Issue 33 item 17: ``python -m tui_prof.synth --generator ranks|steps|rocprof-compute``
writes the other generators' runs and prints their answers; each is checked against the
summary tuiprof makes of the files written (the answers are known by construction)."""

from __future__ import annotations

import json

import pytest

from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.loaders import load_path
from tui_prof.synth import main


def run_synth(capsys, *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("fmt", ["kineto", "csv"])
def test_ranks_generator(tmp_path, capsys, fmt):
    answers = run_synth(capsys, str(tmp_path), "--generator", "ranks", "--ranks", "3", "--slow-rank", "2", "--format", fmt)
    assert answers["generator"] == "ranks" and len(answers["compute_ns"]) == 3
    doc = build_summary(load_path(tmp_path, use_cache=False), SummaryOptions(logs=False))
    rows = sorted(doc["ranks"], key=lambda r: r["rank"])
    assert [r["compute_ns"] for r in rows] == answers["compute_ns"]
    assert [r["communication_ns"] for r in rows] == answers["communication_ns"]
    assert doc["stragglers"]["rank"] == 2


def test_steps_generator(tmp_path, capsys):
    answers = run_synth(capsys, str(tmp_path), "--generator", "steps", "--steps", "5", "--format", "kineto")
    doc = build_summary(load_path(tmp_path, use_cache=False), SummaryOptions(logs=False))
    steps = doc["steps"]["steps"]
    assert [s["label"] for s in steps] == answers["labels"]
    assert [s["kernels"] for s in steps] == answers["kernels"]
    assert [(s["start_ns"], s["end_ns"]) for s in steps] == list(zip(answers["starts"], answers["ends"], strict=True))


def test_rocprof_compute_generator(tmp_path, capsys):
    answers = run_synth(capsys, str(tmp_path / "workload"), "--generator", "rocprof-compute")
    doc = build_summary(load_path(tmp_path / "workload", use_cache=False), SummaryOptions(logs=False))
    found = {k["name"]: k for block in doc["counters"] for k in block["kernels"]}
    for kernel in answers["kernels"]:
        entry = found[kernel["name"]]
        assert entry["dispatches"] == kernel["dispatches"]
        for key, value in kernel["expected"].items():
            got = entry["roofline"]["ai"] if key == "ai" else entry["metrics"][key]["value"]
            assert got == pytest.approx(value, rel=1e-6), (kernel["name"], key)
        assert sorted(k for k, v in entry["metrics"].items() if v["flagged"]) == sorted(kernel["flagged"])


def test_a_bad_generator_option_is_one_line(tmp_path, capsys):
    assert main([str(tmp_path), "--generator", "ranks", "--format", "rocpd"]) == 2
    assert capsys.readouterr().err.strip() == "error: --generator ranks writes csv or kineto, not rocpd"
