"""Issue 33 items 13 (CLI parts) and 14: a missing path in one line; NVIDIA's arch in
CUDA's words; the diff's noise column in the one formatter's precision."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tui_prof.cli import main
from tui_prof.exits import EXIT_NOTHING_LOADED, EXIT_OK

H200 = Path(__file__).parent / "data" / "kineto" / "h200"


def test_summary_of_a_missing_path_is_one_line(tmp_path, capsys):
    missing = tmp_path / "nonexistent"
    assert main(["summary", str(missing)]) == EXIT_NOTHING_LOADED
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [f"tuiprof: {missing}: no such file or directory"]


def test_nvidia_arch_is_the_sm_name(capsys):
    trace = H200 / "decode_graph.pt.trace.json.gz"
    with gzip.open(trace) as fh:
        props = json.load(fh)["deviceProperties"]
    cc = f"sm_{props[0]['computeMajor']}{props[0]['computeMinor']}"  # the trace's own compute capability
    assert main(["summary", str(trace), "--no-cache", "--json"]) == EXIT_OK
    doc = json.loads(capsys.readouterr().out)
    gpus = [a for a in doc["agents"] if a["type"] == "GPU"]
    assert gpus and all(a["arch"] == cc == "sm_90" and a["product"] == props[0]["name"] for a in gpus)
    assert all(a["capabilities"]["arch"] == cc for a in gpus)
    assert all(block["arch"] == cc for block in doc["counters"])
    no_counters = next(f for f in doc["findings"] if f["code"] == "no-counters")
    assert "(sm_90)" in no_counters["message"] and "NVIDIA H200)" not in no_counters["message"]


def test_the_diff_noise_column_uses_the_reports_precision(capsys):
    """The steady step's noise band comes from the runs' step spread (3.9344 % here): the
    column prints it as every percentage is printed (one decimal), whole bands bare."""
    a, b = H200 / "decode_eager.pt.trace.json.gz", H200 / "decode_graph.pt.trace.json.gz"
    assert main(["diff", str(a), str(b), "--no-cache", "--json"]) == EXIT_OK
    metrics = {m["label"]: m for m in json.loads(capsys.readouterr().out)["metrics"]}
    step = metrics["steady step time (median)"]
    assert not float(step["threshold"]).is_integer()
    assert main(["diff", str(a), str(b), "--no-cache"]) == EXIT_OK
    text = capsys.readouterr().out
    line = next(line for line in text.splitlines() if line.startswith("steady step time (median)"))
    assert f" ±{step['threshold']:.1f}% " in line and f"{step['threshold']:g}" not in line
    assert " ±2% " in next(line for line in text.splitlines() if line.startswith("kernel time"))
    assert f"the ±{step['threshold']:.1f}% noise" in step["reason"]
