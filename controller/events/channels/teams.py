"""The `teams` channel: a Microsoft Teams Workflows webhook ("Post to a channel when a webhook
request is received"), which takes a message whose attachment is an Adaptive Card.

The webhook's URL is the secret. The body is `{"type": "message", "attachments": [{"contentType":
"application/vnd.microsoft.card.adaptive", "content": <AdaptiveCard>}]}`.
See https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook
and https://adaptivecards.io/explorer/AdaptiveCard.html.
"""

from __future__ import annotations

import json
from typing import Any

from controller.events.channels.base import Channel, DestinationKind, Event, Outgoing
from controller.events.channels.kinds import NoSettings, SecretUrl, secret_url
from controller.events.channels.words import lines_of, subject_of

CARD_TYPE = "application/vnd.microsoft.card.adaptive"
CARD_SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"


def render_teams(event: Event) -> Outgoing:
    """The event as an Adaptive Card (version 1.4): a bold title, a line per detail, and the
    ids as facts."""
    payload = event.payload
    data = payload.get("data") or {}
    body: list[dict[str, Any]] = [
        {
            "type": "TextBlock",
            "text": subject_of(payload),
            "weight": "Bolder",
            "size": "Medium",
            "wrap": True,
        },
        *({"type": "TextBlock", "text": line, "wrap": True} for line in lines_of(payload)),
    ]
    facts = [
        {"title": title, "value": str(data[key])}
        for key, title in (("watchName", "Watch"), ("incidentId", "Incident"), ("status", "Status"))
        if data.get(key)
    ]
    if facts:
        body.append({"type": "FactSet", "facts": facts})
    card = {"$schema": CARD_SCHEMA, "type": "AdaptiveCard", "version": "1.4", "body": body}
    message = {
        "type": "message",
        "attachments": [{"contentType": CARD_TYPE, "contentUrl": None, "content": card}],
    }
    return Outgoing(json.dumps(message).encode(), {"Content-Type": "application/json"})


TEAMS = Channel(
    "teams",
    render_teams,
    destination=DestinationKind(NoSettings, SecretUrl, address=secret_url),
)
