"""The `discord` channel: a Discord webhook ("Execute Webhook"), with the event's subject as
`content` and its details in one embed. The webhook's URL is the secret. Mentions are switched
off (`allowed_mentions`), so a watch named `@everyone` pings nobody.
See https://discord.com/developers/docs/resources/webhook#execute-webhook and the embed limits
at https://discord.com/developers/docs/resources/message#embed-object-embed-limits.
"""

from __future__ import annotations

import json
from typing import Any

from controller.events.channels.base import Channel, DestinationKind, Event, Outgoing
from controller.events.channels.kinds import NoSettings, SecretUrl, secret_url
from controller.events.channels.words import lines_of, subject_of

COLOURS = {
    "incident.open": 0xD93F0B,
    "drift.detected": 0xFBCA04,
    "drift.check_failed": 0xB60205,
    "destination.failing": 0xB60205,
    "incident.resolved": 0x0E8A16,
    "drift.cleared": 0x0E8A16,
}


def render_discord(event: Event) -> Outgoing:
    """`content` and one embed within Discord's limits (title 256, description 4096, fields
    25 of 256/1024 characters)."""
    payload = event.payload
    data = payload.get("data") or {}
    kind = str(payload.get("type"))
    fields = [
        {"name": title, "value": str(data[key])[:1024], "inline": True}
        for key, title in (("watchName", "Watch"), ("incidentId", "Incident"), ("status", "Status"))
        if data.get(key)
    ]
    embed: dict[str, Any] = {
        "title": subject_of(payload)[:256],
        "description": "\n".join(lines_of(payload))[:4096] or kind,
        "color": COLOURS.get(kind, 0x5319E7),
        "timestamp": event.now.isoformat(),
        "fields": fields[:25],
    }
    body = {
        "content": subject_of(payload)[:2000],
        "username": "driftgate",
        "embeds": [embed],
        "allowed_mentions": {"parse": []},
    }
    return Outgoing(json.dumps(body).encode(), {"Content-Type": "application/json"})


DISCORD = Channel(
    "discord",
    render_discord,
    destination=DestinationKind(NoSettings, SecretUrl, address=secret_url),
)
