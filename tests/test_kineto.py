"""Kineto (PyTorch profiler) chrome trace loader, checked against independent sources:

* Holistic Trace Analysis (HTA 0.5.0) numbers, hard-coded below; how they were produced
  and the side-by-side table are in docs/hta_crosscheck.md (script bench/hta_crosscheck.py);
* an independent plain-json pass in this file (Decimal parsing, no loader code);
* synthetic traces whose answers are known by construction.
"""

import gzip
import json
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from tui_prof.loaders import kineto
from tui_prof.loaders.base import DetectedFile, IssueSink, read_head

DATA = Path(__file__).parent / "data" / "kineto"
FILES = sorted(DATA.glob("*.json.gz"))

# HTA 0.5.0 (parser output, kernels + gpu_memcpy + gpu_memset merged with HTA's
# merge_kernel_intervals), from docs/hta_crosscheck.md: kernel count, GPU busy µs, span µs.
HTA = {
    "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz": (79, 66141.000, 12920244.000),
    "critical_path__cuda_event_sync__event_sync_trace.json.gz": (4, 51.000, 263.000),
    "critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz": (3, 372.000, 19506.000),
    "critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz": (79, 49758.000, 16025575.000),
    "h100__gaunernst_bert-small-uncased__1016001.json.gz": (60, 309.438, 3907.825),
    "inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz": (555, 9772.929, 473749.943),
    "mi210__gpu_only_trace__gpu_only_trace.json.gz": (562, 5343.370, 5979.503),
    "mi300__gaunernst_bert-small-uncased__1016001.json.gz": (60, 390.749, 3495.976),
    "mi300__resnet_act_checkpoint.json.gz": (2995, 84002.069, 86567.708),
    "torch_compile_triton__trace.json.gz": (12, 12549.021, 12549.032),
    "trace_filter__sampled_rank-0.json.gz": (1154, 547656.000, 1222847.000),
    "triton_example__triton_example.json.gz": (1, 1.760, 1.760),
}
# HTA does its arithmetic on float µs after shifting by the first ts (and sums many
# intervals), so on ns-resolution traces it drifts by up to ~0.06 µs from the exact value.
HTA_TOL_US = 0.1


def union_ns(start, end) -> int:
    """Total length of the union of [start, end) intervals: the tests' own reference (also
    used by test_rocpd), independent of tui_prof.analysis.timeline."""
    order = np.argsort(start, kind="stable")
    total, cur_s, cur_e = 0, None, None
    for s, e in zip(np.asarray(start)[order].tolist(), np.asarray(end)[order].tolist()):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (cur_e - cur_s if cur_e is not None else 0)


def raw(path):
    with gzip.open(path, "rb") as fh:
        return json.load(fh, parse_float=Decimal)


def ns(value) -> int:
    """Exact ns from the decimal text of a µs value."""
    return int(Decimal(value) * 1000)


def test_hta_numbers_cover_all_copied_files():
    assert sorted(HTA) == [p.name for p in FILES]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:40])
def test_against_hta(path):
    kernels, busy_us, span_us = HTA[path.name]
    run = kineto.load_file(path)
    k, c = run.kernels, run.copies
    assert len(k) == kernels
    start = np.concatenate([k["start"], c["start"]])
    end = np.concatenate([k["end"], c["end"]])
    assert abs(union_ns(start, end) / 1000 - busy_us) <= HTA_TOL_US
    assert abs((end.max() - start.min()) / 1000 - span_us) <= HTA_TOL_US


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name[:40])
def test_against_plain_json(path):
    """Kernel count/total per name and every timestamp, from an independent Decimal parse."""
    events = [e for e in raw(path)["traceEvents"] if e.get("ph") == "X"]
    expected = defaultdict(lambda: [0, 0])
    for e in events:
        if e.get("cat") == "kernel":
            expected[e["name"]][0] += 1
            expected[e["name"]][1] += ns(e["dur"])
    run = kineto.load_file(path)
    k = run.kernels
    got = k.assign(d=k["end"] - k["start"]).groupby("name", observed=True)["d"].agg(["count", "sum"])
    assert {n: [int(r["count"]), int(r["sum"])] for n, r in got.iterrows()} == {n: v for n, v in expected.items()}
    # exact start/end ns (max error 0) for kernels, copies and runtime calls
    for cat, table in (("kernel", run.kernels), ("cuda_runtime", run.api[run.api["domain"] != "cuda_sync"])):
        rows = [e for e in events if e.get("cat") == cat]
        if cat == "cuda_runtime":
            rows += [e for e in events if e.get("cat") == "cuda_driver"]
        assert sorted(table["start"].tolist()) == sorted(ns(e["ts"]) for e in rows)
        assert sorted(table["end"].tolist()) == sorted(ns(e["ts"]) + ns(e.get("dur", 0)) for e in rows)


def test_copies_against_plain_json():
    path = DATA / "trace_filter__sampled_rank-0.json.gz"
    expected = defaultdict(int)
    for e in raw(path)["traceEvents"]:
        if e.get("cat") == "gpu_memcpy":
            expected[e["name"].split()[1]] += e["args"]["bytes"]
        elif e.get("cat") == "gpu_memset":
            expected["memset"] += e["args"]["bytes"]
    copies = kineto.load_file(path).copies
    assert copies.groupby("direction", observed=True)["bytes"].sum().to_dict() == dict(expected)


def test_grid_in_work_items():
    """CUDA grid is in blocks; ROCm hipExtModuleLaunchKernel records the global size already."""
    cuda = kineto.load_file(DATA / "trace_filter__sampled_rank-0.json.gz").kernels
    first = next(e for e in raw(DATA / "trace_filter__sampled_rank-0.json.gz")["traceEvents"] if e.get("cat") == "kernel")
    row = cuda[cuda["correlation_id"] == first["args"]["correlation"]].iloc[0]
    assert row["grid_x"] == first["args"]["grid"][0] * first["args"]["block"][0]  # 2400 blocks * 256
    assert row["wg_x"] == 256
    rocm_path = DATA / "torch_compile_triton__trace.json.gz"
    launches = {e["args"]["correlation"]: e for e in raw(rocm_path)["traceEvents"] if e.get("cat") == "cuda_runtime"}
    kernels = kineto.load_file(rocm_path).kernels
    for _, k in kernels.iterrows():
        launch = launches[k["correlation_id"]]
        grid, block = launch["args"]["grid"], launch["args"]["block"]
        factor = 1 if launch["name"] == "hipExtModuleLaunchKernel" else block[0]
        assert k["grid_x"] == grid[0] * factor
        assert k["lds_bytes"] == launch["args"]["shared memory"]


def test_agents_meta_and_rocm_device_mapping():
    mi300 = kineto.load_file(DATA / "mi300__gaunernst_bert-small-uncased__1016001.json.gz")
    (agent,) = mi300.agents
    # kernels run on device/pid 2 while deviceProperties has only id 0
    assert agent.id == 2 and set(mi300.kernels["agent"]) == {2}
    assert (agent.name, agent.product, agent.cu_count, agent.wave_size) == ("gfx94x", "AMD Instinct MI300X VF", 304, 64)
    assert mi300.meta.tool == "pytorch-profiler" and mi300.meta.extra["runtime"] == "HIP 6.4.43483"
    assert mi300.meta.pid == 6240 and set(mi300.api["domain"]) == {"hip"}
    h100 = kineto.load_file(DATA / "h100__gaunernst_bert-small-uncased__1016001.json.gz")
    assert [(a.id, a.product, a.cu_count, a.wave_size) for a in h100.agents] == [(0, "NVIDIA H100 80GB HBM3", 132, 32)]
    assert h100.meta.extra["runtime"] == "CUDA 12.4"
    resnet = kineto.load_file(DATA / "mi300__resnet_act_checkpoint.json.gz")
    assert resnet.meta.rank == 0 and resnet.meta.extra["distributed"]["world_size"] == 8
    alex = kineto.load_file(DATA / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz")
    assert [a.id for a in alex.agents] == list(range(8))
    assert (alex.api["domain"] == "cuda_sync").sum() == 41  # "Stream Sync" etc. kept apart from runtime calls
    assert set(alex.markers["source"]) == {"cpu_op", "user_annotation"}


def test_sniff():
    for path in FILES:
        assert kineto.sniff(path, read_head(path)), path.name
    tests_data = DATA.parent
    for other in (tests_data / "rocprofv3_json/908_results.json.gz", tests_data / "legacy_rocprof/hip-programming/results.json"):
        assert kineto.sniff(other, read_head(other)) is None, other.name


def write_trace(path, events, **top):
    path.write_text(json.dumps({"schemaVersion": 1, "deviceProperties": [], "traceEvents": events, **top}))


def test_back_to_back_kernels_stay_back_to_back(tmp_path):
    """Rounding ts and dur separately keeps end == next start; rounding ts+dur would not."""
    # found by search: round((ts + dur) * 1000) is 1 ns off for this pair
    ts_ns, dur_ns = 3259781712616263, 42764
    ts, dur = float(Decimal(ts_ns) / 1000), float(Decimal(dur_ns) / 1000)
    assert round((ts + dur) * 1000) != ts_ns + dur_ns
    nxt = float(Decimal(ts_ns + dur_ns) / 1000)
    events = [
        {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": ts, "dur": dur, "args": {"device": 0, "stream": 7}},
        {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": nxt, "dur": 1.0, "args": {"device": 0, "stream": 7}},
    ]
    write_trace(tmp_path / "t.json", events)
    k = kineto.load_file(tmp_path / "t.json").kernels
    assert k["start"].tolist() == [ts_ns, ts_ns + dur_ns]
    assert k["end"].iloc[0] == k["start"].iloc[1]


def test_bad_files_report_one_line_and_others_load(tmp_path):
    good = tmp_path / "good.json"
    write_trace(good, [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 1, "ts": 1, "dur": 2, "args": {}}])
    truncated = tmp_path / "trunc.json.gz"
    truncated.write_bytes(gzip.compress(good.read_bytes())[:-20])
    cut = tmp_path / "cut.json"
    cut.write_text(good.read_text()[:-10])
    noevents = tmp_path / "none.json"
    noevents.write_text('{"schemaVersion": 1, "deviceProperties": []}')
    sink = IssueSink()
    files = [DetectedFile(p, kineto.FORMAT, "trace", str(p)) for p in (truncated, cut, noevents, good)]
    runs = kineto.load(files, sink)
    assert len(runs) == 1 and runs[0].kernels["end"].tolist() == [3000]
    assert [i.path for i in sink.issues] == [str(truncated), str(cut), str(noevents)]
    assert all("\n" not in i.message and i.message for i in sink.issues)
    assert "gzip" in sink.issues[0].message and "JSON" in sink.issues[1].message and "traceEvents" in sink.issues[2].message


def test_directory_of_rank_files_gives_one_run_per_file(tmp_path):
    import shutil

    from tui_prof.loaders import load_path

    for name in ("critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz", "mi300__resnet_act_checkpoint.json.gz"):
        shutil.copy(DATA / name, tmp_path / name)
    (tmp_path / "gpu_info_power_profiler_output.csv").write_text("time,Power(Watt) GPU0\n2025-01-02 03:04:05.100000,100\n")
    runset = load_path(tmp_path)
    assert runset.errors == []
    assert sorted(r.meta.pid for r in runset.runs) == [542, 2869224]
    assert [len(r.series) for r in runset.runs] == [1, 1]  # smi samples attached to both runs of the directory


# --------------------------------------------------------------------------- streaming reader


def tables_of(run):
    return {name: getattr(run, name) for name in ("kernels", "api", "copies", "markers", "allocations")}


@pytest.mark.parametrize("name", ["mi300__gaunernst_bert-small-uncased__1016001.json.gz", "trace_filter__sampled_rank-0.json.gz"])
def test_tiny_read_window_gives_the_same_run(monkeypatch, name):
    """Chunk and look-ahead far smaller than one event: every event straddles window edges;
    the tables equal those of the default window (which test_against_plain_json checks)."""
    import pandas as pd

    whole = kineto.load_file(DATA / name)
    monkeypatch.setattr(kineto, "CHUNK_BYTES", 97)
    monkeypatch.setattr(kineto, "LOW_WATER", 13)
    small = kineto.load_file(DATA / name)
    for key, table in tables_of(whole).items():
        pd.testing.assert_frame_equal(table, tables_of(small)[key], check_exact=True)
    assert whole.meta == small.meta and whole.agents == small.agents


def test_top_level_keys_before_and_after_trace_events(tmp_path):
    """deviceProperties/version keys are read wherever they sit (Kineto writes some after traceEvents)."""
    events = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 0, "ts": 1.5, "dur": 2.25, "args": {"device": 2, "stream": 0, "correlation": 1}}]
    props = [{"id": 0, "name": "AMD Instinct MI300X", "numSms": 304, "warpSize": 64, "computeMajor": 9, "computeMinor": 4}]
    for order in ("before", "after"):
        top = {"traceEvents": events, "hip_runtime_version": 60443483, "deviceProperties": props, "distributedInfo": {"rank": 3}}
        keys = list(top) if order == "after" else list(top)[::-1]
        path = tmp_path / f"{order}.json"
        path.write_text(json.dumps({k: top[k] for k in keys}, indent=1))
        run = kineto.load_file(path)
        assert run.meta.extra["runtime"] == "HIP 6.4.43483" and run.meta.rank == 3
        assert [(a.id, a.cu_count) for a in run.agents] == [(2, 304)]
        assert run.kernels[["start", "end"]].values.tolist() == [[1500, 3750]]


def test_damaged_middle_is_reported_without_reading_on(tmp_path):
    """Bad JSON inside traceEvents: a one-line error naming the line, not a partial run."""
    from tui_prof.synth import SynthSpec, build
    from tui_prof.synth.write_kineto import write_kineto

    path = write_kineto(build(SynthSpec(iterations=200, kernels_per_iteration=5)), tmp_path / "t.json")
    text = path.read_text()
    cut = text.index('"ph": "X", "cat": "kernel"', len(text) // 2)
    bad = tmp_path / "bad.json"
    bad.write_text(text[:cut] + '"ph": "X", "cat": kernel' + text[cut + 26 :])
    line = text[:cut].count("\n") + 1
    with pytest.raises(kineto.LoadError, match=rf"not valid JSON \(Expecting value at line {line}\)"):
        kineto.load_file(bad)
    cut_gz = tmp_path / "cut.json.gz"
    packed = gzip.compress(text.encode())
    cut_gz.write_bytes(packed[: len(packed) // 2])
    sink = IssueSink()
    assert kineto.load([DetectedFile(cut_gz, kineto.FORMAT, "trace", str(cut_gz))], sink) == []
    assert "gzip" in sink.issues[0].message and "\n" not in sink.issues[0].message


def test_memory_grows_with_kept_events_not_file_size(tmp_path, monkeypatch):
    """Python heap peak while reading a ~11 MB synthetic trace stays far below the text size
    (json.load of the same file peaks at several times the file size; here ~1/4 of it)."""
    import tracemalloc

    from tui_prof.synth import SynthSpec, build
    from tui_prof.synth.write_kineto import write_kineto

    path = write_kineto(build(SynthSpec(iterations=800, kernels_per_iteration=10)), tmp_path / "t.json")
    size = path.stat().st_size
    monkeypatch.setattr(kineto, "CHUNK_BYTES", 256 << 10)
    monkeypatch.setattr(kineto, "LOW_WATER", 64 << 10)
    tracemalloc.start()
    events = kineto.read_trace(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(events.kernels.ts) == 8000
    assert peak < size / 3, (peak, size)  # ~2.9 MB for 11 MB: columns of 8000 kernels + 9000 calls, one window


# --------------------------------------------------------------------------- malformed fields
# Each good event below has a known answer; one bad copy per wrong-type case must be skipped
# (counted in one run warning) or, for ids, read as UNKNOWN, and leave every good row as is.

GOOD = [
    {
        "ph": "X",
        "cat": "kernel",
        "name": "k",
        "pid": 0,
        "tid": 7,
        "ts": 10,
        "dur": 5,
        "args": {"device": 0, "stream": 7, "correlation": 1, "grid": [2, 1, 1], "block": [64, 1, 1]},
    },
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 101, "ts": 8, "dur": 1, "args": {"correlation": 1}},
    {
        "ph": "X",
        "cat": "gpu_memcpy",
        "name": "Memcpy HtoD (Pageable -> Device)",
        "pid": 0,
        "tid": 7,
        "ts": 20,
        "dur": 3,
        "args": {"device": 0, "stream": 7, "correlation": 2, "bytes": 4096},
    },
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 100, "tid": 101, "ts": 7, "dur": 4, "args": {}},
    {
        "ph": "i",
        "cat": "cpu_instant_event",
        "name": "[memory]",
        "pid": 100,
        "tid": 101,
        "ts": 9,
        "s": "t",
        "args": {"Bytes": 512, "Device Type": 1, "Device Id": 0, "Addr": 4660},
    },
    {"ph": "M", "name": "process_labels", "pid": 100, "tid": 0, "args": {"labels": "CPU"}},
]


def good_numbers(run):
    """Every row of the tables GOOD fills, as plain tuples."""
    return {
        "kernels": run.kernels[["start", "end", "agent", "stream", "correlation_id", "pid", "tid", "grid_x", "wg_x"]].values.tolist(),
        "kernel_names": list(run.kernels["name"].cat.categories),
        "api": run.api[["start", "end", "pid", "tid", "correlation_id"]].values.tolist(),
        "api_names": list(run.api["name"].cat.categories),
        "copies": run.copies[["start", "end", "bytes", "dst_agent", "correlation_id"]].values.tolist(),
        "markers": run.markers[["start", "end", "pid", "tid"]].values.tolist(),
        "marker_names": list(run.markers["name"].cat.categories),
        "allocations": run.allocations[["start", "bytes", "agent", "address", "pid"]].values.tolist(),
        "pid": run.meta.pid,
    }


EXPECTED_GOOD = {
    "kernels": [[10_000, 15_000, 0, 7, 1, 100, 101, 128, 64]],
    "kernel_names": ["k"],
    "api": [[8_000, 9_000, 100, 101, 1]],
    "api_names": ["cudaLaunchKernel"],
    "copies": [[20_000, 23_000, 4096, 0, 2]],
    "markers": [[7_000, 11_000, 100, 101]],
    "marker_names": ["aten::mm"],
    "allocations": [[9_000, 512, 0, 4660, 100]],
    "pid": 100,
}


def with_field(index, field, value, name="bad"):
    """A copy of GOOD[index] with one field replaced (and a name of its own, to check that a
    skipped event leaves no category behind)."""
    event = json.loads(json.dumps(GOOD[index]))
    if field != "name" and event.get("name") not in ("[memory]", "process_labels"):
        event["name"] = name
    event[field] = value
    return event


WRONG_TYPES = [
    # (case id, bad event) -> skipped and counted
    ("kernel args number", with_field(0, "args", -1)),
    ("kernel args list", with_field(0, "args", [1, 2])),
    ("kernel args string", with_field(0, "args", "x")),
    ("kernel pid list", with_field(0, "args", {"device": [[1]], "correlation": 5})),
    ("kernel ts string", with_field(0, "ts", "soon")),
    ("kernel ts object", with_field(0, "ts", {"us": 1})),
    ("kernel dur null", with_field(0, "dur", None)),
    ("kernel name object", with_field(0, "name", {"n": 1})),
    ("kernel name list", with_field(0, "name", ["k"])),
    ("runtime args number", with_field(1, "args", 3.5)),
    ("runtime pid list", with_field(1, "pid", [[1]])),
    ("runtime correlation object", with_field(1, "args", {"correlation": {"id": 1}})),
    ("runtime shared memory list", with_field(1, "args", {"correlation": 9, "shared memory": [0]})),
    ("copy args number", with_field(2, "args", 7)),
    ("copy bytes list", with_field(2, "args", {"bytes": [4096]})),
    ("copy dur string", with_field(2, "dur", "three")),
    ("marker pid list", with_field(3, "pid", [[1]])),
    ("marker tid object", with_field(3, "tid", {"t": 1})),
    ("marker ts string", with_field(3, "ts", "later")),
    ("marker dur null", with_field(3, "dur", None)),
    ("marker name object", with_field(3, "name", {"n": 1})),
    ("marker cat list", with_field(3, "cat", ["cpu_op"])),
    ("memory args number", with_field(4, "args", 1)),
    ("memory ts string", with_field(4, "ts", "now")),
    ("memory Bytes list", with_field(4, "args", {"Bytes": [512]})),
    ("labels pid list", with_field(5, "pid", [[1]])),
    ("labels args number", with_field(5, "args", 2)),
    ("flow cat list", {"ph": "s", "cat": ["ac2g"], "id": 1, "pid": 1, "tid": 1, "ts": 1}),
]


@pytest.mark.parametrize("bad", [b for _, b in WRONG_TYPES], ids=[i for i, _ in WRONG_TYPES])
def test_wrong_type_field_skips_event_and_keeps_the_rest(tmp_path, bad):
    path = tmp_path / "t.json"
    write_trace(path, [GOOD[0], GOOD[1], bad, GOOD[2], GOOD[3], GOOD[4], GOOD[5]])
    run = kineto.load_file(path)
    assert good_numbers(run) == EXPECTED_GOOD
    assert [w for w in run.warnings if "malformed" in w] == [
        "1 events with malformed fields skipped (a field of the wrong JSON type, or ts/dur not a finite µs number)"
    ]


def test_good_trace_has_no_malformed_warning(tmp_path):
    path = tmp_path / "t.json"
    write_trace(path, GOOD)
    run = kineto.load_file(path)
    assert good_numbers(run) == EXPECTED_GOOD
    assert not [w for w in run.warnings if "malformed" in w]


def test_tolerated_field_types_are_kept(tmp_path):
    """Types Kineto writes or that convert without guessing stay: numeric strings for ts,
    number names (as text), string tids (UNKNOWN, as older Kineto's "stream 7"), missing dur (0)."""
    events = [
        dict(GOOD[0], ts="10.5", name=42),
        dict(GOOD[3], tid="stream 7"),
        {k: v for k, v in GOOD[3].items() if k != "dur"},
    ]
    path = tmp_path / "t.json"
    write_trace(path, events)
    run = kineto.load_file(path)
    assert run.kernels[["start", "end"]].values.tolist() == [[10_500, 15_500]]
    assert run.kernels["name"].tolist() == ["42"]
    assert run.markers[["start", "end", "tid"]].values.tolist() == [[7_000, 11_000, -1], [7_000, 7_000, 101]]
    assert not [w for w in run.warnings if "malformed" in w]


def test_non_finite_and_huge_times_are_skipped(tmp_path):
    """JSON NaN/Infinity (accepted by Python's parser) and µs beyond the int64 ns range."""
    path = tmp_path / "t.json"
    text = json.dumps(
        {
            "schemaVersion": 1,
            "deviceProperties": [],
            "traceEvents": [
                GOOD[0],
                GOOD[1],
                GOOD[2],
                GOOD[3],
                GOOD[4],
                GOOD[5],
                with_field(0, "ts", float("nan")),
                with_field(0, "dur", float("inf")),
                with_field(3, "ts", -float("inf")),
                with_field(2, "ts", 1e300),
                with_field(4, "ts", float("nan")),
            ],
        }
    )
    assert "NaN" in text and "Infinity" in text
    path.write_text(text)
    run = kineto.load_file(path)
    assert good_numbers(run) == EXPECTED_GOOD
    assert [w for w in run.warnings if "malformed" in w][0].startswith("5 events with malformed fields skipped")


def test_device_properties_with_unhashable_id(tmp_path):
    path = tmp_path / "t.json"
    write_trace(path, GOOD, deviceProperties=[{"id": [0], "name": "x"}, {"id": 0, "name": "NVIDIA H100", "numSms": 132}])
    run = kineto.load_file(path)
    assert [(a.id, a.product, a.cu_count) for a in run.agents] == [(0, "NVIDIA H100", 132)]


@pytest.mark.parametrize(
    "sample,index,field,value,table",
    [
        ("critical_path__cuda_event_sync__event_sync_trace.json.gz", 43, "args", -1, "api"),  # a cuda_sync event
        ("triton_example__triton_example.json.gz", 17, "pid", [[1]], None),  # a process_labels event
    ],
)
def test_real_trace_with_one_wrong_type_field(tmp_path, sample, index, field, value, table):
    """The fuzzer's cases on real files: the bad file loads less exactly that event, and a good
    sibling loads as on its own."""
    doc = json.loads(gzip.decompress((DATA / sample).read_bytes()))
    doc["traceEvents"][index][field] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    sink = IssueSink()
    files = [DetectedFile(p, kineto.FORMAT, "trace", str(p)) for p in (bad, DATA / sample)]
    bad_run, good_run = kineto.load(files, sink)
    assert not sink.issues
    assert not [w for w in good_run.warnings if "malformed" in w]
    assert [w for w in bad_run.warnings if "malformed" in w][0].startswith("1 events with malformed fields skipped")
    for name in ("kernels", "api", "copies", "markers", "allocations"):
        want = len(getattr(good_run, name)) - (name == table)
        assert len(getattr(bad_run, name)) == want, name
    assert bad_run.kernels.reset_index(drop=True).equals(good_run.kernels.reset_index(drop=True))


def test_unforeseen_failure_in_one_file_spares_the_others(tmp_path, monkeypatch):
    good, other = tmp_path / "good.json", tmp_path / "other.json"
    write_trace(good, GOOD)
    write_trace(other, GOOD)
    real = kineto.load_runs

    def flaky(path):
        if Path(path) == other:
            raise RuntimeError("boom\nsecond line")
        return real(path)

    monkeypatch.setattr(kineto, "load_runs", flaky)
    sink = IssueSink()
    runs = kineto.load([DetectedFile(p, kineto.FORMAT, "trace", str(p)) for p in (other, good)], sink)
    assert len(runs) == 1 and good_numbers(runs[0]) == EXPECTED_GOOD
    assert [(i.path, "\n" in i.message) for i in sink.issues] == [(str(other), False)]
    assert "RuntimeError: boom" in sink.issues[0].message
