"""The lane (`web.lane`): a route that opts in is answered in front of Flask by its own handler,
exactly as the Flask view answers it (body, status, headers, errors, log line, recorded
decision); what the lane cannot answer before the handler runs goes to Flask untouched."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from pydantic import BaseModel
from sqlalchemy import func, select

from controller.errors import TemporaryError
from controller.model.base import RequestModel
from controller.orgs.auth_service import KEY_CACHE
from controller.store.db import Database
from controller.store.models import PreflightDecision
from tests.conftest import OrgKey, make_settings
from tests.factories import make_watch, set_state
from web.app import create_app
from web.auth import authenticate
from web.lane import Lane
from web.routes import Call, Registry, Reply

VOLATILE = ("decisionId", "durationMs", "evaluatedAt")


class Counted:
    """The lane's fallback (Flask), counting the requests handed to it."""

    def __init__(self, wsgi: Callable[..., Iterable[bytes]], path: str = "/api/preflight") -> None:
        self.wsgi = wsgi
        self.path = path
        self.calls = 0

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO") == self.path:
            self.calls += 1
        return self.wsgi(environ, start_response)


@pytest.fixture
def flask_calls(app: Flask) -> Counted:
    lane = app.wsgi_app
    assert isinstance(lane, Lane)
    lane.fallback = counted = Counted(lane.fallback)
    return counted


def recorded(database: Database) -> int:
    with database.session() as session:
        return int(session.scalar(select(func.count()).select_from(PreflightDecision)) or 0)


def logged(capfd: pytest.CaptureFixture[str], event: str) -> list[dict[str, Any]]:
    lines = (json.loads(line) for line in capfd.readouterr().err.splitlines() if line[:1] == "{")
    return [line for line in lines if line["event"] == event]


def test_the_lane_answers_as_the_route_does(
    app: Flask,
    client: FlaskClient,
    acme: OrgKey,
    database: Database,
    flask_calls: Counted,
    capfd: pytest.CaptureFixture[str],
) -> None:
    ok = make_watch(client, acme, "ledger")
    drifted = make_watch(client, acme, "payments")
    set_state(database, ok, "ok")
    set_state(database, drifted, "drifted", incident="open")
    body = {"watchIds": [ok, drifted, "00000000-0000-0000-0000-000000000000"]}
    headers = {**acme.headers, "X-Service-Correlation-Id": "ci-run-7", "X-Service-Source": "ci"}

    # A key this process has not cached goes through Flask, which authenticates and caches it.
    KEY_CACHE.clear()
    flask_calls.calls = 0
    capfd.readouterr()
    by_flask = client.post("/api/preflight", json=body, headers=headers)
    assert flask_calls.calls == 1
    flask_log = logged(capfd, "http.request")
    by_lane = client.post("/api/preflight", json=body, headers=headers)
    assert flask_calls.calls == 1, "the second call was answered by the lane"
    lane_log = logged(capfd, "http.request")

    assert by_lane.status_code == by_flask.status_code == 200
    first, second = by_flask.get_json(), by_lane.get_json()
    assert [r["reasons"] for r in second["blocked"]] == [["breaking_drift"], ["not_found"]]
    for volatile in VOLATILE:
        first.pop(volatile), second.pop(volatile)
    assert second == first
    for header in ("Content-Type", "X-Service-Correlation-Id"):
        assert by_lane.headers[header] == by_flask.headers[header]
    assert by_lane.headers["X-Service-Correlation-Id"] == "ci-run-7"
    assert int(by_lane.headers["Content-Length"]) == len(by_lane.data)
    assert recorded(database) == 2
    for line in (flask_log, lane_log):
        assert len(line) == 1
    assert {k: v for k, v in lane_log[0].items() if k not in ("ts", "durationMs")} == {
        k: v for k, v in flask_log[0].items() if k not in ("ts", "durationMs")
    }
    assert lane_log[0]["org"] == acme.org_id and lane_log[0]["source"] == "ci"

    # A malformed correlation id is replaced, as Flask replaces it.
    odd = client.post(
        "/api/preflight", json=body, headers={**acme.headers, "X-Service-Correlation-Id": "a b"}
    )
    assert flask_calls.calls == 1
    assert odd.headers["X-Service-Correlation-Id"] not in ("", "a b")


def test_an_enforcing_policy_block_is_409_from_the_lane(
    client: FlaskClient, acme: OrgKey, database: Database, flask_calls: Counted
) -> None:
    launched = client.post(
        "/api/watches/from-template",
        json={
            "templateId": "system/openapi-json",
            "url": "https://payments.example.com/openapi.json",
            "policyPreset": "production-guard",
            "agent": {"id": "billing-bot"},
        },
        headers=acme.headers,
    )
    assert launched.status_code == 201
    set_state(database, launched.get_json()["watch"]["id"], "drifted", incident="open")
    client.post("/api/preflight", json={"watchIds": []}, headers=acme.headers)  # caches the key
    flask_calls.calls = 0
    answer = client.post("/api/preflight", json={"agentId": "billing-bot"}, headers=acme.headers)
    assert flask_calls.calls == 0
    assert answer.status_code == 409
    assert answer.get_json()["policyBlocked"] is True
    assert answer.get_json()["blocked"][0]["reasons"] == [
        "breaking_drift",
        "policy_block:block_new_runs",
        "policy_block:kill_in_flight",
    ]


@pytest.mark.parametrize(
    ("send", "status", "error", "by_flask"),
    [
        ({"data": b"{not json"}, 400, "invalid_json", 0),
        ({"data": b""}, 400, "validation_error", 1),  # no Content-Length: Flask
        ({"json": {"watchIds": ["x"] * 101}}, 400, "validation_error", 0),
        ({"json": {"agentId": "nobody"}}, 404, "not_found", 0),
        ({"json": {"watchIds": []}, "auth": {"Authorization": "Basic abc"}}, 401, None, 1),
        ({"json": {"watchIds": []}, "auth": {}}, 401, "missing_credentials", 1),
        ({"json": {"watchIds": []}, "auth": {"X-Api-Key": "dg_wrong"}}, 401, "invalid_api_key", 1),
        ({"data": b"x" * 2_000_000}, 413, "payload_too_large", 1),
    ],
)
def test_errors_get_the_routes_envelope_from_either_path_and_record_nothing(
    app: Flask,
    client: FlaskClient,
    acme: OrgKey,
    database: Database,
    flask_calls: Counted,
    send: dict[str, Any],
    status: int,
    error: str | None,
    by_flask: int,
) -> None:
    """Credentials the lane cannot vouch for and oversized bodies go to Flask before the
    handler runs; a body or an agent the route refuses is answered by the lane, with the
    envelope Flask answers for the same request."""
    client.post("/api/preflight", json={"watchIds": []}, headers=acme.headers)  # caches the key
    before = recorded(database)
    flask_calls.calls = 0
    headers = send.get("auth", acme.headers)
    body = {k: v for k, v in send.items() if k in ("json", "data")}
    response = client.post(
        "/api/preflight", headers=headers, content_type="application/json", **body
    )
    assert flask_calls.calls == by_flask
    assert response.status_code == status
    envelope = response.get_json()
    assert set(envelope) >= {"error", "message"}
    if error is not None:
        assert envelope["error"] == error
    assert recorded(database) == before
    # Flask's own answer to the same request (the lane out of the way) is the same.
    flask = app.test_client()
    flask.application.wsgi_app = flask_calls.wsgi  # type: ignore[method-assign]
    same = flask.post("/api/preflight", headers=headers, content_type="application/json", **body)
    assert (same.status_code, same.get_json()) == (status, envelope)


def test_a_refused_user_agent_and_other_methods_go_to_flask(
    tmp_path: Path, database: Database, acme: OrgKey
) -> None:
    settings = make_settings(tmp_path, database_url=database.url, refuse_default_user_agents=True)
    app = create_app(settings, database=database)
    lane = app.wsgi_app
    assert isinstance(lane, Lane)
    lane.fallback = counted = Counted(lane.fallback)
    client = app.test_client()
    agent = {"User-Agent": "driftgate-tests/1"}
    assert (
        client.post(
            "/api/preflight", json={"watchIds": []}, headers={**acme.headers, **agent}
        ).status_code
        == 200
    )
    counted.calls = 0
    refused = client.post(
        "/api/preflight",
        json={"watchIds": []},
        headers={**acme.headers, "User-Agent": "python-requests/2.32"},
    )
    assert (refused.status_code, refused.get_json()["error"]) == (403, "1010")
    assert client.get("/api/preflight", headers={**acme.headers, **agent}).status_code == 405
    assert (
        client.post(
            "/api/preflight/", json={"watchIds": []}, headers={**acme.headers, **agent}
        ).status_code
        == 404
    )
    assert counted.calls == 2  # the refused POST and the GET (the other path is not the lane's)


def test_a_failure_in_the_gate_is_answered_by_the_lane_with_the_routes_envelope(
    client: FlaskClient,
    acme: OrgKey,
    database: Database,
    flask_calls: Counted,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The lane answers a failing handler itself, with the envelope of any route's unexpected
    error and the `request.crashed` log line, and records nothing."""
    client.post("/api/preflight", json={"watchIds": []}, headers=acme.headers)  # caches the key
    before = recorded(database)
    take = database.take_gate_connection

    def down() -> Any:
        raise RuntimeError("the store went away")

    database.take_gate_connection = down  # type: ignore[method-assign]
    capfd.readouterr()
    try:
        flask_calls.calls = 0
        response = client.post(
            "/api/preflight",
            json={"watchIds": []},
            headers={**acme.headers, "X-Service-Correlation-Id": "ci-9"},
        )
    finally:
        database.take_gate_connection = take  # type: ignore[method-assign]
    assert flask_calls.calls == 0
    assert response.status_code == 500
    assert response.get_json() == {
        "error": "internal_error",
        "message": "an unexpected error occurred; it was logged with the correlation id ci-9",
    }
    assert recorded(database) == before
    crashed = logged(capfd, "request.crashed")
    assert len(crashed) == 1 and crashed[0]["correlationId"] == "ci-9"


class Echo(BaseModel):
    source: str | None
    seen: int


def test_any_route_can_opt_in_and_its_handler_runs_on_both_paths(
    tmp_path: Path, database: Database, acme: OrgKey
) -> None:
    """A route declared with `lane=True` is served by the lane with the same handler as the
    Flask view: the same session handling, request headers, reply headers and errors."""
    extra = Registry()
    seen: list[str] = []

    class EchoIn(RequestModel):
        fail: bool = False

    @extra.route(
        "POST",
        "/api/lane-echo",
        summary="echo",
        tag="test",
        body=EchoIn,
        responses={201: Echo},
        lane=True,
    )
    def lane_echo(call: Call) -> Reply:
        if call.body.fail:
            raise TemporaryError("busy", code="store_busy")
        seen.append(call.correlation_id)
        count = call.session.scalar(select(func.count()).select_from(PreflightDecision))
        return Reply(
            201,
            Echo(source=call.headers.get("X-Service-Source"), seen=int(count or 0)),
            headers={"X-Echo": call.org_id},
        )

    with pytest.raises(ValueError, match="only key-authenticated"):
        extra.route("GET", "/api/x/<thing>", summary="x", tag="t", responses={}, lane=True)(
            lane_echo
        )

    app = create_app(make_settings(tmp_path, database_url=database.url), database=database)
    extra.install(app, authenticate)
    combined = Registry()
    combined.routes = [*app.extensions["driftgate.registry"].routes, *extra.routes]
    app.extensions["driftgate.registry"] = combined
    flask_only = app.wsgi_app.fallback  # type: ignore[attr-defined]
    app.wsgi_app = lane = Lane(app, flask_only)  # type: ignore[method-assign]
    lane.fallback = counted = Counted(flask_only, "/api/lane-echo")
    client = app.test_client()
    headers = {**acme.headers, "X-Service-Source": "ci"}

    answers = []
    for _ in range(2):  # the first authenticates through Flask, the second takes the lane
        answers.append(client.post("/api/lane-echo", json={}, headers=headers))
    assert counted.calls == 1 and len(seen) == 2
    for answer in answers:
        assert answer.status_code == 201
        assert answer.get_json() == {"source": "ci", "seen": 0}
        assert answer.headers["X-Echo"] == acme.org_id
        assert answer.headers["Content-Type"] == "application/json"
    busy = client.post("/api/lane-echo", json={"fail": True}, headers=headers)
    assert counted.calls == 1
    assert busy.status_code == 503 and busy.headers["Retry-After"] == "5"
    assert busy.get_json()["error"] == "temporarily_unavailable"
