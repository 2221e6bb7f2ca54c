"""Delivery grouping: a flapping watch does not send a message per flip.

Alert managers group notifications (Alertmanager's `group_wait` / `group_interval`): what
happens to one thing within a short time goes out once, with the newest state. Here the
thing is a *topic*: one watch, one incident (or none: warnings), one family of events
(`incident.*` or `drift.detected` / `drift.cleared`) and one destination. The webhook body
stays SPEC.md's `{type, timestamp, data}`: there is no grouped form, so repeats are held back
and counted instead.

When a delivery worker claims a message of a topic (`settle`):

1. a newer message of the same topic exists: this one is stale, it is `suppressed` and the
   newer one stands for it (`suppressed_count` grows by this one and those it stood for);
2. else the older messages of the topic not yet sent are suppressed into this one;
3. a message of the same topic and event type was delivered less than the window ago: this
   one is a repeat; it is held (still `pending`) until the window since that delivery ends,
   and goes out then unless something newer replaced it meanwhile;
4. else it goes out now, with `data.suppressedCount` when it stands for others.

So the last word a receiver gets about a topic is always the newest state (never a held
`incident.resolved` after a later `incident.open`), at most one message per event type and
window reaches it, and every message held back is in the delivery log as `suppressed`.
`drift.check_failed` and the agent events have no topic: a check error, a kill and an unblock
always go out at once (fail closed). `decide` is the pure rule; `settle` applies it to the
store.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.store.db import Database
from controller.store.models import OutboxMessage

# The families of the events that are grouped; every other event type goes out as it is.
FAMILIES = {
    "incident.open": "incident",
    "incident.acknowledged": "incident",
    "incident.resolved": "incident",
    "drift.detected": "drift",
    "drift.cleared": "drift",
}
SUPPRESSED = "suppressed"
# How far back a topic's messages are read: a message held for a window, then retried for
# its whole backoff (about 16 minutes), is still seen.
_LOOKBACK_SLACK = timedelta(hours=1)


def topic_of(
    box: SecretBox, event_type: str, watch_id: str | None, incident_id: str | None, url: str
) -> str | None:
    """The topic of a message to `url`, keyed (destination URLs can hold tokens): None for an
    event that is never grouped, or one that is about no watch."""
    family = FAMILIES.get(event_type)
    if family is None or watch_id is None:
        return None
    name = f"{watch_id}|{family}|{incident_id or '-'}|{url}".encode()
    return hmac.new(box.derived_keys("outbox topic")[0], name, hashlib.sha256).hexdigest()[:64]


Action = Literal["send", "hold", "suppress"]


@dataclass(frozen=True)
class Facts:
    """What the rule needs to know about a claimed message and its topic."""

    has_newer: bool
    attempted: bool
    last_delivered_at: datetime | None  # of the same topic and event type


@dataclass(frozen=True)
class Decision:
    action: Action
    until: datetime | None = None  # when a held message is due


def decide(facts: Facts, now: datetime, window: timedelta) -> Decision:
    """What to do with a claimed message of a topic (steps 1, 3 and 4 above)."""
    if facts.has_newer:
        return Decision("suppress")
    if facts.attempted or facts.last_delivered_at is None:
        return Decision("send")  # a retry is not held again: its first attempt was due
    due = facts.last_delivered_at + window
    return Decision("hold", due) if due > now else Decision("send")


def settle(database: Database, message: OutboxMessage, now: datetime, window_seconds: float) -> str:
    """Apply the grouping rule to a message this worker claimed: `send` (its
    `suppressed_count` is brought up to date), `hold` or `suppress` (the lease is given back
    either way)."""
    if message.topic is None or window_seconds <= 0:
        return "send"
    window = timedelta(seconds=window_seconds)
    with database.transaction() as session:
        row = session.get(OutboxMessage, message.id)
        if row is None or row.status not in ("pending", "retrying"):
            return "suppress"
        newer = _newest_after(session, row)
        if newer is None:
            row.suppressed_count += _fold_older(session, row, now, window)
        facts = Facts(
            has_newer=newer is not None,
            attempted=row.attempts > 0,
            last_delivered_at=_last_delivered(session, row, now, window),
        )
        decision = decide(facts, now, window)
        if decision.action == "suppress":
            assert newer is not None
            session.execute(
                update(OutboxMessage)
                .where(OutboxMessage.id == newer)
                .values(suppressed_count=OutboxMessage.suppressed_count + row.suppressed_count + 1)
            )
            row.status, row.lease_expires_at = SUPPRESSED, None
        elif decision.action == "hold":
            assert decision.until is not None
            row.next_attempt_at, row.lease_expires_at = decision.until, None
        message.suppressed_count = row.suppressed_count
        return decision.action


def _newest_after(session: Session, row: OutboxMessage) -> str | None:
    """The id of the newest message of the row's topic created after it, if any."""
    later = or_(
        OutboxMessage.created_at > row.created_at,
        and_(OutboxMessage.created_at == row.created_at, OutboxMessage.id > row.id),
    )
    return session.scalar(
        select(OutboxMessage.id)
        .where(OutboxMessage.topic == row.topic, later, OutboxMessage.status != SUPPRESSED)
        .order_by(OutboxMessage.created_at.desc(), OutboxMessage.id.desc())
        .limit(1)
    )


def _fold_older(session: Session, row: OutboxMessage, now: datetime, window: timedelta) -> int:
    """Suppress the older messages of the row's topic that nobody is sending; how many
    messages they stood for, themselves included."""
    folded = session.execute(
        update(OutboxMessage)
        .where(
            OutboxMessage.topic == row.topic,
            OutboxMessage.created_at >= row.created_at - 2 * window - _LOOKBACK_SLACK,
            # Strictly older: a message committed since `_newest_after` looked is newer news
            # and must never be folded into this one.
            or_(
                OutboxMessage.created_at < row.created_at,
                and_(OutboxMessage.created_at == row.created_at, OutboxMessage.id < row.id),
            ),
            OutboxMessage.status.in_(("pending", "retrying")),
            or_(OutboxMessage.lease_expires_at.is_(None), OutboxMessage.lease_expires_at < now),
        )
        .values(status=SUPPRESSED, lease_expires_at=None)
        .returning(OutboxMessage.suppressed_count)
    ).scalars()
    return sum(count + 1 for count in folded)


def _last_delivered(
    session: Session, row: OutboxMessage, now: datetime, window: timedelta
) -> datetime | None:
    """When a message of the row's topic and event type was last delivered."""
    last: datetime | None = session.scalar(
        select(func.max(OutboxMessage.delivered_at)).where(
            OutboxMessage.topic == row.topic,
            OutboxMessage.created_at >= now - 2 * window - _LOOKBACK_SLACK,
            OutboxMessage.event_type == row.event_type,
            OutboxMessage.status == "delivered",
        )
    )
    return last
