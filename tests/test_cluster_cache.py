"""The per-rank partial cache (issue 36): a worker writes its rank's partials to the cache as
JSON, and a later ``--cluster`` run reads them without loading a rank. The JSON form is
exact (a merge of decoded partials equals the merge of the originals), builds only the
partial's own dataclasses, and follows the cache's trust rules: a damaged entry is removed
and recomputed, an entry another user could have written is not used and not deleted."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tui_prof import cluster
from tui_prof.analysis.api import DEFAULT_CATEGORY_RULES, PARTIAL_CACHE_KIND, comparable, merge_partials, partials_doc, partials_of_doc, rank_partials
from tui_prof.analysis.partial_codec import PartialFormatError, decode, encode
from tui_prof.cli import main
from tui_prof.loaders import cache, load_path
from tui_prof.model import RunSet
from tui_prof.synth.ranks import RankSpec, write_ranks_streaming

DATA = Path(__file__).parent / "data"
pytestmark = pytest.mark.timeout(300)
SPEC = RankSpec(ranks=5, iterations=3, collectives=("AllReduce", "AllGather"), overlap_kernels=1, hosts=2, slow_rank=3)


def generated(root: Path, fmt: str = "kineto", spec: RankSpec = SPEC) -> Path:
    out = root / fmt
    write_ranks_streaming(spec, out, fmt)
    return out


def each_rank(runset: RunSet) -> list:
    out = []
    for run in runset.runs:
        out += rank_partials(RunSet(root=runset.root, runs=[run]))
    return out


def no_load(task: cluster.RankTask) -> cluster.RankResult:
    """A task that must not run: the ranks are to come from the cache."""
    raise AssertionError(f"{task.label} was loaded")


def entries(root: Path) -> list[Path]:
    return [p for p in root.iterdir() if cache.ENTRY_NAME.match(p.name)] if root.exists() else []


@pytest.mark.parametrize("source", ["kineto", "csv", "h200", "hta-ranks"])
def test_json_form_is_exact(tmp_path: Path, source: str) -> None:
    path = {"h200": DATA / "kineto" / "h200", "hta-ranks": DATA / "kineto" / "ranks"}.get(source) or generated(tmp_path, source)
    parts = each_rank(load_path(str(path), use_cache=False))
    assert parts
    text = json.dumps(partials_doc(parts, ["an error line"]))
    back, errors = partials_of_doc(json.loads(text))
    assert errors == ["an error line"] and len(back) == len(parts)
    assert json.dumps(comparable(merge_partials(back))) == json.dumps(comparable(merge_partials(parts)))


@pytest.mark.parametrize(
    "data",
    [
        {"__c__": "Popen", "v": {"args": ["sh"]}},  # a class that is not a partial's
        {"__c__": "GroupCounts", "v": {"values": [], "counts": [], "busy_ns": 0, "extra": 1}},  # other fields
        {"__a__": "<U10", "v": ["x"]},  # a dtype the partials do not use
        {"__a__": "int64", "v": ["1"]},  # a number array is written as bytes
        {"__a__": "int64", "b": "!!not base64"},
        {"__a__": "int64", "b": "AAAA"},  # 3 bytes: not a whole int64
        {"__a__": "bool", "b": "Ag=="},  # a bool of byte 2
        {"__f__": "1e9"},
        {"__d__": [[[1], 2]]},  # an unhashable key
        {"__df__": 1, "cols": [["x", "category", ["a"]]]},  # a column dtype the partials do not use
        {"__df__": 2, "cols": [["x", "str", ["a"]]]},  # a column shorter than the table
    ],
)
def test_decode_refuses_what_it_did_not_write(data: dict) -> None:
    with pytest.raises(PartialFormatError):
        decode(data)


def test_a_table_comes_back_with_its_dtypes() -> None:
    import numpy as np
    import pandas as pd

    frame = pd.DataFrame({"name": pd.array(["hipMemcpy", None], dtype="str"), "calls": np.array([3, 1]), "avg_ns": [1.5, float("nan")]})
    back = decode(json.loads(json.dumps(encode(frame))))
    pd.testing.assert_frame_equal(back, frame)


def test_a_warm_cache_merges_without_loading_a_rank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    run = generated(tmp_path)
    cold = cluster.summarise_pool(cluster.plan(str(run)).tasks, DEFAULT_CATEGORY_RULES, 2)
    assert len(entries(tmp_path / "cache")) >= 2 * SPEC.ranks  # each rank's unit and its partials
    seen: list[int] = []
    warm = cluster.summarise_pool(
        cluster.plan(str(run)).tasks, DEFAULT_CATEGORY_RULES, 2, lambda s, d, _t: seen.append(d) if s == "ranks" else None, task=no_load, paths=no_load
    )
    assert warm.failed == [] and seen == list(range(1, SPEC.ranks + 1))
    assert warm.paths is not None and not warm.paths.failed  # the second pass read back too: no rank loaded
    assert json.dumps(comparable(warm.document(20))) == json.dumps(comparable(cold.document(20)))
    assert warm.document(20)["critical_path"]["processes"]
    assert warm.document(20)["stragglers"]["rank"] == SPEC.slow_rank
    assert set(warm.files) == set(cold.files)  # Enter in the TUI can still load any rank alone


def test_cli_warm_cache_equals_the_in_process_summary(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    run = generated(tmp_path, "csv", RankSpec(ranks=3, slow_rank=1))
    assert main(["summary", str(run), "--json", "--no-cache"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert not entries(tmp_path / "cache")  # --no-cache writes no partials either
    for _ in range(2):  # cold, then from the cached partials
        assert main(["summary", str(run), "--json", "--cluster", "pool:2"]) == 0
        merged = json.loads(capsys.readouterr().out)
        assert json.dumps(comparable(merged)) == json.dumps(comparable(whole))


def test_a_changed_rank_file_is_reduced_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    run = generated(tmp_path)
    cluster.summarise_pool(cluster.plan(str(run)).tasks, DEFAULT_CATEGORY_RULES, 1)
    # rank 2 becomes another rank's content (rank 4's, on host 1): its key changes
    shutil.copyfile(run / "rank4.pt.trace.json.gz", run / "rank2.pt.trace.json.gz")
    hits, misses = cluster.cached_results(cluster.plan(str(run)).tasks)
    assert [t.label for t in misses] == ["rank2.pt.trace.json.gz"] and len(hits) == SPEC.ranks - 1


def _partial_entry(tmp_path: Path, run: Path) -> Path:
    task = next(t for t in cluster.plan(str(run)).tasks if t.label.startswith("rank1."))
    key = cluster.partial_key(task)
    assert key is not None
    return tmp_path / "cache" / key


def test_a_damaged_entry_is_removed_and_recomputed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    run = generated(tmp_path)
    cluster.summarise_pool(cluster.plan(str(run)).tasks, DEFAULT_CATEGORY_RULES, 1)
    entry = _partial_entry(tmp_path, run)
    manifest = entry / cache.MANIFEST
    data = bytearray(manifest.read_bytes())
    data[len(data) // 2] ^= 0x01  # a flipped bit: the manifest's CRC no longer matches
    os.unlink(manifest)
    manifest.write_bytes(bytes(data))
    os.chmod(manifest, 0o600)
    hits, misses = cluster.cached_results(cluster.plan(str(run)).tasks)
    assert [t.label for t in misses] == ["rank1.pt.trace.json.gz"] and len(hits) == SPEC.ranks - 1
    assert not entry.exists()  # removed, so the next run writes it anew
    cluster.summarise_pool(cluster.plan(str(run)).tasks, DEFAULT_CATEGORY_RULES, 1)
    assert entry.exists()


def test_a_forged_class_in_a_sound_entry_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry framed and checked correctly whose data names another class: nothing is
    built from it, and the entry is removed as damaged."""
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    run = generated(tmp_path)
    task = next(t for t in cluster.plan(str(run)).tasks if t.label.startswith("rank1."))
    key = cluster.partial_key(task)
    assert key is not None
    assert cache.save_doc(key, PARTIAL_CACHE_KIND, {"schema": "tuiprof.rankpartial/1", "partials": [{"__c__": "Popen", "v": {}}], "errors": []})
    hits, misses = cluster.cached_results([task])
    assert hits == [] and misses == [task]
    assert not (tmp_path / "cache" / key).exists()


def test_an_entry_others_can_write_is_not_used_nor_deleted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "_warned", set())
    run = generated(tmp_path)
    cluster.summarise_pool(cluster.plan(str(run)).tasks, DEFAULT_CATEGORY_RULES, 1)
    entry = _partial_entry(tmp_path, run)
    os.chmod(entry, 0o770)  # group-writable: someone else could have put it there
    hits, misses = cluster.cached_results(cluster.plan(str(run)).tasks)
    assert [t.label for t in misses] == ["rank1.pt.trace.json.gz"] and len(hits) == SPEC.ranks - 1
    assert entry.exists()
    assert "not using a cache entry" in capsys.readouterr().err


def test_a_warm_cache_starts_no_dask_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))
    run = generated(tmp_path)
    cold = cluster.summarise_pool(cluster.plan(str(run)).tasks, DEFAULT_CATEGORY_RULES, 2)

    def no_cluster(address: str) -> None:
        raise AssertionError(f"a cluster was started at {address}")

    monkeypatch.setattr(cluster, "_client", no_cluster)
    warm = cluster.summarise_cluster(cluster.plan(str(run)).tasks, DEFAULT_CATEGORY_RULES, "local:2", task=no_load, paths=no_load)
    assert warm.failed == [] and len(warm.merge.ranks) == SPEC.ranks
    assert json.dumps(comparable(warm.document(20))) == json.dumps(comparable(cold.document(20)))
