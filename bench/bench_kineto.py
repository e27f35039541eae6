"""Load a ~100 MB Kineto trace with our loader and with HTA's parser; wall time and peak RSS.

The trace is built from tests/data/kineto/mi300__resnet_act_checkpoint.json.gz (MI300X,
56k events) by repeating its events N times, each copy shifted by the trace span and with
correlation / flow ids offset, so the result is a valid, longer trace. Each side runs in its
own subprocess; peak RSS is that child's ru_maxrss (os.wait4).

    /work/venv/bin/python bench/bench_kineto.py [--mb 100] [--hta-python /work/venv-hta/bin/python]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests" / "data" / "kineto" / "mi300__resnet_act_checkpoint.json.gz"

OURS = """
import sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from tui_prof.loaders.kineto import load_file
t = time.perf_counter(); run = load_file(Path({path!r})); dt = time.perf_counter() - t
print(dt, len(run.kernels), len(run.api), len(run.markers))
"""
HTA = """
import logging, time
logging.disable(logging.WARNING)
from hta.common.trace import Trace
t = time.perf_counter(); tr = Trace(trace_dir={dir!r}); tr.parse_traces(use_multiprocessing=False); dt = time.perf_counter() - t
df = next(iter(tr.traces.values()))
print(dt, len(df), 0, 0)
"""


def build(target_mb: float, out: Path) -> int:
    data = json.load(gzip.open(SOURCE))
    events = data["traceEvents"]
    body = [e for e in events if e.get("ph") != "M"]
    meta = [e for e in events if e.get("ph") == "M"]
    span = max(e["ts"] + e.get("dur", 0) for e in body if isinstance(e.get("ts"), float)) - min(
        e["ts"] for e in body if isinstance(e.get("ts"), float)
    )
    one = len(json.dumps(body))
    copies = max(1, round(target_mb * 1e6 / one))
    result = list(meta)
    for i in range(copies):
        shift = round(i * (span + 1000.0), 3)
        for e in body:
            e2 = dict(e)
            if isinstance(e2.get("ts"), float):
                e2["ts"] = round(e2["ts"] + shift, 3)
            if "id" in e2:
                e2["id"] = e2["id"] + i * 10_000_000
            if "args" in e2 and "correlation" in e2["args"]:
                e2["args"] = dict(e2["args"], correlation=e2["args"]["correlation"] + i * 10_000_000)
            result.append(e2)
    data["traceEvents"] = result
    out.write_text(json.dumps(data))
    return copies


def measure(python: str, code: str) -> tuple[float, float, str]:
    """Run ``code`` in a child; (wall s, peak RSS MiB of that child from wait4, last stdout line)."""
    t = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        child = subprocess.Popen([python, "-c", code], stdout=out, stderr=subprocess.PIPE, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t
        if status:
            raise SystemExit(child.stderr.read()[-2000:])
        out.seek(0)
        return wall, usage.ru_maxrss / 1024, out.read().strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=100)
    parser.add_argument("--hta-python", default="/work/venv-hta/bin/python")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big_rank0.json"
        copies = build(args.mb, path)
        size = path.stat().st_size / 1e6
        print(f"trace: {size:.1f} MB, {copies} copies of {SOURCE.name}")
        wall, rss, out = measure(sys.executable, OURS.format(root=str(ROOT), path=str(path)))
        print(f"ours: subprocess wall {wall:.2f} s, load {float(out.split()[0]):.2f} s, peak RSS {rss:.0f} MiB, kernels/api/markers {out.split()[1:]}")
        wall, rss2, out = measure(args.hta_python, HTA.format(dir=tmp))
        print(f"HTA:  subprocess wall {wall:.2f} s, parse {float(out.split()[0]):.2f} s, peak RSS {rss2:.0f} MiB, rows {out.split()[1]}")


if __name__ == "__main__":
    main()
