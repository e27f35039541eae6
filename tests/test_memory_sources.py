"""Memory sources (issue 21, docs/metrics.md "Memory"), each against an independent reading:
the real rocpd database's own ``region_args`` view for hipMalloc sizes, an exact parse of the
real rocprofv3 ``memory_allocation_trace.csv`` for an allocation-trace peak, and generated
allocation calls whose level is known by construction."""

from __future__ import annotations

import csv
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.test_rocpd import _event, _string_id, _suffix
from tui_prof.analysis import memory
from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.loaders import load_path, rocpd
from tui_prof.model import Run, RunMeta, RunSet
from tui_prof.model.schema import concat_tables, make_table
from tui_prof.render.summary import summary_markdown, summary_text

DATA = Path(__file__).parent / "data"
ROCPD = DATA / "rocpd" / "28_results.db"
ALLOC_CSV = DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7" / "memory_allocation_trace.csv"


def _view(path: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def real_rocpd():
    runset = load_path(ROCPD, use_cache=False)
    return runset, build_summary(runset, SummaryOptions(logs=False))


def test_rocpd_hipmalloc_sizes_equal_the_region_args_view(real_rocpd):
    runset, doc = real_rocpd
    sizes = _view(
        ROCPD,
        "SELECT R.name, A.value, R.start FROM regions R JOIN region_args A ON A.id = R.id AND A.guid = R.guid "
        "WHERE R.name = 'hipMalloc' AND A.name = 'size' ORDER BY R.start",
    )
    frees = _view(ROCPD, "SELECT R.start FROM regions R WHERE R.name = 'hipFree' ORDER BY R.start")
    assert [int(v) for _, v, _ in sizes] == [266371072, 532807680, 133300224]
    (run,) = runset.runs
    a = run.allocations
    calls = a[a["operation"].astype(str) == "hipMalloc"]
    assert calls["bytes"].tolist() == [int(v) for _, v, _ in sizes]
    assert calls["start"].tolist() == [t for _, _, t in sizes]
    assert (calls["address"] == -1).all()  # rocpd records the void** argument, not the allocation
    assert a[a["operation"].astype(str) == "hipFree"]["start"].tolist() == [t for (t,) in frees]
    mem = doc["memory"]
    assert mem["source"] == memory.REQUESTED and mem["devices"] == [] and mem["peak_allocated_bytes"] is None
    (req,) = mem["requested"]
    assert req["requested_bytes"] == sum(int(v) for _, v, _ in sizes) == 932478976
    assert req["largest_bytes"] == 532807680 and req["calls"] == 3
    assert req["functions"] == {"hipMalloc": 3} and req["frees"] == len(frees) == 3
    assert doc["measurement"]["peak_memory_bytes"] is None  # a sum of requests is never the peak


def test_rocpd_requests_are_worded_as_requests(real_rocpd):
    _, doc = real_rocpd
    text = summary_text(doc)
    assert "memory requested by API calls (frees not matched)  889.3 MiB" in text
    assert "GPU memory requested by API calls" in text and "not a peak of allocated memory" in text
    assert "hipMalloc x3" in summary_markdown(doc)
    peak_row = next(line for line in text.splitlines() if line.startswith("peak memory"))
    assert peak_row.split()[-1] == "-"


def _insert_call(con, sfx, nid, name: str, start: int, args: list[tuple[str, str, str]]) -> None:
    ev = _event(con, sfx, "HIP_RUNTIME_API_EXT", 90_000 + start)
    con.execute(
        f"INSERT INTO rocpd_region{sfx} (nid, pid, tid, start, end, name_id, event_id) VALUES (?, 28, 28, ?, ?, ?, ?)",
        (nid, start, start + 10, _string_id(con, sfx, name), ev),
    )
    for pos, (kind, arg, value) in enumerate(args):
        con.execute(f"INSERT INTO rocpd_arg{sfx} (event_id, position, type, name, value) VALUES (?, ?, ?, ?, ?)", (ev, pos, kind, arg, value))


def test_rocpd_other_allocation_calls_and_the_trace_first(tmp_path):
    """hipExtMallocWithFlags (sizeBytes), hipMallocPitch (width x height), hipMallocAsync and
    hipFreeAsync are read; hipHostMalloc (host memory) is not. An allocation trace in the same
    process is the better source and the calls are then not reported."""
    path = tmp_path / "calls_results.db"
    shutil.copy(ROCPD, path)
    path.chmod(0o644)
    con = sqlite3.connect(path)
    sfx = _suffix(con)
    nid = con.execute(f"SELECT id FROM rocpd_info_node{sfx}").fetchone()[0]
    _insert_call(
        con,
        sfx,
        nid,
        "hipExtMallocWithFlags",
        100,
        [("void**", "ptr", "0x7ffc00000010"), ("unsigned long", "sizeBytes", "4096"), ("unsigned int", "flags", "0")],
    )
    _insert_call(
        con,
        sfx,
        nid,
        "hipMallocPitch",
        200,
        [
            ("void**", "ptr", "0x7ffc00000020"),
            ("unsigned long*", "pitch", "0x7ffc00000028"),
            ("unsigned long", "width", "1000"),
            ("unsigned long", "height", "3"),
        ],
    )
    _insert_call(
        con, sfx, nid, "hipMallocAsync", 300, [("void**", "dev_ptr", "0x7ffc00000030"), ("unsigned long", "size", "0x100"), ("hipStream_t", "stream", "0x0")]
    )
    _insert_call(
        con, sfx, nid, "hipHostMalloc", 400, [("void**", "ptr", "0x7ffc00000040"), ("unsigned long", "size", "999999"), ("unsigned int", "flags", "0")]
    )
    _insert_call(con, sfx, nid, "hipFreeAsync", 500, [("void*", "dev_ptr", "0x7ed9d8000000"), ("hipStream_t", "stream", "0x0")])
    con.commit()
    con.close()
    (run,) = rocpd.load_db(path)
    a = run.allocations
    got = {str(o): int(b) for o, b in zip(a["operation"], a["bytes"], strict=True) if str(o) != "hipMalloc" and str(o) != "hipFree"}
    assert got == {"hipExtMallocWithFlags": 4096, "hipMallocPitch": 3000, "hipMallocAsync": 256, "hipFreeAsync": -1}
    req = memory.api_requests(run, "p")
    assert req is not None
    assert req["requested_bytes"] == 932478976 + 4096 + 3000 + 256 and req["calls"] == 6 and req["frees"] == 4
    assert req["free_functions"] == {"hipFree": 3, "hipFreeAsync": 1}
    # an allocation trace in the process wins: its level, and no request record
    trace = make_table(
        "allocations", {"start": [10, 20], "end": [11, 21], "operation": ["ALLOC", "FREE"], "agent": [2, 2], "bytes": [1 << 20, 0], "address": [7, 7]}
    )
    run.allocations = concat_tables("allocations", [trace, a])
    assert memory.allocated_levels(run)[0] == memory.TRACE
    assert memory.api_requests(run, "p") is None
    part = memory.memory_section([(run, "p")])
    assert part["source"] == memory.TRACE and part["peak_allocated_bytes"] == 1 << 20 and part["requested"] == []


def test_matched_allocation_calls_make_a_level():
    """Calls whose pointers are recorded (rocprof v1 prints ``ptr(0x...)`` after the call):
    frees are matched by pointer and the running sum is a level with a peak."""
    calls = make_table(
        "allocations",
        {
            "start": [10, 20, 30, 40, 50, 60],
            "end": [11, 21, 31, 41, 51, 61],
            "operation": ["hipMalloc", "hipMalloc", "hipFree", "hipMalloc", "hipFree", "hipFree"],
            "bytes": [100, 50, -1, 70, -1, -1],
            "address": [0xA0, 0xB0, 0xA0, 0xC0, 0xD0, 0xB0],  # 0xD0: allocated before the trace, size unknown: left out
        },
    )
    run = Run(meta=RunMeta(label="p"), allocations=calls)
    assert memory.api_frees_matched(calls) is True
    source, levels = memory.allocated_levels(run)
    assert source == memory.API
    t, v = levels[-1]
    assert t.tolist() == [10, 20, 30, 40, 60] and v.tolist() == [100, 150, 50, 120, 70]
    doc = build_summary(RunSet(root="p", runs=[run]), SummaryOptions(logs=False))
    assert doc["memory"]["source"] == memory.API and doc["memory"]["peak_allocated_bytes"] == 150
    assert doc["measurement"]["peak_memory_bytes"] == 150 and doc["memory"]["requested"] == []
    assert "API call sizes" in summary_text(doc)
    # a pointer not recorded and a free in the trace: no level, only the requests
    unmatched = calls.assign(address=[-1, -1, 0xA0, -1, 0xD0, 0xB0])
    assert memory.api_frees_matched(unmatched) is False
    run = Run(meta=RunMeta(label="p"), allocations=unmatched)
    assert memory.allocated_levels(run) == ("none", {})
    req = memory.api_requests(run, "p")
    assert req is not None and req["requested_bytes"] == 220 and req["frees"] == 3
    # no free in the trace: what was allocated is held to the end, a level
    never_freed = calls[calls["operation"].astype(str) == "hipMalloc"].assign(address=-1)
    assert memory.api_frees_matched(never_freed) is True
    assert memory.allocated_levels(Run(meta=RunMeta(label="p"), allocations=never_freed))[1][-1][1].tolist() == [100, 150, 220]


def test_real_rocprofv3_allocation_trace_peak_equals_an_exact_parse():
    """The real rocprofv3 docs sample (2 allocations of 1024 B on Agent 0, then their frees,
    which name no agent): the peak is the running sum's maximum, computed here from the CSV."""
    with ALLOC_CSV.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    level, peak, size_at = 0, 0, {}
    for r in sorted(rows, key=lambda r: int(r["Start_Timestamp"])):
        if r["Operation"].endswith("ALLOCATE"):
            size_at[r["Address"]] = int(r["Allocation_Size"])
            level += int(r["Allocation_Size"])
        else:
            level -= int(r["Allocation_Size"]) or size_at[r["Address"]]
        peak = max(peak, level)
    assert peak == 2048 and level == 0
    doc = build_summary(load_path(ALLOC_CSV, use_cache=False), SummaryOptions(logs=False))
    mem = doc["memory"]
    assert mem["source"] == memory.TRACE and mem["peak_allocated_bytes"] == peak
    (dev,) = mem["devices"]
    assert dev["agent"] == 0 and dev["events"] == len(rows)
    assert dev["peak_allocated_ns"] == int(rows[1]["Start_Timestamp"])
    assert doc["measurement"]["peak_memory_bytes"] == peak


LEGACY = DATA / "legacy_rocprof" / "hip-programming"


@pytest.mark.parametrize("name", ["results.db", "results.json"])
def test_rocprof_v1_allocation_calls_match_their_frees(name):
    """rocprof v1 prints hipMalloc's pointer after the call (the allocation's address, as
    hipFree's is): frees match, and the level of the calls has a peak. Against the HIP
    table read here: 3 x hipMalloc(4,000,000,000 B), then their 3 hipFree."""
    calls = _view(LEGACY / "results.db", "SELECT BeginNs, Name, args FROM HIP WHERE Name IN ('hipMalloc', 'hipFree') ORDER BY BeginNs")
    level, peak, held = 0, 0, {}
    for _, fn, args in calls:
        ptr = int(args.split("ptr(")[1].split(")")[0], 16)
        if fn == "hipMalloc":
            held[ptr] = int(args.split("size(")[1].split(")")[0])
            level += held[ptr]
        else:
            level -= held.pop(ptr)
        peak = max(peak, level)
    assert peak == 12_000_000_000 and level == 0 and len(calls) == 6
    doc = build_summary(load_path(LEGACY / name, use_cache=False), SummaryOptions(logs=False))
    mem = doc["memory"]
    assert mem["source"] == memory.API and mem["requested"] == []
    (dev,) = mem["devices"]
    assert dev["agent"] == -1 and dev["events"] == len(calls)
    assert dev["peak_allocated_bytes"] == peak == mem["peak_allocated_bytes"] == doc["measurement"]["peak_memory_bytes"]
    assert dev["peak_allocated_ns"] == int(calls[2][0])  # the third allocation, before any free
    assert "frees matched by pointer" in summary_text(doc)
