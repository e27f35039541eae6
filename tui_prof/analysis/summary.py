"""The ``tuiprof.summary/1`` document: the stable JSON contract behind ``tuiprof summary``.

Later analyses add keys; existing keys keep their meaning and units (ns, bytes, %).
"""

from __future__ import annotations

from dataclasses import asdict

from tui_prof import __version__
from tui_prof.analysis.hotspots import all_kernels, duration_order, hotspot_records, hotspots, kernel_time_ns
from tui_prof.model import Agent, RunSet

SCHEMA = "tuiprof.summary/1"


def agent_record(agent: Agent, process: str) -> dict:
    record = {k: v for k, v in asdict(agent).items() if k != "extra"}
    record["arch"] = agent.arch or None
    record["process"] = process
    return record


def build_summary(runset: RunSet, top: int | None = 20, *, gap_threshold_ns: int | None = None, rules=None,
                  max_gaps: int | None = 200, logs: bool = True, progress=None, details: dict | None = None) -> dict:
    """Everything ``tuiprof summary`` reports, as plain JSON-ready data.

    ``gap_threshold_ns``: idle gaps at least this long are listed and classified (default
    10 µs); ``rules``: :class:`~tui_prof.analysis.names.CategoryRules`; ``max_gaps``: gaps
    listed in the document (longest first; None = all); ``logs``: scan the run directory's
    log files for known profiler errors (read-only); ``progress(stage, done, total)`` is
    called once per analysed process; ``details``: see :func:`engine.add_analysis`
    (the full gap sets and launch links, for the TUI).
    """
    from tui_prof.analysis.engine import add_analysis, run_label

    kernels = all_kernels(runset)
    order = duration_order(kernels)
    table = hotspots(kernels, dur_order=order)
    processes = []
    agents = []
    warnings: list[str] = []
    for run in runset.runs:
        label = run_label(run)
        processes.append(
            {
                "label": label,
                "hostname": run.meta.hostname or None,
                "pid": run.meta.pid,
                "rank": run.meta.rank,
                "formats": list(run.meta.formats),
                "tool": run.meta.tool or None,
                "tool_version": run.meta.tool_version or None,
                "command": run.meta.command or None,
                "files": len(run.meta.files),
                "partial": run.partial,
                "dispatches": int(len(run.kernels)),
                "api_calls": int(len(run.api)),
                "copies": int(len(run.copies)),
                "counter_values": int(len(run.counters)),
            }
        )
        agents.extend(agent_record(agent, label) for agent in run.agents)
        warnings.extend(f"{label}: {w}" for w in run.warnings)
    warnings.extend(str(issue) for issue in runset.errors)
    doc = {
        "schema": SCHEMA,
        "tuiprof_version": __version__,
        "source": {
            "path": runset.root,
            "formats": runset.formats,
            "errors": [{"path": i.path, "message": i.message} for i in runset.errors],
            "skipped": [{"path": i.path, "message": i.message} for i in runset.skipped],
        },
        "processes": processes,
        "agents": agents,
        "kernels": {
            "dispatches": int(len(kernels)),
            "unique_names": int(len(table)),
            "total_ns": kernel_time_ns(kernels),
        },
        "hotspots": hotspot_records(table, top),
        "warnings": warnings,
    }
    add_analysis(doc, runset, kernels, dur_order=order, top=top, gap_threshold_ns=gap_threshold_ns, rules=rules, max_gaps=max_gaps, logs=logs,
                 progress=progress, details=details)
    return doc
