"""The merged-document cache of ``--cluster`` (issue 36): a warm ``summary --cluster`` or
``open --cluster`` reads the one merged document the first run cached -- no rank's partials
are looked up, decoded or merged -- and gives the same bytes; a change to any rank's file
(its ``-wal`` too), a log file or the options is a new key; a damaged entry is removed and
rebuilt; an entry another user could have written is not used nor deleted; a run with a
failed rank is not cached. The ranks run on a process pool here (no Dask needed)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tui_prof import cluster
from tui_prof.cli import _merged_document, main
from tui_prof.loaders import cache
from tui_prof.synth.ranks import RankSpec, write_ranks_streaming

pytestmark = pytest.mark.timeout(300)
SPEC = RankSpec(ranks=4, iterations=3, collectives=("AllReduce",), slow_rank=2)
WHERE = "pool:1"


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run"
    write_ranks_streaming(SPEC, out, "kineto")
    return out


def merged_entries(root: Path) -> dict[str, dict]:
    """The cache's merged-document entries: key -> manifest body."""
    found = {}
    for entry in root.iterdir():
        manifest = entry / cache.MANIFEST
        if cache.ENTRY_NAME.match(entry.name) and manifest.exists():
            body = json.loads(manifest.read_bytes())["body"]
            if body.get("kind") == cluster.MERGED_CACHE_KIND:
                found[entry.name] = body
    return found


def summary(capsys, run: Path, *extra: str) -> str:
    assert main(["summary", str(run), "--cluster", WHERE, *extra]) == 0
    return capsys.readouterr().out


class Merges:
    """Counts the rank-by-rank merges: the pool run and the per-rank cache lookups."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pool = 0
        self.lookups = 0
        pool, lookups = cluster.summarise_pool, cluster.cached_results

        def counted_pool(*args, **kwargs):
            self.pool += 1
            return pool(*args, **kwargs)

        def counted_lookups(tasks):
            self.lookups += len(tasks)
            return lookups(tasks)

        monkeypatch.setattr(cluster, "summarise_pool", counted_pool)
        monkeypatch.setattr(cluster, "cached_results", counted_lookups)


def forbid_merging(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any rank-by-rank work fails the test: a warm run must read the merged document."""

    def refused(*_args, **_kwargs):
        raise AssertionError("a rank's partials were looked up, decoded or merged")

    for name in ("summarise_pool", "summarise_cluster", "cached_results", "rank_task", "partials_of_doc"):
        monkeypatch.setattr(cluster, name, refused)
    monkeypatch.setattr(cluster.MergedRun, "document", refused)


def test_a_warm_summary_reads_the_merged_document(run: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    cold_json = summary(capsys, run, "--json")
    cold_text = summary(capsys, run)  # the same --top: the entry the JSON run cached
    entries = merged_entries(tmp_path / "cache")
    assert len(entries) == 1
    body = next(iter(entries.values()))
    files = body["doc"]["files"]  # each rank's own files: Enter in the TUI loads it alone
    assert files == {f"rank{i}": [str(run), [str(run / f"rank{i}.pt.trace.json.gz")]] for i in range(SPEC.ranks)}
    forbid_merging(monkeypatch)
    assert summary(capsys, run, "--json") == cold_json  # byte for byte
    assert summary(capsys, run) == cold_text
    assert json.loads(cold_json)["stragglers"]["rank"] == SPEC.slow_rank
    assert json.loads(cold_json)["partials"]["merged"] == SPEC.ranks


def test_open_and_summary_share_the_document(run: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """``open --cluster`` (no step options: the defaults) caches the document a default ``summary --cluster`` reads."""
    found, _status = _merged_document(str(run), WHERE, None, 20, use_cache=True, sections=cluster.HEAD_SECTIONS)
    assert found is not None
    forbid_merging(monkeypatch)
    doc = json.loads(summary(capsys, run, "--json"))
    assert doc["ranks"] == found[0]["ranks"] and "steps" in doc
    assert len(merged_entries(tmp_path / "cache")) == 1


def test_other_options_are_another_entry(run: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    top20 = summary(capsys, run, "--json")
    top1 = summary(capsys, run, "--json", "--top", "1")
    threshold = summary(capsys, run, "--json", "--gap-threshold", "1us")
    assert len(merged_entries(tmp_path / "cache")) == 3
    assert len(json.loads(top20)["hotspots"]) > 1 and len(json.loads(top1)["hotspots"]) == 1
    forbid_merging(monkeypatch)
    assert summary(capsys, run, "--json", "--top", "1") == top1
    assert summary(capsys, run, "--json", "--gap-threshold", "1us") == threshold
    assert summary(capsys, run, "--json") == top20


def _touch(path: Path) -> None:
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))


def test_a_rank_files_wal_is_in_the_key(run: Path) -> None:
    before = cluster.document_key(cluster.plan(str(run)), 20)
    wal = Path(f"{run / 'rank2.pt.trace.json.gz'}-wal")
    wal.write_bytes(b"")  # a database's write-ahead log holds rows too (rocpd reads it)
    with_wal = cluster.document_key(cluster.plan(str(run)), 20)
    wal.write_bytes(b"more rows")
    grown = cluster.document_key(cluster.plan(str(run)), 20)
    assert None not in (before, with_wal, grown) and len({before, with_wal, grown}) == 3


def test_a_new_file_the_scan_skips_is_a_new_document(run: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    cold = json.loads(summary(capsys, run, "--json"))
    (run / "notes.md").write_text("not a profiler's file")
    merges = Merges(monkeypatch)
    warm = json.loads(summary(capsys, run, "--json"))
    assert merges.pool == 1
    assert [f["path"] for f in warm["source"]["skipped"]] == [str(run / "notes.md")] and cold["source"]["skipped"] == []


@pytest.mark.parametrize("change", ["rank file", "log file"])
def test_a_change_is_a_new_document(run: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    cold = json.loads(summary(capsys, run, "--json"))
    assert cold["logs"] == []
    rank2 = run / "rank2.pt.trace.json.gz"
    if change == "rank file":
        _touch(rank2)  # same bytes, new time: the rank's key changes
    else:
        (run / "rocprof.log").write_text("start\nE: aqlprofile API table load failed\n")
    merges = Merges(monkeypatch)
    warm = json.loads(summary(capsys, run, "--json"))
    assert merges.pool == 1 and merges.lookups == 2 * SPEC.ranks  # merged again, from the ranks' partials and path partials
    assert len(merged_entries(tmp_path / "cache")) == 2
    if change == "log file":
        assert [hit["code"] for hit in warm["logs"]] == ["aqlprofile-load"]
        assert [f["path"] for f in warm["source"]["skipped"]] == [str(run / "rocprof.log")]  # not a profiler's file
        # the findings read the logs too: the profiler error found there is one more
        assert len(warm["findings"]) == len(cold["findings"]) + 1
        for doc in (warm, cold):
            doc.pop("logs"), doc.pop("source"), doc.pop("trust"), doc.pop("findings")
    assert warm == cold  # the same ranks' content: the same summary
    merges.pool = 0
    assert json.loads(summary(capsys, run, "--json"))["partials"]["merged"] == SPEC.ranks
    assert merges.pool == 0  # and now that document is cached


def test_the_whole_document_needs_its_rest(run: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """A head whose rest was pruned: the head alone still serves the rank table, a summary
    is merged again (and its rest written anew)."""
    cold = summary(capsys, run, "--json")
    key = _entry(tmp_path).name
    rest = tmp_path / "cache" / cluster._rest_key(key)
    assert rest.exists() and "steps" in json.loads((rest / cache.MANIFEST).read_bytes())["body"]["doc"]["doc"]
    cache._remove_entry(tmp_path / "cache", rest.name)
    head = cluster.cached_document(key, cluster.HEAD_SECTIONS)
    assert head is not None and head[0]["ranks"] == json.loads(cold)["ranks"]
    assert cluster.cached_document(key) is None
    merges = Merges(monkeypatch)
    assert summary(capsys, run, "--json") == cold
    assert merges.pool == 1 and rest.exists()


def _entry(tmp_path: Path) -> Path:
    (key,) = merged_entries(tmp_path / "cache")
    return tmp_path / "cache" / key


def test_a_damaged_entry_is_removed_and_rebuilt(run: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    cold = summary(capsys, run, "--json")
    manifest = _entry(tmp_path) / cache.MANIFEST
    data = bytearray(manifest.read_bytes())
    data[len(data) // 2] ^= 0x01  # a flipped bit: the manifest's CRC no longer matches
    os.unlink(manifest)
    manifest.write_bytes(bytes(data))
    os.chmod(manifest, 0o600)
    merges = Merges(monkeypatch)
    assert summary(capsys, run, "--json") == cold
    assert merges.pool == 1
    assert cluster.cached_document(_entry(tmp_path).name) is not None  # written anew, sound


def test_a_sound_entry_with_other_data_is_refused(run: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """Framed and checked correctly, but not a merged document: removed as damaged."""
    cold = summary(capsys, run, "--json")
    key = _entry(tmp_path).name
    cache._remove_entry(tmp_path / "cache", key)
    assert cache.save_doc(key, cluster.MERGED_CACHE_KIND, {"doc": json.loads(cold), "files": {"rank0": ["/", [1]]}})
    merges = Merges(monkeypatch)
    assert summary(capsys, run, "--json") == cold
    assert merges.pool == 1


def test_an_entry_others_can_write_is_not_used_nor_deleted(run: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "_warned", set())
    cold = summary(capsys, run, "--json")
    entry = _entry(tmp_path)
    os.chmod(entry, 0o770)  # group-writable: someone else could have put it there
    merges = Merges(monkeypatch)
    assert main(["summary", str(run), "--cluster", WHERE, "--json"]) == 0
    out, err = capsys.readouterr()
    assert out == cold and "not using a cache entry" in err
    assert merges.pool == 1 and entry.exists()


def test_a_run_with_a_failed_rank_is_not_cached(run: Path, tmp_path: Path, capsys) -> None:
    broken = run / "rank3.pt.trace.json.gz"
    broken.write_bytes(broken.read_bytes()[: broken.stat().st_size // 2])  # its head is sound: the scan takes it, its load fails
    for _ in range(2):  # the broken rank is named each time: never served from a cache
        assert main(["summary", str(run), "--cluster", WHERE, "--json"]) == 0
        out, err = capsys.readouterr()
        assert "rank3.pt.trace.json.gz" in err
        assert json.loads(out)["partials"]["merged"] == SPEC.ranks - 1
    assert merged_entries(tmp_path / "cache") == {}


def test_a_file_the_scan_refuses_is_said_from_a_cached_document(run: Path, tmp_path: Path, capsys) -> None:
    """A file no loader recognises is the scan's error (in the key): said on every run."""
    (run / "rank3.pt.trace.json.gz").write_bytes(b"\x1f\x8b not gzip")
    outs = []
    for _ in range(2):
        assert main(["summary", str(run), "--cluster", WHERE, "--json"]) == 0
        out, err = capsys.readouterr()
        assert "rank3.pt.trace.json.gz" in err
        outs.append(out)
    assert outs[0] == outs[1] and json.loads(outs[0])["partials"]["merged"] == SPEC.ranks - 1
    assert len(merged_entries(tmp_path / "cache")) == 1


def test_no_cache_reads_and_writes_no_document(run: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    summary(capsys, run, "--json", "--no-cache")
    assert not (tmp_path / "cache").exists() or merged_entries(tmp_path / "cache") == {}


def test_a_cached_document_opens_the_rank_table(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``open --cluster`` warm: the app gets the cached document and rank files, and Enter
    still loads the chosen rank alone."""
    import asyncio

    from tui_harness import idle, until

    from tui_prof.tui.cluster_app import MergedRanksApp, MergedRanksScreen
    from tui_prof.tui.panes.ranks import RanksTable, ranks_frame, ranks_header
    from tui_prof.tui.screens.main import RankScreen

    # the rank table reads the head of the entry alone (the rest: each rank's steps, ...)
    assert set(MergedRanksScreen.SECTIONS) <= set(cluster.HEAD_SECTIONS + cluster.ALWAYS_SECTIONS)
    cold, status = _merged_document(str(run), WHERE, None, 20, use_cache=True, sections=cluster.HEAD_SECTIONS)
    assert cold is not None and status is None
    forbid_merging(monkeypatch)
    found, status = _merged_document(str(run), WHERE, None, 20, use_cache=True, sections=cluster.HEAD_SECTIONS)
    assert found is not None and status is None
    assert list(found[0]) == [name for name in cold[0] if name in MergedRanksScreen.SECTIONS + ("schema", "tuiprof_version")]
    assert json.dumps(found[0]) == json.dumps({name: cold[0][name] for name in found[0]}) and found[1] == cold[1]
    assert ranks_header(found[0]).plain == ranks_header(cold[0]).plain
    assert ranks_frame(found[0], list(found[1])).equals(ranks_frame(cold[0], list(cold[1])))
    app = MergedRanksApp(*found, use_cache=True)

    async def flow() -> None:
        async with app.run_test(size=(160, 50)) as pilot:
            await idle(app, pilot)
            table = app.screen.query_one("#merged-ranks", RanksTable)
            assert sorted(table.model.frame["rank"].tolist()) == list(range(SPEC.ranks))
            table.sort_by("rank", False)
            table.cursor = 1
            await pilot.press("enter")
            await until(app, pilot, lambda: isinstance(app.screen, RankScreen) and app.screen.complete)
            assert app.screen.rank == 1
            assert app.screen.view.runset.runs[0].meta.files == [str(run / "rank1.pt.trace.json.gz")]

    asyncio.run(flow())


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, 2.5, (3, "x")], 4: None, "t": True},
        {"name": "k\u202e\x1b[31m\u2028", "n": -0.0, "big": 2**70},
        [float("nan"), 1.0, {"x": float("inf")}],
        {"np": [__import__("numpy").float64(1.5), __import__("numpy").int64(7), __import__("numpy").float32("nan")]},
    ],
)
def test_json_out_without_a_walk_writes_what_the_walk_writes(value) -> None:
    """jsonout.dumps skips the Python walk over a value JSON writes as it is: the same text
    and the same count of non-finite numbers either way."""
    from tui_prof.guard import jsonout

    seen, walked_seen = jsonout.NonFinite(), jsonout.NonFinite()
    walked = jsonout.escape_controls(json.dumps(jsonout.finite(value, walked_seen), allow_nan=False, indent=2))
    assert jsonout.dumps(value, seen=seen, indent=2) == walked
    assert seen.count == walked_seen.count


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, 2.5, (3, "x")], 4: None, "t": True, "deep": [[{"k": [i, str(i)]} for i in range(50)]]},
        {"name": "k\u202e\x1b[31m\u2028\udcff", "n": -0.0, "big": 2**70, "e": {}, "l": []},
        [float("nan"), 1.0, {"x": float("inf")}],
        {"np": [__import__("numpy").float64(1.5), __import__("numpy").int64(7), __import__("numpy").float32("nan")]},
    ],
)
def test_json_written_piece_by_piece_is_the_same_text(value, monkeypatch: pytest.MonkeyPatch) -> None:
    """jsonout.dump (what --json writes through) streams the text jsonout.dumps returns, with the same count of non-finite numbers."""
    import io

    from tui_prof.guard import jsonout

    monkeypatch.setattr(jsonout, "STREAM_PIECES", 3)  # many writes: pieces joined across their boundaries
    for indent in (None, 2):
        seen, streamed_seen, out = jsonout.NonFinite(), jsonout.NonFinite(), io.StringIO()
        jsonout.dump(value, out, seen=streamed_seen, indent=indent)
        assert out.getvalue() == jsonout.dumps(value, seen=seen, indent=indent)
        assert streamed_seen.count == seen.count
        assert not jsonout.UNSAFE.search(out.getvalue())


def test_json_that_cannot_be_written_writes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value JSON cannot write (a numpy bool, which the non-finite walk leaves as it is)
    raises before the first write: never half a document on stdout."""
    import io

    import numpy as np

    from tui_prof.guard import jsonout

    monkeypatch.setattr(jsonout, "STREAM_PIECES", 4)
    for value in ({"a": list(range(20)), "b": np.bool_(True)}, {"a": list(range(20)), "b": float("nan"), "c": np.bool_(False)}):
        out = io.StringIO()
        with pytest.raises(TypeError):
            jsonout.dump(value, out, indent=2)
        assert out.getvalue() == ""
    out = io.StringIO()  # a custom default writes it, as dumps does
    jsonout.dump({"a": list(range(20)), "b": np.bool_(True)}, out, indent=2, default=bool)
    assert out.getvalue() == jsonout.dumps({"a": list(range(20)), "b": np.bool_(True)}, indent=2, default=bool)


def test_a_document_with_a_number_that_is_not_finite_is_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    assert not cache.save_doc("2" * 40, "k", {"v": float("nan")}, finite_only=True)
    assert cache.save_doc("3" * 40, "k", {"v": float("nan")})  # written null: for data whose nulls mean the same
    assert cache.load_doc("3" * 40, "k", lambda d: d) == {"v": None} and cache.load_doc("2" * 40, "k", lambda d: d) is None


def test_open_with_an_unreachable_scheduler_is_one_line(run: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """``open --cluster tcp://...`` on a cold cache: the scheduler is needed, and one line says it is not there."""
    pytest.importorskip("distributed")
    import socket

    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 2)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["open", str(run), "--cluster", f"tcp://127.0.0.1:{port}"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}" in err


def test_a_run_of_several_recordings_is_not_cached(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver picks one of several recordings and says so: that is said on every run (never
    served from a cached document), and ``--recording N`` reads and writes none either."""
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    run = str(Path(__file__).parent / "data" / "rocprofv3_csv" / "rocprofv3-docs-rocm7")
    for extra in ([], [], ["--recording", "2"], ["--recording", "2"]):
        assert main(["summary", run, "--json", "--cluster", WHERE, *extra]) == 0
        out, err = capsys.readouterr()
        assert "separate recordings" in err and json.loads(out)["partials"]["merged"] >= 1
    assert merged_entries(tmp_path / "cache") == {}
