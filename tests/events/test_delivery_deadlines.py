"""Deliveries to a receiver or relay that stalls end as a failed attempt at the delivery
deadline, and are retried with backoff as any failed attempt is.

Real loopback peers that accept and never answer, or answer a byte at a time for ever;
`delivery_deadline_seconds` at 1.5 s while the client's per-read timeout stays at its 30 s
default, so only the deadline can end an attempt. Elapsed time is not asserted: the
attempt's error names the deadline that ended it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from controller.crypto import SecretBox, load_secret_box
from controller.destinations.service import channels as destination_channels
from controller.events.channels import Channels, Event, Outgoing, delivering
from controller.events.delivery import deliver_due
from controller.events.outbox import emit
from controller.settings import Settings
from controller.sources import deadlines
from controller.sources.http import FetchError, configured_client
from controller.store.db import Database
from controller.store.models import DeliveryAttempt, OutboxMessage
from controller.summary import service as summary
from controller.summary import smtp
from tests.conftest import OrgKey, make_settings
from tests.servers import TRICKLED_HEADERS, stalling

DEADLINE = 1.5
WITHIN = f"no complete answer within {DEADLINE:g} s"
NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


@pytest.fixture
def live_settings(tmp_path: Path, database: Database) -> Settings:
    return make_settings(
        tmp_path,
        database_url=database.url,
        allow_private_targets=True,
        delivery_deadline_seconds=DEADLINE,
    )


@pytest.fixture
def api(live_app: Flask) -> FlaskClient:
    return live_app.test_client()


def test_every_channel_keeps_the_configured_deadline(
    live_settings: Settings, database: Database
) -> None:
    channels = delivery_channels(live_settings, database, load_secret_box(live_settings))
    names = ("webhook", "slack", "pagerduty", "opsgenie", "teams", "discord", "email")
    assert {c.name: c.deadline_seconds for c in channels} == {
        **dict.fromkeys(names, DEADLINE),
        "slack_bot": DEADLINE,
        "mail": DEADLINE,
    }
    assert channels.for_message("anything else").deadline_seconds == DEADLINE


@pytest.mark.parametrize(
    ("kind", "peer"),
    [
        ("webhook", {}),
        ("webhook", {"preamble": TRICKLED_HEADERS, "trickle": 0.3}),
        ("slack", {"preamble": b"HTTP/1.1 200 OK", "trickle": 0.3, "byte": b"x"}),
    ],
    ids=["webhook-silent", "webhook-trickling-body", "slack-trickling-status-line"],
)
def test_a_stalling_receiver_is_a_failed_attempt_retried_with_backoff(
    live_settings: Settings,
    database: Database,
    acme: OrgKey,
    api: FlaskClient,
    kind: str,
    peer: dict[str, Any],
) -> None:
    box = load_secret_box(live_settings)
    channels = delivery_channels(live_settings, database, box)
    with stalling(**peer) as receiver, configured_client(live_settings) as client:
        answer = api.put(
            "/api/org/notification-defaults",
            headers=acme.headers,
            json={"destination": {"kind": kind, "url": receiver.url("/hook")}},
        )
        assert answer.status_code == 200, answer.get_json()
        with database.transaction() as session:
            data = {"watchId": "w1", "watchName": "payments"}
            emit(session, box, org_id=acme.org_id, event_type="incident.open", data=data, now=NOW)

        assert deliver_due(database, box, client, NOW, channels=channels) == 1
        message = outbox(database)
        assert (message.status, message.attempts) == ("retrying", 1)
        assert message.last_error is not None and message.last_error.startswith("timeout: ")
        assert WITHIN in message.last_error and message.lease_expires_at is None
        assert message.next_attempt_at == NOW + timedelta(seconds=30)  # the first backoff

        assert deliver_due(database, box, client, NOW, channels=channels) == 0  # backing off
        later = NOW + timedelta(seconds=31)
        assert deliver_due(database, box, client, later, channels=channels) == 1
        message = outbox(database)
        assert (message.status, message.attempts) == ("retrying", 2)
        assert message.next_attempt_at == later + timedelta(seconds=60)
        assert receiver.accepted == 2
    with database.session() as session:
        attempts = list(session.scalars(select(DeliveryAttempt)))
    assert [a.success for a in attempts] == [False, False]
    assert all(a.error and WITHIN in a.error for a in attempts)
    stats = api.get("/api/alerts/stats", headers=acme.headers).get_json()
    assert stats["totals"]["retrying"] == 1


def outbox(database: Database) -> OutboxMessage:
    with database.session() as session:
        (message,) = session.scalars(select(OutboxMessage))
        return message


RELAYS: dict[str, tuple[smtp.Security, dict[str, Any]]] = {
    "never-greets": ("none", {}),
    "greets-a-byte-at-a-time": ("none", {"preamble": b"220", "trickle": 0.3, "byte": b"-"}),
    "tls-never-handshakes": ("tls", {}),
}


@pytest.mark.parametrize("name", sorted(RELAYS))
def test_a_stalling_smtp_relay_ends_at_the_deadline(live_settings: Settings, name: str) -> None:
    security, peer = RELAYS[name]
    with stalling(**peer) as relay:
        where = smtp.Relay("127.0.0.1", relay.port, security, "driftgate@example.com")
        with pytest.raises(FetchError) as caught:
            smtp.send(
                where,
                "ops@example.com",
                b"Subject: hi\r\n\r\nhi\r\n",
                live_settings,
                deadline=DEADLINE,
            )
    assert caught.value.failure_class == "timeout" and WITHIN in caught.value.message
    assert relay.accepted == 1


def test_the_email_channel_gives_up_on_the_org_relay_at_the_deadline(
    live_settings: Settings, database: Database, acme: OrgKey, api: FlaskClient
) -> None:
    box = load_secret_box(live_settings)
    email = delivery_channels(live_settings, database, box).for_message("email")
    with stalling(preamble=b"220", trickle=0.3, byte=b"-") as relay:
        body = {"host": "127.0.0.1", "port": relay.port, "security": "none"}
        body["fromAddress"] = "driftgate@example.com"
        answer = api.put("/api/org/smtp", json=body, headers=acme.headers)
        assert answer.status_code == 200, answer.get_json()
        event = Event({}, "msg_1", "", NOW, org_id=acme.org_id)
        with pytest.raises(FetchError) as caught:
            email.transport(None, "ops@example.com", Outgoing(b"Subject: hi\r\n\r\n", {}), event)
    assert caught.value.failure_class == "timeout" and WITHIN in caught.value.message
    assert deadlines.current() is None  # the attempt's deadline ended with it


def delivery_channels(settings: Settings, database: Database, box: SecretBox) -> Channels:
    """The channels the controller delivers with (controller/scheduler.py)."""
    return delivering(
        [
            *summary.channels(settings, database, box),
            *destination_channels(settings, database, box),
        ],
        settings.delivery_deadline_seconds,
    )
