"""Well-formed bad input is a 4xx naming the field, never a 500, and the same on both stores
(issue 31, point 6): values a service puts together from the request and elsewhere (a
template's tags, a discovered URL), and text Postgres cannot hold (NUL) wherever it would
be stored or looked up. Every refusal leaves the store as it was. The suite runs this file on
SQLite and on Postgres (`DRIFTGATE_TEST_DATABASE_URL`)."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import func, select

from controller.store.db import Database
from controller.store.models import Dashboard, IngressProfile, Watch
from tests.conftest import OrgKey

NUL = "a\u0000b"


def watch_count(database: Database) -> int:
    with database.session() as session:
        return session.scalar(select(func.count()).select_from(Watch)) or 0


def refused(answer: Any, status: int, *paths: str) -> dict[str, Any]:
    """The envelope of a refusal, checked: status, `validation_error` (or the code given by
    the route), and the JSON pointers it names."""
    body: dict[str, Any] = answer.get_json()
    assert answer.status_code == status, body
    assert set(body) <= {"error", "message", "details"} and body["message"], body
    assert [d["path"] for d in body["details"]] == list(paths), body
    return body


def test_a_launch_whose_tags_with_the_templates_exceed_fifty_is_422(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    template = {
        "name": "tagged",
        "watchType": "openapi",
        "urlPattern": "https://api.example.com/openapi.json",
        "tags": [f"team:{i}" for i in range(30)],
    }
    assert client.post("/api/templates", json=template, headers=acme.headers).status_code == 201
    launch = {"templateId": "tagged", "tags": [f"env:{i}" for i in range(30)]}
    answer = client.post("/api/watches/from-template", json=launch, headers=acme.headers)
    body = refused(answer, 422, "/tags")
    assert "30 tags" in body["message"] and "60" in body["message"]
    assert watch_count(database) == 0
    # The same tags twice are one tag: 30 of the template's and 20 new make 50.
    overlapping = {"templateId": "tagged", "tags": [f"team:{i}" for i in range(30)]}
    overlapping["tags"] += [f"env:{i}" for i in range(20)]
    made = client.post("/api/watches/from-template", json=overlapping, headers=acme.headers)
    assert made.status_code == 201, made.get_json()
    assert len(made.get_json()["watch"]["tags"]) == 50


def test_a_launch_whose_headers_with_the_templates_exceed_fifty_is_422(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    template = {
        "name": "headed",
        "watchType": "openapi",
        "urlPattern": "https://api.example.com/openapi.json",
        "headers": {f"X-T{i}": "v" for i in range(30)},
    }
    assert client.post("/api/templates", json=template, headers=acme.headers).status_code == 201
    launch = {"templateId": "headed", "headers": {f"X-R{i}": "v" for i in range(30)}}
    answer = client.post("/api/watches/from-template", json=launch, headers=acme.headers)
    refused(answer, 422, "/headers")
    assert watch_count(database) == 0


@pytest.mark.parametrize(
    ("body", "path", "reason"),
    [
        ({"urls": ["https://\u00e9"]}, "/urls/0", "punycode"),
        ({"urls": ["https://ok.example.com/mcp", "https://\u00e9/x"]}, "/urls/1", "punycode"),
        ({"text": "docs at\nhttps://\u00e9.example/openapi.json"}, "/text", "punycode"),
        (
            {"mcpJson": '{"mcpServers": {" padded ": {"url": "https://x.example.com/mcp"}}}'},
            "/mcpJson",
            "space",
        ),
        (
            {"config": '{"mcpServers": {"a\\u0000b": {"url": "https://x.example.com/mcp"}}}'},
            "/config",
            "control characters",
        ),
    ],
)
def test_a_suggestion_that_cannot_be_a_watch_is_422_naming_where_it_was_found(
    client: FlaskClient,
    acme: OrgKey,
    database: Database,
    body: dict[str, Any],
    path: str,
    reason: str,
) -> None:
    answer = client.post(
        "/api/watches/suggest", json={**body, "create": True}, headers=acme.headers
    )
    details = refused(answer, 422, path)["details"]
    assert reason in details[0]["message"]
    assert watch_count(database) == 0  # not even the good candidate before it
    # Without `create`, the same input is only listed.
    listed = client.post("/api/watches/suggest", json=body, headers=acme.headers)
    assert listed.status_code == 200 and listed.get_json()["created"] == []


@pytest.mark.parametrize(
    ("method", "path", "body", "where"),
    [
        (
            "POST",
            "/api/portfolio/dashboards",
            {"name": "d", "panels": ["health"], "description": NUL},
            "/description",
        ),
        (
            "PUT",
            "/api/ingress-profiles/p",
            {"id": "p", "version": 1, "schema": {"description": NUL}},
            "/schema",
        ),
        (
            "PUT",
            "/api/ingress-profiles/p",
            {"id": "p", "version": 1, "schema": {}, "compatibility": [NUL]},
            "/compatibility",
        ),
        (
            "PUT",
            "/api/ingress-profiles/p",
            {"id": "p", "version": 1, "schema": {}, "unknown": {NUL: 1}},
            "/unknown",
        ),
        (
            "PUT",
            "/api/ingress-profiles/p",
            {"id": "p", "version": 1, "schema": {}, "watchId": NUL},
            "/watchId",
        ),
        (
            "PUT",
            "/api/ingress-profiles/p",
            {
                "id": "p",
                "version": 1,
                "schema": {},
                "envelope": {"preset": "raw", "extractPath": NUL},
            },
            "/envelope",
        ),
        (
            "POST",
            "/api/validate",
            {"payload": {}, "profile": {"id": "p", "version": 1, "schema": {"title": NUL}}},
            "/profile/schema",
        ),
        (
            "POST",
            "/api/watches/from-template",
            {
                "templateId": "system/openapi-json",
                "url": "https://x.example.com/openapi.json",
                "watchSetId": NUL,
            },
            "/watchSetId",
        ),
        ("POST", "/api/ask", {"question": f"breaking drift of {NUL}"}, "/question"),
        ("PUT", "/api/org/smtp", {"host": NUL, "fromAddress": "d@example.com"}, "/host"),
        (
            "POST",
            "/v1/draftpr/webhook",
            {
                "watchId": "w",
                "driftEventId": "e",
                "repoFullName": "acme/app",
                "changes": [{"path": "/x", "severity": "breaking", "message": NUL}],
            },
            "/changes/0/message",
        ),
    ],
)
def test_text_no_store_can_hold_is_refused_before_it_is_stored(
    client: FlaskClient,
    acme: OrgKey,
    database: Database,
    method: str,
    path: str,
    body: dict[str, Any],
    where: str,
) -> None:
    answer = client.open(path, method=method, json=body, headers=acme.headers)
    assert "NUL" in refused(answer, 400, where)["message"] or "pattern" in answer.text
    with database.session() as session:
        for table in (Dashboard, IngressProfile, Watch):
            assert session.scalar(select(func.count()).select_from(table)) == 0


@pytest.mark.parametrize(
    "query",
    [
        "/api/watches?vendor=a%00b",
        "/v1/replay/fixtures/catalog?q=a%00b",
        "/v1/replay/fixtures/catalog?vendor=a%00b",
    ],
)
def test_a_query_value_no_store_can_hold_is_400(
    client: FlaskClient, acme: OrgKey, query: str
) -> None:
    refused(client.get(query, headers=acme.headers), 400, "/" + query.split("?")[1].split("=")[0])


def test_a_dashboard_change_with_nul_leaves_the_dashboard_as_it_was(
    client: FlaskClient, acme: OrgKey
) -> None:
    body = {"name": "mine", "panels": ["health"], "description": "line one\nline two"}
    created = client.post("/api/portfolio/dashboards", json=body, headers=acme.headers)
    assert created.status_code == 201, created.get_json()
    where = f"/api/portfolio/dashboards/{created.get_json()['id']}"
    refused(
        client.put(where, json={**body, "description": NUL}, headers=acme.headers),
        400,
        "/description",
    )
    assert client.get(where, headers=acme.headers).get_json()["description"] == body["description"]
