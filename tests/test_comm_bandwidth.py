"""Collective message sizes and bus bandwidth (issue 14, items 2-3): the Kineto loader keeps
the collectives' args (``collective``, ``coll_bytes``, ``coll_ranks``), the summary's
``communication.by_type[]`` turns them into algorithm and bus bandwidth (NCCL-tests'
factors), and ranks come from a rocpd process's recorded environment.

Checked against an independent parse of the real NCCL trace's JSON, the generator's known
durations and sizes, and a rocpd database whose environment the test rewrites (a copy in a
temporary folder)."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import statistics
from decimal import Decimal
from pathlib import Path

import pytest

from tui_prof.analysis.ranks import bus_factor, rank_numbers
from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.loaders import kineto, load_path
from tui_prof.loaders.kineto import load_file
from tui_prof.loaders.rocpd import environment_rank
from tui_prof.model import Run, RunMeta
from tui_prof.render.summary import summary_text
from tui_prof.synth.ranks import RankSpec, build_ranks, write_ranks
from tui_prof.tui.panes.ranks import ranks_header

DATA = Path(__file__).parent / "data"
NCCL = DATA / "kineto" / "comm" / "nccl_parser_config__nccl_data.json.gz"
PAIR = DATA / "kineto" / "ranks"
ROCPD = DATA / "rocpd" / "28_results.db"
WORD = {"Float": 4, "Long": 8}  # the dtypes nccl_data's collectives use


def ns(us) -> int:
    """µs as Kineto writes them -> exact int ns (decimal arithmetic, independent of the loader)."""
    return int((Decimal(str(us)) * 1000).to_integral_value())


@pytest.fixture(scope="module")
def nccl_events() -> list[dict]:
    with gzip.open(NCCL, "rt") as fh:
        return json.load(fh)["traceEvents"]


@pytest.fixture(scope="module")
def nccl_doc():
    return build_summary(load_path(NCCL.parent, use_cache=False), SummaryOptions(logs=False))


def expected_by_type(events: list[dict]) -> dict[str, dict]:
    """Per collective type (second ``_`` token of ``ncclKernel_<Type>_…``): count, Σ ns, Σ
    bytes (max(In, Out msg nelems) × dtype size), and the per-instance bus bandwidths
    (group size 2: AllReduce 2(n-1)/n = 1, Broadcast 1)."""
    out: dict[str, dict] = {}
    for e in events:
        if e.get("cat") != "kernel" or not e["name"].startswith("ncclKernel_"):
            continue
        a = e["args"]
        kind = e["name"].split("_")[1]
        dur = ns(e["dur"])
        size = max(a["In msg nelems"], a["Out msg nelems"]) * WORD[a["dtype"]]
        factor = {"AllReduce": 2 * (a["Group size"] - 1) / a["Group size"], "Broadcast": 1.0}[kind]
        t = out.setdefault(kind, {"count": 0, "total_ns": 0, "bytes": 0, "bus": [], "groups": set()})
        t["count"] += 1
        t["total_ns"] += dur
        t["bytes"] += size
        t["bus"].append(size * factor / dur)
        t["groups"].add(a["Group size"])
    return out


def test_nccl_kernels_keep_their_collective_args(nccl_events):
    """Every NCCL kernel's Collective name, message bytes and group size, as the JSON has them;
    every other kernel "" / -1."""
    run = load_file(NCCL)
    k = run.kernels
    want = sorted(
        (
            ns(e["ts"]),
            e["args"]["Collective name"],
            max(e["args"]["In msg nelems"], e["args"]["Out msg nelems"]) * WORD[e["args"]["dtype"]],
            e["args"]["Group size"],
        )
        for e in nccl_events
        if e.get("cat") == "kernel" and "Collective name" in e.get("args", {})
    )
    coll = k[k["collective"] != ""]
    got = sorted(zip(coll["start"].tolist(), coll["collective"].astype(str).tolist(), coll["coll_bytes"].tolist(), coll["coll_ranks"].tolist(), strict=True))
    assert got == want and len(want) == 21
    assert want[0][1:] == ("broadcast", 53120 * 4, 2)  # the first collective: 53120 floats
    rest = k[k["collective"] == ""]
    assert len(rest) == len(k) - 21 and set(rest["coll_bytes"].tolist()) == {-1} and set(rest["coll_ranks"].tolist()) == {-1}
    assert (str(k["coll_ranks"].dtype), isinstance(k["collective"].dtype, object)) == ("int16", True)


def test_nccl_bandwidth_per_collective_type(nccl_events, nccl_doc):
    want = expected_by_type(nccl_events)
    got = {t["type"]: t for t in nccl_doc["communication"]["by_type"]}
    assert set(got) == set(want) == {"AllReduce", "Broadcast"}
    for kind, w in want.items():
        t = got[kind]
        assert (t["count"], t["total_ns"], t["sized"], t["bytes"], t["group_size"]) == (w["count"], w["total_ns"], w["count"], w["bytes"], 2)
        assert t["algorithm_bandwidth_gbs"] == round(w["bytes"] / w["total_ns"], 6)  # bytes / ns = GB/s
        assert t["bus_bandwidth_gbs"] == round(w["bytes"] / w["total_ns"], 6)  # factor 1 for both at n = 2
        assert t["bus_bandwidth_median_gbs"] == pytest.approx(statistics.median(w["bus"]), abs=1e-6)
    # the figures, spelled out: 15 AllReduce of 292.5 MiB in 46.762159 ms
    assert (got["AllReduce"]["bytes"], got["AllReduce"]["total_ns"], got["AllReduce"]["algorithm_bandwidth_gbs"]) == (306_684_384, 46_762_159, 6.558388)
    assert (got["Broadcast"]["bytes"], got["Broadcast"]["total_ns"], got["Broadcast"]["algorithm_bandwidth_gbs"]) == (638_712, 114_334, 5.58637)


def test_one_process_summary_shows_its_collectives(nccl_doc):
    text = summary_text(nccl_doc)
    assert "Communication by collective type" in text
    row = next(line for line in text.splitlines() if line.startswith("AllReduce"))
    assert row.split()[:3] == ["AllReduce", "15", "46.8"] and "292.5 MiB" in row and row.count("GB/s") == 3 and "6.56 GB/s" in row


def test_args_on_record_param_comms_only(tmp_path, monkeypatch, nccl_events):
    """A trace whose NCCL kernels lack the args takes them from the record_param_comms op
    with the kernel's External id; read serially and in two parallel pieces (the pieces'
    ops are merged)."""
    stripped = []
    for e in nccl_events:
        if e.get("cat") == "kernel" and "Collective name" in e.get("args", {}):
            e = {**e, "args": {k: v for k, v in e["args"].items() if k not in ("Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype")}}
        stripped.append(e)
    path = tmp_path / "ops_only.json"
    with gzip.open(NCCL, "rt") as fh:
        top = {k: v for k, v in json.load(fh).items() if k != "traceEvents"}
    path.write_text(json.dumps({**top, "traceEvents": stripped}))
    cols = ["start", "collective", "coll_bytes", "coll_ranks"]
    original = load_file(NCCL).kernels[cols].astype({"collective": str})
    monkeypatch.setenv("TUIPROF_LOAD_WORKERS", "1")
    assert load_file(path).kernels[cols].astype({"collective": str}).equals(original)
    monkeypatch.setattr(kineto, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(kineto, "PIECE_MIN_BYTES", 4096)
    monkeypatch.setenv("TUIPROF_LOAD_WORKERS", "2")
    assert kineto.parallel_pieces(path) == 2
    pieces: list = []

    def in_pieces(p):  # a failed piece raises (no silent serial fallback)
        pieces.append(kineto.read_trace_with(p, 2))
        return pieces[-1]

    monkeypatch.setattr(kineto, "read_trace", in_pieces)
    assert kineto.load_file(path).kernels[cols].astype({"collective": str}).equals(original)
    ops = {e["args"]["External id"] for e in nccl_events if e["name"] == "record_param_comms"}
    assert set(pieces[0].comm_ops) == ops and len(ops) == 27  # every op, merged from the pieces


def test_malformed_collective_args_leave_the_kernel_and_unknown_values(tmp_path):
    events = [
        {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": a}
        for a in (
            {"Collective name": ["x"], "In msg nelems": "12", "Group size": 2, "dtype": "Float", "correlation": 1},
            {"Collective name": "allreduce", "In msg nelems": 8, "Out msg nelems": 8, "Group size": 0, "dtype": "Mystery", "correlation": 2},
            {"Collective name": "allreduce", "In msg nelems": 8, "Out msg nelems": 16, "Group size": 4, "dtype": "BFloat16", "correlation": 3},
        )
    ]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    k = load_file(path).kernels
    assert list(zip(k["collective"].astype(str), k["coll_bytes"], k["coll_ranks"], strict=True)) == [("", -1, 2), ("allreduce", -1, -1), ("allreduce", 32, 4)]


def test_bus_factors_are_nccl_tests():
    """doc/PERFORMANCE.md and src/*.cu of NVIDIA/nccl-tests, at n = 8."""
    assert {k: bus_factor(k, 8) for k in ("AllReduce", "ReduceScatter", "AllGather", "AllToAll", "Gather", "Scatter", "Broadcast", "Reduce", "SendRecv")} == {
        "AllReduce": 1.75,
        "ReduceScatter": 0.875,
        "AllGather": 0.875,
        "AllToAll": 0.875,
        "Gather": 0.875,
        "Scatter": 0.875,
        "Broadcast": 1.0,
        "Reduce": 1.0,
        "SendRecv": 1.0,
    }
    assert (bus_factor("AllReduce", -1), bus_factor("Broadcast", -1), bus_factor("unknown", 8)) == (None, 1.0, None)


SPEC = RankSpec(
    ranks=4,
    iterations=2,
    collectives=("AllReduce", "AllGather", "ReduceScatter", "Broadcast", "SendRecv"),
    compute_kernels=1,
    slow_rank=1,
    slow_pct=50,
    message_bytes=48_000_000,
)
FACTOR_AT_4 = {"AllReduce": 1.5, "AllGather": 0.75, "ReduceScatter": 0.75, "Broadcast": 1.0, "SendRecv": 1.0}


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    ranks = build_ranks(SPEC)
    root = tmp_path_factory.mktemp("comm")
    return ranks, {fmt: build_summary(load_path(write_ranks(ranks, root / fmt, fmt), use_cache=False), SummaryOptions(logs=False)) for fmt in ("kineto", "csv")}


def test_generated_ranks_bus_bandwidth_known_by_construction(synth):
    """Each instance lasts collective_ns + the rank's wait and moves message_bytes among 4
    ranks: algbw = Σ bytes / Σ durations, busbw = algbw × factor(4), written as Kineto args;
    the median bus bandwidth over instances, each timed by its fastest rank."""
    ranks, docs = synth
    e = ranks.expected
    got = {t["type"]: t for t in docs["kineto"]["communication"]["by_type"]}
    assert set(got) == set(FACTOR_AT_4)
    for kind, factor in FACTOR_AT_4.items():
        durs = [SPEC.collective_ns + w for t, row in zip(e.instance_types, e.wait_ns, strict=True) if t == kind for w in row]
        assert len(durs) == SPEC.iterations * SPEC.ranks
        t = got[kind]
        assert (t["count"], t["sized"], t["total_ns"], t["bytes"], t["group_size"]) == (len(durs), len(durs), sum(durs), len(durs) * SPEC.message_bytes, 4)
        assert t["algorithm_bandwidth_gbs"] == round(len(durs) * SPEC.message_bytes / sum(durs), 6)
        assert t["bus_bandwidth_gbs"] == round(len(durs) * SPEC.message_bytes * factor / sum(durs), 6)
        # the median is over instances: each one's bytes × factor / the time of the rank that arrived last (its least)
        fastest = [SPEC.collective_ns + min(row) for t, row in zip(e.instance_types, e.wait_ns, strict=True) if t == kind]
        assert len(fastest) == SPEC.iterations
        assert t["bus_bandwidth_median_gbs"] == pytest.approx(statistics.median(SPEC.message_bytes * factor / d for d in fastest), abs=1e-6)
    # the straggler's instances are the fastest: 48 MB in 40 µs = 1200 GB/s algbw; AllReduce busbw 1800 GB/s
    assert max(durs) > SPEC.collective_ns == min(durs)


def test_sizes_unknown_show_a_dash_never_zero(synth):
    """rocprofv3 CSV (no message sizes) and the real pair without collective args: null in
    JSON, "-" in text, never 0 GB/s."""
    _, docs = synth
    pair = build_summary(load_path(PAIR, use_cache=False), SummaryOptions(logs=False))
    for doc in (docs["csv"], pair):
        for t in doc["communication"]["by_type"]:
            assert t["sized"] == 0 and t["count"] > 0
            assert [t[k] for k in ("bytes", "group_size", "algorithm_bandwidth_gbs", "bus_bandwidth_gbs", "bus_bandwidth_median_gbs")] == [None] * 5
        text = summary_text(doc)
        start = text.index("Communication by collective type")
        section = text[start : text.index("\n\n", start)]
        rows = [line for line in section.splitlines()[3:] if line and not line.startswith(("communication", "bytes:"))][: len(doc["communication"]["by_type"])]
        assert rows and all(row.split()[-5:] == ["-"] * 5 for row in rows)
        assert "0.00 GB/s" not in section and "GB/s" not in "".join(rows)
    assert [(t["type"], t["count"]) for t in pair["communication"]["by_type"]] == [("SendRecv", 20)]
    assert "bus bandwidth" not in str(ranks_header(pair))


def test_ranks_header_names_the_bus_bandwidth(synth):
    _, docs = synth
    header = str(ranks_header(docs["kineto"]))
    allreduce = next(t for t in docs["kineto"]["communication"]["by_type"] if t["type"] == "AllReduce")
    assert f"AllReduce {allreduce['bus_bandwidth_gbs']:.2f} GB/s" in header and "rank from distributedInfo" in header


def rocpd_copy(folder: Path, pid: int, env: dict[str, str]) -> Path:
    """A copy of the real rocpd database with its process's pid and environment rewritten."""
    folder.mkdir(parents=True)
    path = folder / ROCPD.name
    shutil.copyfile(ROCPD, path)
    con = sqlite3.connect(path)
    try:
        (table,) = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_info_process_%'")]
        (text,) = con.execute(f"SELECT environment FROM {table}").fetchone()
        con.execute(f"UPDATE {table} SET environment = ?, pid = ?", (json.dumps({**json.loads(text), **env}), pid))
        con.commit()
    finally:
        con.close()
    return path


def test_environment_rank_variables_in_order():
    assert environment_rank({"HOME": "/root"}) == {}
    assert environment_rank({"SLURM_PROCID": "5", "RANK": "3", "LOCAL_RANK": "1"}) == {
        "rank": 3,
        "variable": "RANK",
        "local_rank": 1,
        "local_variable": "LOCAL_RANK",
    }
    assert environment_rank({"RANK": "x", "OMPI_COMM_WORLD_RANK": "-1", "SLURM_PROCID": " 7 ", "PMI_RANK": "2"}) == {"rank": 7, "variable": "SLURM_PROCID"}
    assert environment_rank({"PMIX_RANK": "12", "SLURM_LOCALID": "0"}) == {
        "rank": 12,
        "variable": "PMIX_RANK",
        "local_rank": 0,
        "local_variable": "SLURM_LOCALID",
    }
    assert environment_rank({"LOCAL_RANK": "1"}) == {}  # a local rank alone names no global rank


def test_rocpd_ranks_from_the_environment(tmp_path):
    """Two rocpd processes whose (host, pid) order is the reverse of their ranks."""
    rocpd_copy(tmp_path / "run" / "a", 100, {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_LOCAL_RANK": "1"})
    rocpd_copy(tmp_path / "run" / "b", 200, {"RANK": "0", "OMPI_COMM_WORLD_RANK": "9"})
    runset = load_path(tmp_path / "run", use_cache=False)
    assert not runset.issues
    assert {r.meta.pid: r.meta.extra["rank_env"] for r in runset.runs} == {
        100: {"rank": 1, "variable": "OMPI_COMM_WORLD_RANK", "local_rank": 1, "local_variable": "OMPI_COMM_WORLD_LOCAL_RANK"},
        200: {"rank": 0, "variable": "RANK"},
    }
    assert all(r.meta.rank is None for r in runset.runs)  # distributedInfo only (the same process in two formats stays one)
    doc = build_summary(runset, SummaryOptions(logs=False))
    assert [(r["rank"], r["rank_source"], r["pid"]) for r in doc["ranks"]] == [(0, "environment", 200), (1, "environment", 100)]
    assert "rank from each process's environment" in summary_text(doc)
    assert "rank from environment" in str(ranks_header(doc))
    # the cache keeps the environment's rank: written by the first load, read by the second
    written, read = load_path(tmp_path / "run"), load_path(tmp_path / "run")
    assert [r.meta.extra["rank_env"] for r in read.runs] == [r.meta.extra["rank_env"] for r in written.runs] == [r.meta.extra["rank_env"] for r in runset.runs]


def test_rank_sources_in_order():
    def run(pid: int, rank: int | None, env: int | None) -> Run:
        extra = {"rank_env": {"rank": env, "variable": "RANK"}} if env is not None else {}
        return Run(meta=RunMeta(hostname="h", pid=pid, rank=rank, extra=extra))

    assert rank_numbers([run(1, 5, 0), run(2, 4, 1)]) == [(5, "distributedInfo"), (4, "distributedInfo")]
    assert rank_numbers([run(1, None, 1), run(2, None, 0)]) == [(1, "environment"), (0, "environment")]
    assert rank_numbers([run(1, None, 1), run(2, None, 1)]) == [(0, "order"), (1, "order")]  # two processes name one rank
    assert rank_numbers([run(1, None, 3), run(2, None, None)]) == [(0, "order"), (1, "order")]


def test_median_bus_bandwidth_is_over_instances_timed_by_the_last_arrival():
    """Three ranks, five AllReduce instances of 3(k+1) MB among 3 ranks (factor 4/3): the rank
    that arrives last spends 1000 × (5 − k) ns in instance k, the others wait 500 and 2000 ns
    more. Instance k's bus bandwidth is 3e6 (k+1) × 4/3 / (1000 (5 − k)) = 4000 (k+1) / (5 − k)
    GB/s: 800, 2000, 4000, 8000, 20000; the median 4000 GB/s (the median over all 15 kernels
    would take the waits in). The time-weighted busbw is Σ S × 4/3 / Σ t over every kernel."""
    from tui_prof.model import Agent, RunSet
    from tui_prof.model.schema import make_table

    runs = []
    all_durs, all_bytes = [], []
    for rank, extra in enumerate((0, 500, 2000)):
        durs = [1000 * (5 - k) + extra for k in range(5)]
        sizes = [3_000_000 * (k + 1) for k in range(5)]
        starts = [1_000_000 * (k + 1) for k in range(5)]
        kernels = make_table(
            "kernels",
            {
                "start": starts,
                "end": [s + d for s, d in zip(starts, durs, strict=True)],
                "name": ["ncclDevKernel_AllReduce_Sum_f32_RING_LL"] * 5,
                "agent": [0] * 5,
                "collective": ["allreduce"] * 5,
                "coll_bytes": sizes,
                "coll_ranks": [3] * 5,
            },
        )
        meta = RunMeta(formats=["synthetic"], tool="synth", hostname="h", pid=100 + rank, label=f"rank{rank}", rank=rank)
        runs.append(Run(meta=meta, agents=[Agent(id=0, type="GPU", name="gpu0")], kernels=kernels))
        all_durs += durs
        all_bytes += sizes
    doc = build_summary(RunSet(root="inst", runs=runs), SummaryOptions(logs=False))
    (row,) = doc["communication"]["by_type"]
    assert row["type"] == "AllReduce" and row["count"] == 15 and row["group_size"] == 3
    assert row["bus_bandwidth_median_gbs"] == 4000.0
    assert row["bus_bandwidth_gbs"] == round(sum(all_bytes) * 4 / 3 / sum(all_durs), 6)
    assert statistics.median(b * 4 / 3 / d for b, d in zip(all_bytes, all_durs, strict=True)) != 4000.0
    assert doc["stragglers"]["rank"] == 0


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_median_bus_bandwidth_leaves_out_instances_of_one_rank(order):
    """Two traced ranks, unequal counts: rank 0 has AllReduce [100, 1000] ns, rank 1 [100] ns,
    800 B over 2 ranks (factor 2(n-1)/n = 1). Only the first is an instance (on two ranks):
    its busbw 800 / 100 = 8.0 GB/s; rank 0's second collective (0.8 GB/s) is no instance and
    stays out of the median. One process: each collective is its own (median of 8.0, 0.8)."""
    import numpy as np

    from tui_prof.analysis.ranks import InstanceTable, bandwidth

    durs = {0: [100, 1000], 1: [100]}
    table = InstanceTable()
    for rank in order:
        n = len(durs[rank])
        table.add(rank, np.array(["AllReduce"] * n, dtype=object), np.array(durs[rank]), np.full(n, 800), np.full(n, 2))
    (row,) = table.by_type()
    assert row["count"] == 3 and row["bus_bandwidth_median_gbs"] == 800 * bus_factor("AllReduce", 2) / 100 == 8.0
    alone = bandwidth("AllReduce", np.array([100, 1000]), np.array([800, 800]), np.array([2, 2]))
    assert alone["bus_bandwidth_median_gbs"] == statistics.median([800 / 100, 800 / 1000]) == 4.4
