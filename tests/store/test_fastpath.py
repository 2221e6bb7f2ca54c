"""The hot-path statements on a connection of the run gate's pool: stored values match the
ORM's, every statement commits on its own, and the pool is the gate's alone."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Dialect, bindparam, insert, select

from controller.orgs import service as org_service
from controller.store.db import SQLITE_BUSY_TIMEOUT_MS, Database
from controller.store.fastpath import Prepared, autocommit_cursor, json_processor
from controller.store.models import PreflightDecision, Watch, new_id
from tests.conftest import ON_POSTGRES, make_settings


def make_org(database: Database, name: str) -> str:
    with database.transaction() as session:
        return org_service.create_org(session, name, "pro", actor="test").id


@pytest.fixture
def org_id(database: Database) -> str:
    return make_org(database, "acme")


def record_statement(dialect: Dialect) -> Prepared:
    """The run gate's decision insert, as `controller.gate.service` prepares it."""
    as_json = json_processor(dialect)
    return Prepared(insert(PreflightDecision), dialect, {"inputs": as_json, "result": as_json})


def decision(org_id: str, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": new_id(),
        "org_id": org_id,
        "actor": "api_key:k1",
        "agent_key": None,
        "watch_count": 2,
        "allowed": False,
        "policy_blocked": True,
        "dry_run": False,
        "status_code": 409,
        "duration_ms": 7,
        "evaluated_at": datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=UTC),
        "inputs": {"watchIds": ["w1", "w2"], "agentId": None, "dryRun": False, "ignore": []},
        "result": {"allowed": False, "blocked": []},
    }
    row.update(values)
    return row


def stored(database: Database, decision_id: str) -> PreflightDecision | None:
    with database.session() as session:
        return session.get(PreflightDecision, decision_id)


def test_an_inserted_decision_reads_back_through_the_orm_unchanged(
    database: Database, org_id: str
) -> None:
    # 01:30 at +02:00 is 23:30 UTC the day before: stored and read back as that instant, in UTC.
    evaluated_at = datetime(2024, 3, 1, 1, 30, 0, 654321, tzinfo=timezone(timedelta(hours=2)))
    inputs = {
        "watchIds": ["w1", "w2"],
        "agentId": "agent-ü",
        "ignore": [{"watchId": "w2", "reason": "café ☃ 日本語 — known"}],
        "dryRun": False,
    }
    result = {
        "allowed": False,
        "policyBlocked": True,
        "blocked": [{"name": "Zürich API", "nested": {"deep": [1, 2.5, True, None, "ß"]}}],
        "ignored": [],
    }
    row = decision(
        org_id,
        agent_key="bot",
        allowed=False,
        policy_blocked=True,
        dry_run=True,
        evaluated_at=evaluated_at,
        inputs=inputs,
        result=result,
    )
    with autocommit_cursor(database) as cursor:
        record_statement(database.engine.dialect).execute(cursor, row)

    loaded = stored(database, row["id"])
    assert loaded is not None
    assert loaded.evaluated_at == datetime(2024, 2, 29, 23, 30, 0, 654321, tzinfo=UTC)
    assert loaded.evaluated_at.tzinfo == UTC
    assert (loaded.allowed, loaded.policy_blocked, loaded.dry_run) == (False, True, True)
    assert all(type(v) is bool for v in (loaded.allowed, loaded.policy_blocked, loaded.dry_run))
    assert loaded.inputs == inputs and loaded.result == result
    assert (loaded.org_id, loaded.actor, loaded.agent_key) == (org_id, "api_key:k1", "bot")
    assert (loaded.watch_count, loaded.status_code, loaded.duration_ms) == (2, 409, 7)


def test_a_literal_bound_in_the_statement_gets_its_default(database: Database, org_id: str) -> None:
    other_id = make_org(database, "other")
    with database.transaction() as session:
        mine = Watch(org_id=org_id, name="a", watch_type="openapi", url="https://a.example/x")
        theirs = Watch(org_id=other_id, name="a", watch_type="openapi", url="https://b.example/x")
        session.add_all([mine, theirs])
    # `concat("")` binds the empty string as a parameter the caller never passes.
    statement = select(Watch.id).where(Watch.org_id.concat("") == bindparam("org"))
    prepared = Prepared(statement, database.engine.dialect)
    assert "" in prepared.defaults.values()
    with autocommit_cursor(database) as cursor:
        rows = prepared.execute(cursor, {"org": org_id}).fetchall()
    assert [tuple(r) for r in rows] == [(mine.id,)]


def test_each_statement_commits_before_the_context_ends(database: Database, org_id: str) -> None:
    record = record_statement(database.engine.dialect)
    first, second = decision(org_id), decision(org_id)
    with autocommit_cursor(database) as cursor:
        driver = cursor.connection
        if ON_POSTGRES:
            assert driver.autocommit is True
        record.execute(cursor, first)
        assert stored(database, first["id"]) is not None
        record.execute(cursor, second)
        assert stored(database, second["id"]) is not None
    if not ON_POSTGRES:
        assert driver.in_transaction is False


def server_setting(connection: Any, name: str) -> str:
    cursor = connection.cursor()
    try:
        cursor.execute(f"SHOW {name}")
        return str(cursor.fetchone()[0])
    finally:
        cursor.close()


@pytest.mark.skipif(not ON_POSTGRES, reason="SQLite's connections already commit on their own")
@pytest.mark.parametrize("synchronous", [False, True])
def test_the_gate_pool_is_its_own_and_other_writes_stay_synchronous(
    database: Database, org_id: str, synchronous: bool
) -> None:
    gate = Database(database.url, synchronous_autocommit=synchronous)
    try:
        with autocommit_cursor(gate) as cursor:
            assert cursor.connection.autocommit is True
            assert server_setting(cursor.connection, "synchronous_commit") == (
                "on" if synchronous else "off"
            )
            record_statement(gate.engine.dialect).execute(cursor, decision(org_id))
        assert gate.autocommit_engine is not gate.engine
        # The pool every other write uses is untouched: transactions, synchronous commits.
        pooled = gate.engine.raw_connection()
        try:
            assert pooled.driver_connection is not None
            assert pooled.driver_connection.autocommit is False
            assert server_setting(pooled.driver_connection, "synchronous_commit") == "on"
            pooled.driver_connection.rollback()
        finally:
            pooled.close()
        doomed = decision(org_id)
        with pytest.raises(RuntimeError), gate.transaction() as session:
            session.add(PreflightDecision(**doomed))
            session.flush()
            raise RuntimeError("abort")
        assert stored(gate, doomed["id"]) is None
    finally:
        gate.dispose()


def busy_timeout(connection: Any) -> int:
    return int(connection.execute("PRAGMA busy_timeout").fetchone()[0])


@pytest.mark.skipif(ON_POSTGRES, reason="SQLite only")
def test_on_sqlite_the_gate_waits_for_the_lock_in_python(database: Database) -> None:
    assert database.autocommit_engine is not database.engine
    with autocommit_cursor(database) as cursor:
        assert busy_timeout(cursor.connection) == 0
    pooled = database.engine.raw_connection()
    try:
        assert busy_timeout(pooled.driver_connection) == SQLITE_BUSY_TIMEOUT_MS
    finally:
        pooled.close()


@pytest.mark.skipif(ON_POSTGRES, reason="SQLite only")
def test_an_in_memory_database_is_shared_with_the_gate() -> None:
    memory = Database("sqlite://")
    try:
        assert memory.autocommit_engine is memory.engine
    finally:
        memory.dispose()


@contextmanager
def write_lock_held(database: Database, seconds: float) -> Iterator[threading.Event]:
    """Another connection holds SQLite's write lock for `seconds` (from when the event is set)."""
    taken = threading.Event()

    def hold() -> None:
        connection = database.engine.raw_connection()
        try:
            connection.driver_connection.execute("BEGIN IMMEDIATE")
            taken.set()
            threading.Event().wait(seconds)  # not time.sleep, which a test may count
            connection.driver_connection.execute("COMMIT")
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert taken.wait(5)
        yield taken
    finally:
        holder.join()


@pytest.mark.skipif(ON_POSTGRES, reason="SQLite's write lock")
def test_a_gate_statement_waits_for_the_write_lock_then_runs(
    database: Database, org_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from controller.store import fastpath

    pauses: list[float] = []
    sleep = time.sleep
    monkeypatch.setattr(fastpath.time, "sleep", lambda s: (pauses.append(s), sleep(s)))
    row = decision(org_id)
    with write_lock_held(database, 0.2), autocommit_cursor(database) as cursor:
        record_statement(database.engine.dialect).execute(cursor, row)
    assert stored(database, row["id"]) is not None
    # It waited in short pauses, doubling from 50 us up to 2 ms.
    assert pauses[:3] == [fastpath.FIRST_PAUSE, 2 * fastpath.FIRST_PAUSE, 4 * fastpath.FIRST_PAUSE]
    assert max(pauses) == fastpath.LONGEST_PAUSE


@pytest.mark.skipif(ON_POSTGRES, reason="SQLite's write lock")
def test_a_gate_statement_gives_up_after_the_busy_timeout(
    database: Database, org_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from controller.store import fastpath

    monkeypatch.setattr(fastpath, "SQLITE_BUSY_TIMEOUT_MS", 50)
    row = decision(org_id)
    with write_lock_held(database, 0.5):
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            with autocommit_cursor(database) as cursor:
                record_statement(database.engine.dialect).execute(cursor, row)
    assert stored(database, row["id"]) is None


@pytest.mark.skipif(ON_POSTGRES, reason="SQLite")
def test_other_errors_are_not_retried(database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    from controller.store import fastpath

    monkeypatch.setattr(fastpath.time, "sleep", lambda _s: pytest.fail("slept"))
    with autocommit_cursor(database) as cursor:
        with pytest.raises(sqlite3.OperationalError, match="no such table"):
            fastpath.execute_when_unlocked(cursor, "SELECT * FROM no_such_table", ())


def test_a_failed_statement_leaves_the_earlier_ones_committed(
    database: Database, org_id: str
) -> None:
    dbapi = database.engine.dialect.loaded_dbapi
    record = record_statement(database.engine.dialect)
    first, later = decision(org_id), decision(org_id)
    with pytest.raises(dbapi.IntegrityError):
        with autocommit_cursor(database) as cursor:
            driver = cursor.connection
            record.execute(cursor, first)
            record.execute(cursor, first)  # the same id again
    assert stored(database, first["id"]) is not None
    if ON_POSTGRES:
        from psycopg.pq import TransactionStatus

        assert driver.info.transaction_status == TransactionStatus.IDLE
    else:
        assert driver.in_transaction is False
    with autocommit_cursor(database) as cursor:
        record.execute(cursor, later)
    assert stored(database, later["id"]) is not None


def test_a_failed_statement_does_not_stop_the_next_one(database: Database, org_id: str) -> None:
    dbapi = database.engine.dialect.loaded_dbapi
    record = record_statement(database.engine.dialect)
    first, second = decision(org_id), decision(org_id)
    with autocommit_cursor(database) as cursor:
        record.execute(cursor, first)
        with pytest.raises(dbapi.IntegrityError):
            record.execute(cursor, first)
        # No transaction was aborted (on Postgres one would refuse every later statement).
        record.execute(cursor, second)
    assert stored(database, first["id"]) is not None
    assert stored(database, second["id"]) is not None


def test_an_error_of_the_caller_leaves_the_connection_usable(
    database: Database, org_id: str
) -> None:
    record = record_statement(database.engine.dialect)
    first, later = decision(org_id), decision(org_id)
    with pytest.raises(RuntimeError, match="caller"):
        with autocommit_cursor(database) as cursor:
            driver = cursor.connection
            record.execute(cursor, first)
            raise RuntimeError("the caller failed")
    assert stored(database, first["id"]) is not None
    if ON_POSTGRES:
        from psycopg.pq import TransactionStatus

        assert driver.info.transaction_status == TransactionStatus.IDLE
    with database.transaction() as session:
        session.add(PreflightDecision(**later))
    assert stored(database, later["id"]) is not None


def test_request_ids_are_not_replayed_by_the_global_random_seed() -> None:
    """Test frameworks and libraries call `random.seed`; the ids of decisions (a primary key)
    must not repeat when they do, and a forked worker draws different ids from its parent."""
    import os
    import random
    import uuid

    from controller.store.models import request_id

    random.seed(0)
    first = request_id()
    random.seed(0)
    assert request_id() != first
    assert uuid.UUID(first).version == 4
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, request_id().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 100).decode()
    os.close(read)
    os.close(write)
    assert child != request_id()


def test_decision_ids_are_version_7_and_ordered_by_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decision ids carry their millisecond first (they append to the primary-key index),
    are valid RFC 9562 version-7 UUIDs, and still differ within one millisecond."""
    import random
    import time
    import uuid

    from controller.store.models import ordered_id

    now = [1_700_000_000_000_000_000]
    monkeypatch.setattr(time, "time_ns", lambda: now[0])
    same_ms = {ordered_id() for _ in range(1000)}
    assert len(same_ms) == 1000
    parsed = [uuid.UUID(value) for value in same_ms]
    assert {p.version for p in parsed} == {7}
    assert {p.variant for p in parsed} == {uuid.RFC_4122}
    assert {p.int >> 80 for p in parsed} == {1_700_000_000_000}
    random.seed(0)
    now[0] += 1_000_000  # one millisecond later
    later = ordered_id()
    assert all(later > value for value in same_ms)  # text order is time order
    assert uuid.UUID(later).int >> 80 == 1_700_000_000_001


@pytest.mark.parametrize("synchronous", [False, True])
def test_the_app_builds_its_gate_pool_from_the_setting(
    tmp_path: Path, database: Database, synchronous: bool
) -> None:
    from web.app import create_app

    settings = make_settings(
        tmp_path, database_url=database.url, decision_synchronous_commit=synchronous
    )
    built = create_app(settings).extensions["driftgate.database"]
    try:
        assert built.synchronous_autocommit is synchronous
        if ON_POSTGRES:
            with autocommit_cursor(built) as cursor:
                expected = "on" if synchronous else "off"
                assert server_setting(cursor.connection, "synchronous_commit") == expected
    finally:
        built.dispose()


def test_a_gate_connection_is_reused_and_never_shared(database: Database) -> None:
    with autocommit_cursor(database) as cursor:
        first = cursor.connection
    with autocommit_cursor(database) as cursor:
        assert cursor.connection is first  # from the free list, not a pool checkout
        with autocommit_cursor(database) as nested:  # in use: the nested call gets another
            second = nested.connection
            assert second is not first
    # Both went back; a thread takes whichever is idle, never one in use.
    seen: list[Any] = []
    ready, release = threading.Event(), threading.Event()

    def other() -> None:
        with autocommit_cursor(database) as cursor:
            seen.append(cursor.connection)
            ready.set()
            release.wait(5)

    with autocommit_cursor(database) as mine:
        worker = threading.Thread(target=other)
        worker.start()
        assert ready.wait(5)
        assert seen[0] is not mine.connection
        assert {id(seen[0]), id(mine.connection)} == {id(first), id(second)}
        release.set()
        worker.join()


def test_an_error_returns_the_connection_to_the_pool_and_the_next_call_works(
    database: Database, org_id: str
) -> None:
    dbapi = database.engine.dialect.loaded_dbapi
    record = record_statement(database.engine.dialect)
    row = decision(org_id)
    with autocommit_cursor(database) as cursor:
        record.execute(cursor, row)
    with pytest.raises(dbapi.IntegrityError), autocommit_cursor(database) as cursor:
        record.execute(cursor, row)  # the same id again
    assert database._idle == []  # not put back on the free list
    with autocommit_cursor(database) as cursor:
        record.execute(cursor, decision(org_id))
        if ON_POSTGRES:
            from psycopg.pq import TransactionStatus

            assert cursor.connection.info.transaction_status == TransactionStatus.IDLE


def test_dispose_closes_the_idle_gate_connections(database: Database, org_id: str) -> None:
    with autocommit_cursor(database) as cursor:
        before = cursor.connection
    database.dispose()
    if ON_POSTGRES:
        assert before.closed
    else:
        with pytest.raises(database.engine.dialect.loaded_dbapi.ProgrammingError):
            before.execute("SELECT 1")  # closed
    with autocommit_cursor(database) as cursor:
        assert cursor.connection is not before
        record_statement(database.engine.dialect).execute(cursor, decision(org_id))


@pytest.mark.skipif(not ON_POSTGRES, reason="a server that drops the connection")
def test_a_connection_idle_too_long_is_pinged_and_replaced_when_dead(
    database: Database, org_id: str
) -> None:
    from controller.store.db import IDLE_PING_SECONDS

    with autocommit_cursor(database) as cursor:
        dead = cursor.connection
        pid = dead.info.backend_pid
    with database.engine.connect() as admin:
        admin.exec_driver_sql(f"SELECT pg_terminate_backend({pid})")
    # Idle long enough to be pinged; without the ping the statement would fail.
    [(connection, used)] = database._idle
    database._idle[0] = (connection, used - IDLE_PING_SECONDS - 1)
    with autocommit_cursor(database) as cursor:
        assert cursor.connection is not dead
        record_statement(database.engine.dialect).execute(cursor, decision(org_id))
