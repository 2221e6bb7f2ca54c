"""Delivery channels: the registry that says how each outbox message goes out.

An outbox message names its channel (`webhook` or `slack`: the org's destination kind, or the
channel whose hosts claim the URL, `outbox.channel_of`); delivery looks the name up in
`CHANNELS` and sends what that channel renders. Every list of channels derives from `CHANNELS`:
the kinds the API's notification defaults accept and the console's select offers
(`Channels.destination_kinds`), the kinds of an org's named destinations and their settings
and secrets (`Channel.destination`, `ORG_DESTINATION_KINDS`), and the channel a URL
goes out by (`Channels.for_url`).

A shared channel is its module here, its entry below and its test, nothing else. A channel that
needs a capability's store or settings (the weekly summary's `email`) is built by that
capability (`controller.summary.service.channels`, the Slack bot and e-mail per incident of
`controller.destinations.service.channels`), and the process that delivers (the
controller, `driftgate summary send`) adds it with `delivering`, as it adds job kinds.
"""

from __future__ import annotations

from collections.abc import Iterable

from controller.events.channels.base import (
    Channel,
    Channels,
    DestinationKind,
    Event,
    Outgoing,
    Transport,
)
from controller.events.channels.discord import DISCORD
from controller.events.channels.mail import MAIL
from controller.events.channels.opsgenie import OPSGENIE
from controller.events.channels.pagerduty import PAGERDUTY
from controller.events.channels.slack import SLACK
from controller.events.channels.slack_bot import SLACK_BOT
from controller.events.channels.teams import TEAMS
from controller.events.channels.webhook import WEBHOOK
from controller.targets import destination_hint

CHANNELS = Channels([WEBHOOK, SLACK, PAGERDUTY, OPSGENIE, TEAMS, DISCORD], fallback=WEBHOOK.name)

ORG_DESTINATION_KINDS: dict[str, DestinationKind] = {
    **{c.name: c.destination for c in CHANNELS if c.destination is not None},
    # Built with the store or a capability's relay by the delivering process (`delivering`).
    "slack_bot": SLACK_BOT,
    "mail": MAIL,
}
"""Every kind an org's named destination may have (`controller.destinations`), with its
settings, secrets and address."""


def delivering(extra: Iterable[Channel], deadline_seconds: float) -> Channels:
    """The channels a process delivers the outbox with: the shared ones and the capabilities'
    `extra`, every attempt bounded by `deadline_seconds` (`delivery_deadline_seconds`)."""
    return Channels([*CHANNELS, *extra], fallback=WEBHOOK.name).within(deadline_seconds)


def destination_hint_of(kind: str, address: str) -> str:
    """What people see of a destination's address: the kind's own hint (an e-mail address's
    first letter and domain), else a URL's scheme and host."""
    spec = ORG_DESTINATION_KINDS.get(kind)
    return spec.hint(address) if spec is not None and spec.hint else destination_hint(address)


__all__ = [
    "CHANNELS",
    "ORG_DESTINATION_KINDS",
    "Channel",
    "Channels",
    "DestinationKind",
    "Event",
    "Outgoing",
    "Transport",
    "delivering",
    "destination_hint_of",
]
