"""The `webhook` channel: the event as compact JSON, signed with Standard Webhooks headers."""

from __future__ import annotations

import json

from controller.events import signing
from controller.events.channels.base import Channel, Event, Outgoing


def render_webhook(event: Event) -> Outgoing:
    """The payload as compact JSON with `webhook-id`, `webhook-timestamp` and
    `webhook-signature` over exactly those bytes."""
    body = json.dumps(event.payload, separators=(",", ":"), default=str).encode()
    timestamp = int(event.now.timestamp())
    return Outgoing(body, signing.headers(event.secret, event.message_id, timestamp, body))


WEBHOOK = Channel("webhook", render_webhook, is_destination_kind=True)
