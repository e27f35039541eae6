"""Benchmark: our streaming pftrace loader vs whole-file ``Trace.ParseFromString`` + iteration.

Generates a synthetic rocprofv3 pftrace (issue 8 size: 1M kernel dispatches + 2M HIP calls
-- hipLaunchKernel and hipDeviceSynchronize per launch -- plus copies, perfetto-SDK interning
and incremental timestamps; 440 MB) in a temp dir, then times each reader in its own
subprocess (wall time, CPU time, peak RSS from ``getrusage``; imports included), ``--repeat``
times interleaved, and prints the best of each with the machine load (``os.getloadavg``)
seen before each run: other jobs share the CPUs, so CPU time is the fairer figure.

The baseline parses the whole file with the bundled (upb) protobuf classes and walks every
packet, reading what the loader needs (interned names, timestamp, type, track, name,
category, debug-annotation name and value) into Python lists; it builds no tables and
pairs no slices, so it is a lower bound for a message-class loader.

    python bench/bench_pftrace.py [--kernels 1000000] [--repeat 2] [--keep FILE] [--names interned,inline] [--no-baseline]

``--names interned,inline`` also writes the same run with every name inline (the layout of
Perfetto writers that do not intern) and times both layouts, interleaved.

Results (2026-11-26, this 2-core VM shared with other jobs; load = 1-min load average before
each run; best of 2 by wall; 440 MB file, 1M kernels + 2M HIP calls + 3 copies, 6M events):

    reader                                        wall s   cpu s  peak RSS MB  load
    tui_prof loader, packet-layout fast path        6.47    4.15          972  5.16
    tui_prof loader before (general path only)     20.85   15.31         1360  4.34  (one run)
    Trace.ParseFromString(whole) + iterate         83.56   57.54        11713  5.27

  -> 13.9x less CPU and 12x less memory than the reference; 3.7x less CPU than before.
  Wall time is inflated by the load (a 2-core machine at load 5 gives one process well under
  one core): the 4.15 s of CPU is the figure to hold against the 5 s target. Of it, about
  0.6 s is importing numpy/pandas (``python -X importtime``), about 2 s decoding chunks
  (framing, layout matching, columns) and about 1.2 s pairing slices and building tables.
  Profile: ``python -m cProfile -s tottime`` on ``read_trace``; before the change 80 % went
  to the per-field numpy rounds (``_walk``, ``_annotations``), now no function dominates.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

from _measure import run_checked


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
            rows.append((packet.timestamp, event.type, event.track_uuid, names.get(event.name_iid), list(event.category_iids), args))
    begins = sum(1 for r in rows if r[1] == 1)
    return {"events": len(rows), "slice_begins": begins}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--keep", help="write the trace here (reused if it exists) instead of a temp dir; the inline-names file gets the suffix .inline")
    parser.add_argument("--names", default="interned", help="comma list of name layouts to time: interned (as rocprofv3 writes), inline (names on every event)")
    parser.add_argument("--no-baseline", action="store_true", help="leave out the whole-file Trace parse (it needs about 12 GB at 1M kernels)")
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
        base = Path(args.keep)
    else:
        tmp = tempfile.TemporaryDirectory()
        base = Path(tmp.name) / "bench_results.pftrace"
    layouts = [n.strip() for n in args.names.split(",") if n.strip()]
    paths = {n: base if n == "interned" else base.with_name(base.name + "." + n) for n in layouts}
    for names, path in paths.items():
        if not path.exists():
            t0 = time.perf_counter()
            spec = SynthSpec(iterations=max(args.kernels // 10, 1), kernels_per_iteration=10, sync="per_launch", streams=2)
            write_pftrace(build(spec), path, layout="queue", sdk="7", names=names)
            print(f"generated {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.0f} s", flush=True)

    kinds = [("ours", n) for n in layouts] + ([] if args.no_baseline else [("baseline", layouts[0])])
    best: dict[tuple[str, str], dict] = {}
    for _ in range(args.repeat):
        for kind, names in kinds:  # interleaved: every reader sees the same machine load
            result = run_checked([sys.executable, __file__, "--worker", kind, str(paths[names])])
            if (kind, names) not in best or result["wall_s"] < best[kind, names]["wall_s"]:
                best[kind, names] = result
            print(kind, names, json.dumps(result), flush=True)

    print(f"\nbest of {args.repeat} runs each, own subprocess")
    print(f"{'reader':<52} {'MB':>6} {'wall s':>8} {'cpu s':>8} {'peak RSS MB':>12} {'load':>6}")
    for kind, names in kinds:
        r = best[kind, names]
        label = f"tui_prof pftrace loader, {names} names" if kind == "ours" else f"Trace.ParseFromString(whole) + iterate, {names}"
        size = paths[names].stat().st_size / 1e6
        print(f"{label:<52} {size:>6.0f} {r['wall_s']:>8.2f} {r['cpu_s']:>8.2f} {r['peak_rss_mb']:>12.0f} {r['load1']:>6.2f}")
    first = best["ours", layouts[0]]
    if ("baseline", layouts[0]) in best:
        ref = best["baseline", layouts[0]]
        print(f"{layouts[0]} / reference: {first['wall_s'] / ref['wall_s']:.3f}x wall, {first['cpu_s'] / ref['cpu_s']:.3f}x cpu")
    for names in layouts[1:]:
        r = best["ours", names]
        print(f"{names} / {layouts[0]}: {r['wall_s'] / first['wall_s']:.2f}x wall, {r['cpu_s'] / first['cpu_s']:.2f}x cpu")
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
