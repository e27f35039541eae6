"""``tuiprof export``: Parquet and Perfetto (Chrome trace-event JSON) round trips.

Parquet: every model table read back with pyarrow and pandas equals the model's table
(values and dtypes). Perfetto: the file read back through tuiprof's own Kineto loader gives
the same kernel count, per-kernel totals, busy time and gaps (start, length, cause, the API
call that decided it) as the source run, and every event has the format's required fields.
"""

from __future__ import annotations

import copy
import gzip
import itertools
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from tests.synthetic import synthetic_runset
from tui_prof import cli
from tui_prof.analysis.hotspots import hotspots
from tui_prof.analysis.summary import SummaryOptions, build_summary
from tui_prof.analysis.timeline import gpu_timeline
from tui_prof.exits import EXIT_OK, EXIT_USAGE
from tui_prof.export import perfetto
from tui_prof.export.common import ExportError
from tui_prof.export.parquet import ANALYSIS_TABLES, MANIFEST, export_parquet
from tui_prof.export.perfetto import export_perfetto, gap_name, write_trace
from tui_prof.loaders import load_path
from tui_prof.model import RunSet
from tui_prof.model.schema import TABLES, concat_tables

DATA = Path(__file__).parent / "data"
SAMPLES = {
    "rocpd": DATA / "rocpd" / "28_results.db",
    "rocprofv3-json": DATA / "rocprofv3_json" / "908_results.json.gz",
    "rocprofv3-csv": DATA / "rocprofv3_csv" / "rocprofv3-docs-rocm7",
    "kineto-rocm": DATA / "kineto" / "mi300__gaunernst_bert-small-uncased__1016001.json.gz",
    "kineto-cuda": DATA / "kineto" / "h200" / "train_sync.pt.trace.json.gz",
    "kineto-epoch-clock": DATA / "kineto" / "critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz",
    "pftrace": DATA / "pftrace" / "synth_small.pftrace",
}
HOSTILE = 'k"quote\\back\nnew\x1b[31mred\u202eRTL\u00e9\u4e2d\U0001f600'


def _same_table(back: pd.DataFrame, model: pd.DataFrame) -> None:
    """Equal values and dtypes. An empty category column is the one difference pandas makes:
    its categories come back as object dtype (an empty dictionary has no value type)."""
    assert list(back.columns) == list(model.columns)
    if len(model):
        pd.testing.assert_frame_equal(back, model.reset_index(drop=True), check_exact=True)
        return
    assert len(back) == 0
    for column in model.columns:
        if isinstance(model[column].dtype, pd.CategoricalDtype):
            assert isinstance(back[column].dtype, pd.CategoricalDtype) and list(back[column].cat.categories) == []
        else:
            assert back[column].dtype == model[column].dtype


@pytest.fixture(scope="module")
def loaded():
    return {name: load_path(str(path), use_cache=False) for name, path in SAMPLES.items()}


@pytest.fixture(scope="module")
def synthetic():
    runset, synth = synthetic_runset(counters=True, streams=2)
    run = runset.runs[0]
    names = run.kernels["name"].cat.categories
    run.kernels["name"] = run.kernels["name"].cat.rename_categories({names[0]: HOSTILE + names[0]})
    return runset, synth


# --------------------------------------------------------------------------- Parquet


@pytest.mark.parametrize("sample", list(SAMPLES))
def test_parquet_round_trip_every_model_table(sample, loaded, tmp_path):
    runset = loaded[sample]
    paths = export_parquet(runset, tmp_path / "out", [*TABLES])
    assert sorted(paths) == sorted(TABLES)
    for name in TABLES:
        model = concat_tables(name, [run.table(name) for run in runset.runs])
        for back in (pd.read_parquet(paths[name]), pq.read_table(paths[name]).to_pandas()):
            assert back["process"].dtype == np.int32
            assert back["process"].tolist() == [i for i, run in enumerate(runset.runs) for _ in range(len(run.table(name)))]
            _same_table(back.drop(columns="process"), model)
        if len(runset.runs) == 1:  # one process: the file is the run's own table
            _same_table(pd.read_parquet(paths[name]).drop(columns="process"), runset.runs[0].table(name))


def test_parquet_strings_are_dictionaries_and_times_int64(synthetic, tmp_path):
    runset, synth = synthetic
    paths = export_parquet(runset, tmp_path / "out")
    schema = pq.read_schema(paths["kernels"])
    assert str(schema.field("name").type).startswith("dictionary<values=")
    assert str(schema.field("start").type) == "int64" and str(schema.field("end").type) == "int64"
    back = pd.read_parquet(paths["kernels"])
    assert HOSTILE in back["name"].cat.categories[0]
    assert int((back["end"] - back["start"]).sum()) == synth.expected.kernel_total_ns


def test_parquet_analysis_tables_match_the_summary(synthetic, tmp_path):
    runset, synth = synthetic
    paths = export_parquet(runset, tmp_path / "out")
    doc = build_summary(runset, SummaryOptions(top=None, max_gaps=None))
    hot = pd.read_parquet(paths["hotspots_by_name"])
    assert hot[["name", "calls", "total_ns"]].astype({"name": str}).values.tolist() == [[h["name"], h["calls"], h["total_ns"]] for h in doc["hotspots"]]
    assert int(hot["total_ns"].sum()) == synth.expected.kernel_total_ns
    by_agent = pd.read_parquet(paths["hotspots_by_agent"])
    assert by_agent["agent"].dtype == np.int64 and int(by_agent["calls"].sum()) == synth.expected.dispatches
    gaps = pd.read_parquet(paths["gaps"])
    assert len(gaps) == doc["gaps"]["count"]
    listed = sorted((g["agent"], g["start_ns"], g["duration_ns"], g["cause"], g["api_cause"] or "", g["api_before"] or "") for g in doc["gaps"]["listed"])
    got = sorted(zip(gaps.agent, gaps.start, gaps.duration_ns, gaps.cause.astype(str), gaps.api_cause.astype(str), gaps.api_before.astype(str), strict=True))
    assert got == listed
    findings = pd.read_parquet(paths["findings"])
    assert findings["code"].astype(str).tolist() == [f["code"] for f in doc["findings"]]
    assert [json.loads(n) for n in findings["numbers"]] == [json.loads(json.dumps(f["numbers"], default=str)) for f in doc["findings"]]
    processes = pd.read_parquet(paths["processes"])
    assert processes[["hostname", "pid"]].astype({"hostname": str}).values.tolist() == [["synthhost", 4242]]
    agents = pd.read_parquet(paths["agents"])
    assert agents["id"].tolist() == [a.id for a in runset.runs[0].agents]
    readme = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    for name in paths:
        assert f"## {name}.parquet" in readme
    assert "| `start` | int64 | ns |" in readme


def test_parquet_tables_option_and_refusals(synthetic, tmp_path):
    runset, _ = synthetic
    out = tmp_path / "out"
    assert sorted(export_parquet(runset, out, ["kernels", "gaps"])) == ["gaps", "kernels"]
    assert sorted(os.listdir(out)) == sorted([MANIFEST, "README.md", "kernels.parquet", "gaps.parquet"])
    export_parquet(runset, out, ["api"])  # a folder a previous export wrote: replaced
    assert sorted(os.listdir(out)) == sorted([MANIFEST, "README.md", "api.parquet"])
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ExportError, match="did not write"):
        export_parquet(runset, out, ["api"])
    assert (out / "notes.txt").read_text() == "mine"
    with pytest.raises(ExportError, match="unknown table 'nope'"):
        export_parquet(runset, tmp_path / "other", ["nope"])
    assert set(ANALYSIS_TABLES) <= set(export_parquet(runset, tmp_path / "all"))


def test_export_never_writes_into_the_run_directory(tmp_path, loaded):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    runset, _ = synthetic_runset()
    runset.root = str(run_dir)
    for target in (run_dir / "pq", run_dir / "deep" / "pq", run_dir):
        with pytest.raises(ExportError, match="never writes into a run directory"):
            export_parquet(runset, target)
    with pytest.raises(ExportError, match="never writes into a run directory"):
        export_perfetto(runset, run_dir / "trace.json")
    single = loaded["rocpd"]  # a run given as one file: its folder is the run directory
    with pytest.raises(ExportError, match="never writes into a run directory"):
        export_perfetto(single, SAMPLES["rocpd"].parent / "x.json")
    assert sorted(os.listdir(run_dir)) == []


# --------------------------------------------------------------------------- Perfetto


def _events(path: Path) -> tuple[dict, list[dict]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="ascii") as fh:  # the file is pure ASCII: every string escaped
        doc = json.load(fh)
    return doc, doc["traceEvents"]


def _check_required_fields(events: list[dict]) -> None:
    """The trace-event format: ph, ts, pid, tid, name on every event (a counter's ``tid`` is
    optional), dur on complete events, an id on flow events."""
    for e in events:
        assert {"ph", "ts", "pid", "name"} <= set(e), e
        if e["ph"] != "C":
            assert "tid" in e, e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        if e["ph"] in ("s", "f"):
            assert "id" in e, e
        assert e["ph"] in ("X", "M", "s", "f", "i", "C"), e


def _check_gpu_tracks_do_not_overlap(events: list[dict]) -> None:
    """Slices of one GPU track (synthetic tids) never overlap: concurrent kernels of one
    stream or queue go to "(overlap N)" tracks, since Perfetto would draw them nested."""
    tracks: dict[tuple, list[tuple[int, int]]] = {}
    for e in events:
        if e["ph"] == "X" and e["tid"] >= perfetto.TRACK_BASE and e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset"):
            start = round(e["ts"] * 1000)
            tracks.setdefault((e["pid"], e["tid"]), []).append((start, start + round(e["dur"] * 1000)))
    for spans in tracks.values():
        spans.sort()
        assert all(b[0] >= a[1] for a, b in itertools.pairwise(spans)), spans


def test_sub_lanes_known_answer():
    start = np.array([0, 5, 10, 12, 20, 21, 30])
    end = np.array([10, 15, 20, 14, 25, 22, 40])
    # [0,10) lane 0; [5,15) overlaps it: lane 1; [10,20) lane 0 (free at 10); [12,14) lane 2
    # (0 and 1 busy); [20,25) lane 0; [21,22) lane 1; [30,40) lane 0
    assert perfetto.sub_lanes(start, end).tolist() == [0, 1, 0, 2, 0, 1, 0]
    assert perfetto.sub_lanes(np.array([3, 0, 1]), np.array([4, 1, 3])).tolist() == [0, 0, 0]
    # per (agent, stream) key: (5, -1) has [0, 10) and [5, 6) (lanes 0, 1), (2, 7) the same, (2, 3) one
    keys = np.array([[5, -1], [2, 7], [5, -1], [2, 7], [2, 3]])
    tids = perfetto._track_ids(keys, np.array([0, 0, 5, 5, 0]), np.array([10, 10, 6, 6, 1]), lambda k, sub: k[0] * 100 + k[1] * 10 + sub)
    assert tids.tolist() == [490, 270, 491, 271, 230]


def _timeline(runset, origin: int = 0) -> tuple[int, int, list[tuple]]:
    """(busy ns, span ns, every gap as (agent, start, length, cause, deciding API call)) over
    every process, gap starts shifted by ``origin``."""
    busy = span = 0
    gaps = []
    for run in runset.runs:
        agents, frame = gpu_timeline(run)
        busy += sum(a["busy_ns"] for a in agents)
        span += sum(a["span_ns"] for a in agents)
        gaps += zip(
            frame["agent"].tolist(),
            (frame["start"] + origin).tolist(),
            frame["duration_ns"].tolist(),
            frame["cause"].astype(str),
            frame["api_cause"].astype(str),
            strict=True,
        )
    return busy, span, sorted(gaps)


def _compare(source, back) -> None:
    """Each process read back equals its source process: kernels per name, busy time, span
    and gaps, on the profiler's clock (the export's origin added back)."""
    assert [(r.meta.hostname, r.meta.pid, r.meta.rank, r.meta.label) for r in back.runs] == [
        (r.meta.hostname, r.meta.pid, r.meta.rank, r.meta.label) for r in source.runs
    ]
    for a, b in zip(source.runs, back.runs, strict=True):
        assert len(b.kernels) == len(a.kernels)
        per_name = [hotspots(k)[["name", "calls", "total_ns"]].astype({"name": str}).sort_values("name").values.tolist() for k in (a.kernels, b.kernels)]
        assert per_name[1] == per_name[0]
        busy, span, gaps = _timeline(RunSet(back.root, [b]))
        # a gap "from -1" is the timeline's reading of rows without timestamps (the docs folder's
        # kernel_names.csv counter pass): no time to place them at; its cause is not compared
        untimed = {g[:3] for g in gaps if g[1] == -1}
        source_busy, source_span, source_gaps = _timeline(RunSet(source.root, [a]))
        assert (busy, span) == (source_busy, source_span)
        assert [g for g in gaps if g[1] != -1] == [g for g in source_gaps if g[1] != -1]
        assert untimed == {g[:3] for g in source_gaps if g[1] == -1}


@pytest.mark.parametrize("sample", list(SAMPLES))
def test_perfetto_round_trip_through_the_kineto_loader(sample, loaded, tmp_path):
    runset = loaded[sample]
    path, count = export_perfetto(runset, tmp_path / "trace.json.gz")
    doc, events = _events(path)
    assert len(events) == count
    _check_required_fields(events)
    back = load_path(str(path), use_cache=False)
    assert back.errors == [] and len(back.runs) == len(runset.runs)
    assert all(r.warnings == [] for r in back.runs)
    _compare(runset, back)
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert len(kernels) == sum(len(r.kernels) for r in runset.runs)
    flows = [e for e in events if e["ph"] in ("s", "f")]
    assert sorted(e["id"] for e in flows if e["ph"] == "s") == sorted(e["id"] for e in flows if e["ph"] == "f")
    _check_gpu_tracks_do_not_overlap(events)
    series = concat_tables("series", [r.series for r in runset.runs])  # counter tracks: every finite sample
    assert sum(1 for e in events if e.get("cat") == "tuiprof_counter") == int(np.isfinite(series["value"].to_numpy()).sum())


def test_perfetto_epoch_clock_is_written_from_an_origin(loaded, tmp_path):
    runset = loaded["kineto-epoch-clock"]
    path, _ = export_perfetto(runset, tmp_path / "t.json")
    doc, events = _events(path)
    origin = doc["tuiprof_export"]["origin_ns"]
    first = int(runset.runs[0].kernels["start"].min())
    assert origin == first - first % 1_000_000_000 and origin > 0
    kernel = min((e for e in events if e.get("cat") == "kernel"), key=lambda e: e["ts"])
    assert round(kernel["ts"] * 1000) + origin == first


def test_perfetto_analysis_tracks_and_names(synthetic, tmp_path):
    runset, synth = synthetic
    path, _ = export_perfetto(runset, tmp_path / "t.json")
    doc, events = _events(path)
    summary = build_summary(runset, SummaryOptions(top=None, max_gaps=None))
    gaps = [e for e in events if e.get("cat") == "tuiprof_gap"]
    assert len(gaps) == summary["gaps"]["count"]
    assert sorted(e["name"] for e in gaps) == sorted(gap_name(g["cause"], g["api_cause"] or "") for g in summary["gaps"]["listed"])
    assert "idle: sync after hipDeviceSynchronize" in {e["name"] for e in gaps}
    findings = [e for e in events if e.get("cat") == "tuiprof_finding"]
    assert [e["args"]["code"] for e in findings] == [f["code"] for f in summary["findings"]]
    assert all(e["ph"] in ("i", "X") and e["args"]["message"] in e["name"] and e["args"]["evidence"] for e in findings)
    names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"GPU 1 stream 1", "GPU 1 stream 2", "GPU 1 copies", "GPU 1 idle (tuiprof)", "thread 4242"} <= names
    kernel_names = {e["name"] for e in events if e.get("cat") == "kernel"}
    assert kernel_names == {str(n) for n in runset.runs[0].kernels["name"].cat.categories}
    assert any(HOSTILE in n for n in kernel_names)  # quotes, backslash, newline, ESC, bidi, emoji: exact
    back = load_path(str(path), use_cache=False)
    assert set(back.runs[0].kernels["name"].astype(str)) == kernel_names
    assert sum(1 for e in events if e.get("cat") == "kernel") == synth.expected.dispatches


def test_perfetto_window_keeps_overlapping_events_only(synthetic, tmp_path):
    runset, _ = synthetic
    k = runset.runs[0].kernels
    lo, hi = int(k["start"].iloc[30]), int(k["end"].iloc[60])
    path, _ = export_perfetto(runset, tmp_path / "w.json", (lo, hi))
    _, events = _events(path)
    kernels = [e for e in events if e.get("cat") == "kernel"]
    expected = int(((k["start"] < hi) & (k["end"] > lo)).sum())
    assert len(kernels) == expected
    for e in events:
        if e["ph"] == "X":
            start = round(e["ts"] * 1000)
            assert start < hi and start + round(e["dur"] * 1000) >= lo


def test_perfetto_is_streamed_in_bounded_writes(synthetic, monkeypatch):
    """Each write holds at most CHUNK rows' events (a flow adds two per kernel): the text is
    never assembled whole."""
    runset, _ = synthetic
    monkeypatch.setattr(perfetto, "CHUNK", 16)

    class Recorder:
        def __init__(self):
            self.sizes: list[int] = []

        def write(self, text: str) -> int:
            self.sizes.append(text.count("\n"))
            return len(text)

    rec = Recorder()
    count = write_trace(runset, rec)  # type: ignore[arg-type]
    assert count > 500 and len(rec.sizes) > count // (16 * 3)
    assert max(rec.sizes[1:-1]) <= 16 * 3 + 64  # one chunk with its flows, or the metadata of a process


def test_perfetto_refuses_a_file_it_did_not_write(synthetic, tmp_path):
    runset, _ = synthetic
    mine = tmp_path / "notes.json"
    mine.write_text('{"my": "data"}')
    with pytest.raises(ExportError, match="not a trace tuiprof exported"):
        export_perfetto(runset, mine)
    assert mine.read_text() == '{"my": "data"}'
    ours = tmp_path / "t.json.gz"
    export_perfetto(runset, ours)
    export_perfetto(runset, ours)  # its own export: replaced
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


COUNTER_SAMPLES = {
    "workloads": DATA / "rocprof_compute" / "workloads",  # 4 processes, 1349 counter rows (48 NaN; one workload without times)
    "analysis-db": DATA / "rocprof_compute" / "analysis_db",  # rocprof-compute metrics of 7 kernels, 10 dispatches
}


@pytest.fixture(scope="module")
def counter_runs():
    return {name: load_path(str(path), use_cache=False) for name, path in COUNTER_SAMPLES.items()}


def _expected_values(runset, table: str, window=None) -> list[tuple]:
    """(pid, track name, ns, value) of every counter event the model implies, joined with
    pandas: a counter row at the one timed kernel of its dispatch id, a metric row at every
    timed kernel of its name; the value at the kernel's start and 0 at its end (>= start + 1)."""
    out = []
    for run, pid in zip(runset.runs, perfetto._pids(runset), strict=True):
        k = run.kernels[run.kernels["start"] != -1].astype({"name": str})
        k = k[~k["dispatch_id"].duplicated(keep=False)] if table == "counters" else k
        if window is not None:
            k = k[(k["start"] < window[1]) & (np.maximum(k["end"], k["start"] + 1) > window[0])]
        if table == "counters":
            rows = run.counters.merge(k[["dispatch_id", "agent", "start", "end"]], on="dispatch_id", suffixes=("_c", ""))
            names = "GPU " + rows["agent"].astype(str) + " " + rows["counter"].astype(str)
        else:
            rows = run.metrics.astype({"kernel": str}).merge(k[["name", "agent", "start", "end"]], left_on="kernel", right_on="name", suffixes=("_m", ""))
            label = rows["metric_id"].astype(str) + " " + rows["metric"].astype(str) + " " + rows["stat"].astype(str) + " (" + rows["unit"].astype(str) + ")"
            names = "GPU " + rows["agent"].astype(str) + " " + label
        rows = rows.assign(track=names)[np.isfinite(rows["value"].to_numpy())]
        for r in rows.itertuples(index=False):
            out += [(pid, r.track, int(r.start), float(r.value)), (pid, r.track, max(int(r.end), int(r.start) + 1), 0.0)]
    return sorted(out)


def _written_values(path: Path, cat: str) -> list[tuple]:
    doc, events = _events(path)
    _check_required_fields(events)
    origin = doc["tuiprof_export"]["origin_ns"]
    mine = [e for e in events if e.get("cat") == cat]
    for e in mine:  # a counter track event: its process, the kernel's track and one value
        assert e["ph"] == "C" and {"ph", "ts", "pid", "tid", "name", "args"} <= set(e) and list(e["args"]) == ["value"], e
    return sorted((e["pid"], e["name"], round(e["ts"] * 1000) + origin, e["args"]["value"]) for e in mine)


def _subset(runset, labels: list[str]) -> RunSet:
    """The processes of ``runset`` with these labels. The four workloads' clocks lie up to
    1.2e16 ns apart: written from one origin, some would pass 2^43 µs and lose exactness."""
    by_label = {run.meta.label: run for run in runset.runs}
    return RunSet(runset.root, [by_label[label] for label in labels])


@pytest.mark.parametrize(
    ("labels", "placed", "not_placed"),
    [
        # vcopy_MI100: 741 rows, 48 NaN (left out: JSON has no NaN); vcopy_MI300X_A1: 27 rows, no kernel times
        (["vcopy_MI350", "vcopy_MI300X_A1", "vcopy_MI100"], 147 + 741 - 48, 27 + 48),
        (["vcopy_MI300X_A1_rocpd"], 434, 0),
    ],
)
def test_perfetto_dispatch_counters_equal_the_model(counter_runs, tmp_path, labels, placed, not_placed):
    runset = _subset(counter_runs["workloads"], labels)
    assert sum(len(run.counters) for run in runset.runs) == placed + not_placed
    path, _ = export_perfetto(runset, tmp_path / "c.json.gz")
    got = _written_values(path, "hw_counter")
    assert got == _expected_values(runset, "counters")  # every value exact, at its dispatch's start; 0 at its end
    assert len(got) == 2 * placed
    doc, events = _events(path)
    assert doc["tuiprof_export"]["not_placed"] == {"counters": not_placed, "metrics": 0}
    kernel_tid = {(e["pid"], e["ts"]): e["tid"] for e in events if e.get("cat") == "kernel"}
    starts = [e for e in events if e.get("cat") == "hw_counter" and e["args"]["value"] != 0]
    assert starts and all(kernel_tid[(e["pid"], e["ts"])] == e["tid"] for e in starts)  # on the kernel's own track
    for run, pid in zip(runset.runs, perfetto._pids(runset), strict=True):  # one track per counter name per process and GPU
        tracks = {e["name"] for e in events if e.get("cat") == "hw_counter" and e["pid"] == pid}
        agents = set(run.kernels["agent"].tolist())
        finite = run.counters[np.isfinite(run.counters["value"].to_numpy())]
        assert tracks == ({f"GPU {a} {c}" for a in agents for c in finite["counter"].astype(str)} if run.meta.label != "vcopy_MI300X_A1" else set())


def test_perfetto_dispatch_counters_inside_a_window(counter_runs, tmp_path):
    runset = _subset(counter_runs["workloads"], ["vcopy_MI350", "vcopy_MI100"])
    k = runset.runs[0].kernels  # vcopy_MI350's second dispatch only (vcopy_MI100's clock lies elsewhere)
    window = (int(k["start"].iloc[1]), int(k["end"].iloc[1]))
    path, _ = export_perfetto(runset, tmp_path / "w.json", window)
    got = _written_values(path, "hw_counter")
    assert got == _expected_values(runset, "counters", window)
    assert len(got) == 2 * 49 and {v[0] for v in got} == {perfetto._pids(runset)[0]}


def test_perfetto_kernel_metrics_at_every_dispatch(counter_runs, tmp_path):
    runset = counter_runs["analysis-db"]
    path, _ = export_perfetto(runset, tmp_path / "m.json")
    got = _written_values(path, "kernel_metric")
    expected = _expected_values(runset, "metrics")
    assert got == expected
    run = runset.runs[0]
    m, k = run.metrics, run.kernels
    finite = np.isfinite(m["value"].to_numpy())
    dispatches = k["name"].astype(str).value_counts()
    per_row = m["kernel"].astype(str).map(dispatches).fillna(0).to_numpy()  # dispatches of each row's kernel ("" none)
    assert len(got) == 2 * int(per_row[finite].sum()) == 3632
    doc, _ = _events(path)
    assert doc["tuiprof_export"]["not_placed"] == {"counters": 0, "metrics": int(len(m) - (finite & (per_row > 0)).sum())}


def test_perfetto_counter_names_are_escaped_only(counter_runs, tmp_path):
    runset = copy.deepcopy(counter_runs["workloads"])
    run = runset.runs[1]
    first = run.counters["counter"].cat.categories[0]
    run.counters["counter"] = run.counters["counter"].cat.rename_categories({first: HOSTILE})
    path, _ = export_perfetto(runset, tmp_path / "h.json")
    names = {e["name"] for e in _events(path)[1] if e.get("cat") == "hw_counter"}
    assert "GPU 0 " + HOSTILE in names  # quotes, backslash, newline, ESC, bidi, emoji: exact, the file pure ASCII


# --------------------------------------------------------------------------- CLI


def test_cli_export_and_one_line_errors(tmp_path, capsys):
    src = str(SAMPLES["rocpd"])
    assert cli.main(["export", src, "--parquet", str(tmp_path / "pq"), "--tables", "kernels,gaps", "--perfetto", str(tmp_path / "t.json")]) == EXIT_OK
    assert sorted(p.name for p in (tmp_path / "pq").glob("*.parquet")) == ["gaps.parquet", "kernels.parquet"]
    assert (tmp_path / "t.json").stat().st_size > 0
    err = capsys.readouterr().err
    assert "wrote 2 Parquet files" in err and "trace events" in err
    cases = [
        (["export", src], "give --parquet"),
        (["export", src, "--parquet", str(SAMPLES["rocpd"].parent / "out")], "never writes into a run directory"),
        (["export", src, "--perfetto", str(tmp_path / "w.json"), "--window", "5ms:1ms"], "window ends before it starts"),
        (["export", src, "--parquet", str(tmp_path / "p2"), "--tables", "kernels,bogus"], "unknown table 'bogus'"),
        (["export", src, "--tables", "kernels", "--perfetto", str(tmp_path / "x.json")], "--tables applies to --parquet"),
        (["export", src, "--perfetto", str(tmp_path / "missing" / "x.json")], "no such folder"),
    ]
    for argv, message in cases:
        assert cli.main(argv) == EXIT_USAGE, argv
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and "Traceback" not in err, err


def test_cli_window_is_relative_to_the_first_event(tmp_path):
    src = str(SAMPLES["rocpd"])
    runset = load_path(src, use_cache=False)
    first = perfetto.run_start(runset)
    assert cli.main(["export", src, "--perfetto", str(tmp_path / "w.json"), "--window", "1ms:2ms"]) == EXIT_OK
    doc, events = _events(tmp_path / "w.json")
    assert doc["tuiprof_export"]["window_ns"] == [first + 1_000_000, first + 2_000_000]
    kernels = concat_tables("kernels", [r.kernels for r in runset.runs])
    inside = int(((kernels["start"] < first + 2_000_000) & (kernels["end"] > first + 1_000_000)).sum())
    assert sum(1 for e in events if e.get("cat") == "kernel") == inside


def test_user_guide_pandas_example_reads_the_export(synthetic, tmp_path, capsys):
    """The user guide's three lines run on an export and print the top kernel's total."""
    runset, _ = synthetic
    export_parquet(runset, tmp_path / "out", ["kernels", "gaps"])
    guide = (Path(__file__).parents[1] / "docs" / "user_guide.md").read_text(encoding="utf-8")
    block = guide[guide.index("  ```python\n  import pandas as pd") :].split("\n", 1)[1]
    code = "\n".join(line[2:] for line in block[: block.index("  ```\n")].splitlines())
    assert len([line for line in code.splitlines() if line.strip()]) == 3
    exec(code.replace("OUT_DIR", str(tmp_path / "out")), {})
    k = runset.runs[0].kernels
    top = int((k["end"] - k["start"]).groupby(k["name"], observed=True).sum().max())
    assert str(top) in capsys.readouterr().out


def test_perfetto_allocator_totals_pair_in_order_across_chunks():
    """The k-th allocation at a time and agent carries the k-th allocator sample there, also
    when those allocations fall in different write chunks (each sample is used once)."""
    import numpy as np

    from tui_prof.export import perfetto
    from tui_prof.model import Run, RunMeta, make_table

    n = perfetto.CHUNK + 3  # one time and agent: the pairing spans two chunks
    run = Run(meta=RunMeta(formats=["kineto"], label="host/1", pid=1))
    ones = np.ones(n, dtype=np.int64)
    run.allocations = make_table(
        "allocations",
        {
            "start": 5 * ones,
            "end": 5 * ones,
            "operation": ["ALLOCATE"] * n,
            "agent": 0 * ones,
            "bytes": ones,
            "address": np.arange(n),
            "pid": ones,
            "tid": ones,
            "correlation_id": -ones,
        },
    )
    run.series = make_table(
        "series", {"track": ["allocated"] * n, "agent": 0 * ones, "ts": 5 * ones, "value": np.arange(n, dtype=np.float64) * 10, "unit": ["B"] * n}
    )
    totals = [int(piece.split('"Total Allocated":')[1].split("}")[0]) for chunk in perfetto._allocation_events(run, 1, None, 0) for piece in chunk]
    assert totals == [10 * i for i in range(n)]
