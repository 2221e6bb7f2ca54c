"""Factories the tests share: rows and states made through the API or the store, as a test
module needs them (test modules never import each other)."""

from __future__ import annotations

from datetime import UTC, datetime

from flask.testing import FlaskClient

from controller.store.db import Database
from controller.store.models import Incident, Watch
from tests.conftest import OrgKey


def make_watch(client: FlaskClient, who: OrgKey, name: str) -> str:
    response = client.post(
        "/api/watches",
        json={"name": name, "url": f"https://{name}.example.com/openapi.json"},
        headers=who.headers,
    )
    assert response.status_code == 201
    return str(response.get_json()["id"])


def set_state(
    database: Database,
    watch_id: str,
    status: str,
    *,
    failure: str | None = None,
    incident: str | None = None,
) -> str | None:
    """Put a watch in a state as the checks would leave it (status, last check, incident)."""
    with database.transaction() as session:
        watch = session.get_one(Watch, watch_id)
        watch.drift_status = status
        watch.failure_class = failure
        watch.last_checked_at = datetime.now(UTC)
        if incident is None:
            return None
        row = Incident(org_id=watch.org_id, watch_id=watch.id, status=incident, breaking_count=2)
        session.add(row)
        session.flush()
        watch.incident_id = row.id
        watch.open_breaking = 2
        return row.id
