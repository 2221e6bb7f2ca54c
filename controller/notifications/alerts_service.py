"""Alert delivery statistics: outbox messages by channel, event type and state, and the last
attempts with their errors (destination hosts only, never URLs with tokens). `suppressed`
counts the repeats that delivery grouping held back (a message held until its window ends
is `pending`)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from controller.model.base import ApiModel
from controller.store.models import DeliveryAttempt, OutboxMessage

STATES = ("delivered", "failed", "retrying", "pending", "suppressed")
LAST_ATTEMPTS = 20


class DeliveryCounts(ApiModel):
    successful: int = 0
    failed: int = 0
    retrying: int = 0
    pending: int = 0
    suppressed: int = 0


class GroupStats(DeliveryCounts):
    channel: str
    event_type: str


class Attempt(ApiModel):
    attempted_at: datetime
    channel: str
    event_type: str
    destination: str
    success: bool
    status_code: int | None
    latency_ms: int
    error: str | None


class AlertStats(ApiModel):
    totals: DeliveryCounts
    by_channel: dict[str, DeliveryCounts]
    groups: list[GroupStats]
    last_attempts: list[Attempt]


def alert_stats(session: Session, org_id: str) -> AlertStats:
    totals = DeliveryCounts()
    by_channel: dict[str, DeliveryCounts] = {}
    groups: dict[tuple[str, str], GroupStats] = {}
    rows = session.execute(
        select(OutboxMessage.channel, OutboxMessage.event_type, OutboxMessage.status, func.count())
        .where(OutboxMessage.org_id == org_id)
        .group_by(OutboxMessage.channel, OutboxMessage.event_type, OutboxMessage.status)
    )
    for channel, event_type, status, count in rows:
        field = "successful" if status == "delivered" else status
        group = groups.setdefault(
            (channel, event_type), GroupStats(channel=channel, event_type=event_type)
        )
        channel_counts = by_channel.setdefault(channel, DeliveryCounts())
        for target in (group, channel_counts, totals):
            setattr(target, field, getattr(target, field) + int(count))
    attempts = session.execute(
        select(
            DeliveryAttempt,
            OutboxMessage.channel,
            OutboxMessage.event_type,
            OutboxMessage.destination_hint,
        )
        .join(OutboxMessage, OutboxMessage.id == DeliveryAttempt.outbox_id)
        .where(DeliveryAttempt.org_id == org_id)
        .order_by(DeliveryAttempt.attempted_at.desc(), DeliveryAttempt.id.desc())
        .limit(LAST_ATTEMPTS)
    )
    return AlertStats(
        totals=totals,
        by_channel=by_channel,
        groups=sorted(groups.values(), key=lambda g: (g.channel, g.event_type)),
        last_attempts=[
            Attempt(
                attempted_at=attempt.attempted_at,
                channel=channel,
                event_type=event_type,
                destination=hint,
                success=attempt.success,
                status_code=attempt.status_code,
                latency_ms=attempt.latency_ms,
                error=attempt.error,
            )
            for attempt, channel, event_type, hint in attempts
        ],
    )
