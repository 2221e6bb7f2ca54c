"""Every kind an org destination may have, and its settings and secrets: the shared channels
that describe one (`Channel.destination`) and this capability's own (`channels`)."""

from __future__ import annotations

from controller.destinations.channels import MAIL, SLACK_BOT
from controller.events.channels import CHANNELS
from controller.events.channels.base import DestinationKind
from controller.events.outbox import destination_hint

KINDS: dict[str, DestinationKind] = {
    **{c.name: c.destination for c in CHANNELS if c.destination is not None},
    "slack_bot": SLACK_BOT,
    "mail": MAIL,
}


def hint_of(kind: str, address: str) -> str:
    """What people see of a destination's address: a URL's scheme and host, an e-mail
    address's first letter and domain."""
    spec = KINDS.get(kind)
    return spec.hint(address) if spec is not None and spec.hint else destination_hint(address)
