"""What every loader module shares: the detected-file record, errors, and file helpers.

A loader module exposes:

* ``FORMAT`` — the format id shown to users, e.g. ``"rocprofv3-csv"``;
* ``sniff(path, head) -> Sniffed | None`` — decide from the first bytes of a file
  (``head``, already gunzipped) whether this loader reads it;
* ``load(files, issues) -> list[Run]`` — read the detected files. A file that cannot be
  read is reported with ``issues.error(path, message)`` and the other files still load.
  The Runs it returns are fragments keyed by ``RunMeta.hostname``/``pid``/``label``;
  :mod:`tui_prof.loaders.detect` merges and finishes them.

Loaders never write to the run directory.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

from tui_prof.model import LoadIssue

HEAD_BYTES = 64 * 1024


class LoadError(Exception):
    """A file cannot be loaded; the message is one line that says what is wrong."""


class DamagedGzip(OSError):
    """A ``.gz`` stream that ends early or has corrupt data (an OSError, so loaders that
    report unreadable files with ``except OSError`` report this one too)."""


@dataclass
class Sniffed:
    """A loader's verdict on one file."""

    kind: str  # file kind inside the format, e.g. "kernel_trace", "hip_api_stats"
    group: str = ""  # files with the same group belong to one process (e.g. "dir/1234")


@dataclass
class DetectedFile:
    path: Path
    format: str
    kind: str
    group: str


class IssueSink:
    """Collects per-file problems while a run directory loads."""

    def __init__(self) -> None:
        self.issues: list[LoadIssue] = []

    def error(self, path: Path | str, message: str) -> None:
        self.issues.append(LoadIssue(str(path), one_line(message), "error"))

    def skipped(self, path: Path | str, message: str) -> None:
        self.issues.append(LoadIssue(str(path), one_line(message), "skipped"))


def one_line(message: str, limit: int = 300) -> str:
    """Collapse whitespace so a message is one line, and cap its length."""
    text = " ".join(str(message).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def open_binary(path: Path):
    """Open a file for reading, transparently gunzipping ``.gz`` content."""
    if is_gzip(path):
        return gzip.open(path, "rb")
    return open(path, "rb")


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of the (decompressed) file; b"" if it cannot be read."""
    try:
        with open_binary(path) as fh:
            return fh.read(size)
    except (OSError, EOFError, zlib.error):
        # A truncated or damaged gzip still yields its first bytes through a raw decompressor.
        try:
            with open(path, "rb") as fh:
                raw = fh.read(size)
            return zlib.decompressobj(47).decompress(raw, size)
        except (OSError, zlib.error):
            return b""


def read_text(path: Path) -> str:
    """Whole file as text (gunzipped, UTF-8 with replacement of bad bytes).

    Raises OSError when the file cannot be read, :class:`DamagedGzip` (an OSError) when
    its gzip stream is truncated or corrupt."""
    try:
        with open_binary(path) as fh:
            return io.TextIOWrapper(fh, encoding="utf-8", errors="replace").read()
    except (EOFError, zlib.error) as err:
        raise DamagedGzip(f"damaged gzip data (truncated or corrupt file): {err}") from None


def int64_from_text(values):
    """Decimal integer text -> int64 exactly (never through float). Cells that are not an
    integer, or do not fit in int64, become UNKNOWN (-1)."""
    import numpy as np
    import pandas as pd

    series = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
    text = series.astype(str).str.strip()
    out = np.full(len(text), -1, dtype=np.int64)
    good = text.str.fullmatch(r"[-+]?\d{1,18}").to_numpy(dtype=bool).copy()
    # 19 digits may overflow: same-length digit strings compare like the numbers they spell.
    digits19 = text.str.fullmatch(r"[-+]?\d{19}").to_numpy(dtype=bool)
    if digits19.any():
        body = text[digits19].str.lstrip("+-")
        negative = text[digits19].str.startswith("-").to_numpy(dtype=bool)
        fits = np.where(negative, (body <= "9223372036854775808").to_numpy(dtype=bool),
                        (body <= "9223372036854775807").to_numpy(dtype=bool))
        good[np.flatnonzero(digits19)[fits]] = True
    if good.any():
        out[good] = text[good].astype("int64").to_numpy()
    return out


def csv_complete_rows(text: str):
    """``(frame, truncated)`` from CSV text whose writer ends every row with a newline: all
    cells as strings (no NA parsing, blank lines skipped), column names stripped. A last line
    without its newline was cut short: it is dropped and ``truncated`` is True. Raises
    :class:`LoadError` when the text ends inside the header line or is not CSV."""
    import pandas as pd

    truncated = False
    if not text.endswith("\n"):
        cut = text.rfind("\n")
        if cut < 0:
            raise LoadError("truncated: file ends inside the header line")
        text, truncated = text[: cut + 1], True
    try:
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, skip_blank_lines=True)
    except (pd.errors.ParserError, ValueError) as err:
        raise LoadError(f"malformed CSV: {one_line(str(err))}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame, truncated


def describe_error(err: BaseException) -> str:
    """A one-line, user-facing description of an unexpected parsing exception."""
    if isinstance(err, OverflowError):
        return f"a number is outside the 64-bit range ({err})"
    if isinstance(err, RecursionError):
        return "structure nested too deeply to read"
    if isinstance(err, MemoryError):
        return "not enough memory to read this file"
    if isinstance(err, UnicodeError):
        return "text that is not valid UTF-8"
    if isinstance(err, KeyError):
        return f"required field {err} is missing"
    return f"unexpected content ({type(err).__name__}: {one_line(str(err), 200)})"


def first_line(head: bytes) -> str:
    """The first line of ``head`` decoded leniently, without BOM or line ending."""
    line = head.split(b"\n", 1)[0].rstrip(b"\r")
    return line.decode("utf-8", errors="replace").lstrip("\ufeff")


def split_header(line: str) -> list[str]:
    """Split a CSV header line into lower-case column names without quotes or spaces."""
    return [cell.strip().strip('"').strip().lower() for cell in line.split(",")]


_API_DOMAIN_PREFIXES = (
    ("HIP_", "hip"),
    ("HSA_", "hsa"),
    ("MARKER_", "marker"),
    ("RCCL", "rccl"),
    ("ROCDECODE", "rocdecode"),
    ("ROCJPEG", "rocjpeg"),
    ("OMPT", "ompt"),
)


def api_domain(category: str) -> str:
    """rocprofiler-sdk API kind/category/domain name -> model API domain
    (HIP_RUNTIME_API_EXT -> "hip", HSA_CORE_API -> "hsa", MARKER_CORE_API -> "marker" ...);
    other names are lower-cased. Shared by the rocprofv3 CSV and JSON and rocpd loaders."""
    text = str(category)
    upper = text.upper()
    for prefix, domain in _API_DOMAIN_PREFIXES:
        if upper.startswith(prefix):
            return domain
    return text.lower()


def group_key(path: Path, suffix: str) -> str:
    """Process group of a file named ``<prefix><suffix>`` (prefix like "1234_"), as "dir/prefix"."""
    name = path.name
    prefix = name[: -len(suffix)] if name.endswith(suffix) else name
    return f"{path.parent}/{prefix.rstrip('_')}"


def pid_from_prefix(prefix: str) -> int | None:
    """rocprofv3's default file prefix is ``<pid>``: return it when the prefix is all digits."""
    tail = prefix.rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else None


def warn_negative_durations(run, names=("kernels", "copies", "api")) -> None:
    """Add a warning to ``run`` per table with rows whose known end lies before their known
    start (unknown, -1, timestamps are not counted)."""
    import numpy as np

    for name in names:
        table = run.table(name)
        if not len(table):
            continue
        start, end = table["start"].to_numpy(), table["end"].to_numpy()
        negative = int(np.count_nonzero((start != -1) & (end != -1) & (end < start)))
        if negative:
            run.warnings.append(f"{negative} {name} rows have a negative duration (end < start); kept as recorded")


def load_groups(files: list[DetectedFile], issues: IssueSink, load_group, label: str) -> list:
    """Run ``load_group(group, files, issues) -> Run | None`` once per process group.

    A group that raises is reported on each of its files (``"<label> loader failed: ..."``)
    and the other groups still load.
    """
    from collections import defaultdict

    groups: dict[str, list[DetectedFile]] = defaultdict(list)
    for item in files:
        groups[item.group or str(item.path)].append(item)
    runs = []
    for group in sorted(groups):
        try:
            run = load_group(group, groups[group], issues)
        except Exception as err:  # one broken group must not lose the others
            for item in groups[group]:
                issues.error(item.path, f"{label} loader failed: {one_line(repr(err))}")
            continue
        if run is not None:
            runs.append(run)
    return runs


def configured_workers() -> int:
    """Parallel workers a loader may use: ``TUIPROF_LOAD_WORKERS`` when set to a positive
    number (1 means serial), else the number of CPUs, at most 8."""
    try:
        wanted = int(os.environ.get("TUIPROF_LOAD_WORKERS", "0"))
    except ValueError:
        wanted = 0
    return wanted if wanted > 0 else min(os.cpu_count() or 1, 8)
