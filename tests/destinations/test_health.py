"""A failing destination is visible after its first failed attempt (the API's health), tells
the org's other destinations once per failure streak, and recovers; no secret reaches an
error, a log line or an answer."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import timedelta

import pytest
from flask.testing import FlaskClient

from controller.destinations import service
from controller.logs import JsonFormatter
from tests.destinations import fakes
from tests.destinations.conftest import NOW, World
from tests.logrecords import Lines

ROUTING_KEY = "R0UT1NGKEY0123456789ABCDEFGHIJKL"


@pytest.fixture
def pager() -> Iterator[tuple[fakes.ServiceFake, dict[str, str]]]:
    fake, alerts = fakes.pagerduty(ROUTING_KEY)
    yield fake, alerts
    fake.stop()


@pytest.fixture
def chat() -> Iterator[fakes.ServiceFake]:
    fake = fakes.discord()
    yield fake
    fake.stop()


def test_a_failing_destination_is_visible_after_one_attempt_and_tells_the_others_once(
    world: World,
    pager: tuple[fakes.ServiceFake, dict[str, str]],
    chat: fakes.ServiceFake,
) -> None:
    fake, alerts = pager
    failing = world.add(
        {
            "name": "on-call",
            "kind": "pagerduty",
            "settings": {"url": fake.url("/v2/enqueue")},
            "secrets": {"routingKey": ROUTING_KEY},
        }
    )
    world.add({"name": "chat", "kind": "discord", "secrets": {"url": chat.url(fakes.DISCORD_PATH)}})
    fake.failing_with = 503
    logged = Lines(JsonFormatter())
    logger = logging.getLogger("driftgate")
    logger.addHandler(logged)
    try:
        check_streak(world, failing, fake, alerts, chat)
    finally:
        logger.removeHandler(logged)
    # The routing key is in no log line.
    text = "\n".join(logged.lines)
    assert "delivery.failed" in text
    assert ROUTING_KEY not in text


def check_streak(
    world: World,
    failing: str,
    fake: fakes.ServiceFake,
    alerts: dict[str, str],
    chat: fakes.ServiceFake,
) -> None:

    world.incident("open", "incident-1")
    world.deliver()
    with world.database.session() as session:
        health = service.get(session, world.org.org_id, failing).health
    assert health.status == "failing"
    assert health.failed_attempts == 1 and health.last_error == "HTTP 503"
    assert health.next_retry_at is not None
    assert health.next_retry_at.replace(tzinfo=NOW.tzinfo) == NOW + timedelta(seconds=30)
    assert health.failing_since is not None
    # The other destination heard of it, once, and the chat fake checked the message.
    told = [r.body["content"] for r in chat.received]
    assert told == ["Incident opened for payments", "Destination on-call is failing"]

    # The retry fails too: the streak goes on, nobody is told again.
    world.deliver(at=NOW + timedelta(seconds=30))
    with world.database.session() as session:
        assert service.get(session, world.org.org_id, failing).health.failed_attempts == 2
    assert len(chat.received) == 2

    # It works again: healthy, and the others hear that too.
    fake.failing_with = None
    world.deliver(at=NOW + timedelta(seconds=90))
    with world.database.session() as session:
        health = service.get(session, world.org.org_id, failing).health
        overview = service.failing(session, world.org.org_id)
    assert health.status == "ok" and health.failed_attempts == 0 and health.last_error is None
    assert overview == []
    assert alerts == {"incident-1": "triggered"}
    assert [r.body["content"] for r in chat.received][2:] == ["Destination on-call works again"]
    assert chat.invalid == [] and fake.invalid == []


def test_the_api_and_the_overview_show_a_failing_destination(
    world: World, pager: tuple[fakes.ServiceFake, dict[str, str]], live_app: object
) -> None:
    fake, _ = pager
    fake.failing_with = 500
    failing = world.add(
        {
            "name": "on-call",
            "kind": "pagerduty",
            "settings": {"url": fake.url("/v2/enqueue")},
            "secrets": {"routingKey": ROUTING_KEY},
        }
    )
    world.incident("open", "incident-1")
    world.deliver()
    client: FlaskClient = live_app.test_client()  # type: ignore[attr-defined]
    answer = client.get(f"/api/org/destinations/{failing}", headers=world.org.headers)
    body = answer.get_json()
    assert body["health"]["status"] == "failing" and body["health"]["lastError"] == "HTTP 500"
    assert ROUTING_KEY not in answer.get_data(as_text=True)
