"""One rule for copy direction and copy agents, the same from every format.

Unit tests of :func:`tui_prof.loaders.base.copy_direction` and
:func:`~tui_prof.loaders.base.labelled_copies` on each case, then the generator's copies
(plus a device-to-device and a peer copy added to its table) written as rocprofv3 CSV, rocpd,
pftrace and Kineto and loaded back: every format gives each copy the generator's direction
and the GPU agent(s) the format records.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from tui_prof.loaders import load_path
from tui_prof.loaders.base import copy_direction, labelled_copies
from tui_prof.loaders.legacy_rocprof import copy_table
from tui_prof.model.schema import UNKNOWN, make_table
from tui_prof.synth import SynthSpec, build
from tui_prof.synth.write_csv import write_rocprofv3_csv
from tui_prof.synth.write_kineto import write_kineto
from tui_prof.synth.write_pftrace import write_pftrace
from tui_prof.synth.write_rocpd import write_rocpd

U = UNKNOWN


@pytest.mark.parametrize(
    "src_type, dst_type, src, dst, label, want",
    [
        ("CPU", "GPU", 0, 1, None, "HtoD"),
        ("GPU", "CPU", 1, 0, None, "DtoH"),
        ("GPU", "GPU", 1, 1, None, "DtoD"),
        ("GPU", "GPU", U, U, None, "DtoD"),  # both unknown: nothing says two devices
        ("GPU", "GPU", 1, 2, None, "PtoP"),
        ("GPU", "GPU", 1, U, None, "PtoP"),
        ("CPU", "CPU", 0, 0, None, "HtoH"),
        ("", "GPU", U, 1, None, "unknown"),
        ("GPU", "GPU", 1, 2, "DtoD", "PtoP"),  # two known agents beat the label
        ("GPU", "GPU", 1, U, "DtoD", "DtoD"),  # one agent unknown: the label decides
        ("GPU", "GPU", U, U, "PtoP", "PtoP"),
        ("", "GPU", U, 1, "memset", "memset"),
    ],
)
def test_copy_direction_cases(src_type, dst_type, src, dst, label, want):
    labels = None if label is None else [label]
    assert copy_direction([src_type], [dst_type], [src], [dst], labels).tolist() == [want]


@pytest.mark.parametrize(
    "label, device, want",
    [
        ("HtoD", 3, ("HtoD", U, 3)),
        ("DtoH", 3, ("DtoH", 3, U)),
        ("DtoD", 3, ("DtoD", 3, 3)),
        ("DtoD", U, ("DtoD", U, U)),
        ("PtoP", 3, ("PtoP", 3, U)),  # the peer is not recorded
        ("PtoP", U, ("PtoP", U, U)),
        ("HtoH", 3, ("HtoH", U, U)),
        ("memset", 3, ("memset", U, 3)),  # a memset has no source
        ("unknown", 3, ("unknown", U, U)),
    ],
)
def test_labelled_copies_with_one_recorded_device(label, device, want):
    direction, src, dst = labelled_copies([label], device=[device])
    assert (direction.tolist()[0], int(src[0]), int(dst[0])) == want


def test_labelled_copies_with_both_agents():
    direction, src, dst = labelled_copies(["HtoD", "DtoD", "DtoD", "HtoH", "memset", None], src_agent=[0, 1, 1, 0, U, 1], dst_agent=[1, 1, 2, 0, 2, 0])
    assert direction.tolist() == ["HtoD", "DtoD", "PtoP", "HtoH", "memset", "unknown"]
    assert src.tolist() == [0, 1, 1, 0, U, 1]
    assert dst.tolist() == [1, 1, 2, 0, 2, 0]


def _run_with_device_copies():
    """The generator's run on 2 GPUs (HtoD CPU 0 -> GPU 1/2, DtoH back) plus a
    device-to-device copy on GPU 1 and a peer copy GPU 1 -> GPU 2 after its last event."""
    run = build(SynthSpec(iterations=2, kernels_per_iteration=3, gpus=2, sync="per_iteration"))
    cp = run.copies
    t = int(max(run.kernels["end"].max(), cp["end"].max(), run.api["end"].max())) + 10_000
    last = cp.iloc[-1]
    extra = {
        "start": [t, t + 20_000],
        "end": [t + 5_000, t + 25_000],
        "bytes": [4096, 8192],
        "direction": ["DtoD", "PtoP"],
        "src_agent": [1, 1],
        "dst_agent": [1, 2],
        "stream": [int(last["stream"])] * 2,
        "pid": [int(last["pid"])] * 2,
        "tid": [int(last["tid"])] * 2,
        "correlation_id": [int(cp["correlation_id"].max()) + 1, int(cp["correlation_id"].max()) + 2],
        "name": ["MEMORY_COPY_DEVICE_TO_DEVICE"] * 2,
    }
    base = {c: cp[c].astype(object).tolist() if str(cp[c].dtype) == "category" else cp[c].tolist() for c in extra}
    copies = make_table("copies", {c: base[c] + extra[c] for c in extra})
    return dataclasses.replace(run, copies=copies)


WRITERS = {
    "csv": lambda run, d: write_rocprofv3_csv(run, d / "synthhost"),
    "rocpd": lambda run, d: write_rocpd(run, d / "4242_results.db"),
    "pftrace": lambda run, d: write_pftrace(run, d / "4242_results.pftrace"),
    "kineto": lambda run, d: write_kineto(run, d / "synthhost_4242.pt.trace.json"),
}


@pytest.fixture(scope="module")
def synth_run():
    return _run_with_device_copies()


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_same_copies_same_direction_and_agents_in_every_format(fmt, synth_run, tmp_path):
    WRITERS[fmt](synth_run, tmp_path)
    runset = load_path(tmp_path)
    assert [i for i in runset.issues if i.severity == "error"] == []
    (run,) = runset.runs
    got = run.copies.sort_values("start", kind="stable").reset_index(drop=True)
    want = synth_run.copies.sort_values("start", kind="stable").reset_index(drop=True)
    assert got["start"].tolist() == want["start"].tolist()
    assert got["direction"].astype(str).tolist() == want["direction"].astype(str).tolist()
    assert sorted(set(want["direction"].astype(str))) == ["DtoD", "DtoH", "HtoD", "PtoP"]
    gpu = np.array([1, 2])
    src, dst = want["src_agent"].to_numpy(), want["dst_agent"].to_numpy()
    if fmt == "kineto":
        # Kineto records the GPU running the copy only: the GPU side of HtoD/DtoH/DtoD,
        # the source of a peer copy.
        direction = want["direction"].astype(str).to_numpy()
        src = np.where(np.isin(src, gpu), src, U)
        dst = np.where(np.isin(dst, gpu) & (direction != "PtoP"), dst, U)
    assert got["src_agent"].tolist() == src.tolist()
    assert got["dst_agent"].tolist() == dst.tolist()


def test_memset_direction_and_agents_agree_between_kineto_and_legacy_rules():
    """Kineto (``gpu_memset`` events) and rocprof v1 (``Fill``/``Memset`` copy names) both
    record one device: a memset writes it and reads nothing."""
    frame = pd.DataFrame({"Name": ["FillBuffer", "CopyHostToDevice"], "dev-id": ["2", "2"], "BeginNs": ["10", "30"], "EndNs": ["20", "40"]})
    legacy = copy_table(frame, quoted_names=False)
    assert legacy["direction"].astype(str).tolist() == ["memset", "HtoD"]
    assert legacy["src_agent"].tolist() == [U, U]
    assert legacy["dst_agent"].tolist() == [2, 2]
    direction, src, dst = labelled_copies(["memset"], device=[2])
    assert (direction.tolist(), src.tolist(), dst.tolist()) == (["memset"], [U], [2])
