"""The bundled sample runs that ``tuiprof`` opens when it is given no path.

In a source checkout they are ``sample_traces/<name>`` beside the package. An installed
wheel has no such folder, so the sample is regenerated (deterministically, byte for byte
the same files: see ``sample_traces/<name>/README.md``) into the user cache directory.
Nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

DEFAULT_SAMPLE = "synthetic_sync_per_launch"

# name -> (SynthSpec arguments, format) that wrote sample_traces/<name>: 2000 dispatches
# (200 iterations of 10 kernels), as ``python -m tui_prof.synth OUT --format csv
# --dispatches 2000 --sync <sync>``
SAMPLES: dict[str, tuple[dict[str, Any], str]] = {
    "synthetic_sync_per_launch": ({"iterations": 200, "sync": "per_launch"}, "csv"),
    "synthetic_sync_once": ({"iterations": 200, "sync": "end"}, "csv"),
    # a gfx1151 (Radeon 8060S, Strix Halo) WMMA run: kernel and HIP API traces, no copies,
    # no counters (``python -m tui_prof.synth OUT --format csv --arch gfx1151
    # --iterations 50 --kernels-per-iteration 4 --sync per_iteration --htod-copies 0 --dtoh-copies 0``)
    "gfx1151_wmma": ({"iterations": 50, "kernels_per_iteration": 4, "sync": "per_iteration", "arch": "gfx1151", "htod_copies": 0, "dtoh_copies": 0}, "csv"),
}
# ``tuiprof --sample NAME``: the short names
SAMPLE_ALIASES = {"per_launch": "synthetic_sync_per_launch", "once": "synthetic_sync_once", "gfx1151": "gfx1151_wmma"}


def sample_path(name: str = DEFAULT_SAMPLE) -> Path:
    """A folder holding the sample run ``name``, generating it into the cache if needed."""
    checkout = Path(__file__).resolve().parents[1] / "sample_traces" / name
    if checkout.is_dir():
        return checkout
    # imported here: the generator needs numpy and pandas, which `tuiprof --help` must not load
    from tui_prof.loaders.cache import cache_root
    from tui_prof.synth import SynthSpec, build, write_run

    target = cache_root() / "samples" / name
    if not (target / "synthhost").is_dir():
        from tui_prof.guard.write import make_private_dir

        make_private_dir(target.parent, exist_ok=True, parents=True)
        args, fmt = SAMPLES[name]
        write_run(build(SynthSpec(**args)), target, fmt)
    return target
