"""The typed sections of the ``tuiprof.summary/1`` document (docs/metrics.md defines each number).

Each section's function (``<name>_section``, in the module the section is about) returns
one of these and :func:`tui_prof.analysis.summary.summarise` assembles them; at run time
they are plain dicts, so the JSON document is the sections as they are. Units: ns, bytes, % (0-100).
Nested records whose keys follow a profiler's data (agent fields, counter blocks,
occupancy rows, capabilities) stay ``dict[str, Any]``.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

Record = dict[str, Any]


class IssueRecord(TypedDict):
    path: str
    message: str


class SourceSection(TypedDict):
    path: str
    formats: list[str]
    errors: list[IssueRecord]
    skipped: list[IssueRecord]


class ProcessRecord(TypedDict):
    label: str
    hostname: str | None
    pid: int | None
    rank: int | None
    formats: list[str]
    tool: str | None
    tool_version: str | None
    command: str | None
    files: int
    partial: bool
    dispatches: int
    api_calls: int
    copies: int
    counter_values: int


class KernelsSection(TypedDict):
    dispatches: int
    unique_names: int
    total_ns: int


class HotspotRecord(TypedDict):
    name: str
    calls: int
    total_ns: int
    avg_ns: float
    median_ns: float | None  # None: from a statistics file (no median there)
    min_ns: int | None  # None: the statistics file does not record it (legacy rocprof)
    max_ns: int | None
    stddev_ns: float | None
    percent: float  # from a statistics file: the profiler's own Percentage
    pct_wall: NotRequired[float]
    critical_ns: NotRequired[int]  # time of this kernel on the critical path (analysis.critical)


class GpuSection(TypedDict):
    span_ns: int  # GPU active span: a part of wall_ns (analysis.aggregate)
    agent_span_ns: int  # Σ (process, GPU) spans: the whole of busy_ns and idle_ns
    busy_ns: int
    idle_ns: int
    busy_pct: float
    idle_pct: float
    agents: list[Record]  # timeline.gpu_gaps' per-agent rows with their "process"


class GapRecord(TypedDict):
    process: str
    agent: int
    start_ns: int
    duration_ns: int
    cause: str
    api_cause: str | None
    api_before: str | None
    host_op: str | None  # a launch gap: the host operator that held the launching thread (analysis.timeline.GapSet.host_ops)
    prev: str
    next: str


class GapsSection(TypedDict):
    count: int
    threshold_ns: int
    by_cause: dict[str, int]
    count_by_cause: dict[str, int]
    below_threshold_ns: int
    below_threshold_count: int
    listed: list[GapRecord]
    truncated: int


class CallTotals(TypedDict):
    calls: int
    total_ns: int


class SyncAfterLaunch(TypedDict):
    launches: int
    followed_by_sync: int
    ratio: float
    detected: bool


class SyncStats(TypedDict):
    calls: int
    total_ns: int
    pct_of_wall: float
    blocking_copy_calls: int
    by_name: dict[str, CallTotals]


class SyncSection(SyncStats):
    sync_after_launch: SyncAfterLaunch
    exposed_ns: int  # host blocked while no GPU of its process has work left (docs/metrics.md)
    waiting_ns: int  # host blocked while the GPU still runs work queued before the call
    exposed_pct_of_wall: float
    has_trace: bool  # host API calls and GPU activity were recorded (else the figures above are n/a)
    union_ns: int  # Σ over processes of the union of its sync calls (the part of pct_of_wall)
    exposed_union_ns: int  # the same for the exposed parts
    process_ns: int  # Σ process walls: the whole of the percentages
    mean_pct_of_wall: float  # over processes with API calls, each its union / its wall
    max_pct_of_wall: float


class LaunchCounts(TypedDict):
    launch_calls: int
    graph_launch_calls: int
    api_total_ns: int  # kernel launches and graph launches
    graph_launch_api_ns: int  # the graph launches' part of api_total_ns
    linked_dispatches: int
    graph_dispatches: int


class LaunchSection(LaunchCounts):
    api_pct_of_wall: float
    median_api_ns: float | None
    median_queue_delay_ns: float | None
    p90_queue_delay_ns: float | None
    median_kernel_ns: float | None
    avg_kernel_ns: float | None
    tiny_kernel_threshold_ns: int
    tiny_kernels: int
    tiny_kernel_time_ns: int
    many_tiny_kernels: bool  # judged on the directly launched kernels (graph replays apart)
    direct_kernels: int  # dispatches not replayed from a graph
    direct_avg_kernel_ns: float | None
    direct_tiny_kernels: int
    launches_per_graph: float | None  # graph-replayed dispatches per graph launch call


class CopyDirection(TypedDict):
    count: int
    bytes: int
    size_unknown: int
    time_ns: int
    bandwidth_gbs: float | None


class CopyKindDirection(CopyDirection):
    first_bandwidth_gbs: float | None  # the first copy of this kind and direction (cold: page faults, pinning)
    min_bandwidth_gbs: float | None
    max_bandwidth_gbs: float | None


class CopyKind(CopyDirection):
    by_direction: dict[str, CopyKindDirection]


class CopiesSection(TypedDict):
    count: int
    bytes: int
    size_unknown: int
    time_ns: int
    busy_ns: int
    pct_of_wall: float
    by_direction: dict[str, CopyDirection]
    by_kind: dict[str, CopyKind]  # pinned, pageable, managed, host, device, peer, memset, unknown


class HotspotsBy(TypedDict):
    normalized: list[HotspotRecord]
    category: list[HotspotRecord]
    agent: list[HotspotRecord]
    process: list[HotspotRecord]


class ShapeRecord(TypedDict):
    input_dims: str  # the cpu_op's recorded Input Dims (JSON text)
    kernels: int
    total_ns: int


class OperatorRecord(TypedDict):
    name: str  # the launching cpu_op (or its module path); "graph" for graph replays; "(not linked)" when none
    kernels: int
    total_ns: int
    percent: float  # of kernel time
    shapes: NotRequired[list[ShapeRecord]]  # by GPU time, where record_shapes recorded them
    # from the recorded shapes (analysis.flops; absent where none of its calls has a figure)
    flops: NotRequired[int]
    bytes: NotRequired[int]
    flops_kind: NotRequired[str | None]
    flops_dtype: NotRequired[str]
    costed_calls: NotRequired[int]
    calls: NotRequired[int]
    costed_ns: NotRequired[int]
    flops_source: NotRequired[str]
    critical_ns: NotRequired[int]  # time of this group's kernels on the critical path (analysis.critical)
    flops_note: NotRequired[str]
    achieved_tflops: NotRequired[float]
    achieved_gbs: NotRequired[float]
    peak_source: NotRequired[str]
    peak_tflops: NotRequired[float]
    pct_of_peak_flops: NotRequired[float]
    peak_gbs: NotRequired[float]
    pct_of_peak_bw: NotRequired[float]
    roofline_estimate: NotRequired[dict]


class CategoriesSection(TypedDict):
    categories: dict[str, int]  # category -> kernel time (ns)
    category_rules: str  # where the rules came from
    hotspots_by: HotspotsBy


class MeasurementSection(TypedDict):
    span_ns: int
    gpu_span_ns: int
    kernel_count: int
    kernel_time_ns: int
    gemm_pct_of_kernel_time: float
    sync_pct_of_wall: float
    exposed_sync_pct_of_wall: float
    sync_target_pct: float
    launch_api_pct_of_wall: float
    median_queue_delay_ns: float | None
    idle_pct: float
    copy_pct_of_wall: float
    peak_memory_bytes: int | None
    processes: int  # processes in the run set
    process_time_ns: int  # Σ process walls: the whole of figures summed over processes


class LogHit(TypedDict):
    path: str
    line: int
    code: str
    text: str
    meaning: str


class PlatformSection(TypedDict):
    vendor: str  # nvidia, amd, mixed, unknown (analysis.platform.detect_platform)
    pytorch: bool  # every run with kernels is a PyTorch profiler trace
    evidence: str  # what decided it


class Finding(TypedDict):
    severity: str  # high, medium, low, info
    code: str  # a FindingCode value, or counter:<metric>
    message: str
    numbers: Record
    fix: str
    saving_ns: NotRequired[int]  # projected by the what-if engine (analysis.savings), over the steady-state window


class ApiRow(TypedDict):
    domain: str  # rocprofv3 domain name, e.g. HIP_API
    name: str
    calls: int
    total_ns: int
    avg_ns: float
    percent: float  # of the domain's total


class ApiSection(TypedDict):
    source: str  # "trace", "stats" or "none"
    rows: list[ApiRow]  # by total time, the first ``top`` of each domain


class StatsSection(TypedDict):
    source: str  # "" when the run has no statistics files, else e.g. "rocprofv3 --stats; no trace in this run"
    tables: list[Record]  # analysis.stats.StatsTable
    checks: list[Record]  # analysis.stats.StatsCheck: trace and statistics disagree
    needs_trace: list[str]  # findings that cannot be computed without a trace


class Summary(TypedDict):
    """The whole document, keys in the order they are written."""

    schema: str
    tuiprof_version: str
    source: SourceSection
    processes: list[ProcessRecord]
    agents: list[Record]
    platform: PlatformSection
    kernels: KernelsSection
    hotspots: list[HotspotRecord]
    hotspots_source: str  # "trace", "stats" (kernel statistics file; no kernel trace) or "none"
    warnings: list[str]
    wall_ns: int
    gpu: GpuSection
    gaps: GapsSection
    sync: SyncSection
    launch: LaunchSection
    copies: CopiesSection
    copies_source: str  # "trace", "stats" or "none"
    api: ApiSection
    categories: dict[str, int]
    category_rules: str
    hotspots_by: HotspotsBy
    hotspots_by_operator: list[OperatorRecord]
    hotspots_by_module: list[OperatorRecord]  # per nn.Module path of the launching operator, where recorded
    measurement: MeasurementSection
    counters: list[Record]
    occupancy: list[Record]
    logs: list[LogHit]
    stats: StatsSection
    steps: StepsSection
    memory: MemorySection
    findings: list[Finding]
    ranks: NotRequired[list[RankRecord]]  # one row per process (analysis.ranks)
    communication: NotRequired[CommunicationSection]
    stragglers: NotRequired[StragglerSection]
    critical_path: NotRequired[Record | None]  # analysis.critical: the critical path of each process (steady state); None without a trace
    warmup: NotRequired[Record | None]  # analysis.warmup: what the warm-up steps cost and did (one process with warm-up steps), else None
    trust: NotRequired[dict[str, TrustLabel]]  # per key above: can its figures be believed (analysis.integrity)


class TrustLabel(TypedDict):
    """A section's trust label: ``ok``, ``degraded`` or ``unreliable``, and the reasons
    (``<severity> <code>: <message>`` of each integrity issue that set it; ``tuiprof check``
    has the evidence)."""

    trust: str
    reasons: list[str]


class StepRecord(TypedDict):
    """One training/inference step (docs/metrics.md, Steps)."""

    label: str  # "ProfilerStep#3", "train_step [2]", "step 4" (inferred)
    start_ns: int  # the host range
    end_ns: int
    wall_ns: int
    gpu_ns: int  # first to last GPU activity launched in the step
    kernels: int  # launched in the step (by the launching call's start)
    kernel_ns: int
    busy_ns: int  # GPU busy (any GPU of the process) inside the host range
    busy_pct: float  # busy / wall
    idle_ns: int
    exposed_sync_ns: int  # of the sync calls that start in the step
    sync_calls: int
    copies: int
    copy_bytes: int
    top_kernel: str | None  # most kernel time in the step
    top_kernel_ns: int
    warmup: bool
    memory_peak_bytes: int | None  # allocated-bytes high-water mark inside the step
    process: NotRequired[str]  # steps of several processes: the process whose step k is the slowest (the row is its)


class StepDistribution(TypedDict):
    count: int
    min_ns: int
    median_ns: float
    mean_ns: float
    p90_ns: float
    p99_ns: float
    max_ns: int


class SteadyState(TypedDict):
    steps: int
    span_ns: int  # first steady step's start to the last one's end
    median_wall_ns: float
    spread_pct: float  # (p75 - p25) / median x 100 of the steady steps' wall: the diff's noise band
    median_kernels: float
    median_busy_pct: float
    median_exposed_sync_ns: float
    busy_pct: float  # over the steady steps: sum busy / sum wall
    idle_pct: float
    exposed_sync_pct_of_wall: float
    kernels: int
    copies: int


class StepOutlier(TypedDict):
    label: str
    wall_ns: int
    ratio: float  # wall / the steady median
    median_step: str  # the steady step compared against (wall closest to the median)
    extra_kernels: list[Record]  # {"name", "count"}: launched more often than in the median step
    missing_kernels: list[Record]
    extra_copies: int
    extra_copy_bytes: int
    extra_exposed_sync_ns: int
    longest_gap_ns: int
    longest_gap_cause: str | None
    median_longest_gap_ns: int
    reasons: list[str]
    process: NotRequired[str]  # steps of several processes: the slowest process of the step, whose events are compared


class StepsSection(TypedDict):
    detected: bool
    source: str  # "profiler_step", "marker", "inferred", "" when none
    name: str  # the range name used ("ProfilerStep#*" for PyTorch's steps)
    how: str  # one sentence: where the steps come from
    process: str | None
    candidates: list[str]  # repeated host range names (--step NAME picks one)
    warmup_steps: int
    warmup_source: str  # "detected" or "given" (--warmup N)
    outlier_factor: float
    distribution: StepDistribution | None  # wall times of every step
    steady_distribution: StepDistribution | None
    steady: SteadyState | None
    outliers: list[StepOutlier]  # the slowest 10 (analysis.steps.MAX_OUTLIERS)
    outlier_steps: int  # how many steady steps are outliers
    steps: list[StepRecord]
    combined: str  # "": one process's steps; "max": step k of several processes is the slowest one's (docs/metrics.md)
    per_process: list[StepsSection]  # with several processes with steps: each one's own steps part, in process order


class MemoryDevice(TypedDict):
    process: str
    agent: int
    source: str  # "allocator totals" (Kineto Total Allocated/Reserved), "allocation trace" (running sum) or "API call sizes" (matched frees)
    events: int
    peak_allocated_bytes: int
    peak_allocated_ns: int  # when the peak was first reached
    peak_reserved_bytes: int | None  # None: the profiler records no reserved total


class MemoryRequest(TypedDict):
    """Bytes a process's allocation calls (hipMalloc, cudaMalloc ...) asked for, where their
    frees cannot be matched to them: a sum of requests, not a peak (docs/metrics.md, Memory)."""

    process: str
    source: str  # "API requests, frees not matched"
    calls: int  # allocation calls with a size
    requested_bytes: int  # the sum of their sizes
    largest_bytes: int
    functions: dict[str, int]  # function name -> calls
    frees: int  # free calls (hipFree ...) the trace records, not matched
    free_functions: dict[str, int]


class MemorySection(TypedDict):
    source: str  # the best over processes: "allocator totals", "allocation trace", "API call sizes", "API requests, frees not matched" or "none"
    peak_allocated_bytes: int | None  # the largest over devices
    peak_reserved_bytes: int | None
    devices: list[MemoryDevice]
    step_growth_bytes: int | None  # last - first steady step high-water mark when it grows every step
    growing_steps: int  # steady steps whose high-water mark rose over the previous one's
    requested: list[MemoryRequest]  # per process without a level of any source: its API requests


# --- ranks, communication, stragglers (analysis/ranks.py, docs/metrics.md "Ranks") ----------


class RankRecord(TypedDict):
    rank: int
    rank_source: str  # "distributedInfo" (the trace says), "order" (host, pid order; no rank recorded)
    label: str
    host: str | None
    pid: int | None
    gpus: str  # the GPUs that ran this process's kernels
    dispatches: int
    source: str  # "trace", "stats" (kernel statistics only: times are sums, no idle/sync/wait), "none"
    span_ns: int  # the process's wall
    gpu_span_ns: int  # first to last GPU activity
    busy_ns: int  # union of its kernels and copies
    compute_ns: int  # union of its compute kernels (not communication, not copy/fill)
    communication_ns: int  # union of its communication kernels
    copy_ns: int  # union of its copies and copy/fill kernels
    idle_pct: float  # (gpu_span - busy) / gpu_span
    sync_ns: int  # union of its sync and blocking-copy calls
    sync_pct: float  # of span
    overlap_ns: int  # communication while a compute kernel runs on the same GPU
    overlap_pct: float  # of communication_ns
    compute_exposed_ns: int  # compute while no communication runs (the compute before collectives)
    collectives: int  # communication kernels
    wait_ns: int  # Σ over collective instances of its time beyond the fastest instance
    wait_pct: float  # of span
    straggler_of: int  # collective instances in which it arrived last
    top_kernel: str | None
    top_kernel_pct: float  # of its kernel time


class CollectiveBandwidth(TypedDict):
    """Message sizes and bandwidths of one collective type (docs/metrics.md, Collective bandwidth)."""

    sized: int  # collective kernels (over every rank) whose message size the trace records
    bytes: int | None  # Σ message bytes of those; None when no size is recorded
    group_size: int | None  # ranks in the collective's group, when every sized instance has the same
    algorithm_bandwidth_gbs: float | None  # Σ bytes / Σ kernel time of the sized instances (GB/s = 10**9 B/s)
    bus_bandwidth_gbs: float | None  # Σ (bytes × NCCL-tests factor) / Σ kernel time: the time-weighted bus bandwidth
    bus_bandwidth_median_gbs: float | None  # median over the collective instances of bytes × factor / the last arrival's (the fastest) time


class CollectiveType(CollectiveBandwidth):
    type: str  # AllReduce, AllGather, ReduceScatter, AllToAll, Broadcast, Reduce, SendRecv, Gather, Scatter, unknown
    count: int
    total_ns: int
    avg_ns: float


class CommunicationSection(TypedDict):
    kernel_ns: int  # Σ over ranks of the union of communication kernels
    api_ns: int  # Σ over ranks of the union of RCCL/NCCL API calls
    api_calls: int
    pct_of_time: float  # kernel_ns / Σ rank spans
    overlap_ns: int
    overlap_pct: float  # overlap_ns / kernel_ns (HTA's comm/comp overlap)
    by_type: list[CollectiveType]


class CollectiveInstance(TypedDict):
    type: str
    index: int  # k: the k-th collective of this type on every rank
    straggler: int | None  # rank that arrived last (None: all the same)
    fastest_ns: int
    slowest_ns: int
    wait_ns: int  # Σ over ranks of duration - fastest


class StragglerSection(TypedDict):
    instances: int
    rank: int | None  # the straggler: last in most instances (None: no instance, or one rank)
    last_in: int  # instances in which it arrived last
    compute_excess_pct: float  # its compute before collectives vs the median of the others
    others_wait_ns: int
    others_wait_pct: float  # of the others' summed spans
    listed: list[CollectiveInstance]  # the instances with the largest waits, at most 50
