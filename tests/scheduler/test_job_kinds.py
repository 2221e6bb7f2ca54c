"""The registry of job kinds: the controller runs a claimed job by looking its kind up, so a
kind registered from outside runs without a branch in the scheduler."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from concurrent.futures import wait
from datetime import UTC, datetime
from typing import Any

import pytest

from controller.crypto import load_secret_box
from controller.logs import configure_logging
from controller.scheduler import Controller
from controller.settings import Settings
from controller.store import jobs
from controller.store.db import Database
from controller.store.models import Job

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


@pytest.fixture
def idle(live_settings: Settings, database: Database) -> Iterator[Controller]:
    """A controller that is never started: tests drive `dispatch` themselves."""
    controller = Controller(
        live_settings, database, load_secret_box(live_settings), concurrency=2, clock=lambda: NOW
    )
    yield controller
    controller.stop(grace=5)


def queue(database: Database, kind: str, key: str, payload: dict[str, Any]) -> int:
    with database.transaction() as session:
        job = jobs.enqueue(
            session, kind=kind, key=key, period="manual:1", run_after=NOW, payload=payload
        )
        assert job is not None
        return job.id


def run_dispatched(controller: Controller) -> int:
    claimed = controller.dispatch()
    wait(list(controller.running))
    for future in list(controller.running):
        future.result()
    return claimed


def test_the_controller_registers_its_kinds(idle: Controller) -> None:
    names = [kind.name for kind in idle.kinds]
    assert names == [
        jobs.CHECK,
        jobs.RECONCILE,
        "draft_pr",
        "github_delivery",
        "weekly_summary",
        "retention",
    ]
    assert jobs.CHECK in idle.kinds and "replay" not in idle.kinds
    # Without sources configured a reconcile is never claimed, as before the registry.
    assert not idle.settings.sources
    assert idle.kinds.claimed() == (
        jobs.CHECK,
        "draft_pr",
        "github_delivery",
        "weekly_summary",
        "retention",
    )


def test_claimed_kinds_follow_each_kinds_own_answer() -> None:
    switch = {"on": False}
    kinds = jobs.JobKinds(
        [
            jobs.JobKind("always", run=lambda job, prepared: None),
            jobs.JobKind(
                "sometimes", run=lambda job, prepared: None, is_claimed=lambda: switch["on"]
            ),
        ]
    )
    assert kinds.claimed() == ("always",)
    switch["on"] = True
    assert kinds.claimed() == ("always", "sometimes")
    assert kinds.get("sometimes") is not None and kinds.get("never") is None


def test_a_kind_cannot_be_registered_twice() -> None:
    kinds = jobs.JobKinds([jobs.JobKind("weekly_email", run=lambda job, prepared: None)])
    with pytest.raises(ValueError, match="weekly_email"):
        kinds.register(jobs.JobKind("weekly_email", run=lambda job, prepared: None))


def test_a_registered_kind_is_claimed_prepared_and_run(
    idle: Controller, database: Database
) -> None:
    ran: list[tuple[str, Any]] = []
    batches: list[list[str]] = []

    def prepare(claimed: Sequence[jobs.Claimed]) -> dict[str, str]:
        batches.append(sorted(job.key for job in claimed))
        return {job.key: f"read:{job.payload['n']}" for job in claimed}

    def run(job: jobs.Claimed, prepared: dict[str, str]) -> None:
        ran.append((job.key, prepared[job.key]))
        jobs.finish(database, job, NOW, result={"n": job.payload["n"]})

    idle.kinds.register(jobs.JobKind("sample", run=run, prepare=prepare))
    first = queue(database, "sample", "sample:a", {"n": 1})
    second = queue(database, "sample", "sample:b", {"n": 2})

    assert run_dispatched(idle) == 2
    assert batches == [["sample:a", "sample:b"]]  # one read for the claimed batch
    assert sorted(ran) == [("sample:a", "read:1"), ("sample:b", "read:2")]
    with database.session() as session:
        finished = {job_id: session.get(Job, job_id) for job_id in (first, second)}
        assert {job_id: (job.status, job.result) for job_id, job in finished.items() if job} == {
            first: ("done", {"n": 1}),
            second: ("done", {"n": 2}),
        }


def test_a_job_of_a_kind_nobody_registered_stays_queued(
    idle: Controller, database: Database
) -> None:
    job_id = queue(database, "weekly_email", "weekly_email:acme", {})
    assert run_dispatched(idle) == 0
    with database.session() as session:
        job = session.get(Job, job_id)
        assert job is not None and (job.status, job.attempts) == ("queued", 0)


def test_a_claimed_job_whose_kind_is_gone_fails_instead_of_running_as_a_check(
    idle: Controller, database: Database
) -> None:
    queue(database, "weekly_email", "weekly_email:acme", {})
    [claimed] = jobs.claim(database, worker=idle.worker, kinds=("weekly_email",), now=NOW)
    idle.execute(claimed)
    with database.session() as session:
        job = session.get(Job, claimed.id)
        assert job is not None
        assert (job.status, job.last_error) == ("failed", "unknown job kind 'weekly_email'")


def test_the_controller_runs_its_routines_in_order_and_survives_a_failing_one(
    idle: Controller, capfd: pytest.CaptureFixture[str]
) -> None:
    """What the controller does on its clock is a registry too: each tick runs the per-tick
    routines in order (those enabled), a failure is logged and the next still runs; periodic
    routines (the hourly prune) are scheduled on their own."""
    assert [r.name for r in idle.routines.each_tick()] == [
        "heartbeat",
        "reap",
        "enqueue_sources",
        "enqueue_checks",
        "waivers",
    ]
    assert [(r.name, r.every) for r in idle.routines.periodic()] == [
        ("retention", 60),
        ("weekly_summaries", 60),
    ]
    assert not idle.routines.get("enqueue_sources").is_enabled()  # type: ignore[union-attr]

    ran: list[tuple[str, datetime]] = []

    def broken(now: datetime) -> None:
        ran.append(("broken", now))
        raise RuntimeError("a bad round")

    idle.routines.register(jobs.Routine("broken", run=broken))
    idle.routines.register(jobs.Routine("after", run=lambda now: ran.append(("after", now))))
    idle.routines.register(
        jobs.Routine("off", run=lambda now: ran.append(("off", now)), is_enabled=lambda: False)
    )
    configure_logging(idle.settings)
    capfd.readouterr()
    idle.tick()
    assert ran == [("broken", NOW), ("after", NOW)]
    lines = [json.loads(x) for x in capfd.readouterr().err.splitlines() if x.startswith("{")]
    failed = [line for line in lines if line["event"] == "controller.routine_failed"]
    assert len(failed) == 1 and failed[0]["routine"] == "broken"
    with pytest.raises(ValueError, match="routine 'after' is already registered"):
        idle.routines.register(jobs.Routine("after", run=broken))
