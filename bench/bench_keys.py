"""Key latency of ``tuiprof open`` in a real terminal (issue 33 item 9): the time from a
key's bytes reaching the terminal to the end of the screen update it causes.

The child is ``python -m tui_prof.cli open RUN`` on a pseudo-terminal (tests/pty_harness.py:
``os.openpty``, ``--cols`` × ``--rows``, TERM=xterm-256color), so the whole input path counts: the
driver's input thread, its escape-sequence parser, the key's binding and the repaint. The
parent waits for the first screen and every lazy pane (no output for ``--quiet-ms``), then
per round opens the first hotspot's dispatch list (Enter) and goes back with one of the
keys measured, each after the screen went quiet (Enter is timed too). A key's latency is the time from writing
its bytes to the last byte of the burst of output that follows it (a burst ends at
``--burst-ms`` without output). Esc is the case of interest: a lone ESC byte can be the
start of an escape sequence, so the terminal driver waits before it reports it; ``q``
does the same job (back) without that wait, ``j`` (a cursor move) is a small repaint.

    python bench/bench_keys.py [RUN] [--rounds 10] [--cols 120] [--rows 35] [--baseline DIR]

``--baseline DIR`` runs the same rounds on an earlier tree (``git archive REV | tar -x -C
DIR``) right before this one. The budget is 100 ms for any key (docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from pty_harness import Terminal  # noqa: E402  (the tests' pseudo-terminal harness)

DEFAULT_RUN = ROOT / "tests" / "data" / "kineto" / "h200" / "decode_eager.pt.trace.json.gz"
KEYS = {"esc": b"\x1b", "q": b"q", "j": b"j", "enter": b"\r"}


def measure(tree: Path, args) -> dict[str, list[float]]:
    term = Terminal(tree, args.run, args.cols, args.rows)
    quiet, burst = args.quiet_ms / 1000, args.burst_ms / 1000
    found: dict[str, list[float]] = {k: [] for k in KEYS}
    try:
        term.wait_quiet(max(quiet, 2.0))
        for _ in range(args.rounds):
            for name in ("esc", "q"):
                found["enter"].append(term.key(b"\r", burst))  # Enter: the first hotspot's dispatches
                term.wait_quiet(quiet)
                found[name].append(term.key(KEYS[name], burst))
                term.wait_quiet(quiet)
            found["j"].append(term.key(KEYS["j"], burst))
            term.wait_quiet(quiet)
    finally:
        term.close()
    return found


def report(label: str, found: dict[str, list[float]]) -> None:
    for name, times in found.items():
        ms = sorted(t * 1000 for t in times)
        print(f"{label:10} {name:4} n={len(ms):3}  median {statistics.median(ms):6.1f} ms  max {ms[-1]:6.1f} ms  min {ms[0]:6.1f} ms", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", nargs="?", type=Path, default=DEFAULT_RUN)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--cols", type=int, default=120)
    parser.add_argument("--rows", type=int, default=35)
    parser.add_argument("--quiet-ms", type=float, default=400)
    parser.add_argument("--burst-ms", type=float, default=60)
    parser.add_argument("--baseline", type=Path, help="an earlier tree, measured first")
    args = parser.parse_args()
    args.run = args.run.resolve()
    print(f"load {os.getloadavg()[0]:.2f}; {args.run.name}; {args.cols}x{args.rows}; burst ends after {args.burst_ms:g} ms without output")
    if args.baseline:
        report("baseline", measure(args.baseline.resolve(), args))
    report("this tree", measure(ROOT, args))


if __name__ == "__main__":
    main()
