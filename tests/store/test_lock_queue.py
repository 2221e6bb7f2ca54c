"""Waits on the store inside a web request (issue 40, point 7): SQLite's write lock is waited
for no longer than the request's deadline, in a queue that a request does not join while
another has waited past its patience; a write that must not wait does not; readiness's ping
is awaited for a bounded time and runs one at a time."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import text

from controller.errors import StoreUnavailable
from controller.store.db import Database
from controller.store.outage import (
    BUSY,
    LOCK_PATIENCE_SHARE,
    LOCK_QUEUE,
    LOCK_SETTLE_SECONDS,
    TIMEOUT,
    Probe,
    bounded_by,
    store_fault,
)
from tests.processes import wait_until


@pytest.fixture
def locked(database: Database) -> Iterator[sqlite3.Connection]:
    """Another connection holding SQLite's write lock until the test releases it (or ends)."""
    if not database.is_sqlite:
        pytest.skip("SQLite's write lock")
    path = database.engine.url.database
    assert path is not None
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    yield holder
    if holder.in_transaction:
        holder.execute("ROLLBACK")
    holder.close()


def write(
    database: Database,
    budget: float | None = None,
    lock_wait: float | None = None,
    writers: int | None = None,
) -> str:
    """One writing transaction, as a request with `budget` seconds left (and at most
    `writers` waiting for the lock) or outside any; `ok`, or the store fault it met."""
    try:
        if budget is None:
            with database.transaction(lock_wait=lock_wait) as session:
                session.execute(text("CREATE TABLE IF NOT EXISTS scratch (x INTEGER)"))
        else:
            with bounded_by(time.monotonic() + budget, budget, writers=writers):
                return write(database, lock_wait=lock_wait)
    except Exception as error:  # noqa: BLE001 - the fault is the answer
        fault = store_fault(error)
        if fault is None:
            raise
        return fault
    return "ok"


def test_a_request_waits_for_the_lock_no_longer_than_its_deadline(
    database: Database, locked: sqlite3.Connection
) -> None:
    started = time.monotonic()
    assert write(database, budget=0.5) == BUSY
    # The busy timeout (10 s) would have held it far longer.
    assert time.monotonic() - started < 5
    assert write(database, lock_wait=0) == BUSY  # a write that must not wait does not
    locked.execute("ROLLBACK")
    assert write(database, budget=0.5) == "ok"


@pytest.mark.parametrize(
    ("writers", "waited"),
    [(None, 8.0 * LOCK_PATIENCE_SHARE), (1, LOCK_SETTLE_SECONDS)],
    ids=["past-its-patience", "all-the-writers-it-may-have"],
)
def test_no_request_joins_a_queue_where_others_wait_for_a_held_lock(
    database: Database, locked: sqlite3.Connection, writers: int | None, waited: float
) -> None:
    budget = 8.0
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(write, database, budget, None, writers)
        wait_until(lambda: LOCK_QUEUE.longest_wait() > waited)
        # Outside a request (the controller), a writer waits as it always did.
        controller = pool.submit(write, database)
        with pytest.raises(StoreUnavailable) as refused:
            with (
                bounded_by(time.monotonic() + budget, budget, writers=writers),
                database.transaction() as session,
            ):
                session.execute(text("SELECT 1"))
        assert refused.value.reason == BUSY and "retry shortly" in str(refused.value)
        assert not first.done() and not controller.done()  # refused at once, not after them
        locked.execute("ROLLBACK")
        assert (first.result(timeout=30), controller.result(timeout=30)) == ("ok", "ok")
    assert LOCK_QUEUE.longest_wait() == 0


def test_a_request_past_its_deadline_does_not_wait_at_all(
    database: Database, locked: sqlite3.Connection
) -> None:
    with pytest.raises(StoreUnavailable) as refused:
        with bounded_by(time.monotonic() - 1, 1.0), database.transaction() as session:
            session.execute(text("SELECT 1"))
    assert refused.value.reason == BUSY


def test_readiness_awaits_one_ping_at_a_time_for_its_budget() -> None:
    answer = threading.Event()
    calls: list[int] = []

    def ping() -> None:
        calls.append(1)
        answer.wait(30)

    probe = Probe(ping)
    outcomes: list[str] = []

    def ask() -> None:
        try:
            probe.answer(0.2)
            outcomes.append("ok")
        except StoreUnavailable as exc:
            outcomes.append(exc.reason)

    askers = [threading.Thread(target=ask) for _ in range(3)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join(30)
    assert outcomes == [TIMEOUT] * 3 and len(calls) == 1  # one hanging ping, not three
    answer.set()
    probe.answer(30)
    assert len(calls) in (1, 2)  # the same ping, or a new one once it answered


def test_readiness_raises_what_the_ping_raised() -> None:
    def ping() -> None:
        raise sqlite3.OperationalError("unable to open database file")

    with pytest.raises(sqlite3.OperationalError):
        Probe(ping).answer(5)
