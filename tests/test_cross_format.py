"""One synthetic program written in every rocprofv3/PyTorch format gives the same analysis.

The run is built once (`tui_prof.synth`) and written by its command line (`python -m
tui_prof.synth`'s main) as rocprofv3 CSV, rocpd, pftrace and Kineto; each directory is
summarised through the real `tuiprof summary --json` entry point (cli.main, in this
process: a fresh interpreter per call would only add its start-up), and every
format-independent number must be equal — and equal to the generator's known answers.
"""

import contextlib
import io
import json

import pytest

from tui_prof import cli, synth
from tui_prof.synth import SynthSpec, build

FORMATS = ("csv", "rocpd", "pftrace", "kineto")


def run_main(main, argv: list[str]) -> str:
    """What ``main(argv)`` prints on stdout; it must exit 0."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0, argv
    return out.getvalue()


def summarise(path) -> dict:
    return json.loads(run_main(cli.main, ["summary", str(path), "--json", "--top", "0", "--no-cache"]))


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
        run_main(synth.main, [str(root / fmt), "--format", fmt, "--dispatches", "300", "--sync", "per_launch", "--seed", "3"])
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
