"""Export benchmark (issue 19): time and peak memory of ``tuiprof export`` per input.

Each export runs in a fresh child process that loads the run first (through the columnar
cache, warmed by a first load, so the load is not what is measured), notes its peak RSS
(VmHWM) after the load, exports, and reports the export's wall time, the peak RSS after
it, and the output's size. ``export_extra_mb`` = peak after the export - peak after the
load: the memory the export itself needed. The row ``analysis`` is the part both exports
compute first (gaps and findings, :func:`tui_prof.export.common.analyse`): the Perfetto
writer streams (CHUNK rows at a time), so its figure stays at the analysis's while the
output grows ten-fold between the 100k and 1M generated runs; the Parquet writer converts
one table at a time (the largest, the gaps of a 1M-gap run, is its peak).

    python bench/bench_export.py [--dispatches 1000000] [--samples] [--data DIR]

Generated runs (rocprofv3 CSV, one hipLaunchKernel + one hipDeviceSynchronize per
dispatch, bench_scale.make_run) are kept in ``--data`` (default ``$TMPDIR/tuiprof-bench``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from _measure import run_checked

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
SAMPLES = {
    "rocpd": ROOT / "tests/data/rocpd/28_results.db",
    "rocprofv3-json": ROOT / "tests/data/rocprofv3_json/908_results.json.gz",
    "rocprofv3-csv": ROOT / "tests/data/rocprofv3_csv/rocprofv3-docs-rocm7",
    "kineto": ROOT / "tests/data/kineto/mi300__resnet_act_checkpoint.json.gz",
}
KINDS = ("analysis", "parquet", "perfetto-json", "perfetto-gz")


def _hwm_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(kind: str, path: str, out: str) -> dict:
    from tui_prof.export.parquet import export_parquet
    from tui_prof.export.perfetto import export_perfetto
    from tui_prof.loaders import load_path

    t = time.perf_counter()
    runset = load_path(path)
    load_s = time.perf_counter() - t
    after_load = _hwm_mb()
    t = time.perf_counter()
    if kind == "analysis":  # what both exports compute first (gaps, findings): its share of their peak
        from tui_prof.export.common import analyse

        analyse(runset)
        size = 0
    elif kind == "parquet":
        export_parquet(runset, out)
        size = sum(p.stat().st_size for p in Path(out).iterdir())
    else:
        export_perfetto(runset, out)
        size = Path(out).stat().st_size
    export_s = time.perf_counter() - t
    peak = _hwm_mb()
    return {
        "load_s": round(load_s, 2),
        "export_s": round(export_s, 2),
        "peak_after_load_mb": round(after_load),
        "peak_mb": round(peak),
        "export_extra_mb": round(peak - after_load),
        "out_mb": round(size / 2**20, 1),
        "dispatches": int(sum(len(r.kernels) for r in runset.runs)),
    }


def measure(name: str, path: Path, work: Path, env: dict, kinds: list[str]) -> list[dict]:
    rows = []
    run_checked([PY, __file__, "--child", "warm", str(path), ""], env)  # fills the cache
    for kind in kinds:
        out = work / f"{name}-{kind}" if kind in ("parquet", "analysis") else work / f"{name}.{'json.gz' if kind == 'perfetto-gz' else 'json'}"
        result = run_checked([PY, __file__, "--child", kind, str(path), str(out)], env)
        result.update({"input": name, "export": kind})
        rows.append(result)
        print(json.dumps(result), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dispatches", type=int, nargs="*", default=[100_000, 1_000_000])
    parser.add_argument("--samples", action="store_true", help="also the real samples of tests/data")
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "tuiprof-bench"))
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated: " + ", ".join(KINDS))
    parser.add_argument("--child", nargs=3, metavar=("KIND", "PATH", "OUT"))
    args = parser.parse_args()
    if args.child:
        kind, path, out = args.child
        if kind == "warm":
            from tui_prof.loaders import load_path

            load_path(path)
            print("{}")
            return
        print(json.dumps(child(kind, path, out)))
        return
    sys.path.insert(0, str(ROOT))
    from bench_scale import make_run

    with tempfile.TemporaryDirectory(prefix="tuiprof-export-bench-") as tmp:
        work = Path(tmp)
        env = {"TUIPROF_CACHE_DIR": str(work / "cache"), "PYTHONPATH": str(ROOT)}
        rows = []
        if args.samples:
            for name, path in SAMPLES.items():
                rows += measure(name, path, work, env, args.kinds.split(","))
        for n in args.dispatches:
            path = make_run(Path(args.data), "csv", n)
            rows += measure(f"synthetic-csv-{n}", path, work, env, args.kinds.split(","))
            for kind in KINDS:  # outputs of this size are not kept
                out = work / (
                    f"synthetic-csv-{n}-{kind}" if kind in ("parquet", "analysis") else f"synthetic-csv-{n}.{'json.gz' if kind == 'perfetto-gz' else 'json'}"
                )
                if out.is_dir():
                    for p in out.iterdir():
                        p.unlink()
                elif out.exists():
                    out.unlink()
    print("| input | export | dispatches | export s | peak RSS after load MB | peak RSS MB | export's extra MB | output MB |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['input']} | {r['export']} | {r['dispatches']} | {r['export_s']} | {r['peak_after_load_mb']} | {r['peak_mb']} | {r['export_extra_mb']} | {r['out_mb']} |"
        )


if __name__ == "__main__":
    main()
