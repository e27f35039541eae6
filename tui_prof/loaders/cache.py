"""Columnar cache of loaded work units, in the user's cache directory (never the run directory).

One entry per load work unit (a rocprofv3 CSV process group, one rocpd database, one
pftrace or Kineto file, or all files of another format; see
:func:`tui_prof.loaders.detect.work_units`), so reopening a 1000-rank run reads 1000 entries
and a change to one rank's files reparses that rank only. An entry holds the unit's run
fragments (before :func:`~tui_prof.loaders.detect.assemble`) and the issues its loader
reported, which are replayed on a hit.

A unit's key (:func:`unit_key`) covers the format and, for each of its files, the path as
given and its absolute path, the detected kind and group, size, mtime and ctime (ns), and a
hash of its first and last 4 KiB. ctime cannot be set by a user, so a file rewritten with
the same size and a restored mtime (``cp -p``, ``rsync -t``) still changes the key; the
edge hash is a second check that costs two 4 KiB reads per file. Any change gives a new
key, so a stale entry is never used.

Tables are Arrow IPC files (Feather v2, uncompressed; empty tables are not written), which
keep category columns as dictionaries; they are memory-mapped on load, so numeric columns
are used in place without a copy. Metadata is one JSON manifest. Entries are written to a
temporary folder and renamed into place, so a crash or a concurrent writer never leaves a
half-written entry. A write that fails (read-only folder, disk full) is ignored.

The cache is bounded: after a load that wrote entries, :func:`prune` removes the least
recently used entries (a hit refreshes an entry's manifest time) until the total is under
``TUIPROF_CACHE_MAX_BYTES`` (default 10 GiB; a 1M-dispatch run takes about 200 MB), never
an entry used by the load that is pruning, and removes temporary folders that a killed
process left behind. Files are only ever created, renamed and unlinked, never rewritten or
truncated in place, so a process that has an entry mapped keeps reading it after another
process prunes it (Linux keeps an unlinked file's pages while they are mapped).

``TUIPROF_CACHE_DIR`` overrides the location (tests use it). It may name a folder that
holds other things (a home directory, a shared project folder), and on a shared node other
users may be able to write it, so the cache trusts and deletes only what it provably made
(docs/reliability.md, "Cache safety"):

* **Root tag.** The root holds :data:`MARKER` (a ``CACHEDIR.TAG`` whose exact text names
  tuiprof). The cache writes it when it creates the root or finds the root empty (or finds
  the platform's own ``tuiprof`` cache folder of an earlier version), and tightens the
  root to mode 0700 then. A root that exists, holds other things and has no tag is not
  used at all: one warning line, and the run goes on without the cache. (A ``tuiprof``
  sub-folder inside such a root would also be safe to prune, but it would live in a
  folder whose owner and permissions tuiprof does not control, where another user could
  swap it; refusing keeps every cache folder one that only its owner can write.)
* **Names.** Entries are named by their key (exactly 40 lowercase hex digits) and
  temporary folders ``.<key>.<8 characters>``; :func:`prune` and the removal of a damaged
  entry touch only names of that form, inside a tagged root, through a descriptor of the
  root, and never follow a symbolic link (``shutil.rmtree`` with ``dir_fd``).
* **Ownership.** A root, tag, entry folder, manifest or table file that is not owned by
  the current user, or that group or others can write, is refused (one warning line per
  cause; an entry refused is a miss). The root and entries are created 0700, files 0600.
* **Integrity.** The manifest carries a checksum of its own body and, per table file,
  its size, row count, columns and a CRC-32 of every :data:`CHECK_CHUNK` bytes; the body
  names its key, so an entry moved under another key is not used. A mismatch, an
  unreadable manifest, a schema change or an Arrow error makes the entry a miss: it is
  removed, the unit is parsed again and the entry written anew. The checks are against
  damage (a flipped bit, a truncated or overwritten file), not against a person: whoever
  can write an entry can rewrite its manifest too, which the ownership rule prevents. So
  a CRC, the fastest check that finds every burst up to 32 bits, is enough; the chunks of
  all table files are checked by the read pool in parallel over the mapped bytes
  (docs/reliability.md gives the cost at 1M dispatches).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import mmap
import os
import re
import secrets
import shutil
import stat
import sys
import threading
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from tui_prof import __version__
from tui_prof.guard import jsonout
from tui_prof.guard.write import make_private_dir, open_new, replace, write_atomic, write_new
from tui_prof.loaders.base import check_cancelled, load_scope, open_regular
from tui_prof.model import Agent, LoadIssue, Run, RunMeta, RunSet
from tui_prof.model.schema import TABLES, empty_table

CACHE_FORMAT = 10  # raised whenever a table's columns or the entry layout change: older entries are misses
READ_THREADS = 4  # table files read (and verified) concurrently
EDGE_BYTES = 4 * 1024  # bytes hashed at each end of every file
DEFAULT_MAX_BYTES = 10 * 1024**3  # total size kept by prune()
STALE_TEMP_S = 3600  # a temporary folder this old belongs to a writer that died
SCANS = "scans"  # sub-folder of the scan memos (a few KB per run directory; not entries)
MANIFEST = "manifest.json"
MARKER = "CACHEDIR.TAG"  # https://bford.info/cachedir/: backup tools skip the folder too
MARKER_TEXT = (
    b"Signature: 8a477f597d28d172789f06886806bc55\n"
    b"# This file is a cache directory tag created by tuiprof (tuiprof-cache 1).\n"
    b"# tuiprof removes only folders it named itself from this folder.\n"
)
ENTRY_NAME = re.compile(r"[0-9a-f]{40}\Z")
TEMP_NAME = re.compile(r"\.[0-9a-f]{40}\.[a-z0-9_]{8}\Z")  # also the tempfile names of format 3
_STATS_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")  # a tool_stats table's name in a file name
CHECK_CHUNK = 8 * 1024**2  # a table file's bytes per CRC (one task of the read pool)
_CHECK_HEX = 8  # a CRC-32 as hex digits
_MANIFEST_HEAD = b'{"format":%d,"check":"' % CACHE_FORMAT
_MANIFEST_BODY = b'","body":'
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # a FIFO cannot block

_warned: set[str] = set()


class Refused(Exception):
    """A cache path that another user owns or can write (the message says which and why)."""


class Damaged(Exception):
    """An entry whose bytes do not match its manifest."""


def _warn(message: str) -> None:
    """One line on stderr, once per process per message (the run goes on without that part
    of the cache)."""
    if message in _warned:
        return
    _warned.add(message)
    try:
        sys.stderr.write(f"tuiprof: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed
        pass


def _configured_root() -> Path:
    override = os.environ.get("TUIPROF_CACHE_DIR")
    if override:
        return Path(override)
    return _default_root()


def _default_root() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("tuiprof"))


def cache_root() -> Path:
    """The cache folder: ``TUIPROF_CACHE_DIR`` or the user cache directory. Created (mode
    0700, with its tag) when it does not exist; tagged when it exists, is the current
    user's and is empty (or is the platform's own ``tuiprof`` folder). A folder that holds
    other things is left alone (:func:`usable_root` then refuses it)."""
    root = _configured_root()
    _claim(root)
    return root


def _claim(root: Path) -> None:
    try:
        os.lstat(root / MARKER)
        return  # tagged already (whether the tag is valid is usable_root's question)
    except FileNotFoundError:
        pass
    except OSError:
        return
    try:
        make_private_dir(root, parents=True)
    except FileExistsError:
        try:
            info = os.stat(root)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                return
            with os.scandir(root) as it:
                empty = next(it, None) is None
            if not empty and os.path.abspath(root) != os.path.abspath(_default_root()):
                return
            os.chmod(root, 0o700)
        except OSError:
            return
    except OSError:
        return
    try:  # written under a temporary name and renamed, so a reader never sees half a tag
        temp = root / f".tag.{secrets.token_hex(4)}"
        _write_private(temp, MARKER_TEXT)
        replace(temp, root / MARKER)
    except OSError:
        try:
            os.unlink(temp)
        except OSError:
            pass


def _check_owned(info: os.stat_result, what: str, path: Path | str) -> None:
    """Raise :class:`Refused` when ``info`` is not the current user's or group/others can write it."""
    uid = os.getuid()
    if info.st_uid != uid:
        raise Refused(f"{what} {str(path)!r} is owned by uid {info.st_uid}, not by you (uid {uid})")
    if info.st_mode & 0o022:
        raise Refused(f"{what} {str(path)!r} is writable by group or others (mode {stat.S_IMODE(info.st_mode):04o})")


def usable_root() -> Path | None:
    """The cache root when it may be read and written: a folder of the current user that
    group and others cannot write, holding tuiprof's tag. Otherwise None, with one warning
    line (nothing is said when the folder cannot be created or read: the cache is then
    simply off, as for a read-only home)."""
    root = cache_root()
    try:
        info = os.stat(root)  # follows a link: the user may point the setting at one
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        return None
    try:
        _check_owned(info, "cache folder", root)
        fd = os.open(root / MARKER, _OPEN_FLAGS)
        try:
            tag = os.fstat(fd)
            _check_owned(tag, "cache tag", root / MARKER)
            ours = stat.S_ISREG(tag.st_mode) and os.read(fd, len(MARKER_TEXT) + 1) == MARKER_TEXT
        finally:
            os.close(fd)
    except Refused as err:
        _warn(f"not using the cache: {err}")
        return None
    except OSError:
        ours = False
    if not ours:
        _warn(f"not using the cache: {str(root)!r} holds other files and no tuiprof {MARKER}; point TUIPROF_CACHE_DIR at a new or empty folder")
        return None
    return root


def _write_private(path: Path, data: bytes) -> None:
    """Create ``path`` (mode 0600; never through a link, never over an existing file)."""
    write_new(path, data, 0o600)


def _open_private(path: Path, what: str) -> int:
    """A descriptor of regular file ``path`` (not followed if it is a link), checked to be
    the current user's and not writable by group or others."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Damaged(f"{path} is not a regular file")
        _check_owned(info, what, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_entry_folder(folder: Path) -> None:
    """Raise FileNotFoundError (no entry), :class:`Refused` (not ours) or :class:`Damaged`
    (not a folder, e.g. a link)."""
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise Damaged(f"{folder} is not a folder")
    _check_owned(info, "cache entry", folder)


def _crc(data) -> str:
    """CRC-32 of a bytes-like object as 8 hex digits (zlib releases the GIL on large
    buffers, so the read pool checks several chunks at once)."""
    return f"{zlib.crc32(data):08x}"


def _chunk_crcs(data) -> list[str]:
    """The CRC of every :data:`CHECK_CHUNK` bytes of ``data``."""
    view = memoryview(data)
    return [_crc(view[start : start + CHECK_CHUNK]) for start in range(0, len(view), CHECK_CHUNK)]


def _manifest_bytes(body: dict, seen: jsonout.NonFinite | None = None) -> bytes:
    """The manifest: ``{"format":N,"check":"<CRC of body>","body":<body>}``; the check
    covers the body's bytes exactly as written (a non-finite number written null, counted
    in ``seen``)."""
    text = jsonout.dumps(body, seen=seen, ensure_ascii=True).encode()
    return _MANIFEST_HEAD + _crc(text).encode() + _MANIFEST_BODY + text + b"}"


def _parse_manifest(data: bytes) -> dict:
    """The body of manifest bytes; :class:`Damaged` when the format, framing or check is wrong."""
    start = len(_MANIFEST_HEAD) + _CHECK_HEX + len(_MANIFEST_BODY)
    if not (data.startswith(_MANIFEST_HEAD) and data[start - len(_MANIFEST_BODY) : start] == _MANIFEST_BODY and data.endswith(b"}")):
        raise Damaged("not a manifest of this format")
    body = data[start:-1]
    if _crc(body).encode() != data[len(_MANIFEST_HEAD) : len(_MANIFEST_HEAD) + _CHECK_HEX]:
        raise Damaged("manifest check mismatch")
    doc = json.loads(body)
    if not isinstance(doc, dict):
        raise Damaged("manifest body is not an object")
    return doc


def _read_manifest(root: Path, key: str) -> dict:
    """The verified manifest body of entry ``key``. Raises FileNotFoundError (no entry),
    :class:`Refused` or :class:`Damaged`/OSError/ValueError (a bad entry)."""
    folder = root / key
    _check_entry_folder(folder)
    try:
        fd = _open_private(folder / MANIFEST, "cache manifest")
    except FileNotFoundError:  # a folder without a manifest: never a finished entry
        raise Damaged(f"{folder} has no manifest") from None
    try:
        with open(fd, "rb", closefd=False) as fh:
            data = fh.read()
    finally:
        os.close(fd)
    body = _parse_manifest(data)
    if body.get("key") != key:
        raise Damaged("entry is filed under another key")
    return body


def _remove_entry(root: Path, name: str) -> bool:
    """Remove folder ``name`` of the tagged ``root`` when it is named by the cache's scheme,
    is a real folder (not a link) and is the current user's; nothing is followed."""
    if not (ENTRY_NAME.match(name) or TEMP_NAME.match(name)):
        return False
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return _remove_at(fd, name)
    finally:
        os.close(fd)


def _remove_at(root_fd: int, name: str) -> bool:
    try:
        info = os.stat(name, dir_fd=root_fd, follow_symlinks=False)
    except OSError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        return False
    shutil.rmtree(name, ignore_errors=True, dir_fd=root_fd)
    try:
        os.stat(name, dir_fd=root_fd, follow_symlinks=False)
    except FileNotFoundError:
        return True
    except OSError:
        pass
    return False


def _make_temp(root: Path, key: str) -> Path:
    """A new private temporary folder ``.<key>.<8 hex>`` in ``root``."""
    for _ in range(16):
        folder = root / f".{key}.{secrets.token_hex(4)}"
        try:
            return make_private_dir(folder)
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {root}")


def _edge_hash(path: Path, size: int) -> str:
    """blake2b of the first and last ``EDGE_BYTES`` of a file of ``size`` bytes."""
    digest = hashlib.blake2b(digest_size=16)
    with open_regular(path) as fh:  # a FIFO swapped in after the scan: refused, never waited on
        digest.update(fh.read(EDGE_BYTES))
        if size > EDGE_BYTES:
            fh.seek(max(EDGE_BYTES, size - EDGE_BYTES))
            digest.update(fh.read(EDGE_BYTES))
    return digest.hexdigest()


def unit_key(fmt: str, files: list) -> str | None:
    """The key of one work unit (``files``: its DetectedFile records, in load order), or
    None when a file cannot be read."""
    digest = hashlib.sha256()
    digest.update(f"tuiprof {__version__} unit {CACHE_FORMAT}\n{fmt}\n".encode())
    try:
        for item in files:
            digest.update(_file_state(item.path, f"{item.kind}\0{item.group}\0"))
    except OSError:
        return None
    return digest.hexdigest()[:40]


def _file_state(path, tag: str = "") -> bytes:
    """What a cache key holds of one file: its path, size, times and edge hash, and those of
    its ``-wal`` (a database's write-ahead log holds rows too: rocpd.load_db reads it). Raises
    OSError when the file cannot be read."""
    info = os.stat(path)
    state = (f"{path}\0{os.path.abspath(path)}\0{tag}{info.st_size}\0{info.st_mtime_ns}\0{info.st_ctime_ns}\0{_edge_hash(Path(path), info.st_size)}\n").encode(
        "utf-8", "surrogateescape"
    )
    wal = f"{path}-wal"
    if os.path.isfile(wal):
        log = os.stat(wal)
        state += f"wal\0{log.st_size}\0{log.st_mtime_ns}\0{log.st_ctime_ns}\n".encode()
    return state


def _is_key(key) -> bool:
    return isinstance(key, str) and ENTRY_NAME.match(key) is not None


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "item"):
        return value.item()
    return str(value)


def _columns(frame: pd.DataFrame) -> list[list[str]]:
    """[column, dtype] of every column: the schema a read must give back."""
    return [[str(col), str(dtype)] for col, dtype in frame.dtypes.items()]


def save(runset: RunSet, key: str) -> Path | None:
    """Write ``runset`` (a unit's fragments and issues) under ``key``; returns the entry
    folder, or None when the cache is not usable or not writable (nothing is raised)."""
    if not _is_key(key) or not all(_STATS_NAME.match(name) for run in runset.runs for name in run.tool_stats):
        return None  # a stats name that cannot be a file name: the unit is not cached
    root = usable_root()
    if root is None:
        return None
    try:
        work = _make_temp(root, key)
    except OSError:
        return None
    try:
        files: dict[str, dict] = {}
        runs: list[dict] = []
        body = {"key": key, "root": runset.root, "issues": [dataclasses.asdict(i) for i in runset.issues], "runs": runs, "files": files}
        for index, run in enumerate(runset.runs):
            entry = {
                "meta": _jsonable(dataclasses.asdict(run.meta)),
                "agents": [_jsonable(dataclasses.asdict(a)) for a in run.agents],
                "warnings": list(run.warnings),
                "partial": run.partial,
                "tables": [name for name in TABLES if len(run.table(name))],
                # empty tables whose columns differ from empty_table(name): their schema
                "empty": {name: _empty_spec(run.table(name)) for name in TABLES if not len(run.table(name)) and not _is_empty_schema(name, run.table(name))},
                "tool_stats": sorted(run.tool_stats),
            }
            entry["categories"] = {name: _category_dtypes(run.table(name)) for name in entry["tables"]}
            for name in entry["tables"]:
                check_cancelled()  # a quit while writing: the temporary folder is removed
                files[f"{index}.{name}"] = _write_table(run.table(name), work / f"{index}.{name}.arrow")
            for name, stats in run.tool_stats.items():
                stem = f"{index}.stats.{name}"
                files[stem] = _write_table(stats.reset_index(drop=True), work / f"{stem}.arrow")
            runs.append(entry)
        _write_private(work / MANIFEST, _manifest_bytes(body))
        _install(root, work, key)
        return root / key
    except Exception:  # read-only folder, disk full, a column Arrow cannot store: no entry
        _remove_entry(root, work.name)
        return None
    except BaseException:  # Ctrl-C while writing: leave no temporary folder behind
        _remove_entry(root, work.name)
        raise


def _snapshot(run: Run) -> Run:
    """A copy of ``run`` that later changes to ``run`` leave as it is: the tables as
    shallow copies (pandas' copy-on-write copies a table's data only when one side changes
    it), the facts (meta, agents, warnings) as deep copies (small)."""
    tables = {name: run.table(name).copy(deep=False) for name in TABLES}
    return Run(
        meta=copy.deepcopy(run.meta),
        agents=copy.deepcopy(run.agents),
        tool_stats={name: stats.copy(deep=False) for name, stats in run.tool_stats.items()},
        warnings=list(run.warnings),
        partial=run.partial,
        **tables,
    )


class PendingWrites:
    """The cache entries of one load, written later by :meth:`write` (the TUI writes them
    after its first screen is painted; ``load_path(..., pending=...)`` fills it).

    Each entry is a snapshot of a work unit's fragments as its loader returned them
    (:func:`_snapshot`), so the assembly of the run and the views built on it do not change
    what is written: the entry equals the one :func:`save` writes at once. Written entries
    go through :func:`save` (temporary folder, renamed into place once complete), so a quit
    during :meth:`write` leaves no entry that a later open would read."""

    def __init__(self) -> None:
        self._entries: list[tuple[RunSet, str]] = []
        self._lock = threading.Lock()
        self.keep: set[str] = set()  # the keys of the load: never pruned by its write

    def add(self, runset: RunSet, key: str) -> None:
        """Keep a snapshot of ``runset`` (a unit's fragments and issues) for ``key``."""
        snapshot = RunSet(root=runset.root, runs=[_snapshot(run) for run in runset.runs], issues=list(runset.issues))
        with self._lock:
            self._entries.append((snapshot, key))

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def write(self, cancel: threading.Event | None = None) -> int:
        """Write the entries kept so far, then :func:`prune` to the cache's bound; returns
        how many were written. :func:`~tui_prof.loaders.cancel_loads` (or ``cancel``) stops
        it between two tables and raises :class:`~tui_prof.loaders.base.LoadCancelled`,
        with the entry being written removed."""
        written = 0
        with load_scope(cancel if cancel is not None else threading.Event()):
            while True:
                with self._lock:
                    if not self._entries:
                        break
                    runset, key = self._entries.pop(0)
                check_cancelled()
                if save(runset, key) is not None:
                    written += 1
                del runset  # the snapshot's tables are released as soon as they are written
            if written:  # entries were written: keep the cache within its bound
                prune(keep=self.keep)
        return written


def _install(root: Path, work: Path, key: str) -> None:
    """Rename the finished ``work`` folder to ``root/key``. When an entry is there already,
    a sound one (another process wrote it) is kept and ``work`` dropped; a damaged one is
    replaced."""
    final = root / key
    try:
        replace(work, final)
        return
    except OSError:
        pass
    try:
        _read_manifest(root, key)
        sound = True
    except Exception:  # anything wrong with the entry there: replace it
        sound = False
    if sound:
        _remove_entry(root, work.name)
        return
    _remove_entry(root, key)
    replace(work, final)  # an OSError here: the caller drops work


def load(key: str) -> RunSet | None:
    """The cached entry for ``key``, or None when there is no usable entry."""
    return load_many([key])[0]


def load_many(keys: list[str | None]) -> list[RunSet | None]:
    """The cached entries for ``keys`` (None for a missing or unusable one); the table files
    of all of them are read and verified by one thread pool. A damaged entry (digest,
    schema, manifest or Arrow error) is removed, so the caller's parse replaces it; an entry
    another user owns or can write is left alone and not used."""
    out: list[RunSet | None] = [None] * len(keys)
    if not any(_is_key(key) for key in keys):
        return out
    root = usable_root()
    if root is None:
        return out
    manifests: dict[int, dict] = {}
    damaged: set[int] = set()
    for slot, key in enumerate(keys):
        if not _is_key(key):
            continue
        assert key is not None
        try:
            manifests[slot] = _read_manifest(root, key)
        except FileNotFoundError:
            continue  # no entry
        except Refused as err:
            _warn(f"not using a cache entry: {err}")
        except Exception:  # unreadable, truncated, wrong format: a damaged entry
            damaged.add(slot)
    wanted = []  # (slot, stem, file record)
    for slot, manifest in list(manifests.items()):
        try:
            files = manifest["files"]
            for index, entry in enumerate(manifest["runs"]):
                if not (set(entry["tables"]) <= set(TABLES) and all(map(_STATS_NAME.match, entry["tool_stats"]))):
                    raise Damaged("a table name that the cache does not write")  # never a path elsewhere
                wanted += [(slot, f"{index}.{name}", files[f"{index}.{name}"]) for name in entry["tables"]]
                wanted += [(slot, f"{index}.stats.{name}", files[f"{index}.stats.{name}"]) for name in entry["tool_stats"]]
        except Exception:  # a manifest of the wrong shape
            del manifests[slot]
            damaged.add(slot)
    tables = _read_tables([(slot, root / str(keys[slot]) / f"{stem}.arrow", record) for slot, stem, record in wanted])
    for slot, manifest in manifests.items():
        try:
            out[slot] = _rebuild(manifest, slot, tables)
        except Refused as err:
            _warn(f"not using a cache entry: {err}")
            continue
        except Exception:  # a table that failed its digest, schema or Arrow read
            damaged.add(slot)
            continue
        try:  # the entry's last use, for prune()
            os.utime(root / str(keys[slot]) / MANIFEST, follow_symlinks=False)
        except OSError:
            pass
    for slot in damaged:
        _remove_entry(root, str(keys[slot]))
    return out


def _rebuild(manifest: dict, slot: int, tables: dict) -> RunSet:
    """The run set of a verified manifest and its tables (``tables[(slot, stem)]``: a
    frame, or the exception its read raised)."""

    def table(stem: str) -> pd.DataFrame:
        value = tables[(slot, stem)]
        if isinstance(value, BaseException):
            raise value
        return value

    files = manifest["files"]
    runset = RunSet(root=manifest["root"], issues=[LoadIssue(**i) for i in manifest["issues"]])
    for index, entry in enumerate(manifest["runs"]):
        frames = {}
        for name in TABLES:
            if name in entry["empty"]:
                frames[name] = _rebuild_empty(entry["empty"][name])
            elif name in entry["tables"]:
                stem = f"{index}.{name}"
                frame = _restore_categories(table(stem), entry["categories"].get(name, {}))
                _check_schema(frame, files[stem])
                frames[name] = frame
            else:  # empty with the model's schema: not written
                frames[name] = _empty(name)
        run = Run(  # every table given, so Run() builds no empty defaults
            meta=RunMeta(**entry["meta"]),
            agents=[Agent(**a) for a in entry["agents"]],
            warnings=entry["warnings"],
            partial=entry["partial"],
            **frames,
        )
        for name in entry["tool_stats"]:
            stem = f"{index}.stats.{name}"
            frame = table(stem)
            _check_schema(frame, files[stem])
            run.tool_stats[name] = frame
        runset.runs.append(run)
    return runset


def _check_schema(frame: pd.DataFrame, record: dict) -> None:
    """:class:`Damaged` when a table read back differs in rows or columns from what was
    written (e.g. another pandas or pyarrow converts a column differently)."""
    if len(frame) != record["rows"] or _columns(frame) != record["columns"]:
        raise Damaged("table schema differs from the manifest")


def _scan_path(root: Path, run_dir: Path) -> Path:
    """The scan memo of run directory ``run_dir`` (keyed by its absolute path and this
    version, since sniffers change between versions)."""
    name = hashlib.sha256(f"tuiprof {__version__} scan {CACHE_FORMAT}\n{os.path.abspath(run_dir)}".encode("utf-8", "surrogateescape")).hexdigest()
    return root / SCANS / f"{name[:32]}.json"


def load_scan(root: Path) -> dict:
    """The verdicts of the last scan of ``root`` (see :func:`tui_prof.loaders.detect.scan`);
    empty when there is none, it cannot be read or the cache is not usable. The memo is
    framed and checked like an entry's manifest: a damaged one is removed and ignored, so a
    damaged verdict never outlives the run that finds it."""
    cache = usable_root()
    if cache is None:
        return {}
    path = _scan_path(cache, root)
    try:
        fd = _open_private(path, "cache scan memo")
        with open(fd, "rb") as fh:
            memo = _parse_manifest(fh.read())
    except Refused as err:
        _warn(f"not using a cache scan memo: {err}")
        return {}
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, Damaged):
        _drop(path)
        return {}
    if isinstance(memo, dict) and all(isinstance(v, list) and len(v) == 6 for v in memo.values()):
        return memo
    _drop(path)
    return {}


def _drop(path: Path) -> None:
    """Remove the damaged cache file ``path`` (a link is removed, not followed)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def save_scan(root: Path, memo: dict) -> None:
    """Write the scan memo of ``root`` (checked like a manifest; temporary file + rename; a
    failure is ignored)."""
    cache = usable_root()
    if cache is None:
        return
    target = _scan_path(cache, root)
    try:
        make_private_dir(target.parent, exist_ok=True)
        write_atomic(target, _manifest_bytes(memo), 0o600)
    except OSError:
        pass


def max_bytes() -> int:
    """The cache's size bound: ``TUIPROF_CACHE_MAX_BYTES`` (a whole number of bytes, 0 or
    more; 0 keeps nothing) or :data:`DEFAULT_MAX_BYTES`. Any other value is said once on
    stderr and the default used."""
    text = os.environ.get("TUIPROF_CACHE_MAX_BYTES", "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    value = int(text) if text.isascii() and text.isdigit() and len(text) <= 20 else -1
    if value < 0:
        shown = repr(text[:40] + ("…" if len(text) > 40 else "")).encode("ascii", "backslashreplace").decode()
        _warn(f"TUIPROF_CACHE_MAX_BYTES={shown} is not a whole number of bytes; using the default {DEFAULT_MAX_BYTES} bytes")
        return DEFAULT_MAX_BYTES
    return value


def _entry_bytes(root_fd: int, name: str) -> int:
    """Bytes of the files directly in entry folder ``name`` (links not followed)."""
    total = 0
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root_fd)
    try:
        with os.scandir(fd) as it:
            for item in it:
                try:
                    total += item.stat(follow_symlinks=False).st_size
                except OSError:
                    pass
    finally:
        os.close(fd)
    return total


def prune(keep: set[str], limit: int | None = None, now: float | None = None) -> list[str]:
    """Remove least recently used entries until the cache holds at most ``limit`` bytes
    (default :func:`max_bytes`), except the keys in ``keep``, and temporary folders older
    than :data:`STALE_TEMP_S`. Only folders named by the cache's scheme in a tagged root,
    owned by the current user, are candidates (see the module docstring). Returns the
    removed folder names; never raises."""
    import time

    limit = max_bytes() if limit is None else limit
    now = time.time() if now is None else now
    removed: list[str] = []
    root = usable_root()
    if root is None:
        return removed
    try:
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return removed
    try:
        uid = os.getuid()
        entries = []  # (last use, bytes, name)
        with os.scandir(root_fd) as it:
            names = [item.name for item in it]
        for name in names:
            try:
                info = os.stat(name, dir_fd=root_fd, follow_symlinks=False)
                if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid:
                    continue
                if TEMP_NAME.match(name):  # a temporary folder of save()
                    if now - info.st_mtime > STALE_TEMP_S and _remove_at(root_fd, name):
                        removed.append(name)
                    continue
                if not ENTRY_NAME.match(name):
                    continue
                try:
                    used = os.stat(f"{name}/{MANIFEST}", dir_fd=root_fd, follow_symlinks=False).st_mtime
                except FileNotFoundError:
                    used = info.st_mtime  # no manifest: damaged, last used when it was made
                entries.append((used, _entry_bytes(root_fd, name), name))
            except OSError:
                continue
        total = sum(size for _, size, _ in entries)
        for _used, size, name in sorted(entries):  # oldest use first
            if total <= limit:
                break
            if name in keep:
                continue
            if _remove_at(root_fd, name):
                removed.append(name)
                total -= size
    finally:
        os.close(root_fd)
    return removed


def _schema(frame: pd.DataFrame) -> list[tuple]:
    """(column, dtype, categories and their dtype) of every column."""
    return [
        (str(col), str(dtype), (tuple(dtype.categories), str(dtype.categories.dtype), dtype.ordered) if isinstance(dtype, pd.CategoricalDtype) else None)
        for col, dtype in frame.dtypes.items()
    ]


_EMPTY: dict[str, tuple[pd.DataFrame, list]] = {}


def _empty_template(name: str) -> tuple[pd.DataFrame, list]:
    """``empty_table(name)`` and its schema, built once per process (about 1 ms each)."""
    if name not in _EMPTY:
        frame = empty_table(name)
        _EMPTY[name] = (frame, _schema(frame))
    return _EMPTY[name]


def _empty(name: str) -> pd.DataFrame:
    """A new ``empty_table(name)`` (a copy of the template: 0.1 ms instead of 1 ms)."""
    return _empty_template(name)[0].copy()


def _is_empty_schema(name: str, frame: pd.DataFrame) -> bool:
    """Whether ``frame`` (empty) is exactly ``empty_table(name)``, so it need not be stored."""
    return not len(frame) and type(frame.index) is pd.RangeIndex and _schema(frame) == _empty_template(name)[1]


def _empty_spec(frame: pd.DataFrame) -> list[list]:
    """An empty table's columns as JSON: [name, dtype, categories, categories dtype, ordered]
    (Arrow drops the category list of an empty table)."""
    spec = []
    for col, dtype in frame.dtypes.items():
        if isinstance(dtype, pd.CategoricalDtype):
            spec.append([col, "category", _jsonable(list(dtype.categories)), str(dtype.categories.dtype), bool(dtype.ordered)])
        else:
            spec.append([col, str(dtype), None, "", False])
    return spec


def _rebuild_empty(spec: list[list]) -> pd.DataFrame:
    columns = {}
    for col, dtype, categories, categories_dtype, ordered in spec:
        if dtype == "category":
            dtype = pd.CategoricalDtype(pd.Index(categories, dtype=categories_dtype), ordered)
        columns[col] = pd.Series([], dtype=dtype)
    return pd.DataFrame(columns)


def _category_dtypes(frame: pd.DataFrame) -> dict[str, str]:
    """dtype of the categories of each category column (Arrow reads an empty object-dtype
    category list back as ``str``; the load puts the original back)."""
    return {str(col): str(frame[col].cat.categories.dtype) for col in frame.columns if isinstance(frame[col].dtype, pd.CategoricalDtype)}


def _restore_categories(frame: pd.DataFrame, dtypes: dict[str, str]) -> pd.DataFrame:
    """``frame`` with each category column's categories in its saved dtype (same codes)."""
    for col, dtype in dtypes.items():
        column = frame[col]
        if str(column.cat.categories.dtype) != dtype:
            categories = column.cat.categories.astype(dtype)
            frame[col] = pd.Categorical.from_codes(column.cat.codes, dtype=pd.CategoricalDtype(categories, column.cat.ordered))
    return frame


def _write_table(frame: pd.DataFrame, path: Path) -> dict:
    """One table file (mode 0600): uncompressed, one record batch (Feather's default of 64k
    rows per batch makes every column of a bigger table chunked, which the load must then
    copy into one array; one batch keeps it a view of the mapped file: 5 ms instead of
    250 ms for 5M rows). Returns its manifest record: size, chunk CRCs, rows, columns."""
    with open_new(path, 0o600) as fh:
        frame.to_feather(fh, compression="uncompressed", chunksize=max(1, len(frame)))
    mapped = _map(path, "cache table")
    return {"size": len(mapped), "crcs": _chunk_crcs(mapped), "rows": len(frame), "columns": _columns(frame)}


def _map(path: Path, what: str) -> mmap.mmap:
    """Read-only map of the whole of private file ``path`` (see :func:`_open_private`)."""
    fd = _open_private(path, what)
    try:
        size = os.fstat(fd).st_size
        if not size:
            raise Damaged(f"{path} is empty")
        return mmap.mmap(fd, size, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)


def _read_tables(items: list[tuple[int, Path, dict]]) -> dict[tuple[int, str], pd.DataFrame | Exception]:
    """Table files mapped, checked against their manifest records and read, by a small
    thread pool (CRCs and Arrow's conversion run outside the GIL, so the chunks of one big
    file, and many units -- e.g. one per rank -- are checked and read in parallel). A file
    that cannot be mapped, fails its check or cannot be read maps to the exception raised."""
    from concurrent.futures import ThreadPoolExecutor

    def map_file(item: tuple[int, Path, dict]) -> mmap.mmap | Exception:
        try:
            mapped = _map(item[1], "cache table")
            if len(mapped) != item[2]["size"] or len(item[2]["crcs"]) != -(-len(mapped) // CHECK_CHUNK):
                raise Damaged(f"{item[1]} has another size than its manifest says")
            return mapped
        except Exception as err:  # any failure makes the entry a miss
            return err

    def check(job: tuple[int, int]) -> bool:
        index, chunk = job
        mapped = maps[index]
        assert isinstance(mapped, mmap.mmap)
        start = chunk * CHECK_CHUNK
        return _crc(memoryview(mapped)[start : start + CHECK_CHUNK]) == items[index][2]["crcs"][chunk]

    def read(index: int) -> pd.DataFrame | Exception:
        mapped = maps[index]
        if isinstance(mapped, Exception):
            return mapped
        if not sound[index]:
            return Damaged(f"{items[index][1]} fails its CRC")
        try:
            return _read_feather(mapped)
        except Exception as err:  # an Arrow error: a miss
            return err

    workers = max(1, min(READ_THREADS, os.cpu_count() or 1))
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tuiprof-cache") if workers > 1 and items else None
    run = pool.map if pool is not None else map
    try:
        maps = list(run(map_file, items))
        jobs = [(index, chunk) for index, mapped in enumerate(maps) if not isinstance(mapped, Exception) for chunk in range(len(items[index][2]["crcs"]))]
        sound = [True] * len(items)
        for (index, _chunk), ok in zip(jobs, run(check, jobs), strict=True):
            sound[index] = sound[index] and ok
        frames = list(run(read, range(len(items))))
    finally:
        if pool is not None:
            pool.shutdown()
    return {(slot, path.name[: -len(".arrow")]): frame for (slot, path, _), frame in zip(items, frames, strict=True)}


def _read_feather(mapped: mmap.mmap) -> pd.DataFrame:
    """One table file from its mapping: int/float columns stay views of the mapped bytes
    (split_blocks keeps one block per column, so nothing is copied into 2-D blocks)."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    table = ipc.open_file(pa.py_buffer(mapped)).read_all()
    # use_threads=False: the pool above already parallelises across files
    return table.to_pandas(split_blocks=True, use_threads=False)


def doc_key(kind: str, settings: str, paths: list[str]) -> str | None:
    """The key of a document derived from the files ``paths`` (``kind``: what it is, e.g. a
    rank's partials; ``settings``: what else it depends on): like :func:`unit_key`, each
    file's :func:`_file_state`, so any change to a file or its ``-wal`` gives a new key. None
    when a file cannot be read."""
    digest = hashlib.sha256()
    digest.update(f"tuiprof {__version__} {kind} {CACHE_FORMAT}\n{settings}\n".encode("utf-8", "surrogateescape"))
    try:
        for path in paths:
            digest.update(_file_state(path))
    except OSError:
        return None
    return digest.hexdigest()[:40]


def save_doc(key: str, kind: str, doc: Any, *, finite_only: bool = False) -> bool:
    """Write JSON data ``doc`` as the entry ``key`` (a folder holding only its manifest, made
    and installed as :func:`save` makes a unit's entry, pruned like one); False when the
    cache is not usable or the write fails (nothing is raised), or with ``finite_only`` when
    ``doc`` holds a number that is not finite (JSON would read it back as null)."""
    if not _is_key(key):
        return False
    root = usable_root()
    if root is None:
        return False
    seen = jsonout.NonFinite()
    try:
        data = _manifest_bytes({"key": key, "kind": kind, "doc": doc}, seen)
    except Exception:  # data JSON cannot hold: no entry
        return False
    if finite_only and seen.count:
        return False
    try:
        work = _make_temp(root, key)
    except OSError:
        return False
    try:
        _write_private(work / MANIFEST, data)
        _install(root, work, key)
        return True
    except Exception:  # read-only folder, disk full, data JSON cannot hold: no entry
        _remove_entry(root, work.name)
        return False
    except BaseException:
        _remove_entry(root, work.name)
        raise


def load_doc(key: str | None, kind: str, check: Callable[[Any], Any]) -> Any | None:
    """``check(doc)`` of the entry ``key`` written by :func:`save_doc` for ``kind``, or None
    when there is no usable one. The entry is checked as a unit's is (owner, mode, manifest
    frame and CRC, its key); one that is damaged, or whose data ``check`` refuses (it raises
    ValueError, TypeError or KeyError), is removed; one another user owns or can write is
    left alone and not used."""
    if not _is_key(key):
        return None
    root = usable_root()
    if root is None:
        return None
    assert key is not None
    try:
        body = _read_manifest(root, key)
        if body.get("kind") != kind:
            return None  # not this kind of entry: not ours to judge
        value = check(body["doc"])
    except FileNotFoundError:
        return None
    except Refused as err:
        _warn(f"not using a cache entry: {err}")
        return None
    except Exception:  # unreadable, truncated, wrong format, refused by check: a damaged entry
        _remove_entry(root, key)
        return None
    try:  # the entry's last use, for prune()
        os.utime(root / key / MANIFEST, follow_symlinks=False)
    except OSError:
        pass
    return value
