"""Long mutation-fuzz campaign over every loader (issue 7).

    python bench/fuzz_run.py --per-loader 10000            # the recorded run (docs/reliability.md)
    python bench/fuzz_run.py --loader kineto --case 25 -v  # replay one case with its traceback

Case ``i`` of loader ``L`` is deterministic (``tests/fuzz/campaign.py``). Each case writes the
seed run directory with one file mutated into a fresh read-only directory whose name has a
space and non-ASCII characters, loads it with ``load_path``, builds the summary, and checks
the contract (``tests/fuzz/oracle.py``). Prints counts per loader and every distinct finding
with the first case that showed it; exit status 1 when any hard violation was found.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fuzz import oracle
from fuzz.campaign import build_case, run_one
from fuzz.oracle import HARD, SOFT
from fuzz.seeds import LOADERS


def _work(job):
    loader, start, stop, master_seed, summary_every = job
    rows = []
    for index in range(start, stop):
        try:
            result = run_one(loader, index, master_seed, summary=(index % summary_every == 0))
        except Exception as err:  # a bug of the fuzzer itself (building the input), not of tuiprof
            rows.append((loader, index, "?", "?", "?", 0.0, [("fuzzer-error", f"{type(err).__name__}: {err}"[:200])]))
            continue
        rows.append((loader, index, result.seed_name, result.target, result.mutation, result.seconds, [(v.kind, v.detail) for v in result.violations]))
    return rows


def _signature(kind: str, detail: str) -> str:
    """Group findings: drop numbers and quoted values so one bug is one line."""
    text = re.sub(r"\d+", "N", detail)
    text = re.sub(r"'[^']*'", "'…'", text)
    return f"{kind}: {text[:140]}"


def _dump(path, loaders, counts, seconds, slowest, findings, wall) -> None:
    Path(path).write_text(
        json.dumps(
            {
                "per_loader": {l: dict(counts[l]) for l in loaders},
                "mean_ms": {l: 1000 * seconds[l] / max(1, counts[l]["cases"]) for l in loaders},
                "slowest": slowest,
                "findings": findings,
                "wall_s": wall,
            },
            indent=1,
        )
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-loader", type=int, default=200, help="cases per loader (default 200)")
    parser.add_argument("--loader", action="append", choices=LOADERS, help="only these loaders (repeatable)")
    parser.add_argument("--seed", type=int, default=0, help="master seed (default 0)")
    parser.add_argument("--start", type=int, default=0, help="first case index (default 0)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument("--summary-every", type=int, default=1, help="also build the summary on every Nth case (default 1: all)")
    parser.add_argument("--case", type=int, help="replay one case (needs one --loader) and print its violations")
    parser.add_argument(
        "--max-seconds", type=float, default=None, help="stop after this much wall time and report the cases done (chunks are interleaved across loaders)"
    )
    parser.add_argument("--json", metavar="FILE", help="write per-loader counts and findings as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="print tracebacks")
    args = parser.parse_args(argv)
    loaders = args.loader or list(LOADERS)

    if args.case is not None:
        oracle.VERBOSE = True
        for loader in loaders:
            seed, target, files, desc = build_case(loader, args.case, args.seed)
            result = run_one(loader, args.case, args.seed)
            print(f"{loader} case {args.case}: seed {seed.name!r}, file {target!r} ({len(files[target])} bytes), mutation {desc}")
            for v in result.violations:
                print("  ", v)
            if not result.violations:
                print("   no violation")
        return 0

    oracle.VERBOSE = args.verbose
    chunk = 50
    # chunks interleaved across loaders, so a run stopped early has similar counts for each
    jobs = [
        (loader, s, min(s + chunk, args.start + args.per_loader), args.seed, args.summary_every)
        for s in range(args.start, args.start + args.per_loader, chunk)
        for loader in loaders
    ]
    t0 = time.time()
    counts: dict[str, Counter] = defaultdict(Counter)
    seconds: dict[str, float] = defaultdict(float)
    slowest: dict[str, tuple] = {}
    findings: dict[str, dict] = {}
    stopped = False
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        for rows in pool.imap(_work, jobs):
            if args.max_seconds is not None and time.time() - t0 > args.max_seconds:
                stopped = True
                pool.terminate()
                break
            for loader, index, seed_name, target, mutation, secs, violations in rows:
                counts[loader]["cases"] += 1
                seconds[loader] += secs
                if secs > slowest.get(loader, (0,))[0]:
                    slowest[loader] = (round(secs, 2), index, mutation)
                kinds = {k for k, _ in violations}
                counts[loader]["hard cases"] += bool(kinds & set(HARD))
                for kind in kinds:
                    counts[loader][kind] += 1
                for kind, detail in violations:
                    sig = f"{loader} {_signature(kind, detail)}"
                    entry = findings.setdefault(
                        sig, {"count": 0, "first_case": index, "loader": loader, "kind": kind, "example": detail[:300], "mutation": mutation, "file": target}
                    )
                    entry["count"] += 1
                    entry["first_case"] = min(entry["first_case"], index)
            done = sum(c["cases"] for c in counts.values())
            if args.json and done % 2000 < chunk:
                _dump(args.json, loaders, counts, seconds, slowest, findings, time.time() - t0)
            print(f"\r{done}/{len(loaders) * args.per_loader} cases, {time.time() - t0:.0f} s", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    wall = time.time() - t0

    print(
        f"command: python bench/fuzz_run.py --per-loader {args.per_loader} --seed {args.seed}"
        + f" --summary-every {args.summary_every}"
        + "".join(f" --loader {l}" for l in (args.loader or []))
        + f"  (jobs {args.jobs}, wall {wall:.0f} s{', stopped by --max-seconds' if stopped else ''})"
    )
    header = ["loader", "cases", "mean ms", "slowest s"] + list(HARD) + list(SOFT)
    print(" | ".join(header))
    for loader in loaders:
        c = counts[loader]
        print(
            " | ".join(
                [loader, str(c["cases"]), f"{1000 * seconds[loader] / max(1, c['cases']):.0f}", str(slowest.get(loader, ("-",))[0])]
                + [str(c[k]) for k in HARD + SOFT]
            )
        )
    print("\nfindings (signature, count, first case):")
    for sig, entry in sorted(findings.items(), key=lambda kv: (kv[1]["kind"] not in HARD, kv[0])):
        print(
            f"  [{entry['count']:5d}] case {entry['first_case']:5d} {sig}\n          e.g. {entry['file']} / {entry['mutation'][:70]}: {entry['example'][:200]}"
        )
    if args.json:
        _dump(args.json, loaders, counts, seconds, slowest, findings, wall)
    return 1 if any(counts[l][k] for l in loaders for k in HARD) else 0


if __name__ == "__main__":
    sys.exit(main())
