"""The store's gauges of `/metrics` (`controller.monitoring.service.StoreCollector`), read from a
real database at scrape time: watches by status, open incidents, the job queue's depth and
lag, leases running and expired; and a database that does not answer, which is itself the
answer (`driftgate_database_up 0`, never an error)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from flask import Flask
from prometheus_client import CollectorRegistry, generate_latest

from controller.monitoring.service import StoreCollector
from controller.store.db import Database
from controller.store.models import Incident, Job, Watch
from tests.conftest import OrgKey, make_settings
from tests.factories import make_watches
from tests.processes import free_port
from tests.scrapes import Scrape

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def collected(collector: StoreCollector) -> Scrape:
    registry = CollectorRegistry()
    registry.register(collector)
    return Scrape.parse(generate_latest(registry).decode())


def job(kind: str, key: str, status: str, run_after: datetime, **values: object) -> Job:
    return Job(
        kind=kind,
        key=key,
        period="p",
        status=status,
        run_after=run_after,
        attempts=0,
        fence=1,
        payload={},
        priority=2,
        created_at=run_after,
        **values,
    )


def test_the_gauges_count_what_the_store_holds(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    ids = make_watches(
        database, acme, tmp_path, [f"https://x.example/{i}/openapi.json" for i in range(4)]
    )
    with database.transaction() as session:
        for watch_id, status in zip(ids, ("ok", "ok", "drifted", "error"), strict=True):
            row = session.get(Watch, watch_id)
            assert row is not None
            row.drift_status = status
        for watch_id, state in zip(ids, ("open", "acknowledged", "resolved"), strict=False):
            session.add(Incident(org_id=acme.org_id, watch_id=watch_id, status=state))
        session.add_all(
            [
                job("check", "check:a", "queued", NOW - timedelta(seconds=30)),  # due 30 s ago
                job("check", "check:b", "queued", NOW + timedelta(seconds=60)),  # not due yet
                job("reconcile", "reconcile:fleet", "queued", NOW - timedelta(seconds=5)),
                job(
                    "check", "check:c", "running", NOW, lease_expires_at=NOW + timedelta(seconds=9)
                ),
                job(
                    "check", "check:d", "running", NOW, lease_expires_at=NOW - timedelta(seconds=9)
                ),
                job("draft_pr", "draft_pr:x", "done", NOW - timedelta(hours=1)),
            ]
        )
    scraped = collected(StoreCollector(database, clock=lambda: NOW))

    assert scraped.value("driftgate_database_up") == 1
    assert scraped.value("driftgate_build_info") == 1
    watches = {s: scraped.value("driftgate_watches", status=s) for s in ("ok", "drifted", "error")}
    assert watches == {"ok": 2, "drifted": 1, "error": 1}
    assert scraped.value("driftgate_watches", status="never_run") == 0  # listed, at 0
    assert scraped.value("driftgate_incidents_open", state="open") == 1
    assert scraped.value("driftgate_incidents_open", state="acknowledged") == 1
    assert scraped.value("driftgate_jobs_queued", kind="check") == 2
    assert scraped.value("driftgate_jobs_queued", kind="reconcile") == 1
    assert not scraped.has("driftgate_jobs_queued", kind="draft_pr")  # done is not queued
    assert scraped.value("driftgate_job_lag_seconds", kind="check") == 30
    assert scraped.value("driftgate_job_lag_seconds", kind="reconcile") == 5
    assert scraped.value("driftgate_job_leases", kind="check", state="running") == 1
    assert scraped.value("driftgate_job_leases", kind="check", state="expired") == 1
    assert scraped.value("driftgate_job_leases", kind="reconcile") == 0

    # With the org label, each org's own series (jobs of no org under org="").
    by_org = collected(StoreCollector(database, org_label=True, clock=lambda: NOW))
    assert by_org.value("driftgate_watches", status="ok", org=acme.org_id) == 2
    assert by_org.value("driftgate_incidents_open", state="open", org=acme.org_id) == 1
    assert by_org.value("driftgate_jobs_queued", kind="check", org="") == 2


def test_an_empty_queue_has_no_lag(database: Database) -> None:
    scraped = collected(StoreCollector(database, clock=lambda: NOW))
    assert scraped.value("driftgate_jobs_queued") == 0
    assert scraped.value("driftgate_job_lag_seconds", kind="check") == 0
    assert scraped.value("driftgate_watches") == 0


def test_a_database_that_does_not_answer_is_database_up_0_not_an_error(tmp_path: Path) -> None:
    """Nothing listens on the port: connections are refused (the store unreachable). The
    scrape still answers, with `driftgate_database_up 0` and the error and the outage
    counted; a second scrape during the outage is refused at once, counted as such."""
    from web.app import create_app

    url = f"postgresql+psycopg://driftgate@127.0.0.1:{free_port()}/driftgate"
    database = Database(url, connect_timeout=2, statement_timeout=2)
    try:
        app: Flask = create_app(make_settings(tmp_path, database_url=url), database=database)
        http = app.test_client()
        first = http.get("/metrics")
        assert first.status_code == 200
        down = Scrape.parse(first.get_data(as_text=True))
        assert down.value("driftgate_database_up") == 0
        assert not down.has("driftgate_watches")
        assert down.value("driftgate_database_errors_total", reason="unreachable") >= 1
        assert down.value("driftgate_database_outages_total") >= 1
        second = Scrape.parse(http.get("/metrics").get_data(as_text=True))
        assert second.value("driftgate_database_up") == 0
        assert second.value("driftgate_database_errors_total", reason="refused") > down.value(
            "driftgate_database_errors_total", reason="refused"
        )
    finally:
        database.dispose()
