"""Every list of channels derives from the registry: each registered destination kind is
accepted by the API's notification defaults, published in its description and offered by the
console's select, and each channel's hosts route their URLs to it. A channel added to
`CHANNELS` is checked here without a line of this file changing."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient
from sqlalchemy import String

from controller.events.channels import CHANNELS, Channel
from controller.events.outbox import channel_of
from controller.notifications.service import DESTINATION_KINDS
from controller.store.db import Database
from controller.store.models import NotificationDefaults, OutboxMessage
from tests.conftest import OrgKey
from tests.factories import csrf_of, make_user, sign_in
from tests.gen_openapi_doc import document

DESTINATIONS = [channel for channel in CHANNELS if channel.is_destination_kind]
CLAIMING = [channel for channel in CHANNELS if channel.hosts]
UNCLAIMED_URL = "https://hooks.example.com/driftgate"


def claimed_urls(channel: Channel) -> list[str]:
    """A URL on each of the channel's hosts (a name under each `*.` pattern)."""
    return [
        f"https://{'hooks-1.' + host[2:] if host.startswith('*.') else host}/services/T0/B0/t0k3n"
        for host in channel.hosts
    ]


def url_for(channel: Channel) -> str:
    """A destination URL the channel delivers to."""
    return (claimed_urls(channel) or [UNCLAIMED_URL])[0]


def test_the_destination_kinds_are_the_registrys() -> None:
    assert DESTINATIONS, "no channel is offered as a destination kind"
    assert DESTINATION_KINDS == tuple(channel.name for channel in DESTINATIONS)
    # The shared channels as they were hand-listed, first among them.
    assert DESTINATION_KINDS[:2] == ("webhook", "slack")


def test_every_channels_name_fits_the_stores_columns() -> None:
    # SQLite keeps a longer name whole; Postgres refuses it when the first message is queued.
    for column in (
        OutboxMessage.__table__.c.channel,
        NotificationDefaults.__table__.c.destination_kind,
    ):
        assert isinstance(column.type, String) and column.type.length is not None, column
        assert all(len(channel.name) <= column.type.length for channel in CHANNELS), column


def test_the_published_description_lists_every_destination_kind() -> None:
    kind = document()["components"]["schemas"]["DestinationIn"]["properties"]["kind"]
    assert kind == {"enum": list(DESTINATION_KINDS), "title": "Kind", "type": "string"}


@pytest.mark.parametrize("channel", DESTINATIONS, ids=lambda channel: channel.name)
def test_the_api_accepts_every_destination_kind(
    client: FlaskClient, acme: OrgKey, channel: Channel
) -> None:
    answer = client.put(
        "/api/org/notification-defaults",
        headers=acme.headers,
        json={"destination": {"kind": channel.name, "url": url_for(channel)}},
    )
    assert answer.status_code == 200, answer.get_json()
    assert answer.get_json()["destination"]["kind"] == channel.name


def test_the_api_refuses_a_kind_nobody_registered(client: FlaskClient, acme: OrgKey) -> None:
    assert "pager" not in CHANNELS
    answer = client.put(
        "/api/org/notification-defaults",
        headers=acme.headers,
        json={"destination": {"kind": "pager", "url": UNCLAIMED_URL}},
    )
    assert answer.status_code == 400
    assert "/destination/kind" in answer.get_data(as_text=True)


@pytest.mark.parametrize("channel", DESTINATIONS, ids=lambda channel: channel.name)
def test_the_console_offers_and_saves_every_destination_kind(
    client: FlaskClient, acme: OrgKey, database: Database, channel: Channel
) -> None:
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(client, "admin@example.com")
    page = admin.get("/console/settings").get_data(as_text=True)
    select = page.split('<select id="destinationKind"', 1)[1].split("</select>", 1)[0]
    offered = [f'<option value="{kind}">{kind}</option>' for kind in DESTINATION_KINDS]
    assert select.endswith("".join(offered))
    saved = admin.post(
        "/console/settings/notifications",
        data={
            "csrf_token": csrf_of(page),
            "severity": "breaking",
            "destinationKind": channel.name,
            "destinationUrl": url_for(channel),
        },
    )
    assert saved.status_code == 302, saved.get_data(as_text=True)
    defaults = admin.get("/api/org/notification-defaults").get_json()
    assert defaults["destination"]["kind"] == channel.name


@pytest.mark.parametrize("channel", CLAIMING, ids=lambda channel: channel.name)
def test_a_channels_hosts_route_their_urls_to_it(channel: Channel) -> None:
    for url in claimed_urls(channel):
        assert channel_of(url) == channel.name, url
        assert channel_of(url.upper().replace("HTTPS", "https")) == channel.name, url
        assert CHANNELS.for_message(channel_of(url)) is channel


def test_a_url_no_channel_claims_goes_out_by_the_fallback() -> None:
    assert channel_of(UNCLAIMED_URL) == "webhook"
    # A host that only ends like a claimed one is not claimed (`notslack.com`).
    assert channel_of("https://notslack.com/services/x") == "webhook"
    assert channel_of("https://hooks.slack.com.example.com/x") == "webhook"
