"""Many tiny processes (issue 30, point 15): N one-row rocprofv3 kernel traces, one process
each, in one host folder (or ``--hosts`` folders).

Each row runs in a fresh child process, tuiprof's batched load beside its reference (the
same load with every unit read on its own, as before the batches) in the same invocation:

* ``load``: ``load_path(run)`` (no cache): wall time of the load alone (imports excluded),
  its wall and CPU time per process (the CPU time is the figure to read on a shared,
  loaded machine), and the memory it keeps per process (RSS after the load minus
  RSS before it, divided by the processes);
* ``summary``: the whole ``tuiprof summary --no-cache`` command (wall, CPU, peak RSS; it ends
  as the command does, ``cli.run``: no teardown of the loaded runs), the
  analysis of N processes included, beside its reference: a child with the same imports
  that only loads the run (``load alone``); the difference per process is what the
  analysis and the report cost per process. ``--before DIR`` also runs the command from
  another tree (``git archive <commit> | tar -x -C DIR``: the code before a change) in the
  same invocation;
* ``floor``: what no load can avoid: the imports of the summary command and, per file,
  the scan's guarded look at its head and the batch's guarded read (stat, access,
  ``O_NONBLOCK`` open + ``fstat``), nothing parsed: the floor of the whole command.

With ``--agent-info`` every process also writes the ``<pid>_agent_info.csv`` rocprofv3
writes beside its traces (the same content on a host).

    python bench/bench_tiny.py [--files 5000] [--hosts 1] [--agent-info] [--rows load,summary,floor] [--data DIR] [--before DIR] [--no-reference]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from _measure import run_checked

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
HEADER = (
    '"Kind","Agent_Id","Queue_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id",'
    '"Start_Timestamp","End_Timestamp","Private_Segment_Size","Group_Segment_Size",'
    '"Workgroup_Size_X","Workgroup_Size_Y","Workgroup_Size_Z","Grid_Size_X","Grid_Size_Y","Grid_Size_Z"'
)

LOAD_CHILD = r"""
import gc, json, sys, time
sys.path.insert(0, {root!r})
from tui_prof.loaders import detect, load_path
if {unbatched!r}:
    detect._batched = lambda *args, **kwargs: set()

def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
gc.collect()
before = rss()
t, cpu = time.perf_counter(), time.process_time()
runset = load_path({path!r})
wall, cpu = time.perf_counter() - t, time.process_time() - cpu
gc.collect()
kept = rss() - before
n = len(runset.runs)
print(json.dumps({{"runs": n, "issues": len(runset.issues), "load_s": round(wall, 3), "load_cpu_s": round(cpu, 3), "cpu_ms_per_unit": round(cpu / n * 1e3, 3), "ms_per_unit": round(wall / n * 1e3, 3), "kb_per_unit": round(kept / n / 1024, 1)}}))
"""

SUMMARY_CHILD = r"""
import sys
sys.path.insert(0, {root!r})
from tui_prof.loaders import detect
if {unbatched!r}:
    detect._batched = lambda *args, **kwargs: set()
from tui_prof import cli
sys.stdout = open("/dev/null", "w")
sys.argv = ["tuiprof", "summary", "--no-cache", {path!r}]
cli.run()  # as the tuiprof command ends: os._exit after the exit handlers, no teardown of the runs
"""

LOAD_ALONE_CHILD = r"""
import sys
sys.path.insert(0, {root!r})
from tui_prof import cli
from tui_prof.analysis.api import build_summary
from tui_prof.loaders import load_path
from tui_prof.render.summary import summary_text
runset = load_path({path!r}, use_cache=False)
print('{{"runs": %d}}' % len(runset.runs), flush=True)
cli._end_now(0)  # as the command ends (see the summary child)
"""

FLOOR_CHILD = r"""
import os, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from tui_prof import cli
from tui_prof.analysis.api import build_summary
from tui_prof.loaders import load_path
from tui_prof.loaders.base import open_regular, read_head
from tui_prof.render.summary import summary_text
n = 0
for folder, _, names in os.walk({path!r}):
    for name in sorted(n for n in names if not n.startswith(".")):  # not the generator's .complete mark
        path = Path(folder) / name
        path.stat()
        os.access(path, os.R_OK)
        read_head(path)  # the scan's guarded look at the head
        with open_regular(path) as fh:  # the batch's guarded read
            fh.read(65537)
        n += 1
print('{{"files": %d}}' % n)
"""


AGENT_INFO = (
    '"Node_Id","Logical_Node_Id","Agent_Type","Name","Wave_Front_Size","Cu_Count","Simd_Per_Cu","Max_Waves_Per_Simd"\n'
    '0,0,"CPU","AMD EPYC 9654",0,0,0,0\n'
    '1,1,"GPU","gfx942",64,304,4,8\n'
)


def make_run(data: Path, files: int, hosts: int, agent_info: bool = False) -> Path:
    """``files`` one-row kernel traces (one process each, running together) over ``hosts``
    host folders (``agent_info``: each process's agent_info beside them)."""
    out = data / f"tiny-{files}-{hosts}{'-agents' if agent_info else ''}-overlapping"
    done = out / ".complete"
    if done.exists():
        return out
    for i in range(files):
        host = out / f"host{i % hosts}"
        host.mkdir(parents=True, exist_ok=True)
        # each kernel overlaps the next: the processes ran together (one recording, so the
        # summary analyses all of them; one after the other on a host is a recording each)
        pid, start = 100_000 + i, 1_700_000_000_000_000_000 + i * 100
        row = f'"KERNEL_DISPATCH",1,1,{pid},1,16,"kernel_{i % 7}(float*)",1,{start},{start + 500 + i % 13},0,0,64,1,1,1024,1024,1'
        (host / f"{pid}_kernel_trace.csv").write_text(f"{HEADER}\n{row}\n")
        if agent_info:
            (host / f"{pid}_agent_info.csv").write_text(AGENT_INFO)
    done.write_text("")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--hosts", type=int, default=1)
    parser.add_argument("--agent-info", action="store_true", help="each process also writes its agent_info.csv")
    parser.add_argument("--rows", default="load,summary")
    parser.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "tuiprof-bench"))
    parser.add_argument("--before", help="also run the summary from this tree (the code before a change)")
    parser.add_argument("--no-reference", action="store_true", help="load row: the batched load alone (the unit-by-unit reference takes minutes at 5,000)")
    args = parser.parse_args()
    run = make_run(Path(args.data), args.files, args.hosts, args.agent_info)
    print(f"{args.files} one-row kernel traces{' with agent_info' if args.agent_info else ''} over {args.hosts} host folder(s): {run}")
    for row in args.rows.split(","):
        if row == "load":
            children = [("batched", LOAD_CHILD, ROOT, False), ("reference (unit by unit)", LOAD_CHILD, ROOT, True)][: 1 if args.no_reference else 2]
        else:
            children = [("whole command", SUMMARY_CHILD, ROOT, False), ("reference (load alone)", LOAD_ALONE_CHILD, ROOT, False)]
            if row == "floor":  # imports + the guarded scan and read of every file, nothing parsed
                children = [("imports + guarded opens", FLOOR_CHILD, ROOT, False)]
            elif args.before:
                children.append(("whole command, --before", SUMMARY_CHILD, Path(args.before).resolve(), False))
        cpu = {}
        for label, child, root, unbatched in children:
            code = child.format(root=str(root), unbatched=unbatched, path=str(run))
            result = run_checked([PY, "-c", code], env={"TUIPROF_CACHE_DIR": os.path.join(args.data, "no-cache-used")})
            shown = {k: result[k] for k in ("wall_s", "cpu_s", "peak_rss_mb", "load1") if k in result}
            shown.update(
                {k: v for k, v in result.items() if k in ("runs", "files", "issues", "load_s", "load_cpu_s", "ms_per_unit", "cpu_ms_per_unit", "kb_per_unit")}
            )
            if row != "load":
                cpu[label] = result["cpu_s"]
                shown["cpu_ms_per_process"] = result["cpu_s"] / args.files * 1e3
            print(f"{row:8s} {label:26s} {json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in shown.items()})}")
        if row == "summary":
            extra = {label: round((c - cpu["reference (load alone)"]) / args.files * 1e3, 3) for label, c in cpu.items() if label.startswith("whole")}
            print(f"{row:8s} {'beyond the load, CPU ms per process':26s} {json.dumps(extra)}")


if __name__ == "__main__":
    main()
