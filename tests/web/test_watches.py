"""The watches API end to end through the Flask app on a real database."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import func, select, text

from controller.store.db import Database
from controller.store.models import AuditEntry, Watch
from tests.conftest import OrgKey, make_settings
from tests.servers import spec_server
from web.app import create_app

SPEC_URL = "https://api.example.com/openapi.json"


def create(client: FlaskClient, who: OrgKey, **body: Any) -> Any:
    payload = {"name": "payments", "url": SPEC_URL, **body}
    response = client.post("/api/watches", json=payload, headers=who.headers)
    assert response.status_code == 201, response.json
    return response.json


def count_watches(database: Database) -> int:
    with database.session() as session:
        return int(session.scalar(select(func.count()).select_from(Watch)) or 0)


def test_create_returns_the_full_watch(client: FlaskClient, acme: OrgKey) -> None:
    body = create(
        client, acme, tags=["vendor:stripe", "env:prod", "vendor:stripe"], intervalMinutes=30
    )
    assert body["watchType"] == "openapi"
    assert body["driftStatus"] == "never_run"
    assert body["tags"] == ["vendor:stripe", "env:prod"]
    assert body["intervalMinutes"] == 30
    assert body["health"] == {
        "band": "degraded",
        "isStaleCheck": False,
        "minutesSinceLastCheck": None,
        "expectedIntervalMinutes": 30,
    }
    assert body["incident"] is None and body["baseline"] is None and body["managedBy"] is None
    assert body["openChanges"] == {"breaking": 0, "warning": 0, "info": 0}
    fetched = client.get(f"/api/watches/{body['id']}", headers=acme.headers)
    assert fetched.status_code == 200
    assert fetched.json["name"] == "payments"


def test_label_alias_and_default_interval(client: FlaskClient, acme: OrgKey) -> None:
    response = client.post(
        "/api/watches",
        json={"label": "mcp-tools", "url": "https://mcp.example.com/mcp"},
        headers=acme.headers,
    )
    assert response.status_code == 201
    assert response.json["name"] == "mcp-tools"
    assert response.json["watchType"] == "mcp"
    assert response.json["intervalMinutes"] == 15
    assert response.headers["Location"] == f"/api/watches/{response.json['id']}"


def test_interval_is_a_json_integer(client: FlaskClient, acme: OrgKey) -> None:
    """5.0 is an integer to JSON Schema (the published type), so it is taken; "5" is not."""
    body = {"name": "a", "url": SPEC_URL, "intervalMinutes": 5.0}
    response = client.post("/api/watches", json=body, headers=acme.headers)
    assert response.status_code == 201 and response.json["intervalMinutes"] == 5
    patched = client.patch(
        f"/api/watches/{response.json['id']}", json={"intervalMinutes": "7"}, headers=acme.headers
    )
    assert patched.status_code == 400
    assert [d["path"] for d in patched.json["details"]] == ["/intervalMinutes"]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://api.example.com/openapi.yaml", "openapi"),
        ("https://example.com/swagger/v1/swagger.json", "openapi"),
        ("https://example.com/v3/api-docs", "openapi"),
        ("https://tools.example.com/mcp", "mcp"),
        ("https://tools.example.com/sse", "mcp"),
    ],
)
def test_watch_type_inference(client: FlaskClient, acme: OrgKey, url: str, expected: str) -> None:
    response = client.post("/api/watches", json={"name": url, "url": url}, headers=acme.headers)
    assert response.status_code == 201
    assert response.json["watchType"] == expected


def test_unclear_url_needs_a_watch_type(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    response = client.post(
        "/api/watches",
        json={"name": "x", "url": "https://api.example.com/v1/charges"},
        headers=acme.headers,
    )
    assert response.status_code == 422
    assert response.json["error"] == "validation_error"
    assert response.json["details"][0]["path"] == "/watchType"
    assert count_watches(database) == 0
    ok = client.post(
        "/api/watches",
        json={
            "name": "x",
            "url": "https://api.example.com/v1/charges",
            "watchType": "rest",
            "method": "POST",
            "body": {"query": 1},
        },
        headers=acme.headers,
    )
    assert ok.status_code == 201
    assert (
        ok.json["watchType"] == "rest"
        and ok.json["method"] == "POST"
        and ok.json["body"] == {"query": 1}
    )


BAD_BODIES: list[tuple[str, Any, str]] = [
    ("missing name", {"url": SPEC_URL}, "/"),
    ("wrong type", {"name": 5, "url": SPEC_URL}, "/name"),
    ("unknown watchType", {"name": "a", "url": SPEC_URL, "watchType": "graphql"}, "/watchType"),
    ("non-http url", {"name": "a", "url": "ftp://example.com/openapi.json"}, "/url"),
    ("relative url", {"name": "a", "url": "/openapi.json"}, "/url"),
    ("url with spaces", {"name": "a", "url": "https://exa mple.com/openapi.json"}, "/url"),
    ("credentials in url", {"name": "a", "url": "https://u:p@example.com/openapi.json"}, "/url"),
    ("oversized name", {"name": "n" * 201, "url": SPEC_URL}, "/name"),
    ("blank name", {"name": "   ", "url": SPEC_URL}, "/name"),
    ("control chars", {"name": "a\u0007b", "url": SPEC_URL}, "/name"),
    ("interval zero", {"name": "a", "url": SPEC_URL, "intervalMinutes": 0}, "/intervalMinutes"),
    # The published type is integer: no text and no boolean, which pydantic alone would take.
    (
        "interval as text",
        {"name": "a", "url": SPEC_URL, "intervalMinutes": "5"},
        "/intervalMinutes",
    ),
    (
        "interval as boolean",
        {"name": "a", "url": SPEC_URL, "intervalMinutes": True},
        "/intervalMinutes",
    ),
    ("bad tag", {"name": "a", "url": SPEC_URL, "tags": ["has space"]}, "/tags/0"),
    (
        "bad header",
        {"name": "a", "url": SPEC_URL, "headers": {"X-A": "v\r\nInjected: 1"}},
        "/headers/X-A",
    ),
    ("unknown field", {"name": "a", "url": SPEC_URL, "colour": "red"}, "/colour"),
    ("name and label disagree", {"name": "a", "label": "b", "url": SPEC_URL}, "/"),
    ("not an object", [1, 2], "/"),
]


@pytest.mark.parametrize(("case", "body", "path"), BAD_BODIES, ids=[c[0] for c in BAD_BODIES])
def test_bad_input_answers_the_envelope_and_changes_nothing(
    client: FlaskClient, acme: OrgKey, database: Database, case: str, body: Any, path: str
) -> None:
    response = client.post("/api/watches", json=body, headers=acme.headers)
    assert response.status_code == 400, response.json
    assert response.json["error"] == "validation_error"
    assert response.json["message"].startswith("invalid request body")
    assert path in [d["path"] for d in response.json["details"]]
    assert count_watches(database) == 0


def test_malformed_json(client: FlaskClient, acme: OrgKey, database: Database) -> None:
    response = client.post(
        "/api/watches",
        data='{"name": "a",',
        headers={**acme.headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json["error"] == "invalid_json"
    assert count_watches(database) == 0


def test_oversized_body_is_413(client: FlaskClient, acme: OrgKey, database: Database) -> None:
    big = json.dumps({"name": "a", "url": SPEC_URL, "body": "x" * 2_000_000})
    response = client.post(
        "/api/watches", data=big, headers={**acme.headers, "Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert response.json["error"] == "payload_too_large"
    assert count_watches(database) == 0


def test_duplicate_name_is_409_and_keeps_the_first(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    first = create(client, acme)
    again = client.post(
        "/api/watches", json={"name": "payments", "url": SPEC_URL}, headers=acme.headers
    )
    assert again.status_code == 409
    assert again.json["error"] == "duplicate_name"
    assert count_watches(database) == 1
    other = create(client, acme, name="other")
    rename = client.patch(
        f"/api/watches/{other['id']}", json={"name": "payments"}, headers=acme.headers
    )
    assert rename.status_code == 409
    assert (
        client.get(f"/api/watches/{first['id']}", headers=acme.headers).json["name"] == "payments"
    )
    assert client.get(f"/api/watches/{other['id']}", headers=acme.headers).json["name"] == "other"


def test_same_name_in_two_orgs(client: FlaskClient, make_org: Callable[..., OrgKey]) -> None:
    create(client, make_org("one"))
    create(client, make_org("two"))


def test_headers_are_write_only_and_encrypted(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    secret = "sk_live_supersecretvalue123"
    body = create(client, acme, headers={"Authorization": f"Bearer {secret}", "X-Tenant": "t1"})
    assert body["headers"] == {"Authorization": "<redacted>", "X-Tenant": "<redacted>"}
    listed = client.get("/api/watches", headers=acme.headers)
    assert secret not in listed.get_data(as_text=True)
    with database.engine.connect() as conn:
        row = conn.execute(text("SELECT * FROM watches")).mappings().one()
        audit = conn.execute(text("SELECT details FROM audit_log")).all()
    assert secret not in json.dumps({k: str(v) for k, v in row.items()})
    assert secret not in str(audit)
    assert row["headers_ciphertext"].startswith("gAAAA")  # a Fernet token


def test_patch_changes_only_what_is_sent(client: FlaskClient, acme: OrgKey) -> None:
    body = create(client, acme, tags=["a"], headers={"X-Key": "v"}, intervalMinutes=20)
    path = f"/api/watches/{body['id']}"
    patched = client.patch(
        path,
        json={"tags": ["b", "c"], "url": "https://api.example.com/v2/openapi.json"},
        headers=acme.headers,
    )
    assert patched.status_code == 200
    assert patched.json["tags"] == ["b", "c"]
    assert patched.json["url"] == "https://api.example.com/v2/openapi.json"
    assert patched.json["intervalMinutes"] == 20
    assert patched.json["headers"] == {"X-Key": "<redacted>"}
    cleared = client.patch(path, json={"headers": None}, headers=acme.headers)
    assert cleared.json["headers"] == {}
    for bad in ({}, {"name": None}, {"watchType": "mcp"}, {"intervalMinutes": 100000}):
        response = client.patch(path, json=bad, headers=acme.headers)
        assert response.status_code == 400, bad
        assert response.json["error"] == "validation_error"


def test_pause_and_resume(client: FlaskClient, acme: OrgKey) -> None:
    body = create(client, acme)
    paused = client.post(f"/api/watches/{body['id']}/pause", headers=acme.headers)
    assert paused.status_code == 200
    assert paused.json["driftStatus"] == "disabled"
    listed = client.get("/api/watches?driftStatus=disabled", headers=acme.headers).json["watches"]
    assert [w["id"] for w in listed] == [body["id"]]
    resumed = client.post(f"/api/watches/{body['id']}/resume", headers=acme.headers)
    assert resumed.json["driftStatus"] == "never_run"


def test_resume_recomputes_from_the_last_check(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    body = create(client, acme)
    with database.transaction() as session:
        watch = session.get(Watch, body["id"])
        assert watch is not None
        watch.baseline_snapshot_id, watch.last_check_status, watch.open_breaking = "s1", "ok", 2
    client.post(f"/api/watches/{body['id']}/pause", headers=acme.headers)
    assert (
        client.post(f"/api/watches/{body['id']}/resume", headers=acme.headers).json["driftStatus"]
        == "drifted"
    )


def test_delete(client: FlaskClient, acme: OrgKey, database: Database) -> None:
    body = create(client, acme, tags=["x"])
    response = client.delete(f"/api/watches/{body['id']}", headers=acme.headers)
    assert response.status_code == 204 and response.data == b""
    assert client.get(f"/api/watches/{body['id']}", headers=acme.headers).status_code == 404
    assert count_watches(database) == 0
    with database.session() as session:
        actions = list(session.scalars(select(AuditEntry.action).order_by(AuditEntry.id)))
    assert actions[-2:] == ["watch.create", "watch.delete"]


def test_managed_watches_are_read_only(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    body = create(client, acme)
    with database.transaction() as session:
        watch = session.get(Watch, body["id"])
        assert watch is not None
        watch.managed_source, watch.managed_path, watch.managed_revision = (
            "platform",
            ".driftgate",
            "abc123",
        )
    path = f"/api/watches/{body['id']}"
    assert client.get(path, headers=acme.headers).json["managedBy"] == {
        "source": "platform",
        "path": ".driftgate",
        "revision": "abc123",
    }
    for response in (
        client.patch(path, json={"tags": ["x"]}, headers=acme.headers),
        client.delete(path, headers=acme.headers),
        client.post(f"{path}/pause", headers=acme.headers),
        client.post(f"{path}/resume", headers=acme.headers),
    ):
        assert response.status_code == 409
        assert response.json["error"] == "managed_by_source"
    assert client.get(path, headers=acme.headers).json["tags"] == []


def test_list_filters_and_cursor_pagination(client: FlaskClient, acme: OrgKey) -> None:
    ids = []
    for i in range(7):
        tags = ["vendor:stripe"] if i % 2 == 0 else ["vendor:github"]
        if i < 3:
            tags.append("env:prod")
        watch_type = "mcp" if i == 6 else "openapi"
        ids.append(create(client, acme, name=f"w{i}", tags=tags, watchType=watch_type)["id"])
    seen: list[str] = []
    cursor = None
    while True:
        query = "/api/watches?limit=3" + (f"&cursor={cursor}" if cursor else "")
        page = client.get(query, headers=acme.headers).json
        seen.extend(w["id"] for w in page["watches"])
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == ids
    stripe = client.get("/api/watches?tag=vendor:stripe", headers=acme.headers).json["watches"]
    assert [w["name"] for w in stripe] == ["w0", "w2", "w4", "w6"]
    both = client.get("/api/watches?tag=vendor:stripe&tag=env:prod", headers=acme.headers).json[
        "watches"
    ]
    assert [w["name"] for w in both] == ["w0", "w2"]
    mcp = client.get("/api/watches?watchType=mcp", headers=acme.headers).json["watches"]
    assert [w["name"] for w in mcp] == ["w6"]
    for bad in ("limit=0", "limit=500", "driftStatus=green", "cursor=!!notacursor", "color=red"):
        response = client.get(f"/api/watches?{bad}", headers=acme.headers)
        assert response.status_code == 400, bad
        assert response.json["error"] == "validation_error"


def test_another_orgs_watch_is_404(client: FlaskClient, make_org: Callable[..., OrgKey]) -> None:
    owner, stranger = make_org("owner"), make_org("stranger")
    body = create(client, owner)
    path = f"/api/watches/{body['id']}"
    for response in (
        client.get(path, headers=stranger.headers),
        client.patch(path, json={"tags": ["x"]}, headers=stranger.headers),
        client.delete(path, headers=stranger.headers),
        client.post(f"{path}/pause", headers=stranger.headers),
    ):
        assert response.status_code == 404
        assert response.json == {"error": "not_found", "message": "Watch not found"}
    missing = client.get(
        "/api/watches/00000000-0000-0000-0000-000000000000", headers=stranger.headers
    )
    assert missing.json == {"error": "not_found", "message": "Watch not found"}
    assert client.get("/api/watches", headers=stranger.headers).json["watches"] == []
    assert client.get(path, headers=owner.headers).json["driftStatus"] == "never_run"


def test_a_yaml_document_is_an_openapi_watch(client: FlaskClient, acme: OrgKey) -> None:
    url = "https://specs.example.com/petstore.yaml"
    response = client.post("/api/watches", json={"name": "pets", "url": url}, headers=acme.headers)
    assert (response.status_code, response.json["watchType"]) == (201, "openapi")


def test_a_json_document_that_does_not_say_is_read_once_to_tell(
    tmp_path: Path, database: Database, acme: OrgKey
) -> None:
    """`petstore.json` may be a spec or a JSON payload: the service fetches it once (guarded
    like every fetch) and reads it as `driftgate diff` would."""
    settings = make_settings(tmp_path, database_url=database.url, allow_private_targets=True)
    client = create_app(settings, database=database).test_client()
    with spec_server() as server:
        spec = server.set("/petstore.json", json.dumps({"openapi": "3.0.3", "paths": {}}))
        swagger = server.set("/legacy.json", "swagger: '2.0'\npaths: {}\n")
        payload = server.set("/orders.json", json.dumps([{"id": 1}]))
        stream = server.set("/events.json", "data: {}\n\n", content_type="text/event-stream")
        page = server.set("/page.json", "<html>hello</html>", content_type="text/html")
        gone = server.set("/gone.json", "{}", status=404)
        expected = {spec: "openapi", swagger: "openapi", payload: "rest", stream: "mcp"}
        for url, watch_type in expected.items():
            body = {"name": url.rsplit("/", 1)[-1], "url": url}
            made = client.post("/api/watches", json=body, headers=acme.headers)
            assert made.status_code == 201, made.json
            assert made.json["watchType"] == watch_type, url
        fetched = len(server.requests)
        for url, why in ((page, "is not JSON"), (gone, "answered HTTP 404")):
            refused = client.post(
                "/api/watches", json={"name": "x", "url": url}, headers=acme.headers
            )
            assert refused.status_code == 422
            assert why in refused.json["message"] and "send watchType" in refused.json["message"]
            assert refused.json["details"][0]["path"] == "/watchType"
        assert len(server.requests) == fetched + 2
        # A URL that is not a JSON document is never fetched on create.
        other = client.post(
            "/api/watches",
            json={"name": "x", "url": server.url("/v1/charges")},
            headers=acme.headers,
        )
        assert other.status_code == 422 and len(server.requests) == fetched + 2
    # Private targets stay refused unless allowed: the guard applies to this fetch too.
    guarded = create_app(make_settings(tmp_path, database_url=database.url), database=database)
    with spec_server() as server:
        url = server.set("/petstore.json", json.dumps({"openapi": "3.0.3", "paths": {}}))
        refused = guarded.test_client().post(
            "/api/watches", json={"name": "x", "url": url}, headers=acme.headers
        )
        assert refused.status_code == 422 and server.requests == []
        assert "fetching it to find out failed" in refused.json["message"]


def test_api_is_read_as_a_rest_or_an_openapi_watch_type(
    tmp_path: Path, database: Database, acme: OrgKey
) -> None:
    """The hosted product's `api` is any HTTP API: a JSON endpoint (`rest`) or an OpenAPI
    document (`openapi`), told by the URL, else by what a `.json` URL serves."""
    settings = make_settings(tmp_path, database_url=database.url, allow_private_targets=True)
    client = create_app(settings, database=database).test_client()
    body = create(
        client, acme, name="orders", url="https://api.example.com/v1/orders", watchType="api"
    )
    assert body["watchType"] == "rest"
    spec = create(
        client, acme, name="spec", url="https://api.example.com/openapi.yaml", watchType="api"
    )
    assert spec["watchType"] == "openapi"
    with spec_server() as server:
        served = server.set("/petstore.json", json.dumps({"openapi": "3.0.3", "paths": {}}))
        sniffed = create(client, acme, name="petstore", url=served, watchType="api")
        assert sniffed["watchType"] == "openapi"
        sample = server.set("/orders.json", '{"id": 1}')
        made = create(client, acme, name="sample", url=sample, watchType="api")
        assert made["watchType"] == "rest"
    refused = client.post(
        "/api/watches",
        json={"name": "x", "url": "https://api.example.com/x", "watchType": "graphql"},
        headers=acme.headers,
    )
    assert refused.status_code == 400
