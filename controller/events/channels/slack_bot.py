"""The `slack_bot` channel: one Slack message per incident, updated as the incident moves.

The first event of an incident is `chat.postMessage`; its channel and `ts` are kept in
`destination_threads` (per destination and incident), and the incident's later events
(acknowledged, resolved) are `chat.update` of that same message instead of new ones. An event
about no incident is a message of its own. The bot token is the secret
(`Authorization: Bearer`), the channel a setting, and the Web API's base URL a setting too
(`https://slack.com/api`), so the tests' fake can stand in. Slack answers 200 with
`{"ok": false, "error": ...}` when it refuses: that is a failed attempt, like an HTTP error.
See https://api.slack.com/methods/chat.postMessage and https://api.slack.com/methods/chat.update.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field, StringConstraints

from controller.events.channels.base import Channel, DestinationKind, Event, Outgoing
from controller.events.channels.kinds import Token
from controller.events.channels.slack import slack_text
from controller.events.channels.words import INCIDENT_EVENTS, incident_of
from controller.model.base import RequestModel
from controller.model.watch import HttpUrl
from controller.sources.http import FetchError, call_json
from controller.store.db import Database
from controller.store.models import DestinationThread

SLACK_API = "https://slack.com/api"


class SlackBotSettings(RequestModel):
    channel: Annotated[
        str, StringConstraints(min_length=1, max_length=80, pattern=r"^[#@]?[A-Za-z0-9_.-]+$")
    ] = Field(description="the channel to post in: its id (C0123...) or #name")
    api_url: HttpUrl = Field(default=SLACK_API, description="Slack's Web API base URL")


class SlackBotSecrets(RequestModel):
    token: Token = Field(description="the bot token (xoxb-...) with the chat:write scope")


def render_slack_bot(event: Event) -> Outgoing:
    """The `chat.postMessage` arguments (`chat.update` takes the message's channel and `ts`)."""
    body = {
        "channel": str(event.config.get("channel", "")),
        "text": slack_text(event.payload),
        "unfurl_links": False,
    }
    headers = {
        "Content-Type": "application/json; charset=utf-8",
        "Authorization": f"Bearer {event.config.get('token', '')}",
    }
    return Outgoing(json.dumps(body).encode(), headers)


def slack_bot_channel(database: Database) -> Channel:
    """The `slack_bot` channel, keeping its messages' references in `database`."""

    def send(client: Any, api_url: str, outgoing: Outgoing, event: Event) -> int:
        body = json.loads(outgoing.body)
        is_incident = event.payload.get("type") in INCIDENT_EVENTS
        incident = incident_of(event.payload) if is_incident else None
        thread = None
        if incident is not None and event.destination_id is not None:
            thread = _thread_of(database, event.destination_id, incident)
        method = "chat.postMessage"
        if thread is not None:
            method = "chat.update"
            body = {"channel": thread["channel"], "ts": thread["ts"], "text": body["text"]}
        answer = call_json(
            client,
            "POST",
            f"{api_url.rstrip('/')}/{method}",
            headers=outgoing.headers,
            body=body,
            label=f"slack {method}",
            deadline=None,
        )
        if not 200 <= answer.status < 300:
            return answer.status
        answered = answer.body if isinstance(answer.body, dict) else {}
        if not answered.get("ok"):
            error = str(answered.get("error") or "no answer")[:100]
            raise FetchError(f"slack {method} refused: {error}", "http_status", status=400)
        if thread is None and incident is not None and event.destination_id is not None:
            reference = {"channel": str(answered.get("channel")), "ts": str(answered.get("ts"))}
            _remember(database, event.destination_id, incident, reference, event.now)
        return answer.status

    return Channel("slack_bot", render_slack_bot, send, destination=SLACK_BOT)


def _api_url(config: Mapping[str, Any]) -> str:
    return str(config.get("api_url") or SLACK_API)


def _thread_of(database: Database, destination_id: str, incident_id: str) -> dict[str, Any] | None:
    with database.session() as session:
        row = session.get(DestinationThread, (destination_id, incident_id))
        return dict(row.reference) if row is not None else None


def _remember(
    database: Database,
    destination_id: str,
    incident_id: str,
    reference: dict[str, Any],
    now: datetime,
) -> None:
    with database.transaction() as session:
        row = session.get(DestinationThread, (destination_id, incident_id))
        if row is None:
            session.add(
                DestinationThread(
                    destination_id=destination_id,
                    incident_id=incident_id,
                    reference=reference,
                    created_at=now,
                )
            )
        else:
            row.reference = reference


SLACK_BOT = DestinationKind(SlackBotSettings, SlackBotSecrets, address=_api_url)
