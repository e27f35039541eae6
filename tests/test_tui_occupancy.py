"""Every occupancy limiter named in order (issue 20 item 10): the rocpd run's
BatchedGemmKernel (128 arch VGPRs + 384 AGPRs, 112 SGPRs, 64 KiB LDS, 256-thread
workgroups on gfx942), worked out by hand from the CDNA3 limits."""

from __future__ import annotations

from pathlib import Path

from tui_prof.analysis.occupancy import kernel_occupancy, occupancy
from tui_prof.loaders import load_path

DB = Path(__file__).parent / "data" / "rocpd" / "28_results.db"


def test_batched_gemm_limiters_in_order():
    run = load_path(DB, use_cache=False).runs[0]
    arch = {a.id: a.arch for a in run.agents if a.type == "GPU"}
    occ = next(o for o in kernel_occupancy(run.kernels, arch) if "BatchedGemmKernel" in o["name"])
    assert (occ["vgpr"], occ["agpr"], occ["sgpr"], occ["lds_bytes"], occ["workgroup_size"]) == (128, 384, 112, 65536, 256)
    # 4 waves per workgroup, 4 SIMDs, 8 waves per SIMD:
    # VGPR+AGPR: align(128, 4) + 384 = 512 -> 512 // 512 = 1 wave per SIMD -> 1 * 4 // 4 = 1 workgroup
    # LDS: 65536 // 65536 = 1; SGPR 112 (> 100) -> 7 waves -> 7; waves per CU 8 * 4 // 4 = 8; barriers 16
    assert [(x["limit"], x["workgroups_per_cu"]) for x in occ["limiters"]] == [
        ("VGPR + AGPR", 1),
        ("LDS", 1),
        ("SGPR", 7),
        ("waves per CU", 8),
        ("workgroup slots", 16),
    ]
    assert occ["hint"].endswith("fewer VGPRs alone would not help (next limit: LDS, 1 workgroup per CU).")


def test_separate_agpr_file_is_its_own_limiter():
    """gfx908 keeps AGPRs in a separate 256-register file: 64 VGPRs allow 256 // 64 = 4
    waves per SIMD (16 one-wave workgroups on 4 SIMDs), 256 AGPRs only 1 (4 workgroups)."""
    occ = occupancy("gfx908", 64, 64, 256, 32, 0)
    assert [(x["limit"], x["workgroups_per_cu"]) for x in occ["limiters"]] == [("AGPR", 4), ("VGPR", 16), ("SGPR", 40), ("waves per CU", 40)]
