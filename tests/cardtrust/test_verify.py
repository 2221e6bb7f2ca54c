"""The verdict on an agent card's signatures (`controller.cardtrust.verify`), against real JWS
made with joserfc over keys made here."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from joserfc.jwk import ECKey, OKPKey, RSAKey

from controller.cardtrust.verify import (
    INVALID,
    TRUSTED,
    UNSIGNED,
    UNTRUSTED,
    canonical_card,
    verify_card,
)
from controller.model.cardkeys import jwk_problem
from tests.cardtrust.conftest import Key, card, public, sign


def test_a_card_signed_by_a_trusted_key_is_trusted(owner_key: ECKey) -> None:
    verdict = verify_card(sign(card(), owner_key), [public(owner_key)])
    assert (verdict.status, verdict.kids, verdict.is_ok) == (TRUSTED, ("owner-2026",), True)
    assert "owner-2026" in verdict.summary


@pytest.mark.parametrize(
    ("key", "alg"),
    [
        (RSAKey.generate_key(2048, parameters={"kid": "rsa"}), "RS256"),
        (RSAKey.generate_key(2048, parameters={"kid": "pss"}), "PS256"),
        (ECKey.generate_key("P-384", parameters={"kid": "p384"}), "ES384"),
        (OKPKey.generate_key("Ed25519", parameters={"kid": "ed"}), "Ed25519"),
    ],
    ids=["RS256", "PS256", "ES384", "Ed25519"],
)
def test_every_signature_algorithm_a2a_cards_use_verifies(key: Key, alg: str) -> None:
    assert verify_card(sign(card(), key, alg=alg), [public(key)]).status == TRUSTED


def test_the_card_is_verified_in_its_canonical_form_whatever_its_layout(owner_key: ECKey) -> None:
    signed = sign(card(), owner_key)
    # Served pretty-printed, members in another order: the same JCS form, the same signature.
    served = json.loads(json.dumps(dict(reversed(list(signed.items()))), indent=4))
    assert verify_card(served, [public(owner_key)]).status == TRUSTED
    assert canonical_card(served) == canonical_card(card())


def test_a_card_re_signed_by_another_key_is_untrusted(
    owner_key: ECKey, attacker_key: ECKey
) -> None:
    verdict = verify_card(sign(card(url="https://evil.example"), attacker_key), [public(owner_key)])
    assert (verdict.status, verdict.kids, verdict.is_ok) == (UNTRUSTED, ("attacker-1",), False)
    assert "attacker-1" in verdict.summary and "does not trust" in verdict.summary


def test_a_jku_in_the_card_is_not_trusted_by_itself(owner_key: ECKey, attacker_key: ECKey) -> None:
    forged = sign(card(), attacker_key, jku="https://evil.example/jwks.json")
    verdict = verify_card(forged, [public(owner_key)])
    assert verdict.status == UNTRUSTED
    assert "jku" in verdict.summary and "evil.example" not in verdict.summary


def test_a_card_changed_after_signing_is_invalid(owner_key: ECKey) -> None:
    signed = sign(card(), owner_key)
    tampered = {**signed, "url": "https://evil.example/billing"}
    verdict = verify_card(tampered, [public(owner_key)])
    assert (verdict.status, verdict.is_ok) == (INVALID, False)
    assert "does not verify" in verdict.summary


def test_another_key_signing_under_a_trusted_kid_is_invalid(owner_key: ECKey) -> None:
    impostor = ECKey.generate_key("P-256", parameters={"kid": "owner-2026"})
    assert verify_card(sign(card(), impostor), [public(owner_key)]).status == INVALID


@pytest.mark.parametrize("signatures", [None, []], ids=["absent", "empty"])
def test_a_card_without_signatures_is_unsigned(owner_key: ECKey, signatures: Any) -> None:
    unsigned = card() if signatures is None else card(signatures=signatures)
    verdict = verify_card(unsigned, [public(owner_key)])
    assert (verdict.status, verdict.kids, verdict.is_ok) == (UNSIGNED, (), False)


def test_one_trusted_signature_carries_the_card(owner_key: ECKey, attacker_key: ECKey) -> None:
    both = sign(sign(card(), attacker_key), owner_key)
    verdict = verify_card(both, [public(owner_key)])
    assert verdict.status == TRUSTED and verdict.kids == ("owner-2026", "attacker-1")


def test_a_signature_without_kid_is_tried_against_each_trusted_key(
    owner_key: ECKey, attacker_key: ECKey
) -> None:
    anonymous = ECKey.import_key(owner_key.as_dict(private=True) | {"kid": ""})
    stranger = ECKey.generate_key("P-256")
    trusted = [public(attacker_key), public(owner_key)]
    assert verify_card(sign(card(), anonymous), trusted).status == TRUSTED
    assert verify_card(sign(card(), stranger), trusted).status == UNTRUSTED


def test_a_trusted_key_without_kid_is_tried_against_each_signature(
    owner_key: ECKey, attacker_key: ECKey
) -> None:
    anonymous = {k: v for k, v in public(owner_key).items() if k != "kid"}
    assert verify_card(sign(card(), owner_key), [anonymous]).status == TRUSTED
    # Another key's signature is a stranger's, not a broken one.
    assert verify_card(sign(card(), attacker_key), [anonymous]).status == UNTRUSTED


def _with_header(signed: dict[str, Any], header: dict[str, Any]) -> dict[str, Any]:
    (signature,) = signed["signatures"]
    encoded = base64.urlsafe_b64encode(json.dumps(header).encode()).rstrip(b"=").decode()
    return {**signed, "signatures": [{**signature, "protected": encoded}]}


@pytest.mark.parametrize(
    "header",
    [
        {"alg": "none", "kid": "owner-2026"},
        {"alg": "HS256", "kid": "owner-2026"},  # a public key's bytes as an HMAC secret
        {"alg": "EdDSA", "kid": "owner-2026"},  # deprecated by RFC 9864: sign with Ed25519
    ],
    ids=["none", "HS256", "EdDSA"],
)
def test_only_signature_algorithms_are_accepted(owner_key: ECKey, header: dict[str, Any]) -> None:
    verdict = verify_card(_with_header(sign(card(), owner_key), header), [public(owner_key)])
    assert verdict.status == INVALID and header["alg"] in verdict.summary


@pytest.mark.parametrize(
    "signatures",
    [
        "not a list",
        ["not an object"],
        [{"protected": "e30"}],
        [{"protected": "!!not base64!!", "signature": "AAAA"}],
        [{"protected": "WyJhIl0", "signature": "AAAA"}],  # a JSON list, not a header
    ],
    ids=["text", "item", "no-value", "unreadable", "not-object"],
)
def test_malformed_signatures_are_invalid(owner_key: ECKey, signatures: Any) -> None:
    assert verify_card(card(signatures=signatures), [public(owner_key)]).status == INVALID


def test_unusable_trusted_keys_verify_nothing(owner_key: ECKey) -> None:
    # A fetched key set may hold a private or symmetric key: never used to verify.
    private = owner_key.as_dict(private=True)
    symmetric = {"kty": "oct", "k": "c2VjcmV0", "kid": "owner-2026"}
    signed = sign(card(), owner_key)
    assert verify_card(signed, [private, symmetric]).status == UNTRUSTED


@pytest.mark.parametrize(
    ("jwk", "problem"),
    [
        ({"kty": "oct", "k": "c2VjcmV0"}, "kty must be one of"),
        (
            {"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA", "d": "AA"},
            "private key material (d)",
        ),
        ({"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}, "not a valid EC key"),
        ({"kty": "RSA", "n": "AQAB", "e": "AQAB", "use": "enc"}, "use must be sig"),
        ("a string", "is an object"),
    ],
    ids=["symmetric", "private", "broken", "encryption", "text"],
)
def test_a_trusted_key_must_be_a_public_signature_key(jwk: Any, problem: str) -> None:
    found = jwk_problem(jwk)
    assert found is not None and problem in found


def test_a_public_key_is_fine(owner_key: ECKey) -> None:
    assert jwk_problem(public(owner_key)) is None
