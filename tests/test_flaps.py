"""Flapping contracts (issue 33, point 8): reverts, one incident per flapping episode,
grouped deliveries, and a gate that still answers for the contract as it is now."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from controller.store.db import Database
from controller.store.models import Incident
from tests.conftest import OrgKey, make_settings
from tests.servers import SpecServer, spec_server
from tests.test_checks import Harness, serve


@pytest.fixture
def server() -> Iterator[SpecServer]:
    with spec_server() as running:
        yield running


@pytest.fixture
def harness(
    tmp_path: Path, database: Database, acme: OrgKey, server: SpecServer
) -> Iterator[Harness]:
    settings = make_settings(tmp_path, database_url=database.url, allow_private_targets=True)
    made = Harness(database, settings, acme, server)
    yield made
    made.client.close()


def test_a_superset_served_briefly_and_reverted_leaves_the_watch_ok(harness: Harness) -> None:
    serve(harness, refunds=False)
    watch_id = harness.watch(webhookUrl="https://hooks.example.com/drift")
    assert harness.check(watch_id).outcome == "baseline"
    serve(harness)  # a superset: one more path (info), the baseline advances by itself
    assert harness.check(watch_id).status == "ok"
    serve(harness, refunds=False)  # the vendor reverts to the accepted baseline
    reverted = harness.check(watch_id)
    assert reverted.status == "ok"
    watch = harness.get(watch_id)
    assert watch.incident_id is None and watch.open_breaking == 0
    with harness.database.session() as session:
        assert session.scalars(select(Incident).where(Incident.status == "open")).all() == []
