"""One org's slow vendors and another org's checks (issue 40, point 5), at a tenth of the time.

Org `slow` has 16 watches on vendors that send headers and then trickle one byte a second for
ever (16 loopback servers); org `steady` has a 1-minute watch on a healthy loopback vendor, a
watch that a person checks now and then ("check now"), and a watch created mid-run. One
in-process controller (8 workers, as `driftgate controller`'s default) checks them all.

Time runs `--scale` times faster than the wall clock (the controller's clock, its tick, the
fetch deadline: 60 s becomes 6 s), so `--minutes 10` of controller time take a minute; every
figure is in controller time, comparable to the issue's (2 checks in 300 s instead of 5, a
"check now" that took 59 s, a new watch `never_run` for over 40 s):

- slots kept: of the steady watch's 1-minute slots in the run, those in which a check of it
  started;
- "check now": from the request to the check's start, one request every 2 minutes;
- first check: from a new watch's creation to its first check's start;
- the slow org's checks: how many, and their mean length (a vendor that timed out gets a
  quarter of the deadline until it answers).

Run: `python bench/fairness_bench.py [--minutes 10] [--scale 10] [--postgres URL]` (SQLite in a
temporary directory by default; `--smoke`: 1 controller minute, 30 times faster). Figures in
docs/performance.md; nothing here fails on them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, select, text, update  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from bench import smoke  # noqa: E402
from controller.crypto import load_secret_box  # noqa: E402
from controller.model.principal import Principal  # noqa: E402
from controller.model.watch import WatchCreate  # noqa: E402
from controller.orgs import service as org_service  # noqa: E402
from controller.scheduler import Controller, slot  # noqa: E402
from controller.settings import Settings, load_settings  # noqa: E402
from controller.store import jobs, migrate  # noqa: E402
from controller.store.db import Database  # noqa: E402
from controller.store.models import Job, Watch  # noqa: E402
from controller.watches import service as watch_service  # noqa: E402
from tests.servers import TRICKLED_HEADERS, SpecServer, Stalling  # noqa: E402
from tests.specs import as_json, charges_spec  # noqa: E402

SECRET = "benchmark-secret-key-0123456789"
SLOW_VENDORS = 16
WORKERS = 8
MANUAL_EVERY = 120.0  # controller seconds between two "check now"
FULL_DEADLINE = 60.0  # the fetch deadline at full scale (the setting's default)
FULL_TICK = 5.0


class ScaledClock:
    """The controller's clock: `scale` controller seconds per wall-clock second."""

    def __init__(self, scale: float) -> None:
        self.scale = scale
        self.restart()

    def restart(self) -> None:
        """Be the wall clock now (the ticker's first run is due at the controller's `now`)."""
        self.base = datetime.now(UTC)
        self.started = time.monotonic()

    def __call__(self) -> datetime:
        return self.base + timedelta(seconds=(time.monotonic() - self.started) * self.scale)

    def sleep_until(self, at: datetime) -> None:
        time.sleep(max(0.0, (at - self()).total_seconds() / self.scale))


class Org:
    def __init__(self, database: Database, settings: Settings, name: str) -> None:
        self.database = database
        self.box = load_secret_box(settings)
        with database.transaction() as session:
            org = org_service.create_org(session, name, "pro", actor="bench")
            self.principal = Principal(org.id, org.name, org.plan, frozenset(), "api_key", None)

    def watch(self, name: str, url: str, interval: int) -> str:
        body = {"name": name, "url": url, "watchType": "openapi", "intervalMinutes": interval}
        with self.database.transaction() as session:
            created = watch_service.create_watch(
                session, self.principal, WatchCreate.model_validate(body), self.box
            )
            return str(created.id)


def checks_of(database: Database, watch_id: str) -> list[Job]:
    with database.session() as session:
        return list(
            session.scalars(
                select(Job).where(Job.key == f"check:{watch_id}").order_by(Job.started_at)
            )
        )


def started(database: Database, job_id: int) -> datetime | None:
    with database.session() as session:
        return session.scalar(select(Job.started_at).where(Job.id == job_id))


def first_started(database: Database, watch_id: str) -> datetime | None:
    runs = [job.started_at for job in checks_of(database, watch_id) if job.started_at]
    return min(runs) if runs else None


def wait_for(probe: Callable[[], datetime | None], limit: float) -> datetime | None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = probe()
        if found is not None:
            return found
        time.sleep(0.01)
    return None


def run(url: str, minutes: float, scale: float) -> dict[str, Any]:
    database = Database(url)
    migrate.upgrade(database)
    settings = load_settings(
        env={"DRIFTGATE_DATA_DIR": tempfile.mkdtemp(), "DRIFTGATE_SECRET_KEY": SECRET},
        database_url=url,
        allow_private_targets=True,
        fetch_deadline_seconds=FULL_DEADLINE / scale,
        queue_poll_seconds=0.02,
    )
    vendors = [Stalling(preamble=TRICKLED_HEADERS, trickle=1.0) for _ in range(SLOW_VENDORS)]
    healthy = SpecServer()
    healthy.start()
    spec = healthy.set("/openapi.json", as_json(charges_spec()))
    slow, steady = Org(database, settings, "slow"), Org(database, settings, "steady")
    slow_ids = [slow.watch(f"slow-{i}", v.url("/openapi.json"), 1) for i, v in enumerate(vendors)]
    steady_id = steady.watch("steady", spec, 1)
    manual_id = steady.watch("asked", healthy.set("/asked.json", as_json(charges_spec())), 60)
    clock = ScaledClock(scale)
    controller = Controller(
        settings,
        database,
        load_secret_box(settings),
        concurrency=WORKERS,
        tick_seconds=FULL_TICK / scale,
        clock=clock,
        # Leases are renewed on the wall clock: make them outlast the run instead.
        lease=timedelta(hours=24),
    )
    manual: list[float] = []
    first: list[float] = []
    clock.restart()
    t0 = clock()
    end = t0 + timedelta(minutes=minutes)
    controller.start()
    try:
        at = t0 + timedelta(seconds=MANUAL_EVERY / 4)
        created = False
        while at < end:
            clock.sleep_until(at)
            if not created and at - t0 >= (end - t0) / 2:
                created, born = True, clock()
                new_id = steady.watch("new", healthy.set("/new.json", as_json(charges_spec())), 60)
                began = wait_for(lambda w=new_id: first_started(database, w), 200 / scale)
                first.append(((began or clock()) - born).total_seconds())
            asked = clock()
            job_id = jobs.request_check(database, manual_id, asked)
            began = wait_for(lambda j=job_id: started(database, j), 200 / scale)
            manual.append(((began or clock()) - asked).total_seconds())
            at += timedelta(seconds=MANUAL_EVERY)
        clock.sleep_until(end)
    finally:
        controller.stop(grace=FULL_DEADLINE / scale + 5)
        for vendor in vendors:
            vendor.stop()
        healthy.stop()
    first_slot = slot(steady_id, 1, t0)[0]
    slots = range(first_slot, slot(steady_id, 1, end)[0])
    kept = {
        slot(steady_id, 1, job.started_at)[0]
        for job in checks_of(database, steady_id)
        if job.started_at is not None and job.started_at < end
    }
    if os.environ.get("FAIRNESS_BENCH_DEBUG"):
        for job in checks_of(database, steady_id):
            if job.started_at is not None:
                index, next_start = slot(steady_id, 1, job.started_at)
                print(
                    f"steady check at {(job.started_at - t0).total_seconds():.1f} s "
                    f"(slot {index - first_slot}, {job.status}, priority "
                    f"{getattr(job, 'priority', '-')})"
                )
    slow_runs = [
        (job.finished_at - job.started_at).total_seconds()
        for watch_id in slow_ids
        for job in checks_of(database, watch_id)
        if job.started_at and job.finished_at and job.finished_at <= end
    ]
    with database.transaction() as session:  # nothing more for a controller of the next run
        session.execute(update(Watch).values(drift_status="disabled"))
    database.dispose()
    return {
        "slots": len(slots),
        "slots_kept": len(kept & set(slots)),
        "manual": manual,
        "first": first,
        "slow_checks": len(slow_runs),
        "slow_mean": statistics.fmean(slow_runs) if slow_runs else 0.0,
    }


def fresh_postgres(url: str) -> tuple[str, Callable[[], None]]:
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    name = f"driftgate_fairness_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return make_url(url).set(database=name).render_as_string(hide_password=False), drop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=10.0, help="controller minutes to run")
    parser.add_argument("--scale", type=float, default=10.0, help="controller seconds per second")
    parser.add_argument("--postgres", help="a Postgres URL (a fresh database is made next to it)")
    args = smoke.parse(parser, {"minutes": 1.0, "scale": 30.0})
    if args.postgres:
        url, cleanup = fresh_postgres(args.postgres)
    else:
        directory = tempfile.mkdtemp()
        url, cleanup = f"sqlite:///{directory}/fairness.db", lambda: None
    try:
        figures = run(url, args.minutes, args.scale)
    finally:
        cleanup()
    manual, first = figures["manual"], figures["first"]
    print(f"store: {'postgres' if args.postgres else 'sqlite'}; {args.minutes:g} controller min")
    print(
        f"steady org's 1-minute watch: {figures['slots_kept']} of {figures['slots']} slots kept "
        f"({100 * figures['slots_kept'] / max(1, figures['slots']):.0f} %)"
    )
    print(
        f'"check now" start: max {max(manual):.1f} s, median {statistics.median(manual):.1f} s '
        f"({len(manual)} requests: {', '.join(f'{m:.1f}' for m in manual)})"
    )
    print(f"new watch's first check start: {', '.join(f'{f:.1f} s' for f in first)}")
    print(
        f"slow org: {figures['slow_checks']} checks ended, {figures['slow_mean']:.1f} s each "
        "on average"
    )


if __name__ == "__main__":
    main()
