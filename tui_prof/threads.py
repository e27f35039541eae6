"""The package's one thread helper: work in daemon threads, so that quitting (``q`` in
the TUI, Ctrl-C on the command line) never waits for a parse or an analysis.

* :func:`background` runs functions one after another in a daemon thread and returns a
  :class:`Job` per function, whose :meth:`Job.result` waits in short steps (the main
  thread stays responsive to Ctrl-C). The summary uses it to overlap analyses;
  ``inline=True`` gives the same jobs run in the caller's thread when first asked for.
* :data:`Lane` (:func:`threaded_lane`, :func:`inline_lane`): how a caller of
  :func:`tui_prof.analysis.summary.summarise` has its background work run.
* :class:`DaemonExecutor` / :func:`use_daemon_threads`: the TUI's thread workers.
* :func:`collector_paused`: Python's cyclic collector off while work that builds many small
  objects runs (any thread; the collector is switched back as it was when the last ends).

Textual runs a thread worker in the event loop's default executor, and ``asyncio.run``
joins that executor's threads when the app ends: a user who presses ``q`` while a
5-million-dispatch run is still parsing would wait for the parse to finish. The apps
install :class:`DaemonExecutor` as the loop's default executor instead: each job gets a
daemon thread of its own, shutting it down returns at once, and the interpreter does not
wait for daemon threads at exit. Work abandoned this way only ever reads the run
directory; a cache entry being written is in a temporary folder until it is complete
(:mod:`tui_prof.loaders.cache`).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


class Job:
    """The result of a function run by :func:`background`."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def result(self) -> Any:
        """The function's return value (its exception is raised here)."""
        while not self.done.wait(0.1):  # short waits keep the main thread responsive to Ctrl-C
            pass
        if self.error is not None:
            raise self.error
        return self.value


class Later(Job):
    """A function run in the thread that first asks for its result (:func:`background`
    with ``inline=True``)."""

    def __init__(self, func: Callable[[], Any]) -> None:
        super().__init__()
        self.func = func

    def result(self) -> Any:
        if not self.done.is_set():
            try:
                self.value = self.func()
            except BaseException as err:  # raised below, as a thread's job raises it
                self.error = err
            self.done.set()
        return super().result()


def background(funcs: Sequence[Callable[[], Any] | None], name: str = "tuiprof-background", *, inline: bool = False) -> list[Job | None]:
    """Run ``funcs`` (None entries skipped) one after another in one daemon thread;
    ``inline``: in no thread, each in the caller's thread when its result is first asked for
    (a caller that picks per run whether work is worth a thread keeps one code path)."""
    if inline:
        return [Later(f) if f is not None else None for f in funcs]
    jobs = [Job() if f is not None else None for f in funcs]

    def work() -> None:
        for func, job in zip(funcs, jobs):
            if func is None or job is None:
                continue
            try:
                job.value = func()
            except BaseException as err:  # handed to the caller by result()
                job.error = err
            job.done.set()

    threading.Thread(target=work, name=name, daemon=True).start()
    return jobs


Work = Callable[[], Any]
Lane = Callable[[Sequence[Work | None], Sequence[Work], str, bool], list[Job | None]]
"""Runs a lane of work: ``lane(first, then, name, then_in_thread)`` returns a :class:`Job` per
function (None for None); ``first`` is worth a thread of its own, ``then`` only when
``then_in_thread`` (the caller's hint). :func:`threaded_lane` and :func:`inline_lane`."""


def threaded_lane(first: Sequence[Work | None], then: Sequence[Work], name: str, then_in_thread: bool) -> list[Job | None]:
    """``first`` in a daemon thread named ``name``; ``then`` after it in that thread when
    ``then_in_thread``, else in the caller's thread when its result is asked for."""
    if then_in_thread:
        return background([*first, *then], name=name)
    return background(first, name=name) + background(then, inline=True)


def inline_lane(first: Sequence[Work | None], then: Sequence[Work], name: str, then_in_thread: bool) -> list[Job | None]:
    """Every function in the caller's thread, when its result is first asked for (a caller
    already in a worker thread of its own: the TUI)."""
    return background([*first, *then], inline=True)


class DaemonExecutor(ThreadPoolExecutor):
    """Runs each submitted call in a new daemon thread (a ThreadPoolExecutor subclass only
    because asyncio's ``set_default_executor`` accepts nothing else; its pool is unused)."""

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as err:  # handed to whoever awaits the future
                future.set_exception(err)
            else:
                future.set_result(result)

        threading.Thread(target=run, name="tuiprof-worker", daemon=True).start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to join: the threads are daemons."""


def use_daemon_threads() -> None:
    """Make the running loop's default executor a :class:`DaemonExecutor` (call from
    ``on_mount``, before the first thread worker starts)."""
    import asyncio  # here: the CLI's summary imports this module and needs no asyncio (≈ 40 ms)

    asyncio.get_running_loop().set_default_executor(DaemonExecutor())


_GC_LOCK = threading.Lock()


class _Pauses:
    running = 0  # pauses in force (any thread)
    was_on = False  # whether the collector was on before the first of them


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic collector off while the block runs: every collection of the oldest
    generation walks all live objects, so while thousands of small runs are loaded (a
    batch building their tables, the summary analysing each) its cost per process grows
    with the processes already held. Objects are still freed by reference counting; the
    collector is switched back on (if it was on) when the last pause in force ends, and
    the cycles left meanwhile are collected by its next passes."""
    with _GC_LOCK:
        if _Pauses.running == 0:
            _Pauses.was_on = gc.isenabled()
            gc.disable()
        _Pauses.running += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _Pauses.running -= 1
            if _Pauses.running == 0 and _Pauses.was_on:
                gc.enable()
