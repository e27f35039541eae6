"""Daemon threads for the apps' thread workers, so that quitting never waits for them.

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

import asyncio
import threading
from concurrent.futures import Future, ThreadPoolExecutor


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
    asyncio.get_running_loop().set_default_executor(DaemonExecutor())
