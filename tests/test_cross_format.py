"""One synthetic program written in every rocprofv3/PyTorch format gives the same analysis.

The run is built once (`tui_prof.synth`) and written by the CLI as rocprofv3 CSV, rocpd,
pftrace and Kineto; each directory is summarised through the real `tuiprof summary --json`
path, and every format-independent number must be equal — and equal to the generator's
known answers.
"""

import json
import subprocess
import sys

import pytest

from tui_prof.synth import SynthSpec, build

FORMATS = ("csv", "rocpd", "pftrace", "kineto")


def summarise(path) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "tui_prof.cli", "summary", str(path), "--json", "--top", "0", "--no-cache"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)


def comparable(summary: dict) -> dict:
    return {
        "dispatches": summary["kernels"]["dispatches"],
        "kernel_ns": summary["kernels"]["total_ns"],
        "hotspots": [(h["name"], h["calls"], h["total_ns"], h["min_ns"], h["max_ns"]) for h in summary["hotspots"]],
        "gpu": {k: summary["gpu"][k] for k in ("span_ns", "busy_ns", "idle_ns")},
        "gaps": (summary["gaps"]["count"], summary["gaps"]["by_cause"]),
        "sync": (summary["sync"]["calls"], summary["sync"]["total_ns"]),
    }


@pytest.fixture(scope="module")
def summaries(tmp_path_factory):
    root = tmp_path_factory.mktemp("formats")
    result = {}
    for fmt in FORMATS:
        subprocess.run(
            [sys.executable, "-m", "tui_prof.synth", str(root / fmt), "--format", fmt, "--dispatches", "300", "--sync", "per_launch", "--seed", "3"],
            capture_output=True,
            check=True,
        )
        result[fmt] = summarise(root / fmt)
    return result


def test_every_format_gives_the_same_numbers(summaries):
    reference = comparable(summaries["csv"])
    for fmt in FORMATS[1:]:
        assert comparable(summaries[fmt]) == reference, fmt


def test_numbers_equal_the_generators_known_answers(summaries):
    spec = SynthSpec(iterations=30, kernels_per_iteration=10, sync="per_launch", seed=3)
    expected = build(spec, hostname="synthhost").expected
    got = summaries["csv"]
    assert got["kernels"]["dispatches"] == expected.dispatches == 300
    assert {h["name"]: (h["calls"], h["total_ns"]) for h in got["hotspots"]} == {
        name: (int(row.calls), int(row.total_ns)) for name, row in expected.kernels.iterrows()
    }
    (agent,) = expected.gaps
    assert got["gpu"]["busy_ns"] == expected.busy_ns[agent]
    assert got["gpu"]["span_ns"] == expected.span_ns[agent]
    assert got["gaps"]["count"] == len(expected.gaps[agent])
    nonzero = {k: v for k, v in expected.gap_counts()[agent].items() if v}
    assert {k: v for k, v in got["gaps"]["count_by_cause"].items() if v} == nonzero
    # analysis counts blocking hipMemcpy calls as synchronisation too
    blocking = int(expected.api.loc["hipMemcpy", "calls"])
    assert got["sync"]["calls"] == expected.sync_calls + blocking
