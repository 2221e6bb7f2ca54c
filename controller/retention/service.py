"""Retention: what the store forgets, and when.

Every check leaves a job row, every preflight a decision, every event an outbox message with
its delivery attempts. At 100,000 watches checked every 15 minutes the job rows alone grew by
gigabytes a day. The `retention` job (once an hour across all controllers: one job per hour
in the job table) deletes, per kind, what is older than its setting:

| what | setting | default |
|---|---|---|
| finished jobs (checks, reconciles, draft PRs, e-mails) | `retention_job_days` | 2 |
| preflight decisions (the audit export reads them) | `retention_decision_days` | 90 |
| sent, failed or suppressed outbox messages, and attempts | `retention_delivery_days` | 30 |
| drift events no open incident points to | `retention_drift_event_days` | kept |
| resolved incidents | `retention_incident_days` | kept |
| diff runs (`POST /api/openapi/diffs`) | `retention_diff_run_days` | 30 |

It also drops what was always dropped hourly: gate events older than a day, ended console
sessions and day-old sign-in attempts. Deletes go in batches of `BATCH` rows, each in its
own short transaction, along indexes the tables already have (per org and time, or the job
table's claim index), so neither the run gate nor the checks wait on a long delete.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Delete, delete, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from controller.accounts import service as accounts
from controller.gate.readmodel import prune_events
from controller.logs import log
from controller.settings import Settings
from controller.store import jobs
from controller.store.db import Database
from controller.store.models import (
    DeliveryAttempt,
    DiffRun,
    DriftEvent,
    Incident,
    Job,
    Org,
    OutboxMessage,
    PreflightDecision,
)

logger = logging.getLogger("driftgate.retention")

RETENTION = "retention"
BATCH = 5000


def prune(database: Database, settings: Settings, now: datetime) -> dict[str, int]:
    """Delete what is past its retention; how many rows went, by kind."""
    counts: dict[str, int] = {"gateEvents": prune_events(database, now.timestamp())}
    with database.transaction() as session:
        counts["consoleSessions"] = accounts.prune(session, now)
    jobs_cutoff = _cutoff(now, settings.retention_job_days)
    counts["jobs"] = (
        0
        if jobs_cutoff is None
        else _in_batches(
            database, Job, Job.status.in_(("done", "failed")), Job.run_after < jobs_cutoff
        )
    )
    orgs = _orgs(database)
    counts["decisions"] = _per_org(
        database,
        orgs,
        PreflightDecision,
        PreflightDecision.evaluated_at,
        _cutoff(now, settings.retention_decision_days),
    )
    delivery_cutoff = _cutoff(now, settings.retention_delivery_days)
    counts["deliveryAttempts"] = _per_org(
        database, orgs, DeliveryAttempt, DeliveryAttempt.attempted_at, delivery_cutoff
    )
    counts["outbox"] = _per_org(
        database,
        orgs,
        OutboxMessage,
        OutboxMessage.created_at,
        delivery_cutoff,
        OutboxMessage.status.in_(("delivered", "failed", "suppressed")),
    )
    counts["diffRuns"] = _per_org(
        database, orgs, DiffRun, DiffRun.created_at, _cutoff(now, settings.retention_diff_run_days)
    )
    counts["incidents"] = _per_org(
        database,
        orgs,
        Incident,
        Incident.resolved_at,
        _cutoff(now, settings.retention_incident_days),
        Incident.status == "resolved",
    )
    still_open = select(Incident.drift_event_id).where(
        Incident.status != "resolved", Incident.drift_event_id.is_not(None)
    )
    counts["driftEvents"] = _per_org(
        database,
        orgs,
        DriftEvent,
        DriftEvent.detected_at,
        _cutoff(now, settings.retention_drift_event_days),
        DriftEvent.id.not_in(still_open),
    )
    if any(counts.values()):
        log(logger, logging.INFO, "retention.pruned", **counts)
    return counts


def _cutoff(now: datetime, days: float | None) -> datetime | None:
    return None if days is None else now - timedelta(days=days)


def _orgs(database: Database) -> list[str]:
    with database.session() as session:
        return list(session.scalars(select(Org.id)))


def _per_org(
    database: Database,
    orgs: list[str],
    model: Any,
    when: InstrumentedAttribute[Any],
    cutoff: datetime | None,
    *also: ColumnElement[bool],
) -> int:
    """Rows of `model` older than `cutoff` by `when`, org by org (each table's index leads
    with the org)."""
    if cutoff is None:
        return 0
    return sum(
        _in_batches(database, model, model.org_id == org, when < cutoff, *also) for org in orgs
    )


def _in_batches(database: Database, model: Any, *where: ColumnElement[bool]) -> int:
    total = 0
    while True:
        with database.transaction() as session:
            deleted = _delete_batch(session, model, where)
        total += deleted
        if deleted < BATCH:
            return total


def _delete_batch(session: Session, model: Any, where: tuple[ColumnElement[bool], ...]) -> int:
    batch = select(model.id).where(*where).limit(BATCH).scalar_subquery()
    statement: Delete = delete(model).where(model.id.in_(batch))
    result = session.execute(statement)
    return int(getattr(result, "rowcount", 0) or 0)


def enqueue(database: Database, now: datetime) -> None:
    """The routine: this hour's retention job, once across every controller (the job
    table's `(key, period)`)."""
    with database.transaction() as session:
        jobs.enqueue(
            session,
            kind=RETENTION,
            key=RETENTION,
            period=now.strftime("%Y-%m-%dT%H"),
            run_after=now,
        )


def run(database: Database, settings: Settings, job: jobs.Claimed, now: datetime) -> None:
    """The job: prune, and end with the counts (or the error)."""
    try:
        counts = prune(database, settings, now)
    except Exception as exc:  # noqa: BLE001 - a failed round fails its job; the next hour retries
        if database.unavailable(exc) is not None:
            return  # logged by the store; the job's lease runs out and the reaper hands it on
        logger.exception("retention.failed")
        jobs.finish(database, job, now, error=f"{type(exc).__name__}: {exc}"[:500])
        return
    jobs.finish(database, job, now, result=counts)


def job_kinds(
    settings: Settings, database: Database, clock: Callable[[], datetime]
) -> list[jobs.JobKind]:
    return [
        jobs.JobKind(RETENTION, run=lambda job, _prepared: run(database, settings, job, clock()))
    ]


def routines(database: Database) -> list[jobs.Routine]:
    return [jobs.Routine(RETENTION, run=lambda now: enqueue(database, now), every=60)]
