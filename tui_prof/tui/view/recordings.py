"""Which recording the TUI shows when a run holds several (issue 32): files of separate
recordings in one folder are never pooled as ranks; key ``R`` lists them to pick another
(tui_prof.tui.screens.recordings). No Textual or Rich import."""

from __future__ import annotations

from dataclasses import dataclass

from tui_prof.analysis.api import RecordingChoice, pick_recording, run_label, time_range
from tui_prof.model import RunSet
from tui_prof.render.fmt import fmt_ns

RECORDINGS_KEY = "R"  # the key that lists the run's recordings (tuiprof open: every screen of the run; diff --tui: each side's)
LABELS_SHOWN = 3  # process labels named per recording (the rest counted)


class RecordingError(ValueError):
    """``tuiprof open --recording N`` names no recording of the run (the message says why)."""


@dataclass(frozen=True)
class RecordingRow:
    """One recording of a run, as the picker lists it: ``index`` (1-based, the number
    ``--recording N`` takes), processes, kernel dispatches, ``span`` (first start to last
    end, formatted; "no timestamps" for a counter-only pass), ``label`` (its processes' labels:
    trace strings, sanitised where shown) and whether it is the one shown."""

    index: int
    processes: int
    dispatches: int
    span: str
    label: str
    shown: bool


def recording_rows(choice: RecordingChoice) -> list[RecordingRow]:
    """The recordings of a :func:`tui_prof.analysis.api.pick_recording` choice in ``--recording
    N`` order (empty for a run of one recording); the chosen one is marked shown."""
    split = choice.split
    if split is None:
        return []
    rows = []
    for n, group in enumerate(choice.groups, 1):
        runs = [split.runs[i] for i in group]
        ranges = [r for r in map(time_range, runs) if r]
        span = fmt_ns(max(hi for _, hi in ranges) - min(lo for lo, _ in ranges)) if ranges else "no timestamps"
        label = ", ".join(run_label(run) for run in runs[:LABELS_SHOWN]) + (f" and {len(runs) - LABELS_SHOWN} more" if len(runs) > LABELS_SHOWN else "")
        rows.append(RecordingRow(n, len(runs), sum(len(run.kernels) for run in runs), span, label, n == choice.chosen))
    return rows


def recording_to_show(runset: RunSet, wanted: int | None) -> tuple[RunSet, str, int, list[RecordingRow]]:
    """(the run set to show, a note for the user: "" when the run is one recording, the
    recording shown: 1-based, the picker's rows). The recording ``wanted`` (1-based), else
    the one with most dispatches; a bad ``wanted`` raises :class:`RecordingError`."""
    choice = pick_recording(runset, wanted)
    if choice.error:
        raise RecordingError(choice.error)
    if choice.count < 2:
        return runset, "", 1, []
    note = (
        f"{runset.name} holds {choice.count} separate recordings (processes or files that did not run together); "
        f"showing recording {choice.chosen}: {choice.listing[choice.chosen - 1].split('] ', 1)[1]}. "
        f"{RECORDINGS_KEY} picks another (tuiprof open --recording N; tuiprof summary lists them)."
    )
    return choice.runset, note, choice.chosen, recording_rows(choice)
