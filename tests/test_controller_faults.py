"""The controller through a database outage (Postgres stopped or frozen, through a loopback
proxy: `tests/dbproxy.py`): it does not crash or log a trace per round, logs one line when the
outage starts and one when it ends, resumes by itself, and checks each watch once after it,
the check cut off by the outage included, without a burst of duplicates."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import make_url

from controller.crypto import load_secret_box
from controller.model.watch import WatchCreate
from controller.scheduler import Controller
from controller.services import watches as watch_service
from controller.services.auth import Principal
from controller.store.db import Database
from controller.store.models import Job
from tests.conftest import ON_POSTGRES, OrgKey, make_settings
from tests.dbproxy import DatabaseProxy, database_proxy
from tests.processes import wait_until
from tests.servers import SpecServer, spec_server
from tests.specs import as_json, charges_spec

pytestmark = pytest.mark.skipif(not ON_POSTGRES, reason="a Postgres server behind a proxy")
WATCHES = 3


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


@pytest.fixture
def server() -> Iterator[SpecServer]:
    with spec_server() as running:
        yield running


@pytest.fixture
def proxy(database: Database) -> Iterator[DatabaseProxy]:
    url = make_url(database.url)
    with database_proxy((url.host or "127.0.0.1", url.port or 5432)) as running:
        yield running


def make_watches(database: Database, org: OrgKey, tmp_path: Path, urls: list[str]) -> None:
    box = load_secret_box(make_settings(tmp_path, database_url=database.url))
    principal = Principal(org.org_id, org.org_name, "pro", frozenset(), "api_key", org.key_id)
    with database.transaction() as session:
        for index, url in enumerate(urls):
            data = WatchCreate.model_validate(
                {"name": f"w{index}", "url": url, "watchType": "openapi", "intervalMinutes": 1}
            )
            watch_service.create_watch(session, principal, data, box)


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
    make_watches(database, acme, tmp_path, [server.set(path, spec) for path in paths])
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
