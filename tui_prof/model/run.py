"""Run, RunSet and the small records that describe them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from tui_prof.model.schema import TABLES, column_array, concat_tables, shared_empty


@dataclass
class Agent:
    """One CPU or GPU agent (device) of a run.

    ``id`` is the value stored in the ``agent`` columns of this run's tables. For
    rocprofv3 it is the KFD topology node id (absolute index); loaders map other
    spellings ("Agent 4" relative index, JSON handles) onto it. Sizes are in bytes,
    clocks in MHz; None means the format does not record it.
    """

    id: int
    type: str = "GPU"  # "GPU" or "CPU"
    name: str = ""  # gfx target for GPUs ("gfx942"), CPU model for CPUs
    product: str = ""  # "AMD Instinct MI300X", "NVIDIA H100 80GB HBM3"
    vendor: str = ""
    node_id: int | None = None  # KFD node id (absolute index)
    logical_index: int | None = None  # rocprofv3 relative index ("Agent N" in 7.x CSV)
    type_index: int | None = None  # "GPU N"
    gfx_target_version: int | None = None  # 90402 for gfx942
    cu_count: int | None = None  # compute units (NVIDIA: SMs)
    simd_per_cu: int | None = None
    simd_count: int | None = None
    wave_size: int | None = None
    max_waves_per_simd: int | None = None
    max_waves_per_cu: int | None = None
    lds_bytes_per_cu: int | None = None
    num_xcc: int | None = None
    max_clock_mhz: int | None = None
    memory_bytes: int | None = None
    workgroup_max_size: int | None = None
    extra: dict = field(default_factory=dict)  # everything else the format records

    @property
    def arch(self) -> str:
        """The gfx target ("gfx942") when known, else the name."""
        if self.name.startswith("gfx"):
            return self.name
        if self.gfx_target_version:
            v = self.gfx_target_version
            major, minor, step = v // 10000, (v // 100) % 100, v % 100
            return f"gfx{major}{minor:x}{step:x}"
        return self.name


@dataclass
class RunMeta:
    """Where a run came from: the tool that wrote it and the profiled process."""

    formats: list[str] = field(default_factory=list)  # e.g. ["rocprofv3-csv"]
    tool: str = ""  # rocprofv3, rocprof, rocprofv2, pytorch-profiler
    tool_version: str = ""
    hostname: str = ""
    pid: int | None = None
    command: str = ""
    label: str = ""  # short human label, e.g. "host/1234" or the file prefix
    files: list[str] = field(default_factory=list)  # files that contributed data
    rank: int | None = None  # distributed rank (Kineto distributedInfo)
    extra: dict = field(default_factory=dict)


@dataclass
class LoadIssue:
    """A file that was skipped or failed to load, with a one-line reason."""

    path: str
    message: str
    severity: str = "error"  # "error" (could not load) or "skipped" (not a profiler file)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass
class Run:
    """Everything recorded about one profiled process (hostname, pid).

    Tables follow :mod:`tui_prof.model.schema`; a table without rows is the schema's
    :func:`~tui_prof.model.schema.shared_empty` table, shared by every run (assign a new
    frame to change a table, never change one in place). ``tool_stats`` keeps statistics
    files the profiler wrote itself (key: e.g. "kernel_stats", "hip_api_stats"),
    used to cross-check our own numbers. ``partial`` is set when some file of the
    run could not be read completely.
    """

    meta: RunMeta = field(default_factory=RunMeta)
    agents: list[Agent] = field(default_factory=list)
    kernels: pd.DataFrame = field(default_factory=lambda: shared_empty("kernels"))
    api: pd.DataFrame = field(default_factory=lambda: shared_empty("api"))
    copies: pd.DataFrame = field(default_factory=lambda: shared_empty("copies"))
    allocations: pd.DataFrame = field(default_factory=lambda: shared_empty("allocations"))
    scratch: pd.DataFrame = field(default_factory=lambda: shared_empty("scratch"))
    markers: pd.DataFrame = field(default_factory=lambda: shared_empty("markers"))
    counters: pd.DataFrame = field(default_factory=lambda: shared_empty("counters"))
    series: pd.DataFrame = field(default_factory=lambda: shared_empty("series"))
    pc_samples: pd.DataFrame = field(default_factory=lambda: shared_empty("pc_samples"))
    metrics: pd.DataFrame = field(default_factory=lambda: shared_empty("metrics"))
    tool_stats: dict[str, pd.DataFrame] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    partial: bool = False

    def table(self, name: str) -> pd.DataFrame:
        return getattr(self, name)

    def agent(self, agent_id: int) -> Agent | None:
        for agent in self.agents:
            if agent.id == agent_id:
                return agent
        return None

    @property
    def gpu_agents(self) -> list[Agent]:
        return [a for a in self.agents if a.type == "GPU"]

    def merge(self, other: Run) -> None:
        """Append ``other``'s rows and facts into this run (same process, other files)."""
        for name in TABLES:
            setattr(self, name, concat_tables(name, [self.table(name), other.table(name)]))
        known = {a.id for a in self.agents}
        self.agents.extend(a for a in other.agents if a.id not in known)
        self.tool_stats.update(other.tool_stats)
        self.warnings.extend(other.warnings)
        self.partial = self.partial or other.partial
        for fmt in other.meta.formats:
            if fmt not in self.meta.formats:
                self.meta.formats.append(fmt)
        self.meta.files.extend(other.meta.files)
        for attr in ("tool", "tool_version", "hostname", "command", "label"):
            if not getattr(self.meta, attr):
                setattr(self.meta, attr, getattr(other.meta, attr))
        for attr in ("pid", "rank"):
            if getattr(self.meta, attr) is None:
                setattr(self.meta, attr, getattr(other.meta, attr))
        self.meta.extra.update(other.meta.extra)

    def finish(self) -> None:
        """Sort every table by time; called once after all files of the run are merged."""
        for name in TABLES:
            table = self.table(name)
            if not len(table):  # most tables of a small run: nothing to sort
                continue
            key = "ts" if "ts" in table.columns else ("start" if "start" in table.columns else None)
            if key is None:
                continue
            values = column_array(table, key)  # no Series: thousands of runs of one small file
            if not bool((values[1:] >= values[:-1]).all()):
                setattr(self, name, table.sort_values(key, kind="stable").reset_index(drop=True))


@dataclass
class RunSet:
    """A run directory (or a single file): its processes and what could not be read."""

    root: str
    runs: list[Run] = field(default_factory=list)
    issues: list[LoadIssue] = field(default_factory=list)

    @property
    def errors(self) -> list[LoadIssue]:
        return [i for i in self.issues if i.severity == "error"]

    @property
    def skipped(self) -> list[LoadIssue]:
        return [i for i in self.issues if i.severity != "error"]

    @property
    def formats(self) -> list[str]:
        seen: list[str] = []
        for run in self.runs:
            for fmt in run.meta.formats:
                if fmt not in seen:
                    seen.append(fmt)
        return seen

    @property
    def name(self) -> str:
        return Path(self.root).name or self.root
