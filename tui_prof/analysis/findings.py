"""Ranked findings: severity, code, message, the numbers behind it and the fix.

Rules and thresholds (sources in docs/metrics.md; [P] = ours):

======================  ==========================================================  =========
code                    trigger                                                     severity
======================  ==========================================================  =========
gpu-idle                GPU idle > 20 % of its span (rocinsight)                    high
idle-sync               listed gaps caused by synchronisation > 5 % of span [P]     high
sync-overhead           exposed sync > 5 % of wall (profiling guide's target)       medium
sync-after-launch       >= 50 % of >= 10 launches followed by a sync [P]            high
many-tiny-kernels       > 1000 directly launched dispatches (graph replays apart)   medium
                        averaging < 10 µs (rocinsight)
launch-bound            listed gaps caused by host launch > 10 % of span [P]        medium
copy-share              copy engine time > 20 % of wall (rocinsight)                high
slow-copy               pageable host copies >= 1 MiB [P]; else H2D/D2H bandwidth   medium
                        < 10 GB/s on copies >= 1 MiB (rocinsight)
dominant-kernel         one kernel > 50 % of kernel time (rocinsight)               low
low-occupancy           a top-5 kernel's theoretical occupancy < 25 % [P]           medium
communication-share     communication kernels > 20 % of kernel time [P]             medium
straggler               one rank arrives last at most collectives and the others    high
                        wait > 5 % of their time in them [P]
comm-overlap            communication > 10 % of rank time [P] and overlapping       medium
                        compute < 50 % of it [P] (HTA's comm/comp overlap)
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
======================  ==========================================================  =========

Fixes name the run's platform's tools and calls (:mod:`tui_prof.analysis.platform`): CUDA
graphs, cudaStreamSynchronize, ncu/nsys on NVIDIA; HIP graphs, hipDeviceSynchronize,
rocprofv3 on AMD; vendor-neutral words when the platform is unknown or mixed; on a
PyTorch trace the PyTorch-level fix first.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from tui_prof.analysis.hostapi import MANY_LAUNCHES, TINY_KERNEL_NS
from tui_prof.analysis.memory import FRAGMENTATION_MIN_BYTES, FRAGMENTATION_RATIO, GROWTH_MIN_BYTES, GROWTH_MIN_STEPS
from tui_prof.analysis.names import DEFAULT_CATEGORY_RULES
from tui_prof.analysis.parts import Finding, Summary
from tui_prof.analysis.platform import TORCH_PHRASES, collective_phrases, phrases, torch_first


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


def _dominant_kernel(top: Any, vendor: str) -> tuple[Finding, float]:
    """One kernel over half of kernel time: optimise it (counters, occupancy); a collective
    (the category rules' communication: ncclDevKernel_*, rccl_main_kernel, ...) waits on the
    interconnect, so its advice is communication: overlap, bucketing, topology."""
    message = f"One kernel takes {top['percent']:.1f} % of kernel time: {top['name'][:80]}"
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


def build_findings(doc: Summary) -> list[Finding]:
    """Findings from a summary document's analysis sections, most severe and largest first."""
    out: list[tuple[Finding, float]] = []
    gpu, gaps, sync, launch, copies = doc["gpu"], doc["gaps"], doc["sync"], doc["launch"], doc["copies"]
    platform = doc.get("platform")
    say = phrases(platform["vendor"] if platform else "unknown")
    wall = doc.get("wall_ns") or 0
    span = gpu.get("agent_span_ns", gpu.get("span_ns")) or 0  # the whole of idle and gaps: Σ (process, GPU) spans
    if span and gpu["idle_pct"] > 20:
        out.append(
            _f(
                FindingCode.GPU_IDLE,
                "high",
                f"GPU idle {gpu['idle_pct']:.1f} % of its active span",
                {"idle_pct": gpu["idle_pct"], "span_ns": span, "gaps_by_cause_ns": gaps["by_cause"]},
                torch_first(
                    platform,
                    f"{TORCH_PHRASES['sync']}; {TORCH_PHRASES['graphs']}",
                    f"See the gap list: each gap names the host call before it. Remove syncs, batch launches ({say['graphs']}), overlap copies.",
                ),
                gpu["idle_pct"],
            )
        )
    idle_rules = (
        (
            "sync",
            FindingCode.IDLE_SYNC,
            "high",
            0.05,
            "idle waiting after synchronisation calls",
            torch_first(
                platform, TORCH_PHRASES["sync"], f"Synchronise less often: keep work queued on the stream, use events/{say['wait_event']} for dependencies."
            ),
        ),
        (
            "launch",
            FindingCode.LAUNCH_BOUND,
            "medium",
            0.10,
            "idle waiting for the host to launch",
            torch_first(
                platform,
                TORCH_PHRASES["graphs"],
                f"The host cannot issue work fast enough: capture the loop in {say['graphs']}, fuse kernels, move host work off the critical path.",
            ),
        ),
    )
    for cause, code, severity, share, what, fix in idle_rules if span else ():
        ns = gaps["by_cause"].get(cause, 0)
        if ns > share * span:
            out.append(
                _f(
                    code,
                    severity,
                    f"{100 * ns / span:.1f} % of the GPU span is {what}",
                    {"ns": ns, "gaps": gaps["count_by_cause"].get(cause, 0)},
                    fix,
                    100 * ns / span,
                )
            )
    sal = sync.get("sync_after_launch", {})
    if sal.get("detected"):
        out.append(
            _f(
                FindingCode.SYNC_AFTER_LAUNCH,
                "high",
                f"{sal['followed_by_sync']} of {sal['launches']} launches are followed directly by a synchronisation (sync inside the loop)",
                dict(sal),
                torch_first(
                    platform,
                    TORCH_PHRASES["sync"],
                    f"Move {say['sync_calls']} out of the loop: synchronise once after it; use events for timing and {say['wait_event']} for cross-stream dependencies.",
                ),
                100 * sal["ratio"],
            )
        )
    exposed_pct = sync.get("exposed_pct_of_wall", 0.0)
    if wall and exposed_pct > 5:
        out.append(
            _f(
                FindingCode.SYNC_OVERHEAD,
                "medium",
                f"Exposed synchronisation (host blocked while the GPU has nothing left to run) takes {exposed_pct:.1f} % of wall time "
                f"(target < 5 %); all sync calls and blocking copies: {sync['pct_of_wall']:.1f} %",
                {
                    "calls": sync["calls"],
                    "total_ns": sync["total_ns"],
                    "pct_of_wall": sync["pct_of_wall"],
                    "exposed_ns": sync.get("exposed_ns", 0),
                    "waiting_ns": sync.get("waiting_ns", 0),
                    "exposed_pct_of_wall": exposed_pct,
                },
                torch_first(
                    platform,
                    f"{TORCH_PHRASES['pinned_copy']}; {TORCH_PHRASES['sync']}",
                    f"Use async copies ({say['async_copy']} with pinned memory) and fewer sync points.",
                ),
                exposed_pct,
            )
        )
    if launch.get("many_tiny_kernels"):
        direct = launch.get("direct_kernels", doc["kernels"]["dispatches"])
        avg = launch.get("direct_avg_kernel_ns", launch["avg_kernel_ns"])
        graphs = launch.get("graph_launch_calls") or 0
        replayed = (
            f" (graph replays apart: {launch['graph_dispatches']} dispatches from {graphs} graph launches, {launch['launches_per_graph']:g} per graph)"
            if graphs
            else ""
        )
        out.append(
            _f(
                FindingCode.MANY_TINY_KERNELS,
                "medium",
                f"{direct} directly launched dispatches averaging {(avg or 0.0) / 1e3:.1f} µs: launch cost (~5-20 µs each) dominates{replayed}",
                {
                    "dispatches": doc["kernels"]["dispatches"],
                    "direct_kernels": direct,
                    "avg_kernel_ns": avg,
                    "median_queue_delay_ns": launch["median_queue_delay_ns"],
                    "tiny_kernels": launch.get("direct_tiny_kernels", launch["tiny_kernels"]),
                    "graph_launch_calls": graphs,
                    "launches_per_graph": launch.get("launches_per_graph"),
                },
                torch_first(
                    platform,
                    f"{TORCH_PHRASES['graphs']}; fuse with {TORCH_PHRASES['fuse']}",
                    f"Fuse small kernels (custom fused kernels) or capture them in {say['graphs']}.",
                ),
                100 * launch["tiny_kernel_time_ns"] / wall if wall else 0,
            )
        )
    if wall and copies["pct_of_wall"] > 20:
        out.append(
            _f(
                FindingCode.COPY_SHARE,
                "high",
                f"Memory copies take {copies['pct_of_wall']:.1f} % of wall time",
                {"bytes": copies["bytes"], "time_ns": copies["time_ns"]},
                torch_first(
                    platform,
                    TORCH_PHRASES["pinned_copy"],
                    f"Keep data on the GPU between steps; overlap copies with compute on a separate stream using pinned memory ({say['pinned_alloc']}).",
                ),
                copies["pct_of_wall"],
            )
        )
    pin_fix = torch_first(platform, TORCH_PHRASES["pinned_copy"], f"Use pinned host memory ({say['pinned_alloc']}) and larger transfers.")
    kinds = copies.get("by_kind") or {}
    pageable = kinds["pageable"]["by_direction"] if "pageable" in kinds else {}
    pinned = kinds["pinned"]["by_direction"] if "pinned" in kinds else {}
    for direction, kd in pageable.items():
        if kd["bytes"] >= (1 << 20) and kd["bandwidth_gbs"] is not None:
            than = pinned[direction]["bandwidth_gbs"] if direction in pinned else None
            vs = f" (pinned {direction} copies here: {than:.2f} GB/s)" if than else ""
            out.append(
                _f(
                    FindingCode.SLOW_COPY,
                    "medium",
                    f"{kd['count']} {direction} copies from pageable host memory reach {kd['bandwidth_gbs']:.2f} GB/s{vs}",
                    {"direction": direction, "kind": "pageable", **kd},
                    pin_fix,
                    0,
                )
            )
    for direction, d in copies.get("by_direction", {}).items():
        if direction in pageable:
            continue  # said above, with the memory kind
        if direction in ("HtoD", "DtoH") and d["bytes"] >= (1 << 20) and d["bandwidth_gbs"] is not None and d["bandwidth_gbs"] < 10:
            out.append(
                _f(FindingCode.SLOW_COPY, "medium", f"{direction} copies reach only {d['bandwidth_gbs']:.2f} GB/s", {"direction": direction, **d}, pin_fix, 0)
            )
    hot = doc.get("hotspots") or []
    if hot and hot[0]["percent"] > 50:
        out.append(_dominant_kernel(hot[0], platform["vendor"] if platform else "unknown"))
    for occ in (doc.get("occupancy") or [])[:5]:
        if occ["occupancy_pct"] < 25:
            out.append(
                _f(
                    FindingCode.LOW_OCCUPANCY,
                    "medium",
                    f"{occ['name'][:60]}: theoretical occupancy {occ['occupancy_pct']:.1f} % ({occ['limiter']}-limited)",
                    {k: occ[k] for k in ("name", "waves_per_simd", "max_waves_per_simd", "limiter", "vgpr", "agpr", "lds_bytes", "workgroup_size")},
                    occ["hint"],
                    25 - occ["occupancy_pct"],
                )
            )
    for block in doc.get("counters") or []:
        for k in block.get("kernels", [])[:20]:
            for key, m in k["metrics"].items():
                if m["flagged"]:
                    out.append(
                        _f(
                            f"{FindingCode.COUNTER.value}:{key}",
                            "medium",
                            f"{k['name'][:60]}: {m['label']} = {m['value']:.4g} {m['unit']} ({m['threshold']})",
                            {"name": k["name"], "value": m["value"], "formula": m["formula"], "source": m["source"]},
                            m["meaning"],
                            0,
                        )
                    )
        if block.get("kernels"):
            out.append(
                _f(
                    FindingCode.COUNTERS_SERIALISE,
                    "info",
                    "This run collected hardware counters: dispatches were serialised",
                    {"process": block.get("process")},
                    "Use a separate trace-only run for idle/overlap/launch analysis.",
                    0,
                )
            )
    for hit in doc.get("logs") or []:
        out.append(_f(FindingCode.KNOWN_ERROR, "high", f"{hit['path']}:{hit['line']}: {hit['text'][:120]}", {"code": hit["code"]}, hit["meaning"], 0))
    no_counters = [b for b in (doc.get("counters") or []) if not b.get("kernels") and b.get("commands")]
    if no_counters and doc["kernels"]["dispatches"]:
        b = no_counters[0]
        nvidia = bool(platform and platform["vendor"] == "nvidia")
        how = "collect them with Nsight Compute / Nsight Systems (tuiprof does not read their reports)" if nvidia else "collect them with"
        out.append(
            _f(
                FindingCode.NO_COUNTERS,
                "info",
                f"No hardware counters in this run ({b.get('arch') or 'unknown arch'}): {how}",
                {"commands": b["commands"]},
                "\n".join(b["commands"]),
                0,
            )
        )
    out.extend(stats_findings(doc))
    out.extend(step_findings(doc))
    out.extend(rank_findings(doc))
    out.sort(key=lambda fw: (SEVERITY_RANK[fw[0]["severity"]], -fw[1]))
    return [f for f, _ in out]


COMMUNICATION_SHARE_PCT = 20.0  # [P] communication kernels' share of kernel time worth a look


def stats_findings(doc: Summary) -> list[tuple[Finding, float]]:
    """Findings that a statistics file supports, for runs whose kernels or copies come from
    the profiler's statistics (``hotspots_source``/``copies_source`` "stats"), the
    communication share for every run, and which findings need a trace."""
    out: list[tuple[Finding, float]] = []
    kernels = doc["kernels"]
    ktime = kernels["total_ns"]
    comm = doc.get("categories", {}).get("communication", 0)
    if ktime and 100.0 * comm / ktime > COMMUNICATION_SHARE_PCT:
        pct = 100.0 * comm / ktime
        out.append(
            _f(
                FindingCode.COMMUNICATION_SHARE,
                "medium",
                f"Communication kernels take {pct:.1f} % of kernel time",
                {"communication_ns": comm, "kernel_time_ns": ktime, "pct_of_kernel_time": round(pct, 4)},
                "Overlap collectives with compute (separate streams, bucketing), check for stragglers between ranks, or use fewer processes per GPU set.",
                pct,
            )
        )
    if doc.get("hotspots_source") == "stats":
        calls = kernels["dispatches"]
        avg = ktime / calls if calls else 0.0
        if calls > MANY_LAUNCHES and avg < TINY_KERNEL_NS:
            out.append(
                _f(
                    FindingCode.MANY_TINY_KERNELS,
                    "medium",
                    f"{calls} dispatches averaging {avg / 1e3:.1f} µs (kernel statistics): launch cost (~5-20 µs each) dominates",
                    {"dispatches": calls, "avg_kernel_ns": round(avg, 2), "source": "stats"},
                    "Fuse small kernels (torch.compile, custom fused kernels) or capture them in a HIP graph.",
                    0,
                )
            )
    if doc.get("copies_source") == "stats":
        copy_ns = next((t["total_ns"] for t in doc.get("stats", {}).get("tables", []) if t["key"] == "memory_copy_stats"), 0)
        gpu_ns = copy_ns + ktime
        if gpu_ns and 100.0 * copy_ns / gpu_ns > 20:
            pct = 100.0 * copy_ns / gpu_ns
            out.append(
                _f(
                    FindingCode.COPY_SHARE,
                    "high",
                    f"Memory copies take {pct:.1f} % of GPU time (kernels + copies, from the statistics)",
                    {"copy_time_ns": copy_ns, "kernel_time_ns": ktime, "source": "stats"},
                    "Keep data on the GPU between steps; overlap copies with compute on a separate stream using pinned memory.",
                    pct,
                )
            )
    needs = doc.get("stats", {}).get("needs_trace") or []
    if needs:
        out.append(
            _f(
                FindingCode.NEEDS_TRACE,
                "info",
                "Statistics only, no trace: " + ", ".join(needs) + " need a trace",
                {"findings": list(needs)},
                "Record a trace: rocprofv3 --kernel-trace --sys-trace -- <app> (--stats alongside keeps these tables).",
                0,
            )
        )
    return out


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


def step_findings(doc: Summary) -> list[tuple[Finding, float]]:
    """slow-step (one per outlier step), memory-growth and memory-reserved."""
    out: list[tuple[Finding, float]] = []
    steps = doc.get("steps")
    if steps and steps["detected"] and steps["steady"]:
        median = steps["steady"]["median_wall_ns"]
        for o in steps["outliers"]:
            why = "; ".join(o["reasons"]) or "no difference in kernels, copies, sync or gaps: the host side is slower"
            out.append(
                _f(
                    FindingCode.SLOW_STEP,
                    "medium",
                    f"{o['label']}" + (f" (slowest in {o['process']})" if o.get("process") else "") + f" took {o['wall_ns'] / 1e6:.2f} ms, "
                    f"{o['ratio']:.2f}x the steady median "
                    f"({median / 1e6:.2f} ms); against {o['median_step']}: {why}",
                    {"label": o["label"], "wall_ns": o["wall_ns"], "median_wall_ns": median, "ratio": o["ratio"], "outlier": dict(o)},
                    "Look at what this step does that the median step does not (the reasons above): a copy or sync inside the "
                    "step (checkpointing, logging .item()), a data-loader stall (a long gap), or a recompilation (extra kernels).",
                    o["ratio"],
                )
            )
    memory = doc.get("memory")
    if memory:
        growth, grew = memory["step_growth_bytes"], memory["growing_steps"]
        if growth is not None and grew + 1 >= GROWTH_MIN_STEPS and growth >= GROWTH_MIN_BYTES:
            out.append(
                _f(
                    FindingCode.MEMORY_GROWTH,
                    "medium",
                    f"GPU memory grows every steady step: +{_mib(growth)} over {grew + 1} steps (a leak?)",
                    {"growth_bytes": growth, "steps": grew + 1},
                    "Look for tensors kept across steps: losses accumulated with their graph (use loss.item() or .detach()), "
                    "lists of outputs, caches that never evict.",
                    growth,
                )
            )
        alloc, reserved = memory["peak_allocated_bytes"], memory["peak_reserved_bytes"]
        if alloc and reserved and reserved > FRAGMENTATION_RATIO * alloc and reserved - alloc >= FRAGMENTATION_MIN_BYTES:
            out.append(
                _f(
                    FindingCode.MEMORY_RESERVED,
                    "low",
                    f"Peak reserved {_mib(reserved)} is {reserved / alloc:.1f}x peak allocated {_mib(alloc)}: the caching allocator holds memory it does not use",
                    {"peak_allocated_bytes": alloc, "peak_reserved_bytes": reserved},
                    "Fragmentation from varying tensor sizes: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, fixed shapes "
                    "(pad batches), or torch.cuda.empty_cache() between phases.",
                    reserved / alloc,
                )
            )
    return out


STRAGGLER_WAIT_PCT = 5.0  # [P] the other ranks' wait in collectives, % of their time
COMM_TIME_PCT = 10.0  # [P] communication kernels' share of rank time worth a look
COMM_OVERLAP_PCT = 50.0  # [P] below this share of communication hidden behind compute


def rank_findings(doc: Summary) -> list[tuple[Finding, float]]:
    """The straggler and the communication/compute overlap, from the ``stragglers`` and
    ``communication`` sections (analysis.ranks)."""
    out: list[tuple[Finding, float]] = []
    strag = doc.get("stragglers")
    if strag and strag["rank"] is not None and strag["others_wait_pct"] > STRAGGLER_WAIT_PCT and 2 * strag["last_in"] >= strag["instances"]:
        out.append(
            _f(
                FindingCode.STRAGGLER,
                "high",
                f"rank {strag['rank']} is the straggler: its compute before collectives is {strag['compute_excess_pct']:.1f} % longer; "
                f"the other ranks wait {strag['others_wait_ns'] / 1e6:.3f} ms ({strag['others_wait_pct']:.1f} % of their time) in collectives "
                f"(last at {strag['last_in']} of {strag['instances']} collectives)",
                {k: v for k, v in strag.items() if k != "listed"},
                f"Balance the work of rank {strag['rank']} (input sizes, data loading, a slower or shared GPU, host jitter); "
                "compare its hotspots with another rank's (Enter on the rank in the ranks pane).",
                strag["others_wait_pct"],
            )
        )
    comm = doc.get("communication")
    if comm and comm["kernel_ns"] and comm["pct_of_time"] > COMM_TIME_PCT and comm["overlap_pct"] < COMM_OVERLAP_PCT:
        out.append(
            _f(
                FindingCode.COMM_OVERLAP,
                "medium",
                f"communication takes {comm['pct_of_time']:.1f} % of time and overlaps compute only {comm['overlap_pct']:.1f} %",
                {k: v for k, v in comm.items() if k != "by_type"},
                "Overlap collectives with compute: gradient bucketing (DDP bucket_cap_mb), communication on its own stream, "
                "FSDP prefetch; fewer, larger collectives.",
                comm["pct_of_time"],
            )
        )
    return out
