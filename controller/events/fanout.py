"""Queueing an event for the org's named destinations (`controller.destinations`): every
enabled destination whose kind and routing take it gets one outbox message
(`controller.events.outbox.queue`), or, in digest mode, the event joins the digest message of
the current period.

Called by `controller.events.outbox.emit` in the transaction of the event's cause, beside the
watch's webhook and the org's default destination. A message names its destination
(`destination_id`): delivery reads the destination's secrets, grouping window and health from
it. Its grouping topic is keyed by the destination, so every destination groups on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.events.channels import ORG_DESTINATION_KINDS as KINDS
from controller.events.channels import destination_hint_of as hint_of
from controller.events.grouping import topic_of
from controller.model.routing import Facts, Routing, is_digested, period_of, severity_of, takes
from controller.store.models import Destination, OutboxMessage, Watch, WatchSet

DIGEST_EVENT = "digest"
MAX_DIGEST_EVENTS = 500

Queue = Callable[..., OutboxMessage]


def fan_out(
    session: Session,
    box: SecretBox,
    queue: Queue,
    *,
    org_id: str,
    event_type: str,
    payload: dict[str, Any],
    now: datetime,
    watch: Watch | None,
    severity: str | None,
    org_policy: tuple[str, ...],
    except_destination: str | None = None,
    only_destination: str | None = None,
) -> list[OutboxMessage]:
    """Queue the event for the destinations that take it; return the messages queued (a
    digest's message once per period)."""
    rows = list(
        session.scalars(
            select(Destination).where(Destination.org_id == org_id).order_by(Destination.name)
        )
    )
    if not rows:
        return []
    facts = facts_of(session, event_type, severity, watch)
    watch_id = watch.id if watch is not None else None
    incident_id = (payload.get("data") or {}).get("incidentId")
    queued: list[OutboxMessage] = []
    for row in rows:
        kind = KINDS.get(row.kind)
        if kind is None or row.id == except_destination:
            continue
        if only_destination is not None:
            if row.id != only_destination:
                continue
        elif not row.enabled or not _takes(row, kind.events, facts, org_policy):
            continue
        config = config_of(box, row)
        address = kind.address(config)
        if is_digested(row.digest, event_type, kind.digests):
            queued.extend(_digest(session, box, queue, row, address, payload, now))
            continue
        queued.append(
            queue(
                session,
                box,
                org_id=org_id,
                event_type=event_type,
                channel=row.kind,
                destination=address,
                hint=hint_of(row.kind, address),
                payload={**payload, "_messageId": f"{payload['_messageId']}_{row.id}"},
                now=now,
                watch_id=watch_id,
                topic=topic_of(box, event_type, watch_id, incident_id, f"destination:{row.id}"),
                destination_id=row.id,
            )
        )
    return queued


def config_of(box: SecretBox, row: Destination) -> dict[str, Any]:
    """A destination's settings and decrypted secrets in one mapping: what its channel renders
    with and what its address is made of."""
    secrets = box.decrypt_json(row.secrets_ciphertext) if row.secrets_ciphertext else {}
    return {**(row.settings or {}), **(secrets if isinstance(secrets, dict) else {})}


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


def _takes(
    row: Destination, kind_events: tuple[str, ...] | None, facts: Facts, org_policy: tuple[str, ...]
) -> bool:
    if kind_events is not None and facts.event_type not in kind_events:
        return False
    return takes(Routing.loaded(row.routing), facts, org_policy)


def _digest(
    session: Session,
    box: SecretBox,
    queue: Queue,
    row: Destination,
    address: str,
    payload: dict[str, Any],
    now: datetime,
) -> list[OutboxMessage]:
    """Add the event to the destination's digest of this period (a message due when the
    period ends); the message is returned when this event started it."""
    start, end = period_of(row.digest, now)
    topic = f"digest:{row.id}:{int(start.timestamp())}"[:64]
    stmt = select(OutboxMessage).where(
        OutboxMessage.topic == topic, OutboxMessage.status == "pending"
    )
    if session.get_bind().dialect.name != "sqlite":
        stmt = stmt.with_for_update()
    message = session.scalars(stmt.limit(1)).first()
    event = {k: v for k, v in payload.items() if not k.startswith("_")}
    if message is not None:
        data = dict(message.payload.get("data") or {})
        events = list(data.get("events") or [])
        if len(events) < MAX_DIGEST_EVENTS:
            events.append(event)
        data["events"], data["count"] = events, int(data.get("count") or 0) + 1
        message.payload = {**message.payload, "data": data}
        return []
    message = queue(
        session,
        box,
        org_id=row.org_id,
        event_type=DIGEST_EVENT,
        channel=row.kind,
        destination=address,
        hint=hint_of(row.kind, address),
        payload={
            "type": DIGEST_EVENT,
            "timestamp": end.isoformat(),
            "data": {
                "destinationName": row.name,
                "digest": row.digest,
                "periodStart": start.isoformat(),
                "periodEnd": end.isoformat(),
                "count": 1,
                "events": [event],
            },
            "_messageId": f"{payload['_messageId']}_{row.id}_digest",
        },
        now=now,
        destination_id=row.id,
    )
    message.topic = topic
    message.next_attempt_at = end
    return [message]
