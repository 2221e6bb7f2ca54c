"""Controller heartbeats (issue 40, point 4): every tick writes one, `/health/ready` and the
console show whether a controller is alive, stale or absent (both stores)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from controller.checks import heartbeats_service as heartbeats
from controller.crypto import load_secret_box
from controller.scheduler import Controller
from controller.settings import Settings
from controller.store.db import Database
from controller.store.models import ControllerHeartbeat, Watch
from tests.conftest import OrgKey
from tests.factories import make_user, sign_in


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def controller(live_settings: Settings, database: Database, clock: Clock) -> Iterator[Controller]:
    """A controller that is never started: the test runs its ticks."""
    made = Controller(
        live_settings, database, load_secret_box(live_settings), concurrency=1, clock=clock
    )
    yield made
    made.stop(grace=5)


def rows(database: Database) -> list[tuple[str, datetime]]:
    with database.session() as session:
        found = session.execute(select(ControllerHeartbeat.worker, ControllerHeartbeat.beat_at))
        return [(worker, beat_at) for worker, beat_at in found]


def test_each_tick_beats_and_a_clean_stop_removes_the_row(
    database: Database, controller: Controller, clock: Clock
) -> None:
    assert heartbeats.controller_health(database, clock.now).state == "absent"
    controller.tick()
    assert rows(database) == [(controller.worker, clock.now)]
    first = clock.now
    clock.now += timedelta(seconds=5)
    controller.tick()
    assert rows(database) == [(controller.worker, clock.now)]
    health = heartbeats.controller_health(database, clock.now)
    assert (health.state, health.last_heartbeat_at, health.age_seconds) == ("alive", clock.now, 0)
    # Three ticks (at least a minute) without a beat: dead or stuck.
    assert heartbeats.controller_health(database, first + timedelta(seconds=65)).state == "alive"
    stale = heartbeats.controller_health(database, clock.now + timedelta(seconds=61))
    assert (stale.state, stale.age_seconds) == ("stale", 61.0)
    controller.stop(grace=5)
    assert rows(database) == []


def test_ready_reports_the_controller_without_failing_on_it(
    database: Database, client: FlaskClient
) -> None:
    """A web process without a controller is ready (a web replica is a valid deployment);
    the body says whether one is alive."""
    absent = client.get("/health/ready")
    assert absent.status_code == 200 and absent.json["controller"]["state"] == "absent"
    now = datetime.now(UTC)
    heartbeats.beat(database, "host:1:a", now - timedelta(hours=1), 5.0, now - timedelta(minutes=5))
    stale = client.get("/health/ready")
    assert stale.status_code == 200 and stale.json["controller"]["state"] == "stale"
    assert stale.json["controller"]["ageSeconds"] >= 300
    heartbeats.beat(database, "host:2:b", now, 5.0, now)
    alive = client.get("/health/ready").json["controller"]
    assert alive["state"] == "alive" and alive["ageSeconds"] < 60
    assert datetime.fromisoformat(alive["lastHeartbeatAt"].replace("Z", "+00:00")) == now


def test_the_console_shows_a_missing_controller_and_stale_watches(
    database: Database, app: Flask, acme: OrgKey
) -> None:
    """With no controller alive every page says so; a watch whose checks stopped shows as
    stale in the list and on its page, and its status plane says why preflight blocks it."""
    now = datetime.now(UTC)
    with database.transaction() as session:
        watch = Watch(
            org_id=acme.org_id,
            name="payments",
            watch_type="openapi",
            url="https://api.example.com/openapi.json",
            drift_status="ok",
            interval_minutes=15,
            last_checked_at=now - timedelta(hours=3),
        )
        session.add(watch)
        session.flush()
        watch_id = watch.id
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(app.test_client(), "admin@example.com")
    listed = admin.get("/console/watches").get_data(as_text=True)
    assert "No controller is running" in listed
    assert re.search(r'data-label="Checks"><span class="status error">stale</span>', listed)
    shown = admin.get(f"/console/watches/{watch_id}").get_data(as_text=True)
    assert ">stale</span> every 15 min: none completed for twice that" in shown

    heartbeats.beat(database, "host:1:a", now, 5.0, now - timedelta(minutes=10))
    assert "No controller is alive: the last one checked in" in admin.get(
        "/console/watches"
    ).get_data(as_text=True)
    heartbeats.beat(database, "host:2:b", now, 5.0, datetime.now(UTC))
    assert "controller-down" not in admin.get("/console/watches").get_data(as_text=True)

    api = app.test_client()
    status = api.get(f"/api/watches/{watch_id}/status", headers=acme.headers).get_json()
    assert status["health"]["isStaleCheck"] is True
    assert status["reasons"] == ["check_failed:stale"]
    gate = api.post("/api/preflight", json={"watchIds": [watch_id]}, headers=acme.headers)
    assert gate.get_json()["blocked"][0]["reasons"] == ["check_failed:stale"]
