"""Retention on a real store: what each setting forgets, what it keeps, and the hourly job
that runs it once across controllers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from controller.crypto import load_secret_box
from controller.retention import service as retention
from controller.scheduler import Controller
from controller.store import jobs
from controller.store.db import Database
from controller.store.models import (
    DeliveryAttempt,
    DriftEvent,
    Incident,
    Job,
    OutboxMessage,
    PreflightDecision,
    Watch,
)
from tests.conftest import OrgKey, make_settings

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
OLD = NOW - timedelta(days=400)
RECENT = NOW - timedelta(hours=1)


def count(database: Database, model: Any) -> int:
    with database.session() as session:
        return int(session.scalar(select(func.count()).select_from(model)) or 0)


def seed(database: Database, org: OrgKey) -> None:
    """Two of everything retention knows about: one old, one recent; plus an old drift event
    that an open incident still points to."""
    with database.transaction() as session:
        watch = Watch(
            org_id=org.org_id,
            name="w",
            watch_type="openapi",
            url="https://x.example/openapi.json",
            drift_status="drifted",
            interval_minutes=15,
            header_names=[],
        )
        session.add(watch)
        session.flush()
        for at, index in ((OLD, 0), (RECENT, 1)):
            session.add(
                Job(
                    kind="check",
                    key=f"check:{index}",
                    period=str(index),
                    status="done",
                    run_after=at,
                    finished_at=at,
                    payload={},
                )
            )
            session.add(
                PreflightDecision(
                    org_id=org.org_id,
                    actor="test",
                    allowed=True,
                    status_code=200,
                    evaluated_at=at,
                )
            )
            message = OutboxMessage(
                id=f"msg_{index}",
                org_id=org.org_id,
                event_type="drift.detected",
                channel="webhook",
                destination_ciphertext="x",
                destination_hint="https://h.example",
                payload={},
                status="delivered",
                created_at=at,
                next_attempt_at=at,
            )
            session.add(message)
            session.flush()
            session.add(
                DeliveryAttempt(
                    outbox_id=message.id, org_id=org.org_id, attempted_at=at, success=True
                )
            )
            event = DriftEvent(org_id=org.org_id, watch_id=watch.id, detected_at=at, changes=b"")
            session.add(event)
            session.flush()
            session.add(
                Incident(
                    org_id=org.org_id,
                    watch_id=watch.id,
                    status="resolved",
                    opened_at=at,
                    resolved_at=at,
                    drift_event_id=event.id,
                )
            )
        pinned = DriftEvent(org_id=org.org_id, watch_id=watch.id, detected_at=OLD, changes=b"")
        session.add(pinned)
        session.flush()
        session.add(
            Incident(
                org_id=org.org_id,
                watch_id=watch.id,
                status="open",
                opened_at=OLD,
                drift_event_id=pinned.id,
            )
        )
        # A queued job, however old, is work to do, not history.
        session.add(
            Job(kind="check", key="check:q", period="q", status="queued", run_after=OLD, payload={})
        )


def test_defaults_forget_jobs_decisions_and_deliveries_and_keep_drift_history(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    seed(database, acme)
    settings = make_settings(tmp_path, database_url=database.url)
    counts = retention.prune(database, settings, NOW)
    assert counts["jobs"] == 1 and counts["decisions"] == 1
    assert counts["outbox"] == 1 and counts["deliveryAttempts"] == 1
    assert counts["driftEvents"] == 0 and counts["incidents"] == 0
    with database.session() as session:
        assert sorted(session.scalars(select(Job.status))) == ["done", "queued"]
    assert count(database, PreflightDecision) == 1
    assert count(database, OutboxMessage) == 1 and count(database, DeliveryAttempt) == 1
    assert count(database, DriftEvent) == 3 and count(database, Incident) == 3
    assert retention.prune(database, settings, NOW)["jobs"] == 0  # nothing left to do


def test_drift_history_goes_only_when_asked_and_never_under_an_open_incident(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    seed(database, acme)
    settings = make_settings(
        tmp_path,
        database_url=database.url,
        retention_drift_event_days=30,
        retention_incident_days=30,
    )
    counts = retention.prune(database, settings, NOW)
    assert counts["incidents"] == 1  # the old resolved one; never the open one
    assert counts["driftEvents"] == 1  # the old one; not the one the open incident shows
    with database.session() as session:
        open_incident = session.scalars(select(Incident).where(Incident.status == "open")).one()
        assert session.get(DriftEvent, open_incident.drift_event_id) is not None


def test_a_batch_at_a_time(database: Database, acme: OrgKey, tmp_path: Path) -> None:
    seed(database, acme)
    with database.transaction() as session:
        session.add_all(
            Job(kind="check", key=f"k{i}", period="p", status="failed", run_after=OLD, payload={})
            for i in range(25)
        )
    settings = make_settings(tmp_path, database_url=database.url)
    original = retention.BATCH
    retention.BATCH = 10
    try:
        assert retention.prune(database, settings, NOW)["jobs"] == 26
    finally:
        retention.BATCH = original


def test_the_hourly_job_runs_once_across_controllers(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    seed(database, acme)
    settings = make_settings(tmp_path, database_url=database.url)
    box = load_secret_box(settings)
    controllers = [
        Controller(settings, database, box, clock=lambda: NOW, concurrency=1) for _ in range(2)
    ]
    for controller in controllers:
        routine = controller.routines.get(retention.RETENTION)
        assert routine is not None
        controller.run_routine(routine)  # both enqueue this hour's job
    for controller in controllers:
        controller.run_until_done(timeout=10)
    with database.session() as session:
        ran = list(session.scalars(select(Job).where(Job.kind == retention.RETENTION)))
    assert len(ran) == 1 and ran[0].status == "done"
    assert ran[0].result is not None and ran[0].result["decisions"] == 1
    assert count(database, PreflightDecision) == 1
    assert jobs.DEFAULT_LEASE < timedelta(minutes=1)
