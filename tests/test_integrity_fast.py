"""The integrity checks' fast paths (issue 32: a clean-run check of 1M dispatches costs <= 10 %
of the summary) give what the plain paths give: dense correlation-id tables against sorted
search and a brute-force reference, sparse ids against dense ids on a real trace with injected
defects, and the start-order shortcuts of the clock, overlap and order checks against
brute-force answers on generated tables."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_integrity import codes

from tui_prof.analysis import integrity
from tui_prof.analysis.api import check_run
from tui_prof.loaders import load_path
from tui_prof.model import RunSet

DATA = Path(__file__).parent / "data"
TRAIN_SYNC = DATA / "kineto" / "h200" / "train_sync.pt.trace.json.gz"
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _ids(draw, size: int, high: int) -> np.ndarray:
    return np.array(draw(st.lists(st.one_of(st.just(-1), st.integers(0, high)), min_size=0, max_size=size)), dtype=np.int64)


@st.composite
def id_pairs(draw):
    high = draw(st.sampled_from([5, 40, 1 << 40]))  # dense, dense with gaps, far too sparse for a table
    api = _ids(draw, 40, high)
    if draw(st.booleans()):
        api = np.sort(api)
    if draw(st.booleans()) and len(api):  # one id per call, counting up: the table's contiguous case
        api = np.arange(len(api), dtype=np.int64) + draw(st.integers(1, 50))
    return api, _ids(draw, 40, high)


@SETTINGS
@given(id_pairs())
def test_id_links_match_a_plain_lookup(pair):
    api, kernels = pair
    first_row: dict[int, int] = {}
    for row, i in enumerate(api.tolist()):
        if i != -1:
            first_row.setdefault(i, row)
    known_kernels = set(kernels[kernels != -1].tolist())
    want_call = [first_row.get(i, -1) if i != -1 else -1 for i in kernels.tolist()]
    want_has = [i != -1 and i in known_kernels for i in api.tolist()]
    for dense in (None, False):
        links = integrity.IdLinks(api, kernels, dense)
        assert links.kernel_call.tolist() == want_call
        assert links.call_has_kernel.tolist() == want_has


def _defects(runset: RunSet) -> RunSet:
    """train_sync with dropped kernels, kernels before their calls and a lonely tail."""
    run = runset.runs[0]
    k = run.kernels
    lo, hi = np.quantile(k["start"], [0.3, 0.4]).astype(np.int64)
    k = k[(k["start"] < lo) | (k["start"] > hi)].reset_index(drop=True)
    k.loc[5:8, "start"] -= 3_000_000  # 3 ms before their launch calls
    run.kernels = k.iloc[: int(len(k) * 0.95)].reset_index(drop=True)
    return runset


def _sparse(runset: RunSet) -> RunSet:
    """The same run with correlation ids spread over int64 in the same order (no table fits)."""
    sparse = copy.deepcopy(runset)
    for table in (sparse.runs[0].api, sparse.runs[0].kernels):
        ids = table["correlation_id"].to_numpy().astype(np.int64)
        table["correlation_id"] = np.where(ids == -1, -1, ids * 1_000_000_007 + 3)
    return sparse


@pytest.mark.parametrize("defects", [False, True])
def test_sparse_ids_give_the_issues_dense_ids_give(defects):
    runset = load_path(TRAIN_SYNC)
    runset = _defects(runset) if defects else runset
    sparse = _sparse(runset)
    assert integrity.run_facts(runset.runs[0]).links.dense and not integrity.run_facts(sparse.runs[0]).links.dense
    dense_report, sparse_report = check_run(runset).record(), check_run(sparse).record()
    assert dense_report == sparse_report
    found = set(codes(check_run(runset)))
    assert ({"unlinked-launches", "kernel-before-launch", "buffer-full"} <= found) == defects


def test_an_id_on_two_calls_takes_the_first_call():
    """Duplicated API ids leave the dense row table (the first call is the launch's, as a
    stable sorted search finds it)."""
    api = np.array([3, 1, 2, 3, 4], dtype=np.int64)
    links = integrity.IdLinks(api, np.array([3, 4, -1, 9], dtype=np.int64))
    assert links.kernel_call.tolist() == [0, 4, -1, -1]
    assert links.call_has_kernel.tolist() == [True, False, False, True, True]


# --- start-order shortcuts -----------------------------------------------------------------------


@st.composite
def one_lane(draw):
    n = draw(st.integers(2, 30))
    start = np.sort(np.array(draw(st.lists(st.integers(0, 10_000), min_size=n, max_size=n)), dtype=np.int64))
    dur = np.array(draw(st.lists(st.integers(-50, 3_000), min_size=n, max_size=n)), dtype=np.int64)
    return start, start + dur


@SETTINGS
@given(one_lane())
def test_one_stream_overlaps_match_the_sorting_path(times):
    start, end = times
    k = pd.DataFrame({"start": start, "end": end, "stream": np.full(len(start), 7, np.int16), "agent": np.ones(len(start), np.int32)})
    fast = integrity._overlaps(k)
    plain_facts = integrity.TableFacts(start, end)
    plain_facts.start_sorted = False  # type: ignore[misc]  # force the lexsort path
    plain = integrity._overlaps(k, plain_facts)
    assert fast[0].tolist() == plain[0].tolist()
    assert np.allclose(fast[1], plain[1])
    # brute force: a kernel overlapped by an earlier one of its stream by more than the tolerance
    want = [i for i in range(1, len(start)) if end[:i].max() - start[i] > integrity.OVERLAP_TOLERANCE_NS and end[i] > start[i]]
    assert fast[0].tolist() == want


@st.composite
def timed_rows(draw):
    n = draw(st.integers(1, 25))
    hour = integrity.CLUSTER_GAP_NS
    start = np.array(draw(st.lists(st.sampled_from([-1, 0, 10, hour // 2, hour, 3 * hour, 3 * hour + 5]), min_size=n, max_size=n)), dtype=np.int64)
    dur = np.array(draw(st.lists(st.sampled_from([0, 5, hour // 3, 2 * hour]), min_size=n, max_size=n)), dtype=np.int64)
    end = np.where(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n))), -1, start + dur)
    if draw(st.booleans()):
        order = np.argsort(start, kind="stable")
        start, end = start[order], end[order]
    return start, end


@SETTINGS
@given(timed_rows())
def test_time_segments_match_a_brute_force_split(rows):
    start, end = rows
    known = (start != -1) & (end != -1)
    pairs = sorted(zip(start[known].tolist(), end[known].tolist(), strict=True))
    want: list[list[int]] = []
    for a, b in pairs:
        if want and a - want[-1][1] <= integrity.CLUSTER_GAP_NS:
            want[-1][1] = max(want[-1][1], a, b)
        else:
            want.append([a, max(a, b)])
    assert integrity._segments(start, end) == [tuple(w) for w in want]


@st.composite
def lanes(draw):
    n = draw(st.integers(2, 20))
    lane = np.array(draw(st.lists(st.integers(-1, 2), min_size=n, max_size=n)), dtype=np.int64)
    ids = np.array(draw(st.lists(st.integers(-1, 30), min_size=n, max_size=n)), dtype=np.int64)
    start = np.array(draw(st.lists(st.sampled_from([-1, 0, 500, 1_000, 5_000, 9_000]), min_size=n, max_size=n)), dtype=np.int64)
    if draw(st.booleans()):
        start = np.sort(start)
    if draw(st.booleans()):
        ids = np.sort(ids)
    return lane, ids, start


@SETTINGS
@given(lanes())
def test_rows_against_launch_order_match_a_brute_force_search(arrays):
    lane, ids, start = arrays
    ok = (lane >= 0) & (ids > 0) & (start != -1)
    want = [
        i
        for i in range(len(lane))
        if ok[i] and any(ok[j] and lane[j] == lane[i] and ids[j] < ids[i] and start[j] - start[i] > integrity.OVERLAP_TOLERANCE_NS for j in range(len(lane)))
    ]
    assert integrity._against_launch_order(lane, ids, start).tolist() == want


def test_unknown_times_alone_are_not_bad_durations():
    """Rows with an unknown start or end (-1) make the durations' quick bound fail; the masked
    pass then finds nothing, as it should."""
    runset = load_path(TRAIN_SYNC)
    k = runset.runs[0].kernels
    k.loc[3, "end"] = -1
    k.loc[4, "start"] = -1
    found = codes(check_run(runset))
    assert "negative-duration" not in found and "duration-overflow" not in found


def test_rows_sharing_a_lanes_first_id_are_not_out_of_order():
    """A graph's kernels share one correlation id: when it is their stream's lowest, no row of
    it runs against an earlier id (the int64 floor standing for "none" must not wrap round)."""
    lane = np.zeros(3, dtype=np.int64)
    assert integrity._against_launch_order(lane, np.array([5, 5, 6]), np.array([5_000, 0, 9_000])).tolist() == []
    assert integrity._against_launch_order(lane, np.array([5, 5, 6]), np.array([5_000, 0, 100])).tolist() == [2]


# --- the separate-recordings note counts what the picker lists ------------------------------------


@pytest.mark.parametrize(
    "folder", ["rocprofv3_csv/rocprofv3-docs-rocm7", "legacy_rocprof/rocm-blogs", "kineto/h200", "legacy_rocprof/hip-programming", "kineto/ranks"]
)
def test_the_recordings_note_agrees_with_the_picker(folder):
    """The note cuts a process holding recordings hours apart first, as --recording N does
    (the docs rocm7 folder: one process holds 15 clusters; 12 recordings in all, not 2)."""
    runset = load_path(DATA / folder)
    choice = integrity.pick_recording(runset)
    notes = [i for i in check_run(runset).issues if i.code == "separate-recordings"]
    assert (notes[0].affects["count"] if notes else 1) == choice.count
    if notes:
        listed = [[integrity.run_label(choice.split.runs[i]) for i in g[: integrity.MAX_EXAMPLES]] for g in choice.groups]  # type: ignore[union-attr]
        assert [r["processes"] for r in notes[0].affects["recordings"]] == listed[: integrity.MAX_EXAMPLES]


def test_a_process_within_the_gap_is_not_cut():
    """Starts spanning less than the cluster gap: split_run returns the run itself (no table is
    cut); spanning more, it looks."""
    run = load_path(TRAIN_SYNC).runs[0]
    (same,) = integrity.split_run(run)
    assert same is run and not integrity._may_split(run)
    far = run.kernels.copy()
    far.loc[len(far) // 2 :, ["start", "end"]] += 2 * integrity.CLUSTER_GAP_NS
    run.kernels = far
    assert integrity._may_split(run) and len(integrity.split_run(run)) == 2


def test_a_small_process_with_large_ids_builds_no_id_table():
    """Tables indexed by id only where the ids span a few times the rows: a one-call process
    whose id is 1,234,567 searches (the answer is the same)."""
    links = integrity.IdLinks(np.array([-1, 1_234_567]), np.array([1_234_567, 7]))
    assert not links.dense
    assert links.kernel_call.tolist() == [1, -1] and links.call_has_kernel.tolist() == [False, True]
