"""Benchmark: ``tuiprof summary --no-cache`` of a pftrace vs protobuf's C (upb) parse of it.

The yardstick (issue 33 item 15) is what a user of the Perfetto Python protos would do first:
``Trace.FromString`` of the whole file with protobuf's C implementation (upb; the bench
refuses to run on the pure-Python one) plus a count of its track events. tuiprof's side is
the whole ``tuiprof summary --no-cache FILE`` command (load, analyse, print). Each side runs
in its own subprocess (wall, CPU = user + sys, peak RSS from ``wait4``; imports included),
in pairs (ours, then the reference, back to back, so both see the same load), ``--repeat``
pairs (default 5); the figure is the median of the per-pair ratios, with the median of each
side and the 1-minute load average before each run. Target: <= 0.4x.

The data is the ``bench_scale.py`` pftrace (rocprofv3 layout, interned names: 1M kernel
dispatches + 2M HIP calls, one hipLaunchKernel + one hipDeviceSynchronize per dispatch),
generated once into ``--keep`` (default ``$TMPDIR/tuiprof-bench/pftrace-1000000/...``).

``--walk`` adds the earlier reference, a whole-file parse plus a Python walk over every
field the loader needs (interned names, timestamp, type, track, name, category, debug
annotations) into lists; ``--loader`` adds our loader alone (``read_trace``, no analysis).

    python bench/bench_pftrace.py [--kernels 1000000] [--repeat 5] [--keep FILE] [--walk] [--loader] [--names interned,inline]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _measure import run_checked


def worker_ours(path: str) -> dict:
    from tui_prof.loaders.pftrace import read_trace

    run, problem = read_trace(Path(path))
    return {"kernels": len(run.kernels), "api": len(run.api), "problem": problem}


def worker_upb(path: str) -> dict:
    """The reference: the whole file parsed by protobuf's C implementation, its track events counted."""
    from google.protobuf.internal import api_implementation

    if api_implementation.Type() != "upb":
        raise SystemExit(f"protobuf's {api_implementation.Type()} implementation: the reference needs upb (pip install protobuf>=4.21)")
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace

    with open(path, "rb") as fh:
        trace = Trace.FromString(fh.read())
    events = sum(1 for packet in trace.packet if packet.HasField("track_event"))
    return {"track_events": events, "packets": len(trace.packet), "implementation": api_implementation.Type()}


def worker_walk(path: str) -> dict:
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


WORKERS = {"loader": worker_ours, "upb": worker_upb, "walk": worker_walk}
ROOT = Path(__file__).resolve().parents[1]


def generate(path: Path, kernels: int, names: str = "interned") -> None:
    """The bench_scale.py pftrace run (one synthetic process, rocprofv3 layout); ``names``:
    interned (as rocprofv3 writes) or inline (on every event, as writers that do not intern)."""
    sys.path.insert(0, str(ROOT))  # run as a script: the tree's package, installed or not
    from tui_prof.synth import SynthSpec, build
    from tui_prof.synth.write_pftrace import write_pftrace

    t0 = time.perf_counter()
    path.parent.mkdir(parents=True, exist_ok=True)
    spec = SynthSpec(iterations=max(1, -(-kernels // 10)), kernels_per_iteration=10, sync="per_launch", seed=0, pid=4242)
    write_pftrace(build(spec, hostname="synthhost"), path, names=names)
    print(f"generated {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t0:.0f} s", flush=True)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kernels", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5, help="pairs (ours, reference) run; the figure is the median ratio")
    parser.add_argument("--keep", help="the trace (generated there if missing); default: bench_scale.py's 1M-dispatch pftrace in $TMPDIR/tuiprof-bench")
    parser.add_argument(
        "--walk", action="store_true", help="also time the whole-file parse + Python walk over every field (the earlier reference; about 12 GB at 1M kernels)"
    )
    parser.add_argument("--loader", action="store_true", help="also time our loader alone (read_trace, no analysis)")
    parser.add_argument(
        "--names",
        default="interned",
        help="interned,inline: also time our loader on the same run with every name inline (FILE.inline), against the interned file",
    )
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        kind, path = args.worker
        t0, c0 = time.perf_counter(), time.process_time()
        result = WORKERS[kind](path)
        result["inner_wall_s"] = time.perf_counter() - t0
        result["inner_cpu_s"] = time.process_time() - c0
        print(json.dumps(result))
        return

    default = Path(tempfile.gettempdir()) / "tuiprof-bench" / f"pftrace-{args.kernels}" / "synthhost" / "4242_results.pftrace"
    path = Path(args.keep) if args.keep else default
    if not path.exists():
        generate(path, args.kernels)
    inline = path.with_name(path.name + ".inline")
    if "inline" in args.names.split(",") and not inline.exists():
        generate(inline, args.kernels, "inline")
    env = {"TUIPROF_CACHE_DIR": tempfile.mkdtemp(prefix="tuiprof-bench-pftrace-"), "PYTHONPATH": str(ROOT)}  # --no-cache: the folder stays empty
    commands = {
        "ours": [sys.executable, "-m", "tui_prof.cli", "summary", "--no-cache", str(path)],
        "upb": [sys.executable, __file__, "--worker", "upb", str(path)],
    }
    if args.loader or "inline" in args.names.split(","):
        commands["loader"] = [sys.executable, __file__, "--worker", "loader", str(path)]
    if "inline" in args.names.split(","):
        commands["loader-inline"] = [sys.executable, __file__, "--worker", "loader", str(inline)]
    if args.walk:
        commands["walk"] = [sys.executable, __file__, "--worker", "walk", str(path)]
    print(f"{path} ({path.stat().st_size / 1e6:.0f} MB); {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
    runs: dict[str, list[dict]] = {k: [] for k in commands}
    for i in range(args.repeat):
        for kind, argv in commands.items():  # ours then the reference, back to back: a pair sees one load
            result = run_checked(argv, env, cwd=ROOT)
            runs[kind].append(result)
            shown = {k: result[k] for k in ("wall_s", "cpu_s", "peak_rss_mb", "load1") if k in result}
            print(f"pair {i + 1} {kind}: {json.dumps(shown)}", flush=True)
    ratios = [o["wall_s"] / r["wall_s"] for o, r in zip(runs["ours"], runs["upb"], strict=True)]
    cpu_ratios = [o["cpu_s"] / r["cpu_s"] for o, r in zip(runs["ours"], runs["upb"], strict=True)]
    print(f"\n{args.repeat} pairs, each side in its own subprocess; medians")
    print(f"{'side':<58} {'wall s':>8} {'cpu s':>8} {'peak RSS MB':>12} {'load':>10}")
    labels = {
        "ours": "tuiprof summary --no-cache",
        "upb": "Trace.FromString (upb) + count track events",
        "loader": "tui_prof pftrace loader alone (read_trace)",
        "walk": "Trace.FromString + Python walk over every field",
        "loader-inline": "tui_prof pftrace loader, names inline (FILE.inline)",
    }
    for kind, results in runs.items():
        loads = [r["load1"] for r in results]
        print(
            f"{labels[kind]:<58} {median([r['wall_s'] for r in results]):>8.2f} {median([r['cpu_s'] for r in results]):>8.2f} "
            f"{median([r['peak_rss_mb'] for r in results]):>12.0f} {min(loads):>4.1f}-{max(loads):<4.1f}"
        )
    print(f"ours / reference, per pair: {', '.join(f'{r:.3f}' for r in ratios)}")
    print(f"median ratio: {median(ratios):.3f}x wall (target <= 0.4x), {median(cpu_ratios):.3f}x CPU")
    shutil.rmtree(env["TUIPROF_CACHE_DIR"], ignore_errors=True)
    if "loader-inline" in runs:
        inline_ratios = [i["wall_s"] / r["wall_s"] for i, r in zip(runs["loader-inline"], runs["loader"], strict=True)]
        print(f"inline / interned names, our loader: median {median(inline_ratios):.2f}x wall (target <= 2x)")


if __name__ == "__main__":
    main()
