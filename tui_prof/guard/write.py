"""The one way tuiprof writes: every export and cache file goes through this module.

The rules, for a destination that another program or another account may have prepared:

* a file is created with ``O_CREAT | O_EXCL | O_NOFOLLOW`` (never through a link, never over
  an existing file) under a temporary name beside its destination, and renamed into place
  only once it is complete (:func:`atomic_file`); ``rename`` replaces a link at the
  destination instead of following it;
* a destination that is a link, a FIFO, a device or another user's is refused
  (:class:`WriteRefused`) before anything is written;
* a folder is created mode 0700; an existing one is used only when it is a real folder of
  the current user that group and others cannot write (:func:`make_private_dir`);
* a folder of several files is built under a temporary name and renamed into place after
  its last file (:func:`atomic_folder`), so its destination is either absent, the previous
  complete folder, or the new complete folder;
* temporary names carry the writer's process id: they are removed on any exit Python sees
  (an exception, Ctrl-C, ``sys.exit``, SIGTERM/SIGHUP once :func:`install_signal_cleanup`
  ran) and, after a ``kill -9``, by the next write to the same destination
  (:func:`sweep_stale`: the writer is no longer alive).

This module imports nothing of tuiprof (the loaders' cache and the exporters share it).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import secrets
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
TEMP_TAG = ".tuiprof-"  # temporary names: ".<name>.tuiprof-<pid>-<8 hex>"
_NAME_ROOM = 100  # a destination name is cut to this many characters in its temporary name

_live: set[str] = set()  # this process's temporary paths, removed at exit
_live_lock = threading.Lock()


class WriteRefused(OSError):
    """A destination tuiprof will not write to (a link, not a regular file or folder,
    another user's, writable by others): the message says which and why."""


def _shown(path: str | os.PathLike) -> str:
    return repr(os.fsdecode(os.fspath(path)))


def check_owned(info: os.stat_result, what: str, path: str | os.PathLike, *, group_ok: bool = False) -> None:
    """:class:`WriteRefused` when ``info`` is not the current user's or group/others may
    write it (``group_ok``: others only, for a destination the user chose and created, e.g.
    with ``mkdir`` under umask 002, where the group is usually the user's own)."""
    uid = os.getuid()
    if info.st_uid != uid:
        raise WriteRefused(f"{what} {_shown(path)} is owned by uid {info.st_uid}, not by you (uid {uid})")
    if info.st_mode & (0o002 if group_ok else 0o022):
        who = "others" if group_ok else "group or others"
        raise WriteRefused(f"{what} {_shown(path)} is writable by {who} (mode {stat.S_IMODE(info.st_mode):04o})")


def make_private_dir(path: str | os.PathLike, *, exist_ok: bool = False, parents: bool = False) -> Path:
    """Create folder ``path`` with mode 0700 (``parents``: missing parents too, also 0700).
    An existing one (``exist_ok``) must be a real folder (not a link) of the current user
    that group and others cannot write, else :class:`WriteRefused`."""
    folder = Path(os.fspath(path))
    if parents and not os.path.lexists(folder.parent) and folder.parent != folder:
        make_private_dir(folder.parent, exist_ok=True, parents=True)
    try:
        os.mkdir(folder, 0o700)
        return folder
    except FileExistsError:
        if not exist_ok:
            raise
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise WriteRefused(f"{_shown(folder)} exists and is not a folder" + (" (a symbolic link)" if stat.S_ISLNK(info.st_mode) else ""))
    check_owned(info, "folder", folder)
    return folder


def open_new(path: str | os.PathLike, mode: int = 0o600) -> BinaryIO:
    """A new file ``path`` opened for writing: created here (``O_EXCL``), never through a link."""
    fd = os.open(path, NEW_FLAGS, mode)
    return open(fd, "wb")


def write_new(path: str | os.PathLike, data: bytes, mode: int = 0o600) -> None:
    """Create ``path`` holding ``data`` (see :func:`open_new`)."""
    with open_new(path, mode) as fh:
        fh.write(data)


def open_existing(path: str | os.PathLike) -> BinaryIO:
    """A regular file opened for reading without following a link or blocking on a FIFO
    (checked on the descriptor): how a writer reads back what is at its destination."""
    fd = os.open(path, READ_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise WriteRefused(f"{_shown(path)} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return open(fd, "rb")


def replace(source: str | os.PathLike, target: str | os.PathLike) -> None:
    """Rename ``source`` over ``target`` (a link at ``target`` is replaced, never followed)."""
    os.replace(source, target)


def remove_tree(path: str | os.PathLike) -> None:
    """Remove folder ``path`` and what it holds without following any link in it; a link
    or a file at ``path`` is unlinked."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def temp_path(dest: Path) -> Path:
    """A fresh temporary name beside ``dest``: ``.<name>.tuiprof-<pid>-<8 hex>``."""
    return dest.parent / f".{dest.name[:_NAME_ROOM]}{TEMP_TAG}{os.getpid()}-{secrets.token_hex(4)}"


def _stale_pattern(dest: Path) -> re.Pattern[str]:
    return re.compile(re.escape(f".{dest.name[:_NAME_ROOM]}{TEMP_TAG}") + r"(\d+)-[0-9a-f]{8}\Z")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another account's process: alive
        return True
    return True


def sweep_stale(dest: Path) -> int:
    """Remove the temporary files and folders that a writer of ``dest`` left when it was
    killed (its process no longer runs); only the current user's entries named by
    :func:`temp_path` are touched. Returns how many were removed."""
    pattern = _stale_pattern(dest)
    removed = 0
    try:
        names = os.listdir(dest.parent)
    except OSError:
        return 0
    for name in names:
        match = pattern.match(name)
        if match is None or _alive(int(match.group(1))):
            continue
        path = dest.parent / name
        try:
            if os.lstat(path).st_uid != os.getuid():
                continue
        except OSError:
            continue
        remove_tree(path)
        removed += 1
    return removed


def _register(path: Path) -> None:
    with _live_lock:
        _live.add(os.fspath(path))


def _release(path: Path) -> None:
    with _live_lock:
        _live.discard(os.fspath(path))


@atexit.register
def cleanup() -> None:
    """Remove every temporary path of this process that is still there (at exit)."""
    with _live_lock:
        paths = list(_live)
        _live.clear()
    for path in paths:
        remove_tree(path)


def install_signal_cleanup() -> None:
    """Make SIGTERM and SIGHUP (where they still have their default action) end the process
    through ``SystemExit``, so the ``finally`` blocks and :func:`cleanup` remove temporary
    files. Call it from the main thread."""

    def _exit(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) == signal.SIG_DFL:
            with contextlib.suppress(ValueError, OSError):  # not the main thread
                signal.signal(sig, _exit)


def check_file_destination(dest: Path) -> bool:
    """Whether ``dest`` exists; :class:`WriteRefused` when it is a link or not a regular file
    (a FIFO, a device, a folder): a writer replaces only a regular file."""
    try:
        info = os.lstat(dest)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(info.st_mode):
        raise WriteRefused(f"refusing to write {_shown(dest)}: it is a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise WriteRefused(f"refusing to write {_shown(dest)}: it is not a regular file")
    return True


@contextlib.contextmanager
def atomic_file(dest: str | os.PathLike, mode: int = 0o644) -> Iterator[BinaryIO]:
    """Write file ``dest``: yields a new file under a temporary name beside it, renamed over
    ``dest`` when the block ends without an exception and removed otherwise. A ``dest`` that
    is a link or not a regular file is refused (:func:`check_file_destination`); ``mode`` is
    reduced by the umask as for any new file."""
    target = Path(os.fspath(dest))
    check_file_destination(target)
    sweep_stale(target)
    temp = temp_path(target)
    _register(temp)
    try:
        with open_new(temp, mode) as fh:
            yield fh
        check_file_destination(target)  # nothing put a link or a FIFO there meanwhile
        replace(temp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        _release(temp)


def write_atomic(dest: str | os.PathLike, data: bytes, mode: int = 0o644) -> None:
    """:func:`atomic_file` holding ``data``."""
    with atomic_file(dest, mode) as fh:
        fh.write(data)


@contextlib.contextmanager
def atomic_folder(dest: str | os.PathLike, clear: Callable[[Path], None]) -> Iterator[Path]:
    """Build folder ``dest``: yields a new private folder (0700) under a temporary name
    beside it; when the block ends without an exception, ``clear(dest)`` removes what is at
    ``dest`` (it raises when that is not something the caller may replace; it is called only
    when ``dest`` exists) and the folder is renamed into place. On any exception the
    temporary folder is removed and ``dest`` is untouched. A ``dest`` that is a link, not a
    folder, or a folder another user owns or that everyone can write is refused before
    anything is built (a group-writable folder of the user's own is accepted)."""
    target = Path(os.fspath(dest))
    _check_folder_destination(target)
    sweep_stale(target)
    temp = temp_path(target)
    _register(temp)
    try:
        os.mkdir(temp, 0o700)
        yield temp
        if _check_folder_destination(target):
            clear(target)
        os.rename(temp, target)  # fails (never follows) if something is at target again
    finally:
        remove_tree(temp)
        _release(temp)


def _check_folder_destination(target: Path) -> bool:
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return False
    if stat.S_ISLNK(info.st_mode):
        raise WriteRefused(f"refusing to write {_shown(target)}: it is a symbolic link")
    if not stat.S_ISDIR(info.st_mode):
        raise WriteRefused(f"refusing to write {_shown(target)}: it exists and is not a folder")
    # the folder is replaced by the new one (0700) and its old content is checked entry by
    # entry before removal, so only another user, or everyone, being able to write it is refused
    check_owned(info, "folder", target, group_ok=True)
    return True


def make_temp_dir(prefix: str) -> Path:
    """A new private folder (0700) in the system's temporary folder, removed at exit if the
    caller has not removed it (:func:`remove_temp_dir`) and after a ``kill -9`` by
    :func:`sweep_stale` of the same prefix."""
    base = Path(tempfile.gettempdir()) / prefix
    sweep_stale(base)
    for _ in range(16):
        folder = temp_path(base)
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            continue
        _register(folder)
        return folder
    raise FileExistsError(f"no free temporary name in {_shown(base.parent)}")


def remove_temp_dir(folder: Path) -> None:
    """Remove a folder of :func:`make_temp_dir`."""
    remove_tree(folder)
    _release(folder)
