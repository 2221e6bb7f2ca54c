"""Each destination channel delivers one incident's three steps (opened, acknowledged,
resolved) to a loopback fake of its service, which checks every payload against the
service's published description (tests/destinations/schemas)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.destinations import fakes
from tests.destinations.conftest import NOW, World
from tests.smtp_server import SmtpServer, smtp_server

INCIDENT = "5b0e8f3e-8d1c-4f7e-9a51-0c2b3f9d7e11"
ROUTING_KEY = "R0UT1NGKEY0123456789ABCDEFGHIJKL"  # 32 characters, like an integration key
GENIE_KEY = "eb243592-faa2-4ba2-a551q-1afdf565c889"
BOT_TOKEN = "xoxb-1234-5678-abcdefghijklmnop"
STEPS = ("open", "acknowledged", "resolved")


def run_incident(world: World) -> None:
    """The incident's three steps, each delivered before the next happens."""
    for minutes, step in enumerate(STEPS):
        at = NOW + timedelta(minutes=minutes)
        world.incident(step, INCIDENT, at=at)
        world.deliver(at=at)


@pytest.fixture
def fake_stop() -> Iterator[list[fakes.ServiceFake]]:
    started: list[fakes.ServiceFake] = []
    yield started
    for fake in started:
        fake.stop()


def test_pagerduty_triggers_acknowledges_and_resolves_one_alert_by_the_incident(
    world: World, fake_stop: list[fakes.ServiceFake]
) -> None:
    fake, alerts = fakes.pagerduty(ROUTING_KEY)
    fake_stop.append(fake)
    world.add(
        {
            "name": "on-call",
            "kind": "pagerduty",
            "settings": {"url": fake.url("/v2/enqueue"), "severity": "critical"},
            "secrets": {"routingKey": ROUTING_KEY},
        }
    )
    run_incident(world)
    assert fake.invalid == []
    bodies = [r.body for r in fake.received]
    assert [b["event_action"] for b in bodies] == ["trigger", "acknowledge", "resolve"]
    assert {b["dedup_key"] for b in bodies} == {INCIDENT}
    assert bodies[0]["payload"]["severity"] == "critical"
    assert bodies[0]["payload"]["summary"] == "Incident opened for payments"
    assert alerts == {INCIDENT: "resolved"}


def test_opsgenie_creates_acknowledges_and_closes_by_alias(
    world: World, fake_stop: list[fakes.ServiceFake]
) -> None:
    fake, alerts = fakes.opsgenie(GENIE_KEY)
    fake_stop.append(fake)
    world.add(
        {
            "name": "ops",
            "kind": "opsgenie",
            "settings": {"apiUrl": fake.url(""), "priority": "P2"},
            "secrets": {"apiKey": GENIE_KEY},
        }
    )
    run_incident(world)
    assert fake.invalid == []
    assert [r.path for r in fake.received] == [
        "/v2/alerts",
        f"/v2/alerts/{INCIDENT}/acknowledge",
        f"/v2/alerts/{INCIDENT}/close",
    ]
    created = fake.received[0].body
    assert created["alias"] == INCIDENT and created["priority"] == "P2"
    assert alerts == {INCIDENT: "closed"}


def test_teams_gets_an_adaptive_card_per_step(
    world: World, fake_stop: list[fakes.ServiceFake]
) -> None:
    fake = fakes.teams()
    fake_stop.append(fake)
    world.add({"name": "teams", "kind": "teams", "secrets": {"url": fake.url(fakes.TEAMS_PATH)}})
    run_incident(world)
    assert fake.invalid == []
    titles = [r.body["attachments"][0]["content"]["body"][0]["text"] for r in fake.received]
    assert titles == [
        "Incident opened for payments",
        "Incident acknowledged for payments",
        "Incident resolved for payments",
    ]


def test_discord_gets_content_and_an_embed_per_step(
    world: World, fake_stop: list[fakes.ServiceFake]
) -> None:
    fake = fakes.discord()
    fake_stop.append(fake)
    world.add(
        {"name": "discord", "kind": "discord", "secrets": {"url": fake.url(fakes.DISCORD_PATH)}}
    )
    run_incident(world)
    assert fake.invalid == []
    assert [r.body["embeds"][0]["title"] for r in fake.received] == [
        f"Incident {word} for payments" for word in ("opened", "acknowledged", "resolved")
    ]
    assert all(r.body["allowed_mentions"] == {"parse": []} for r in fake.received)


def test_the_slack_bot_posts_once_and_updates_that_message(
    world: World, fake_stop: list[fakes.ServiceFake]
) -> None:
    fake, messages = fakes.slack(BOT_TOKEN)
    fake_stop.append(fake)
    world.add(
        {
            "name": "slack-bot",
            "kind": "slack_bot",
            "settings": {"channel": "#payments-alerts", "apiUrl": fake.url("/api")},
            "secrets": {"token": BOT_TOKEN},
        }
    )
    run_incident(world)
    assert fake.invalid == []
    assert [r.path for r in fake.received] == [
        "/api/chat.postMessage",
        "/api/chat.update",
        "/api/chat.update",
    ]
    assert (messages.posted, messages.updated) == (1, 2)
    (text,) = messages.texts.values()
    assert "Incident resolved for *payments*" in text
    # A second incident is a message of its own.
    world.incident("open", "another-incident", at=NOW + timedelta(minutes=5))
    world.deliver(at=NOW + timedelta(minutes=5))
    assert (messages.posted, messages.updated, fake.invalid) == (2, 2, [])


def test_a_slack_refusal_is_a_failed_attempt(
    world: World, fake_stop: list[fakes.ServiceFake]
) -> None:
    fake, _ = fakes.slack("xoxb-the-right-token-0000")
    fake_stop.append(fake)
    destination = world.add(
        {
            "name": "slack-bot",
            "kind": "slack_bot",
            "settings": {"channel": "C0DRIFT01", "apiUrl": fake.url("/api")},
            "secrets": {"token": BOT_TOKEN},
        }
    )
    world.incident("open", INCIDENT)
    world.deliver()
    row = world.destination(destination)
    assert row.failing_since is not None and row.failed_attempts == 1
    assert row.last_error is not None and "400" in row.last_error
    assert BOT_TOKEN not in row.last_error


@pytest.fixture
def relay() -> Iterator[SmtpServer]:
    with smtp_server() as server:
        yield server


def test_mail_sends_one_threaded_email_per_step_through_the_relay(
    world: World, relay: SmtpServer
) -> None:
    with world.database.transaction() as session:
        from controller.store.models import SmtpSettings

        session.add(
            SmtpSettings(
                org_id=world.org.org_id,
                host=relay.host,
                port=relay.port,
                security="none",
                from_address="driftgate@example.com",
            )
        )
    world.add({"name": "mail", "kind": "mail", "settings": {"to": "oncall@example.com"}})
    run_incident(world)
    mails = relay.to("oncall@example.com")
    assert [m["Subject"] for m in mails] == [
        f"[driftgate] Incident {word} for payments"
        for word in ("opened", "acknowledged", "resolved")
    ]
    assert {m["References"] for m in mails} == {f"<incident-{INCIDENT}@driftgate>"}
    assert all(m["From"] == "driftgate@example.com" for m in mails)
    assert "2 breaking change(s)" in mails[0].get_content()


def test_the_webhook_kind_keeps_its_standard_webhooks_signature(world: World) -> None:
    from controller.events.secrets import signing_secret
    from tests.receivers import Receiver

    with world.database.transaction() as session:
        secret = signing_secret(session, world.org.org_id, world.box)
    # The receiver verifies the signature against its own clock: the attempt is made now.
    now = datetime.now(UTC)
    receiver = Receiver(secret=secret)
    try:
        world.add({"name": "hook", "kind": "webhook", "secrets": {"url": receiver.url}})
        world.incident("open", INCIDENT, at=now)
        world.deliver(at=now)
        assert receiver.rejected == []
        (got,) = receiver.received
        assert got["body"]["type"] == "incident.open"
        assert got["body"]["data"]["incidentId"] == INCIDENT
        assert {"webhook-id", "webhook-timestamp", "webhook-signature"} <= {
            k.lower() for k in got["headers"]
        }
    finally:
        receiver.close()


def test_the_incoming_webhook_slack_kind_posts_its_text(world: World) -> None:
    from tests.receivers import Receiver

    receiver = Receiver()
    try:
        world.add({"name": "slack", "kind": "slack", "secrets": {"url": receiver.url}})
        world.incident("open", INCIDENT)
        world.deliver()
        (got,) = receiver.received
        assert got["body"] == {"text": ":rotating_light: Incident opened for *payments*"}
    finally:
        receiver.close()


@pytest.mark.parametrize(
    ("make", "path", "body"),
    [
        (
            lambda: fakes.pagerduty(ROUTING_KEY)[0],
            "/v2/enqueue",
            {"routing_key": ROUTING_KEY, "event_action": "trigger"},
        ),  # no payload
        (
            lambda: fakes.pagerduty(ROUTING_KEY)[0],
            "/v2/enqueue",
            {"routing_key": ROUTING_KEY, "event_action": "resolve"},
        ),  # no dedup_key
        (lambda: fakes.opsgenie(GENIE_KEY)[0], "/v2/alerts", {"message": "x" * 131}),
        (
            fakes.teams,
            fakes.TEAMS_PATH,
            {
                "type": "message",
                "attachments": [
                    {"contentType": "application/vnd.microsoft.card.hero", "content": {}}
                ],
            },
        ),
        (fakes.discord, fakes.DISCORD_PATH, {"embeds": [{"title": "t" * 257}]}),
        (
            lambda: fakes.slack(BOT_TOKEN)[0],
            "/api/chat.update",
            {"channel": "C0DRIFT01", "text": "x"},
        ),
    ],
)
def test_each_fake_refuses_what_its_service_would(make: Any, path: str, body: Any) -> None:
    fake = make()
    try:
        headers = {
            "Content-Type": "application/json",
            "Authorization": f"GenieKey {GENIE_KEY}" if "alerts" in path else f"Bearer {BOT_TOKEN}",
        }
        answer = httpx.post(fake.url(path), json=body, headers=headers)
        assert answer.status_code == 400
        assert len(fake.invalid) == 1 and fake.received == []
    finally:
        fake.stop()
