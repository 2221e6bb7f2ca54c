"""The database handle: one engine and one sessionmaker per process.

The engine is created lazily and again after a fork (gunicorn workers fork after the app is
built), so no connection crosses a process boundary. SQLite runs in WAL mode with a busy
timeout and enforced foreign keys; Postgres uses psycopg 3 with a small pool.
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

    def __init__(self, url: str) -> None:
        self.url = url
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
                    self._engine = _make_engine(self.url)
                    self._sessions = sessionmaker(self._engine, expire_on_commit=False)
                    self._pid = os.getpid()
        return self._engine

    def session(self) -> Session:
        """A new session; the caller commits or rolls back (or uses `transaction`)."""
        self.engine  # noqa: B018 - makes sure the sessionmaker belongs to this process
        assert self._sessions is not None
        return self._sessions()

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A session that commits on success and rolls back on any error."""
        with self.session() as session, session.begin():
            yield session

    @contextmanager
    def claim_transaction(self) -> Iterator[Session]:
        """A transaction for claiming work: write-locked from its first statement on SQLite
        (`BEGIN IMMEDIATE`, so two claimers never read the same rows and then collide);
        on Postgres an ordinary transaction, with `FOR UPDATE SKIP LOCKED` in the queries."""
        if not self.is_sqlite:
            with self.transaction() as session:
                yield session
            return
        with self.engine.connect() as raw:
            conn = raw.execution_options(isolation_level="AUTOCOMMIT")
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                with Session(bind=conn, expire_on_commit=False) as session:
                    yield session
                    session.flush()
                conn.exec_driver_sql("COMMIT")
            except BaseException:
                conn.exec_driver_sql("ROLLBACK")
                raise

    def ping(self) -> None:
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    def dispose(self) -> None:
        if self._engine is not None and self._pid == os.getpid():
            self._engine.dispose()
        self._engine = None
        self._sessions = None


def _make_engine(url: str) -> Engine:
    parsed = make_url(url)
    kwargs: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
        engine = create_engine(url, **kwargs)
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    kwargs.update(pool_size=5, max_overflow=10, pool_pre_ping=True, pool_recycle=1800)
    return create_engine(url, **kwargs)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()
