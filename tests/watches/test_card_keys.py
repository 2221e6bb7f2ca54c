"""`cardKeys` on watches through the API: the keys an `a2a_card` watch trusts for its card's
signatures, stored as given, shown back, changed and cleared; only public signature keys and
only on card watches (a 400 naming the field otherwise)."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient
from joserfc.jwk import ECKey, OctKey, RSAKey

from controller.store.db import Database
from controller.store.models import Watch
from tests.conftest import OrgKey

CARD_URL = "https://agents.example.com/.well-known/agent-card.json"
OWNER = ECKey.generate_key("P-256", parameters={"kid": "owner-2026"})
PUBLIC = dict(OWNER.as_dict(private=False))


def create(client: FlaskClient, who: OrgKey, **fields: Any) -> Any:
    body = {"name": "billing-card", "url": CARD_URL, "watchType": "a2a_card", **fields}
    return client.post("/api/watches", json=body, headers=who.headers)


def test_a_card_watch_names_the_keys_it_trusts(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    keys = {"jwksUrl": "https://agents.example.com/.well-known/jwks.json", "keys": [PUBLIC]}
    created = create(client, acme, cardKeys=keys)
    assert created.status_code == 201, created.json
    watch_id = created.json["id"]
    assert created.json["cardKeys"] == keys  # both given: both shown
    assert client.get(f"/api/watches/{watch_id}", headers=acme.headers).json["cardKeys"] == keys
    with database.session() as session:
        assert session.get_one(Watch, watch_id).card_keys == keys

    only_url = {"jwksUrl": "https://keys.example.com/jwks.json"}
    patched = client.patch(
        f"/api/watches/{watch_id}", json={"cardKeys": only_url}, headers=acme.headers
    )
    assert patched.status_code == 200
    assert patched.json["cardKeys"] == {**only_url, "keys": None}
    cleared = client.patch(
        f"/api/watches/{watch_id}", json={"cardKeys": None}, headers=acme.headers
    )
    assert cleared.status_code == 200 and cleared.json["cardKeys"] is None
    with database.session() as session:
        assert session.get_one(Watch, watch_id).card_keys is None


def test_a_watch_without_keys_shows_none(client: FlaskClient, acme: OrgKey) -> None:
    created = create(client, acme)
    assert created.status_code == 201 and created.json["cardKeys"] is None


def test_keys_are_for_card_watches_only(client: FlaskClient, acme: OrgKey) -> None:
    refused = create(
        client,
        acme,
        url="https://api.example.com/openapi.json",
        watchType="openapi",
        cardKeys={"keys": [PUBLIC]},
    )
    assert refused.status_code == 422, refused.json
    assert refused.json["error"] == "validation_error"
    assert [d["path"] for d in refused.json["details"]] == ["/cardKeys"]
    assert "a2a_card" in refused.json["message"]

    spec = client.post(
        "/api/watches",
        json={"name": "spec", "url": "https://api.example.com/openapi.json"},
        headers=acme.headers,
    ).json["id"]
    patched = client.patch(
        f"/api/watches/{spec}", json={"cardKeys": {"keys": [PUBLIC]}}, headers=acme.headers
    )
    assert patched.status_code == 422 and patched.json["details"][0]["path"] == "/cardKeys"


@pytest.mark.parametrize(
    ("keys", "status", "says"),
    [
        ({"keys": [dict(OWNER.as_dict(private=True))]}, 422, "private key material"),
        ({"keys": [dict(RSAKey.generate_key(2048).as_dict(private=True))]}, 422, "private key"),
        ({"keys": [dict(OctKey.generate_key(256).as_dict())]}, 422, "kty must be one of"),
        ({"keys": [PUBLIC, {**PUBLIC, "x": "broken"}]}, 422, "key 1: not a valid EC key"),
        ({"keys": [{"kid": "no-type"}]}, 422, "kty"),
        ({"keys": [{**PUBLIC, "use": "enc"}]}, 422, "use must be sig"),
        ({}, 400, "jwksUrl or at least one key"),
        ({"keys": []}, 400, "at least 1 item"),
        ({"jwksUrl": "ftp://keys.example.com/jwks.json"}, 400, "http"),
        ({"jwksUrl": None}, 400, "null"),
        ({"jwksUrl": "https://keys.example.com/jwks.json", "jku": "x"}, 400, ""),
    ],
    ids=[
        "private-ec",
        "private-rsa",
        "symmetric",
        "broken",
        "no-kty",
        "encryption",
        "empty",
        "no-keys",
        "not-http",
        "null-url",
        "unknown-member",
    ],
)
def test_only_public_signature_keys_and_http_urls_are_accepted(
    client: FlaskClient, acme: OrgKey, keys: dict[str, Any], status: int, says: str
) -> None:
    # 400: what the published schema says; 422: what it cannot (a key's material).
    refused = create(client, acme, cardKeys=keys)
    assert refused.status_code == status, refused.json
    assert refused.json["error"] == "validation_error"
    details = refused.json["details"]
    assert all(d["path"].startswith("/cardKeys") for d in details), details
    assert any(says in d["message"] for d in details), details
