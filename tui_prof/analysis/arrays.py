"""Small numpy pieces the analyses share (no other tuiprof import, so any analysis module
can use them)."""

from __future__ import annotations

import numpy as np


def in_order(values: np.ndarray) -> bool:
    """Whether ``values`` never decrease (a trace's own start order): the sort, and the
    gather after it, can then be skipped."""
    return bool((values[1:] >= values[:-1]).all())


def code_totals(codes: np.ndarray, values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Per code ``0 .. size-1``: how many rows hold it, and the sum of their ``values`` as
    int64 (``bincount`` and ``np.add.at``: no sort of the rows, no float rounding)."""
    counts = np.bincount(codes, minlength=size)
    sums = np.zeros(size, dtype=np.int64)
    np.add.at(sums, codes, np.asarray(values, dtype=np.int64))
    return counts, sums
