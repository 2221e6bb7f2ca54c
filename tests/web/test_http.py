"""The HTTP layer: health, envelope for every error, correlation ids, logs, the edge rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from controller.settings import Settings
from controller.store.db import Database
from tests.conftest import OrgKey, make_settings
from web.app import create_app


def test_health_and_ready(client: FlaskClient) -> None:
    health = client.get("/health")
    assert health.status_code == 200 and health.json["status"] == "ok"
    ready = client.get("/health/ready")
    assert ready.status_code == 200
    assert ready.json == {
        "status": "ok",
        "database": "ok",
        "controller": {"state": "absent", "lastHeartbeatAt": None, "ageSeconds": None},
    }


def test_ready_is_503_when_the_database_is_unreachable(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, database_url="postgresql+psycopg://nobody@127.0.0.1:1/none")
    app = create_app(settings)
    client = app.test_client()
    try:
        assert client.get("/health").status_code == 200
        ready = client.get("/health/ready")
        assert ready.status_code == 503 and ready.headers["Retry-After"] == "5"
        assert ready.json["error"] == "store_unavailable"
        assert "nobody" not in ready.get_data(as_text=True)
    finally:
        app.extensions["driftgate.database"].dispose()


def test_unknown_route_and_method_use_the_envelope(client: FlaskClient) -> None:
    missing = client.get("/api/nothing-here")
    assert missing.status_code == 404
    assert missing.json == {"error": "not_found", "message": "no route GET /api/nothing-here"}
    wrong = client.put("/health")
    assert wrong.status_code == 405
    assert wrong.json["error"] == "method_not_allowed"
    assert "GET" in wrong.headers["Allow"]


def test_unexpected_errors_are_a_generic_500_and_logged(
    app: Flask, client: FlaskClient, capfd: pytest.CaptureFixture[str]
) -> None:
    def boom() -> str:
        raise RuntimeError("secret internals")

    app.add_url_rule("/test/boom", view_func=boom)
    response = client.get("/test/boom", headers={"X-Service-Correlation-Id": "req-42"})
    assert response.status_code == 500
    assert response.json["error"] == "internal_error"
    assert "secret internals" not in response.get_data(as_text=True)
    assert "req-42" in response.json["message"]
    logged = [
        json.loads(line) for line in capfd.readouterr().err.splitlines() if line.startswith("{")
    ]
    crash = next(entry for entry in logged if entry["event"] == "request.crashed")
    assert crash["correlationId"] == "req-42"
    assert "secret internals" in crash["exception"]


def test_correlation_id_is_echoed_or_generated(client: FlaskClient) -> None:
    echoed = client.get("/health", headers={"X-Service-Correlation-Id": "ci-run-7:step.2"})
    assert echoed.headers["X-Service-Correlation-Id"] == "ci-run-7:step.2"
    generated = client.get("/health", headers={"X-Service-Correlation-Id": "bad value with spaces"})
    assert len(generated.headers["X-Service-Correlation-Id"]) == 36
    assert client.get("/nope").headers["X-Service-Correlation-Id"]


def test_request_log_lines_are_json_without_credentials(
    client: FlaskClient, acme: OrgKey, capfd: pytest.CaptureFixture[str]
) -> None:
    client.get(
        "/api/watches",
        headers={**acme.headers, "X-Service-Correlation-Id": "c-1", "X-Service-Source": "ci"},
    )
    err = capfd.readouterr().err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    line = next(entry for entry in lines if entry.get("correlationId") == "c-1")
    assert line["event"] == "http.request"
    assert line["status"] == 200 and line["path"] == "/api/watches" and line["org"] == acme.org_id
    assert line["source"] == "ci"
    assert acme.key not in err


def test_default_user_agent_rule(tmp_path: Path, database: Database, settings: Settings) -> None:
    strict = make_settings(tmp_path, database_url=database.url, refuse_default_user_agents=True)
    client = create_app(strict, database=database).test_client()
    refused = client.get("/api/public/agent-config", headers={"User-Agent": "python-requests/2.32"})
    assert refused.status_code == 403 and refused.json["error"] == "1010"
    assert (
        client.get(
            "/api/public/agent-config", headers={"User-Agent": "driftgate-cli/0.1.0"}
        ).status_code
        == 200
    )
    assert client.get("/health", headers={"User-Agent": "python-requests/2.32"}).status_code == 200
    relaxed = create_app(settings, database=database).test_client()
    assert (
        relaxed.get(
            "/api/public/agent-config", headers={"User-Agent": "python-requests/2.32"}
        ).status_code
        == 200
    )


def test_agent_config(client: FlaskClient) -> None:
    body = client.get("/api/public/agent-config").json
    assert body["product"] == "driftgate"
    assert body["userAgent"].startswith("driftgate-cli/")
    assert body["install"]["pip"] == "pip install driftgate"
    assert {t["name"] for t in body["tools"]} >= {
        "compare_json",
        "explain_drift",
        "acknowledge_drift",
    }


@pytest.mark.hosted_routes
def test_funnel_events_are_counted_without_personal_data(
    client: FlaskClient, database: Database
) -> None:
    from controller.orgs.funnel_service import totals

    assert client.post("/api/funnel/events", json={"event": "cli.install"}).status_code == 202
    batch = client.post(
        "/api/funnel/events", json={"events": [{"event": "cli.install"}, {"event": "docs.view"}]}
    )
    assert batch.status_code == 202 and batch.json == {"accepted": 2}
    for bad in (
        {"event": "cli.install", "email": "a@b.c"},
        {"event": "Has Spaces"},
        {},
        {"events": []} | {"event": "x"},
        # An RFC 3339 date-time with an offset, as published; not Unix seconds, not a bare date.
        {"event": "cli.install", "occurredAt": 0},
        {"event": "cli.install", "occurredAt": "1767323045"},
        {"events": [{"event": "cli.install", "occurredAt": "2026-01-02"}]},
    ):
        response = client.post("/api/funnel/events", json=bad)
        assert response.status_code == 400, bad
        assert response.json["error"] == "validation_error"
    with database.session() as session:
        assert totals(session) == {"cli.install": 2, "docs.view": 1}


@pytest.mark.parametrize(
    "path",
    [
        "/api/watches/%00abc",
        "/api/agents/agent%01x/status",
        "/api/watches/%7F/affected-agents",
        "/api/drift?watchId=%00abc",
    ],
)
def test_control_characters_in_ids_name_nothing(
    client: FlaskClient, acme: OrgKey, path: str
) -> None:
    """No id holds a control character (Postgres text cannot even hold NUL): a path with one
    is 404, a query id with one is 400, never a database error; without a key it is 401."""
    response = client.get(path, headers=acme.headers)
    assert response.status_code == (400 if "?" in path else 404)
    assert response.json["error"] in ("not_found", "validation_error")
    assert client.get(path).status_code == 401
