"""rocprofv3 ``-S/--summary`` tables: ``summary.txt`` (``--summary-output-file``) or the same
text captured from stdout.

Layout (sample ``rocprofv3-docs-rocm7/summary.txt``; formats.md §2): one block per domain::

    ROCPROFV3 KERNEL_DISPATCH SUMMARY:

    |   NAME   |     DOMAIN      |  CALLS  | DURATION (nsec) | AVERAGE (nsec) | PERCENT (INC) | MIN (nsec) | MAX (nsec) | STDDEV |
    |----------|-----------------|---------|-----------------|----------------|---------------|------------|------------|--------|
    | kernel   | KERNEL_DISPATCH |       8 |          184324 |      2.304e+04 |     40.681542 |      11200 |      98802 | 3.062e+04 |

and a last ``ROCPROFV3 SUMMARY:`` block over every domain (not kept: its rows repeat the
domain blocks). Durations are in the unit the header names (``nsec``, ``usec``, ``msec``,
``sec``: ``rocprofv3 -u``) and converted to ns. ``PERCENT (INC)`` is the share of the
domain's total. A name may itself contain ``|``: the eight cells after it are taken from
the right. Each domain block becomes a ``Run.tool_stats`` table (key as the rocprofv3
``--stats`` file of that domain, e.g. ``kernel_stats``); one run per file, no trace rows.
Other lines (the application's own stdout) are ignored.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from tui_prof.loaders.base import IssueSink, LoadError, Sniffed, check_stats, describe_error, read_error, read_text
from tui_prof.loaders.specs import SPECS
from tui_prof.model import Run
from tui_prof.model.schema import STATS_COLUMNS

LOADER = SPECS["rocprofv3_summary"]
FORMAT = LOADER.format

BLOCK = re.compile(r"^ROCPROFV3 (?:(\w+) )?SUMMARY:\s*$")  # no domain: the block over every domain
HEADER = re.compile(r"^\|\s*NAME\s*\|\s*DOMAIN\s*\|\s*CALLS\s*\|\s*DURATION \((\w+)\)", re.IGNORECASE)
UNITS = {"nsec": 1, "usec": 1_000, "msec": 1_000_000, "sec": 1_000_000_000}
# summary domain -> tool_stats key (the rocprofv3 --stats file of that domain)
KEY_OF = {
    "KERNEL_DISPATCH": "kernel_stats",
    "HIP_API": "hip_api_stats",
    "HSA_API": "hsa_api_stats",
    "MARKER_API": "marker_api_stats",
    "RCCL_API": "rccl_api_stats",
    "ROCDECODE_API": "rocdecode_api_stats",
    "ROCJPEG_API": "rocjpeg_api_stats",
    "MEMORY_COPY": "memory_copy_stats",
    "MEMORY_ALLOCATION": "memory_allocation_stats",
    "SCRATCH_MEMORY": "scratch_memory_stats",
    "COUNTER_COLLECTION": "counter_collection_stats",
}


def sniff(path: Path, head: bytes) -> Sniffed | None:
    text = head.decode("utf-8", errors="replace")
    if not any(BLOCK.match(line.strip()) for line in text.splitlines()):
        return None
    return Sniffed("summary", group=str(path))


def parse_summary(text: str) -> dict[str, pd.DataFrame]:
    """tool_stats key -> a ``STATS_COLUMNS`` table, for each domain block of ``text``."""
    tables: dict[str, pd.DataFrame] = {}
    domain: str | None = None
    scale = 1
    rows: list[list] = []

    def close() -> None:
        if domain and rows:
            frame = pd.DataFrame(rows, columns=list(STATS_COLUMNS))
            tables[KEY_OF.get(domain, domain.lower() + "_stats")] = frame

    for raw in text.splitlines():
        line = raw.strip()
        block = BLOCK.match(line)
        if block:
            close()
            domain, rows, scale = (block.group(1) or "ALL").upper(), [], 1
            continue
        if domain is None or domain == "ALL" or not line.startswith("|"):
            continue
        header = HEADER.match(line)
        if header:
            scale = UNITS.get(header.group(1).lower(), 1)
            continue
        if set(line) <= set("|-: "):
            continue
        cells = line.strip("|").rsplit("|", 8)
        if len(cells) != 9:
            raise LoadError(f"{domain} block: a row has {len(cells)} cells, expected 9: {line[:80]!r}")
        name, _dom, calls, total, avg, pct, lo, hi, sd = (c.strip() for c in cells)
        try:
            rows.append(
                [
                    name,
                    int(calls),
                    int(round(float(total) * scale)),
                    float(avg) * scale,
                    float(pct),
                    int(round(float(lo) * scale)),
                    int(round(float(hi) * scale)),
                    float(sd) * scale,
                ]
            )
        except ValueError:
            raise LoadError(f"{domain} block: non-numeric value in row {line[:80]!r}") from None
    close()
    return tables


def load(files, issues: IssueSink) -> list[Run]:
    runs = []
    for item in files:
        path = Path(item.path)
        try:
            tables = parse_summary(read_text(path))
        except LoadError as err:
            issues.error(path, str(err))
            continue
        except OSError as err:
            issues.error(path, read_error(err))
            continue
        except Exception as err:  # one damaged file must not lose the other files
            issues.error(path, f"cannot load: {describe_error(err)}")
            continue
        if not tables:
            issues.error(path, "rocprofv3 summary without a table")
            continue
        run = Run()
        for key, table in tables.items():
            table, notes = check_stats(table, path)
            run.tool_stats[key] = table.astype({"calls": np.int64, "total_ns": np.int64})
            run.warnings.extend(notes)
        run.meta.formats = [FORMAT]
        run.meta.tool = "rocprofv3"
        run.meta.label = path.stem if path.parent.name in ("", ".") else f"{path.parent.name}/{path.stem}"
        run.meta.files = [str(path)]
        runs.append(run)
    return runs
