"""`POST /api/validate` and `/api/ingress-profiles` on a real store: every status of the
matrix (200, 400, 401, 402, 403, 404, 409, 413, 422, 429, 503), trial sessions, headers,
quarantine events delivered over HTTPS and signed, the quota under concurrent requests, and
that the payload is never stored or logged."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, text

from controller.crypto import load_secret_box
from controller.notifications import service as notifications
from controller.scheduler import Controller
from controller.settings import Settings
from controller.store.db import Database
from controller.store.models import OutboxMessage, ValidationMeter, ValidationSource
from tests.conftest import ON_POSTGRES, OrgKey, make_settings
from tests.processes import wait_until
from tests.receivers import Receiver
from tests.tls import self_signed_certificate

MARKER = "PAYLOAD-MARKER-7c1e"
PROFILE: dict[str, Any] = {
    "id": "order",
    "version": 1,
    "schema": {
        "type": "object",
        "properties": {"email": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}},
        "required": ["email"],
    },
}
VALID = {"payload": {"email": MARKER, "qty": 2}, "profile": PROFILE}
INVALID = {"payload": {"qty": 0, "note": MARKER}, "profile": PROFILE}


def app_with(tmp_path: Path, database: Database, **settings: Any) -> tuple[Flask, Settings]:
    from web.app import create_app

    values = {"allow_private_targets": True, **settings}
    made = make_settings(tmp_path, database_url=database.url, **values)
    return create_app(made, database=database), made


@pytest.fixture
def api(tmp_path: Path, database: Database) -> FlaskClient:
    return app_with(tmp_path, database)[0].test_client()


def test_valid_and_invalid_payloads_in_each_mode(api: FlaskClient, acme: OrgKey) -> None:
    ok = api.post(
        "/api/validate", json=VALID, headers={**acme.headers, "X-Service-Correlation-Id": "run-1"}
    )
    assert ok.status_code == 200, ok.get_json()
    body = ok.get_json()
    assert body["ok"] is True and body["severity"] == "none" and body["errors"] == []
    assert body["normalized"] == VALID["payload"] and body["correlationId"] == "run-1"
    assert ok.headers["X-Service-Correlation-Id"] == "run-1"
    assert int(ok.headers["X-Service-Validations-Remaining"]) == body["validationsRemaining"]
    assert body["latencyMs"] >= 0

    blocked = api.post("/api/validate", json=INVALID, headers=acme.headers)
    assert blocked.status_code == 422
    answer = blocked.get_json()
    assert (answer["ok"], answer["severity"], answer["normalized"]) == (False, "breaking", None)
    assert [(e["path"], e["code"]) for e in answer["errors"]] == [
        ("/email", "required_missing"),
        ("/note", "extra_field"),
        ("/qty", "min_value"),
    ]
    assert blocked.headers["X-Service-Correlation-Id"]  # generated when not sent
    warned = api.post(
        "/api/validate", json={**INVALID, "options": {"mode": "warn"}}, headers=acme.headers
    )
    assert warned.status_code == 200 and warned.get_json()["ok"] is False
    cli_mode = api.post(
        "/api/validate",
        json={"payload": {"email": "a"}, "profile": PROFILE, "options": {"profileMode": "cli"}},
        headers=acme.headers,
    )
    assert [(e["path"], e["code"]) for e in cli_mode.get_json()["errors"]] == [
        ("/qty", "required_missing")
    ]


def test_refusals_before_any_validation(
    tmp_path: Path, database: Database, api: FlaskClient, make_org: Callable[..., OrgKey]
) -> None:
    paid = make_org("paid", "pro")
    assert api.post("/api/validate", json=VALID).status_code == 401
    assert (
        api.post(
            "/api/validate", json=VALID, headers={"Authorization": "Bearer dg_nope"}
        ).status_code
        == 401
    )
    free = make_org("free-org", "free")
    refused = api.post("/api/validate", json=VALID, headers=free.headers)
    assert refused.status_code == 403
    # A profile the published schema refuses is 400, naming the place; one it accepts that the
    # validator cannot use is 422 `profile_invalid` (docs/api.md's rule between the two).
    bad_profile = {**VALID, "profile": {**PROFILE, "version": 0}}
    invalid = api.post("/api/validate", json=bad_profile, headers=paid.headers)
    assert invalid.status_code == 400 and invalid.get_json()["error"] == "validation_error"
    assert invalid.get_json()["details"] == [
        {"path": "/profile/version", "message": "must be at least 1"}
    ]
    not_schema = {**VALID, "profile": {**PROFILE, "schema": {"type": 12}}}
    unusable = api.post("/api/validate", json=not_schema, headers=paid.headers)
    assert unusable.status_code == 422 and unusable.get_json()["error"] == "profile_invalid"
    unknown = api.post(
        "/api/validate", json={"payload": {}, "profileId": "nope"}, headers=paid.headers
    )
    assert unknown.status_code == 404
    big_profile = {**PROFILE, "schema": {**PROFILE["schema"], "description": "x" * 70_000}}
    too_big = api.post(
        "/api/validate", json={"payload": {}, "profile": big_profile}, headers=paid.headers
    )
    assert too_big.status_code == 413 and too_big.get_json()["error"] == "payload_too_large"
    huge = {"payload": {"blob": "x" * 300_000}, "profile": PROFILE}
    assert api.post("/api/validate", json=huge, headers=paid.headers).status_code == 413
    http_hook = {
        **INVALID,
        "options": {"mode": "quarantine", "webhookUrl": "http://hooks.example/q"},
    }
    assert api.post("/api/validate", json=http_hook, headers=paid.headers).status_code == 400
    no_hook = {**INVALID, "options": {"mode": "quarantine"}}
    assert api.post("/api/validate", json=no_hook, headers=paid.headers).status_code == 400
    strict, _ = app_with(tmp_path / "strict", database, allow_private_targets=False)
    private = {**INVALID, "options": {"mode": "quarantine", "webhookUrl": "https://10.0.0.5/q"}}
    # The schema accepts any https:// URL; where it points is for the service to judge.
    assert (
        strict.test_client().post("/api/validate", json=private, headers=paid.headers).status_code
        == 422
    )
    # Nothing was counted for any of these.
    with api.application.extensions["driftgate.resources"].database.session() as session:
        assert session.scalars(select(ValidationMeter)).all() == []


def test_quota_burst_and_switch(tmp_path: Path, database: Database, acme: OrgKey) -> None:
    quota, _ = app_with(tmp_path / "q", database, validate_quota_pro=2)
    client = quota.test_client()
    remaining = [client.post("/api/validate", json=VALID, headers=acme.headers) for _ in range(3)]
    assert [r.status_code for r in remaining] == [200, 200, 402]
    assert [r.headers.get("X-Service-Validations-Remaining") for r in remaining[:2]] == ["1", "0"]
    assert remaining[2].get_json()["error"] == "quota_exceeded"
    burst, _ = app_with(tmp_path / "b", database, validate_burst=2, validate_per_minute=1)
    client = burst.test_client()
    answers = [client.post("/api/validate", json=VALID, headers=acme.headers) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert int(answers[2].headers["Retry-After"]) >= 1
    off, _ = app_with(tmp_path / "o", database, validate_enabled=False)
    disabled = off.test_client().post("/api/validate", json=VALID, headers=acme.headers)
    assert disabled.status_code == 503 and disabled.get_json()["error"] == "validation_disabled"


def test_a_trial_session_gets_its_monthly_allowance(tmp_path: Path, database: Database) -> None:
    app, _ = app_with(
        tmp_path, database, trial_validations_per_month=2, trial_sessions_enabled=True
    )
    client = app.test_client()
    trial = client.post("/api/trial/session").get_json()
    headers = {"X-Service-Trial": trial["token"]}
    answers = [client.post("/api/validate", json=VALID, headers=headers) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 402]
    assert [a.get_json().get("validationsRemaining") for a in answers[:2]] == [1, 0]


def test_the_quota_holds_under_concurrent_requests(
    tmp_path: Path, database: Database, acme: OrgKey
) -> None:
    app, _ = app_with(tmp_path, database, validate_quota_pro=5, validate_burst=100)
    statuses: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(12)

    def one() -> None:
        client = app.test_client()
        start.wait()
        status = client.post("/api/validate", json=VALID, headers=acme.headers).status_code
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=one) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200] * 5 + [402] * 7
    with database.session() as session:
        assert session.scalars(select(ValidationMeter.used)).one() == 5


def test_profiles_are_stored_versioned_and_scoped(
    api: FlaskClient, acme: OrgKey, make_org: Callable[..., OrgKey]
) -> None:
    put = api.put("/api/ingress-profiles/order", json=PROFILE, headers=acme.headers)
    assert put.status_code == 201 and put.get_json()["version"] == 1
    assert (
        api.put("/api/ingress-profiles/order", json=PROFILE, headers=acme.headers).status_code
        == 200
    )
    changed = {**PROFILE, "schema": {**PROFILE["schema"], "required": []}}
    conflict = api.put("/api/ingress-profiles/order", json=changed, headers=acme.headers)
    assert conflict.status_code == 409 and conflict.get_json()["error"] == "version_conflict"
    newer = api.put(
        "/api/ingress-profiles/order", json={**changed, "version": 2}, headers=acme.headers
    )
    assert newer.status_code == 200 and newer.get_json()["version"] == 2
    wrong_id = api.put("/api/ingress-profiles/other", json=PROFILE, headers=acme.headers)
    assert wrong_id.status_code == 422  # no schema of a body can say it must be the path's id
    assert wrong_id.get_json()["details"] == [
        {"path": "/id", "message": "must be the id in the path"}
    ]
    by_id = api.post(
        "/api/validate", json={"payload": {"qty": 1}, "profileId": "order"}, headers=acme.headers
    )
    assert by_id.status_code == 200, by_id.get_json()  # version 2: email no longer required
    listed = api.get("/api/ingress-profiles", headers=acme.headers).get_json()["profiles"]
    assert [(p["id"], p["version"]) for p in listed] == [("order", 2)]
    other = make_org("other", "pro")
    assert api.get("/api/ingress-profiles/order", headers=other.headers).status_code == 404
    assert (
        api.post(
            "/api/validate", json={"payload": {}, "profileId": "order"}, headers=other.headers
        ).status_code
        == 404
    )
    assert api.delete("/api/ingress-profiles/order", headers=acme.headers).status_code == 204
    assert api.get("/api/ingress-profiles/order", headers=acme.headers).status_code == 404


def test_quarantine_sends_a_signed_event_without_the_payload(
    tmp_path: Path, database: Database, acme: OrgKey
) -> None:
    cert, key = self_signed_certificate(tmp_path)
    app, settings = app_with(tmp_path, database, ca_bundle=str(cert))
    box = load_secret_box(settings)
    with database.transaction() as session:
        secret = notifications.signing_secret(session, acme.org_id, box)
    receiver = Receiver(secret=secret, tls=(cert, key))
    controller = Controller(settings, database, box, concurrency=1, tick_seconds=0.2)
    controller.start()
    try:
        body = {**INVALID, "options": {"mode": "quarantine", "webhookUrl": receiver.url}}
        headers = {
            **acme.headers,
            "X-Service-Source": "billing-bot",
            "X-Service-Correlation-Id": "q-1",
        }
        answer = app.test_client().post("/api/validate", json=body, headers=headers)
        assert answer.status_code == 422
        wait_until(lambda: bool(receiver.received))
    finally:
        controller.stop(grace=5)
        receiver.close()
    assert receiver.rejected == []
    (delivered,) = receiver.received
    event = delivered["body"]
    assert event["type"] == "ingress.quarantine"
    data = event["data"]
    assert set(data) == {
        "event",
        "correlationId",
        "profileId",
        "severity",
        "errors",
        "ts",
        "source",
    }
    assert (data["correlationId"], data["profileId"], data["severity"], data["source"]) == (
        "q-1",
        "order",
        "breaking",
        "billing-bot",
    )
    assert MARKER not in json.dumps(event)
    with database.session() as session:
        sources = session.scalars(select(ValidationSource)).all()
        assert [(s.source, s.used) for s in sources] == [("billing-bot", 1)]
        # Only the named webhook: not the org's default destination.
        assert len(session.scalars(select(OutboxMessage)).all()) == 1


def test_the_payload_is_never_stored_or_logged(
    api: FlaskClient, acme: OrgKey, database: Database, capfd: pytest.CaptureFixture[str]
) -> None:
    for body in (VALID, INVALID, {**INVALID, "options": {"mode": "warn"}}):
        api.post("/api/validate", json=body, headers={**acme.headers, "X-Service-Source": "t"})
    out, err = capfd.readouterr()  # the JSON request logs go to stderr
    assert "/api/validate" in err
    assert MARKER not in out + err
    with database.engine.connect() as conn:
        tables = [
            r[0]
            for r in conn.execute(
                text(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                    if ON_POSTGRES
                    else "SELECT name FROM sqlite_master WHERE type = 'table'"
                )
            )
        ]
        for table in tables:
            rows = conn.execute(text(f'SELECT * FROM "{table}"')).fetchall()
            assert MARKER not in repr(rows), table
    if not ON_POSTGRES:  # the SQLite file itself, WAL included
        path = Path(database.engine.url.database or "")
        for file in (path, Path(f"{path}-wal")):
            if file.exists():
                assert MARKER.encode() not in file.read_bytes()


def test_a_drift_lists_the_profiles_its_breaking_changes_touch(
    live_app: Flask, server: Any, controller: Controller, acme: OrgKey
) -> None:
    from tests.specs import as_json, charges_spec

    client = live_app.test_client()
    url = server.set("/openapi.json", as_json(charges_spec()))
    watch_id = client.post(
        "/api/watches", json={"name": "pay", "url": url}, headers=acme.headers
    ).get_json()["id"]
    assert (
        client.post(f"/api/watches/{watch_id}/check?wait=60", headers=acme.headers).status_code
        == 200
    )
    touched = {
        "id": "charge-in",
        "version": 1,
        "watchId": watch_id,
        "schema": {"type": "object", "properties": {"amount": {"type": "integer"}}},
    }
    untouched = {
        "id": "refund-in",
        "version": 1,
        "watchId": watch_id,
        "schema": {"type": "object", "properties": {"reason": {"type": "string"}}},
    }
    elsewhere = {"id": "other", "version": 1, "schema": touched["schema"]}  # names no watch
    for profile in (touched, untouched, elsewhere):
        assert (
            client.put(
                f"/api/ingress-profiles/{profile['id']}", json=profile, headers=acme.headers
            ).status_code
            == 201
        )
    server.set("/openapi.json", as_json(charges_spec(required=("id",))))  # amount optional now
    drifted = client.post(f"/api/watches/{watch_id}/check?wait=60", headers=acme.headers).get_json()
    assert drifted["watch"]["driftStatus"] == "drifted", drifted
    event_id = client.get(f"/api/drift?watchId={watch_id}", headers=acme.headers).get_json()[
        "events"
    ][0]["id"]
    event = client.get(f"/api/drift/events/{event_id}", headers=acme.headers).get_json()
    assert event["affectedProfiles"] == ["charge-in"]


def test_a_profile_version_the_store_cannot_keep_is_refused(api: FlaskClient, acme: OrgKey) -> None:
    # The version is a 32-bit column: a larger one is an invalid profile (400), not a 500.
    for version in (2**31, 7932193533651542081536):
        answer = api.put(
            "/api/ingress-profiles/order",
            json={**PROFILE, "version": version},
            headers=acme.headers,
        )
        assert answer.status_code == 400, answer.get_json()
        assert answer.get_json()["details"] == [
            {"path": "/version", "message": "must be at most 2147483647"}
        ]
    largest = {**PROFILE, "version": 2**31 - 1}
    assert (
        api.put("/api/ingress-profiles/order", json=largest, headers=acme.headers).status_code
        == 201
    )
