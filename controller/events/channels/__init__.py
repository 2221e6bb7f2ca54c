"""Delivery channels: the registry that says how each outbox message goes out.

An outbox message names its channel (`webhook` or `slack`, chosen by `outbox.channel_of` or
the org's destination kind); delivery looks the name up in `CHANNELS` and sends what that
channel renders. E-mail and GitHub plug in as one more module here and one more entry below.
"""

from __future__ import annotations

from controller.events.channels.base import Channel, Channels, Event, Outgoing, Transport
from controller.events.channels.slack import SLACK
from controller.events.channels.webhook import WEBHOOK

CHANNELS = Channels([WEBHOOK, SLACK], fallback=WEBHOOK.name)

__all__ = ["CHANNELS", "Channel", "Channels", "Event", "Outgoing", "Transport"]
