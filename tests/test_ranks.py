"""The rank table, communication and stragglers (analysis/ranks.py): exact on the generator's
multi-rank runs written as rocprofv3 CSV and as Kineto; on the real traces against an
independent parse of their JSON and HTA's communication/computation overlap computed by hand."""

import gzip
import json
from pathlib import Path

import pytest

from tui_prof.analysis.findings import FindingCode
from tui_prof.analysis.ranks import collective_type
from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.loaders import load_path
from tui_prof.render.summary import summary_markdown, summary_text
from tui_prof.synth.ranks import RankSpec, build_ranks, write_ranks

KINETO = Path(__file__).parent / "data" / "kineto"
SPEC = RankSpec(ranks=4, iterations=3, collectives=("AllReduce", "AllGather"), compute_kernels=2, slow_rank=2, slow_pct=50, overlap_kernels=1)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    ranks = build_ranks(SPEC)
    root = tmp_path_factory.mktemp("ranks")
    docs = {fmt: build_summary(load_path(write_ranks(ranks, root / fmt, fmt)), SummaryOptions(logs=False)) for fmt in ("csv", "kineto")}
    return ranks, docs


@pytest.mark.parametrize("fmt", ["csv", "kineto"])
def test_rank_table_equals_the_generators_answers(generated, fmt):
    ranks, docs = generated
    exp, rows = ranks.expected, docs[fmt]["ranks"]
    assert [r["rank"] for r in rows] == [0, 1, 2, 3]
    # Kineto writes distributedInfo; rocprofv3 records no rank: (host, pid) order
    assert {r["rank_source"] for r in rows} == {"distributedInfo" if fmt == "kineto" else "order"}
    assert [r["pid"] for r in rows] == [5000, 5001, 5002, 5003]
    assert [r["host"] for r in rows] == (["node0"] * 4 if fmt == "csv" else [None] * 4)
    assert [r["span_ns"] for r in rows] == exp.span_ns
    assert [r["compute_ns"] for r in rows] == exp.compute_ns
    assert [r["communication_ns"] for r in rows] == exp.communication_ns
    assert [r["copy_ns"] for r in rows] == exp.copy_ns
    assert [r["sync_ns"] for r in rows] == exp.sync_ns
    assert [r["overlap_ns"] for r in rows] == exp.overlap_ns
    assert [r["wait_ns"] for r in rows] == exp.wait_by_rank
    assert [r["collectives"] for r in rows] == [len(exp.instance_types)] * 4
    assert [r["straggler_of"] for r in rows] == [exp.straggler.count(r) for r in range(4)]
    # compute 2 x 100 µs (150 µs on rank 2) and one 10 µs overlap kernel per collective: the GEMM leads
    assert {r["top_kernel"] for r in rows} == {"Cijk_Alik_Bljk_SB_MT128x128x16_MI32x32x2x1"}
    for r in rows:
        assert r["busy_ns"] == r["compute_ns"] + r["communication_ns"] + r["copy_ns"] - r["overlap_ns"]
        assert r["idle_pct"] == pytest.approx(100.0 * (r["gpu_span_ns"] - r["busy_ns"]) / r["gpu_span_ns"], abs=1e-4)


@pytest.mark.parametrize("fmt", ["csv", "kineto"])
def test_communication_and_straggler_equal_the_generators_answers(generated, fmt):
    ranks, docs = generated
    exp, doc = ranks.expected, docs[fmt]
    comm = doc["communication"]
    assert comm["kernel_ns"] == sum(exp.communication_ns)
    assert comm["overlap_ns"] == sum(exp.overlap_ns)
    assert comm["pct_of_time"] == pytest.approx(100.0 * sum(exp.communication_ns) / sum(exp.span_ns), abs=1e-4)
    by_type = {t["type"]: (t["count"], t["total_ns"]) for t in comm["by_type"]}
    per_instance = {}
    for kind, w in zip(exp.instance_types, exp.wait_ns, strict=True):
        n, t = per_instance.get(kind, (0, 0))
        per_instance[kind] = (n + 4, t + sum(w) + 4 * SPEC.collective_ns)
    assert by_type == per_instance == {"AllReduce": (12, 12 * 40_000 + 3 * 300_000), "AllGather": (12, 12 * 40_000 + 3 * 300_000)}
    strag = doc["stragglers"]
    assert strag["rank"] == 2 and strag["instances"] == 6 and strag["last_in"] == 6
    assert strag["compute_excess_pct"] == 50.0
    others = [r for r in range(4) if r != 2]
    assert strag["others_wait_ns"] == sum(exp.wait_by_rank[r] for r in others) == 3 * 6 * 100_000
    assert strag["others_wait_pct"] == pytest.approx(100.0 * strag["others_wait_ns"] / sum(exp.span_ns[r] for r in others), abs=1e-4)
    assert all(i["straggler"] == 2 and i["fastest_ns"] == SPEC.collective_ns and i["wait_ns"] == 300_000 for i in strag["listed"])
    codes = {f["code"]: f for f in doc["findings"]}
    assert codes[FindingCode.STRAGGLER.value]["message"].startswith(
        "rank 2 is the straggler: its compute before collectives is 50.0% longer; the other ranks wait 1.800 ms ("
    )
    assert FindingCode.COMM_OVERLAP.value in codes


def test_straggler_finding_fires_just_past_its_threshold():
    def wait_pct(slow_pct):
        doc = build_summary(build_ranks(RankSpec(ranks=2, slow_rank=1, slow_pct=slow_pct, compute_kernels=1)).runset(), SummaryOptions(logs=False))
        return doc["stragglers"]["others_wait_pct"], {f["code"] for f in doc["findings"]}

    below, codes_below = wait_pct(10)  # rank 0 waits 3 x 10 µs of a 1.5 ms span: 2 %
    above, codes_above = wait_pct(30)
    assert below < 5.0 < above
    assert "straggler" not in codes_below and "straggler" in codes_above


def test_rank_table_in_text_and_markdown(generated):
    _, docs = generated
    text = summary_text(docs["csv"])
    assert "\nRanks\nrank  host   GPU" in text
    assert "straggler: rank 2 (last at 6 of 6 collectives" in text
    md = summary_markdown(docs["csv"])
    assert "## Ranks" in md and "## Communication by collective type" in md


def test_collective_types_from_kernel_names():
    assert collective_type("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)") == "AllReduce"
    assert collective_type("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == "ReduceScatter"
    assert collective_type("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)") == "SendRecv"
    assert collective_type("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)") == "Broadcast"
    assert collective_type("ncclDevKernel_Reduce_Sum_f16_RING_LL") == "Reduce"
    assert collective_type("rccl_main_kernel") == "unknown"


# --- real traces: an independent parse of the JSON ------------------------------------------


def kernel_events(path: Path) -> tuple[dict, list[dict]]:
    top = json.loads(gzip.decompress(path.read_bytes()))
    gpu = [e for e in top["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    return top.get("distributedInfo", {}), gpu


def ns(e) -> tuple[int, int]:
    start = round(e["ts"] * 1000)
    return start, start + round(e["dur"] * 1000)


def merged(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def hta_overlap(events) -> tuple[int, int]:
    """HTA's get_comm_comp_overlap for one rank (hta/analyzers/communication_analysis.py):
    communication = kernels whose name contains "ncclKernel", memory = names containing
    Memcpy or Memset, computation = every other GPU event; each set merged; the overlap is
    the time both run; HTA's ratio = overlap / merged communication time. Returns (overlap, comm)."""
    comm = merged(ns(e) for e in events if "ncclKernel" in e["name"])
    comp = merged(ns(e) for e in events if "ncclKernel" not in e["name"] and "Memcpy" not in e["name"] and "Memset" not in e["name"])
    overlap, j = 0, 0
    for s, e in comm:
        while j < len(comp) and comp[j][1] <= s:
            j += 1
        k = j
        while k < len(comp) and comp[k][0] < e:
            overlap += min(e, comp[k][1]) - max(s, comp[k][0])
            k += 1
    return overlap, sum(e - s for s, e in comm)


def by_type(events) -> dict[str, tuple[int, int]]:
    """ncclKernel_<Type>_… -> (count, Σ ns), from the names' second token."""
    out: dict[str, tuple[int, int]] = {}
    for e in events:
        if e["name"].startswith("ncclKernel_"):
            kind = e["name"].split("_")[1]
            s, t = ns(e)
            n, total = out.get(kind, (0, 0))
            out[kind] = (n + 1, total + t - s)
    return out


@pytest.fixture(scope="module")
def real_pair():
    return build_summary(load_path(KINETO / "ranks"), SummaryOptions(logs=False))


def test_real_pair_ranks_collectives_and_overlap_match_an_independent_parse(real_pair):
    doc = real_pair
    parsed = [kernel_events(KINETO / "ranks" / f"sampled_rank-{r}.json.gz") for r in (0, 1)]
    assert (
        [(r["rank"], r["rank_source"]) for r in doc["ranks"]]
        == [(info["rank"], "distributedInfo") for info, _ in parsed]
        == [
            (0, "distributedInfo"),
            (1, "distributedInfo"),
        ]
    )
    want: dict[str, tuple[int, int]] = {}
    for _, events in parsed:
        for kind, (n, t) in by_type(events).items():
            want[kind] = (want.get(kind, (0, 0))[0] + n, want.get(kind, (0, 0))[1] + t)
    assert {t["type"]: (t["count"], t["total_ns"]) for t in doc["communication"]["by_type"]} == want == {"SendRecv": (20, 775_252_000)}
    for row, (_, events) in zip(doc["ranks"], parsed, strict=True):
        overlap, comm = hta_overlap(events)
        assert row["communication_ns"] == comm
        assert row["overlap_ns"] == overlap
        assert row["collectives"] == 10
    # HTA's per-rank comp_comm_overlap_pctg (round(100 × ratio, 2)) and ours
    assert [round(r["overlap_pct"], 2) for r in doc["ranks"]] == [round(100 * o / c, 2) for o, c in (hta_overlap(ev) for _, ev in parsed)]


def test_nccl_data_collectives_match_an_independent_parse():
    doc = build_summary(load_path(KINETO / "comm" / "nccl_parser_config__nccl_data.json.gz"), SummaryOptions(logs=False))
    info, events = kernel_events(KINETO / "comm" / "nccl_parser_config__nccl_data.json.gz")
    assert info["rank"] == 0 and info["world_size"] == 2
    (row,) = doc["ranks"]
    assert (row["rank"], row["rank_source"]) == (0, "distributedInfo")
    assert {t["type"]: (t["count"], t["total_ns"]) for t in doc["communication"]["by_type"]} == by_type(events)
    overlap, comm = hta_overlap(events)
    assert (row["overlap_ns"], row["communication_ns"]) == (overlap, comm)


def test_diff_of_one_process_and_four_ranks_compares_per_rank_and_whole_run():
    from tui_prof.analysis.diff import diff_runsets
    from tui_prof.render.diff import diff_text, to_json

    one = build_ranks(RankSpec(ranks=1, slow_rank=None, iterations=3))
    four = build_ranks(RankSpec(ranks=4, slow_rank=1, slow_pct=50, iterations=3))
    result = diff_runsets(one.runset("one"), four.runset("four"))
    d = to_json(result)["ranks"]
    assert d["processes"] == [1, 4]
    assert d["straggler"] == [None, 1]
    assert d["communication_ns"] == [sum(one.expected.communication_ns), sum(four.expected.communication_ns)]
    assert d["by_type"] == [
        {"type": "AllReduce", "count_a": 3, "count_b": 12, "total_ns_a": sum(one.expected.communication_ns), "total_ns_b": sum(four.expected.communication_ns)}
    ]
    assert [r["rank"] for r in d["ranks"]] == [0, 1, 2, 3]
    assert d["ranks"][0]["compute_ns_a"] == one.expected.compute_ns[0] and d["ranks"][1]["compute_ns_a"] is None
    assert [r["wait_ns_b"] for r in d["ranks"]] == four.expected.wait_by_rank
    text = diff_text(result)
    assert "Ranks: 1 vs 4 processes; communication" in text and "straggler - vs rank 1" in text


def test_statistics_only_ranks_fill_the_rank_table_from_kernel_stats(tmp_path):
    """rocprofv3 --stats without a trace: compute and communication per rank are the kernel
    statistics' totals per class; no instances, so no waits or straggler."""
    ranks = build_ranks(RankSpec(ranks=3, iterations=2, slow_rank=1, slow_pct=50))
    root = write_ranks(ranks, tmp_path / "run", "csv")
    for trace in root.rglob("*_trace.csv"):
        trace.unlink()
    doc = build_summary(load_path(root, use_cache=False), SummaryOptions(logs=False))
    rows = doc["ranks"]
    assert [r["source"] for r in rows] == ["stats"] * 3
    assert [r["compute_ns"] for r in rows] == ranks.expected.compute_ns
    assert [r["communication_ns"] for r in rows] == ranks.expected.communication_ns
    assert [r["dispatches"] for r in rows] == [len(run.kernels) for run in ranks.runs]
    assert doc["communication"]["by_type"][0]["count"] == 3 * 2
    assert doc["communication"]["kernel_ns"] == sum(ranks.expected.communication_ns)
    assert doc["stragglers"]["instances"] == 0 and doc["stragglers"]["rank"] is None
    assert [r["wait_ns"] for r in rows] == [0, 0, 0]
