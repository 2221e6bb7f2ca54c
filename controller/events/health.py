"""A destination's health, written by every delivery attempt to an org destination.

The attempt's outcome lands on the destination's row in the transaction that records the
attempt (`delivery.record`): when it last tried, the last error, how many attempts in a row
failed and when the next retry is due. So a failing destination shows in the API and the
console after its first failed attempt, not after the outbox gave up. The first failure of a
streak raises `destination.failing` to the org's other destinations (and its default
destination), once; the first success after it raises `destination.recovered`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.store.models import Destination, OutboxMessage


def destination_config(
    session: Session, box: SecretBox, message: OutboxMessage
) -> tuple[dict[str, Any] | None, int | None]:
    """The settings and secrets of the message's destination (None: it was deleted) and its
    own grouping window (None: the server's)."""
    from controller.events.fanout import config_of

    row = session.get(Destination, message.destination_id) if message.destination_id else None
    if row is None:
        return None, None
    return config_of(box, row), row.group_seconds


def note(
    session: Session,
    box: SecretBox | None,
    message: OutboxMessage,
    success: bool,
    error: str | None,
    now: datetime,
) -> None:
    """Write one attempt's outcome on the message's destination; tell the others when a
    failure streak starts or ends (with `box`)."""
    row = session.get(Destination, message.destination_id) if message.destination_id else None
    if row is None:
        return
    row.last_attempt_at = now
    if success:
        was_failing = row.failing_since is not None
        row.last_delivered_at, row.last_error = now, None
        row.failed_attempts, row.next_retry_at, row.failing_since = 0, None, None
        if was_failing and box is not None:
            _tell_others(session, box, row, "destination.recovered", now)
        return
    row.last_error = error
    row.failed_attempts += 1
    row.next_retry_at = message.next_attempt_at if message.status == "retrying" else None
    if row.failing_since is None:
        row.failing_since = now
        if box is not None:
            _tell_others(session, box, row, "destination.failing", now)


def _tell_others(
    session: Session, box: SecretBox, row: Destination, event_type: str, now: datetime
) -> None:
    from controller.events.outbox import emit

    emit(
        session,
        box,
        org_id=row.org_id,
        event_type=event_type,
        data={
            "destinationId": row.id,
            "destinationName": row.name,
            "kind": row.kind,
            "lastError": row.last_error,
            "failedAttempts": row.failed_attempts,
            "failingSince": row.failing_since.isoformat() if row.failing_since else None,
            "nextRetryAt": row.next_retry_at.isoformat() if row.next_retry_at else None,
        },
        now=now,
        except_destination=row.id,
    )
