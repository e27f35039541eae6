"""An ASCII log-log roofline for one kernel: the HBM slope, the compute roof, the ridge point
and the kernel's point (numbers from ``analysis.counters`` roofline entries; nothing computed
here but positions on the chart)."""

from __future__ import annotations

import math

SLOPE, ROOF, RIDGE, POINT, DROP = "/", "-", "+", "*", ":"


def _g(value: float) -> str:
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def roofline_lines(ai: float, gflops: float, peak_gflops: float, peak_gbs: float, width: int = 48, height: int = 9) -> list[str]:
    """The chart as plain lines: y = GFLOP/s, x = FLOP per HBM byte, both log10, whole decades
    around the ridge point and the kernel's point. ``*`` the kernel, ``+`` the ridge,
    ``/`` the bandwidth roof (peak_gbs · x), ``-`` the compute roof."""
    if not all(v > 0 and math.isfinite(v) for v in (ai, gflops, peak_gflops, peak_gbs)):
        return []
    width, height = max(width, 16), max(height, 5)
    ridge = peak_gflops / peak_gbs
    x_lo = math.floor(math.log10(min(ai, ridge))) - 1
    x_hi = math.ceil(math.log10(max(ai, ridge))) + 1
    y_hi = math.ceil(math.log10(peak_gflops * 1.0001))
    y_lo = min(math.floor(math.log10(gflops)), math.floor(math.log10(peak_gbs * 10**x_lo)))
    y_lo = min(y_lo, y_hi - 1)

    def col(x: float) -> int:
        return round((math.log10(x) - x_lo) / (x_hi - x_lo) * (width - 1))

    def row(y: float) -> int:
        return height - 1 - round((math.log10(y) - y_lo) / (y_hi - y_lo) * (height - 1))

    grid = [[" "] * width for _ in range(height)]
    for c in range(width):
        x = 10 ** (x_lo + c / (width - 1) * (x_hi - x_lo))
        y = min(peak_gflops, peak_gbs * x)
        r = row(y)
        if 0 <= r < height:
            grid[r][c] = ROOF if peak_gbs * x >= peak_gflops else SLOPE
    rc, rr = col(ridge), row(peak_gflops)
    if 0 <= rr < height and 0 <= rc < width:
        grid[rr][rc] = RIDGE
    pc, pr = col(ai), row(gflops)
    if 0 <= pc < width:
        roof_row = row(min(peak_gflops, peak_gbs * ai))
        for r in range(max(roof_row + 1, 0), min(pr, height)):
            if grid[r][pc] == " ":
                grid[r][pc] = DROP
        if 0 <= pr < height:
            grid[pr][pc] = POINT
    labels = {0: f"1e{y_hi}", height - 1: f"1e{y_lo}"}
    if 0 <= rr < height:
        labels[rr] = _g(peak_gflops)
    margin = max(len(v) for v in labels.values()) + 1
    lines = [f"{labels.get(r, ''):>{margin}}|" + "".join(grid[r]) for r in range(height)]
    lines.append(" " * margin + "+" + "-" * width)
    axis = [" "] * (width + 12)
    for x, text in ((10**x_lo, f"1e{x_lo}"), (ridge, f"ridge {_g(ridge)}"), (10**x_hi, f"1e{x_hi}")):
        start = min(max(col(x) - (len(text) // 2 if x == ridge else 0), 0), width + 12 - len(text))
        if x == 10**x_hi:
            start = width - len(text)
        if all(ch == " " for ch in axis[max(start - 1, 0) : start + len(text) + 1]):
            axis[start : start + len(text)] = list(text)
    lines.append(" " * (margin + 1) + "".join(axis).rstrip())
    lines.append(" " * (margin + 1) + "GFLOP/s (y) vs FLOP per HBM byte (x), log-log; * this kernel, + ridge point")
    return lines
