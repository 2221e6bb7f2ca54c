"""Reading and writing destinations in the store: the rows of an org, a destination's
configuration with its secrets decrypted, what routing reads of a watch, and the messages a
destination posted (a Slack bot's, to update them later). Query functions take a session and
never commit."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.destinations.model import Facts, severity_of
from controller.store.models import Destination, DestinationThread, Watch, WatchSet


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


def config_of(box: SecretBox, row: Destination) -> dict[str, Any]:
    """Settings and decrypted secrets in one mapping: what a channel renders with."""
    return {**(row.settings or {}), **secrets_of(box, row)}


def facts_of(session: Session, event_type: str, severity: str | None, watch: Watch | None) -> Facts:
    """What routing reads of an event about `watch` (or about none)."""
    judged = severity_of(event_type, severity)
    if watch is None:
        return Facts(event_type, judged)
    watch_set = session.get(WatchSet, watch.watch_set_id) if watch.watch_set_id else None
    return Facts(
        event_type,
        judged,
        watch=True,
        tags=tuple(watch.tags),
        watch_set=watch_set.name if watch_set is not None else None,
        environment=watch_set.environment if watch_set is not None else None,
    )


def thread_of(session: Session, destination_id: str, incident_id: str) -> dict[str, Any] | None:
    """What the destination's service calls its message about the incident, if it posted one."""
    row = session.get(DestinationThread, (destination_id, incident_id))
    return dict(row.reference) if row is not None else None


def remember_thread(
    session: Session,
    destination_id: str,
    incident_id: str,
    reference: dict[str, Any],
    now: datetime,
) -> None:
    """Keep the message's reference (a Slack channel and `ts`) for the incident's later steps."""
    row = session.get(DestinationThread, (destination_id, incident_id))
    if row is None:
        session.add(
            DestinationThread(
                destination_id=destination_id,
                incident_id=incident_id,
                reference=reference,
                created_at=now,
            )
        )
    else:
        row.reference = reference
