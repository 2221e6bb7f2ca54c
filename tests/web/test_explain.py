"""`POST /api/drift/explain`: hints for changes, no key, clear errors with JSON paths."""

from __future__ import annotations

import json

import pytest
from flask.testing import FlaskClient


def test_explains_changes_with_rule_actions_and_fallbacks(client: FlaskClient) -> None:
    changes = [
        {
            "path": "/paths/~1v1~1charges/get/responses/200",
            "severity": "breaking",
            "summary": "property 'id' removed",
            "rule": "response-property-removed-required",
            "location": {"operation": "GET /v1/charges"},
        },
        # The draft-PR webhook's shape: `message`, no rule.
        {"path": "tools/search", "severity": "warning", "message": "description changed"},
        {
            "path": "/x",
            "severity": "info",
            "summary": "new enum value",
            "rule": "x-enum-value-added",
        },
        {
            "path": "/y",
            "severity": "breaking",
            "summary": "gone",
            "rule": "endpoint-removed",
            "agentAction": "ack_incident",
            "ignored": True,
            "ignoreReason": "we never call it",
        },
    ]
    response = client.post("/api/drift/explain", json={"changes": changes})
    assert response.status_code == 200
    body = response.json
    first, second, third, fourth = body["changes"]
    assert first["agentAction"] == "update_client_schema" and first["hint"]
    assert first["location"] == {"operation": "GET /v1/charges", "tool": None}
    assert second["rule"] == "unclassified" and second["summary"] == "description changed"
    assert second["agentAction"] == "accept_baseline" and second["hint"]
    assert third["agentAction"] == "handle_new_enum_value"
    assert fourth["ignored"] is True and fourth["agentAction"] == "ack_incident"
    assert body["counts"] == {"breaking": 1, "warning": 1, "info": 1}
    assert body["ignored"] == 1
    assert body["summary"].startswith("1 breaking, 1 warning, 1 info changes (1 ignored).")
    # The most useful action first (clients act on the first), the waiver last.
    assert body["agentActions"] == [
        "update_client_schema",
        "handle_new_enum_value",
        "accept_baseline",
    ]


def test_empty_list_is_fine(client: FlaskClient) -> None:
    body = client.post("/api/drift/explain", json={"changes": []}).json
    assert body["changes"] == [] and body["summary"] == "No changes."


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        ({}, "/changes"),
        ({"changes": [{"path": "/a", "severity": "fatal", "summary": "x"}]}, "/changes/0/severity"),
        ({"changes": [{"path": "/a", "severity": "info"}]}, "/changes/0"),
        (
            {"changes": [{"path": "/a", "severity": "info", "summary": "x", "message": "y"}]},
            "/changes/0",
        ),
        ({"changes": [{"path": "/a", "severity": "info", "summary": None}]}, "/changes/0/summary"),
        (
            {"changes": [{"path": "/a", "severity": "info", "summary": "x", "rule": "Not Kebab"}]},
            "/changes/0/rule",
        ),
        ({"changes": "nope"}, "/changes"),
        # `ignored` is a boolean: 0 and "true" are not (pydantic alone would take both).
        (
            {"changes": [{"path": "/a", "severity": "info", "summary": "x", "ignored": 0}]},
            "/changes/0/ignored",
        ),
        (
            {"changes": [{"path": "/a", "severity": "info", "summary": "x", "ignored": "true"}]},
            "/changes/0/ignored",
        ),
    ],
)
def test_bad_input_names_the_json_path(client: FlaskClient, payload: object, path: str) -> None:
    response = client.post("/api/drift/explain", json=payload)
    assert response.status_code == 400
    assert response.json["error"] == "validation_error"
    assert path in [d["path"] for d in response.json["details"]]


def test_limits(client: FlaskClient) -> None:
    many = {"changes": [{"path": "/a", "severity": "info", "summary": "x"}] * 5001}
    response = client.post("/api/drift/explain", json=many)
    assert response.status_code == 400 and response.json["details"][0]["path"] == "/changes"
    huge = json.dumps({"changes": [{"path": "/a" * 600_000, "severity": "info", "summary": "x"}]})
    too_big = client.post("/api/drift/explain", data=huge, content_type="application/json")
    assert too_big.status_code == 413 and too_big.json["error"] == "payload_too_large"


def test_a_served_cause_is_explained_by_its_schema(client: FlaskClient) -> None:
    """A change to a shared schema, sent back as a drift event serves it (with `origin`,
    `affected`, `cause`), is explained by its cause; a change of its own place is not."""
    cause = {
        "path": "/paths/~1v1~13d_secure/post/responses/200/content/application~1json/schema",
        "severity": "breaking",
        "summary": "response 200 (application/json) property 'card.refunds.data[].reason': "
        "maxLength 5000 removed",
        "rule": "response-property-max-length-unset",
        "before": 5000,
        "origin": "#/components/schemas/refund/properties/reason",
        "affected": ["POST /v1/3d_secure", "GET /v1/charges"],
        "affectedCount": 2,
        "placeCount": 3,
        "cause": "refund.reason: maxLength 5000 removed",
        "hint": "as served",
    }
    own = {
        "path": "/paths/~1a/get",
        "severity": "breaking",
        "summary": "gone",
        "rule": "endpoint-removed",
    }
    response = client.post("/api/drift/explain", json={"changes": [cause, own]})
    assert response.status_code == 200, response.json
    explained, plain = response.json["changes"]
    assert explained["cause"] == "refund.reason: maxLength 5000 removed"
    assert explained["affectedCount"] == 2
    assert plain.get("cause") is None and plain.get("affectedCount") is None


def test_a_breaking_hint_says_what_a_client_sees_fail(client: FlaskClient) -> None:
    """Issue 41, point 5: the hint names the operation and the value, then what to do."""
    change = {
        "path": "/paths/~1v1~1charges/post/requestBody/content/application~1json/schema"
        "/properties/currency",
        "severity": "breaking",
        "summary": "request body property 'currency': enum value usd removed",
        "rule": "request-property-enum-value-removed",
        "before": "usd",
        "location": {"operation": "POST /v1/charges"},
    }
    response = client.post("/api/drift/explain", json={"changes": [change]})
    assert response.status_code == 200, response.json
    hint = response.json["changes"][0]["hint"]
    assert hint == (
        'A request to `POST /v1/charges` that sends `currency` = `"usd"` is now refused: the '
        "enum no longer has it. Stop sending the removed value."
    )
