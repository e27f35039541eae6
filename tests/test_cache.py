"""The columnar cache: a saved run set comes back identical; any file change misses."""

import json
import os

import pandas as pd
import pytest

from tui_prof.loaders import cache
from tui_prof.model import Agent, LoadIssue, Run, RunMeta, RunSet, make_table
from tui_prof.model.schema import TABLES


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(tmp_path / "cache"))


def sample_runset() -> RunSet:
    run = Run(
        meta=RunMeta(formats=["rocprofv3-csv"], tool="rocprofv3", hostname="h", pid=7, label="h/7", files=["a.csv"]),
        agents=[Agent(id=4, name="gfx942", cu_count=304, extra={"x": 1})],
        kernels=make_table("kernels", {"start": [1, 5], "end": [3, 9], "name": ["k1", "k2"], "agent": [4, 4]}),
        api=make_table("api", {"start": [0], "end": [1], "name": ["hipLaunchKernel"], "domain": ["hip"]}),
        warnings=["w"],
        partial=True,
    )
    run.tool_stats["kernel_stats"] = pd.DataFrame({"name": ["k1"], "calls": [1], "total_ns": [2]})
    return RunSet(root="/r", runs=[run], issues=[LoadIssue("/r/x", "bad", "error")])


def test_roundtrip_keeps_tables_dtypes_and_metadata():
    original = sample_runset()
    assert cache.save(original, "c" * 40) is not None
    loaded = cache.load("c" * 40)
    assert loaded is not None
    got, want = loaded.runs[0], original.runs[0]
    for name in TABLES:
        pd.testing.assert_frame_equal(got.table(name), want.table(name))
    assert got.meta == want.meta
    assert got.agents == want.agents
    assert got.warnings == ["w"] and got.partial
    pd.testing.assert_frame_equal(got.tool_stats["kernel_stats"], want.tool_stats["kernel_stats"])
    assert loaded.issues == original.issues


def test_unit_key_changes_when_a_file_changes(tmp_path):
    from tui_prof.loaders.base import DetectedFile

    f = tmp_path / "1_kernel_trace.csv"
    f.write_text("abc\n")
    unit = [DetectedFile(f, "rocprofv3-csv", "kernel_trace", f"{tmp_path}/1")]
    key1 = cache.unit_key("rocprofv3-csv", unit)
    assert cache.unit_key("rocprofv3-csv", unit) == key1
    stat = f.stat()
    f.write_text("abd\n")  # same size, mtime put back: ctime and the edge hash still differ
    os.utime(f, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    key2 = cache.unit_key("rocprofv3-csv", unit)
    assert key2 != key1
    assert cache.unit_key("rocprofv3-csv", unit) == key2
    assert cache.unit_key("rocpd", unit) != key2  # the format is part of the key
    f.unlink()
    assert cache.unit_key("rocprofv3-csv", unit) is None


def test_unit_and_document_keys_change_when_a_database_log_changes(tmp_path):
    """A rocpd database's rows may sit in its -wal only: a unit's key and a document's key
    derived from the database (a rank's cached partials) both follow the log."""
    from tui_prof.loaders.base import DetectedFile

    db = tmp_path / "rank0_results.db"
    db.write_bytes(b"SQLite format 3\0" + b"\0" * 100)
    unit = [DetectedFile(db, "rocpd", "db", str(db))]
    before = (cache.unit_key("rocpd", unit), cache.doc_key("rank-partials", "s", [str(db)]))
    wal = tmp_path / "rank0_results.db-wal"
    wal.write_bytes(b"\0" * 64)
    after = (cache.unit_key("rocpd", unit), cache.doc_key("rank-partials", "s", [str(db)]))
    assert None not in before and None not in after
    assert after[0] != before[0] and after[1] != before[1]
    wal.write_bytes(b"\0" * 128)  # the log grew: new rows
    assert cache.doc_key("rank-partials", "s", [str(db)]) != after[1]


def test_empty_tables_keep_their_exact_schema():
    original = sample_runset()
    run = original.runs[0]
    run.markers = run.markers.astype({"source": pd.CategoricalDtype(["roctx"])})  # empty, one category
    assert cache.save(original, "e" * 40) is not None
    loaded = cache.load("e" * 40).runs[0]
    for name in TABLES:
        pd.testing.assert_frame_equal(loaded.table(name), run.table(name))


def test_old_format_entry_is_a_miss():
    cache.save(sample_runset(), "2" * 40)
    manifest = cache.cache_root() / ("2" * 40) / "manifest.json"
    data = manifest.read_bytes()
    current = b'{"format":%d,' % cache.CACHE_FORMAT
    assert data.startswith(current)
    manifest.unlink()  # files are replaced, never rewritten in place
    manifest.write_bytes(data.replace(current, b'{"format":%d,' % (cache.CACHE_FORMAT - 1), 1))
    json.loads(manifest.read_text())  # still valid JSON: only the format differs
    assert cache.load("2" * 40) is None


def test_unwritable_cache_is_ignored(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(blocker / "cache"))  # a folder inside a file: cannot exist
    assert cache.save(sample_runset(), "3" * 40) is None
    assert cache.load("3" * 40) is None


def test_missing_or_corrupt_entry_is_a_miss(tmp_path):
    assert cache.load("0" * 40) is None
    cache.save(sample_runset(), "1" * 40)
    (cache.cache_root() / ("1" * 40) / "manifest.json").write_text("{not json")
    assert cache.load("1" * 40) is None
