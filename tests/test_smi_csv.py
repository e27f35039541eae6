"""madengine power/VRAM sampler CSV loader. The input files are written here by hand in the
layout of madengine's writer (see tui_prof/loaders/smi_csv.py), so every expected value is
known by construction."""

from pathlib import Path

import numpy as np

from tui_prof.loaders import smi_csv
from tui_prof.loaders.base import DetectedFile, IssueSink, read_head

DATA = Path(__file__).parent / "data" / "smi"


def test_power_csv_by_construction():
    path = DATA / "gpu_info_power_profiler_output.csv"
    assert smi_csv.sniff(path, read_head(path)).kind == "samples"
    run = smi_csv.load_file(path)
    s = run.series
    assert run.meta.extra["series_only"] is True and run.meta.extra["directory"] == str(DATA)
    # 3 rows x 2 devices, one "N/A" dropped
    assert len(s) == 5
    assert set(s["unit"]) == {"W"} and set(s["track"]) == {"power (W)"}
    gpu1 = s[s["agent"] == 1]
    assert gpu1["value"].tolist() == [301.5, 455.0]
    # 2025-01-02 03:04:05.100000 as UTC ns
    assert s["ts"].iloc[0] == np.datetime64("2025-01-02T03:04:05.100000", "ns").astype(np.int64)
    assert np.diff(s[s["agent"] == 0]["ts"]).tolist() == [100_000_000, 100_000_000]


def test_vram_csv_by_construction():
    run = smi_csv.load_file(DATA / "gpu_info_vram_profiler_output.csv")
    assert set(run.series["unit"]) == {"%"}
    assert run.series["value"].sum() == 12.5 + 13.0


def test_bad_files_are_one_line_errors(tmp_path):
    other = tmp_path / "gpu_info_power_profiler_output.csv"
    other.write_text("time,Power(Watt) GPU0\nnot-a-time,12\n")
    bad = tmp_path / "x.csv"
    bad.write_text("a,b\n1,2\n")
    assert smi_csv.sniff(bad, read_head(bad)) is None
    sink = IssueSink()
    runs = smi_csv.load([DetectedFile(bad, smi_csv.FORMAT, "samples", ""), DetectedFile(other, smi_csv.FORMAT, "samples", "")], sink)
    assert len(sink.issues) == 1 and "\n" not in sink.issues[0].message and str(bad) == sink.issues[0].path
    assert len(runs) == 1 and len(runs[0].series) == 0 and runs[0].warnings
