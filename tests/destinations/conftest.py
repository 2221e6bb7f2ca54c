"""A real store, a real watch and the delivery lane's channels, driven with a moved clock:
what the destinations' tests share."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.crypto import SecretBox, load_secret_box
from controller.destinations import service
from controller.destinations.service import channels as destination_channels
from controller.events.channels import delivering
from controller.events.delivery import deliver_due
from controller.events.outbox import emit
from controller.model.principal import Principal
from controller.settings import Settings
from controller.sources.http import configured_client
from controller.store.db import Database
from controller.store.models import Destination, OutboxMessage, Watch
from controller.summary import service as summary
from tests.conftest import OrgKey
from tests.factories import make_watches

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
WATCH_URL = "https://payments.example.com/openapi.json"


@dataclass
class World:
    database: Database
    box: SecretBox
    settings: Settings
    org: OrgKey
    watch_id: str
    client: Any

    @property
    def principal(self) -> Principal:
        org = self.org
        return Principal(org.org_id, org.org_name, "pro", frozenset(), "api_key", org.key_id)

    def add(self, body: dict[str, Any]) -> str:
        """A destination made through the service, as the API makes it."""
        with self.database.transaction() as session:
            data = service.NamedDestinationIn.model_validate(body)
            return service.create(session, self.principal, data, self.box).id

    def emit(
        self,
        event_type: str,
        data: dict[str, Any] | None = None,
        *,
        at: datetime = NOW,
        severity: str | None = None,
        watch: bool = True,
    ) -> list[str]:
        """Emit an event about the watch (or about none); the ids of the messages queued."""
        with self.database.transaction() as session:
            row = session.get(Watch, self.watch_id) if watch else None
            found = {"watchId": self.watch_id, "watchName": "payments"} if watch else {}
            messages = emit(
                session,
                self.box,
                org_id=self.org.org_id,
                event_type=event_type,
                data={**found, **(data or {})},
                now=at,
                watch=row,
                severity=severity,
            )
            session.flush()
            return [m.id for m in messages]

    def incident(self, step: str, incident_id: str, *, at: datetime = NOW) -> list[str]:
        status = {"open": "open", "acknowledged": "acknowledged", "resolved": "resolved"}[step]
        return self.emit(
            f"incident.{step}",
            {"incidentId": incident_id, "status": status, "breakingCount": 2},
            at=at,
        )

    def deliver(self, *, at: datetime = NOW) -> int:
        """Deliver everything due at `at` through the controller's channels."""
        channels = delivering(
            [
                *summary.channels(self.settings, self.database, self.box),
                *destination_channels(self.settings, self.database, self.box),
            ],
            5,
        )
        total = 0
        while sent := deliver_due(self.database, self.box, self.client, at, channels=channels):
            total += sent
        return total

    def destination(self, destination_id: str) -> Destination:
        with self.database.session() as session:
            row = session.get(Destination, destination_id)
            assert row is not None
            session.expunge(row)
            return row

    def messages(self, destination_id: str | None = None) -> list[OutboxMessage]:
        from sqlalchemy import select

        with self.database.session() as session:
            stmt = select(OutboxMessage).order_by(OutboxMessage.created_at, OutboxMessage.id)
            if destination_id is not None:
                stmt = stmt.where(OutboxMessage.destination_id == destination_id)
            rows = list(session.scalars(stmt))
            session.expunge_all()
            return rows


@pytest.fixture
def world(
    live_settings: Settings, database: Database, acme: OrgKey, tmp_path: Path
) -> Iterator[World]:
    box = load_secret_box(live_settings)
    (watch_id,) = make_watches(database, acme, tmp_path, [WATCH_URL], tags=["team:payments"])
    with configured_client(live_settings) as client:
        yield World(database, box, live_settings, acme, watch_id, client)
