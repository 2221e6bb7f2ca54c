"""The database handle: one engine and one sessionmaker per process.

The engine is created lazily and again after a fork (gunicorn workers fork after the app is
built), so no connection crosses a process boundary. SQLite runs in WAL mode with a busy
timeout, enforced foreign keys and `BEGIN IMMEDIATE` for writing transactions; Postgres uses
psycopg 3 with a small pool.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

SQLITE_BUSY_TIMEOUT_MS = 10_000


class Database:
    """Owns the engine for one URL in the current process."""

    def __init__(self, url: str, *, pool_size: int = 5) -> None:
        self.url = url
        self.pool_size = pool_size
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._engine: Engine | None = None
        self._sessions: sessionmaker[Session] | None = None

    @property
    def is_sqlite(self) -> bool:
        return self.url.startswith("sqlite")

    @property
    def engine(self) -> Engine:
        if self._engine is None or self._pid != os.getpid():
            with self._lock:
                if self._engine is None or self._pid != os.getpid():
                    self._engine = _make_engine(self.url, self.pool_size)
                    self._sessions = sessionmaker(self._engine, expire_on_commit=False)
                    self._pid = os.getpid()
        return self._engine

    def session(self, *, writes: bool = False) -> Session:
        """A new session; the caller commits or rolls back (or uses `transaction`).

        On SQLite, `writes=True` takes the write lock when the transaction begins
        (`BEGIN IMMEDIATE`): a deferred transaction that reads and then writes fails at once
        when another connection wrote in between, while an immediate one waits its turn.
        Read-only sessions stay deferred, so in WAL mode they never block the writers.
        """
        engine = self.engine
        assert self._sessions is not None
        if writes and self.is_sqlite:
            return self._sessions(bind=engine.execution_options(driftgate_immediate=True))
        return self._sessions()

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A writing session that commits on success and rolls back on any error."""
        with self.session(writes=True) as session, session.begin():
            yield session

    @contextmanager
    def claim_transaction(self) -> Iterator[Session]:
        """A transaction for claiming work: on Postgres the queries add `FOR UPDATE SKIP
        LOCKED`; on SQLite it holds the write lock from its start (`BEGIN IMMEDIATE`)."""
        with self.transaction() as session:
            yield session

    def ping(self) -> None:
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    def dispose(self) -> None:
        if self._engine is not None and self._pid == os.getpid():
            self._engine.dispose()
        self._engine = None
        self._sessions = None


def _make_engine(url: str, pool_size: int) -> Engine:
    parsed = make_url(url)
    kwargs: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
        if database and database != ":memory:":
            kwargs.update(pool_size=pool_size, max_overflow=10)
        engine = create_engine(url, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    kwargs.update(pool_size=pool_size, max_overflow=10, pool_pre_ping=True, pool_recycle=1800)
    return create_engine(url, **kwargs)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # pysqlite would begin transactions itself, lazily and deferred; driftgate begins them.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _sqlite_begin(connection: Any) -> None:
    # pysqlite's own implicit BEGIN is off (see _sqlite_pragmas); writers take the lock first.
    immediate = connection.get_execution_options().get("driftgate_immediate", False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
