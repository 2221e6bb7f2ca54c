"""What a delivery channel is: the request one outbox message becomes, and how it is sent.

A channel turns an event (its payload without the private `_` keys, its message id, the
org's signing secret, the time of the attempt) into one `Outgoing` request, and sends that
request to the destination with its `transport`. The webhook and Slack channels POST JSON
over the shared outbound client (`controller.sources.http.post_json`); a channel that does
not (`email`, through the org's SMTP relay) brings its own transport, which answers a status
code or raises `FetchError` like `post_json` does, so delivery records and retries it like
the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from controller.registry import Registry
from controller.sources.http import post_json


@dataclass(frozen=True)
class Event:
    """One attempt to deliver an outbox message, as a channel sees it."""

    payload: dict[str, Any]
    message_id: str
    secret: str
    now: datetime
    org_id: str = ""


@dataclass(frozen=True)
class Outgoing:
    """The exact bytes and headers one attempt sends."""

    body: bytes
    headers: Mapping[str, str]


Transport = Callable[[Any, str, Outgoing, Event], int]
"""`(client, destination, outgoing, event)` -> the status the destination answered."""


def post(client: Any, url: str, outgoing: Outgoing, _event: Event) -> int:
    """The default transport: POST the rendered body and headers to the URL."""
    return post_json(client, url, outgoing.body, outgoing.headers)


@dataclass(frozen=True)
class Channel:
    """A named way to deliver events: `render` builds the request, `transport` sends it."""

    name: str
    render: Callable[[Event], Outgoing]
    transport: Transport = post


class Channels(Registry[Channel]):
    """The registry of channels, looked up by an outbox message's `channel` column.

    A name nobody registered is delivered by the `fallback` channel (a signed webhook), as
    every channel but Slack was before there was a registry.
    """

    what = "delivery channel"

    def __init__(self, channels: Sequence[Channel], *, fallback: str) -> None:
        super().__init__(channels)
        fallback_channel = self.get(fallback)
        assert fallback_channel is not None, fallback
        self._fallback = fallback_channel

    def for_message(self, name: str) -> Channel:
        """The channel that delivers a message of channel `name`."""
        return self.get(name) or self._fallback
