"""Formatting of times, sizes, percentages and table cells: the one module that turns
numbers into text for every output (CLI text and Markdown, the TUI).

Durations use three significant digits and a space before the unit (``950 ns``,
``12.3 µs``, ``4.56 ms``, ``1.23 s``), so the same value reads the same in the CLI
report, the diff table and the TUI. Unknown values (None, NaN, the model's -1 for
integers) read ``-``. No computation happens here.
"""

from __future__ import annotations

import math

from tui_prof.percent import fmt_pct as fmt_pct  # the one percentage style, shared with the analysis' messages

_UNITS = ((1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs"), (1, "ns"))
_BYTE_UNITS = ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


def _unknown(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt_ns(ns: float | None) -> str:
    """A duration in ns as a short string with three significant digits: ``950 ns``,
    ``12.3 µs``, ``4.56 ms``, ``1.23 s`` (``-`` when unknown)."""
    if _unknown(ns):
        return "-"
    assert ns is not None
    value = float(ns)
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    sign = "-" if value < 0 else ""
    value = abs(value)
    for scale, unit in _UNITS:
        if value >= scale or scale == 1:
            v = value / scale
            if unit == "ns":
                return f"{sign}{v:.0f} ns"
            # round first so 9.996 ms reads "10.0 ms", not "10.00 ms"
            digits = 2 if round(v, 2) < 10 else (1 if round(v, 1) < 100 else 0)
            return f"{sign}{v:.{digits}f} {unit}"
    return "-"


def fmt_bytes(n: float | None) -> str:
    """A size in bytes: ``512 B``, ``1.5 KiB``, ``12.0 MiB``, ``3.2 GiB`` (``-`` when
    unknown or negative, the model's marker for "not recorded")."""
    if _unknown(n) or n is None or n < 0:
        return "-"
    for scale, unit in _BYTE_UNITS:
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def fmt_value(value, kind: str) -> str:
    """One table cell of ``kind`` (``text``, ``ns``, ``pct``, ``float``, ``bytes``, or an
    integer); -1 integers and NaN floats (unknown in the model) read ``-``."""
    if value is None:
        return "-"
    if kind == "text":
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return "-"
    if kind == "ns":
        return fmt_ns(value)
    if kind == "pct":
        return fmt_pct(value)
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
    """A ruler label for ``t_ns``: unit from the magnitude, decimals so the step shows
    (no space before the unit: ruler labels are packed)."""
    scale, unit = 1, "ns"
    for s, u in _UNITS:
        if max(abs(t_ns), step_ns) >= s:
            scale, unit = s, u
            break
    decimals = 0
    while step_ns * 10**decimals < scale and decimals < 9:
        decimals += 1
    return f"{t_ns / scale:.{decimals}f}{unit}"


def shorten(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters with an ellipsis."""
    return text if len(text) <= width else text[: width - 1] + "…"


def _strip_namespaces(text: str) -> str:
    """``a::b::f<c::d>`` -> ``f<d>``: every ``name::`` qualifier (and ``(anonymous namespace)::``) dropped."""
    text = text.replace("(anonymous namespace)::", "")
    out: list[str] = []
    word_start = 0
    i = 0
    while i < len(text):
        if text.startswith("::", i):
            del out[word_start:]  # the qualifier just written
            i += 2
            continue
        ch = text[i]
        out.append(ch)
        if not (ch.isalnum() or ch == "_"):
            word_start = len(out)
        i += 1
    return "".join(out)


def _drop_arguments(text: str) -> str:
    """The trailing top-level argument list ``(...)`` removed (a demangled signature's)."""
    if not text.endswith(")"):
        return text
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[i], 0)
        if depth == 0:
            return text[:i].rstrip() if i > 0 else text
    return text


def shorten_name(name: str, width: int, keep: int | None = None) -> str:
    """A kernel name in ``width`` characters, readable and distinguishable: ``void``, the
    argument list and namespaces go first; then an ellipsis in the middle keeps the start
    and the end (the template's distinguishing arguments). ``keep``: a position of the
    reduced name the middle must keep (see :func:`shorten_names`)."""
    if len(name) <= width:
        return name
    text = name[5:] if name.startswith("void ") else name
    for step in (_drop_arguments, _strip_namespaces):
        if len(text) <= width:
            return text
        text = step(text)
    if len(text) <= width:
        return text
    if width < 5:
        return text[: max(width - 1, 0)] + "…"
    if keep is None:
        head = (width - 1) // 2
        return text[:head] + "…" + text[len(text) - (width - 1 - head) :]
    # head … window around ``keep`` … tail
    room = width - 2
    head = max(room // 4, 1)
    tail = max(room // 4, 1)
    mid = room - head - tail
    start = min(max(keep - mid // 2, head), max(len(text) - tail - mid, head))
    return text[:head] + "…" + text[start : start + mid] + "…" + text[len(text) - tail :]


def shorten_names(names: list[str], width: int) -> list[str]:
    """:func:`shorten_name` of each name; names that would read the same keep, in the
    middle, the first place where their reduced forms differ."""
    out = [shorten_name(n, width) for n in names]
    seen: dict[str, list[int]] = {}
    for i, short in enumerate(out):
        seen.setdefault(short, []).append(i)
    for same in seen.values():
        if len(same) < 2:
            continue
        reduced = [_strip_namespaces(_drop_arguments(names[i][5:] if names[i].startswith("void ") else names[i])) for i in same]
        for j, i in enumerate(same):
            # the places where this name first differs from each other one, nearest first
            spots = sorted(
                {next((p for p, (a, b) in enumerate(zip(reduced[j], o)) if a != b), min(len(reduced[j]), len(o))) for k, o in enumerate(reduced) if k != j}
            )
            taken = {out[k] for k in same if k != i}
            for spot in spots:
                out[i] = shorten_name(names[i], width, keep=spot)
                if out[i] not in taken:
                    break
    return out


def resolution_step(ns: float) -> int:
    """The power of ten at or below ``ns`` (at least 1): the digit a time must show."""
    return int(10 ** math.floor(math.log10(ns))) if ns >= 1 else 1


def fmt_at(t_ns: float | None, resolution_ns: float) -> str:
    """A point in time (an offset from the run start) with the digits that tell apart
    points ``resolution_ns`` apart: 2.52 s at 1 µs resolution is ``2.520113 s``, a view
    of 40.5 ms ± 8 µs reads ``40.512 ms``. Unit from the magnitude; 0 is ``0 ns``."""
    if _unknown(t_ns):
        return "-"
    t = float(t_ns)  # type: ignore[arg-type]
    if t == 0:
        return "0 ns"
    step = resolution_step(resolution_ns)
    scale, unit = 1, "ns"
    for s, u in _UNITS:
        if abs(t) >= s:
            scale, unit = s, u
            break
    decimals = 0
    while step * 10**decimals < scale and decimals < 9:
        decimals += 1
    return f"{t / scale:.{decimals}f} {unit}"


def fmt_ids(ids: list) -> str:
    """Agent ids as runs of consecutive integers: [2, 3, 4, 7] -> "2–4, 7" (other ids as given)."""
    if not all(isinstance(i, int) for i in ids):
        return ", ".join(str(i) for i in ids)
    spans: list[list[int]] = []
    for i in sorted(ids):
        if spans and i == spans[-1][1] + 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in spans)


SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float] | list[int], width: int | None = None) -> str:
    """One block character per value, scaled from the smallest (▁) to the largest (█);
    with ``width``, values are grouped into at most that many cells (each cell the largest
    of its group, so an outlier stays visible)."""
    if not len(values):
        return ""
    vals = [float(v) for v in values]
    if width is not None and width > 0 and len(vals) > width:
        per = len(vals) / width
        vals = [max(vals[int(i * per) : max(int((i + 1) * per), int(i * per) + 1)]) for i in range(width)]
    lo, hi = min(vals), max(vals)
    if hi <= lo:
        return SPARK[0] * len(vals)
    top = len(SPARK) - 1
    return "".join(SPARK[min(top, int(round((v - lo) / (hi - lo) * top)))] for v in vals)
