"""The database handle: one engine and one sessionmaker per process.

The engine is created lazily and again after a fork (gunicorn workers fork after the app is
built), so no connection crosses a process boundary. SQLite runs in WAL mode with a busy
timeout, enforced foreign keys and `BEGIN IMMEDIATE` for writing transactions; Postgres uses
psycopg 3 with a small pool; a pooled connection is pinged before use only when it sat idle
for `IDLE_PING_SECONDS` (a restarted server is noticed, and a busy process pays no extra round
trip per transaction, as a ping on every checkout would cost).

The run gate has a pool of its own (`autocommit_engine`): every statement its own
transaction. On SQLite its connections wait for the write lock in Python (busy timeout 0); on
Postgres they commit without waiting for the WAL flush unless `synchronous_autocommit` (the
`decision_synchronous_commit` setting); see `docs/operations.md`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, exc, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

SQLITE_BUSY_TIMEOUT_MS = 10_000
IDLE_PING_SECONDS = 10.0

# This process' id, kept current across forks: `os.getpid()` is a system call, and the engine
# is looked up several times per request.
_PROCESS = [os.getpid()]


def _forked() -> None:
    _PROCESS[0] = os.getpid()


os.register_at_fork(after_in_child=_forked)


class Database:
    """Owns the engine for one URL in the current process."""

    def __init__(
        self, url: str, *, pool_size: int = 5, synchronous_autocommit: bool = False
    ) -> None:
        self.url = url
        self.pool_size = pool_size
        self.synchronous_autocommit = synchronous_autocommit
        # One in-memory SQLite database per engine: the gate must share the main one.
        self._in_memory = self.is_sqlite and make_url(url).database in (None, "", ":memory:")
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._engine: Engine | None = None
        self._autocommit: Engine | None = None
        self._idle: list[tuple[Any, float]] = []  # the run gate's idle connections
        self._sessions: sessionmaker[Session] | None = None

    @property
    def is_sqlite(self) -> bool:
        return self.url.startswith("sqlite")

    @property
    def engine(self) -> Engine:
        if self._engine is None or self._pid != _PROCESS[0]:
            with self._lock:
                if self._engine is None or self._pid != _PROCESS[0]:
                    self._engine = _make_engine(self.url, self.pool_size)
                    self._autocommit = None
                    self._idle = []  # a parent's connections are never used (nor closed)
                    self._sessions = sessionmaker(self._engine, expire_on_commit=False)
                    self._pid = _PROCESS[0]
        return self._engine

    @property
    def autocommit_engine(self) -> Engine:
        """The run gate's pool: connections where every statement commits on its own.

        On SQLite every connection does (driftgate begins its transactions itself); the gate's
        have a busy timeout of 0, as its statements wait for the write lock in Python
        (`controller.store.fastpath.execute_when_unlocked`). On Postgres it is a pool in
        autocommit mode; unless `synchronous_autocommit`, its commits do not wait for the WAL
        flush (`synchronous_commit=off`): a decision is visible at once and durable within about
        0.6 s, or at the next synchronous commit of anything, as WAL is flushed in order. A
        crash of the Postgres server in between loses those decisions, never a check, ack or
        change. Other writes never use this pool. Connections are opened as needed: a request
        thread uses one at a time (`take_gate_connection`)."""
        engine = self.engine  # a new process starts from new engines
        if self._in_memory:
            return engine
        autocommit = self._autocommit
        if autocommit is None:
            with self._lock:
                if self._autocommit is None:
                    if self.is_sqlite:
                        self._autocommit = _make_engine(self.url, self.pool_size, busy_timeout_ms=0)
                    else:
                        options = (
                            {} if self.synchronous_autocommit else {"synchronous_commit": "off"}
                        )
                        self._autocommit = _make_engine(
                            self.url, self.pool_size, autocommit=True, options=options
                        )
                autocommit = self._autocommit
        return autocommit

    def take_gate_connection(self) -> Any:
        """A pooled connection of `autocommit_engine` for the run gate's statements; hand it
        back with `return_gate_connection`, or `close()` it after an error (back to the pool,
        which resets it or discards a dead one).

        Connections the gate used stay checked out, on a free list in front of the pool:
        taking and returning one is a list operation, where a pool checkout and checkin (with
        their events and reset) cost about a third of a small preflight's statement. The list
        never holds more connections than preflights ran at once. One idle for
        `IDLE_PING_SECONDS` is pinged first and replaced when the server went away, as the
        pool does at checkout. `dispose` closes the idle ones.
        """
        engine = self.autocommit_engine
        idle = self._idle
        while True:
            try:
                connection, last_used = idle.pop()
            except IndexError:
                return engine.raw_connection()
            if time.monotonic() - last_used < IDLE_PING_SECONDS:
                return connection
            try:
                engine.dialect.do_ping(connection.dbapi_connection)
                return connection
            except Exception:
                connection.invalidate()

    def return_gate_connection(self, connection: Any) -> None:
        idle = self._idle
        idle.append((connection, time.monotonic()))
        if idle is not self._idle:  # disposed meanwhile
            _close_idle(idle)

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
        idle, self._idle = self._idle, []
        if self._pid == _PROCESS[0]:
            _close_idle(idle)
            for engine in (self._engine, self._autocommit):
                if engine is not None:
                    engine.dispose()
        self._engine = None
        self._autocommit = None
        self._sessions = None


def _close_idle(idle: list[tuple[Any, float]]) -> None:
    while True:
        try:
            connection, _ = idle.pop()
        except IndexError:
            return
        connection.close()


def _make_engine(
    url: str,
    pool_size: int,
    *,
    autocommit: bool = False,
    options: dict[str, str] | None = None,
    busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS,
) -> Engine:
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

        def pragmas(dbapi_connection: Any, _record: Any) -> None:
            _sqlite_pragmas(dbapi_connection, busy_timeout_ms)

        event.listen(engine, "connect", pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    kwargs.update(pool_size=pool_size, max_overflow=10, pool_recycle=1800)
    if autocommit:
        kwargs["isolation_level"] = "AUTOCOMMIT"
    if options:
        # Server settings of every connection of this pool (libpq's `options`).
        kwargs["connect_args"] = {"options": " ".join(f"-c {k}={v}" for k, v in options.items())}
    engine = create_engine(url, **kwargs)
    _ping_idle_connections(engine)
    return engine


def _ping_idle_connections(engine: Engine) -> None:
    """Ping a pooled connection at checkout when it sat idle for a while; a dead one is
    replaced (the pool retries the checkout on `DisconnectionError`)."""

    def stamp(_dbapi_connection: Any, record: Any, *_args: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    def checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get("idle_since")
        if idle_since is not None and time.monotonic() - idle_since < IDLE_PING_SECONDS:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except Exception as error:
            raise exc.DisconnectionError(str(error)) from error

    event.listen(engine, "connect", stamp)
    event.listen(engine, "checkin", stamp)
    event.listen(engine, "checkout", checkout)


def _sqlite_pragmas(dbapi_connection: Any, busy_timeout_ms: int) -> None:
    # pysqlite would begin transactions itself, lazily and deferred; driftgate begins them.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    if busy_timeout_ms != SQLITE_BUSY_TIMEOUT_MS:
        cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
    cursor.close()


def _sqlite_begin(connection: Any) -> None:
    # pysqlite's own implicit BEGIN is off (see _sqlite_pragmas); writers take the lock first.
    immediate = connection.get_execution_options().get("driftgate_immediate", False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")
