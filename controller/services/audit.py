"""The audit log of administrative actions (who did what to which object)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from controller.store.models import AuditEntry


def record(
    session: Session,
    *,
    actor: str,
    action: str,
    target_type: str,
    target_id: str | None,
    org_id: str | None,
    details: dict[str, Any] | None = None,
) -> None:
    """Add an audit entry in the caller's transaction; never pass secret values in details."""
    session.add(
        AuditEntry(
            org_id=org_id,
            actor=actor,
            action=action,
            target_type=target_type,
            target_id=target_id,
            details=details or {},
        )
    )
