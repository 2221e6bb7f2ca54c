"""Reading destinations in the store: the rows of an org, one by id (org scoped), a
destination's secrets decrypted. Query functions take a session and never commit."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.store.models import Destination


def org_destinations(session: Session, org_id: str) -> list[Destination]:
    """The org's destinations, by name."""
    return list(
        session.scalars(
            select(Destination).where(Destination.org_id == org_id).order_by(Destination.name)
        )
    )


def find(session: Session, org_id: str, destination_id: str) -> Destination | None:
    """The org's destination of that id (another org's is not found)."""
    row = session.get(Destination, destination_id)
    return row if row is not None and row.org_id == org_id else None


def secrets_of(box: SecretBox, row: Destination) -> dict[str, Any]:
    if not row.secrets_ciphertext:
        return {}
    value = box.decrypt_json(row.secrets_ciphertext)
    return dict(value) if isinstance(value, dict) else {}
