"""Text formatting of model and analysis values for the TUI (no computation)."""

from __future__ import annotations

import math

_UNITS = ((1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs"), (1, "ns"))


def fmt_ns(ns: float | int | None) -> str:
    """A duration in ns as a short human string: 950ns, 12.3µs, 4.56ms, 1.23s."""
    if ns is None or (isinstance(ns, float) and math.isnan(ns)):
        return "-"
    value = float(ns)
    sign = "-" if value < 0 else ""
    value = abs(value)
    for scale, unit in _UNITS:
        if value >= scale or scale == 1:
            v = value / scale
            if unit == "ns":
                return f"{sign}{v:.0f}ns"
            digits = 2 if v < 10 else (1 if v < 100 else 0)
            return f"{sign}{v:.{digits}f}{unit}"
    return "-"


def fmt_bytes(n: float | int | None) -> str:
    if n is None or (isinstance(n, float) and math.isnan(n)) or n < 0:
        return "-"
    for scale, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return f"{int(n)}B"


def fmt_value(value, kind: str) -> str:
    """Format one table cell; -1 ints and NaN floats (unknown in the model) show as '-'."""
    if value is None:
        return "-"
    if kind == "text":
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return "-"
    if kind == "ns":
        return fmt_ns(value)
    if kind == "pct":
        return f"{float(value):.1f}%"
    if kind == "float":
        return f"{float(value):.3g}"
    if kind == "bytes":
        return fmt_bytes(value)
    try:
        number = int(value)
    except (TypeError, ValueError):
        return str(value)
    return "-" if number == -1 else str(number)


def tick_step(span_ns: float, cells: int, every: int = 12) -> int:
    """A 1/2/5×10^k ns ruler step giving a label roughly every ``every`` cells."""
    raw = max(span_ns * every / max(cells, 1), 1.0)
    power = 10 ** int(math.floor(math.log10(raw)))
    for mult in (1, 2, 5, 10):
        if mult * power >= raw:
            return int(mult * power)
    return int(10 * power)


def fmt_tick(t_ns: int, step_ns: int) -> str:
    """A ruler label for ``t_ns``: unit from the magnitude, decimals so the step shows."""
    scale, unit = 1, "ns"
    for s, u in _UNITS:
        if max(abs(t_ns), step_ns) >= s:
            scale, unit = s, u
            break
    decimals = 0
    while step_ns * 10**decimals < scale and decimals < 9:
        decimals += 1
    return f"{t_ns / scale:.{decimals}f}{unit}"
