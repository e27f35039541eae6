"""Ranked findings: severity, code, message, the numbers behind it and the fix.

Rules and thresholds (sources in docs/metrics.md; [P] = ours):

======================  ==========================================================  =========
code                    trigger                                                     severity
======================  ==========================================================  =========
gpu-idle                GPU idle > 20% of its span (rocinsight)                     high
idle-sync               listed gaps caused by synchronisation > 5% of span [P]      high
sync-overhead           exposed sync > 5% of wall (profiling guide's target)        medium
sync-after-launch       >= 50% of >= 10 launches followed by a sync [P]             high
many-tiny-kernels       > 1000 directly launched dispatches (graph replays apart)   medium
                        averaging < 10 µs (rocinsight)
launch-bound            listed gaps caused by host launch > 10% of span [P]         medium
copy-share              copy engine time > 20% of wall (rocinsight)                 high
slow-copy               pageable host copies >= 1 MiB [P]; else H2D/D2H bandwidth   medium
                        < 10 GB/s on copies >= 1 MiB (rocinsight)
dominant-kernel         one kernel > 50% of kernel time (rocinsight)                low
low-occupancy           a top-5 kernel's theoretical occupancy < 25% [P]            medium
communication-share     communication kernels > 20% of kernel time [P]              medium
straggler               one rank arrives last at most collectives and the others    high
                        wait > 5% of their time in them [P]
comm-overlap            communication > 10% of rank time [P] and overlapping        medium
                        compute < 50% of it [P] (HTA's comm/comp overlap)
needs-trace             a statistics-only run: the findings that need a trace       info
counter:<metric>        a derived counter metric crosses its threshold              medium
counters-serialise      the run collected counters                                  info
known-error             a known profiler error message in a log file                high
no-counters             no counters recorded: the commands to collect them          info
slow-step               a steady step slower than its median x 1.5 [P] (issue 21)    medium
memory-growth           every steady step's memory high-water mark above the last   medium
                        one's, >= 3 steps, >= 1 MiB in all [P] (a leak)
memory-reserved         peak reserved > 2 x peak allocated and >= 1 GiB more [P]     low
                        (allocator fragmentation / cache held)
warmup                  warm-up steps cost > 10% of a steady step beyond as many    low
                        steady steps [P]: its cost and what it was (analysis.warmup)
gemm-share              GEMM + convolution < 60% of steady-state kernel time        low
                        (the seed workflow's threshold)
======================  ==========================================================  =========

Issue 31: with warm-up steps, gpu-idle and idle-sync judge the steady steps only (warm-up has
its own finding); launch-bound names the host operators on the critical path when they, not
the launch calls, hold the GPU; dominant-kernel is "info" when GPU work is under half of the
critical path (a collective keeps its communication advice); counter advice about tiles,
occupancy and matrix-core feeding is for compute-bound kernels only (:func:`kernel_bound`).
``analysis.savings`` then attaches each projectable finding's saving, sets its severity from
it and ranks by it.

Fixes name the run's platform's tools and calls (:mod:`tui_prof.analysis.platform`): CUDA
graphs, cudaStreamSynchronize, ncu/nsys on NVIDIA; HIP graphs, hipDeviceSynchronize,
rocprofv3 on AMD; vendor-neutral words when the platform is unknown or mixed; on a
PyTorch trace the PyTorch-level fix first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from tui_prof.analysis.hostapi import MANY_LAUNCHES, TINY_KERNEL_NS
from tui_prof.analysis.measurement import SYNC_TARGET_PCT
from tui_prof.analysis.memory import FRAGMENTATION_MIN_BYTES, FRAGMENTATION_RATIO, GROWTH_MIN_BYTES, GROWTH_MIN_STEPS
from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES
from tui_prof.analysis.platform import TORCH_PHRASES, Phrases, collective_phrases, phrases, torch_first
from tui_prof.analysis.sections import Finding, PlatformSection, Summary
from tui_prof.percent import fmt_pct


class FindingCode(str, Enum):
    """Every finding's code. The TUI has an evidence handler for each (a test checks it);
    a counter finding's code is ``counter:<metric>`` (:meth:`of` maps it to COUNTER)."""

    GPU_IDLE = "gpu-idle"
    IDLE_SYNC = "idle-sync"
    SYNC_OVERHEAD = "sync-overhead"
    SYNC_AFTER_LAUNCH = "sync-after-launch"
    MANY_TINY_KERNELS = "many-tiny-kernels"
    LAUNCH_BOUND = "launch-bound"
    COPY_SHARE = "copy-share"
    SLOW_COPY = "slow-copy"
    DOMINANT_KERNEL = "dominant-kernel"
    LOW_OCCUPANCY = "low-occupancy"
    COUNTER = "counter"
    COMMUNICATION_SHARE = "communication-share"
    NEEDS_TRACE = "needs-trace"
    COUNTERS_SERIALISE = "counters-serialise"
    KNOWN_ERROR = "known-error"
    NO_COUNTERS = "no-counters"
    SLOW_STEP = "slow-step"
    MEMORY_GROWTH = "memory-growth"
    MEMORY_RESERVED = "memory-reserved"
    STRAGGLER = "straggler"
    COMM_OVERLAP = "comm-overlap"
    WARMUP = "warmup"
    GEMM_SHARE = "gemm-share"

    @classmethod
    def of(cls, code: str) -> FindingCode:
        """The member for a finding's ``code`` string (``counter:<metric>`` -> COUNTER)."""
        return cls.COUNTER if code.startswith("counter:") else cls(code)


SEVERITY_RANK = {"high": 0, "medium": 1, "low": 2, "info": 3}


def _f(code: FindingCode | str, severity: str, message: str, numbers: dict[str, Any], fix: str, weight: float = 0.0) -> tuple[Finding, float]:
    """One finding and its weight (the order among findings of one severity, largest first);
    ``code``: a member, or the ``counter:<metric>`` string of a counter finding."""
    value = code.value if isinstance(code, FindingCode) else code
    return {"severity": severity, "code": value, "message": message, "numbers": numbers, "fix": fix}, weight


def clip_name(name: str, width: int) -> str:
    """A kernel name for a finding's message: whole when it has at most ``width``
    characters, else its first ``width - 1`` and "…" (the whole name is in the finding's
    ``numbers.name``)."""
    return name if len(name) <= width else name[: width - 1] + "…"


def _dominant_kernel(top: Any, vendor: str) -> tuple[Finding, float]:
    """One kernel over half of kernel time: optimise it (counters, occupancy); a collective
    (the category rules' communication: ncclDevKernel_*, rccl_main_kernel, ...) waits on the
    interconnect, so its advice is communication: overlap, bucketing, topology."""
    message = f"One kernel takes {fmt_pct(top['percent'])} of kernel time: {clip_name(top['name'], 80)}"
    numbers = {"name": top["name"], "percent": top["percent"]}
    if DEFAULT_CATEGORY_RULES.classify(top["name"]) != "communication":
        return _f(FindingCode.DOMINANT_KERNEL, "low", message, numbers, "Optimise this kernel first (counters, occupancy below).", top["percent"])
    say = collective_phrases(vendor)
    fix = (
        f"A {say['library']} collective: its time is communication, which occupancy and counters do not shorten. "
        f"{say['overlap'][0].upper()}{say['overlap'][1:]}; {say['bucketing']}; {say['topology']}; "
        "and check for stragglers: a rank that arrives late makes every other rank wait inside the collective."
    )
    return _f(FindingCode.DOMINANT_KERNEL, "low", message + " (a collective: communication)", {**numbers, "category": "communication"}, fix, top["percent"])


@dataclass(frozen=True)
class Facts:
    """What several rules read, taken once from the document: the platform and its words,
    the wall and the GPU span (Σ (process, GPU) spans: the whole of idle and gaps)."""

    platform: PlatformSection | None
    say: Phrases
    wall: int
    span: int

    @classmethod
    def of(cls, doc: Summary) -> Facts:
        platform = doc.get("platform")
        gpu = doc["gpu"]
        span = gpu.get("agent_span_ns", gpu.get("span_ns")) or 0
        return cls(platform, phrases(platform["vendor"] if platform else "unknown"), doc.get("wall_ns") or 0, span)

    @property
    def vendor(self) -> str:
        return self.platform["vendor"] if self.platform else "unknown"


Found = list[tuple[Finding, float]]
Rule = Callable[[Summary, Facts], Found]


# --- the trace's timeline: idle GPU, synchronisation, launches ------------------------------

GPU_IDLE_PCT = 20.0  # rocinsight: GPU idle share of its span
IDLE_SYNC_SHARE = 0.05  # [P] listed gaps caused by synchronisation, share of the span
LAUNCH_BOUND_SHARE = 0.10  # [P] listed gaps caused by host launch, share of the span


def steady_steps(doc: Summary) -> list[Any]:
    """The steady steps when the run has warm-up steps to leave out (else []: the whole run is
    the steady state). Warm-up is never a steady-state problem: it has its own finding."""
    steps = doc.get("steps") or {}
    if not (steps.get("detected") and steps.get("warmup_steps")):
        return []
    return [r for r in steps.get("steps", []) if not r.get("warmup")]


def gpu_idle(doc: Summary, facts: Facts) -> Found:
    gpu = doc["gpu"]
    steady = steady_steps(doc)
    if steady:  # the steady steps' own idle share (inside their host ranges)
        wall = sum(r["wall_ns"] for r in steady)
        idle_pct = round(100.0 * sum(r["idle_ns"] for r in steady) / wall, 4) if wall else 0.0
        if idle_pct <= GPU_IDLE_PCT:
            return []
        fix = torch_first(facts.platform, f"{TORCH_PHRASES['sync']}; {TORCH_PHRASES['graphs']}", f"Remove syncs, batch launches ({facts.say['graphs']}).")
        message = f"GPU idle {fmt_pct(idle_pct)} of the steady-state steps"
        return [_f(FindingCode.GPU_IDLE, "high", message, {"idle_pct": idle_pct, "steady_steps": len(steady), "steady_wall_ns": wall}, fix, idle_pct)]
    if not (facts.span and gpu["idle_pct"] > GPU_IDLE_PCT):
        return []
    fix = torch_first(
        facts.platform,
        f"{TORCH_PHRASES['sync']}; {TORCH_PHRASES['graphs']}",
        f"See the gap list: each gap names the host call before it. Remove syncs, batch launches ({facts.say['graphs']}), overlap copies.",
    )
    numbers = {"idle_pct": gpu["idle_pct"], "span_ns": facts.span, "gaps_by_cause_ns": doc["gaps"]["by_cause"]}
    return [_f(FindingCode.GPU_IDLE, "high", f"GPU idle {fmt_pct(gpu['idle_pct'])} of its active span", numbers, fix, gpu["idle_pct"])]


def _idle_cause(doc: Summary, facts: Facts, cause: str, code: FindingCode, severity: str, share: float, what: str, fix: str) -> Found:
    """The gaps of ``cause`` over ``share`` of the GPU span."""
    ns = doc["gaps"]["by_cause"].get(cause, 0)
    if not (facts.span and ns > share * facts.span):
        return []
    pct = 100 * ns / facts.span
    numbers = {"ns": ns, "gaps": doc["gaps"]["count_by_cause"].get(cause, 0)}
    return [_f(code, severity, f"{fmt_pct(pct)} of the GPU span is {what}", numbers, fix, pct)]


def idle_sync(doc: Summary, facts: Facts) -> Found:
    fix = torch_first(
        facts.platform, TORCH_PHRASES["sync"], f"Synchronise less often: keep work queued on the stream, use events/{facts.say['wait_event']} for dependencies."
    )
    steady = steady_steps(doc)
    if steady:  # the steady steps' exposed synchronisation (the GPU idle while the host waits)
        wall = sum(r["wall_ns"] for r in steady)
        exposed = sum(r["exposed_sync_ns"] for r in steady)
        if not (wall and exposed > IDLE_SYNC_SHARE * wall):
            return []
        pct = 100 * exposed / wall
        numbers = {"ns": exposed, "steady_steps": len(steady), "steady_wall_ns": wall}
        return [_f(FindingCode.IDLE_SYNC, "high", f"{fmt_pct(pct)} of the steady-state steps is idle waiting after synchronisation calls", numbers, fix, pct)]
    return _idle_cause(doc, facts, "sync", FindingCode.IDLE_SYNC, "high", IDLE_SYNC_SHARE, "idle waiting after synchronisation calls", fix)


def launch_bound(doc: Summary, facts: Facts) -> Found:
    fix = torch_first(
        facts.platform,
        TORCH_PHRASES["graphs"],
        f"The host cannot issue work fast enough: capture the loop in {facts.say['graphs']}, fuse kernels, move host work off the critical path.",
    )
    found = _idle_cause(doc, facts, "launch", FindingCode.LAUNCH_BOUND, "medium", LAUNCH_BOUND_SHARE, "idle waiting for the host to launch", fix)
    path = critical_path_of(doc)
    if not (found and path):
        return found
    groups = path["groups"]
    host, launch = groups.get("host_ops", 0), groups.get("launch_queue", 0)
    total = path["total_ns"] or 1
    ops = [t["name"] for t in path["top"] if t["group"] == "host_ops" and not t["name"].startswith("(")][:3]
    finding, weight = found[0]
    finding["numbers"] = {
        **finding["numbers"],
        "path_host_ops_pct": round(100 * host / total, 2),
        "path_launch_pct": round(100 * launch / total, 2),
        "host_ops": ops,
    }
    if host > launch:  # the host's own work between launches, not the launch calls, holds the GPU
        named = ", ".join(ops) if ops else "host work outside any recorded operator"
        finding["message"] += (
            f": on the critical path host operators take {fmt_pct(100 * host / total, 0)} ({named}), launch calls and queue {fmt_pct(100 * launch / total, 0)}"
        )
        finding["fix"] = (
            f"The host's own work between launches holds the GPU ({named}): make those host operators cheaper or move them off the GPU's path "
            f"(precompute, fewer Python-level ops); {facts.say['graphs']} or torch.compile remove it only where the work can be captured."
        )
    return [(finding, weight)]


def critical_path_of(doc: Summary) -> Any:
    """The critical path record of a run of one process (analysis.critical), else None."""
    section = doc.get("critical_path") or {}
    procs = section.get("processes") or []
    return procs[0] if len(procs) == 1 and procs[0].get("total_ns") else None


def sync_after_launch(doc: Summary, facts: Facts) -> Found:
    """``sync.sync_after_launch.detected`` (its thresholds: hostapi.SYNC_AFTER_LAUNCH_MIN/RATIO)."""
    sal = doc["sync"].get("sync_after_launch", {})
    if not sal.get("detected"):
        return []
    fix = torch_first(
        facts.platform,
        TORCH_PHRASES["sync"],
        f"Move {facts.say['sync_calls']} out of the loop: synchronise once after it; use events for timing and {facts.say['wait_event']} for cross-stream dependencies.",
    )
    message = f"{sal['followed_by_sync']} of {sal['launches']} launches are followed directly by a synchronisation (sync inside the loop)"
    return [_f(FindingCode.SYNC_AFTER_LAUNCH, "high", message, dict(sal), fix, 100 * sal["ratio"])]


def sync_overhead(doc: Summary, facts: Facts) -> Found:
    sync = doc["sync"]
    exposed_pct = sync.get("exposed_pct_of_wall", 0.0)
    if not (facts.wall and exposed_pct > SYNC_TARGET_PCT):
        return []
    message = (
        f"Exposed synchronisation (host blocked while the GPU has nothing left to run) takes {fmt_pct(exposed_pct)} of wall time "
        f"(target < 5%); all sync calls and blocking copies: {fmt_pct(sync['pct_of_wall'])}"
    )
    numbers = {
        "calls": sync["calls"],
        "total_ns": sync["total_ns"],
        "pct_of_wall": sync["pct_of_wall"],
        "exposed_ns": sync.get("exposed_ns", 0),
        "waiting_ns": sync.get("waiting_ns", 0),
        "exposed_pct_of_wall": exposed_pct,
    }
    fix = torch_first(
        facts.platform,
        f"{TORCH_PHRASES['pinned_copy']}; {TORCH_PHRASES['sync']}",
        f"Use async copies ({facts.say['async_copy']} with pinned memory) and fewer sync points.",
    )
    return [_f(FindingCode.SYNC_OVERHEAD, "medium", message, numbers, fix, exposed_pct)]


def many_tiny_kernels(doc: Summary, facts: Facts) -> Found:
    """``launch.many_tiny_kernels`` (its thresholds: hostapi.MANY_LAUNCHES, TINY_KERNEL_NS)."""
    launch = doc["launch"]
    if not launch.get("many_tiny_kernels"):
        return []
    direct = launch.get("direct_kernels", doc["kernels"]["dispatches"])
    avg = launch.get("direct_avg_kernel_ns", launch["avg_kernel_ns"])
    graphs = launch.get("graph_launch_calls") or 0
    replayed = (
        f" (graph replays apart: {launch['graph_dispatches']} dispatches from {graphs} graph launches, {launch['launches_per_graph']:g} per graph)"
        if graphs
        else ""
    )
    numbers = {
        "dispatches": doc["kernels"]["dispatches"],
        "direct_kernels": direct,
        "avg_kernel_ns": avg,
        "median_queue_delay_ns": launch["median_queue_delay_ns"],
        "tiny_kernels": launch.get("direct_tiny_kernels", launch["tiny_kernels"]),
        "graph_launch_calls": graphs,
        "launches_per_graph": launch.get("launches_per_graph"),
    }
    fix = torch_first(
        facts.platform,
        f"{TORCH_PHRASES['graphs']}; fuse with {TORCH_PHRASES['fuse']}",
        f"Fuse small kernels (custom fused kernels) or capture them in {facts.say['graphs']}.",
    )
    message = f"{direct} directly launched dispatches averaging {(avg or 0.0) / 1e3:.1f} µs: launch cost (~5-20 µs each) dominates{replayed}"
    weight = 100 * launch["tiny_kernel_time_ns"] / facts.wall if facts.wall else 0
    return [_f(FindingCode.MANY_TINY_KERNELS, "medium", message, numbers, fix, weight)]


# --- copies ---------------------------------------------------------------------------------

COPY_SHARE_PCT = 20.0  # rocinsight: copy engine time share of wall
SLOW_COPY_MIN_BYTES = 1 << 20  # copies under 1 MiB say little about bandwidth
SLOW_COPY_GBS = 10.0  # rocinsight: H2D/D2H bandwidth below this is slow


def copy_share(doc: Summary, facts: Facts) -> Found:
    copies = doc["copies"]
    if not (facts.wall and copies["pct_of_wall"] > COPY_SHARE_PCT):
        return []
    fix = torch_first(
        facts.platform,
        TORCH_PHRASES["pinned_copy"],
        f"Keep data on the GPU between steps; overlap copies with compute on a separate stream using pinned memory ({facts.say['pinned_alloc']}).",
    )
    numbers = {"bytes": copies["bytes"], "time_ns": copies["time_ns"]}
    return [_f(FindingCode.COPY_SHARE, "high", f"Memory copies take {fmt_pct(copies['pct_of_wall'])} of wall time", numbers, fix, copies["pct_of_wall"])]


def slow_copy(doc: Summary, facts: Facts) -> Found:
    """Pageable host copies of >= 1 MiB per direction; else H2D/D2H copies of >= 1 MiB below 10 GB/s."""
    copies = doc["copies"]
    fix = torch_first(facts.platform, TORCH_PHRASES["pinned_copy"], f"Use pinned host memory ({facts.say['pinned_alloc']}) and larger transfers.")
    kinds = copies.get("by_kind") or {}
    pageable = kinds["pageable"]["by_direction"] if "pageable" in kinds else {}
    pinned = kinds["pinned"]["by_direction"] if "pinned" in kinds else {}
    out: Found = []
    for direction, kd in pageable.items():
        if kd["bytes"] >= SLOW_COPY_MIN_BYTES and kd["bandwidth_gbs"] is not None:
            than = pinned[direction]["bandwidth_gbs"] if direction in pinned else None
            vs = f" (pinned {direction} copies here: {than:.2f} GB/s)" if than else ""
            message = f"{kd['count']} {direction} copies from pageable host memory reach {kd['bandwidth_gbs']:.2f} GB/s{vs}"
            out.append(_f(FindingCode.SLOW_COPY, "medium", message, {"direction": direction, "kind": "pageable", **kd}, fix, 0))
    for direction, d in copies.get("by_direction", {}).items():
        if direction in pageable:
            continue  # said above, with the memory kind
        if direction in ("HtoD", "DtoH") and d["bytes"] >= SLOW_COPY_MIN_BYTES and d["bandwidth_gbs"] is not None and d["bandwidth_gbs"] < SLOW_COPY_GBS:
            out.append(
                _f(FindingCode.SLOW_COPY, "medium", f"{direction} copies reach only {d['bandwidth_gbs']:.2f} GB/s", {"direction": direction, **d}, fix, 0)
            )
    return out


# --- kernels: the dominant one, occupancy, counters ---------------------------------------------

DOMINANT_KERNEL_PCT = 50.0  # rocinsight: one kernel's share of kernel time
LOW_OCCUPANCY_PCT = 25.0  # [P] theoretical occupancy of a top-5 kernel
OCCUPANCY_TOP = 5  # kernels (by time) checked for occupancy
COUNTER_KERNELS = 20  # kernels per process whose flagged counter metrics become findings


GPU_BOUND_PATH_SHARE = 0.5  # [P] GPU work's share of the critical path below which the run is host/launch-bound


def dominant_kernel(doc: Summary, facts: Facts) -> Found:
    hot = doc.get("hotspots") or []
    if not (hot and hot[0]["percent"] > DOMINANT_KERNEL_PCT):
        return []
    path = critical_path_of(doc)
    if path and DEFAULT_CATEGORY_RULES.classify(hot[0]["name"]) != "communication":  # a collective keeps its communication advice
        groups = path["groups"]
        gpu = groups.get("gpu_compute", 0) + groups.get("communication", 0) + groups.get("copies", 0)
        share = gpu / path["total_ns"]
        if share < GPU_BOUND_PATH_SHARE:  # a faster kernel buys at most its time on the path
            top = hot[0]
            on_path = top.get("critical_ns", 0)
            # critical_ns is scaled to the whole window (analysis.critical); the path's total is of the part analysed
            scaled_total = path["total_ns"] * path["window_ns"] / path["sampled_ns"] if path.get("sampled_ns") else path["total_ns"]
            message = (
                f"One kernel takes {fmt_pct(top['percent'])} of kernel time ({clip_name(top['name'], 60)}), but the GPU is not the bottleneck: "
                f"GPU work is {fmt_pct(100 * share, 0)} of the critical path, this kernel {fmt_share(on_path, scaled_total)}"
            )
            fix = "The run is host/launch-bound: see the launch and host findings first; a faster kernel saves at most its time on the critical path."
            numbers = {"name": top["name"], "percent": top["percent"], "critical_ns": on_path, "path_gpu_pct": round(100 * share, 2)}
            return [_f(FindingCode.DOMINANT_KERNEL, "info", message, numbers, fix, top["percent"])]
    return [_dominant_kernel(hot[0], facts.vendor)]


def fmt_share(part: int, whole: int) -> str:
    return fmt_pct(100 * part / whole if whole else 0.0)


def low_occupancy(doc: Summary, facts: Facts) -> Found:
    out: Found = []
    keys = ("name", "waves_per_simd", "max_waves_per_simd", "limiter", "vgpr", "agpr", "lds_bytes", "workgroup_size")
    for occ in (doc.get("occupancy") or [])[:OCCUPANCY_TOP]:
        if occ["occupancy_pct"] < LOW_OCCUPANCY_PCT:
            message = f"{clip_name(occ['name'], 60)}: theoretical occupancy {fmt_pct(occ['occupancy_pct'])} ({occ['limiter']}-limited)"
            out.append(_f(FindingCode.LOW_OCCUPANCY, "medium", message, {k: occ[k] for k in keys}, occ["hint"], LOW_OCCUPANCY_PCT - occ["occupancy_pct"]))
    return out


# Counter advice about tiles, occupancy and matrix-core feeding: for compute-bound kernels only
# (a streaming or memory-bound kernel has no reuse to tile for); memory advice stays for all.
COMPUTE_TUNING = frozenset(
    {
        "l2_hit",
        "alu_stalled_by_lds",
        "lds_bank_conflict",
        "lds_conflicts_per_access",
        "mfma_utilization",
        "valu_utilization",
        "valu_busy",
        "wave_occupancy",
        "waves",
    }
)
MEMORY_METRICS = frozenset({"hbm_bandwidth_pct", "mem_unit_busy", "mem_unit_stalled", "l2_fabric_read_bw", "l2_fabric_write_bw", "vmem_utilization"})
STREAMING_CATEGORIES = frozenset({"copy/fill", "elementwise", "reduction", "normalisation", "layout", "communication"})
COMPUTE_CATEGORIES = frozenset({"GEMM", "convolution", "attention"})
GEMV_WORDS = ("gemv", "mul_mat_vec", "matvec")


def kernel_bound(k: Any) -> str:
    """ "compute", "memory" or "unknown" for a counters kernel entry: its roofline point's bound
    when it has one; else memory when a memory metric is flagged, the kernel streams
    (copies, elementwise, reductions, normalisation, layout, collectives) or is a GEMV;
    compute for GEMM, convolution and attention kernels; unknown otherwise."""
    roof = k.get("roofline") or {}
    if roof.get("bound") in ("compute", "memory"):
        return str(roof["bound"])
    if any(m.get("flagged") for key, m in k.get("metrics", {}).items() if key in MEMORY_METRICS):
        return "memory"
    name = str(k.get("name", ""))
    category = DEFAULT_CATEGORY_RULES.classify(name)
    if category in STREAMING_CATEGORIES or any(w in name.lower() for w in GEMV_WORDS):
        return "memory"
    return "compute" if category in COMPUTE_CATEGORIES else "unknown"


def counter(doc: Summary, facts: Facts) -> Found:
    """A finding per flagged derived counter metric (analysis.counters decides the flag)."""
    out: Found = []
    for block in doc.get("counters") or []:
        for k in block.get("kernels", [])[:COUNTER_KERNELS]:
            bound = kernel_bound(k)
            for key, m in k["metrics"].items():
                if m["flagged"] and not (key in COMPUTE_TUNING and bound != "compute"):
                    message = f"{clip_name(k['name'], 60)}: {m['label']} = {m['value']:.4g} {m['unit']} ({m['threshold']})"
                    numbers = {"name": k["name"], "value": m["value"], "formula": m["formula"], "source": m["source"]}
                    out.append(_f(f"{FindingCode.COUNTER.value}:{key}", "medium", message, numbers, m["meaning"], 0))
    return out


def counters_serialise(doc: Summary, facts: Facts) -> Found:
    return [
        _f(
            FindingCode.COUNTERS_SERIALISE,
            "info",
            "This run collected hardware counters: dispatches were serialised",
            {"process": block.get("process")},
            "Use a separate trace-only run for idle/overlap/launch analysis.",
            0,
        )
        for block in doc.get("counters") or []
        if block.get("kernels")
    ]


def known_error(doc: Summary, facts: Facts) -> Found:
    return [
        _f(FindingCode.KNOWN_ERROR, "high", f"{hit['path']}:{hit['line']}: {hit['text'][:120]}", {"code": hit["code"]}, hit["meaning"], 0)
        for hit in doc.get("logs") or []
    ]


def no_counters(doc: Summary, facts: Facts) -> Found:
    missing = [b for b in (doc.get("counters") or []) if not b.get("kernels") and b.get("commands")]
    if not (missing and doc["kernels"]["dispatches"]):
        return []
    b = missing[0]
    how = "collect them with Nsight Compute / Nsight Systems (tuiprof does not read their reports)" if facts.vendor == "nvidia" else "collect them with"
    message = f"No hardware counters in this run ({b.get('arch') or 'unknown arch'}): {how}"
    return [_f(FindingCode.NO_COUNTERS, "info", message, {"commands": b["commands"]}, "\n".join(b["commands"]), 0)]


# --- statistics files: runs without a trace, and the communication share ------------------------

COMMUNICATION_SHARE_PCT = 20.0  # [P] communication kernels' share of kernel time worth a look


def _stats_total(doc: Summary, key: str) -> int:
    """The run's total of a statistics table's domain (its ``run_total_ns``: the rows' sum,
    or TotalDurationNs × 100 / Percentage where the table is cut); 0 without the table."""
    return next((int(t.get("run_total_ns") or t["total_ns"]) for t in doc.get("stats", {}).get("tables", []) if t["key"] == key), 0)


def kernel_time_whole(doc: Summary) -> int:
    """Kernel time over the whole run, the denominator of every kernel share: the trace's
    sum, or for a statistics-only run the kernel table's run total (a cut table's rows hold less)."""
    if doc.get("hotspots_source") == "stats":
        return _stats_total(doc, "kernel_stats") or doc["kernels"]["total_ns"]
    return doc["kernels"]["total_ns"]


def communication_share(doc: Summary, facts: Facts) -> Found:
    ktime = kernel_time_whole(doc)
    comm = doc.get("categories", {}).get("communication", 0)
    if not (ktime and 100.0 * comm / ktime > COMMUNICATION_SHARE_PCT):
        return []
    pct = 100.0 * comm / ktime
    return [
        _f(
            FindingCode.COMMUNICATION_SHARE,
            "medium",
            f"Communication kernels take {fmt_pct(pct)} of kernel time",
            {"communication_ns": comm, "kernel_time_ns": ktime, "pct_of_kernel_time": round(pct, 4)},
            "Overlap collectives with compute (separate streams, bucketing), check for stragglers between ranks, or use fewer processes per GPU set.",
            pct,
        )
    ]


def many_tiny_kernels_from_stats(doc: Summary, facts: Facts) -> Found:
    """:func:`many_tiny_kernels` from the kernel statistics, where no kernel was traced."""
    if doc.get("hotspots_source") != "stats":
        return []
    calls, ktime = doc["kernels"]["dispatches"], doc["kernels"]["total_ns"]
    avg = ktime / calls if calls else 0.0
    if not (calls > MANY_LAUNCHES and avg < TINY_KERNEL_NS):
        return []
    return [
        _f(
            FindingCode.MANY_TINY_KERNELS,
            "medium",
            f"{calls} dispatches averaging {avg / 1e3:.1f} µs (kernel statistics): launch cost (~5-20 µs each) dominates",
            {"dispatches": calls, "avg_kernel_ns": round(avg, 2), "source": "stats"},
            "Fuse small kernels (torch.compile, custom fused kernels) or capture them in a HIP graph.",
            0,
        )
    ]


def copy_share_from_stats(doc: Summary, facts: Facts) -> Found:
    """:func:`copy_share` from the statistics, where no copy was traced: copies' share of
    kernels + copies (the statistics have no wall)."""
    if doc.get("copies_source") != "stats":
        return []
    ktime = kernel_time_whole(doc)
    copy_ns = _stats_total(doc, "memory_copy_stats")
    gpu_ns = copy_ns + ktime
    if not (gpu_ns and 100.0 * copy_ns / gpu_ns > COPY_SHARE_PCT):
        return []
    pct = 100.0 * copy_ns / gpu_ns
    return [
        _f(
            FindingCode.COPY_SHARE,
            "high",
            f"Memory copies take {fmt_pct(pct)} of GPU time (kernels + copies, from the statistics)",
            {"copy_time_ns": copy_ns, "kernel_time_ns": ktime, "source": "stats"},
            "Keep data on the GPU between steps; overlap copies with compute on a separate stream using pinned memory.",
            pct,
        )
    ]


def needs_trace(doc: Summary, facts: Facts) -> Found:
    needs = doc.get("stats", {}).get("needs_trace") or []
    if not needs:
        return []
    return [
        _f(
            FindingCode.NEEDS_TRACE,
            "info",
            "Statistics only, no trace: " + ", ".join(needs) + " need a trace",
            {"findings": list(needs)},
            "Record a trace: rocprofv3 --kernel-trace --sys-trace -- <app> (--stats alongside keeps these tables).",
            0,
        )
    ]


# --- steps and memory -----------------------------------------------------------------------------


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def slow_step(doc: Summary, facts: Facts) -> Found:
    """One per outlier step (analysis.steps decides them: slower than the steady median x its factor)."""
    steps = doc.get("steps")
    if not (steps and steps["detected"] and steps["steady"]):
        return []
    median = steps["steady"]["median_wall_ns"]
    out: Found = []
    for o in steps["outliers"]:
        why = "; ".join(o["reasons"]) or "no difference in kernels, copies, sync or gaps: the host side is slower"
        message = (
            f"{o['label']}" + (f" (slowest in {o['process']})" if o.get("process") else "") + f" took {o['wall_ns'] / 1e6:.2f} ms, "
            f"{o['ratio']:.2f}x the steady median ({median / 1e6:.2f} ms); against {o['median_step']}: {why}"
        )
        numbers = {"label": o["label"], "wall_ns": o["wall_ns"], "median_wall_ns": median, "ratio": o["ratio"], "outlier": dict(o)}
        fix = (
            "Look at what this step does that the median step does not (the reasons above): a copy or sync inside the "
            "step (checkpointing, logging .item()), a data-loader stall (a long gap), or a recompilation (extra kernels)."
        )
        out.append(_f(FindingCode.SLOW_STEP, "medium", message, numbers, fix, o["ratio"]))
    return out


def memory_growth(doc: Summary, facts: Facts) -> Found:
    memory = doc.get("memory")
    if not memory:
        return []
    growth, grew = memory["step_growth_bytes"], memory["growing_steps"]
    if not (growth is not None and grew + 1 >= GROWTH_MIN_STEPS and growth >= GROWTH_MIN_BYTES):
        return []
    return [
        _f(
            FindingCode.MEMORY_GROWTH,
            "medium",
            f"GPU memory grows every steady step: +{_mib(growth)} over {grew + 1} steps (a leak?)",
            {"growth_bytes": growth, "steps": grew + 1},
            "Look for tensors kept across steps: losses accumulated with their graph (use loss.item() or .detach()), "
            "lists of outputs, caches that never evict.",
            growth,
        )
    ]


def memory_reserved(doc: Summary, facts: Facts) -> Found:
    memory = doc.get("memory")
    if not memory:
        return []
    alloc, reserved = memory["peak_allocated_bytes"], memory["peak_reserved_bytes"]
    if not (alloc and reserved and reserved > FRAGMENTATION_RATIO * alloc and reserved - alloc >= FRAGMENTATION_MIN_BYTES):
        return []
    return [
        _f(
            FindingCode.MEMORY_RESERVED,
            "low",
            f"Peak reserved {_mib(reserved)} is {reserved / alloc:.1f}x peak allocated {_mib(alloc)}: the caching allocator holds memory it does not use",
            {"peak_allocated_bytes": alloc, "peak_reserved_bytes": reserved},
            "Fragmentation from varying tensor sizes: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, fixed shapes "
            "(pad batches), or torch.cuda.empty_cache() between phases.",
            reserved / alloc,
        )
    ]


# --- ranks -------------------------------------------------------------------------------------------

STRAGGLER_WAIT_PCT = 5.0  # [P] the other ranks' wait in collectives, % of their time
COMM_TIME_PCT = 10.0  # [P] communication kernels' share of rank time worth a look
COMM_OVERLAP_PCT = 50.0  # [P] below this share of communication hidden behind compute


def straggler(doc: Summary, facts: Facts) -> Found:
    """From the ``stragglers`` section (analysis.ranks): the last rank in at least half the collectives."""
    strag = doc.get("stragglers")
    if not (strag and strag["rank"] is not None and strag["others_wait_pct"] > STRAGGLER_WAIT_PCT and 2 * strag["last_in"] >= strag["instances"]):
        return []
    return [
        _f(
            FindingCode.STRAGGLER,
            "high",
            f"rank {strag['rank']} is the straggler: its compute before collectives is {fmt_pct(strag['compute_excess_pct'])} longer; "
            f"the other ranks wait {strag['others_wait_ns'] / 1e6:.3f} ms ({fmt_pct(strag['others_wait_pct'])} of their time) in collectives "
            f"(last at {strag['last_in']} of {strag['instances']} collectives)",
            {k: v for k, v in strag.items() if k != "listed"},
            f"Balance the work of rank {strag['rank']} (input sizes, data loading, a slower or shared GPU, host jitter); "
            "compare its hotspots with another rank's (Enter on the rank in the ranks pane).",
            strag["others_wait_pct"],
        )
    ]


def comm_overlap(doc: Summary, facts: Facts) -> Found:
    """From the ``communication`` section (analysis.ranks)."""
    comm = doc.get("communication")
    if not (comm and comm["kernel_ns"] and comm["pct_of_time"] > COMM_TIME_PCT and comm["overlap_pct"] < COMM_OVERLAP_PCT):
        return []
    return [
        _f(
            FindingCode.COMM_OVERLAP,
            "medium",
            f"communication takes {fmt_pct(comm['pct_of_time'])} of time and overlaps compute only {fmt_pct(comm['overlap_pct'])}",
            {k: v for k, v in comm.items() if k != "by_type"},
            "Overlap collectives with compute: gradient bucketing (DDP bucket_cap_mb), communication on its own stream, "
            "FSDP prefetch; fewer, larger collectives.",
            comm["pct_of_time"],
        )
    ]


# --- warm-up and the GEMM share of the steady state (issue 31) -------------------------------------

WARMUP_MIN_SHARE = 0.10  # [P] a warm-up that costs less than a tenth of a steady step is not worth a line
GEMM_SHARE_PCT = 60.0  # the seed workflow's threshold: GEMM (+ convolution) share of steady-state kernel time
GEMM_FAMILY = ("GEMM", "convolution")


def warmup(doc: Summary, facts: Facts) -> Found:
    """What the warm-up steps cost beyond as many steady steps, and what they did (analysis.warmup)."""
    w = doc.get("warmup")
    if not w or w["cost_ns"] <= WARMUP_MIN_SHARE * w["steady_median_ns"]:
        return []
    parts = []
    if "autotuning" in w["what"]:
        a = w["autotuning"]
        parts.append(f"autotuning ({a['kernels_not_in_steady_state']} kernels never run again, {a['sync_calls']} syncs)")
    if "allocator growth" in w["what"]:
        parts.append(f"allocator growth ({w['allocation']['calls']} device allocations)")
    if "first-call compilation" in w["what"]:
        c = w["compilation"]
        parts.append(f"first-call compilation ({c['module_loads']} module loads, {c['compile_ranges']} compile ranges)")
    what = "; ".join(parts) if parts else "first-call host overhead (no autotuning, allocation or compilation recorded)"
    message = f"Warm-up: the first {w['steps']} steps cost {w['cost_ns'] / 1e6:.1f} ms more than as many steady steps: {what}"
    fix = (
        "Once per process, not a steady-state problem: leave it out of measurements (a profiler schedule with warm-up steps); "
        "for short jobs cache it (autotuning results, compiled kernels) and preallocate memory."
    )
    finding, weight = _f(FindingCode.WARMUP, "low", message, {k: v for k, v in w.items() if k != "process"}, fix, 0)
    finding["saving_ns"] = int(w["cost_ns"])
    return [(finding, weight)]


def gemm_share(doc: Summary, facts: Facts) -> Found:
    """GEMM and convolution below 60% of the steady state's kernel time (the whole run's when
    the steady state is not known)."""
    path = critical_path_of(doc)
    if path is None and doc.get("hotspots_source", "trace") != "trace":
        return []  # statistics only: no steady state to judge
    by_cat = (path or {}).get("kernel_ns_by_category") or doc.get("categories") or {}
    total = sum(by_cat.values())
    if not total:
        return []
    family = sum(by_cat.get(c, 0) for c in GEMM_FAMILY)
    pct = 100.0 * family / total
    if pct >= GEMM_SHARE_PCT:
        return []
    others = sorted(((v, c) for c, v in by_cat.items() if c not in GEMM_FAMILY), reverse=True)[:3]
    rest = ", ".join(f"{c} {fmt_pct(100 * v / total, 0)}" for v, c in others)
    where = "steady-state " if path and path.get("window") == "steady state" else ""
    message = f"GEMM and convolution take {fmt_pct(pct)} of {where}kernel time (< {fmt_pct(GEMM_SHARE_PCT, 0)}): the rest is {rest}"
    fix = torch_first(
        facts.platform,
        f"fuse the kernels around the matrix multiplies with {TORCH_PHRASES['fuse']}",
        "Fuse the elementwise, normalisation and reduction kernels around the matrix multiplies; check that the GEMMs are large enough for the GPU.",
    )
    numbers = {"gemm_family_pct": round(pct, 4), "by_category_ns": dict(by_cat), "threshold_pct": GEMM_SHARE_PCT}
    return [_f(FindingCode.GEMM_SHARE, "low", message, numbers, fix, GEMM_SHARE_PCT - pct)]


# --- the registry ------------------------------------------------------------------------------------

# Every rule with the code it gives, in the order its findings are listed among findings of
# the same severity and weight. A new finding: its FindingCode member, a rule function, a line here.
RULES: tuple[tuple[FindingCode, Rule], ...] = (
    (FindingCode.GPU_IDLE, gpu_idle),
    (FindingCode.IDLE_SYNC, idle_sync),
    (FindingCode.LAUNCH_BOUND, launch_bound),
    (FindingCode.SYNC_AFTER_LAUNCH, sync_after_launch),
    (FindingCode.SYNC_OVERHEAD, sync_overhead),
    (FindingCode.MANY_TINY_KERNELS, many_tiny_kernels),
    (FindingCode.COPY_SHARE, copy_share),
    (FindingCode.SLOW_COPY, slow_copy),
    (FindingCode.DOMINANT_KERNEL, dominant_kernel),
    (FindingCode.LOW_OCCUPANCY, low_occupancy),
    (FindingCode.COUNTER, counter),
    (FindingCode.COUNTERS_SERIALISE, counters_serialise),
    (FindingCode.KNOWN_ERROR, known_error),
    (FindingCode.NO_COUNTERS, no_counters),
    (FindingCode.COMMUNICATION_SHARE, communication_share),
    (FindingCode.MANY_TINY_KERNELS, many_tiny_kernels_from_stats),
    (FindingCode.COPY_SHARE, copy_share_from_stats),
    (FindingCode.NEEDS_TRACE, needs_trace),
    (FindingCode.SLOW_STEP, slow_step),
    (FindingCode.MEMORY_GROWTH, memory_growth),
    (FindingCode.MEMORY_RESERVED, memory_reserved),
    (FindingCode.STRAGGLER, straggler),
    (FindingCode.COMM_OVERLAP, comm_overlap),
    (FindingCode.WARMUP, warmup),
    (FindingCode.GEMM_SHARE, gemm_share),
)


def build_findings(doc: Summary) -> list[Finding]:
    """Findings from a summary document's analysis sections, most severe and largest first
    (ties in :data:`RULES` order)."""
    facts = Facts.of(doc)
    out: Found = []
    for _, rule in RULES:
        out.extend(rule(doc, facts))
    out.sort(key=lambda fw: (SEVERITY_RANK[fw[0]["severity"]], -fw[1]))
    return [f for f, _ in out]
