"""Load a ~100 MB Kineto trace with our loader and with HTA's parser; wall time and peak RSS.

By default the trace is built from tests/data/kineto/mi300__resnet_act_checkpoint.json.gz (MI300X,
56k events) by repeating its events N times, each copy shifted by the trace span and with
correlation / flow ids offset, so the result is a valid, longer trace. Each side runs in its
own subprocess; peak RSS is that child's VmHWM (/proc/self/status, the high-water mark of
its own address space; os.wait4's ru_maxrss is also shown but on Linux it can include the
parent's RSS at fork/exec time, which matters when the parent has just built a big trace). ``--synth`` writes a
synthetic ROCm trace with tui_prof.synth.write_kineto instead (kernels, launches, flows only).

Files of at least kineto.PARALLEL_MIN_BYTES (64 MiB) of JSON text (gzip: inflated) are read in parallel pieces by
worker processes (``TUIPROF_LOAD_WORKERS``, default the CPU count). Our loader runs twice,
serial (``TUIPROF_LOAD_WORKERS=1``) then parallel, each in its own child; CPU includes the
workers (reaped children count in ``wait4``), and the parallel peak memory is given as the
sum parent VmHWM + workers x the largest worker's ``ru_maxrss`` (an upper bound).

    /work/venv/bin/python bench/bench_kineto.py [--mb 100] [--synth] [--no-hta] [--hta-python /work/venv-hta/bin/python]
        [--workers 0] [--repeat 1] [--trace FILE]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from _measure import run_child

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "data" / "kineto" / "mi300__resnet_act_checkpoint.json.gz"

OURS = """
import resource, sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from tui_prof.loaders.kineto import load_file, parallel_pieces
t = time.perf_counter(); run = load_file(Path({path!r})); dt = time.perf_counter() - t
hwm = [l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
workers = parallel_pieces(Path({path!r})) - 1
print(dt, len(run.kernels), len(run.api), len(run.markers), hwm, workers, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""
HTA = """
import logging, time
logging.disable(logging.WARNING)
from hta.common.trace import Trace
t = time.perf_counter(); tr = Trace(trace_dir={dir!r}); tr.parse_traces(use_multiprocessing=False); dt = time.perf_counter() - t
df = next(iter(tr.traces.values()))
hwm = [l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
print(dt, len(df), 0, 0, hwm)
"""


def build(target_mb: float, out: Path) -> int:
    """Write the repeated trace to ``out`` event by event (the builder never holds the copies)."""
    data = json.load(gzip.open(SOURCE))
    events = data["traceEvents"]
    body = [e for e in events if e.get("ph") != "M"]
    meta = [e for e in events if e.get("ph") == "M"]
    span = max(e["ts"] + e.get("dur", 0) for e in body if isinstance(e.get("ts"), float)) - min(e["ts"] for e in body if isinstance(e.get("ts"), float))
    one = len(json.dumps(body))
    copies = max(1, round(target_mb * 1e6 / one))
    keys = list(data)
    with open(out, "w") as fh:
        fh.write("{")
        for n, key in enumerate(keys):
            fh.write(", " if n else "")
            if key != "traceEvents":
                fh.write(f"{json.dumps(key)}: {json.dumps(data[key])}")
                continue
            fh.write('"traceEvents": [')
            fh.write(", ".join(json.dumps(e) for e in meta))
            for i in range(copies):
                shift = round(i * (span + 1000.0), 3)
                parts = []
                for e in body:
                    e2 = dict(e)
                    if isinstance(e2.get("ts"), float):
                        e2["ts"] = round(e2["ts"] + shift, 3)
                    if "id" in e2:
                        e2["id"] = e2["id"] + i * 10_000_000
                    if "args" in e2 and "correlation" in e2["args"]:
                        e2["args"] = dict(e2["args"], correlation=e2["args"]["correlation"] + i * 10_000_000)
                    parts.append(json.dumps(e2))
                fh.write(", " + ", ".join(parts))
            fh.write("]")
        fh.write("}")
    return copies


def build_synth(target_mb: float, out: Path) -> int:
    """Write a synthetic ROCm Kineto trace (tui_prof.synth.write_kineto) of about ``target_mb``."""
    from tui_prof.synth import SynthSpec
    from tui_prof.synth import build as synth_build
    from tui_prof.synth.write_kineto import write_kineto

    # ~1.45 KB of JSON per dispatch (launch call + kernel + flow pair) with the default spec
    iterations = max(1, round(target_mb * 1e6 / 1450 / 10))
    run = synth_build(SynthSpec(iterations=iterations, kernels_per_iteration=10, sync="per_iteration"))
    write_kineto(run, out)
    return run.expected.dispatches


def measure(python: str, code: str, env: dict | None = None) -> tuple[float, float, str]:
    """Run ``code`` in a child; (wall s, peak RSS MiB of that child from wait4, last stdout line).

    Also prints the child's CPU time (user + system, with its reaped worker processes) and
    the load average, because wall time on a shared machine depends on the other jobs."""
    r = run_child([python, "-c", code], env=env)
    if r["rc"]:
        raise SystemExit(r["error"])
    print(f"  (child CPU {r['cpu_s']:.2f} s, load average {r['load1']:.1f})")
    return r["wall_s"], r["peak_rss_mb"], r["last_line"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--hta-python", default="/work/venv-hta/bin/python")
    parser.add_argument("--synth", action="store_true", help="synthetic trace (write_kineto) instead of the repeated real one")
    parser.add_argument("--no-hta", action="store_true")
    parser.add_argument("--trace", default=None, help="measure this existing trace file instead of building one")
    parser.add_argument("--workers", default="0", help="TUIPROF_LOAD_WORKERS of the parallel run (0: CPU count)")
    parser.add_argument("--repeat", type=int, default=1, help="serial/parallel rounds (interleaved)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big_rank0.json"
        t = time.perf_counter()
        if args.trace:
            path = Path(tmp) / Path(args.trace).name
            os.symlink(Path(args.trace).resolve(), path)
            what = "given file"
        elif args.synth:
            n = build_synth(args.mb, path)
            what = f"synthetic, {n} dispatches"
        else:
            what = f"{build(args.mb, path)} copies of {SOURCE.name}"
        size = path.stat().st_size / 1e6
        print(f"trace: {size:.1f} MB ({what}), written in {time.perf_counter() - t:.1f} s")
        for _ in range(args.repeat):
            for label, workers in (("serial", "1"), ("parallel", args.workers)):
                wall, rss, out = measure(sys.executable, OURS.format(root=str(ROOT), path=str(path)), {"TUIPROF_LOAD_WORKERS": workers})
                f = out.split()
                n, child = int(f[5]), int(f[6]) / 1024
                total = int(f[4]) / 1024 + n * child
                print(
                    f"ours ({label}, {n} worker processes): subprocess wall {wall:.2f} s, load {float(f[0]):.2f} s, "
                    f"peak RSS {int(f[4]) / 1024:.0f} MiB + {n} x {child:.0f} MiB = {total:.0f} MiB "
                    f"(ru_maxrss {rss:.0f} MiB), kernels/api/markers {f[1:4]}"
                )
        if args.no_hta:
            return
        wall, rss2, out = measure(args.hta_python, HTA.format(dir=tmp))
        f = out.split()
        print(f"HTA:  subprocess wall {wall:.2f} s, parse {float(f[0]):.2f} s, peak RSS {int(f[4]) / 1024:.0f} MiB (ru_maxrss {rss2:.0f} MiB), rows {f[1]}")


if __name__ == "__main__":
    main()
