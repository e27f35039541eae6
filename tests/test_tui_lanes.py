"""Timeline binning (tui_prof.tui.view.lanes) against a brute-force per-cell overlap sum."""

from __future__ import annotations

import numpy as np

from tui_prof.render.fmt import fmt_ns, fmt_tick, tick_step
from tui_prof.tui.view.lanes import PackedLanes, merge_intervals


def brute_occupancy(intervals, t0, t1, width):
    edges = t0 + (np.arange(width + 1) * (t1 - t0)) // width
    out = np.zeros((len(intervals), width))
    for lane, (s, e) in enumerate(intervals):
        s, e = merge_intervals(s, e)
        for c in range(width):
            a, b = edges[c], edges[c + 1]
            covered = sum(max(0, min(b, y) - max(a, x)) for x, y in zip(s, e))
            out[lane, c] = covered / (b - a)
    return out


def test_merge_intervals_union():
    s, e = merge_intervals(np.array([5, 0, 2, 20, 21]), np.array([8, 3, 6, 25, 22]))
    assert s.tolist() == [0, 20] and e.tolist() == [8, 25]


def test_occupancy_matches_brute_force_on_random_lanes():
    rng = np.random.default_rng(1)
    intervals = []
    for _ in range(5):
        start = np.sort(rng.integers(0, 100_000, 300))
        intervals.append((start, start + rng.integers(1, 900, 300)))  # overlapping on purpose
    intervals.append((np.zeros(0, np.int64), np.zeros(0, np.int64)))  # an empty lane
    packed = PackedLanes(intervals, span=101_000)
    for t0, t1, width in ((0, 101_000, 57), (12_345, 13_000, 40), (50_000, 50_040, 40)):
        got = packed.occupancy(t0, t1, width)
        want = brute_occupancy(intervals, t0, t1, width)
        np.testing.assert_allclose(got, want, atol=1e-6)


def test_ruler_steps_and_labels():
    assert tick_step(1_000_000_000, 120, every=12) == 100_000_000
    assert fmt_tick(5_540_000, 10_000) == "5.54ms"
    assert fmt_tick(0, 2_000_000) == "0ms"
    assert fmt_ns(1_234_567) == "1.23 ms" and fmt_ns(999) == "999 ns" and fmt_ns(99_960) == "100 µs"


def test_view_reuses_the_summarys_gaps_and_links_exactly():
    """Gaps and launch links taken from the summary's result (RunView.summary_result) equal
    the ones the view computes on its own (diff screen, or a tab opened before the summary finished)."""
    import pandas as pd
    from synthetic import synthetic_runset

    from tui_prof.tui.view.runview import build_view

    runset, synth = synthetic_runset()
    reused = build_view(runset, lazy=True)
    reused.ensure("summary")
    own = build_view(runset, lazy=True)
    assert not own.ready("summary")
    assert reused.summary_result.gaps and reused.summary_result.links
    pd.testing.assert_frame_equal(reused.ensure("gaps"), own.ensure("gaps"))
    pd.testing.assert_frame_equal(reused.ensure("launches"), own.ensure("launches"))
    assert len(own.gaps) == len(synth.expected.gaps[1]) and len(own.launches) == synth.expected.dispatches
