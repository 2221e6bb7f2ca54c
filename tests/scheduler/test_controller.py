"""The controller as processes: replicas racing on Postgres, a worker killed mid-check,
graceful shutdown, and the schedule's slots."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import Counter
from contextlib import AbstractContextManager, ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from controller.scheduler import enqueue_due_checks, jitter_seconds, slot
from controller.store.db import Database
from controller.store.models import Job, Snapshot, Watch
from tests.conftest import ON_POSTGRES, OrgKey
from tests.factories import make_watches
from tests.processes import (
    PATIENCE,
    controllers_ticked,
    driftgate_env,
    jobs_done,
    started,
    stop_process,
    wait_until,
)
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec


def controller_process(
    database: Database, tmp_path: Path, *extra: str, tick: str = "0.2"
) -> AbstractContextManager[subprocess.Popen[bytes]]:
    """`driftgate controller` on the test's store, stopped when the block ends."""
    env = driftgate_env(database.url, tmp_path, allow_private_targets="true", log_format="text")
    return started(
        [sys.executable, "-m", "cli", "controller", "--tick", tick, *extra],
        env=env,
        log=tmp_path / f"controller-{time.monotonic_ns()}.log",
    )


def checked(database: Database) -> int:
    with database.session() as session:
        return int(
            session.scalar(
                select(func.count()).select_from(Watch).where(Watch.last_checked_at.is_not(None))
            )
            or 0
        )


def test_slots_are_stable_and_spread() -> None:
    now = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    index, next_start = slot("watch-a", 15, now)
    assert next_start > now and next_start - now <= timedelta(minutes=15)
    assert slot("watch-a", 15, now + timedelta(seconds=1))[0] in (index, index + 1)
    offsets = {jitter_seconds(f"watch-{i}", 15) for i in range(200)}
    assert len(offsets) > 150 and max(offsets) < 900


def test_due_checks_are_enqueued_once_per_slot(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    ids = make_watches(
        database, acme, tmp_path, [f"https://x.example/{i}/openapi.json" for i in range(5)]
    )
    now = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    assert enqueue_due_checks(database, now) == 5
    assert enqueue_due_checks(database, now) == 0  # next_check_at moved to the next slot
    with database.transaction() as session:
        for watch in session.scalars(select(Watch)):
            watch.next_check_at = None  # another replica that did not see the update
    assert enqueue_due_checks(database, now) == 5
    with database.session() as session:
        assert session.scalar(select(func.count()).select_from(Job)) == 5
        keys = set(session.scalars(select(Job.key)))
    assert keys == {f"check:{i}" for i in ids}


@pytest.mark.skipif(not ON_POSTGRES, reason="replicas coordinate through Postgres")
def test_three_replicas_check_each_watch_exactly_once(
    database: Database, acme: OrgKey, tmp_path: Path, server: SpecServer
) -> None:
    urls = [server.set(f"/{i}/openapi.json", as_json(charges_spec())) for i in range(40)]
    ids = make_watches(database, acme, tmp_path, urls)
    with ExitStack() as stack:
        processes = [
            stack.enter_context(controller_process(database, tmp_path, "--concurrency", "4"))
            for _ in range(3)
        ]
        wait_until(lambda: checked(database) == 40)
        # Any duplicate shows up: every replica goes round twice more, and every check job
        # queued by then has run.
        ticked = controllers_ticked(database, 3)
        wait_until(lambda: ticked() and jobs_done(database, "check"))
        for process in processes:
            process.send_signal(signal.SIGTERM)
        assert [process.wait(timeout=PATIENCE) for process in processes] == [0, 0, 0]
    fetched = Counter(path for method, path, _ in server.requests if method == "GET")
    with database.session() as session:
        jobs = list(session.scalars(select(Job).where(Job.kind == "check")))
    assert {job.lease_owner for job in jobs} == {None}
    assert {job.status for job in jobs} == {"done"}
    # Exactly one check per watch and slot, whichever replica ran it. A watch whose next
    # slot (15 minutes, offset by its id) happens to start during the test is checked again,
    # in that slot's own job: every fetch belongs to exactly one job.
    per_watch = Counter(job.key for job in jobs)
    assert len(per_watch) == 40
    assert {f"/{i}/openapi.json": per_watch[f"check:{w}"] for i, w in enumerate(ids)} == fetched


def test_a_worker_killed_mid_check_leaves_nothing_half_written(
    database: Database, acme: OrgKey, tmp_path: Path, server: SpecServer
) -> None:
    server.set("/slow/openapi.json", as_json(charges_spec()), delay=3.0)
    (watch_id,) = make_watches(database, acme, tmp_path, [server.url("/slow/openapi.json")])
    with controller_process(database, tmp_path, "--lease", "1") as victim:
        wait_until(lambda: any(path == "/slow/openapi.json" for _, path, _ in server.requests))
        victim.send_signal(signal.SIGKILL)
        victim.wait()
    with database.session() as session:
        watch = session.get(Watch, watch_id)
        assert (
            watch is not None
            and watch.drift_status == "never_run"
            and watch.last_snapshot_id is None
        )
        job = session.scalars(select(Job).where(Job.kind == "check")).one()
        assert job.status == "running"  # its lease will expire
        assert session.scalar(select(func.count()).select_from(Snapshot)) == 0
    server.set("/slow/openapi.json", as_json(charges_spec()))
    with controller_process(database, tmp_path, "--lease", "5") as survivor:
        wait_until(lambda: checked(database) == 1)
        assert stop_process(survivor) == 0
    with database.session() as session:
        job = session.scalars(select(Job).where(Job.kind == "check")).one()
        assert job.status == "done" and job.attempts == 2 and job.fence == 2
        watch = session.get(Watch, watch_id)
        assert watch is not None and watch.drift_status == "ok"


def test_a_check_asked_for_now_starts_without_waiting_for_the_next_tick(
    database: Database, acme: OrgKey, tmp_path: Path, server: SpecServer
) -> None:
    """A controller ticking once an hour still runs a check asked for through the API at
    once: its queue watch finds the job between ticks, and `wait_for` sees it done while the
    controller has not gone round again (its heartbeat, written each round, is the one of
    its first)."""
    from controller.store import jobs

    server.set("/charges.json", as_json(charges_spec()))
    (watch_id,) = make_watches(database, acme, tmp_path, [server.url("/charges.json")])
    with controller_process(database, tmp_path, tick="3600"):
        # The first tick (at start) checks the new watch; then an hour without ticks.
        wait_until(lambda: checked(database) >= 1)
        ticked = controllers_ticked(database, 1, ticks=1)
        for _ in range(3):
            job_id = jobs.request_check(database, watch_id, datetime.now(UTC))
            job = jobs.wait_for(database, job_id, PATIENCE)
            assert job is not None and job.status == "done", job
        assert not ticked()
