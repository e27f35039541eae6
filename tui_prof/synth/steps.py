"""A training loop of named steps whose step table, warm-up, outlier and memory are known
by construction (issue 21).

The program (one host thread, one GPU, node id 1)::

    for i in range(steps):
        roctxRangePush(marker)                        # the step's host range starts
        if i == 0: host work first_step_extra_ns      # warm-up (compilation, autotuning)
        alloc(step_bytes); alloc(leak_bytes)          # the leak is never freed
        for k in range(kernels_per_step): hipLaunchKernel(kernel k % 2)
        if i == outlier_step: hipMemcpy(HtoD, copy_bytes)   # the outlier's extra copy
        hipDeviceSynchronize()
        free(step_bytes)
        roctxRangePop()                               # the step's host range ends

Timing as in :mod:`tui_prof.synth.spec`: each call is followed by ``gap_ns`` of host work;
a kernel starts ``latency_ns`` after its launch returns or when the previous kernel ends;
the copy waits for the kernels and lasts ``copy_bytes / bandwidth``; the sync returns
``sync_return_ns`` after the GPU's last activity. Allocations are instants (start == end).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from tui_prof.model import Run, RunMeta, RunSet
from tui_prof.model.schema import make_table
from tui_prof.synth.spec import OTHER_KERNELS, Expected, SynthRun, SynthSpec, gemm_kind, make_agents


@dataclass(frozen=True)
class StepSpec:
    steps: int = 8
    kernels_per_step: int = 6
    kernel_ns: int = 50_000
    launch_ns: int = 5_000
    gap_ns: int = 2_000
    latency_ns: int = 3_000
    sync_return_ns: int = 4_000
    first_step_extra_ns: int = 3_000_000
    outlier_step: int = 5  # 0-based
    copy_bytes: int = 64 << 20
    bandwidth: float = 25.0  # bytes/ns
    step_bytes: int = 256 << 20
    leak_bytes: int = 2 << 20
    marker: str = "train_step"
    t0_ns: int = 1_550_151_853_000_000
    pid: int = 4242
    # known edits for the step-aligned diff (issue 35); the defaults leave the program as above
    kinds: int = 2  # kernel k of a step is kind k % kinds (GEMM, attention, layer norm, elementwise, copy kernel)
    insert_after: int | None = None  # launch one extra reduce kernel (INSERTED) after kernel k of every step
    drop: int | None = None  # kernel k of every step is not launched
    slow: int | None = None  # kernel k of every step lasts slow_factor x kernel_ns
    slow_factor: int = 2
    sync_after: int | None = None  # a hipDeviceSynchronize after kernel k of every step


@dataclass
class StepAnswers:
    """What a correct step analysis finds (ns, bytes; steps 0-based)."""

    labels: list[str]
    starts: list[int]
    ends: list[int]
    kernels: list[int]
    copies: list[int]
    copy_bytes: list[int]
    gpu_ns: list[int]
    warmup: int
    outlier: int
    memory_marks: list[int]  # allocated high-water mark of each step
    peak_allocated: int
    peak_reserved: int  # the caching allocator's reserve: the allocated peak so far (never released)
    growth_steady: int  # last - first steady step mark

    @property
    def walls(self) -> list[int]:
        return [e - s for s, e in zip(self.starts, self.ends, strict=True)]


@dataclass
class _StepRows:
    """The rows of a step run, in the order the program issues them, and each step's answers."""

    api: list[tuple[int, int, str, int]] = field(default_factory=list)  # start, end, name, correlation
    kernels: list[tuple[int, int, int, int]] = field(default_factory=list)  # start, end, kind, correlation
    copies: list[tuple[int, int, int]] = field(default_factory=list)  # start, end, correlation
    allocations: list[tuple[int, str, int, int]] = field(default_factory=list)  # t, operation, bytes, address
    starts: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)
    step_kernels: list[int] = field(default_factory=list)
    step_copies: list[int] = field(default_factory=list)
    copy_bytes: list[int] = field(default_factory=list)
    gpu_ns: list[int] = field(default_factory=list)
    marks: list[int] = field(default_factory=list)  # the allocated level after each step's allocations


STEP_KINDS = (3, 2, 0, 4)  # OTHER_KERNELS after the GEMM: attention, layer norm, elementwise, copy kernel
INSERTED = OTHER_KERNELS[1]  # the reduce kernel: the one ``insert_after`` launches


def _step_launches(spec: StepSpec) -> list[tuple[int, int, bool]]:
    """(kind, duration, sync after it) of each launch of one step, with the spec's edits."""
    out = []
    for k in range(spec.kernels_per_step):
        if k != spec.drop:
            out.append((k % spec.kinds, spec.kernel_ns * (spec.slow_factor if k == spec.slow else 1), k == spec.sync_after))
        if k == spec.insert_after:
            out.append((spec.kinds, spec.kernel_ns, False))
    return out


def _step_rows(spec: StepSpec) -> _StepRows:
    """Run the program: per step its allocations, launches, the outlier's copy, the sync and the free."""
    rows = _StepRows()
    api_rows, k_rows, c_rows, alloc_rows = rows.api, rows.kernels, rows.copies, rows.allocations
    starts, ends, kernels, copies, copy_bytes, gpu_ns = rows.starts, rows.ends, rows.step_kernels, rows.step_copies, rows.copy_bytes, rows.gpu_ns
    marks = rows.marks
    corr = 0
    t = spec.t0_ns
    gpu_free = t
    level = 0
    copy_ns = int(np.ceil(spec.copy_bytes / spec.bandwidth))
    for i in range(spec.steps):
        step_start = t
        if i == 0:
            t += spec.first_step_extra_ns
        address = 0x7F0000000000 + i * 0x10000000
        alloc_rows.append((t, "ALLOCATE", spec.step_bytes, address))
        alloc_rows.append((t, "ALLOCATE", spec.leak_bytes, address + 0x8000000))
        level += spec.step_bytes + spec.leak_bytes
        marks.append(level)
        t += spec.gap_ns
        first_gpu = None
        for kind, dur, sync in _step_launches(spec):
            corr += 1
            api_rows.append((t, t + spec.launch_ns, "hipLaunchKernel", corr))
            ks = max(t + spec.launch_ns + spec.latency_ns, gpu_free)
            k_rows.append((ks, ks + dur, kind, corr))
            first_gpu = ks if first_gpu is None else first_gpu
            gpu_free = ks + dur
            t += spec.launch_ns + spec.gap_ns
            if sync:
                corr += 1
                sync_end = max(t + 1_000, gpu_free + spec.sync_return_ns)
                api_rows.append((t, sync_end, "hipDeviceSynchronize", corr))
                t = sync_end + spec.gap_ns
        n_copies = 0
        if i == spec.outlier_step:
            corr += 1
            cs = max(t + spec.latency_ns, gpu_free)
            c_rows.append((cs, cs + copy_ns, corr))
            gpu_free = cs + copy_ns
            api_rows.append((t, gpu_free + spec.sync_return_ns, "hipMemcpy", corr))
            t = gpu_free + spec.sync_return_ns + spec.gap_ns
            n_copies = 1
        corr += 1
        sync_end = max(t + 1_000, gpu_free + spec.sync_return_ns)
        api_rows.append((t, sync_end, "hipDeviceSynchronize", corr))
        t = sync_end + spec.gap_ns
        alloc_rows.append((t, "FREE", spec.step_bytes, address))
        level -= spec.step_bytes
        t += spec.gap_ns
        starts.append(step_start)
        ends.append(t)
        kernels.append(len(_step_launches(spec)))
        copies.append(n_copies)
        copy_bytes.append(spec.copy_bytes * n_copies)
        gpu_ns.append(gpu_free - int(first_gpu or 0))
        t += spec.gap_ns  # host work between steps, outside any step
    return rows


def _step_kernels(kr: np.ndarray, kinds: list, pid: int, tid: int, gpu: int) -> pd.DataFrame:
    """The kernels table of the (start, end, kind, correlation) rows ``kr``."""
    kind_of = kr[:, 2]

    def kk(attr: str, j: int | None = None) -> np.ndarray:
        values = [getattr(kind, attr) if j is None else getattr(kind, attr)[j] for kind in kinds]
        return np.asarray(values, dtype=np.int64)[kind_of]

    return make_table(
        "kernels",
        {
            "start": kr[:, 0],
            "end": kr[:, 1],
            "agent": gpu,
            "queue": 1,
            "stream": 1,
            "pid": pid,
            "tid": tid,
            "correlation_id": kr[:, 3],
            "dispatch_id": np.arange(1, len(kr) + 1),
            "kernel_id": kind_of + 1,
            "name": pd.Categorical.from_codes(kind_of, categories=[kd.name for kd in kinds]),
            "grid_x": kk("grid", 0),
            "grid_y": kk("grid", 1),
            "grid_z": kk("grid", 2),
            "wg_x": kk("wg", 0),
            "wg_y": kk("wg", 1),
            "wg_z": kk("wg", 2),
            "lds_bytes": kk("lds_bytes"),
            "scratch_bytes": kk("scratch_bytes"),
            "arch_vgpr": kk("arch_vgpr"),
            "accum_vgpr": kk("accum_vgpr"),
            "sgpr": kk("sgpr"),
        },
    )


def _step_expected(spec: StepSpec, kinds: list, kernels_t: pd.DataFrame, api: pd.DataFrame, copies_t: pd.DataFrame, gpu: int) -> Expected:
    """What the summary of a step run must find, from its own tables."""
    c = copies_t
    kdur = kernels_t["end"] - kernels_t["start"]
    per_kind = kdur.groupby(kernels_t["name"].astype(str)).agg(["size", "sum", "min", "max"])
    adur = api["end"] - api["start"]
    per_fn = adur.groupby(api["name"].astype(str)).agg(["size", "sum"])
    busy = int(kdur.sum() + (copies_t["end"] - copies_t["start"]).sum())  # kernels and the copy never overlap
    first = int(min(kernels_t["start"].min(), copies_t["start"].min() if len(copies_t) else kernels_t["start"].min()))
    last = int(max(kernels_t["end"].max(), copies_t["end"].max() if len(copies_t) else 0))
    expected = Expected(
        dispatches=len(kernels_t),
        kernels=pd.DataFrame({"calls": per_kind["size"], "total_ns": per_kind["sum"], "min_ns": per_kind["min"], "max_ns": per_kind["max"]}).sort_values(
            "total_ns", ascending=False
        ),
        api=pd.DataFrame({"calls": per_fn["size"], "total_ns": per_fn["sum"]}),
        gaps={},  # not modelled here: the step tests do not check gaps
        busy_ns={gpu: busy},
        kernel_busy_ns={gpu: int(kdur.sum())},
        copy_busy_ns={gpu: busy - int(kdur.sum())},
        span={gpu: (first, last)},
        span_ns={gpu: last - first},
        wall_span=(int(min(api["start"].min(), first)), int(max(api["end"].max(), last))),
        sync_calls=int((api["name"].astype(str) == "hipDeviceSynchronize").sum()),
        sync_total_ns=int(adur[api["name"].astype(str) == "hipDeviceSynchronize"].sum()),
        copy_bytes={"HtoD": spec.copy_bytes * len(c), "DtoH": 0},
        copy_calls={"HtoD": len(c), "DtoH": 0},
        gemm_name=kinds[0].name,
    )
    return expected


def build_steps(spec: StepSpec = StepSpec()) -> tuple[SynthRun, StepAnswers]:
    if not 2 <= spec.kinds <= 1 + len(STEP_KINDS):
        raise ValueError(f"kinds must be 2..{1 + len(STEP_KINDS)}")
    kinds = [gemm_kind(spec.kernel_ns)] + [OTHER_KERNELS[i] for i in STEP_KINDS[: spec.kinds - 1]] + ([INSERTED] if spec.insert_after is not None else [])
    pid, tid, gpu = spec.pid, spec.pid, 1
    rows = _step_rows(spec)
    api_rows, c_rows, alloc_rows, marks = rows.api, rows.copies, rows.allocations, rows.marks
    starts, ends = rows.starts, rows.ends
    kernels, copies, copy_bytes, gpu_ns = rows.step_kernels, rows.step_copies, rows.copy_bytes, rows.gpu_ns
    kernels_t = _step_kernels(np.array(rows.kernels, dtype=np.int64), kinds, pid, tid, gpu)
    api_rows.sort()
    api = make_table(
        "api",
        {
            "start": [r[0] for r in api_rows],
            "end": [r[1] for r in api_rows],
            "domain": "hip",
            "name": [r[2] for r in api_rows],
            "pid": pid,
            "tid": tid,
            "correlation_id": [r[3] for r in api_rows],
        },
    )
    c = np.array(c_rows, dtype=np.int64).reshape(-1, 3)
    copies_t = make_table(
        "copies",
        {
            "start": c[:, 0],
            "end": c[:, 1],
            "bytes": np.full(len(c), spec.copy_bytes, np.int64),
            "direction": "HtoD",
            "src_agent": 0,
            "dst_agent": gpu,
            "queue": 0,
            "stream": 0,
            "pid": pid,
            "tid": tid,
            "correlation_id": c[:, 2],
            "name": "MEMORY_COPY_HOST_TO_DEVICE",
        },
    )
    markers = make_table("markers", {"start": starts, "end": ends, "name": spec.marker, "source": "roctx", "pid": pid, "tid": tid})
    allocations = make_table(
        "allocations",
        {
            "start": [r[0] for r in alloc_rows],
            "end": [r[0] for r in alloc_rows],
            "operation": [r[1] for r in alloc_rows],
            "agent": gpu,
            "bytes": [r[2] for r in alloc_rows],
            "address": [r[3] for r in alloc_rows],
            "pid": pid,
            "tid": tid,
        },
    )
    synth_spec = SynthSpec(iterations=spec.steps, kernels_per_iteration=spec.kernels_per_step, sync="per_iteration", pid=pid, t0_ns=spec.t0_ns)
    expected = _step_expected(spec, kinds, kernels_t, api, copies_t, gpu)
    run = SynthRun(
        spec=synth_spec, agents=make_agents(1), kernels=kernels_t, api=api, copies=copies_t, expected=expected, markers=markers, allocations=allocations
    )
    peak = max(marks)
    answers = StepAnswers(
        labels=[f"{spec.marker} [{i + 1}]" for i in range(spec.steps)],
        starts=starts,
        ends=ends,
        kernels=kernels,
        copies=copies,
        copy_bytes=copy_bytes,
        gpu_ns=gpu_ns,
        warmup=1 if spec.first_step_extra_ns else 0,
        outlier=spec.outlier_step,
        memory_marks=marks,
        peak_allocated=peak,
        peak_reserved=peak,
        growth_steady=marks[-1] - marks[1 if spec.first_step_extra_ns else 0],
    )
    return run, answers


@dataclass
class RankSteps:
    """Several ranks running the stepped loop (one process each, same host clock)."""

    runs: list[SynthRun]
    answers: list[StepAnswers]  # per rank

    @property
    def walls(self) -> list[int]:
        """The whole job's step times: step k lasts as long as its slowest rank's step k."""
        return [max(w) for w in zip(*(a.walls for a in self.answers), strict=True)]

    @property
    def slowest(self) -> list[int]:
        """The rank whose step k is the slowest (the first of equals)."""
        per_rank = [a.walls for a in self.answers]
        return [int(np.argmax([w[k] for w in per_rank])) for k in range(len(per_rank[0]))]

    def runset(self, root: str = "rank-steps") -> RunSet:
        runs = []
        for rank, synth in enumerate(self.runs):
            meta = RunMeta(formats=["synthetic"], tool="synth", hostname=synth.hostname, pid=synth.spec.pid, label=f"rank{rank}", rank=rank)
            runs.append(
                Run(
                    meta=meta,
                    agents=synth.agents,
                    kernels=synth.kernels,
                    api=synth.api,
                    copies=synth.copies,
                    markers=synth.markers,
                    allocations=synth.allocations,
                )
            )
        return RunSet(root=root, runs=runs)


def build_rank_steps(
    spec: StepSpec = StepSpec(), ranks: int = 3, slow_rank: int = 1, slow_kernel_ns: int = 80_000, outliers: tuple[int, ...] = ()
) -> RankSteps:
    """``ranks`` processes (pid ``spec.pid + r``) running :func:`build_steps`: every rank's
    kernels last ``spec.kernel_ns`` except ``slow_rank``'s, which last ``slow_kernel_ns`` (a
    straggler, slowest in every ordinary step); ``outliers[r]`` is rank r's outlier step
    (default ``spec.outlier_step`` for every rank), so the slowest rank differs between steps.
    Each rank's steps are exact by construction (:class:`StepAnswers`); the job's step is the
    slowest rank's (:attr:`RankSteps.walls`)."""
    runs, answers = [], []
    for r in range(ranks):
        rank_spec = replace(
            spec,
            pid=spec.pid + r,
            kernel_ns=slow_kernel_ns if r == slow_rank else spec.kernel_ns,
            outlier_step=outliers[r] if r < len(outliers) else spec.outlier_step,
        )
        run, ans = build_steps(rank_spec)
        run.extra = {"distributed_info": {"backend": "nccl", "rank": r, "world_size": ranks}}
        runs.append(run)
        answers.append(ans)
    return RankSteps(runs, answers)
