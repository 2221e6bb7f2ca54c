"""The story of a watch through the API with a real controller running in-process:
check, drift, status, history, acknowledge, baseline, exports, signed delivery."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient

from cli.main import main
from controller.crypto import SecretBox, load_secret_box
from controller.diffs.rules import CATALOG
from controller.events.delivery import deliver_due
from controller.events.outbox import emit
from controller.notifications import service as notifications
from controller.scheduler import Controller
from controller.settings import Settings
from controller.sources.http import make_client
from controller.store.db import Database
from tests.conftest import SECRET, OrgKey
from tests.factories import make_watch, set_state
from tests.receivers import Receiver
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec


def test_the_story_of_a_watch(
    live_app: Flask, acme: OrgKey, server: SpecServer, controller: Controller, database: Database
) -> None:
    client = live_app.test_client()
    h = acme.headers
    server.set("/openapi.json", as_json(charges_spec()))
    created = client.post(
        "/api/watches",
        json={"name": "payments", "url": server.url("/openapi.json"), "tags": ["vendor:acmepay"]},
        headers=h,
    ).json
    path = f"/api/watches/{created['id']}"

    first = client.post(f"{path}/check?wait=60", headers=h)
    assert first.status_code == 200, first.json
    assert first.json["status"] == "done" and first.json["watch"]["driftStatus"] == "ok"
    assert first.json["watch"]["baseline"]["snapshotId"]

    server.set("/openapi.json", as_json(charges_spec(required=("id",), refunds=False)))
    drifted = client.post(f"{path}/check?wait=60", headers=h).json
    assert drifted["watch"]["driftStatus"] == "drifted"
    assert drifted["watch"]["incident"]["status"] == "open"
    assert drifted["watch"]["openChanges"]["breaking"] >= 2

    status = client.get(f"{path}/status", headers=h).json
    assert status["reasons"] == ["breaking_drift"]
    assert (
        "ack_incident" in status["agentActions"]
        and "remove_tool_usage" not in status["agentActions"]
    )
    assert status["lastDriftEvent"]["counts"]["breaking"] >= 2
    # The flat status plane (the keys the hosted product's clients read).
    assert (status["watchId"], status["name"], status["watchType"]) == (
        created["id"],
        "payments",
        "openapi",
    )
    assert status["driftStatus"] == "drifted" and status["lastCheckStatus"] == "ok"
    assert status["failureClass"] is None and status["failureLabel"] is None
    assert set(status["health"]) == {
        "band",
        "isStaleCheck",
        "minutesSinceLastCheck",
        "expectedIntervalMinutes",
    }
    assert status["incident"]["status"] == "open" and status["incident"]["key"]
    assert status["incident"]["breakingCount"] == status["lastDriftEvent"]["breakingCount"] >= 2
    event_plane = status["lastDriftEvent"]
    assert event_plane["warningCount"] >= 0 and event_plane["infoCount"] >= 0
    assert all(
        {"path", "severity", "changeType", "message", "agentAction"} <= set(c)
        and c["message"] == c["summary"]
        for c in event_plane["changes"]
    )
    # A breaking change's hint says what a client sees fail, then what to do (issue 41.5).
    removed_hint = {c["rule"]: c["hint"] for c in status["lastDriftEvent"]["changes"]}[
        "endpoint-removed"
    ]
    assert removed_hint.startswith("A request to `GET /v1/")
    assert "now fails" in removed_hint and removed_hint.endswith(CATALOG["endpoint-removed"].hint)

    history = client.get(f"/api/drift?watchId={created['id']}", headers=h).json
    assert len(history["events"]) == 1 and history["nextCursor"] is None
    event = client.get(f"/api/drift/events/{history['events'][0]['id']}", headers=h).json
    assert event["watchName"] == "payments"
    assert any(c["rule"] == "endpoint-removed" for c in event["changes"])
    # Every change carries the human hint POST /api/drift/explain gives for it.
    explained = client.post(
        "/api/drift/explain", json={"changes": event["changes"]}, headers=h
    ).json
    assert [c["hint"] for c in event["changes"]] == [c["hint"] for c in explained["changes"]]
    assert all(c["hint"] for c in event["changes"])

    acked = client.post(f"{path}/incident/ack", json={"note": "on it"}, headers=h).json
    assert acked["status"] == "acknowledged" and acked["acknowledgedBy"].startswith("api_key:")
    assert client.get(path, headers=h).json["incident"]["status"] == "acknowledged"

    portfolio = client.get("/api/portfolio/status", headers=h).json
    assert portfolio["counts"]["drifted"] == 1
    assert portfolio["watches"][0]["reasons"] == ["breaking_drift"]

    accepted = client.post(
        f"{path}/baseline", json={"reason": "migrated the client"}, headers=h
    ).json
    assert accepted["driftStatus"] == "ok" and accepted["incident"] is None
    assert accepted["openChanges"] == {"breaking": 0, "warning": 0, "info": 0}
    again = client.post(f"{path}/check?wait=60", headers=h).json
    assert again["watch"]["driftStatus"] == "ok"

    with client.get("/api/drift/export?format=json", headers=h) as exported:
        body = json.loads(exported.get_data())
    assert body["schema"] == "driftgate-drift-export-v1"
    record = body["events"][0]
    assert record["vendor"] == "acmepay" and record["incidentStatus"] == "resolved"
    assert record["breakingCount"] >= 2 and record["changes"]
    assert removed_hint in {c["hint"] for c in record["changes"]}
    with client.get("/api/drift/export?format=csv", headers=h) as exported_csv:
        rows = list(csv.DictReader(io.StringIO(exported_csv.get_data(as_text=True))))
    assert rows[0]["watchName"] == "payments" and json.loads(rows[0]["changesJson"])
    assert removed_hint in {c["hint"] for c in json.loads(rows[0]["changesJson"])}


def test_audit_export_verifies_and_tampering_is_caught(
    live_app: Flask,
    acme: OrgKey,
    server: SpecServer,
    controller: Controller,
    tmp_path: Path,
    database: Database,
) -> None:
    client = live_app.test_client()
    server.set("/openapi.json", as_json(charges_spec()))
    watch = client.post(
        "/api/watches", json={"name": "p", "url": server.url("/openapi.json")}, headers=acme.headers
    ).json
    client.post(f"/api/watches/{watch['id']}/check?wait=60", headers=acme.headers)
    server.set("/openapi.json", as_json(charges_spec(refunds=False)))
    client.post(f"/api/watches/{watch['id']}/check?wait=60", headers=acme.headers)
    client.post(
        f"/api/watches/{watch['id']}/incident/ack", json={"note": "seen"}, headers=acme.headers
    )
    with client.get("/api/drift/export?format=audit", headers=acme.headers) as exported:
        audit = exported.get_data()
    document = json.loads(audit)
    assert document["schema"] == "driftgate-drift-audit-v1"
    assert document["ackTrail"][0]["note"] == "seen" and document["signature"].startswith(
        "hmac-sha256:"
    )
    good, bad = tmp_path / "audit.json", tmp_path / "tampered.json"
    good.write_bytes(audit)
    bad.write_bytes(audit.replace(b'"seen"', b'"SEEN"'))
    env = {"DRIFTGATE_DATABASE_URL": database.url, "DRIFTGATE_SECRET_KEY": SECRET}
    verified = CliRunner().invoke(main, ["audit", "verify", str(good)], env=env)
    assert verified.exit_code == 0 and "verified: 1 events" in verified.output
    tampered = CliRunner().invoke(main, ["audit", "verify", str(bad)], env=env)
    assert tampered.exit_code == 1 and "changed after export" in tampered.stderr
    other_key = CliRunner().invoke(
        main,
        ["audit", "verify", str(good)],
        env={**env, "DRIFTGATE_SECRET_KEY": "some other key 0123456789"},
    )
    assert other_key.exit_code == 1 and "not among the configured keys" in other_key.stderr


def test_check_of_a_paused_watch_is_409(live_app: Flask, acme: OrgKey) -> None:
    client = live_app.test_client()
    watch_id = make_watch(client, acme, "p")
    client.post(f"/api/watches/{watch_id}/pause", headers=acme.headers)
    response = client.post(f"/api/watches/{watch_id}/check", headers=acme.headers)
    assert response.status_code == 409 and response.json["error"] == "watch_paused"


def test_check_without_wait_is_queued(live_app: Flask, acme: OrgKey) -> None:
    client = live_app.test_client()
    watch_id = make_watch(client, acme, "p")
    first = client.post(f"/api/watches/{watch_id}/check", headers=acme.headers)
    second = client.post(f"/api/watches/{watch_id}/check", headers=acme.headers)
    assert first.status_code == second.status_code == 202
    assert first.json["jobId"] == second.json["jobId"]  # joins the queued check


def test_notification_defaults(live_app: Flask, acme: OrgKey) -> None:
    client = live_app.test_client()
    assert client.get("/api/org/notification-defaults", headers=acme.headers).json == {
        "destination": None,
        "intervalMinutes": None,
        "alertPolicy": {"severities": ["breaking", "warning"]},
        "weeklySummary": None,
    }
    put = client.put(
        "/api/org/notification-defaults",
        headers=acme.headers,
        json={
            "destination": {
                "kind": "slack",
                "url": "https://hooks.slack.com/services/T000/B000/secret-token",
            },
            "intervalMinutes": 30,
            "alertPolicy": {"severities": ["breaking"]},
        },
    )
    assert put.status_code == 200
    assert put.json["destination"] == {"kind": "slack", "urlHint": "https://hooks.slack.com"}
    assert "secret-token" not in put.get_data(as_text=True)
    watch = client.get(f"/api/watches/{make_watch(client, acme, 'p')}", headers=acme.headers)
    assert watch.json["intervalMinutes"] == 30
    bad = client.put(
        "/api/org/notification-defaults",
        headers=acme.headers,
        json={"alertPolicy": {"severities": ["urgent"]}},
    )
    assert bad.status_code == 400


def _send_to(client: FlaskClient, acme: OrgKey, kind: str, url: str) -> None:
    """The org's notifications go to this destination."""
    answer = client.put(
        "/api/org/notification-defaults",
        headers=acme.headers,
        json={"destination": {"kind": kind, "url": url}},
    )
    assert answer.status_code == 200, answer.json


def _emit(
    database: Database,
    box: SecretBox,
    acme: OrgKey,
    now: datetime,
    *events: tuple[str, str | None, dict[str, Any]],
) -> None:
    """Events (type, severity, data) into the org's outbox, in one transaction."""
    org = acme.org_id
    with database.transaction() as session:
        for kind, sev, data in events:
            emit(session, box, org_id=org, event_type=kind, severity=sev, data=data, now=now)


def test_signed_delivery_with_retries_and_stats(
    live_settings: Settings, database: Database, acme: OrgKey, live_app: Flask
) -> None:
    box = load_secret_box(live_settings)
    with database.transaction() as session:
        secret = notifications.signing_secret(session, acme.org_id, box)
    receiver = Receiver(secret=secret, fail_first=2)
    client = live_app.test_client()
    try:
        now = datetime.now(UTC)
        _send_to(client, acme, "webhook", receiver.url)
        _emit(
            database,
            box,
            acme,
            now,
            ("incident.open", None, {"watchId": "w1", "watchName": "payments"}),
        )
        http = make_client(allow_private=True)
        try:
            assert deliver_due(database, box, http, now) == 1
            assert deliver_due(database, box, http, now) == 0  # backing off
            stats = client.get("/api/alerts/stats", headers=acme.headers).json
            assert stats["totals"]["retrying"] == 1
            assert stats["lastAttempts"][0]["statusCode"] == 500
            assert stats["lastAttempts"][0]["destination"] == "http://127.0.0.1"
            later = now + timedelta(seconds=31)
            assert deliver_due(database, box, http, later) == 1
            assert deliver_due(database, box, http, later + timedelta(seconds=61)) == 1
        finally:
            http.close()
        assert receiver.attempts == 3 and receiver.rejected == []
        delivered = receiver.received[0]
        assert delivered["body"]["type"] == "incident.open"
        assert delivered["body"]["data"]["watchName"] == "payments"
        assert delivered["headers"]["webhook-id"].startswith("msg_")
        stats = client.get("/api/alerts/stats", headers=acme.headers).json
        assert stats["totals"] == {
            "successful": 1,
            "failed": 0,
            "retrying": 0,
            "pending": 0,
            "suppressed": 0,
        }
        assert stats["byChannel"]["webhook"]["successful"] == 1
        assert [a["success"] for a in stats["lastAttempts"]] == [True, False, False]
    finally:
        receiver.close()


def test_webhook_secret_cli(database: Database, acme: OrgKey) -> None:
    env = {"DRIFTGATE_DATABASE_URL": database.url, "DRIFTGATE_SECRET_KEY": SECRET}
    first = CliRunner().invoke(main, ["orgs", "webhook-secret", "acme"], env=env)
    again = CliRunner().invoke(main, ["orgs", "webhook-secret", "acme"], env=env)
    rotated = CliRunner().invoke(main, ["orgs", "webhook-secret", "acme", "--rotate"], env=env)
    assert first.output.startswith("whsec_") and first.output == again.output
    assert rotated.output.startswith("whsec_") and rotated.output != first.output


def test_slack_destinations_get_a_readable_message(
    live_settings: Settings, database: Database, acme: OrgKey, live_app: Flask
) -> None:
    box = load_secret_box(live_settings)
    receiver = Receiver()
    try:
        now = datetime.now(UTC)
        _send_to(live_app.test_client(), acme, "slack", receiver.url)
        _emit(
            database,
            box,
            acme,
            now,
            (
                "drift.detected",
                "breaking",
                {
                    "watchName": "payments",
                    "counts": {"breaking": 2, "warning": 0, "info": 1},
                    "changes": [{"severity": "breaking", "summary": "GET /v1/refunds removed"}],
                },
            ),
            ("drift.detected", "info", {"watchName": "payments"}),  # below the alert policy
        )
        http = make_client(allow_private=True)
        try:
            assert deliver_due(database, box, http, now) == 1
        finally:
            http.close()
        (message,) = receiver.received
        text = message["body"]["text"]
        assert "Contract drift on *payments*" in text and "2 breaking" in text
        assert "GET /v1/refunds removed" in text
        assert "webhook-signature" not in {k.lower() for k in message["headers"]}
    finally:
        receiver.close()


def test_incident_actions_without_an_incident_are_404(live_app: Flask, acme: OrgKey) -> None:
    client = live_app.test_client()
    watch_id = make_watch(client, acme, "p")
    for action in ("ack", "resolve"):
        response = client.post(
            f"/api/watches/{watch_id}/incident/{action}", json={}, headers=acme.headers
        )
        assert response.status_code == 404 and response.json["error"] == "not_found"
    baseline = client.post(
        f"/api/watches/{watch_id}/baseline", json={"reason": "x"}, headers=acme.headers
    )
    assert baseline.status_code == 409 and baseline.json["error"] == "no_snapshot"


def test_incidents_are_listed_newest_first_by_status_and_read_one_by_one(
    client: FlaskClient, database: Database, acme: OrgKey, make_org: Any
) -> None:
    h = acme.headers
    ids = [make_watch(client, acme, name) for name in ("a", "b", "c")]
    opened = set_state(database, ids[0], "drifted", incident="open")
    acked = set_state(database, ids[1], "drifted", incident="acknowledged")
    closed = set_state(database, ids[2], "ok", incident="resolved")

    def listed(query: str = "") -> list[tuple[str, str, str]]:
        page = client.get(f"/api/incidents{query}", headers=h)
        assert page.status_code == 200, page.json
        return [(i["id"], i["status"], i["watchName"]) for i in page.json["incidents"]]

    # Newest opened first; open and acknowledged unless asked otherwise.
    assert listed() == [(acked, "acknowledged", "b"), (opened, "open", "a")]
    assert listed("?status=resolved") == [(closed, "resolved", "c")]
    assert [i[0] for i in listed("?status=open&status=resolved")] == [closed, opened]
    assert listed(f"?watchId={ids[1]}") == [(acked, "acknowledged", "b")]
    first = client.get("/api/incidents?limit=1", headers=h).json
    assert [i["id"] for i in first["incidents"]] == [acked]
    rest = client.get(f"/api/incidents?limit=1&cursor={first['nextCursor']}", headers=h).json
    assert [i["id"] for i in rest["incidents"]] == [opened] and rest["nextCursor"] is None
    assert client.get("/api/incidents?status=closed", headers=h).status_code == 400

    one = client.get(f"/api/incidents/{opened}", headers=h)
    assert one.status_code == 200
    assert (one.json["watchId"], one.json["watchName"], one.json["status"]) == (ids[0], "a", "open")
    # Another org sees none of them: its list is empty and an id answers 404 as a missing one.
    other = make_org("other", "pro")
    assert client.get("/api/incidents", headers=other.headers).json["incidents"] == []
    hidden = client.get(f"/api/incidents/{opened}", headers=other.headers)
    assert hidden.status_code == 404 and hidden.json["message"] == "Incident not found"
