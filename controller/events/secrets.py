"""The org's webhook signing secret (`whsec_...`), stored encrypted, created on first use.

Delivery signs with it and the shells show it; rotating it is a use case with an audit entry
(`controller.services.notifications.rotate_signing_secret`).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.events.signing import new_secret
from controller.store.models import WebhookSecret


def signing_secret(session: Session, org_id: str, box: SecretBox) -> str:
    """The org's `whsec_...` secret, created on first use."""
    row = session.get(WebhookSecret, org_id)
    if row is None:
        secret = new_secret()
        session.add(WebhookSecret(org_id=org_id, secret_ciphertext=box.encrypt_json(secret)))
        session.flush()
        return secret
    return str(box.decrypt_json(row.secret_ciphertext))
