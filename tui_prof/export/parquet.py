"""``tuiprof export PATH --parquet OUT_DIR``: the run model and the analysis tables as Parquet.

One file per table, each table of every process of the run set concatenated, with a
leading ``process`` column (int32, the row of ``processes.parquet``):

* model tables: every table of :data:`tui_prof.model.schema.TABLES` (kernels, api, copies,
  allocations, scratch, markers, counters, series, pc_samples), ``agents`` and
  ``processes`` (from the :class:`~tui_prof.model.Run` records, one column per field), and
  each statistics table the profiler wrote (``tool_stats_<name>``). Columns and dtypes are
  the model's own (the schema is iterated, so a column added to it is exported too): times
  int64 ns, strings as Parquet dictionaries (pandas reads them back as ``category``), -1
  for an unknown integer, NaN for an unknown float;
* analysis tables: ``hotspots_by_<grouping>`` (name, normalized, category, agent, pid),
  ``gaps`` (every idle gap >= the threshold with its cause and the API call before it) and
  ``findings``.

Tables are converted with pyarrow's ``Table.from_pandas`` (the conversion the cache uses
for its Arrow files, :mod:`tui_prof.loaders.cache`), which keeps pandas' schema in the
file, so ``pandas.read_parquet`` gives back the exact dtypes. ``README.md`` in the folder
lists each file's columns, dtypes and units. The folder holds a manifest
(:data:`MANIFEST`, written after the last file: :func:`check_export`) of what was written:
an export replaces only a folder a previous export wrote, and refuses a folder holding
anything else. The folder is written through :mod:`tui_prof.guard.write`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from tui_prof import __version__
from tui_prof.analysis.api import GAP_COLUMNS, SummaryResult, all_kernels, hotspots, process_order, run_codes, run_inputs, wall_ns
from tui_prof.export.common import ExportError, analyse, check_destination
from tui_prof.guard import jsonout
from tui_prof.guard.write import WriteRefused, atomic_folder, open_existing, open_new, write_new
from tui_prof.model import Agent, RunMeta, RunSet
from tui_prof.model.schema import CATEGORY, TABLES, concat_tables

MANIFEST = ".tuiprof-export.json"
README = "README.md"
MANIFEST_KIND = "tuiprof.parquet-export/1"
PROCESS = "process"
GROUPINGS = ("name", "normalized", "category", "agent", "pid")
ANALYSIS_TABLES = tuple(f"hotspots_by_{g}" for g in GROUPINGS) + ("gaps", "findings")
RECORD_TABLES = ("processes", "agents")
_STATS_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
_OUR_FILE = re.compile(r"(README\.md|[A-Za-z0-9_][A-Za-z0-9_.-]*\.parquet)\Z")
COMPRESSION = "zstd"

# Units and meanings of column names, for README.md (a column not listed gets its dtype only).
UNITS = {
    "start": "ns",
    "end": "ns",
    "ts": "ns",
    "bytes": "bytes",
    "lds_bytes": "bytes per workgroup",
    "scratch_bytes": "bytes per work-item",
    "memory_bytes": "bytes",
    "lds_bytes_per_cu": "bytes",
    "max_clock_mhz": "MHz",
    "percent": "% of summed kernel time",
    "pct_wall": "% of the run's wall time",
    "grid_x": "work-items",
    "grid_y": "work-items",
    "grid_z": "work-items",
    "wg_x": "work-items",
    "wg_y": "work-items",
    "wg_z": "work-items",
}
MEANINGS = {
    PROCESS: "row of processes.parquet (the process the row belongs to)",
    "agent": "agent id (agents.parquet id)",
    "src_agent": "agent id of the copy's source",
    "dst_agent": "agent id of the copy's destination",
    "pid": "process id",
    "tid": "host thread id",
    "correlation_id": "links GPU work to the API call that launched it",
    "name": "name as the profiler wrote it",
    "cause": "graph, sync, copy, launch or other (docs/metrics.md)",
    "api_cause": "API call that decided the cause",
    "api_before": "last API call that started before the gap",
    "prev_name": "kernel or copy before the gap",
    "next_name": "kernel or copy after the gap",
    "numbers": "JSON object: the numbers behind the finding",
    "extra": "JSON object: everything else the format records",
    "formats": "JSON list of the input formats",
    "files": "JSON list of the files that contributed data",
}
TABLE_DOCS = {
    "processes": "One row per profiled process (the run set's runs, in order).",
    "agents": "One row per CPU/GPU agent of each process.",
    "gaps": "Every GPU idle gap at least the threshold long, with its probable cause (docs/metrics.md).",
    "findings": "Ranked findings: severity, code, message, the numbers behind it and the fix.",
}


def _unit(column: str) -> str:
    if column in UNITS:
        return UNITS[column]
    if column.endswith("_ns"):
        return "ns"
    if column.endswith("_bytes"):
        return "bytes"
    return ""


def _with_process(frames: list[pd.DataFrame], concat: Callable[[list[pd.DataFrame]], pd.DataFrame]) -> pd.DataFrame:
    """The frames (one per process) as one, with the leading ``process`` column."""
    table = concat(frames).reset_index(drop=True)
    process = np.repeat(np.arange(len(frames), dtype=np.int32), [len(f) for f in frames])
    table.insert(0, PROCESS, process)
    return table


def model_table(runset: RunSet, name: str) -> pd.DataFrame:
    """Model table ``name`` of every process, concatenated, with the ``process`` column."""
    return _with_process([run.table(name) for run in runset.runs], lambda frames: concat_tables(name, frames))


def _record_frame(records: list[dict], fields: Iterable[dataclasses.Field]) -> pd.DataFrame:
    """One column per dataclass field, typed by its annotation: ``int`` (or ``int | None``)
    -> int64 with -1 for None, ``bool`` -> bool, ``str`` -> category, lists and dicts -> JSON
    text (category), anything else -> its text (category)."""
    columns: dict[str, pd.Series] = {}
    for f in fields:
        values = [r[f.name] for r in records]
        kind = str(f.type).split("[")[0].split("|")[0].strip()
        if kind == "int":
            columns[f.name] = pd.Series([-1 if v is None else int(v) for v in values], dtype="int64")
        elif kind == "bool":
            columns[f.name] = pd.Series([bool(v) for v in values], dtype="bool")
        elif kind in ("list", "dict"):
            columns[f.name] = _strings([jsonout.dumps(v, default=str) for v in values])
        else:
            columns[f.name] = _strings(["" if v is None else str(v) for v in values])
    return pd.DataFrame(columns)


def _strings(values: list[str]) -> pd.Series:
    return pd.Series(values, dtype="str").astype(CATEGORY)


def processes_table(runset: RunSet) -> pd.DataFrame:
    """One row per run: every :class:`~tui_prof.model.RunMeta` field, then ``partial`` and
    the number of warnings."""
    records = []
    for run in runset.runs:
        records.append(dataclasses.asdict(run.meta))
    frame = _record_frame(records, dataclasses.fields(RunMeta))
    frame.insert(0, PROCESS, np.arange(len(runset.runs), dtype=np.int32))
    frame["partial"] = pd.Series([run.partial for run in runset.runs], dtype="bool")
    frame["warnings"] = pd.Series([len(run.warnings) for run in runset.runs], dtype="int64")
    return frame


def agents_table(runset: RunSet) -> pd.DataFrame:
    """One row per agent of each run: every :class:`~tui_prof.model.Agent` field."""
    records, process = [], []
    for index, run in enumerate(runset.runs):
        for agent in run.agents:
            records.append(dataclasses.asdict(agent))
            process.append(index)
    frame = _record_frame(records, dataclasses.fields(Agent))
    frame.insert(0, PROCESS, np.array(process, dtype=np.int32))
    return frame


def tool_stats_names(runset: RunSet) -> list[str]:
    return sorted({name for run in runset.runs for name in run.tool_stats if _STATS_NAME.match(name)})


def tool_stats_table(runset: RunSet, name: str) -> pd.DataFrame:
    frames = [run.tool_stats.get(name, pd.DataFrame()) for run in runset.runs]
    return _categorical_strings(_with_process(frames, lambda fs: pd.concat(fs, ignore_index=True)))


def _categorical_strings(frame: pd.DataFrame) -> pd.DataFrame:
    """String (and object) columns as categories: names dictionary-encoded."""
    for column in frame.columns:
        dtype = frame[column].dtype
        if not isinstance(dtype, pd.CategoricalDtype) and (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)):
            frame[column] = frame[column].astype("str").astype(CATEGORY)
    return frame


def hotspots_table(runset: RunSet, by: str) -> pd.DataFrame:
    """:func:`~tui_prof.analysis.hotspots.hotspots` of every kernel grouped ``by``, with % of
    wall; the first column is named after the grouping."""
    kernels = all_kernels(runset)
    processes = process_order(kernels, run_codes(runset)) if len(kernels) else None
    table = hotspots(kernels, by=by, wall_ns=wall_ns(run_inputs(runset)), processes=processes)
    table = table.rename(columns={"name": by}).reset_index(drop=True)
    if by in ("agent", "pid"):
        table[by] = table[by].astype("int64")
    else:
        table[by] = table[by].astype("str").astype(CATEGORY)
    return table


def gaps_table(analysis: SummaryResult, runs: int) -> pd.DataFrame:
    """Every gap of every process (process, then agent and time order)."""
    frames = [analysis.gaps[i].frame() if i in analysis.gaps else pd.DataFrame({c: [] for c in GAP_COLUMNS}) for i in range(runs)]
    frames = [f.astype({"agent": "int64", "start": "int64", "end": "int64", "duration_ns": "int64"}) for f in frames]
    table = _with_process(frames, lambda fs: pd.concat(fs, ignore_index=True))
    for column in ("cause", "api_cause", "api_before", "prev_name", "next_name"):
        table[column] = table[column].astype("str").astype(CATEGORY)
    return table


def findings_table(analysis: SummaryResult) -> pd.DataFrame:
    rows = analysis.summary["findings"]
    frame = pd.DataFrame(
        {
            "rank": pd.Series(range(1, len(rows) + 1), dtype="int64"),
            "severity": pd.Series([f["severity"] for f in rows], dtype="str").astype(CATEGORY),
            "code": pd.Series([f["code"] for f in rows], dtype="str").astype(CATEGORY),
            "message": pd.Series([f["message"] for f in rows], dtype="str"),
            "numbers": pd.Series([jsonout.dumps(f["numbers"], default=str) for f in rows], dtype="str"),
            "fix": pd.Series([f["fix"] for f in rows], dtype="str"),
        }
    )
    return frame


def available_tables(runset: RunSet) -> list[str]:
    """Every table name ``--tables`` accepts for this run set, in the order they are written."""
    return list(RECORD_TABLES) + list(TABLES) + [f"tool_stats_{n}" for n in tool_stats_names(runset)] + list(ANALYSIS_TABLES)


def build_table(runset: RunSet, name: str, analysis: Callable[[], SummaryResult]) -> pd.DataFrame:
    if name == "processes":
        return processes_table(runset)
    if name == "agents":
        return agents_table(runset)
    if name in TABLES:
        return model_table(runset, name)
    if name.startswith("tool_stats_"):
        return tool_stats_table(runset, name[len("tool_stats_") :])
    if name.startswith("hotspots_by_"):
        return hotspots_table(runset, name[len("hotspots_by_") :])
    if name == "gaps":
        return gaps_table(analysis(), len(runset.runs))
    if name == "findings":
        return findings_table(analysis())
    raise ExportError(f"unknown table {name!r}")


def _doc_of(name: str) -> str:
    if name in TABLE_DOCS:
        return TABLE_DOCS[name]
    if name in TABLES:
        return TABLES[name].doc
    if name.startswith("tool_stats_"):
        return f"The profiler's own statistics file {name[len('tool_stats_') :]!r}, as it wrote it."
    if name.startswith("hotspots_by_"):
        return f"Kernel time grouped by {name[len('hotspots_by_') :]}: calls, total, mean, median, min, max, stddev, % of kernel time and of wall."
    return ""


def readme_text(runset_root: str, written: dict[str, _Sized], threshold_ns: int | None) -> str:
    lines = [
        "# tuiprof Parquet export",
        "",
        f"Written by tuiprof {__version__} from `{runset_root}`. One file per table; every row of a",
        "model table carries `process`, the row of `processes.parquet` it belongs to.",
        "Times are int64 nanoseconds on the profiler's clock; strings are dictionary-encoded",
        "(pandas reads them as `category`); an integer the format does not record is -1, a float NaN.",
        "",
        "```python",
        "import pandas as pd",
        'kernels = pd.read_parquet("kernels.parquet")',
        'print(kernels.assign(dur=kernels.end - kernels.start).groupby("name", observed=True).dur.sum().nlargest(10))',
        "```",
        "",
    ]
    if threshold_ns is not None and "gaps" in written:
        lines += [f"Gaps: idle intervals of at least {threshold_ns} ns.", ""]
    for name, frame in written.items():
        lines += [f"## {name}.parquet ({len(frame)} rows)", "", _doc_of(name), "", "| column | dtype | unit / meaning |", "|---|---|---|"]
        for column, dtype in frame.dtypes.items():
            shown = "dictionary string" if isinstance(dtype, pd.CategoricalDtype) else str(dtype)
            about = ", ".join(x for x in (_unit(str(column)), MEANINGS.get(str(column), "")) if x)
            lines.append(f"| `{column}` | {shown} | {about} |")
        lines.append("")
    return "\n".join(lines)


def _previous_files(folder: Path) -> list[str] | None:
    """The files a previous export listed in ``folder``'s manifest, or None when there is no
    readable tuiprof manifest (the manifest is read without following a link or blocking)."""
    try:
        with open_existing(folder / MANIFEST) as fh:
            manifest = json.loads(fh.read(1 << 20))
        if manifest.get("kind") == MANIFEST_KIND:
            return [str(f) for f in manifest.get("files", [])]
    except (OSError, ValueError, AttributeError):
        pass
    return None


def _check_replaceable(folder: Path) -> list[str]:
    """The entries of the existing ``folder`` when an export may replace it: empty, or
    holding only what a previous export listed in its manifest (a regular file or a link
    named as this exporter names its files; nothing is followed). :class:`ExportError`
    otherwise. A folder that is not a real folder of the current user is refused by
    :func:`tui_prof.guard.write.atomic_folder`."""
    present = sorted(os.listdir(folder))
    if not present:
        return present
    previous = _previous_files(folder) or []
    ours = {f for f in previous if _OUR_FILE.match(f)} | {MANIFEST}
    foreign = [f for f in present if f not in ours or stat.S_ISDIR(os.lstat(folder / f).st_mode)]
    if foreign or not previous:
        raise ExportError(f"refusing to write into {str(folder)!r}: it holds files tuiprof did not write (e.g. {foreign[0] if foreign else present[0]!r})")
    return present


def _clear(folder: Path) -> None:
    """Remove the previous export at ``folder`` (checked again: it may have changed while
    the new one was built); a link in it is removed, never followed."""
    for name in _check_replaceable(folder):
        os.unlink(folder / name)
    os.rmdir(folder)


def check_export(folder: str | os.PathLike) -> list[str]:
    """What is wrong with the export folder ``folder`` (empty: complete). A complete export
    has a manifest, written after its last file, listing every file with its size."""
    base = Path(os.fspath(folder))
    try:
        with open_existing(base / MANIFEST) as fh:
            manifest = json.loads(fh.read(1 << 20))
    except (OSError, ValueError) as err:
        return [f"no readable manifest ({err.__class__.__name__}): the export is incomplete"]
    if not isinstance(manifest, dict) or manifest.get("kind") != MANIFEST_KIND or not isinstance(manifest.get("sizes"), dict):
        return ["the manifest is not a complete tuiprof export manifest"]
    problems = []
    for name, size in manifest["sizes"].items():
        try:
            info = os.lstat(base / name)
        except OSError:
            problems.append(f"{name}: missing")
            continue
        if not stat.S_ISREG(info.st_mode) or info.st_size != size:
            problems.append(f"{name}: {info.st_size} bytes, the manifest says {size}")
    return problems


def to_arrow(frame: pd.DataFrame):
    """``frame`` as a ``pyarrow.Table``: the one conversion of a table to Arrow (the Parquet
    export and ``tuiprof sql``; the cache's Feather files go through the same
    ``Table.from_pandas``). Numeric columns without nulls and category codes are not copied;
    categories become dictionary columns."""
    import pyarrow as pa

    return pa.Table.from_pandas(frame, preserve_index=False)


def export_parquet(
    runset: RunSet,
    out_dir: str | os.PathLike,
    tables: list[str] | None = None,
    *,
    gap_threshold_ns: int | None = None,
    progress: Callable[[str], None] | None = None,
    analysis: SummaryResult | None = None,
) -> dict[str, Path]:
    """Write the tables ``tables`` (None: all of :func:`available_tables`) of ``runset`` into
    the folder ``out_dir``; returns ``name -> file``. ``analysis``: the run set's summary
    when the caller has it (the TUI's), else computed here when a table needs it. The folder is built under a temporary
    name beside ``out_dir`` (mode 0700, the manifest written after the last table) and
    renamed into place, replacing a previous export there: ``out_dir`` is never seen half
    written. Raises :class:`ExportError` for a destination inside the run, a link, a folder
    holding other files or another user's, or an unknown table name."""
    names = available_tables(runset)
    if tables is None:
        chosen = names
    else:
        unknown = [t for t in tables if t not in names]
        if unknown:
            raise ExportError(f"unknown table {unknown[0]!r} (tables of this run: {', '.join(names)})")
        chosen = [t for t in names if t in tables]
    folder = check_destination(out_dir, runset.root)
    try:
        if os.path.isdir(folder) and not os.path.islink(folder):
            _check_replaceable(folder)  # before the analysis: a refusal comes at once
        with atomic_folder(folder, _clear) as work:
            written = _write_tables(runset, work, chosen, gap_threshold_ns, progress, analysis)
    except WriteRefused as err:
        raise ExportError(str(err)) from None
    return {name: folder / f"{name}.parquet" for name in written}


def _write_tables(
    runset: RunSet,
    work: Path,
    chosen: list[str],
    gap_threshold_ns: int | None,
    progress: Callable[[str], None] | None,
    analysis: SummaryResult | None = None,
) -> dict[str, _Sized]:
    """Every chosen table, the README and (last) the manifest into the new folder ``work``."""
    # imported here, not at the top: the TUI imports this module, and pyarrow would add to its start-up
    import pyarrow.parquet as pq

    cached: list[SummaryResult] = [analysis] if analysis is not None else []

    def summary_result() -> SummaryResult:
        if not cached:
            if progress:
                progress("analysing")
            cached.append(analyse(runset, gap_threshold_ns))
        return cached[0]

    written: dict[str, _Sized] = {}
    for name in chosen:
        if progress:
            progress(name)
        frame = build_table(runset, name, summary_result)
        table = to_arrow(frame)
        with open_new(work / f"{name}.parquet", 0o600) as fh:
            pq.write_table(table, fh, compression=COMPRESSION)
        written[name] = _Sized(frame)
    threshold = cached[0].summary["gaps"]["threshold_ns"] if cached else None
    write_new(work / README, readme_text(runset.root, written, threshold).encode("utf-8"))
    files = [f"{name}.parquet" for name in written] + [README]
    sizes = {f: os.lstat(work / f).st_size for f in files}
    manifest = {"kind": MANIFEST_KIND, "tuiprof_version": __version__, "files": files, "sizes": sizes}
    write_new(work / MANIFEST, jsonout.dumps(manifest).encode("utf-8"))
    return written


class _Sized:
    """A table's schema and row count for :func:`readme_text` (the rows are not kept)."""

    def __init__(self, frame: pd.DataFrame):
        self.dtypes = frame.dtypes
        self.rows = len(frame)

    def __len__(self) -> int:
        return self.rows
