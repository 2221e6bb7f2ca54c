"""The job table: enqueue once per key and period, claim with a lease, finish with a fence.

Any number of controller replicas share the table and coordinate only through it:

- `(key, period)` is unique, so a periodic job (`check:<watch>` in slot 4711) is enqueued once
  however many tickers see it due; partial unique indexes keep at most one queued and one
  running job per key, so a manual check asked for while one waits joins the waiting one.
- `claim` takes due jobs with `FOR UPDATE SKIP LOCKED` (Postgres) or inside `BEGIN IMMEDIATE`
  (SQLite), increments the job's `fence` and sets a lease.
- `finish` only succeeds with the fence of the claim, so a worker whose lease expired and
  whose job was handed to another cannot overwrite the newer result.
- `reap` puts jobs with expired leases back in the queue (bounded attempts).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, exists, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, aliased

from controller.store.db import Database
from controller.store.models import Job

DEFAULT_LEASE = timedelta(seconds=120)
MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class Claimed:
    id: int
    kind: str
    key: str
    period: str
    fence: int
    payload: dict[str, Any]


def enqueue(
    session: Session,
    *,
    kind: str,
    key: str,
    period: str,
    run_after: datetime,
    payload: dict[str, Any] | None = None,
) -> Job | None:
    """Queue a job unless one exists for `(key, period)` or one for `key` is already queued.

    Returns the job that will run: the new one, or the one already queued for the key.
    """
    dialect = sqlite if session.get_bind().dialect.name == "sqlite" else postgresql
    stmt = dialect.insert(Job).values(
        kind=kind,
        key=key,
        period=period,
        status="queued",
        run_after=run_after,
        attempts=0,
        fence=0,
        payload=payload or {},
        created_at=run_after,
    )
    session.execute(stmt.on_conflict_do_nothing())
    return session.scalar(
        select(Job)
        .where(Job.key == key, (Job.period == period) | (Job.status == "queued"))
        .order_by(Job.id.desc())
        .limit(1)
    )


def claim(
    database: Database,
    *,
    worker: str,
    kinds: tuple[str, ...],
    now: datetime,
    limit: int = 1,
    lease: timedelta = DEFAULT_LEASE,
) -> list[Claimed]:
    """Lease up to `limit` due jobs of `kinds` to `worker`."""
    running = aliased(Job)
    with database.claim_transaction() as session:
        stmt = (
            select(Job)
            .where(
                Job.status == "queued",
                Job.kind.in_(kinds),
                Job.run_after <= now,
                ~exists().where(and_(running.key == Job.key, running.status == "running")),
            )
            .order_by(Job.run_after, Job.id)
            .limit(limit)
        )
        if not database.is_sqlite:
            stmt = stmt.with_for_update(skip_locked=True, of=Job)
        jobs = list(session.scalars(stmt))
        claimed = []
        for job in jobs:
            job.status = "running"
            job.fence += 1
            job.attempts += 1
            job.lease_owner = worker
            job.lease_expires_at = now + lease
            job.started_at = now
            claimed.append(
                Claimed(job.id, job.kind, job.key, job.period, job.fence, dict(job.payload))
            )
        return claimed


def extend_all(
    database: Database, worker: str, job_ids: list[int], now: datetime, lease: timedelta
) -> int:
    """Renew the leases `worker` holds on `job_ids` in one statement; return how many."""
    with database.transaction() as session:
        result = session.execute(
            update(Job)
            .where(Job.id.in_(job_ids), Job.lease_owner == worker, Job.status == "running")
            .values(lease_expires_at=now + lease)
        )
        return int(getattr(result, "rowcount", 0) or 0)


def finish(
    database: Database,
    job: Claimed,
    now: datetime,
    *,
    result: dict[str, Any] | None = None,
    error: str | None = None,
) -> bool:
    """Mark the job done (or failed); False when its fence is stale (the lease was lost)."""
    with database.transaction() as session:
        return finish_in(session, job, now, result=result, error=error)


def finish_in(
    session: Session,
    job: Claimed,
    now: datetime,
    *,
    result: dict[str, Any] | None = None,
    error: str | None = None,
) -> bool:
    """`finish` inside the caller's transaction, so a job's effects and its end commit together."""
    outcome = session.execute(
        update(Job)
        .where(Job.id == job.id, Job.fence == job.fence, Job.status == "running")
        .values(
            status="failed" if error else "done",
            finished_at=now,
            result=result,
            last_error=error,
            lease_owner=None,
            lease_expires_at=None,
        )
    )
    return bool(getattr(outcome, "rowcount", 0))


def reap(database: Database, now: datetime, max_attempts: int = MAX_ATTEMPTS) -> int:
    """Requeue running jobs whose lease expired (their worker died); fail them after
    `max_attempts`. Returns how many were touched."""
    queued = aliased(Job)
    with database.claim_transaction() as session:
        stale = list(
            session.scalars(select(Job).where(Job.status == "running", Job.lease_expires_at < now))
        )
        for job in stale:
            waiting = session.scalar(
                select(queued.id).where(queued.key == job.key, queued.status == "queued")
            )
            job.lease_owner = None
            job.lease_expires_at = None
            if job.attempts >= max_attempts or waiting is not None:
                job.status = "failed"
                job.finished_at = now
                job.last_error = "lease expired (worker stopped or crashed)"
            else:
                job.status = "queued"
                job.run_after = now
        return len(stale)


def release(database: Database, job: Claimed, now: datetime) -> bool:
    """Give a claimed job back (graceful shutdown before it ran)."""
    with database.transaction() as session:
        result = session.execute(
            update(Job)
            .where(Job.id == job.id, Job.fence == job.fence, Job.status == "running")
            .values(status="queued", run_after=now, lease_owner=None, lease_expires_at=None)
        )
        return bool(getattr(result, "rowcount", 0))


def wait_for(database: Database, job_id: int, timeout: float, poll: float = 0.1) -> Job | None:
    """Poll until the job is done or failed, or `timeout` seconds passed; return it."""
    deadline = time.monotonic() + timeout
    while True:
        with database.session() as session:
            job = session.get(Job, job_id)
            if job is None or job.status in ("done", "failed") or time.monotonic() >= deadline:
                return job
        time.sleep(poll)
