"""The console shows a failing destination after one attempt: on the overview's "Blocked now"
(beside the other failing deliveries) and on the settings page, with its health."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html import unescape

from flask import Flask

from tests.console.conftest import post
from tests.destinations import fakes
from tests.destinations.conftest import World
from tests.factories import make_user, sign_in

ROUTING_KEY = "R0UT1NGKEY0123456789ABCDEFGHIJKL"


def _text(html: str) -> str:
    text = re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))
    return re.sub(r" ([:;,.)])", r"\1", text)


def test_a_failing_destination_shows_on_the_overview_and_the_settings(
    world: World, live_app: Flask
) -> None:
    fake, _ = fakes.pagerduty(ROUTING_KEY)
    fake.failing_with = 502
    try:
        failing = world.add(
            {
                "name": "on-call",
                "kind": "pagerduty",
                "settings": {"url": fake.url("/v2/enqueue")},
                "secrets": {"routingKey": ROUTING_KEY},
                "routing": {"tags": ["team:*"]},
            }
        )
        now = datetime.now(UTC)  # the console reads times against its own clock
        world.incident("open", "incident-1", at=now)
        world.deliver(at=now)
    finally:
        fake.stop()
    make_user(world.database, world.org.org_name, "admin@example.com")
    admin = sign_in(live_app.test_client(), "admin@example.com")

    overview = admin.get("/console/").get_data(as_text=True)
    section = re.search(r'<section class="card blocked-now[^"]*".*?</section>', overview, re.S)
    assert section is not None
    text = _text(section.group(0))
    assert "1 destination" in text
    # The retry is 30 s after the attempt; the page reads it against its own clock, later.
    assert re.search(
        r"on-call \(pagerduty\) failing 1 attempt in a row failed, next retry in \d+ s", text
    ), text
    assert "last error: HTTP 502" in text

    page = admin.get("/console/settings").get_data(as_text=True)
    table = re.search(r'<section class="card" id="destinations">.*?</section>', page, re.S)
    assert table is not None
    row = _text(table.group(0))
    assert "on-call pagerduty tags: team:*" in row
    assert re.search(
        r"failing 1 attempt in a row, next retry in \d+ s; last error: HTTP 502", row
    ), row
    assert ROUTING_KEY not in page and ROUTING_KEY not in overview

    # An admin sends a test from the settings page: one message for that destination alone.
    assert post(admin, f"/console/settings/destinations/{failing}/test", "/console/settings") == 302
    tests = [m for m in world.messages(failing) if m.event_type == "destination.test"]
    assert len(tests) == 1 and tests[0].status == "pending"
