"""Command line: ``tuiprof summary|open|...``.

Heavy modules (pandas, textual) are imported inside the commands so ``tuiprof --help``
starts instantly.

``tuiprof`` with no arguments opens the bundled sample run in the TUI.

Exit status: 0 success; 1 nothing could be loaded from the path (or the path cannot be
used: too long, not permitted; diff: a side holds no data, or ``--fail-on-regression`` could
judge no metric); 2 usage error (a bad option value, an empty path; export: a destination
inside the run directory, or holding files tuiprof did not write, or not writable);
3 internal error (reported on one line); 4 ``diff --fail-on-regression`` found a
regression; 130 interrupted (Ctrl-C). Every message on stderr is one line: characters a
terminal would act on (newlines, escape sequences, bidi controls) in a file name or an
option value are shown escaped (``\\n``, ``\\x1b``, ``⟨U+202E⟩``).
"""

from __future__ import annotations

import argparse
import errno
import gc
import math
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from tui_prof.exits import EXIT_DEGRADED, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_NOTHING_LOADED, EXIT_OK, EXIT_USAGE
from tui_prof.render.safe import safe_text

if TYPE_CHECKING:  # annotations only: the commands import what they use when they run
    from tui_prof.model import RunSet


def _progress_printer():
    """A progress callback that writes to stderr only when stderr is a terminal."""
    if not sys.stderr.isatty():
        return None

    import time

    last = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "done":
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            return
        now = time.monotonic()
        if now - last[0] < 0.1 and 0 < done < total:  # at most 10 updates a second
            return
        last[0] = now
        sys.stderr.write(f"\r\x1b[K{stage} {done}/{total} (Ctrl-C cancels)")
        sys.stderr.flush()

    return progress


INT64_MAX = 2**63 - 1  # the largest time in ns the tables and --json can hold (292 years)


def _say(message: object) -> None:
    """One line on stderr, prefixed ``tuiprof:``."""
    print(f"tuiprof: {safe_text(message)}", file=sys.stderr)


def _shown_path(path: object, limit: int = 160) -> str:
    """A path for a message: Python's repr (quoted; a newline, escape or bidi control in the
    name shown as ``\\n``, ``\\x1b``, ``\\u202e``), the middle of a very long one elided."""
    text = repr(os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else str(path))
    if len(text) > limit:
        text = f"{text[: limit // 2]}…{text[-limit // 2 :]} ({len(text) - 2} characters)"
    return text


def parse_duration_ns(text: str) -> int:
    """'10us', '2.5ms', '500ns', '1s' -> ns; a bare number is µs. A duration that is not a
    finite number, is negative or exceeds int64 ns is a usage error."""
    units = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
    value = text.strip().lower()
    for unit in sorted(units, key=len, reverse=True):
        if value.endswith(unit):
            number, scale = value[: -len(unit)], units[unit]
            break
    else:
        number, scale = value, 1_000
    amount: int | float
    try:
        amount = int(number)  # a whole number stays exact up to int64
    except ValueError:
        try:
            amount = float(number)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a duration: {text!r} (examples: 10us, 2ms, 500ns)") from None
    if not math.isfinite(amount):
        raise argparse.ArgumentTypeError(f"not a finite duration: {text!r} (examples: 10us, 2ms, 500ns)")
    if amount < 0:
        raise argparse.ArgumentTypeError(f"duration must not be negative: {text!r}")
    scaled = amount * scale
    if not math.isfinite(scaled) or round(scaled) > INT64_MAX:
        raise argparse.ArgumentTypeError(f"duration too long: {text!r} (at most {INT64_MAX} ns, about 292 years)")
    return round(scaled)


def parse_number(
    text: str,
    *,
    whole: bool = False,
    at_least: float = 0,
    above: float | None = None,
    at_most: float | None = None,
    what: str = "",
    note: str = "",
) -> Any:
    """The one bounded-number parser of the command line: a whole number (``whole``; an int)
    or a finite number (a float), at least ``at_least`` (or above ``above``), at most
    ``at_most``. Each failure is one argparse message naming the value: ``what`` names the
    thing expected (default "number"/"whole number"), ``note`` follows a bound's message."""
    try:
        value: Any = int(text) if whole else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a {what or ('whole number' if whole else 'number')}: {text!r}") from None
    if not whole and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    if above is not None and value <= above:
        raise argparse.ArgumentTypeError(f"must be above {above:g}: {text!r}{note}")
    if value < at_least:
        bound = "must not be negative" if at_least == 0 else f"must be at least {at_least:g}"
        raise argparse.ArgumentTypeError(f"{bound}: {text!r}{note}")
    if at_most is not None and value > at_most:
        raise argparse.ArgumentTypeError(f"too large: {text!r}{note}")
    return value


def parse_percent(text: str) -> float:
    """A percentage or percentage-point threshold: a finite number, 0 or more."""
    return parse_number(text)


def parse_factor(text: str) -> float:
    """A multiple of a median: a finite number above 1."""
    return parse_number(text, above=1)


def parse_count(text: str) -> int:
    """A count of listed rows: an integer, 0 or more (0: all)."""
    return parse_number(text, whole=True, at_most=INT64_MAX, note=" (0 lists all)")


def parse_cluster(text: str) -> str:
    """Where ``--cluster`` runs the ranks: local, local:N, pool, pool:N (N >= 1) or a Dask scheduler's tcp:// or tls:// address."""
    kind, _, count = text.partition(":")
    if kind in ("local", "pool") and (not count or (count.isdigit() and int(count) >= 1)):
        return text
    if text.startswith(("tcp://", "tls://")) and len(text) > 6:
        return text
    raise argparse.ArgumentTypeError(f"expected local[:N], pool[:N] or tcp://HOST:PORT, not {text!r}")


def parse_path(text: str) -> str:
    """A run path as given; the empty string is a usage error (it would mean the current
    folder, which nobody types on purpose)."""
    if not text:
        raise argparse.ArgumentTypeError("empty path (give a run directory or profiler output file)")
    return text


def _unreadable_path(path: str) -> str | None:
    """:func:`_unusable_path`, or the one line saying that ``path`` does not exist."""
    unusable = _unusable_path(path)
    if unusable is None and not os.path.lexists(path):  # worded as the loader words it (``_say`` escapes it)
        return f"{os.fsdecode(path)}: no such file or directory"
    return unusable


def _unusable_path(path: str) -> str | None:
    """Why ``path`` cannot be used (too long, a component too long, not permitted), or None.
    A path that does not exist is left to the loader, which reports it as an issue."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        reason = err.strerror or type(err).__name__
        if err.errno == errno.ENAMETOOLONG:
            reason += f" (the limit is {os.pathconf('/', 'PC_PATH_MAX')} bytes a path, {os.pathconf('/', 'PC_NAME_MAX')} a component)"
        return f"cannot open {_shown_path(path)}: {reason}"
    except ValueError as err:  # an embedded NUL (only through the Python API)
        return f"cannot open {_shown_path(path)}: {err}"
    return None


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one line (``_UsageError``, exit status EXIT_USAGE) instead
    of the usage text and a SystemExit."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see: {self.prog} --help)")


class _UsageError(Exception):
    """A bad option value found by a command: reported on one line, exit status EXIT_USAGE."""


def _category_rules(args: argparse.Namespace):
    """The rules of ``--categories FILE`` (None: the built-in rules)."""
    if not getattr(args, "categories", None):
        return None
    from tui_prof.analysis.api import load_category_rules

    try:
        return load_category_rules(args.categories)
    except ValueError as err:
        raise _UsageError(str(err)) from None


def cmd_summary(args: argparse.Namespace) -> int:
    from tui_prof.analysis.api import SummaryOptions, build_summary
    from tui_prof.loaders import load_path
    from tui_prof.render.summary import summary_markdown, summary_text

    rules = _category_rules(args)
    unusable = _unreadable_path(args.path)
    if unusable:  # one line: the reason (a missing path is not also "nothing could be loaded")
        _say(unusable)
        return EXIT_NOTHING_LOADED
    if args.cluster:
        return _summary_cluster(args, rules)
    progress = _progress_printer()
    runset = load_path(args.path, progress=progress, use_cache=not args.no_cache)
    for issue in runset.errors:
        _say(issue)
    if args.verbose:
        for issue in runset.skipped:
            _say(f"skipped {issue}")
    if not runset.runs:  # no report of zeros: the reason, one line
        _say(f"nothing could be loaded from {_shown_path(args.path)}")
        return EXIT_NOTHING_LOADED
    runset, status = _one_recording(runset, args.recording)
    if status is not None:
        return status
    # the loaded runs live until the command ends: out of the cyclic collector's sight, its
    # passes during the analysis walk only the analysis's own objects (with thousands of
    # processes the runs' pandas objects would make every full pass cost more than the step)
    gc.freeze()
    options = SummaryOptions(
        top=None if args.top <= 0 else args.top,
        gap_threshold_ns=args.gap_threshold,
        rules=rules,
        max_gaps=None if args.max_gaps <= 0 else args.max_gaps,
        step_name=args.step,
        warmup=args.warmup,
        **({"outlier_factor": args.outlier_factor} if args.outlier_factor is not None else {}),
    )
    summary = build_summary(runset, options, progress=progress)
    if progress:
        progress("done", 1, 1)
    if args.json:
        _write_json(summary)
    elif args.md:
        sys.stdout.write(summary_markdown(summary))
    else:
        print(summary_text(summary))
    return EXIT_OK


CLUSTER_ONLY_WITHOUT = ("md",)


def _merged_run(
    path: str,
    cluster: str,
    rules,
    *,
    use_cache: bool,
    threshold_ns: int | None = None,
    max_gaps: int | None = 200,
    step_options=None,
    check_only: bool = False,
    recording: int | None = None,
    verb: str = "summarised",
    planned=None,
):
    """``(merged run, None)`` of ``path`` summarised rank by rank on ``cluster`` (pool[:N],
    local[:N], tcp://HOST:PORT), its errors and failed ranks said on stderr; ``(None, status)``
    when it cannot be. Unless ``check_only``, narrowed to one recording as a whole-run load is
    (``recording``, else the one with most dispatches; said on stderr as :func:`_one_recording`).
    Then the second pass (the critical path and the findings, cluster.path_tasks) over the
    recording summarised. ``planned``: the run's plan when the caller made it (with these options)."""
    from pathlib import Path

    from tui_prof.analysis.api import DEFAULT_CATEGORY_RULES
    from tui_prof.cluster import ClusterError, DaskMissing, one_recording, path_task, plan, recording_pick, summarise_cluster, summarise_pool

    rules = rules or DEFAULT_CATEGORY_RULES
    progress = _progress_printer()

    def run(tasks, keep=None):
        if cluster == "pool" or cluster.startswith("pool:"):
            workers = int(cluster[5:]) if ":" in cluster else (os.cpu_count() or 1)
            return summarise_pool(tasks, rules, workers, progress, keep=keep, paths=paths, skip_paths=skip)
        return summarise_cluster(tasks, rules, cluster, progress, keep=keep, paths=paths, skip_paths=skip)

    paths = path_task if not check_only else None

    def skip(merged) -> bool:
        """No second pass now: a run of several recordings is merged again, one recording's
        partials only (its second pass then), and a bad ``--recording N`` ends the command."""
        pick, keep = recording_pick(merged, recording)
        return keep is not None or bool(pick.error)

    try:
        if planned is None:
            planned = plan(
                path, use_cache=use_cache, rules=rules, threshold_ns=threshold_ns, max_gaps=max_gaps, step_options=step_options, check_only=check_only
            )
        merged = run(planned.tasks)
        merged.planned = planned
        pick = None
        if not check_only and merged.merge.ranks:
            merged, pick = one_recording(merged, recording, run)
            merged.recordings = pick.count
    except ClusterError as err:
        _say(err)
        return None, EXIT_USAGE if isinstance(err, DaskMissing) else EXIT_NOTHING_LOADED
    if progress:
        progress("done", 1, 1)
    for line in planned.errors + merged.errors:
        _say(line)
    for label, reason in merged.failed:
        _say(f"rank {label} failed: {reason}")
    for label, reason in merged.paths.failed if merged.paths is not None else []:
        _say(f"rank {label}: no critical path ({reason}); the rest of the section is built")
    if not merged.merge.ranks:
        _say(f"nothing could be loaded from {_shown_path(path)}")
        return None, EXIT_NOTHING_LOADED
    shown = _shown_path(str(Path(path)))
    if pick is not None and pick.error:
        _say(f"{pick.error} ({shown})")
        return None, EXIT_USAGE
    if pick is not None and pick.count >= 2:
        _say(f"{shown} holds {pick.count} separate recordings (processes or files that did not run together):")
        for line in pick.listing:
            _say(f"  {line}")
        _say(f"{verb} recording {pick.chosen}; pick another with --recording N")
    return merged, None


def _merged_document(
    path: str,
    cluster: str,
    rules,
    top: int | None,
    *,
    use_cache: bool,
    threshold_ns: int | None = None,
    max_gaps: int | None = 200,
    step_options=None,
    sections: tuple[str, ...] | None = None,
    recording: int | None = None,
    verb: str = "summarised",
):
    """``((document, each rank's files), None)``: the merged summary document of ``path``
    listing ``top`` rows, read from the cache when a run with the same ranks' files, options
    and log files was merged before (tui_prof.cluster.document_key; only ``sections`` of it
    when given), else merged rank by rank on ``cluster`` (:func:`_merged_run`, narrowed to one
    recording) and cached; ``(None, status)`` when it cannot be. Only a run of one recording
    is cached, and ``--recording N`` reads no cached document: a hit then says nothing that a
    merge would have said about recordings."""
    from tui_prof.analysis.api import DEFAULT_CATEGORY_RULES
    from tui_prof.cluster import ClusterError, DaskMissing, cached_document, document_key, plan, require_engine, save_document

    rules = rules or DEFAULT_CATEGORY_RULES
    try:
        require_engine(cluster)
        planned = plan(path, use_cache=use_cache, rules=rules, threshold_ns=threshold_ns, max_gaps=max_gaps, step_options=step_options)
    except ClusterError as err:
        _say(err)
        return None, EXIT_USAGE if isinstance(err, DaskMissing) else EXIT_NOTHING_LOADED
    key = document_key(planned, top) if recording is None else None
    found = cached_document(key, sections)
    if found is not None:
        for line in planned.errors:
            _say(line)
        return found, None
    merged, status = _merged_run(path, cluster, rules, use_cache=use_cache, recording=recording, verb=verb, planned=planned)
    if merged is None:
        return None, status
    doc = merged.document(top)
    if merged.recordings < 2:
        save_document(key, merged, doc)
    return (doc, merged.files), None


def _summary_cluster(args: argparse.Namespace, rules) -> int:
    """``summary --cluster``: per-rank partials on a process pool (``pool[:N]``) or a Dask
    cluster (``local[:N]``, ``tcp://HOST:PORT``), merged here (docs/cluster.md)."""
    from tui_prof.render.partials import merged_text

    for name in CLUSTER_ONLY_WITHOUT:
        if getattr(args, name, None) not in (None, False):
            raise _UsageError(f"--{name.replace('_', '-')} needs the whole run in one process: not with --cluster")
    from tui_prof.analysis.api import StepOptions

    max_gaps = None if args.max_gaps <= 0 else args.max_gaps
    steps = StepOptions(args.step, args.warmup, **({"factor": args.outlier_factor} if args.outlier_factor is not None else {}))
    found, status = _merged_document(
        args.path,
        args.cluster,
        rules,
        None if args.top <= 0 else args.top,
        use_cache=not args.no_cache,
        threshold_ns=args.gap_threshold,
        max_gaps=max_gaps,
        step_options=steps,
        recording=args.recording,
    )
    if found is None:
        return status
    doc = found[0]
    if args.json:
        _write_json(doc)
    else:
        print(merged_text(doc))
    return EXIT_OK


def _one_recording(runset: RunSet, wanted: int | None, verb: str = "summarised") -> tuple[RunSet, int | None]:
    """``(runset, None)`` narrowed to one recording when PATH holds several (issue 32): the one
    asked for with ``--recording N``, else the one with the most kernel dispatches (processes
    that merge files of several recordings are split first); says on stderr which it
    ``verb`` and how to pick another. ``(runset, EXIT_USAGE)`` on a bad N."""
    from tui_prof.analysis.api import pick_recording

    choice = pick_recording(runset, wanted)
    if choice.error:
        _say(f"{choice.error} ({_shown_path(runset.root)})")
        return runset, EXIT_USAGE
    if choice.count < 2:
        return runset, None
    _say(f"{_shown_path(runset.root)} holds {choice.count} separate recordings (processes or files that did not run together):")
    for line in choice.listing:
        _say(f"  {line}")
    _say(f"{verb} recording {choice.chosen}; pick another with --recording N")
    return choice.runset, None


def cmd_check(args: argparse.Namespace) -> int:
    """``tuiprof check RUN``: the integrity report; exit 5 when some figure is degraded or unreliable."""
    from tui_prof.analysis.api import check_run
    from tui_prof.loaders import load_path
    from tui_prof.render.integrity import check_text

    unusable = _unusable_path(args.path)
    if unusable:
        _say(unusable)
        return EXIT_NOTHING_LOADED
    if getattr(args, "cluster", None):
        return _check_cluster(args)
    runset = load_path(args.path, progress=_progress_printer(), use_cache=not args.no_cache)
    if not runset.runs:
        for issue in runset.errors:
            _say(issue)
        _say(f"nothing could be loaded from {_shown_path(args.path)}")
        return EXIT_NOTHING_LOADED
    if args.recording is not None:
        runset, status = _one_recording(runset, args.recording, "checked")
        if status is not None:
            return status
    record = check_run(runset).record()
    if args.json:
        _write_json(record)
    else:
        print(check_text(record))
    return EXIT_DEGRADED if record["degraded"] else EXIT_OK


def _check_cluster(args: argparse.Namespace) -> int:
    """``check --cluster``: each rank's checks in the workers, the report merged here (the
    same ``tuiprof.check/1`` document and exit statuses as in one process)."""
    from pathlib import Path

    from tui_prof.cluster import check_report
    from tui_prof.render.integrity import check_text

    if args.recording is not None:
        raise _UsageError("--recording needs the whole run in one process: not with --cluster")
    merged, status = _merged_run(args.path, args.cluster, None, use_cache=not args.no_cache, check_only=True)
    if merged is None:
        return status
    record = check_report(merged, str(Path(args.path))).record()
    if args.json:
        _write_json(record)
    else:
        print(check_text(record))
    return EXIT_DEGRADED if record["degraded"] else EXIT_OK


def _scale_edit(text: str) -> tuple[str, float]:
    """``PATTERN=FACTOR`` of ``whatif --scale`` (the last ``=`` splits: a pattern may hold one)."""
    pattern, sep, factor = text.rpartition("=")
    if not sep or not pattern:
        raise argparse.ArgumentTypeError(f"expected PATTERN=FACTOR, got {text!r}")
    try:
        return pattern, parse_number(factor)
    except argparse.ArgumentTypeError as err:
        raise argparse.ArgumentTypeError(f"{text!r}: the factor: {err}") from None


def cmd_whatif(args: argparse.Namespace) -> int:
    """``tuiprof whatif RUN``: re-schedule the run's dependency graph with edited durations."""
    from tui_prof.analysis.api import Edits, WhatIfError, run_what_if
    from tui_prof.loaders import load_path
    from tui_prof.render.whatif import whatif_text

    rules = _category_rules(args)
    edits = Edits(scales=list(args.scale or []), removes=list(args.remove or []), launch_free=args.launch_free)
    try:
        edits.check()
    except WhatIfError as err:
        raise _UsageError(str(err)) from None
    unusable = _unusable_path(args.path)
    if unusable:
        _say(unusable)
        return EXIT_NOTHING_LOADED
    runset = load_path(args.path, progress=_progress_printer(), use_cache=not args.no_cache)
    for issue in runset.errors:
        _say(issue)
    if not runset.runs:
        _say(f"nothing could be loaded from {_shown_path(args.path)}")
        return EXIT_NOTHING_LOADED
    try:
        doc = run_what_if(runset, edits, rules=rules, step_name=args.step, warmup=args.warmup)
    except WhatIfError as err:
        _say(err)
        return EXIT_NOTHING_LOADED
    if args.json:
        _write_json(doc)
    else:
        print(whatif_text(doc))
    return EXIT_OK


def cmd_open(args: argparse.Namespace) -> int:
    """Run the Textual app; TEXTUAL_* variables are set before textual is imported."""
    import os

    if args.color_system != "auto":
        os.environ["TEXTUAL_COLOR_SYSTEM"] = args.color_system
    if args.ascii:  # tui_prof.tui.glyphs: ASCII timeline glyphs (also under a non-UTF-8 locale)
        os.environ["TUIPROF_ASCII"] = "1"
    path = args.path
    sample = getattr(args, "sample", None)
    if sample is not None and path is not None:
        _say("give a PATH or --sample, not both")
        return EXIT_USAGE
    if path is None:
        from tui_prof.samples import DEFAULT_SAMPLE, SAMPLE_ALIASES, sample_path

        try:
            path = sample_path(SAMPLE_ALIASES.get(sample, sample) if sample else DEFAULT_SAMPLE)
        except OSError as err:
            _say(f"cannot prepare the bundled sample run ({err}); give a run: tuiprof open RUN")
            return EXIT_NOTHING_LOADED
    else:
        unusable = _unusable_path(path)
        if unusable:
            _say(unusable)
            return EXIT_NOTHING_LOADED
        if not os.path.lexists(path):
            _say(f"{_shown_path(path)}: no such file or directory")
            return EXIT_NOTHING_LOADED
    if getattr(args, "cluster", None):
        return _open_cluster(args, str(path))
    from tui_prof.tui.app import TuiProfApp
    from tui_prof.tui.glyphs import plain_ansi

    # NO_COLOR or a 16-colour terminal: ANSI colours as they are (none at all with NO_COLOR)
    extra = {"ansi_color": True} if plain_ansi() else {}
    app = TuiProfApp(str(path), use_cache=not args.no_cache, recording=getattr(args, "recording", None), **extra)
    app.run(mouse=not args.no_mouse)
    if app.load_error:  # shown in the app until q; repeated here for the shell
        _say(app.load_error.splitlines()[0])
        return EXIT_USAGE if app.load_error.startswith("--recording") else EXIT_NOTHING_LOADED
    return EXIT_OK


def _open_cluster(args: argparse.Namespace, path: str) -> int:
    """``open --cluster``: the ranks merged from per-rank partials (computed before the app
    starts, progress on stderr), then the rank table; Enter loads one rank alone."""
    from tui_prof.cluster import HEAD_SECTIONS

    # a cached document's head: the sections the rank table reads (MergedRanksScreen.SECTIONS)
    found, status = _merged_document(
        path, args.cluster, None, 20, use_cache=not args.no_cache, sections=HEAD_SECTIONS, recording=getattr(args, "recording", None), verb="opened"
    )
    if found is None:
        return status
    from tui_prof.tui.cluster_app import MergedRanksApp
    from tui_prof.tui.glyphs import plain_ansi

    extra = {"ansi_color": True} if plain_ansi() else {}
    doc, files = found
    MergedRanksApp(doc, files, use_cache=not args.no_cache, **extra).run(mouse=not args.no_mouse)
    return EXIT_OK


def _noise(args: argparse.Namespace, default_pct: float, default_pp: float) -> tuple[float, float]:
    """(noise %, noise points) of ``tuiprof diff``. A change within the noise never trips the
    gate, so a noise above ``--fail-on-regression PCT`` would raise the gate silently: an
    explicit one is a usage error, a default one is lowered to PCT."""
    gate = args.fail_on_regression
    noise_pct = default_pct if args.noise is None else args.noise
    noise_pp = default_pp if args.noise_pp is None else args.noise_pp
    if gate is None:
        return noise_pct, noise_pp
    for flag, value in (("--noise", args.noise), ("--noise-pp", args.noise_pp)):
        if value is not None and value > gate:
            raise _UsageError(
                f"{flag} {value:g} is above --fail-on-regression {gate:g}: changes within the noise never fail the gate, so the gate would be {value:g}"
            )
    return min(noise_pct, gate), min(noise_pp, gate)


def cmd_diff(args: argparse.Namespace) -> int:
    """``tuiprof diff A B``: text (default), --json, --md or --tui; exit 4 on --fail-on-regression."""
    from tui_prof.analysis.api import DEFAULT_NOISE_PCT, DEFAULT_NOISE_PP, diff_runsets
    from tui_prof.render import diff as render_diff

    rules = _category_rules(args)
    for path in (args.a, args.b):
        unusable = _unusable_path(path)
        if unusable:
            _say(unusable)
            return EXIT_NOTHING_LOADED
    noise_pct, noise_pp = _noise(args, DEFAULT_NOISE_PCT, DEFAULT_NOISE_PP)
    if args.tui:
        from tui_prof.tui.diff.app import DiffApp

        app = DiffApp(
            args.a,
            args.b,
            by=args.by,
            rules=rules,
            noise_pct=noise_pct,
            noise_pp=noise_pp,
            use_cache=not args.no_cache,
            steps=args.steps,
            step=args.step,
            step_b=args.step_b,
            recordings=args.recording,
        )
        app.run(mouse=not args.no_mouse)
        if app.load_error:  # shown in the app until q; repeated here for the shell
            _say(app.load_error.splitlines()[0])
            return EXIT_USAGE if app.load_error.startswith("--recording") else EXIT_NOTHING_LOADED
        return EXIT_OK
    from tui_prof.loaders import load_path

    runsets: list[RunSet] = []
    for path in (args.a, args.b):
        unusable = _unreadable_path(path)
        if unusable:
            _say(unusable)
            return EXIT_NOTHING_LOADED
        runset = load_path(path, progress=_progress_printer(), use_cache=not args.no_cache)
        for issue in runset.errors:
            _say(issue)
        if not runset.runs:
            _say(f"nothing could be loaded from {_shown_path(path)}")
            return EXIT_NOTHING_LOADED
        wanted = None if args.recording is None else args.recording[len(runsets)]
        runset, status = _one_recording(runset, wanted, "compared")
        if status is not None:
            return status
        runsets.append(runset)
    result = diff_runsets(runsets[0], runsets[1], by=args.by, rules=rules, noise_pct=noise_pct, noise_pp=noise_pp, gap_threshold_ns=args.gap_threshold)
    empty = [name for name, nothing in zip((args.a, args.b), result.empty, strict=True) if nothing]
    if empty:  # a diff of nothing must not look like a clean result
        for path in empty:
            _say(f"{path} holds no kernels, API calls, copies or statistics to compare")
        return EXIT_NOTHING_LOADED
    top = None if args.top <= 0 else args.top
    steps = None
    if args.steps or args.step is not None or args.step_b is not None:
        from tui_prof.analysis.api import StepChoiceError, diff_steps
        from tui_prof.render import stepdiff as render_steps

        try:
            steps = diff_steps(runsets[0], runsets[1], step=args.step, step_b=args.step_b, noise_pct=noise_pct)
        except StepChoiceError as err:
            _say(f"diff --steps: {err}")
            return EXIT_USAGE
    if args.json:
        doc = render_diff.to_json(result, top=top, fail_on_regression=args.fail_on_regression)
        if steps is not None:
            doc["steps"] = render_steps.steps_json(steps)
        _write_json(doc)
    elif args.md:
        sys.stdout.write(render_diff.diff_markdown(result, top=top, fail_on_regression=args.fail_on_regression))
        if steps is not None:
            sys.stdout.write(render_steps.steps_markdown(steps, top=top))
    else:
        print(render_diff.diff_text(result, top=top, fail_on_regression=args.fail_on_regression))
        if steps is not None:
            print(render_steps.steps_text(steps, top=top))
    if args.fail_on_regression is not None:
        return render_diff.gate_status(result, args.fail_on_regression)
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    """``tuiprof serve [RUN | --diff A B]``: the app in a browser (tui_prof.serve)."""
    import importlib.util

    missing = [name for name in ("aiohttp", "textual_serve") if importlib.util.find_spec(name) is None]
    if missing:
        _say(f"tuiprof serve needs {' and '.join(missing)}: pip install 'tuiprof[serve]'")
        return EXIT_USAGE
    if args.diff and (args.path is not None or args.sample is not None):
        _say("give RUN (or --sample) or --diff A B, not both")
        return EXIT_USAGE
    if args.sample is not None and args.path is not None:
        _say("give a PATH or --sample, not both")
        return EXIT_USAGE
    paths = list(args.diff) if args.diff else ([args.path] if args.path is not None else [])
    if not paths:
        from tui_prof.samples import DEFAULT_SAMPLE, SAMPLE_ALIASES, sample_path

        try:
            paths = [str(sample_path(SAMPLE_ALIASES.get(args.sample, args.sample) if args.sample else DEFAULT_SAMPLE))]
        except OSError as err:
            _say(f"cannot prepare the bundled sample run ({err}); give a run: tuiprof serve RUN")
            return EXIT_NOTHING_LOADED
    for path in paths:
        unusable = _unusable_path(path)
        if unusable:
            _say(unusable)
            return EXIT_NOTHING_LOADED
        if not os.path.lexists(path):
            _say(f"{_shown_path(path)}: no such file or directory")
            return EXIT_NOTHING_LOADED
    paths = [os.path.abspath(path) for path in paths]  # the app processes never read an option from a path
    extra = ["--no-cache"] if args.no_cache else []
    if args.diff:
        argv = [sys.executable, "-m", "tui_prof.cli", "diff", "--tui", *extra, *paths]
        title = f"tuiprof diff {os.path.basename(paths[0])} {os.path.basename(paths[1])}"
    else:
        argv = [sys.executable, "-m", "tui_prof.cli", "open", *extra, *paths]
        title = f"tuiprof {os.path.basename(paths[0].rstrip(os.sep)) or paths[0]}"
    from tui_prof.serve import ServeOptions, serve

    options = ServeOptions(
        argv=argv,
        title=title,
        host=args.host,
        port=args.port,
        max_sessions=args.max_sessions,
        idle_timeout_s=args.idle_timeout,
        allow_remote=args.allow_remote,
        prestart=not args.no_prestart,
    )
    return serve(options)


def parse_port(text: str) -> int:
    """A TCP port, 0 (any free port) to 65535."""
    return parse_number(text, whole=True, at_most=65535, what="port number", note=" (ports are 0 to 65535)")


def parse_sessions(text: str) -> int:
    """A session limit: a whole number from 1 to 1000."""
    return parse_number(text, whole=True, at_least=1, at_most=1000, note=" (give 1 to 1000 sessions)")


def parse_seconds(text: str) -> float:
    """Seconds, a finite number >= 0."""
    return parse_number(text, what="number of seconds")


def parse_window(text: str) -> tuple[int, int | None]:
    """``START:END`` (durations from the run's first event, e.g. ``10ms:25ms``; an empty END
    is the end of the run) -> (start ns, end ns or None)."""
    start, sep, end = text.partition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"not a window: {text!r} (START:END, e.g. 10ms:25ms)")
    lo = parse_duration_ns(start) if start.strip() else 0
    hi = parse_duration_ns(end) if end.strip() else None
    if hi is not None and hi <= lo:
        raise argparse.ArgumentTypeError(f"window ends before it starts: {text!r}")
    return lo, hi


def _write_json(doc: object) -> None:
    """``doc`` on stdout as strict JSON (:mod:`tui_prof.guard.jsonout`: controls escaped,
    NaN and the infinities written null); a note on stderr says where values were not finite."""
    from tui_prof.guard import jsonout

    seen = jsonout.NonFinite()
    jsonout.dump(doc, sys.stdout, seen=seen, indent=2)  # piece by piece: a many-rank summary's text is never whole in memory
    sys.stdout.write("\n")
    if seen.count:
        _say(f"note: {seen.count} value(s) were not finite numbers and are written as null (e.g. {', '.join(seen.paths)})")


def cmd_export(args: argparse.Namespace) -> int:
    """``tuiprof export PATH --parquet DIR | --perfetto FILE``: files for pandas/DuckDB or the Perfetto UI."""
    if not args.parquet and not args.perfetto:
        raise _UsageError("give --parquet OUT_DIR and/or --perfetto OUT.json[.gz] (see: tuiprof export --help)")
    if args.tables is not None and not args.parquet:
        raise _UsageError("--tables applies to --parquet")
    tables = [t.strip() for t in args.tables.split(",") if t.strip()] if args.tables is not None else None
    if tables is not None and not tables:
        raise _UsageError(f"--tables {_shown_path(args.tables)} names no table (e.g. --tables kernels,api,gaps)")
    if args.window and not args.perfetto:
        raise _UsageError("--window applies to --perfetto")
    from tui_prof.export.common import ExportError, check_destination
    from tui_prof.guard.write import install_signal_cleanup

    install_signal_cleanup()  # SIGTERM/SIGHUP remove the export's temporary files too
    from tui_prof.export.parquet import export_parquet
    from tui_prof.export.perfetto import export_perfetto, run_start
    from tui_prof.loaders import load_path

    unusable = _unreadable_path(args.path)
    if unusable:
        _say(unusable)
        return EXIT_NOTHING_LOADED
    try:  # a destination inside the run is refused before the load, not after it
        for out in (args.parquet, args.perfetto):
            if out:
                check_destination(out, args.path)
    except ExportError as err:
        _say(err)
        return EXIT_USAGE
    runset = load_path(args.path, progress=_progress_printer(), use_cache=not args.no_cache)
    for issue in runset.errors:
        _say(issue)
    if not runset.runs:
        _say(f"nothing could be loaded from {_shown_path(args.path)}")
        return EXIT_NOTHING_LOADED
    runset, status = _one_recording(runset, args.recording, "exported")
    if status is not None:
        return status
    try:
        if args.parquet:
            written = export_parquet(runset, args.parquet, tables, gap_threshold_ns=args.gap_threshold)
            _say(f"wrote {len(written)} Parquet files and README.md to {_shown_path(args.parquet)}")
        if args.perfetto:
            window = None
            if args.window:
                first = run_start(runset)
                lo, hi = args.window
                window = (first + lo, first + hi if hi is not None else INT64_MAX)
            path, count = export_perfetto(runset, args.perfetto, window, gap_threshold_ns=args.gap_threshold)
            _say(f"wrote {count} trace events to {_shown_path(path)} (open it at https://ui.perfetto.dev)")
    except ExportError as err:
        _say(err)
        return EXIT_USAGE
    except OSError as err:
        _say(f"cannot write the export: {err.strerror or err} ({_shown_path(err.filename or '')})")
        return EXIT_USAGE
    return EXIT_OK


def parse_recordings(text: str) -> tuple[int, int]:
    """``diff --recording N[,M]``: A's recording N and B's M (M = N when not given), 1-based."""
    parts = text.split(",")
    if len(parts) > 2 or not all(p.strip().isdigit() and int(p) >= 1 for p in parts):
        raise argparse.ArgumentTypeError(f"expected N or N,M (recording numbers from 1), got {text!r}")
    first = int(parts[0])
    return first, int(parts[1]) if len(parts) == 2 else first


def parse_rocm_version(text: str) -> str:
    """A ROCm version: 7.2 or 7.2.1."""
    import re

    if not re.fullmatch(r"\d{1,3}\.\d{1,3}(\.\d{1,4})?", text.strip()):
        raise argparse.ArgumentTypeError(f"not a ROCm version (like 7.2.1): {text!r}")
    return text.strip()


def cmd_counters_plan(args) -> int:
    """``tuiprof counters plan``: the fewest rocprofv3 passes for the named metrics/counters."""

    from tui_prof.analysis.api import UnknownArch, counter_defaults, counter_plan
    from tui_prof.render.counterplan import plan_text

    try:
        names = args.names or counter_defaults(args.arch)
        result = counter_plan(args.arch, names, rocm=args.rocm)
    except UnknownArch as err:
        _say(f"--arch: {err}")
        return EXIT_USAGE
    if args.json:
        _write_json(result)
    else:
        print(plan_text(result))
    return EXIT_OK


def _counters_parser(sub) -> None:
    counters = sub.add_parser("counters", help="hardware counters: plan the rocprofv3 passes for metrics (see docs/counters.md)")
    csub = counters.add_subparsers(dest="counters_command", metavar="ACTION", required=True)
    planner = csub.add_parser(
        "plan", help="the fewest rocprofv3 --pmc passes that collect METRIC_OR_COUNTER... on --arch (and what cannot be measured there, and why)"
    )
    planner.add_argument("--arch", required=True, help="GPU architecture: gfx90a, gfx942, gfx950, gfx1100, gfx1151, sm_80, sm_90")
    planner.add_argument(
        "--rocm", metavar="VERSION", type=parse_rocm_version, default=None, help="ROCm version of the stack (e.g. 7.2.1): applies version-dependent defects"
    )
    planner.add_argument("--json", action="store_true", help="machine-readable output (schema tuiprof.counters-plan/1)")
    planner.add_argument(
        "names",
        nargs="*",
        metavar="METRIC_OR_COUNTER",
        help="metric keys (l2_hit), rocprof-compute or rocprofv3 metric names ('L2 Cache Hit Rate', L2CacheHit) or counters (TCC_HIT_sum); "
        "none: the metrics the Counters pane reads",
    )
    planner.set_defaults(func=cmd_counters_plan)


def _load_for_query(path: str, no_cache: bool):
    """The run set at ``path`` for ``sql`` and ``mcp``-style commands, or an exit status
    (the problem said on one line)."""
    from tui_prof.loaders import load_path

    unusable = _unreadable_path(path)
    if unusable:
        _say(unusable)
        return EXIT_NOTHING_LOADED
    runset = load_path(path, progress=_progress_printer(), use_cache=not no_cache)
    for issue in runset.errors:
        _say(issue)
    if not runset.runs:
        _say(f"nothing could be loaded from {_shown_path(path)}")
        return EXIT_NOTHING_LOADED
    return runset


def cmd_sql(args: argparse.Namespace) -> int:
    """``tuiprof sql RUN ["SELECT ..."] [--csv|--json|--md]``: DuckDB over the run's tables (docs/sql.md)."""
    from tui_prof.query.engine import QueryError, QueryUnavailable, Session, duckdb_module

    try:
        duckdb_module()  # before the load: without the extra, one line at once
    except QueryUnavailable as err:
        _say(err)
        return EXIT_USAGE
    runset = _load_for_query(args.path, args.no_cache)
    if isinstance(runset, int):
        return runset
    from tui_prof.query import output
    from tui_prof.query.tables import Catalogue

    session = Session(Catalogue(runset, gap_threshold_ns=args.gap_threshold))
    if args.query is None:
        from tui_prof.query.repl import repl

        return repl(session)
    if args.query.lstrip().startswith("."):  # a prompt command: .tables, .schema NAME
        from tui_prof.query.repl import command

        command(session, args.query, sys.stdout)
        return EXIT_OK
    try:
        if args.csv and not sys.stdout.isatty():  # pyarrow writes the CSV, batch by batch
            with session.arrow_stream(args.query) as reader:
                sys.stdout.flush()
                output.write_csv_arrow(reader, sys.stdout.buffer)
            return EXIT_OK
        with session.stream(args.query) as result:  # CSV and JSON stream; the text table and Markdown hold their rows
            if args.json:
                output.write_json(result, sys.stdout)
            elif args.csv:
                output.write_csv(result, sys.stdout, terminal=sys.stdout.isatty())
            elif args.md:
                sys.stdout.write(output.to_markdown(output.text_result(result, limit=INT64_MAX)[0]))
            else:
                sys.stdout.write(output.to_text(*output.text_result(result)))
    except QueryError as err:
        sys.stdout.flush()
        _say(err)
        return EXIT_USAGE
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace) -> int:
    """``tuiprof mcp --allow DIR ...``: a Model Context Protocol server on stdin/stdout (docs/mcp.md)."""
    from tui_prof.mcp_server import McpUnavailable, allowed_roots, serve

    try:
        roots = allowed_roots(args.allow)
    except ValueError as err:
        raise _UsageError(str(err)) from None
    try:
        serve(roots, use_cache=not args.no_cache)
    except McpUnavailable as err:
        _say(err)
        return EXIT_USAGE
    return EXIT_OK


def _add_query_commands(sub) -> None:
    """The ``sql`` and ``mcp`` subcommands (issue 38)."""
    sql = sub.add_parser("sql", help="query a run's tables with SQL (DuckDB; no query: an interactive prompt; see docs/sql.md)")
    sql.add_argument("path", type=parse_path, help="run directory or profiler output file")
    sql.add_argument("query", nargs="?", default=None, help="an SQL statement, or .tables / .schema NAME (omit it for the interactive prompt)")
    qfmt = sql.add_mutually_exclusive_group()
    qfmt.add_argument("--csv", action="store_true", help="CSV with a header row")
    qfmt.add_argument("--json", action="store_true", help="a JSON list of row objects (strict JSON: NaN and infinities as null)")
    qfmt.add_argument("--md", action="store_true", help="a Markdown table")
    sql.add_argument(
        "--gap-threshold", type=parse_duration_ns, default=None, metavar="DURATION", help="the gaps table holds idle gaps at least this long (default 10us)"
    )
    sql.add_argument("--no-cache", action="store_true", help="neither read nor write the columnar cache")
    sql.set_defaults(func=cmd_sql)
    mcp = sub.add_parser("mcp", help="serve tuiprof's analyses to an assistant over MCP (stdio; see docs/mcp.md)")
    mcp.add_argument(
        "--allow", action="append", required=True, metavar="DIR", help="a directory whose runs the assistant may read (repeatable; nothing else is readable)"
    )
    mcp.add_argument("--no-cache", action="store_true", help="neither read nor write the columnar cache")
    mcp.set_defaults(func=cmd_mcp)


def build_parser() -> argparse.ArgumentParser:
    from tui_prof import __version__
    from tui_prof.samples import DEFAULT_SAMPLE, SAMPLE_ALIASES, SAMPLES  # plain data: no heavy import

    names = sorted(set(SAMPLES) | set(SAMPLE_ALIASES))
    listing = "; ".join(f"{alias} = {full}" for alias, full in SAMPLE_ALIASES.items())
    parser = _Parser(
        prog="tuiprof",
        description="Terminal trace explorer for GPU profiler runs (rocprofv3, rocprof, PyTorch profiler).",
        epilog=f"With no command, tuiprof opens a bundled sample run (default {DEFAULT_SAMPLE}). Samples (--sample NAME): {listing}.",
    )
    parser.add_argument("--version", action="version", version=f"tuiprof {__version__}")
    sample_help = "open this bundled sample run instead of PATH (" + ", ".join(SAMPLE_ALIASES) + ")"
    parser.add_argument("--sample", choices=names, default=None, metavar="NAME", help=sample_help)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    _summary_parser(sub)
    _check_parser(sub)
    _whatif_parser(sub)
    _open_parser(sub, names, sample_help)
    _diff_parser(sub)
    _serve_parser(sub, names, sample_help)
    _export_parser(sub)
    parser.set_defaults(func=cmd_open, path=None, no_mouse=False, color_system="auto", no_cache=False, ascii=False)  # no command: the sample run
    _counters_parser(sub)
    _add_query_commands(sub)
    return parser


def _summary_parser(sub: Any) -> None:
    """The ``summary`` command's arguments."""
    summary = sub.add_parser("summary", help="print formats, processes, agents and top kernels of a run")
    summary.add_argument("path", type=parse_path, help="run directory or profiler output file")
    fmt = summary.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="machine-readable output (schema tuiprof.summary/1)")
    fmt.add_argument("--md", action="store_true", help="Markdown report (paste into a ticket)")
    summary.add_argument("--top", type=parse_count, default=20, help="number of kernels listed (0 = all; default 20)")
    summary.add_argument(
        "--gap-threshold",
        type=parse_duration_ns,
        default=None,
        metavar="DURATION",
        help="list and classify GPU idle gaps at least this long (e.g. 10us, 1ms; bare number = µs; default 10us)",
    )
    summary.add_argument("--max-gaps", type=parse_count, default=200, help="gaps listed in the report, longest first (0 = all; default 200)")
    summary.add_argument("--categories", metavar="FILE", help="kernel category rules (TOML or JSON; see docs/metrics.md)")
    summary.add_argument("-v", "--verbose", action="store_true", help="also list skipped files on stderr")
    summary.add_argument(
        "--step",
        metavar="NAME",
        default=None,
        help="take the steps from the host ranges named NAME (default: ProfilerStep#N, else the most covering repeated range)",
    )
    summary.add_argument("--warmup", type=parse_count, default=None, metavar="N", help="the first N steps are warm-up (default: detected)")
    summary.add_argument(
        "--outlier-factor", type=parse_factor, default=None, metavar="X", help="a steady step slower than its median x X is an outlier (default 1.5)"
    )
    summary.add_argument(
        "--no-cache",
        action="store_true",
        help="neither read nor write the columnar cache (default: reuse the cached load of an unchanged run; "
        "cache folder: TUIPROF_CACHE_DIR or the user cache directory)",
    )
    summary.add_argument(
        "--recording",
        type=parse_count,
        default=None,
        metavar="N",
        help="PATH holds separate recordings (files hours apart): summarise recording N (default: the one with most dispatches; listed on stderr)",
    )
    summary.add_argument(
        "--cluster",
        metavar="WHERE",
        type=parse_cluster,
        default=None,
        help="summarise rank by rank from per-rank partials: local[:N] (a Dask LocalCluster of N worker processes), "
        "tcp://HOST:PORT (a running Dask scheduler), pool[:N] (a process pool, no Dask); the merged sections only (docs/cluster.md)",
    )
    summary.set_defaults(func=cmd_summary)


def _recording_option(parser: Any, verb: str) -> None:
    """``--recording N`` (issue 32): which of PATH's separate recordings to use."""
    parser.add_argument(
        "--recording",
        type=parse_count,
        default=None,
        metavar="N",
        help=f"PATH holds separate recordings (files hours apart): {verb} recording N (listed on stderr)",
    )


def _check_parser(sub: Any) -> None:
    """The ``check`` command's arguments."""
    checker = sub.add_parser("check", help="can the figures be believed? integrity checks of a run (exit 5 when some figure is degraded)")
    checker.add_argument("path", type=parse_path, help="run directory or profiler output file")
    checker.add_argument("--json", action="store_true", help="machine-readable output (schema tuiprof.check/1)")
    checker.add_argument("--no-cache", action="store_true", help="neither read nor write the columnar cache")
    _recording_option(checker, "check only (default: the whole of PATH, whose mixed recordings are an issue)")
    checker.add_argument(
        "--cluster",
        metavar="WHERE",
        type=parse_cluster,
        default=None,
        help="check rank by rank in workers and merge the reports: local[:N], tcp://HOST:PORT or pool[:N], as summary --cluster (docs/cluster.md)",
    )
    checker.set_defaults(func=cmd_check)


def _whatif_parser(sub: Any) -> None:
    """The ``whatif`` command's arguments."""
    whatif = sub.add_parser("whatif", help="project the run with edited durations: critical path and saving (see docs/metrics.md)")
    whatif.add_argument("path", type=parse_path, help="run directory or profiler output file")
    whatif.add_argument(
        "--scale",
        action="append",
        type=_scale_edit,
        metavar="PATTERN=FACTOR",
        help="kernels of category PATTERN, launched by operator op:REGEX, or whose name matches the regex PATTERN take FACTOR x their time (repeatable)",
    )
    whatif.add_argument(
        "--remove",
        action="append",
        metavar="CAUSE",
        help="remove a cause: sync-after-launch, sync, launch, pageable-copy, warmup, host:REGEX, or a finding code (repeatable)",
    )
    whatif.add_argument("--launch-free", action="store_true", help="launch calls and the host work between launches cost nothing (a CUDA/HIP graph)")
    whatif.add_argument("--json", action="store_true", help="machine-readable output (schema tuiprof.whatif/1)")
    whatif.add_argument("--categories", metavar="FILE", help="kernel category rules (TOML or JSON; see docs/metrics.md)")
    whatif.add_argument("--step", metavar="NAME", default=None, help="take the steps from the host ranges named NAME")
    whatif.add_argument("--warmup", type=parse_count, default=None, metavar="N", help="the first N steps are warm-up (default: detected)")
    whatif.add_argument("--no-cache", action="store_true", help="neither read nor write the columnar cache")
    whatif.set_defaults(func=cmd_whatif)


def _open_parser(sub: Any, names: list[str], sample_help: str) -> None:
    """The ``open`` command's arguments."""
    opener = sub.add_parser("open", help="explore a run in the terminal UI (no path: the bundled sample run)")
    opener.add_argument("path", nargs="?", type=parse_path, help="run directory or profiler output file")
    opener.add_argument("--sample", choices=names, default=None, metavar="NAME", help=sample_help)
    opener.add_argument("--no-mouse", action="store_true", help="do not enable mouse reporting (slow SSH links)")
    opener.add_argument(
        "--ascii",
        action="store_true",
        help="draw the timeline with ASCII glyphs (# busy, : + partly busy, . idle, = sync); the default under a non-UTF-8 locale (LANG=C)",
    )
    opener.add_argument("--color-system", choices=["auto", "truecolor", "256", "standard"], default="auto")
    opener.add_argument(
        "--no-cache", action="store_true", help="neither read nor write the columnar cache (default: reuse the cached load of an unchanged run)"
    )
    opener.add_argument(
        "--cluster",
        metavar="WHERE",
        type=parse_cluster,
        default=None,
        help="a run of many ranks: the rank table merged from per-rank partials (local[:N], tcp://HOST:PORT, pool[:N]; "
        "see summary --cluster); Enter loads one rank alone",
    )
    _recording_option(opener, "open (default: the one with most dispatches; the app says which)")
    opener.set_defaults(func=cmd_open)


def _diff_parser(sub: Any) -> None:
    """The ``diff`` command's arguments."""
    differ = sub.add_parser("diff", help="compare run B against run A (kernels and summary deltas; see docs/diff.md)")
    differ.add_argument("a", metavar="A", type=parse_path, help="baseline run directory or file")
    differ.add_argument("b", metavar="B", type=parse_path, help="run compared against A")
    dfmt = differ.add_mutually_exclusive_group()
    dfmt.add_argument("--json", action="store_true", help="machine-readable output (schema tuiprof.diff/1)")
    dfmt.add_argument("--md", action="store_true", help="Markdown report (tickets, CI comments)")
    dfmt.add_argument("--tui", action="store_true", help="interactive diff screen (zoom-linked timelines, drill-down)")
    differ.add_argument(
        "--by",
        choices=["name", "normalized", "category"],
        default="name",
        help="match kernels by exact name, normalised name (templates/arguments stripped) or category",
    )
    differ.add_argument("--categories", metavar="FILE", help="kernel category rules (TOML or JSON; see docs/metrics.md)")
    differ.add_argument(
        "--noise", type=parse_percent, default=None, metavar="PCT", help="changes within PCT percent of A are 'within noise' (times and counts; default 2)"
    )
    differ.add_argument(
        "--noise-pp", type=parse_percent, default=None, metavar="PP", help="noise threshold in percentage points for %% metrics (idle %%, sync %%; default 1)"
    )
    differ.add_argument(
        "--fail-on-regression",
        type=parse_percent,
        default=None,
        metavar="PCT",
        help="exit with status 4 when a lower-is-better metric got worse by more than PCT (percent of A; points for %% metrics)",
    )
    differ.add_argument("--top", type=parse_count, default=20, help="kernels and ranks listed (0 = all; default 20)")
    differ.add_argument(
        "--gap-threshold", type=parse_duration_ns, default=None, metavar="DURATION", help="idle-gap threshold passed to the analysis (default 10us)"
    )
    differ.add_argument(
        "--steps", action="store_true", help="step-aligned diff: A's and B's steady steps kernel by kernel (inserted, removed, slower, gaps; docs/diff.md)"
    )
    differ.add_argument(
        "--step",
        type=parse_count,
        default=None,
        metavar="N",
        help="with --steps: compare A's step numbered N (ProfilerStep#N, step N; default: the median steady step)",
    )
    differ.add_argument(
        "--step-b", type=parse_count, default=None, metavar="M", help="with --steps: B's step numbered M (default: N, else B's median steady step)"
    )
    differ.add_argument("--no-mouse", action="store_true", help="with --tui: do not enable mouse reporting")
    differ.add_argument(
        "--no-cache", action="store_true", help="neither read nor write the columnar cache (default: reuse the cached load of an unchanged run)"
    )
    differ.add_argument(
        "--recording",
        type=parse_recordings,
        default=None,
        metavar="N[,M]",
        help="A (or B) holds separate recordings (files hours apart): compare A's recording N with B's M (default M = N; "
        "without it, each side's with most dispatches; listed on stderr; with --tui, key R picks others)",
    )
    differ.set_defaults(func=cmd_diff)


def _serve_parser(sub: Any, names: list[str], sample_help: str) -> None:
    """The ``serve`` command's arguments."""
    server = sub.add_parser(
        "serve",
        help="serve the terminal UI to a browser (one app per page; token-protected; see README)",
        epilog="Needs the serve extra: pip install 'tuiprof[serve]'.",
    )
    server.add_argument("path", nargs="?", type=parse_path, metavar="RUN", help="run directory or profiler output file (none: the bundled sample run)")
    server.add_argument("--sample", choices=names, default=None, metavar="NAME", help=sample_help)
    server.add_argument("--diff", nargs=2, type=parse_path, metavar=("A", "B"), help="serve the diff screen of run B against run A instead")
    server.add_argument("--port", type=parse_port, default=8765, help="TCP port (default 8765; 0 = any free port)")
    server.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: reach it through ssh -L)")
    server.add_argument("--allow-remote", action="store_true", help="allow a --host that is not a loopback address (plain HTTP; the token is the only guard)")
    server.add_argument(
        "--max-sessions", type=parse_sessions, default=4, metavar="N", help="browser pages served at once, each its own app process (default 4)"
    )
    server.add_argument(
        "--idle-timeout", type=parse_seconds, default=1800.0, metavar="SECONDS", help="end a session after this long without input (default 1800; 0 = never)"
    )
    server.add_argument(
        "--no-prestart",
        action="store_true",
        help="start each app only when its page connects (default: one app is kept started ahead, so a page shows the run at once)",
    )
    server.add_argument("--no-cache", action="store_true", help="the app processes neither read nor write the columnar cache")
    server.set_defaults(func=cmd_serve)


def _export_parser(sub: Any) -> None:
    """The ``export`` command's arguments."""
    exporter = sub.add_parser("export", help="write a run as Parquet files (pandas, DuckDB) and/or a Perfetto trace (see docs/user_guide.md)")
    exporter.add_argument("path", type=parse_path, help="run directory or profiler output file")
    exporter.add_argument("--parquet", metavar="OUT_DIR", help="write every table (model and analysis) as OUT_DIR/<table>.parquet, with a README.md")
    exporter.add_argument("--tables", metavar="A,B", help="with --parquet: only these tables (e.g. kernels,api,gaps)")
    exporter.add_argument("--perfetto", metavar="OUT.json[.gz]", help="write a Chrome trace-event JSON for ui.perfetto.dev / chrome://tracing")
    exporter.add_argument(
        "--window",
        type=parse_window,
        metavar="START:END",
        help="with --perfetto: only events overlapping this range, from the run's first event (e.g. 10ms:25ms)",
    )
    exporter.add_argument(
        "--gap-threshold", type=parse_duration_ns, default=None, metavar="DURATION", help="idle gaps exported at least this long (default 10us)"
    )
    exporter.add_argument("--no-cache", action="store_true", help="neither read nor write the columnar cache")
    _recording_option(exporter, "export (default: the one with most dispatches)")
    exporter.set_defaults(func=cmd_export)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A Python warning (numpy's RuntimeWarning, ...) as one ``tuiprof:`` line: its category
    and message only, never the file and line of the library that raised it (an install
    path says nothing to the user and leaks the environment)."""
    _say(f"warning: {getattr(category, '__name__', 'Warning')}: {message}")


def main(argv: list[str] | None = None) -> int:
    import warnings

    warnings.showwarning = _show_warning
    parser = build_parser()
    try:
        args = parser.parse_args(argv)  # no command: the parser's defaults route to cmd_open
    except _UsageError as err:
        _say(err)
        return EXIT_USAGE
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_OK
    try:
        return args.func(args)
    except KeyboardInterrupt:  # Ctrl-C: the cache is written atomically, nothing is left half-written
        if sys.stderr.isatty():
            sys.stderr.write("\r\x1b[K")
        _say("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except _UsageError as err:
        _say(err)
        return EXIT_USAGE
    except Exception as err:  # the last line of defence: no traceback reaches the user
        _say(f"internal error: {type(err).__name__}: {err} (please report)")
        return EXIT_INTERNAL


def run() -> int:
    """The ``tuiprof`` command (console script): :func:`main`, then a Ctrl-C that lands as the
    process exits (after ``main`` returned, before the interpreter is gone) is ignored
    instead of ending it with a KeyboardInterrupt traceback and a signal status; the process
    then ends at once (:func:`_end_now`)."""
    import signal

    try:
        code = main()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    _end_now(code)
    return code


def _end_now(code: int) -> None:
    """End the process at once with ``code``: output flushed and the exit handlers run (they
    stop the loaders' worker processes and remove temporary folders), then ``os._exit``.

    The interpreter's own shutdown frees every table object by object: 0.1–0.2 s after a
    summary of 1M dispatches, 0.02 s for the kernel to drop the whole address space. With
    daemon threads still at work (the TUI's analysis and cache workers after a quit) it
    would also tear the modules down under them, and a thread inside numpy or pandas then
    aborts the whole process ("Fatal Python error: PyGILState_Release", status 134; seen
    once in six quits right after the first screen of a 1M-dispatch run); a cache entry
    being written is then left as a temporary folder that the next prune removes. Returns
    (the interpreter's shutdown joins them) only when non-daemon threads, and no daemon
    ones, are still alive: work that asked to be waited for."""
    import threading

    others = [t for t in threading.enumerate() if t is not threading.current_thread() and t.is_alive()]
    if others and not any(t.daemon for t in others):
        return
    import atexit

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more to say there
            pass
    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(run())
