"""Key rotation for secrets at rest: re-encrypt every stored ciphertext with the primary key."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.store.models import Watch


def rotate_all(session: Session, box: SecretBox) -> int:
    """Re-encrypt all secrets in the caller's transaction; return how many were rewritten."""
    count = 0
    for watch in session.scalars(select(Watch).where(Watch.headers_ciphertext.is_not(None))):
        assert watch.headers_ciphertext is not None
        watch.headers_ciphertext = box.rotate(watch.headers_ciphertext)
        count += 1
    return count
