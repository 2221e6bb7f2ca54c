"""What the preflight CLI tests share: the command run against a server, watches made and
set through the API and the store, and a clock the command's waits are measured on."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import httpx
from click.testing import CliRunner, Result
from sqlalchemy import update

from cli.main import main
from controller.store.db import Database
from controller.store.models import Agent, AgentWatch, Incident, Watch
from tests.conftest import OrgKey

SPEC_URL = "https://api.example.com/openapi.json"


def run(server_url: str | None, key: str | None, *args: str) -> Result:
    env = {"DRIFTGATE_URL": server_url, "DRIFTGATE_API_KEY": key, "DRIFTGATE_CONFIG": None}
    return CliRunner().invoke(main, ["preflight", *args], env=env, catch_exceptions=False)


@contextmanager
def api_client(server_url: str, org: OrgKey) -> Iterator[httpx.Client]:
    """An HTTP client of the server at `server_url`, with `org`'s key."""
    headers = {**org.headers, "User-Agent": "driftgate-tests"}
    with httpx.Client(base_url=server_url, headers=headers, timeout=10) as client:
        yield client


def create_watch(api: httpx.Client, name: str) -> str:
    response = api.post("/api/watches", json={"name": name, "url": SPEC_URL})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def set_watch(database: Database, watch_id: str, **values: Any) -> None:
    with database.transaction() as session:
        session.execute(update(Watch).where(Watch.id == watch_id).values(**values))


def mark_checked(database: Database, watch_id: str) -> None:
    now = datetime.now(UTC)
    set_watch(database, watch_id, drift_status="ok", last_checked_at=now, last_check_status="ok")


def drift(database: Database, org: OrgKey, watch_id: str) -> str:
    """Breaking drift with an open incident, as a check would leave it."""
    with database.transaction() as session:
        incident = Incident(org_id=org.org_id, watch_id=watch_id, status="open", breaking_count=1)
        session.add(incident)
        session.flush()
        incident_id = incident.id
    mark_checked(database, watch_id)
    set_watch(database, watch_id, drift_status="drifted", incident_id=incident_id)
    return incident_id


def add_agent(
    database: Database,
    org: OrgKey,
    slug: str,
    watch_ids: list[str],
    policy: str = "staging-strict",
    runtime_state: str = "running",
) -> None:
    with database.transaction() as session:
        session.add(
            Agent(
                org_id=org.org_id,
                key=slug,
                slug=slug,
                policy=policy,
                runtime_state=runtime_state,
                bindings=[
                    AgentWatch(position=i, ref=w, watch_id=w) for i, w in enumerate(watch_ids)
                ],
            )
        )


class Clock:
    """The `time` of `cli.commands.preflight`, moved by the test: `sleep` moves it on at
    once and runs what is due by then (`at`), so `--wait` and `--interval` are measured on
    it, whatever the machine's load."""

    def __init__(self) -> None:
        self.now = 0.0
        self.due: list[tuple[float, Callable[[], None]]] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        for when, action in [d for d in self.due if d[0] <= self.now + 1e-9]:
            self.due.remove((when, action))
            action()

    def at(self, when: float, action: Callable[[], None]) -> None:
        self.due.append((when, action))
