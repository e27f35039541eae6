"""Many tiny processes (issue 30, point 15): their kernel traces are read in batches per
host, and what the batch gives is what reading each process on its own gives (tables
value for value and dtype for dtype, metadata, agents, warnings, issues, and the
``summary --json`` document)."""

from __future__ import annotations

import dataclasses
import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tui_prof.loaders import csv_batch, detect, load_path, rocprofv3_csv
from tui_prof.model.schema import TABLES

HEADER = (
    '"Kind","Agent_Id","Queue_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id",'
    '"Start_Timestamp","End_Timestamp","Private_Segment_Size","Group_Segment_Size",'
    '"Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"'
)
AGENTS = ("1", "Agent 2", "GPU 0", "CPU 1", "agent 7", "bogus")
AGENT_INFO = (
    '"Node_Id","Logical_Node_Id","Agent_Type","Name","Wave_Front_Size","Cu_Count"\n'
    '0,0,"CPU","AMD EPYC",0,0\n'
    '1,1,"GPU","gfx942",64,304\n'
    '2,2,"GPU","gfx942",64,304\n'
    '1,3,"GPU","gfx942",64,304\n'  # a repeated node id: its first row is kept
)


def _row(pid: int, i: int, agent: str, name: str, dispatch: int, start: int) -> str:
    return f'"KERNEL_DISPATCH","{agent}",{1 + i % 3},{pid},{dispatch},{16 + i % 5},"{name}",{i + 1},{start},{start + 400 + i},0,{i % 2 * 70000},64,1,1,1024,1,1'


def write_many(root: Path, processes: int, hosts: int = 3, seed: int = 0, agents: bool = False) -> None:
    """``processes`` one-to-four-row kernel traces, one process each, over ``hosts`` host
    folders: shuffled kernel name orders, every agent spelling, values that need int64 in
    some processes only, and a few files the batch must leave to the per-file reader."""
    rng = np.random.default_rng(seed)
    for p in range(processes):
        host = root / f"node{p % hosts}"
        host.mkdir(parents=True, exist_ok=True)
        pid = 2000 + p
        rows = []
        for i in range(1 + int(rng.integers(0, 4))):
            name = f"kern_{int(rng.integers(0, 9))}<float>(float*, int)"
            dispatch = int(rng.integers(1, 50)) if p % 11 else 5_000_000_000 + i  # beyond int32 in a few
            start = 1_700_000_000_000_000_000 + p * 10_000 + i * 1000
            rows.append(_row(pid, i, AGENTS[int(rng.integers(0, len(AGENTS)))], name, dispatch, start))
        text = HEADER + "\n" + "\n".join(rows) + "\n"
        if agents and p % 5:  # most processes also wrote agent_info: one content per host, a broken one
            info = AGENT_INFO if p % hosts else AGENT_INFO.replace("\n1,", "\n5,", 1)
            (host / f"{pid}_agent_info.csv").write_text(info if p % 23 != 7 else info.replace("\n0,", "\nx,", 1))
        if p % 17 == 5:
            text = text[:-30]  # the last line cut short: the per-file reader marks it partial
        elif p % 17 == 9:
            text = text.replace("kern_", 'ke"rn_', 1)  # an unescaped quote: re-quoted per file
        elif p % 17 == 13:
            text = text.replace("\n", "\r\n")  # CRLF: left to the per-file reader
        (host / f"{pid}_kernel_trace.csv").write_text(text)


@pytest.fixture
def unbatched(monkeypatch):
    """Loads with every unit read on its own (the reference)."""

    def apply():
        monkeypatch.setattr(detect, "_batched", lambda units: set())

    return apply


def assert_same_runs(got, want) -> None:
    assert [dataclasses.astuple(i) for i in got.issues] == [dataclasses.astuple(i) for i in want.issues]
    assert len(got.runs) == len(want.runs)
    for a, b in zip(got.runs, want.runs, strict=True):
        assert a.meta == b.meta and a.agents == b.agents
        assert a.warnings == b.warnings and a.partial == b.partial
        for name in TABLES:
            x, y = a.table(name), b.table(name)
            assert list(x.dtypes.astype(str)) == list(y.dtypes.astype(str)), (a.meta.label, name)
            pd.testing.assert_frame_equal(x, y, check_categorical=True, check_exact=True, obj=f"{a.meta.label} {name}")
            for col in x.columns:
                if isinstance(x[col].dtype, pd.CategoricalDtype):  # the same categories in the same order
                    assert list(x[col].cat.categories) == list(y[col].cat.categories), (a.meta.label, name, col)


@pytest.mark.parametrize("agents", [False, True], ids=["trace-only", "with-agent-info"])
def test_batched_load_equals_unit_by_unit(tmp_path, unbatched, agents):
    write_many(tmp_path, 160, agents=agents)
    units = detect.work_units(detect.scan(tmp_path, detect.IssueSink()))
    assert len(detect._batched(units)) == 160  # every unit is small enough to batch
    got = load_path(tmp_path)
    unbatched()
    want = load_path(tmp_path)
    assert_same_runs(got, want)
    assert any(run.partial for run in want.runs) and any(len(run.kernels) > 1 for run in want.runs)
    assert {str(run.kernels["dispatch_id"].dtype) for run in want.runs} == {"int32", "int64"}
    assert any(run.meta.extra.get("agent_index") == ["relative"] for run in want.runs)
    if agents:  # the agents as agent_info gave them, and the broken one reported
        assert any(run.agents and run.agents[-1].name == "gfx942" for run in want.runs)
        assert any("agent_info" in issue.message for issue in want.issues)


def test_batch_path_reads_most_files_together(tmp_path, monkeypatch):
    """The batch reads the plain files itself; the odd ones go to the per-file reader."""
    write_many(tmp_path, 68, hosts=2)
    per_file: list[str] = []
    original = rocprofv3_csv.load

    def counting(files, issues):
        per_file.extend(item.path.name for item in files)
        return original(files, issues)

    monkeypatch.setattr(rocprofv3_csv, "load", counting)
    runset = load_path(tmp_path)
    assert len(runset.runs) == 68
    odd = sorted(f"{2000 + p}_kernel_trace.csv" for p in range(68) if p % 17 in (5, 9, 13))
    assert sorted(per_file) == odd


def _summary_json(path: Path, *extra: str) -> dict:
    from tui_prof import cli

    out = io.StringIO()
    with redirect_stdout(out):
        status = cli.main(["summary", "--json", "--no-cache", *extra, str(path)])
    assert status == 0
    return json.loads(out.getvalue())


def test_summary_json_batched_equals_unbatched(tmp_path, unbatched):
    write_many(tmp_path, 120, hosts=4, seed=3, agents=True)
    got = _summary_json(tmp_path)
    unbatched()
    want = _summary_json(tmp_path)
    assert got == want
    assert len(got["processes"]) == 120  # every process in it, compared whole
    assert got["kernels"] and got["hotspots"]


def test_batch_reads_the_descriptor_it_checked(tmp_path):
    """A FIFO in place of a tiny trace is never opened for reading in a way that blocks,
    and is reported like the per-file reader reports it."""
    import os

    write_many(tmp_path, 4, hosts=1)
    units = detect.work_units(detect.scan(tmp_path, detect.IssueSink()))
    victim = units[0][1][0].path
    victim.unlink()
    os.mkfifo(victim)
    results = csv_batch.load_batch([files for _fmt, files in units])
    assert [len(runs) for runs, _sink in results][1:] == [1, 1, 1]
    runs, sink = results[0]
    assert runs == [] and "not a regular file" in sink.issues[0].message


def test_a_huge_header_group_is_not_mixed_with_another(tmp_path, unbatched):
    """Files with different headers (ROCm 6 and 7 column sets) form separate batches."""
    write_many(tmp_path / "a", 20, hosts=1)
    other = HEADER.replace('"Private_Segment_Size","Group_Segment_Size"', '"Scratch_Size","LDS_Block_Size"')
    for path in sorted((tmp_path / "a").rglob("*.csv"))[::2]:
        path.write_bytes(path.read_bytes().replace(HEADER.encode(), other.encode(), 1))
    got = load_path(tmp_path)
    unbatched()
    assert_same_runs(got, load_path(tmp_path))


@pytest.mark.parametrize("was_on", [True, False])
def test_the_collector_is_switched_back_as_it_was(tmp_path, monkeypatch, was_on):
    """A batch pauses Python's cyclic collector while it builds its tables and leaves it
    as it found it, also when the batch fails."""
    import gc

    write_many(tmp_path, 6, hosts=1)
    units = [files for _fmt, files in detect.work_units(detect.scan(tmp_path, detect.IssueSink()))]
    seen = []
    original = csv_batch._build

    def watching(batch):
        seen.append(gc.isenabled())
        return original(batch)

    monkeypatch.setattr(csv_batch, "_build", watching)
    (gc.enable if was_on else gc.disable)()
    try:
        assert len(csv_batch.load_batch(units)) == 6
        assert seen == [False] and gc.isenabled() is was_on
        monkeypatch.setattr(csv_batch, "_build", lambda batch: 1 / 0)
        with pytest.raises(ZeroDivisionError):
            csv_batch.load_batch(units)
        assert gc.isenabled() is was_on
    finally:
        gc.enable()


def test_a_batch_stops_when_its_load_is_cancelled(tmp_path, monkeypatch):
    """A batch checks the load's cancel event between processes (Ctrl-C and the TUI's quit
    reach it within about a second, as they reach a unit read on its own)."""
    import threading

    from tui_prof.loaders.base import LoadCancelled, load_scope

    write_many(tmp_path, 12, hosts=1)
    units = [files for _fmt, files in detect.work_units(detect.scan(tmp_path, detect.IssueSink()))]
    event = threading.Event()
    built = []
    original = csv_batch._build

    def build_then_cancel(batch):
        built.append(len(batch.files))
        event.set()  # cancelled while the batch is being cut into processes
        return original(batch)

    monkeypatch.setattr(csv_batch, "_build", build_then_cancel)
    with load_scope(event), pytest.raises(LoadCancelled):
        csv_batch.load_batch(units)
    assert built == [10]  # the one batch (12 processes less the two odd files) was built, then stopped


def test_a_failing_batch_falls_back_to_unit_by_unit(tmp_path, monkeypatch, unbatched):
    """A bug in the batch path loses nothing: its units are read one by one."""
    write_many(tmp_path, 20, hosts=2, agents=True)

    def broken(units):
        raise RuntimeError("batch bug")

    monkeypatch.setattr(rocprofv3_csv, "load_batch", broken)
    got = load_path(tmp_path)
    unbatched()
    assert_same_runs(got, load_path(tmp_path))
    assert len(got.runs) == 20
