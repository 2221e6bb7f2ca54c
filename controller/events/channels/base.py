"""What a delivery channel is: the request one outbox message becomes, and how it is sent.

A channel turns an event (its payload without the private `_` keys, its message id, the
org's signing secret, the time of the attempt) into one `Outgoing` request, and sends that
request to the destination with its `transport`. The webhook and Slack channels POST JSON
over the shared outbound client (`controller.sources.http.post_json`); a channel that does
not (`email`, through the org's SMTP relay) brings its own way of sending (`send`), which
answers a status code or raises `FetchError` like `post_json` does, so delivery records and
retries it like the others.

Every attempt has an overall deadline (`deadline_seconds`, the `delivery_deadline_seconds`
setting through `Channels.within`): connect, the answer's first byte and its whole body, or
the relay's whole conversation. A destination that answers slowly, trickles its answer or
never answers ends as a failed attempt (`timeout`) by then, retried with backoff.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

from controller.registry import Registry
from controller.sources import deadlines
from controller.sources.http import DEFAULT_CALL_DEADLINE, post_json


@dataclass(frozen=True)
class Event:
    """One attempt to deliver an outbox message, as a channel sees it."""

    payload: dict[str, Any]
    message_id: str
    secret: str
    now: datetime
    org_id: str = ""
    # An org destination's settings and decrypted secrets (`controller.destinations`), and
    # its id; empty for a watch's webhook or the org's default destination.
    config: Mapping[str, Any] = field(default_factory=dict)
    destination_id: str | None = None


@dataclass(frozen=True)
class Outgoing:
    """The exact bytes and headers one attempt sends."""

    body: bytes
    headers: Mapping[str, str]
    # Where this request goes when not the message's destination itself (Opsgenie's
    # acknowledge and close go to the alert's own path).
    url: str | None = None


Transport = Callable[[Any, str, Outgoing, Event], int]
"""`(client, destination, outgoing, event)` -> the status the destination answered."""


def post(client: Any, url: str, outgoing: Outgoing, _event: Event) -> int:
    """The default way to send: POST the rendered body and headers to the URL."""
    # The channel's deadline bounds the call (`Channel.transport`).
    return post_json(client, outgoing.url or url, outgoing.body, outgoing.headers, deadline=None)


@dataclass(frozen=True)
class DestinationKind:
    """What an org destination of a channel is made of (`controller.destinations`): the
    non-secret `settings` and the `secrets` (pydantic models, validated when a destination is
    saved), the address its messages go to (`address`, from settings and secrets: a URL, an
    e-mail address), and whether a digest of several events can be one message of it
    (`digests`: not for on-call tools, whose alerts are opened and closed one by one)."""

    settings: type[BaseModel]
    secrets: type[BaseModel]
    address: Callable[[Mapping[str, Any]], str]
    digests: bool = True
    # The event types it takes (None: every one): an on-call tool takes incidents, not drift.
    events: tuple[str, ...] | None = None
    # What people see of the address (None: a URL's scheme and host).
    hint: Callable[[str], str] | None = None


@dataclass(frozen=True)
class Channel:
    """A named way to deliver events: `render` builds the request, `send` sends it, and
    `transport` sends it within the channel's deadline.

    What the lists of channels show is said here too: `is_destination_kind` offers the channel
    as the kind of an org's default destination (the API's `destination.kind`, the console's
    select), and `hosts` claims the URLs it delivers to (`hooks.slack.com`, or `*.slack.com`
    for every host under it), so that a webhook URL there goes out by this channel.
    """

    name: str
    render: Callable[[Event], Outgoing]
    send: Transport = post
    deadline_seconds: float = DEFAULT_CALL_DEADLINE
    is_destination_kind: bool = False
    hosts: tuple[str, ...] = ()
    destination: DestinationKind | None = None

    def claims(self, host: str) -> bool:
        """Whether a URL on `host` (lower case) is this channel's."""
        return any(
            host.endswith(pattern[1:]) if pattern.startswith("*.") else host == pattern
            for pattern in self.hosts
        )

    def transport(self, client: Any, destination: str, outgoing: Outgoing, event: Event) -> int:
        """Send one attempt; `FetchError` (`timeout`) when it is not over within
        `deadline_seconds`, whatever the destination does."""
        with deadlines.within(self.deadline_seconds):
            return self.send(client, destination, outgoing, event)

    def within(self, seconds: float) -> Channel:
        """This channel with attempts bounded by `seconds`."""
        return replace(self, deadline_seconds=seconds)


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

    def for_url(self, url: str) -> Channel:
        """The channel a destination URL is delivered by: the first whose `hosts` claim its
        host, else the fallback (a signed webhook)."""
        host = (urlsplit(url).hostname or "").lower()
        return next((channel for channel in self if channel.claims(host)), self._fallback)

    def destination_kinds(self) -> tuple[str, ...]:
        """The names an org may choose as its default destination's kind, in registration
        order."""
        return tuple(channel.name for channel in self if channel.is_destination_kind)

    def within(self, seconds: float) -> Channels:
        """These channels with every attempt bounded by `seconds` (the operator's
        `delivery_deadline_seconds`)."""
        return Channels([channel.within(seconds) for channel in self], fallback=self._fallback.name)
