"""Trips reported to the fleet guard through the API on a real store: recorded once per trip id
and org (concurrent reports and a duplicate past the lookup included), linked to the real
preflight decision that blocked, naming a watch of the org, checked, and listed newest first."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from controller.fuse import service as fuse_service
from controller.store.db import Database
from controller.store.models import AuditEntry, FuseTrip
from tests.conftest import OrgKey
from tests.fuse.conftest import TRIP, decision, get, make_watch, post


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
