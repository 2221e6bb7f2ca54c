"""The durable outbox: events are rows written in the same transaction as their cause.

`emit` decides the destinations of an event (the watch's own webhook, the org's default
destination, the org's named destinations whose routing takes it: `controller.destinations`)
and the org's alert policy (which severities notify), and stores one message per
destination. Destination URLs can hold tokens (Slack webhook URLs do), so they are stored
encrypted with only the host shown. Delivery happens later, in the controller.
A message about a watch's drift or incident names its delivery topic, so that a flapping
watch's repeats are grouped when they are delivered (`controller.events.grouping`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.events.channels import CHANNELS
from controller.events.fanout import fan_out
from controller.events.grouping import topic_of
from controller.store.models import NotificationDefaults, OutboxMessage, Watch
from controller.targets import destination_hint as destination_hint  # for its callers

EVENT_TYPES = (
    "drift.detected",
    "drift.cleared",
    "drift.check_failed",
    "incident.open",
    "incident.acknowledged",
    "incident.resolved",
    "agent.contract.blocked",
    "agent.unblocked",
    "ingress.quarantine",
    "destination.failing",
    "destination.recovered",
    "destination.test",
    "digest",
    "waiver.expiring",
    "waiver.expired",
)
DEFAULT_ALERT_SEVERITIES = ("breaking", "warning")
SEVERITY_RANK = {"breaking": 3, "warning": 2, "info": 1}


def channel_of(url: str) -> str:
    """The channel whose hosts claim `url` (`slack` for Slack's incoming webhooks), else
    `webhook`."""
    return CHANNELS.for_url(url).name


def emit(
    session: Session,
    box: SecretBox,
    *,
    org_id: str,
    event_type: str,
    data: dict[str, Any],
    now: datetime,
    watch: Watch | None = None,
    severity: str | None = None,
    extra_destinations: Iterable[str] = (),
    org_defaults: bool = True,
    except_destination: str | None = None,
    only_destination: str | None = None,
) -> list[OutboxMessage]:
    """Queue `event_type` for every destination whose policy wants it; return the messages.
    Without `org_defaults` only `extra_destinations` get it (an ingress quarantine event
    goes to the webhook its request named, nowhere else). Besides the watch's webhook and the
    org's default destination, every named destination of the org whose routing takes the
    event gets it (`controller.events.fanout`), but `except_destination`; with
    `only_destination`, that one destination alone gets it (a test)."""
    defaults = session.get(NotificationDefaults, org_id)
    policy = (
        tuple(defaults.alert_severities)
        if defaults and defaults.alert_severities
        else DEFAULT_ALERT_SEVERITIES
    )
    destinations: dict[str, str] = {}
    wanted = severity is None or severity in policy
    if wanted and only_destination is None:
        if watch is not None and watch.webhook_url:
            destinations[watch.webhook_url] = channel_of(watch.webhook_url)
        if org_defaults and defaults is not None and defaults.destination_ciphertext:
            url = str(box.decrypt_json(defaults.destination_ciphertext))
            destinations.setdefault(url, defaults.destination_kind or channel_of(url))
        for url in extra_destinations:
            destinations.setdefault(url, channel_of(url))
    message_id = f"msg_{uuid.uuid4().hex}"
    payload = {"type": event_type, "timestamp": now.isoformat(), "data": data}
    watch_id = watch.id if watch is not None else None
    incident_id = data.get("incidentId")
    messages = [
        queue(
            session,
            box,
            org_id=org_id,
            event_type=event_type,
            channel=channel,
            destination=url,
            hint=destination_hint(url),
            payload={**payload, "_messageId": f"{message_id}_{index}"},
            now=now,
            watch_id=watch_id,
            topic=topic_of(box, event_type, watch_id, incident_id, url),
        )
        for index, (url, channel) in enumerate(sorted(destinations.items()))
    ]
    if org_defaults or only_destination is not None:
        messages += fan_out(
            session,
            box,
            queue,
            org_id=org_id,
            event_type=event_type,
            payload={**payload, "_messageId": message_id},
            now=now,
            watch=watch,
            severity=severity,
            org_policy=policy,
            except_destination=except_destination,
            only_destination=only_destination,
        )
    return messages


def queue(
    session: Session,
    box: SecretBox,
    *,
    org_id: str,
    event_type: str,
    channel: str,
    destination: str,
    hint: str,
    payload: dict[str, Any],
    now: datetime,
    watch_id: str | None = None,
    topic: str | None = None,
    destination_id: str | None = None,
) -> OutboxMessage:
    """Store one message for one destination (encrypted; `hint` is what people see of it),
    due now. `emit` decides destinations by policy; a report with its own recipients (the
    weekly summary's e-mails) queues its messages here directly."""
    message = OutboxMessage(
        id=str(uuid.uuid4()),
        org_id=org_id,
        event_type=event_type,
        channel=channel,
        destination_ciphertext=box.encrypt_json(destination),
        destination_hint=hint,
        payload=payload,
        watch_id=watch_id,
        topic=topic,
        destination_id=destination_id,
        suppressed_count=0,
        status="pending",
        next_attempt_at=now,
        created_at=now,
    )
    session.add(message)
    return message
