"""The one JSON reader and the stored free-form values, through the API on a real store.

Bodies that cannot be parsed safely (deeper than the parser's limit, not UTF-8, NaN) answer
400, never 500; free-form values (fuse trip metadata, a rest watch's body) nesting deeper than
`MAX_DEPTH` are refused at input, so nothing stored can break a list route; and any value that
is accepted comes back unchanged (property test over generated JSON).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.model.jsonvalue import MAX_DEPTH, check_json_value
from controller.store.db import Database
from tests.conftest import OrgKey, make_settings
from web.app import create_app
from web.body import MAX_NESTING, read_json

ROUTES = [
    ("POST", "/api/watches"),
    ("POST", "/v1/fuse/trips"),
    ("POST", "/api/preflight"),
]


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def deep_text(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_a_body_nesting_100000_levels_is_a_400_not_a_crash(
    client: FlaskClient, acme: OrgKey, method: str, path: str
) -> None:
    response = client.open(
        path,
        method=method,
        data=deep_text(100_000),
        headers={**acme.headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 400, response.data[:300]
    body = response.get_json()
    assert body["error"] == "invalid_json"
    assert f"deeper than {MAX_NESTING} levels" in body["message"]


def test_a_signed_webhook_body_nesting_100000_levels_is_a_400(
    tmp_path: Path, database: Database
) -> None:
    settings = make_settings(tmp_path, github_webhook_secret="hook-secret")
    client = create_app(settings, database=database).test_client()
    body = deep_text(100_000)
    signature = "sha256=" + hmac.new(b"hook-secret", body, hashlib.sha256).hexdigest()
    response = client.post(
        "/hooks/github",
        data=body,
        headers={
            "X-Hub-Signature-256": signature,
            "X-GitHub-Delivery": "d-1",
            "X-GitHub-Event": "push",
            "Content-Type": "application/json",
        },
    )
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_json"


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"tripId": "t", "reason": "x", "metadata": {"v": NaN', "expected"),
        (b'{"tripId": "t", "reason": "x", "metadata": {"v": "\xff"}}', "unicode"),
        (b'{"tripId": "t", "reason": "x", "metadata": {"v": "\\ud800"}}', "escape"),
        (b'{"tripId": "t", "reason": ', "EOF"),
    ],
)
def test_bodies_that_are_not_json_are_400_invalid_json(
    client: FlaskClient, acme: OrgKey, raw: bytes, reason: str
) -> None:
    response = client.post(
        "/v1/fuse/trips", data=raw, headers={**acme.headers, "Content-Type": "application/json"}
    )
    assert response.status_code == 400
    body = response.get_json()
    assert body["error"] == "invalid_json"
    assert reason in body["message"]


def test_deep_trip_metadata_is_refused_and_the_list_keeps_working(
    client: FlaskClient, acme: OrgKey
) -> None:
    fine = {"tripId": "ok", "reason": "x", "metadata": nested(MAX_DEPTH)}
    assert client.post("/v1/fuse/trips", json=fine, headers=acme.headers).status_code == 201
    deep = {"tripId": "deep", "reason": "x", "metadata": nested(MAX_DEPTH + 1)}
    response = client.post("/v1/fuse/trips", json=deep, headers=acme.headers)
    assert response.status_code == 422, response.get_json()
    body = response.get_json()
    assert body["error"] == "validation_error"
    assert body["details"][0]["path"] == "/metadata" + "/a" * MAX_DEPTH
    assert f"deeper than {MAX_DEPTH} levels" in body["details"][0]["message"]
    # The probe's 256 levels no longer reach the model: the reader refuses them.
    deepest = {"tripId": "deepest", "reason": "x", "metadata": nested(256)}
    response = client.post("/v1/fuse/trips", json=deepest, headers=acme.headers)
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_json"
    nan = b'{"tripId": "nan", "reason": "x", "metadata": {"v": [NaN]}}'
    response = client.post(
        "/v1/fuse/trips", data=nan, headers={**acme.headers, "Content-Type": "application/json"}
    )
    assert response.status_code == 422
    assert response.get_json()["details"][0]["path"] == "/metadata/v/0"
    listed = client.get("/v1/fuse/trips", headers=acme.headers)
    assert listed.status_code == 200
    assert [trip["tripId"] for trip in listed.get_json()["trips"]] == ["ok"]
    assert listed.get_json()["trips"][0]["metadata"] == nested(MAX_DEPTH)


def test_deep_rest_watch_body_is_refused_and_the_list_keeps_working(
    client: FlaskClient, acme: OrgKey
) -> None:
    watch = {
        "name": "orders",
        "url": "https://api.example.com/v1/orders",
        "watchType": "rest",
        "method": "POST",
        "body": nested(MAX_DEPTH + 1),
    }
    response = client.post("/api/watches", json=watch, headers=acme.headers)
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["details"][0]["path"] == "/body"
    assert f"deeper than {MAX_DEPTH} levels" in response.get_json()["details"][0]["message"]
    watch["body"] = {"k": "a\x00b"}
    response = client.post("/api/watches", json=watch, headers=acme.headers)
    assert response.status_code == 400
    assert "NUL" in response.get_json()["details"][0]["message"]
    watch["body"] = nested(3, leaf=[1.5, "é", None, True])
    created = client.post("/api/watches", json=watch, headers=acme.headers)
    assert created.status_code == 201, created.get_json()
    listed = client.get("/api/watches", headers=acme.headers)
    assert listed.status_code == 200
    assert [w["body"] for w in listed.get_json()["watches"]] == [watch["body"]]
    patched = client.patch(
        f"/api/watches/{created.get_json()['id']}",
        json={"body": {"v": nested(MAX_DEPTH)}},
        headers=acme.headers,
    )
    assert patched.status_code == 400
    assert patched.get_json()["details"][0]["path"] == "/body"


# Properties: what the reader accepts and the value check passes is stored and served back.

TEXT = st.characters(codec="utf-8", exclude_characters="\x00")  # NUL: refused, tested above
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(TEXT),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.text(TEXT, max_size=8), children, max_size=4)
    ),
    max_leaves=30,
)


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


@settings(max_examples=300, database=None, deadline=None)
@given(value=json_values, wrap=st.integers(min_value=0, max_value=MAX_DEPTH + 2))
def test_the_value_check_accepts_exactly_what_fits(value: Any, wrap: int) -> None:
    wrapped = nested(wrap, leaf=value) if wrap else value
    raw = json.dumps(wrapped).encode()
    parsed = read_json(raw)
    assert parsed == wrapped
    if depth_of(wrapped) <= MAX_DEPTH:
        assert check_json_value(parsed) is parsed
        assert json.loads(json.dumps(parsed)) == parsed
    else:
        with pytest.raises(ValueError, match="deeper than"):
            check_json_value(parsed)


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_the_value_check_refuses_numbers_json_cannot_carry(number: float) -> None:
    with pytest.raises(ValueError, match="numbers must be finite"):
        check_json_value({"a": [1, {"b": number}]})


@settings(
    max_examples=60,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(metadata=st.dictionaries(st.text(TEXT, max_size=8), json_values, max_size=4))
def test_any_accepted_metadata_is_stored_and_served_back(
    client: FlaskClient, acme: OrgKey, metadata: dict[str, Any]
) -> None:
    reason = f"r{uuid.uuid4().hex[:12]}"
    trip = {"tripId": reason, "reason": reason, "metadata": metadata}
    response = client.post("/v1/fuse/trips", json=trip, headers=acme.headers)
    if response.status_code == 422:
        assert "the limit is 16384" in response.get_json()["message"]  # the documented cap
        return
    assert response.status_code == 201, response.get_json()
    assert as_numbers(response.get_json()["metadata"]) == as_numbers(metadata)
    listed = client.get(f"/v1/fuse/trips?reason={reason}", headers=acme.headers)
    assert listed.status_code == 200
    assert [as_numbers(t["metadata"]) for t in listed.get_json()["trips"]] == [as_numbers(metadata)]


def as_numbers(value: Any) -> Any:
    """`value` with every number as the decimal JSON means by it: Postgres' jsonb keeps
    4.946027779848247e+16 as 49460277798482470, the same JSON number, which Python reads
    back as an int."""
    if isinstance(value, dict):
        return {k: as_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_numbers(v) for v in value]
    if isinstance(value, float):
        return Decimal(repr(value)).normalize()
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value).normalize()
    return value
