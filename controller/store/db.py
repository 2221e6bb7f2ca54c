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

Nothing waits on the store without a bound (`docs/operations.md`, "When the database is
down"): on Postgres a connection must be made within `connect_timeout`, a statement ends at
the server's `statement_timeout`, and the client stops waiting for any answer
`ANSWER_GRACE_SECONDS` later (a frozen server or a dead network path never answers, not even
to cancel); a pool checkout waits at most `connect_timeout` too. An error that says the store
cannot answer starts an outage (`controller.store.outage`): sessions then fail at once with
`StoreUnavailable` until a probe gets an answer again. Inside a web request, a wait for
SQLite's write lock also ends at the request's deadline, and readiness waits at most its
budget for a ping (`controller.store.outage`).
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

from controller.errors import StoreUnavailable
from controller.store.outage import BUSY, LOCK_QUEUE, Probe, Reachability, bounded_by, store_fault

SQLITE_BUSY_TIMEOUT_MS = 10_000
IDLE_PING_SECONDS = 10.0
# How much longer than the server's statement_timeout the client waits for an answer: a live
# server cancels the statement first (the connection stays usable); one that is frozen or cut
# off never answers, and the connection is closed.
ANSWER_GRACE_SECONDS = 1.0
POOL_TIMEOUT_SECONDS = 30.0  # a pool checkout, without a connect timeout (SQLAlchemy's own)

# This process' id, kept current across forks: `os.getpid()` is a system call, and the engine
# is looked up several times per request.
_PROCESS = [os.getpid()]


def _forked() -> None:
    _PROCESS[0] = os.getpid()


os.register_at_fork(after_in_child=_forked)


class Database:
    """Owns the engine for one URL in the current process."""

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 5,
        synchronous_autocommit: bool = False,
        connect_timeout: int | None = None,
        statement_timeout: float | None = None,
    ) -> None:
        """`connect_timeout` (seconds, Postgres; also the longest wait for a pooled
        connection) and `statement_timeout` (seconds, Postgres) bound every wait on the store;
        None leaves it unbounded (the CLI's migrations and admin commands)."""
        self.url = url
        self.pool_size = pool_size
        self.synchronous_autocommit = synchronous_autocommit
        self.bounds = _Bounds(connect_timeout, statement_timeout)
        self.reachability = Reachability(self.ping, on_outage=self._drop_idle)
        self._ready_probe = Probe(self.ping)
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
                    self._engine = _make_engine(self.url, self.pool_size, self.bounds)
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
                        self._autocommit = _make_engine(
                            self.url, self.pool_size, self.bounds, busy_timeout_ms=0
                        )
                    else:
                        options = (
                            {} if self.synchronous_autocommit else {"synchronous_commit": "off"}
                        )
                        self._autocommit = _make_engine(
                            self.url, self.pool_size, self.bounds, autocommit=True, options=options
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
        self.reachability.refuse()
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

    def session(self, *, writes: bool = False, lock_wait: float | None = None) -> Session:
        """A new session; the caller commits or rolls back (or uses `transaction`).

        On SQLite, `writes=True` takes the write lock when the transaction begins
        (`BEGIN IMMEDIATE`): a deferred transaction that reads and then writes fails at once
        when another connection wrote in between, while an immediate one waits its turn, at
        most `lock_wait` seconds (0: not at all; None: the busy timeout), and never past the
        deadline of the request it serves. Read-only sessions stay deferred, so in WAL mode
        they never block the writers, nor wait for them.
        """
        self.reachability.refuse()
        engine = self.engine
        assert self._sessions is not None
        if writes and self.is_sqlite:
            options: dict[str, Any] = {"driftgate_immediate": True}
            if lock_wait is not None:
                options["driftgate_lock_wait"] = lock_wait
            return self._sessions(bind=engine.execution_options(**options))
        return self._sessions()

    @contextmanager
    def transaction(self, *, lock_wait: float | None = None) -> Iterator[Session]:
        """A writing session that commits on success and rolls back on any error."""
        with self.session(writes=True, lock_wait=lock_wait) as session, session.begin():
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

    def ready(self, budget: float | None = None) -> None:
        """Raise `StoreUnavailable` unless the database answers a ping now (at once while an
        outage lasts; within the connect and answer bounds otherwise, or within `budget`
        seconds when given: the ping then runs in a thread of its own, one at a time)."""
        self.reachability.refuse()
        try:
            if budget is None:
                self.ping()
            else:
                self._ready_probe.answer(budget)
        except Exception as error:
            unavailable = self.unavailable(error)
            if unavailable is None:
                raise
            raise unavailable from None

    def unavailable(self, error: BaseException) -> StoreUnavailable | None:
        """The `StoreUnavailable` that `error` amounts to (noted: an outage may start here),
        or None when `error` says nothing about the store's availability. The one question
        the shells ask of an error they caught (`controller.store.outage`)."""
        return self.reachability.report(error)

    @staticmethod
    def is_busy(error: BaseException) -> bool:
        """True when `error` says another writer held SQLite's write lock (or the request's
        queue for it refused the wait): a write that may be skipped is, without a log line."""
        return store_fault(error) == BUSY

    @staticmethod
    @contextmanager
    def deadline(at: float, budget: float, *, writers: int | None = None) -> Iterator[None]:
        """Bound this thread's waits on the store by `at` (monotonic), the end of a web
        request's `budget` seconds, with at most `writers` requests of the process waiting for
        SQLite's write lock (`controller.store.outage.bounded_by`)."""
        with bounded_by(at, budget, writers=writers):
            yield

    def _drop_idle(self) -> None:
        # The run gate's idle connections are not the pool's: dropped when an outage starts
        # (without a round trip), so none that died with the server is used after it.
        idle, self._idle = self._idle, []
        while idle:
            connection, _ = idle.pop()
            connection.invalidate()

    def dispose(self) -> None:
        self.reachability.stop()
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


class _Bounds:
    """How long a use of the store may wait (see the module docstring); None: unbounded."""

    def __init__(self, connect_timeout: int | None, statement_timeout: float | None) -> None:
        self.connect_timeout = connect_timeout
        self.statement_timeout = statement_timeout

    @property
    def answer(self) -> float | None:
        """The longest the client waits for any one answer of the server."""
        if self.statement_timeout is None:
            return None
        return self.statement_timeout + ANSWER_GRACE_SECONDS

    @property
    def pool_timeout(self) -> float:
        return float(self.connect_timeout or POOL_TIMEOUT_SECONDS)


def _make_engine(
    url: str,
    pool_size: int,
    bounds: _Bounds,
    *,
    autocommit: bool = False,
    options: dict[str, str] | None = None,
    busy_timeout_ms: int | None = None,
) -> Engine:
    parsed = make_url(url)
    kwargs: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:":
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        # The store's busy timeout as it is now (a test may shorten it), or the one asked for.
        longest = SQLITE_BUSY_TIMEOUT_MS
        busy = longest if busy_timeout_ms is None else busy_timeout_ms
        kwargs["connect_args"] = {"timeout": longest / 1000}
        if database and database != ":memory:":
            kwargs.update(pool_size=pool_size, max_overflow=10, pool_timeout=bounds.pool_timeout)
        engine = create_engine(url, **kwargs)

        def pragmas(dbapi_connection: Any, record: Any) -> None:
            _sqlite_pragmas(dbapi_connection, longest, busy)
            record.info[_BUSY_DEFAULT] = record.info[_BUSY_NOW] = busy

        event.listen(engine, "connect", pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    kwargs.update(
        pool_size=pool_size,
        max_overflow=10,
        pool_recycle=1800,
        pool_timeout=bounds.pool_timeout,
    )
    if autocommit:
        kwargs["isolation_level"] = "AUTOCOMMIT"
    server_settings = dict(options or {})
    if bounds.statement_timeout is not None:
        milliseconds = max(1, round(bounds.statement_timeout * 1000))
        server_settings["statement_timeout"] = str(milliseconds)
    connect_args: dict[str, Any] = {}
    if server_settings:
        # Server settings of every connection of this pool (libpq's `options`).
        connect_args["options"] = " ".join(f"-c {k}={v}" for k, v in server_settings.items())
    if bounds.connect_timeout is not None:
        connect_args["connect_timeout"] = bounds.connect_timeout
    kwargs["connect_args"] = connect_args
    engine = create_engine(url, **kwargs)
    answer = bounds.answer
    if answer is not None:

        def connect(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
            return _bounded_connection().connect(*cargs, answer_bound=answer, **cparams)

        event.listen(engine, "do_connect", connect)
    _ping_idle_connections(engine)
    return engine


_BOUNDED: list[type[Any]] = []


def _bounded_connection() -> type[Any]:
    """psycopg's connection class, waiting at most `answer_bound` seconds for any answer of
    the server: past it, the connection is closed and the statement fails with
    `OperationalError` (which `controller.store.outage` counts as unreachable). Built on first
    use: a process on SQLite never imports psycopg."""
    if _BOUNDED:
        return _BOUNDED[0]
    import psycopg
    from psycopg.errors import _WaitTimeout

    class BoundedConnection(psycopg.Connection[Any]):
        answer_bound: float | None = None

        @classmethod
        def connect(  # type: ignore[override]
            cls, *args: Any, answer_bound: float | None = None, **kwargs: Any
        ) -> BoundedConnection:
            connection = super().connect(*args, **kwargs)
            connection.answer_bound = answer_bound
            return connection

        def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
            bound = self.answer_bound if timeout is None else timeout
            try:
                return super().wait(gen, interval, bound)
            except _WaitTimeout:
                if timeout is not None:
                    raise
                # Mid-exchange, the connection's state is unknown: it cannot be used again.
                self.close()
                raise psycopg.OperationalError(
                    f"the database did not answer within {bound:g} s"
                ) from None

    _BOUNDED.append(BoundedConnection)
    return BoundedConnection


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


_BUSY_DEFAULT = "driftgate_busy_default_ms"
_BUSY_NOW = "driftgate_busy_ms"


def _sqlite_pragmas(dbapi_connection: Any, longest_ms: int, busy_timeout_ms: int) -> None:
    # pysqlite would begin transactions itself, lazily and deferred; driftgate begins them.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={longest_ms}")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    if busy_timeout_ms != longest_ms:
        cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
    cursor.close()


def _sqlite_begin(connection: Any) -> None:
    # pysqlite's own implicit BEGIN is off (see _sqlite_pragmas); writers take the lock first,
    # waiting for it at most the busy timeout, `driftgate_lock_wait`, or what is left of the
    # request's deadline (`LOCK_QUEUE`, which may refuse at once).
    options = connection.get_execution_options()
    info = connection.connection.info
    default_ms = info.get(_BUSY_DEFAULT, SQLITE_BUSY_TIMEOUT_MS)
    wait = options.get("driftgate_lock_wait")
    longest = default_ms / 1000 if wait is None else min(wait, default_ms / 1000)
    if not options.get("driftgate_immediate", False):
        _busy_timeout(connection, info, longest)
        connection.exec_driver_sql("BEGIN")
    elif longest <= 0:
        _busy_timeout(connection, info, 0)
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        with LOCK_QUEUE.waiting(longest) as until:
            _busy_timeout(connection, info, until - time.monotonic())
            connection.exec_driver_sql("BEGIN IMMEDIATE")


def _busy_timeout(connection: Any, info: dict[str, Any], seconds: float) -> None:
    """Set the connection's busy timeout for this transaction (a PRAGMA only when it changes)."""
    milliseconds = max(0, int(seconds * 1000))
    if info.get(_BUSY_NOW) != milliseconds:
        connection.connection.driver_connection.execute(f"PRAGMA busy_timeout={milliseconds}")
        info[_BUSY_NOW] = milliseconds
