"""Issue 33 item 7: a Perfetto export reopened by tuiprof gives the summary of its source.

Every Kineto sample with ranks, steps, copies or allocator memory is exported, read back
through the Kineto loader and summarised; the two ``summary --json`` documents must be
equal but for ``source`` (the path that was opened). The rank sample is also checked on the
figures that were lost before (two processes, the launch share per process, the straggler),
and the findings are checked against their evidence recomputed from the source run.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from tests.synthetic import synthetic_runset
from tui_prof.analysis.summary import SummaryOptions, summarise
from tui_prof.analysis.timeline import gpu_timeline
from tui_prof.export.common import default_destination
from tui_prof.export.perfetto import export_perfetto
from tui_prof.loaders import load_path
from tui_prof.loaders.kineto import EXPORTED_COLUMNS
from tui_prof.model import RunSet

DATA = Path(__file__).parent / "data" / "kineto"
SAMPLES = {
    "ranks": DATA / "ranks",  # 2 ranks, ProfilerSteps, copies, collectives
    "copies": DATA / "h200" / "copies.pt.trace.json.gz",
    "steps": DATA / "h200" / "train_sync.pt.trace.json.gz",
    "memory": DATA / "h100__gaunernst_bert-small-uncased__1016001.json.gz",  # allocator "[memory]" events
    "epoch-clock": DATA / "critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz",
    "rocprofv3-json": DATA.parent / "rocprofv3_json" / "908_results.json.gz",
    "rocpd": DATA.parent / "rocpd" / "28_results.db",  # HIP and HSA calls, copies
    # 5 processes: counter passes (one of untimed rows: start/end -1) without agents, a host
    # allocation on the CPU agent, kernels without a pid, --stats tables
    "rocprofv3-csv-docs": DATA.parent / "rocprofv3_csv" / "rocprofv3-docs-rocm7",
    # every other real sample with ranks, steps or copies
    "nccl": DATA / "comm" / "nccl_parser_config__nccl_data.json.gz",  # collectives, 1,074 copies
    "alexnet": DATA / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
    "event-sync": DATA / "critical_path__cuda_event_sync__event_sync_trace.json.gz",
    "simple-add": DATA / "critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz",
    "decode-eager": DATA / "h200" / "decode_eager.pt.trace.json.gz",
    "decode-graph": DATA / "h200" / "decode_graph.pt.trace.json.gz",  # CUDA graph replays
    "gpt2-modules": DATA / "h200" / "gpt2_shapes_modules.pt.trace.json.gz",
    "cold-train-memory": DATA / "h200_cold" / "cold_train_memory.pt.trace.json.gz",
    "sglang": DATA / "inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
    "mi300-bert": DATA / "mi300__gaunernst_bert-small-uncased__1016001.json.gz",  # ROCm Kineto
    "mi300-resnet": DATA / "mi300__resnet_act_checkpoint.json.gz",
    "triton": DATA / "triton_example__triton_example.json.gz",  # one ProfilerStep
    "rocprofv3-csv-hpc": DATA.parent / "rocprofv3_csv" / "hpctraining-extracted",
    "legacy-rocprof": DATA.parent / "legacy_rocprof" / "rocm-blogs",  # copies, hipMalloc sizes from the API args
    "legacy-rocprof-counters": DATA.parent / "legacy_rocprof" / "hip-programming",  # copies and a counter pass
}
"""Not here: ``trace_filter__sampled_rank-0`` (the file of ``ranks``' rank 0); the rocm6.3 docs
folder, whose mixed clocks span more than 2**43 µs (102 days): past that a µs float holds the
ns no more and times come back 1 ns apart (the loader warns, docs/user_guide.md)."""
NOT_COMPARED = {"source"}
"""The field that legitimately differs: the path that was opened (the export, not the run);
and each process's ``files`` (:data:`PROCESS_NOT_COMPARED`)."""
PROCESS_NOT_COMPARED = {"files"}
"""A process's ``files`` counts the files it was read from: the export is one file."""
EXCEPTIONS = {
    "rocprofv3-json": {"occupancy"},
    "rocpd": {"occupancy", "memory", "findings"},
    "rocprofv3-csv-docs": {"counters", "stats", "warnings", "findings"},
    "legacy-rocprof": {"memory", "measurement.peak_memory_bytes", "stats"},
    "legacy-rocprof-counters": {"memory", "measurement.peak_memory_bytes", "stats", "counters", "warnings", "findings"},
}
"""Documented losses (docs/user_guide.md, export): a rocprofv3 kernel's grid, scratch and
register figures have no Kineto arg, so a rocprofv3 run reopened has no occupancy rows (and
no low-occupancy finding); rocprofv3's allocation calls (hipMalloc/hipFree with their sizes)
are not written, so its memory section has no requests (nor, on a legacy rocprof run, any
device: its memory comes from those calls' sizes alone); hardware counters are drawn as
counter tracks, not read back (no counter values, no counters-serialise finding), nor are
``--stats`` tables and the loaders' warnings."""
LOST_FINDINGS = {"low-occupancy", "counters-serialise"}
"""The findings that need the lost figures."""


def _summary(path: Path) -> tuple[RunSet, dict]:
    runset = load_path(str(path), use_cache=False)
    assert runset.errors == []
    return runset, json.loads(json.dumps(summarise(runset, SummaryOptions()).summary, default=str))


@pytest.fixture(scope="module")
def reopened(tmp_path_factory):
    """name -> (source run set, summary of the source, summary of its export reopened, export path)."""
    out = {}
    folder = tmp_path_factory.mktemp("exports")
    for name, path in SAMPLES.items():
        runset, source = _summary(path)
        target, _ = export_perfetto(runset, folder / f"{name}.json.gz")
        back, summary = _summary(target)
        out[name] = (runset, source, summary, target)
        READ_BACK[name] = back
    return out


READ_BACK: dict[str, RunSet] = {}
"""name -> the export of the sample read back (filled by the ``reopened`` fixture)."""


@pytest.mark.parametrize("name", list(SAMPLES))
def test_reopened_export_gives_the_same_summary(reopened, name):
    _, source, back, _ = reopened[name]
    assert set(source) == set(back)
    lost = EXCEPTIONS.get(name, set())
    for key in set(source) - NOT_COMPARED - {"processes"} - lost:
        fields = {f.split(".")[1] for f in lost if f.startswith(key + ".")}  # lost fields of a section compared
        assert (
            {k: v for k, v in back[key].items() if k not in fields} == {k: v for k, v in source[key].items() if k not in fields}
            if fields
            else back[key] == source[key]
        ), key
    lost_fields = PROCESS_NOT_COMPARED | ({"counter_values"} if "counters" in lost else set())
    assert [{k: v for k, v in p.items() if k not in lost_fields} for p in back["processes"]] == [
        {k: v for k, v in p.items() if k not in lost_fields} for p in source["processes"]
    ]
    assert all(p["files"] == 1 for p in back["processes"])
    if "counters" in lost:  # the counter passes' processes and kernels come back, their values do not
        assert any(p["counter_values"] for p in source["processes"]) and not any(p["counter_values"] for p in back["processes"])
        assert any(c["available"] for c in source["counters"]) and not any(c["available"] for c in back["counters"])
        assert back["stats"]["tables"] == [] < source["stats"]["tables"]
    if "occupancy" in lost:
        assert source["occupancy"] and not back["occupancy"]
    if "findings" in lost:  # the findings that need the lost figures, and only those
        assert back["findings"] == [f for f in source["findings"] if f["code"] not in LOST_FINDINGS]
    if "measurement.peak_memory_bytes" in lost:
        assert source["measurement"]["peak_memory_bytes"] == source["memory"]["peak_allocated_bytes"] > 0
        assert back["memory"]["source"] == "none" and back["measurement"]["peak_memory_bytes"] is None
    elif "memory" in lost:
        assert source["memory"]["requested"] and not back["memory"]["requested"]
        assert {k: v for k, v in back["memory"].items() if k not in ("requested", "source")} == {
            k: v for k, v in source["memory"].items() if k not in ("requested", "source")
        }
    assert back["source"]["path"].endswith(f"{name}.json.gz")


def test_rank_run_keeps_its_processes_launch_share_and_straggler(reopened):
    runset, source, back, _ = reopened["ranks"]
    assert len(back["processes"]) == len(back["ranks"]) == 2 == len(runset.runs)
    assert [p["rank"] for p in back["processes"]] == [r.meta.rank for r in runset.runs] == [0, 1]
    # launch API time over both processes' time (each process's own span), from the source tables
    launch = sum(int((r.api["end"] - r.api["start"])[r.api["name"].astype(str).str.contains("Launch")].sum()) for r in runset.runs)
    assert back["launch"]["api_pct_of_wall"] == pytest.approx(100 * launch / source["measurement"]["process_time_ns"], abs=1e-3)
    assert back["stragglers"]["rank"] == 1 and back["stragglers"]["instances"] == source["stragglers"]["instances"] > 0


def _events(path: Path) -> tuple[int, list[dict]]:
    """(origin_ns, events) of an export."""
    with gzip.open(path, "rt") as fh:
        doc = json.load(fh)
    return doc["tuiprof_export"]["origin_ns"], doc["traceEvents"]


def _ns(event: dict, origin: int) -> tuple[int, int]:
    """(start, duration) ns of an exported event on the profiler's clock."""
    return round(event["ts"] * 1000) + origin, round(event.get("dur", 0) * 1000)


def test_every_track_has_events_and_findings_sit_at_their_evidence(reopened):
    runset, source, _, path = reopened["ranks"]
    origin, events = _events(path)
    used = {(e["pid"], e["tid"]) for e in events if e["ph"] != "M" and "tid" in e}
    named = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert named <= used  # no empty "host (thread not recorded)" track
    assert not any(e["args"]["name"] == "host (thread not recorded)" for e in events if e["ph"] == "M" and e["name"] == "thread_name")
    findings = {e["args"]["code"]: e for e in events if e.get("cat") == "tuiprof_finding"}
    assert list(findings) == [f["code"] for f in source["findings"]]
    # launch-bound: the longest launch gap of the process it is about, from that process's timeline
    about = findings["launch-bound"]["args"]["numbers"]["process"]
    longest = max(
        (int(g.duration_ns), int(g.start))
        for run in runset.runs
        if run.meta.label == about
        for g in gpu_timeline(run)[1].itertuples()
        if str(g.cause) == "launch"
    )
    launch = findings["launch-bound"]
    assert _ns(launch, origin) == (longest[1], longest[0])
    # dominant-kernel: the longest dispatch of the kernel it names, by exact parse of the tables
    numbers = findings["dominant-kernel"]["args"]["numbers"]
    name = numbers["name"]
    assert numbers["process"] == "sampled_rank-0"  # the process the finding is about: its dispatches only
    dispatches = [
        (int(e - s), int(s))
        for run in runset.runs[:1]
        for s, e, n in zip(run.kernels["start"], run.kernels["end"], run.kernels["name"].astype(str))
        if n == name
    ]
    dominant = findings["dominant-kernel"]
    assert _ns(dominant, origin) == (max(dispatches)[1], max(dispatches)[0])
    # the straggler is about every collective: it spans the run
    straggler = findings["straggler"]
    first = min(int(t["start"].min()) for run in runset.runs for t in (run.api, run.kernels, run.copies, run.markers) if len(t))
    assert straggler["ph"] == "X" and _ns(straggler, origin)[0] == first and straggler["args"]["evidence"] == "the whole run"


def test_the_epoch_clock_comes_back_on_the_profilers_clock(reopened):
    runset, _, _, path = reopened["epoch-clock"]
    back = load_path(str(path), use_cache=False)
    for a, b in zip(runset.runs, back.runs, strict=True):
        assert np.array_equal(a.kernels["start"].to_numpy(), b.kernels["start"].to_numpy())
        assert int(a.kernels["start"].min()) > 2**43 * 1000  # written from an origin


def test_hostile_process_metadata_round_trips(tmp_path):
    hostile = 'h"q\\b\nn\x1b[31mred\u202eRTL\u4e2d\U0001f600'
    runset, _ = synthetic_runset(iterations=3)
    runset.runs[0].meta.label = hostile
    runset.runs[0].meta.hostname = hostile
    path, _ = export_perfetto(runset, tmp_path / "h.json")
    assert path.read_bytes().isascii()
    back = load_path(str(path), use_cache=False)
    assert back.runs[0].meta.label == hostile and back.runs[0].meta.hostname == hostile
    assert [dataclasses.asdict(a) for a in back.runs[0].agents] == [dataclasses.asdict(a) for a in runset.runs[0].agents]


def test_tui_export_name_drops_the_trace_suffixes(tmp_path):
    target = default_destination("/runs/x.pt.trace.json.gz", RunSet("/runs/x.pt.trace.json.gz").name, ".tuiprof.json.gz", tmp_path)
    assert target.name == "x.tuiprof.json.gz"
    assert default_destination("/runs/r", "4242_results.db", ".tuiprof-parquet", tmp_path).name == "4242_results.tuiprof-parquet"


def test_other_api_domains_survive_a_parallel_read(reopened, tmp_path):
    """The api_<domain> codes of pieces read in parallel are merged by name: the same rows
    and domains as a serial read."""
    from tui_prof.loaders import kineto

    runset = reopened["rocpd"][0]
    path, _ = export_perfetto(runset, tmp_path / "plain.json")
    serial = kineto.read_trace(path)
    pieces = kineto.read_trace_with(path, 3)
    assert set(serial.api_cats) == set(pieces.api_cats) == {"api_hip"}  # __hipRegisterFatBinary, ...: hip calls not named hip*
    a, b = kineto.build_api(serial.api, serial.api_cats, True), kineto.build_api(pieces.api, pieces.api_cats, True)
    assert a["domain"].astype(str).tolist() == b["domain"].astype(str).tolist()
    assert a["name"].astype(str).tolist() == b["name"].astype(str).tolist()
    source = runset.runs[0].api
    assert sorted(zip(a["domain"].astype(str), a["name"].astype(str))) == sorted(zip(source["domain"].astype(str), source["name"].astype(str)))


def test_kernel_host_ids_queues_and_allocation_agents_come_back(reopened):
    """What a Kineto trace has no field for comes back from a version-3 export: each kernel's
    queue, dispatch id and host pid/tid, each API call's own pid and tid, each copy's host
    agent, pid and tid (-1 where the source has none: the docs folder's
    kernel trace records no pid, its counter pass of untimed rows records no start), an
    allocation on the CPU agent, and no invented agent for a process that had none."""
    runset, _, _, path = reopened["rocprofv3-csv-docs"]
    back = load_path(str(path), use_cache=False)
    assert [r.meta.label for r in back.runs] == [r.meta.label for r in runset.runs]
    columns = ["start", "end", "agent", "queue", "stream", "pid", "tid", "correlation_id", "dispatch_id"]
    for a, b in zip(runset.runs, back.runs, strict=True):
        assert a.kernels[columns].astype("int64").to_dict("list") == b.kernels[columns].astype("int64").to_dict("list")
        assert [(g.id, g.type) for g in a.agents] == [(g.id, g.type) for g in b.agents]
        assert a.api[["start", "pid", "tid", "correlation_id"]].astype("int64").to_dict("list") == (
            b.api[["start", "pid", "tid", "correlation_id"]].astype("int64").to_dict("list")
        )  # the calls' own pids (this folder's process holds calls of several) and threads
        copies = ["start", "src_agent", "dst_agent", "queue", "stream", "pid", "tid", "correlation_id"]
        assert a.copies[copies].astype("int64").to_dict("list") == b.copies[copies].astype("int64").to_dict("list")
        assert a.allocations[["start", "agent", "bytes", "address"]].astype("int64").to_dict("list") == (
            b.allocations[["start", "agent", "bytes", "address"]].astype("int64").to_dict("list")
        )
    assert any((r.kernels["start"] == -1).all() and len(r.kernels) for r in back.runs)  # the untimed pass
    assert 0 in {int(x) for r in back.runs for x in r.allocations["agent"]}  # host memory on CPU agent 0


def test_a_windows_kernels_keep_their_columns(reopened, tmp_path):
    """A window exports some kernels of a process: the columns kept for them are theirs."""
    runset = reopened["rocprofv3-csv-docs"][0]
    run = runset.runs[1]
    start = run.kernels["start"].to_numpy()
    lo, hi = int(start[3]), int(start[9])  # kernels 3..8 start inside, none before ends after lo
    path, _ = export_perfetto(runset, tmp_path / "w.json", window=(lo, hi))
    back = next(r for r in load_path(str(path), use_cache=False).runs if r.meta.label == run.meta.label)
    inside = (start < hi) & (np.maximum(run.kernels["end"].to_numpy(), start + 1) > lo)
    columns = ["start", "queue", "pid", "tid", "dispatch_id"]
    assert 0 < inside.sum() < len(start)
    assert back.kernels[columns].astype("int64").to_dict("list") == run.kernels[columns][inside].astype("int64").to_dict("list")


def test_kernel_columns_encoding_round_trips_and_refuses_what_it_did_not_write():
    """encode_runs/decode_runs: a constant or counting column is one or two pairs; any
    column comes back as it was; a list that is not one the exporter writes (counts that do
    not add up to the process's kernels, non-integers, values past int64) gives None, and
    nothing larger than the kernels is built from the file."""
    from tui_prof.export.perfetto import encode_runs
    from tui_prof.loaders.kineto import decode_runs

    rng = np.random.default_rng(3)
    for column in (np.full(50, 4242), np.arange(1, 51), rng.integers(-1, 4, 50), np.array([-1] * 25 + [2**40] * 25)):
        encoded = encode_runs(column)
        assert np.array_equal(decode_runs(encoded, len(column)), column)
    assert encode_runs(np.full(50, 7)) == [7, 1, 0, 49] and encode_runs(np.arange(1, 51)) == [1, 50]
    for bad in ([7, 1, 0, 48], [7, 1, 0, 10**12], [7, -1, 0, 51], [7.5, 50], ["7", 50], [2**63, 50], [7, 1, 0], {"7": 50}, None):
        assert decode_runs(bad, 50) is None


@pytest.mark.parametrize("name", list(SAMPLES))
def test_the_columns_kineto_has_no_field_for_come_back(reopened, name):
    """Every sample: the kernels', API calls' and copies' columns an export keeps in
    ``tuiprof_processes`` come back row for row (written in the order the loader builds the
    rows, memsets after memcpys, before it orders a run's tables by time)."""
    runset, back = reopened[name][0], READ_BACK[name]
    for table, columns in EXPORTED_COLUMNS.items():
        for a, b in zip(runset.runs, back.runs, strict=True):
            mine, theirs = getattr(a, table), getattr(b, table)
            keys = ["start", *columns]
            assert mine[keys].astype("int64").to_dict("list") == theirs[keys].astype("int64").to_dict("list"), (table, a.meta.label)
