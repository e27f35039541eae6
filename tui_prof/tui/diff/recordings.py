"""Which recording each side of ``tuiprof diff --tui`` compares when its folder holds several
(issue 33): ``--recording N,M`` (A's N, B's M), else each side's with the most dispatches,
said in a note; key R lists a side's recordings (tui_prof.tui.screens.recordings) to pick
others. No Textual import."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tui_prof.analysis.api import pick_recording
from tui_prof.model import RunSet
from tui_prof.tui.view.recordings import RECORDINGS_KEY, RecordingError, RecordingRow, recording_rows


class DiffRecordings:
    """A's and B's recordings: ``wanted`` (1-based, None: the busiest of each), and after
    :meth:`choose` the whole run sets (kept: a second pick reads nothing again), each side's
    picker rows (empty for a run of one recording), the numbers compared and the runs' names."""

    def __init__(self, wanted: tuple[int, int] | None = None) -> None:
        self.wanted = wanted
        self.wholes: list[RunSet] = []
        self.rows: tuple[list[RecordingRow], list[RecordingRow]] = ([], [])
        self.shown: tuple[int, int] = (1, 1)
        self.names: tuple[str, str] = ("", "")
        self.noted = False

    def choose(self, wholes: Sequence[RunSet], note: Callable[[str], None]) -> tuple[RunSet, RunSet]:
        """The run set each side compares; ``note`` is told, at the first load only, which
        recording of a side of several is compared. A bad ``wanted`` raises RecordingError
        (its text starts with ``--recording``: a usage error)."""
        chosen, rows, shown, notes = [], [], [], []
        for side, runset in enumerate(wholes):
            tag = "AB"[side]
            choice = pick_recording(runset, None if self.wanted is None else self.wanted[side])
            if choice.error:
                raise RecordingError(f"{choice.error} ({tag}: {runset.name})")
            chosen.append(choice.runset)
            shown.append(choice.chosen)
            rows.append(recording_rows(choice))
            if choice.count > 1:
                listed = choice.listing[choice.chosen - 1].split("] ", 1)[-1]
                notes.append(f"{tag}: {runset.name} holds {choice.count} separate recordings; comparing recording {choice.chosen}: {listed}.")
        self.wholes = list(wholes)
        self.rows = (rows[0], rows[1])
        self.shown = (shown[0], shown[1])
        self.names = (wholes[0].name, wholes[1].name)
        if notes and not self.noted:
            note(" ".join(notes) + f" {RECORDINGS_KEY} picks others (tuiprof diff --tui --recording N,M).")
        self.noted = True
        return chosen[0], chosen[1]
