"""The controller through a database outage (Postgres stopped or frozen, through a loopback
proxy: `tests/dbproxy.py`): it does not crash or log a trace per round, logs one line when the
outage starts and one when it ends, resumes by itself, and checks each watch once after it,
the check cut off by the outage included, without a burst of duplicates; and the race behind
such a duplicate, step by step on either store."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from controller.crypto import load_secret_box
from controller.scheduler import Controller, enqueue_due_checks
from controller.store import jobs
from controller.store.db import Database
from controller.store.models import Job, Watch
from tests.conftest import ON_POSTGRES, OrgKey, make_settings
from tests.dbproxy import DatabaseProxy
from tests.factories import make_watches
from tests.processes import wait_until
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec

postgres_only = pytest.mark.skipif(not ON_POSTGRES, reason="a Postgres server behind a proxy")
WATCHES = 3
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)
        self.lock = threading.Lock()

    def __call__(self) -> datetime:
        with self.lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self.lock:
            self.now += timedelta(seconds=seconds)


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not any(kept is record for kept in self.records):  # seen on its way up to root
            self.records.append(record)

    def events(self, name: str) -> list[logging.LogRecord]:
        return [r for r in self.records if r.getMessage() == name]


@pytest.fixture
def every_log() -> Iterator[Records]:
    """Every record of the driftgate loggers and of anything else (SQLAlchemy's pool, say)."""
    records = Records()
    driftgate, root = logging.getLogger("driftgate"), logging.getLogger()
    level = driftgate.level
    driftgate.setLevel(logging.INFO)
    for logger in (driftgate, root):
        logger.addHandler(records)
    yield records
    for logger in (driftgate, root):
        logger.removeHandler(records)
    driftgate.setLevel(level)


def test_a_check_handed_on_after_an_outage_is_its_slots_only_check(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    (watch_id,) = make_watches(
        database, acme, tmp_path, ["https://x.example/openapi.json"], intervalMinutes=1
    )
    assert enqueue_due_checks(database, NOW) == 1
    (cut_off,) = jobs.claim(database, worker="cut-off", kinds=("check",), now=NOW)
    # The check could not be recorded: the store was away for two minutes. When it is back,
    # the lease has run out and the watch's next slot has begun.
    later = NOW + timedelta(minutes=2)
    assert jobs.reap(database, later) == 1  # handed on: queued to run now
    (again,) = jobs.claim(database, worker="w", kinds=("check",), now=later)  # at once
    assert again.id == cut_off.id
    enqueue_due_checks(database, later)  # the round after: the slot is due, its check runs
    with database.session() as session:
        keys = list(session.scalars(select(Job.key)))
        next_check_at = session.get_one(Watch, watch_id).next_check_at
    assert keys == [f"check:{watch_id}"]  # no second check for the slot
    assert next_check_at is not None and next_check_at > later
    assert jobs.finish(database, again, later, result={})
    # Until the next slot starts nothing more is queued (the slot's offset is the watch id's
    # jitter, a whole second from 1 to 60 after `later`: a fixed moment could be in it).
    assert enqueue_due_checks(database, later + (next_check_at - later) / 2) == 0
    assert enqueue_due_checks(database, next_check_at) == 1


def fetches(server: SpecServer) -> Counter[str]:
    return Counter(path for method, path, _ in list(server.requests) if method == "GET")


def unfinished_checks(database: Database) -> int:
    with database.session() as session:
        return int(
            session.scalar(
                select(func.count())
                .select_from(Job)
                .where(Job.kind == "check", Job.status.in_(("queued", "running")))
            )
            or 0
        )


@postgres_only
@pytest.mark.slow
@pytest.mark.parametrize("fault", ["freeze", "down"])
def test_the_controller_rides_out_an_outage_and_checks_each_watch_once_after_it(
    database: Database,
    proxy: DatabaseProxy,
    acme: OrgKey,
    tmp_path: Path,
    server: SpecServer,
    fault: str,
    every_log: Records,
) -> None:
    paths = [f"/v{i}.json" for i in range(WATCHES)]
    spec = as_json(charges_spec())
    make_watches(
        database, acme, tmp_path, [server.set(path, spec) for path in paths], intervalMinutes=1
    )
    bounded = Database(
        proxy.url(database.url), pool_size=12, connect_timeout=2, statement_timeout=0.5
    )
    settings = make_settings(tmp_path, database_url=bounded.url, allow_private_targets=True)
    clock = Clock()
    controller = Controller(
        settings, bounded, load_secret_box(settings), concurrency=4, tick_seconds=0.2, clock=clock
    )
    controller.start()
    try:
        wait_until(lambda: fetches(server) == dict.fromkeys(paths, 1))  # the first checks
        for path in paths:  # the next ones are still fetching when the database goes
            server.set(path, spec, delay=1.0)
        clock.advance(60)
        wait_until(lambda: fetches(server) == dict.fromkeys(paths, 2))
        getattr(proxy, fault)()
        wait_until(lambda: bounded.reachability.is_down)
        # The cut-off checks give up; the slot passes and their leases run out meanwhile.
        wait_until(lambda: all(future.done() for future in list(controller.running)))
        clock.advance(60)
        # Rounds of ticks, queue looks, heartbeats and deliveries meet the outage.
        wait_until(lambda: bounded.reachability.refused > 50)
        assert fetches(server) == dict.fromkeys(paths, 2)

        proxy.forward()
        wait_until(lambda: not bounded.reachability.is_down)
        wait_until(lambda: fetches(server) == dict.fromkeys(paths, 3))
        wait_until(lambda: unfinished_checks(database) == 0)
        for _ in range(3):
            controller.tick()
        assert unfinished_checks(database) == 0
        assert fetches(server) == dict.fromkeys(paths, 3)  # one check each after the outage
    finally:
        controller.stop(grace=5)
        bounded.dispose()
    assert len(every_log.events("store.unavailable")) == 1
    assert len(every_log.events("store.available")) == 1
    traced = [r.getMessage() for r in every_log.records if r.exc_info]
    assert traced == []
    assert every_log.events("controller.started") and every_log.events("controller.stopped")
