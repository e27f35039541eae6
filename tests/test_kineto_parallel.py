"""Parallel reading of big plain Kineto files (kineto.read_events_parallel): the result must
equal the serial read's exactly, and damaged files must give the serial read's error.

The parallel path is forced on small files by lowering the size thresholds; the workers
are real subprocesses (kineto.start_worker), each an interpreter start and its imports, so
no check reads a file in parallel twice: the reads of one load are watched (``reads``),
which shows whether its parallel read succeeded (no silent serial fallback) or raised,
and the same load gives the run compared with the serial read's."""

import gzip
import json

import pandas as pd
import pytest

from tui_prof.loaders import kineto
from tui_prof.loaders.base import DetectedFile, IssueSink

DATA = kineto.Path(__file__).parent / "data" / "kineto"
SAMPLES = [
    "mi300__resnet_act_checkpoint.json.gz",  # 56k events, ROCm, flows, memcpy/memset
    "h100__gaunernst_bert-small-uncased__1016001.json.gz",  # CUDA, cuda_sync, allocations
    "trace_filter__sampled_rank-0.json.gz",
]
TABLES = ("kernels", "api", "copies", "markers", "allocations")


@pytest.fixture
def forced(monkeypatch):
    """Every plain file is split into up to 3 pieces of at least 4 kB."""
    monkeypatch.setattr(kineto, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(kineto, "PIECE_MIN_BYTES", 4096)
    monkeypatch.setenv("TUIPROF_LOAD_WORKERS", "3")
    merged = []  # events decoded by each worker whose piece was merged
    real = kineto.worker_result

    def spy(proc):
        part = real(proc)
        merged.append(part.count)
        return part

    monkeypatch.setattr(kineto, "worker_result", spy)
    return merged


@pytest.fixture
def reads(monkeypatch):
    """(pieces, Events or the exception raised) of each kineto.read_trace_with call."""
    seen: list[tuple] = []
    real = kineto.read_trace_with

    def spy(path, pieces):
        try:
            ev = real(path, pieces)
        except Exception as err:
            seen.append((pieces, err))
            raise
        seen.append((pieces, ev))
        return ev

    monkeypatch.setattr(kineto, "read_trace_with", spy)
    return seen


def parallel_events(reads, pieces: int = 3):
    """The Events of the one read a load made: in ``pieces`` pieces, no serial fallback."""
    assert [p for p, _ in reads] == [pieces], reads
    assert isinstance(reads[0][1], kineto.Events), reads[0][1]  # not an exception
    return reads[0][1]


def serial(monkeypatch, path):
    with monkeypatch.context() as m:
        m.setenv("TUIPROF_LOAD_WORKERS", "1")
        assert kineto.parallel_pieces(path) == 1
        return kineto.load_file(path)


def assert_same_run(a, b):
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)
        for column in getattr(a, name).columns:
            if isinstance(getattr(a, name)[column].dtype, pd.CategoricalDtype):
                assert list(getattr(a, name)[column].cat.categories) == list(getattr(b, name)[column].cat.categories)
    assert a.meta == b.meta and a.agents == b.agents and a.warnings == b.warnings


def plain(tmp_path, name, text=None):
    path = tmp_path / name.removesuffix(".gz")
    path.write_bytes(text.encode() if text is not None else gzip.decompress((DATA / name).read_bytes()))
    return path


@pytest.mark.parametrize("name", SAMPLES)
def test_parallel_read_equals_serial_read(tmp_path, monkeypatch, forced, reads, name):
    path = plain(tmp_path, name)
    expected = serial(monkeypatch, path)
    assert kineto.parallel_pieces(path) == 3
    reads.clear()
    got = kineto.load_file(path)
    ev = parallel_events(reads)  # read_trace_with raises if any piece failed
    assert len(forced) == 2 and all(forced)
    assert ev.count == len(json.loads(path.read_text())["traceEvents"]) > sum(forced)
    assert_same_run(got, expected)


def test_parallel_read_of_gzip_equals_serial_read(tmp_path, monkeypatch, forced, reads):
    """gzip: the workers inflate from the start and skip to their piece."""
    path = DATA / SAMPLES[0]
    expected = serial(monkeypatch, path)
    assert kineto.parallel_pieces(path) == 3
    reads.clear()
    got = kineto.load_file(path)
    parallel_events(reads)
    assert len(forced) == 2 and all(forced)
    assert_same_run(got, expected)


def test_parallel_read_of_generated_trace_with_wrong_types(tmp_path, monkeypatch, forced, reads):
    """Malformed events, rolled-back rows and their names in every piece: same warnings,
    counts and string codes as the serial read."""
    data = json.loads(gzip.decompress((DATA / SAMPLES[0]).read_bytes()))
    events = data["traceEvents"]
    for i in range(100, len(events), 997):
        if events[i].get("cat") == "kernel":
            events[i] = dict(events[i], name=f"rolled back {i}", args={"device": [1], "grid": [1, 2]})
        elif events[i].get("ph") == "X":
            events[i] = dict(events[i], ts="not a number", name=f"bad ts {i}")
    path = plain(tmp_path, "wrong.json", json.dumps(data, indent=1))
    expected = serial(monkeypatch, path)
    assert "malformed" in " ".join(expected.warnings)
    reads.clear()
    got = kineto.load_file(path)
    parallel_events(reads)
    assert_same_run(got, expected)


def test_false_boundary_falls_back_to_the_serial_read(tmp_path, monkeypatch, forced):
    """A split guessed inside a string (an event name that looks like "}, {event") is caught
    by the previous piece not ending there; the file is then read serially."""
    data = json.loads(gzip.decompress((DATA / SAMPLES[1]).read_bytes()))
    fake = '{"ph": "X", "cat": "kernel", "ts": 1, "dur": 1}'
    events = data["traceEvents"]
    middle = len(events) // 2
    events[middle] = dict(events[middle], name="x}, " + fake + ", {y")
    path = plain(tmp_path, "false.json", json.dumps(data))
    expected = serial(monkeypatch, path)
    inside = path.read_bytes().index(b'{\\"ph\\": \\"X\\", \\"cat\\": \\"kernel\\"')
    monkeypatch.setattr(kineto, "find_boundary", lambda data, at, limit: inside)
    with pytest.raises(Exception):
        kineto.read_trace_with(path, 2)
    assert_same_run(kineto.load_file(path), expected)


def damaged(tmp_path, monkeypatch, reads, text, name):
    """The one-line errors of a serial and a parallel load of ``text`` (whose parallel read
    itself fails, so the error comes from the serial read it falls back to)."""
    path = plain(tmp_path, name, text)
    messages = load_errors(path, monkeypatch, reads)
    # the 3-worker load: its parallel read raised, then the serial read it fell back to
    assert [p for p, _ in reads] == [3, 1] and all(isinstance(r, Exception) for _, r in reads), reads
    assert "\n" not in messages[0]
    return messages


def load_errors(path, monkeypatch, reads) -> list[str]:
    """The one-line error of loading ``path`` serially and with 3 workers (``reads``: the
    reads of the last load)."""
    messages = []
    for workers in ("1", "3"):
        monkeypatch.setenv("TUIPROF_LOAD_WORKERS", workers)
        sink = IssueSink()
        reads.clear()
        assert kineto.load([DetectedFile(path, kineto.FORMAT, "trace", str(path))], sink) == []
        messages.append(sink.issues[0].message)
    return messages


@pytest.mark.parametrize("where", [0.3, 0.6, 0.95])
def test_truncated_big_file_gives_the_serial_error(tmp_path, monkeypatch, forced, reads, where):
    text = gzip.decompress((DATA / SAMPLES[0]).read_bytes()).decode()
    serial_msg, parallel_msg = damaged(tmp_path, monkeypatch, reads, text[: int(len(text) * where)], "cut.json")
    assert serial_msg == parallel_msg and "truncated or damaged" in serial_msg


def test_damaged_middle_of_big_file_gives_the_serial_error(tmp_path, monkeypatch, forced, reads):
    text = gzip.decompress((DATA / SAMPLES[0]).read_bytes()).decode()
    cut = text.index('"cat": "kernel"', len(text) // 3)  # in the first worker's piece
    bad = text[:cut] + '"cat": kernel"' + text[cut + 15 :]
    serial_msg, parallel_msg = damaged(tmp_path, monkeypatch, reads, bad, "bad.json")
    assert serial_msg == parallel_msg and "Expecting value at line" in serial_msg


def test_small_files_are_read_serially(tmp_path, monkeypatch):
    monkeypatch.setenv("TUIPROF_LOAD_WORKERS", "4")
    text = plain(tmp_path, SAMPLES[0])
    assert kineto.text_size(DATA / SAMPLES[0]) == text.stat().st_size  # gzip trailer
    for path in (DATA / SAMPLES[0], text):
        assert kineto.parallel_pieces(path) == 1  # 17 MB < PARALLEL_MIN_BYTES
        monkeypatch.setattr(kineto, "PARALLEL_MIN_BYTES", 1)
        assert kineto.parallel_pieces(path) == 1  # one PIECE_MIN_BYTES piece
        monkeypatch.setattr(kineto, "PIECE_MIN_BYTES", 4 << 20)
        assert kineto.parallel_pieces(path) == 4
        monkeypatch.undo()
        monkeypatch.setenv("TUIPROF_LOAD_WORKERS", "4")


def test_truncated_gzip_gives_the_serial_error(tmp_path, monkeypatch, forced, reads):
    """A cut gzip has no trailer: its recorded size is garbage, used only for split points."""
    packed = (DATA / SAMPLES[0]).read_bytes()
    path = tmp_path / "cut.json.gz"
    path.write_bytes(packed[: len(packed) * 2 // 3])
    messages = load_errors(path, monkeypatch, reads)
    assert messages[0] == messages[1] and "gzip" in messages[0] and "\n" not in messages[0]


@pytest.mark.parametrize("found", [[True, False], [False, True], [False, False]])
def test_split_points_not_found_give_fewer_pieces(tmp_path, monkeypatch, forced, reads, found):
    """Workers without a piece are stopped; with no split point the array is read here."""
    path = plain(tmp_path, SAMPLES[1])
    expected = serial(monkeypatch, path)
    real, calls = kineto.find_boundary, []

    def some(data, at, limit):
        calls.append(at)
        return real(data, at, limit) if found[len(calls) - 1] else None

    monkeypatch.setattr(kineto, "find_boundary", some)
    monkeypatch.setenv("TUIPROF_LOAD_WORKERS", "3")
    reads.clear()
    got = kineto.load_file(path)
    parallel_events(reads)
    assert len(forced) == sum(found)
    assert_same_run(got, expected)
