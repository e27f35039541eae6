"""The ``tuiprof summary`` report as plain text and Markdown (no rich: fast to import,
pipe-safe). Every string from the trace goes through :mod:`tui_prof.render.safe`: text
cells and lines with :func:`safe_text`, Markdown cells with :func:`md_text` and names
with :func:`md_code`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tui_prof.render.fmt import fmt_bytes, fmt_ids, fmt_ns, fmt_pct, shorten, sparkline
from tui_prof.render.integrity import trust_mark
from tui_prof.render.safe import md_code, md_fence, md_text, safe_text
from tui_prof.render.whatif import GROUP_TITLES as CRITICAL_GROUPS
from tui_prof.render.whatif import stream_wait_notes


class Code(str):
    """A table cell that is a name: plain in text, a code span in Markdown."""


Section = tuple[str, list[str], list[list[str]], list[str]]  # (title, headers, rows, notes)


def lines_text(lines: list[str]) -> str:
    """Lines joined for the terminal, each one sanitised (idempotent on safe lines)."""
    return "\n".join(safe_text(line) for line in lines)


def table(headers: list[str], rows: list[list[str]], align: str | None = None) -> list[str]:
    """Fixed-width text table; ``align`` is one 'l'/'r' per column (default: first left)."""
    align = align or "l" + "r" * (len(headers) - 1)
    rows = [[safe_text(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cells, widths, align)).rstrip()

    return [line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]


def summary_text(summary: Mapping[str, Any], name_width: int = 48) -> str:
    """The ``tuiprof summary`` report as text."""
    out: list[str] = []
    source = summary["source"]
    out.append(f"Run: {source['path']}")
    out.append(f"Formats: {', '.join(source['formats']) or 'none recognised'}")
    for proc in summary["processes"]:
        tool = " ".join(x for x in (proc["tool"], proc["tool_version"]) if x)
        out.append(
            f"Process {proc['label']}: {proc['dispatches']} dispatches, {proc['api_calls']} API calls, "
            f"{proc['copies']} copies" + (f" [{tool}]" if tool else "") + (" (partial)" if proc["partial"] else "")
        )
    groups = gpu_groups(summary["agents"])
    if groups:
        out.append("GPUs: " + "; ".join(gpu_group_label(group) for group in groups))
    kernels = summary["kernels"]
    out.append(
        f"Kernels: {kernels['dispatches']} dispatches of {kernels['unique_names']} kernels, "
        f"{fmt_ns(kernels['total_ns'])} kernel time" + source_note(summary, "hotspots_source")
    )
    if summary["hotspots"]:
        out.append("")
        out.append("Top kernels" + source_note(summary, "hotspots_source") + trust_mark(summary.get("trust"), "hotspots"))
        rows = [
            [
                shorten(h["name"], name_width),
                str(h["calls"]),
                fmt_ns(h["total_ns"]),
                fmt_ns(h["avg_ns"]),
                fmt_ns(h["min_ns"]),
                fmt_ns(h["max_ns"]),
                fmt_ns(h["stddev_ns"]),
                f"{h['percent']:.2f}",
            ]
            for h in summary["hotspots"]
        ]
        out.extend(table(["kernel", "calls", "total", "avg", "min", "max", "stddev", "%"], rows))
    out.extend(trust_lines(summary))
    if "gpu" in summary:
        out.extend(analysis_lines(summary))
    if summary["warnings"]:
        out.append("")
        out.append("Warnings")
        out.extend(f"  {w}" for w in summary["warnings"])
    if source["skipped"]:
        out.append(f"Skipped {len(source['skipped'])} file(s) that are not profiler output (--verbose lists them).")
    return lines_text(out)


def source_note(summary: Mapping[str, Any], key: str) -> str:
    """`` (from rocprofv3 --stats; no trace in this run)`` when the table ``key`` names
    comes from the profiler's statistics files, else nothing."""
    if summary.get(key) != "stats":
        return ""
    return f" ({summary.get('stats', {}).get('source') or 'from the profiler statistics'})"


def shows_trace(summary: Mapping[str, Any]) -> bool:
    """False for a statistics-only run (the trace sections have nothing to show)."""
    return not summary.get("stats", {}).get("needs_trace")


def stats_sections(summary: Mapping[str, Any], name_width: int) -> list[Section]:
    """The API table and the statistics tables that no trace section shows."""
    out: list[Section] = []
    api = summary.get("api") or {}
    if api.get("rows"):
        rows = [
            [r["domain"], Code(shorten(r["name"], name_width)), str(r["calls"]), fmt_ns(r["total_ns"]), fmt_ns(r["avg_ns"]), f"{r['percent']:.2f}"]
            for r in api["rows"]
        ]
        out.append(
            (
                "API calls" + source_note({**summary, "api_source": api["source"]}, "api_source"),
                ["domain", "API", "calls", "total", "avg", "% of domain"],
                rows,
                [],
            )
        )
    # kernel and API statistics are shown above (hotspots, API calls); copy statistics only without a copy trace
    shown = {"kernel_stats", "hip_api_stats", "hsa_api_stats", "marker_api_stats", "rccl_api_stats", "rocdecode_api_stats", "rocjpeg_api_stats"} | (
        {"memory_copy_stats"} if summary.get("copies_source") == "trace" else set()
    )
    for t in (summary.get("stats") or {}).get("tables", []):
        if t["key"] in shown:
            continue
        rows = [[Code(shorten(r["name"], name_width)), str(r["calls"]), fmt_ns(r["total_ns"]), fmt_ns(r["avg_ns"]), f"{r['percent']:.2f}"] for r in t["rows"]]
        out.append((f"{t['domain']} (from {t['source']})", ["name", "calls", "total", "avg", "%"], rows, []))
    return out


def _findings_section(summary: Mapping[str, Any]) -> list[Section]:
    if not summary["findings"]:
        return []
    rows = [[f["severity"], f["code"], _saving(f), f["message"], f["fix"].replace("\n", " / ")] for f in summary["findings"]]
    return [("Findings", ["severity", "code", "saving", "finding", "fix"], rows, [])]


def _critical_path_section(summary: Mapping[str, Any], name_width: int) -> list[Section]:
    """The critical path of each process (analysis.critical): what fills it, largest first."""
    out: list[Section] = []
    for p in (summary.get("critical_path") or {}).get("processes", []):
        total = p["total_ns"]
        if not total:
            continue
        rows = [[CRITICAL_GROUPS.get(t["group"], t["group"]), Code(shorten(t["name"], name_width)), fmt_ns(t["ns"]), f"{t['pct']:.1f}"] for t in p["top"][:8]]
        groups = ", ".join(f"{CRITICAL_GROUPS.get(k, k)} {fmt_pct(100 * v / total)}" for k, v in sorted(p["groups"].items(), key=lambda kv: -kv[1]) if v)
        sampled = f"; the first {fmt_ns(p['sampled_ns'])} of it analysed" if p["sampled_ns"] < p["window_ns"] else ""
        notes = [f"{fmt_ns(total)} over the {p['window']} ({fmt_ns(p['window_ns'])}{sampled}): {groups}"]
        notes.extend(stream_wait_notes(p.get("links") or {}, p))
        waited = p.get("waiting_on_ranks") or []
        if waited:
            notes.append("in collectives, waiting for " + ", ".join(f"rank {w['rank']} {fmt_ns(w['ns'])} ({w['instances']} instances)" for w in waited))
        out.append((f"Critical path ({p['process']})", ["group", "what", "time", "%"], rows, notes))
    return out


def _saving(finding: Mapping[str, Any]) -> str:
    """A finding's projected saving (what-if engine), with its share of the steady window."""
    if "saving_ns" not in finding:
        return "-"
    pct = finding["numbers"].get("saving_pct")
    return fmt_ns(finding["saving_ns"]) + (f" ({fmt_pct(pct)})" if pct is not None else "")


def _stats_only_sections(summary: Mapping[str, Any], name_width: int) -> list[Section]:
    """A run without a trace: its findings, its statistics tables, and what a trace would add."""
    no_trace = "No trace in this run: idle, gaps, synchronisation and launch overhead need one. Record it with rocprofv3 --kernel-trace --sys-trace -- <app>."
    return _stats_measurement_section(summary) + _findings_section(summary) + stats_sections(summary, name_width) + [("Timeline", [], [], [no_trace])]


def _stats_measurement_section(summary: Mapping[str, Any]) -> list[Section]:
    """The measurement rows a run without a trace supports (from its kernel statistics)."""
    m = summary["measurement"]
    if not m["kernel_count"]:
        return []
    rows = [
        ["kernel dispatches", str(m["kernel_count"])],
        ["kernel time", fmt_ns(m["kernel_time_ns"])],
        ["GEMM share of kernel time", fmt_pct(m["gemm_pct_of_kernel_time"], 2)],
    ]
    note = f"{summary['stats']['source']}: span, idle, sync, launch and copy shares need a trace"
    return [("Measurements", ["metric", "value"], rows, [note])]


def _measurement_section(summary: Mapping[str, Any]) -> list[Section]:
    m = summary["measurement"]
    rows = [
        ["end-to-end span", fmt_ns(m["span_ns"])],
        ["GPU active span", fmt_ns(m["gpu_span_ns"])],
        ["kernel dispatches", str(m["kernel_count"])],
        ["kernel time", fmt_ns(m["kernel_time_ns"])],
        ["GEMM share of kernel time", fmt_pct(m["gemm_pct_of_kernel_time"], 2)],
        ["sync calls, raw (share of wall)", fmt_pct(m["sync_pct_of_wall"], 2)],
        ["exposed sync (target < 5%)", fmt_pct(m.get("exposed_sync_pct_of_wall"), 2)],
        ["launch API time", fmt_pct(m["launch_api_pct_of_wall"], 2)],
        ["median queue delay", fmt_ns(m["median_queue_delay_ns"])],
        ["GPU idle", fmt_pct(m["idle_pct"], 2)],
        ["copies (share of wall)", fmt_pct(m["copy_pct_of_wall"], 2)],
        ["peak memory", fmt_bytes(m["peak_memory_bytes"])],
    ]
    requested = (summary.get("memory") or {}).get("requested") or []
    if requested and m["peak_memory_bytes"] is None:  # the last memory source: a sum of requests, not a peak
        rows.append(["memory requested by API calls (frees not matched)", fmt_bytes(sum(r["requested_bytes"] for r in requested))])
    if m.get("processes", 1) > 1:  # the wholes of the figures summed over processes (docs/metrics.md, Aggregation)
        sync = summary["sync"]
        rows[2:2] = [
            [f"process time (Σ of {m['processes']} processes' spans)", fmt_ns(m["process_time_ns"])],
            ["GPU time (Σ of per-GPU spans)", fmt_ns(summary["gpu"].get("agent_span_ns"))],
        ]
        rows.append(["sync per process, mean / max", f"{fmt_pct(sync.get('mean_pct_of_wall'), 2)} / {fmt_pct(sync.get('max_pct_of_wall'), 2)}"])
    return [("Measurements", ["metric", "value"], rows, [])]


def _gpu_section(summary: Mapping[str, Any]) -> list[Section]:
    rows = [
        [
            a["process"],
            str(a["agent"]),
            fmt_ns(a["span_ns"]),
            fmt_ns(a["busy_ns"]),
            fmt_pct(a["busy_pct"], 2),
            fmt_pct(a["idle_pct"], 2),
            str(a["dispatches"]),
            str(a["copies"]),
        ]
        for a in summary["gpu"]["agents"]
    ]
    headers = ["process", "agent", "span", "busy", "busy %", "idle %", "dispatches", "copies"]
    return [("GPU busy / idle (union of kernels and copies over all queues)", headers, rows, [])]


def _gaps_section(summary: Mapping[str, Any], max_gaps: int) -> list[Section]:
    gaps = summary["gaps"]
    notes = [
        f"{gaps['count']} gaps >= {fmt_ns(gaps['threshold_ns'])} (threshold, --gap-threshold); "
        f"{gaps['below_threshold_count']} shorter gaps total {fmt_ns(gaps['below_threshold_ns'])}.",
        "By cause: " + ", ".join(f"{c} {fmt_ns(v)} ({gaps['count_by_cause'][c]})" for c, v in gaps["by_cause"].items() if gaps["count_by_cause"][c]),
    ]
    listed = sorted(gaps["listed"], key=lambda g: -g["duration_ns"])[:max_gaps]
    rows = [
        [
            str(g["agent"]),
            fmt_ns(g["start_ns"] - gpu_first(summary, g)),
            fmt_ns(g["duration_ns"]),
            "host op" if g.get("host_op") else g["cause"],
            f"{shorten(g['host_op'], 48)} (then {g['api_cause']})" if g.get("host_op") else g["api_cause"] or "-",
            g["api_before"] or "-",
            Code(shorten(g["next"], 40)),
        ]
        for g in listed
    ]
    return [(f"Idle gaps (longest {len(rows)})", ["agent", "at (from GPU start)", "duration", "cause", "caused by", "API before", "next work"], rows, notes)]


def _sync_section(summary: Mapping[str, Any]) -> list[Section]:
    s = summary["sync"]
    sal = s["sync_after_launch"]
    rows = [[Code(name), str(v["calls"]), fmt_ns(v["total_ns"])] for name, v in s["by_name"].items()]
    notes = [
        f"{s['calls']} calls, {fmt_ns(s['total_ns'])} = {fmt_pct(s['pct_of_wall'], 2)} of wall; "
        f"{sal['followed_by_sync']} of {sal['launches']} launches directly followed by a sync"
        + (" -> sync inside the loop detected" if sal["detected"] else "")
    ]
    if "exposed_ns" in s:
        notes.append(
            f"exposed {fmt_ns(s['exposed_ns'])} = {fmt_pct(s['exposed_pct_of_wall'], 2)} of wall (host blocked while the GPU "
            f"has nothing left to run); waiting for work {fmt_ns(s['waiting_ns'])} (the GPU still runs queued work)"
        )
    return [("Synchronisation", ["API", "calls", "time"], rows, notes)]


def _launch_section(summary: Mapping[str, Any]) -> list[Section]:
    lc = summary["launch"]
    rows = [
        ["launch calls", str(lc["launch_calls"])],
        ["graph launches", str(lc["graph_launch_calls"])],
        ["launch API time (kernel + graph launches)", f"{fmt_ns(lc['api_total_ns'])} ({fmt_pct(lc['api_pct_of_wall'], 2)} of wall)"],
    ]
    if lc["graph_launch_calls"]:
        rows += [
            ["  of which graph launches", fmt_ns(lc.get("graph_launch_api_ns"))],
            ["dispatches replayed from graphs", f"{lc['graph_dispatches']} ({lc.get('launches_per_graph') or 0:g} per graph launch)"],
        ]
    rows += [
        ["dispatches linked by correlation id", str(lc["linked_dispatches"])],
        ["median launch API time", fmt_ns(lc["median_api_ns"])],
        ["median queue delay (kernel start - API start)", fmt_ns(lc["median_queue_delay_ns"])],
        ["median kernel time", fmt_ns(lc["median_kernel_ns"])],
        [f"kernels < {fmt_ns(lc['tiny_kernel_threshold_ns'])}", str(lc["tiny_kernels"])],
    ]
    return [("Launch overhead", ["metric", "value"], rows, [])]


def _copy_cells(v: Mapping[str, Any]) -> list[str]:
    """count, bytes, time and bandwidth of one direction's copies."""
    return [
        str(v["count"]),
        ("size not recorded" if v.get("size_unknown") == v["count"] else fmt_bytes(v["bytes"])),
        fmt_ns(v["time_ns"]),
        "-" if v["bandwidth_gbs"] is None else f"{v['bandwidth_gbs']:.2f} GB/s",
    ]


def _copies_sections(summary: Mapping[str, Any]) -> list[Section]:
    c = summary["copies"]
    if not c["count"]:
        return []
    rows = [[d, *_copy_cells(v)] for d, v in c["by_direction"].items()]
    out: list[Section] = [("Copies", ["direction", "count", "bytes", "time", "bandwidth"], rows, [f"{fmt_pct(c['pct_of_wall'], 2)} of wall"])]
    rows = [
        [kind, d, *_copy_cells(v), "-" if v.get("first_bandwidth_gbs") is None else f"{v['first_bandwidth_gbs']:.2f} GB/s"]
        for kind, k in c.get("by_kind", {}).items()
        for d, v in k["by_direction"].items()
    ]
    if rows:
        headers = ["kind", "direction", "count", "bytes", "time", "bandwidth", "first copy"]
        out.append(("Copies by memory kind", headers, rows, ["pinned/pageable/managed: the host memory kind the profiler recorded; host: not recorded"]))
    return out


def _kernel_group_sections(summary: Mapping[str, Any], name_width: int) -> list[Section]:
    """Kernel time by category, by launching operator (with its detail), by normalised name."""
    rows = [
        [Code(h["name"]), str(h["calls"]), fmt_ns(h["total_ns"]), f"{h['percent']:.2f}", f"{h.get('pct_wall', 0):.2f}"]
        for h in summary["hotspots_by"]["category"]
    ]
    out: list[Section] = [("Kernel time by category", ["category", "calls", "total", "% kernel", "% wall"], rows, [f"rules: {summary['category_rules']}"])]
    operators = summary.get("hotspots_by_operator") or []
    if operators:
        rows = [[Code(shorten(o["name"], name_width)), str(o["kernels"]), fmt_ns(o["total_ns"]), f"{o['percent']:.2f}"] for o in operators[:15]]
        note = "the cpu_op each kernel's External id names (else the innermost cpu_op around its launch call); graph: replayed from a CUDA/HIP graph"
        out.append(("Kernel time by launching operator", ["operator", "kernels", "total", "% kernel"], rows, [note]))
    out.extend(operator_detail_sections(summary, name_width))
    rows = [
        [
            Code(shorten(h["name"], name_width)),
            str(h["calls"]),
            fmt_ns(h["total_ns"]),
            fmt_ns(h["median_ns"]),
            f"{h['percent']:.2f}",
            f"{h.get('pct_wall', 0):.2f}",
        ]
        for h in summary["hotspots_by"]["normalized"][:15]
    ]
    out.append(("Kernels by normalised name", ["kernel", "calls", "total", "median", "% kernel", "% wall"], rows, []))
    return out


def _occupancy_section(summary: Mapping[str, Any], name_width: int) -> list[Section]:
    if not summary["occupancy"]:
        return []
    rows = [
        [
            Code(shorten(o["name"], name_width)),
            o["arch"],
            f"{o['waves_per_simd']:g}/{o['max_waves_per_simd']}",
            fmt_pct(o["occupancy_pct"]),
            o["limiter"],
            o["hint"],
        ]
        for o in summary["occupancy"][:10]
    ]
    return [("Theoretical occupancy", ["kernel", "arch", "waves/SIMD", "occupancy", "limiter", "what would lift it"], rows, [])]


def _counter_rows(k: Mapping[str, Any]) -> list[list[str]]:
    """One kernel's derived metrics and its point on the HBM roofline (rocprof-compute data)."""
    name = Code(shorten(k["name"], 40))
    rows = [
        [name, m["label"], f"{m['value']:.4g} {m['unit']}", m["threshold"], ("! " + m["meaning"]) if m["flagged"] else "ok", m["source"]]
        for m in k["metrics"].values()
    ]
    roof = k.get("roofline")
    if roof:
        rows.append(
            [
                name,
                "roofline (HBM)",
                f"{roof['ai']:.3g} FLOP/B, {roof['gflops']:.4g} GFLOP/s",
                f"ridge {roof['ridge']:.3g} FLOP/B",
                roof["hint"],
                roof["source"],
            ]
        )
    return rows


def _counters_sections(summary: Mapping[str, Any]) -> list[Section]:
    out: list[Section] = []
    for block in summary["counters"]:
        rows = [row for k in block["kernels"][:10] for row in _counter_rows(k)]
        notes = []
        if block["missing"]:
            notes.append("Missing for: " + ", ".join(block["missing"]) + ". Collect with:")
            notes.extend("  " + cmd for cmd in block["commands"])
        if rows or notes:
            headers = ["kernel", "metric", "value", "threshold", "verdict", "source"]
            out.append((f"Counters ({block['process']}, {block.get('arch') or '?'})", headers, rows, notes))
    return out


def _capability_sections(summary: Mapping[str, Any]) -> list[Section]:
    out: list[Section] = []
    for group in gpu_groups(summary["agents"]):
        caps = group[0].get("capabilities")
        if caps:
            rows = [[k, str(caps[k])] for k in ("counters", "pc_sampling", "thread_trace", "rocprof_compute", "roofline")]
            ids = [a["id"] for a in group]
            agents = f"agents {fmt_ids(ids)} {caps['arch'] or '?'} ×{len(ids)}" if len(ids) > 1 else f"agent {ids[0]} {caps['arch'] or '?'}"
            instead = [f"Cannot measure {i['cannot']}. Instead: {i['instead']}." for i in caps.get("instead", [])]
            out.append((f"Profiling capability: {agents}", ["feature", "support"], rows, caps["notes"] + instead))
    return out


def _logs_section(summary: Mapping[str, Any]) -> list[Section]:
    if not summary.get("logs"):
        return []
    rows = [[f"{h['path']}:{h['line']}", h["code"], h["meaning"]] for h in summary["logs"]]
    return [("Known errors in log files", ["where", "code", "meaning"], rows, [])]


# Report section title (its start) -> the summary key whose trust label marks it (issue 32).
TITLE_SECTIONS = (
    ("Measurements", "measurement"),
    ("GPU busy", "gpu"),
    ("Idle gaps", "gaps"),
    ("Synchronisation", "sync"),
    ("Launch overhead", "launch"),
    ("Copies", "copies"),
    ("Kernel time by launching operator", "hotspots_by_operator"),
    ("Kernel time by module", "hotspots_by_module"),
    ("Kernels by normalised name", "hotspots_by"),
    ("Theoretical occupancy", "occupancy"),
    ("Counters", "counters"),
    ("Steps", "steps"),
    ("Communication", "communication"),
    ("Collectives", "stragglers"),
    ("Ranks", "ranks"),
    ("GPU memory", "memory"),
)


def _marked(summary: Mapping[str, Any], sections: list[Section]) -> list[Section]:
    """Each section whose figures are degraded or unreliable with the mark in its title."""
    trust = summary.get("trust")
    if not trust:
        return sections
    out = []
    for title, headers, rows, notes in sections:
        key = next((k for prefix, k in TITLE_SECTIONS if title.startswith(prefix)), None)
        out.append((title + trust_mark(trust, key) if key else title, headers, rows, notes))
    return out


def trust_lines(summary: Mapping[str, Any]) -> list[str]:
    """The sections that are not ``ok``, each with its first reason (nothing when all are)."""
    trust = summary.get("trust") or {}
    bad = [(k, v) for k, v in trust.items() if v["trust"] != "ok"]
    if not bad:
        return []
    by_reason: dict[str, list[str]] = {}
    for key, label in bad:
        for reason in label["reasons"] or [label["trust"]]:
            by_reason.setdefault(reason, []).append(key)
    out = ["", "Trust (tuiprof check lists the evidence)"]
    for reason, keys in sorted(by_reason.items(), key=lambda item: not item[0].startswith("unreliable")):
        out.append(f"  {safe_text(reason)}")
        out.append(f"    sections: {', '.join(keys)}")
    return out


def _sections(summary: Mapping[str, Any], name_width: int = 60, max_gaps: int = 20) -> list[Section]:
    """Report sections as (title, headers, rows, notes), in report order; rendered as text or Markdown."""
    if "gpu" not in summary:
        return []
    if not shows_trace(summary):
        return _marked(summary, _stats_only_sections(summary, name_width))
    return _marked(summary, _all_sections(summary, name_width, max_gaps))


def _all_sections(summary: Mapping[str, Any], name_width: int, max_gaps: int) -> list[Section]:
    return [
        *_measurement_section(summary),
        *_findings_section(summary),
        *_critical_path_section(summary, name_width),
        *steps_sections(summary, name_width),
        *rank_sections(summary, name_width),
        *_gpu_section(summary),
        *_gaps_section(summary, max_gaps),
        *_sync_section(summary),
        *_launch_section(summary),
        *_copies_sections(summary),
        *_kernel_group_sections(summary, name_width),
        *stats_sections(summary, name_width),
        *_occupancy_section(summary, name_width),
        *_counters_sections(summary),
        *_capability_sections(summary),
        *_logs_section(summary),
    ]


def gpu_groups(agents: list[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The GPU agent records, identical ones (same process, arch, product and capabilities)
    as one group, in first-seen order: eight MI300X of one process are one group."""
    groups: dict[tuple, list[Mapping[str, Any]]] = {}
    for a in agents:
        if a.get("type") == "GPU":
            key = (a.get("process"), a.get("arch") or "", a.get("product") or "", repr(a.get("capabilities")))
            groups.setdefault(key, []).append(a)
    return list(groups.values())


def gpu_group_label(group: list[Mapping[str, Any]]) -> str:
    """ "2–9: gfx942 AMD Instinct MI300X ×8" (one agent: "0: gfx90a AMD Instinct MI210")."""
    a = group[0]
    name = (a.get("arch") or "?") + (f" {a['product']}" if a.get("product") and a["product"] != a.get("arch") else "")
    ids = [g["id"] for g in group]
    return f"{fmt_ids(ids)}: {name}" + (f" ×{len(ids)}" if len(ids) > 1 else "")


def steps_sections(summary: Mapping[str, Any], name_width: int = 48) -> list[Section]:
    """The step table, its distribution and steady state, and peak memory per device."""
    out: list[Section] = []
    st = summary.get("steps")
    if st and st["detected"]:
        rows = [
            [
                ("w " if r["warmup"] else "  ") + r["label"],
                fmt_ns(r["wall_ns"]),
                fmt_ns(r["gpu_ns"]),
                str(r["kernels"]),
                fmt_pct(r["busy_pct"], 2),
                fmt_ns(r["idle_ns"]),
                fmt_ns(r["exposed_sync_ns"]),
                str(r["copies"]),
                fmt_bytes(r["memory_peak_bytes"]),
                Code(shorten(r["top_kernel"] or "-", 40)),
            ]
            for r in st["steps"]
        ]
        d, sd, ss = st["distribution"], st["steady_distribution"], st["steady"]
        notes = [st["how"] + (f"; from process {st['process']}" if st["process"] else "")]
        walls = [r["wall_ns"] for r in st["steps"]]
        notes.append(
            f"step time {sparkline(walls, 60)}  min {fmt_ns(d['min_ns'])}, median {fmt_ns(d['median_ns'])}, mean {fmt_ns(d['mean_ns'])}, "
            f"p90 {fmt_ns(d['p90_ns'])}, p99 {fmt_ns(d['p99_ns'])}, max {fmt_ns(d['max_ns'])}"
        )
        warm = f"{st['warmup_steps']} warm-up step(s) ({'--warmup' if st['warmup_source'] == 'given' else 'detected'}, marked w)"
        if ss and sd:
            notes.append(
                f"{warm}; steady state, {ss['steps']} steps: median {fmt_ns(ss['median_wall_ns'])} (interquartile spread {fmt_pct(ss['spread_pct'])}), "
                f"min {fmt_ns(sd['min_ns'])}, p90 {fmt_ns(sd['p90_ns'])}, max {fmt_ns(sd['max_ns'])}; {ss['median_kernels']:g} kernels/step; "
                f"GPU busy {fmt_pct(ss['busy_pct'], 2)}, idle {fmt_pct(ss['idle_pct'], 2)}, exposed sync {fmt_pct(ss['exposed_sync_pct_of_wall'], 2)} of the steady steps' wall"
            )
        else:
            notes.append(warm)
        for o in st["outliers"]:
            notes.append(
                f"slow: {o['label']} {fmt_ns(o['wall_ns'])} = {o['ratio']:.2f}x median"
                + (f" (in {o['process']})" if o.get("process") else "")
                + f"; vs {o['median_step']}: "
                + ("; ".join(o["reasons"]) or "no difference found")
            )
        headers = ["step", "wall", "GPU", "kernels", "busy", "idle", "exposed sync", "copies", "memory peak", "top kernel"]
        if st.get("combined"):  # several processes: each row is the slowest process's step
            headers.insert(1, "slowest process")
            for row, r in zip(rows, st["steps"], strict=True):
                row.insert(1, r.get("process") or "-")
            notes.insert(1, "wall: the longest of the processes' step k; the other columns are that process's (per process: the next table)")
        out.append((f"Steps ({len(rows)})", headers, rows, notes))
        out.extend(steps_per_process_sections(st))
    mem = summary.get("memory")
    if mem and mem["devices"]:
        rows = [
            [d["process"], str(d["agent"]), d["source"], str(d["events"]), fmt_bytes(d["peak_allocated_bytes"]), fmt_bytes(d["peak_reserved_bytes"])]
            for d in mem["devices"]
        ]
        notes = []
        if mem["step_growth_bytes"] is not None:
            notes.append(f"grows every steady step: +{fmt_bytes(mem['step_growth_bytes'])}")
        if any(d["source"] == "API call sizes" for d in mem["devices"]):
            notes.append("API call sizes: the size arguments of allocation calls, frees matched by pointer; agent -1: the trace does not say which GPU")
        out.append(("GPU memory", ["process", "agent", "source", "events", "peak allocated", "peak reserved"], rows, notes))
    out.extend(memory_request_sections(summary))
    return out


def memory_request_sections(summary: Mapping[str, Any]) -> list[Section]:
    """Bytes requested by allocation calls, for the processes without any memory level."""
    requested = (summary.get("memory") or {}).get("requested") or []
    if not requested:
        return []
    rows = [
        [
            r["process"],
            str(r["calls"]),
            fmt_bytes(r["requested_bytes"]),
            fmt_bytes(r["largest_bytes"]),
            str(r["frees"]),
            ", ".join(f"{name} x{n}" for name, n in r["functions"].items()),
        ]
        for r in requested
    ]
    notes = [
        "The size arguments of allocation calls (no allocator totals, no allocation trace in these processes). "
        "Their frees cannot be matched to them (the trace does not record the allocations' pointers): "
        "the sum of what was requested, not a peak of allocated memory."
    ]
    return [("GPU memory requested by API calls", ["process", "calls", "requested", "largest", "frees (not matched)", "functions"], rows, notes)]


def gpu_first(summary: Mapping[str, Any], gap: dict) -> int:
    for a in summary["gpu"]["agents"]:
        if a["agent"] == gap["agent"] and a["process"] == gap["process"]:
            return a["first_ns"] or 0
    return 0


def analysis_lines(summary: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for title, headers, rows, notes in _sections(summary):
        out.append("")
        out.append(title)
        if rows:
            out.extend(table(headers, [[shorten(c, 100) for c in r] for r in rows], "l" * len(headers)))
        out.extend(notes)
    return out


def md_cell(cell: str) -> str:
    """One Markdown table cell: a :class:`Code` cell as a code span, any other escaped."""
    return md_code(cell, in_table=True) if isinstance(cell, Code) else md_text(cell, line_start=False)


def markdown_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table; every cell through :func:`md_cell`."""
    return ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"] + ["| " + " | ".join(md_cell(c) for c in r) + " |" for r in rows]


def summary_markdown(summary: Mapping[str, Any]) -> str:
    """The ``tuiprof summary --md`` report: Markdown a user can paste into a ticket."""
    src = summary["source"]
    out = [f"# tuiprof report: {md_code(src['path'])}", ""]
    out.append(f"Formats: {md_text(', '.join(src['formats']) or 'none recognised')}  ")
    for proc in summary["processes"]:
        out.append(f"Process {md_code(proc['label'])}: {proc['dispatches']} dispatches, {proc['api_calls']} API calls, {proc['copies']} copies  ")
    k = summary["kernels"]
    out.append(
        f"Kernels: {k['dispatches']} dispatches of {k['unique_names']} kernels, {fmt_ns(k['total_ns'])} kernel time"
        + md_text(source_note(summary, "hotspots_source"), line_start=False)
    )
    trust = trust_lines(summary)
    if trust:
        out += ["", f"## {md_text(trust[1], line_start=False)}", ""] + [md_text(line.strip()) + "  " for line in trust[2:]]
    for title, headers, rows, notes in _sections(summary, name_width=80):
        out += ["", f"## {md_text(title, line_start=False)}", ""]
        if rows:
            out.extend(markdown_table(headers, rows))
        if notes:
            out.append("")
            code = [n for n in notes if n.startswith("  rocprofv3")]
            for n in notes:
                if n not in code:
                    out.append(md_text(n) + "  ")
            if code:
                out += ["", *md_fence([c.strip() for c in code], "sh")]
    if summary["hotspots"]:
        out += [
            "",
            "## Top kernels" + md_text(source_note(summary, "hotspots_source") + trust_mark(summary.get("trust"), "hotspots"), line_start=False),
            "",
            "| kernel | calls | total | avg | median | % |",
            "|---|---|---|---|---|---|",
        ]
        out.extend(
            f"| {md_code(shorten(h['name'], 100), in_table=True)} | {h['calls']} | {fmt_ns(h['total_ns'])} | {fmt_ns(h['avg_ns'])} | "
            f"{fmt_ns(h['median_ns'])} | {h['percent']:.2f} |"
            for h in summary["hotspots"]
        )
    if summary["warnings"]:
        out += ["", "## Warnings", ""] + [f"- {md_text(w)}" for w in summary["warnings"]]
    return "\n".join(out) + "\n"


def operator_detail_sections(summary: Mapping[str, Any], name_width: int) -> list[Section]:
    """Kernel time by module path and the recorded input shapes of the top operators (both
    only where the trace records them)."""
    out: list[Section] = []
    modules = summary.get("hotspots_by_module") or []
    if modules:
        rows = [[Code(module_tail(o["name"], name_width)), str(o["kernels"]), fmt_ns(o["total_ns"]), f"{o['percent']:.2f}"] for o in modules[:15]]
        out.append(("Kernel time by module", ["module path", "kernels", "total", "% kernel"], rows, ["nn.Module scopes around the launching operator"]))
    rows = []
    for o in (summary.get("hotspots_by_operator") or [])[:10]:
        for shape in o.get("shapes", []):
            rows.append([Code(shorten(o["name"], 32)), Code(shorten(shape["input_dims"], name_width)), str(shape["kernels"]), fmt_ns(shape["total_ns"])])
    if rows:
        out.append(("Operator input shapes", ["operator", "input dims", "kernels", "total"], rows, ["record_shapes: the cpu_op's Input Dims, by GPU time"]))
    out.extend(flops_sections(summary, name_width))
    return out


def flops_sections(summary: Mapping[str, Any], name_width: int) -> list[tuple[str, list[str], list[list[str]], list[str]]]:
    """FLOPs, bytes and achieved rates per operator from its recorded shapes (an estimate),
    where the trace records shapes."""
    rows = []
    for o in (summary.get("hotspots_by_operator") or [])[:15]:
        if "flops" not in o or "achieved_tflops" not in o:
            continue
        roof = o.get("roofline_estimate") or {}
        pct = o.get("pct_of_peak_flops")
        bw = o.get("pct_of_peak_bw")
        rows.append(
            [
                Code(shorten(o["name"], name_width)),
                f"{o['costed_calls']}/{o['calls']}",
                f"{o['flops'] / 1e9:,.1f}",
                fmt_bytes(o["bytes"]),
                "-" if not o["flops"] else f"{o['achieved_tflops']:.3g}" + (f" ({fmt_pct(pct, sig=3)} {o['flops_dtype']})" if pct is not None else ""),
                f"{o['achieved_gbs']:,.0f}" + (f" ({fmt_pct(bw, sig=3)})" if bw is not None else ""),
                roof.get("bound", "-"),
            ]
        )
    if not rows:
        return []
    peak = next((o["peak_source"] for o in summary.get("hotspots_by_operator") or [] if o.get("peak_source")), "unknown for this GPU")
    notes = ["estimate from recorded shapes (docs/metrics.md), over the calls with shapes and a formula; peaks: " + peak]
    return [("Operator FLOPs from shapes (estimate)", ["operator", "calls", "GFLOP", "bytes", "TFLOP/s (% peak)", "GB/s (% peak)", "bound"], rows, notes)]


def module_tail(path: str, width: int) -> str:
    """A module path in ``width`` characters keeping its innermost modules (the end tells
    rows apart: ``…/BertLayer_0/BertAttention_0/Linear_0``), cut at a "/" where one fits."""
    if len(path) <= width:
        return path
    tail = path[len(path) - (width - 1) :]
    cut = tail.find("/")
    return "…" + (tail[cut:] if 0 <= cut < len(tail) - 1 else tail)


RANK_HEADERS = ["rank", "host", "GPU", "span", "compute", "comm", "copy", "idle %", "sync", "wait", "top kernel"]


def rank_row(r: Mapping[str, Any], name_width: int = 40) -> list[str]:
    """One row of the rank table (``RANK_HEADERS``) from a ``ranks[]`` record."""
    return [
        str(r["rank"]),
        r["host"] or "-",
        r["gpus"] or "-",
        fmt_ns(r["span_ns"]),
        fmt_ns(r["compute_ns"]),
        fmt_ns(r["communication_ns"]),
        fmt_ns(r["copy_ns"]),
        fmt_pct(r["idle_pct"], 2),
        fmt_ns(r["sync_ns"]),
        fmt_ns(r["wait_ns"]),
        Code(shorten(r["top_kernel"], name_width)) if r["top_kernel"] else "-",
    ]


RANK_SOURCES = {
    "distributedInfo": "distributedInfo",
    "environment": "each process's environment (RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK, PMIX_RANK)",
    "order": "host, pid order (no rank recorded)",
}

COMMUNICATION_HEADERS = ["collective", "kernels", "total", "avg", "bytes", "ranks", "algbw", "busbw", "busbw median"]


def _gbs(x) -> str:
    return "-" if x is None else f"{x:.2f} GB/s"


def communication_row(c: Mapping[str, Any]) -> list[str]:
    """One row of the communication table (``COMMUNICATION_HEADERS``) from a ``communication.by_type[]``
    record: "-" where the trace records no message size (never 0 GB/s)."""
    sized = c.get("sized", 0)
    size = fmt_bytes(c.get("bytes"))
    if sized and sized < c["count"]:
        size += f" ({sized} of {c['count']})"
    group = c.get("group_size")
    return [
        c["type"],
        str(c["count"]),
        fmt_ns(c["total_ns"]),
        fmt_ns(c["avg_ns"]),
        size,
        "-" if group is None else str(group),
        _gbs(c.get("algorithm_bandwidth_gbs")),
        _gbs(c.get("bus_bandwidth_gbs")),
        _gbs(c.get("bus_bandwidth_median_gbs")),
    ]


def communication_sections(summary: Mapping[str, Any]) -> list[Section]:
    """Communication by collective type: count, time, message bytes and bandwidths (docs/metrics.md)."""
    comm = summary.get("communication")
    if not comm or not comm["by_type"]:
        return []
    rows = [communication_row(c) for c in comm["by_type"]]
    notes = [
        f"communication {fmt_ns(comm['kernel_ns'])} = {fmt_pct(comm['pct_of_time'], 2)} of rank time; "
        f"overlaps compute {fmt_ns(comm['overlap_ns'])} = {fmt_pct(comm['overlap_pct'], 2)} of it; "
        f"RCCL/NCCL API {comm['api_calls']} calls, {fmt_ns(comm['api_ns'])}",
        "bytes: message sizes the trace records (Kineto collective args); algbw = bytes / kernel time, busbw = algbw × "
        "NCCL-tests' factor (AllReduce 2(n-1)/n; AllGather, ReduceScatter, AllToAll (n-1)/n; Broadcast, Reduce, SendRecv 1), "
        "time-weighted over every rank's kernels; median: over the instances, each at the time of the rank that arrived last "
        "(the transfer, no waiting); - where no size is recorded",
    ]
    return [("Communication by collective type", COMMUNICATION_HEADERS, rows, notes)]


def rank_sections(summary: Mapping[str, Any], name_width: int = 48) -> list[Section]:
    """The rank table, communication by collective type and the straggler, for runs of
    more than one process (docs/metrics.md, Ranks)."""
    ranks = summary.get("ranks") or []
    if len(ranks) < 2:  # one process: its collectives, when it has any
        return communication_sections(summary)
    sources = {r["rank_source"] for r in ranks}
    source = RANK_SOURCES.get(sources.pop(), "") if len(sources) == 1 else ""
    note = f"rank from {source or RANK_SOURCES['order']}; times are unions on each rank's GPUs"
    if any(r.get("source") == "stats" for r in ranks):
        note += "; ranks without a trace: sums from their kernel statistics (no idle, sync or wait)"
    out = [("Ranks", RANK_HEADERS, [rank_row(r, min(name_width, 40)) for r in ranks], [note])]
    out.extend(communication_sections(summary))
    strag = summary.get("stragglers")
    if strag and strag["listed"]:
        rows = [
            [
                i["type"],
                str(i["index"]),
                "-" if i["straggler"] is None else str(i["straggler"]),
                fmt_ns(i["fastest_ns"]),
                fmt_ns(i["slowest_ns"]),
                fmt_ns(i["wait_ns"]),
            ]
            for i in strag["listed"][:20]
        ]
        notes = []
        if strag["rank"] is not None:
            notes.append(
                f"straggler: rank {strag['rank']} (last at {strag['last_in']} of {strag['instances']} collectives, "
                f"compute before collectives {fmt_pct(strag['compute_excess_pct'], signed=True)} vs the others' median); "
                f"the others wait {fmt_ns(strag['others_wait_ns'])} = {fmt_pct(strag['others_wait_pct'], 2)} of their time"
            )
        out.append(("Collectives with the longest waits", ["collective", "k", "last rank", "fastest", "slowest", "wait (all ranks)"], rows, notes))
    return out


def steps_per_process_sections(st: Mapping[str, Any]) -> list[Section]:
    """The steps of each process where several have steps: its own distribution and steady state."""
    per = st.get("per_process") or []
    if not per:
        return []
    slowest: dict[str, int] = {}
    for r in st["steps"]:
        slowest[r.get("process") or ""] = slowest.get(r.get("process") or "", 0) + 1
    rows = []
    for p in per:
        d, ss = p["distribution"], p["steady"]
        rows.append(
            [
                p["process"] or "-",
                str(len(p["steps"])),
                str(p["warmup_steps"]),
                fmt_ns(ss["median_wall_ns"]) if ss else "-",
                fmt_pct(ss["spread_pct"]) if ss else "-",
                fmt_ns(d["p90_ns"]) if d else "-",
                fmt_ns(d["max_ns"]) if d else "-",
                f"{ss['median_kernels']:g}" if ss else "-",
                fmt_pct(ss["busy_pct"], 2) if ss else "-",
                str(p["outlier_steps"]),
                str(slowest.get(p["process"] or "", 0)),
            ]
        )
    headers = ["process", "steps", "warm-up", "steady median", "spread", "p90", "max", "kernels/step", "busy", "outliers", "slowest in"]
    notes = ["each process's own steps (its own warm-up and steady median); slowest in: the whole-run steps whose time is this process's"]
    return [(f"Steps per process ({len(per)})", headers, rows, notes)]
