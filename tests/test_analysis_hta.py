"""The analysis engine's GPU busy time and span equal Holistic Trace Analysis on real Kineto traces.

HTA's figures (kernels + memcpy + memset merged with HTA's own ``merge_kernel_intervals``)
are recorded in docs/hta_crosscheck.md and kept in ``tests/test_kineto.py::HTA``; here they
are compared with :func:`tui_prof.analysis.timeline.gpu_timeline`, the function behind
``gpu.busy_pct`` in ``tuiprof summary`` and the TUI. HTA merges all devices into one union,
so the comparison uses the traces whose kernels ran on one device (the count is asserted).
"""

import pytest

from tests.test_kineto import FILES, HTA, HTA_TOL_US
from tui_prof.analysis.timeline import gpu_timeline
from tui_prof.loaders import kineto

SINGLE_DEVICE = []
for _path in FILES:
    _run = kineto.load_file(_path)
    if _run.kernels["agent"].nunique() <= 1:
        SINGLE_DEVICE.append(_path)


def test_every_hta_reference_trace_is_single_device():
    """HTA's figures exist for exactly the traces whose kernels ran on one device."""
    assert sorted(p.name for p in SINGLE_DEVICE) == sorted(HTA)
    assert len(SINGLE_DEVICE) == len(FILES) == 12


@pytest.mark.parametrize("path", SINGLE_DEVICE, ids=lambda p: p.name[:40])
def test_busy_and_span_equal_hta(path):
    _, busy_us, span_us = HTA[path.name]
    agents, _gaps = gpu_timeline(kineto.load_file(path))
    active = [a for a in agents if a["busy_ns"] > 0]
    assert len(active) == 1
    assert abs(active[0]["busy_ns"] / 1000 - busy_us) <= HTA_TOL_US
    assert abs(active[0]["span_ns"] / 1000 - span_us) <= HTA_TOL_US
