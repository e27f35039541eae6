"""GPU memory: peak allocated/reserved per device, the allocated level over time, growth.

Sources, first that a process has (docs/metrics.md, Memory):

* allocator totals: PyTorch ``profile_memory=True`` writes a ``[memory]`` event per
  allocation and free with the caching allocator's ``Total Allocated`` and ``Total Reserved``
  of the device after it (the loader keeps them as ``series`` tracks "allocated" and
  "reserved"); the peak is their maximum, i.e. ``torch.cuda.max_memory_allocated()`` over the
  profiled window, allocations made before it included;
* allocation trace (rocprofv3 ``--memory-allocation-trace``, rocpd, Kineto events without
  totals): the running sum of allocated minus freed bytes per agent from the first event
  on (a free without a size takes the size of the last allocation at its address);
* API call sizes, only when the process has neither: the ``size`` argument of its
  ``hipMalloc``/``cudaMalloc``-like calls (rows of ``allocations`` whose ``operation`` is the
  API function's name, :func:`is_api_call`). When every allocation's pointer is recorded,
  frees are matched by pointer and the running sum is a level (source "API call sizes",
  device not recorded: agent -1). When a pointer is not recorded (rocpd stores the
  ``void**`` argument, the address of the caller's variable, not the allocation) frees
  cannot be matched: the figure is the bytes requested, never a peak
  (:func:`api_requests`, source "API requests, frees not matched").
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from tui_prof.analysis.names import row_flags
from tui_prof.analysis.runinput import RunInput
from tui_prof.analysis.sections import MemoryDevice, MemoryRequest, MemorySection, StepRecord, StepsSection
from tui_prof.model import Run

TOTALS = "allocator totals"
TRACE = "allocation trace"
API = "API call sizes"
REQUESTED = "API requests, frees not matched"
GROWTH_MIN_STEPS = 3  # [P] steady steps needed before growth step over step is called a leak
GROWTH_MIN_BYTES = 1 << 20  # [P] and it grew by at least 1 MiB in all
FRAGMENTATION_RATIO = 2.0  # [P] peak reserved > 2 x peak allocated...
FRAGMENTATION_MIN_BYTES = 1 << 30  # [P] ...and at least 1 GiB more


def _name_starts(operation: pd.Series, prefixes: tuple[str, ...]) -> np.ndarray:
    """Which rows' operation starts with one of ``prefixes`` (tested once per distinct value)."""
    return row_flags(operation, lambda op: op.startswith(prefixes))


def is_api_call(operation: pd.Series) -> np.ndarray:
    """Which ``allocations`` rows are API calls: a loader writes the function's name
    (hipMalloc, hipFree, cudaMalloc ...) as their operation, where allocation-trace rows
    carry upper-case ALLOC/FREE words (ALLOCATE, FREE, REALLOC ...)."""
    return _name_starts(operation, ("hip", "cuda"))


def trace_rows(allocations: pd.DataFrame) -> pd.DataFrame:
    """The allocation-trace rows (not API calls) of ``allocations``."""
    if allocations.empty:
        return allocations
    api = is_api_call(allocations["operation"])
    return allocations[~api] if api.any() else allocations


def api_rows(allocations: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """(the API-call rows, which of them free), time-sorted."""
    if allocations.empty:
        return allocations, np.zeros(0, bool)
    api = is_api_call(allocations["operation"])
    if not api.any():
        return allocations.iloc[:0], np.zeros(0, bool)
    rows = allocations[api].sort_values("start", kind="stable")
    return rows, _name_starts(rows["operation"], ("hipFree", "cudaFree"))


def api_frees_matched(allocations: pd.DataFrame) -> bool | None:
    """None without API allocation calls; True when the calls make a level: every
    allocation's pointer is recorded (a free of an address the trace never allocated is
    memory from before the trace and is left out), or nothing is freed; False otherwise."""
    rows, free = api_rows(allocations)
    alloc = ~free & (rows["bytes"].to_numpy() > 0) if len(rows) else np.zeros(0, bool)
    if not alloc.any():
        return None
    return bool((rows["address"].to_numpy()[alloc] > 0).all() or not free.any())


def api_level(allocations: pd.DataFrame) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per agent: the allocated level from API calls whose frees are matched (else {})."""
    if not api_frees_matched(allocations):
        return {}
    rows, free = api_rows(allocations)
    known = set(rows["address"].to_numpy()[~free].tolist())
    keep = ~free | np.isin(rows["address"].to_numpy(), list(known))  # frees of memory allocated before the trace: size unknown
    rows, free = rows[keep], free[keep]
    as_trace = rows.assign(operation=np.where(free, "FREE", "ALLOCATE"))
    return running_allocated(as_trace)


def running_allocated(allocations: pd.DataFrame) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per agent: (event times, allocated bytes after each event), time-sorted; the level
    starts at 0 at the first event. A free without an agent counts on the agent of the last
    allocation at its address."""
    if allocations.empty:
        return {}
    is_alloc = row_flags(allocations["operation"], lambda op: "ALLOC" in op.upper())
    is_free = row_flags(allocations["operation"], lambda op: "FREE" in op.upper())
    nbytes = allocations["bytes"].to_numpy().astype(np.int64)
    frame = pd.DataFrame(
        {
            "t": allocations["start"].to_numpy().astype(np.int64),
            "agent": allocations["agent"].to_numpy().astype(np.int64),
            "addr": allocations["address"].to_numpy(),
            "alloc": np.where(is_alloc & (nbytes > 0), nbytes, np.nan),
            "n": nbytes,
            "is_alloc": is_alloc & ~is_free,
            "is_free": is_free,
        }
    ).sort_values("t", kind="stable")
    size_at_addr = frame.groupby("addr")["alloc"].ffill().fillna(0).to_numpy().astype(np.int64)
    # a free without an agent (rocprofv3 writes none) belongs to the allocation at its address
    owner = frame["agent"].where(frame["is_alloc"] & (frame["agent"] >= 0))
    frame["agent"] = np.where(frame["agent"].to_numpy() >= 0, frame["agent"].to_numpy(), owner.groupby(frame["addr"]).ffill().fillna(-1).to_numpy()).astype(
        np.int64
    )
    n = frame["n"].to_numpy()
    free_bytes = np.where(n > 0, n, size_at_addr)
    delta = np.where(frame["is_alloc"].to_numpy(), np.maximum(n, 0), 0) - np.where(frame["is_free"].to_numpy(), free_bytes, 0)
    out = {}
    agents = frame["agent"].to_numpy()
    t = frame["t"].to_numpy()
    for agent in np.unique(agents).tolist():
        m = agents == agent
        out[int(agent)] = (t[m], np.cumsum(delta[m]))
    return out


def tracks(run: Run, track: str) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per agent: (times, values) of a ``series`` track, time-sorted."""
    s = run.series
    if s.empty:
        return {}
    s = s[s["track"].astype(str) == track]
    out = {}
    for agent, g in s.groupby("agent", sort=True):
        g = g.sort_values("ts", kind="stable")
        out[int(agent)] = (g["ts"].to_numpy().astype(np.int64), g["value"].to_numpy().astype(np.int64))
    return out


def allocated_levels(run: Run) -> tuple[str, dict[int, tuple[np.ndarray, np.ndarray]]]:
    """(source, per agent (times, allocated bytes)) of one process; ("none", {}) without memory data."""
    if not len(run.series) and not len(run.allocations):  # no memory data (most of thousands of tiny processes)
        return "none", {}
    totals = tracks(run, "allocated")
    if totals:
        return TOTALS, totals
    levels = {a: v for a, v in running_allocated(trace_rows(run.allocations)).items() if len(v[1]) and int(v[1].max()) > 0}
    if levels:
        return TRACE, levels
    levels = {a: v for a, v in api_level(run.allocations).items() if len(v[1]) and int(v[1].max()) > 0}
    return (API, levels) if levels else ("none", {})


def api_requests(run: Run, label: str) -> MemoryRequest | None:
    """What the process's allocation calls requested when their frees cannot be matched
    (None when it has a level of any source, or no sized allocation call)."""
    if not len(run.allocations) or api_frees_matched(run.allocations) is not False or allocated_levels(run)[1]:
        return None
    rows, free = api_rows(run.allocations)
    sizes = rows["bytes"].to_numpy().astype(np.int64)
    alloc = ~free & (sizes > 0)
    names = rows["operation"].astype(str).to_numpy()
    functions: dict[str, int] = {}
    for name in names[alloc].tolist():
        functions[name] = functions.get(name, 0) + 1
    frees: dict[str, int] = {}
    for name in names[free].tolist():
        frees[name] = frees.get(name, 0) + 1
    return {
        "process": label,
        "source": REQUESTED,
        "calls": int(alloc.sum()),
        "requested_bytes": int(sizes[alloc].sum()),
        "largest_bytes": int(sizes[alloc].max()),
        "functions": dict(sorted(functions.items())),
        "frees": int(free.sum()),
        "free_functions": dict(sorted(frees.items())),
    }


def allocated_series(run: Run) -> tuple[np.ndarray, np.ndarray] | None:
    """The allocated level over time of the process's device with the highest peak."""
    _, levels = allocated_levels(run)
    if not levels:
        return None
    agent = max(levels, key=lambda a: (int(levels[a][1].max()), -a))
    return levels[agent]


def memory_devices(run: Run, label: str) -> list[MemoryDevice]:
    source, levels = allocated_levels(run)
    reserved = tracks(run, "reserved") if source == TOTALS else {}
    out: list[MemoryDevice] = []
    for agent, (t, v) in sorted(levels.items()):
        if agent < 0 and source == TOTALS:
            continue
        i = int(np.argmax(v))
        r = reserved.get(agent)
        out.append(
            {
                "process": label,
                "agent": agent,
                "source": source,
                "events": len(v),
                "peak_allocated_bytes": int(v[i]),
                "peak_allocated_ns": int(t[i]),
                "peak_reserved_bytes": int(r[1].max()) if r is not None and len(r[1]) else None,
            }
        )
    return out


Growth = tuple[int | None, int]  # (growth in bytes, steps that grew) of one process's steps


def step_growth(records: Sequence[StepRecord]) -> tuple[int | None, int]:
    """(growth in bytes, steps that grew) of the steady steps' high-water marks: growth is
    given only when every steady step's mark is above the previous one's (a leak step over step)."""
    marks = [r["memory_peak_bytes"] for r in records if not r["warmup"]]
    if len(marks) < 2 or any(m is None for m in marks):
        return None, 0
    values = np.array(marks, dtype=np.int64)
    grew = int((np.diff(values) > 0).sum())
    if grew == len(values) - 1:
        return int(values[-1] - values[0]), grew
    return None, grew


def memory_section(runs: Sequence[tuple[Run, str]], steps: Sequence[StepRecord] = (), growths: Sequence[Growth] = ()) -> MemorySection:
    """Peak memory per device over the processes; growth over ``steps`` (one process's
    steps) or, where several processes' steps are combined (``growths``: each one's
    :func:`step_growth` of its own steps), the largest of them (the whole run's rows mix processes)."""
    devices: list[MemoryDevice] = []
    requested: list[MemoryRequest] = []
    for run, label in runs:
        devices.extend(memory_devices(run, label))
        request = api_requests(run, label)
        if request is not None:
            requested.append(request)
    return memory_of_parts(devices, requested, steps, growths)


def memory_of_parts(
    devices: list[MemoryDevice], requested: list[MemoryRequest], steps: Sequence[StepRecord] = (), growths: Sequence[Growth] = ()
) -> MemorySection:
    """:func:`memory_section` from every process's :func:`memory_devices` and
    :func:`api_requests` (in process order)."""
    sources = {d["source"] for d in devices}
    reserved = [d["peak_reserved_bytes"] for d in devices if d["peak_reserved_bytes"] is not None]
    growth, grew = step_growth(steps) if not growths else max(growths, key=lambda g: (g[0] is not None, g[0] or 0, g[1]))
    best = next((s for s in (TOTALS, TRACE, API) if s in sources), REQUESTED if requested else "none")
    return {
        "source": best,
        "peak_allocated_bytes": max((d["peak_allocated_bytes"] for d in devices), default=None),
        "peak_reserved_bytes": max(reserved) if reserved else None,
        "devices": devices,
        "step_growth_bytes": growth,
        "growing_steps": grew,
        "requested": requested,
    }


# --- the summary section ---


def memory_section_of(inputs: Sequence[RunInput], steps_found: StepsSection, growths: Sequence[Growth] = ()) -> MemorySection:
    """Peak memory per device of every process; growth over the steps' high-water marks
    (``growths``: each process's own, where several processes' steps are combined)."""
    return memory_section([(r.run, r.label) for r in inputs], steps_found["steps"], growths)
