"""Issue 33 item 16: a reopen the cache serves imports no loader module.

The loaders are most of tuiprof's code: where bytecode is not cached (PYTHONDONTWRITEBYTECODE,
a read-only install) every start compiles what it imports, and the reopen of a 1M-dispatch
run from the cache grew from 0.39 s to 0.73 s as the loaders grew. The loading machinery
knows every format from the specs alone (``tui_prof.loaders.specs``); a loader module is
imported only for a file the scan memo does not answer or a unit the cache does not hold.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tui_prof.loaders import LOADER_MODULES, loader_modules
from tui_prof.loaders.specs import SPECS

RUN = Path(__file__).parent / "data" / "rocprofv3_csv" / "rocprofv3-docs-rocm7"
ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import json, sys
from tui_prof.loaders import load_path
runset = load_path(sys.argv[1], use_cache=True)
loaders = sorted(m for m in sys.modules if m.startswith("tui_prof.loaders.") and m.rsplit(".", 1)[1] not in ("base", "cache", "detect", "sessions", "specs"))
print(json.dumps({"loaders": loaders, "dispatches": sum(len(r.kernels) for r in runset.runs), "runs": len(runset.runs)}))
"""


def _probe(cache: Path) -> dict:
    env = dict(os.environ, TUIPROF_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", PROBE, str(RUN)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_reopen_from_the_cache_imports_no_loader(tmp_path):
    first = _probe(tmp_path)
    assert "tui_prof.loaders.rocprofv3_csv" in first["loaders"]  # the first open parses
    again = _probe(tmp_path)
    assert again["loaders"] == []
    assert (again["dispatches"], again["runs"]) == (first["dispatches"], first["runs"]) and first["dispatches"] > 0


def test_every_loader_declares_its_spec_from_the_registry():
    modules = loader_modules()
    assert list(SPECS) == list(LOADER_MODULES)
    assert all(m.LOADER is SPECS[name] for name, m in zip(LOADER_MODULES, modules, strict=True))
