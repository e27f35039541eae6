"""Columnar cache of loaded runs, in the user's cache directory (never the run directory).

A run directory's cache entry is keyed by its resolved path and, for every file under it,
the relative path, size, mtime and a hash of its first and last 64 KiB. Any change to any
file gives a new key, so a stale entry is never used. Tables are stored as Arrow IPC
files (Feather v2, uncompressed), which keep category columns as dictionaries; they
are memory-mapped on load, so numeric columns are used in place without a copy and a
million-dispatch run reopens in a fraction of a second (disk cost: about the in-memory
size of the tables). Metadata is one JSON manifest. Entries are written to a temporary folder
and renamed into place, so a crash never leaves a half-written entry.

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
from tui_prof.loaders.base import IssueSink
from tui_prof.model import Agent, LoadIssue, Run, RunMeta, RunSet
from tui_prof.model.schema import TABLES, empty_table

CACHE_FORMAT = 2
READ_THREADS = 4  # table files read concurrently from one entry
EDGE_BYTES = 64 * 1024


def cache_root() -> Path:
    override = os.environ.get("TUIPROF_CACHE_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("tuiprof"))


def _file_fingerprint(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        digest.update(fh.read(EDGE_BYTES))
        size = fh.seek(0, os.SEEK_END)
        if size > EDGE_BYTES:
            fh.seek(max(EDGE_BYTES, size - EDGE_BYTES))
            digest.update(fh.read(EDGE_BYTES))
    return digest.hexdigest()


def cache_key(root: Path, files: list[Path]) -> str | None:
    """The key of ``root`` with these files, or None when a file cannot be read."""
    digest = hashlib.sha256()
    digest.update(f"tuiprof {__version__} cache {CACHE_FORMAT}\n{root.resolve()}\n".encode())
    try:
        for path in files:
            stat = path.stat()
            rel = path.relative_to(root) if path != root else Path(path.name)
            digest.update(f"{rel}\0{stat.st_size}\0{stat.st_mtime_ns}\0{_file_fingerprint(path)}\n".encode())
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
    """Write ``runset`` under ``key``; returns the entry folder, or None if the cache is not writable."""
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
                "tool_stats": sorted(run.tool_stats),
            }
            for name in TABLES:
                run.table(name).to_feather(work / f"{index}.{name}.arrow", compression="uncompressed")
            for name, stats in run.tool_stats.items():
                stats.reset_index(drop=True).to_feather(work / f"{index}.stats.{name}.arrow", compression="uncompressed")
            manifest["runs"].append(entry)
        (work / "manifest.json").write_text(json.dumps(manifest))
        if final.exists():
            shutil.rmtree(final, ignore_errors=True)
        os.replace(work, final)
        return final
    except (OSError, ValueError, TypeError):
        shutil.rmtree(work, ignore_errors=True)
        return None
    except BaseException:  # Ctrl-C while writing: leave no temporary folder behind
        shutil.rmtree(work, ignore_errors=True)
        raise


def load(key: str) -> RunSet | None:
    """The cached run set for ``key``, or None when there is no usable entry."""
    folder = cache_root() / key
    manifest_path = folder / "manifest.json"
    if not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("format") != CACHE_FORMAT:
            return None
        runset = RunSet(root=manifest["root"], issues=[LoadIssue(**i) for i in manifest["issues"]])
        tables = _read_tables(folder, manifest["runs"])
        for index, entry in enumerate(manifest["runs"]):
            run = Run(
                meta=RunMeta(**entry["meta"]),
                agents=[Agent(**a) for a in entry["agents"]],
                warnings=entry["warnings"],
                partial=entry["partial"],
            )
            for name in TABLES:
                table = tables[f"{index}.{name}"]
                # Arrow gives empty category lists an object dtype; keep the model's exact schema.
                setattr(run, name, table if len(table) else empty_table(name))
            for name in entry["tool_stats"]:
                run.tool_stats[name] = tables[f"{index}.stats.{name}"]
            runset.runs.append(run)
        return runset
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _read_tables(folder: Path, runs: list[dict]) -> dict[str, pd.DataFrame]:
    """Every table file of an entry, read by a small thread pool (Arrow decompresses and
    converts outside the GIL, so many runs -- e.g. one per rank -- load in parallel)."""
    from concurrent.futures import ThreadPoolExecutor

    names = []
    for index, entry in enumerate(runs):
        names += [f"{index}.{name}" for name in TABLES]
        names += [f"{index}.stats.{name}" for name in entry["tool_stats"]]
    workers = max(1, min(READ_THREADS, os.cpu_count() or 1))
    if workers == 1 or len(names) <= len(TABLES) + 4:
        return {n: _read_feather(folder / f"{n}.arrow") for n in names}
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tuiprof-cache") as pool:
        return dict(zip(names, pool.map(lambda n: _read_feather(folder / f"{n}.arrow"), names)))


def _read_feather(path: Path) -> pd.DataFrame:
    """One table file, memory-mapped: int/float columns stay views of the mapped file
    (split_blocks keeps one block per column, so nothing is copied into 2-D blocks)."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    with pa.memory_map(str(path)) as source:
        table = ipc.open_file(source).read_all()
    # use_threads=False: the pool above already parallelises across files
    return table.to_pandas(split_blocks=True, use_threads=False)


def files_for_key(root: Path) -> list[Path]:
    """The files whose state makes up the cache key (the same walk the loader does)."""
    from tui_prof.loaders.detect import iter_files

    return iter_files(root, IssueSink())
