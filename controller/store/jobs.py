"""The job table: enqueue once per key and period, claim with a lease, finish with a fence.

Any number of controller replicas share the table and coordinate only through it:

- `(key, period)` is unique, so a periodic job (`check:<watch>` in slot 4711) is enqueued once
  however many tickers see it due; partial unique indexes keep at most one queued and one
  running job per key, so a manual check asked for while one waits joins the waiting one.
- `claim` takes due jobs with `FOR UPDATE SKIP LOCKED` (Postgres) or inside `BEGIN IMMEDIATE`
  (SQLite), increments the job's `fence` and sets a lease. It is fair across orgs: a job
  names its org, and no org gets more than its share of the claiming controller's workers
  while another org's work waits within its share; then a job asked for now comes before a
  watch's first check, which comes before a scheduled one (issue 40, point 5).
- `finish` only succeeds with the fence of the claim, so a worker whose lease expired and
  whose job was handed to another cannot overwrite the newer result.
- `reap` puts jobs with expired leases back in the queue (bounded attempts), naming the
  holder whose lease expired in the job's `last_error` until it is claimed again: the claim
  hands it on (`Claimed.previous_holder`), and the controller logs the hand-over.

What a claimed job does is its kind's business: a `JobKinds` registry maps each kind name to
a `JobKind` (how to run one claimed job, and when the controller should claim that kind). The
controller process fills it (`controller.scheduler` registers `check` and `reconcile`), so
this module imports neither engine; a new kind (draft PRs, the weekly e-mail) is one more
`register`. Every kind shares the table's lease, fence and reaping rules above.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Insert,
    Integer,
    Table,
    Update,
    and_,
    bindparam,
    case,
    exists,
    func,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, aliased

from controller import metrics
from controller.registry import Registry
from controller.store.db import Database
from controller.store.models import Job, Watch

# Renewed every third of it while the job runs, so only a dead (or cut-off) controller's
# jobs expire; short, so that their watches are checked again within half a minute.
DEFAULT_LEASE = timedelta(seconds=20)
MAX_ATTEMPTS = 3

# How urgent a job is: a check asked for now (the API's "check now", a reconcile on push),
# a watch's first check, or one of the schedule. Lower is claimed first.
MANUAL = 0
FIRST = 1
SCHEDULED = 2

# The claim and the finish run for every check, so they are built once as Core statements:
# no ORM objects, no statement construction per call. A claim is one UPDATE ... RETURNING
# over the due jobs it picks; Postgres locks the picks FOR UPDATE SKIP LOCKED.
_JOBS = cast(Table, Job.__table__)
_RUNNING = _JOBS.alias("running")
# Work of no org shares one group (a literal, not a parameter: GROUP BY must match it).
_NO_ORG: ColumnElement[str] = literal_column("''")
_ORG = func.coalesce(_JOBS.c.org_id, _NO_ORG)


def _claim_statement(*, skip_locked: bool) -> Update:
    """The fair claim (issue 40, point 5), in one statement that SQLite and Postgres share.

    Each waiting job gets the load its org would have on this controller if it ran: the org's
    jobs running here plus its rank among the org's waiting ones. A job whose load is above
    the org's share (`b_workers` divided among the orgs with work waiting, at least 1) comes
    after every job within its org's share; then the most urgent, the least loaded org, the
    oldest due. So no org goes beyond its share while another waits within its own, and
    workers no one else wants are not left idle. Jobs not asked for now (first checks and
    scheduled ones) stop at `b_background`: the workers a controller keeps are for work asked
    for now, and for the first job of an org with nothing running on it (an org whose
    vendors answer is not kept waiting for another org's slow ones to time out).
    """
    org_rank = func.row_number().over(
        partition_by=_ORG, order_by=(_JOBS.c.priority, _JOBS.c.run_after, _JOBS.c.id)
    )
    waiting = (
        select(
            _JOBS.c.id,
            _ORG.label("org"),
            _JOBS.c.priority,
            _JOBS.c.run_after,
            org_rank.label("rank"),
            func.dense_rank().over(order_by=_ORG).label("org_number"),
        )
        .where(
            _JOBS.c.status == "queued",
            _JOBS.c.kind.in_(bindparam("b_kinds", expanding=True)),
            _JOBS.c.run_after <= bindparam("b_now", type_=_JOBS.c.run_after.type),
            ~exists().where(and_(_RUNNING.c.key == _JOBS.c.key, _RUNNING.c.status == "running")),
        )
        .subquery("waiting")
    )
    mine = _JOBS.alias("mine")
    running_here = (
        select(func.coalesce(mine.c.org_id, _NO_ORG).label("org"), func.count().label("n"))
        .where(mine.c.status == "running", mine.c.lease_owner == bindparam("b_worker"))
        .group_by(func.coalesce(mine.c.org_id, _NO_ORG))
        .subquery("running_here")
    )
    loaded = (
        select(
            waiting.c.id,
            waiting.c.priority,
            waiting.c.run_after,
            (func.coalesce(running_here.c.n, 0) + waiting.c.rank).label("load"),
            func.max(waiting.c.org_number).over().label("orgs"),
        )
        .select_from(waiting.outerjoin(running_here, running_here.c.org == waiting.c.org))
        .subquery("loaded")
    )
    share = bindparam("b_workers", type_=Integer) // loaded.c.orgs
    beyond = case((loaded.c.load > case((share < 1, 1), else_=share), 1), else_=0)
    order = (beyond, loaded.c.priority, loaded.c.load, loaded.c.run_after, loaded.c.id)
    background_before = func.sum(case((loaded.c.priority > MANUAL, 1), else_=0)).over(
        order_by=order, rows=(None, 0)
    )
    ordered = select(
        loaded.c.id,
        loaded.c.priority,
        loaded.c.load,
        func.row_number().over(order_by=order).label("position"),
        background_before.label("background"),
    ).subquery("ordered")
    # More picks than asked for: on Postgres another controller may hold some of them.
    picks = (
        select(ordered.c.id, ordered.c.position)
        .where(
            or_(
                ordered.c.priority <= MANUAL,
                ordered.c.load == 1,
                ordered.c.background <= bindparam("b_background", type_=Integer),
            )
        )
        .order_by(ordered.c.position)
        .limit(bindparam("b_scan"))
        .subquery("picks")
    )
    chosen = (
        select(_JOBS.c.id)
        .select_from(_JOBS.join(picks, picks.c.id == _JOBS.c.id))
        .where(_JOBS.c.status == "queued")
        .order_by(picks.c.position)
        .limit(bindparam("b_limit"))
    )
    if skip_locked:
        chosen = chosen.with_for_update(skip_locked=True, of=_JOBS)
    return (
        _JOBS.update()
        .where(_JOBS.c.id.in_(chosen.scalar_subquery()))
        .values(
            status="running",
            fence=_JOBS.c.fence + 1,
            attempts=_JOBS.c.attempts + 1,
            lease_owner=bindparam("b_worker"),
            lease_expires_at=bindparam("b_expires", type_=_JOBS.c.lease_expires_at.type),
            started_at=bindparam("b_now", type_=_JOBS.c.started_at.type),
        )
        .returning(
            _JOBS.c.id,
            _JOBS.c.kind,
            _JOBS.c.key,
            _JOBS.c.period,
            _JOBS.c.fence,
            _JOBS.c.payload,
            _JOBS.c.run_after,
            _JOBS.c.priority,
            _JOBS.c.org_id,
            _JOBS.c.last_error,
        )
    )


_CLAIM = {True: _claim_statement(skip_locked=True), False: _claim_statement(skip_locked=False)}
# Is any job of these kinds due now? (The controller's queue watch; uses `ix_jobs_claim`.)
_DUE = (
    select(_JOBS.c.id)
    .where(
        _JOBS.c.status == "queued",
        _JOBS.c.run_after <= bindparam("b_now"),
        _JOBS.c.kind.in_(bindparam("b_kinds", expanding=True)),
        _JOBS.c.priority <= bindparam("b_priority"),
    )
    .limit(1)
)
_FINISH = (
    _JOBS.update()
    .where(
        _JOBS.c.id == bindparam("b_id"),
        _JOBS.c.fence == bindparam("b_fence"),
        _JOBS.c.status == "running",
    )
    .values(
        status=bindparam("b_status"),
        finished_at=bindparam("b_now", type_=_JOBS.c.finished_at.type),
        result=bindparam("b_result", type_=_JOBS.c.result.type),
        last_error=bindparam("b_error"),
        lease_owner=None,
        lease_expires_at=None,
    )
)


@dataclass(frozen=True)
class Claimed:
    id: int
    kind: str
    key: str
    period: str
    fence: int
    payload: dict[str, Any]
    priority: int = SCHEDULED
    org_id: str | None = None
    # The controller whose lease on this job expired before this claim (`reap`), if any.
    previous_holder: str | None = None


# A requeued job's `last_error` while it waits: whose lease expired.
_EXPIRED_LEASE = "lease expired; held by "


def _previous_holder(last_error: str | None) -> str | None:
    if last_error is None or not last_error.startswith(_EXPIRED_LEASE):
        return None
    return last_error.removeprefix(_EXPIRED_LEASE)


def insert_ignoring_duplicates(database: Database) -> Insert:
    """An INSERT of job rows that skips any row a unique index refuses (its `(key, period)`
    already queued or run, or its key already queued): for `session.execute(stmt, rows)`."""
    if database.is_sqlite:
        return sqlite.insert(Job).on_conflict_do_nothing()
    return postgresql.insert(Job).on_conflict_do_nothing()


def enqueue(
    session: Session,
    *,
    kind: str,
    key: str,
    period: str,
    run_after: datetime,
    payload: dict[str, Any] | None = None,
    org_id: str | None = None,
    priority: int = SCHEDULED,
) -> Job | None:
    """Queue a job unless one exists for `(key, period)` or one for `key` is already queued.

    Returns the job that will run: the new one, or the one already queued for the key.
    `org_id` is the org the job works for (its share of the workers), `priority` how urgent
    it is (`MANUAL`, `FIRST`, `SCHEDULED`).
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
        org_id=org_id,
        priority=priority,
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
    workers: int | None = None,
    background: int | None = None,
) -> list[Claimed]:
    """Lease up to `limit` due jobs of `kinds` to `worker`: each org within its share of the
    controller's `workers` (default `limit`) first, then the most urgent, the oldest due;
    at most `background` (default `limit`) of them not asked for now, besides the first of an
    org with nothing running on `worker`."""
    with database.claim_transaction() as session:
        rows = session.connection().execute(
            _CLAIM[not database.is_sqlite],
            {
                "b_kinds": list(kinds),
                "b_now": now,
                "b_limit": limit,
                "b_scan": limit * 4,
                "b_workers": max(1, workers if workers is not None else limit),
                "b_background": limit if background is None else background,
                "b_worker": worker,
                "b_expires": now + lease,
            },
        )
        picked = sorted(rows, key=lambda row: (row.priority, row.run_after, row.id))
        metrics.jobs_claimed([row.kind for row in picked])
        return [
            Claimed(
                row.id,
                row.kind,
                row.key,
                row.period,
                row.fence,
                dict(row.payload),
                row.priority,
                row.org_id,
                _previous_holder(row.last_error),
            )
            for row in picked
        ]


def due(
    database: Database, kinds: tuple[str, ...], now: datetime, priority: int = SCHEDULED
) -> bool:
    """Whether a job of `kinds`, at least as urgent as `priority`, is queued and due at `now`
    (one indexed read, no lock)."""
    if not kinds:
        return False
    with database.session() as session:
        found = session.connection().execute(
            _DUE, {"b_kinds": list(kinds), "b_now": now, "b_priority": priority}
        )
        return found.first() is not None


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
    outcome = session.connection().execute(
        _FINISH,
        {
            "b_id": job.id,
            "b_fence": job.fence,
            "b_status": "failed" if error else "done",
            "b_now": now,
            "b_result": result,
            "b_error": error,
        },
    )
    return bool(outcome.rowcount)


def reap(database: Database, now: datetime, max_attempts: int = MAX_ATTEMPTS) -> int:
    """Give back running jobs whose lease expired (their worker died or was cut off): requeued
    to run now, or, when a newer job of the same key already waits, ended as failed with
    that one brought forward to now, so the subject is handled again at once either way.
    After `max_attempts` a job fails. Returns how many were touched."""
    queued = aliased(Job)
    with database.claim_transaction() as session:
        stale = list(
            session.scalars(select(Job).where(Job.status == "running", Job.lease_expires_at < now))
        )
        for job in stale:
            waiting = session.scalar(
                select(queued).where(queued.key == job.key, queued.status == "queued")
            )
            holder, job.lease_owner, job.lease_expires_at = job.lease_owner, None, None
            if job.attempts >= max_attempts or waiting is not None:
                job.status = "failed"
                job.finished_at = now
                job.last_error = "lease expired (worker stopped or crashed)"
                if waiting is not None and job.attempts < max_attempts:
                    waiting.run_after = min(waiting.run_after, now)
            else:
                job.status = "queued"
                job.run_after = now
                job.last_error = f"{_EXPIRED_LEASE}{holder}"
        metrics.jobs_reaped([job.kind for job in stale])
        return len(stale)


def release(database: Database, job: Claimed, now: datetime) -> bool:
    """Give a claimed job back (graceful shutdown before it ran)."""
    with database.transaction() as session:
        result = session.execute(
            update(Job)
            .where(Job.id == job.id, Job.fence == job.fence, Job.status == "running")
            .values(
                status="queued",
                run_after=now,
                lease_owner=None,
                lease_expires_at=None,
                last_error=None,  # given back, not handed over: no holder to name next time
            )
        )
        return bool(getattr(result, "rowcount", 0))


def wait_for(database: Database, job_id: int, timeout: float, poll: float = 0.1) -> Job | None:
    """Poll until the job is done or failed, or `timeout` seconds passed; return it. Polls
    every 10 ms at first, slowing to every `poll` seconds, so a quick job's answer is not held
    back while a long wait costs few reads."""
    deadline = time.monotonic() + timeout
    pause = min(0.01, poll)
    while True:
        with database.session() as session:
            job = session.get(Job, job_id)
            if job is None or job.status in ("done", "failed") or time.monotonic() >= deadline:
                return job
        time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
        pause = min(poll, pause * 1.5)


@dataclass(frozen=True)
class JobKind:
    """One kind of job: its name in the table, how the controller runs a claimed one, and
    when it should claim that kind at all.

    `run(job, prepared)` runs one claimed job and ends it (`finish`/`finish_in`) itself,
    failing it rather than raising. `prepare(jobs)`, when given, reads what a batch of
    claimed jobs of this kind needs in one go; its answer is passed to `run` of each.
    `is_claimed()` says whether this process claims the kind now (a reconcile only with
    sources configured); jobs of kinds no one claims stay queued.
    """

    name: str
    run: Callable[[Claimed, Any], None]
    prepare: Callable[[Sequence[Claimed]], Any] | None = None
    is_claimed: Callable[[], bool] = lambda: True


class JobKinds(Registry[JobKind]):
    """The registry of job kinds one controller process runs, looked up by `Claimed.kind`."""

    what = "job kind"

    def claimed(self) -> tuple[str, ...]:
        """The names of the kinds to claim now, in registration order."""
        return tuple(kind.name for kind in self if kind.is_claimed())


@dataclass(frozen=True)
class Routine:
    """Work the controller does on its clock rather than from the job table: each tick
    (`every` None) or every `every` seconds, while `is_enabled()`. `run(now)` may raise: the
    controller logs it as `controller.routine_failed` and the next routines still run.

    Routines enqueue jobs (due checks, due sources), keep the table healthy (reaping crashed
    workers' jobs, pruning), or drain a queue of their own with its own leases and retries
    (the outbox's deliveries); a periodic report such as a weekly e-mail is one more."""

    name: str
    run: Callable[[datetime], object]
    every: float | None = None
    is_enabled: Callable[[], bool] = lambda: True


class Routines(Registry[Routine]):
    """The routines one controller process runs, in registration order."""

    what = "routine"

    def each_tick(self) -> tuple[Routine, ...]:
        return tuple(routine for routine in self if routine.every is None)

    def periodic(self) -> tuple[Routine, ...]:
        return tuple(routine for routine in self if routine.every is not None)


# Work the API asks for now: a check of one watch, a reconcile of one source. The controller
# process claims these like the scheduled ones; the web process only writes the row.

CHECK = "check"
RECONCILE = "reconcile"


def request_reconcile(session: Session, name: str, now: datetime, reason: str) -> int:
    """Queue a reconcile of one source now (API, push webhook); joins one already queued."""
    payload = {"source": name, "force": False, "reason": reason}
    return _request_now(session, RECONCILE, name, now, payload)


def request_check(database: Database, watch_id: str, now: datetime) -> int:
    """Queue a check now (API); joins an already queued check of the same watch, which then
    runs now and ahead of the schedule."""
    with database.transaction() as session:
        org_id = session.scalar(select(Watch.org_id).where(Watch.id == watch_id))
        payload = {"watchId": watch_id, "manual": True}
        return _request_now(session, CHECK, watch_id, now, payload, org_id)


def _request_now(
    session: Session,
    kind: str,
    subject: str,
    now: datetime,
    payload: dict[str, Any],
    org_id: str | None = None,
) -> int:
    # A period of its own per request, so it never collides with the scheduled slot; the
    # partial unique index on queued jobs makes it join one already queued for the subject.
    # On Postgres a controller may claim that queued job between the insert that yielded to it
    # and the read that looks for it: the request then finds neither, and inserts again (the
    # key has no queued job any more). A third miss in a row is a store that misbehaves.
    for _ in range(3):
        job = enqueue(
            session,
            kind=kind,
            key=f"{kind}:{subject}",
            period=f"manual:{now.timestamp():.6f}",
            run_after=now,
            payload=payload,
            org_id=org_id,
            priority=MANUAL,
        )
        if job is not None:
            # A scheduled job it joined is now asked for: claimed first, and not after its
            # slot's start (a tick queues checks a few seconds ahead).
            job.priority = MANUAL
            job.run_after = min(job.run_after, now)
            return job.id
    raise RuntimeError(f"no {kind} job could be queued for {subject}")
