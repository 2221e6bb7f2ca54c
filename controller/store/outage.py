"""When the store cannot answer: which errors say so, and what one process does about it.

A database that is down (it refuses connections), frozen (it accepts and never answers: a
stopped server, a dead network path) or too slow (a statement past its timeout, a SQLite file
locked past its busy timeout) is not a bug of the request or job that met it. `store_fault`
tells those errors apart from every other, whether they come through SQLAlchemy or straight
from the driver (the run gate's statements), and `Reachability` keeps one process's view of
one database:

- the first error that says the server cannot be reached starts an *outage*: one log line
  (`store.unavailable`), and from then on new sessions fail at once with `StoreUnavailable`
  instead of each waiting out its own timeouts; a thread of its own pings the server at once
  and then every `PROBE_SECONDS`, and ends the outage at the first answer (`store.available`,
  one line, with how long it lasted and how many uses were refused);
- a statement that timed out or a busy SQLite file fails only its own request or job, with
  one line (`store.slow`) at most every `SLOW_LOG_SECONDS`, counting those in between.

Each use that fails so counts in `driftgate_database_errors_total` by its reason
(`unreachable`, `timeout`, `busy`, or `refused` while an outage lasts), and each outage that
starts in `driftgate_database_outages_total` (`controller.metrics`).

Neither logs a stack trace: the shells answer `StoreUnavailable` (503 with `Retry-After` on
the web, a quiet retry in the controller).

A web request has a deadline, counted from its arrival (`bounded_by`): no wait on the store
outlasts it. On SQLite, where one writer at a time holds the file, the requests of one process
that wait for the write lock form a queue (`LOCK_QUEUE`): a request does not join it while
another has waited in it for a quarter of its deadline, nor while it holds half the process's
threads (the lock is held long: a thread that joined would only wait out its deadline, and
the threads readers need would all end up waiting behind it); it is refused at once.
`Probe` is readiness's ping: one at a time, awaited for a bounded time whatever the store does.
"""

from __future__ import annotations

import logging
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from sqlalchemy import exc

from controller import metrics
from controller.errors import StoreUnavailable
from controller.logs import log

logger = logging.getLogger("driftgate.store")

UNREACHABLE = "unreachable"
TIMEOUT = "timeout"
BUSY = "busy"
REFUSED = "refused"  # a use refused at once while an outage lasts (a metric's reason only)

PROBE_SECONDS = 1.0
SLOW_LOG_SECONDS = 60.0

# SQLite's primary result codes (the low byte of `sqlite_errorcode`).
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_IOERR, _SQLITE_CANTOPEN = 5, 6, 10, 14
# Postgres SQLSTATEs: a statement cancelled by statement_timeout, a lock_timeout; the server
# shutting down or refusing connections (class 08 is the connection exceptions).
_PG_TIMEOUT = frozenset({"57014", "55P03"})
_PG_UNREACHABLE = frozenset({"57P01", "57P02", "57P03", "53300"})


def store_fault(error: BaseException) -> str | None:
    """`unreachable`, `timeout` or `busy` when `error` says the store could not answer; None
    for every other error (a bug, a constraint violation: not the store's availability)."""
    if isinstance(error, StoreUnavailable):
        return error.reason
    if isinstance(error, exc.TimeoutError):  # no pooled connection came free in time
        return BUSY
    if isinstance(error, exc.DisconnectionError):
        return UNREACHABLE
    if isinstance(error, exc.DBAPIError):
        if error.connection_invalidated:
            return UNREACHABLE
        return _driver_fault(error.orig)
    return _driver_fault(error)


def _driver_fault(error: BaseException | None) -> str | None:
    if isinstance(error, sqlite3.OperationalError):
        code = getattr(error, "sqlite_errorcode", 0) & 0xFF
        if code in (_SQLITE_BUSY, _SQLITE_LOCKED):
            return BUSY
        return UNREACHABLE if code in (_SQLITE_IOERR, _SQLITE_CANTOPEN) else None
    psycopg = sys.modules.get("psycopg")  # loaded only by a process that uses Postgres
    if psycopg is None or not isinstance(error, psycopg.Error):
        return None
    state = error.sqlstate
    if state is None:
        # Raised by the client itself: no connection, a connection lost or closed, no
        # answer within the bound (`controller.store.db`).
        client_side = isinstance(error, psycopg.OperationalError | psycopg.InterfaceError)
        return UNREACHABLE if client_side else None
    if state in _PG_TIMEOUT:
        return TIMEOUT
    if state.startswith("08") or state in _PG_UNREACHABLE:
        return UNREACHABLE
    return None


class Reachability:
    """One process's view of whether one database answers (see the module docstring).

    `probe` pings the database (raising when it cannot); `on_outage` runs once when an outage
    starts (the database drops connections it keeps outside its pool)."""

    def __init__(
        self,
        probe: Callable[[], None],
        *,
        on_outage: Callable[[], None] = lambda: None,
        probe_seconds: float = PROBE_SECONDS,
    ) -> None:
        self.probe = probe
        self.on_outage = on_outage
        self.probe_seconds = probe_seconds
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._refused = 0
        self._stopping = threading.Event()  # the current prober's; replaced by `stop`
        self._slow: dict[str, int] = {}
        self._slow_logged_at: float | None = None

    @property
    def is_down(self) -> bool:
        return self._down_since is not None

    @property
    def refused(self) -> int:
        """Uses refused during the current (or the last) outage."""
        return self._refused

    def refuse(self) -> None:
        """Raise `StoreUnavailable` while an outage lasts: a use of the store fails at once
        instead of waiting out its own timeouts."""
        if self._down_since is not None:
            self._refused += 1  # an approximate count, for the recovery line
            metrics.database_error(REFUSED)
            raise StoreUnavailable(UNREACHABLE)

    def report(self, error: BaseException) -> StoreUnavailable | None:
        """The `StoreUnavailable` that `error` amounts to, noted (an outage starts, or a slow
        statement is counted), or None when `error` is not about the store's availability."""
        if isinstance(error, StoreUnavailable):
            return error
        fault = store_fault(error)
        if fault is None:
            return None
        metrics.database_error(fault)
        if fault == UNREACHABLE:
            self._start(error)
        else:
            self._note_slow(fault, error)
        return StoreUnavailable(fault)

    def stop(self) -> None:
        """Stop probing and forget the outage (the database's engines are disposed of; new
        ones start from a clean slate)."""
        with self._lock:
            self._stopping.set()
            self._stopping = threading.Event()
            self._down_since = None

    def _start(self, error: BaseException) -> None:
        with self._lock:
            if self._down_since is not None:
                return
            self._down_since = time.monotonic()
            self._refused = 0
            metrics.database_outage()
            log(logger, logging.WARNING, "store.unavailable", error=_describe(error))
            threading.Thread(
                target=self._probe_until_up,
                args=(self._stopping,),
                name="driftgate-store-probe",
                daemon=True,
            ).start()
        try:
            self.on_outage()
        except Exception:  # noqa: BLE001, S110 - dropping idle connections is best effort
            pass

    def _probe_until_up(self, stopping: threading.Event) -> None:
        pause = 0.0  # the first probe at once: a single dropped connection ends it there
        while not stopping.wait(pause):
            pause = self.probe_seconds
            try:
                self.probe()
            except Exception:  # noqa: BLE001, S112 - still down; the next probe tells
                continue
            with self._lock:
                if stopping.is_set():
                    return
                since, self._down_since = self._down_since, None
            log(
                logger,
                logging.WARNING,
                "store.available",
                downSeconds=round(time.monotonic() - (since or time.monotonic()), 1),
                refused=self._refused,
            )
            return

    def _note_slow(self, fault: str, error: BaseException) -> None:
        now = time.monotonic()
        with self._lock:
            self._slow[fault] = self._slow.get(fault, 0) + 1
            if self._slow_logged_at is not None and now - self._slow_logged_at < SLOW_LOG_SECONDS:
                return
            counts, self._slow = self._slow, {}
            self._slow_logged_at = now
        log(logger, logging.WARNING, "store.slow", counts=counts, error=_describe(error))


def _describe(error: BaseException) -> str:
    """The error's type and the first line of its text (drivers never put passwords there)."""
    origin = error.orig if isinstance(error, exc.DBAPIError) and error.orig else error
    text = (str(origin).strip().splitlines() or [""])[0][:300]
    return f"{type(origin).__name__}: {text}" if text else type(origin).__name__


@dataclass(frozen=True)
class _Bound:
    deadline: float  # monotonic
    budget: float  # seconds, from the request's arrival to its deadline
    writers: int | None  # how many of the process's threads may wait for the write lock


# The bound of the web request this thread serves; None elsewhere (the controller, the CLI).
_BOUND: ContextVar[_Bound | None] = ContextVar("driftgate_request_bound", default=None)
LOCK_PATIENCE_SHARE = 0.25
# A wait for the write lock longer than this is no longer another writer's commit (those take
# a millisecond or so, and up to a few hundred on a loaded machine beside a busy controller:
# 0.1 s turned run-gate races into 503s there): the lock is held, and the waiter counts
# against `writers`.
LOCK_SETTLE_SECONDS = 1.0


@contextmanager
def bounded_by(deadline: float, budget: float, *, writers: int | None = None) -> Iterator[None]:
    """Bound every wait on the store in this context (one request) by `deadline` (monotonic),
    the end of a `budget` of seconds that started when the request arrived; at most `writers`
    requests of this process wait for SQLite's write lock at once (None: no such limit)."""
    token = _BOUND.set(_Bound(deadline, budget, writers))
    try:
        yield
    finally:
        _BOUND.reset(token)


class LockQueue:
    """The requests of one process waiting for SQLite's write lock (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._since: dict[object, float] = {}

    def longest_wait(self) -> float:
        """How long (seconds) the request first in the queue has waited; 0 when none waits."""
        with self._lock:
            return self._longest_wait(time.monotonic())

    def _longest_wait(self, now: float) -> float:
        return now - min(self._since.values(), default=now)

    def _is_full(self, now: float, writers: int | None) -> bool:
        if writers is None or len(self._since) < writers:
            return False
        held = sum(1 for since in self._since.values() if now - since > LOCK_SETTLE_SECONDS)
        return held >= writers

    @contextmanager
    def waiting(self, longest: float) -> Iterator[float]:
        """The time (monotonic) until which the caller may wait for the write lock: `longest`
        seconds from now, or less by its request's deadline. Inside a request, the caller
        joins the queue meanwhile, or is refused (`StoreUnavailable`, busy) when its deadline
        has passed, another request has waited past its patience, or the request's `writers`
        already wait for a held lock."""
        now = time.monotonic()
        bound = _BOUND.get()
        if bound is None:
            yield now + longest
            return
        if bound.deadline <= now:
            metrics.database_error(BUSY)
            raise StoreUnavailable(BUSY, "this request's deadline passed before it could write")
        patience = bound.budget * LOCK_PATIENCE_SHARE
        ticket = object()
        with self._lock:
            if self._longest_wait(now) > patience or self._is_full(now, bound.writers):
                metrics.database_error(BUSY)
                raise StoreUnavailable(
                    BUSY,
                    "the database is busy: another writer has held it for seconds and other "
                    "requests already wait for it; retry shortly",
                )
            self._since[ticket] = now
        try:
            yield min(now + longest, bound.deadline)
        finally:
            with self._lock:
                del self._since[ticket]


LOCK_QUEUE = LockQueue()


class Probe:
    """Runs `ping` in a thread of its own, one at a time: whoever asks while one runs waits
    for that one, and no longer than a budget (readiness answers in time whatever the store
    does; a ping that hangs holds one thread, not one per caller)."""

    def __init__(self, ping: Callable[[], None]) -> None:
        self.ping = ping
        self._lock = threading.Lock()
        self._running: Future[None] | None = None

    def answer(self, budget: float) -> None:
        """Return when a ping answered within `budget` seconds; raise its error, or
        `StoreUnavailable` (timeout) when none answered in time."""
        with self._lock:
            running = self._running
            if running is None or running.done():
                running = self._running = Future()
                threading.Thread(
                    target=self._run, args=(running,), name="driftgate-ready-probe", daemon=True
                ).start()
        try:
            running.result(timeout=budget)
        except FutureTimeout:
            metrics.database_error(TIMEOUT)
            raise StoreUnavailable(
                TIMEOUT, f"the database did not answer within {budget:g} s; retry shortly"
            ) from None

    def _run(self, running: Future[None]) -> None:
        try:
            self.ping()
        except BaseException as error:  # noqa: BLE001 - handed to whoever waits
            running.set_exception(error)
        else:
            running.set_result(None)
