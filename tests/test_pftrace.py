"""rocprofv3 Perfetto trace loader: checked against synthetic runs whose answers are known
by construction (tui_prof.synth.spec) and against a slow reference decoder that uses the
perfetto protobuf classes packet by packet."""

from __future__ import annotations

import dataclasses
import gzip
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import TracePacket, TrackEvent

from tui_prof.loaders import load_path, pftrace
from tui_prof.synth.spec import SynthSpec, build
from tui_prof.synth.write_pftrace import _varint as pftrace_varint
from tui_prof.synth.write_pftrace import midpoint_fix, write_pftrace

DATA = Path(__file__).parent / "data" / "pftrace"
LAYOUTS = [(layout, sdk) for layout in ("queue", "stream") for sdk in ("7", "0.5")]


@pytest.fixture(scope="module")
def synth():
    return build(SynthSpec(iterations=30, kernels_per_iteration=6, streams=2, gpus=2, sync="per_iteration", seed=3))


def _packets(path: Path):
    """Complete TracePackets of a file, decoded one by one (reference framing)."""
    data = path.read_bytes()
    pos, out = 0, []
    while pos < len(data):
        assert data[pos] == 0x0A
        length, shift, q = 0, 0, pos + 1
        while q < len(data):
            byte = data[q]
            q += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        else:
            break
        if q + length > len(data):
            break
        out.append(TracePacket.FromString(data[q : q + length]))
        pos = q + length
    return out


def _reference_kernels(path: Path) -> pd.DataFrame:
    """Kernel slices by a straightforward per-packet decode: interning per generation,
    incremental clock, begin/end stacks per track."""
    names, cats = {}, {}
    last_ts, clock = 0, 6
    stacks: dict[int, list] = {}
    rows = []
    default_track = 0
    for pkt in _packets(path):
        if pkt.sequence_flags & 1:
            names, cats, clock, default_track = {}, {}, 6, 0
        if pkt.HasField("trace_packet_defaults"):
            clock = pkt.trace_packet_defaults.timestamp_clock_id or 6
            default_track = pkt.trace_packet_defaults.track_event_defaults.track_uuid
        for clk in pkt.clock_snapshot.clocks:
            if clk.clock_id == 6:
                last_ts = clk.timestamp
        for item in pkt.interned_data.event_names:
            names[item.iid] = item.name
        for item in pkt.interned_data.event_categories:
            cats[item.iid] = item.name
        if not pkt.HasField("track_event"):
            continue
        if pkt.HasField("timestamp_clock_id") or clock == 6:
            ts = pkt.timestamp
        else:
            last_ts += pkt.timestamp
            ts = last_ts
        ev = pkt.track_event
        track = ev.track_uuid if ev.HasField("track_uuid") else default_track
        if ev.type == TrackEvent.TYPE_SLICE_BEGIN:
            stacks.setdefault(track, []).append((ts, names[ev.name_iid], cats[ev.category_iids[0]]))
        elif ev.type == TrackEvent.TYPE_SLICE_END:
            start, name, cat = stacks[track].pop()
            if cat == "kernel_dispatch":
                rows.append((start, ts, name))
    return pd.DataFrame(rows, columns=["start", "end", "name"]).sort_values(["start", "name"], ignore_index=True)


def _by_name(kernels: pd.DataFrame) -> pd.DataFrame:
    dur = kernels["end"] - kernels["start"]
    table = dur.groupby(kernels["name"].astype(str)).agg(["count", "sum"])
    return table.rename(columns={"count": "calls", "sum": "total_ns"}).sort_index()


def _load_one(path: Path):
    runset = load_path(path)
    assert len(runset.runs) == 1, runset.issues
    return runset, runset.runs[0]


@pytest.mark.parametrize("layout,sdk", LAYOUTS)
def test_layouts_match_construction(tmp_path, synth, layout, sdk):
    path = write_pftrace(synth, tmp_path / "4242_results.pftrace", layout=layout, sdk=sdk)
    runset, run = _load_one(path)
    assert runset.errors == []
    assert run.meta.tool == "rocprofv3" and run.meta.formats == ["pftrace"] and run.meta.pid == 4242
    assert not run.partial

    exp = synth.expected
    got = _by_name(run.kernels)
    want = exp.kernels[["calls", "total_ns"]].sort_index()
    assert len(run.kernels) == exp.dispatches
    assert got["calls"].tolist() == want["calls"].tolist()
    assert got["total_ns"].tolist() == want["total_ns"].tolist()
    assert list(got.index) == list(want.index)

    # per-dispatch attributes equal the generated table (synth kernels never overlap: no midpoint fix)
    ours = run.kernels.sort_values(["start", "agent"], ignore_index=True)
    ref = synth.kernels.sort_values(["start", "agent"], ignore_index=True)
    cols = ["start", "end", "agent", "queue", "tid", "correlation_id", "kernel_id", "lds_bytes", "scratch_bytes"]
    if sdk == "0.5" and layout == "queue":
        assert (ours["stream"] == -1).all()  # SDK 0.5 wrote no stream id; queue tracks carry none
    else:
        cols.append("stream")  # stream_ID annotation (7.x) or the STREAM [n] track name (0.5)
    if sdk == "7":
        cols += ["arch_vgpr", "accum_vgpr", "sgpr"]
    else:
        assert (ours["arch_vgpr"] == -1).all()  # SDK 0.5 did not write register counts
    for col in cols:
        assert ours[col].tolist() == ref[col].tolist(), col
    assert (ours["grid_x"] == ref["grid_x"] * ref["grid_y"] * ref["grid_z"]).all()
    assert (ours["wg_x"] == ref["wg_x"] * ref["wg_y"] * ref["wg_z"]).all()

    # API calls: counts and totals per function, correlation ids link to kernels
    api = run.api
    assert set(api["domain"].astype(str)) == {"hip"}
    totals = (api["end"] - api["start"]).groupby(api["name"].astype(str)).agg(["count", "sum"])
    for fn, row in exp.api.iterrows():
        assert totals.loc[fn, "count"] == row["calls"] and totals.loc[fn, "sum"] == row["total_ns"]
    assert set(run.kernels["correlation_id"]) <= set(api["correlation_id"])

    # copies: bytes, directions and agents
    copies = run.copies
    for direction, nbytes in exp.copy_bytes.items():
        assert copies.loc[copies["direction"] == direction, "bytes"].sum() == nbytes
    ref_c = synth.copies.sort_values(["start", "dst_agent"], ignore_index=True)
    ours_c = copies.sort_values(["start", "dst_agent"], ignore_index=True)
    for col in ("start", "end", "src_agent", "dst_agent", "correlation_id", "bytes"):
        assert ours_c[col].tolist() == ref_c[col].tolist(), col

    # counter track: value = counter_value * unit_multiplier (1024) = copy bytes at each copy start
    series = run.series
    assert set(series["unit"].astype(str)) == {"bytes"}
    peaks = series[series["value"] > 0].sort_values(["ts", "agent"], ignore_index=True)
    assert peaks["value"].tolist() == ref_c["bytes"].astype(float).tolist()
    assert peaks["agent"].tolist() == ref_c["dst_agent"].tolist()


def test_against_reference_decoder(tmp_path, synth):
    path = write_pftrace(synth, tmp_path / "x.pftrace", layout="queue", sdk="7")
    ref = _reference_kernels(path)
    _, run = _load_one(path)
    ours = run.kernels.sort_values(["start", "name"], ignore_index=True)
    assert ours["start"].tolist() == ref["start"].tolist()
    assert ours["end"].tolist() == ref["end"].tolist()
    assert ours["name"].astype(str).tolist() == ref["name"].tolist()


def test_incremental_timestamps_and_absolute_fallback(tmp_path, synth):
    """SDK 7 layout: most packets carry deltas on clock 64, out-of-order ones an absolute
    BOOTTIME timestamp; both must decode to the generated ns values."""
    path = write_pftrace(synth, tmp_path / "x.pftrace", layout="queue", sdk="7")
    events = [p for p in _packets(path) if p.HasField("track_event")]
    absolute = sum(p.HasField("timestamp_clock_id") for p in events)
    assert 0 < absolute < len(events)
    _, run = _load_one(path)
    assert sorted(run.kernels["start"]) == sorted(synth.kernels["start"])


def test_incremental_state_cleared_mid_stream(tmp_path, synth):
    path = write_pftrace(synth, tmp_path / "x.pftrace", layout="stream", sdk="7", clear_every=41)
    packets = _packets(path)
    assert sum(p.sequence_flags & 1 for p in packets) > 5
    # the same iid names different strings in different generations (so stale tables would show)
    seen: dict[int, set] = {}
    for p in packets:
        for item in p.interned_data.event_names:
            seen.setdefault(item.iid, set()).add(item.name)
    assert any(len(v) > 1 for v in seen.values())
    _, run = _load_one(path)
    got = _by_name(run.kernels)
    want = synth.expected.kernels.sort_index()
    assert got["calls"].tolist() == want["calls"].tolist()
    assert got["total_ns"].tolist() == want["total_ns"].tolist()
    assert len(run.api) == len(synth.api)


def test_small_chunks_give_identical_result(tmp_path, synth):
    path = write_pftrace(synth, tmp_path / "x.pftrace", clear_every=97)
    full, _ = pftrace.read_trace(path)
    small, problem = pftrace.read_trace(path, chunk_bytes=777)
    assert problem is None
    for table in ("kernels", "api", "copies", "series"):
        pd.testing.assert_frame_equal(getattr(full, table), getattr(small, table))


@pytest.mark.parametrize("fraction", [0.13, 0.5, 0.77, 0.999])
def test_truncated_file_keeps_complete_packets(tmp_path, synth, fraction):
    full = write_pftrace(synth, tmp_path / "full.pftrace")
    data = full.read_bytes()
    cut = tmp_path / "cut" / "4242_results.pftrace"
    cut.parent.mkdir()
    cut.write_bytes(data[: int(len(data) * fraction)])
    ref = _reference_kernels(cut)
    runset, run = _load_one(cut)
    assert run.partial
    assert len(runset.errors) == 1 and "truncated" in runset.errors[0].message
    assert "\n" not in runset.errors[0].message
    assert any("truncated" in w for w in run.warnings)
    ours = run.kernels.sort_values(["start", "name"], ignore_index=True)
    assert ours["start"].tolist() == ref["start"].tolist()
    assert ours["end"].tolist() == ref["end"].tolist()


def test_midpoint_fix_detected(tmp_path, synth):
    """Overlapping kernels on one queue: the writer applies rocprofv3's midpoint fix; the
    loader reads the adjusted times and warns that pftrace kernel times may be adjusted."""
    kernels = synth.kernels.copy()
    one = kernels.index[(kernels["agent"] == 1) & (kernels["queue"] == kernels["queue"].iloc[0])]
    shift = kernels.loc[one, "start"].to_numpy().copy()
    shift[1::3] -= 40_000_000  # pull every third kernel back so it overlaps its predecessor
    kernels.loc[one, "start"] = shift
    kernels.loc[one, "end"] = np.maximum(kernels.loc[one, "end"].to_numpy(), shift + 1)
    run_in = dataclasses.replace(synth, kernels=kernels)
    path = write_pftrace(run_in, tmp_path / "x.pftrace")
    _, run = _load_one(path)
    q = run.kernels[(run.kernels["agent"] == 1) & (run.kernels["queue"] == kernels["queue"].iloc[0])]
    src = kernels.loc[one].sort_values("start", kind="stable")
    want_start, want_end = midpoint_fix(src["start"].to_numpy(), src["end"].to_numpy())
    got = q.sort_values("start", kind="stable")
    assert sorted(got["start"]) == sorted(want_start.tolist())
    assert sorted(got["end"]) == sorted(want_end.tolist())
    touching = int((want_end[:-1] == want_start[1:]).sum())
    assert touching > 0
    assert run.meta.extra["pftrace_touching_kernel_pairs"] >= touching
    assert any("midpoint" in w for w in run.warnings)


def test_no_midpoint_warning_without_touching_kernels(tmp_path, synth):
    _, run = _load_one(write_pftrace(synth, tmp_path / "x.pftrace"))
    assert run.meta.extra["pftrace_touching_kernel_pairs"] == 0
    assert not any("midpoint" in w for w in run.warnings)


def test_gzip_and_sniff(tmp_path, synth):
    path = write_pftrace(synth, tmp_path / "x.pftrace")
    gz = tmp_path / "g" / "x.pftrace.gz"
    gz.parent.mkdir()
    gz.write_bytes(gzip.compress(path.read_bytes()))
    _, run = _load_one(gz)
    assert len(run.kernels) == synth.expected.dispatches
    head = path.read_bytes()[:65536]
    assert pftrace.sniff(path, head) is not None
    assert pftrace.sniff(path, b'"Kind","Agent_Id"\n') is None
    assert pftrace.sniff(path, b"\x0a\x05\xff\xff\xff\xff\xff") is None
    assert pftrace.sniff(path, b"SQLite format 3\x00") is None
    assert pftrace.sniff(path, b'\n"Kind","Agent_Id","Queue_Id"\n"KERNEL_DISPATCH",1,2\n') is None
    assert pftrace.sniff(path, b"\nPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPPP\n") is None


def test_bad_file_is_one_line_error_and_others_load(tmp_path, synth):
    good = write_pftrace(synth, tmp_path / "1_results.pftrace")
    bad = tmp_path / "2_results.pftrace"
    bad.write_bytes(good.read_bytes()[:200] + b"\xff" * 5000)  # garbage after a valid start
    runset = load_path(tmp_path)
    assert len(runset.runs) >= 1
    assert any(len(r.kernels) == synth.expected.dispatches for r in runset.runs)
    errors = [e for e in runset.errors if e.path.endswith("2_results.pftrace")]
    assert len(errors) == 1 and "\n" not in errors[0].message


def test_checked_in_sample(tmp_path):
    """tests/data/pftrace/synth_small.pftrace was written by write_pftrace from the spec in
    its PROVENANCE.md; its answers are recomputed from that spec."""
    run_in = build(SynthSpec(iterations=8, kernels_per_iteration=4, streams=2, gpus=1, seed=11))
    _, run = _load_one(DATA / "synth_small.pftrace")
    got = _by_name(run.kernels)
    want = run_in.expected.kernels.sort_index()
    assert got["total_ns"].tolist() == want["total_ns"].tolist()
    assert got["calls"].tolist() == want["calls"].tolist()


def _have(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.skipif(
    not all(_have(m) for m in ("tui_prof.synth.write_csv", "tui_prof.synth.write_rocpd", "tui_prof.loaders.rocprofv3_csv", "tui_prof.loaders.rocpd")),
    reason="CSV/rocpd synth writers or loaders not present yet",
)
def test_cross_format_same_kernels(tmp_path, synth):
    from tui_prof.synth import write_csv, write_rocpd

    out = {}
    pf = tmp_path / "pf"
    pf.mkdir()
    write_pftrace(synth, pf / "4242_results.pftrace")
    out["pftrace"] = pf
    csv_dir = tmp_path / "csv"
    csv_dir.mkdir()
    write_csv.write_rocprofv3_csv(synth, csv_dir)
    out["csv"] = csv_dir
    db_dir = tmp_path / "db"
    db_dir.mkdir()
    write_rocpd.write_rocpd(synth, db_dir)
    out["rocpd"] = db_dir
    tables = {}
    for fmt, directory in out.items():
        runset = load_path(directory)
        assert runset.errors == [], (fmt, runset.errors)
        kernels = pd.concat([r.kernels for r in runset.runs])
        tables[fmt] = _by_name(kernels)
    assert tables["pftrace"].equals(tables["csv"])
    assert tables["pftrace"].equals(tables["rocpd"])
    assert int(tables["pftrace"]["calls"].sum()) == synth.expected.dispatches


def test_pair_slices_nested_and_interleaved():
    """Stack discipline per track: nested begins close innermost first; tracks interleave;
    an end without begin and a begin without end are counted, not paired."""
    B, E = pftrace.TYPE_SLICE_BEGIN, pftrace.TYPE_SLICE_END
    #            0  1  2  3  4  5  6  7  8  9
    etype = np.array([E, B, B, B, E, E, B, E, B, B], dtype=np.int8)
    track = np.array([1, 1, 2, 1, 1, 2, 1, 1, 1, 2], dtype=np.uint64)
    ts = np.array([0, 10, 11, 20, 30, 31, 40, 50, 60, 61], dtype=np.int64)
    begins, ends, open_b, orphan_e = pftrace._pair_slices(etype, track, ts, np.arange(10))
    pairs = sorted(zip(begins.tolist(), ends.tolist()))
    # track 1: E0 orphan; B1 holds (B3 E4) and (B6 E7); B8 open. track 2: (B2 E5); B9 open
    assert pairs == [(2, 5), (3, 4), (6, 7)]
    assert open_b == 3 and orphan_e == 1


def _frame_packets(packets) -> bytes:
    out = bytearray()
    for pkt in packets:
        raw = pkt.SerializeToString()
        out += b"\x0a" + pftrace_varint(len(raw)) + raw
    return bytes(out)


def test_general_paths_inline_names_other_clock_and_domains(tmp_path):
    """Hand-built packets: inline (non-interned) names and categories, inline annotation
    names, double/bool values, a MONOTONIC timestamp converted through a ClockSnapshot,
    hsa/marker API categories, a double counter on a named counter track."""
    pkts = []
    p = TracePacket()
    p.trusted_packet_sequence_id = 3
    p.sequence_flags = 1
    clk = p.clock_snapshot.clocks.add()
    clk.clock_id, clk.timestamp = 6, 1_000_000
    clk = p.clock_snapshot.clocks.add()
    clk.clock_id, clk.timestamp = 3, 400_000  # MONOTONIC = BOOTTIME - 600_000
    pkts.append(p)
    p = TracePacket()  # (track_descriptor and clock_snapshot share TracePacket's "data" oneof)
    p.trusted_packet_sequence_id = 3
    p.track_descriptor.uuid = 11
    p.track_descriptor.process.pid = 77
    pkts.append(p)
    p = TracePacket()
    p.trusted_packet_sequence_id = 3
    p.track_descriptor.uuid = 12
    p.track_descriptor.parent_uuid = 11
    p.track_descriptor.thread.pid, p.track_descriptor.thread.tid = 77, 78
    pkts.append(p)
    p = TracePacket()
    p.trusted_packet_sequence_id = 3
    p.track_descriptor.uuid = 13
    p.track_descriptor.name = "Agent [2] PMC SQ_WAVES"
    p.track_descriptor.counter.unit_name = "waves"
    pkts.append(p)

    def event(ts, etype, cat=None, name=None, track=12, clock=None, args=(), dvalue=None):
        q = TracePacket()
        q.trusted_packet_sequence_id = 3
        q.timestamp = ts
        if clock:
            q.timestamp_clock_id = clock
        ev = q.track_event
        ev.type, ev.track_uuid = etype, track
        if cat:
            ev.categories.append(cat)
        if name:
            ev.name = name
        if dvalue is not None:
            ev.double_counter_value = dvalue
        for key, value in args:
            ann = ev.debug_annotations.add()
            ann.name = key
            if isinstance(value, bool):
                ann.bool_value = value
            elif isinstance(value, float):
                ann.double_value = value
            else:
                ann.int_value = value
        return q

    B, E, I, C = (TrackEvent.TYPE_SLICE_BEGIN, TrackEvent.TYPE_SLICE_END, TrackEvent.TYPE_INSTANT, TrackEvent.TYPE_COUNTER)
    pkts += [
        event(2_000_000, B, "hsa_api", "hsa_queue_create", args=[("corr_id", 5.0), ("flag", True)]),
        event(1_500_000, E, "hsa_api", clock=3),  # MONOTONIC 1.5 ms = BOOTTIME 2.1 ms
        event(2_200_000, B, "marker_api", "roctxRangePush", args=[("corr_id", 6)]),
        event(2_300_000, I, "marker_api", "instant"),
        event(2_400_000, E, "marker_api"),
        event(2_500_000, C, "counter_collection", track=13, dvalue=2.5),
    ]
    path = tmp_path / "h.pftrace"
    path.write_bytes(_frame_packets(pkts))
    _, run = _load_one(path)
    api = run.api.sort_values("start", ignore_index=True)
    assert api["domain"].astype(str).tolist() == ["hsa", "marker"]
    assert api["name"].astype(str).tolist() == ["hsa_queue_create", "roctxRangePush"]
    assert api["start"].tolist() == [2_000_000, 2_200_000]
    assert api["end"].tolist() == [2_100_000, 2_400_000]
    assert api["correlation_id"].tolist() == [5, 6]
    assert api["tid"].tolist() == [78, 78]  # from the thread track descriptor
    assert run.meta.pid == 77
    assert run.series["value"].tolist() == [2.5]
    assert run.series["unit"].astype(str).tolist() == ["waves"]
    assert run.series["agent"].tolist() == [2]
    assert len(run.kernels) == 0


def test_corrupt_state_packet_is_counted_not_fatal(tmp_path, synth):
    path = write_pftrace(synth, tmp_path / "x.pftrace")
    broken = TracePacket()
    broken.trusted_packet_sequence_id = 7
    raw = bytearray(broken.SerializeToString()) + b"\x62\x05\x0a\xff\xff\xff\xff"  # interned_data, bad inner length
    data = path.read_bytes() + b"\x0a" + pftrace_varint(len(raw)) + bytes(raw)
    path.write_bytes(data)
    runset, run = _load_one(path)
    assert len(run.kernels) == synth.expected.dispatches
    assert any("malformed" in w for w in run.warnings)


def _shaped_counter(monkeypatch) -> list:
    """Count the packets the layout fast path decodes (wraps _Shapes.match)."""
    counts = []
    real = pftrace._Shapes.match

    def match(self, data, buf, starts, ends):
        groups, rest = real(self, data, buf, starts, ends)
        counts.append(sum(rows.size for _, rows, _ in groups))
        return groups, rest

    monkeypatch.setattr(pftrace._Shapes, "match", match)
    return counts


@pytest.mark.parametrize("layout,sdk,clear_every,share", [("queue", "7", None, 0.9), ("stream", "0.5", None, 0.9), ("stream", "7", 41, 0.5)])
def test_layout_fast_path_equals_general_path(tmp_path, synth, monkeypatch, layout, sdk, clear_every, share):
    """The same file decoded with learnt packet layouts and with the field-by-field path
    (layout learning switched off) gives identical tables, and the fast path did the bulk
    (with a reset every 41 packets many packets carry interned data: general path)."""
    path = write_pftrace(synth, tmp_path / "x.pftrace", layout=layout, sdk=sdk, clear_every=clear_every)
    counts = _shaped_counter(monkeypatch)
    fast, _ = pftrace.read_trace(path)
    packets = len(_packets(path))
    assert sum(counts) > share * packets
    monkeypatch.setattr(pftrace, "MIN_SHAPE_GROUP", 10**9)
    counts.clear()
    slow, _ = pftrace.read_trace(path)
    assert sum(counts) == 0
    for table in ("kernels", "api", "copies", "series"):
        pd.testing.assert_frame_equal(getattr(fast, table), getattr(slow, table))
    assert fast.warnings == slow.warnings


def test_same_length_packets_with_different_layouts(tmp_path, monkeypatch):
    """Packets of one length whose fields sit at different offsets (varints of other sizes,
    annotations in another order) must not be read with each other's layout."""
    first = TracePacket()
    first.trusted_packet_sequence_id = 5
    first.sequence_flags = 1
    interned = first.interned_data
    for table, names in (("event_names", ["hipA"]), ("event_categories", ["hip_api"]), ("debug_annotation_names", ["corr_id", "tid"])):
        for iid, text in enumerate(names, start=1):
            item = getattr(interned, table).add()
            item.iid, item.name = iid, text
    pkts = [first]
    want = []
    for i in range(64):
        corr, tid = (100, 300) if i % 2 else (200, 5)  # 1+2 or 2+1 varint bytes: same packet length
        start = 1_000_000 + 1_000 * i
        for etype, ts in ((TrackEvent.TYPE_SLICE_BEGIN, start), (TrackEvent.TYPE_SLICE_END, start + 400)):
            q = TracePacket()
            q.trusted_packet_sequence_id = 5
            q.sequence_flags = 2
            q.timestamp = ts
            ev = q.track_event
            ev.type, ev.track_uuid = etype, 9
            ev.category_iids.append(1)
            if etype == TrackEvent.TYPE_SLICE_BEGIN:
                ev.name_iid = 1
                order = [(1, corr), (2, tid)] if i % 3 else [(2, tid), (1, corr)]
                for iid, value in order:
                    ann = ev.debug_annotations.add()
                    ann.name_iid, ann.uint_value = iid, value
            pkts.append(q)
        want.append((start, start + 400, corr, tid))
    begin_lengths = {p.ByteSize() for p in pkts[1::2]}
    assert len(begin_lengths) == 1  # one length group, several layouts
    path = tmp_path / "same.pftrace"
    path.write_bytes(_frame_packets(pkts))
    counts = _shaped_counter(monkeypatch)
    run, problem = pftrace.read_trace(path)
    assert problem is None and sum(counts) >= 100
    api = run.api.sort_values("start", ignore_index=True)
    assert list(zip(api["start"], api["end"], api["correlation_id"], api["tid"])) == want
    assert set(api["name"].astype(str)) == {"hipA"} and set(api["domain"].astype(str)) == {"hip"}


def test_non_utf8_strings_are_decoded_with_replacement(tmp_path, synth):
    """Interned kernel/API names, an annotation name and track/thread names that are not
    valid UTF-8 (bytes changed in place, same lengths) load as str with U+FFFD; every
    other value equals the clean file's (fuzz case pftrace/1365 crashed on such a track name)."""
    (tmp_path / "clean").mkdir()
    clean = write_pftrace(synth, tmp_path / "clean" / "x.pftrace")
    data = clean.read_bytes()
    swaps = {
        b"Cijk_Alik": b"Cijk_\xff\xfeik",
        b"hipMemcpy": b"hipMem\xffpy",
        b"operation": b"oper\xfftion",
        b"QUEUE [1] GPU": b"QUEUE [1] G\xffU",
        b"THREAD 1 (": b"THREAD\xff1 (",
    }
    for old, new in swaps.items():
        assert len(old) == len(new) and data.count(old) >= 1, old
        data = data.replace(old, new)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "x.pftrace").write_bytes(data)
    _, want = _load_one(clean)
    runset, got = _load_one(tmp_path / "bad" / "x.pftrace")
    assert not runset.issues, runset.issues

    def renamed(names: pd.Series) -> list:
        return [n.replace("Cijk_Alik", "Cijk_\ufffd\ufffdik").replace("hipMemcpy", "hipMem\ufffdpy") for n in names.astype(str)]

    assert renamed(want.kernels["name"]) == got.kernels["name"].astype(str).tolist()
    assert any("\ufffd" in n for n in got.kernels["name"].astype(str))
    assert renamed(want.api["name"]) == got.api["name"].astype(str).tolist()
    assert any("\ufffd" in n for n in got.api["name"].astype(str))
    for table in ("kernels", "api", "copies", "series"):
        a, b = getattr(want, table), getattr(got, table)
        cols = [c for c in a.columns if c != "name"]
        pd.testing.assert_frame_equal(a[cols], b[cols], check_categorical=False)
    assert pftrace._text(b"a\xffb") == "a\ufffdb" and pftrace._text("ok") == "ok"
