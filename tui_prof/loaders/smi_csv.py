"""madengine GPU power / VRAM sampler CSVs (``gpu_info_power_profiler_output.csv``,
``gpu_info_vram_profiler_output.csv``), read via rocm-smi / amd-smi / NVML.

No real sample exists in this project. The layout below is read from madengine's writer
(``scripts/common/tools/gpu_info_profiler.py``, found with the code search; repository
not named by the index): a ``csv.DictWriter`` with header
``time,<label> GPU<d>,<label> GPU<d>,...`` where ``<label>`` is ``Power(Watt)`` (power mode,
rocm-smi average socket power in W) or ``vram(%)`` (VRAM mode, memory use in percent), and
``time`` is the sampler's local wall clock formatted ``%Y-%m-%d %H:%M:%S.%f`` (no time zone).
One row per sample period (``SAMPLING_RATE``, default 0.1 s), one column per device.

Mapping: one ``series`` row per (sample, device): ``track`` = "power (W)" or "VRAM (%)",
``agent`` = the device index <d> of the sampler (an smi index, not a KFD node id), ``ts`` =
the wall-clock time as ns since 1970 read as if it were UTC (the file has no zone; this clock
is not the profiler clock of the traces beside it), ``unit`` = "W" or "%". Values that are not
numbers (e.g. "N/A") are dropped. The Run is marked ``series_only`` with its ``directory`` so
:func:`tui_prof.loaders.detect.assemble` attaches it to the runs of that directory.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np
import pandas as pd

from tui_prof.loaders.base import (
    IssueSink,
    LoadError,
    Sniffed,
    csv_complete_rows,
    describe_error,
    first_line,
    read_error,
    read_text,
)
from tui_prof.loaders.specs import SPECS
from tui_prof.model import Run
from tui_prof.model.schema import make_table

LOADER = SPECS["smi_csv"]
FORMAT = LOADER.format

COLUMN = re.compile(r"^(Power\(Watt\)|vram\(%\))\s*GPU\s*(\d+)$", re.IGNORECASE)
TRACKS = {"power(watt)": ("power (W)", "W", "power"), "vram(%)": ("VRAM (%)", "%", "vram")}


def parse_header(line: str) -> list[tuple[int, str, str, int]] | None:
    """[(column index, label, unit, device)] when ``line`` is a madengine sampler header
    (the ``time`` column is first as written; another order is accepted, see :func:`time_column`)."""
    cells = next(csv.reader([line]), [])
    names = [c.strip().lower() for c in cells]
    if len(cells) < 2 or names.count("time") != 1:
        return None
    out = []
    for index, cell in enumerate(cells):
        if names[index] == "time":
            continue
        match = COLUMN.match(cell.strip())
        if not match:
            return None
        track, unit, _ = TRACKS[match.group(1).lower()]
        out.append((index, track, unit, int(match.group(2))))
    return out


def time_column(line: str) -> int:
    """Index of the ``time`` column of a header accepted by :func:`parse_header`."""
    return [c.strip().lower() for c in next(csv.reader([line]), [])].index("time")


def sniff(path: Path, head: bytes) -> Sniffed | None:
    if parse_header(first_line(head)) is None:
        return None
    return Sniffed("samples", group=str(path.parent))


def load(files, issues: IssueSink) -> list[Run]:
    runs = []
    for item in files:
        try:
            runs.append(load_file(Path(item.path), issues))
        except LoadError as err:
            issues.error(item.path, str(err))
        except Exception as err:  # one damaged file must not lose the other files
            issues.error(item.path, f"cannot load: {describe_error(err)}")
    return runs


def load_file(path: Path, issues: IssueSink | None = None) -> Run:
    """One series-only Run per sampler CSV. A last line without its newline (the sampler
    was killed mid-write) is dropped, reported to ``issues`` and the run marked partial."""
    try:
        text = read_text(path)
    except (OSError, EOFError) as err:
        raise LoadError(read_error(err)) from None
    header = first_line(text.encode("utf-8", errors="replace")[:65536])
    columns = parse_header(header)
    if columns is None:
        raise LoadError("not a madengine power/VRAM sampler CSV (header must be time,<Power(Watt)|vram(%)> GPU<n>,...)")
    frame, truncated = csv_complete_rows(text)
    stamps = pd.to_datetime(frame.iloc[:, time_column(header)].str.strip(), format="%Y-%m-%d %H:%M:%S.%f", errors="coerce")
    bad_time = int(stamps.isna().sum())
    ts = stamps.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    parts = []
    for index, track, unit, device in columns:
        values = pd.to_numeric(frame.iloc[:, index].str.strip(), errors="coerce").to_numpy(dtype=np.float64)
        keep = ~np.isnan(values) & stamps.notna().to_numpy()
        n = int(keep.sum())
        parts.append(
            make_table(
                "series",
                {"track": [track] * n, "agent": np.full(n, device), "ts": ts[keep], "value": values[keep], "unit": [unit] * n},
            )
        )
    series = pd.concat(parts, ignore_index=True) if parts else make_table("series", {})
    for col in ("track", "unit"):
        series[col] = series[col].astype(str).astype("category")
    run = Run()
    run.series = series
    run.meta.formats = [FORMAT]
    run.meta.tool = "madengine-gpu-info-profiler"
    run.meta.label = path.name
    run.meta.files = [str(path)]
    run.meta.extra.update({"series_only": True, "directory": str(path.parent), "clock": "local wall clock, read as UTC", "sampler_mode": columns[0][1]})
    if truncated:
        run.partial = True
        if issues is not None:
            issues.error(path, f"truncated: last row cut short and dropped; {len(frame)} complete rows loaded")
    if bad_time:
        run.warnings.append(f"{path.name}: {bad_time} row(s) with an unreadable time were skipped")
    if frame.empty:
        run.warnings.append(f"{path.name}: no samples")
    return run
