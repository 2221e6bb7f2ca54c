"""Fixtures of the check tests: a harness that runs real checks (`run_check`) of a loopback
vendor whose document a test changes, on a clock the harness moves on."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from controller.checks.engine import CheckResult, http_fetcher, run_check
from controller.crypto import load_secret_box
from controller.model.principal import Principal
from controller.model.watch import WatchCreate
from controller.settings import Settings
from controller.sources.http import make_client
from controller.store.db import Database
from controller.store.models import OutboxMessage, Watch
from controller.watches import service as watch_service
from tests.conftest import OrgKey, make_settings
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


class Harness:
    def __init__(
        self, database: Database, settings: Settings, org: OrgKey, server: SpecServer
    ) -> None:
        self.database = database
        self.settings = settings
        self.box = load_secret_box(settings)
        self.server = server
        self.client = make_client(allow_private=settings.allow_private_targets, timeout=1.0)
        self.fetcher = http_fetcher(settings, self.client)
        self.principal = Principal(
            org.org_id, org.org_name, "pro", frozenset(), "api_key", org.key_id
        )
        self.now = NOW

    def watch(self, path: str = "/openapi.json", **fields: object) -> str:
        url = self.server.url(path)
        data = WatchCreate.model_validate(
            {"name": f"w{path}", "url": url, "watchType": "openapi", **fields}
        )
        with self.database.transaction() as session:
            return watch_service.create_watch(session, self.principal, data, self.box).id

    def check(self, watch_id: str, minutes: int = 15) -> CheckResult:
        self.now += timedelta(minutes=minutes)
        return run_check(self.database, watch_id, box=self.box, fetcher=self.fetcher, now=self.now)

    def get(self, watch_id: str) -> Watch:
        with self.database.session() as session:
            watch = session.get(Watch, watch_id)
            assert watch is not None
            return watch

    def events(self) -> list[str]:
        with self.database.session() as session:
            return list(
                session.scalars(select(OutboxMessage.event_type).order_by(OutboxMessage.created_at))
            )


@pytest.fixture
def harness(
    tmp_path: Path, database: Database, acme: OrgKey, server: SpecServer
) -> Iterator[Harness]:
    settings = make_settings(tmp_path, database_url=database.url, allow_private_targets=True)
    made = Harness(database, settings, acme, server)
    yield made
    made.client.close()


def serve(h: Harness, **knobs: object) -> None:
    h.server.set("/openapi.json", as_json(charges_spec(**knobs)))  # type: ignore[arg-type]
