"""Cross-check the Kineto loader against Holistic Trace Analysis (HTA) on the same files.

HTA (PyPI ``holistictraceanalysis``) lives in its own venv, never in the project venv:

    python3.11 -m venv /work/venv-hta
    /work/venv-hta/bin/pip install holistictraceanalysis "pandas<3"   # HTA 0.5.0 breaks on pandas 3

Run ``/work/venv/bin/python bench/hta_crosscheck.py [files...]``: it runs one subprocess per
side (``--side hta`` under /work/venv-hta, ``--side ours`` under the project venv), each
printing JSON, and prints a markdown comparison (used in docs/hta_crosscheck.md).

Numbers compared (µs):
* kernel count and per-name count / total duration (top 5 by total);
* GPU busy time = union of kernel, memcpy and memset intervals over all devices of the file:
  HTA side from HTA's own parser output (``Trace.parse_traces``, before TraceAnalysis'
  ProfilerStep filtering) merged with HTA's ``merge_kernel_intervals``; ours from the loaded
  Run (kernels + copies). For reference also HTA's ``get_temporal_breakdown`` numbers
  (``kernel_time - idle_time``), which count every event with a ``stream`` arg (also
  ``cuda_sync`` and Triton launcher ``cpu_op`` events) after dropping the last ProfilerStep
  and kernels not launched inside the kept steps;
* span = first GPU op start to last GPU op end;
* per-stream idle: HTA ``get_idle_time_breakdown`` summed over categories = sum of gaps
  between consecutive GPU events of a stream (kernel/memcpy/memset).

HTA rounds float (ns resolution) timestamps to whole µs unless HTA_DISABLE_NS_ROUNDING=1; the
HTA side is run with rounding disabled so both sides see the same timestamps (the ``rounded``
columns show HTA's default for reference).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HTA_PYTHON = os.environ.get("HTA_PYTHON", "/work/venv-hta/bin/python")
DEFAULT_FILES = sorted(str(p) for p in (ROOT / "tests" / "data" / "kineto").glob("*.json.gz"))


def hta_side(files: list[str]) -> dict:
    import logging

    logging.disable(logging.WARNING)
    from hta.common.trace import Trace
    from hta.trace_analysis import TraceAnalysis
    from hta.utils.utils import merge_kernel_intervals

    out = {}
    for f in files:
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copy(f, tmp)
            # HTA's parser output before TraceAnalysis filters it (ProfilerStep windows).
            trace = Trace(trace_dir=tmp)
            trace.parse_traces(use_multiprocessing=False)
            (rank,) = trace.traces.keys()
            df = trace.traces[rank].copy()
            sym = trace.symbol_table.get_sym_table()
            df["cat_s"] = [sym[i] for i in df["cat"]]
            df["name_s"] = [sym[i] for i in df["name"]]
            kernels = df[df["cat_s"] == "kernel"]
            per_name = kernels.groupby("name_s")["dur"].agg(["count", "sum"]).sort_values("sum", ascending=False)
            gpu_ops = df[df["cat_s"].isin(["kernel", "gpu_memcpy", "gpu_memset"])].copy()
            merged = merge_kernel_intervals(gpu_ops)
            busy = float((merged["end"] - merged["ts"]).sum())  # HTA itself subtracts the two sums (loses µs on epoch ts)
            span = float(merged["end"].iloc[-1] - merged["ts"].iloc[0])
            # HTA's own analyses (after its ProfilerStep filtering).
            analyzer = TraceAnalysis(trace_dir=tmp)
            temporal = analyzer.get_temporal_breakdown(visualize=False).iloc[0]
            idle = analyzer.get_idle_time_breakdown(visualize=False)
            idle_df = idle[0] if isinstance(idle, tuple) else idle
            per_stream = idle_df.groupby("stream")["idle_time"].sum()
            filtered = analyzer.t.get_trace(rank)
            n_filtered = int((filtered["cat"] == analyzer.t.symbol_table.get_sym_id_map().get("kernel", -9)).sum())
            out[Path(f).name] = {
                "kernels": int(len(kernels)),
                "top": [[n, int(r["count"]), float(r["sum"])] for n, r in per_name.head(5).iterrows()],
                "busy_us": busy,
                "span_us": span,
                "temporal_busy_us": float(temporal["kernel_time(us)"] - temporal["idle_time(us)"]),
                "temporal_span_us": float(temporal["kernel_time(us)"]),
                "analysis_kernels": n_filtered,
                "stream_idle_us": {str(int(k)): float(v) for k, v in per_stream.items()},
            }
    return out


def union_ns(start, end) -> int:
    """Total length of the union of [start, end) intervals (ns)."""
    import numpy as np

    if len(start) == 0:
        return 0
    order = np.argsort(start, kind="stable")
    s, e = np.asarray(start)[order], np.asarray(end)[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > reach[:-1]
    group = np.cumsum(new) - 1
    g_start = s[new]
    g_end = np.zeros(group[-1] + 1, dtype=np.int64)
    np.maximum.at(g_end, group, e)
    return int((g_end - g_start).sum())


def ours_side(files: list[str]) -> dict:
    import numpy as np
    import pandas as pd

    sys.path.insert(0, str(ROOT))
    from tui_prof.loaders.kineto import load_file

    out = {}
    for f in files:
        run = load_file(Path(f))
        k, c = run.kernels, run.copies
        starts = np.concatenate([k["start"], c["start"]])
        ends = np.concatenate([k["end"], c["end"]])
        per_name = (k.assign(dur=k["end"] - k["start"]).groupby("name", observed=True)["dur"].agg(["count", "sum"])).sort_values("sum", ascending=False)
        gpu = pd.concat([k[["start", "end", "stream"]], c[["start", "end", "stream"]]], ignore_index=True).sort_values("start", kind="stable")
        stream_idle = {}
        for stream, ops in gpu.groupby("stream"):
            gaps = ops["start"].to_numpy()[1:] - ops["end"].to_numpy()[:-1]
            stream_idle[str(int(stream))] = float(gaps.sum()) / 1000
        busy_dev = {}
        for agent in sorted(set(k["agent"]) | set(c["dst_agent"]) | set(c["src_agent"]) - {-1}):
            kk = k[k["agent"] == agent]
            cc = c[(c["dst_agent"] == agent) | (c["src_agent"] == agent)]
            busy_dev[str(int(agent))] = union_ns(np.concatenate([kk["start"], cc["start"]]), np.concatenate([kk["end"], cc["end"]])) / 1000
        out[Path(f).name] = {
            "kernels": int(len(k)),
            "top": [[n, int(r["count"]), float(r["sum"]) / 1000] for n, r in per_name.head(5).iterrows()],
            "busy_us": union_ns(starts, ends) / 1000,
            "busy_kernels_copies_per_device_us": busy_dev,
            "span_us": float(ends.max() - starts.min()) / 1000 if len(starts) else 0.0,
            "stream_idle_us": stream_idle,
        }
    return out


def run_side(python: str, side: str, files: list[str], env=None) -> dict:
    cmd = [python, __file__, "--side", side, *files]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{side} side failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def short(name: str, width: int = 60) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def report(files: list[str]) -> str:
    env = dict(os.environ, HTA_DISABLE_NS_ROUNDING="1")
    hta = run_side(HTA_PYTHON, "hta", files, env)
    hta_rounded = run_side(HTA_PYTHON, "hta", files)
    ours = run_side(sys.executable, "ours", files)
    lines = [
        "| file | kernels HTA | kernels ours | GPU busy µs HTA | GPU busy µs ours | span µs HTA | span µs ours | HTA µs-rounded busy | HTA temporal-breakdown busy / span (kernels) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in hta:
        h, o, r = hta[name], ours[name], hta_rounded[name]
        lines.append(
            f"| {name} | {h['kernels']} | {o['kernels']} | {h['busy_us']:.3f} | {o['busy_us']:.3f} | "
            f"{h['span_us']:.3f} | {o['span_us']:.3f} | {r['busy_us']:.0f} | "
            f"{h['temporal_busy_us']:.3f} / {h['temporal_span_us']:.3f} ({h['analysis_kernels']}) |"
        )
    lines += ["", "Top kernels by total time (count, total µs), HTA vs ours:", ""]
    for name in hta:
        lines.append(f"* **{name}**")
        for (hn, hc, ht), (on, oc, ot) in zip(hta[name]["top"], ours[name]["top"]):
            same = "same name" if hn == on else f"ours: {short(on, 40)}"
            lines.append(f"  * `{short(hn)}`: HTA {hc} / {ht:.3f} — ours {oc} / {ot:.3f} ({same})")
    lines += ["", "Per-stream idle (sum of gaps between consecutive GPU ops, µs), HTA vs ours:", ""]
    for name in hta:
        pairs = ", ".join(
            f"stream {s}: {v:.3f} / {ours[name]['stream_idle_us'].get(s, float('nan')):.3f}"
            for s, v in sorted(hta[name]["stream_idle_us"].items(), key=lambda kv: int(kv[0]))
        )
        lines.append(f"* {name}: {pairs}")
    lines += ["", "Our GPU busy per device (kernels + copies only, µs):", ""]
    for name in ours:
        lines.append(f"* {name}: {ours[name]['busy_kernels_copies_per_device_us']}")
    lines += ["", "```json", json.dumps({"hta": hta, "hta_rounded": hta_rounded, "ours": ours}, indent=1), "```"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--side", choices=("hta", "ours"))
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    files = args.files or DEFAULT_FILES
    if args.side == "hta":
        print(json.dumps(hta_side(files)))
    elif args.side == "ours":
        print(json.dumps(ours_side(files)))
    else:
        print(report(files))


if __name__ == "__main__":
    main()
