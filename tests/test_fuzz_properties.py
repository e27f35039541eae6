"""Property-based tests (hypothesis) for hostile input (issue 7): truncation at any offset
keeps the load contract, and generated files whose content is known by construction load
back exactly — including negative, huge, reversed (end < start), unsorted and duplicate
values and names with commas, quotes and non-ASCII text."""

from __future__ import annotations

import csv
import datetime
import io
import shutil
import tempfile
from pathlib import Path

import numpy as np
from fuzz.oracle import check_runset, make_read_only, make_writable, snapshot, write_run
from fuzz.seeds import all_seeds
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui_prof.loaders import load_path
from tui_prof.loaders.base import int64_from_text

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def load_files(files: dict[str, bytes], mutated: set[str] = frozenset()):
    """Write ``files`` into a read-only run dir, load it, return (runset, contract violations)."""
    base = Path(tempfile.mkdtemp(prefix="tuiprof-prop-"))
    try:
        root = write_run(base, files)
        make_read_only(root)
        before = snapshot(root)
        runset = load_path(root)
        assert snapshot(root) == before
        return runset, [v for v in check_runset(root, runset, set(mutated), set()) if v.kind not in ("unclear",)]
    finally:
        make_writable(base)
        shutil.rmtree(base, ignore_errors=True)


# --------------------------------------------------------------------------- truncation anywhere


def _seed_files():
    seeds = all_seeds()
    out = []
    for loader in ("rocprofv3_csv", "legacy_rocprof", "rocprofv2", "smi_csv", "rocprofv3_json", "kineto", "pftrace"):
        seed = seeds[loader][0]
        for name in seed.mutable():
            out.append((loader, seed, name))
    return out


SEED_FILES = _seed_files()


@SETTINGS
@given(st.sampled_from(SEED_FILES), st.floats(min_value=0, max_value=1))
def test_truncated_anywhere(choice, fraction):
    loader, seed, name = choice
    files = dict(seed.files)
    data = files[name]
    files[name] = data[: int(len(data) * fraction)]
    runset, violations = load_files(files, {name})
    hard = [v for v in violations if v.kind != "unmarked-partial" or loader in ("rocprofv2", "legacy_rocprof", "smi_csv")]
    assert not hard, hard


# --------------------------------------------------------------------------- known by construction


@given(INT64)
def test_int64_from_text_exact(value):
    assert int64_from_text([str(value), f" {value} "]).tolist() == [value, value]


@given(st.integers(min_value=2**63, max_value=2**80) | st.integers(min_value=-(2**80), max_value=-(2**63) - 1))
def test_int64_from_text_out_of_range_is_unknown(value):
    assert int64_from_text([str(value)]).tolist() == [-1]


@given(st.text(max_size=30).filter(lambda t: not t.strip().lstrip("+-").isdigit()))
def test_int64_from_text_non_integer_is_unknown(text):
    assert int64_from_text([text]).tolist() == [-1]


NAMES = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\r\n\x00"), min_size=1, max_size=40).filter(lambda s: s.strip() == s and s.strip())


@SETTINGS
@given(
    st.lists(
        st.tuples(st.sampled_from(["HIP_API_DOMAIN", "HSA_API_DOMAIN", "SOME_NEW_DOMAIN"]), NAMES, INT64, INT64, st.integers(min_value=0, max_value=2**62)),
        min_size=1,
        max_size=30,
    )
)
def test_rocprofv2_api_csv_round_trip(rows):
    """Every generated row comes back with its exact start/end (negative, reversed and
    unsorted included); the run's api table is sorted by start as the model requires."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(["Domain", "Function", "Start_Timestamp", "End_Timestamp", "Correlation_ID"])
    for domain, name, start, end, corr in rows:
        writer.writerow([domain, name, start, end, corr])
    runset, violations = load_files({"hip_api_trace_7.csv": out.getvalue().encode()})
    assert not violations
    (run,) = runset.runs
    api = run.api
    assert len(api) == len(rows)
    expected = sorted((s, e, c) for _, _, s, e, c in rows)
    got = sorted(zip(api["start"].tolist(), api["end"].tolist(), api["correlation_id"].tolist()))
    assert got == expected
    assert sorted(api["name"].astype(str)) == sorted(name for _, name, *_ in rows)
    assert api["start"].is_monotonic_increasing


@SETTINGS
@given(st.lists(st.tuples(NAMES, st.integers(min_value=0, max_value=2**62), st.integers(min_value=0, max_value=2**62)), min_size=1, max_size=20))
def test_legacy_stats_round_trip(rows):
    """A rocprof v1 .stats.csv (Name,Calls,TotalDurationNs,AverageNs,Percentage) beside its
    trace: calls and totals come back exactly, for any name (commas, quotes, non-ASCII)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["Name", "Calls", "TotalDurationNs", "AverageNs", "Percentage"])
    for name, calls, total in rows:
        writer.writerow([name, calls, total, total / max(calls, 1), 1.0])
    trace = all_seeds()["legacy_rocprof"][1].files["HSA_trace_results.csv"]
    runset, violations = load_files({"r.csv": trace, "r.stats.csv": out.getvalue().encode()})
    assert not violations
    (run,) = [r for r in runset.runs if "kernel_stats" in r.tool_stats]
    stats = run.tool_stats["kernel_stats"]
    assert stats["name"].tolist() == [r[0] for r in rows]
    assert stats["calls"].tolist() == [r[1] for r in rows]
    assert stats["total_ns"].tolist() == [r[2] for r in rows]


@SETTINGS
@given(
    st.lists(
        st.tuples(
            st.datetimes(min_value=datetime.datetime(2000, 1, 1), max_value=datetime.datetime(2100, 1, 1)),
            st.floats(allow_nan=False, allow_infinity=False, width=32) | st.sampled_from(["N/A", "", "nan"]),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_smi_csv_round_trip(samples):
    """madengine power samples in any order, with N/A and empty values: every numeric sample
    comes back once with its exact time (µs resolution of the writer) and value."""
    lines = ["time,Power(Watt) GPU3"]
    for when, value in samples:
        lines.append(f"{when.strftime('%Y-%m-%d %H:%M:%S.%f')},{value}")
    runset, violations = load_files({"gpu_info_power_profiler_output.csv": ("\n".join(lines) + "\n").encode()})
    assert not violations
    (run,) = runset.runs
    expected = sorted((int(np.datetime64(w, "ns").astype(np.int64)), float(v)) for w, v in samples if not isinstance(v, str) or v not in ("N/A", "", "nan"))
    got = sorted(zip(run.series["ts"].tolist(), run.series["value"].tolist()))
    assert got == expected
    assert set(run.series["agent"].tolist()) <= {3}
