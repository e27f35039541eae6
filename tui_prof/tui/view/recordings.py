"""Which recording the TUI shows when a run holds several (issue 32): files of separate
recordings in one folder are never pooled as ranks. No Textual or Rich import."""

from __future__ import annotations

from tui_prof.analysis.api import pick_recording
from tui_prof.model import RunSet


class RecordingError(ValueError):
    """``tuiprof open --recording N`` names no recording of the run (the message says why)."""


def recording_to_show(runset: RunSet, wanted: int | None) -> tuple[RunSet, str]:
    """(the run set to show, a note for the user: "" when the run is one recording). The
    recording ``wanted`` (1-based), else the one with most dispatches; a bad ``wanted``
    raises :class:`RecordingError`."""
    choice = pick_recording(runset, wanted)
    if choice.error:
        raise RecordingError(choice.error)
    if choice.count < 2:
        return runset, ""
    note = (
        f"{runset.name} holds {choice.count} separate recordings (processes or files that did not run together); "
        f"showing recording {choice.chosen}: {choice.listing[choice.chosen - 1][4:]}. "
        "tuiprof open --recording N shows another (tuiprof summary lists them)."
    )
    return choice.runset, note
