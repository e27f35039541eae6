"""rocprofv3 JSON loader: the real MI350X file against an independent pass written here with
plain ``json`` (its ``summary`` section is empty, so there are no profiler stats to compare
with), and generated files whose answers are known by construction."""

from __future__ import annotations

import copy
import gzip
import json
import time
from collections import defaultdict
from pathlib import Path

import pytest

from tui_prof.analysis.hotspots import hotspots
from tui_prof.loaders import load_path, rocprofv3_json
from tui_prof.loaders.base import DetectedFile, IssueSink, read_head

DATA = Path(__file__).parent / "data" / "rocprofv3_json"
REAL = DATA / "908_results.json.gz"


@pytest.fixture(scope="module")
def raw():
    with gzip.open(REAL, "rt") as fh:
        return json.load(fh)["rocprofiler-sdk-tool"]


@pytest.fixture(scope="module")
def run():
    start = time.perf_counter()
    runs = rocprofv3_json.load_file(REAL)
    print(f"loaded {REAL.name} in {time.perf_counter() - start:.2f} s")
    assert len(runs) == 1
    return runs[0]


def test_sniff():
    assert rocprofv3_json.sniff(REAL, read_head(REAL)).kind == "results_json"
    assert rocprofv3_json.sniff(Path("x.json"), b'{\n  "rocprofiler-sdk-tool" : [') is not None
    assert rocprofv3_json.sniff(Path("x.json"), b'{"traceEvents": [], "rocprofiler-sdk-tool": []}') is None
    assert rocprofv3_json.sniff(Path("x.json"), b'{"schemaVersion": 1, "deviceProperties": []') is None


def test_real_file_counts_and_meta(run, raw):
    proc = raw[0]
    assert len(raw) == 1 and proc["summary"] == []  # no profiler stats in this file
    records = proc["buffer_records"]["kernel_dispatch"]
    assert len(run.kernels) == len(records) == 43915
    assert run.meta.pid == proc["metadata"]["pid"] == 908
    assert run.meta.hostname == proc["metadata"]["node"]["hostname"] == "smci350-zts-gtu-c6-25"
    assert run.meta.command == " ".join(proc["metadata"]["command"])
    assert run.meta.formats == ["rocprofv3-json"] and run.meta.tool == "rocprofv3"
    assert run.api.empty and run.copies.empty and run.counters.empty  # kernel trace only
    assert run.kernels["start"].dtype == "int64"


def test_real_agents(run, raw):
    agents = raw[0]["agents"]
    assert len(run.agents) == len(agents) == 10
    assert [a.type for a in run.agents] == ["CPU"] * 2 + ["GPU"] * 8
    for agent, rec in zip(run.agents, agents):
        assert agent.id == agent.node_id == rec["node_id"]
        if agent.type == "GPU":
            assert (agent.arch, agent.product) == ("gfx950", "AMD Instinct MI350X")
            assert (agent.cu_count, agent.simd_per_cu, agent.wave_size, agent.num_xcc) == (256, 4, 64, 8)
            assert agent.lds_bytes_per_cu == rec["lds_size_in_kb"] * 1024 == 160 * 1024
            assert agent.max_clock_mhz == rec["max_engine_clk_fcompute"] == 2200
            assert agent.memory_bytes == sum(b["size_in_bytes"] for b in rec["mem_banks"])
            assert agent.gfx_target_version == 90500
    handle_to_node = {a["id"]["handle"]: a["node_id"] for a in agents}
    expected = [handle_to_node[r["dispatch_info"]["agent_id"]["handle"]] for r in raw[0]["buffer_records"]["kernel_dispatch"]]
    assert run.kernels["agent"].tolist() == expected


def test_real_hotspots_equal_independent_pass(run, raw):
    """Group the raw dispatch records by kernel_symbols[kernel_id].formatted_kernel_name."""
    proc = raw[0]
    names = {s["kernel_id"]: s["formatted_kernel_name"] for s in proc["kernel_symbols"]}
    calls: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    for rec in proc["buffer_records"]["kernel_dispatch"]:
        name = names[rec["dispatch_info"]["kernel_id"]]
        calls[name] += 1
        total[name] += rec["end_timestamp"] - rec["start_timestamp"]
    grand = sum(total.values())
    table = hotspots(run.kernels)
    assert len(table) == len(calls)
    for row in table.itertuples():
        assert (row.calls, row.total_ns) == (calls[row.name], total[row.name])
        assert row.percent == pytest.approx(100.0 * total[row.name] / grand, rel=1e-12)
    assert table.iloc[0]["name"].startswith("ncclDevKernel_Generic_1")


def test_real_dispatch_fields(run, raw):
    recs = raw[0]["buffer_records"]["kernel_dispatch"]
    k = run.kernels
    for i in (0, 1, 12345, len(recs) - 1):
        rec, row = recs[i], k.iloc[i]
        info = rec["dispatch_info"]
        assert (row["start"], row["end"]) == (rec["start_timestamp"], rec["end_timestamp"])
        assert row["correlation_id"] == rec["correlation_id"]["internal"]
        assert row["dispatch_id"] == info["dispatch_id"] and row["queue"] == info["queue_id"]["handle"]
        assert (row["grid_x"], row["grid_y"], row["grid_z"]) == tuple(info["grid_size"][c] for c in "xyz")
        assert (row["wg_x"], row["wg_y"], row["wg_z"]) == tuple(info["workgroup_size"][c] for c in "xyz")
        assert row["lds_bytes"] == info["group_segment_size"] and row["tid"] == rec["thread_id"]
        assert row["kernel_id"] == info["kernel_id"]
    assert k["correlation_id"].is_unique


# --------------------------------------------------------------------------- generated files


def kind_index(strings: dict, kind: str) -> int:
    return [k["kind"] for k in strings["buffer_records"]].index(kind)


def op_index(strings: dict, kind: str, op: str) -> int:
    return strings["buffer_records"][kind_index(strings, kind)]["operations"].index(op)


def record(strings, kind, op, corr, start, end, tid=7, **extra):
    rec = {
        "size": 64,
        "kind": kind_index(strings, kind),
        "operation": op_index(strings, kind, op),
        "correlation_id": {"internal": corr, "external": 0},
        "start_timestamp": start,
        "end_timestamp": end,
        "thread_id": tid,
    }
    rec.update(extra)
    return rec


def synthetic_process(raw_proc: dict, pid: int) -> dict:
    """A process element built on the real strings/agents/symbols, with one record of each kind.

    Kind/operation numbers are looked up by name in the real ``strings.buffer_records`` table.
    """
    s = raw_proc["strings"]
    agents = raw_proc["agents"][:4]  # 2 CPUs (nodes 0, 1) + 2 GPUs (nodes 2, 3)
    h = {a["node_id"]: a["id"]["handle"] for a in agents}
    dispatch = copy.deepcopy(raw_proc["buffer_records"]["kernel_dispatch"][0])
    dispatch["correlation_id"]["internal"] = 11
    dispatch["start_timestamp"], dispatch["end_timestamp"] = 1_000, 1_500
    dispatch["dispatch_info"]["agent_id"]["handle"] = h[3]
    strings = copy.deepcopy(s)
    strings["marker_api"] = [{"key": 20, "value": "my range"}]
    buffers = {
        "kernel_dispatch": [dispatch],
        "hip_api": [record(s, "HIP_RUNTIME_API_EXT", "hipLaunchKernel", 11, 900, 990), record(s, "HIP_RUNTIME_API_EXT", "hipMemcpyAsync", 12, 995, 999)],
        "hsa_api": [record(s, "HSA_CORE_API", "hsa_signal_create", 13, 100, 110)],
        "marker_api": [record(s, "MARKER_CORE_RANGE_API", "roctxThreadRangeA", 20, 50, 5_000)],
        "rccl_api": [record(s, "RCCL_API", "ncclAllReduce", 14, 2_000, 2_100)],
        "memory_copy": [
            record(s, "MEMORY_COPY", "MEMORY_COPY_HOST_TO_DEVICE", 12, 1_600, 1_700, src_agent_id={"handle": h[0]}, dst_agent_id={"handle": h[2]}, bytes=4096),
            record(s, "MEMORY_COPY", "MEMORY_COPY_DEVICE_TO_HOST", 15, 1_800, 1_900, src_agent_id={"handle": h[3]}, dst_agent_id={"handle": h[1]}, bytes=512),
            record(s, "MEMORY_COPY", "MEMORY_COPY_DEVICE_TO_DEVICE", 16, 1_950, 1_960, src_agent_id={"handle": h[2]}, dst_agent_id={"handle": h[3]}, bytes=8),
        ],
        "memory_allocation": [
            record(
                s, "MEMORY_ALLOCATION", "MEMORY_ALLOCATION_ALLOCATE", 17, 10, 20, agent_id={"handle": h[2]}, address="0x7f0000001000", allocation_size=1 << 20
            ),
            record(s, "MEMORY_ALLOCATION", "MEMORY_ALLOCATION_FREE", 18, 30, 40, agent_id={"handle": 0}, address={"handle": 0x7F0000001000}, allocation_size=0),
        ],
        "scratch_memory": [
            record(s, "SCRATCH_MEMORY", "SCRATCH_MEMORY_ALLOC", 19, 60, 70, agent_id={"handle": h[3]}, queue_id={"handle": 5}, flags=1, allocation_size=65536)
        ],
    }
    counters = [
        {"id": {"handle": 900}, "agent_id": {"handle": h[3]}, "name": "SQ_WAVES"},
        {"id": {"handle": 901}, "agent_id": {"handle": h[3]}, "name": "GRBM_COUNT"},
    ]
    counter_records = [
        {
            "dispatch_data": {"size": 1, "correlation_id": {"internal": 11, "external": 0}, "dispatch_info": dispatch["dispatch_info"]},
            "records": [
                {"counter_id": {"handle": 900}, "value": 3.0},
                {"counter_id": {"handle": 900}, "value": 4.5},
                {"counter_id": {"handle": 901}, "value": 10.0},
            ],
            "thread_id": 7,
            "arch_vgpr_count": 8,
            "sgpr_count": 16,
            "lds_block_size_v": 0,
        }
    ]
    return {
        "metadata": {"pid": pid, "node": {"hostname": "hostA"}, "command": ["./app", "-n", "1"], "init_time": 1, "fini_time": 2},
        "agents": agents,
        "counters": counters,
        "strings": strings,
        "code_objects": [],
        "kernel_symbols": raw_proc["kernel_symbols"][:12],
        "host_functions": [],
        "summary": [],
        "callback_records": {"counter_collection": counter_records},
        "buffer_records": buffers,
    }


@pytest.fixture(scope="module")
def synthetic(raw, tmp_path_factory):
    path = tmp_path_factory.mktemp("syn") / "123_results.json"
    path.write_text(json.dumps({"rocprofiler-sdk-tool": [synthetic_process(raw[0], 123), synthetic_process(raw[0], 456)]}))
    return path, {r.meta.pid: r for r in rocprofv3_json.load_file(path)}


def test_processes_are_runs(synthetic):
    _, runs = synthetic
    assert sorted(runs) == [123, 456]
    run = runs[123]
    assert (run.meta.hostname, run.meta.command) == ("hostA", "./app -n 1")
    assert [a.id for a in run.agents] == [0, 1, 2, 3]


def test_api_domains_names_and_correlation(synthetic):
    run = synthetic[1][123]
    api = run.api.sort_values("start").reset_index(drop=True)
    assert list(zip(api["domain"].astype(str), api["name"].astype(str))) == [
        ("marker", "roctxThreadRangeA"),
        ("hsa", "hsa_signal_create"),
        ("hip", "hipLaunchKernel"),
        ("hip", "hipMemcpyAsync"),
        ("rccl", "ncclAllReduce"),
    ]
    launch = api[api["name"] == "hipLaunchKernel"].iloc[0]
    assert run.kernels["correlation_id"].tolist() == [launch["correlation_id"]] == [11]
    assert run.kernels["agent"].tolist() == [3] and (run.kernels["end"] - run.kernels["start"]).tolist() == [500]
    memcpy = api[api["name"] == "hipMemcpyAsync"].iloc[0]
    assert run.copies[run.copies["correlation_id"] == memcpy["correlation_id"]]["direction"].astype(str).tolist() == ["HtoD"]
    assert run.markers[["start", "end"]].values.tolist() == [[50, 5_000]]
    assert run.markers["name"].astype(str).tolist() == ["my range"]


def test_copies_allocations_scratch(synthetic):
    run = synthetic[1][123]
    c = run.copies
    assert c["direction"].astype(str).tolist() == ["HtoD", "DtoH", "PtoP"]
    assert c[["src_agent", "dst_agent", "bytes"]].values.tolist() == [[0, 2, 4096], [3, 1, 512], [2, 3, 8]]
    assert c["name"].astype(str).tolist()[0] == "MEMORY_COPY_HOST_TO_DEVICE"
    a = run.allocations
    assert a["operation"].astype(str).tolist() == ["ALLOCATE", "FREE"]
    assert a["address"].tolist() == [0x7F0000001000, 0x7F0000001000]
    assert a["agent"].tolist() == [2, -1] and a["bytes"].tolist() == [1 << 20, 0]
    s = run.scratch
    assert s[["agent", "queue", "bytes"]].values.tolist() == [[3, 5, 65536]]
    assert s["operation"].astype(str).tolist() == ["ALLOC"] and s["flags"].astype(str).tolist() == ["1"]


def test_counters_summed_per_dispatch(synthetic):
    run = synthetic[1][123]
    got = {(int(d), str(n)): float(v) for d, n, v in run.counters[["dispatch_id", "counter", "value"]].itertuples(index=False)}
    assert got == {(1, "SQ_WAVES"): 7.5, (1, "GRBM_COUNT"): 10.0}
    assert set(run.counters["agent"]) == {3} and set(run.counters["correlation_id"]) == {11}


# --------------------------------------------------------------------------- bad input


def _load_one(path: Path):
    sink = IssueSink()
    runs = rocprofv3_json.load([DetectedFile(path, rocprofv3_json.FORMAT, "results_json", str(path))], sink)
    return runs, sink.issues


def test_truncated_gzip_is_one_line_error(tmp_path):
    bad = tmp_path / "908_results.json.gz"
    bad.write_bytes(REAL.read_bytes()[:400_000])
    assert rocprofv3_json.sniff(bad, read_head(bad)) is not None
    runs, issues = _load_one(bad)
    assert runs == [] and len(issues) == 1 and "\n" not in issues[0].message
    runset = load_path(tmp_path)
    assert runset.runs == [] and len(runset.errors) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["908_results.json.gz"]


def test_truncated_json_is_one_line_error(tmp_path):
    bad = tmp_path / "1_results.json"
    bad.write_text('{"rocprofiler-sdk-tool":[{"metadata":{"pid":1},"buffer_records":{"kernel_dispatch":[{"size":')
    runs, issues = _load_one(bad)
    assert runs == [] and len(issues) == 1
    assert issues[0].message.startswith("invalid JSON at line 1 column") and "truncated" in issues[0].message


def test_wrong_structure_is_one_line_error(tmp_path):
    bad = tmp_path / "2_results.json"
    bad.write_text('{"rocprofiler-sdk-tool": [{"metadata": {"pid": 1}, "buffer_records": {"kernel_dispatch": [5]}}]}')
    runs, issues = _load_one(bad)
    assert runs == [] and len(issues) == 1 and issues[0].message.startswith("process element 0 is malformed")
    bad.write_text('{"rocprofiler-sdk-tool": 3}')
    runs, issues = _load_one(bad)
    assert runs == [] and "not a list" in issues[0].message


def test_load_path_finds_real_file(tmp_path):
    (tmp_path / REAL.name).write_bytes(REAL.read_bytes())
    runset = load_path(tmp_path)
    assert not runset.errors
    assert [(r.meta.formats, len(r.kernels)) for r in runset.runs] == [(["rocprofv3-json"], 43915)]
