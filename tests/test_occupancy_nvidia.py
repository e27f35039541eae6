"""NVIDIA theoretical occupancy (analysis.occupancy.nvidia_occupancy) against the CUDA
occupancy calculator's formula worked by hand, and against the occupancy CUPTI/Kineto
computed with cuda_occupancy.h for every kernel of the H200 traces ("est. achieved
occupancy %"); the dispatch detail shows registers per thread and the limits in order."""

import gzip
import json
from functools import cache
from pathlib import Path

import pytest

from tui_prof.analysis.occupancy import nvidia_hint, nvidia_occupancy

H200 = Path(__file__).parent / "data" / "kineto" / "h200"


@cache
def trace(name: str) -> dict:
    with gzip.open(H200 / f"{name}.pt.trace.json.gz", "rt") as fh:
        return json.load(fh)


def h200_props() -> dict:
    return trace("decode_eager")["deviceProperties"][0]


def test_nvjet_by_hand():
    """decode_eager's nvjet GEMM: 384 threads, 168 registers/thread, 164,308 B shared
    memory on an H200 (cc 9.0, 64K registers and 228 KiB shared memory per SM, 2048
    threads per SM, at most 32 blocks).

    warps/block = ceil(384 / 32) = 12
    registers/warp = roundup(168 * 32, 256) = 5376; per sub-partition 65536 / 4 = 16384
      -> floor(16384 / 5376) = 3 warps per sub-partition, 12 per SM -> floor(12 / 12) = 1 block
    shared memory/block = roundup(164308 + 1024 reserved, 128) = 165376
      -> floor(233472 / 165376) = 1 block
    warps: floor(64 / 12) = 5 blocks; block slots: 32
    -> 1 block = 12 of 64 warps = 18.75 %, registers first (tie with shared memory)."""
    props = h200_props()
    assert (props["regsPerMultiprocessor"], props["sharedMemPerMultiprocessor"], props["maxThreadsPerMultiprocessor"]) == (65536, 233472, 2048)
    occ = nvidia_occupancy(props, 384, 168, 164308)
    assert occ is not None
    assert (occ["warps_per_block"], occ["blocks_per_sm"], occ["warps_per_sm"], occ["max_warps_per_sm"]) == (12, 1, 12, 64)
    assert occ["occupancy_pct"] == 18.75
    assert occ["limiter"] == "registers"
    assert [(x["limit"], x["blocks_per_sm"]) for x in occ["limiters"]] == [("registers", 1), ("shared memory", 1), ("warps per SM", 5), ("blocks per SM", 32)]
    assert "lifting it alone would not help (next limit: shared memory, 1 blocks per SM)" in nvidia_hint(occ, 168, 164308, props)


def test_small_kernels_by_hand():
    props = h200_props()
    # 128 threads, 32 registers, no shared memory: regs 65536/4/1024 = 16 warps per
    # sub-partition -> 64 warps -> 16 blocks; warps 64/4 = 16; slots 32 -> 16 blocks, 100 %
    occ = nvidia_occupancy(props, 128, 32, 0)
    assert (occ["blocks_per_sm"], occ["occupancy_pct"], occ["limiter"]) == (16, 100.0, "none")
    assert [(x["limit"], x["blocks_per_sm"]) for x in occ["limiters"]] == [("registers", 16), ("warps per SM", 16), ("blocks per SM", 32)]
    # 32 threads, 16 registers: one warp per block; 32 block slots bind first -> 32 of 64 warps, 50 %
    occ = nvidia_occupancy(props, 32, 16, 0)
    assert (occ["blocks_per_sm"], occ["occupancy_pct"], occ["limiter"]) == (32, 50.0, "blocks per SM")
    # 256 threads, 255 registers: roundup(255*32, 256) = 8192 per warp; 16384 / 8192 = 2 warps per
    # sub-partition -> 8 warps -> 1 block of 8 warps; 256 * 255 = 65280 <= 65536 per block
    occ = nvidia_occupancy(props, 256, 255, 0)
    assert (occ["blocks_per_sm"], occ["warps_per_sm"], occ["limiter"]) == (1, 8, "registers")
    assert "<= 128 would allow 2 blocks" in nvidia_hint(occ, 255, 0, props)
    # 1024 threads at 128 registers needs 131072 registers per block: more than regsPerBlock -> 0 blocks
    assert nvidia_occupancy(props, 1024, 128, 0)["blocks_per_sm"] == 0
    # shared memory: 48 KiB + 1 KiB reserved -> floor(233472 / 50176) = 4 blocks of 8 warps
    occ = nvidia_occupancy(props, 256, 32, 49152)
    assert (occ["blocks_per_sm"], occ["limiter"]) == (4, "shared memory")
    # 5 blocks: floor(233472 / 5) = 46694, down to a 128 B unit 46592, less 1 KiB reserved = 45568
    assert "<= 45568 B would allow 5 blocks" in nvidia_hint(occ, 32, 49152, props)
    assert nvidia_occupancy({}, 256, 32, 0) is None


@pytest.mark.parametrize("name", ["decode_eager", "train_sync", "gpt2_shapes_modules", "copies"])
def test_equals_cuptis_occupancy_estimate(name):
    """Kineto's "est. achieved occupancy %" is cuda_occupancy.h's active blocks per SM
    (capped at the grid's blocks per SM) × block size / max threads per SM, rounded to
    an integer. Kineto calls the calculator with the default 48 KiB shared-memory limit, so
    kernels that opted into more shared memory get 0 there; every other kernel must agree."""
    doc = trace(name)
    props = doc["deviceProperties"][0]
    checked = 0
    for e in doc["traceEvents"]:
        if e.get("cat") != "kernel":
            continue
        a = e["args"]
        if a["shared memory"] > props["sharedMemPerBlock"]:
            assert a["est. achieved occupancy %"] == 0
            continue
        threads = a["block"][0] * a["block"][1] * a["block"][2]
        occ = nvidia_occupancy(props, threads, a["registers per thread"], a["shared memory"])
        blocks = min(occ["blocks_per_sm"], a["blocks per SM"])
        assert int(blocks * threads / props["maxThreadsPerMultiprocessor"] * 100 + 0.5) == a["est. achieved occupancy %"], e["name"]
        checked += 1
    assert checked > 20


def test_dispatch_detail_on_nvidia():
    """decode_eager's first nvjet kernel: registers per thread as recorded, shared memory
    per block, grid in blocks, and the occupancy worked out above."""
    from tui_prof.loaders import load_path
    from tui_prof.tui.view.dispatch import dispatch_detail
    from tui_prof.tui.view.runview import build_view

    first = next(
        e for e in trace("decode_eager")["traceEvents"] if e.get("cat") == "kernel" and e["name"].startswith("nvjet_") and e["args"]["grid"] == [2, 64, 1]
    )
    view = build_view(load_path(H200 / "decode_eager.pt.trace.json.gz", use_cache=False))
    k = view.kernels
    row = k[(k["t"] + view.origin == round(first["ts"] * 1000))].iloc[0]
    detail = dispatch_detail(view, row)
    pairs = dict(detail.pairs)
    assert pairs["registers / thread"] == str(first["args"]["registers per thread"]) == "168"
    assert "arch / accum VGPR" not in pairs and "SGPR" not in pairs
    assert pairs["grid (blocks)"] == "[2, 64, 1]"
    assert pairs["warps per SM"] == "12 of 64 (18.75%)"
    assert pairs["occupancy limiter"] == "registers · 1 blocks/SM"
    assert pairs["limits (blocks/SM)"] == "regs 1, smem 1, warps 5, blocks 32"
    assert detail.occupancy is not None and detail.occupancy["hint"].startswith("Registers-limited")
