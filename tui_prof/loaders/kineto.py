"""PyTorch profiler (Kineto) chrome trace JSON (``*.json``, ``*.json.gz``, ``*.pt.trace.json[.gz]``).

Format facts: research/formats.md §10 (Kineto ``libkineto/src/output_json.cpp`` and real
CUDA/ROCm traces). One file is one profiled process (one rank): several rank files in a
directory load as several runs.

Mapping into the run model:

* ``cat: kernel`` -> ``kernels``; ``gpu_memcpy``/``gpu_memset`` -> ``copies``;
  ``cuda_runtime``/``cuda_driver`` -> ``api`` with domain ``hip`` for ``hip*`` names and
  ``cuda`` otherwise; ``cuda_sync`` (CUPTI synchronization activities such as
  "Stream Sync", CUDA only) -> ``api`` with domain ``cuda_sync`` so they are not counted
  twice with the ``cudaStreamSynchronize`` runtime call they overlap;
  ``cpu_op``/``user_annotation``/``gpu_user_annotation``/``python_function`` -> ``markers``
  (``source`` = category; pid/tid as written, which for ``gpu_user_annotation`` are the
  device and stream); ``cpu_instant_event`` "[memory]" -> ``allocations``.
* Time: ``ts``/``dur`` are µs on Kineto's clock; we store ``start = ns(ts)``,
  ``end = start + ns(dur)``. Kineto prints µs with 3 decimals derived from integer ns,
  so rounding ``ts`` and ``dur`` separately recovers the exact integers and back-to-back
  events stay back-to-back (rounding ``ts + dur`` could be off by 1 ns). Integer ``ts``
  are multiplied exactly in int64. A float ``ts`` is exact in float64 up to 2**43 µs
  (~102 days); beyond that the run gets a warning.
* Agents: CUDA events carry ``device`` = CUDA device index = ``deviceProperties[i].id``.
  On ROCm (roctracer builds) the ``device``/pid of GPU events is *not* the
  deviceProperties index: single-GPU MI300X traces put kernels on device 2 while
  deviceProperties only has id 0, consistent with the KFD topology node id (CPU nodes
  first). Agent ids are therefore the event ``device`` values; properties are attached
  when every deviceProperties entry is identical, or when the number of distinct devices
  equals the number of entries (then in sorted order); otherwise left empty, with a warning.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

from tui_prof.loaders.base import IssueSink, LoadError, Sniffed, one_line, open_binary
from tui_prof.model import Agent, Run, RunMeta
from tui_prof.model.schema import UNKNOWN, make_table

FORMAT = "kineto"

_CAT_MARKER = re.compile(rb'"cat"\s*:\s*"(kernel|cuda_runtime|cuda_driver|cpu_op|gpu_memcpy|user_annotation|python_function)"')
_LEGACY_ROCPROF = re.compile(rb'"traceEvents"\s*:\s*\[\s*\{\s*\}')

MARKER_CATS = ("cpu_op", "user_annotation", "gpu_user_annotation", "python_function")
API_CATS = ("cuda_runtime", "cuda_driver")
COPY_CATS = ("gpu_memcpy", "gpu_memset")
COPY_DIRECTIONS = ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP")

# ROCm launch calls whose recorded "grid" is already the global size in work-items
# (hipExtModuleLaunchKernel(globalWorkSizeX, ..., localWorkSizeX, ...)); every other
# launch call (and CUPTI on CUDA) records the grid in blocks.
WORK_ITEM_GRID_LAUNCHES = ("hipExtModuleLaunchKernel", "hipHccModuleLaunchKernel")

VERSION_KEYS = (
    "cuda_runtime_version",
    "cuda_driver_version",
    "cupti_version",
    "hip_runtime_version",
    "hip_driver_version",
    "roctracer_version",
    "rocprofiler-sdk_version",
)

FLOAT_EXACT_LIMIT_US = float(2**43)
"""Below this a float µs value with 3 decimals converts to the exact integer ns."""


def sniff(path: Path, head: bytes) -> Sniffed | None:
    """A JSON object with ``traceEvents`` plus a Kineto marker (schemaVersion, deviceProperties
    or a Kineto event category); not rocprofv3 JSON, not legacy rocprof v1 ``results.json``."""
    text = head.lstrip()
    if not text.startswith(b"{"):
        return None
    if b'"rocprofiler-sdk-tool"' in head or _LEGACY_ROCPROF.search(head) or b'"otherData"' in head:
        return None
    has_events = b'"traceEvents"' in head
    has_schema = b'"schemaVersion"' in head
    has_props = b'"deviceProperties"' in head
    if has_events and (has_schema or has_props or _CAT_MARKER.search(head)):
        return Sniffed("trace", group=str(path))
    if has_schema and has_props:  # traceEvents beyond the sniffed head (large metadata)
        return Sniffed("trace", group=str(path))
    return None


def load(files, issues: IssueSink) -> list[Run]:
    runs = []
    for item in files:
        try:
            runs.append(load_file(item.path))
        except LoadError as err:
            issues.error(item.path, str(err))
        except MemoryError:
            issues.error(item.path, "out of memory while reading the Kineto trace")
    return runs


# --------------------------------------------------------------------------- reading


def read_json(path: Path) -> dict:
    """Parse the (possibly gzipped) file; raise LoadError with a one-line reason."""
    try:
        with open_binary(path) as fh:
            data = json.load(fh)
    except json.JSONDecodeError as err:
        raise LoadError(f"not valid JSON ({err.msg} at line {err.lineno} column {err.colno}); truncated or damaged file?")
    except (EOFError, gzip.BadGzipFile, zlib.error) as err:
        raise LoadError(f"damaged or truncated gzip data ({one_line(err)})")
    except UnicodeDecodeError:
        raise LoadError("not UTF-8 JSON text")
    except OSError as err:
        raise LoadError(f"cannot read file: {getattr(err, 'strerror', None) or err}")
    except RecursionError:
        raise LoadError("JSON nested too deeply")
    if not isinstance(data, dict):
        raise LoadError("not a Kineto trace: top level is not a JSON object")
    if not isinstance(data.get("traceEvents"), list):
        raise LoadError("not a Kineto trace: no traceEvents list")
    return data


def us_to_ns(values) -> np.ndarray:
    """Convert µs values (ints and/or floats from JSON) to int64 ns.

    Integers are multiplied exactly; floats are split into whole and fractional µs so the
    whole part is exact and only the fraction (< 1 µs) is rounded: ``whole*1000 +
    rint(frac*1000)``. Missing or non-numeric values become 0.
    """
    arr = np.asarray(values)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64) * 1000
    if arr.dtype.kind != "f":
        arr = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").fillna(0).to_numpy(dtype=np.float64)
    arr = np.nan_to_num(arr.astype(np.float64, copy=False), nan=0.0)
    whole = np.floor(arr)
    return whole.astype(np.int64) * 1000 + np.rint((arr - whole) * 1000.0).astype(np.int64)


def int_column(values) -> np.ndarray:
    """int64 array from a list of JSON values; None, strings and floats that are not
    integers become UNKNOWN (-1)."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64)
    numeric = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce")
    numeric = numeric.where(numeric == np.floor(numeric))
    return numeric.fillna(UNKNOWN).to_numpy(dtype=np.float64).astype(np.int64)


def triples(values) -> np.ndarray:
    """(n, 3) int64 array from a list of [x, y, z] lists (missing -> -1)."""
    n = len(values)
    try:
        arr = np.array(values, dtype=np.int64)
        if arr.shape == (n, 3):
            return arr
    except (TypeError, ValueError):
        pass
    out = np.full((n, 3), UNKNOWN, dtype=np.int64)
    for i, v in enumerate(values):  # rare slow path: malformed grid/block
        if isinstance(v, (list, tuple)):
            for j, x in enumerate(v[:3]):
                if isinstance(x, int):
                    out[i, j] = x
    return out


def times(events: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    start = us_to_ns([e["ts"] for e in events])
    end = start + us_to_ns([e.get("dur", 0) for e in events])
    return start, end


def args_of(events: list[dict]) -> list[dict]:
    return [e.get("args") or {} for e in events]


# --------------------------------------------------------------------------- loading


def load_file(path: Path) -> Run:
    """Load one Kineto trace file into one Run."""
    data = read_json(Path(path))
    events = data["traceEvents"]

    by_cat: dict[str, list[dict]] = defaultdict(list)
    instants: list[dict] = []
    flows: Counter = Counter()
    process_labels: dict = {}
    for e in events:
        if type(e) is not dict:
            continue
        ph = e.get("ph")
        if ph == "X":
            if "ts" in e:
                by_cat[e.get("cat")].append(e)
        elif ph == "i":
            if e.get("cat") == "cpu_instant_event" and "ts" in e:
                instants.append(e)
        elif ph in ("s", "f"):
            flows[(e.get("cat"), ph)] += 1
        elif ph == "M" and e.get("name") == "process_labels":
            process_labels[e.get("pid")] = (e.get("args") or {}).get("labels")

    run = Run()
    meta = run.meta
    meta.formats = [FORMAT]
    meta.tool = "pytorch-profiler"
    if "schemaVersion" in data:
        meta.tool_version = f"kineto schema {data['schemaVersion']}"
    meta.files = [str(path)]
    meta.label = trace_label(Path(path))
    dist = data.get("distributedInfo") if isinstance(data.get("distributedInfo"), dict) else {}
    if isinstance(dist.get("rank"), int):
        meta.rank = dist["rank"]
    versions = {k: data[k] for k in VERSION_KEYS if k in data}
    platform = detect_platform(data, by_cat)
    meta.extra.update(
        {
            "platform": platform,
            "versions": versions,
            "runtime": runtime_string(versions),
            "trace_name": data.get("traceName", ""),
            "base_time_ns": data.get("baseTimeNanoseconds"),
            "trace_id": data.get("trace_id", ""),
            "distributed": {k: v for k, v in dist.items() if k != "pg_config"},
            "flows": {f"{cat}:{ph}": n for (cat, ph), n in sorted(flows.items(), key=str)},
        }
    )

    host_pid = find_host_pid(by_cat, process_labels)
    meta.pid = host_pid

    run.api = build_api(by_cat)
    launch = launch_lookup(run.api)
    run.kernels = build_kernels(by_cat.get("kernel", []), launch, by_cat, platform, host_pid)
    run.copies = build_copies(by_cat.get("gpu_memcpy", []) + by_cat.get("gpu_memset", []), launch, host_pid)
    run.markers = build_markers(by_cat)
    seen = set(run.kernels["agent"].tolist()) | set(run.copies["src_agent"].tolist()) | set(run.copies["dst_agent"].tolist())
    gpu_devices = sorted(int(d) for d in seen if d != UNKNOWN)
    run.agents, warning = build_agents(data.get("deviceProperties"), gpu_devices, platform)
    if warning:
        run.warnings.append(warning)
    run.allocations = build_allocations(instants, platform, run.agents)

    floats = any(isinstance(e["ts"], float) for cat in ("kernel", "cuda_runtime") for e in by_cat.get(cat, [])[:1])
    latest = max([int(t["start"].max()) for t in (run.kernels, run.api) if len(t)], default=0)
    if floats and latest >= FLOAT_EXACT_LIMIT_US * 1000:
        run.warnings.append(
            "timestamps are fractional µs beyond 2**43 µs: float64 parsing may shift them by about 1 ns"
        )
    return run


def trace_label(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".json", ".pt.trace"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def detect_platform(data: dict, by_cat: dict) -> str:
    """"rocm" or "cuda": version keys first, then deviceProperties, then API names."""
    if any(k in data for k in ("hip_runtime_version", "roctracer_version", "rocprofiler-sdk_version")):
        return "rocm"
    if any(k in data for k in ("cuda_runtime_version", "cupti_version")):
        return "cuda"
    props = data.get("deviceProperties")
    if isinstance(props, list) and props and isinstance(props[0], dict):
        if "maxSharedMemoryPerMultiProcessor" in props[0] or str(props[0].get("name", "")).startswith("AMD"):
            return "rocm"
        return "cuda"
    for e in by_cat.get("cuda_runtime", [])[:50]:
        if str(e.get("name", "")).startswith("hip"):
            return "rocm"
    return "cuda"


def runtime_string(versions: dict) -> str:
    """Human form of the runtime version: HIP 60443483 -> "HIP 6.4.43483", CUDA 12040 -> "CUDA 12.4"."""
    hip = versions.get("hip_runtime_version")
    if isinstance(hip, int) and hip > 0:
        return f"HIP {hip // 10_000_000}.{(hip // 100_000) % 100}.{hip % 100_000}"
    cuda = versions.get("cuda_runtime_version")
    if isinstance(cuda, int) and cuda > 0:
        return f"CUDA {cuda // 1000}.{(cuda % 1000) // 10}"
    return ""


def find_host_pid(by_cat: dict, process_labels: dict) -> int | None:
    """The profiled process id: the pid labelled "CPU", else the most common pid of host events."""
    for pid, label in process_labels.items():
        if label == "CPU" and isinstance(pid, int):
            return pid
    counts: Counter = Counter()
    for cat in ("cuda_runtime", "cpu_op", "cuda_driver", "user_annotation"):
        counts.update(e.get("pid") for e in by_cat.get(cat, [])[:1000])
    for pid, _ in counts.most_common():
        if isinstance(pid, int):
            return pid
    return None


def build_api(by_cat: dict):
    parts = []
    for cat, domain in (("cuda_runtime", None), ("cuda_driver", None), ("cuda_sync", "cuda_sync")):
        events = by_cat.get(cat, [])
        if not events:
            continue
        start, end = times(events)
        names = pd.Series([e.get("name", "") for e in events], dtype=object).fillna("").astype(str)
        if domain is None:
            domains = np.where(names.str.startswith("hip").to_numpy(), "hip", "cuda")
        else:
            domains = domain
        args = args_of(events)
        if domain == "cuda_sync":  # written on the device/stream row; no host thread recorded
            pid = UNKNOWN
            tid = UNKNOWN
        else:
            pid = int_column([e.get("pid") for e in events])
            tid = int_column([e.get("tid") for e in events])
        parts.append(
            make_table(
                "api",
                {
                    "start": start,
                    "end": end,
                    "domain": domains if not isinstance(domains, str) else [domains] * len(events),
                    "name": names,
                    "pid": pid,
                    "tid": tid,
                    "correlation_id": int_column([a.get("correlation") for a in args]),
                },
            )
        )
    if not parts:
        return make_table("api", {})
    table = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    for col in ("domain", "name"):
        table[col] = table[col].astype(str).astype("category")
    return table


def launch_lookup(api: pd.DataFrame) -> pd.DataFrame:
    """Runtime/driver calls indexed by correlation id (first call per id), for joining GPU work."""
    calls = api[(api["domain"] != "cuda_sync") & (api["correlation_id"] != UNKNOWN)]
    calls = calls.drop_duplicates("correlation_id")
    return calls.set_index("correlation_id")[["pid", "tid", "name"]]


def join_launch(correlation: np.ndarray, launch: pd.DataFrame, host_pid: int | None):
    """(pid, tid, launch name) of the host call that launched each GPU operation."""
    found = launch.reindex(correlation)
    pid = found["pid"].fillna(host_pid if host_pid is not None else UNKNOWN).to_numpy(dtype=np.int64)
    tid = found["tid"].fillna(UNKNOWN).to_numpy(dtype=np.int64)
    name = found["name"].astype(object).fillna("").to_numpy()
    return pid, tid, name


def build_kernels(events: list[dict], launch: pd.DataFrame, by_cat: dict, platform: str, host_pid):
    if not events:
        return make_table("kernels", {})
    start, end = times(events)
    args = args_of(events)
    device = int_column([a.get("device", e.get("pid")) for a, e in zip(args, events)])
    stream = int_column([a.get("stream", e.get("tid")) for a, e in zip(args, events)])
    correlation = int_column([a.get("correlation") for a in args])
    pid, tid, launch_name = join_launch(correlation, launch, host_pid)

    grid = triples([a.get("grid") for a in args])
    block = triples([a.get("block") for a in args])
    grid_items = grid_in_work_items(grid, block, launch_name, platform)

    shared = [a.get("shared memory") for a in args]
    lds = int_column(shared)
    if platform == "rocm":
        # ROCm kernel events lack "shared memory"; the launch call records it.
        launch_lds = launch_shared_memory(by_cat)
        missing = lds == UNKNOWN
        if missing.any() and len(launch_lds):
            lds[missing] = launch_lds.reindex(correlation[missing]).fillna(UNKNOWN).to_numpy(dtype=np.int64)

    return make_table(
        "kernels",
        {
            "start": start,
            "end": end,
            "agent": device,
            "stream": stream,
            "pid": pid,
            "tid": tid,
            "correlation_id": correlation,
            "name": [e.get("name", "") for e in events],
            "grid_x": grid_items[:, 0],
            "grid_y": grid_items[:, 1],
            "grid_z": grid_items[:, 2],
            "wg_x": block[:, 0],
            "wg_y": block[:, 1],
            "wg_z": block[:, 2],
            "lds_bytes": lds,
        },
    )


def grid_in_work_items(grid: np.ndarray, block: np.ndarray, launch_name: np.ndarray, platform: str) -> np.ndarray:
    """Grid size in work-items (rocprofv3 semantics), from Kineto's grid and block.

    CUPTI (CUDA) records the grid in blocks: work-items = grid * block. roctracer (ROCm)
    records the launch call's own arguments: blocks for hipLaunchKernel/hipModuleLaunchKernel/
    hipExtLaunchKernel, but global work size (already work-items) for
    hipExtModuleLaunchKernel/hipHccModuleLaunchKernel. A ROCm kernel whose launch call is not
    in the trace has an ambiguous grid and gets -1.
    """
    known = (grid != UNKNOWN) & (block != UNKNOWN)
    items = np.where(known, grid * block, UNKNOWN)
    if platform == "rocm":
        is_items = np.isin(launch_name, WORK_ITEM_GRID_LAUNCHES)
        unknown_launch = launch_name == ""
        items = np.where(is_items[:, None], grid, items)
        items = np.where(unknown_launch[:, None], UNKNOWN, items)
    return items


def launch_shared_memory(by_cat: dict) -> pd.Series:
    events = [e for e in by_cat.get("cuda_runtime", []) if "shared memory" in (e.get("args") or {})]
    if not events:
        return pd.Series([], dtype=np.int64)
    args = args_of(events)
    series = pd.Series(int_column([a.get("shared memory") for a in args]), index=int_column([a.get("correlation") for a in args]))
    return series[~series.index.duplicated()]


def build_copies(events: list[dict], launch: pd.DataFrame, host_pid):
    if not events:
        return make_table("copies", {})
    start, end = times(events)
    args = args_of(events)
    names = [e.get("name", "") for e in events]
    cats = np.array([e.get("cat") for e in events], dtype=object)
    device = int_column([a.get("device", e.get("pid")) for a, e in zip(args, events)])
    kinds = pd.Series([a.get("kind") for a in args], dtype=object)
    # "Memcpy HtoD (Pageable -> Device)" -> "HtoD" when args lack "kind"
    from_name = pd.Series(names, dtype=object).str.extract(r"^Memcpy (\w+)", expand=False)
    direction = kinds.where(kinds.isin(COPY_DIRECTIONS), from_name)
    direction = direction.where(direction.isin(COPY_DIRECTIONS), "unknown").to_numpy(dtype=object, copy=True)
    direction[cats == "gpu_memset"] = "memset"
    src = np.where(np.isin(direction, ("DtoH", "DtoD", "PtoP")), device, UNKNOWN)
    dst = np.where(np.isin(direction, ("HtoD", "DtoD", "memset")), device, UNKNOWN)
    correlation = int_column([a.get("correlation") for a in args])
    pid, tid, _ = join_launch(correlation, launch, host_pid)
    return make_table(
        "copies",
        {
            "start": start,
            "end": end,
            "bytes": int_column([a.get("bytes") for a in args]),
            "direction": direction,
            "src_agent": src,
            "dst_agent": dst,
            "stream": int_column([a.get("stream", e.get("tid")) for a, e in zip(args, events)]),
            "pid": pid,
            "tid": tid,
            "correlation_id": correlation,
            "name": names,
        },
    )


def build_markers(by_cat: dict):
    parts = []
    for cat in MARKER_CATS:
        events = by_cat.get(cat, [])
        if not events:
            continue
        start, end = times(events)
        parts.append(
            make_table(
                "markers",
                {
                    "start": start,
                    "end": end,
                    "name": [e.get("name", "") for e in events],
                    "source": [cat] * len(events),
                    "pid": int_column([e.get("pid") for e in events]),
                    "tid": int_column([e.get("tid") for e in events]),
                },
            )
        )
    if not parts:
        return make_table("markers", {})
    table = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    for col in ("name", "source"):
        table[col] = table[col].astype(str).astype("category")
    return table


def build_allocations(instants: list[dict], platform: str, agents: list[Agent]):
    """PyTorch caching-allocator "[memory]" instant events: Bytes > 0 allocates, < 0 frees.

    ``Device Id`` is the framework's device index; on CUDA that is the agent id, on ROCm
    it is only mapped when the run has exactly one GPU agent.
    """
    events = [e for e in instants if e.get("name") == "[memory]"]
    if not events:
        return make_table("allocations", {})
    start = us_to_ns([e["ts"] for e in events])
    args = args_of(events)
    size = int_column([a.get("Bytes") for a in args])
    dev_type = int_column([a.get("Device Type") for a in args])
    dev_id = int_column([a.get("Device Id") for a in args])
    gpus = [a.id for a in agents if a.type == "GPU"]
    if platform == "cuda":
        agent = np.where(dev_type > 0, dev_id, UNKNOWN)
    elif len(gpus) == 1:
        agent = np.where(dev_type > 0, gpus[0], UNKNOWN)
    else:
        agent = np.full(len(events), UNKNOWN)
    return make_table(
        "allocations",
        {
            "start": start,
            "end": start,
            "operation": np.where(size >= 0, "ALLOCATE", "FREE"),
            "agent": agent,
            "bytes": np.abs(size),
            "address": int_column([a.get("Addr") for a in args]),
            "pid": int_column([e.get("pid") for e in events]),
            "tid": int_column([e.get("tid") for e in events]),
        },
    )


def build_agents(props, devices: list[int], platform: str) -> tuple[list[Agent], str]:
    """GPU agents from the devices seen in GPU events and ``deviceProperties`` (see module doc)."""
    entries = [p for p in props if isinstance(p, dict)] if isinstance(props, list) else []
    warning = ""
    mapping: dict[int, dict] = {}
    if platform == "cuda":
        by_id = {p.get("id"): p for p in entries}
        ids = sorted(set(devices) | {i for i in by_id if isinstance(i, int)})
        mapping = {i: by_id.get(i, {}) for i in ids}
    else:
        ids = list(devices)
        if not ids:
            ids = [p.get("id") for p in entries if isinstance(p.get("id"), int)]
            mapping = {p.get("id"): p for p in entries}
        else:
            stripped = [{k: v for k, v in p.items() if k != "id"} for p in entries]
            if entries and all(s == stripped[0] for s in stripped):
                mapping = {d: entries[0] for d in ids}
            elif len(entries) == len(ids):
                mapping = dict(zip(ids, entries))
            elif entries:
                warning = (
                    f"cannot match {len(entries)} deviceProperties entries to GPU devices {ids}: "
                    "device properties not attached"
                )
    agents = [make_agent(i, mapping.get(i, {}), platform) for i in ids]
    return agents, warning


def make_agent(device: int, prop: dict, platform: str) -> Agent:
    def num(key):
        value = prop.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    major, minor = num("computeMajor"), num("computeMinor")
    product = str(prop.get("name", "") or "")
    agent = Agent(id=int(device), type="GPU", product=product)
    if platform == "rocm":
        agent.vendor = "AMD"
        agent.node_id = int(device)  # observed to match the KFD node id (see module doc)
        # HIP reports gfx942 as 9.4; the stepping digit is not recorded.
        agent.name = f"gfx{major}{minor:x}x" if major is not None and minor is not None else product
        agent.lds_bytes_per_cu = num("maxSharedMemoryPerMultiProcessor")
    else:
        agent.vendor = "NVIDIA" if product.startswith("NVIDIA") or prop else ""
        agent.name = product
        agent.type_index = int(device)
        agent.lds_bytes_per_cu = num("sharedMemPerMultiprocessor")
    agent.cu_count = num("numSms")
    agent.wave_size = num("warpSize")
    agent.memory_bytes = num("totalGlobalMem")
    agent.workgroup_max_size = num("maxThreadsPerBlock")
    if major is not None and minor is not None:
        agent.extra["compute_capability"] = f"{major}.{minor}"
    if prop:
        agent.extra["device_properties"] = dict(prop)
    return agent
