"""Multi-rank synthetic runs: a data-parallel job with a known straggler and known waits.

:func:`build_ranks` turns a :class:`RankSpec` into one :class:`~tui_prof.synth.spec.SynthRun`
per rank (one process, one GPU, one host thread) plus the answers a correct rank analysis
must find (:class:`RankExpected`). :func:`write_ranks` writes them as rocprofv3 CSV (one
``<host>/<pid>_*`` set per process) or Kineto (one ``rank<k>.pt.trace.json.gz`` per rank,
``distributedInfo`` rank / world_size).

The program of every rank (host thread ``tid == pid``)::

    hipMemcpy(HtoD, copy_bytes)                                  # blocking
    for it in range(iterations):
        for coll in collectives:
            for c in range(compute_kernels): hipLaunchKernel(compute kernel, stream 0)
            hipLaunchKernel(collective kernel of type coll, stream 1)   # waits for stream 0
            for o in range(overlap_kernels): hipLaunchKernel(overlap kernel, stream 0)
        hipDeviceSynchronize()

Timing (int64 ns, no jitter, so every answer is exact):

* host calls as in :mod:`tui_prof.synth.spec`: a launch lasts ``launch_ns``, ``gap_ns`` of
  host work after each call, a kernel is ready ``dispatch_latency_ns`` after its launch returns;
* a compute kernel lasts ``compute_ns`` on every rank except ``slow_rank``, where it lasts
  ``compute_ns * (100 + slow_pct) / 100`` (the straggler computes ``slow_pct`` % longer); the
  first compute kernel of a block waits for the previous collective (it uses its result);
* the collective of rank r starts when it is ready, its stream 1 is free and rank r's compute
  before it has ended; every rank's instance **ends together**, ``collective_ns`` after the
  last rank's instance started. So the last rank to arrive (the straggler) spends exactly
  ``collective_ns`` in it (the fastest instance) and every other rank waits
  ``its duration - collective_ns``;
* an overlap kernel (``overlap_ns``, ≤ ``collective_ns``) starts on stream 0 right after the
  compute before the collective, so it runs beside that rank's collective (it overlaps the
  collective for ``overlap_ns``: the collective lasts at least ``collective_ns``);
* hipDeviceSynchronize returns ``sync_return_ns`` after the rank's last kernel ends: the
  collectives end together, so every rank starts the next iteration at the same instant.

Ranks are spread over ``hosts`` hosts (rank r on host ``r * hosts // ranks``); host h's clock
reads ``h * host_offset_ns`` more than host 0's (clocks of different hosts are not comparable).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tui_prof.model import Run, RunMeta, RunSet
from tui_prof.model.schema import make_table
from tui_prof.synth.spec import Expected, SynthRun, SynthSpec, make_agents
from tui_prof.synth.write_csv import write_rocprofv3_csv
from tui_prof.synth.write_kineto import write_kineto

# collective type -> kernel name as NCCL 2.19+ writes it (RCCL keeps the NCCL names)
COLLECTIVE_KERNELS = {
    "AllReduce": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "AllGather": "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "ReduceScatter": "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "Broadcast": "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "SendRecv": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
}
# collective type -> PyTorch's "Collective name" in the collective's Kineto args
COLLECTIVE_ARGS = {
    "AllReduce": "allreduce",
    "AllGather": "_allgather_base",
    "ReduceScatter": "_reduce_scatter_base",
    "Broadcast": "broadcast",
    "SendRecv": "send",
}
COMPUTE_KERNEL = "Cijk_Alik_Bljk_SB_MT128x128x16_MI32x32x2x1"
OVERLAP_KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int)"
COPY_NAME = "MEMORY_COPY_HOST_TO_DEVICE"
GPU_AGENT = 1  # each rank's one GPU (make_agents: CPU node 0, GPU node 1)


@dataclass(frozen=True)
class RankSpec:
    """Parameters of a multi-rank run (ns; see the module docstring)."""

    ranks: int = 4
    iterations: int = 3
    collectives: tuple[str, ...] = ("AllReduce",)
    compute_kernels: int = 2
    compute_ns: int = 100_000
    slow_rank: int | None = 1
    slow_pct: int = 50
    collective_ns: int = 40_000
    overlap_kernels: int = 0
    overlap_ns: int = 10_000
    message_bytes: int = 64 << 20
    copy_bytes: int = 8 << 20
    copy_ns: int = 400_000
    launch_ns: int = 5_000
    gap_ns: int = 2_000
    dispatch_latency_ns: int = 3_000
    sync_return_ns: int = 4_000
    copy_latency_ns: int = 8_000
    copy_return_ns: int = 5_000
    hosts: int = 1
    host_offset_ns: int = 7_000_000_000
    t0_ns: int = 1_700_000_000_000_000_000
    pid_base: int = 5000

    def __post_init__(self) -> None:
        if self.ranks < 1 or self.iterations < 1 or self.compute_kernels < 1 or not self.collectives:
            raise ValueError("ranks, iterations and compute_kernels must be >= 1, collectives not empty")
        unknown = [c for c in self.collectives if c not in COLLECTIVE_KERNELS]
        if unknown:
            raise ValueError(f"unknown collective types {unknown}; known: {sorted(COLLECTIVE_KERNELS)}")
        if self.slow_rank is not None and not 0 <= self.slow_rank < self.ranks:
            raise ValueError("slow_rank must be a rank of the run (or None)")
        if (self.compute_ns * self.slow_pct) % 100:
            raise ValueError("compute_ns * slow_pct must be a multiple of 100 (exact durations)")
        if self.overlap_kernels * self.overlap_ns > self.collective_ns:
            raise ValueError("overlap kernels must fit inside the shortest collective instance")
        if not 1 <= self.hosts <= self.ranks:
            raise ValueError("hosts must be in 1..ranks")

    def compute_of(self, rank: int) -> int:
        """Duration (ns) of one compute kernel of ``rank``."""
        return self.compute_ns * (100 + self.slow_pct) // 100 if rank == self.slow_rank else self.compute_ns

    def host_of(self, rank: int) -> int:
        return rank * self.hosts // self.ranks

    def hostname(self, rank: int) -> str:
        return f"node{self.host_of(rank)}"

    def pid(self, rank: int) -> int:
        return self.pid_base + rank


@dataclass
class RankExpected:
    """Answers known by construction (ns). Per rank lists are indexed by rank; per collective
    instance lists by instance (the k-th collective launched, same on every rank)."""

    compute_ns: list[int]  # Σ compute + overlap kernel time of each rank
    communication_ns: list[int]  # Σ collective kernel time of each rank
    copy_ns: list[int]
    span_ns: list[int]  # each rank's wall: first API start to last API end
    sync_ns: list[int]  # time in hipDeviceSynchronize and the blocking hipMemcpy
    overlap_ns: list[int]  # collective time during which a compute kernel runs
    instance_types: list[str]  # collective type of each instance
    straggler: list[int | None]  # per instance: the rank that arrives last (None: all at once)
    wait_ns: list[list[int]]  # [instance][rank]: time in the collective beyond the fastest instance
    collective_bytes: int  # message bytes of every instance

    @property
    def wait_by_rank(self) -> list[int]:
        return [sum(w[r] for w in self.wait_ns) for r in range(len(self.span_ns))]


@dataclass
class RankRuns:
    spec: RankSpec
    runs: list[SynthRun]
    expected: RankExpected = field(repr=False)

    def runset(self, root: str = "ranks") -> RunSet:
        """The ranks as a loaded run set would hold them (label ``rank<k>``, host, pid, rank)."""
        runs = []
        for rank, synth in enumerate(self.runs):
            meta = RunMeta(formats=["synthetic"], tool="synth", hostname=synth.hostname, pid=synth.spec.pid, label=f"rank{rank}", rank=rank)
            runs.append(Run(meta=meta, agents=synth.agents, kernels=synth.kernels, api=synth.api, copies=synth.copies))
        return RunSet(root=root, runs=runs)


class _Totals:
    """One rank's running totals (ns) while its program runs."""

    __slots__ = ("comm", "compute", "overlap", "sync")

    def __init__(self) -> None:
        self.compute = self.comm = self.overlap = self.sync = 0


def _program(spec: RankSpec, r: int, rows: dict[str, list] | None, tot: _Totals) -> Generator[int, int, None]:
    """Rank ``r``'s program on host 0's clock, as a generator: it yields the start of each
    collective instance and is sent that instance's end (the same on every rank: the last
    start + ``collective_ns``). Events go to ``rows`` (kernels, api, copies) unless None;
    the totals to ``tot``. Only the instance ends couple the ranks, so a rank can be run
    again alone from the ends (:func:`write_ranks_streaming`)."""
    t = spec.t0_ns
    ncall = 0

    def call(name: str, start: int, end: int) -> int:
        nonlocal ncall
        ncall += 1
        if rows is not None:
            rows["a"].append((start, end, name))
        return ncall  # correlation id (1-based, in call order)

    s = t  # the blocking HtoD copy
    c_start = s + spec.copy_latency_ns
    e = c_start + spec.copy_ns + spec.copy_return_ns
    corr = call("hipMemcpy", s, e)
    if rows is not None:
        rows["c"].append((c_start, c_start + spec.copy_ns, corr))
    tot.sync += e - s
    t = e + spec.gap_ns
    stream0_free = stream1_free = 0
    compute = spec.compute_of(r)
    for _ in range(spec.iterations):
        for coll in spec.collectives:
            for c in range(spec.compute_kernels):
                corr = call("hipLaunchKernel", t, t + spec.launch_ns)
                # the first compute kernel of a block needs the previous collective's result
                start = max(t + spec.launch_ns + spec.dispatch_latency_ns, stream0_free, stream1_free if c == 0 else 0)
                if rows is not None:
                    rows["k"].append((start, start + compute, COMPUTE_KERNEL, 0, corr))
                tot.compute += compute
                stream0_free = start + compute
                t += spec.launch_ns + spec.gap_ns
            coll_corr = call("hipLaunchKernel", t, t + spec.launch_ns)
            coll_start = max(t + spec.launch_ns + spec.dispatch_latency_ns, stream1_free, stream0_free)
            t += spec.launch_ns + spec.gap_ns
            end = yield coll_start
            if rows is not None:
                rows["k"].append((coll_start, end, COLLECTIVE_KERNELS[coll], 1, coll_corr))
            tot.comm += end - coll_start
            stream1_free = end
            for _o in range(spec.overlap_kernels):
                corr = call("hipLaunchKernel", t, t + spec.launch_ns)
                start = max(t + spec.launch_ns + spec.dispatch_latency_ns, stream0_free)
                o_end = start + spec.overlap_ns
                if rows is not None:
                    rows["k"].append((start, o_end, OVERLAP_KERNEL, 0, corr))
                tot.compute += spec.overlap_ns
                tot.overlap += max(0, min(o_end, end) - max(start, coll_start))
                stream0_free = o_end
                t += spec.launch_ns + spec.gap_ns
        s = t
        e = max(s + 1_000, max(stream0_free, stream1_free) + spec.sync_return_ns)
        call("hipDeviceSynchronize", s, e)
        tot.sync += e - s
        t = e + spec.gap_ns


def _lockstep(spec: RankSpec, rows: list[dict[str, list]] | None) -> tuple[list[_Totals], list[int], list[int | None], list[list[int]]]:
    """Run every rank's program together: (per-rank totals, each instance's end, its
    straggler, its waits per rank). Events go to ``rows[r]`` unless ``rows`` is None."""
    n = spec.ranks
    tots = [_Totals() for _ in range(n)]
    progs = [_program(spec, r, rows[r] if rows is not None else None, tots[r]) for r in range(n)]
    starts = [next(p) for p in progs]
    ends: list[int] = []
    straggler: list[int | None] = []
    waits: list[list[int]] = []
    while True:
        last = max(starts)
        end = last + spec.collective_ns
        arrivals = [r for r in range(n) if starts[r] == last]
        ends.append(end)
        straggler.append(arrivals[0] if len(arrivals) < n else None)
        waits.append([end - starts[r] - spec.collective_ns for r in range(n)])
        starts = [_send(p, end) for p in progs]
        if starts[0] < 0:  # every program runs the same instances: all have finished
            return tots, ends, straggler, waits


def _send(prog: Generator[int, int, None], end: int) -> int:
    """The next collective start of ``prog`` after sending it ``end``; -1 when it has finished."""
    try:
        return prog.send(end)
    except StopIteration:
        return -1


def _expected(spec: RankSpec, tots: list[_Totals], spans: list[int], straggler: list[int | None], waits: list[list[int]]) -> RankExpected:
    n = spec.ranks
    return RankExpected(
        compute_ns=[x.compute for x in tots],
        communication_ns=[x.comm for x in tots],
        copy_ns=[spec.copy_ns] * n,
        span_ns=spans,
        sync_ns=[x.sync for x in tots],
        overlap_ns=[x.overlap for x in tots],
        instance_types=[c for _ in range(spec.iterations) for c in spec.collectives],
        straggler=straggler,
        wait_ns=waits,
        collective_bytes=spec.message_bytes,
    )


def build_ranks(spec: RankSpec) -> RankRuns:
    """Events of every rank and the known answers of ``spec`` (every rank in memory: see
    :func:`write_ranks_streaming` for runs too large for that)."""
    n = spec.ranks
    rows: list[dict[str, list]] = [{"k": [], "a": [], "c": []} for _ in range(n)]  # kernels, api, copies per rank
    tots, _ends, straggler, waits = _lockstep(spec, rows)
    runs = []
    spans = []
    for r in range(n):
        runs.append(_rank_run(spec, r, rows[r], spec.host_of(r) * spec.host_offset_ns))
        a = rows[r]["a"]
        spans.append(a[-1][1] - a[0][0])
    return RankRuns(spec, runs, _expected(spec, tots, spans, straggler, waits))


def write_ranks_streaming(spec: RankSpec, outdir: str | Path, fmt: str) -> RankExpected:
    """Write the run of ``spec`` as :func:`write_ranks` does (the same files), one rank at a
    time: a first pass runs every rank's program without recording its events, to find each
    collective instance's end; then each rank is run again alone from those ends, written and
    dropped. Memory holds one rank's events (plus the answers: per instance and rank ints)."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    _check_format(fmt)
    tots, ends, straggler, waits = _lockstep(spec, None)
    spans = []
    for r in range(spec.ranks):
        rows: dict[str, list] = {"k": [], "a": [], "c": []}
        prog = _program(spec, r, rows, _Totals())
        next(prog)
        for end in ends:
            _send(prog, end)
        run = _rank_run(spec, r, rows, spec.host_of(r) * spec.host_offset_ns)
        spans.append(rows["a"][-1][1] - rows["a"][0][0])
        _write_rank(run, r, outdir, fmt)
        del run, rows
    return _expected(spec, tots, spans, straggler, waits)


def _rank_expected(spec: RankSpec, kernels: pd.DataFrame, api: pd.DataFrame, copies: pd.DataFrame) -> Expected:
    """One rank's answers, from its own tables (kernel and API totals per name, spans, syncs, the copy)."""
    names = kernels["name"].astype(str).tolist()
    kn = len(kernels)
    dur = kernels["end"] - kernels["start"]
    per_name = pd.DataFrame({"name": names, "dur": dur.to_numpy()}).groupby("name")["dur"].agg(["size", "sum", "min", "max"])
    kexp = per_name.rename(columns={"size": "calls", "sum": "total_ns", "min": "min_ns", "max": "max_ns"}).sort_values("total_ns", ascending=False)
    adur = api["end"] - api["start"]
    aexp = pd.DataFrame({"name": api["name"].astype(str), "dur": adur}).groupby("name")["dur"].agg(["size", "sum"])
    aexp = aexp.rename(columns={"size": "calls", "sum": "total_ns"})
    first = int(api["start"].iloc[0])
    last = int(api["end"].iloc[-1])
    k_start, k_end = int(kernels["start"].min()), int(kernels["end"].max())
    span = (min(k_start, int(copies["start"].min())), k_end)
    expected = Expected(
        dispatches=kn,
        kernels=kexp,
        api=aexp,
        gaps={},
        busy_ns={},
        kernel_busy_ns={},
        copy_busy_ns={GPU_AGENT: spec.copy_ns},
        span={GPU_AGENT: span},
        span_ns={GPU_AGENT: span[1] - span[0]},
        wall_span=(first, last),
        sync_calls=int((api["name"] == "hipDeviceSynchronize").sum()),
        sync_total_ns=int(adur[api["name"] == "hipDeviceSynchronize"].sum()),
        copy_bytes={"HtoD": spec.copy_bytes},
        copy_calls={"HtoD": 1},
        gemm_name=COMPUTE_KERNEL,
    )
    return expected


def _rank_run(spec: RankSpec, rank: int, rows: dict[str, list], offset: int) -> SynthRun:
    pid = spec.pid(rank)
    a = rows["a"]
    api = make_table(
        "api",
        {
            "start": np.array([x[0] for x in a], np.int64) + offset,
            "end": np.array([x[1] for x in a], np.int64) + offset,
            "domain": "hip",
            "name": pd.Categorical([x[2] for x in a]),
            "pid": pid,
            "tid": pid,
            "correlation_id": np.arange(1, len(a) + 1, dtype=np.int64),
        },
    )
    k = sorted(rows["k"])
    kn = len(k)
    names = [x[2] for x in k]
    is_coll = np.array([nm != COMPUTE_KERNEL and nm != OVERLAP_KERNEL for nm in names])
    arg_of = {COLLECTIVE_KERNELS[t]: a for t, a in COLLECTIVE_ARGS.items()}
    kernels = make_table(
        "kernels",
        {
            "start": np.array([x[0] for x in k], np.int64) + offset,
            "end": np.array([x[1] for x in k], np.int64) + offset,
            "agent": GPU_AGENT,
            "queue": np.array([x[3] for x in k], np.int64) + 1,
            "stream": np.array([x[3] for x in k], np.int64) + 1,
            "pid": pid,
            "tid": pid,
            "correlation_id": np.array([x[4] for x in k], np.int64),
            "dispatch_id": np.arange(1, kn + 1, dtype=np.int64),
            "kernel_id": np.unique(names, return_inverse=True)[1].astype(np.int64) + 1 if kn else np.array([], np.int64),
            "name": pd.Categorical(names),
            "grid_x": np.where(is_coll, 16 * 640, 4096),
            "grid_y": np.where(is_coll, 1, 32),
            "grid_z": 1,
            "wg_x": np.where(is_coll, 640, 256),
            "wg_y": 1,
            "wg_z": 1,
            "lds_bytes": np.where(is_coll, 0, 16384),
            "scratch_bytes": 0,
            "arch_vgpr": 64,
            "accum_vgpr": 0,
            "sgpr": 32,
            # every collective moves message_bytes among all ranks (written as Kineto args; CSV has none)
            "collective": pd.Categorical([arg_of.get(nm, "") for nm in names]),
            "coll_bytes": np.where(is_coll, spec.message_bytes, -1),
            "coll_ranks": np.where(is_coll, spec.ranks, -1),
        },
    )
    c = rows["c"]
    copies = make_table(
        "copies",
        {
            "start": np.array([x[0] for x in c], np.int64) + offset,
            "end": np.array([x[1] for x in c], np.int64) + offset,
            "bytes": spec.copy_bytes,
            "direction": ["HtoD"] * len(c),
            "src_agent": 0,
            "dst_agent": GPU_AGENT,
            "queue": 0,
            "stream": 0,
            "pid": pid,
            "tid": pid,
            "correlation_id": np.array([x[2] for x in c], np.int64),
            "name": [COPY_NAME] * len(c),
        },
    )
    expected = _rank_expected(spec, kernels, api, copies)
    synth_spec = SynthSpec(iterations=spec.iterations, kernels_per_iteration=spec.compute_kernels, pid=pid, seed=rank, t0_ns=spec.t0_ns + offset)
    return SynthRun(
        spec=synth_spec,
        agents=make_agents(1),
        kernels=kernels,
        api=api,
        copies=copies,
        expected=expected,
        hostname=spec.hostname(rank),
        extra={"distributed_info": {"backend": "nccl", "rank": rank, "world_size": spec.ranks}},
    )


def _check_format(fmt: str) -> None:
    if fmt not in ("csv", "kineto"):
        raise ValueError(f"format must be csv or kineto, got {fmt!r}")


def _write_rank(run: SynthRun, rank: int, outdir: Path, fmt: str) -> None:
    if fmt == "csv":
        write_rocprofv3_csv(run, outdir, hostname=run.hostname, pid=run.spec.pid)
    else:
        write_kineto(run, outdir / f"rank{rank}.pt.trace.json.gz")


def write_ranks(ranks: RankRuns, outdir: str | Path, fmt: str) -> Path:
    """Write every rank under ``outdir``: ``csv`` as rocprofv3 CSV (``<host>/<pid>_*.csv``),
    ``kineto`` as ``rank<k>.pt.trace.json.gz`` with distributedInfo; returns ``outdir``."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    _check_format(fmt)
    for rank, run in enumerate(ranks.runs):
        _write_rank(run, rank, outdir, fmt)
    return outdir
