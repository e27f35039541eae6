"""The one collective-instance rule (analysis.ranks.InstanceTable): fed one rank at a time in
any order it gives what the whole matrix of ranks × instances gives; the critical path's waits
read whole-process instances however a window is cut; the table's per-type state does not grow
with the rank count."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui_prof.analysis.critical import ProcessWindow, _slice, collective_waits
from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES
from tui_prof.analysis.ranks import InstanceTable, collective_rows, run_instance_table
from tui_prof.model.schema import column_array
from tui_prof.synth.ranks import RankSpec, build_ranks

BIG = np.iinfo(np.int64).max


def matrix_answer(per_rank: list[dict[str, list[int]]], numbers: list[int]):
    """The instances, waits and last-arrivals from the whole ranks × instances matrix per type
    (positions = list order): the direct statement of the rule."""
    n = len(per_rank)
    waits, last, listed, table = [0] * n, [0] * n, [], {}
    for kind in sorted({t for r in per_rank for t in r}):
        depth = max(len(r.get(kind, [])) for r in per_rank)
        if not depth:  # a type no rank has a collective of
            continue
        fastest, named = [], []
        for k in range(depth):
            have = [(r[kind][k], i) for i, r in enumerate(per_rank) if len(r.get(kind, [])) > k]
            low = min(d for d, _ in have)
            first = min(i for d, i in have if d == low)
            clear = len(have) >= 2 and max(d for d, _ in have) > low
            fastest.append(low)
            named.append(numbers[first] if clear else -1)
            if len(have) < 2:
                continue
            for d, i in have:
                waits[i] += d - low
            if clear:
                last[first] += 1
            listed.append(
                {
                    "type": kind,
                    "index": k,
                    "straggler": numbers[first] if clear else None,
                    "fastest_ns": low,
                    "slowest_ns": max(d for d, _ in have),
                    "wait_ns": sum(d - low for d, _ in have),
                }
            )
        table[kind] = (fastest, named)
    return listed, waits, last, table


ranks_strategy = st.lists(
    st.dictionaries(st.sampled_from(["AllReduce", "AllGather", "SendRecv"]), st.lists(st.integers(1, 4), max_size=6), max_size=3), min_size=1, max_size=7
)


@settings(max_examples=300, deadline=None)
@given(per_rank=ranks_strategy, data=st.data())
def test_table_fed_in_any_order_equals_the_matrix(per_rank, data):
    """Few distinct durations (many ties), ranks with more or fewer instances of each type, fed
    in a random order with their positions as keys: the same instances, waits, last arrivals
    and wait table as the matrix over every rank."""
    n = len(per_rank)
    numbers = data.draw(st.permutations(range(100, 100 + n)))
    order = data.draw(st.permutations(range(n)))  # arrival order
    table = InstanceTable()
    for pos in order:
        kinds = [t for t, ds in per_rank[pos].items() for _ in ds]
        durs = [d for ds in per_rank[pos].values() for d in ds]
        table.add(pos, np.array(kinds, dtype=object), np.array(durs, dtype=np.int64), np.full(len(durs), -1), np.full(len(durs), -1))
    listed, waits, last, expected = matrix_answer(per_rank, list(numbers))
    arrivals = np.argsort(order).tolist()  # the arrival of each position, in position order
    got_listed, got_waits, got_last = table.instances(list(numbers), arrivals)
    assert got_listed == listed
    assert got_waits.tolist() == waits and got_last.tolist() == last  # by position
    got = table.wait_table(list(numbers), arrivals)
    assert {k: (v[0].tolist(), v[1].tolist()) for k, v in got.items()} == expected


def test_statistics_ranks_count_but_take_no_part_in_instances():
    table = InstanceTable()
    table.add(0, np.array(["AllReduce"] * 2, dtype=object), np.array([5, 7]), np.full(2, -1), np.full(2, -1))
    table.add(1, np.array(["AllReduce"] * 2, dtype=object), np.array([1, 1]), np.full(2, -1), np.full(2, -1), traced=False)
    listed, waits, last = table.instances([0, 1])
    assert listed == [] and waits.tolist() == [0, 0] and last.tolist() == [0, 0]
    assert [(r["type"], r["count"], r["total_ns"]) for r in table.by_type()] == [("AllReduce", 4, 14)]


def test_kept_state_does_not_grow_with_ranks():
    """64 and 256 ranks with the same collectives per rank: the same per-type arrays (and no
    rank's times kept once another has as many), per rank one count and sum per type."""
    rng = np.random.default_rng(7)
    sizes = {}
    for ranks in (64, 256):
        table = InstanceTable()
        for r in range(ranks):
            kinds = np.array(["AllReduce"] * 300 + ["AllGather"] * 100, dtype=object)
            table.add(r, kinds, rng.integers(1, 1000, len(kinds)), np.full(len(kinds), 8), np.full(len(kinds), ranks))
        sizes[ranks] = table.instance_elements()
        assert all(len(m) == 2 for m in table.counts)
        assert all(k.cand is None for k in table.kinds.values())
    assert sizes[64] == sizes[256] == 8 * 400


SPEC = RankSpec(ranks=4, iterations=6, collectives=("AllReduce", "AllGather"), compute_kernels=1, slow_rank=2, slow_pct=50)


@pytest.fixture(scope="module")
def job():
    ranks = build_ranks(SPEC)
    return ranks, ranks.runset().runs


def test_waits_of_a_cut_window_are_the_whole_process_instances(job):
    """A window that starts at a rank's fifth collective (the k-th AllReduce/AllGather of the
    window is not the k-th of the process): each collective of the window waits the
    generator's wait of its whole-process instance, for the generator's straggler."""
    ranks, runs = job
    e = ranks.expected
    rules = DEFAULT_CATEGORY_RULES
    table = run_instance_table(runs, rules)
    rank = 0
    run = runs[rank]
    rows, kinds = collective_rows(run.kernels, rules)
    start = column_array(run.kernels, "start")
    lo, hi = int(start[rows[4]]), int(column_array(run.kernels, "end").max()) + 1
    part = _slice(run, lo, hi)
    kept = np.flatnonzero(start >= lo)
    window = ProcessWindow("rank0", part, None, lo, hi, hi - lo, [], 0, kept, len(run.kernels), run)  # type: ignore[arg-type]
    wait, last = collective_waits({0: window}, rules, table)[0]
    w_rows, _ = collective_rows(part.kernels, rules)
    assert len(w_rows) == len(rows) - 4 > 0
    # whole-process instance i is the i-th collective of the process (types alternate alike on every rank)
    assert wait[w_rows].tolist() == [e.wait_ns[i][rank] for i in range(4, len(rows))]
    assert last[w_rows].tolist() == [e.straggler[i] if e.wait_ns[i][rank] else -1 for i in range(4, len(rows))]
    assert SPEC.slow_rank in set(last[w_rows].tolist())
