"""The org's webhook signing secret (`whsec_...`), stored encrypted, created on first use.

Delivery signs with it and the shells show it; rotating it is a use case with an audit entry
(`controller.notifications.service.rotate_signing_secret`).
"""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.events.signing import new_secret
from controller.store.models import WebhookSecret


def signing_secret(session: Session, org_id: str, box: SecretBox) -> str:
    """The org's `whsec_...` secret, created on first use.

    Several delivery threads (and controllers) can meet an org's first message at once: the
    insert runs in a savepoint, and the one that loses the race reads the winner's secret.
    """
    row = session.get(WebhookSecret, org_id)
    if row is None:
        secret = new_secret()
        try:
            with session.begin_nested():
                session.add(
                    WebhookSecret(org_id=org_id, secret_ciphertext=box.encrypt_json(secret))
                )
        except IntegrityError:
            row = session.get(WebhookSecret, org_id, populate_existing=True)
            if row is None:  # pragma: no cover - the winner's row is committed before ours fails
                raise
            return str(box.decrypt_json(row.secret_ciphertext))
        return secret
    return str(box.decrypt_json(row.secret_ciphertext))
