"""Flapping contracts (issue 33, point 8): reverts, one incident per flapping episode,
grouped deliveries, and a gate that still answers for the contract as it is now.

A real vendor on 127.0.0.1 flips between two documents, the controller (never started: the
test claims its jobs on an injected clock) runs the real checks and delivers to a real
webhook receiver, and the run gate is asked through the app."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import wait
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from controller.crypto import load_secret_box
from controller.events.grouping import Decision, Facts, decide
from controller.model.principal import Principal
from controller.model.watch import WatchCreate
from controller.scheduler import Controller
from controller.settings import Settings
from controller.store import jobs
from controller.store.db import Database
from controller.store.models import AuditEntry, Incident, Job, OutboxMessage, Watch
from controller.watches import service as watch_service
from tests.checks.conftest import Harness, serve
from tests.conftest import OrgKey, make_settings
from tests.receivers import Receiver
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec

# Now, not a fixed date: the app's gate judges staleness on the real clock (issue 40, point 4).
START = datetime.now(UTC).replace(microsecond=0)
STEP = timedelta(minutes=5)  # the vendor flips at every check
HOUR = timedelta(hours=1)  # the default flap window and delivery group window

A = as_json(charges_spec())  # the accepted contract
B = as_json(charges_spec(refunds=False))  # GET /v1/refunds removed: breaking


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    yield made
    made.close()


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now

    def advance(self, by: timedelta) -> datetime:
        self.now += by
        return self.now


class Rig:
    """The vendor, the controller on a test clock, the receiver and the app, for one watch."""

    def __init__(
        self,
        settings: Settings,
        database: Database,
        org: OrgKey,
        server: SpecServer,
        receiver: Receiver,
        app: Flask,
    ) -> None:
        self.database = database
        self.server = server
        self.receiver = receiver
        self.client: FlaskClient = app.test_client()
        self.org = org
        self.clock = Clock()
        box = load_secret_box(settings)
        self.controller = Controller(settings, database, box, concurrency=1, clock=self.clock)
        principal = Principal(org.org_id, org.org_name, "pro", frozenset(), "api_key", org.key_id)
        data = WatchCreate.model_validate(
            {
                "name": "payments",
                "url": server.url("/openapi.json"),
                "watchType": "openapi",
                "webhookUrl": receiver.url,
            }
        )
        with database.transaction() as session:
            self.watch_id = watch_service.create_watch(session, principal, data, box).id

    def serve(self, body: str, status: int = 200) -> None:
        self.server.set("/openapi.json", body, status=status)

    def check(self, after: timedelta = STEP) -> str:
        """One check through the controller `after` the last one, then the deliveries due."""
        now = self.clock.advance(after)
        job_id = jobs.request_check(self.database, self.watch_id, now)
        assert self.controller.dispatch() == 1
        wait(list(self.controller.running))
        for future in list(self.controller.running):
            future.result()
        with self.database.session() as session:
            job = session.get_one(Job, job_id)
            assert job.status == "done", job.last_error
        self.deliver()
        return self.watch().drift_status

    def deliver(self) -> int:
        return self.controller.deliveries.drain()

    def watch(self) -> Watch:
        with self.database.session() as session:
            return session.get_one(Watch, self.watch_id)

    def incidents(self) -> list[Incident]:
        with self.database.session() as session:
            return list(session.scalars(select(Incident).order_by(Incident.opened_at)))

    def received(self) -> list[str]:
        return [m["body"]["type"] for m in self.receiver.received]

    def preflight(self) -> dict[str, Any]:
        answer = self.client.post(
            "/api/preflight", json={"watchIds": [self.watch_id]}, headers=self.org.headers
        )
        assert answer.status_code == 200, answer.get_json()
        body: dict[str, Any] = answer.get_json()
        return body

    def status(self) -> dict[str, Any]:
        answer = self.client.get(f"/api/watches/{self.watch_id}/status", headers=self.org.headers)
        assert answer.status_code == 200, answer.get_json()
        body: dict[str, Any] = answer.get_json()
        return body

    def close(self) -> None:
        self.controller.stop(grace=5)


def make_rig(
    tmp_path: Path,
    database: Database,
    acme: OrgKey,
    server: SpecServer,
    receiver: Receiver,
    **values: Any,
) -> Rig:
    from web.app import create_app

    settings = make_settings(
        tmp_path, database_url=database.url, allow_private_targets=True, **values
    )
    return Rig(settings, database, acme, server, receiver, create_app(settings, database=database))


@pytest.fixture
def rig(
    tmp_path: Path, database: Database, acme: OrgKey, server: SpecServer, receiver: Receiver
) -> Iterator[Rig]:
    made = make_rig(tmp_path, database, acme, server, receiver)
    yield made
    made.close()


def test_an_ab_flapping_vendor_is_one_incident_and_one_burst_of_webhooks_per_window(
    rig: Rig,
) -> None:
    rig.serve(A)
    assert rig.check() == "ok"
    cycles = 4  # 40 minutes of flipping, inside the hour
    incident_ids = set()
    for cycle in range(cycles):
        rig.serve(B)
        assert rig.check() == "drifted"
        # The gate answers for the contract served now: breaking drift blocks, every time.
        gate = rig.preflight()
        assert gate["allowed"] is False
        (row,) = gate["blocked"]
        assert row["reasons"] == ["breaking_drift"]
        incident_ids.add(row["incidentId"])
        status = rig.status()
        assert status["incident"]["status"] == "open"
        assert status["incident"]["flapCount"] == cycle
        rig.serve(A)
        assert rig.check() == "ok"
        assert rig.preflight()["allowed"] is True
        if cycle == 0:
            # The first cycle tells the receiver everything, at once.
            assert sorted(rig.received()) == [
                "drift.cleared",
                "drift.detected",
                "incident.open",
                "incident.resolved",
            ]
    # One incident for the whole episode, resolved as reverted, with its flaps counted.
    (incident,) = rig.incidents()
    assert incident_ids == {incident.id}
    assert incident.status == "resolved" and incident.resolution == "reverted"
    assert incident.flap_count == cycles - 1 and incident.reopened_at is not None
    watch = rig.watch()
    assert watch.incident_id is None and watch.open_breaking == 0
    # Cycles 2-4 sent nothing yet: their repeats are held, each newer one replacing the last.
    assert len(rig.receiver.received) == 4
    with rig.database.session() as session:
        states = dict(
            session.execute(
                select(OutboxMessage.status, func.count()).group_by(OutboxMessage.status)
            ).all()
        )
    assert states == {"delivered": 4, "pending": 2, "suppressed": 2 * (2 * (cycles - 1) - 1)}

    # When the window since the first burst ends, the newest state goes out, once per
    # topic, saying how many messages it stands for.
    rig.clock.now = START + STEP * 3 + HOUR
    assert rig.deliver() == 2
    last = {m["body"]["type"]: m["body"]["data"] for m in rig.receiver.received[4:]}
    assert set(last) == {"incident.resolved", "drift.cleared"}
    held_back = 2 * (cycles - 1) - 1  # open/resolved (detected/cleared) of cycles 2-4, less this
    assert last["incident.resolved"]["suppressedCount"] == held_back
    assert last["incident.resolved"]["flapCount"] == cycles - 1
    assert last["incident.resolved"]["resolution"] == "reverted"
    assert last["drift.cleared"]["suppressedCount"] == held_back
    assert len(rig.receiver.received) == 6  # against 16 undamped
    stats = rig.client.get("/api/alerts/stats", headers=rig.org.headers).get_json()
    assert stats["totals"]["successful"] == 6 and stats["totals"]["suppressed"] == 2 * held_back
    assert stats["totals"]["pending"] == 0

    # Outside the window breaking drift is a new incident, told at once.
    assert incident.resolved_at is not None
    rig.clock.now = incident.resolved_at + HOUR
    rig.serve(B)
    assert rig.check(after=timedelta(seconds=1)) == "drifted"
    first, second = rig.incidents()
    assert first.id == incident.id and second.status == "open" and second.flap_count == 0
    assert sorted(rig.received()[6:]) == ["drift.detected", "incident.open"]
    assert rig.preflight()["blocked"][0]["incidentId"] == second.id


def test_a_flap_after_the_window_of_deliveries_goes_out_at_once(rig: Rig) -> None:
    """The window is per event type: a repeat an hour after the last delivery of its type is
    not held, and it takes the held older news of its topic with it."""
    rig.serve(A)
    rig.check()
    rig.serve(B)
    rig.check()  # t=10: incident.open, drift.detected delivered
    rig.serve(A)
    rig.check()  # t=15: incident.resolved, drift.cleared delivered
    rig.serve(B)
    rig.check()  # t=20: held until t=70
    rig.serve(A)
    rig.check(after=timedelta(minutes=30))  # t=50: held until t=75, replacing t=20's
    assert len(rig.receiver.received) == 4
    rig.serve(B)
    assert rig.check(after=timedelta(minutes=25)) == "drifted"  # t=75: past both windows
    sent = {m["body"]["type"]: m["body"]["data"] for m in rig.receiver.received[4:]}
    assert len(rig.receiver.received) == 6 and set(sent) == {"incident.open", "drift.detected"}
    assert sent["incident.open"]["suppressedCount"] == 2  # open (t=20), resolved (t=50)
    assert sent["incident.open"]["flapCount"] == 2
    assert sent["drift.detected"]["suppressedCount"] == 2
    with rig.database.session() as session:
        pending = session.scalar(
            select(func.count()).where(OutboxMessage.status.in_(("pending", "retrying")))
        )
    assert pending == 0  # nothing older can reach the receiver after this newest state


def test_a_check_error_is_never_damped(rig: Rig) -> None:
    rig.serve(A)
    rig.check()
    for _ in range(3):
        rig.serve(B)
        assert rig.check() == "drifted"
        rig.serve("upstream down", status=500)
        assert rig.check() == "error"
        gate = rig.preflight()
        assert gate["blocked"][0]["reasons"] == ["check_failed:http_error"]
        rig.serve(A)
        assert rig.check() == "ok"
    failures = [m for m in rig.received() if m == "drift.check_failed"]
    assert len(failures) == 3  # each at once, inside the window
    with rig.database.session() as session:
        suppressed = session.scalars(
            select(OutboxMessage.event_type).where(OutboxMessage.status == "suppressed")
        ).all()
    assert "drift.check_failed" not in suppressed


def test_an_acknowledged_incident_that_flaps_back_is_open_again(rig: Rig) -> None:
    rig.serve(A)
    rig.check()
    rig.serve(B)
    rig.check()
    answer = rig.client.post(
        f"/api/watches/{rig.watch_id}/incident/ack",
        json={"note": "vendor says it is a blip"},
        headers=rig.org.headers,
    )
    assert answer.status_code == 200 and answer.get_json()["status"] == "acknowledged"
    rig.serve(A)
    rig.check()
    rig.serve(B)
    assert rig.check() == "drifted"
    (incident,) = rig.incidents()
    assert incident.status == "open" and incident.flap_count == 1
    # The earlier acknowledgement stays on record; a new one is needed to count again.
    assert incident.acknowledged_by is not None
    again = rig.client.post(
        f"/api/watches/{rig.watch_id}/incident/ack", json={}, headers=rig.org.headers
    )
    body = again.get_json()
    assert body["status"] == "acknowledged" and body["flapCount"] == 1 and body["reopenedAt"]


def test_the_console_shows_the_flaps(rig: Rig) -> None:
    from tests.factories import make_user, sign_in

    rig.serve(A)
    rig.check()
    for body in (B, A, B):
        rig.serve(body)
        rig.check()
    make_user(rig.database, "acme", "admin@example.com")
    console = sign_in(rig.client.application.test_client(), "admin@example.com")
    page = console.get(f"/console/watches/{rig.watch_id}").get_data(as_text=True)
    assert "flapping: reopened 1 time after the vendor reverted" in page


def test_damping_off_opens_an_incident_per_cycle_and_sends_every_webhook(
    tmp_path: Path, database: Database, acme: OrgKey, server: SpecServer, receiver: Receiver
) -> None:
    rig = make_rig(
        tmp_path,
        database,
        acme,
        server,
        receiver,
        flap_window_seconds=0,
        delivery_group_seconds=0,
    )
    try:
        rig.serve(A)
        rig.check()
        for _ in range(2):
            rig.serve(B)
            rig.check()
            rig.serve(A)
            rig.check()
        assert [i.flap_count for i in rig.incidents()] == [0, 0]
        assert len(rig.receiver.received) == 8
    finally:
        rig.close()


# -- a superset served for a while, then reverted (the watch stayed `drifted` for good) --------


def test_a_superset_served_briefly_and_reverted_leaves_the_watch_ok(harness: Harness) -> None:
    serve(harness, refunds=False)
    watch_id = harness.watch(webhookUrl="https://hooks.example.com/drift")
    assert harness.check(watch_id).outcome == "baseline"
    accepted = harness.get(watch_id)
    serve(harness)  # a superset: one more path (info), the baseline advances by itself
    assert harness.check(watch_id).status == "ok"
    advanced = harness.get(watch_id)
    assert advanced.baseline_accepted_by == "auto:info-only"
    assert advanced.prior_baseline_snapshot_id == accepted.baseline_snapshot_id
    serve(harness, refunds=False)  # the vendor reverts to the accepted baseline
    reverted = harness.check(watch_id)
    assert reverted.status == "ok"
    watch = harness.get(watch_id)
    assert watch.incident_id is None and watch.open_breaking == 0
    # The accepted baseline is back, as it was accepted.
    assert watch.baseline_snapshot_id == accepted.baseline_snapshot_id
    assert watch.baseline_accepted_by == "first-check"
    assert watch.baseline_accepted_at == accepted.baseline_accepted_at
    assert watch.prior_baseline_snapshot_id is None
    assert harness.check(watch_id).status == "ok"  # and stays so
    with harness.database.session() as session:
        assert session.scalars(select(Incident)).all() == []
        (entry,) = session.scalars(select(AuditEntry).where(AuditEntry.action == "watch.revert"))
    assert entry.actor == "system" and entry.target_id == watch_id
    assert entry.details["restoredBaseline"]["replaced"] == advanced.baseline_snapshot_id
    assert harness.events() == []  # info, then back: nothing to alert about


def test_a_superset_reverted_after_the_window_is_breaking_drift(harness: Harness) -> None:
    serve(harness, refunds=False)
    watch_id = harness.watch()
    harness.check(watch_id)
    serve(harness)
    harness.check(watch_id)
    serve(harness, refunds=False)
    # Consumers had more than the window to use the new path: its removal is breaking.
    assert harness.check(watch_id, minutes=61).status == "drifted"
    assert harness.get(watch_id).incident_id is not None


def test_a_revert_of_breaking_drift_is_audited_and_keeps_the_baseline_acceptance(
    harness: Harness,
) -> None:
    serve(harness)
    watch_id = harness.watch()
    harness.check(watch_id)
    accepted = harness.get(watch_id)
    serve(harness, refunds=False)
    harness.check(watch_id)
    serve(harness)
    assert harness.check(watch_id).status == "ok"
    watch = harness.get(watch_id)
    # Back at the baseline: found by fingerprint, the baseline not "advanced" onto itself.
    assert watch.baseline_accepted_by == "first-check"
    assert watch.baseline_accepted_at == accepted.baseline_accepted_at
    with harness.database.session() as session:
        (entry,) = session.scalars(select(AuditEntry).where(AuditEntry.action == "watch.revert"))
        incident = session.scalars(select(Incident)).one()
    assert entry.details["from"] == "drifted" and entry.details["to"] == "ok"
    assert entry.details["incidentId"] == incident.id and incident.resolution == "reverted"


def test_a_baseline_moved_since_the_revert_starts_a_new_incident(
    harness: Harness,
) -> None:
    serve(harness)
    watch_id = harness.watch()
    harness.check(watch_id)
    serve(harness, refunds=False)
    harness.check(watch_id)
    serve(harness)
    harness.check(watch_id)  # reverted
    serve(harness, description="A charge, renamed")
    harness.check(watch_id)  # info only: the baseline advances (moves after the revert)
    serve(harness, refunds=False, description="A charge, renamed")
    assert harness.check(watch_id).status == "drifted"
    with harness.database.session() as session:
        rows = session.scalars(select(Incident).order_by(Incident.opened_at)).all()
    assert [(i.status, i.flap_count) for i in rows] == [("resolved", 0), ("open", 0)]


# -- the grouping rule ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (Facts(has_newer=True, attempted=False, last_delivered_at=None), Decision("suppress")),
        (Facts(has_newer=False, attempted=False, last_delivered_at=None), Decision("send")),
        (
            Facts(has_newer=False, attempted=False, last_delivered_at=START - HOUR / 2),
            Decision("hold", START + HOUR / 2),
        ),
        (Facts(has_newer=False, attempted=False, last_delivered_at=START - HOUR), Decision("send")),
        # A retry was due already: it is not held again.
        (Facts(has_newer=False, attempted=True, last_delivered_at=START), Decision("send")),
    ],
)
def test_the_grouping_rule(facts: Facts, expected: Decision) -> None:
    assert decide(facts, START, HOUR) == expected
