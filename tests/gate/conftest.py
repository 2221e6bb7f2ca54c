"""The run gate's world, built for a test (`build`): an agent declared in a git repository with
its approval rule and reconciled into the store, a watch on a loopback spec server, the app, the
HTTPS receivers of runtime events and alerts, and an in-process controller. The run gate's
stories use it here, the tool server's tests in tests/toolserver/."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from controller.crypto import load_secret_box
from controller.gitsources.reconcile import Reconciler
from controller.notifications import service as notifications
from controller.scheduler import Controller
from controller.settings import Settings
from controller.store.db import Database
from controller.store.models import Incident, OutboxMessage, Watch
from tests.conftest import OrgKey, make_settings
from tests.gitrepos import RepoBuilder, isolated_git_config
from tests.processes import PATIENCE
from tests.receivers import Receiver
from tests.servers import SpecServer, spec_server
from tests.specs import as_json, charges_spec
from tests.tls import self_signed_certificate

AGENT = "billing-agent"
SLUG = "billing"
WATCH = "billing-api"
RULE = {"repository": "acme/billing-agent", "branches": ["main"]}


@dataclass(frozen=True)
class Case:
    policy: str
    kills: bool
    require_ack: bool
    policy_reasons: tuple[str, ...]
    approvals: bool = False
    policies_yaml: str = ""


CASES = {
    "staging-strict": Case(
        policy="staging-strict",
        kills=False,
        require_ack=False,
        policy_reasons=("policy_block:block_new_runs",),
    ),
    "production-guard": Case(
        policy="production-guard",
        kills=True,
        require_ack=True,
        policy_reasons=("policy_block:block_new_runs", "policy_block:kill_in_flight"),
        approvals=True,
    ),
    "custom": Case(
        policy="kill-switch",
        kills=True,
        require_ack=True,
        policy_reasons=("policy_block:kill_in_flight",),
        policies_yaml=(
            "policies:\n"
            "  kill-switch:\n"
            "    on_breaking: [notify, kill_in_flight]\n"
            "    require_ack_to_unblock: true\n"
        ),
    ),
}


def agents_yaml(case: Case, webhook: str | None, name: str | None = None) -> str:
    text = f"version: 1\n{case.policies_yaml}agents:\n"
    text += f"  - id: {AGENT}\n    slug: {SLUG}\n    environment: production\n"
    text += f"    policy: {case.policy}\n"
    if name is not None:
        text += f"    name: {name}\n"
    if webhook is not None:
        text += f"    runtime_webhook: {webhook}\n"
    text += f"    watches:\n      - {WATCH}\n"
    if case.approvals:
        text += "    approvals:\n      - repository: acme/billing-agent\n        branches: [main]\n"
    return text


def watch_sets_yaml(url: str) -> str:
    return (
        "version: 1\nwatchSets:\n  - name: production\n    environment: production\n"
        f"    watches:\n      - name: {WATCH}\n        url: {url}\n        watchType: openapi\n"
    )


GOOD = as_json(charges_spec())
BREAKING = as_json(charges_spec(required=("id",), refunds=False))


@dataclass
class Gate:
    """Everything one story needs, running."""

    case: Case
    client: FlaskClient
    acme: OrgKey
    database: Database
    settings: Settings
    server: SpecServer
    repo: RepoBuilder
    reconciler: Reconciler
    watch_id: str
    runtime: Receiver | None = None
    alerts: Receiver | None = None
    controller: Controller | None = None
    webhook: str | None = None

    # Calls.

    def post(self, path: str, body: Any = None, status: int = 200) -> Any:
        response = self.client.post(path, json=body or {}, headers=self.acme.headers)
        assert response.status_code == status, (path, response.status_code, response.get_json())
        return response.get_json()

    def get(self, path: str) -> Any:
        response = self.client.get(path, headers=self.acme.headers)
        assert response.status_code == 200, (path, response.get_json())
        return response.get_json()

    def check(self) -> dict[str, Any]:
        body = self.post(f"/api/watches/{self.watch_id}/check?wait=60")
        assert body["status"] == "done", body
        return dict(body["watch"])

    def by_agent(self, status: int, agent: str = AGENT) -> Any:
        return self.post("/api/preflight", {"agentId": agent}, status)

    def by_watches(self) -> Any:
        return self.post("/api/preflight", {"watchIds": [self.watch_id]}, 200)

    def status(self) -> Any:
        return self.get(f"/api/agents/{AGENT}/status")

    def reconcile(self) -> str:
        spec = self.settings.source("fleet")
        assert spec is not None
        result = self.reconciler.reconcile(spec)
        assert result.result in ("applied", "unchanged"), result.as_dict()
        return str(result.result)

    # The store.

    def outbox(self, event_type: str) -> list[dict[str, Any]]:
        with self.database.session() as session:
            rows = session.scalars(
                select(OutboxMessage)
                .where(OutboxMessage.event_type == event_type)
                .order_by(OutboxMessage.created_at)
            )
            return [dict(row.payload) for row in rows]

    def incident(self, incident_id: str) -> Incident:
        with self.database.session() as session:
            row = session.get(Incident, incident_id)
            assert row is not None
            session.expunge(row)
            return row


def received(receiver: Receiver, event_type: str) -> list[dict[str, Any]]:
    return [m["body"] for m in list(receiver.received) if m["body"]["type"] == event_type]


def wait_for(
    receiver: Receiver, event_type: str, count: int, timeout: float = PATIENCE
) -> list[Any]:
    """The `data` of the first `count` `event_type` events the receiver accepted (signature
    verified), waiting for the controller's delivery ticks."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = received(receiver, event_type)
        if len(events) >= count:
            return [e["data"] for e in events]
        time.sleep(0.05)
    got = [m["body"]["type"] for m in list(receiver.received)]
    raise AssertionError(f"{event_type} x{count} not delivered in {timeout}s (got {got})")


@pytest.fixture
def build(tmp_path: Path, database: Database, acme: OrgKey) -> Iterator[Callable[..., Gate]]:
    """Build the world for a case: receivers, spec server, git repo, reconcile, app, and
    (unless `controller=False`) a running controller; everything is stopped afterwards."""
    stack = ExitStack()

    def make(case: Case, *, controller: bool = True) -> Gate:
        cert, key = self_signed_certificate(tmp_path)
        settings = make_settings(
            tmp_path,
            database_url=database.url,
            sources=[{"name": "fleet", "org": "acme", "url": (tmp_path / "remote.git").as_uri()}],
            allow_private_targets=True,
            ca_bundle=str(cert),
        )
        box = load_secret_box(settings)
        with database.transaction() as session:
            secret = notifications.signing_secret(session, acme.org_id, box)
        runtime = alerts = None
        if controller:
            runtime = Receiver(secret=secret, tls=(cert, key))
            stack.callback(runtime.close)
            alerts = Receiver(secret=secret, tls=(cert, key))
            stack.callback(alerts.close)
        server = stack.enter_context(spec_server())
        server.set("/openapi.json", GOOD)
        stack.enter_context(isolated_git_config(tmp_path / "gitconfig"))
        repo = RepoBuilder(tmp_path / "remote.git")
        webhook = runtime.url if runtime else None
        repo.commit(
            {
                ".driftgate/agents.yaml": agents_yaml(case, webhook),
                ".driftgate/watch-sets.yaml": watch_sets_yaml(server.url("/openapi.json")),
            }
        )
        reconciler = Reconciler(settings, database, box, env={})
        spec = settings.source("fleet")
        assert spec is not None
        result = reconciler.reconcile(spec)
        assert result.result == "applied", result.as_dict()
        with database.session() as session:
            watch_id = session.scalars(select(Watch.id).where(Watch.name == WATCH)).one()

        from web.app import create_app

        app: Flask = create_app(settings, database=database)
        gate = Gate(
            case=case,
            client=app.test_client(),
            acme=acme,
            database=database,
            settings=settings,
            server=server,
            repo=repo,
            reconciler=reconciler,
            watch_id=watch_id,
            runtime=runtime,
            alerts=alerts,
            webhook=webhook,
        )
        if alerts is not None:
            # Drift alerts need a destination to be queued at all: the org's default.
            response = gate.client.put(
                "/api/org/notification-defaults",
                json={"destination": {"kind": "webhook", "url": alerts.url}},
                headers=acme.headers,
            )
            assert response.status_code == 200, response.get_json()
        if controller:
            running = Controller(settings, database, box, concurrency=2, tick_seconds=0.2)
            running.start()
            stack.callback(running.stop, grace=5)
            gate.controller = running
        return gate

    with stack:
        yield make
