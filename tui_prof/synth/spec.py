"""Synthetic GPU runs with a structure known by construction.

:class:`SynthSpec` describes a small HIP program; :func:`build` turns it into event
tables in the run-model schema (:mod:`tui_prof.model.schema`) plus the answers a
correct analysis must find (:class:`Expected`). Writers in this package serialise a
:class:`SynthRun` in profiler file formats.

The program (one host thread per GPU, all threads run the same code on their own GPU)::

    for c in range(htod_copies): hipMemcpy(HtoD, htod_bytes)        # blocking
    for it in range(iterations):
        for k in range(kernels_per_iteration):
            hipLaunchKernel(kernel k, stream k % streams)
            if sync == "per_launch": hipDeviceSynchronize()
        if sync == "per_iteration": hipDeviceSynchronize()
    if sync == "end": hipDeviceSynchronize()
    for c in range(dtoh_copies): hipMemcpy(DtoH, dtoh_bytes)        # blocking

Timing model (all int64 ns, CLOCK_BOOTTIME-like values starting at ``t0_ns``):

* every host API call is followed by ``gap_ns`` of host work before the next call;
* ``hipLaunchKernel`` lasts ``launch_ns`` (+- ``jitter``); its kernel becomes ready
  ``dispatch_latency_ns`` after the call returns and starts at
  ``max(ready, end of the previous kernel on that GPU)`` -- a GPU runs one kernel at a
  time (streams are assigned round-robin but never overlap);
* ``hipDeviceSynchronize`` returns ``sync_return_ns`` after the GPU's last kernel ends,
  and lasts at least ``sync_min_ns``;
* ``hipMemcpy`` starts its copy ``copy_latency_ns`` after the call starts, the copy
  lasts ``bytes / bandwidth``, the call returns ``copy_return_ns`` after the copy ends.

Idle gaps of a GPU are the holes between consecutive activities (kernels and copies)
inside the GPU's span. Each gap's cause is known: "sync" when a hipDeviceSynchronize
separates the two activities, else "copy" when either side is a blocking hipMemcpy,
else "launch" (the host did not submit the next kernel before the GPU ran dry).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from tui_prof.model.run import Agent
from tui_prof.model.schema import empty_table, make_table

SYNC_MODES = ("per_launch", "per_iteration", "end")
CAUSES = ("sync", "launch", "copy")  # idle-gap causes, see the module docstring

GEMM_NAME = "Cijk_Alik_Bljk_SB_MT128x128x16_MI32x32x2x1"


@dataclass(frozen=True)
class KernelKind:
    """One kernel of the synthetic program: name, mean duration (ns) and launch geometry."""

    name: str
    mean_ns: int
    grid: tuple[int, int, int]  # work-items
    wg: tuple[int, int, int]
    arch_vgpr: int
    accum_vgpr: int
    sgpr: int
    lds_bytes: int  # multiple of 512, so rocprofv3's LDS_Block_Size rounding is a no-op
    scratch_bytes: int = 0


# Non-GEMM kernels, used round-robin after the GEMM in each iteration. Names are
# realistic demangled names (commas, spaces, templates) to exercise CSV quoting.
OTHER_KERNELS: tuple[KernelKind, ...] = (
    KernelKind(
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
        "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
        6_000,
        (1048576, 1, 1),
        (256, 1, 1),
        16,
        0,
        24,
        0,
    ),
    KernelKind(
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps<float, "
        "float, float, float>, unsigned int, float, 4> >(at::native::ReduceOp<float, "
        "at::native::MeanOps<float, float, float, float>, unsigned int, float, 4>)",
        9_000,
        (131072, 4, 1),
        (512, 1, 1),
        32,
        0,
        40,
        4096,
    ),
    KernelKind(
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, "
        "float const*, float const*, float const*, float*, float*, float*)",
        12_000,
        (262144, 1, 1),
        (256, 1, 1),
        40,
        0,
        32,
        2048,
    ),
    KernelKind(
        "void ck_tile::kentry<256, 2, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<"
        "ck_tile::half_t> > >(ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<"
        "ck_tile::half_t> >::Kargs)",
        40_000,
        (16384, 16, 8),
        (256, 1, 1),
        128,
        64,
        96,
        32768,
        256,
    ),
    KernelKind("__amd_rocclr_copyBuffer", 4_000, (65536, 1, 1), (512, 1, 1), 12, 0, 16, 0),
)


ARCHES = ("gfx942", "gfx1151")
# hipBLASLt/Tensile's name of an f16 GEMM on gfx11 (WMMA 16x16x16 instead of MFMA)
WMMA_GEMM_NAME = "Cijk_Alik_Bljk_HHS_BH_MT128x128x32_WMMA16x16x16_SN_1LDSB0_GRVW8_WG32_8_1"


def gemm_kind(mean_ns: int, arch: str = "gfx942") -> KernelKind:
    """The dominating GEMM kernel with the given mean duration (ns): an MFMA GEMM on
    gfx942, a WMMA one on gfx1151 (wave32: 256 threads are 8 waves; no AGPRs)."""
    if arch == "gfx1151":
        return KernelKind(WMMA_GEMM_NAME, mean_ns, (4096, 32, 1), (256, 1, 1), 192, 0, 96, 32768)
    return KernelKind(GEMM_NAME, mean_ns, (4096, 32, 1), (256, 1, 1), 128, 128, 88, 16384)


@dataclass
class SynthSpec:
    """Parameters of a synthetic run. Durations in ns, bandwidth in bytes per ns (= GB/s)."""

    iterations: int = 200
    kernels_per_iteration: int = 10
    streams: int = 1  # streams (and HSA queues) per GPU, used round-robin
    gpus: int = 1
    sync: str = "per_launch"  # "per_launch" | "per_iteration" | "end"
    gemm_share: float = 0.6  # GEMM fraction of the mean kernel time per iteration
    gap_ns: int = 2_000  # host work between consecutive API calls
    launch_ns: int = 5_000  # hipLaunchKernel duration
    dispatch_latency_ns: int = 3_000  # launch return -> earliest kernel start
    sync_return_ns: int = 4_000  # last kernel end -> hipDeviceSynchronize return
    sync_min_ns: int = 1_000  # shortest hipDeviceSynchronize
    jitter: float = 0.1  # relative +- uniform jitter of kernel and launch durations
    htod_copies: int = 2
    htod_bytes: int = 64 << 20
    dtoh_copies: int = 1
    dtoh_bytes: int = 16 << 20
    htod_bandwidth: float = 25.0  # bytes/ns
    dtoh_bandwidth: float = 20.0
    copy_latency_ns: int = 8_000
    copy_return_ns: int = 5_000
    thread_stagger_ns: int = 50_000  # host thread g starts g * this later
    t0_ns: int = 1_550_151_853_000_000
    pid: int = 4242
    seed: int = 0
    arch: str = "gfx942"  # the GPU: "gfx942" (MI300X) or "gfx1151" (Radeon 8060S, WMMA GEMM)

    def __post_init__(self) -> None:
        if self.sync not in SYNC_MODES:
            raise ValueError(f"sync must be one of {SYNC_MODES}, got {self.sync!r}")
        if self.iterations < 1 or self.kernels_per_iteration < 1 or self.gpus < 1 or self.streams < 1:
            raise ValueError("iterations, kernels_per_iteration, gpus and streams must be >= 1")
        if not 0.0 < self.gemm_share <= 1.0:
            raise ValueError("gemm_share must be in (0, 1]")
        if not 0.0 <= self.jitter < 1.0:
            raise ValueError("jitter must be in [0, 1)")
        if self.arch not in ARCHES:
            raise ValueError(f"arch must be one of {ARCHES}, got {self.arch!r}")

    @property
    def dispatches(self) -> int:
        """Total kernel dispatches over all GPUs."""
        return self.iterations * self.kernels_per_iteration * self.gpus

    def iteration_pattern(self) -> list[int]:
        """Kernel kind index (into :meth:`kernel_kinds`) of each launch of one iteration."""
        return [0] + [1 + i % len(OTHER_KERNELS) for i in range(self.kernels_per_iteration - 1)]

    def kernel_kinds(self) -> list[KernelKind]:
        """The distinct kernels of the program (GEMM first), indexed by :meth:`iteration_pattern`.

        The GEMM's mean duration is chosen so that it takes ``gemm_share`` of the mean
        kernel time of one iteration (250 us when it is the only kernel).
        """
        pattern = self.iteration_pattern()
        used = sorted(set(pattern) - {0})
        other_ns = sum(OTHER_KERNELS[i - 1].mean_ns for i in pattern if i)
        if other_ns and self.gemm_share < 1.0:
            mean = int(round(other_ns * self.gemm_share / (1.0 - self.gemm_share)))
        else:
            mean = 250_000
        return [gemm_kind(max(mean, 1), self.arch)] + [OTHER_KERNELS[i - 1] for i in used]

    def to_dict(self) -> dict:
        d = asdict(self)
        if d["arch"] == "gfx942":
            del d["arch"]  # the default is left out: files written before the option stay byte-identical
        return d


@dataclass
class Expected:
    """Answers known by construction (ns unless noted; agent keys are GPU Agent.id)."""

    dispatches: int
    kernels: pd.DataFrame  # index name; columns calls, total_ns, min_ns, max_ns; by total desc
    api: pd.DataFrame  # index function; columns calls, total_ns
    gaps: dict[int, pd.DataFrame]  # agent -> columns start, end, cause ("sync"|"launch"|"copy")
    busy_ns: dict[int, int]  # kernels + copies (they never overlap)
    kernel_busy_ns: dict[int, int]
    copy_busy_ns: dict[int, int]
    span: dict[int, tuple[int, int]]  # agent -> (first activity start, last activity end)
    span_ns: dict[int, int]
    wall_span: tuple[int, int]  # first to last timestamp of any event (API calls included)
    sync_calls: int
    sync_total_ns: int
    copy_bytes: dict[str, int]  # "HtoD"/"DtoH" -> bytes
    copy_calls: dict[str, int]
    gemm_name: str = GEMM_NAME
    gemm_share: float = 0.0  # measured share of total kernel time

    @property
    def kernel_total_ns(self) -> int:
        return int(self.kernels["total_ns"].sum())

    def gap_counts(self) -> dict[int, dict[str, int]]:
        """agent -> cause -> number of gaps."""
        return {a: g["cause"].value_counts().to_dict() for a, g in self.gaps.items()}


@dataclass
class SynthRun:
    """Events of a synthetic run in the run-model schema, plus its known answers.

    ``kernels``/``api``/``copies`` are tables built with ``make_table`` (sorted by start).
    API ``domain`` is "hip"; the rocprofv3 domain spelling is ``HIP_DOMAIN``. Agent ids
    are KFD node ids: CPU 0, GPUs 1..N (logical index == node id).
    """

    spec: SynthSpec
    agents: list[Agent]
    kernels: pd.DataFrame
    api: pd.DataFrame
    copies: pd.DataFrame
    expected: Expected
    hostname: str = "synthhost"
    extra: dict = field(default_factory=dict)
    markers: pd.DataFrame = field(default_factory=lambda: empty_table("markers"))  # host ranges (roctx / record_function)
    allocations: pd.DataFrame = field(default_factory=lambda: empty_table("allocations"))

    HIP_DOMAIN = "HIP_RUNTIME_API_EXT"

    @property
    def gpu_agents(self) -> list[Agent]:
        return [a for a in self.agents if a.type == "GPU"]


MI300X_MEMORY_BYTES = 192 * (1 << 30)


STRIX_HALO_MEMORY_BYTES = 96 * (1 << 30)  # the GPU's share of the 128 GiB unified memory (BIOS setting)


def make_agents(gpus: int, arch: str = "gfx942") -> list[Agent]:
    """1 CPU (node 0) + ``gpus`` MI300X (gfx942, 304 CUs) at nodes 1..gpus; with
    ``arch="gfx1151"`` the Strix Halo APU: a Ryzen AI Max+ 395 and its Radeon 8060S (40
    RDNA 3.5 CUs, 2 SIMD32 per CU, wave32)."""
    if arch == "gfx1151":
        agents = [
            Agent(
                id=0,
                type="CPU",
                name="AMD RYZEN AI MAX+ 395 w/ Radeon 8060S",
                product="AMD RYZEN AI MAX+ 395 w/ Radeon 8060S",
                vendor="CPU",
                node_id=0,
                logical_index=0,
                type_index=0,
                cu_count=32,
                max_clock_mhz=5100,
                extra={"cpu_cores_count": 32},
            )
        ]
        for g in range(gpus):
            agents.append(
                Agent(
                    id=g + 1,
                    type="GPU",
                    name="gfx1151",
                    product="AMD Radeon 8060S Graphics",
                    vendor="AMD",
                    node_id=g + 1,
                    logical_index=g + 1,
                    type_index=g,
                    gfx_target_version=110501,
                    cu_count=40,
                    simd_per_cu=2,
                    simd_count=80,
                    wave_size=32,
                    max_waves_per_simd=16,
                    max_waves_per_cu=32,
                    lds_bytes_per_cu=65536,
                    num_xcc=1,
                    max_clock_mhz=2900,
                    memory_bytes=STRIX_HALO_MEMORY_BYTES,
                    workgroup_max_size=1024,
                    extra={"device_id": 5510, "model_name": "", "family_id": 150},
                )
            )
        return agents
    agents = [
        Agent(
            id=0,
            type="CPU",
            name="AMD EPYC 9654 96-Core Processor",
            product="AMD EPYC 9654 96-Core Processor",
            vendor="CPU",
            node_id=0,
            logical_index=0,
            type_index=0,
            cu_count=96,
            max_clock_mhz=3700,
            extra={"cpu_cores_count": 96},
        )
    ]
    for g in range(gpus):
        agents.append(
            Agent(
                id=g + 1,
                type="GPU",
                name="gfx942",
                product="AMD Instinct MI300X",
                vendor="AMD",
                node_id=g + 1,
                logical_index=g + 1,
                type_index=g,
                gfx_target_version=90402,
                cu_count=304,
                simd_per_cu=4,
                simd_count=1216,
                wave_size=64,
                max_waves_per_simd=8,
                max_waves_per_cu=32,
                lds_bytes_per_cu=65536,
                num_xcc=8,
                max_clock_mhz=2100,
                memory_bytes=MI300X_MEMORY_BYTES,
                workgroup_max_size=1024,
                extra={"device_id": 29857, "model_name": "ip discovery", "family_id": 141},
            )
        )
    return agents


def _jittered(rng: np.random.Generator, mean: np.ndarray, jitter: float) -> np.ndarray:
    """int64 durations uniformly in mean * [1 - jitter, 1 + jitter], at least 1 ns."""
    factor = 1.0 + jitter * rng.uniform(-1.0, 1.0, size=mean.shape)
    return np.maximum(np.rint(mean * factor).astype(np.int64), 1)


def _segment_exclusive_cumsum(values: np.ndarray, seg_first: np.ndarray) -> np.ndarray:
    """Cumulative sum of ``values`` before each element, restarting at each segment start.

    ``seg_first[i]`` is the index of the first element of element i's segment.
    """
    total = np.cumsum(values) - values  # exclusive, global
    return total - total[seg_first]


class _Timeline(NamedTuple):
    """Every GPU thread's launches, syncs and copies, (G, n) arrays of absolute ns, and the
    draws and shapes they were built from."""

    kinds: Any
    n_kinds: Any
    G: Any
    I: Any
    K: Any
    n_launch: Any
    kind_of: Any
    per_seg: Any
    n_lseg: Any
    seg_of: Any
    kdur: Any
    htod_ns: Any
    dtoh_ns: Any
    htod_starts: Any
    dtoh_starts: Any
    k_api_start: Any
    k_api_end: Any
    k_start: Any
    k_end: Any
    s_start: Any
    s_end: Any


def _timeline(spec: SynthSpec) -> _Timeline:
    """The random draws (fixed order: deterministic per seed) and the launch, sync and copy
    times of every GPU thread."""
    rng = np.random.default_rng(spec.seed)
    kinds = spec.kernel_kinds()
    n_kinds = len(kinds)
    G, I, K = spec.gpus, spec.iterations, spec.kernels_per_iteration
    n_launch = I * K  # per GPU
    kind_of = np.tile(np.asarray(spec.iteration_pattern(), dtype=np.int64), I)  # launch -> kind

    # ---- segments of one GPU thread: [htod copies] [launch groups ending in a sync] [dtoh copies]
    if spec.sync == "per_launch":
        per_seg = 1
    elif spec.sync == "per_iteration":
        per_seg = K
    else:
        per_seg = n_launch
    n_lseg = n_launch // per_seg
    seg_of = np.arange(n_launch, dtype=np.int64) // per_seg  # launch segment index

    # ---- random draws (fixed order => deterministic)
    mean_k = np.array([k.mean_ns for k in kinds], dtype=np.float64)
    kdur = _jittered(rng, np.broadcast_to(mean_k[kind_of], (G, n_launch)).copy(), spec.jitter)
    ldur = _jittered(rng, np.full((G, n_launch), float(spec.launch_ns)), spec.jitter)
    htod_ns = int(np.ceil(spec.htod_bytes / spec.htod_bandwidth)) if spec.htod_copies else 0
    dtoh_ns = int(np.ceil(spec.dtoh_bytes / spec.dtoh_bandwidth)) if spec.dtoh_copies else 0
    gap = spec.gap_ns

    # ---- launch segments, times relative to the segment start (same for all GPUs' shapes)
    seg_first = seg_of * per_seg  # index of the segment's first launch
    k_api_start = np.empty((G, n_launch), dtype=np.int64)
    k_api_end = np.empty_like(k_api_start)
    k_start = np.empty_like(k_api_start)
    k_end = np.empty_like(k_api_start)
    sync_start_rel = np.empty((G, n_lseg), dtype=np.int64)
    sync_end_rel = np.empty_like(sync_start_rel)
    for g in range(G):
        a_start = _segment_exclusive_cumsum(ldur[g] + gap, seg_first)
        a_end = a_start + ldur[g]
        ready = a_end + spec.dispatch_latency_ns
        # start_i = max(ready_i, end_{i-1}) within a segment, vectorised as
        # end_i = C_i + max_{j<=i in seg}(ready_j - C_{j-1})  with C the segment cumsum of durations
        c_excl = _segment_exclusive_cumsum(kdur[g], seg_first)
        slack = pd.Series(ready - c_excl).groupby(seg_of).cummax().to_numpy()
        end = c_excl + kdur[g] + slack
        start = end - kdur[g]
        k_api_start[g], k_api_end[g], k_start[g], k_end[g] = a_start, a_end, start, end
        last = np.arange(n_lseg) * per_seg + per_seg - 1
        sync_start_rel[g] = a_end[last] + gap
        sync_end_rel[g] = np.maximum(sync_start_rel[g] + spec.sync_min_ns, end[last] + spec.sync_return_ns)
    lseg_len = sync_end_rel + gap  # (G, n_lseg)

    copy_seg_len_in = spec.copy_latency_ns + htod_ns + spec.copy_return_ns + gap
    copy_seg_len_out = spec.copy_latency_ns + dtoh_ns + spec.copy_return_ns + gap

    # absolute segment starts per GPU thread
    thread_t0 = spec.t0_ns + np.arange(G, dtype=np.int64) * spec.thread_stagger_ns
    htod_starts = thread_t0[:, None] + np.arange(spec.htod_copies, dtype=np.int64)[None, :] * copy_seg_len_in
    loop_t0 = thread_t0 + spec.htod_copies * copy_seg_len_in
    lseg_start = loop_t0[:, None] + np.cumsum(lseg_len, axis=1) - lseg_len
    loop_end = loop_t0 + lseg_len.sum(axis=1)
    dtoh_starts = loop_end[:, None] + np.arange(spec.dtoh_copies, dtype=np.int64)[None, :] * copy_seg_len_out

    k_off = lseg_start[:, seg_of]  # (G, n_launch)
    k_api_start += k_off
    k_api_end += k_off
    k_start += k_off
    k_end += k_off
    s_start = lseg_start + sync_start_rel
    s_end = lseg_start + sync_end_rel
    return _Timeline(
        kinds,
        n_kinds,
        G,
        I,
        K,
        n_launch,
        kind_of,
        per_seg,
        n_lseg,
        seg_of,
        kdur,
        htod_ns,
        dtoh_ns,
        htod_starts,
        dtoh_starts,
        k_api_start,
        k_api_end,
        k_start,
        k_end,
        s_start,
        s_end,
    )


def _copy_block(spec: SynthSpec, tids: np.ndarray, gpu_ids: np.ndarray, starts, dur, nbytes, direction, label, src_of_g, dst_of_g) -> dict:
    """The copies of one direction of every GPU thread ((G, n) ``starts`` of their API calls), flattened."""
    G = len(gpu_ids)
    n = starts.shape[1]
    c_start = starts + spec.copy_latency_ns
    c_end = c_start + dur
    return {
        "api_start": starts.ravel(),
        "api_end": (c_end + spec.copy_return_ns).ravel(),
        "start": c_start.ravel(),
        "end": c_end.ravel(),
        "bytes": np.full(G * n, nbytes, np.int64),
        "direction": [direction] * (G * n),
        "name": [label] * (G * n),
        "src_agent": np.repeat(src_of_g, n),
        "dst_agent": np.repeat(dst_of_g, n),
        "tid": np.repeat(tids, n),
        "gpu": np.repeat(gpu_ids, n),
    }


def _kernel_table(
    spec: SynthSpec, tl: _Timeline, k_corr: np.ndarray, tids: np.ndarray, gpu_ids: np.ndarray
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """The kernels table (sorted by start, then GPU) and, in launch order, each dispatch's
    kind, start and end."""
    kinds, n_kinds, G, I, K, n_launch, kind_of, pid = tl.kinds, tl.n_kinds, tl.G, tl.I, tl.K, tl.n_launch, tl.kind_of, spec.pid
    k_start, k_end = tl.k_start, tl.k_end
    n_k = G * n_launch
    k_kind = np.broadcast_to(kind_of, (G, n_launch)).ravel()
    k_gpu = np.repeat(gpu_ids, n_launch)
    k_stream_local = np.tile(np.arange(K, dtype=np.int64) % spec.streams, G * I)
    k_stream = (k_gpu - 1) * spec.streams + k_stream_local + 1
    # dispatch ids follow the launch order, which is the correlation order of launches
    dispatch = np.empty(n_k, dtype=np.int64)
    dispatch[np.argsort(k_corr, kind="stable")] = np.arange(1, n_k + 1, dtype=np.int64)

    def kk(attr: str, i: int | None = None) -> np.ndarray:
        """Per-dispatch value of KernelKind field ``attr`` (element ``i`` of a tuple field)."""
        per_kind = [getattr(kind, attr) if i is None else getattr(kind, attr)[i] for kind in kinds]
        return np.asarray(per_kind, dtype=np.int64)[k_kind]

    kstart, kend = k_start.ravel(), k_end.ravel()
    korder = np.lexsort((k_gpu, kstart))
    kernels = make_table(
        "kernels",
        {
            "start": kstart[korder],
            "end": kend[korder],
            "agent": k_gpu[korder],
            "queue": k_stream[korder],
            "stream": k_stream[korder],
            "pid": pid,
            "tid": np.repeat(tids, n_launch)[korder],
            "correlation_id": k_corr[korder],
            "dispatch_id": dispatch[korder],
            "kernel_id": ((k_gpu - 1) * n_kinds + k_kind + 1)[korder],
            "name": pd.Categorical.from_codes(k_kind[korder], categories=[k.name for k in kinds]),
            "grid_x": kk("grid", 0)[korder],
            "grid_y": kk("grid", 1)[korder],
            "grid_z": kk("grid", 2)[korder],
            "wg_x": kk("wg", 0)[korder],
            "wg_y": kk("wg", 1)[korder],
            "wg_z": kk("wg", 2)[korder],
            "lds_bytes": kk("lds_bytes")[korder],
            "scratch_bytes": kk("scratch_bytes")[korder],
            "arch_vgpr": kk("arch_vgpr")[korder],
            "accum_vgpr": kk("accum_vgpr")[korder],
            "sgpr": kk("sgpr")[korder],
        },
    )
    return kernels, k_kind, kstart, kend


def _expected_gaps(spec: SynthSpec, tl: _Timeline, gpu_ids: np.ndarray) -> tuple[dict, dict, dict, dict, dict, dict]:
    """Per GPU: its gaps with their causes, busy, kernel-busy and copy-busy ns, span and span ns."""
    G, n_launch, seg_of, per_seg, kdur = tl.G, tl.n_launch, tl.seg_of, tl.per_seg, tl.kdur
    htod_starts, dtoh_starts, k_start, k_end, htod_ns, dtoh_ns = tl.htod_starts, tl.dtoh_starts, tl.k_start, tl.k_end, tl.htod_ns, tl.dtoh_ns
    gaps: dict[int, pd.DataFrame] = {}
    busy, kbusy, cbusy, span, span_ns = {}, {}, {}, {}, {}
    hin, hout = spec.htod_copies, spec.dtoh_copies
    for g in range(G):
        agent = int(gpu_ids[g])
        in_s = htod_starts[g] + spec.copy_latency_ns
        out_s = dtoh_starts[g] + spec.copy_latency_ns
        starts = np.concatenate([in_s, k_start[g], out_s])
        ends = np.concatenate([in_s + htod_ns, k_end[g], out_s + dtoh_ns])
        # cause of the gap *before* each activity, by the host call that separates it
        # codes into CAUSES: 0 sync, 1 launch, 2 copy
        cause = np.full(len(starts), 2, dtype=np.int8)
        cause[hin : hin + n_launch] = np.where(seg_of * per_seg == np.arange(n_launch), 0, 1)
        if hin:
            cause[hin] = 2  # first kernel follows the last blocking HtoD copy
        if hout:
            cause[hin + n_launch] = 0  # the final hipDeviceSynchronize precedes the first DtoH
        has_gap = np.zeros(len(starts), dtype=bool)
        has_gap[1:] = starts[1:] > ends[:-1]
        idx = np.flatnonzero(has_gap)
        gaps[agent] = pd.DataFrame(
            {
                "start": ends[idx - 1].astype(np.int64),
                "end": starts[idx].astype(np.int64),
                "cause": pd.Categorical.from_codes(cause[idx], categories=list(CAUSES)),
            }
        )
        kbusy[agent] = int(kdur[g].sum())
        cbusy[agent] = int(hin * htod_ns + hout * dtoh_ns)
        busy[agent] = kbusy[agent] + cbusy[agent]
        span[agent] = (int(starts[0]), int(ends[-1]))
        span_ns[agent] = span[agent][1] - span[agent][0]
        assert span_ns[agent] == busy[agent] + int((gaps[agent]["end"] - gaps[agent]["start"]).sum())
    return gaps, busy, kbusy, cbusy, span, span_ns


def _copies_table(cp: dict, c_corr: np.ndarray, pid: int) -> pd.DataFrame:
    """The copies table of the flattened copy rows ``cp`` (sorted by start, then GPU)."""
    corder = np.lexsort((cp["gpu"], cp["start"]))
    return make_table(
        "copies",
        {
            "start": cp["start"][corder],
            "end": cp["end"][corder],
            "bytes": cp["bytes"][corder],
            "direction": np.asarray(cp["direction"])[corder],
            "src_agent": cp["src_agent"][corder],
            "dst_agent": cp["dst_agent"][corder],
            "queue": 0,
            "stream": 0,
            "pid": pid,
            "tid": cp["tid"][corder],
            "correlation_id": c_corr[corder],
            "name": np.asarray(cp["name"])[corder],
        },
    )


def build(spec: SynthSpec, hostname: str = "synthhost") -> SynthRun:
    """Generate the events and expected answers of ``spec`` (deterministic per seed)."""
    tl = _timeline(spec)

    pid = spec.pid
    tids = pid + np.arange(tl.G, dtype=np.int64)  # thread 0 is the main thread (tid == pid)
    gpu_ids = np.arange(1, tl.G + 1, dtype=np.int64)

    cin = _copy_block(spec, tids, gpu_ids, tl.htod_starts, tl.htod_ns, spec.htod_bytes, "HtoD", "MEMORY_COPY_HOST_TO_DEVICE", np.zeros(tl.G, np.int64), gpu_ids)
    cout = _copy_block(
        spec, tids, gpu_ids, tl.dtoh_starts, tl.dtoh_ns, spec.dtoh_bytes, "DtoH", "MEMORY_COPY_DEVICE_TO_HOST", gpu_ids, np.zeros(tl.G, np.int64)
    )
    cp = {key: (np.concatenate([cin[key], cout[key]]) if isinstance(cin[key], np.ndarray) else cin[key] + cout[key]) for key in cin}
    n_copies = len(cp["start"])

    # ---- API calls: launches, syncs, memcpys; correlation ids by (start, tid) order
    n_k = tl.G * tl.n_launch
    n_s = tl.G * tl.n_lseg
    api_start = np.concatenate([tl.k_api_start.ravel(), tl.s_start.ravel(), cp["api_start"]])
    api_end = np.concatenate([tl.k_api_end.ravel(), tl.s_end.ravel(), cp["api_end"]])
    api_tid = np.concatenate([np.repeat(tids, tl.n_launch), np.repeat(tids, tl.n_lseg), cp["tid"]])
    api_fn = np.concatenate([np.zeros(n_k, np.int8), np.ones(n_s, np.int8), np.full(n_copies, 2, np.int8)])
    order = np.lexsort((api_tid, api_start))
    corr = np.empty(len(order), dtype=np.int64)
    corr[order] = np.arange(1, len(order) + 1, dtype=np.int64)
    k_corr = corr[:n_k]
    c_corr = corr[n_k + n_s :]
    fn_names = np.array(["hipLaunchKernel", "hipDeviceSynchronize", "hipMemcpy"])
    api = make_table(
        "api",
        {
            "start": api_start[order],
            "end": api_end[order],
            "domain": "hip",
            "name": pd.Categorical.from_codes(api_fn[order], categories=list(fn_names)),
            "pid": pid,
            "tid": api_tid[order],
            "correlation_id": corr[order],
        },
    )

    kernels, k_kind, kstart, kend = _kernel_table(spec, tl, k_corr, tids, gpu_ids)

    copies = _copies_table(cp, c_corr, pid)

    # ---- expected answers, from the construction arrays
    kflat = tl.kdur.ravel()
    per_kind = pd.Series(kflat).groupby(k_kind).agg(["size", "sum", "min", "max"]).reindex(range(tl.n_kinds))
    calls, totals, mins, maxs = (per_kind[c].to_numpy(np.int64) for c in ("size", "sum", "min", "max"))
    kexp = pd.DataFrame(
        {"calls": calls.astype(np.int64), "total_ns": totals, "min_ns": mins, "max_ns": maxs}, index=pd.Index([k.name for k in tl.kinds], name="name")
    )
    kexp = kexp.sort_values("total_ns", ascending=False, kind="stable")

    api_dur = api_end - api_start
    aexp = pd.DataFrame(
        {
            "calls": [n_k, n_s, n_copies],
            "total_ns": [int(api_dur[:n_k].sum()), int(api_dur[n_k : n_k + n_s].sum()), int(api_dur[n_k + n_s :].sum())],
        },
        index=pd.Index(list(fn_names), name="function"),
    )
    aexp = aexp[aexp["calls"] > 0]

    gaps, busy, kbusy, cbusy, span, span_ns = _expected_gaps(spec, tl, gpu_ids)
    hin, hout = spec.htod_copies, spec.dtoh_copies

    all_starts = [api_start.min(), kstart.min()] + ([cp["start"].min()] if n_copies else [])
    all_ends = [api_end.max(), kend.max()] + ([cp["end"].max()] if n_copies else [])
    expected = Expected(
        dispatches=n_k,
        kernels=kexp,
        api=aexp,
        gaps=gaps,
        busy_ns=busy,
        kernel_busy_ns=kbusy,
        copy_busy_ns=cbusy,
        span=span,
        span_ns=span_ns,
        wall_span=(int(min(all_starts)), int(max(all_ends))),
        sync_calls=n_s,
        sync_total_ns=int(api_dur[n_k : n_k + n_s].sum()),
        copy_bytes={"HtoD": tl.G * hin * spec.htod_bytes, "DtoH": tl.G * hout * spec.dtoh_bytes},
        copy_calls={"HtoD": tl.G * hin, "DtoH": tl.G * hout},
        gemm_share=float(totals[0] / totals.sum()),
        gemm_name=tl.kinds[0].name,
    )
    return SynthRun(spec=spec, agents=make_agents(tl.G, spec.arch), kernels=kernels, api=api, copies=copies, expected=expected, hostname=hostname)


def summary(expected: Expected) -> dict:
    """JSON-friendly digest of ``expected`` (totals and counts, no per-gap lists)."""
    return {
        "dispatches": expected.dispatches,
        "kernel_total_ns": expected.kernel_total_ns,
        "gemm_name": expected.gemm_name,
        "gemm_share": round(expected.gemm_share, 6),
        "kernels": {name: {k: int(v) for k, v in row.items()} for name, row in expected.kernels.iterrows()},
        "api": {name: {k: int(v) for k, v in row.items()} for name, row in expected.api.iterrows()},
        "gaps": {
            str(a): {
                "count": len(g),
                "total_ns": int((g["end"] - g["start"]).sum()),
                "by_cause": {str(c): int(n) for c, n in g["cause"].value_counts().items()},
            }
            for a, g in expected.gaps.items()
        },
        "busy_ns": {str(a): v for a, v in expected.busy_ns.items()},
        "kernel_busy_ns": {str(a): v for a, v in expected.kernel_busy_ns.items()},
        "copy_busy_ns": {str(a): v for a, v in expected.copy_busy_ns.items()},
        "span": {str(a): list(v) for a, v in expected.span.items()},
        "span_ns": {str(a): v for a, v in expected.span_ns.items()},
        "wall_span": list(expected.wall_span),
        "sync_calls": expected.sync_calls,
        "sync_total_ns": expected.sync_total_ns,
        "copy_bytes": expected.copy_bytes,
        "copy_calls": expected.copy_calls,
    }
