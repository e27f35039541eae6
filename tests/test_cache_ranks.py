"""Per-unit cache entries: one rank's change reparses that rank only, and a cached open
reports exactly what a fresh open reports (tables, metadata, issues)."""

import dataclasses
import shutil
import threading
from pathlib import Path

import pandas as pd
import pytest

from tui_prof.loaders import cache, kineto, load_path, rocprofv3_csv
from tui_prof.model.schema import TABLES
from tui_prof.synth import SynthSpec, build
from tui_prof.synth.write_csv import write_rocprofv3_csv

DATA = Path(__file__).parent / "data"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(folder))
    return folder


@pytest.fixture
def parses(monkeypatch):
    """Process groups / files handed to the rocprofv3-CSV and Kineto loaders, per call."""
    seen: list[str] = []
    for module in (rocprofv3_csv, kineto):
        original = module.load

        def counting(files, issues, _original=original):
            seen.extend(sorted({item.group or item.path.name for item in files}))
            return _original(files, issues)

        monkeypatch.setattr(module, "load", counting)
    return seen


def entry_dirs(folder: Path) -> list[Path]:
    """The cache entries in ``folder`` (not its tag, temporary folders or the scan memos)."""
    return [p for p in folder.iterdir() if cache.ENTRY_NAME.match(p.name)]


def make_ranks(root: Path, ranks: int) -> None:
    for r in range(ranks):
        host, pid = f"node{r // 2}", 10_000 + r
        run = build(SynthSpec(iterations=2 + r % 3, kernels_per_iteration=5, seed=r, pid=pid), hostname=host)
        write_rocprofv3_csv(run, root, hostname=host, pid=pid)


def assert_same(got, want) -> None:
    assert got.root == want.root
    assert [dataclasses.astuple(i) for i in got.issues] == [dataclasses.astuple(i) for i in want.issues]
    assert len(got.runs) == len(want.runs)
    for a, b in zip(got.runs, want.runs):
        assert a.meta == b.meta and a.agents == b.agents
        assert a.warnings == b.warnings and a.partial == b.partial
        for name in TABLES:
            pd.testing.assert_frame_equal(a.table(name), b.table(name), check_exact=True)
        assert a.tool_stats.keys() == b.tool_stats.keys()
        for name in a.tool_stats:
            pd.testing.assert_frame_equal(a.tool_stats[name], b.tool_stats[name], check_exact=True)


def test_one_changed_rank_is_the_only_one_reparsed(tmp_path, cache_dir, parses):
    run_dir = tmp_path / "run"
    make_ranks(run_dir, 4)
    first = load_path(run_dir, use_cache=True)
    assert len(parses) == 4 and len(first.runs) == 4
    parses.clear()
    assert_same(load_path(run_dir, use_cache=True), first)
    assert parses == []  # every rank from the cache

    trace = run_dir / "node1" / "10002_kernel_trace.csv"
    lines = trace.read_text().splitlines(keepends=True)
    trace.write_text("".join(lines[:-3]))  # rank 2 loses its last three dispatches
    changed = load_path(run_dir, use_cache=True)
    assert parses == [f"{run_dir / 'node1'}/10002"]
    assert_same(changed, load_path(run_dir))
    assert len(changed.runs[2].kernels) == len(first.runs[2].kernels) - 3


def test_added_and_removed_rank(tmp_path, cache_dir, parses):
    run_dir = tmp_path / "run"
    make_ranks(run_dir, 3)
    load_path(run_dir, use_cache=True)
    parses.clear()
    run = build(SynthSpec(iterations=2, kernels_per_iteration=5, seed=9, pid=20_000), hostname="node9")
    write_rocprofv3_csv(run, run_dir, hostname="node9", pid=20_000)
    added = load_path(run_dir, use_cache=True)
    assert parses == [f"{run_dir / 'node9'}/20000"] and len(added.runs) == 4
    assert_same(added, load_path(run_dir))

    parses.clear()
    shutil.rmtree(run_dir / "node0")  # ranks 0 and 1
    removed = load_path(run_dir, use_cache=True)
    assert parses == [] and len(removed.runs) == 2
    assert_same(removed, load_path(run_dir))


def test_unit_issues_are_replayed_and_directory_issues_recomputed(tmp_path, cache_dir, monkeypatch):
    run_dir = tmp_path / "run"
    make_ranks(run_dir, 2)
    original = rocprofv3_csv.load

    def with_warning(files, issues):
        issues.error(files[0].path, "a warning of this unit")
        return original(files, issues)

    monkeypatch.setattr(rocprofv3_csv, "load", with_warning)
    (run_dir / "notes.txt").write_text("not a trace\n")
    fresh = load_path(run_dir)
    load_path(run_dir, use_cache=True)
    monkeypatch.setattr(rocprofv3_csv, "load", original)  # a hit must replay the stored issues
    cached = load_path(run_dir, use_cache=True)
    assert sum(i.message == "a warning of this unit" for i in cached.issues) == 2
    assert_same(cached, fresh)

    (run_dir / "notes.txt").unlink()  # a directory-level issue is not cached
    (run_dir / "0_kernel_trace.csv").write_bytes(b"")
    again = load_path(run_dir, use_cache=True)
    assert not any(Path(i.path).name == "notes.txt" for i in again.issues)
    assert any(i.message == "empty file (0 bytes)" for i in again.issues)


@pytest.mark.parametrize("sample", sorted(p.name for p in DATA.iterdir() if p.is_dir()))
def test_cached_open_equals_fresh_open_for_samples(sample, tmp_path, cache_dir, monkeypatch):
    root = tmp_path / sample
    shutil.copytree(DATA / sample, root)
    fresh = load_path(root)
    hits: list[bool] = []
    original = cache.load_many

    def spying(keys):
        found = original(keys)
        hits.extend(hit is not None for key, hit in zip(keys, found, strict=True) if key)
        return found

    monkeypatch.setattr(cache, "load_many", spying)
    assert_same(load_path(root, use_cache=True), fresh)  # parses and writes
    written = len(entry_dirs(cache_dir))
    hits.clear()
    assert_same(load_path(root, use_cache=True), fresh)  # from the cache
    # every written entry passes its checks (size, CRCs, schema) when read back
    assert hits.count(True) == written >= 1


def test_each_kineto_file_is_its_own_unit(tmp_path, cache_dir, parses):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for name in ("triton_example__triton_example.json.gz", "mi210__gpu_only_trace__gpu_only_trace.json.gz"):
        shutil.copy(DATA / "kineto" / name, run_dir / name)
    fresh = load_path(run_dir)
    load_path(run_dir, use_cache=True)
    parses.clear()
    (run_dir / "mi210__gpu_only_trace__gpu_only_trace.json.gz").touch()
    cached = load_path(run_dir, use_cache=True)
    assert [Path(p).name for p in parses] == ["mi210__gpu_only_trace__gpu_only_trace.json.gz"]
    assert_same(cached, fresh)


def test_concurrent_opens_write_safely(tmp_path, cache_dir):
    run_dir = tmp_path / "run"
    make_ranks(run_dir, 4)
    fresh = load_path(run_dir)
    results, errors = [], []

    def open_it():
        try:
            results.append(load_path(run_dir, use_cache=True))
        except Exception as err:  # reported below
            errors.append(err)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for got in results:
        assert_same(got, fresh)
    names = [p.name for p in entry_dirs(cache_dir)]
    assert len(names) == 4 and not any(n.startswith(".") for n in names)  # one entry per rank, no temp folders
    assert_same(load_path(run_dir, use_cache=True), fresh)


def test_no_cache_and_unwritable_cache(tmp_path, cache_dir, monkeypatch):
    run_dir = tmp_path / "run"
    make_ranks(run_dir, 2)
    fresh = load_path(run_dir, use_cache=False)
    assert not cache_dir.exists()  # use_cache=False writes nothing
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(blocker / "cache"))
    assert_same(load_path(run_dir, use_cache=True), fresh)  # the write fails, the load does not
    monkeypatch.setattr(cache, "_read_feather", lambda path: (_ for _ in ()).throw(OSError("gone")))
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(cache_dir))
    load_path(run_dir, use_cache=True)
    assert_same(load_path(run_dir, use_cache=True), fresh)  # unreadable table files: a miss


def test_prune_keeps_the_cache_within_its_bound_least_recently_used_first(tmp_path, cache_dir, monkeypatch, parses):
    import os

    run_dir = tmp_path / "run"
    make_ranks(run_dir, 4)
    load_path(run_dir, use_cache=True)
    names = sorted(p.name for p in entry_dirs(cache_dir))
    sizes = {n: sum(f.stat().st_size for f in (cache_dir / n).iterdir()) for n in names}
    assert len(names) == 4
    # give the entries distinct last-use times, oldest first in `names` order
    for age, name in enumerate(reversed(names)):
        os.utime(cache_dir / name / "manifest.json", (1_000_000 + 10 * (4 - age),) * 2)
    # a bound that holds exactly the two most recently used entries
    limit = sizes[names[-1]] + sizes[names[-2]]
    removed = cache.prune(keep=set(), limit=limit)
    assert removed == names[:2]
    assert sorted(p.name for p in entry_dirs(cache_dir)) == names[2:]
    # kept keys survive whatever the bound
    assert cache.prune(keep=set(names[2:]), limit=0) == []
    # a hit refreshes the entry's last use, so the cache's own load never loses what it just read
    monkeypatch.setenv("TUIPROF_CACHE_MAX_BYTES", "0")
    parses.clear()
    again = load_path(run_dir, use_cache=True)  # two units parse again and are written
    assert len(parses) == 2 and len(again.runs) == 4
    assert len(entry_dirs(cache_dir)) == 4  # all used by this load: none pruned


def test_prune_removes_temporary_folders_of_dead_writers_only(cache_dir):
    import os
    import time

    assert cache.cache_root() == cache_dir  # created and tagged
    old, fresh = cache_dir / f".{'a' * 40}.0123abcd", cache_dir / f".{'a' * 40}.4567ef01"
    other = cache_dir / ".abc.old"  # a dot-folder not named by the cache's scheme
    for folder in (old, fresh, other):
        folder.mkdir()
        (folder / "0.kernels.arrow").write_bytes(b"x" * 10)
    for folder in (old, other):
        os.utime(folder, (time.time() - 2 * cache.STALE_TEMP_S,) * 2)
    assert cache.prune(keep=set()) == [old.name]
    assert fresh.exists() and other.exists() and not old.exists()


def test_cached_scan_reads_only_the_heads_of_changed_files(tmp_path, cache_dir, monkeypatch):
    """With the cache, a reopen takes each unchanged file's verdict (format, kind, group, or
    "not recognised") from the scan memo instead of reading its head again; the verdicts and
    the issues equal a fresh scan's, and a touched file is read again."""
    import os

    from tui_prof.loaders import detect

    run_dir = tmp_path / "run"
    make_ranks(run_dir, 3)
    (run_dir / "notes.txt").write_text("not a profiler file\n")
    (run_dir / "node0" / "9_kernel_trace.csv").write_text("garbage that looks like nothing\n")
    heads: list[str] = []
    original = detect.read_head

    def counting(path, *args, **kwargs):
        heads.append(Path(path).name)
        return original(path, *args, **kwargs)

    monkeypatch.setattr(detect, "read_head", counting)
    fresh = load_path(run_dir, use_cache=False)
    files = len(heads)
    assert files == len([p for p in run_dir.rglob("*") if p.is_file()])
    heads.clear()
    load_path(run_dir, use_cache=True)  # first cached open: scans and writes the memo
    assert len(heads) == files
    heads.clear()
    again = load_path(run_dir, use_cache=True)
    assert heads == []
    assert_same(again, fresh)
    target = next(run_dir.rglob("*_hip_api_trace.csv"))
    stat = target.stat()
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    heads.clear()
    touched = load_path(run_dir, use_cache=True)
    assert heads == [target.name]
    assert_same(touched, fresh)
