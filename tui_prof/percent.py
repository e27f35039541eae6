"""The one percentage style of every output: ``12.3%`` (``+12.3%`` signed; ``-`` when
unknown). It imports nothing of tuiprof, so the analysis' messages (finding and gate
text carried in the JSON) and render/fmt.py print percentages the same way."""

from __future__ import annotations

import math


def fmt_pct(value: float | None, digits: int = 1, signed: bool = False) -> str:
    """A percentage: ``12.3%`` (``+12.3%`` with ``signed``; ``-`` when unknown or not
    finite: a share is never infinite)."""
    if value is None or not math.isfinite(float(value)):
        return "-"
    return f"{float(value):+.{digits}f}%" if signed else f"{float(value):.{digits}f}%"
