"""The `webhook` channel: the event as compact JSON, signed with Standard Webhooks headers."""

from __future__ import annotations

import json

from controller.events import signing
from controller.events.channels.base import Channel, DestinationKind, Event, Outgoing
from controller.events.channels.kinds import NoSettings, SecretUrl, secret_url


def render_webhook(event: Event) -> Outgoing:
    """The payload as compact JSON with `webhook-id`, `webhook-timestamp` and
    `webhook-signature` over exactly those bytes."""
    body = json.dumps(event.payload, separators=(",", ":"), default=str).encode()
    timestamp = int(event.now.timestamp())
    return Outgoing(body, signing.headers(event.secret, event.message_id, timestamp, body))


WEBHOOK = Channel(
    "webhook",
    render_webhook,
    is_destination_kind=True,
    destination=DestinationKind(NoSettings, SecretUrl, address=secret_url),
)
