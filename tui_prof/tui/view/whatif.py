"""What a what-if key (``W``) re-schedules: a hotspot row, a finding or an idle gap as the
edits of :mod:`tui_prof.analysis.whatif` (through the analysis door), described in words.

A :class:`WhatIfTarget` is built on the event loop from what the row holds (no analysis);
:meth:`WhatIfTarget.resolve` runs in the what-if screen's worker (a gap's host operator is
looked up in the run's host ranges there). No Textual or Rich import.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from tui_prof.analysis.api import Edits, Finding, dominant_op, edit_of, ops_overlapping
from tui_prof.render.fmt import fmt_ns
from tui_prof.tui.view.runview import RunView

HALF = 0.5  # the factor a hotspot row's what-if scales its kernels by

# a gap's cause -> the edit that removes it (analysis.whatif: REMOVE_ALIASES); graph and other: none
GAP_EDITS = {"sync": ("sync", "the synchronisation calls gone"), "copy": ("pageable-copy", "pageable copies made pinned")}


@dataclass(frozen=True)
class WhatIfTarget:
    """What to re-schedule: ``title`` names the row; ``resolve()`` gives (edits, what they
    do in words) or None with the reason (in the worker)."""

    title: str
    resolve: Callable[[], tuple[Edits | None, str]]


def exact(name: str) -> str:
    """A regular expression matching exactly ``name`` (a kernel or operator name)."""
    return "^" + re.escape(name) + "$"


def hotspot_target(group: str, value: str) -> WhatIfTarget | None:
    """A hotspot row: its kernels at half their time (a name, a category or an operator);
    None for the groupings the what-if cannot select (agent, process, module, normalised name)."""
    if group == "name":
        edits = Edits(scales=[(exact(value), HALF)])
    elif group == "category":
        edits = Edits(scales=[(f"category:{value}", HALF)])
    elif group == "operator":
        edits = Edits(scales=[(f"op:{exact(value)}", HALF)])
    else:
        return None
    return WhatIfTarget(f"{group} {value}", lambda: (edits, f"these kernels at {HALF:g}x their time"))


def finding_target(finding: Finding) -> WhatIfTarget:
    """A finding: the edit that removes its cause (analysis.savings.edit_of), or the reason there is none."""

    def resolve() -> tuple[Edits | None, str]:
        found = edit_of(finding)
        if found is None:
            return None, f"{finding['code']}: the what-if cannot remove this cause (no edit for this finding)"
        return found

    title = f"finding {finding['code']}"
    if "saving_ns" in finding:  # the summary's projection: over the steady window, this screen's over the whole run
        title += f" (the summary's projection: {fmt_ns(finding['saving_ns'])} over the steady window)"
    return WhatIfTarget(title, resolve)


def gap_target(view: RunView, row: int) -> WhatIfTarget:
    """An idle gap (row ``row`` of ``view.gaps``): its cause removed -- the synchronisation
    calls, pageable copies pinned, the host operator that held the host (a launch gap that
    one covers for at least half its length) or else the launches made free."""
    gap = view.gaps.iloc[row] if view.gaps is not None else None

    def resolve() -> tuple[Edits | None, str]:
        if gap is None:
            return None, "no gap"
        cause = str(gap["cause"])
        if cause in GAP_EDITS:
            what, words = GAP_EDITS[cause]
            return Edits(removes=[what]), words
        if cause != "launch":
            return None, f"a gap of cause {cause}: the what-if cannot remove it (a dependency the trace does not record)"
        run = view.runset.runs[int(gap["run"])]
        op = dominant_op(ops_overlapping(run.markers, int(gap["start"]), int(gap["end"]), run.meta.pid))
        if op is not None and 2 * op.overlap_ns >= int(gap["duration_ns"]):
            return Edits(removes=[f"host:{exact(op.name)}"]), f"the host's own time in {op.name} gone"
        return Edits(launch_free=True), "launches free (what graph capture or a fused launch gives)"

    title = f"gap of {fmt_ns(int(gap['duration_ns']))} at {fmt_ns(int(gap['t']))}" if gap is not None else "gap"
    return WhatIfTarget(title, resolve)
