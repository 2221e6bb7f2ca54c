"""A request's deadline counts from its arrival (issue 40, point 7): one that waited its whole
deadline for a thread (the server front stamps its arrival in the environ) is answered 503
`server_busy` with `Retry-After` at once, on the lane and on Flask alike, and changes nothing."""

from __future__ import annotations

import time

from flask.testing import FlaskClient

from controller.settings import Settings
from tests.conftest import OrgKey
from web.edge import ARRIVED_ENVIRON

NEW_WATCH = {"name": "stripe", "url": "https://api.example.com/openapi.json"}


def test_a_request_that_waited_its_deadline_for_a_thread_is_refused_at_once(
    client: FlaskClient, acme: OrgKey, settings: Settings
) -> None:
    late = {ARRIVED_ENVIRON: time.monotonic() - settings.request_deadline_seconds - 1}
    answers = [
        client.post("/api/watches", json=NEW_WATCH, headers=acme.headers, environ_base=late),
        client.post(  # the lane's route (`web.lane`)
            "/api/preflight", json={"watchIds": []}, headers=acme.headers, environ_base=late
        ),
        client.get("/health/ready", environ_base=late),
    ]
    for answer in answers:
        assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
        assert answer.get_json()["error"] == "server_busy"
        assert answer.headers["X-Service-Correlation-Id"]
    assert client.get("/api/watches", headers=acme.headers).get_json()["watches"] == []

    fresh = {ARRIVED_ENVIRON: time.monotonic()}
    created = client.post("/api/watches", json=NEW_WATCH, headers=acme.headers, environ_base=fresh)
    assert created.status_code == 201
