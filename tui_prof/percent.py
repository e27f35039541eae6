"""The one percentage style of every output: ``12.3%`` (``+12.3%`` signed; ``-`` when
unknown). It imports nothing of tuiprof, so the analysis' messages (finding and gate
text carried in the JSON) and render/fmt.py print percentages the same way."""

from __future__ import annotations

import math


def fmt_pct(value: float | None, digits: int = 1, signed: bool = False, sig: int | None = None) -> str:
    """A percentage: ``12.3%`` (``+12.3%`` with ``signed``; ``-`` when unknown or not
    finite: a share is never infinite). ``sig`` prints that many significant digits
    instead of ``digits`` decimals (``0.0123%``, ``18.75%``): a % of peak can be tiny."""
    if value is None or not math.isfinite(float(value)):
        return "-"
    if sig is not None:
        return f"{float(value):.{sig}g}%"
    return f"{float(value):+.{digits}f}%" if signed else f"{float(value):.{digits}f}%"
