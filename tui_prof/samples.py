"""The bundled sample runs that ``tuiprof`` opens when it is given no path.

In a source checkout they are ``sample_traces/<name>`` beside the package. An installed
wheel has no such folder, so the sample is regenerated (deterministically, byte for byte
the same files: see ``sample_traces/<name>/README.md``) into the user cache directory.
Nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

DEFAULT_SAMPLE = "synthetic_sync_per_launch"

# name -> the arguments of ``python -m tui_prof.synth`` that wrote sample_traces/<name>
SAMPLE_ARGS = {
    "synthetic_sync_per_launch": ["--format", "csv", "--dispatches", "2000", "--sync", "per_launch"],
    "synthetic_sync_once": ["--format", "csv", "--dispatches", "2000", "--sync", "end"],
}


def sample_path(name: str = DEFAULT_SAMPLE) -> Path:
    """A folder holding the sample run ``name``, generating it into the cache if needed."""
    checkout = Path(__file__).resolve().parents[1] / "sample_traces" / name
    if checkout.is_dir():
        return checkout
    from tui_prof.loaders.cache import cache_root
    from tui_prof.synth import main as synth_main

    target = cache_root() / "samples" / name
    if not (target / "synthhost").is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.redirect_stdout(io.StringIO()):
            synth_main([str(target), *SAMPLE_ARGS[name]])
    return target
