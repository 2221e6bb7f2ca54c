"""Verifying an agent card's signatures against the keys a watch trusts (A2A 1.0, "Agent Card
Signing").

A2A signs a card with one or more JSON Web Signatures (RFC 7515) in its `signatures` list,
each `{protected, signature, header?}`: the payload is detached, and it is the card without
`signatures` in its JCS canonical form (RFC 8785). So a verifier reads the card as it was
sent, drops `signatures`, canonicalizes the rest and checks each signature over
`protected || "." || BASE64URL(canonical card)` with a key it trusts.

A key is chosen by the signature's `kid` among the trusted keys only (a signature without a
`kid` is tried against each of them, a trusted key without a `kid` against each signature).
A `jku` or `x5u` in the header names where the signer says its key lives; it is never
fetched, so a card re-signed by someone else who points its `jku` at their own key set is
`untrusted`, as any key the watch does not name. The outcome is one of four statuses, the
first that holds:

- `trusted`: a signature verifies with a trusted key;
- `unsigned`: the card has no signatures;
- `invalid`: a signature is malformed, or a trusted key with its `kid` does not verify it
  (the card changed after signing, or someone signed under a trusted key's id);
- `untrusted`: every signature is by a key the watch does not trust.

Pure: the keys come in as JWKs (the inline ones and those of the watch's JWKS, fetched by
the assessor), and nothing here touches the network or a clock.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

from controller.model.cardkeys import jwk_problem

TRUSTED = "trusted"
UNSIGNED = "unsigned"
INVALID = "invalid"
UNTRUSTED = "untrusted"
STATUSES = (TRUSTED, UNSIGNED, INVALID, UNTRUSTED)
# Asymmetric signature algorithms only: no `none`, and no HMAC, which would take a public
# key's bytes as a shared secret. Ed25519 by its fully specified name (RFC 9864); the
# polymorphic `EdDSA` it deprecates is not accepted.
ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "Ed25519",
)
MAX_SIGNATURES = 10  # a card's signatures checked at most (each costs a verification per key)


@dataclass(frozen=True)
class CardVerdict:
    """What the signatures of one card come to: a status of `STATUSES`, the key ids that
    signed it (a trusted one first, when there is one) and one line saying it."""

    status: str
    summary: str
    kids: tuple[str, ...] = field(default=())

    @property
    def is_ok(self) -> bool:
        return self.status == TRUSTED


def canonical_card(card: dict[str, Any]) -> bytes:
    """The signed payload of a card: the card without `signatures`, JCS-canonical (RFC 8785).
    Raises `ValueError` for a card JCS cannot express (a number outside IEEE 754 doubles)."""
    import rfc8785

    try:
        return rfc8785.dumps({k: v for k, v in card.items() if k != "signatures"})
    except rfc8785.CanonicalizationError as exc:
        raise ValueError(f"the card has no JCS canonical form ({exc})") from None


def verify_card(card: Any, trusted: list[dict[str, Any]]) -> CardVerdict:
    """The verdict on `card` (the parsed JSON object as sent) against the `trusted` JWKs."""
    signatures = card.get("signatures") if isinstance(card, dict) else None
    if not signatures:
        return CardVerdict(UNSIGNED, "the agent card is not signed (no signatures)")
    if not isinstance(signatures, list):
        return CardVerdict(INVALID, "the agent card's signatures are not a list")
    try:
        payload = canonical_card(card)
    except ValueError as exc:
        return CardVerdict(INVALID, f"the agent card's signatures cannot be checked: {exc}")
    keys = _usable(trusted)
    checked = signatures[:MAX_SIGNATURES]
    outcomes = [_one(index, s, payload, keys) for index, s in enumerate(checked)]
    # Any trusted signature carries the card; else a broken one says more than a stranger's.
    status = next(s for s in (TRUSTED, INVALID, UNTRUSTED) if any(o.status == s for o in outcomes))
    first = next(o for o in outcomes if o.status == status)
    kids = tuple(dict.fromkeys(kid for o in (first, *outcomes) for kid in o.kids))
    return CardVerdict(status, first.summary, kids)


@dataclass(frozen=True)
class _Key:
    kid: str | None
    key: Any  # a joserfc key


def _usable(trusted: list[dict[str, Any]]) -> list[_Key]:
    """The trusted JWKs that can verify a signature; the rest (private or symmetric material
    in a fetched key set, keys for encryption) are left out."""
    from joserfc.errors import JoseError
    from joserfc.jwk import JWKRegistry

    keys = []
    for jwk in trusted:
        if jwk_problem(jwk) is not None:
            continue
        try:
            key = JWKRegistry.import_key(jwk)
        except (JoseError, ValueError, TypeError):
            continue
        kid = jwk.get("kid")
        keys.append(_Key(kid if isinstance(kid, str) else None, key))
    return keys


def _one(index: int, signature: Any, payload: bytes, keys: list[_Key]) -> CardVerdict:
    """The verdict on one signature."""
    where = f"signature {index}"
    if not isinstance(signature, dict):
        return CardVerdict(INVALID, f"the agent card's {where} is not an object")
    protected, value = signature.get("protected"), signature.get("signature")
    if not isinstance(protected, str) or not isinstance(value, str):
        return CardVerdict(INVALID, f"the agent card's {where} has no protected header or value")
    header = _protected_header(protected)
    if header is None:
        return CardVerdict(INVALID, f"the agent card's {where} has an unreadable protected header")
    unprotected = signature.get("header")
    unprotected = unprotected if isinstance(unprotected, dict) else {}
    kid = header.get("kid", unprotected.get("kid"))
    kid = kid if isinstance(kid, str) else None
    named = f"key {kid!r}" if kid is not None else "a key without kid"
    kids = (kid,) if kid is not None else ()
    alg = header.get("alg")
    if alg not in ALGORITHMS:
        return CardVerdict(
            INVALID, f"the agent card's {where} uses algorithm {alg!r}, not a signature one", kids
        )
    # The trusted keys of its kid, and those without a kid (a hint only, RFC 7515 4.1.4).
    named_keys = [k for k in keys if kid is not None and k.kid == kid]
    candidates = named_keys + [k for k in keys if k.kid is None or kid is None]
    if any(_verifies(protected, value, payload, k.key, alg) for k in candidates):
        return CardVerdict(TRUSTED, f"the agent card is signed by trusted {named}", kids)
    if named_keys:
        return CardVerdict(
            INVALID,
            f"the agent card's signature by {named} does not verify: the card changed after "
            "it was signed, or another key signed under that kid",
            kids,
        )
    pointer = " (the jku it names is not trusted by itself)" if _names_key_url(header) else ""
    return CardVerdict(
        UNTRUSTED,
        f"the agent card is signed by {named}{pointer}, which the watch does not trust",
        kids,
    )


def _names_key_url(header: dict[str, Any]) -> bool:
    return "jku" in header or "x5u" in header


def _protected_header(protected: str) -> dict[str, Any] | None:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4)))
    except (binascii.Error, ValueError):
        return None
    return decoded if isinstance(decoded, dict) else None


def _verifies(protected: str, value: str, payload: bytes, key: Any, alg: str) -> bool:
    from joserfc import jws
    from joserfc.errors import JoseError

    try:
        # Detached payload (RFC 7515 appendix F): the compact form with an empty middle part.
        jws.deserialize_compact(f"{protected}..{value}", key, algorithms=[alg], payload=payload)
    except (JoseError, ValueError, TypeError):
        return False
    return True
