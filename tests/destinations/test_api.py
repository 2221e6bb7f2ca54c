"""The destinations API: create, list, read, replace, delete and test a destination, org
scoped, secrets never answered, errors in CONTRACT.md's envelope."""

from __future__ import annotations

from collections.abc import Callable

from flask.testing import FlaskClient

from controller.store.db import Database
from controller.store.models import AuditEntry, Destination, OutboxMessage
from tests.conftest import OrgKey

ROUTING_KEY = "R0UT1NGKEY0123456789ABCDEFGHIJKL"
DISCORD = "https://discord.com/api/webhooks/1234567890/s3cr3t-webhook-token-abcdefgh"
PAGERDUTY = {
    "name": "on-call",
    "kind": "pagerduty",
    "settings": {"severity": "critical"},
    "secrets": {"routingKey": ROUTING_KEY},
    "routing": {"severities": ["breaking"], "tags": ["team:*"], "environments": ["production"]},
}


def test_a_destination_is_created_read_listed_replaced_and_deleted(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    created = client.post("/api/org/destinations", json=PAGERDUTY, headers=acme.headers)
    assert created.status_code == 201, created.get_json()
    body = created.get_json()
    assert body["kind"] == "pagerduty" and body["name"] == "on-call"
    assert body["settings"] == {
        "url": "https://events.pagerduty.com/v2/enqueue",
        "severity": "critical",
    }
    assert body["secrets"] == {"routingKey": "…IJKL"}
    assert body["address"] == "https://events.pagerduty.com"
    assert body["routing"]["tags"] == ["team:*"] and body["digest"] == "off"
    assert body["health"]["status"] == "unused"
    one = client.get(f"/api/org/destinations/{body['id']}", headers=acme.headers).get_json()
    assert one == body
    listed = client.get("/api/org/destinations", headers=acme.headers).get_json()
    assert [d["id"] for d in listed["destinations"]] == [body["id"]]
    assert {
        "pagerduty",
        "opsgenie",
        "teams",
        "discord",
        "slack_bot",
        "mail",
        "webhook",
        "slack",
    } <= set(listed["kinds"])
    # A replacement without secrets keeps the stored ones.
    replaced = client.put(
        f"/api/org/destinations/{body['id']}",
        json={**PAGERDUTY, "secrets": None, "name": "paging", "digest": "off"},
        headers=acme.headers,
    )
    assert replaced.status_code == 200, replaced.get_json()
    assert replaced.get_json()["secrets"] == {"routingKey": "…IJKL"}
    assert replaced.get_json()["name"] == "paging"
    deleted = client.delete(f"/api/org/destinations/{body['id']}", headers=acme.headers)
    assert deleted.status_code == 204
    assert (
        client.get(f"/api/org/destinations/{body['id']}", headers=acme.headers).status_code == 404
    )
    with database.session() as session:
        actions = [
            a.action
            for a in session.query(AuditEntry).filter(AuditEntry.action.like("org.destination%"))
        ]
    assert actions == ["org.destination.create", "org.destination.update", "org.destination.delete"]


def test_secrets_are_encrypted_at_rest_and_never_answered_or_audited(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    created = client.post(
        "/api/org/destinations",
        json={"name": "chat", "kind": "discord", "secrets": {"url": DISCORD}},
        headers=acme.headers,
    )
    assert created.status_code == 201
    answers = [
        created.get_data(as_text=True),
        client.get("/api/org/destinations", headers=acme.headers).get_data(as_text=True),
    ]
    assert created.get_json()["secrets"] == {"url": "https://discord.com/…"}
    assert created.get_json()["address"] == "(secret)"
    with database.session() as session:
        row = session.get(Destination, created.get_json()["id"])
        assert row is not None and row.secrets_ciphertext is not None
        stored = [row.secrets_ciphertext, str(row.settings), str(row.secret_hints)]
        audits = [str(a.details) for a in session.query(AuditEntry)]
    for text in [*answers, *stored, *audits]:
        assert "s3cr3t-webhook-token" not in text


def test_another_orgs_destination_is_not_found(
    client: FlaskClient, acme: OrgKey, make_org: Callable[..., OrgKey]
) -> None:
    other = make_org("globex")
    created = client.post("/api/org/destinations", json=PAGERDUTY, headers=acme.headers).get_json()
    path = f"/api/org/destinations/{created['id']}"
    for method in ("get", "delete"):
        answer = getattr(client, method)(path, headers=other.headers)
        assert answer.status_code == 404
        assert answer.get_json()["error"] == "destination_not_found"
    assert client.put(path, json=PAGERDUTY, headers=other.headers).status_code == 404
    assert client.post(f"{path}/test", headers=other.headers).status_code == 404
    assert (
        client.get("/api/org/destinations", headers=other.headers).get_json()["destinations"] == []
    )


def test_bad_destinations_are_refused_in_the_envelope(client: FlaskClient, acme: OrgKey) -> None:
    def post(body: dict[str, object]) -> tuple[int, dict[str, object]]:
        answer = client.post("/api/org/destinations", json=body, headers=acme.headers)
        return answer.status_code, answer.get_json()

    status, body = post({**PAGERDUTY, "secrets": {"routingKey": ""}})
    assert status == 422 and body["error"] == "invalid_destination"
    assert body["details"][0]["path"] == "/secrets/routingKey"
    status, body = post({**PAGERDUTY, "secrets": None})
    assert status == 422 and body["error"] == "secrets_required"
    status, body = post({**PAGERDUTY, "settings": {"severity": "urgent"}})
    assert status == 422 and body["details"][0]["path"] == "/settings/severity"
    status, body = post({**PAGERDUTY, "digest": "hourly"})
    assert status == 422 and body["error"] == "digest_unsupported"
    status, body = post({**PAGERDUTY, "kind": "carrier-pigeon"})
    assert status == 400 and body["error"] == "validation_error"
    status, body = post({"name": "t", "kind": "teams", "secrets": {"url": "not a url"}})
    assert status == 422 and "/secrets/url" in str(body)
    assert post(PAGERDUTY)[0] == 201
    status, body = post(PAGERDUTY)
    assert status == 409 and body["error"] == "name_taken"


def test_a_test_send_queues_one_message_for_that_destination_alone(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    first = client.post("/api/org/destinations", json=PAGERDUTY, headers=acme.headers).get_json()
    client.post(
        "/api/org/destinations",
        json={"name": "chat", "kind": "discord", "secrets": {"url": DISCORD}},
        headers=acme.headers,
    )
    answer = client.post(f"/api/org/destinations/{first['id']}/test", headers=acme.headers)
    assert answer.status_code == 202
    assert answer.get_json()["queued"] == 1
    with database.session() as session:
        rows = list(session.query(OutboxMessage))
    assert [(r.event_type, r.destination_id, r.channel) for r in rows] == [
        ("destination.test", first["id"], "pagerduty")
    ]
    # Another kind needs its own secrets; given them, what was queued for the old kind gives up.
    path = f"/api/org/destinations/{first['id']}"
    teams = {**PAGERDUTY, "kind": "teams", "settings": {}, "secrets": None}
    refused = client.put(path, json=teams, headers=acme.headers)
    assert refused.status_code == 422 and refused.get_json()["error"] == "secrets_required"
    with database.session() as session:
        assert session.get(OutboxMessage, rows[0].id).status == "pending"  # type: ignore[union-attr]
    teams["secrets"] = {"url": "https://example.webhook.office.com/workflows/abc"}
    assert client.put(path, json=teams, headers=acme.headers).status_code == 200
    with database.session() as session:
        gave_up = session.get(OutboxMessage, rows[0].id)
        assert gave_up is not None and gave_up.status == "failed"
        assert gave_up.last_error == "gone: the destination's kind changed"
