"""Scheduling checks on the job table: who is due, in which order, for which slot; one
enqueuer at a time; expired leases; deliveries that never hold the checks back."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from sqlalchemy import func, select, text, update

from controller.crypto import load_secret_box
from controller.events.outbox import emit
from controller.scheduler import Controller, enqueue_due_checks, slot
from controller.store import jobs
from controller.store.db import Database
from controller.store.models import Job, OutboxMessage, Watch
from tests.conftest import ON_POSTGRES, OrgKey, make_settings
from tests.factories import make_watches
from tests.processes import PATIENCE
from tests.servers import Loopback, SpecServer
from tests.specs import as_json, charges_spec

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def urls(count: int) -> list[str]:
    return [f"https://x.example/{i}/openapi.json" for i in range(count)]


def set_next(database: Database, ids: list[str], at: datetime | None) -> None:
    with database.transaction() as session:
        session.execute(update(Watch).where(Watch.id.in_(ids)).values(next_check_at=at))


def queued(database: Database) -> dict[str, Job]:
    with database.session() as session:
        return {job.key.split(":", 1)[1]: job for job in session.scalars(select(Job))}


def test_new_watches_come_before_the_schedule(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    """A watch never scheduled is due from its creation: it is not sorted behind watches
    that are due by their slots (on Postgres NULLs sort last unless asked otherwise)."""
    scheduled = make_watches(database, acme, tmp_path, urls(5))
    set_next(database, scheduled, NOW - timedelta(minutes=1))
    new = make_watches(database, acme, tmp_path, urls(8)[5:])
    assert enqueue_due_checks(database, NOW, limit=3) == 3
    assert set(queued(database)) == set(new)
    assert enqueue_due_checks(database, NOW, limit=10) == 5
    assert set(queued(database)) == set(new) | set(scheduled)


def test_an_overdue_watch_is_queued_once_for_the_slot_it_is_in_now(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    (watch_id,) = make_watches(database, acme, tmp_path, urls(1))
    set_next(database, [watch_id], NOW - timedelta(minutes=47))  # three slots were missed
    assert enqueue_due_checks(database, NOW) == 1
    index, next_start = slot(watch_id, 15, NOW)
    job = queued(database)[watch_id]
    assert job.period == f"15m:{index}" and job.run_after == NOW
    with database.session() as session:
        assert session.get_one(Watch, watch_id).next_check_at == next_start
    # Up to the start of its next slot (at least a second away, wherever the jitter put it),
    # nothing more is queued.
    assert enqueue_due_checks(database, next_start - timedelta(seconds=1)) == 0


def test_a_watch_due_within_the_round_is_queued_for_its_slot_start(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    (watch_id,) = make_watches(database, acme, tmp_path, urls(1))
    _, next_start = slot(watch_id, 15, NOW)
    set_next(database, [watch_id], next_start)
    before = next_start - timedelta(seconds=3)
    assert enqueue_due_checks(database, before, ahead=0) == 0
    assert enqueue_due_checks(database, before, ahead=5) == 1
    job = queued(database)[watch_id]
    assert job.run_after == next_start
    assert job.period == f"15m:{slot(watch_id, 15, next_start)[0]}"
    # Not claimed before its time, claimed at it.
    assert jobs.claim(database, worker="w", kinds=("check",), now=before) == []
    (claimed,) = jobs.claim(database, worker="w", kinds=("check",), now=next_start)
    assert claimed.key == f"check:{watch_id}"


def test_a_changed_interval_schedules_the_watch_again(
    database: Database, acme: OrgKey, tmp_path: Path, client: object
) -> None:
    from flask.testing import FlaskClient

    assert isinstance(client, FlaskClient)
    (watch_id,) = make_watches(database, acme, tmp_path, urls(1))
    set_next(database, [watch_id], NOW + timedelta(hours=1))
    answer = client.patch(
        f"/api/watches/{watch_id}", json={"intervalMinutes": 1}, headers=acme.headers
    )
    assert answer.status_code == 200, answer.get_json()
    with database.session() as session:
        assert session.get_one(Watch, watch_id).next_check_at is None  # due now
    assert enqueue_due_checks(database, NOW) == 1
    assert queued(database)[watch_id].period.startswith("1m:")


@pytest.mark.skipif(not ON_POSTGRES, reason="the enqueue lock is Postgres' advisory lock")
def test_one_controller_at_a_time_enqueues(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    make_watches(database, acme, tmp_path, urls(3))
    with database.engine.connect() as other:
        holding = other.begin()
        other.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": 0x647269667467})
        assert enqueue_due_checks(database, NOW) == 0  # another controller is at it
        holding.rollback()
    assert enqueue_due_checks(database, NOW) == 3


def test_an_expired_lease_hands_the_watch_on_at_once(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    """A dead controller's job: requeued to run now; or, when the watch's next job already
    waits (its next slot), failed with that one brought forward, so the watch is checked at
    once either way."""
    first, second = make_watches(database, acme, tmp_path, urls(2))
    enqueue_due_checks(database, NOW)
    claimed = jobs.claim(database, worker="dead", kinds=("check",), now=NOW, limit=2)
    assert len(claimed) == 2
    later = NOW + timedelta(minutes=20)
    with database.transaction() as session:  # the second watch's next slot is queued
        jobs.enqueue(
            session,
            kind="check",
            key=f"check:{second}",
            period="15m:next",
            run_after=later,
            payload={"watchId": second},
        )
    expired = NOW + jobs.DEFAULT_LEASE + timedelta(seconds=1)
    assert jobs.reap(database, expired) == 2
    with database.session() as session:
        rows = {(j.key, j.period): j for j in session.scalars(select(Job))}
    # Claims come in due order, not in the order the watches were made: find the first's.
    (first_job,) = [job for job in claimed if job.key == f"check:{first}"]
    mine = rows[(f"check:{first}", first_job.period)]
    assert mine.status == "queued" and mine.run_after == expired
    theirs = [j for (key, _), j in rows.items() if key == f"check:{second}"]
    assert sorted(j.status for j in theirs) == ["failed", "queued"]
    waiting = next(j for j in theirs if j.status == "queued")
    assert waiting.run_after == expired  # brought forward from its slot
    picked = jobs.claim(database, worker="w", kinds=("check",), now=expired, limit=5)
    assert {job.key for job in picked} == {f"check:{first}", f"check:{second}"}


class Holding(BaseHTTPRequestHandler):
    """A webhook receiver that answers each POST only when released."""

    release = threading.Event()
    received: list[str] = []

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        Holding.received.append(self.path)
        Holding.release.wait(30)
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        return


@pytest.fixture
def holding_receiver() -> Iterator[Loopback]:
    Holding.release.clear()
    Holding.received = []
    server = Loopback(Holding).start()
    yield server
    Holding.release.set()
    server.stop()


def test_a_receiver_that_does_not_answer_holds_no_check_back(
    database: Database,
    acme: OrgKey,
    tmp_path: Path,
    server: SpecServer,
    holding_receiver: Loopback,
) -> None:
    settings = make_settings(
        tmp_path, database_url=database.url, allow_private_targets=True, delivery_concurrency=2
    )
    box = load_secret_box(settings)
    server.set("/spec.json", as_json(charges_spec()))
    (watch_id,) = make_watches(database, acme, tmp_path, [server.url("/spec.json")])
    with database.transaction() as session:
        for index in range(4):  # more messages than the lane has threads
            emit(
                session,
                box,
                org_id=acme.org_id,
                event_type="drift.check_failed",
                data={"watchId": watch_id, "n": index},
                now=datetime.now(UTC),
                extra_destinations=[holding_receiver.url(f"/hook/{index}")],
                org_defaults=False,
            )
    controller = Controller(settings, database, box, concurrency=2, tick_seconds=0.2)
    controller.start()
    try:
        deadline = time.monotonic() + PATIENCE
        while len(Holding.received) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(Holding.received) == 2  # both delivery threads are held by the receiver
        # Checks go on: the scheduled one, and one asked for now.
        job_id = jobs.request_check(database, watch_id, datetime.now(UTC))
        job = jobs.wait_for(database, job_id, PATIENCE)
        assert job is not None and job.status == "done", job
        with database.session() as session:
            pending = session.scalar(
                select(func.count())
                .select_from(OutboxMessage)
                .where(OutboxMessage.status != "delivered")
            )
        assert pending == 4  # none delivered yet: the receiver still holds two
        Holding.release.set()
        deadline = time.monotonic() + PATIENCE
        while len(Holding.received) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sorted(Holding.received) == [f"/hook/{i}" for i in range(4)]
    finally:
        Holding.release.set()
        controller.stop(grace=5)


@pytest.mark.skipif(not ON_POSTGRES, reason="a claim committing between two statements")
def test_a_check_asked_for_while_a_controller_claims_the_queued_one_is_queued_anew(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    """The API's check joins a check already queued for the watch; when a controller claims
    that one between the insert that yielded to it and the read that looks for it, the
    request queues a check of its own instead of failing (a 500 seen under load)."""
    from sqlalchemy import event

    (watch_id,) = make_watches(database, acme, tmp_path, urls(1))
    assert enqueue_due_checks(database, NOW) == 1
    scheduled = queued(database)[watch_id]
    claimer = Database(database.url)
    inserts = 0

    def claim_meanwhile(conn: object, cursor: object, statement: str, *args: object) -> None:
        nonlocal inserts
        if statement.lstrip().upper().startswith("INSERT INTO JOBS"):
            inserts += 1
            if inserts == 1:  # the controller's claim commits right after the first insert
                with claimer.transaction() as session:
                    session.execute(
                        update(Job).where(Job.id == scheduled.id).values(status="running")
                    )

    event.listen(database.engine, "after_cursor_execute", claim_meanwhile)
    try:
        job_id = jobs.request_check(database, watch_id, NOW)
    finally:
        event.remove(database.engine, "after_cursor_execute", claim_meanwhile)
        claimer.dispose()
    assert inserts == 2 and job_id != scheduled.id
    with database.session() as session:
        job = session.get_one(Job, job_id)
        assert (job.status, job.key, job.payload["manual"]) == ("queued", f"check:{watch_id}", True)
