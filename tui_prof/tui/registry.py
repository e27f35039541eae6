"""The run screen's panes, in tab order (key 1 first): adding a pane to the screen is one
line here (its module declares the rest: tui_prof.tui.pane.Pane)."""

from __future__ import annotations

from tui_prof.tui.pane import Pane
from tui_prof.tui.panes.counters import CountersPane
from tui_prof.tui.panes.findings import FindingsPane
from tui_prof.tui.panes.hardware import HardwarePane
from tui_prof.tui.panes.hotspots import HotspotsPane
from tui_prof.tui.panes.integrity import IntegrityPane
from tui_prof.tui.panes.issues import IssuesPane
from tui_prof.tui.panes.query import QueryPane
from tui_prof.tui.panes.ranks import RanksPane
from tui_prof.tui.panes.steps import StepsPane
from tui_prof.tui.panes.timeline import TimelinePane

PANES: tuple[type[Pane], ...] = (
    HotspotsPane,
    TimelinePane,
    HardwarePane,
    FindingsPane,
    CountersPane,
    IssuesPane,
    RanksPane,
    StepsPane,
    QueryPane,
    IntegrityPane,
)
