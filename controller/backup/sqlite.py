"""SQLite: an online, consistent copy of a live database file, and putting a copy in its
place atomically.

The copy is SQLite's online backup API (`sqlite3.Connection.backup`) in one step: it reads
every page inside one read transaction, so it is a consistent snapshot of the last commit,
and in WAL mode (driftgate's) a reader never blocks the server's writers, nor they it. The
copy is written next to its destination, switched to a single file (rollback journal, no
`-wal` to carry along), checked (`PRAGMA integrity_check`), flushed to disk and renamed into
place, so a crash leaves either the old file or the whole new one.

A restore replaces the live file only when nothing else has it open: switching the file out
of WAL mode needs every other connection closed (a `driftgate serve` process keeps pooled
connections open, a controller keeps its lock too), and an exclusive lock is then held on it
until the new file has been renamed over it, so no process opens the old file meanwhile. The
old file is kept beside it under a dated name.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from controller.errors import ConfigError, Conflict

VERSION_TABLE = "alembic_version"


@dataclass(frozen=True)
class CopyFacts:
    """What a checked copy holds: its migration revision and its size on disk."""

    revision: str
    size: int


def backup(source: Path, destination: Path) -> CopyFacts:
    """Copy the live database `source` to `destination` (replaced atomically if it exists)."""
    if not source.is_file():
        raise ConfigError(f"there is no SQLite database at {source}")
    partial = _partial_next_to(destination)
    try:
        with contextlib.closing(sqlite3.connect(source, timeout=30)) as live:
            with contextlib.closing(sqlite3.connect(partial)) as copy:
                live.backup(copy)  # pages=-1: every page in one step, one read transaction
        facts = _finish(partial, what=f"the copy of {source}")
        _place(partial, destination)
        return facts
    finally:
        partial.unlink(missing_ok=True)


@dataclass(frozen=True)
class Prepared:
    """A checked copy of a backup, next to the database file it is to replace."""

    path: Path
    facts: CopyFacts


@contextlib.contextmanager
def prepared_copy(source: Path, target: Path) -> Iterator[Prepared]:
    """Copy the backup `source` next to the database file `target` and check the copy (whole,
    driftgate's, one revision); the copy is removed on leaving unless `put_in_place` took it.
    Nothing of `target` is touched."""
    if not source.is_file():
        raise ConfigError(f"{source} is not a file")
    partial = _partial_next_to(target)
    try:
        with contextlib.closing(_connect_read_only(source)) as backup_file:
            with contextlib.closing(sqlite3.connect(partial)) as copy:
                try:
                    backup_file.backup(copy)
                except sqlite3.DatabaseError as exc:
                    raise ConfigError(f"{source} is not a SQLite database ({exc})") from None
        yield Prepared(partial, _finish(partial, what=str(source)))
    finally:
        partial.unlink(missing_ok=True)


def put_in_place(prepared: Prepared, target: Path) -> Path | None:
    """Rename the prepared copy over `target`; return where the replaced file was kept (None
    when there was none). Refuses (`Conflict`) while another process has `target` open; the
    caller holds the controller lock so that no controller starts meanwhile."""
    with _held_alone(target) as held:
        kept = None
        if held:
            kept = target.with_name(
                f"{target.name}.before-restore-{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
            )
            os.link(target, kept)  # the old file stays whole under its new name
        _place(prepared.path, target)
    return kept


@contextlib.contextmanager
def _held_alone(target: Path) -> Iterator[bool]:
    """Hold `target` exclusively (yields False when there is no such file yet)."""
    if not target.exists():
        yield False
        return
    connection = sqlite3.connect(target, timeout=0, isolation_level=None)
    try:
        try:
            # Leaving WAL mode needs every other connection closed (and folds the -wal in);
            # BEGIN EXCLUSIVE then keeps new ones out until the rename.
            mode = connection.execute("PRAGMA journal_mode=DELETE").fetchone()[0]
            if str(mode).lower() != "delete":
                raise sqlite3.OperationalError("database is locked")
            connection.execute("BEGIN EXCLUSIVE")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise ConfigError(f"cannot open the database {target}: {exc}") from None
            raise Conflict(
                f"another process has the database {target} open (a `driftgate serve` or "
                "`up`, a controller, a sqlite3 shell): stop every driftgate process on it "
                "first, then restore",
                code="database_in_use",
            ) from None
        yield True
    finally:
        with contextlib.suppress(sqlite3.Error):
            if connection.in_transaction:
                connection.execute("ROLLBACK")
        connection.close()


def _finish(partial: Path, what: str) -> CopyFacts:
    """Make the copy a single file, check it, and flush it to disk."""
    with contextlib.closing(sqlite3.connect(partial, isolation_level=None)) as copy:
        copy.execute("PRAGMA journal_mode=DELETE")
        revision = _checked(copy, what)
    with partial.open("rb") as written:
        os.fsync(written.fileno())
    return CopyFacts(revision=revision, size=partial.stat().st_size)


def _checked(connection: sqlite3.Connection, what: str) -> str:
    try:
        problems = [row[0] for row in connection.execute("PRAGMA integrity_check")]
        tables = {
            row[0]
            for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"{what} is not a SQLite database ({exc})") from None
    if problems != ["ok"]:
        raise ConfigError(f"{what} is damaged: {'; '.join(problems[:3])}")
    if VERSION_TABLE not in tables or "orgs" not in tables:
        raise ConfigError(f"{what} is a SQLite database, but not driftgate's (no {VERSION_TABLE})")
    revisions = [row[0] for row in connection.execute(f"SELECT version_num FROM {VERSION_TABLE}")]
    if len(revisions) != 1:
        raise ConfigError(f"{what} has no single migration revision ({revisions or 'none'})")
    return str(revisions[0])


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """`path` opened for reading only; a file in WAL mode whose `-shm` cannot be made read as
    it is on disk (`immutable`: nothing else writes a backup)."""
    uri = path.resolve().as_uri()
    connection = sqlite3.connect(f"{uri}?mode=ro", uri=True)
    try:
        connection.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return connection
    except sqlite3.DatabaseError as exc:
        connection.close()
        if "not a database" in str(exc) or "malformed" in str(exc):
            raise ConfigError(f"{path} is not a SQLite database ({exc})") from None
    try:
        return sqlite3.connect(f"{uri}?immutable=1", uri=True)
    except sqlite3.Error as exc:
        raise ConfigError(f"cannot open {path}: {exc}") from None


def _partial_next_to(path: Path) -> Path:
    """A new file in `path`'s directory (the rename into place must not cross filesystems)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.partial")


def _place(partial: Path, destination: Path) -> None:
    """Rename the flushed `partial` over `destination` and flush the directory entry."""
    os.replace(partial, destination)
    directory = os.open(destination.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
