"""The interactive ``tuiprof sql RUN`` prompt.

A statement runs when its line ends with ``;`` or on an empty line after it (a statement
may span lines); ``.tables``, ``.schema NAME``, ``.help`` and ``.quit`` are commands;
end of input (Ctrl-D) quits. Ctrl-C while a query runs cancels the query (DuckDB's
interrupt) and keeps the prompt; at the prompt it drops the half-typed statement. With
``readline`` (most Unix Pythons) the arrow keys recall earlier statements of the session
(history is kept in memory only: nothing is written to disk).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TextIO

from tui_prof.query.engine import QueryError, Result, Session
from tui_prof.query.output import to_text
from tui_prof.render.safe import safe_text

HELP = """.tables          list the tables (model, analysis) with what a row is
.schema NAME     columns and types of table NAME
.help            this text
.quit            leave (also Ctrl-D)
End a statement with ; (or an empty line). Ctrl-C cancels a running query. See docs/sql.md."""


class Cancelled(Exception):
    """The user pressed Ctrl-C while a query ran; DuckDB was interrupted."""


def run_cancellable(session: Session, work: Callable[[], Result]) -> Result:
    """``work()`` in a worker thread while this thread waits; Ctrl-C here interrupts DuckDB
    (the query ends with an error that is reported as :class:`Cancelled`)."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["result"] = work()
        except BaseException as err:  # handed to the waiting thread
            box["error"] = err

    worker = threading.Thread(target=target, name="tuiprof-sql", daemon=True)
    worker.start()
    cancelled = False
    while worker.is_alive():
        try:
            worker.join(0.1)
        except KeyboardInterrupt:
            cancelled = True
            session.interrupt()
    if cancelled:
        raise Cancelled
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]  # type: ignore[return-value]


def _tables(session: Session) -> str:
    infos = session.catalogue.tables()
    width = max(len(t.name) for t in infos)
    return "\n".join(f"{t.name.ljust(width)}  {t.kind:<8}  {t.doc}" for t in infos) + "\n"


def command(session: Session, line: str, out: TextIO) -> bool:
    """Run dot-command ``line``; False when it asks to quit."""
    word, _, rest = line.strip().partition(" ")
    if word in (".quit", ".exit", ".q"):
        return False
    if word == ".tables":
        out.write(_tables(session))
    elif word == ".schema":
        if not rest.strip():
            out.write("usage: .schema NAME\n")
        else:
            try:
                out.write(to_text(run_cancellable(session, lambda: session.describe(rest.strip()))))
            except (QueryError, Cancelled) as err:
                out.write(f"error: {safe_text(err) or 'cancelled'}\n")
    elif word == ".help":
        out.write(HELP + "\n")
    else:
        out.write(f"unknown command {safe_text(word)!r} (.help lists them)\n")
    return True


def _read(prompt: str, interactive: bool, stdin: TextIO) -> str:
    if interactive:
        return input(prompt)
    line = stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


def repl(session: Session, stdin: TextIO | None = None, out: TextIO | None = None) -> int:
    """Read statements until end of input; returns the exit status: 0, or 2 when a statement
    read from a script (not a terminal) failed."""
    stdin = stdin or sys.stdin
    out = out or sys.stdout
    interactive = stdin is sys.stdin and stdin.isatty()
    if interactive:
        try:
            import readline  # noqa: F401  (importing it gives input() line editing and history)
        except ImportError:
            pass
        out.write(f"tuiprof sql: {len(session.catalogue.names())} tables (.tables lists them, .help the commands, Ctrl-D quits)\n")
    buffer: list[str] = []
    failed = False
    while True:
        try:
            line = _read("...> " if buffer else "sql> ", interactive, stdin)
        except EOFError:
            if interactive:
                out.write("\n")
            break
        except KeyboardInterrupt:
            out.write("\n")
            buffer = []
            continue
        if not buffer and line.strip().startswith("."):
            if not command(session, line, out):
                break
            continue
        if line.strip():
            buffer.append(line)
        if not buffer or (line.strip() and not line.rstrip().endswith(";")):
            continue
        sql = "\n".join(buffer)
        buffer = []
        try:
            out.write(to_text(run_cancellable(session, lambda sql=sql: session.run(sql))))  # type: ignore[misc]
        except QueryError as err:
            out.write(f"error: {safe_text(err)}\n")
            failed = True
        except Cancelled:
            out.write("cancelled\n")
        out.flush()
    if buffer:  # a last statement without ; at the end of a script
        try:
            out.write(to_text(session.run("\n".join(buffer))))
        except QueryError as err:
            out.write(f"error: {safe_text(err)}\n")
            failed = True
    return 2 if failed and not interactive else 0
