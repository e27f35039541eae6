"""A generated rocprof-compute workload whose counter verdicts are known by construction.

:func:`counter_workload` builds three kernels on an MI300X (gfx942: 304 CUs, 8 XCDs, 32 waves
per CU, max_mclk 1300 MHz, 128 HBM channels, so rocprof-compute's ``$hbmBandwidth`` is
1300/1000*32*128 = 5324.8 GB/s), each with one problem and every other metric healthy:

* ``lds_transpose_tile`` — LDS-bound: SQ_LDS_BANK_CONFLICT/(SQ_LDS_IDX_ACTIVE-SQ_LDS_BANK_CONFLICT)
  = 0.5 conflicts per access (threshold 0.1);
* ``l2_miss_stream`` — L2-miss heavy: TCC_HIT/(TCC_HIT+TCC_MISS) = 20% (threshold 50%), the
  vector L1 stalled on L2 data 60% of its active cycles (threshold 20%),
  and memory-bound on the roofline: 7.68 MFLOP over 38.4 MB = 0.2 FLOP/B, left of the VALU ridge
  81715.2/5324.8 = 15.35 (VALU roof max_sclk*CUs*64*2/1000 GFLOP/s);
* ``vgpr_heavy_gemm`` — occupancy-limited: 256 VGPRs + 0 AGPRs at 256 work-items per workgroup
  give 2 of 8 waves per SIMD (VGPR limit), SQ_LEVEL_WAVES_ACCUM/(GRBM_GUI_ACTIVE/8) = 1216 waves
  = 12.5% of 9728 (threshold 25%), SPI_RA_VGPR_SIMD_FULL_CSN the only resource stall;
  compute-bound: 10.24 GFLOP of MFMA over 9.6 MB = 1066.7 FLOP/B, right of the MFMA ridge
  1307443.2/5324.8 = 245.5 (F16 roof max_sclk*CUs*2048/1000).

The healthy values: L2 hit 90%, 0 bank conflicts, occupancy 75% (7296 waves), vL1D hit 80%,
sL1D hit 99%, vL1D stalled on L2 data 10%. :func:`write_rocprof_compute` writes it as a workload folder (``pmc_perf.csv``
wide table of the rocprofv3 backend, ``SQ_LEVEL_WAVES.csv``, ``sysinfo.csv``) for the loader.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

CU, XCD, WAVES_PER_CU, SCLK, MCLK, HBM_CHANNELS = 304, 8, 32, 2100, 1300, 128
MAX_WAVES = CU * WAVES_PER_CU  # 9728
GRBM = 800_000  # GRBM_GUI_ACTIVE of every dispatch: 100_000 cycles per XCD
DURATION_NS = 50_000
HBM_GBS = MCLK / 1000 * 32 * HBM_CHANNELS  # 5324.8


@dataclass
class CounterKernel:
    name: str
    dispatches: int
    vgpr: int
    counters: dict[str, float]
    expected: dict[str, float] = field(default_factory=dict)  # metric key -> value
    flagged: tuple[str, ...] = ()  # metric keys over their threshold
    occupancy_limiter: str = ""
    bound: str = ""


def _healthy(wave_fraction: float = 0.75) -> dict[str, float]:
    return {
        "GRBM_COUNT": GRBM,
        "GRBM_GUI_ACTIVE": GRBM,
        "SQ_WAVES": 4096,
        "SQ_INSTS_VALU": 40_000,
        "SQ_ACTIVE_INST_VALU": 20_000,
        "SQ_THREAD_CYCLES_VALU": 20_000 * 64,
        "SQ_LEVEL_WAVES": 0,
        "SQ_LEVEL_WAVES_ACCUM": wave_fraction * MAX_WAVES * (GRBM / XCD),
        "SQ_LDS_IDX_ACTIVE": 10_000,
        "SQ_LDS_BANK_CONFLICT": 0,
        "TCC_HIT_sum": 90_000,
        "TCC_MISS_sum": 10_000,
        "TCP_TOTAL_CACHE_ACCESSES_sum": 100_000,
        "TCP_TCC_READ_REQ_sum": 15_000,
        "TCP_TCC_WRITE_REQ_sum": 5_000,
        "TCP_TCC_ATOMIC_WITH_RET_REQ_sum": 0,
        "TCP_TCC_ATOMIC_WITHOUT_RET_REQ_sum": 0,
        "TCP_GATE_EN1_sum": 100_000,
        "TCP_PENDING_STALL_CYCLES_sum": 10_000,
        "SQC_DCACHE_HITS": 9_900,
        "SQC_DCACHE_MISSES": 100,
        "TCC_BUBBLE_sum": 0,
        "TCC_EA0_RDREQ_32B_sum": 0,
        "TCC_EA0_RDREQ_sum": 100_000,  # 6.4 MB read: 128 GB/s
        "TCC_EA0_WRREQ_sum": 50_000,
        "TCC_EA0_WRREQ_64B_sum": 50_000,  # 3.2 MB written: 64 GB/s
        "SQ_INSTS_VALU_ADD_F32": 0,
        "SQ_INSTS_VALU_MUL_F32": 0,
        "SQ_INSTS_VALU_TRANS_F32": 0,
        "SQ_INSTS_VALU_FMA_F32": 0,
        "SQ_INSTS_VALU_MFMA_MOPS_F16": 0,
        "SPI_RA_VGPR_SIMD_FULL_CSN": 0,
        "SPI_RA_LDS_CU_FULL_CSN": 0,
        "SPI_RA_SGPR_SIMD_FULL_CSN": 0,
        "SPI_RA_WAVE_SIMD_FULL_CSN": 0,
    }


def counter_workload() -> list[CounterKernel]:
    lds = _healthy()
    lds.update(SQ_LDS_IDX_ACTIVE=30_000, SQ_LDS_BANK_CONFLICT=10_000, SQ_INSTS_VALU_FMA_F32=20_000)
    l2 = _healthy()
    l2.update(
        TCP_PENDING_STALL_CYCLES_sum=60_000,
        TCC_HIT_sum=20_000,
        TCC_MISS_sum=80_000,
        TCC_EA0_RDREQ_sum=400_000,
        TCC_EA0_WRREQ_sum=200_000,
        TCC_EA0_WRREQ_64B_sum=200_000,
        SQ_INSTS_VALU_FMA_F32=60_000,
    )
    gemm = _healthy(wave_fraction=0.125)
    gemm.update(SPI_RA_VGPR_SIMD_FULL_CSN=50_000, SQ_INSTS_VALU_MFMA_MOPS_F16=20_000_000)
    kernels = [
        CounterKernel("lds_transpose_tile", 3, 32, lds, flagged=("lds_conflicts_per_access",)),
        CounterKernel("l2_miss_stream", 4, 32, l2, flagged=("l2_hit", "vl1d_stalled_on_l2"), bound="memory"),
        CounterKernel("vgpr_heavy_gemm", 2, 256, gemm, flagged=("wave_occupancy",), occupancy_limiter="VGPRs", bound="compute"),
    ]
    for k in kernels:
        c = k.counters
        read = 64 * (c["TCC_EA0_RDREQ_sum"] - c["TCC_BUBBLE_sum"] - c["TCC_EA0_RDREQ_32B_sum"]) + 32 * c["TCC_EA0_RDREQ_32B_sum"] + 128 * c["TCC_BUBBLE_sum"]
        write = 64 * c["TCC_EA0_WRREQ_64B_sum"] + 32 * (c["TCC_EA0_WRREQ_sum"] - c["TCC_EA0_WRREQ_64B_sum"])
        flops = 64 * 2 * c["SQ_INSTS_VALU_FMA_F32"] + 512 * c["SQ_INSTS_VALU_MFMA_MOPS_F16"]
        k.expected = {
            "l2_hit": 100 * c["TCC_HIT_sum"] / (c["TCC_HIT_sum"] + c["TCC_MISS_sum"]),
            "lds_conflicts_per_access": c["SQ_LDS_BANK_CONFLICT"] / (c["SQ_LDS_IDX_ACTIVE"] - c["SQ_LDS_BANK_CONFLICT"]),
            "wave_occupancy": c["SQ_LEVEL_WAVES_ACCUM"] / (GRBM / XCD),
            "l2_fabric_read_bw": read / DURATION_NS,
            "l2_fabric_write_bw": write / DURATION_NS,
            "vl1d_hit": 80.0,
            "sl1d_hit": 99.0,
            "vl1d_stalled_on_l2": 100 * c["TCP_PENDING_STALL_CYCLES_sum"] / c["TCP_GATE_EN1_sum"],
            "gpu_busy": 100.0,
            "valu_utilization": 100.0,
            "ai": flops / (read + write) if flops else float("nan"),
        }
    return kernels


SYSINFO = {
    "workload_name": "synth_counters",
    "command": "./synth_counters",
    "ip_blocks": "SQ|LDS|SQC|TA|TD|TCP|TCC|SPI|CPC|CPF",
    "timestamp": "generated",
    "version": "3",
    "hostname": "synthhost",
    "gpu_model": "MI300X_A1",
    "gpu_arch": "gfx942",
    "cu_per_gpu": str(CU),
    "simd_per_cu": "4",
    "se_per_gpu": "32",
    "wave_size": "64",
    "workgroup_max_size": "1024",
    "max_waves_per_cu": str(WAVES_PER_CU),
    "max_sclk": str(SCLK),
    "max_mclk": str(MCLK),
    "total_l2_chan": "128",
    "lds_banks_per_cu": "32",
    "num_xcd": str(XCD),
    "num_hbm_channels": str(HBM_CHANNELS),
}
FIXED = [
    "Dispatch_ID",
    "GPU_ID",
    "Queue_ID",
    "PID",
    "TID",
    "Grid_Size",
    "Workgroup_Size",
    "LDS_Per_Workgroup",
    "Scratch_Per_Workitem",
    "Arch_VGPR",
    "Accum_VGPR",
    "SGPR",
    "Wave_Size",
    "Kernel_Name",
    "Start_Timestamp",
    "End_Timestamp",
    "Correlation_ID",
    "Kernel_ID",
]


def write_rocprof_compute(outdir: str | Path, kernels: list[CounterKernel] | None = None) -> Path:
    """Write the workload as rocprof-compute writes ``workloads/<name>/MI300X_A1/``; returns the folder."""
    kernels = kernels or counter_workload()
    folder = Path(outdir)
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "sysinfo.csv", "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(list(SYSINFO))
        writer.writerow(list(SYSINFO.values()))
    names = [n for n in kernels[0].counters if n not in ("SQ_LEVEL_WAVES", "SQ_LEVEL_WAVES_ACCUM")]
    perf, level = [], []
    dispatch, start = 0, 1_000_000_000
    for kernel_id, k in enumerate(kernels, start=1):
        for _ in range(k.dispatches):
            fixed = [dispatch, 2, 1, 4242, 4242, 256 * 1024, 256, 0, 0, k.vgpr, 0, 32, 64, k.name, start, start + DURATION_NS, dispatch + 1, kernel_id]
            perf.append(fixed + [k.counters[n] for n in names])
            level.append(fixed + [GRBM, k.counters["SQ_LEVEL_WAVES"], k.counters["SQ_LEVEL_WAVES_ACCUM"]])
            dispatch += 1
            start += 100_000
    for path, header, rows in (
        (folder / "pmc_perf.csv", FIXED + names, perf),
        (folder / "SQ_LEVEL_WAVES.csv", [*FIXED, "GRBM_GUI_ACTIVE", "SQ_LEVEL_WAVES", "SQ_ACCUM_PREV_HIRES"], level),
    ):
        with open(path, "w", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(header)
            writer.writerows(rows)
    return folder
