"""Synthetic runs with known answers, written in real profiler file layouts.

``build(SynthSpec(...))`` -> :class:`SynthRun` (events + ``expected`` answers); writers:
:func:`tui_prof.synth.write_csv.write_rocprofv3_csv` (rocprofv3 7.x CSV) and
:func:`tui_prof.synth.write_rocpd.write_rocpd` (rocpd SQLite, schema 3).

CLI: ``python -m tui_prof.synth OUTDIR --format csv|rocpd --dispatches N --sync per_launch|end``
writes ``OUTDIR/<hostname>/<pid>_*.csv`` or ``OUTDIR/<hostname>/<pid>_results.db`` and prints
the expected answers as JSON (``--answers FILE`` also saves them). ``--generator ranks``
(multi-rank collectives: ``--ranks``, ``--slow-rank``, ``--slow-pct``, ``--collective``),
``--generator steps`` (a training loop of marked steps: ``--steps``) and ``--generator
rocprof-compute`` (a rocprof-compute workload folder) write the other generators' runs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from tui_prof.synth.spec import ARCHES, GEMM_NAME, SYNC_MODES, Expected, SynthRun, SynthSpec, build, summary

__all__ = ["FORMATS", "GEMM_NAME", "SYNC_MODES", "Expected", "SynthRun", "SynthSpec", "build", "main", "summary", "write_run"]


FORMATS = ("csv", "rocpd", "pftrace", "kineto")
GENERATORS = ("run", "ranks", "steps", "rocprof-compute")


def write_run(run: SynthRun, outdir: str | Path, fmt: str, *, hostname: str = "synthhost", pid: int = 4242) -> Path:
    """Write ``run`` under ``outdir`` in ``fmt`` (one of :data:`FORMATS`), in the layout
    that profiler writes; returns the file or folder written."""
    outdir = Path(outdir)
    if fmt == "csv":
        from tui_prof.synth.write_csv import write_rocprofv3_csv

        return Path(write_rocprofv3_csv(run, outdir, hostname=hostname, pid=pid))
    if fmt == "rocpd":
        from tui_prof.synth.write_rocpd import write_rocpd

        return Path(write_rocpd(run, outdir / hostname / f"{pid}_results.db", hostname=hostname))
    if fmt == "pftrace":
        from tui_prof.synth.write_pftrace import write_pftrace

        (outdir / hostname).mkdir(parents=True, exist_ok=True)
        return Path(write_pftrace(run, outdir / hostname / f"{pid}_results.pftrace"))
    if fmt == "kineto":
        from tui_prof.synth.write_kineto import write_kineto

        outdir.mkdir(parents=True, exist_ok=True)
        return Path(write_kineto(run, outdir / f"{hostname}_{pid}.pt.trace.json.gz"))
    raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: generate one synthetic run and print its known answers."""
    parser = argparse.ArgumentParser(prog="python -m tui_prof.synth", description="Write a synthetic GPU run whose answers are known by construction.")
    parser.add_argument("outdir", help="output folder (files go to OUTDIR/<hostname>/)")
    parser.add_argument("--format", choices=FORMATS, default="csv")
    parser.add_argument("--dispatches", type=int, default=None, help="total kernel dispatches (rounded up to whole iterations on every GPU)")
    parser.add_argument("--iterations", type=int, default=None, help="used when --dispatches is not given (default 200; ranks: 3)")
    parser.add_argument("--kernels-per-iteration", type=int, default=10)
    parser.add_argument("--gpus", type=int, default=1)
    parser.add_argument("--streams", type=int, default=1)
    parser.add_argument("--sync", choices=SYNC_MODES, default="per_launch")
    parser.add_argument("--gap-ns", type=int, default=SynthSpec.gap_ns, help="host work between API calls (ns)")
    parser.add_argument("--gemm-share", type=float, default=SynthSpec.gemm_share)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--arch", choices=ARCHES, default="gfx942", help="the GPU: gfx942 (MI300X) or gfx1151 (Radeon 8060S, WMMA)")
    parser.add_argument("--htod-copies", type=int, default=SynthSpec.htod_copies)
    parser.add_argument("--dtoh-copies", type=int, default=SynthSpec.dtoh_copies)
    parser.add_argument("--hostname", default="synthhost")
    parser.add_argument("--pid", type=int, default=4242)
    parser.add_argument("--answers", default=None, help="also write the expected answers as JSON to this file")
    parser.add_argument(
        "--generator",
        choices=GENERATORS,
        default="run",
        help="run: one process (the options above); ranks: a multi-rank collective run (--ranks, --slow-rank, "
        "--slow-pct, --collective; --format csv or kineto); steps: a training loop of marked steps (--steps; "
        "--format kineto or csv); rocprof-compute: a rocprof-compute workload folder (counters with known metrics)",
    )
    parser.add_argument("--ranks", type=int, default=4, help="ranks: processes in the job")
    parser.add_argument("--slow-rank", type=int, default=1, help="ranks: the straggler (-1: none)")
    parser.add_argument("--slow-pct", type=int, default=50, help="ranks: how much more compute the straggler does (%%)")
    parser.add_argument("--collective", action="append", default=None, help="ranks: a collective per iteration (repeatable; default AllReduce)")
    parser.add_argument("--steps", type=int, default=8, help="steps: steps in the loop")
    args = parser.parse_args(argv)
    if args.generator != "run":
        try:
            answers_of = _other_generator(args)
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        return _print_answers(answers_of, args.answers)

    iterations = 200 if args.iterations is None else args.iterations
    if args.dispatches is not None:
        per_iteration = args.kernels_per_iteration * args.gpus
        iterations = max(1, math.ceil(args.dispatches / per_iteration))
    try:
        spec = SynthSpec(
            iterations=iterations,
            kernels_per_iteration=args.kernels_per_iteration,
            gpus=args.gpus,
            streams=args.streams,
            sync=args.sync,
            gap_ns=args.gap_ns,
            gemm_share=args.gemm_share,
            seed=args.seed,
            pid=args.pid,
            arch=args.arch,
            htod_copies=args.htod_copies,
            dtoh_copies=args.dtoh_copies,
        )
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    run = build(spec, hostname=args.hostname)
    t1 = time.perf_counter()
    where = write_run(run, args.outdir, args.format, hostname=args.hostname, pid=args.pid)
    t2 = time.perf_counter()
    answers = summary(run.expected)
    text = json.dumps(answers, indent=2)
    if args.answers:
        with open(args.answers, "w") as out:
            out.write(text + "\n")
    print(text)
    print(f"wrote {where} ({spec.dispatches} dispatches; build {t1 - t0:.2f} s, write {t2 - t1:.2f} s)", file=sys.stderr)
    return 0


def _print_answers(answers: dict, path: str | None) -> int:
    text = json.dumps(answers, indent=2)
    if path:
        with open(path, "w") as out:
            out.write(text + "\n")
    print(text)
    return 0


def _other_generator(args: argparse.Namespace) -> dict:
    """Write the run of ``--generator`` ranks / steps / rocprof-compute; its known answers."""
    from dataclasses import asdict

    if args.generator == "ranks":
        from tui_prof.synth.ranks import RankSpec, write_ranks_streaming

        if args.format not in ("csv", "kineto"):
            raise ValueError(f"--generator ranks writes csv or kineto, not {args.format}")
        spec = RankSpec(
            ranks=args.ranks,
            iterations=RankSpec.iterations if args.iterations is None else args.iterations,
            slow_rank=None if args.slow_rank < 0 else args.slow_rank,
            slow_pct=args.slow_pct,
            collectives=tuple(args.collective or RankSpec.collectives),
        )
        expected = write_ranks_streaming(spec, args.outdir, args.format)  # one rank in memory at a time
        print(f"wrote {args.outdir} ({spec.ranks} ranks)", file=sys.stderr)
        return {"generator": "ranks", **asdict(expected), "wait_by_rank": expected.wait_by_rank}
    if args.generator == "steps":
        from tui_prof.synth.steps import StepSpec, build_steps

        run, step_answers = build_steps(StepSpec(steps=args.steps, pid=args.pid))
        where = write_run(run, args.outdir, args.format, hostname=args.hostname, pid=args.pid)
        print(f"wrote {where} ({args.steps} steps)", file=sys.stderr)
        return {"generator": "steps", **asdict(step_answers)}
    from tui_prof.synth.write_rocprof_compute import counter_workload, write_rocprof_compute

    kernels = counter_workload()
    where = write_rocprof_compute(args.outdir, kernels)
    print(f"wrote {where} ({len(kernels)} kernels)", file=sys.stderr)
    keep = ("name", "dispatches", "expected", "flagged", "occupancy_limiter", "bound")
    return {"generator": "rocprof-compute", "kernels": [{k: v for k, v in asdict(kernel).items() if k in keep} for kernel in kernels]}
