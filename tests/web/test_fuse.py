"""The fleet guard through the API on a real store: idempotent trips linked to real preflight
decisions, and snapshots of watches served by a loopback server and checked by a controller
running in-process."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from controller.fuse import service as fuse_service
from controller.scheduler import Controller
from controller.store.db import Database
from controller.store.models import AuditEntry, FuseSnapshot, FuseTrip
from tests.conftest import OrgKey
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec

TRIP = {
    "tripId": "run-42:step-7",
    "reason": "budget_exceeded",
    "tool": "search",
    "agentId": "billing-bot",
    "metadata": {"spentUsd": 12.5, "limitUsd": 10, "steps": ["plan", "search"]},
    "occurredAt": "2026-01-02T03:04:05+02:00",
}


def post(client: FlaskClient, who: OrgKey, path: str, body: Any, status: int = 201) -> Any:
    response = client.post(path, json=body, headers=who.headers)
    assert response.status_code == status, response.get_json()
    return response.get_json()


def get(client: FlaskClient, who: OrgKey, path: str, status: int = 200) -> Any:
    response = client.get(path, headers=who.headers)
    assert response.status_code == status, response.get_json()
    return response.get_json()


def decision(client: FlaskClient, who: OrgKey, **body: Any) -> str:
    answer = client.post("/api/preflight", json=body, headers=who.headers)
    assert answer.status_code == 200, answer.get_json()
    decision_id: str = answer.get_json()["decisionId"]
    return decision_id


def make_watch(client: FlaskClient, who: OrgKey, url: str, name: str = "payments") -> str:
    watch_id: str = post(client, who, "/api/watches", {"name": name, "url": url})["id"]
    return watch_id


# Trips


def test_a_trip_is_recorded_once_and_replayed_by_trip_id(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    first = client.post("/v1/fuse/trips", json=TRIP, headers=acme.headers)
    assert first.status_code == 201, first.get_json()
    assert "Idempotent-Replayed" not in first.headers
    trip = first.get_json()
    assert set(trip) == {
        "id",
        "tripId",
        "reason",
        "watchId",
        "agentId",
        "tool",
        "decisionId",
        "metadata",
        "guardFields",
        "occurredAt",
        "receivedAt",
    }
    assert (trip["tripId"], trip["reason"], trip["agentId"], trip["tool"]) == (
        "run-42:step-7",
        "budget_exceeded",
        "billing-bot",
        "search",
    )
    assert trip["metadata"] == TRIP["metadata"]
    assert trip["occurredAt"] == "2026-01-02T01:04:05Z"  # stored in UTC
    assert trip["watchId"] is None and trip["decisionId"] is None

    # The same trip again, the time written in another offset: the stored trip, 200.
    again = client.post(
        "/v1/fuse/trips",
        json={**TRIP, "occurredAt": "2026-01-02T01:04:05Z"},
        headers=acme.headers,
    )
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json() == trip

    reused = post(
        client, acme, "/v1/fuse/trips", {**TRIP, "metadata": {"spentUsd": 13}}, status=409
    )
    assert reused["error"] == "trip_id_reused" and "run-42:step-7" in reused["message"]
    assert "(metadata differ)" in reused["message"]
    # A record of it that leaves a field out says nothing new (issue 40, point 10): replayed.
    dropped = client.post("/v1/fuse/trips", json={**TRIP, "tool": None}, headers=acme.headers)
    assert dropped.status_code == 200 and dropped.headers["Idempotent-Replayed"] == "true"
    assert dropped.get_json() == trip

    with database.session() as session:
        row = session.scalars(select(FuseTrip)).one()
        assert row.org_id == acme.org_id and row.actor == f"api_key:{acme.key_id}"
        assert len(row.digest) == 64
        audits = list(
            session.scalars(select(AuditEntry).where(AuditEntry.action == "fuse_trip.create"))
        )
        assert [(a.target_id, a.details["tripId"]) for a in audits] == [
            (trip["id"], "run-42:step-7")
        ]


def test_trip_ids_are_per_org(
    client: FlaskClient, acme: OrgKey, make_org: Callable[..., OrgKey]
) -> None:
    ours = post(client, acme, "/v1/fuse/trips", TRIP)
    other = make_org("globex")
    theirs = post(client, other, "/v1/fuse/trips", {**TRIP, "metadata": {}})
    assert theirs["id"] != ours["id"]
    assert [t["id"] for t in get(client, other, "/v1/fuse/trips")["trips"]] == [theirs["id"]]
    assert [t["id"] for t in get(client, acme, "/v1/fuse/trips")["trips"]] == [ours["id"]]


def test_concurrent_reports_of_one_trip_record_it_once(
    app: Flask, acme: OrgKey, database: Database
) -> None:
    results: list[tuple[int, str]] = []
    barrier = threading.Barrier(6)

    def report() -> None:
        client = app.test_client()
        barrier.wait()
        answer = client.post("/v1/fuse/trips", json=TRIP, headers=acme.headers)
        results.append((answer.status_code, answer.get_json()["id"]))

    threads = [threading.Thread(target=report) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(status for status, _ in results) == [200, 200, 200, 200, 200, 201]
    assert len({trip_id for _, trip_id in results}) == 1
    with database.session() as session:
        assert session.scalar(select(func.count()).select_from(FuseTrip)) == 1


def test_a_duplicate_that_passes_the_lookup_is_caught_by_the_unique_constraint(
    client: FlaskClient, acme: OrgKey, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race of two first reports: the second insert hits the constraint and answers with
    the winner (or 409 when its content differs)."""
    stored = post(client, acme, "/v1/fuse/trips", TRIP)
    real_find = fuse_service._find_trip
    calls: list[str] = []

    def find_misses_first(session: Any, org_id: str, trip_id: str) -> Any:
        calls.append(trip_id)
        return None if len(calls) % 2 == 1 else real_find(session, org_id, trip_id)

    monkeypatch.setattr(fuse_service, "_find_trip", find_misses_first)
    again = client.post("/v1/fuse/trips", json=TRIP, headers=acme.headers)
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json()["id"] == stored["id"]
    differs = post(client, acme, "/v1/fuse/trips", {**TRIP, "tool": "fetch"}, status=409)
    assert differs["error"] == "trip_id_reused"
    assert len(calls) == 4  # each request: the missed lookup, then the re-read
    with database.session() as session:
        assert session.scalar(select(func.count()).select_from(FuseTrip)) == 1
        assert (
            session.scalar(select(func.count()).where(AuditEntry.action == "fuse_trip.create")) == 1
        )


def test_a_blocked_trip_links_its_preflight_decision(
    client: FlaskClient, acme: OrgKey, make_org: Callable[..., OrgKey]
) -> None:
    blocked = decision(client, acme, watchIds=["nope"])
    trip = post(
        client,
        acme,
        "/v1/fuse/trips",
        {
            "tripId": "t-blocked",
            "reason": "contract_drift_blocked",
            "decisionId": blocked,
            "metadata": {"blocked": [{"watchId": "nope", "reasons": ["not_found"]}]},
        },
    )
    assert trip["decisionId"] == blocked and trip["agentId"] is None

    allowed = decision(client, acme, watchIds=[])
    refused = post(
        client,
        acme,
        "/v1/fuse/trips",
        {"tripId": "t-allowed", "reason": "contract_drift_blocked", "decisionId": allowed},
        status=422,
    )
    assert refused["error"] == "decision_not_blocked"
    assert refused["details"][0]["path"] == "/decisionId"
    # Other reasons may link any decision of the org.
    budget = {"tripId": "t-budget", "reason": "budget_exceeded", "decisionId": allowed}
    assert post(client, acme, "/v1/fuse/trips", budget)["decisionId"] == allowed

    unknown = post(
        client,
        acme,
        "/v1/fuse/trips",
        {"tripId": "t-x", "reason": "contract_drift_blocked", "decisionId": str(uuid.uuid4())},
        status=422,
    )
    assert unknown["error"] == "unknown_decision"
    other = make_org("globex")
    theirs = post(
        client,
        other,
        "/v1/fuse/trips",
        {"tripId": "t-x", "reason": "contract_drift_blocked", "decisionId": blocked},
        status=422,
    )
    assert theirs["error"] == "unknown_decision"  # another org's decision is a missing one


def test_a_trip_without_agent_takes_the_decisions_agent(client: FlaskClient, acme: OrgKey) -> None:
    launched = post(
        client,
        acme,
        "/api/watches/from-template",
        {
            "templateId": "system/openapi-json",
            "url": "https://api.example.com/openapi.json",
            "agent": {"id": "fleet-bot"},
        },
    )
    assert launched["agent"]["id"] == "fleet-bot"
    blocked = decision(client, acme, agentId="fleet-bot")  # never checked: blocked, 200
    base = {"reason": "contract_drift_blocked", "decisionId": blocked}
    inherited = post(client, acme, "/v1/fuse/trips", {**base, "tripId": "a-1"})
    assert inherited["agentId"] == "fleet-bot"
    own = post(client, acme, "/v1/fuse/trips", {**base, "tripId": "a-2", "agentId": "runner-7"})
    assert own["agentId"] == "runner-7"  # the trip's own agent wins
    # A replay without agentId is the same content: the derived agent is not part of it.
    replay = client.post("/v1/fuse/trips", json={**base, "tripId": "a-1"}, headers=acme.headers)
    assert replay.status_code == 200 and replay.get_json()["agentId"] == "fleet-bot"


def test_a_trip_names_a_watch_of_the_org(
    client: FlaskClient, acme: OrgKey, make_org: Callable[..., OrgKey]
) -> None:
    watch_id = make_watch(client, acme, "https://api.example.com/openapi.json")
    trip = post(
        client,
        acme,
        "/v1/fuse/trips",
        {"tripId": "w-1", "reason": "tool_error", "watchId": watch_id},
    )
    assert trip["watchId"] == watch_id
    missing = post(
        client,
        acme,
        "/v1/fuse/trips",
        {"tripId": "w-2", "reason": "tool_error", "watchId": str(uuid.uuid4())},
        status=422,
    )
    assert missing["error"] == "unknown_watch" and missing["details"][0]["path"] == "/watchId"
    other = make_org("globex")
    theirs = post(
        client,
        other,
        "/v1/fuse/trips",
        {"tripId": "w-1", "reason": "tool_error", "watchId": watch_id},
        status=422,
    )
    assert theirs["error"] == "unknown_watch"


def test_trip_bodies_are_checked(client: FlaskClient, acme: OrgKey) -> None:
    def refused(body: dict[str, Any], status: int = 400) -> dict[str, Any]:
        answer: dict[str, Any] = post(client, acme, "/v1/fuse/trips", body, status=status)
        return answer

    assert refused({"reason": "x"})["details"][0]["path"] == "/tripId"
    assert refused({"tripId": "a b", "reason": "x"})["details"][0]["path"] == "/tripId"
    assert refused({"tripId": "a" * 201, "reason": "x"})["error"] == "validation_error"
    assert refused({"tripId": "a", "reason": "Budget"})["details"][0]["path"] == "/reason"
    assert refused({"tripId": "a", "reason": "x", "tripID": "b"})["error"] == "validation_error"
    assert refused({"tripId": "a", "reason": "x", "metadata": []})["details"][0]["path"] == (
        "/metadata"
    )
    assert (
        refused({"tripId": "a", "reason": "x", "occurredAt": "2026-01-02T03:04:05"})["details"][0][
            "path"
        ]
        == "/occurredAt"
    )  # a time without an offset is ambiguous
    for not_a_date_time in (1767323045, "1767323045", "2026-01-02"):  # RFC 3339, as published
        refused_time = refused({"tripId": "a", "reason": "x", "occurredAt": not_a_date_time})
        assert refused_time["details"][0]["path"] == "/occurredAt"
    nul = refused({"tripId": "a", "reason": "x", "metadata": {"k": ["ok", "a\u0000b"]}}, 422)
    assert nul["details"] == [
        {"path": "/metadata/k/1", "message": "strings must not contain NUL characters"}
    ]

    # A lone surrogate escape is refused by the JSON reader itself (web/body.py).
    body = '{"tripId": "a", "reason": "x", "metadata": {"k": "\\ud800"}}'
    answer = client.post("/v1/fuse/trips", data=body, headers=acme.headers)
    assert answer.status_code == 400 and answer.get_json()["error"] == "invalid_json"
    for raw, path, message in (
        ('{"\\u0000": 1}', "/metadata/\u0000", "keys must not contain NUL characters"),
        ('{"n": [NaN]}', "/metadata/n/0", "numbers must be finite"),
    ):
        body = '{"tripId": "a", "reason": "x", "metadata": ' + raw + "}"
        answer = client.post("/v1/fuse/trips", data=body, headers=acme.headers)
        assert answer.status_code == 422, answer.get_json()
        assert answer.get_json()["details"] == [{"path": path, "message": message}]

    # Metadata: 16 KB of compact JSON fits, one byte more is 413.
    limit = fuse_service.METADATA_LIMIT
    filler = len('{"pad":""}')
    fits = post(
        client,
        acme,
        "/v1/fuse/trips",
        {"tripId": "m-1", "reason": "x", "metadata": {"pad": "a" * (limit - filler)}},
    )
    assert len(fits["metadata"]["pad"]) == limit - filler
    big = refused(
        {"tripId": "m-2", "reason": "x", "metadata": {"pad": "a" * (limit - filler + 1)}}, 413
    )
    assert big["error"] == "payload_too_large" and big["details"][0]["path"] == "/metadata"
    wide = refused({"tripId": "m-3", "reason": "x", "metadata": {"pad": "é" * (limit // 2)}}, 413)
    assert wide["error"] == "payload_too_large"  # bytes, not characters
    assert client.get("/v1/fuse/trips?tripId=m-2", headers=acme.headers).status_code == 400


def test_trips_are_listed_newest_first_with_filters_and_a_cursor(
    client: FlaskClient, acme: OrgKey
) -> None:
    made = []
    for index in range(5):
        body = {
            "tripId": f"list-{index}",
            "reason": "budget_exceeded" if index % 2 else "tool_error",
            "agentId": "bot-a" if index < 3 else "bot-b",
        }
        made.append(post(client, acme, "/v1/fuse/trips", body)["id"])
    newest_first = list(reversed(made))

    seen: list[str] = []
    cursor = ""
    while True:
        page = get(client, acme, f"/v1/fuse/trips?limit=2{cursor}")
        seen += [t["id"] for t in page["trips"]]
        if page["nextCursor"] is None:
            break
        assert len(page["trips"]) == 2
        cursor = f"&cursor={page['nextCursor']}"
    assert seen == newest_first

    budget = get(client, acme, "/v1/fuse/trips?reason=budget_exceeded")["trips"]
    assert [t["tripId"] for t in budget] == ["list-3", "list-1"]
    bot_b = get(client, acme, "/v1/fuse/trips?agentId=bot-b&reason=tool_error")["trips"]
    assert [t["tripId"] for t in bot_b] == ["list-4"]
    assert get(client, acme, "/v1/fuse/trips?limit=201", status=400)["error"] == "validation_error"
    assert get(client, acme, "/v1/fuse/trips?cursor=abc", status=400)["error"] == (
        "validation_error"
    )
    assert client.get("/v1/fuse/trips").status_code == 401


# Snapshots


def snapshot(client: FlaskClient, who: OrgKey, status: int = 201, **body: Any) -> Any:
    return post(client, who, "/v1/fuse/snapshots", body, status=status)


# A guard's own record fields (fuseguard's trip log v2) and batches of trips

GUARD_TRIP = {
    "tripId": "fg_0123456789ab",
    "reason": "loop_detected",
    "createdAt": "2026-01-02T03:04:05+00:00",
    "toolName": "search",
    "watchId": None,
    "calls": [{"step": 1, "tool": "search", "argsHash": "ab12", "statusCode": 500}],
    "metadata": {"argsHash": "ab12", "errorClass": "http_5xx"},
    "agentId": "billing-bot",
    "runId": "run-1",
    "environment": "prod",
    "policyRuleIds": ["deny-delete"],
    "evalTrace": [{"ruleId": "deny-delete", "matched": True}],
}


def test_a_guards_trip_record_keeps_its_own_fields(client: FlaskClient, acme: OrgKey) -> None:
    stored = post(client, acme, "/v1/fuse/trips", GUARD_TRIP)
    assert stored["tool"] == "search" and stored["occurredAt"].startswith("2026-01-02T03:04:05")
    assert stored["guardFields"] == {
        "calls": GUARD_TRIP["calls"],
        "runId": "run-1",
        "environment": "prod",
        "policyRuleIds": ["deny-delete"],
        "evalTrace": GUARD_TRIP["evalTrace"],
    }
    # The same record again is a replay; a changed guard field is another trip's content.
    assert post(client, acme, "/v1/fuse/trips", GUARD_TRIP, status=200)["id"] == stored["id"]
    changed = {**GUARD_TRIP, "runId": "run-2"}
    assert post(client, acme, "/v1/fuse/trips", changed, 409)["error"] == "trip_id_reused"
    # A trip without guard fields has none, and its digest is the one it always had.
    plain = post(client, acme, "/v1/fuse/trips", TRIP)
    assert plain["guardFields"] is None
    # Both names of one field, disagreeing: schema-valid, so 422 with the path.
    both = {**GUARD_TRIP, "tripId": "fg_x", "tool": "other"}
    refused = post(client, acme, "/v1/fuse/trips", both, 422)
    assert refused["details"] == [{"path": "/toolName", "message": "differs from tool"}]
    late = {**GUARD_TRIP, "tripId": "fg_y", "occurredAt": "2026-01-02T03:04:06Z"}
    assert post(client, acme, "/v1/fuse/trips", late, 422)["error"] == "validation_error"
    agreeing = {**GUARD_TRIP, "tripId": "fg_z", "tool": "search"}
    assert post(client, acme, "/v1/fuse/trips", agreeing)["tool"] == "search"


def test_a_batch_records_each_trip_once_and_reports_each_event(
    client: FlaskClient, acme: OrgKey, make_org: Callable[..., OrgKey]
) -> None:
    event = {
        "tripId": "fg_aaaaaaaaaaaa",
        "deviceId": "local",
        "reason": "contract_drift_blocked",
        "tool": None,
        "argsHash": "",
        "decision": "block",
        "createdAt": "2026-01-02T03:04:05+00:00",
        "evalTrace": [],
        "policyRuleIds": [],
        "idempotencyKey": "fg_aaaaaaaaaaaa",
    }
    other = {**event, "tripId": None, "idempotencyKey": "fg_bbbbbbbbbbbb", "reason": "x"}
    unknown_watch = {**event, "tripId": "fg_c", "idempotencyKey": None, "watchId": "nope"}
    first = post(client, acme, "/v1/fuse/trips/batch", {"events": [event, other]}, 200)
    assert [r["status"] for r in first["results"]] == ["created", "created"]
    assert (first["created"], first["replayed"], first["refused"]) == (2, 0, 0)
    reused = {**other, "reason": "y"}
    again = post(
        client,
        acme,
        "/v1/fuseguard/events/batch",
        {"events": [event, reused, unknown_watch]},
        200,
    )
    assert [(r["status"], r["error"]) for r in again["results"]] == [
        ("replayed", None),
        ("refused", "trip_id_reused"),
        ("refused", "unknown_watch"),
    ]
    assert again["results"][0]["id"] == first["results"][0]["id"]
    listed = get(client, acme, "/v1/fuse/trips?reason=contract_drift_blocked")["trips"]
    assert [t["tripId"] for t in listed] == ["fg_aaaaaaaaaaaa"]
    assert listed[0]["guardFields"] == {
        "deviceId": "local",
        "argsHash": "",
        "decision": "block",
        "evalTrace": [],
        "policyRuleIds": [],
    }
    # Keys are per org: another org's batch with the same key is its own trip.
    beta = make_org("beta")
    theirs = post(client, beta, "/v1/fuseguard/events/batch", {"events": [event]}, 200)
    assert theirs["results"][0]["status"] == "created"
    assert get(client, beta, "/v1/fuse/trips")["trips"][0]["id"] != first["results"][0]["id"]


# One trip in fuseguard's two shapes (issue 40, point 10): its trip index row, which the sync
# queue sends through the batch, and its trip log, posted to the trip route. Written from what
# fuseguard sends (`Trip.to_log_dict` and `_persist_trip`'s index row).

AT = "2026-03-04T05:06:07+00:00"


def index_row(trip_id: str) -> dict[str, Any]:
    return {
        "tripId": trip_id,
        "deviceId": "local",
        "reason": "contract_drift_blocked",
        "tool": None,
        "argsHash": "",
        "decision": "block",
        "createdAt": AT,
        "evalTrace": [],
        "policyRuleIds": [],
        "idempotencyKey": trip_id,
    }


def trip_log(trip_id: str, watch_id: str) -> dict[str, Any]:
    blocked = [{"watchId": watch_id, "reasons": ["breaking_drift"], "agentActions": ["pin"]}]
    return {
        "tripId": trip_id,
        "reason": "contract_drift_blocked",
        "createdAt": AT,
        "toolName": None,
        "watchId": watch_id,
        "calls": [],
        "metadata": {
            "preflight": {"allowed": False, "blocked": blocked},
            "blocked": blocked,
            "agentActions": ["pin"],
            "policyBlocked": False,
        },
        "agentAction": "pin",
    }


def batch(client: FlaskClient, who: OrgKey, *events: dict[str, Any]) -> list[Any]:
    answer = post(client, who, "/v1/fuseguard/events/batch", {"events": list(events)}, 200)
    return [(r["status"], r["error"]) for r in answer["results"]]


def content(trip: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in trip.items() if k not in ("id", "tripId", "receivedAt")}


def test_a_trip_log_after_its_index_row_fills_what_the_row_left_unset(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    watch_id = make_watch(client, acme, "https://payments.example.com/openapi.json")
    # The batch first (the sync queue), then the log: before, 409 and watchId null for good.
    assert batch(client, acme, index_row("fg_first000001")) == [("created", None)]
    merged = client.post(
        "/v1/fuse/trips", json=trip_log("fg_first000001", watch_id), headers=acme.headers
    )
    assert merged.status_code == 200, merged.get_json()
    assert "Idempotent-Replayed" not in merged.headers
    trip = merged.get_json()
    assert trip["watchId"] == watch_id and trip["reason"] == "contract_drift_blocked"
    assert trip["metadata"]["preflight"]["blocked"][0]["agentActions"] == ["pin"]
    assert trip["guardFields"] == {
        "deviceId": "local",
        "argsHash": "",
        "decision": "block",
        "evalTrace": [],
        "policyRuleIds": [],
        "agentAction": "pin",
        "calls": [],
    }
    # Each record again: nothing new, on either route.
    again = client.post(
        "/v1/fuse/trips", json=trip_log("fg_first000001", watch_id), headers=acme.headers
    )
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json() == trip
    assert batch(client, acme, index_row("fg_first000001")) == [("replayed", None)]
    assert get(client, acme, "/v1/fuse/trips")["trips"] == [trip]
    # The other order ends with the same trip.
    created = post(client, acme, "/v1/fuse/trips", trip_log("fg_second00002", watch_id))
    assert created["guardFields"] == {"agentAction": "pin", "calls": []}
    assert batch(client, acme, index_row("fg_second00002")) == [("merged", None)]
    assert batch(client, acme, index_row("fg_second00002")) == [("replayed", None)]
    replayed = client.post(
        "/v1/fuse/trips", json=trip_log("fg_second00002", watch_id), headers=acme.headers
    )
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert content(replayed.get_json()) == content(trip)
    with database.session() as session:
        merges = session.scalars(
            select(AuditEntry).where(AuditEntry.action == "fuse_trip.merge")
        ).all()
    assert sorted(a.details["tripId"] for a in merges) == ["fg_first000001", "fg_second00002"]


def test_a_trip_id_reused_for_other_values_is_still_refused_and_changes_nothing(
    client: FlaskClient, acme: OrgKey, make_org: Callable[..., OrgKey]
) -> None:
    watch_id = make_watch(client, acme, "https://payments.example.com/openapi.json")
    other_watch = make_watch(client, acme, "https://ledger.example.com/openapi.json", "ledger")
    assert batch(client, acme, index_row("fg_conflict001")) == [("created", None)]
    post(client, acme, "/v1/fuse/trips", trip_log("fg_conflict001", watch_id), 200)
    before = get(client, acme, "/v1/fuse/trips")["trips"]
    elsewhere = post(client, acme, "/v1/fuse/trips", trip_log("fg_conflict001", other_watch), 409)
    assert (
        elsewhere["error"] == "trip_id_reused"
        and "(watchId, metadata differ)" in elsewhere["message"]
    )
    later = {**trip_log("fg_conflict001", watch_id), "createdAt": "2026-03-04T05:06:08Z"}
    assert post(client, acme, "/v1/fuse/trips", later, 409)["error"] == "trip_id_reused"
    device = {**index_row("fg_conflict001"), "deviceId": "laptop-7"}
    assert batch(client, acme, device) == [("refused", "trip_id_reused")]
    # A field the stored trip lacks, naming a watch the org does not have: 422, nothing kept.
    unknown = {**index_row("fg_unknown0001")}
    assert batch(client, acme, unknown) == [("created", None)]
    foreign = post(client, acme, "/v1/fuse/trips", trip_log("fg_unknown0001", "nope"), 422)
    assert foreign["error"] == "unknown_watch"
    assert get(client, acme, "/v1/fuse/trips?limit=1")["trips"][0]["watchId"] is None
    assert [
        t for t in get(client, acme, "/v1/fuse/trips")["trips"] if t["tripId"] == "fg_conflict001"
    ] == before
    # Another org's record of the same tripId is its own trip: never merged into acme's, and
    # acme's watch is not its to name.
    beta = make_org("beta")
    assert batch(client, beta, index_row("fg_conflict001")) == [("created", None)]
    refused = post(client, beta, "/v1/fuse/trips", trip_log("fg_conflict001", watch_id), 422)
    assert refused["error"] == "unknown_watch"
    theirs = get(client, beta, "/v1/fuse/trips")["trips"]
    assert [(t["tripId"], t["watchId"], t["metadata"]) for t in theirs] == [
        ("fg_conflict001", None, {})
    ]
    assert [
        t for t in get(client, acme, "/v1/fuse/trips")["trips"] if t["tripId"] == "fg_conflict001"
    ] == before


def test_batch_bodies_are_checked(client: FlaskClient, acme: OrgKey) -> None:
    event = {"tripId": "a", "reason": "x"}
    bad = [
        {"events": []},
        {"events": [{"reason": "x"}]},
        {"events": [event] * 101},
        {"events": [{**event, "surprise": 1}]},
    ]
    for body in bad:
        answer = post(client, acme, "/v1/fuse/trips/batch", body, 400)
        assert answer["error"] == "validation_error", body
    assert client.post("/v1/fuseguard/events/batch", json={"events": [event]}).status_code == 401
    # Two keys that differ: schema-valid, so the event is refused, not the batch.
    mixed = post(
        client, acme, "/v1/fuse/trips/batch", {"events": [{**event, "idempotencyKey": "b"}]}, 200
    )
    assert (mixed["results"][0]["status"], mixed["results"][0]["error"]) == (
        "refused",
        "validation_error",
    )


def test_a_snapshot_checks_the_watch_now_and_keeps_the_summary(
    live_app: Flask,
    acme: OrgKey,
    server: SpecServer,
    controller: Controller,
    database: Database,
) -> None:
    client = live_app.test_client()
    url = server.set("/openapi.json", as_json(charges_spec()))
    watch_id = make_watch(client, acme, url)

    first = snapshot(client, acme, watchId=watch_id, reason="pre-run check", waitSeconds=20)
    assert set(first) == {
        "id",
        "watchId",
        "reason",
        "status",
        "requestedAt",
        "finishedAt",
        "summary",
    }
    assert first["status"] == "completed" and first["finishedAt"] is not None
    assert (first["watchId"], first["reason"]) == (watch_id, "pre-run check")
    summary = first["summary"]
    watch = get(client, acme, f"/api/watches/{watch_id}")
    assert summary["snapshotId"] == watch["baseline"]["snapshotId"]
    assert summary["fingerprint"] == watch["baseline"]["fingerprint"]
    assert len(summary["fingerprint"]) == 64
    assert summary["driftStatus"] == "ok" and summary["lastCheckStatus"] == "ok"
    # The summary is the watch as of this snapshot's check; the controller's first periodic
    # check (a new watch is due from its creation) may have run since, on the same document.
    assert summary["lastCheckedAt"] <= watch["lastCheckedAt"]
    assert summary["failureClass"] is None and summary["incidentId"] is None
    assert summary["openChanges"] == {"breaking": 0, "warning": 0, "info": 0}
    assert summary["jobStatus"] == "done" and isinstance(summary["jobId"], int)
    # The check ran for this request (the controller may also have run the first periodic one).
    checked_at = datetime.fromisoformat(summary["lastCheckedAt"])
    assert checked_at >= datetime.fromisoformat(first["requestedAt"])
    assert ("GET", "/openapi.json") in [r[:2] for r in server.requests]

    server.set("/openapi.json", as_json(charges_spec(required=("id",), refunds=False)))
    drifted = snapshot(client, acme, watchId=watch_id, waitSeconds=20)
    assert drifted["status"] == "completed" and drifted["reason"] is None
    assert drifted["summary"]["driftStatus"] == "drifted"
    assert drifted["summary"]["openChanges"]["breaking"] >= 2
    incident = get(client, acme, f"/api/watches/{watch_id}")["incident"]
    assert drifted["summary"]["incidentId"] == incident["id"]
    assert drifted["summary"]["fingerprint"] != summary["fingerprint"]

    server.set("/openapi.json", "upstream exploded", status=500, content_type="text/plain")
    failed = snapshot(client, acme, watchId=watch_id, waitSeconds=20)
    assert failed["status"] == "failed" and failed["finishedAt"] is not None
    assert failed["summary"]["driftStatus"] == "error"
    assert failed["summary"]["failureClass"] == "http_error"
    assert failed["summary"]["lastCheckStatus"] == "error"
    assert failed["summary"]["jobStatus"] == "done"
    # The last good snapshot is kept through the failure.
    assert failed["summary"]["snapshotId"] == drifted["summary"]["snapshotId"]

    with database.session() as session:
        rows = {r.id: r for r in session.scalars(select(FuseSnapshot))}
    assert [rows[s["id"]].status for s in (first, drifted, failed)] == [
        "completed",
        "completed",
        "failed",
    ]
    stored = rows[first["id"]]
    assert stored.org_id == acme.org_id and stored.actor == f"api_key:{acme.key_id}"
    assert stored.job_id == summary["jobId"] and stored.summary == summary

    listed = get(client, acme, f"/v1/fuse/snapshots?watchId={watch_id}")["snapshots"]
    assert listed == [failed, drifted, first]


def test_a_snapshot_not_finished_within_the_wait_is_pending(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    """No controller runs here, so the check stays queued."""
    watch_id = make_watch(client, acme, "https://api.example.com/openapi.json")
    pending = snapshot(client, acme, watchId=watch_id, waitSeconds=0)
    assert pending["status"] == "pending" and pending["finishedAt"] is None
    assert pending["summary"]["jobStatus"] == "queued"
    assert pending["summary"]["driftStatus"] == "never_run"
    assert pending["summary"]["snapshotId"] is None and pending["summary"]["fingerprint"] is None
    again = snapshot(client, acme, watchId=watch_id, waitSeconds=0.2)
    assert again["summary"]["jobId"] == pending["summary"]["jobId"]  # joins the queued check
    with database.session() as session:
        assert {r.status for r in session.scalars(select(FuseSnapshot))} == {"pending"}


def test_snapshots_of_paused_missing_and_foreign_watches(
    client: FlaskClient, acme: OrgKey, make_org: Callable[..., OrgKey], database: Database
) -> None:
    watch_id = make_watch(client, acme, "https://api.example.com/openapi.json")
    post(client, acme, f"/api/watches/{watch_id}/pause", None, status=200)
    paused = snapshot(client, acme, 409, watchId=watch_id, waitSeconds=0)
    assert paused["error"] == "watch_paused"
    missing = snapshot(client, acme, 404, watchId=str(uuid.uuid4()), waitSeconds=0)
    assert missing == {"error": "not_found", "message": "Watch not found"}
    other = make_org("globex")
    theirs = snapshot(client, other, 404, watchId=watch_id, waitSeconds=0)
    assert theirs["error"] == "not_found"
    assert (
        snapshot(client, acme, 400, watchId=watch_id, waitSeconds=31)["details"][0]["path"]
        == "/waitSeconds"
    )
    for not_a_number in ("1", True):  # a JSON number, as published
        refused = snapshot(client, acme, 400, watchId=watch_id, waitSeconds=not_a_number)
        assert refused["details"][0]["path"] == "/waitSeconds"
    assert snapshot(client, acme, 400, waitSeconds=0)["details"][0]["path"] == "/watchId"
    with database.session() as session:
        assert session.scalar(select(func.count()).select_from(FuseSnapshot)) == 0


def test_snapshots_are_rate_limited_per_org(
    client: FlaskClient, acme: OrgKey, make_org: Callable[..., OrgKey]
) -> None:
    from web.api.fuse import SNAPSHOT_BURST

    watch_id = make_watch(client, acme, "https://api.example.com/openapi.json")
    for _ in range(SNAPSHOT_BURST):
        snapshot(client, acme, watchId=watch_id, waitSeconds=0)
    limited = snapshot(client, acme, 429, watchId=watch_id, waitSeconds=0)
    assert limited["error"] == "rate_limited" and limited["details"]["retryAfter"] >= 1
    # A 404 after the limit is still a 429: the bucket is taken before the watch is read.
    assert snapshot(client, acme, 429, watchId=str(uuid.uuid4()), waitSeconds=0)
    other = make_org("globex")
    their_watch = make_watch(client, other, "https://api.example.com/openapi.json")
    snapshot(client, other, watchId=their_watch, waitSeconds=0)  # its own bucket
    assert len(get(client, acme, "/v1/fuse/snapshots")["snapshots"]) == SNAPSHOT_BURST


def test_snapshots_are_listed_newest_first_per_org(
    client: FlaskClient, acme: OrgKey, make_org: Callable[..., OrgKey]
) -> None:
    first = make_watch(client, acme, "https://a.example.com/openapi.json", name="a")
    second = make_watch(client, acme, "https://b.example.com/openapi.json", name="b")
    made = [
        snapshot(client, acme, watchId=watch, waitSeconds=0)["id"]
        for watch in (first, second, first, second, first)
    ]
    seen: list[str] = []
    cursor = ""
    while True:
        page = get(client, acme, f"/v1/fuse/snapshots?limit=2{cursor}")
        seen += [s["id"] for s in page["snapshots"]]
        if page["nextCursor"] is None:
            break
        cursor = f"&cursor={page['nextCursor']}"
    assert seen == list(reversed(made))
    of_first = get(client, acme, f"/v1/fuse/snapshots?watchId={first}")["snapshots"]
    assert [s["id"] for s in of_first] == [made[4], made[2], made[0]]
    other = make_org("globex")
    assert get(client, other, "/v1/fuse/snapshots")["snapshots"] == []
    assert get(client, other, f"/v1/fuse/snapshots?watchId={first}")["snapshots"] == []
