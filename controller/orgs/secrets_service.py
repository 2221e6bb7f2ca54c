"""Key rotation for secrets at rest: re-encrypt every stored ciphertext with the primary key."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import InstrumentedAttribute, Session

from controller.crypto import SecretBox
from controller.store.models import (
    Destination,
    NotificationDefaults,
    OutboxMessage,
    SmtpSettings,
    Template,
    Watch,
    WebhookSecret,
)

# Every encrypted column of the store.
ENCRYPTED: tuple[InstrumentedAttribute[Any], ...] = (
    Watch.headers_ciphertext,
    Watch.oauth_ciphertext,
    Watch.oauth_token_ciphertext,
    NotificationDefaults.destination_ciphertext,
    WebhookSecret.secret_ciphertext,
    OutboxMessage.destination_ciphertext,
    Template.headers_ciphertext,
    SmtpSettings.password_ciphertext,
    Destination.secrets_ciphertext,
)


def rotate_all(session: Session, box: SecretBox) -> int:
    """Re-encrypt all secrets in the caller's transaction; return how many were rewritten."""
    count = 0
    for column in ENCRYPTED:
        model = column.class_
        for row in session.scalars(select(model).where(column.is_not(None))):
            setattr(row, column.key, box.rotate(getattr(row, column.key)))
            count += 1
    return count
