"""Regression tests: minimal reproducers of the contract violations the fuzz campaign
found (issue 7), all fixed. Found by ``bench/fuzz_run.py`` (case ids in
docs/reliability.md)."""

from __future__ import annotations

import gzip
import json
import shutil
import signal
import sys
from pathlib import Path

import pytest

from tui_prof.analysis.summary import build_summary
from tui_prof.loaders import load_path
from tui_prof.model import Run, RunSet
from tui_prof.model.schema import make_table

DATA = Path(__file__).parent / "data"


def test_truncated_pftrace_summary(tmp_path):
    """Was pending (pftrace cut to 0 kernels: kernels.name categories of dtype object made
    analysis/timeline.py raise TypeError); fixed in pftrace.py during issue 7, kept as a regression test."""
    data = (DATA / "pftrace" / "synth_small.pftrace").read_bytes()
    (tmp_path / "cut.pftrace").write_bytes(data[:9100])  # fuzz case pftrace/10 (seed 0): last packet cut
    runset = load_path(tmp_path)
    assert runset.runs and runset.runs[0].partial
    build_summary(runset)  # raises TypeError: dtype of categories must be the same


@pytest.mark.parametrize(
    "sample,event,field,value",
    [
        ("critical_path__cuda_event_sync__event_sync_trace.json.gz", 43, "args", -1),  # fuzz kineto/25: AttributeError
        ("triton_example__triton_example.json.gz", 17, "pid", [[1]]),  # fuzz kineto/438: TypeError unhashable
    ],
)
def test_kineto_wrong_type_field_keeps_good_sibling(tmp_path, sample, event, field, value):
    good = DATA / "kineto" / sample
    shutil.copy(good, tmp_path / "good_trace.json.gz")
    doc = json.loads(gzip.decompress(good.read_bytes()))
    doc["traceEvents"][event][field] = value
    (tmp_path / "bad_trace.json").write_text(json.dumps(doc))
    runset = load_path(tmp_path)
    bad = [i for i in runset.errors if i.path.endswith("good_trace.json.gz")]
    assert not bad, bad
    assert not any("loader failed" in i.message for i in runset.issues)


def test_rocprofv3_csv_non_utf8_bad_row_prints_no_traceback(tmp_path, monkeypatch):
    src = (DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7" / "kernel_trace.csv").read_bytes()
    lines = src.split(b"\n")
    lines[1] += b",\xff\xfeextra"
    (tmp_path / "kernel_trace.csv").write_bytes(b"\n".join(lines))
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(repr(u.exc_value)))
    runset = load_path(tmp_path)
    assert any("kernel_trace.csv" in i.path for i in runset.errors)
    assert not unraisable, unraisable[0][:200]


def test_summary_of_10mb_kernel_name_is_fast():
    run = Run()
    run.kernels = make_table("kernels", {"start": [0, 10], "end": [5, 20], "agent": [0, 0], "name": ["K" * (10 * 1024 * 1024), "small_kernel"]})

    def too_slow(signum, frame):
        raise TimeoutError("build_summary took more than 5 s")

    old = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(5)
    try:
        build_summary(RunSet(root="x", runs=[run]))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_truncated_rocprofv3_csv_gives_load_issue(tmp_path):
    src = (DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7" / "kernel_trace.csv").read_bytes()
    (tmp_path / "1234_kernel_trace.csv").write_bytes(src[: len(src) - 40])  # inside the last row
    runset = load_path(tmp_path)
    assert runset.runs and runset.runs[0].partial
    assert [i for i in runset.errors if i.path.endswith("1234_kernel_trace.csv")]


def test_fifo_named_like_profiler_output_is_reported(tmp_path):
    import os

    shutil.copy(DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7" / "kernel_trace.csv", tmp_path / "1_kernel_trace.csv")
    os.mkfifo(tmp_path / "2_kernel_trace.csv")
    runset = load_path(tmp_path)  # must not block on the FIFO (it does not)
    assert runset.runs
    assert [i for i in runset.issues if i.path.endswith("2_kernel_trace.csv")]


def test_pftrace_non_utf8_track_name(tmp_path):
    data = bytearray((DATA / "pftrace" / "synth_small.pftrace").read_bytes())
    data[8703] ^= 0x80  # fuzz case pftrace/1365 (seed 0): one bit in a track name string, one in a varint
    data[14464] ^= 0x20
    (tmp_path / "flipped.pftrace").write_bytes(bytes(data))
    runset = load_path(tmp_path)
    assert not any("loader failed" in i.message for i in runset.issues), runset.issues


def test_rocprofv3_csv_huge_integer_keeps_siblings(tmp_path):
    src = DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm6.3"
    for name in ("kernel_trace.csv", "memory_copy_trace.csv"):
        shutil.copy(src / name, tmp_path / name)
    lines = (tmp_path / "memory_copy_trace.csv").read_bytes().split(b"\n")
    cells = lines[1].split(b",")
    cells[2] = b"99999999999999999999999999"  # fuzz case rocprofv3_csv/6390 (seed 0)
    lines[1] = b",".join(cells)
    (tmp_path / "memory_copy_trace.csv").write_bytes(b"\n".join(lines))
    runset = load_path(tmp_path)
    assert not [i for i in runset.errors if i.path.endswith("kernel_trace.csv")], runset.errors
