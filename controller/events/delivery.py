"""Delivering outbox messages: claim with a lease, sign, post with timeouts, record, retry.

Workers claim due messages (`FOR UPDATE SKIP LOCKED` on Postgres, an immediate transaction
on SQLite), send them outside any transaction, then record the attempt. Failures retry with
exponential backoff up to `MAX_ATTEMPTS`; every attempt is kept for `GET /api/alerts/stats`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.events import signing
from controller.events.secrets import signing_secret
from controller.sources.http import FetchError, post_json
from controller.store.db import Database
from controller.store.models import DeliveryAttempt, OutboxMessage

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


def backoff(attempts: int) -> timedelta:
    """Delay before the next try after `attempts` failed ones: 30 s, 60 s, 120 s ... 1 h."""
    return timedelta(seconds=min(MAX_DELAY_SECONDS, BASE_DELAY_SECONDS * 2 ** max(0, attempts - 1)))


def claim_due(database: Database, now: datetime, limit: int = 20) -> list[OutboxMessage]:
    """Lease up to `limit` due messages to this worker and return them."""
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
        if not database.is_sqlite:
            stmt = stmt.with_for_update(skip_locked=True)
        messages = list(session.scalars(stmt))
        for message in messages:
            message.lease_expires_at = now + timedelta(seconds=LEASE_SECONDS)
        session.flush()
        session.expunge_all()
        return messages


def send(
    message: OutboxMessage, box: SecretBox, secret: str, client: Any, now: datetime
) -> Outcome:
    """Post one message to its destination; never raises."""
    url = str(box.decrypt_json(message.destination_ciphertext))
    payload = {k: v for k, v in message.payload.items() if not k.startswith("_")}
    if message.channel == "slack":
        body = json.dumps({"text": slack_text(payload)}).encode()
        headers = {"Content-Type": "application/json"}
    else:
        body = json.dumps(payload, separators=(",", ":"), default=str).encode()
        message_id = str(message.payload.get("_messageId") or message.id)
        headers = signing.headers(secret, message_id, int(now.timestamp()), body)
    started = time.perf_counter()
    try:
        status = post_json(client, url, body, headers)
    except FetchError as exc:
        elapsed = int((time.perf_counter() - started) * 1000)
        # The destination URL may carry a token (Slack's do): only its host is kept.
        error = f"{exc.failure_class}: {exc.message}".replace(url, message.destination_hint)
        return Outcome(False, exc.status, elapsed, error)
    elapsed = int((time.perf_counter() - started) * 1000)
    if 200 <= status < 300:
        return Outcome(True, status, elapsed, None)
    return Outcome(False, status, elapsed, f"HTTP {status}")


def record(database: Database, message_id: str, outcome: Outcome, now: datetime) -> str:
    """Store the attempt and the message's next state; return that state."""
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
        return message.status


def deliver_due(
    database: Database, box: SecretBox, client: Any, now: datetime, limit: int = 20
) -> int:
    """Claim, send and record due messages; return how many were attempted."""
    messages = claim_due(database, now, limit)
    secrets: dict[str, str] = {}
    for message in messages:
        if message.org_id not in secrets:
            with database.transaction() as session:
                secrets[message.org_id] = signing_secret(session, message.org_id, box)
        outcome = send(message, box, secrets[message.org_id], client, now)
        record(database, message.id, outcome, now)
    return len(messages)


def release_stale_leases(session: Session, now: datetime) -> int:
    """Leases of crashed workers expire by time; nothing else to do but count them."""
    result = session.execute(
        update(OutboxMessage)
        .where(OutboxMessage.lease_expires_at.is_not(None), OutboxMessage.lease_expires_at < now)
        .values(lease_expires_at=None)
    )
    return int(getattr(result, "rowcount", 0) or 0)


def slack_text(payload: dict[str, Any]) -> str:
    """A readable Slack message for an event."""
    data = payload.get("data", {})
    name = data.get("watchName") or data.get("watchId") or "a watch"
    kind = payload.get("type", "event")
    counts = data.get("counts") or {}
    headline = {
        "drift.detected": f":warning: Contract drift on *{name}*",
        "drift.cleared": f":white_check_mark: Drift cleared on *{name}*",
        "drift.check_failed": f":x: Check failed for *{name}*",
        "incident.open": f":rotating_light: Incident opened for *{name}*",
        "incident.acknowledged": f":eyes: Incident acknowledged for *{name}*",
        "incident.resolved": f":white_check_mark: Incident resolved for *{name}*",
    }.get(kind, f"driftgate {kind}: *{name}*")
    lines = [headline]
    if counts:
        lines.append(
            f"{counts.get('breaking', 0)} breaking, {counts.get('warning', 0)} warning, "
            f"{counts.get('info', 0)} info"
        )
    for change in (data.get("changes") or [])[:5]:
        lines.append(f"• [{change.get('severity')}] {change.get('summary')}")
    if data.get("error"):
        lines.append(f"Error: {data['error']}")
    return "\n".join(lines)
