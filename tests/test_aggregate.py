"""Whole-run figures of multi-process runs (docs/metrics.md, Aggregation): every percentage
within 0-100 and every part within its whole, over generated multi-rank runs and on the
real two-rank pair; exact values from the generator's construction."""

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.loaders import load_path
from tui_prof.synth.ranks import COLLECTIVE_KERNELS, RankSpec, build_ranks

RANKS = Path(__file__).parent / "data" / "kineto" / "ranks"


# percentages that are a change against another figure, not a share of a whole: may pass 100
CHANGES = {"compute_excess_pct"}


def percentages(node, path=""):
    """Every (path, value) of a key that holds a share in percent in a summary document."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{path}.{key}"
            if key in CHANGES:
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool) and ("pct" in key or key == "percent"):
                yield here, value
            else:
                yield from percentages(value, here)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from percentages(value, f"{path}[{i}]")


def check_wholes(doc) -> None:
    bad = [(p, v) for p, v in percentages(doc) if not 0.0 <= v <= 100.0]
    assert not bad, bad
    gpu, sync, copies, m = doc["gpu"], doc["sync"], doc["copies"], doc["measurement"]
    assert 0 <= gpu["span_ns"] <= doc["wall_ns"]
    assert m["gpu_span_ns"] <= m["span_ns"] == doc["wall_ns"]
    assert gpu["busy_ns"] + gpu["idle_ns"] == gpu["agent_span_ns"]
    assert 0 <= gpu["busy_ns"] <= gpu["agent_span_ns"]
    assert sync["exposed_union_ns"] <= sync["union_ns"] <= sync["process_ns"] == m["process_time_ns"]
    assert copies["busy_ns"] <= m["process_time_ns"]
    assert sync["exposed_ns"] + sync["waiting_ns"] == sync["total_ns"]
    for agent in gpu["agents"]:
        assert agent["busy_ns"] <= agent["span_ns"]


@st.composite
def specs(draw):
    ranks = draw(st.integers(1, 5))
    return RankSpec(
        ranks=ranks,
        iterations=draw(st.integers(1, 3)),
        collectives=tuple(draw(st.lists(st.sampled_from(sorted(COLLECTIVE_KERNELS)), min_size=1, max_size=3))),
        compute_kernels=draw(st.integers(1, 3)),
        compute_ns=draw(st.integers(1, 40)) * 5_000,
        slow_rank=draw(st.none() | st.integers(0, ranks - 1)),
        slow_pct=draw(st.integers(0, 20)) * 10,
        collective_ns=draw(st.integers(2, 20)) * 10_000,
        overlap_kernels=draw(st.integers(0, 2)),
        copy_ns=draw(st.integers(1, 50)) * 10_000,
        hosts=draw(st.integers(1, ranks)),
    )


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs())
def test_every_percentage_within_0_100_and_every_part_within_its_whole(spec):
    ranks = build_ranks(spec)
    doc = build_summary(ranks.runset(), SummaryOptions(logs=False))
    check_wholes(doc)
    exp = ranks.expected
    # exact: each host's ranks start together and end together (the collectives end together)
    assert doc["wall_ns"] == max(exp.span_ns)
    assert doc["measurement"]["process_time_ns"] == sum(exp.span_ns)
    # one host thread per rank: the union of its sync calls is their sum
    assert doc["sync"]["union_ns"] == doc["sync"]["total_ns"] == sum(exp.sync_ns)
    assert doc["sync"]["pct_of_wall"] == pytest.approx(100.0 * sum(exp.sync_ns) / sum(exp.span_ns), abs=1e-4)
    per_rank = [100.0 * s / w for s, w in zip(exp.sync_ns, exp.span_ns, strict=True)]
    assert doc["sync"]["max_pct_of_wall"] == pytest.approx(max(per_rank), abs=1e-4)
    assert doc["sync"]["mean_pct_of_wall"] == pytest.approx(sum(per_rank) / len(per_rank), abs=1e-4)
    assert doc["copies"]["busy_ns"] == sum(exp.copy_ns)


def test_several_hosts_take_the_largest_host_span_not_the_distance_between_clocks():
    spec = RankSpec(ranks=4, hosts=2, host_offset_ns=9_000_000_000)
    ranks = build_ranks(spec)
    doc = build_summary(ranks.runset(), SummaryOptions(logs=False))
    check_wholes(doc)
    # the two hosts' clocks are 9 s apart; the run lasts 1.475 ms on each
    assert doc["wall_ns"] == ranks.expected.span_ns[0] == 1_475_000
    assert doc["gpu"]["span_ns"] < doc["wall_ns"]
    assert doc["measurement"]["process_time_ns"] == 4 * 1_475_000


@pytest.fixture(scope="module")
def real_pair():
    return build_summary(load_path(RANKS), SummaryOptions(logs=False))


def trace_ranges(path: Path) -> tuple[tuple[int, int], tuple[int, int]]:
    """(first, last) ns over the trace's runtime calls, kernels and copies, and over its
    kernels and copies only: an exact parse of the Kineto JSON, independent of the loader."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    timed = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver")]
    gpu = [e for e in timed if e["cat"] != "cuda_runtime" and e["cat"] != "cuda_driver"]

    def span(rows):
        # µs with up to 3 decimals: ns exactly as round(µs * 1000), start and duration apart
        return min(round(e["ts"] * 1000) for e in rows), max(round(e["ts"] * 1000) + round(e["dur"] * 1000) for e in rows)

    return span(timed), span(gpu)


def test_real_two_rank_pair_has_no_part_larger_than_its_whole(real_pair):
    doc = real_pair
    check_wholes(doc)
    assert [(p["label"], p["rank"]) for p in doc["processes"]] == [("sampled_rank-0", 0), ("sampled_rank-1", 1)]
    ranges = [trace_ranges(RANKS / f"sampled_rank-{r}.json.gz") for r in (0, 1)]
    # no host name recorded: one clock (Kineto writes Unix time); the ranks overlap in time
    walls = [hi - lo for (lo, hi), _ in ranges]
    gpus = [hi - lo for _, (lo, hi) in ranges]
    assert doc["wall_ns"] == max(hi for (_, hi), _ in ranges) - min(lo for (lo, _), _ in ranges) == 1_231_355_000
    assert doc["measurement"]["process_time_ns"] == sum(walls) == 2_454_081_000
    # the GPU active span: the union of the two ranks' GPU spans (they overlap), not their
    # sum (2.454 s, reported as the GPU active span inside a 1.231 s wall before these rules)
    (a0, a1), (b0, b1) = (g for _, g in ranges)
    assert max(a0, b0) < min(a1, b1)
    assert doc["gpu"]["span_ns"] == max(a1, b1) - min(a0, b0) == 1_231_339_000
    assert doc["gpu"]["agent_span_ns"] == sum(gpus) == 2_454_033_000
