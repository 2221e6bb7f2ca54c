"""What fuseguard sends through the API on a real store: a guard's own record fields (its trip log
v2), batches of trips each recorded once, and one trip in its two shapes (the index row of the
sync queue, then the trip log) filling each other in; a trip id reused for other values is
refused and changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy import select

from controller.store.db import Database
from controller.store.models import AuditEntry
from tests.conftest import OrgKey
from tests.fuse.conftest import TRIP, get, make_watch, post

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
