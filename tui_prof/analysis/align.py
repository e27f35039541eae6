"""Longest-common-subsequence alignment of two sequences of interned codes.

:func:`lcs_pairs` returns the positions of a longest common subsequence of ``a`` and ``b``
(int codes, e.g. normalised kernel names interned over both runs): what is in ``a`` only
was removed, what is in ``b`` only was inserted, the pairs are the same element.

Method: the common prefix and suffix are cut off with two vector comparisons; the core is
aligned with the bit-parallel LCS recurrence (Allison & Dix 1986, Hyyrö 2004): one row of
the LCS table is a bit vector over ``b`` held in a Python integer, and each element of
``a`` updates it with four big-integer operations, ``V' = (V + (V & M[c])) | (V & ~M[c])``
(``M[c]``: the positions of code ``c`` in ``b``). The row's LCS values are the zero-bit counts of
its low bits, so the traceback reads them with a mask and a popcount. Work is
``len(a) × len(b) / 64`` machine-word operations done inside the integer arithmetic, not a
Python loop per table cell; memory is the ``len(a)`` rows of ``len(b)`` bits.

Ties (several longest alignments) are broken towards matching late elements of ``a`` with
late elements of ``b`` (the traceback takes a match whenever the two elements are equal).

Sequences whose table would exceed ``MAX_CELLS`` bits are aligned block by block
(``BLOCK`` elements of ``a`` against the proportional slice of ``b``): still a common
subsequence, no longer guaranteed the longest; :func:`lcs_pairs` says which it did.
"""

from __future__ import annotations

import numpy as np

MAX_CELLS = 200_000_000  # bits of the LCS table kept for one exact alignment (25 MB)
BLOCK = 8_000  # elements of a per block when the table would be larger


def lcs_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """(positions in ``a``, positions in ``b``, exact) of a common subsequence of the two
    code sequences, both ascending; ``exact`` is False when it was aligned in blocks."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    n, m = len(a), len(b)
    k = min(n, m)
    eq = a[:k] == b[:k]
    p = k if eq.all() else int(np.argmin(eq))
    ra, rb = a[p:][::-1], b[p:][::-1]
    k2 = min(len(ra), len(rb))
    eq2 = ra[:k2] == rb[:k2]
    s = k2 if eq2.all() else int(np.argmin(eq2))
    core_a, core_b = a[p : n - s], b[p : m - s]
    exact = len(core_a) * len(core_b) <= MAX_CELLS
    if exact:
        ia, ib = _lcs_core(core_a, core_b)
    else:
        ia, ib = _lcs_blocks(core_a, core_b)
    head = np.arange(p, dtype=np.int64)
    return (
        np.concatenate([head, ia + p, np.arange(n - s, n, dtype=np.int64)]),
        np.concatenate([head, ib + p, np.arange(m - s, m, dtype=np.int64)]),
        exact,
    )


def _lcs_blocks(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A common subsequence from exact alignments of proportional blocks."""
    n, m = len(a), len(b)
    blocks = max(1, -(-n // BLOCK), -(-m // BLOCK))
    cuts_a = np.linspace(0, n, blocks + 1).astype(np.int64)
    cuts_b = np.linspace(0, m, blocks + 1).astype(np.int64)
    out_a, out_b = [], []
    for i in range(blocks):
        ia, ib = _lcs_core(a[cuts_a[i] : cuts_a[i + 1]], b[cuts_b[i] : cuts_b[i + 1]])
        out_a.append(ia + cuts_a[i])
        out_b.append(ib + cuts_b[i])
    if not out_a:
        return np.array([], np.int64), np.array([], np.int64)
    return np.concatenate(out_a), np.concatenate(out_b)


def _masks(a: np.ndarray, b: np.ndarray) -> dict[int, int]:
    """Code -> bit mask of its positions in ``b`` (bit j: ``b[j]``), for the codes of ``a``."""
    wanted = np.isin(b, np.unique(a))
    pos = np.flatnonzero(wanted)
    if not len(pos):
        return {}
    codes = b[pos]
    order = np.argsort(codes, kind="stable")
    codes, pos = codes[order], pos[order]
    first = np.flatnonzero(np.concatenate([[True], codes[1:] != codes[:-1]]))
    bounds = np.append(first, len(codes))
    nbytes = (len(b) + 7) // 8
    out: dict[int, int] = {}
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        bits = np.zeros(nbytes * 8, dtype=bool)
        bits[pos[lo:hi]] = True
        out[int(codes[lo])] = int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")
    return out


def _lcs_core(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, m = len(a), len(b)
    if not n or not m:
        return np.array([], np.int64), np.array([], np.int64)
    masks = _masks(a, b)
    full = (1 << m) - 1
    rows = [full]
    v = full
    for c in a.tolist():
        mask = masks.get(c)
        if mask is not None:
            u = v & mask
            v = ((v + u) | (v - u)) & full
        rows.append(v)
    # LCS(i, j) = j - popcount(rows[i] & low j bits); match whenever a[i-1] == b[j-1]
    al, bl = a.tolist(), b.tolist()
    i, j = n, m
    low = full
    out_a: list[int] = []
    out_b: list[int] = []
    while i > 0 and j > 0:
        if al[i - 1] == bl[j - 1]:
            i -= 1
            j -= 1
            low >>= 1
            out_a.append(i)
            out_b.append(j)
        elif (rows[i - 1] & low).bit_count() == (rows[i] & low).bit_count():
            i -= 1  # LCS(i-1, j) == LCS(i, j): a[i-1] is not in it
        else:
            j -= 1
            low >>= 1
    return np.array(out_a[::-1], dtype=np.int64), np.array(out_b[::-1], dtype=np.int64)
