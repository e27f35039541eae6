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

``TUIPROF_CACHE_DIR`` overrides the location (tests use it).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd

from tui_prof import __version__
from tui_prof.model import Agent, LoadIssue, Run, RunMeta, RunSet
from tui_prof.model.schema import TABLES, empty_table

CACHE_FORMAT = 3  # 3: one entry per work unit, empty tables omitted, ctime in the key
READ_THREADS = 4  # table files read concurrently
EDGE_BYTES = 4 * 1024  # bytes hashed at each end of every file
DEFAULT_MAX_BYTES = 10 * 1024**3  # total size kept by prune()
STALE_TEMP_S = 3600  # a temporary folder this old belongs to a writer that died
SCANS = "scans"  # sub-folder of the scan memos (a few KB per run directory; not entries)


def cache_root() -> Path:
    override = os.environ.get("TUIPROF_CACHE_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("tuiprof"))


def _edge_hash(path: Path, size: int) -> str:
    """blake2b of the first and last ``EDGE_BYTES`` of a file of ``size`` bytes."""
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
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
            stat = os.stat(item.path)
            digest.update(
                f"{item.path}\0{os.path.abspath(item.path)}\0{item.kind}\0{item.group}\0{stat.st_size}\0"
                f"{stat.st_mtime_ns}\0{stat.st_ctime_ns}\0{_edge_hash(item.path, stat.st_size)}\n".encode()
            )
    except OSError:
        return None
    return digest.hexdigest()[:40]


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


def save(runset: RunSet, key: str) -> Path | None:
    """Write ``runset`` (a unit's fragments and issues) under ``key``; returns the entry
    folder, or None when the cache is not writable (nothing is raised)."""
    root = cache_root()
    final = root / key
    try:
        root.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=root))
    except OSError:
        return None
    try:
        manifest = {"format": CACHE_FORMAT, "root": runset.root, "issues": [dataclasses.asdict(i) for i in runset.issues], "runs": []}
        for index, run in enumerate(runset.runs):
            entry = {
                "meta": _jsonable(dataclasses.asdict(run.meta)),
                "agents": [_jsonable(dataclasses.asdict(a)) for a in run.agents],
                "warnings": list(run.warnings),
                "partial": run.partial,
                "tables": [name for name in TABLES if len(run.table(name))],
                # empty tables whose columns differ from empty_table(name): their schema
                "empty": {name: _empty_spec(run.table(name)) for name in TABLES
                          if not len(run.table(name)) and not _is_empty_schema(name, run.table(name))},
                "tool_stats": sorted(run.tool_stats),
            }
            entry["categories"] = {name: _category_dtypes(run.table(name)) for name in entry["tables"]}
            for name in entry["tables"]:
                _write_table(run.table(name), work / f"{index}.{name}.arrow")
            for name, stats in run.tool_stats.items():
                _write_table(stats.reset_index(drop=True), work / f"{index}.stats.{name}.arrow")
            manifest["runs"].append(entry)
        (work / "manifest.json").write_text(json.dumps(manifest))
        try:
            os.replace(work, final)
        except OSError:  # an entry of the same key is there already (another process wrote it)
            if not (final / "manifest.json").is_file():
                shutil.rmtree(final, ignore_errors=True)
                os.replace(work, final)
            else:
                shutil.rmtree(work, ignore_errors=True)
        return final
    except Exception:  # read-only folder, disk full, a column Arrow cannot store: no entry
        shutil.rmtree(work, ignore_errors=True)
        return None
    except BaseException:  # Ctrl-C while writing: leave no temporary folder behind
        shutil.rmtree(work, ignore_errors=True)
        raise


def load(key: str) -> RunSet | None:
    """The cached entry for ``key``, or None when there is no usable entry."""
    return load_many([key])[0]


def load_many(keys: list[str | None]) -> list[RunSet | None]:
    """The cached entries for ``keys`` (None for a missing or unusable one); the table files
    of all of them are read by one thread pool."""
    manifests: dict[int, dict] = {}
    for slot, key in enumerate(keys):
        if not key:
            continue
        try:
            manifest = json.loads((cache_root() / key / "manifest.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(manifest, dict) and manifest.get("format") == CACHE_FORMAT:
            manifests[slot] = manifest
    files = []  # (slot, file stem)
    for slot, manifest in manifests.items():
        try:
            for index, entry in enumerate(manifest["runs"]):
                files += [(slot, f"{index}.{name}") for name in entry["tables"]]
                files += [(slot, f"{index}.stats.{name}") for name in entry["tool_stats"]]
        except (KeyError, TypeError):
            continue
    tables = _read_tables([(slot, cache_root() / keys[slot] / f"{stem}.arrow") for slot, stem in files])
    out: list[RunSet | None] = [None] * len(keys)
    for slot, manifest in manifests.items():
        try:
            runset = RunSet(root=manifest["root"], issues=[LoadIssue(**i) for i in manifest["issues"]])
            for index, entry in enumerate(manifest["runs"]):
                frames = {}
                for name in TABLES:
                    if name in entry["empty"]:
                        frames[name] = _rebuild_empty(entry["empty"][name])
                    elif name in entry["tables"]:
                        frames[name] = _restore_categories(tables[(slot, f"{index}.{name}")], entry["categories"].get(name, {}))
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
                    run.tool_stats[name] = tables[(slot, f"{index}.stats.{name}")]
                runset.runs.append(run)
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a table file missing or unreadable: a miss
        out[slot] = runset
        try:  # the entry's last use, for prune()
            os.utime(cache_root() / keys[slot] / "manifest.json")
        except OSError:
            pass
    return out


def _scan_path(root: Path) -> Path:
    """The scan memo of run directory ``root`` (keyed by its absolute path and this
    version, since sniffers change between versions)."""
    name = hashlib.sha256(f"tuiprof {__version__} scan {CACHE_FORMAT}\n{os.path.abspath(root)}".encode()).hexdigest()
    return cache_root() / SCANS / f"{name[:32]}.json"


def load_scan(root: Path) -> dict:
    """The verdicts of the last scan of ``root`` (see :func:`tui_prof.loaders.detect.scan`);
    empty when there is none or it cannot be read."""
    try:
        memo = json.loads(_scan_path(root).read_text())
    except (OSError, ValueError):
        return {}
    return memo if isinstance(memo, dict) and all(isinstance(v, list) and len(v) == 6 for v in memo.values()) else {}


def save_scan(root: Path, memo: dict) -> None:
    """Write the scan memo of ``root`` (temporary file + rename; a failure is ignored)."""
    target = _scan_path(root)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".scan.", dir=target.parent)
        with os.fdopen(fd, "w") as fh:
            json.dump(memo, fh)
        os.replace(temp, target)
    except OSError:
        try:
            os.unlink(temp)
        except (OSError, UnboundLocalError):
            pass


def max_bytes() -> int:
    """The cache's size bound: ``TUIPROF_CACHE_MAX_BYTES`` or :data:`DEFAULT_MAX_BYTES`."""
    try:
        value = int(os.environ.get("TUIPROF_CACHE_MAX_BYTES", ""))
    except ValueError:
        return DEFAULT_MAX_BYTES
    return value if value >= 0 else DEFAULT_MAX_BYTES


def _folder_bytes(folder: Path) -> int:
    total = 0
    with os.scandir(folder) as it:
        for item in it:
            try:
                total += item.stat(follow_symlinks=False).st_size
            except OSError:
                pass
    return total


def prune(keep: set[str], limit: int | None = None, now: float | None = None) -> list[str]:
    """Remove least recently used entries until the cache holds at most ``limit`` bytes
    (default :func:`max_bytes`), except the keys in ``keep``, and temporary folders older
    than :data:`STALE_TEMP_S`. Returns the removed folder names; never raises."""
    import time

    limit = max_bytes() if limit is None else limit
    now = time.time() if now is None else now
    removed: list[str] = []
    entries = []  # (last use, bytes, name)
    try:
        with os.scandir(cache_root()) as it:
            folders = [item for item in it if item.is_dir(follow_symlinks=False)]
    except OSError:
        return removed
    for item in folders:
        try:
            if item.name.startswith("."):  # a temporary folder of save()
                if now - item.stat(follow_symlinks=False).st_mtime > STALE_TEMP_S:
                    shutil.rmtree(item.path, ignore_errors=True)
                    removed.append(item.name)
                continue
            used = os.stat(os.path.join(item.path, "manifest.json")).st_mtime
            entries.append((used, _folder_bytes(Path(item.path)), item.name))
        except OSError:
            continue
    total = sum(size for _, size, _ in entries)
    for used, size, name in sorted(entries):  # oldest use first
        if total <= limit:
            break
        if name in keep:
            continue
        shutil.rmtree(cache_root() / name, ignore_errors=True)
        removed.append(name)
        total -= size
    return removed


def _schema(frame: pd.DataFrame) -> list[tuple]:
    """(column, dtype, categories and their dtype) of every column."""
    return [(str(col), str(dtype), (tuple(dtype.categories), str(dtype.categories.dtype), dtype.ordered)
             if isinstance(dtype, pd.CategoricalDtype) else None)
            for col, dtype in frame.dtypes.items()]


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
    return {str(col): str(frame[col].cat.categories.dtype)
            for col in frame.columns if isinstance(frame[col].dtype, pd.CategoricalDtype)}


def _restore_categories(frame: pd.DataFrame, dtypes: dict[str, str]) -> pd.DataFrame:
    """``frame`` with each category column's categories in its saved dtype (same codes)."""
    for col, dtype in dtypes.items():
        column = frame[col]
        if str(column.cat.categories.dtype) != dtype:
            categories = column.cat.categories.astype(dtype)
            frame[col] = pd.Categorical.from_codes(column.cat.codes, dtype=pd.CategoricalDtype(categories, column.cat.ordered))
    return frame


def _write_table(frame: pd.DataFrame, path: Path) -> None:
    """One table file: uncompressed, one record batch (Feather's default of 64k rows per
    batch makes every column of a bigger table chunked, which the load must then copy into
    one array; one batch keeps it a view of the mapped file: 5 ms instead of 250 ms for 5M rows)."""
    frame.to_feather(path, compression="uncompressed", chunksize=max(1, len(frame)))


def _read_tables(paths: list[tuple[int, Path]]) -> dict[tuple[int, str], pd.DataFrame]:
    """Table files read by a small thread pool (Arrow converts outside the GIL, so many
    units -- e.g. one per rank -- load in parallel); a file that cannot be read is left out."""
    from concurrent.futures import ThreadPoolExecutor

    def read(item):
        try:
            return _read_feather(item[1])
        except (OSError, ValueError):
            return None

    workers = max(1, min(READ_THREADS, os.cpu_count() or 1))
    if workers == 1 or len(paths) <= len(TABLES) + 4:
        frames = [read(item) for item in paths]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tuiprof-cache") as pool:
            frames = list(pool.map(read, paths))
    return {(slot, path.name[: -len(".arrow")]): frame for (slot, path), frame in zip(paths, frames) if frame is not None}


def _read_feather(path: Path) -> pd.DataFrame:
    """One table file, memory-mapped: int/float columns stay views of the mapped file
    (split_blocks keeps one block per column, so nothing is copied into 2-D blocks)."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    with pa.memory_map(str(path)) as source:
        table = ipc.open_file(source).read_all()
    # use_threads=False: the pool above already parallelises across files
    return table.to_pandas(split_blocks=True, use_threads=False)
