"""Standard Webhooks signatures: `webhook-id`, `webhook-timestamp`, `webhook-signature`.

The signed content is `"{id}.{timestamp}.{body}"`, the signature `v1,<base64 HMAC-SHA256>`
keyed by the base64 part of the org's `whsec_...` secret. Receivers verify with any Standard
Webhooks library or with `verify` below.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"
TOLERANCE_SECONDS = 300


class SignatureError(ValueError):
    """A webhook failed verification."""


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def _key(secret: str) -> bytes:
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("a signing secret starts with whsec_")
    return base64.b64decode(secret[len(SECRET_PREFIX) :])


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The `webhook-signature` header value for one delivery."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, message_id, timestamp, body),
        "Content-Type": "application/json",
    }


def verify(secret: str, received: dict[str, str], body: bytes, now: int) -> None:
    """Raise `SignatureError` unless one of the signatures matches and the time is recent."""
    lowered = {k.lower(): v for k, v in received.items()}
    try:
        message_id = lowered["webhook-id"]
        timestamp = int(lowered["webhook-timestamp"])
        signatures = lowered["webhook-signature"].split()
    except (KeyError, ValueError):
        raise SignatureError("missing or malformed webhook headers") from None
    if abs(now - timestamp) > TOLERANCE_SECONDS:
        raise SignatureError("timestamp outside the tolerance")
    expected = sign(secret, message_id, timestamp, body)
    if not any(hmac.compare_digest(expected, candidate) for candidate in signatures):
        raise SignatureError("no matching signature")
