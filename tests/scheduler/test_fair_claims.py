"""Fair claims (issue 40, point 5): one org's slow vendors do not starve another org's checks.

On the real job table of both stores: each org gets its share of a controller's workers while
another org's work waits; a check asked for now comes before a watch's first check, which
comes before a scheduled one; a controller keeps a worker that scheduled checks never take,
so a check asked for now starts while slow vendors hold every other worker; and a vendor that
timed out gets a shorter budget until a check of it completes (a real trickling server).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update

from controller.checks.engine import slow_vendor_deadline
from controller.crypto import load_secret_box
from controller.scheduler import Controller, enqueue_due_checks
from controller.settings import Settings
from controller.store import jobs
from controller.store.db import Database
from controller.store.models import Job, Watch
from tests.conftest import OrgKey, make_settings
from tests.factories import make_watches
from tests.processes import PATIENCE, wait_until
from tests.servers import SpecServer, spec_server, stalling
from tests.specs import as_json, charges_spec

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
WORKER = "controller-1"


def queue(
    database: Database,
    org: str | None,
    count: int,
    *,
    priority: int = jobs.SCHEDULED,
    at: datetime = NOW,
    tag: str = "",
) -> list[int]:
    """`count` due check jobs of `org`, due one second apart from `at`."""
    with database.transaction() as session:
        queued = [
            jobs.enqueue(
                session,
                kind=jobs.CHECK,
                key=f"check:{org}{tag}-{i}",
                period="15m:1",
                run_after=at + timedelta(seconds=i),
                payload={"watchId": f"{org}{tag}-{i}"},
                org_id=org,
                priority=priority,
            )
            for i in range(count)
        ]
    return [job.id for job in queued if job is not None]


def claim(database: Database, limit: int = 1, workers: int = 8, **options: int) -> list[str]:
    """The orgs of the jobs one claim of `WORKER` takes (a controller of `workers` workers)."""
    claimed = jobs.claim(
        database,
        worker=WORKER,
        kinds=(jobs.CHECK,),
        now=NOW + timedelta(hours=1),
        limit=limit,
        workers=workers,
        **options,
    )
    return [str(job.org_id) for job in claimed]


def running(database: Database) -> Counter[str]:
    with database.session() as session:
        rows = session.scalars(
            select(Job.org_id).where(Job.status == "running", Job.lease_owner == WORKER)
        )
        return Counter(str(org) for org in rows)


def waiting(database: Database) -> Counter[str]:
    with database.session() as session:
        rows = session.scalars(select(Job.org_id).where(Job.status == "queued"))
        return Counter(str(org) for org in rows)


def test_another_orgs_job_is_claimed_next_while_one_org_holds_every_worker(
    database: Database,
) -> None:
    queue(database, "a", 20)
    assert claim(database, limit=8) == ["a"] * 8  # no one else waits: a takes every worker
    queue(database, "b", 1, at=NOW + timedelta(minutes=5))  # due after all of a's
    assert claim(database) == ["b"]
    assert running(database) == {"a": 8, "b": 1}


def test_free_workers_go_to_every_org_with_work_and_none_stay_idle(database: Database) -> None:
    """a has 20 jobs and b one: b's share is more than it needs, so a gets the rest."""
    queue(database, "a", 20)
    queue(database, "b", 1, at=NOW + timedelta(minutes=5))
    assert Counter(claim(database, limit=8)) == {"a": 7, "b": 1}


def test_no_org_goes_beyond_its_share_while_another_waits(database: Database) -> None:
    """Three orgs with more work than workers, jobs ending in a random order: every claim
    goes to an org below its share (8 workers, 3 orgs: 2 each) while one waits, never to one
    already at or above it; work of no org (a reconcile) is a group of its own."""
    for org, count in (("a", 30), ("b", 12), ("c", 3)):
        queue(database, org, count)
    assert Counter(claim(database, limit=6, workers=6)) == {"a": 2, "b": 2, "c": 2}
    shuffle = random.Random(40)
    while waiting(database):
        with database.session() as session:
            ids = list(
                session.scalars(
                    select(Job.id).where(Job.status == "running", Job.lease_owner == WORKER)
                )
            )
        done = shuffle.choice(ids)
        with database.transaction() as session:
            session.execute(update(Job).where(Job.id == done).values(status="done"))
        before, queued = running(database), waiting(database)
        orgs_waiting = [org for org in queued if queued[org]]
        share = max(1, 6 // len(orgs_waiting))
        (org,) = claim(database, workers=6)
        below = [other for other in orgs_waiting if before[other] < share]
        assert before[org] < share or not below, (org, before, queued)


def test_jobs_of_no_org_have_a_share_of_their_own(database: Database) -> None:
    queue(database, "a", 10)
    queue(database, None, 2, tag="reconcile", at=NOW + timedelta(minutes=5))
    assert Counter(claim(database, limit=4, workers=4)) == {"a": 2, "None": 2}


def test_asked_for_now_then_first_checks_then_the_schedule(database: Database) -> None:
    queue(database, "a", 2, priority=jobs.SCHEDULED, tag="scheduled")
    queue(database, "a", 2, priority=jobs.FIRST, tag="first", at=NOW + timedelta(minutes=1))
    queue(database, "a", 2, priority=jobs.MANUAL, tag="manual", at=NOW + timedelta(minutes=2))
    order = [
        jobs.claim(database, worker=WORKER, kinds=(jobs.CHECK,), now=NOW + timedelta(hours=1))
        for _ in range(6)
    ]
    assert [(job.priority, job.key) for (job,) in order] == [
        (jobs.MANUAL, "check:amanual-0"),
        (jobs.MANUAL, "check:amanual-1"),
        (jobs.FIRST, "check:afirst-0"),
        (jobs.FIRST, "check:afirst-1"),
        (jobs.SCHEDULED, "check:ascheduled-0"),
        (jobs.SCHEDULED, "check:ascheduled-1"),
    ]


def test_scheduled_jobs_stop_at_their_workers_and_urgent_ones_do_not(database: Database) -> None:
    """`background` is how many jobs not asked for now (first checks, scheduled ones) a claim
    may take: the controller's workers not kept, less those running such jobs. A job asked
    for now is not counted, nor the first of an org with nothing running."""
    queue(database, "a", 5, tag="scheduled")
    queue(database, "a", 1, priority=jobs.MANUAL, tag="manual", at=NOW + timedelta(minutes=1))
    later = NOW + timedelta(hours=1)

    def take(background: int) -> list[int]:
        claimed = jobs.claim(
            database, worker=WORKER, kinds=(jobs.CHECK,), now=later, limit=8, background=background
        )
        return [job.priority for job in claimed]

    assert take(2) == [jobs.MANUAL, jobs.SCHEDULED, jobs.SCHEDULED]
    assert take(0) == []
    queue(database, "a", 1, priority=jobs.FIRST, tag="first")
    assert take(0) == []
    # The controller's queue watch looks for work asked for now only, then.
    assert not jobs.due(database, (jobs.CHECK,), later, jobs.MANUAL)
    assert jobs.due(database, (jobs.CHECK,), later)
    queue(database, "a", 1, priority=jobs.MANUAL, tag="manual-again")
    assert jobs.due(database, (jobs.CHECK,), later, jobs.MANUAL)
    assert take(0) == [jobs.MANUAL]
    # An org with nothing running is not kept waiting behind one with everything running.
    queue(database, "b", 2)
    assert take(0) == [jobs.SCHEDULED]
    assert running(database) == {"a": 4, "b": 1}
    # b within its share (4 of 8) comes before a's first check beyond it.
    assert take(1) == [jobs.SCHEDULED]
    assert take(1) == [jobs.FIRST]


def test_the_schedule_names_each_jobs_org_and_a_new_watch_is_a_first_check(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    new, checked = make_watches(
        database, acme, tmp_path, ["https://x.example/1/o.json", "https://x.example/2/o.json"]
    )
    with database.transaction() as session:
        session.execute(update(Watch).where(Watch.id == checked).values(last_checked_at=NOW))
    assert enqueue_due_checks(database, NOW) == 2
    with database.session() as session:
        queued = {job.key: job for job in session.scalars(select(Job))}
    assert (queued[f"check:{new}"].priority, queued[f"check:{new}"].org_id) == (
        jobs.FIRST,
        acme.org_id,
    )
    assert queued[f"check:{checked}"].priority == jobs.SCHEDULED


def test_a_check_asked_for_joins_the_scheduled_one_and_makes_it_urgent(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    """A tick queues a check up to a tick ahead of its slot; asked for now, it runs now."""
    (watch_id,) = make_watches(database, acme, tmp_path, ["https://x.example/1/o.json"])
    with database.transaction() as session:
        scheduled = jobs.enqueue(
            session,
            kind=jobs.CHECK,
            key=f"check:{watch_id}",
            period="15m:1",
            run_after=NOW + timedelta(seconds=4),
            org_id=acme.org_id,
        )
        assert scheduled is not None
    assert jobs.request_check(database, watch_id, NOW) == scheduled.id
    with database.session() as session:
        job = session.get_one(Job, scheduled.id)
        assert (job.priority, job.run_after, job.org_id) == (jobs.MANUAL, NOW, acme.org_id)


# A live controller: slow vendors hold its workers for scheduled checks, not the one it keeps.


@pytest.fixture
def slow_settings(tmp_path: Path, database: Database) -> Settings:
    # A deadline far beyond the test: the slow vendors' checks end when their server stops.
    return make_settings(
        tmp_path,
        database_url=database.url,
        allow_private_targets=True,
        fetch_deadline_seconds=120.0,
    )


def test_a_check_asked_for_now_runs_while_slow_vendors_hold_every_other_worker(
    database: Database,
    slow_settings: Settings,
    acme: OrgKey,
    make_org: Callable[..., OrgKey],
    tmp_path: Path,
) -> None:
    other = make_org("other")
    with stalling() as slow, spec_server() as fast:
        slow_ids = make_watches(
            database, acme, tmp_path, [slow.url(f"/{i}/openapi.json") for i in range(6)]
        )
        (watch_id,) = make_watches(
            database, other, tmp_path, [fast.set("/o.json", as_json(charges_spec()))]
        )
        with database.transaction() as session:  # the slow ones are on the schedule
            session.execute(update(Watch).where(Watch.id.in_(slow_ids)).values(last_checked_at=NOW))
            session.execute(
                update(Watch)
                .where(Watch.id == watch_id)
                .values(next_check_at=datetime.now(UTC) + timedelta(days=1))
            )
        controller = Controller(
            slow_settings, database, load_secret_box(slow_settings), concurrency=4, tick_seconds=0.2
        )
        controller.start()
        try:
            wait_until(lambda: slow.accepted == 3)  # three scheduled checks, held
            job_id = jobs.request_check(database, watch_id, datetime.now(UTC))
            job = jobs.wait_for(database, job_id, PATIENCE)
            assert job is not None and job.status == "done", job
            with database.session() as session:
                statuses = Counter(
                    session.scalars(
                        select(Job.status).where(
                            Job.kind == jobs.CHECK, Job.key != f"check:{watch_id}"
                        )
                    )
                )
            # Done while the slow vendors still held three workers and three more waited.
            assert statuses == {"running": 3, "queued": 3}
            assert slow.accepted == 3
        finally:
            slow.stop()
            controller.stop(grace=10)


# A vendor that timed out: a quarter of the deadline (at least a second) until it answers.

DEADLINE = 2.0


def budget_of(database: Database, watch_id: str) -> tuple[str | None, str | None]:
    with database.session() as session:
        watch = session.get_one(Watch, watch_id)
        return watch.failure_class, watch.last_error


def run_scheduled(controller: Controller, database: Database, watch_id: str, n: int) -> None:
    """A scheduled check of the watch, run to its end: rounds until its job is done (on a busy
    machine one round may end before the last check's job is marked finished, and a watch's
    next check waits for it)."""
    with database.transaction() as session:
        job = jobs.enqueue(
            session,
            kind=jobs.CHECK,
            key=f"check:{watch_id}",
            period=f"test:{n}",
            run_after=NOW,
            payload={"watchId": watch_id},
        )
        assert job is not None
        job_id = job.id

    def done() -> bool:
        controller.run_until_done()
        with database.session() as session:
            return session.get_one(Job, job_id).status == "done"

    wait_until(done)


def test_a_vendor_that_timed_out_gets_a_shorter_budget_until_it_answers(
    database: Database, acme: OrgKey, tmp_path: Path, server: SpecServer
) -> None:
    settings = make_settings(
        tmp_path,
        database_url=database.url,
        allow_private_targets=True,
        fetch_deadline_seconds=DEADLINE,
    )
    assert slow_vendor_deadline(DEADLINE) == 1.0 and slow_vendor_deadline(60.0) == 15.0
    box = load_secret_box(settings)
    url = server.set("/spec.json", b"{", trickle=0.2)
    (watch_id,) = make_watches(database, acme, tmp_path, [url])

    def controller() -> Controller:  # a new one each time: the state is the watch's
        return Controller(settings, database, box, concurrency=1, clock=lambda: NOW)

    run_scheduled(controller(), database, watch_id, 1)
    assert budget_of(database, watch_id)[0] == "timeout"
    assert "no complete answer within 2 s" in str(budget_of(database, watch_id)[1])
    run_scheduled(controller(), database, watch_id, 2)
    assert "no complete answer within 1 s" in str(budget_of(database, watch_id)[1])
    # A check asked for now gets the whole deadline.
    job_id = jobs.request_check(database, watch_id, NOW)
    controller().run_until_done()
    with database.session() as session:
        assert session.get_one(Job, job_id).status == "done"
    assert "no complete answer within 2 s" in str(budget_of(database, watch_id)[1])
    run_scheduled(controller(), database, watch_id, 3)
    assert "no complete answer within 1 s" in str(budget_of(database, watch_id)[1])
    # It answers (within the short budget): the whole deadline again from the next check.
    server.set("/spec.json", as_json(charges_spec()))
    run_scheduled(controller(), database, watch_id, 4)
    assert budget_of(database, watch_id) == (None, None)
    server.set("/spec.json", b"{", trickle=0.2)
    run_scheduled(controller(), database, watch_id, 5)
    assert "no complete answer within 2 s" in str(budget_of(database, watch_id)[1])
