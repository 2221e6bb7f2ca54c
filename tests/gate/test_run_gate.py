"""The run gate end to end, with real components: an agent declared in a git repository and
reconciled into the store, a watch on a loopback spec server checked by an in-process
controller, preflight through the app, and the signed runtime events an HTTPS orchestrator
(trusted through `ca_bundle`) receives. One story per policy (docs/run-gate.md), then
preflights racing a watch that flips between two consistent states.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select

from controller.store.db import Database
from controller.store.models import Agent, AuditEntry, Incident, Watch
from tests.gate.conftest import (
    AGENT,
    BREAKING,
    CASES,
    RULE,
    SLUG,
    WATCH,
    Case,
    Gate,
    agents_yaml,
    wait_for,
)


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
