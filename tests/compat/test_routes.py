"""The compat capability through the API, without the clients: the hosted header names, the
hosted answer shapes, the refusals by design, and org scoping on every alias. Runs on every
clone (the clients' own runs are test_fuseguard.py and test_mockdrift.py)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from flask.testing import FlaskClient
from sqlalchemy import select

from controller.model.hosted import header
from controller.store.db import Database
from controller.store.models import ValidationSource
from tests.conftest import OrgKey

SHIPPED = "oss-everything-2025.7.1-to-2025.7.29"
PROFILE = {"id": "p", "version": 1, "schema": {"type": "object", "required": ["id"]}}


def test_the_specifications_header_wins_over_its_hosted_name() -> None:
    both = {"X-Service-Source": "spec", "X-DriftGuard-Source": "hosted"}
    assert header(both, "X-Service-Source") == "spec"
    assert header({"X-DriftGuard-Source": "hosted"}, "X-Service-Source") == "hosted"
    assert header({"X-DriftGuard-Trial": "t"}, "X-Service-Trial") == "t"
    assert header({}, "X-Service-Source") is None
    assert header({"X-DriftGuard-Correlation-Id": "c"}, "X-Service-Correlation-Id") is None


def test_fuseguards_source_label_is_metered(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    body = {"payload": {"id": 1}, "profile": PROFILE}
    headers = {**acme.headers, "X-DriftGuard-Source": "fuseguard"}
    assert client.post("/api/validate", json=body, headers=headers).status_code == 200
    with database.session() as session:
        sources = session.scalars(select(ValidationSource)).all()
        assert [(s.source, s.used) for s in sources] == [("fuseguard", 1)]


@pytest.mark.hosted_routes
def test_a_trial_token_under_the_hosted_name_is_accepted(client: FlaskClient) -> None:
    token = client.post("/api/trial/session").json["token"]  # type: ignore[index]
    answer = client.get("/api/me", headers={"X-DriftGuard-Trial": token})
    assert answer.status_code == 200 and answer.json["credential"]["kind"] == "trial"  # type: ignore[index]
    assert answer.json["plan"] == "free"  # type: ignore[index]
    refused = client.get("/api/me", headers={"X-DriftGuard-Trial": "dgt_nope"})
    assert refused.status_code == 401 and refused.json["error"]  # type: ignore[index]


def test_me_names_the_keys_org_only(client: FlaskClient, acme: OrgKey) -> None:
    me = client.get("/api/me", headers=acme.headers).json
    assert me == {
        "orgId": acme.org_id,
        "org": "acme",
        "plan": "pro",
        "products": [],
        "credential": {"kind": "api_key", "id": acme.key_id},
        "customerId": acme.org_id,
    }
    assert client.get("/api/me").status_code == 401


def test_the_catalog_in_mockdrifts_shape_has_the_same_rows(client: FlaskClient) -> None:
    ours = client.get("/v1/replay/fixtures/catalog?limit=200").json
    theirs = client.get("/v1/mockdrift/fixtures/catalog?limit=200").json
    assert set(theirs) == {"fixtures", "nextCursor", "disclaimer"}  # type: ignore[arg-type]
    assert [
        {k: v for k, v in row.items() if k != "lane"}
        for row in theirs["fixtures"]  # type: ignore[index]
    ] == ours["rows"]  # type: ignore[index]
    lanes = {row["contentKind"]: row["lane"] for row in theirs["fixtures"]}  # type: ignore[index]
    assert lanes == {"oss-curated": "oss", "hosted-stub": "hosted"}
    bad = client.get("/v1/mockdrift/fixtures/catalog?limit=0")
    assert bad.status_code == 400 and bad.json["error"] == "validation_error"  # type: ignore[index]


def test_install_in_mockdrifts_shape_is_the_same_fixture(
    client: FlaskClient, make_org: Callable[..., OrgKey]
) -> None:
    org = make_org("licensed", "pro", ("replay_cloud",))
    ours = client.post("/v1/replay/fixtures/install", json={"id": SHIPPED}, headers=org.headers)
    theirs = client.post(
        "/v1/mockdrift/fixtures/install", json={"id": SHIPPED}, headers=org.headers
    )
    assert ours.status_code == theirs.status_code == 200
    files, fixture = ours.json["files"], theirs.json["fixture"]  # type: ignore[index]
    assert theirs.json["files"] == files and theirs.json["fixtureId"] == SHIPPED  # type: ignore[index]
    assert fixture["beforeSchema"] == json.loads(files["before.schema.json"])
    assert fixture["afterSchema"] == json.loads(files["after.schema.json"])
    assert fixture["metadata"] == json.loads(files["cloud-meta.json"])
    assert sorted(fixture["mockResponses"]) == sorted(
        path[len("mock-responses/") : -len(".json")]
        for path in files
        if path.startswith("mock-responses/")
    )
    unlicensed = client.post(
        "/v1/mockdrift/fixtures/install", json={"id": SHIPPED}, headers=make_org().headers
    )
    assert unlicensed.json["error"] == "PRODUCT_REQUIRED: replay_cloud"  # type: ignore[index]


def test_from_watch_under_mockdrifts_name_is_org_scoped(
    client: FlaskClient, make_org: Callable[..., OrgKey]
) -> None:
    owner = make_org("owner", "pro", ("replay_cloud",))
    other = make_org("other", "pro", ("replay_cloud",))
    created = client.post(
        "/api/watches",
        json={"name": "w", "url": "https://api.example.com/openapi.json"},
        headers=owner.headers,
    )
    watch_id = created.json["id"]  # type: ignore[index]
    path = "/v1/mockdrift/fixtures/from-watch"
    foreign = client.post(path, json={"watchId": watch_id}, headers=other.headers)
    assert foreign.status_code == 404
    assert foreign.json == {"error": "not_found", "message": "Watch not found"}
    unchecked = client.post(path, json={"watchId": watch_id}, headers=owner.headers)
    assert unchecked.status_code == 422 and unchecked.json["error"] == "no_snapshot"  # type: ignore[index]


def test_hosted_control_plane_routes_answer_501_with_the_reason(client: FlaskClient) -> None:
    for method, path in (
        ("POST", "/v1/fuseguard/devices/enroll"),
        ("POST", "/v1/fuseguard/devices/heartbeat"),
        ("POST", "/v1/fuseguard/devices/trace"),
        ("GET", "/v1/fuseguard/policy/bundle"),
        ("POST", "/api/usage/events"),
    ):
        answer = client.open(path, method=method, json={"token": "x"})
        assert answer.status_code == 501, path
        body = answer.json
        assert body is not None and body["error"] == "not_self_hosted"
        assert body["message"].startswith(f"{method} {path} is a route of the hosted control")
        assert "docs/compat.md" in body["message"]


def test_the_hosted_sku_names_switch_driftgates_products(client: FlaskClient, acme: OrgKey) -> None:
    on = client.put(
        "/api/org/products/mockdrift_cloud", json={"enabled": True}, headers=acme.headers
    )
    assert on.status_code == 200, on.get_json()
    enabled = {p["product"]: p["enabled"] for p in on.get_json()["products"]}
    assert enabled["replay_cloud"] is True and "mockdrift_cloud" not in enabled
    # The product's routes now answer, under both prefixes.
    body = {"id": SHIPPED}
    assert (
        client.post("/v1/mockdrift/fixtures/install", json=body, headers=acme.headers).status_code
        == 200
    )
    off = client.put(
        "/api/org/products/schemasync_repo", json={"enabled": False}, headers=acme.headers
    )
    assert off.status_code == 200
    unknown = client.put(
        "/api/org/products/nope_cloud", json={"enabled": True}, headers=acme.headers
    )
    assert unknown.status_code == 404
