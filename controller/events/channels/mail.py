"""The `mail` channel: each event as a plain-text e-mail to the destination's address,
through the org's SMTP relay (or the server's), the way the weekly summary goes. The e-mails of
one incident name it in `References` and `In-Reply-To`, so mail readers thread them.

Sending needs the relay, which the weekly summary's capability owns: the process that
delivers builds this channel with that capability's `send_by_relay`
(`controller.destinations.service.channels`).
"""

from __future__ import annotations

from collections.abc import Callable
from email.message import EmailMessage
from email.utils import format_datetime
from typing import Any

from pydantic import Field

from controller.events.channels.base import Channel, DestinationKind, Event, Outgoing
from controller.events.channels.kinds import NoSettings
from controller.events.channels.words import incident_of, subject_of, text_of
from controller.model.base import RequestModel
from controller.model.summary_schedule import EmailAddress
from controller.targets import address_hint

# (org id, recipient, the e-mail written for the relay it goes through) -> the relay's status.
SendByRelay = Callable[[str, str, Callable[[Any], bytes]], int]


class MailSettings(RequestModel):
    to: EmailAddress = Field(description="the address every event goes to")


def render_mail(event: Event) -> Outgoing:
    """The e-mail's text; its headers are written once the relay (the sender) is known."""
    return Outgoing(text_of(event.payload).encode(), {"Subject": subject_of(event.payload)})


def mail_channel(send_by_relay: SendByRelay) -> Channel:
    """The `mail` channel, sending through `send_by_relay`."""

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

        return send_by_relay(event.org_id, recipient, write)

    return Channel("mail", render_mail, send, destination=MAIL)


MAIL = DestinationKind(
    MailSettings, NoSettings, address=lambda config: str(config["to"]), hint=address_hint
)
