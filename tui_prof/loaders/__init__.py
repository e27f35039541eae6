"""Loaders: one module per profiler output format, each mapping its files into the run model.

``LOADER_MODULES`` is the sniffing order: more specific formats first (a SQLite file
is asked by the rocpd loader before the legacy rocprof loader, a JSON file by the
rocprofv3 JSON loader before the Kineto loader).
"""

from __future__ import annotations

import importlib
from types import ModuleType

LOADER_MODULES = (
    "rocpd",
    "rocprofv3_json",
    "pftrace",
    "kineto",
    "legacy_rocprof",
    "rocprofv3_csv",
    "rocprofv2",
    "smi_csv",
    "rocprofv3_summary",
)


def loader_modules() -> list[ModuleType]:
    """Import the loader modules in sniffing order."""
    return [importlib.import_module(f"tui_prof.loaders.{name}") for name in LOADER_MODULES]


def load_path(path, *, progress=None, use_cache: bool = False):
    """Load a run directory or a single file into a :class:`~tui_prof.model.RunSet`."""
    from tui_prof.loaders.detect import load_path as _load_path

    return _load_path(path, progress=progress, use_cache=use_cache)
