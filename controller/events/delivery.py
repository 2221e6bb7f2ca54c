"""Delivering outbox messages: claim with a lease, render, post with timeouts, record, retry.

Workers claim due messages (`FOR UPDATE SKIP LOCKED` on Postgres, an immediate transaction
on SQLite), send them outside any transaction through their channel (`controller.events.
channels`: a signed webhook, a Slack message, an e-mail), then record the attempt. Failures
retry with exponential backoff up to `MAX_ATTEMPTS`; every attempt is kept for
`GET /api/alerts/stats`. Before a message of a drift or incident topic is sent, the grouping
rule may hold it or suppress it into a newer one (`controller.events.grouping`); one that
stands for suppressed repeats says how many in `data.suppressedCount`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from controller import metrics, tracing
from controller.crypto import SecretBox
from controller.events import health
from controller.events.channels import CHANNELS, Channels, Event
from controller.events.grouping import settle
from controller.events.secrets import signing_secret
from controller.logs import log
from controller.sources.http import FetchError
from controller.store.db import Database
from controller.store.models import DeliveryAttempt, OutboxMessage

logger = logging.getLogger("driftgate.deliveries")

MAX_ATTEMPTS = 6
BASE_DELAY_SECONDS = 30
MAX_DELAY_SECONDS = 3600
LEASE_SECONDS = 120


@dataclass(frozen=True)
class Outcome:
    success: bool
    status_code: int | None
    latency_ms: int
    error: str | None
    # Why it failed, as a kind (a failure class, or `http_status` for a non-2xx answer).
    failure: str | None = None


def backoff(attempts: int) -> timedelta:
    """Delay before the next try after `attempts` failed ones: 30 s, 60 s, 120 s ... 1 h."""
    return timedelta(seconds=min(MAX_DELAY_SECONDS, BASE_DELAY_SECONDS * 2 ** max(0, attempts - 1)))


def claim_due(
    database: Database, now: datetime, limit: int = 20, ids: list[str] | None = None
) -> list[OutboxMessage]:
    """Lease up to `limit` due messages (of `ids`, when given) to this worker; return them."""
    with database.claim_transaction() as session:
        stmt = (
            select(OutboxMessage)
            .where(
                OutboxMessage.status.in_(("pending", "retrying")),
                OutboxMessage.next_attempt_at <= now,
                or_(OutboxMessage.lease_expires_at.is_(None), OutboxMessage.lease_expires_at < now),
            )
            .order_by(OutboxMessage.next_attempt_at)
            .limit(limit)
        )
        if ids is not None:
            stmt = stmt.where(OutboxMessage.id.in_(ids))
        if not database.is_sqlite:
            stmt = stmt.with_for_update(skip_locked=True)
        messages = list(session.scalars(stmt))
        for message in messages:
            message.lease_expires_at = now + timedelta(seconds=LEASE_SECONDS)
        session.flush()
        session.expunge_all()
        return messages


def send(
    message: OutboxMessage,
    box: SecretBox,
    secret: str,
    client: Any,
    now: datetime,
    channels: Channels = CHANNELS,
    config: dict[str, Any] | None = None,
) -> Outcome:
    """Post one message to its destination through its channel; never raises. `config` is
    the settings and secrets of the org destination the message goes to, if any."""
    url = str(box.decrypt_json(message.destination_ciphertext))
    channel = channels.for_message(message.channel)
    if message.destination_id is not None and config is None:
        return Outcome(False, None, 0, "gone: the destination was deleted", "gone")
    event = Event(
        payload=outgoing_payload(message),
        message_id=str(message.payload.get("_messageId") or message.id),
        secret=secret,
        now=now,
        org_id=message.org_id,
        config=config or {},
        destination_id=message.destination_id,
    )
    outgoing = channel.render(event)
    started = time.perf_counter()
    try:
        status = channel.transport(client, url, outgoing, event)
    except FetchError as exc:
        elapsed = int((time.perf_counter() - started) * 1000)
        # The destination URL may carry a token (Slack's do): only its host is kept, and no
        # secret of an org destination is ever quoted.
        error = f"{exc.failure_class}: {exc.message}".replace(url, message.destination_hint)
        for value in (config or {}).values():
            if isinstance(value, str) and len(value) >= 8 and value in error:
                error = error.replace(value, "…")
        return Outcome(False, exc.status, elapsed, error, exc.failure_class)
    elapsed = int((time.perf_counter() - started) * 1000)
    if 200 <= status < 300:
        return Outcome(True, status, elapsed, None)
    return Outcome(False, status, elapsed, f"HTTP {status}", "http_status")


def outgoing_payload(message: OutboxMessage) -> dict[str, Any]:
    """The payload as it goes out: without the private `_` keys, and with
    `data.suppressedCount` when the message stands for repeats that were held back."""
    payload = {k: v for k, v in message.payload.items() if not k.startswith("_")}
    if message.suppressed_count and isinstance(payload.get("data"), dict):
        payload["data"] = {**payload["data"], "suppressedCount": message.suppressed_count}
    return payload


def record(
    database: Database,
    message_id: str,
    outcome: Outcome,
    now: datetime,
    box: SecretBox | None = None,
) -> str:
    """Store the attempt and the message's next state; return that state. A message to an
    org destination writes the destination's health too (`health.note`), and with `box` the
    first failure of a streak tells the org's other destinations."""
    with database.transaction() as session:
        message = session.get(OutboxMessage, message_id)
        if message is None:
            return "gone"
        message.attempts += 1
        message.lease_expires_at = None
        session.add(
            DeliveryAttempt(
                outbox_id=message.id,
                org_id=message.org_id,
                attempted_at=now,
                success=outcome.success,
                status_code=outcome.status_code,
                latency_ms=outcome.latency_ms,
                error=outcome.error,
            )
        )
        if outcome.success:
            message.status, message.delivered_at, message.last_error = "delivered", now, None
        elif message.attempts >= MAX_ATTEMPTS:
            message.status, message.last_error = "failed", outcome.error
        else:
            message.status = "retrying"
            message.last_error = outcome.error
            message.next_attempt_at = now + backoff(message.attempts)
        if message.destination_id is not None:
            health.note(session, box, message, outcome.success, outcome.error, now)
        return message.status


def deliver_due(
    database: Database,
    box: SecretBox,
    client: Any,
    now: datetime,
    limit: int = 20,
    *,
    ids: list[str] | None = None,
    channels: Channels = CHANNELS,
    group_seconds: float = 0,
) -> int:
    """Claim, send (through `channels`) and record due messages, only those of `ids` when
    given; return how many were handled (sent, or held or suppressed by the grouping rule
    over `group_seconds`, the `delivery_group_seconds` setting; 0: no grouping)."""
    messages = claim_due(database, now, limit if ids is None else len(ids), ids)
    secrets: dict[str, str] = {}
    for index, message in enumerate(messages):
        config: dict[str, Any] | None = None
        window = group_seconds
        try:
            if message.org_id not in secrets:
                with database.transaction() as session:
                    secrets[message.org_id] = signing_secret(session, message.org_id, box)
            if message.destination_id is not None:
                with database.session() as session:
                    config, own_window = health.destination_config(session, box, message)
                window = own_window if own_window is not None else group_seconds
            settled = settle(database, message, now, window)
        except Exception:
            # Nothing was sent: hand the claimed messages back at once rather than letting
            # them wait out their lease, then let the lane report the failure.
            release(database, [m.id for m in messages[index:]])
            raise
        if settled != "send":
            continue  # held until its window ends, or suppressed into a newer message
        with tracing.span("deliver", _attributes(message)) as span:
            outcome = send(message, box, secrets[message.org_id], client, now, channels, config)
            state = record(database, message.id, outcome, now, box)
            metrics.delivery_done(
                message.channel, outcome.success, outcome.latency_ms / 1000, message.org_id
            )
            _delivered(span, message, outcome, state)
    return len(messages)


def _attributes(message: OutboxMessage) -> dict[str, Any]:
    return {
        tracing.MESSAGE_ID: message.id,
        tracing.ORG_ID: message.org_id,
        tracing.WATCH_ID: message.watch_id,
        tracing.EVENT_TYPE: message.event_type,
        tracing.CHANNEL: message.channel,
        tracing.DESTINATION: message.destination_hint,
        tracing.ATTEMPT: message.attempts + 1,
    }


def _delivered(span: tracing.Span, message: OutboxMessage, outcome: Outcome, state: str) -> None:
    """What a delivery's span and the log say: a failed attempt is one line, with the
    destination's host only (its URL may hold a token) and no error text."""
    tracing.annotate(
        span, {tracing.HTTP_STATUS: outcome.status_code, tracing.DELIVERY_RESULT: state}
    )
    if outcome.success:
        return
    tracing.failed(span, outcome.failure or "error")
    log(
        logger,
        logging.WARNING,
        "delivery.failed",
        messageId=message.id,
        orgId=message.org_id,
        watchId=message.watch_id,
        eventType=message.event_type,
        channel=message.channel,
        destination=message.destination_hint,
        attempt=message.attempts + 1,
        httpStatus=outcome.status_code,
        failureClass=outcome.failure,
        next=state,
    )


def release(database: Database, ids: list[str]) -> None:
    """Drop this worker's lease on messages it claimed but did not send (best effort)."""
    try:
        with database.transaction() as session:
            session.execute(
                update(OutboxMessage).where(OutboxMessage.id.in_(ids)).values(lease_expires_at=None)
            )
    except Exception:  # noqa: BLE001 - the store may be what failed; the lease then expires
        logger.warning("deliveries.release_failed", extra={"messages": len(ids)})


def release_stale_leases(session: Session, now: datetime) -> int:
    """Leases of crashed workers expire by time; nothing else to do but count them."""
    result = session.execute(
        update(OutboxMessage)
        .where(OutboxMessage.lease_expires_at.is_not(None), OutboxMessage.lease_expires_at < now)
        .values(lease_expires_at=None)
    )
    return int(getattr(result, "rowcount", 0) or 0)
