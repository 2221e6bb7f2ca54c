"""The store when the database cannot answer: which errors say so, one log line per outage,
uses refused at once while it lasts, recovery by itself; and on Postgres (through a loopback
proxy, `tests/dbproxy.py`) the bounds that keep a frozen or stopped server from holding anyone.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator

import psycopg
import pytest
from sqlalchemy import exc, text

from controller.errors import StoreUnavailable
from controller.store.db import Database
from controller.store.outage import BUSY, TIMEOUT, UNREACHABLE, Reachability, store_fault
from tests import logrecords
from tests.conftest import ON_POSTGRES
from tests.dbproxy import DatabaseProxy
from tests.processes import wait_until

postgres_only = pytest.mark.skipif(not ON_POSTGRES, reason="a Postgres server behind a proxy")


class Records(logrecords.Records):
    """The log records of one logger, kept for the test."""

    def events(self, name: str) -> list[logging.LogRecord]:
        return [r for r in self.records if r.getMessage() == name]


@pytest.fixture
def store_log() -> Iterator[Records]:
    logger = logging.getLogger("driftgate")
    records = Records()
    level, logger.level = logger.level, logging.DEBUG
    logger.addHandler(records)
    yield records
    logger.removeHandler(records)
    logger.setLevel(level)


def sqlite_error(code: int) -> sqlite3.OperationalError:
    error = sqlite3.OperationalError("database is locked")
    error.sqlite_errorcode = code  # type: ignore[attr-defined]
    return error


@pytest.mark.parametrize(
    ("error", "fault"),
    [
        (sqlite_error(5), BUSY),  # SQLITE_BUSY: locked past the busy timeout
        (sqlite_error(5 | (2 << 8)), BUSY),  # an extended code of it
        (sqlite_error(14), UNREACHABLE),  # SQLITE_CANTOPEN
        (sqlite_error(1), None),  # SQLITE_ERROR: a bad statement is a bug
        (psycopg.OperationalError("connection refused"), UNREACHABLE),
        (psycopg.errors.ConnectionTimeout("connection timeout expired"), UNREACHABLE),
        (psycopg.InterfaceError("the connection is closed"), UNREACHABLE),
        (psycopg.errors.QueryCanceled("canceling statement due to statement timeout"), TIMEOUT),
        (psycopg.errors.LockNotAvailable("lock timeout"), TIMEOUT),
        (psycopg.errors.AdminShutdown("terminating connection"), UNREACHABLE),
        (psycopg.errors.TooManyConnections("too many clients"), UNREACHABLE),
        (psycopg.errors.UniqueViolation("duplicate key"), None),
        (psycopg.errors.SerializationFailure("could not serialize"), None),
        (exc.TimeoutError("QueuePool limit reached"), BUSY),
        (exc.DisconnectionError("gone"), UNREACHABLE),
        (exc.OperationalError("SELECT 1", {}, psycopg.OperationalError("refused")), UNREACHABLE),
        (exc.OperationalError("SELECT 1", {}, sqlite_error(5)), BUSY),
        (exc.IntegrityError("INSERT", {}, psycopg.errors.UniqueViolation("dup")), None),
        (StoreUnavailable(TIMEOUT), TIMEOUT),
        (ValueError("a bug"), None),
    ],
)
def test_store_faults_are_told_apart_from_other_errors(
    error: BaseException, fault: str | None
) -> None:
    assert store_fault(error) == fault


def test_an_outage_is_one_line_refuses_at_once_and_ends_by_itself(store_log: Records) -> None:
    up = threading.Event()
    probes: list[bool] = []

    def probe() -> None:
        probes.append(up.is_set())
        if not up.is_set():
            raise psycopg.OperationalError("connection refused")

    dropped: list[bool] = []
    reachability = Reachability(probe, on_outage=lambda: dropped.append(True), probe_seconds=0.01)
    reachability.refuse()  # nothing known: no refusal
    for _ in range(5):  # every request of the outage meets it
        answer = reachability.report(psycopg.OperationalError("connection refused"))
        assert isinstance(answer, StoreUnavailable) and answer.reason == UNREACHABLE
    assert reachability.is_down and dropped == [True]
    for _ in range(3):
        with pytest.raises(StoreUnavailable):
            reachability.refuse()
    wait_until(lambda: len(probes) >= 3)  # probing, still down
    assert reachability.is_down
    up.set()
    wait_until(lambda: not reachability.is_down)
    reachability.refuse()
    assert len(store_log.events("store.unavailable")) == 1
    (ended,) = store_log.events("store.available")
    assert ended.fields["refused"] == 3  # type: ignore[attr-defined]
    assert not any(record.exc_info for record in store_log.records)


def test_slow_statements_fail_alone_and_are_counted(store_log: Records) -> None:
    reachability = Reachability(lambda: None)
    for _ in range(4):
        answer = reachability.report(psycopg.errors.QueryCanceled("statement timeout"))
        assert answer is not None and answer.reason == TIMEOUT
    assert reachability.report(ValueError("a bug")) is None
    assert not reachability.is_down  # a slow statement is not an outage
    reachability.refuse()
    (slow,) = store_log.events("store.slow")
    assert slow.fields["counts"] == {TIMEOUT: 1}  # type: ignore[attr-defined]
    assert store_log.events("store.unavailable") == []


# Postgres behind the proxy: a frozen server, a stopped one, a slow statement.


@pytest.fixture
def proxied(database: Database, proxy: DatabaseProxy) -> Iterator[Database]:
    """The test's database through the proxy, with short bounds: a connection within 2 s
    (psycopg's least), a statement within 0.5 s, an answer within 1.5 s."""
    bounded = Database(proxy.url(database.url), connect_timeout=2, statement_timeout=0.5)
    yield bounded
    bounded.dispose()


def select_one(database: Database) -> object:
    with database.session() as session:
        return session.execute(text("SELECT 1")).scalar_one()


@postgres_only
@pytest.mark.parametrize("fault", ["freeze", "down"])
def test_a_frozen_or_stopped_database_fails_uses_and_recovers_by_itself(
    proxied: Database, proxy: DatabaseProxy, fault: str, store_log: Records
) -> None:
    assert select_one(proxied) == 1
    getattr(proxy, fault)()
    with pytest.raises(exc.OperationalError) as raised:
        select_one(proxied)  # returns: a frozen server's answer is waited for 1.5 s at most
    assert proxied.unavailable(raised.value) is not None
    assert proxied.reachability.is_down
    for _ in range(3):  # from now on, at once
        with pytest.raises(StoreUnavailable):
            select_one(proxied)
    with pytest.raises(StoreUnavailable):
        proxied.ready()
    proxy.forward()
    wait_until(lambda: not proxied.reachability.is_down)
    assert select_one(proxied) == 1
    proxied.ready()
    assert len(store_log.events("store.unavailable")) == 1
    assert len(store_log.events("store.available")) == 1
    assert not any(record.exc_info for record in store_log.records)


@postgres_only
def test_a_connection_to_a_frozen_database_times_out(
    proxied: Database, proxy: DatabaseProxy
) -> None:
    proxy.freeze()  # before any connection: the handshake completes, the server never answers
    with pytest.raises(exc.OperationalError) as raised:
        select_one(proxied)
    assert isinstance(raised.value.orig, psycopg.errors.ConnectionTimeout)
    assert store_fault(raised.value) == UNREACHABLE


@postgres_only
def test_a_statement_past_the_timeout_fails_alone(proxied: Database, store_log: Records) -> None:
    with pytest.raises(exc.OperationalError) as raised, proxied.session() as session:
        session.execute(text("SELECT pg_sleep(3)"))
    assert isinstance(raised.value.orig, psycopg.errors.QueryCanceled)  # the server cancelled it
    unavailable = proxied.unavailable(raised.value)
    assert unavailable is not None and unavailable.reason == TIMEOUT
    assert not proxied.reachability.is_down
    assert select_one(proxied) == 1
    assert len(store_log.events("store.slow")) == 1
