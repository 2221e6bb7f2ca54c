"""What the signed-card tests share: keys made in the test, and agent cards signed with them
as A2A signs them (a detached JWS over the card's JCS form without `signatures`), with
joserfc and the JCS library the verifier uses, never with the verifier's own code."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import rfc8785
from joserfc import jws
from joserfc.jwk import ECKey, OKPKey, RSAKey

Key = ECKey | OKPKey | RSAKey

CARD: dict[str, Any] = {
    "name": "Billing agent",
    "description": "Answers billing questions",
    "version": "1.0.0",
    "protocolVersion": "1.0",
    "url": "https://agents.example.com/billing",
    "capabilities": {"streaming": True},
    "defaultInputModes": ["text/plain"],
    "defaultOutputModes": ["application/json"],
    "skills": [{"id": "refund", "name": "Refund", "description": "Refund a charge", "tags": []}],
}


def card(**changes: Any) -> dict[str, Any]:
    """The test card, with `changes` to its top-level fields."""
    return {**copy.deepcopy(CARD), **changes}


def sign(
    document: dict[str, Any], key: Key, *, alg: str = "ES256", **header: Any
) -> dict[str, Any]:
    """`document` with one more signature by `key` (its `kid` in the protected header, with
    `header`'s members)."""
    payload = rfc8785.dumps({k: v for k, v in document.items() if k != "signatures"})
    protected = {"alg": alg, "typ": "JOSE", **({"kid": key.kid} if key.kid else {}), **header}
    compact = jws.serialize_compact(protected, payload, key, algorithms=[alg])
    head, _, value = compact.split(".")
    signature = {"protected": head, "signature": value}
    return {**document, "signatures": [*document.get("signatures", []), signature]}


def public(key: Key) -> dict[str, Any]:
    return dict(key.as_dict(private=False))


def jwks(*keys: Key) -> bytes:
    return json.dumps({"keys": [public(key) for key in keys]}).encode()


@pytest.fixture(scope="session")
def owner_key() -> ECKey:
    """The agent owner's signing key (the one the watch trusts)."""
    return ECKey.generate_key("P-256", parameters={"kid": "owner-2026"})


@pytest.fixture(scope="session")
def attacker_key() -> ECKey:
    """Someone else's key: they can serve the card and sign it, but the watch names not it."""
    return ECKey.generate_key("P-256", parameters={"kid": "attacker-1"})
