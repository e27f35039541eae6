"""Copies against the link they cross (issue 32): host-device copies bounded by the GPU's PCIe
host link, copies between two GPUs by their NVLink / Infinity Fabric links (data-sheet peaks,
a direction), raising ``bandwidth-above-peak`` as copies above the memory's peak do; no false
alarm on the real traces with copies."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_integrity import codes

from tui_prof.analysis import integrity
from tui_prof.analysis.api import check_run
from tui_prof.loaders import load_path
from tui_prof.model import Agent

DATA = Path(__file__).parent / "data"
COPIES = DATA / "kineto" / "h200" / "copies.pt.trace.json.gz"
NCCL = DATA / "kineto" / "comm" / "nccl_parser_config__nccl_data.json.gz"

# real traces with copies on GPUs whose links are listed: (trace, host link GB/s a direction)
WITH_COPIES = [
    ("kineto/h200/copies.pt.trace.json.gz", 64.0),  # 64 MiB pinned copies at about 55 GB/s
    ("kineto/critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz", 32.0),
    ("kineto/critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz", 32.0),
    ("kineto/comm/nccl_parser_config__nccl_data.json.gz", 32.0),
    ("kineto/mi300__resnet_act_checkpoint.json.gz", 64.0),
    ("kineto/inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz", 64.0),
    ("kineto/h100__gaunernst_bert-small-uncased__1016001.json.gz", 64.0),
]


@pytest.mark.parametrize(("path", "gbs"), WITH_COPIES)
def test_no_false_alarm_on_real_copies(path, gbs):
    runset = load_path(DATA / path)
    run = runset.runs[0]
    assert len(run.copies) and {integrity._link_gbs(a, integrity.HOST_LINK_GBS)[0] for a in run.gpu_agents} == {gbs}  # type: ignore[index]
    cp = run.copies
    host = cp["direction"].isin(["HtoD", "DtoH"]).to_numpy() & ((cp["end"] - cp["start"]).to_numpy() >= 1_000)
    fastest = max((cp["bytes"] / (cp["end"] - cp["start"])).to_numpy()[host], default=0.0)
    assert fastest < gbs  # the check's own bound, by this test's arithmetic
    assert "bandwidth-above-peak" not in codes(check_run(runset))


def _at_rate(cp, row: int, gbs: float) -> None:
    cp.loc[row, "end"] = cp["start"].iat[row] + int(round(cp["bytes"].iat[row] / gbs))


def test_a_copy_faster_than_its_host_link_is_found():
    """A 64 MiB HtoD copy on an H200 at 100 GB/s: under the HBM's 4,800 GB/s, over PCIe 5.0
    x16's 64 GB/s a direction; at 65 GB/s (within the 10% margin) it passes."""
    runset = load_path(COPIES)
    cp = runset.runs[0].copies
    row = int(np.flatnonzero((cp["bytes"].to_numpy() == 64 << 20) & cp["direction"].eq("HtoD").to_numpy())[0])
    _at_rate(cp, row, 65.0)
    assert "bandwidth-above-peak" not in codes(check_run(runset))
    _at_rate(cp, row, 100.0)
    (issue,) = codes(check_run(runset))["bandwidth-above-peak"]
    assert issue.affects["rows"] == 1 and issue.affects["examples"][0]["row"] == row
    assert issue.affects["peak_gbs"] == 64.0 and "PCIe 5.0 x16" in issue.message and issue.severity == "unreliable"


def test_a_copy_between_two_gpus_faster_than_their_links_is_found():
    """A100s (NVLink 3: 600 GB/s both directions, 300 a direction): a device copy moved
    between GPUs 0 and 1 at 400 GB/s is found; the same copy within one GPU (its HBM: 2,039 GB/s)
    is not."""
    runset = load_path(NCCL)
    cp = runset.runs[0].copies
    row = int(np.argmax(np.where(cp["direction"].eq("DtoD").to_numpy(), cp["bytes"].to_numpy(), -1)))
    cp.loc[row, "bytes"] = 64 << 20
    _at_rate(cp, row, 400.0)
    assert "bandwidth-above-peak" not in codes(check_run(runset))  # src == dst: one GPU's memory
    cp.loc[row, "dst_agent"] = 1
    (issue,) = codes(check_run(runset))["bandwidth-above-peak"]
    assert issue.affects["examples"][0]["row"] == row and issue.affects["peak_gbs"] == 300.0 and "NVLink 3" in issue.message


@pytest.mark.parametrize(
    ("product", "host"),
    [
        ("NVIDIA H200", 64.0),
        ("NVIDIA H100 80GB HBM3", 64.0),
        ("NVIDIA A100-PG509-200", 32.0),
        ("AMD Instinct MI300X VF", 64.0),
        ("AMD Instinct MI250X", None),  # Frontier-class nodes: Infinity Fabric to the host at 36 GB/s, over PCIe 4.0's 32
        ("AMD Instinct MI250", None),
        ("AMD Instinct MI210", 32.0),
        ("NVIDIA GH200 480GB", None),  # NVLink-C2C to the Grace CPU, not PCIe
        ("AMD Instinct MI300A", None),  # an APU: host memory is the package's HBM
        ("NVIDIA GeForce RTX 4090", None),  # not listed: not bounded
    ],
)
def test_host_links_by_product(product, host):
    found = integrity._link_gbs(Agent(id=0, product=product), integrity.HOST_LINK_GBS)
    assert (found[0] if found else None) == host


def test_host_and_peer_copies_over_their_links_are_reported_apart():
    """A100s: a DtoD copy from GPU 0 to GPU 1 at 400 GB/s (NVLink 3: 300 a direction) and an
    HtoD copy at 60 GB/s (PCIe 4.0 x16: 32 a direction) give one issue per link, each with its
    own count, fastest rate, link and peak; not one message naming the host link for both."""
    runset = load_path(NCCL)
    cp = runset.runs[0].copies
    dtod = int(np.argmax(np.where(cp["direction"].eq("DtoD").to_numpy(), cp["bytes"].to_numpy(), -1)))
    htod = dtod + 1 if dtod + 1 < len(cp) else dtod - 1  # the trace has no HtoD copy: turn another row into one (Kineto: host -1 to GPU)
    if "HtoD" not in cp["direction"].cat.categories:
        cp["direction"] = cp["direction"].cat.add_categories(["HtoD"])
    cp.loc[htod, ["direction", "src_agent", "dst_agent"]] = ["HtoD", -1, 0]
    cp.loc[[dtod, htod], "bytes"] = 64 << 20
    cp.loc[dtod, "dst_agent"] = 1
    _at_rate(cp, dtod, 400.0)
    _at_rate(cp, htod, 60.0)
    issues = codes(check_run(runset))["bandwidth-above-peak"]
    by_peak = {issue.affects["peak_gbs"]: issue for issue in issues}
    assert len(issues) == 2 and set(by_peak) == {32.0, 300.0}
    host, peer = by_peak[32.0], by_peak[300.0]
    assert host.affects["rows"] == 1 and host.affects["examples"][0]["row"] == htod
    assert peer.affects["rows"] == 1 and peer.affects["examples"][0]["row"] == dtod
    assert "up to 60 GB/s over PCIe 4.0 x16" in host.message and "NVLink" not in host.message
    assert "up to 400 GB/s over NVLink 3" in peer.message and "PCIe" not in peer.message
    assert all(issue.severity == "unreliable" for issue in issues)
