"""The run gate end to end, with real components: an agent declared in a git repository and
reconciled into the store, a watch on a loopback spec server checked by an in-process
controller, preflight through the app, and the signed runtime events an HTTPS orchestrator
(trusted through `ca_bundle`) receives. One story per policy (docs/run-gate.md), then
preflights racing a watch that flips between two consistent states.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
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
from controller.store.models import Agent, AuditEntry, Incident, OutboxMessage, Watch
from tests.conftest import OrgKey, make_settings
from tests.gitrepos import RepoBuilder, isolated_git_config
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
        body = self.post(f"/api/watches/{self.watch_id}/check?wait=20")
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


def wait_for(receiver: Receiver, event_type: str, count: int, timeout: float = 10.0) -> list[Any]:
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


@pytest.mark.parametrize("name", list(CASES))
def test_the_run_gate_story(build: Callable[..., Gate], name: str) -> None:
    case = CASES[name]
    gate = build(case)
    assert gate.runtime is not None and gate.alerts is not None
    wid = gate.watch_id

    # The agent came from git, bound to the watch by name.
    agent = gate.get(f"/api/agents/{AGENT}")
    assert agent["managedBy"]["source"] == "fleet"
    assert agent["policy"] == case.policy and agent["runtimeWebhook"] == gate.webhook
    assert agent["watches"] == [{"ref": WATCH, "watchId": wid, "resolved": True}]
    assert agent["approvals"] == ([RULE] if case.approvals else [])

    # 2. First check: the baseline; everything is allowed.
    assert gate.check()["driftStatus"] == "ok"
    first = gate.by_agent(200)
    assert first["allowed"] is True and first["blocked"] == []
    assert first["policyBlocked"] is False and first["wouldPolicyBlock"] is False
    assert first["agent"]["id"] == AGENT and first["agent"]["policy"] == case.policy
    assert first["agent"]["runtimeState"] == "running" and first["agent"]["reasons"] == []
    assert gate.by_agent(200, SLUG)["agent"]["id"] == AGENT  # by slug too
    assert gate.by_watches()["allowed"] is True

    # 3. A breaking change: drifted, the agent's policy blocks, a plain list only reports.
    gate.server.set("/openapi.json", BREAKING)
    drifted = gate.check()
    assert drifted["driftStatus"] == "drifted" and drifted["incident"]["status"] == "open"
    incident_id = drifted["incident"]["id"]
    blocked = gate.by_agent(409)
    assert blocked["allowed"] is False
    assert blocked["policyBlocked"] is True and blocked["wouldPolicyBlock"] is True
    (row,) = blocked["blocked"]
    assert row["watchId"] == wid and row["name"] == WATCH and row["driftStatus"] == "drifted"
    assert row["reasons"] == ["breaking_drift", *case.policy_reasons]
    assert row["incidentId"] == incident_id
    assert "ack_incident" in row["agentActions"] and len(row["agentActions"]) >= 2
    engine_actions = sorted(set(row["agentActions"]) - {"ack_incident"})
    expected_runtime = "killed" if case.kills else "running"
    assert blocked["agent"]["runtimeState"] == expected_runtime
    assert blocked["agent"]["reasons"] == (["agent_killed"] if case.kills else [])
    plain = gate.by_watches()
    assert plain["allowed"] is False and plain["policyBlocked"] is False
    assert plain["agent"] is None
    assert [r["reasons"] for r in plain["blocked"]] == [["breaking_drift"]]
    assert plain["blocked"][0]["incidentId"] == incident_id

    # Drift alerts name the affected agents (in the outbox and as delivered).
    for kind in ("drift.detected", "incident.open"):
        (payload,) = gate.outbox(kind)
        assert payload["data"]["affectedAgentIds"] == [AGENT], kind
        assert payload["data"]["watchId"] == wid
    (alert,) = wait_for(gate.alerts, "drift.detected", 1)
    assert alert["affectedAgentIds"] == [AGENT] and alert["incidentId"] == incident_id

    # 4. The runtime block: killed and told at once (signed), or not at all.
    status = gate.status()
    assert status["policy"]["name"] == case.policy
    assert status["runtime"]["state"] == expected_runtime
    (bound,) = status["watches"]
    assert bound["blocking"] is True and bound["reasons"] == ["breaking_drift"]
    assert bound["incidentStatus"] == "open"
    assert [i["id"] for i in status["openIncidents"]] == [incident_id]
    assert status["preflight"] == {
        "allowed": False,
        "policyBlocked": True,
        "reasons": ["agent_killed"] if case.kills else [],
    }
    affected = gate.get(f"/api/watches/{wid}/affected-agents")
    assert [(a["id"], a["runtimeState"]) for a in affected["agents"]] == [(AGENT, expected_runtime)]
    if case.kills:
        assert status["runtime"]["reason"] == "breaking_drift"
        assert status["runtime"]["changedBy"] == "system"
        assert "unblock_agent" in status["agentActions"]
        (event,) = wait_for(gate.runtime, "agent.contract.blocked", 1)
        assert event["action"] == "kill_in_flight" and event["reason"] == "breaking_drift"
        assert event["agentId"] == AGENT and event["slug"] == SLUG
        assert event["policy"] == case.policy and event["environment"] == "production"
        assert event["watchId"] == wid and event["watchName"] == WATCH
        assert event["incidentId"] == incident_id
        assert event["agentActions"] == engine_actions
    else:
        assert status["runtime"]["reason"] is None
        assert gate.outbox("agent.contract.blocked") == []
    assert gate.runtime.rejected == [] and gate.alerts.rejected == []

    # 5. Under a policy that requires an ack, unblocking first is refused.
    if case.require_ack:
        refused = gate.client.post(
            f"/api/agents/{AGENT}/unblock", json={}, headers=gate.acme.headers
        )
        assert refused.status_code == 409, refused.get_json()
        assert refused.get_json()["error"] == "ack_required"
        assert refused.get_json()["details"] == [{"incidentId": incident_id, "watchId": wid}]
        assert gate.status()["runtime"]["state"] == "killed"
        gate.by_agent(409)

    # 6. Acknowledge: refused by the approval rules, then accepted.
    ack_body: dict[str, Any] = {"note": "migrating the client"}
    if case.approvals:
        for attempt, failed in (
            ({"repository": "acme/other", "branch": "main"}, "repository"),
            ({"repository": "acme/billing-agent", "branch": "feature/x"}, "branch"),
            ({}, "repository"),
        ):
            response = gate.client.post(
                f"/api/agents/{AGENT}/ack", json={**ack_body, **attempt}, headers=gate.acme.headers
            )
            assert response.status_code == 403, response.get_json()
            body = response.get_json()
            assert body["error"] == "approval_refused"
            assert body["details"] == [{"agentId": AGENT, "rule": RULE, "failed": failed}]
            # The watch's own route is the same decision (issue 40, point 3).
            around = gate.client.post(
                f"/api/watches/{wid}/incident/ack",
                json={**ack_body, **attempt},
                headers=gate.acme.headers,
            )
            assert around.status_code == 403, around.get_json()
            assert around.get_json()["details"] == body["details"]
        assert gate.incident(incident_id).status == "open"  # nothing was acknowledged
        gate.by_agent(409)
        assert gate.outbox("incident.acknowledged") == []
        ack_body |= {"repository": "ACME/billing-agent", "branch": "main"}
    acked = gate.post(f"/api/agents/{AGENT}/ack", ack_body)
    assert acked["acknowledged"] == [incident_id]
    assert acked["approval"] == (RULE if case.approvals else None)
    assert acked["status"]["runtime"]["state"] == "running"
    assert gate.incident(incident_id).status == "acknowledged"
    allowed = gate.by_agent(200)
    assert allowed["allowed"] is True and allowed["blocked"] == []
    assert allowed["agent"]["runtimeState"] == "running"
    still = gate.by_watches()  # acknowledged drift still blocks a plain list
    assert still["allowed"] is False and still["blocked"][0]["reasons"] == ["breaking_drift"]
    assert still["blocked"][0]["incidentId"] == incident_id
    with gate.database.session() as session:
        (audited,) = session.scalars(select(AuditEntry).where(AuditEntry.action == "agent.ack"))
        assert audited.details["incidents"] == [incident_id]
        assert audited.details["approvalRule"] == (RULE if case.approvals else None)
    (acknowledged,) = gate.outbox("incident.acknowledged")
    assert acknowledged["data"]["affectedAgentIds"] == [AGENT]
    if case.kills:
        status = gate.status()
        assert status["runtime"]["state"] == "running"
        assert status["runtime"]["reason"] == "unblocked"
        (unblocked,) = wait_for(gate.runtime, "agent.unblocked", 1)
        assert unblocked["agentId"] == AGENT and unblocked["previousReason"] == "breaking_drift"
    else:
        assert gate.outbox("agent.unblocked") == []

    # 7. Accept the new contract as the baseline: resolved, ok, allowed everywhere.
    accepted = gate.post(f"/api/watches/{wid}/baseline", {"reason": "client migrated"})
    assert accepted["driftStatus"] == "ok" and accepted["incident"] is None
    assert gate.incident(incident_id).status == "resolved"
    assert gate.incident(incident_id).resolution == "baseline_accepted"
    (resolved,) = gate.outbox("incident.resolved")
    assert resolved["data"]["affectedAgentIds"] == [AGENT]
    assert gate.by_agent(200)["allowed"] is True
    assert gate.by_watches()["allowed"] is True
    assert gate.check()["driftStatus"] == "ok"  # the breaking contract is the baseline now

    # Manual kill of a git-managed agent: 409 until unblocked, with the same signed event.
    killed = gate.post(f"/api/agents/{AGENT}/kill", {"note": "maintenance"})
    assert killed["runtime"]["state"] == "killed" and killed["runtime"]["reason"] == "manual"
    assert killed["runtime"]["note"] == "maintenance"
    assert killed["runtime"]["changedBy"].startswith("api_key:")
    gate_kill = gate.by_agent(409)
    assert gate_kill["allowed"] is False and gate_kill["blocked"] == []
    assert gate_kill["agent"]["reasons"] == ["agent_killed"]
    assert gate_kill["agent"]["agentActions"] == ["unblock_agent"]
    assert gate.by_watches()["allowed"] is True  # a plain list knows nothing of agents
    kills = 2 if case.kills else 1
    manual = wait_for(gate.runtime, "agent.contract.blocked", kills)[-1]
    assert manual["reason"] == "manual" and manual["action"] == "kill_in_flight"
    assert manual["note"] == "maintenance" and manual["watchId"] is None
    assert manual["agentId"] == AGENT
    # A second kill is a no-op (no second event).
    gate.post(f"/api/agents/{AGENT}/kill", {"note": "again"})
    assert len(gate.outbox("agent.contract.blocked")) == kills * 2  # runtime + org default

    # An ack does not lift a manual kill, and a reconcile never touches the runtime state.
    ack_again = {"repository": "acme/billing-agent", "branch": "main"} if case.approvals else {}
    assert gate.post(f"/api/agents/{AGENT}/ack", ack_again)["acknowledged"] == []
    gate.repo.commit({".driftgate/agents.yaml": agents_yaml(case, gate.webhook, "Billing")})
    gate.reconcile()  # "unchanged" if the controller's own poll applied it first
    assert gate.get(f"/api/agents/{AGENT}")["name"] == "Billing"
    assert gate.status()["runtime"]["state"] == "killed"
    gate.by_agent(409)

    unblocked_now = gate.post(f"/api/agents/{AGENT}/unblock", {"note": "done"})
    assert unblocked_now["runtime"]["state"] == "running"
    assert unblocked_now["runtime"]["reason"] == "unblocked"
    assert gate.by_agent(200)["allowed"] is True
    unblocks = 2 if case.kills else 1
    last = wait_for(gate.runtime, "agent.unblocked", unblocks)[-1]
    assert last["previousReason"] == "manual" and last["note"] == "done"
    with gate.database.session() as session:
        actions = [
            (actor == "system", action)
            for actor, action in session.execute(
                select(AuditEntry.actor, AuditEntry.action)
                .where(
                    AuditEntry.target_id == AGENT,
                    AuditEntry.action.in_(("agent.kill", "agent.unblock")),
                )
                .order_by(AuditEntry.id)
            )
        ]
    # A kill by breaking drift is audited too, as the system's (the activity timeline).
    by_drift = [(True, "agent.kill")] if case.kills else []
    assert actions == [*by_drift, (False, "agent.kill"), (False, "agent.unblock")]
    assert gate.runtime.rejected == [] and gate.alerts.rejected == []
    assert all(
        m["headers"].get("webhook-signature", "").startswith("v1,") for m in gate.runtime.received
    )


# Concurrency: every answer is one consistent state.


def flip(database: Database, watch_id: str, incident_id: str, drifted: bool, kills: bool) -> None:
    """Put the watch (its incident, its agent) in one of two consistent states, in one
    transaction: ok with no incident and a running agent, or drifted with an open incident
    (and a killed agent under a kill_in_flight policy)."""
    now = datetime.now(UTC)
    with database.transaction() as session:
        watch = session.get_one(Watch, watch_id)
        incident = session.get_one(Incident, incident_id)
        agent = session.scalars(select(Agent).where(Agent.key == AGENT)).one()
        watch.last_checked_at = now
        if drifted:
            watch.drift_status, watch.incident_id, watch.open_breaking = "drifted", incident.id, 1
            incident.status, incident.resolved_at = "open", None
            if kills:
                agent.runtime_state, agent.runtime_reason = "killed", "breaking_drift"
        else:
            watch.drift_status, watch.incident_id, watch.open_breaking = "ok", None, 0
            incident.status, incident.resolved_at = "resolved", now
            agent.runtime_state, agent.runtime_reason = "running", "unblocked"


def classify(kind: str, status: int, body: Any, watch_id: str, incident_id: str, case: Case) -> str:
    """`ok` or `drifted` when the answer is exactly one of the two consistent answers."""
    assert status in (200, 409), (kind, status, body)
    if body["allowed"]:
        assert status == 200 and body["blocked"] == [] and body["ignored"] == [], body
        assert body["policyBlocked"] is False and body["wouldPolicyBlock"] is False, body
        if kind == "agent":
            assert body["agent"]["runtimeState"] == "running", body
            assert body["agent"]["reasons"] == [], body
        return "ok"
    (row,) = body["blocked"]
    assert row["watchId"] == watch_id and row["driftStatus"] == "drifted", body
    assert row["incidentId"] == incident_id, body
    assert "ack_incident" in row["agentActions"], body
    if kind == "agent":
        assert status == 409 and body["policyBlocked"] is True, body
        assert row["reasons"] == ["breaking_drift", *case.policy_reasons], body
        assert body["agent"]["runtimeState"] == ("killed" if case.kills else "running"), body
        assert body["agent"]["reasons"] == (["agent_killed"] if case.kills else []), body
    else:
        assert status == 200 and body["policyBlocked"] is False, body
        assert row["reasons"] == ["breaking_drift"], body
    return "drifted"


@pytest.mark.parametrize("name", ["production-guard", "staging-strict"])
def test_preflights_racing_state_changes_see_one_consistent_state(
    build: Callable[..., Gate], name: str
) -> None:
    case = CASES[name]
    gate = build(case, controller=False)
    with gate.database.transaction() as session:
        watch = session.get_one(Watch, gate.watch_id)
        incident = Incident(
            org_id=watch.org_id, watch_id=watch.id, status="resolved", breaking_count=1
        )
        session.add(incident)
        session.flush()
        incident_id = incident.id
    flip(gate.database, gate.watch_id, incident_id, False, case.kills)

    stop = threading.Event()
    flips = [0]

    def flipper() -> None:
        drifted = True
        while not stop.is_set():
            flip(gate.database, gate.watch_id, incident_id, drifted, case.kills)
            drifted = not drifted
            flips[0] += 1
            time.sleep(0.002)

    def ask(i: int) -> tuple[str, str]:
        kind = "agent" if i % 2 else "watches"
        body = {"agentId": AGENT} if kind == "agent" else {"watchIds": [gate.watch_id]}
        response = gate.client.post("/api/preflight", json=body, headers=gate.acme.headers)
        return kind, classify(
            kind, response.status_code, response.get_json(), gate.watch_id, incident_id, case
        )

    thread = threading.Thread(target=flipper, daemon=True)
    thread.start()
    # At least 300 answers, and for as long as the flipper needs to flip a few times: the
    # preflights' speed must not decide how many changes they race (60 s at most).
    answers: list[tuple[str, str]] = []
    deadline = time.monotonic() + 60
    try:
        with ThreadPoolExecutor(max_workers=6) as pool:
            while len(answers) < 300 or (flips[0] <= 10 and time.monotonic() < deadline):
                answers += pool.map(ask, range(len(answers), len(answers) + 100))
    finally:
        stop.set()
        thread.join(timeout=10)
    assert flips[0] > 10
    seen = {(kind, state) for kind, state in answers}
    # Both states were seen by both kinds of request (the flipper runs throughout).
    assert seen == {
        ("agent", "ok"),
        ("agent", "drifted"),
        ("watches", "ok"),
        ("watches", "drifted"),
    }, seen
