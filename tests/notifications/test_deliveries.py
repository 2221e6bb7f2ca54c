"""Deliveries as people see them (`controller.notifications.deliveries_service`): a destination
in full without its secrets, and the destinations failing now, on the real store's outbox."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import update

from controller.crypto import SecretBox, load_secret_box
from controller.events.outbox import destination_hint, queue
from controller.notifications.deliveries_service import failing_destinations, shown
from controller.store.db import Database
from controller.store.models import OutboxMessage
from tests.conftest import OrgKey, make_settings

NOW = datetime(2026, 11, 26, 14, 0, tzinfo=UTC)
HOOK = "https://user:pw@hooks.example.com/services/T0/B0/XXXXXXXXXXXXXXXXXXXXXXXX?token=abc"
SHOWN = "https://hooks.example.com:443/services/T0/B0/XXXX…?…"


def test_failing_destinations_group_retrying_and_recent_give_ups(
    database: Database, acme: OrgKey, tmp_path: Path
) -> None:
    box = load_secret_box(make_settings(tmp_path, database_url=database.url), create=True)

    def message(url: str, status: str, age: timedelta, channel: str = "webhook") -> str:
        with database.transaction() as session:
            row = queue(
                session,
                box,
                org_id=acme.org_id,
                event_type="drift.detected",
                channel=channel,
                destination=url,
                hint=destination_hint(url) if "://" in url else "o…@example.com",
                payload={},
                now=NOW - age,
            )
            session.flush()
            session.execute(
                update(OutboxMessage)
                .where(OutboxMessage.id == row.id)
                .values(status=status, last_error=None if status == "delivered" else "HTTP 502")
            )
            return row.id

    message(HOOK, "retrying", timedelta(minutes=5))
    message(HOOK, "failed", timedelta(hours=3))
    message(HOOK, "failed", timedelta(hours=30))  # gave up more than a day ago: not counted
    message("ops@example.com", "failed", timedelta(hours=1), channel="email")
    message("http://127.0.0.1:8123/hook", "failed", timedelta(hours=2))
    message("http://127.0.0.1:8123/hook", "delivered", timedelta(hours=1))  # works again
    message("http://127.0.0.1:9000/other", "delivered", timedelta(minutes=1))
    with database.session() as session:
        found = failing_destinations(session, box, acme.org_id, NOW)
    assert [(d.channel, d.destination, d.retrying, d.failed) for d in found] == [
        ("webhook", SHOWN, 1, 1),
        ("email", "o…@example.com", 0, 1),
    ]
    assert found[0].last_error == "HTTP 502" and found[0].last_at is not None
    assert found[0].last_at.replace(tzinfo=UTC) == NOW - timedelta(minutes=5)
    with database.session() as session:
        assert failing_destinations(session, box, acme.org_id, NOW + timedelta(days=2)) == []


def test_a_destination_reads_in_full_without_its_secrets(tmp_path: Path) -> None:
    box = load_secret_box(make_settings(tmp_path), create=True)
    assert shown(box, box.encrypt_json(HOOK), "https://hooks.example.com") == SHOWN
    assert shown(box, box.encrypt_json("ops@example.com"), "o…@example.com") == "o…@example.com"
    other = SecretBox(["another key this process does not hold, 32+ chars long"])
    assert shown(other, box.encrypt_json(HOOK), "https://hooks.example.com") == (
        "https://hooks.example.com"  # undecryptable here: the stored hint
    )
