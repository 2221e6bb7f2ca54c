"""The controller process: an APScheduler ticker that enqueues due work, and workers that run it.

The ticker (APScheduler 3.x, in memory, never a shared job store) runs every few seconds
(between ticks, a queue watch starts work asked for now as soon as a worker is free):
it enqueues a `check:<watch>` job for every watch whose next check is due, requeues jobs of
crashed workers, and delivers due outbox messages. Worker threads claim jobs from the job
table (see `controller.store.jobs`) with bounded concurrency and run each by its kind: the
controller registers `check` and `reconcile` in its `JobKinds` registry, and a new kind is
one more entry there, not a new branch here; what it does on its clock (reap, enqueue due
sources and checks, deliver the outbox, the hourly prune) is its `Routines` registry. Each
watch is checked once per interval in a slot offset by a deterministic jitter (a hash of its
id), which spreads watches evenly over their interval and makes every replica agree on the
slot.
SIGTERM stops the ticker, lets running checks finish within a grace period, and gives
claimed-but-unstarted jobs back.

A database outage stops nothing for good: every round that meets it ends quietly (the store
logs one line when the outage starts and one when it ends, `controller.store.outage`) and the
next round tries again. A check that could not record its outcome is not ended either: its
lease runs out and the reaper hands it on once the store answers, so each watch gets one
check after the outage, not one per missed round.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy import Table, and_, bindparam, func, literal, or_, select
from sqlalchemy.orm import Session

from controller import metrics
from controller.checks import heartbeats_service as heartbeats
from controller.checks.engine import (
    CheckInput,
    CheckResult,
    Fetcher,
    contract_fetcher,
    read_checks,
    run_check,
    slow_vendor_deadline,
)
from controller.crypto import SecretBox
from controller.destinations.service import channels as destination_channels
from controller.draftpr import service as draftpr
from controller.events.channels import delivering
from controller.events.workers import DeliveryWorkers
from controller.logs import log
from controller.model.watch import DriftStatus
from controller.retention import service as retention
from controller.settings import Settings
from controller.sources.http import configured_client
from controller.store import jobs
from controller.store.db import Database
from controller.store.jobs import CHECK, RECONCILE
from controller.store.lockfile import ControllerLock, acquire_controller_lock
from controller.store.models import Job, Watch
from controller.summary import service as summary
from controller.waivers import service as waivers

logger = logging.getLogger("driftgate.controller")
TICK_SECONDS = 5
KEPT_WORKERS = 1
MIN_WORKERS_TO_KEEP = 4
DUE_BATCH = 5000
# The key of the advisory lock that makes one controller at a time enqueue due checks.
_ENQUEUE_LOCK = 0x647269667467  # "driftg"
_WATCHES = cast(Table, Watch.__table__)
_MOVE_NEXT_CHECK = (
    _WATCHES.update()
    .where(_WATCHES.c.id == bindparam("b_id"))
    .values(next_check_at=bindparam("b_next", type_=_WATCHES.c.next_check_at.type))
)


def utcnow() -> datetime:
    return datetime.now(UTC)


def jitter_seconds(watch_id: str, interval_minutes: int) -> int:
    """A stable offset within the interval, so watches do not all fire at once."""
    digest = int(hashlib.sha256(watch_id.encode()).hexdigest()[:12], 16)
    return digest % (interval_minutes * 60)


def slot(watch_id: str, interval_minutes: int, now: datetime) -> tuple[int, datetime]:
    """The current slot index of a watch and when its next slot starts."""
    return slot_of(watch_id, interval_minutes * 60, now)


def slot_of(key: str, length: int, now: datetime) -> tuple[int, datetime]:
    """The current slot of `key` for a period of `length` seconds, offset by a stable jitter."""
    offset = int(hashlib.sha256(key.encode()).hexdigest()[:12], 16) % length
    index = (int(now.timestamp()) - offset) // length
    next_start = datetime.fromtimestamp(offset + (index + 1) * length, UTC)
    return index, next_start


def enqueue_due_checks(
    database: Database, now: datetime, limit: int = DUE_BATCH, ahead: float = 0.0
) -> int:
    """Queue a check for every watch due by `now + ahead` (once per slot, whichever replica
    gets there); return how many were queued.

    One controller at a time does it (on Postgres, whoever takes a transaction-scoped
    advisory lock; the others skip the round instead of redoing the same work and waiting on
    the same rows). Due watches come oldest-due first; a new watch is due from its creation,
    so it is never sorted behind the schedule. A watch due later within `ahead` is queued
    to run at its slot's start (the claim waits for it); one that is overdue (a controller
    was down) is queued once, for the slot it is in now, never once per missed slot; and
    not at all while a check of it waits, or runs since the slot's start (a job the reaper
    handed on after an outage, say): that check is this slot's, and the watch only moves on
    to its next slot. The statements are batches: one read, one insert of every job, one
    update of every watch's next slot.
    """
    horizon = now + timedelta(seconds=ahead)
    with database.transaction() as session:
        if not database.is_sqlite and not session.scalar(
            select(func.pg_try_advisory_xact_lock(_ENQUEUE_LOCK))
        ):
            return 0
        # A watch whose check waits, or runs since its slot began, has this slot's check.
        # Asked here rather than left to the unique index on queued jobs: a claim committing
        # meanwhile (the queue watch taking a job the reaper just handed on) would let a second
        # job for the slot through that index.
        covered = (
            select(Job.id)
            .where(
                Job.key == literal(f"{CHECK}:") + Watch.id,
                or_(
                    Job.status == "queued",
                    and_(Job.status == "running", Job.started_at >= Watch.next_check_at),
                ),
            )
            .exists()
        )
        due = session.execute(
            select(
                Watch.id,
                Watch.org_id,
                Watch.interval_minutes,
                Watch.next_check_at,
                Watch.last_checked_at.is_(None),
                covered,
            )
            .where(
                Watch.drift_status != DriftStatus.DISABLED.value,
                or_(Watch.next_check_at.is_(None), Watch.next_check_at <= horizon),
            )
            .order_by(Watch.next_check_at.asc().nulls_first(), Watch.id)
            .limit(limit)
        ).all()
        if not due:
            return 0
        queued: list[dict[str, Any]] = []
        moved: list[dict[str, Any]] = []
        for watch_id, org_id, interval, next_check_at, is_first, is_covered in due:
            at = now if next_check_at is None or next_check_at <= now else next_check_at
            index, next_start = slot(watch_id, interval, at)
            moved.append({"b_id": watch_id, "b_next": next_start})
            if is_covered:
                continue
            queued.append(
                {
                    "kind": CHECK,
                    "key": f"{CHECK}:{watch_id}",
                    "period": f"{interval}m:{index}",
                    "status": "queued",
                    "run_after": at,
                    "attempts": 0,
                    "fence": 0,
                    "payload": {"watchId": watch_id},
                    "org_id": org_id,
                    "priority": jobs.FIRST if is_first else jobs.SCHEDULED,
                    "created_at": now,
                }
            )
        if queued:
            session.execute(jobs.insert_ignoring_duplicates(database), queued)
        session.connection().execute(_MOVE_NEXT_CHECK, moved)
        return len(due)


def enqueue_due_sources(database: Database, settings: Settings, now: datetime) -> int:
    """Queue a reconcile of every source once per interval (jittered per source)."""
    queued = 0
    with database.transaction() as session:
        for source in settings.sources:
            if source.suspend:
                continue
            index, _ = slot_of(source.name, source.interval, now)
            job = jobs.enqueue(
                session,
                kind=RECONCILE,
                key=f"{RECONCILE}:{source.name}",
                period=f"{source.interval}s:{index}",
                run_after=now,
                payload={"source": source.name},
            )
            queued += job is not None
    return queued


def ensure_controller_can_start(database_url: str) -> None:
    """Raise `Conflict` now if another controller holds this SQLite file (see
    `controller/store/lockfile.py`), so an all-in-one start refuses before it serves."""
    lock = acquire_controller_lock(database_url)
    if lock is not None:
        lock.release()


class FencedOut(Exception):
    """This controller's lease on a job was lost; its result must not be written."""


class Controller:
    """Ticker plus workers for one process; several may run against one Postgres."""

    def __init__(
        self,
        settings: Settings,
        database: Database,
        box: SecretBox,
        *,
        concurrency: int = 8,
        tick_seconds: float = TICK_SECONDS,
        fetcher: Fetcher | None = None,
        clock: Callable[[], datetime] = utcnow,
        lease: timedelta = jobs.DEFAULT_LEASE,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self.env: Mapping[str, str] = env or {}
        self.reconciler: Any = None
        self.database = database
        self.box = box
        self.concurrency = concurrency
        # Workers that first checks and scheduled ones do not take, unless their org has
        # nothing running here: a "check now", and an org whose vendors answer, start at once
        # however slow another org's vendors are (issue 40, point 5).
        self.kept = KEPT_WORKERS if concurrency >= MIN_WORKERS_TO_KEEP else 0
        self.slow_deadline = slow_vendor_deadline(settings.fetch_deadline_seconds)
        self.tick_seconds = tick_seconds
        self.clock = clock
        self.lease = lease
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self.client = configured_client(settings)
        self.fetcher = fetcher or contract_fetcher(settings, self.client)
        self.pool = ThreadPoolExecutor(
            max_workers=concurrency, thread_name_prefix="driftgate-check"
        )
        self.running: dict[Future[Any], jobs.Claimed] = {}
        self.lock = threading.Lock()
        self.claiming = threading.Lock()
        self.stopping = threading.Event()
        # Routines running now (ticks and periodic ones): `stop` waits for them to end.
        self.rounds = 0
        self.rounds_done = threading.Condition()
        self.scheduler = BackgroundScheduler(timezone=UTC)
        self.heartbeat = threading.Thread(
            target=self._keep_leases, name="driftgate-lease", daemon=True
        )
        self.queue_watch = threading.Thread(
            target=self._watch_queue, name="driftgate-queue", daemon=True
        )
        self.ownership: ControllerLock | None = None
        self.kinds = jobs.JobKinds(
            [
                jobs.JobKind(CHECK, run=self.execute_check, prepare=self.prepare_checks),
                jobs.JobKind(
                    RECONCILE,
                    run=self.execute_reconcile,
                    is_claimed=lambda: bool(self.settings.sources),
                ),
                *draftpr.job_kinds(settings, database, box, self.client),
                *summary.job_kinds(settings, database, box, self.clock),
                *retention.job_kinds(settings, database, self.clock),
            ]
        )
        # Where the outbox goes: webhooks, Slack, on-call tools (`controller.destinations`) and
        # e-mail through each org's relay, sent
        # by a lane of its own (never in the tick, never on the checks' workers or client).
        self.channels = delivering(
            [
                *summary.channels(settings, database, box),
                *destination_channels(settings, database, box),
                *waivers.channels(settings, database, box),
            ],
            settings.delivery_deadline_seconds,
        )
        self.deliveries = DeliveryWorkers(
            database,
            box,
            configured_client(settings),
            self.channels,
            self.clock,
            concurrency=settings.delivery_concurrency,
            group_seconds=settings.delivery_group_seconds,
        )
        # What the controller does on its clock, in this order each tick; the hourly prune.
        # The heartbeat comes first: a round stuck further on stops it (issue 40, point 4).
        self.started_at = clock()
        self.routines = jobs.Routines(
            [
                jobs.Routine(
                    "heartbeat",
                    run=lambda now: heartbeats.beat(
                        self.database, self.worker, self.started_at, self.tick_seconds, now
                    ),
                ),
                jobs.Routine("reap", run=lambda now: jobs.reap(self.database, now)),
                jobs.Routine(
                    "enqueue_sources",
                    run=lambda now: enqueue_due_sources(self.database, self.settings, now),
                    is_enabled=lambda: bool(self.settings.sources),
                ),
                jobs.Routine(
                    "enqueue_checks",
                    run=lambda now: enqueue_due_checks(self.database, now, ahead=self.tick_seconds),
                ),
                *retention.routines(database),
                *summary.routines(database),
                *waivers.routines(settings, database, box),
            ]
        )

    # One round of everything; the ticker calls it, tests and benchmarks may call it directly.
    def tick(self) -> None:
        with self._round() as going:
            if going:
                now = self.clock()
                for routine in self.routines.each_tick():
                    self.run_routine(routine, now)
                if not self.stopping.is_set():
                    self._dispatch_quietly()

    def run_routine(self, routine: jobs.Routine, now: datetime | None = None) -> None:
        """Run one routine if it is enabled and the controller is not stopping; a failure is
        logged and does not stop the next."""
        with self._round() as going:
            if not going or not routine.is_enabled():
                return
            try:
                routine.run(now or self.clock())
            except Exception as exc:  # noqa: BLE001 - the ticker must survive a bad round
                self._failed(exc, "controller.routine_failed", routine=routine.name)

    def _failed(self, error: Exception, event: str, **fields: Any) -> bool:
        """Log a failed round with its trace, unless the store is unavailable: that is one
        line per outage, logged by the store. True when it was the store."""
        if self.database.unavailable(error) is not None:
            return True
        logger.error(event, exc_info=error, extra={"fields": fields})
        return False

    def _dispatch_quietly(self, *, batch: bool = False) -> None:
        try:
            self.dispatch(batch=batch)
        except Exception as exc:  # noqa: BLE001 - the next round claims again
            self._failed(exc, "controller.dispatch_failed")

    @contextmanager
    def _round(self) -> Iterator[bool]:
        """Count a round of routines while it runs (`stop` waits for them); False when the
        controller is stopping and the round should not start."""
        with self.rounds_done:
            if self.stopping.is_set():
                going = False
            else:
                going = True
                self.rounds += 1
        try:
            yield going
        finally:
            if going:
                with self.rounds_done:
                    self.rounds -= 1
                    self.rounds_done.notify_all()

    def _room(self) -> tuple[int, int]:
        """Free workers, and how many of them jobs not asked for now may take (the rest are
        kept for checks asked for now)."""
        with self.lock:
            self.running = {f: j for f, j in self.running.items() if not f.done()}
            free = self.concurrency - len(self.running)
            background = sum(1 for job in self.running.values() if job.priority > jobs.MANUAL)
        return free, max(0, min(free, self.concurrency - self.kept - background))

    def dispatch(self, *, batch: bool = False) -> int:
        """Claim as many jobs as there are free workers and start them; with `batch` (after a
        job ended), only once a few workers are free."""
        if self.stopping.is_set():
            return 0
        # One claim at a time (the tick, the queue watch and ending jobs all dispatch): two at
        # once would both count the same free workers and claim more jobs than there are.
        with self.claiming:
            return self._dispatch(batch)

    def _dispatch(self, batch: bool) -> int:
        free, background = self._room()
        # After a job ends, claim in batches: one claim transaction per few finished checks,
        # not per check. The queue watch claims for a single free worker (work asked for now).
        if free <= 0 or (batch and free < max(1, self.concurrency // 4) and self.running):
            return 0
        claimed = jobs.claim(
            self.database,
            worker=self.worker,
            kinds=self.kinds.claimed(),
            now=self.clock(),
            limit=free,
            lease=self.lease,
            workers=self.concurrency,
            background=background,
        )
        prepared = self.prepare(claimed)
        for job in claimed:
            try:
                future = self.pool.submit(self.execute, job, prepared.get(job.kind))
            except RuntimeError:  # `stop` shut the pool between the claim and here
                jobs.release(self.database, job, self.clock())
                continue
            with self.lock:
                self.running[future] = job
        return len(claimed)

    def prepare(self, claimed: Sequence[jobs.Claimed]) -> dict[str, Any]:
        """What each kind reads for its claimed batch in one go, by kind name."""
        prepared: dict[str, Any] = {}
        for kind in self.kinds:
            batch = [job for job in claimed if job.kind == kind.name]
            if batch and kind.prepare is not None:
                prepared[kind.name] = kind.prepare(batch)
        return prepared

    def execute(self, job: jobs.Claimed, prepared: Any = None) -> None:
        """Run one claimed job by its kind (give it back when stopping)."""
        if self.stopping.is_set():
            jobs.release(self.database, job, self.clock())
            return
        if job.previous_holder is not None:
            log(
                logger,
                logging.INFO,
                "job.handed_over",
                job=job.id,
                kind=job.kind,
                key=job.key,
                previousHolder=job.previous_holder,
                controller=self.worker,
            )
        kind = self.kinds.get(job.kind)
        if kind is None:
            # Only registered kinds are claimed; a job of another kind cannot get here.
            jobs.finish(self.database, job, self.clock(), error=f"unknown job kind {job.kind!r}")
            return
        kind.run(job, prepared)

    def prepare_checks(self, claimed: Sequence[jobs.Claimed]) -> dict[str, CheckInput]:
        """The inputs of a claimed batch of checks, read in one query."""
        return read_checks(self.database, [_watch_id(job) for job in claimed], self.box)

    def execute_check(self, job: jobs.Claimed, prepared: dict[str, CheckInput] | None) -> None:
        """Run one watch's check; the job ends in the transaction that records it."""
        watch_id = _watch_id(job)

        def finish_with_check(session: Session, result: CheckResult) -> None:
            # The job ends in the transaction that records the check: both or neither. A
            # worker whose lease was taken over writes nothing.
            if not jobs.finish_in(session, job, self.clock(), result=result.as_dict()):
                raise FencedOut(job.id)

        try:
            result = run_check(
                self.database,
                watch_id,
                box=self.box,
                fetcher=self.fetcher,
                now=self.clock(),
                on_commit=finish_with_check,
                prepared=prepared,
                flap_window_seconds=self.settings.flap_window_seconds,
                # A check asked for now gets the whole deadline, whatever the vendor did.
                slow_deadline=None if job.priority == jobs.MANUAL else self.slow_deadline,
                controller=self.worker,
            )
        except FencedOut:
            log(logger, logging.WARNING, "check.fenced_out", watchId=watch_id, job=job.id)
            return
        except Exception as exc:  # noqa: BLE001 - a crashed check fails its job, not the worker
            # `run_check` records every failure of the check itself on the watch; what gets
            # here could not be recorded at all. When the store is unavailable the job stays
            # as it is: its lease runs out and the reaper hands it on once the store answers.
            if not self._failed(exc, "check.unrecorded", watchId=watch_id):
                self._finish_quietly(job, error=f"{type(exc).__name__}: {exc}"[:500])
            return
        if result.outcome in ("changed", "error"):
            self.deliveries.wake()  # it may have queued events
        log(
            logger,
            logging.DEBUG,
            "check.complete",
            watchId=watch_id,
            outcome=result.outcome,
            status=result.status,
            failureClass=result.failure_class,
        )
        if not self.stopping.is_set():
            self._dispatch_quietly(batch=True)

    def execute_reconcile(self, job: jobs.Claimed, prepared: Any = None) -> None:
        """Run one source's reconcile; its own transaction applies it, the job ends after."""
        from controller.gitsources.reconcile import Reconciler

        name = str(job.payload.get("source", job.key.split(":", 1)[-1]))
        spec = self.settings.source(name)
        try:
            if spec is None:
                result: dict[str, Any] = {"result": "skipped", "message": "unknown source"}
            else:
                if self.reconciler is None:
                    self.reconciler = Reconciler(
                        self.settings, self.database, self.box, env=self.env, controller=self.worker
                    )
                result = self.reconciler.reconcile(spec).as_dict()
                result.pop("plan", None)
                result["problems"] = result["problems"][:20]
        except Exception as exc:  # noqa: BLE001 - a crashed reconcile fails its job only
            metrics.reconcile_crashed(name)
            if not self._failed(exc, "reconcile.crashed", source=name):
                self._finish_quietly(job, error=f"{type(exc).__name__}: {exc}"[:500])
            return
        self._finish_quietly(job, result=result)
        if not self.stopping.is_set():
            self._dispatch_quietly(batch=True)

    def _finish_quietly(
        self, job: jobs.Claimed, *, result: dict[str, Any] | None = None, error: str | None = None
    ) -> None:
        """End a job; when the store cannot, its lease runs out and the reaper hands it on."""
        try:
            jobs.finish(self.database, job, self.clock(), result=result, error=error)
        except Exception as exc:  # noqa: BLE001 - the reaper ends what this could not
            self._failed(exc, "job.finish_failed", job=job.id)

    def _keep_leases(self) -> None:
        """One thread renews the leases of every check this controller runs, every third of
        the lease, so only a dead controller's checks expire."""
        interval = max(0.2, self.lease.total_seconds() / 3)
        while not self.stopping.wait(interval):
            with self.lock:
                running = [job for future, job in self.running.items() if not future.done()]
            if running:
                try:
                    jobs.extend_all(
                        self.database,
                        self.worker,
                        [j.id for j in running],
                        self.clock(),
                        self.lease,
                    )
                except Exception as exc:  # noqa: BLE001 - the next round tries again
                    self._failed(exc, "controller.heartbeat_failed")

    def _watch_queue(self) -> None:
        """Between ticks, start work that is due now (a check asked for through the API) as
        soon as a worker is free: one indexed read every `queue_poll_seconds`, a claim only
        when it finds something."""
        interval = self.settings.queue_poll_seconds
        while not self.stopping.wait(interval):
            free, background = self._room()
            if free <= 0:
                continue
            # With only the kept workers free, only work asked for now is worth a claim.
            urgent = jobs.SCHEDULED if background else jobs.MANUAL
            try:
                if jobs.due(self.database, self.kinds.claimed(), self.clock(), urgent):
                    self.dispatch()
            except Exception as exc:  # noqa: BLE001 - the next look tries again
                self._failed(exc, "controller.queue_watch_failed")

    def run_until_done(self, timeout: float = 30.0) -> None:
        """Run rounds until no job is due or running (tests and benchmarks)."""
        deadline = self.clock() + timedelta(seconds=timeout)
        while self.clock() < deadline:
            self.tick()
            with self.lock:
                pending = [f for f in self.running if not f.done()]
            for future in pending:
                future.result()
            delivered = self.deliveries.drain()
            if not pending and self.dispatch() == 0 and not delivered:
                return

    def start(self) -> None:
        # One controller per SQLite file (controller/store/lockfile.py); raises if taken.
        self.ownership = acquire_controller_lock(self.database.url)
        self.heartbeat.start()
        self.queue_watch.start()
        self.deliveries.start()
        self.scheduler.add_job(
            self.tick,
            "interval",
            seconds=self.tick_seconds,
            id="tick",
            max_instances=1,
            coalesce=True,
            next_run_time=self.clock(),
        )
        for routine in self.routines.periodic():
            assert routine.every is not None
            self.scheduler.add_job(
                self.run_routine,
                "interval",
                args=(routine,),
                seconds=routine.every,
                id=routine.name,
                max_instances=1,
                coalesce=True,
                next_run_time=self.clock(),
            )
        self.scheduler.start()
        log(
            logger,
            logging.INFO,
            "controller.started",
            worker=self.worker,
            concurrency=self.concurrency,
        )

    def stop(self, grace: float = 30.0) -> None:
        """Stop ticking; let running checks finish within `grace` seconds and give back the
        jobs that had not started (a check cut off later is requeued by the reaper)."""
        self.stopping.set()
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        with self.lock:
            pending = dict(self.running)
        for future, job in pending.items():
            if future.cancel():
                try:
                    jobs.release(self.database, job, self.clock())
                except Exception as exc:  # noqa: BLE001 - its lease runs out instead
                    self._failed(exc, "job.release_failed", job=job.id)
        deadline = time.monotonic() + grace
        wait(list(pending), timeout=grace)
        # A routine in progress (a delivery round, say) ends before the controller has stopped:
        # nothing of it touches the store after `stop` returns.
        with self.rounds_done:
            self.rounds_done.wait_for(
                lambda: self.rounds == 0, timeout=max(0.0, deadline - time.monotonic())
            )
        self.pool.shutdown(wait=False, cancel_futures=True)
        for thread in (self.heartbeat, self.queue_watch):
            if thread.is_alive():
                thread.join(timeout=5)
        self.deliveries.stop(grace=max(0.0, deadline - time.monotonic()))
        self.client.close()
        self.deliveries.client.close()
        try:
            heartbeats.forget(self.database, self.worker, self.clock())
        except Exception as exc:  # noqa: BLE001 - its row goes stale instead
            self._failed(exc, "controller.heartbeat_failed")
        if self.ownership is not None:
            self.ownership.release()
        log(logger, logging.INFO, "controller.stopped", worker=self.worker)


def _watch_id(job: jobs.Claimed) -> str:
    return str(job.payload.get("watchId", job.key.split(":", 1)[-1]))
