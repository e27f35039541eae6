"""Cache safety (issue 13): the cache deletes only what it provably made, refuses folders
and entries another user owns or can write, and treats a damaged entry as a miss that is
parsed again and replaced. Each test builds its hostile folder by hand."""

import json
import os
import random
import shutil
import stat
import time
from pathlib import Path

import pandas as pd
import pytest

from tui_prof.loaders import cache, load_path, rocprofv3_csv
from tui_prof.model.schema import TABLES
from tui_prof.synth import SynthSpec, build
from tui_prof.synth.write_csv import write_rocprofv3_csv

OTHER_UID = 65534  # nobody


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    """Each test sees its warnings (they are printed once per process per message)."""
    monkeypatch.setattr(cache, "_warned", set())


@pytest.fixture
def parses(monkeypatch):
    """Process groups parsed by the rocprofv3-CSV loader, per call."""
    seen: list[str] = []
    original = rocprofv3_csv.load

    def counting(files, issues):
        seen.extend(sorted({item.group or item.path.name for item in files}))
        return original(files, issues)

    monkeypatch.setattr(rocprofv3_csv, "load", counting)
    return seen


class RunDir(type(Path())):  # type: ignore[misc]
    """A run folder and the generator's known answers for it (``expected``)."""

    expected = None


@pytest.fixture(scope="module")
def run_template(tmp_path_factory):
    """One rocprofv3 CSV process (60 dispatches), written once per module, and its known answers."""
    root = tmp_path_factory.mktemp("template") / "run"
    run = build(SynthSpec(iterations=6, kernels_per_iteration=10, seed=3, pid=777), hostname="h")
    write_rocprofv3_csv(run, root, hostname="h", pid=777)
    return root, run.expected


@pytest.fixture
def run_dir(tmp_path, run_template):
    """A private copy of :func:`run_template` (each test may damage its own) and its known answers."""
    template, expected = run_template
    root = RunDir(tmp_path / "run")
    shutil.copytree(template, root)
    root.expected = expected
    return root


def numbers(runset) -> dict:
    """What a user reads: dispatches and kernel time per process (and every table's length)."""
    return {
        f"{r.meta.hostname}/{r.meta.pid}": (len(r.kernels), int((r.kernels["end"] - r.kernels["start"]).sum()), {name: len(r.table(name)) for name in TABLES})
        for r in runset.runs
    }


def assert_same_tables(got, want) -> None:
    assert len(got.runs) == len(want.runs)
    for a, b in zip(got.runs, want.runs, strict=True):
        assert a.meta == b.meta
        for name in TABLES:
            pd.testing.assert_frame_equal(a.table(name), b.table(name), check_exact=True)


def entries(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if cache.ENTRY_NAME.match(p.name))


def one_warning(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), err
    return lines[0]


def make_home(home: Path, outside: Path) -> dict[Path, bytes]:
    """A folder that holds other things, as a home directory does: old dot-folders, a
    project folder with a manifest.json, a folder named like a cache entry (with a
    manifest.json) and one named like a temporary folder. Returns file -> content."""
    files = {
        home / ".ssh" / "id_ed25519": b"secret key",
        home / ".config" / "app" / "settings.toml": b"x = 1",
        home / "project" / "manifest.json": b'{"format": 4}',
        home / ("a" * 40) / "manifest.json": b'{"format": 4, "mine": true}',
        home / f".{'b' * 40}.0123abcd" / "notes.txt": b"keep me",
        outside / "manifest.json": b"outside",
    }
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    old = time.time() - 30 * 24 * 3600
    for path in list(files) + [p.parent for p in files]:
        os.utime(path, (old, old))
    return files


def test_folder_holding_other_things_is_refused_and_left_untouched(tmp_path, monkeypatch, run_dir, parses, capsys):
    home, outside = tmp_path / "home", tmp_path / "outside"
    files = make_home(home, outside)
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(home))
    fresh = load_path(run_dir)
    capsys.readouterr()
    got = load_path(run_dir, use_cache=True)
    assert numbers(got) == numbers(fresh)
    assert numbers(got)["h/777"][:2] == (run_dir.expected.dispatches, run_dir.expected.kernel_total_ns)
    line = one_warning(capsys)
    assert line == (
        f"tuiprof: not using the cache: {str(home)!r} holds other files and no tuiprof CACHEDIR.TAG; point TUIPROF_CACHE_DIR at a new or empty folder"
    )
    load_path(run_dir, use_cache=True)
    assert len(parses) == 3  # the fresh load and both loads without a usable cache parse
    assert capsys.readouterr().err == ""  # one warning per process
    assert cache.prune(keep=set(), limit=0, now=time.time() + 10 * cache.STALE_TEMP_S) == []
    assert cache.save(got, "c" * 40) is None
    for path, data in files.items():
        assert path.read_bytes() == data
    assert sorted(p.name for p in home.iterdir()) == sorted([".ssh", ".config", "project", "a" * 40, f".{'b' * 40}.0123abcd"])


def test_tagged_root_prunes_only_names_of_its_own_scheme_and_follows_no_link(tmp_path, monkeypatch, run_dir):
    root, outside = tmp_path / "cache", tmp_path / "outside"
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(root))
    load_path(run_dir, use_cache=True)
    (mine,) = entries(root)
    files = make_home(root, outside)  # the same things inside a tagged root
    link_entry, link_temp = root / ("d" * 40), root / f".{'e' * 40}.00000000"
    link_entry.symlink_to(outside, target_is_directory=True)
    link_temp.symlink_to(outside, target_is_directory=True)
    (root / ("f" * 40)).write_bytes(b"a file named like an entry")
    removed = cache.prune(keep=set(), limit=0, now=time.time() + 10 * cache.STALE_TEMP_S)
    # the real entry and the scheme-named folders (old temp, 40-hex with a manifest) go
    assert sorted(removed) == sorted([mine.name, "a" * 40, f".{'b' * 40}.0123abcd"])
    for path, data in files.items():
        if path.parent.name not in removed:
            assert path.read_bytes() == data
    assert (outside / "manifest.json").read_bytes() == b"outside"  # links are not followed
    assert link_entry.is_symlink() and link_temp.is_symlink() and (root / ("f" * 40)).is_file()
    assert (root / ".ssh" / "id_ed25519").read_bytes() == b"secret key"
    assert (root / cache.MARKER).read_bytes() == cache.MARKER_TEXT


def test_new_root_entries_and_files_are_private(tmp_path, monkeypatch, run_dir):
    root = tmp_path / "a" / "cache"
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(root))
    load_path(run_dir, use_cache=True)
    mode = lambda p: stat.S_IMODE(os.lstat(p).st_mode)  # noqa: E731
    assert mode(root) == 0o700
    assert mode(root / cache.MARKER) == 0o600
    (entry,) = entries(root)
    assert mode(entry) == 0o700
    assert sorted(p.name for p in entry.iterdir())[-1] == cache.MANIFEST
    assert {mode(p) for p in entry.iterdir()} == {0o600}
    assert mode(root / cache.SCANS) == 0o700 and {mode(p) for p in (root / cache.SCANS).iterdir()} == {0o600}


def test_empty_existing_folder_is_claimed(tmp_path, monkeypatch, run_dir, parses):
    root = tmp_path / "empty"
    root.mkdir(mode=0o775)
    os.chmod(root, 0o775)
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(root))
    load_path(run_dir, use_cache=True)
    load_path(run_dir, use_cache=True)
    assert len(parses) == 1
    assert stat.S_IMODE(root.stat().st_mode) == 0o700  # tightened when claimed
    assert (root / cache.MARKER).read_bytes() == cache.MARKER_TEXT


def make_foreign(path: Path, monkeypatch) -> None:
    """``path`` owned by another user: chown when the tests run as root, else the cache is
    told the current user is someone else."""
    if os.getuid() == 0:
        os.chown(path, OTHER_UID, -1, follow_symlinks=False)
    else:
        monkeypatch.setattr(cache.os, "getuid", lambda: OTHER_UID)


@pytest.mark.parametrize(
    "case",
    [
        "root owned by another user",
        "root writable by others",
        "root writable by group",
        "tag owned by another user",
        "tag writable by others",
        "tag with other text",
    ],
)
def test_root_another_user_could_write_is_refused(case, tmp_path, monkeypatch, run_dir, parses, capsys):
    root = tmp_path / "cache"
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(root))
    load_path(run_dir, use_cache=True)  # a good entry
    (entry,) = entries(root)
    fresh = load_path(run_dir)
    capsys.readouterr()
    tag = root / cache.MARKER
    if case == "root owned by another user":
        make_foreign(root, monkeypatch)
        cause = f"cache folder {str(root)!r} is owned by uid {OTHER_UID}, not by you"
    elif case == "root writable by others":
        os.chmod(root, 0o777)
        cause = f"cache folder {str(root)!r} is writable by group or others (mode 0777)"
    elif case == "root writable by group":
        os.chmod(root, 0o770)
        cause = f"cache folder {str(root)!r} is writable by group or others (mode 0770)"
    elif case == "tag owned by another user":
        if os.getuid() != 0:
            pytest.skip("needs root to give the tag away")
        os.chown(tag, OTHER_UID, -1)
        cause = f"cache tag {str(tag)!r} is owned by uid {OTHER_UID}, not by you"
    elif case == "tag writable by others":
        os.chmod(tag, 0o666)
        cause = f"cache tag {str(tag)!r} is writable by group or others (mode 0666)"
    else:
        tag.unlink()
        tag.write_bytes(cache.MARKER_TEXT.replace(b"tuiprof", b"another"))
        cause = f"{str(root)!r} holds other files and no tuiprof CACHEDIR.TAG"
    parses.clear()
    got = load_path(run_dir, use_cache=True)
    assert parses == [f"{run_dir}/h/777"]  # the planted-or-not entry is not read
    assert_same_tables(got, fresh)
    line = one_warning(capsys)
    assert line.startswith(f"tuiprof: not using the cache: {cause}"), line
    assert entry.is_dir()  # nothing deleted either
    assert cache.prune(keep=set(), limit=0) == [] and entry.is_dir()


def test_planted_entry_in_a_shared_folder_cannot_change_the_numbers(tmp_path, monkeypatch, run_dir, capsys):
    """Another user writes a cache folder that is writable by all: an entry whose kernels
    take 100x longer, under the right key. It is never read."""
    root = tmp_path / "shared"
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(root))
    good = load_path(run_dir, use_cache=True)
    (entry,) = entries(root)
    runset = cache.load(entry.name)
    runset.runs[0].kernels["end"] = runset.runs[0].kernels["start"] + 100 * (runset.runs[0].kernels["end"] - runset.runs[0].kernels["start"])
    cache.prune(keep=set(), limit=0)
    assert cache.save(runset, entry.name) is not None  # the planted entry, valid in every byte
    assert numbers(load_path(run_dir, use_cache=True)) != numbers(good)  # (what the plant does when trusted)
    os.chmod(root, 0o777)  # the shared folder
    capsys.readouterr()
    assert numbers(load_path(run_dir, use_cache=True)) == numbers(good)
    assert "writable by group or others" in one_warning(capsys)


@pytest.mark.parametrize("what", ["entry folder", "manifest", "table file"])
def test_entry_another_user_owns_or_can_write_is_not_used(what, tmp_path, monkeypatch, run_dir, parses, capsys):
    root = tmp_path / "cache"
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(root))
    fresh = load_path(run_dir, use_cache=True)
    (entry,) = entries(root)
    target = {"entry folder": entry, "manifest": entry / cache.MANIFEST, "table file": entry / "0.kernels.arrow"}[what]
    if os.getuid() == 0:
        os.chown(target, OTHER_UID, -1)
        cause = f"is owned by uid {OTHER_UID}, not by you (uid 0)"
    else:
        os.chmod(target, 0o777 if target.is_dir() else 0o666)
        cause = "is writable by group or others"
    capsys.readouterr()
    parses.clear()
    got = load_path(run_dir, use_cache=True)
    assert parses == [f"{run_dir}/h/777"]
    assert_same_tables(got, fresh)
    line = one_warning(capsys)
    assert line.startswith("tuiprof: not using a cache entry: ") and cause in line and repr(str(target)) in line, line
    assert target.exists()  # not the cache's to delete


def flip(path: Path, offset: int) -> None:
    """Invert one byte of ``path`` in place (what a disk, a bad copy or a person can do)."""
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_tampered_table_is_a_miss_reparsed_and_replaced(tmp_path, monkeypatch, run_dir, parses):
    root = tmp_path / "cache"
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(root))
    fresh = load_path(run_dir)
    load_path(run_dir, use_cache=True)
    (entry,) = entries(root)
    table = entry / "0.kernels.arrow"
    flip(table, table.stat().st_size // 2)  # inside the data buffers: a silently different number if trusted
    parses.clear()
    got = load_path(run_dir, use_cache=True)
    assert parses == [f"{run_dir}/h/777"]
    assert_same_tables(got, fresh)
    assert numbers(got)["h/777"][:2] == (run_dir.expected.dispatches, run_dir.expected.kernel_total_ns)
    parses.clear()
    again = load_path(run_dir, use_cache=True)  # the replaced entry is sound: a hit
    assert parses == []
    assert_same_tables(again, fresh)


@pytest.mark.parametrize(
    "damage",
    [
        "manifest byte",
        "manifest truncated",
        "manifest garbage",
        "manifest missing",
        "table truncated",
        "table missing",
        "table grown",
        "schema changed",
        "moved under another key",
    ],
)
def test_damaged_entry_is_a_miss_reparsed_and_replaced(damage, tmp_path, monkeypatch, run_dir, parses):
    root = tmp_path / "cache"
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(root))
    fresh = load_path(run_dir)
    load_path(run_dir, use_cache=True)
    (entry,) = entries(root)
    manifest, table = entry / cache.MANIFEST, entry / "0.kernels.arrow"
    if damage == "manifest byte":
        data = manifest.read_bytes()
        flip(manifest, data.index(b'"pid": 777') + len(b'"pid": 7'))  # still valid JSON, another pid
    elif damage == "manifest truncated":
        manifest.write_bytes(manifest.read_bytes()[:-10])
    elif damage == "manifest garbage":
        manifest.write_bytes(b"{not json")
    elif damage == "manifest missing":
        manifest.unlink()
    elif damage == "table truncated":
        table.write_bytes(table.read_bytes()[:-100])
    elif damage == "table missing":
        table.unlink()
    elif damage == "table grown":
        table.write_bytes(table.read_bytes() + b"\0" * 8)
    elif damage == "schema changed":  # a valid manifest whose recorded columns differ (another pandas)
        body = cache._parse_manifest(manifest.read_bytes())
        body["files"]["0.kernels"]["columns"][0][1] = "float64"
        manifest.write_bytes(cache._manifest_bytes(body))
    else:  # another unit's sound entry renamed to this key
        other = root / ("0" * 40)
        entry.rename(other)
        body = cache._parse_manifest((other / cache.MANIFEST).read_bytes())
        assert body["key"] == entry.name
        body["key"] = "0" * 40
        (other / cache.MANIFEST).write_bytes(cache._manifest_bytes(body))
        other.rename(entry)
    parses.clear()
    got = load_path(run_dir, use_cache=True)
    assert parses == [f"{run_dir}/h/777"]
    assert_same_tables(got, fresh)
    parses.clear()
    assert_same_tables(load_path(run_dir, use_cache=True), fresh)
    assert parses == []  # replaced by a sound entry
    assert len(entries(root)) == 1


def test_byte_flips_anywhere_never_change_the_numbers(tmp_path, monkeypatch, run_dir, parses):
    """The issue's campaign, on a small run: one byte inverted at random places of every
    file of the entry (530 flips gave ~30 % silently different numbers and ~6 % internal
    errors without checks). Every load equals the fresh load."""
    root = tmp_path / "cache"
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(root))
    fresh = load_path(run_dir)
    want = numbers(fresh)
    load_path(run_dir, use_cache=True)
    rng = random.Random(13)
    flips = 0
    for _ in range(12):
        (entry,) = entries(root)
        for path in sorted(entry.iterdir()):
            flip(path, rng.randrange(path.stat().st_size))
            flips += 1
            parses.clear()
            got = load_path(run_dir, use_cache=True)
            assert numbers(got) == want, (path.name, flips)
            assert parses == [f"{run_dir}/h/777"], (path.name, flips)  # every flip is found
    assert flips >= 12 * 7


def test_manifest_records_size_chunk_crcs_rows_and_columns(tmp_path, monkeypatch, run_dir):
    root = tmp_path / "cache"
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(root))
    load_path(run_dir, use_cache=True)
    (entry,) = entries(root)
    raw = (entry / cache.MANIFEST).read_bytes()
    assert raw.startswith(b'{"format":%d,"check":"' % cache.CACHE_FORMAT)
    json.loads(raw)  # the manifest is JSON
    body = cache._parse_manifest(raw)
    assert body["key"] == entry.name
    record = body["files"]["0.kernels"]
    data = (entry / "0.kernels.arrow").read_bytes()
    import zlib

    assert record["size"] == len(data)
    assert record["crcs"] == [f"{zlib.crc32(data[i : i + cache.CHECK_CHUNK]):08x}" for i in range(0, len(data), cache.CHECK_CHUNK)]
    assert record["rows"] == run_dir.expected.dispatches == 60
    assert record["columns"][:2] == [["start", "int64"], ["end", "int64"]]


def test_big_table_is_checked_chunk_by_chunk(tmp_path, monkeypatch, run_dir, parses):
    """With small chunks a table spans many CRCs; a flip in any one chunk is found."""
    monkeypatch.setattr(cache, "CHECK_CHUNK", 1024)
    root = tmp_path / "cache"
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(root))
    fresh = load_path(run_dir)
    load_path(run_dir, use_cache=True)
    (entry,) = entries(root)
    table = entry / "0.kernels.arrow"
    size = table.stat().st_size
    chunks = len(cache._parse_manifest((entry / cache.MANIFEST).read_bytes())["files"]["0.kernels"]["crcs"])
    assert chunks == -(-size // 1024) and chunks >= 3
    flip(table, size - 1 - 512)  # in the last chunk
    parses.clear()
    assert_same_tables(load_path(run_dir, use_cache=True), fresh)
    assert parses == [f"{run_dir}/h/777"]


def test_default_root_of_an_earlier_version_is_adopted(tmp_path, monkeypatch, run_dir, parses):
    """The platform's own ``tuiprof`` cache folder, filled by a version without the tag, is
    tagged and used; its old-format entries are pruned like any entry of the scheme."""
    default = tmp_path / "xdg" / "tuiprof"
    old_entry = default / ("9" * 40)
    old_entry.mkdir(parents=True)
    (old_entry / "manifest.json").write_text('{"format": 3}')
    (default / "samples").mkdir()
    monkeypatch.delenv("TUIPROF_CACHE_DIR")
    monkeypatch.setattr(cache, "_default_root", lambda: default)
    load_path(run_dir, use_cache=True)
    load_path(run_dir, use_cache=True)
    assert len(parses) == 1
    assert (default / cache.MARKER).read_bytes() == cache.MARKER_TEXT
    assert "9" * 40 in cache.prune(keep=set(), limit=0)
    assert (default / "samples").is_dir()


def test_cli_warns_once_and_reports_the_same_numbers(tmp_path, monkeypatch, run_dir, capsys):
    """``tuiprof summary`` with a cache folder that holds other things: one warning line on
    stderr, exit 0, the same report as ``--no-cache``, nothing written to the folder."""
    from tui_prof import cli

    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(home))
    assert cli.main(["summary", str(run_dir), "--json", "--no-cache"]) == 0
    want = capsys.readouterr()
    assert want.err == ""
    assert cli.main(["summary", str(run_dir), "--json"]) == 0
    got = capsys.readouterr()
    assert got.out == want.out
    assert json.loads(got.out)["kernels"]["dispatches"] == run_dir.expected.dispatches
    assert got.err.splitlines() == [
        f"tuiprof: not using the cache: {str(home)!r} holds other files and no tuiprof CACHEDIR.TAG; point TUIPROF_CACHE_DIR at a new or empty folder"
    ]
    assert [p.name for p in home.iterdir()] == [".ssh"]


def test_table_names_in_a_manifest_never_reach_outside_the_entry(tmp_path, monkeypatch, run_dir, parses):
    """A manifest (sound in every check) whose stats name is a path elsewhere is a miss:
    the file names the cache reads are only ever its own."""
    root = tmp_path / "cache"
    monkeypatch.setenv("TUIPROF_CACHE_DIR", str(root))
    fresh = load_path(run_dir)
    load_path(run_dir, use_cache=True)
    (entry,) = entries(root)
    body = cache._parse_manifest((entry / cache.MANIFEST).read_bytes())
    body["runs"][0]["tool_stats"].append("../../elsewhere")
    body["files"]["0.stats.../../elsewhere"] = body["files"]["0.kernels"]
    (entry / cache.MANIFEST).unlink()
    (entry / cache.MANIFEST).write_bytes(cache._manifest_bytes(body))
    parses.clear()
    assert_same_tables(load_path(run_dir, use_cache=True), fresh)
    assert parses == [f"{run_dir}/h/777"]
    runset = load_path(run_dir)
    runset.runs[0].tool_stats["a/b"] = runset.runs[0].tool_stats["kernel_stats"]
    assert cache.save(runset, "e" * 40) is None  # such a name is never written either
