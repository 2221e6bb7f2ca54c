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
from controller.store.models import Destination, OutboxMessage
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
    # An org's named destination (`controller.destinations`): its name, the attempts in a row
    # that failed and when the next retry is due, from its health.
    name: str | None = None
    failed_attempts: int = 0
    next_retry_at: datetime | None = None


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
            OutboxMessage.destination_id,
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
        key = _key(row.channel, where, row.destination_id)
        group = groups.get(key)
        if group is None:
            group = groups[key] = FailingDestination(
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
            OutboxMessage.destination_id,
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
        where = shown(box, later.destination_ciphertext, later.destination_hint)
        key = _key(later.channel, where, later.destination_id)
        group = groups.get(key)
        if group is not None and group.last_at is not None and later.created_at > group.last_at:
            del groups[key]  # a later message went through: it works again
    _name_destinations(session, groups)
    return list(groups.values())


def _key(channel: str, where: str, destination_id: str | None) -> tuple[str, str]:
    """A named destination is one, whatever its address; another is its channel and address."""
    return ("destination", destination_id) if destination_id else (channel, where)


def _name_destinations(session: Session, groups: dict[tuple[str, str], FailingDestination]) -> None:
    """Name the org's named destinations among `groups` and add their health; drop those
    whose health says they work again (an attempt succeeded since), and those deleted."""
    for (scope, destination_id), group in list(groups.items()):
        if scope != "destination":
            continue
        row = session.get(Destination, destination_id)
        if row is None or row.failing_since is None:
            del groups[(scope, destination_id)]
            continue
        group.name, group.failed_attempts = row.name, row.failed_attempts
        group.next_retry_at = row.next_retry_at
        group.last_error = row.last_error or group.last_error
