"""Command line: ``tuiprof summary|open|...``.

Heavy modules (pandas, textual) are imported inside the commands so ``tuiprof --help``
starts instantly.

Exit status: 0 success; 1 nothing could be loaded from the path; 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import sys

EXIT_OK = 0
EXIT_NOTHING_LOADED = 1
EXIT_USAGE = 2


def _progress_printer():
    """A progress callback that writes to stderr only when stderr is a terminal."""
    if not sys.stderr.isatty():
        return None

    def progress(stage: str, done: int, total: int) -> None:
        end = "\n" if stage == "done" else ""
        sys.stderr.write(f"\r\x1b[K{stage} {done}/{total}" if stage != "done" else "\r\x1b[K")
        sys.stderr.write(end)
        sys.stderr.flush()

    return progress


def cmd_summary(args: argparse.Namespace) -> int:
    from tui_prof.analysis.summary import build_summary
    from tui_prof.loaders import load_path
    from tui_prof.report import summary_text

    runset = load_path(args.path, progress=_progress_printer())
    for issue in runset.errors:
        print(f"tuiprof: {issue}", file=sys.stderr)
    if args.verbose:
        for issue in runset.skipped:
            print(f"tuiprof: skipped {issue}", file=sys.stderr)
    summary = build_summary(runset, top=None if args.top <= 0 else args.top)
    if args.json:
        json.dump(summary, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        print(summary_text(summary))
    if not runset.runs:
        print(f"tuiprof: nothing could be loaded from {args.path}", file=sys.stderr)
        return EXIT_NOTHING_LOADED
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    from tui_prof import __version__

    parser = argparse.ArgumentParser(
        prog="tuiprof",
        description="Terminal trace explorer for GPU profiler runs (rocprofv3, rocprof, PyTorch profiler).",
    )
    parser.add_argument("--version", action="version", version=f"tuiprof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    summary = sub.add_parser("summary", help="print formats, processes, agents and top kernels of a run")
    summary.add_argument("path", help="run directory or profiler output file")
    summary.add_argument("--json", action="store_true", help="machine-readable output (schema tuiprof.summary/1)")
    summary.add_argument("--top", type=int, default=20, help="number of kernels listed (0 = all; default 20)")
    summary.add_argument("-v", "--verbose", action="store_true", help="also list skipped files on stderr")
    summary.set_defaults(func=cmd_summary)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_OK
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("tuiprof: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as err:  # the last line of defence: no traceback reaches the user
        print(f"tuiprof: internal error: {type(err).__name__}: {err} (please report)", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
