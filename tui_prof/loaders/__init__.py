"""Loaders: one module per profiler output format, each mapping its files into the run model.

Each module declares its :class:`~tui_prof.loaders.base.LoaderSpec` as ``LOADER``; this
tuple lists the modules in sniffing order: more specific formats first (a SQLite file is
asked by the rocpd loader before the legacy rocprof loader, a JSON file by the rocprofv3
JSON loader before the Kineto loader). Adding a format: one module and one line here.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tui_prof.loaders.cache import PendingWrites
    from tui_prof.loaders.detect import ProcessScan
    from tui_prof.model import Run, RunSet

LOADER_MODULES = (
    "rocpd",
    "rocprof_compute_db",
    "rocprofv3_json",
    "pftrace",
    "kineto",
    "legacy_rocprof",
    "rocprofv3_csv",
    "rocprof_compute",
    "rocprofv2",
    "smi_csv",
    "rocprofv3_summary",
)


def loader_modules() -> list[ModuleType]:
    """Import the loader modules in sniffing order."""
    return [importlib.import_module(f"tui_prof.loaders.{name}") for name in LOADER_MODULES]


def load_path(
    path: str | os.PathLike[str],
    *,
    progress: Callable[[str, int, int], None] | None = None,
    use_cache: bool = False,
    cancel: threading.Event | None = None,
    on_unit: Callable[[list[Run], int, int], None] | None = None,
    pending: PendingWrites | None = None,
    on_scan: Callable[[ProcessScan], None] | None = None,
    only: Sequence[str] | None = None,
) -> RunSet:
    """Load a run directory or a single file into a :class:`~tui_prof.model.RunSet`
    (``cancel``; ``on_unit``, each work unit's runs as it loads; ``pending``, the cache
    entries kept to be written later; ``on_scan``, the processes found before any unit
    loads; ``only``, one rank's files alone: see :func:`tui_prof.loaders.detect.load_path`)."""
    # Imported here: detect imports this package (its loader_modules).
    from tui_prof.loaders.detect import load_path as _load_path

    return _load_path(path, progress=progress, use_cache=use_cache, cancel=cancel, on_unit=on_unit, pending=pending, on_scan=on_scan, only=only)


def cancel_loads() -> None:
    """Stop every load running in this process within about a second (the TUI's quit
    calls it; ``load_path`` then raises ``LoadCancelled``)."""
    from tui_prof.loaders.base import cancel_loads as _cancel_loads

    _cancel_loads()
