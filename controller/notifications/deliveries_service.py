"""Deliveries as people see them: where each event went (the destination in full, without its
secrets) and which destinations are failing now.

The outbox stores a destination encrypted, with a hint of scheme and host beside it (what the
API shows, `GET /api/alerts/stats`). The console shows more: scheme, host, port and path
(`controller.targets.shown_destination`), read from the encrypted URL, so that two webhooks
on one host are told apart. A recipient that is not a URL (the weekly e-mail's address) keeps
its hint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.errors import DriftgateError
from controller.store.models import OutboxMessage
from controller.targets import shown_destination

FAILED_WINDOW = timedelta(hours=24)  # a message that gave up counts this long
FAILING_READ = 200  # at most this many failing messages are read
RECOVERY_READ = 500  # and at most this many later delivered ones


def shown(box: SecretBox, ciphertext: str, hint: str) -> str:
    """A message's destination as people see it: a URL in full without its secrets, else the
    stored hint (an e-mail recipient's, or any destination that cannot be decrypted)."""
    try:
        value = box.decrypt_json(ciphertext)
    except DriftgateError:
        return hint
    if isinstance(value, str) and "://" in value:
        return shown_destination(value)
    return hint


@dataclass
class FailingDestination:
    """A destination whose deliveries fail: how many messages are being retried, how many
    gave up (within `FAILED_WINDOW`), the newest error and when that message was queued, and
    the watches the messages were about."""

    channel: str
    destination: str
    retrying: int = 0
    failed: int = 0
    last_error: str | None = None
    last_at: datetime | None = None
    event_types: list[str] = field(default_factory=list)
    watch_ids: list[str] = field(default_factory=list)


def failing_destinations(
    session: Session, box: SecretBox, org_id: str, now: datetime
) -> list[FailingDestination]:
    """The org's destinations whose deliveries fail now: messages being retried, and those
    that gave up within the last `FAILED_WINDOW`, grouped by destination, the newest failure
    first. A destination that took a later message of the org is working again and is left
    out. Two bounded reads on the outbox's (org, time) index."""
    since = now - FAILED_WINDOW
    failing = session.execute(
        select(
            OutboxMessage.channel,
            OutboxMessage.destination_ciphertext,
            OutboxMessage.destination_hint,
            OutboxMessage.status,
            OutboxMessage.last_error,
            OutboxMessage.created_at,
            OutboxMessage.event_type,
            OutboxMessage.watch_id,
        )
        .where(
            OutboxMessage.org_id == org_id,
            OutboxMessage.created_at >= since,
            OutboxMessage.status.in_(("retrying", "failed")),
        )
        .order_by(OutboxMessage.created_at.desc(), OutboxMessage.id.desc())
        .limit(FAILING_READ)
    ).all()
    if not failing:
        return []
    groups: dict[tuple[str, str], FailingDestination] = {}
    for row in failing:
        where = shown(box, row.destination_ciphertext, row.destination_hint)
        group = groups.get((row.channel, where))
        if group is None:
            group = groups[(row.channel, where)] = FailingDestination(
                channel=row.channel,
                destination=where,
                last_error=row.last_error,
                last_at=row.created_at,
            )
        if row.status == "retrying":
            group.retrying += 1
        else:
            group.failed += 1
        if row.event_type not in group.event_types:
            group.event_types.append(row.event_type)
        if row.watch_id and row.watch_id not in group.watch_ids:
            group.watch_ids.append(row.watch_id)
    oldest = min(row.created_at for row in failing)
    delivered = session.execute(
        select(
            OutboxMessage.channel,
            OutboxMessage.destination_ciphertext,
            OutboxMessage.destination_hint,
            OutboxMessage.created_at,
        )
        .where(
            OutboxMessage.org_id == org_id,
            OutboxMessage.created_at > oldest,
            OutboxMessage.status == "delivered",
        )
        .order_by(OutboxMessage.created_at.desc(), OutboxMessage.id.desc())
        .limit(RECOVERY_READ)
    ).all()
    for later in delivered:
        key = (later.channel, shown(box, later.destination_ciphertext, later.destination_hint))
        group = groups.get(key)
        if group is not None and group.last_at is not None and later.created_at > group.last_at:
            del groups[key]  # a later message went through: it works again
    return list(groups.values())
