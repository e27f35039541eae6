"""Write a :class:`~tui_prof.synth.spec.SynthRun` as a PyTorch profiler (Kineto) chrome trace.

The layout copies what libkineto (roctracer build) writes on ROCm, as seen in
``tests/data/kineto/mi300__resnet_act_checkpoint.json.gz`` (raw Kineto text) and
``mi300__gaunernst_bert-small-uncased__1016001.json.gz`` (formats.md §10):

* top level: ``schemaVersion``, ``deviceProperties`` (one identical MI300X entry per GPU, ids
  0..N-1), ``roctracer_version``/``hip_runtime_version``/``hip_driver_version``, ``trace_id``,
  ``traceEvents``, ``traceName``, ``displayTimeUnit``, ``baseTimeNanoseconds``;
* ``cuda_runtime`` events with ``hip*`` names on the host pid/tid: hipLaunchKernel (args
  ``External id, kernel, cid 107, correlation, grid`` (in blocks), ``block, shared memory``),
  hipDeviceSynchronize (``cid 48, correlation``), hipMemcpy (``External id, correlation, src,
  dst, bytes, kind`` as strings, like roctracer's hipMemcpyWithStream; no ``cid``: its value
  for hipMemcpy was not seen in a real file);
* ``kernel`` events on ``pid`` = device = Agent.id, ``tid`` = stream, args ``External id,
  device, stream, correlation, kind "Dispatch Kernel", grid, block``; ``gpu_memcpy`` events
  ``Memcpy HtoD (Host -> Device)`` / ``Memcpy DtoH (Device -> Host)`` with args ``device,
  stream, correlation, kind, bytes, memory bandwidth (GB/s)``;
* ``ac2g`` flows: ``s`` on the launching call, ``f``/``bp: e`` on the GPU operation, id = correlation;
* ``M`` process_name / process_labels ("CPU", "GPU n") / process_sort_index, thread_name
  ("thread t (python3)", "stream s ") / thread_sort_index; the "PyTorch Profiler (0)" span.

``ts``/``dur`` are µs with exactly 3 decimals, formatted from the int64 ns (``ns // 1000`` and
``ns % 1000``), so the file holds the exact ns. Text is built with vectorised string
concatenation over object arrays, in slices, so 1M+ dispatches write without per-event
``json.dumps`` and without holding the whole text in memory.
"""

from __future__ import annotations

import gzip
import json
from functools import reduce
from pathlib import Path

import numpy as np
import pandas as pd

from tui_prof.synth.spec import SynthRun

SLICE = 100_000
"""Rows formatted per step."""

HIP_RUNTIME_VERSION = 60443483  # HIP 6.4.43483, as in the MI300X samples
CID = {"hipLaunchKernel": 107, "hipDeviceSynchronize": 48}  # roctracer API ids seen in the samples
MEMCPY_KIND = {"HtoD": "1", "DtoH": "2"}  # hipMemcpyKind
COPY_LABEL = {"HtoD": "Memcpy HtoD (Host -> Device)", "DtoH": "Memcpy DtoH (Device -> Host)"}

_FRAC = np.array([f".{i:03d}" for i in range(1000)], dtype=object)


def us_text(ns: np.ndarray) -> np.ndarray:
    """int64 ns -> "W.FFF" µs strings (object array), exact: W = ns // 1000, FFF = ns % 1000."""
    ns = np.asarray(ns, dtype=np.int64)
    return ints(ns // 1000) + _FRAC[ns % 1000]


def ints(values) -> np.ndarray:
    """Integers -> decimal strings (object array)."""
    return np.asarray(values, dtype=np.int64).astype(str).astype(object)


def strings(values) -> np.ndarray:
    """JSON string literals (quotes and escapes) for each value, encoding each distinct value once."""
    codes, uniq = pd.factorize(np.asarray(values, dtype=object))
    return np.array([json.dumps(str(u)) for u in uniq] or [""], dtype=object)[codes]


def concat(*parts) -> np.ndarray:
    """Element-wise concatenation of string constants and object arrays of strings."""
    merged: list = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        else:
            merged.append(part)
    return reduce(np.add, merged)


def event(head: str, *parts) -> np.ndarray:
    """One Kineto event per row: ``{`` + ``"ph": ...`` fields + ``}``, indented like libkineto."""
    return concat("  {\n    " + head, *parts, "\n  }")


def write_kineto(run: SynthRun, path: str | Path, gzipped: bool | None = None, compresslevel: int = 1) -> Path:
    """Write ``run`` as a Kineto trace at ``path`` (gzipped when ``gzipped`` or the name ends in .gz)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if gzipped is None:
        gzipped = path.name.endswith(".gz")
    if gzipped:
        fh = gzip.open(path, "wt", encoding="utf-8", compresslevel=compresslevel)  # noqa: SIM115 -- closed by the with below
    else:
        fh = open(path, "w", encoding="utf-8")  # noqa: SIM115 -- closed by the with below
    with fh:
        _write(run, fh)
    return path


def _write(run: SynthRun, fh) -> None:
    spec = run.spec
    pid = spec.pid
    api, kernels, copies = run.api, run.kernels, run.copies
    gpus = run.gpu_agents
    t_first = int(min(api["start"].min(), kernels["start"].min()))
    t_last = int(max(api["end"].max(), kernels["end"].max()))

    fh.write('\n{\n  "schemaVersion": 1,\n  "deviceProperties": [\n')
    fh.write(",\n".join(_device_properties(i, gpus[i]) for i in range(len(gpus))))
    fh.write(
        '\n  ],\n  "roctracer_version": 4.1,\n'
        f'  "hip_runtime_version": {HIP_RUNTIME_VERSION},\n'
        f'  "hip_driver_version": {HIP_RUNTIME_VERSION},\n'
        '  "record_shapes": 0,\n  "with_stack": 0,\n'
        + (f'  "distributedInfo": {json.dumps(run.extra["distributed_info"])},\n' if "distributed_info" in run.extra else "")
        + f'  "trace_id": "{spec.seed:032X}",\n  "traceEvents": [\n'
    )
    first = True

    def emit(texts: np.ndarray) -> None:
        nonlocal first
        if len(texts):
            fh.write(("" if first else ",\n") + ",\n".join(texts.tolist()))
            first = False

    # launching call of each GPU operation, by correlation id
    gpu_ops = np.concatenate([kernels["correlation_id"].to_numpy(), copies["correlation_id"].to_numpy()])
    has_gpu_op = np.isin(api["correlation_id"].to_numpy(), gpu_ops)
    kernel_of = kernels.set_index("correlation_id")
    copy_of = copies.set_index("correlation_id")
    external = np.arange(1, len(api) + 1, dtype=np.int64)  # "External id": one per host call
    ext_of = dict(zip(api["correlation_id"].to_numpy().tolist(), external.tolist()))

    for lo in range(0, len(api), SLICE):
        emit(_api_events(api.iloc[lo : lo + SLICE], external[lo : lo + SLICE], has_gpu_op[lo : lo + SLICE], kernel_of, copy_of, pid))
    for lo in range(0, len(kernels), SLICE):
        k = kernels.iloc[lo : lo + SLICE]
        ext = np.array([ext_of.get(c, 0) for c in k["correlation_id"].tolist()], dtype=np.int64)
        emit(_kernel_events(k, ext))
    for lo in range(0, len(copies), SLICE):
        c = copies.iloc[lo : lo + SLICE]
        ext = np.array([ext_of.get(x, 0) for x in c["correlation_id"].tolist()], dtype=np.int64)
        emit(_copy_events(c, ext))
    emit(_marker_events(run.markers))
    emit(_memory_events(run.allocations, run.gpu_agents))
    emit(_metadata(run, t_first))
    span = us_text(np.array([t_first, t_last - t_first]))
    emit(
        np.array(
            [
                '  {\n    "ph": "X", "cat": "Trace", "ts": %s, "dur": %s,\n    "pid": "Spans", '  # noqa: UP031 -- %s keeps the JSON braces single
                '"tid": "PyTorch Profiler",\n    "name": "PyTorch Profiler (0)",\n    "args": {\n'
                '      "Op count": 0\n    }\n  }' % (span[0], span[1]),
                '  {\n    "name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g",\n'  # noqa: UP031
                '    "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": %s\n  }' % span[0],
            ],
            dtype=object,
        )
    )
    base_ns = 1_700_000_000_000_000_000 - (1_700_000_000_000_000_000 % 1_000_000_000)
    fh.write(f'\n  ],\n  "traceName": "synthetic_rank0.json",\n  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": {base_ns}\n}}')


def _marker_events(m: pd.DataFrame) -> np.ndarray:
    """Host ranges as ``user_annotation`` events (``record_function``) on their thread."""
    if m.empty:
        return np.array([], dtype=object)
    start, end = m["start"].to_numpy(), m["end"].to_numpy()
    return event(
        '"ph": "X", "cat": "user_annotation", "name": ',
        strings(m["name"].astype(str).to_numpy()),
        ', "pid": ',
        ints(m["pid"]),
        ', "tid": ',
        ints(m["tid"]),
        ',\n    "ts": ',
        us_text(start),
        ', "dur": ',
        us_text(end - start),
        ',\n    "args": {\n      "External id": 0\n    }',
    )


def _memory_events(a: pd.DataFrame, gpus) -> np.ndarray:
    """Allocations as PyTorch ``[memory]`` instant events with the caching allocator's totals
    after each one: ``Total Allocated`` = the running sum, ``Total Reserved`` = its maximum so
    far (the allocator keeps what it reserved). ``Device Id`` is the GPU's index."""
    if a.empty:
        return np.array([], dtype=object)
    a = a.sort_values("start", kind="stable")
    op = a["operation"].astype(str).to_numpy()
    size = a["bytes"].to_numpy().astype(np.int64)
    signed = np.where(op == "FREE", -size, size)
    total = np.cumsum(signed)
    index = {agent.id: i for i, agent in enumerate(gpus)}
    device = np.array([index.get(int(x), 0) for x in a["agent"].to_numpy()], dtype=np.int64)
    return event(
        '"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",\n    "pid": ',
        ints(a["pid"]),
        ', "tid": ',
        ints(a["tid"]),
        ',\n    "ts": ',
        us_text(a["start"].to_numpy()),
        ',\n    "args": {\n      "Total Reserved": ',
        ints(np.maximum.accumulate(total)),
        ', "Total Allocated": ',
        ints(total),
        ', "Bytes": ',
        ints(signed),
        ', "Addr": ',
        ints(a["address"]),
        ', "Device Type": 1, "Device Id": ',
        ints(device),
        "\n    }",
    )


def _device_properties(index: int, agent) -> str:
    return (
        "    {\n"
        f'      "id": {index}, "name": {json.dumps(agent.product)}, "totalGlobalMem": {agent.memory_bytes},\n'
        '      "computeMajor": 9, "computeMinor": 4,\n'
        f'      "maxThreadsPerBlock": {agent.workgroup_max_size}, "maxThreadsPerMultiprocessor": 2048,\n'
        f'      "regsPerBlock": 65536, "warpSize": {agent.wave_size},\n'
        f'      "sharedMemPerBlock": 65536, "numSms": {agent.cu_count}\n'
        f'    , "maxSharedMemoryPerMultiProcessor": {agent.lds_bytes_per_cu}\n'
        "    }"
    )


def _api_events(api, external, has_gpu_op, kernel_of, copy_of, pid: int) -> np.ndarray:
    """hip* runtime calls, each launch/copy call followed by its ``s`` flow event."""
    n = len(api)
    name = api["name"].astype(str).to_numpy()
    corr = api["correlation_id"].to_numpy()
    tid = ints(api["tid"])
    ts = us_text(api["start"].to_numpy())
    dur = us_text((api["end"] - api["start"]).to_numpy())
    corr_s = ints(corr)
    ext = ints(external)
    args = np.empty(n, dtype=object)
    is_launch = name == "hipLaunchKernel"
    is_sync = name == "hipDeviceSynchronize"
    is_copy = name == "hipMemcpy"
    if is_launch.any():
        k = kernel_of.loc[corr[is_launch]]
        gx, gy, gz = (k[f"grid_{a}"].to_numpy() // k[f"wg_{a}"].to_numpy() for a in "xyz")  # blocks
        args[is_launch] = concat(
            '      "External id": ',
            ext[is_launch],
            ',          "kernel": ',
            strings(k["name"].astype(str)),
            ', "cid": 107, "correlation": ',
            corr_s[is_launch],
            ',      "grid": [',
            ints(gx),
            ", ",
            ints(gy),
            ", ",
            ints(gz),
            '],      "block": [',
            ints(k["wg_x"]),
            ", ",
            ints(k["wg_y"]),
            ", ",
            ints(k["wg_z"]),
            '],      "shared memory": ',
            ints(k["lds_bytes"]),
        )
    if is_sync.any():
        args[is_sync] = concat('            "cid": 48, "correlation": ', corr_s[is_sync])
    if is_copy.any():
        c = copy_of.loc[corr[is_copy]]
        direction = c["direction"].astype(str).to_numpy()
        host = np.array([f"0x{0x7F0E4A7E8000 + i * 0x1000:x}" for i in range(len(c))], dtype=object)
        dev = np.array([f"0x{0x7F0E79800000 + i * 0x1000:x}" for i in range(len(c))], dtype=object)
        htod = direction == "HtoD"
        args[is_copy] = concat(
            '      "External id": ',
            ext[is_copy],
            ',      "correlation": ',
            corr_s[is_copy],
            ', "src": "',
            np.where(htod, host, dev),
            '", "dst": "',
            np.where(htod, dev, host),
            '", "bytes": "',
            ints(c["bytes"]),
            '", "kind": "',
            np.array([MEMCPY_KIND.get(d, "0") for d in direction], dtype=object),
            '"',
        )
    text = event(
        '"ph": "X", "cat": "cuda_runtime", "name": ',
        strings(name),
        f', "pid": {pid}, "tid": ',
        tid,
        ',\n    "ts": ',
        ts,
        ', "dur": ',
        dur,
        ',\n    "args": {\n',
        args,
        "\n    }",
    )
    flow = event('"ph": "s", "id": ', corr_s, f', "pid": {pid}, "tid": ', tid, ', "ts": ', ts, ',\n    "cat": "ac2g", "name": "ac2g"')
    return np.where(has_gpu_op, text + ",\n" + flow, text)


def _flow_end(corr_s, device, stream, ts) -> np.ndarray:
    return event('"ph": "f", "id": ', corr_s, ', "pid": ', device, ', "tid": ', stream, ', "ts": ', ts, ',\n    "cat": "ac2g", "name": "ac2g", "bp": "e"')


def _kernel_events(k, external) -> np.ndarray:
    device = ints(k["agent"])
    stream = ints(k["stream"])
    corr_s = ints(k["correlation_id"])
    ts = us_text(k["start"].to_numpy())
    dur = us_text((k["end"] - k["start"]).to_numpy())
    gx, gy, gz = (k[f"grid_{a}"].to_numpy() // k[f"wg_{a}"].to_numpy() for a in "xyz")  # blocks
    text = event(
        '"ph": "X", "cat": "kernel", "name": ',
        strings(k["name"].astype(str)),
        ', "pid": ',
        device,
        ', "tid": ',
        stream,
        ',\n    "ts": ',
        ts,
        ', "dur": ',
        dur,
        ',\n    "args": {\n      "External id": ',
        ints(external),
        ',      "device": ',
        device,
        ', "stream": ',
        stream,
        ',      "correlation": ',
        corr_s,
        ', "kind": "Dispatch Kernel",      "grid": [',
        ints(gx),
        ", ",
        ints(gy),
        ", ",
        ints(gz),
        '],      "block": [',
        ints(k["wg_x"]),
        ", ",
        ints(k["wg_y"]),
        ", ",
        ints(k["wg_z"]),
        "]",
        _collective_args(k),
        "\n    }",
    )
    return text + ",\n" + _flow_end(corr_s, device, stream, ts)


def _collective_args(k) -> np.ndarray | str:
    """PyTorch's collective args of the kernels whose ``coll_bytes`` is set (the kernels
    table's ``collective``, ``coll_bytes``, ``coll_ranks``), "" for the others:
    ``Collective name``, ``In/Out msg nelems`` (AllGather's input and ReduceScatter's output
    are one rank's share), ``Group size`` and ``dtype`` ("Float" when the sizes are whole
    floats, else "Byte"), so that max(nelems) × dtype size is ``coll_bytes`` again."""
    if "coll_bytes" not in k.columns or not (k["coll_bytes"].to_numpy() >= 0).any():
        return ""
    out = np.full(len(k), "", dtype=object)
    for i, (name, size, ranks) in enumerate(zip(k["collective"].astype(str).tolist(), k["coll_bytes"].tolist(), k["coll_ranks"].tolist(), strict=True)):
        if size < 0:
            continue
        n = max(int(ranks), 1)
        word = 4 if size % (4 * n) == 0 else 1
        nelems = size // word
        share = nelems // n if nelems % n == 0 else nelems
        nin, nout = (share, nelems) if "gather" in name else (nelems, share) if "scatter" in name else (nelems, nelems)
        out[i] = (
            f',      "Collective name": {json.dumps(name)}, "In msg nelems": {nin}, "Out msg nelems": {nout}, "Group size": {int(ranks)}, '
            f'"dtype": "{"Float" if word == 4 else "Byte"}", "In split size": "[]", "Out split size": "[]", '
            f'"Process Group Name": "0", "Process Group Description": "default_pg"'
        )
    return out


def _copy_events(c, external) -> np.ndarray:
    direction = c["direction"].astype(str).to_numpy()
    gpu = np.where(direction == "HtoD", c["dst_agent"].to_numpy(), c["src_agent"].to_numpy())
    device = ints(gpu)
    stream = ints(c["stream"])
    corr_s = ints(c["correlation_id"])
    ts = us_text(c["start"].to_numpy())
    dur_ns = (c["end"] - c["start"]).to_numpy()
    bandwidth = c["bytes"].to_numpy() / np.maximum(dur_ns, 1)  # bytes/ns = GB/s
    text = event(
        '"ph": "X", "cat": "gpu_memcpy", "name": ',
        strings([COPY_LABEL.get(d, d) for d in direction]),
        ', "pid": ',
        device,
        ', "tid": ',
        stream,
        ',\n    "ts": ',
        ts,
        ', "dur": ',
        us_text(dur_ns),
        ',\n    "args": {\n      "External id": ',
        ints(external),
        ',      "device": ',
        device,
        ', "stream": ',
        stream,
        ',      "correlation": ',
        corr_s,
        ', "kind": ',
        strings(direction),
        ', "bytes": ',
        ints(c["bytes"]),
        ', "memory bandwidth (GB/s)": ',
        np.array([repr(float(b)) for b in bandwidth], dtype=object),
        "\n    }",
    )
    return text + ",\n" + _flow_end(corr_s, device, stream, ts)


def _metadata(run: SynthRun, t_first: int) -> np.ndarray:
    """Process and thread name/label/sort-index metadata events (``ph: M``)."""
    pid = run.spec.pid
    ts = us_text(np.array([t_first]))[0]

    def meta(name: str, p: int, t: int, key: str, value) -> str:
        return f'  {{\n    "name": "{name}", "ph": "M", "ts": {ts}, "pid": {p}, "tid": {t},\n    "args": {{\n      "{key}": {json.dumps(value)}\n    }}\n  }}'

    out = [
        meta("process_name", pid, 0, "name", "python3"),
        meta("process_labels", pid, 0, "labels", "CPU"),
        meta("process_sort_index", pid, 0, "sort_index", pid),
    ]
    for agent in run.gpu_agents:
        out += [
            meta("process_name", agent.id, 0, "name", "python3"),
            meta("process_labels", agent.id, 0, "labels", f"GPU {agent.id}"),
            meta("process_sort_index", agent.id, 0, "sort_index", 5_000_000 + agent.id),
        ]
    c = run.copies
    copy_gpu = np.where(c["direction"].astype(str) == "HtoD", c["dst_agent"], c["src_agent"])
    streams = pd.concat([run.kernels[["agent", "stream"]], pd.DataFrame({"agent": copy_gpu, "stream": c["stream"].to_numpy()})])
    streams = streams.astype(np.int64).drop_duplicates().sort_values(["agent", "stream"])
    for agent, stream in streams.itertuples(index=False):
        out += [
            meta("thread_name", int(agent), int(stream), "name", f"stream {int(stream)} "),
            meta("thread_sort_index", int(agent), int(stream), "sort_index", int(stream)),
        ]
    for tid in sorted(set(run.api["tid"].tolist())):
        out += [meta("thread_name", pid, tid, "name", f"thread {tid} (python3)"), meta("thread_sort_index", pid, tid, "sort_index", tid)]
    return np.array(out, dtype=object)
