"""Benchmark: our streaming pftrace loader vs whole-file ``Trace.ParseFromString`` + iteration.

Generates a synthetic rocprofv3 pftrace (default 1M kernels + 1M hipLaunchKernel calls,
perfetto-SDK interning and incremental timestamps) in a temp dir, then times each reader
in its own subprocess (wall time, CPU time, peak RSS from ``getrusage``), ``--repeat``
times interleaved, and prints the best of each.

The baseline parses the whole file with the bundled (upb) protobuf classes and walks every
packet, reading what the loader needs (interned names, timestamp, type, track, name,
category, debug-annotation name and value) into Python lists; it builds no tables and
pairs no slices, so it is a lower bound for a message-class loader.

    python bench/bench_pftrace.py [--kernels 1000000] [--repeat 3] [--keep FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def worker_ours(path: str) -> dict:
    from tui_prof.loaders.pftrace import read_trace

    run, problem = read_trace(Path(path))
    return {"kernels": len(run.kernels), "api": len(run.api), "problem": problem}


def worker_baseline(path: str) -> dict:
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace

    with open(path, "rb") as fh:
        trace = Trace.FromString(fh.read())
    names: dict = {}
    rows = []
    for packet in trace.packet:
        if packet.HasField("interned_data"):
            for item in packet.interned_data.event_names:
                names[item.iid] = item.name
        if packet.HasField("track_event"):
            event = packet.track_event
            args = {}
            for ann in event.debug_annotations:
                kind = ann.WhichOneof("value")
                args[ann.name_iid] = getattr(ann, kind) if kind else None
            rows.append((packet.timestamp, event.type, event.track_uuid, names.get(event.name_iid),
                         list(event.category_iids), args))
    begins = sum(1 for r in rows if r[1] == 1)
    return {"events": len(rows), "slice_begins": begins}


def run_worker(kind: str, path: str) -> dict:
    cmd = [sys.executable, __file__, "--worker", kind, path]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", help="write the trace here (reused if it exists) instead of a temp dir")
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        kind, path = args.worker
        t0, c0 = time.perf_counter(), time.process_time()
        result = worker_ours(path) if kind == "ours" else worker_baseline(path)
        result["wall_s"] = time.perf_counter() - t0
        result["cpu_s"] = time.process_time() - c0
        result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return

    from tui_prof.synth.spec import SynthSpec, build
    from tui_prof.synth.write_pftrace import write_pftrace

    tmp = None
    if args.keep:
        path = Path(args.keep)
    else:
        tmp = tempfile.TemporaryDirectory()
        path = Path(tmp.name) / "bench_results.pftrace"
    if not path.exists():
        t0 = time.perf_counter()
        spec = SynthSpec(iterations=max(args.kernels // 10, 1), kernels_per_iteration=10, sync="end", streams=2)
        write_pftrace(build(spec), path, layout="queue", sdk="7")
        print(f"generated {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.0f} s", flush=True)

    best: dict[str, dict] = {}
    for _ in range(args.repeat):
        for kind in ("ours", "baseline"):
            result = run_worker(kind, str(path))
            if kind not in best or result["wall_s"] < best[kind]["wall_s"]:
                best[kind] = result
            print(kind, json.dumps(result), flush=True)

    print(f"\nfile: {path.stat().st_size / 1e6:.0f} MB; best of {args.repeat} runs each, own subprocess")
    print(f"{'reader':<44} {'wall s':>8} {'cpu s':>8} {'peak RSS MB':>12}")
    labels = {"ours": "tui_prof pftrace loader (full Run tables)",
              "baseline": "Trace.ParseFromString(whole) + iterate"}
    for kind in ("ours", "baseline"):
        r = best[kind]
        print(f"{labels[kind]:<44} {r['wall_s']:>8.2f} {r['cpu_s']:>8.2f} {r['peak_rss_mb']:>12.0f}")
    speedup = best["baseline"]["wall_s"] / best["ours"]["wall_s"]
    print(f"speed-up {speedup:.1f}x; memory ratio {best['baseline']['peak_rss_mb'] / best['ours']['peak_rss_mb']:.1f}x")
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
