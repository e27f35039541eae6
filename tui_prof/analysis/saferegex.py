"""Regular expressions given by a user or an assistant (what-if ``--scale`` and ``host:``
patterns), matched against trace names without hanging on a pattern that backtracks.

Python's ``re`` backtracks: ``(a+)+$`` takes exponential time on a long name of ``a``, and
nothing can stop a match running in a worker thread (the MCP server's). So a pattern is
refused before any matching when its shape can backtrack exponentially -- a repetition of
something that itself repeats or alternates (``(a+)+``, ``(a|aa)*``, ``(a?){30}``) or a
back-reference (no length limit: a finding's what-if matches one kernel's escaped name,
which may be long). What remains can still be slow on hostile names (``.*a.*b`` against
10,000 ``a``: polynomial backtracking), so where the ``regex`` module is installed (the
``mcp`` extra) the names are matched with it under a time budget of :data:`SECONDS` per
pattern and the pattern is refused when the budget runs out.
"""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

SECONDS = 10.0  # [P] matching one pattern against a run's names, at most (with the regex module)


def _module(*names: str) -> Any:
    for name in names:
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


_sre = _module("re._parser", "sre_parse")  # Python 3.11+, 3.10
_fast = _module("regex")  # optional: matching with a timeout
_REPEATS = {getattr(_sre, k) for k in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(_sre, k)}
_BACKREFS = {getattr(_sre, k) for k in ("GROUPREF", "GROUPREF_EXISTS", "GROUPREF_IGNORE", "GROUPREF_LOC_IGNORE", "GROUPREF_UNI_IGNORE") if hasattr(_sre, k)}


class PatternError(ValueError):
    """A pattern refused: bad syntax, a shape that backtracks, or out of time."""


def _children(op: Any, av: Any) -> list:
    """The sub-patterns inside one parsed item (a group, a branch, a look-around)."""
    if op in _REPEATS:
        return [av[2]]
    if op is _sre.SUBPATTERN:
        return [av[-1]]
    if op is _sre.BRANCH:
        return list(av[1])
    if op in (_sre.ASSERT, _sre.ASSERT_NOT):
        return [av[1]]
    if op is getattr(_sre, "ATOMIC_GROUP", None):
        return [av]
    return []


def _varies(items: Any) -> bool:
    """Whether ``items`` can match in more than one way: they hold a repetition of varying
    count or an alternation."""
    for op, av in items:
        if op is _sre.BRANCH or (op in _REPEATS and av[0] != av[1]):
            return True
        if any(_varies(sub) for sub in _children(op, av)):
            return True
    return False


def _shape_problem(items: Any) -> str | None:
    for op, av in items:
        if op in _BACKREFS:
            return "a back-reference"
        if op in _REPEATS and av[1] > 1 and _varies(av[2]):
            return "a repetition of something that itself repeats or alternates"
        for sub in _children(op, av):
            problem = _shape_problem(sub)
            if problem:
                return problem
    return None


class BoundedPattern:
    """A pattern checked for its shape, searched case-insensitively (module docstring)."""

    def __init__(self, text: str) -> None:
        try:
            self.rx = re.compile(text, re.IGNORECASE)
            problem = _shape_problem(_sre.parse(text, re.IGNORECASE)) if _sre is not None else None
        except re.error as err:
            raise PatternError(f"bad regular expression {text!r}: {err}") from None
        except RecursionError:
            raise PatternError("regular expression nested too deeply") from None
        if problem:
            raise PatternError(f"regular expression {text!r} holds {problem}, which can take exponential time: rewrite it without")
        self.text = text
        self.timed: Any = None
        if _fast is not None:
            try:
                self.timed = _fast.compile(text, _fast.IGNORECASE | _fast.VERSION0)
            except Exception:  # a pattern only re reads: matched with re
                self.timed = None

    def search_all(self, texts: Iterable[str]) -> np.ndarray:
        """Per text, whether the pattern is found in it; :class:`PatternError` when matching
        takes longer than :data:`SECONDS` (with the regex module). Each distinct text is
        matched once (operator names repeat on every call)."""
        codes, distinct = pd.factorize(pd.Series(list(texts) if not isinstance(texts, pd.Series) else texts, dtype=object))
        if self.timed is None:
            found = np.array([bool(self.rx.search(t)) for t in distinct], dtype=bool)
        else:
            deadline = time.monotonic() + SECONDS
            out = []
            for t in distinct:
                try:
                    out.append(bool(self.timed.search(t, timeout=max(deadline - time.monotonic(), 1e-3))))
                except TimeoutError:
                    raise PatternError(f"regular expression {self.text!r} took more than {SECONDS:g} s on this run's names: not matched") from None
            found = np.array(out, dtype=bool)
        return found[codes] if len(codes) else np.zeros(0, dtype=bool)
