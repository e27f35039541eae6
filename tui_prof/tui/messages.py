"""Messages the panes post to their screen ("attributes down, messages up"): a pane never
reads another pane; the screen routes what one pane asks for to the others."""

from __future__ import annotations

from textual.message import Message

from tui_prof.analysis.api import Finding, StepsSection
from tui_prof.tui.view.whatif import WhatIfTarget


class ShowTab(Message):
    """Show tab ``tab`` (a TabPane id of the main screen)."""

    def __init__(self, tab: str) -> None:
        super().__init__()
        self.tab = tab


class KernelSelected(Message):
    """The hotspot row under the cursor: its ``value`` under grouping ``group`` (None: no row)."""

    def __init__(self, group: str, value: str | None) -> None:
        super().__init__()
        self.group, self.value = group, value

    @property
    def kernel(self) -> str | None:
        """The kernel name, when the table is grouped by name."""
        return self.value if self.group == "name" else None


class DispatchesRequested(Message):
    """Open the dispatches of the rows whose ``group`` key is ``value``."""

    def __init__(self, group: str, value: str) -> None:
        super().__init__()
        self.group, self.value = group, value


class TimelineRequested(Message):
    """Show the timeline centred on the next dispatch of the selected hotspot row."""


class EvidenceRequested(Message):
    """Enter on a finding: show its evidence (a gap, a host row, a kernel, a tab)."""

    def __init__(self, finding: Finding) -> None:
        super().__init__()
        self.finding = finding


class LoadFailed(Message):
    """Nothing could be shown of a run: ``text`` says why (posted by an app's load worker)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class StepRequested(Message):
    """Enter on a step: zoom the timeline to [start_ns, end_ns) (absolute ns on the run's clock)."""

    def __init__(self, start_ns: int, end_ns: int, label: str) -> None:
        super().__init__()
        self.start_ns, self.end_ns, self.label = start_ns, end_ns, label


class WindowRequested(Message):
    """Show [start_ns, end_ns) on the timeline (absolute ns on the run's clock): the evidence
    of an integrity issue (``label``: its code)."""

    def __init__(self, start_ns: int, end_ns: int, label: str) -> None:
        super().__init__()
        self.start_ns, self.end_ns, self.label = start_ns, end_ns, label


class StepsChanged(Message):
    """The steps pane shows steps (the summary's, or taken from another range name):
    ``steps`` is that summary section (the timeline's step ticks follow it)."""

    def __init__(self, steps: StepsSection) -> None:
        super().__init__()
        self.steps = steps


class RankOpened(Message):
    """Enter on a rank in the ranks pane: open that process's own panes (``run``: its index
    in the run set)."""

    def __init__(self, run: int, rank: int) -> None:
        super().__init__()
        self.run = run
        self.rank = rank


class WhatIfRequested(Message):
    """``W`` on a hotspot row, a finding or a gap: show the what-if of ``target`` (a
    :class:`tui_prof.tui.view.whatif.WhatIfTarget`: what to edit, described)."""

    def __init__(self, target: WhatIfTarget) -> None:
        super().__init__()
        self.target = target


class RecordingRequested(Message):
    """Show recording ``index`` (1-based, as ``tuiprof open --recording N``) of a run that
    holds several: the app reopens on it."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index
