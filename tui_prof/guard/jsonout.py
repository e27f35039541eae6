"""The one way tuiprof writes JSON: strict RFC 8259 text that is safe on a terminal.

* **No non-finite numbers.** ``NaN``/``Infinity`` are not JSON (strict parsers and the
  Perfetto UI reject them): each becomes ``null``, and :func:`dumps` counts them
  (:class:`Dumped`) so the caller can add a note saying which values were not finite.
* **Controls escaped.** Strings keep their exact characters, but the ones a terminal or
  an editor acts on are written as ``\\uXXXX``: C0 (JSON does that already), DEL, C1,
  the bidirectional overrides and isolates, the line/paragraph separators, the BOM and
  lone surrogates (a name decoded with ``surrogateescape``). ``python -m json.tool`` of
  the output prints no escape sequence.
* Everything else as :func:`json.dumps` with ``ensure_ascii=False`` (or ``True``).

This module imports nothing of tuiprof (render and export share it).
"""

from __future__ import annotations

import json
import math
import numbers
import re
from typing import IO, Any

# DEL, C1, ALM, LRM/RLM, LRE..RLO, LS/PS, LRI..PDI, BOM, lone surrogates
UNSAFE = re.compile("[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069\ufeff\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape_controls(text: str) -> str:
    """``text`` (JSON already) with every :data:`UNSAFE` character written ``\\uXXXX``; such
    characters occur only inside strings there, where the escape means the same character."""
    return UNSAFE.sub(_escape, text)


class NonFinite:
    """Counts the non-finite floats replaced by null, and where the first few were."""

    def __init__(self) -> None:
        self.count = 0
        self.paths: list[str] = []

    def note(self, path: str) -> None:
        self.count += 1
        if len(self.paths) < 5:
            self.paths.append(path)


def finite(value: Any, seen: NonFinite | None = None, path: str = "$") -> Any:
    """``value`` with every non-finite float (also numpy's) replaced by None, recursively
    through dicts, lists and tuples; each replacement counted in ``seen``."""
    if isinstance(value, numbers.Real) and not isinstance(value, (float, numbers.Integral)):
        # numpy's float32/float16 are not float subclasses: read as the float they equal
        value = float(value)
    elif isinstance(value, numbers.Integral) and not isinstance(value, int):
        # numpy's integers are not int subclasses: written as the integer, not its str()
        value = int(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        if seen is not None:
            seen.note(path)
        return None
    if isinstance(value, dict):
        return {k: finite(v, seen, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v, seen, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def dumps(value: Any, *, seen: NonFinite | None = None, ensure_ascii: bool = False, **kwargs: Any) -> str:
    """Strict JSON of ``value`` (see the module): non-finite numbers become null (counted in
    ``seen``), controls are escaped. ``kwargs`` as for :func:`json.dumps` (``indent``,
    ``default``, ``separators``, ``sort_keys``)."""
    if "default" not in kwargs and "cls" not in kwargs:
        try:  # JSON's own types, every float finite: what finite() would give back, without walking it in Python
            return escape_controls(json.dumps(value, ensure_ascii=ensure_ascii, allow_nan=False, **kwargs))
        except (ValueError, TypeError):  # a non-finite float, or a numpy number: cleaned below
            pass
    clean = finite(value, seen)
    return escape_controls(json.dumps(clean, ensure_ascii=ensure_ascii, allow_nan=False, **kwargs))


STREAM_PIECES = 8192  # encoder pieces joined per write of dump()


def dump(value: Any, fh: IO[str], *, seen: NonFinite | None = None, ensure_ascii: bool = False, **kwargs: Any) -> None:
    """:func:`dumps` written to ``fh`` piece by piece: the same text, the indented text never
    whole in memory (an indented document is built from a few small strings per value:
    millions of them for a summary of many ranks, several times the text's size before they
    are joined; the check that the value is JSON's own types builds its compact text once).
    A value JSON cannot write raises before anything is written (no half document)."""
    if "default" in kwargs or "cls" in kwargs:  # a custom encoding: whole first, so an error writes nothing
        fh.write(dumps(value, seen=seen, ensure_ascii=ensure_ascii, **kwargs))
        return
    if not _plain(value):
        value = finite(value, seen)
        if not _plain(value):  # still not JSON's own types: raise here, before any write
            dumps(value, ensure_ascii=ensure_ascii, **kwargs)
    encoder = json.JSONEncoder(ensure_ascii=ensure_ascii, allow_nan=False, **kwargs)
    batch: list[str] = []
    for piece in encoder.iterencode(value):
        batch.append(piece)
        if len(batch) >= STREAM_PIECES:
            fh.write(escape_controls("".join(batch)))  # a piece is a whole token: no character is split
            batch.clear()
    fh.write(escape_controls("".join(batch)))


def _plain(value: Any) -> bool:
    """Whether JSON writes ``value`` as it is (its own types, every float finite), checked by
    the C encoder, without a walk in Python."""
    try:
        json.dumps(value, allow_nan=False)
    except (ValueError, TypeError):
        return False
    return True


def loads(text: str | bytes) -> Any:
    """:func:`json.loads` (reading is not guarded here: the loaders bound their inputs)."""
    return json.loads(text)
