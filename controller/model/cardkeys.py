"""The keys an `a2a_card` watch trusts for its agent card's signatures (issue 45), as the API
and the `.driftgate/` files write them: a JWKS URL, inline public JWKs, or both.

A2A signs an agent card with JSON Web Signatures; the card may name where its key lives
(`jku`), but a key the card points at proves only that whoever wrote the card holds it. The
keys a watch trusts are its own: named by the person who set the watch up (the model is
`controller.model.watch.CardKeys`), and verified by `controller.cardtrust`. Only public keys
of signature algorithms are accepted: a private key does not belong in a watch (nor in git),
and a symmetric (`oct`) key published in a JWKS would let anyone who reads it sign.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StringConstraints

from controller.contracts.kinds import A2A_CARD

# The watch type whose contract carries the signatures trusted keys verify.
CARD_WATCH_TYPE = A2A_CARD.name
MAX_KEYS = 20
# JWK members that hold private key material (RFC 7518 section 6: RSA, EC and OKP's `d`, an
# RSA key's primes and CRT values, `oth`), and an `oct` key's secret `k`.
PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "oth", "k")
# Key types whose public half verifies a signature (RFC 7518, RFC 8037).
PUBLIC_KEY_TYPES = ("RSA", "EC", "OKP")

_Member = Annotated[str, StringConstraints(max_length=4096, pattern=r"^[^\x00-\x1f\x7f]*$")]
# The length inside the pattern: a JSON Schema of the keys is then one pattern, as headers'.
_MemberName = Annotated[str, StringConstraints(pattern=r"^[!-~]{1,64}$")]
Jwk = Annotated[
    dict[_MemberName, _Member | Annotated[list[_Member], Field(max_length=20)]],
    Field(max_length=30, json_schema_extra={"required": ["kty"]}),
]


def jwk_problem(jwk: Any) -> str | None:
    """What makes `jwk` no public signature key a watch may trust, or None."""
    if not isinstance(jwk, dict):
        return "a JSON Web Key is an object"
    kty = jwk.get("kty")
    if kty not in PUBLIC_KEY_TYPES:
        return f"kty must be one of {', '.join(PUBLIC_KEY_TYPES)} (a public signature key)"
    private = sorted(name for name in PRIVATE_MEMBERS if name in jwk)
    if private:
        return (
            f"holds private key material ({', '.join(private)}): give the public key only "
            "(its kty, n/e or crv/x/y, kid)"
        )
    if jwk.get("use", "sig") != "sig":
        return "use must be sig"
    from joserfc.errors import JoseError
    from joserfc.jwk import JWKRegistry

    try:
        JWKRegistry.import_key(jwk)
    except (JoseError, ValueError, TypeError) as exc:
        return f"not a valid {kty} key ({exc.__class__.__name__})"
    return None
