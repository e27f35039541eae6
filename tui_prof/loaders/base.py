"""What every loader module shares: the loader contract (:class:`LoaderSpec`), the
detected-file record, errors (:func:`read_error`, :func:`describe_error`), file and CSV
helpers, integer columns (:func:`int_column`), the process id (:func:`process_pid`), copy
direction and agents (:func:`copy_direction`, :func:`labelled_copies`) and the worker
count (:func:`configured_workers`).

A loader module exposes:

* ``LOADER`` — its :class:`LoaderSpec` (format id, the file names its profiler writes,
  duplicate priority, how its files split into work units, its file kinds); the sniffing
  order is ``tui_prof.loaders.LOADER_MODULES``;
* ``FORMAT`` — the format id shown to users, e.g. ``"rocprofv3-csv"`` (``LOADER.format``);
* ``sniff(path, head) -> Sniffed | None`` — decide from the first bytes of a file
  (``head``, already gunzipped) whether this loader reads it;
* ``load(files, issues) -> list[Run]`` — read the detected files. A file that cannot be
  read is reported with ``issues.error(path, message)`` and the other files still load.
  The Runs it returns are fragments keyed by ``RunMeta.hostname``/``pid``/``label``;
  :mod:`tui_prof.loaders.detect` merges and finishes them.

Loaders never write to the run directory.
"""

from __future__ import annotations

import contextlib
import contextvars
import gzip
import io
import os
import re
import stat
import threading
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tui_prof.model import LoadIssue, Run
from tui_prof.model.schema import UNKNOWN

HEAD_BYTES = 64 * 1024


@dataclass(frozen=True)
class LoaderSpec:
    """What the loading machinery needs to know about one loader module."""

    format: str  # format id shown to users, e.g. "rocprofv3-csv"
    file_names: str = ""  # regex (searched in a file name) of the files this profiler writes: such
    # a file that no loader recognises is an error ("damaged"), not a skipped stranger
    priority: int | None = None  # one process written in several formats keeps the lowest
    # priority's output and reports the others as duplicates; None: never deduplicated
    parallel: bool = False  # each process group is its own work unit, loaded in parallel threads
    per_file: bool = False  # each file is its own work unit (one run per file), loaded one after another
    kinds: tuple[str, ...] = ()  # the Sniffed.kind values its sniffer returns (fnmatch patterns)
    batch_kinds: tuple[tuple[str, ...], ...] = ()  # a unit with exactly these kinds (sorted) and at most
    batch_max_bytes: int = 0  # this many bytes is read in a batch with others (the loader's load_batch)


def spec_batchable(spec: LoaderSpec, files: list[DetectedFile]) -> bool:
    """Whether the work unit ``files`` is read in a batch (``spec.batch_kinds``,
    ``spec.batch_max_bytes``): decided from the spec, without importing the loader."""
    if tuple(sorted(item.kind for item in files)) not in spec.batch_kinds:
        return False
    try:
        return sum(os.stat(item.path).st_size for item in files) <= spec.batch_max_bytes
    except OSError:
        return False


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


def open_regular(path: Path | str) -> io.BufferedReader:
    """``open(path, "rb")`` that never blocks and reads only regular files: the file is
    opened with ``O_NONBLOCK`` (a FIFO swapped in after the scan opens at once instead of
    waiting for a writer), checked on the opened descriptor with ``fstat`` (a FIFO, socket
    or device raises :class:`NotRegularFile`, an OSError), then set back to blocking."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile("not a regular file (FIFO, socket or device); not read")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return open(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def ensure_regular(path: Path | str) -> None:
    """Check with :func:`open_regular` (non-blocking, on the descriptor) that ``path`` is a
    regular file, right before it is handed by name to a reader that opens it itself
    (pyarrow, pandas, SQLite)."""
    with open_regular(path):
        pass


class NotRegularFile(OSError):
    """A path that is no longer a regular file when it is opened (see :func:`open_regular`)."""


def is_gzip(path: Path) -> bool:
    with open_regular(path) as fh:
        return fh.read(2) == b"\x1f\x8b"


GZIP_RATIO_LIMIT = 64
"""A gzip may expand to at most this many times its compressed size ... (``TUIPROF_GZIP_MAX_RATIO``
sets another ratio; 0 lifts the bound)"""
GZIP_FLOOR_BYTES = 64 << 20
"""... or this many bytes, whichever is more (real profiler JSON expands about 20-25 times)."""


class TooLarge(OSError):
    """Decompressed content beyond the bound of :func:`open_binary` (a gzip bomb)."""


def gzip_ratio() -> int:
    """The expansion bound: ``TUIPROF_GZIP_MAX_RATIO`` (a whole number; 0: none) or :data:`GZIP_RATIO_LIMIT`."""
    text = os.environ.get("TUIPROF_GZIP_MAX_RATIO", "").strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 6 else GZIP_RATIO_LIMIT


def gzip_limit(packed: int) -> int | None:
    """The most bytes a gzip of ``packed`` bytes may inflate to (None: no bound)."""
    ratio = gzip_ratio()
    return None if ratio == 0 else max(GZIP_FLOOR_BYTES, ratio * packed)


class _LimitedRaw(io.RawIOBase):
    """The inflating reader of a :class:`gzip.GzipFile`, refusing to go past ``limit``
    bytes of output (:class:`TooLarge`, raised by the read that would cross it)."""

    def __init__(self, raw: Any, limit: int, packed: int):
        self.raw, self.limit, self.packed, self.pos = raw, limit, packed, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self.raw.readinto(buffer)
        self.pos += n or 0
        if self.pos > self.limit:
            raise TooLarge(
                f"gzip content larger than {self.limit >> 20} MiB ({gzip_ratio()} times its {self.packed} bytes; "
                "a real trace expands about 25 times): not read beyond it; gunzip it (or raise TUIPROF_GZIP_MAX_RATIO) to read it anyway"
            )
        return n

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self.pos = self.raw.seek(offset, whence)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def close(self) -> None:
        self.raw.close()
        super().close()


class BoundedGzip(gzip.GzipFile):
    """A :class:`gzip.GzipFile` for reading whose output stops at :func:`gzip_limit` of the
    compressed size (the streaming rule of every reader: a small hostile gzip cannot
    exhaust memory or time, and what was read before the bound is kept by the reader)."""

    def __init__(self, fileobj: Any, limit: int, packed: int):
        super().__init__(fileobj=fileobj, mode="rb")
        buffered = getattr(self, "_buffer", None)
        if isinstance(buffered, io.BufferedReader):  # CPython's layout; elsewhere the bound is read_text's
            raw = buffered.detach()  # detached: the old buffer, once collected, must not close the reader
            setattr(self, "_buffer", io.BufferedReader(_LimitedRaw(raw, limit, packed)))  # noqa: B010


def open_binary(path: Path, bounded: bool = True) -> gzip.GzipFile | io.BufferedReader:
    """Open a regular file for reading (:func:`open_regular`), transparently gunzipping
    ``.gz`` content; ``bounded``: the gzip's output is bounded (:class:`BoundedGzip`,
    :class:`TooLarge` beyond it). A plain file is bounded by its own size."""
    fh = open_regular(path)
    try:
        if fh.read(2) == b"\x1f\x8b":
            fh.seek(0)
            limit = gzip_limit(os.fstat(fh.fileno()).st_size) if bounded else None
            gz = gzip.GzipFile(fileobj=fh, mode="rb") if limit is None else BoundedGzip(fh, limit, os.fstat(fh.fileno()).st_size)
            setattr(gz, "myfileobj", fh)  # noqa: B010 -- closed with the GzipFile, as gzip.open does for the file it opens
            return gz
        fh.seek(0)
    except BaseException:
        fh.close()
        raise
    return fh


def read_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of the (decompressed) file; b"" if it cannot be read."""
    try:
        with open_binary(path) as fh:
            return fh.read(size)
    except (OSError, EOFError, zlib.error):
        # A truncated or damaged gzip still yields its first bytes through a raw decompressor.
        try:
            with open_regular(path) as fh:
                raw = fh.read(size)
            return zlib.decompressobj(47).decompress(raw, size)
        except (OSError, zlib.error):
            return b""


def read_text(path: Path, bounded: bool = True) -> str:
    """Whole file as text (gunzipped, UTF-8 with replacement of bad bytes).

    ``bounded`` (every reader): a gzip whose content is larger than :func:`gzip_limit` of its
    compressed size raises :class:`TooLarge` after reading at most that much, so a small
    hostile gzip cannot exhaust memory. Raises OSError when the file cannot be read,
    :class:`DamagedGzip` (an OSError) when its gzip stream is truncated or corrupt."""
    try:
        with open_binary(path, bounded) as fh:
            if isinstance(fh, gzip.GzipFile):
                data = bytearray()  # read in steps: one copy, never a joined second copy
                while chunk := fh.read(1 << 20):
                    data += chunk
                return data.decode("utf-8", errors="replace")
            return io.TextIOWrapper(fh, encoding="utf-8", errors="replace").read()
    except (EOFError, zlib.error) as err:
        raise DamagedGzip(f"damaged gzip data (truncated or corrupt file): {err}") from None


# --------------------------------------------------------------------------- untrusted text

_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(value: str) -> str:
    """``value`` with lone surrogates (``\\udcff`` escapes in JSON, which no UTF-8 or
    Arrow string can hold) replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", value)


def has_surrogate(value: str) -> bool:
    return _SURROGATE.search(value) is not None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def may_hold_surrogates(json_text: str) -> bool:
    """Whether JSON text has a ``\\uD800``-``\\uDFFF`` escape (the only way a decoded JSON
    string can hold a surrogate when the text itself was decoded with replacement)."""
    return _SURROGATE_ESCAPE.search(json_text) is not None


def clean_json(value: Any) -> tuple[Any, int]:
    """``value`` (decoded JSON) with :func:`clean_text` applied to every string and key,
    changed in place where it can be (iterative: any depth); returns it and how many
    strings were changed."""
    count = 0

    def fix(item: Any) -> Any:
        nonlocal count
        if isinstance(item, str) and has_surrogate(item):
            count += 1
            return clean_text(item)
        return item

    root = [value]
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, (list, dict)):
                    stack.append(item)
                elif isinstance(item, str):
                    node[i] = fix(item)
        elif isinstance(node, dict):
            if any(isinstance(k, str) and has_surrogate(k) for k in node):
                items = list(node.items())
                node.clear()
                node.update((fix(k), v) for k, v in items)
            for key, item in node.items():
                if isinstance(item, (list, dict)):
                    stack.append(item)
                elif isinstance(item, str):
                    node[key] = fix(item)
    return root[0], count


def replaced_warning(count: int, what: str) -> str:
    """The run warning for ``count`` strings whose invalid characters were replaced."""
    return f"{count} {what} held invalid UTF-8 or lone surrogates; shown with U+FFFD in their place"


# --------------------------------------------------------------------------- cancellation


class LoadCancelled(BaseException):
    """Raised inside a loader when its load was cancelled (a BaseException, so the loaders'
    own ``except Exception`` catch-alls let it through to :func:`tui_prof.loaders.load_path`)."""


_CANCEL: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("tuiprof_cancel", default=None)
_ACTIVE: set[threading.Event] = set()
_ACTIVE_LOCK = threading.Lock()


def cancel_event() -> threading.Event | None:
    """The cancel flag of the load running in this thread (None outside a load)."""
    return _CANCEL.get()


def check_cancelled() -> None:
    """Raise :class:`LoadCancelled` when this thread's load was cancelled (loaders call it
    in their loops: a check is one attribute read)."""
    event = _CANCEL.get()
    if event is not None and event.is_set():
        raise LoadCancelled()


@contextlib.contextmanager
def load_scope(event: threading.Event) -> Iterator[None]:
    """Within it, this thread's load is cancelled by ``event`` (and by :func:`cancel_loads`):
    :func:`check_cancelled` and :func:`cancel_event` see it, and so do threads started
    with a copy of this context (``contextvars.copy_context()``)."""
    with _ACTIVE_LOCK:
        _ACTIVE.add(event)
    token = _CANCEL.set(event)
    try:
        yield
    finally:
        _CANCEL.reset(token)
        with _ACTIVE_LOCK:
            _ACTIVE.discard(event)


def cancel_loads() -> None:
    """Cancel every load running in this process: its units stop within a second
    (cooperative checks, SQLite's progress handler, worker processes terminated) and
    ``load_path`` raises :class:`LoadCancelled`."""
    with _ACTIVE_LOCK:
        events = list(_ACTIVE)
    for event in events:
        event.set()


STATS_PERCENT_SLACK = 0.5
"""A stats row's Percentage may exceed 100 by this much (the profiler's rounding)."""


def check_stats(frame: pd.DataFrame, path: Path | str) -> tuple[pd.DataFrame, list[str]]:
    """A ``STATS_COLUMNS`` table without its impossible rows, and the warning saying how
    many were dropped: negative calls or times, a Percentage outside 0-100 (or not finite),
    an average, minimum, maximum or deviation that is negative or infinite. The rest of the
    file loads (one bad row never loses the table)."""
    if not len(frame):
        return frame, []
    bad = np.zeros(len(frame), dtype=bool)
    for column in ("calls", "total_ns", "avg_ns", "min_ns", "max_ns", "stddev_ns", "percent"):
        if column not in frame.columns:
            continue
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
        with np.errstate(invalid="ignore"):
            wrong = np.isinf(values) | (values < 0)
            if column == "percent":
                wrong |= values > 100 + STATS_PERCENT_SLACK
            if column in ("calls", "total_ns"):
                wrong |= np.isnan(values)
        bad |= wrong
    if not bad.any():
        return frame, []
    first = str(frame["name"].iloc[int(np.flatnonzero(bad)[0])]) if "name" in frame.columns else ""
    note = (
        f"{path}: {int(bad.sum())} statistics row(s) dropped with impossible values (negative calls or times, "
        f"a share outside 0-100%, or a value that is not finite; e.g. {one_line(first, 80)!r})"
    )
    return frame[~bad].reset_index(drop=True), [note]


def int64_from_text(values: Iterable[Any]) -> np.ndarray:
    """Decimal integer text -> int64 exactly (never through float). Cells that are not an
    integer, or do not fit in int64, become UNKNOWN (-1)."""
    series = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
    text = series.astype(str).str.strip()
    out = np.full(len(text), -1, dtype=np.int64)
    good = text.str.fullmatch(r"[-+]?\d{1,18}").to_numpy(dtype=bool).copy()
    # 19 digits may overflow: same-length digit strings compare like the numbers they spell.
    digits19 = text.str.fullmatch(r"[-+]?\d{19}").to_numpy(dtype=bool)
    if digits19.any():
        body = text[digits19].str.lstrip("+-")
        negative = text[digits19].str.startswith("-").to_numpy(dtype=bool)
        fits = np.where(negative, (body <= "9223372036854775808").to_numpy(dtype=bool), (body <= "9223372036854775807").to_numpy(dtype=bool))
        good[np.flatnonzero(digits19)[fits]] = True
    if good.any():
        out[good] = text[good].astype("int64").to_numpy()
    return out


def int_column(frame: pd.DataFrame, column: str, *, drop_fraction: bool = True) -> np.ndarray:
    """A frame's integer column as int64 (all UNKNOWN when the column is absent). Text is
    parsed exactly (never through float); cells that are not integers or do not fit in int64
    ("None", "nan", 1e400) become UNKNOWN. With ``drop_fraction`` text like "12.0" keeps its
    integer part."""
    if column not in frame.columns:
        return np.full(len(frame), UNKNOWN, dtype=np.int64)
    col = frame[column]
    if col.dtype.kind in "iu":
        return col.to_numpy(dtype="int64")
    if drop_fraction:
        return int64_from_text(col.astype(str).str.strip().str.replace(r"^([-+]?\d+)\.\d*$", r"\1", regex=True))
    return int64_from_text(col)


def csv_complete_rows(text: str) -> tuple[pd.DataFrame, bool]:
    """``(frame, truncated)`` from CSV text whose writer ends every row with a newline: all
    cells as strings (no NA parsing, blank lines skipped), column names stripped. A last line
    without its newline was cut short: it is dropped and ``truncated`` is True. Raises
    :class:`LoadError` when the text ends inside the header line or is not CSV."""
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


def read_error(err: BaseException) -> str:
    """The one-line message for a file the operating system (or SQLite) cannot read."""
    reason = getattr(err, "strerror", None) or str(err) or type(err).__name__
    return f"cannot read file: {one_line(reason)}"


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
    """rocprofv3's default file prefix is ``<pid>`` (rocprofv2's file tag ``<name>_<pid>``
    ends in it): return it when the prefix is all digits."""
    tail = prefix.rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else None


def process_pid(prefix: str, *pid_columns: Iterable[Any]) -> tuple[int | None, list[int]]:
    """``(pid, several)`` of one process's files: the pid in the file prefix
    (:func:`pid_from_prefix`), else the one known pid in ``pid_columns`` (UNKNOWN ignored);
    when they hold several, pid is None and ``several`` lists them (callers keep it in
    ``meta.extra["pids"]``)."""
    pid = pid_from_prefix(prefix)
    if pid is not None:
        return pid, []
    pids: set[int] = set()
    for column in pid_columns:
        pids.update(int(p) for p in pd.unique(np.asarray(column, dtype=np.int64)) if p != UNKNOWN)
    if len(pids) == 1:
        return pids.pop(), []
    return None, sorted(pids)


# Copy directions: agent types (source, destination) of each direction label.
COPY_TYPES: dict[str, tuple[str, str]] = {
    "HtoD": ("CPU", "GPU"),
    "DtoH": ("GPU", "CPU"),
    "DtoD": ("GPU", "GPU"),
    "PtoP": ("GPU", "GPU"),
    "HtoH": ("CPU", "CPU"),
    "memset": ("", "GPU"),
}
_DIRECTIONS = ("unknown", "HtoD", "DtoH", "HtoH", "DtoD", "PtoP", "memset")  # direction codes
_CPU, _GPU = 1, 2  # agent type codes (0: other or unknown)


def _codes(values: Any, n: int, code_of: Callable[[str], int]) -> np.ndarray:
    """int8 ``code_of(str(value))`` per row, computed once per distinct value (missing: 0)."""
    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.CategoricalDtype):
        values = values.array
    if isinstance(values, pd.Categorical):
        codes, uniques = np.asarray(values.codes), list(values.categories)
    else:
        codes, uniques = pd.factorize(np.broadcast_to(np.asarray(values, dtype=object), (n,)))
    lookup = np.array([code_of(str(u)) for u in uniques] + [0], dtype=np.int8)
    return lookup[codes]


def _type_code(agent_type: str) -> int:
    return _CPU if agent_type == "CPU" else _GPU if agent_type == "GPU" else 0


def _direction_code(label: str) -> int:
    return _DIRECTIONS.index(label) if label in _DIRECTIONS else 0


def _directions(src_type: np.ndarray, dst_type: np.ndarray, src: np.ndarray, dst: np.ndarray, label: np.ndarray | None) -> np.ndarray:
    """:func:`copy_direction` on type and label codes."""
    out = np.zeros(len(src_type), dtype=np.int8)
    out[(src_type == _CPU) & (dst_type == _GPU)] = _DIRECTIONS.index("HtoD")
    out[(src_type == _GPU) & (dst_type == _CPU)] = _DIRECTIONS.index("DtoH")
    out[(src_type == _CPU) & (dst_type == _CPU)] = _DIRECTIONS.index("HtoH")
    gpu_gpu = (src_type == _GPU) & (dst_type == _GPU)
    out[gpu_gpu & (src == dst)] = _DIRECTIONS.index("DtoD")
    out[gpu_gpu & (src != dst)] = _DIRECTIONS.index("PtoP")
    if label is not None:
        one_unknown = gpu_gpu & ((src == UNKNOWN) | (dst == UNKNOWN))
        named = one_unknown & ((label == _DIRECTIONS.index("DtoD")) | (label == _DIRECTIONS.index("PtoP")))
        out[named] = label[named]
        out[label == _DIRECTIONS.index("memset")] = _DIRECTIONS.index("memset")
    return np.array(_DIRECTIONS, dtype=object)[out]


def copy_direction(src_type: Any, dst_type: Any, src_agent: Any, dst_agent: Any, label: Any = None) -> np.ndarray:
    """Direction of each copy from its agents, the one rule every loader uses.

    CPU->GPU "HtoD", GPU->CPU "DtoH", CPU->CPU "HtoH"; GPU->GPU "DtoD" on one agent and
    "PtoP" between two known agents; otherwise "unknown". ``label`` (optional, per row) is
    the direction the format names: "memset" rows are memsets, and a GPU->GPU copy with an
    unknown (-1) agent keeps the label's "DtoD" or "PtoP" (a format that records one GPU
    only cannot tell them apart by agents). Per-row work is on integer codes: the type and
    label strings are looked at once per distinct value."""
    n = len(src_type)
    src = np.broadcast_to(np.asarray(src_agent, dtype=np.int64), (n,))
    dst = np.broadcast_to(np.asarray(dst_agent, dtype=np.int64), (n,))
    labels = None if label is None else _codes(label, n, _direction_code)
    return _directions(_codes(src_type, n, _type_code), _codes(dst_type, n, _type_code), src, dst, labels)


def labelled_copies(label: Any, *, device: Any = None, src_agent: Any = UNKNOWN, dst_agent: Any = UNKNOWN) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(direction, src_agent, dst_agent)`` of copies whose format names their direction
    (``label`` per row: a :data:`COPY_TYPES` key, anything else is "unknown").

    A format that records both agents passes them; one that records only the GPU running the
    copy passes it as ``device``, which becomes the GPU side: the destination of HtoD and
    memset, the source of DtoH and PtoP (the peer is unknown), both of DtoD. The direction
    is then :func:`copy_direction` of the label's agent types and these agents."""
    n = len(label)
    labels = _codes(label, n, _direction_code)
    src_of = np.array([_type_code(COPY_TYPES.get(d, ("", ""))[0]) for d in _DIRECTIONS], dtype=np.int8)
    dst_of = np.array([_type_code(COPY_TYPES.get(d, ("", ""))[1]) for d in _DIRECTIONS], dtype=np.int8)
    src_type, dst_type = src_of[labels], dst_of[labels]
    if device is not None:
        dev = np.broadcast_to(np.asarray(device, dtype=np.int64), (n,))
        src = np.where(src_type == _GPU, dev, UNKNOWN)
        dst = np.where((dst_type == _GPU) & (labels != _DIRECTIONS.index("PtoP")), dev, UNKNOWN)
    else:
        src = np.broadcast_to(np.asarray(src_agent, dtype=np.int64), (n,)).copy()
        dst = np.broadcast_to(np.asarray(dst_agent, dtype=np.int64), (n,)).copy()
    return _directions(src_type, dst_type, src, dst, labels), src.astype(np.int64), dst.astype(np.int64)


def warn_negative_durations(run: Run, names: Iterable[str] = ("kernels", "copies", "api")) -> None:
    """Add a warning to ``run`` per table with rows whose known end lies before their known
    start (unknown, -1, timestamps are not counted)."""
    for name in names:
        table = run.table(name)
        if not len(table):
            continue
        start, end = table["start"].to_numpy(), table["end"].to_numpy()
        negative = int(np.count_nonzero((start != -1) & (end != -1) & (end < start)))
        if negative:
            run.warnings.append(f"{negative} {name} rows have a negative duration (end < start); kept as recorded")


def load_groups(
    files: list[DetectedFile],
    issues: IssueSink,
    load_group: Callable[[str, list[DetectedFile], IssueSink], Run | None],
    label: str,
) -> list[Run]:
    """Run ``load_group(group, files, issues) -> Run | None`` once per process group.

    A group that raises is reported on each of its files (``"<label> loader failed: ..."``)
    and the other groups still load.
    """
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
    number (1 means serial), else the CPUs this process may run on (its affinity mask where
    the OS has one), at most 8."""
    try:
        wanted = int(os.environ.get("TUIPROF_LOAD_WORKERS", "0"))
    except ValueError:
        wanted = 0
    if wanted > 0:
        return wanted
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return min(cpus, 8)
