"""The audit log of administrative actions (who did what to which object)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

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
    at: datetime | None = None,
) -> None:
    """Add an audit entry in the caller's transaction; never pass secret values in details.
    `at` is the time of the work that acted (a check's clock), else the current time."""
    entry = AuditEntry(
        org_id=org_id,
        actor=actor,
        action=action,
        target_type=target_type,
        target_id=target_id,
        details=details or {},
    )
    if at is not None:
        entry.created_at = at
    session.add(entry)


class Caller(Protocol):
    """Who acts: an authenticated principal (`controller.model.principal.Principal`) or the like."""

    @property
    def actor(self) -> str: ...

    @property
    def org_id(self) -> str: ...


def by(
    session: Session,
    caller: Caller,
    action: str,
    target_id: str | None,
    details: dict[str, Any] | None = None,
    *,
    target_type: str | None = None,
) -> None:
    """`record` for an action of an authenticated caller in its own org; the target type is
    the action's family (`watch.create` → `watch`) unless given."""
    record(
        session,
        actor=caller.actor,
        action=action,
        target_type=target_type or action.split(".", 1)[0],
        target_id=target_id,
        org_id=caller.org_id,
        details=details,
    )


def on_org(
    session: Session, actor: str, org_id: str, action: str, details: dict[str, Any] | None = None
) -> None:
    """`record` for an action on the org itself (its plan, products, settings, secrets)."""
    record(
        session,
        actor=actor,
        action=action,
        target_type="org",
        target_id=org_id,
        org_id=org_id,
        details=details,
    )
