"""Use cases of `driftgate db backup FILE` and `db restore FILE`.

SQLite: an online copy while the server serves and writes, and a restore that refuses while
anything has the database open, checks the backup (whole, driftgate's, at a revision this
release knows) and replaces the file atomically, keeping the old one. Postgres: the backup
is `pg_dump`'s custom format; a restore is the documented `pg_restore` procedure into a new
database, which this refuses to improvise.

Either way the secret key (`DRIFTGATE_SECRET_KEY`, or `secret.key` in the data directory)
is not in the database: stored secrets (watch headers, webhook destinations and secrets, the
SMTP password) cannot be read without it, so it is backed up separately.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controller.backup import postgres, sqlite
from controller.errors import ConfigError, Conflict
from controller.store import migrate
from controller.store.db import Database
from controller.store.lockfile import acquire_controller_lock, sqlite_file


@dataclass(frozen=True)
class BackupDone:
    path: Path
    size: int
    revision: str | None  # None: a Postgres dump (not opened again to read it)
    backend: str


@dataclass(frozen=True)
class RestoreDone:
    path: Path
    revision: str
    head: str
    kept: Path | None  # where the replaced database file was kept

    @property
    def needs_upgrade(self) -> bool:
        return self.revision != self.head


def backup(database: Database, destination: Path, *, overwrite: bool = False) -> BackupDone:
    """Back the store up to `destination` while it serves."""
    if destination.exists() and not overwrite:
        raise ConfigError(f"{destination} exists: name another file, or pass --force to replace it")
    if destination.is_dir():
        raise ConfigError(f"{destination} is a directory: name the backup file")
    if not database.is_sqlite:
        size = postgres.dump(database.url, destination)
        return BackupDone(destination, size, None, "postgresql")
    source = _sqlite_path(database)
    facts = sqlite.backup(source, destination)
    return BackupDone(destination, facts.size, facts.revision, "sqlite")


def restore(database: Database, source: Path) -> RestoreDone:
    """Put the SQLite backup `source` in place of the store's database file."""
    if not database.is_sqlite:
        raise ConfigError(
            "a Postgres store is restored with pg_restore into a new, empty database, then "
            f"DRIFTGATE_DATABASE_URL pointed at it: see {postgres.PROCEDURE}"
        )
    target = _sqlite_path(database)
    known = migrate.history()
    head = known[-1]
    database.dispose()  # this process' own connections would count as another user
    with sqlite.prepared_copy(source, target) as prepared:
        revision = prepared.facts.revision
        if revision not in known:
            raise ConfigError(
                f"{source} is at migration revision {revision}, which this release does not "
                f"know (it knows {known[0]} to {head}): it was made by a newer release; "
                "restore it with that release"
            )
        try:
            lock = acquire_controller_lock(database.url)  # no controller runs, nor starts
        except Conflict as exc:
            running = exc.message.split(";")[0]
            raise Conflict(
                f"{running}: stop every driftgate process on it first, then restore",
                code="database_in_use",
            ) from None
        try:
            kept = sqlite.put_in_place(prepared, target)
        finally:
            if lock is not None:
                lock.release()
    return RestoreDone(target, revision, head, kept)


def _sqlite_path(database: Database) -> Path:
    path = sqlite_file(database.url)
    if path is None:
        raise ConfigError("an in-memory SQLite database has nothing to back up or restore")
    return path
