"""One controller per SQLite file: an exclusive lock on `<database>.controller.lock`.

SQLite serves one controller (ARCHITECTURE.md): its claims are `BEGIN IMMEDIATE`
transactions, not the `FOR UPDATE SKIP LOCKED` replicas coordinate through on Postgres. So a
controller on a SQLite file takes an `flock` on a file next to it for as long as it runs and
writes its pid there; a second one is refused with the file and that pid. The kernel drops
the lock when the holding process dies, however it dies, so `kill -9` never leaves a stale
lock behind. Postgres (any number of controllers) and in-memory SQLite (private to one
process) take no lock.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from sqlalchemy.engine import make_url

from controller.errors import Conflict

SUFFIX = ".controller.lock"


class ControllerLock:
    """The held lock; `release` gives it back (process exit does too)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the only descriptor releases the flock
            self._fd = None


def acquire_controller_lock(database_url: str) -> ControllerLock | None:
    """Take the one-controller lock of a SQLite file; None when the store needs none.

    Raises `Conflict` naming the database file and the holder's pid when another controller
    holds it.
    """
    database = sqlite_file(database_url)
    if database is None:
        return None
    path = database.with_name(database.name + SUFFIX)
    # Not inherited across exec (os.open's default), so a git or helper subprocess never
    # keeps the lock alive after the controller is gone.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read_pid(fd)
        os.close(fd)
        raise Conflict(
            f"another controller{f' (pid {holder})' if holder else ''} is running on the "
            f"SQLite database {database}; SQLite serves one controller: stop that one first, "
            f"or use Postgres for several (lock file {path})",
            code="controller_running",
        ) from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return ControllerLock(path, fd)


def sqlite_file(database_url: str) -> Path | None:
    """The absolute path of a SQLite database file; None for Postgres and in-memory SQLite."""
    url = make_url(database_url)
    if url.get_backend_name() != "sqlite":
        return None
    name = url.database or ""
    if name.startswith("file:"):  # a URI filename (`?uri=true`)
        name = name.removeprefix("file:")
        if url.query.get("mode") == "memory":
            return None
    if name in ("", ":memory:"):
        return None
    return Path(name).resolve()


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
