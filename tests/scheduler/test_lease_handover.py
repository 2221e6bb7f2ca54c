"""A lease hand-over is one log line: the job, its kind, the controller whose lease expired and
the controller that claimed it next (`job.handed_over`). A job given back on a graceful stop
is not handed over: its next claim names no previous holder."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

from controller.checks.engine import CheckInput, Fetched
from controller.crypto import load_secret_box
from controller.logs import JsonFormatter
from controller.scheduler import Controller, enqueue_due_checks
from controller.store import jobs
from controller.store.db import Database
from tests.conftest import OrgKey, make_settings
from tests.factories import make_watches
from tests.logrecords import Lines

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
DEAD = "gone-host:4242:dead"


def unchanged(check: CheckInput) -> Fetched:
    return Fetched(None)  # as a 304 would be


def test_a_job_claimed_after_its_lease_expired_is_logged_as_handed_over(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    (watch_id,) = make_watches(database, acme, tmp_path, ["https://x.example/openapi.json"])
    enqueue_due_checks(database, NOW)
    (lost,) = jobs.claim(database, worker=DEAD, kinds=("check",), now=NOW)
    assert lost.previous_holder is None
    expired = NOW + jobs.DEFAULT_LEASE + timedelta(seconds=1)
    assert jobs.reap(database, expired) == 1

    settings = make_settings(tmp_path, database_url=database.url)
    controller = Controller(
        settings, database, load_secret_box(settings), fetcher=unchanged, clock=lambda: expired
    )
    logged = Lines(JsonFormatter())
    logger = logging.getLogger("driftgate.controller")
    logger.addHandler(logged)
    logger.setLevel(logging.INFO)
    try:
        assert controller.dispatch() == 1
        for future in list(controller.running):
            future.result(timeout=30)
    finally:
        logger.removeHandler(logged)
        logger.setLevel(logging.NOTSET)
        controller.stop(grace=5)
    (line,) = [json.loads(text) for text in logged.lines if "handed_over" in text]
    assert line == {
        "ts": line["ts"],
        "level": "info",
        "logger": "driftgate.controller",
        "event": "job.handed_over",
        "job": lost.id,
        "kind": "check",
        "key": f"check:{watch_id}",
        "previousHolder": DEAD,
        "controller": controller.worker,
    }


def test_a_job_given_back_names_no_previous_holder_when_claimed_again(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    make_watches(database, acme, tmp_path, ["https://x.example/openapi.json"])
    enqueue_due_checks(database, NOW)
    jobs.claim(database, worker=DEAD, kinds=("check",), now=NOW)
    expired = NOW + jobs.DEFAULT_LEASE + timedelta(seconds=1)
    jobs.reap(database, expired)
    (handed,) = jobs.claim(database, worker="next:1:a", kinds=("check",), now=expired)
    assert handed.previous_holder == DEAD
    assert jobs.release(database, handed, expired)  # a graceful stop gives it back
    (again,) = jobs.claim(database, worker="third:1:b", kinds=("check",), now=expired)
    assert (again.id, again.previous_holder) == (handed.id, None)
