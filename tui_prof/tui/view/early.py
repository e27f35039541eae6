"""The load of ``tuiprof open RUN`` started before Textual is imported.

``tuiprof open`` creates an :class:`EarlyLoad` as soon as numpy, pandas, pyarrow and the
loaders are imported, then imports Textual and the app and starts it; the app's load
worker takes the run set from it (:meth:`EarlyLoad.result`) instead of calling
:func:`~tui_prof.tui.view.runview.load_runset` itself. The parse (pyarrow, which releases
the GIL) thus runs on the second core while the interpreter imports Textual and the
panes, which before used one core with the other idle.

The load is the same call with the same arguments, so the run set is the same. Its
progress and per-unit callbacks arrive before the app exists: the units are kept and
handed, in order, to the callback the app attaches, then each later one as it comes; of
the progress reports only the last is kept. Quitting the app cancels this load as any
other (``cancel_loads``): :meth:`result` then raises ``LoadCancelled``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from tui_prof.loaders.cache import PendingWrites
from tui_prof.model import Run, RunSet
from tui_prof.tui.view.runview import load_runset

Progress = Callable[[str, int, int], None]
OnUnit = Callable[[list[Run], int, int], None]


class EarlyLoad:
    """``load_runset(source, name, use_cache=...)`` in a daemon thread from construction on;
    with ``use_cache`` the cache entries of the units it parses are kept in :attr:`pending`
    (written by the app after the first screen)."""

    def __init__(self, source: str | Path, name: str | None = None, *, use_cache: bool = True) -> None:
        self.source, self.name, self.use_cache = source, name, use_cache
        self.pending = PendingWrites() if use_cache else None
        self._lock = threading.Lock()  # held while a callback runs: the app's see one unit at a time, in order
        self._progress: Progress | None = None
        self._on_unit: OnUnit | None = None
        self._units: list[tuple[list[Run], int, int]] = []  # units loaded before the app attached
        self._last_progress: tuple[str, int, int] | None = None
        self._done = threading.Event()
        self._runset: RunSet | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="tuiprof-early-load", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._runset = load_runset(self.source, self.name, use_cache=self.use_cache, progress=self._report, on_unit=self._unit, pending=self.pending)
        except BaseException as err:  # handed to the caller of result(), LoadCancelled included
            self._error = err
        finally:
            self._done.set()

    def _report(self, stage: str, done: int, total: int) -> None:
        with self._lock:
            if self._progress is None:
                self._last_progress = (stage, done, total)
            else:
                self._progress(stage, done, total)

    def _unit(self, runs: list[Run], done: int, total: int) -> None:
        with self._lock:
            if self._on_unit is None:
                self._units.append((runs, done, total))
            else:
                self._on_unit(runs, done, total)

    def done(self) -> bool:
        return self._done.is_set()

    def result(self, progress: Progress | None = None, on_unit: OnUnit | None = None, timeout: float | None = None) -> RunSet:
        """Attach the callbacks (the units loaded so far and the last progress report are
        handed to them first), wait for the load and return its run set, or raise what
        the load raised (``LoadError``, ``LoadCancelled``, ...); ``TimeoutError`` after
        ``timeout`` seconds."""
        with self._lock:
            if on_unit is not None:
                for args in self._units:
                    on_unit(*args)
                self._units.clear()
                self._on_unit = on_unit
            if progress is not None:
                if self._last_progress is not None and not self._done.is_set():
                    progress(*self._last_progress)
                self._progress = progress
        if not self._done.wait(timeout):
            raise TimeoutError(f"loading {self.source} took more than {timeout} s")
        if self._error is not None:
            raise self._error
        assert self._runset is not None
        return self._runset
