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
    events = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 2, "tid": 0, "ts": 1.5, "dur": 2.25,
               "args": {"device": 2, "stream": 0, "correlation": 1}}]
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
    bad.write_text(text[:cut] + '"ph": "X", "cat": kernel' + text[cut + 26:])
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
