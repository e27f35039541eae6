"""The summary's sections about what was profiled: the source, the processes, their
agents (with each GPU's capabilities), the load warnings and the profiler's log errors."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import fields
from pathlib import Path

from tui_prof.analysis.capability import SERIALISATION_WARNING, capabilities, log_files, nvidia_arch, nvidia_capabilities, scan_logs
from tui_prof.analysis.runinput import RunInput
from tui_prof.analysis.sections import LogHit, ProcessRecord, Record, SourceSection
from tui_prof.model import Agent, LoadIssue, Run, RunSet


def source_section(runset: RunSet) -> SourceSection:
    return source_section_of(runset.root, runset.formats, runset.issues)


def source_section_of(root: str, formats: list[str], issues: Iterable[LoadIssue]) -> SourceSection:
    """:func:`source_section` of a run at ``root`` whose processes' formats are ``formats``
    (first seen first) and whose load said ``issues`` (errors and skipped files, in load order)."""
    issues = list(issues)
    return {
        "path": root,
        "formats": formats,
        "errors": [{"path": i.path, "message": i.message} for i in issues if i.severity == "error"],
        "skipped": [{"path": i.path, "message": i.message} for i in issues if i.severity != "error"],
    }


def process_records(inputs: Sequence[RunInput]) -> list[ProcessRecord]:
    out: list[ProcessRecord] = []
    for r in inputs:
        run = r.run
        out.append(
            {
                "label": r.label,
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
    return out


_AGENT_FIELDS = [f for f in fields(Agent) if f.name != "extra"]


def agent_record(agent: Agent, process: str) -> Record:
    # the fields hold numbers, strings and None: read directly (asdict deep-copies ``extra`` too)
    record = {f.name: getattr(agent, f.name) for f in _AGENT_FIELDS}
    record["arch"] = agent.arch or None
    record["process"] = process
    return record


def agent_records(inputs: Sequence[RunInput], vendor: str = "unknown") -> list[Record]:
    """Every agent of every process; a GPU's record ends with its ``capabilities`` (for
    the tool version of the first process with that label; on NVIDIA what the trace
    says about the device, :func:`~tui_prof.analysis.capability.nvidia_capabilities`)."""
    first_of: dict[str, Run] = {}
    for r in inputs:
        first_of.setdefault(r.label, r.run)
    out = []
    for r in inputs:
        for agent in r.run.agents:
            record = agent_record(agent, r.label)
            if record.get("type") == "GPU" and (agent.vendor.upper().startswith("NVIDIA") or vendor == "nvidia"):
                record["capabilities"] = nvidia_capabilities(agent)
                record["arch"] = nvidia_arch(agent) or record["arch"]  # CUDA's name (sm_90), as the capabilities say
            elif record.get("type") == "GPU":
                record["capabilities"] = capabilities(record.get("arch") or "", first_of[r.label].meta.tool_version)
            out.append(record)
    return out


def warnings_section(runset: RunSet, inputs: Sequence[RunInput]) -> list[str]:
    """Each process's load warnings, the files that failed, and the counter-serialisation warning."""
    return warnings_of([(r.label, r.run.warnings) for r in inputs], runset.errors, any(len(run.counters) for run in runset.runs))


def warnings_of(per_process: Iterable[tuple[str, Sequence[str]]], errors: Iterable[LoadIssue], counters: bool) -> list[str]:
    """:func:`warnings_section` from each process's (label, load warnings) in run order, the
    load's errors and whether any process holds counter values."""
    warnings = [f"{label}: {w}" for label, mine in per_process for w in mine]
    warnings.extend(str(issue) for issue in errors)
    if counters:
        warnings.append(SERIALISATION_WARNING)
    return warnings


def _logs_dir(root: str) -> Path | None:
    """The folder whose log files the ``logs`` section scans: the run's, or its file's."""
    path = Path(root)
    if not root or not path.exists():
        return None
    return path if path.is_dir() else path.parent


def logs_section(runset: RunSet) -> list[LogHit]:
    """Known profiler errors in the log files of the run's directory (read-only)."""
    where = _logs_dir(runset.root)
    return [] if where is None else scan_logs(where)


def log_paths(root: str) -> list[Path]:
    """The log files :func:`logs_section` reads for a run at ``root`` (a cache key part)."""
    where = _logs_dir(root)
    return [] if where is None else log_files(where)
