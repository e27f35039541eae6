"""Numbers of ``tuiprof summary --json`` that no other test held against an independent source.

Each is checked, through the real CLI path (loader + summary), against the synthetic generator's
answers known by construction (``tui_prof.synth`` ``Expected``, ``SynthSpec`` parameters) or a
by-hand computation from them — never against a value copied from our own output:

* ``gaps.by_cause`` / ``gpu.agents[].gaps_by_cause`` (idle ns per cause; only their counts and
  the single-cause sync loop were checked before) and ``below_threshold_ns``/``_count`` at the
  default 10 µs threshold;
* ``copies.count`` / ``time_ns`` and ``copies.by_direction[*]`` ``count``/``time_ns``/``bandwidth_gbs``;
* ``launch.tiny_kernels`` / ``tiny_kernel_time_ns`` on a run with tiny and non-tiny kernels;
* ``categories`` / ``hotspots_by.category`` on a run with six categories, and
  ``processes[]`` ``dispatches``/``api_calls``/``copies``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tui_prof.cli import main
from tui_prof.synth import SynthSpec, build
from tui_prof.synth.spec import GEMM_NAME
from tui_prof.synth.write_rocpd import write_rocpd

SAMPLE = Path(__file__).resolve().parent.parent / "sample_traces" / "synthetic_sync_per_launch"
# the sample's README command: --dispatches 2000 --sync per_launch (10 kernels per iteration, seed 0)
SAMPLE_SPEC = SynthSpec(iterations=200, kernels_per_iteration=10, sync="per_launch")
# two GPUs, two streams, sync once per iteration, slow host (30 µs between calls): "launch"
# gaps besides "sync" and "copy" ones
MULTI_SPEC = SynthSpec(iterations=30, kernels_per_iteration=10, sync="per_iteration", gpus=2, streams=2, gap_ns=30_000, seed=5)


def summary_json(path: Path, capsys) -> dict:
    """``tuiprof summary PATH --json`` (all kernels listed)."""
    assert main(["summary", str(path), "--json", "--no-cache", "--top", "0"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def rocpd_dir(tmp_path_factory):
    """MULTI_SPEC written as a rocpd database (that format records copy sizes; the CSV does not)."""
    root = tmp_path_factory.mktemp("multi")
    run = build(MULTI_SPEC)
    write_rocpd(run, root / run.hostname / f"{MULTI_SPEC.pid}_results.db", hostname=run.hostname)
    return root


def _cases(rocpd_dir):
    return [(SAMPLE, SAMPLE_SPEC), (rocpd_dir, MULTI_SPEC)]


def test_idle_time_by_cause_equals_the_known_gaps(rocpd_dir, capsys):
    """Default threshold (10 µs): gaps of at least 10 µs are classified and totalled per cause,
    shorter ones only totalled (``below_threshold_*``)."""
    threshold = 10_000
    causes = ("sync", "launch", "copy")
    for path, spec in _cases(rocpd_dir):
        expected = build(spec).expected
        doc = summary_json(path, capsys)
        assert doc["gaps"]["threshold_ns"] == threshold
        want = {}
        for agent, g in expected.gaps.items():
            duration = (g["end"] - g["start"]).to_numpy()
            cause = g["cause"].astype(str).to_numpy()
            listed = duration >= threshold
            want[agent] = {
                "by_cause": {c: int(duration[listed & (cause == c)].sum()) for c in causes},
                "count_by_cause": {c: int((listed & (cause == c)).sum()) for c in causes},
                "below": (int(duration[~listed].sum()), int((~listed).sum())),
                "idle": expected.span_ns[agent] - expected.busy_ns[agent],
            }
        nonzero = lambda d: {k: v for k, v in d.items() if v}  # noqa: E731
        for got in doc["gpu"]["agents"]:
            w = want[got["agent"]]
            assert nonzero(got["gaps_by_cause"]) == nonzero(w["by_cause"]), (path, got["agent"])
            assert nonzero(got["gaps_count_by_cause"]) == nonzero(w["count_by_cause"]), (path, got["agent"])
            assert (got["below_threshold_ns"], got["below_threshold_count"]) == w["below"]
            assert got["idle_ns"] == w["idle"]
        total = {c: sum(w["by_cause"][c] for w in want.values()) for c in causes}
        assert nonzero(doc["gaps"]["by_cause"]) == nonzero(total)
        assert doc["gaps"]["below_threshold_ns"] == sum(w["below"][0] for w in want.values())
        assert doc["gaps"]["count"] == sum(sum(w["count_by_cause"].values()) for w in want.values())
    assert all(total.values())  # the multi-GPU run has gaps of all three causes above the threshold


def test_copy_counts_times_and_bandwidth_by_hand(rocpd_dir, capsys):
    spec = MULTI_SPEC
    copies = summary_json(rocpd_dir, capsys)["copies"]
    # each copy lasts ceil(bytes / bandwidth) ns (SynthSpec: bandwidth in bytes/ns); one set per GPU
    want = {
        "HtoD": (spec.gpus * spec.htod_copies, spec.htod_bytes, spec.htod_bandwidth),
        "DtoH": (spec.gpus * spec.dtoh_copies, spec.dtoh_bytes, spec.dtoh_bandwidth),
    }
    assert set(copies["by_direction"]) == set(want)
    for direction, (count, size, bandwidth) in want.items():
        got = copies["by_direction"][direction]
        assert got["count"] == count and got["size_unknown"] == 0
        assert got["bytes"] == count * size
        assert got["time_ns"] == count * math.ceil(size / bandwidth)
        assert got["bandwidth_gbs"] == pytest.approx(bandwidth, abs=1e-4)
    assert copies["count"] == sum(c for c, _, _ in want.values())
    assert copies["time_ns"] == sum(c * math.ceil(s / b) for c, s, b in want.values())


def test_tiny_kernels_from_the_known_duration_ranges(capsys):
    """A kernel is tiny below 10 µs. Every kind's known min/max lies on one side of it, so the
    tiny count and time are sums over whole kinds of the generator's table."""
    expected = build(SAMPLE_SPEC).expected
    launch = summary_json(SAMPLE, capsys)["launch"]
    threshold = 10_000
    assert launch["tiny_kernel_threshold_ns"] == threshold
    kinds = expected.kernels
    tiny = kinds[kinds["max_ns"] < threshold]
    assert ((kinds["max_ns"] < threshold) | (kinds["min_ns"] >= threshold)).all()  # no kind straddles it
    assert 0 < len(tiny) < len(kinds)
    assert launch["tiny_kernels"] == int(tiny["calls"].sum()) == 1000
    assert launch["tiny_kernel_time_ns"] == int(tiny["total_ns"].sum())
    assert launch["launch_calls"] == launch["linked_dispatches"] == expected.dispatches


# category of each synthetic kernel, read off its name by hand (docs: built-in category rules)
HAND_CATEGORY = {
    GEMM_NAME: "GEMM",
    "ck_tile::kentry": "attention",  # FmhaFwdKernel
    "vectorized_layer_norm_kernel": "normalisation",
    "reduce_kernel": "reduction",
    "vectorized_elementwise_kernel": "elementwise",
    "__amd_rocclr_copyBuffer": "copy/fill",
}


def test_categories_and_process_counts_by_hand(capsys):
    expected = build(SAMPLE_SPEC).expected
    doc = summary_json(SAMPLE, capsys)
    want_ns: dict[str, int] = {}
    want_calls: dict[str, int] = {}
    for name, row in expected.kernels.iterrows():
        (category,) = [c for key, c in HAND_CATEGORY.items() if key in name]
        want_ns[category] = want_ns.get(category, 0) + int(row.total_ns)
        want_calls[category] = want_calls.get(category, 0) + int(row.calls)
    assert doc["categories"] == want_ns
    assert {h["name"]: (h["calls"], h["total_ns"]) for h in doc["hotspots_by"]["category"]} == {c: (want_calls[c], want_ns[c]) for c in want_ns}
    (process,) = doc["processes"]
    assert (process["hostname"], process["pid"]) == ("synthhost", SAMPLE_SPEC.pid)
    assert process["dispatches"] == expected.dispatches
    assert process["api_calls"] == int(expected.api["calls"].sum())
    assert process["copies"] == sum(expected.copy_calls.values())
