"""The destination channels that need the store: a Slack bot that posts one message per
incident and updates it, and one e-mail per incident event through the org's SMTP relay.

`slack_bot`: `chat.postMessage` for the first event of an incident (its channel and `ts` are
kept in `destination_threads`), then `chat.update` of that same message when the incident is
acknowledged or resolved; an event about no incident is a message of its own. The bot token is
the secret (`Authorization: Bearer`), the channel a setting, and the API's base URL a setting
too (`https://slack.com/api`), so the tests' fake can stand in. Slack answers 200 with
`{"ok": false, "error": ...}` when it refuses: that is a failed attempt, like an HTTP error.
See https://api.slack.com/methods/chat.postMessage and https://api.slack.com/methods/chat.update.

`mail`: the event as a plain-text e-mail to the destination's address, through the org's relay
(or the server's), as the weekly summary goes (`controller.summary.service.send_by_relay`).
The e-mails of one incident name it in `References`, so mail readers thread them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from email.message import EmailMessage
from email.utils import format_datetime
from typing import Annotated, Any

from pydantic import Field, StringConstraints

from controller.crypto import SecretBox
from controller.destinations import store
from controller.events.channels.base import Channel, DestinationKind, Event, Outgoing
from controller.events.channels.kinds import NoSettings, Token
from controller.events.channels.slack import slack_text
from controller.events.channels.words import incident_of, subject_of, text_of
from controller.model.base import RequestModel
from controller.model.summary_schedule import EmailAddress
from controller.model.watch import HttpUrl
from controller.settings import Settings
from controller.sources.http import FetchError, call_json
from controller.store.db import Database
from controller.summary.service import address_hint, send_by_relay

SLACK_API = "https://slack.com/api"
UPDATED = ("incident.open", "incident.acknowledged", "incident.resolved")


class SlackBotSettings(RequestModel):
    channel: Annotated[
        str, StringConstraints(min_length=1, max_length=80, pattern=r"^[#@]?[A-Za-z0-9_.-]+$")
    ] = Field(description="the channel to post in: its id (C0123...) or #name")
    api_url: HttpUrl = Field(default=SLACK_API, description="Slack's Web API base URL")


class SlackBotSecrets(RequestModel):
    token: Token = Field(description="the bot token (xoxb-...) with the chat:write scope")


def render_slack_bot(event: Event) -> Outgoing:
    """The `chat.postMessage` arguments (`chat.update` adds the message's `ts`)."""
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
    """The `slack_bot` channel, remembering its messages in `database`."""

    def send(client: Any, api_url: str, outgoing: Outgoing, event: Event) -> int:
        body = json.loads(outgoing.body)
        incident = incident_of(event.payload) if event.payload.get("type") in UPDATED else None
        thread = None
        if incident is not None and event.destination_id is not None:
            with database.session() as session:
                thread = store.thread_of(session, event.destination_id, incident)
        base = api_url.rstrip("/")
        if thread is not None:
            method = "chat.update"
            body = {"channel": thread["channel"], "ts": thread["ts"], "text": body["text"]}
        else:
            method = "chat.postMessage"
        answer = call_json(
            client,
            "POST",
            f"{base}/{method}",
            headers=outgoing.headers,
            body=body,
            label=f"slack {method}",
            deadline=None,
        )
        answered = answer.body if isinstance(answer.body, dict) else {}
        if not 200 <= answer.status < 300:
            return answer.status
        if not answered.get("ok"):
            raise FetchError(
                f"slack {method} refused: {str(answered.get('error') or 'no answer')[:100]}",
                "http_status",
                status=answer.status,
            )
        if thread is None and incident is not None and event.destination_id is not None:
            reference = {"channel": str(answered.get("channel")), "ts": str(answered.get("ts"))}
            with database.transaction() as session:
                store.remember_thread(session, event.destination_id, incident, reference, event.now)
        return answer.status

    return Channel("slack_bot", render_slack_bot, send, destination=SLACK_BOT)


class MailSettings(RequestModel):
    to: EmailAddress = Field(description="the address every event goes to")


def render_mail(event: Event) -> Outgoing:
    """The e-mail's text; its headers are written when the relay (the sender) is known."""
    return Outgoing(text_of(event.payload).encode(), {"Subject": subject_of(event.payload)})


def mail_channel(settings: Settings, database: Database, box: SecretBox) -> Channel:
    """The `mail` channel: through the org's relay, else the server's."""

    def send(_client: Any, recipient: str, outgoing: Outgoing, event: Event) -> int:
        def write(relay: Any) -> bytes:
            mail = EmailMessage()
            mail["From"] = relay.sender
            mail["To"] = recipient
            mail["Subject"] = f"[driftgate] {outgoing.headers['Subject']}"[:250]
            mail["Date"] = format_datetime(event.now)
            mail["Message-ID"] = f"<{event.message_id}@driftgate>"
            incident = incident_of(event.payload)
            if incident is not None:
                mail["References"] = f"<incident-{incident}@driftgate>"
                mail["In-Reply-To"] = f"<incident-{incident}@driftgate>"
            mail.set_content(outgoing.body.decode())
            return mail.as_bytes()

        return send_by_relay(settings, database, box, event.org_id, recipient, write)

    return Channel("mail", render_mail, send, destination=MAIL)


def _api_url(config: Mapping[str, Any]) -> str:
    return str(config.get("api_url") or SLACK_API)


SLACK_BOT = DestinationKind(SlackBotSettings, SlackBotSecrets, address=_api_url)
MAIL = DestinationKind(
    MailSettings, NoSettings, address=lambda config: str(config["to"]), hint=address_hint
)


def channels(settings: Settings, database: Database, box: SecretBox) -> list[Channel]:
    """The delivery channels of this capability, for `controller.events.channels.delivering`."""
    return [slack_bot_channel(database), mail_channel(settings, database, box)]
