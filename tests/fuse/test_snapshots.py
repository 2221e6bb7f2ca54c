"""Fleet guard snapshots through the API: the watch is checked now by a controller running
in-process against a loopback vendor and the summary kept; one not finished within the wait is
pending; paused, missing and other orgs' watches; a rate limit per org; listed newest first."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from controller.scheduler import Controller
from controller.store.db import Database
from controller.store.models import FuseSnapshot
from tests.conftest import OrgKey
from tests.fuse.conftest import get, make_watch, post
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec


def snapshot(client: FlaskClient, who: OrgKey, status: int = 201, **body: Any) -> Any:
    return post(client, who, "/v1/fuse/snapshots", body, status=status)


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

    # No bucket refills while the test runs (one token every 2 s: a busy machine took that long).
    client.application.extensions["driftgate.ratelimiter"].clock = lambda: 1000.0
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
