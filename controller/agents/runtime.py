"""Agent runtime lifecycle: `running` or `killed`, and the signed events that say so.

States (docs/run-gate.md):
- `running`: the default; preflight decides by the watches and the policy.
- `killed`: the orchestrator was told to stop the agent's in-flight runs
  (`agent.contract.blocked` with action `kill_in_flight`). Preflight answers 409 until the
  agent is unblocked. `runtime_reason` says why: `breaking_drift` (a watch bound under a
  `kill_in_flight` policy turned drifted) or `manual` (`POST /api/agents/<id>/kill`).

Moves: drift or kill -> killed; unblock, or an accepted acknowledgement of a drift kill ->
running (`agent.unblocked`). Every move is written with its outbox events in the caller's
transaction, so an event is never sent for a move that did not happen.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.agents.actions import ACTIONS, KILL_IN_FLIGHT, Drift, PolicyActions
from controller.agents.policy import resolve_policy
from controller.crypto import SecretBox
from controller.events.outbox import emit
from controller.store import audit
from controller.store.models import Agent, AgentWatch, Incident, Watch

RUNNING = "running"
KILLED = "killed"


def bound_agents(session: Session, watch_id: str) -> list[Agent]:
    """The agents with a binding to the watch, by id."""
    return list(
        session.scalars(
            select(Agent)
            .where(Agent.id.in_(select(AgentWatch.agent_id).where(AgentWatch.watch_id == watch_id)))
            .order_by(Agent.key)
        )
    )


def affected_agent_ids(session: Session, watch_id: str) -> list[str]:
    """The ids (agents.yaml `id`) of the agents bound to a watch: `affectedAgentIds` of alerts."""
    return list(
        session.scalars(
            select(Agent.key)
            .join(AgentWatch, AgentWatch.agent_id == Agent.id)
            .where(AgentWatch.watch_id == watch_id)
            .distinct()
            .order_by(Agent.key)
        )
    )


def kill(
    session: Session,
    box: SecretBox,
    agent: Agent,
    now: datetime,
    *,
    reason: str,
    by: str,
    note: str | None = None,
    watch: Watch | None = None,
    incident: Incident | None = None,
    agent_actions: list[str] | None = None,
) -> bool:
    """Mark the agent killed and send `agent.contract.blocked`; False when it already was."""
    if agent.runtime_state == KILLED:
        return False
    _move(agent, KILLED, reason, note, by, now)
    data: dict[str, Any] = {
        "agentId": agent.key,
        "slug": agent.slug,
        "environment": agent.environment,
        "policy": agent.policy,
        "action": KILL_IN_FLIGHT,
        "reason": reason,
        "note": note,
        "watchId": watch.id if watch else None,
        "watchName": watch.name if watch else None,
        "incidentId": incident.id if incident else None,
        "agentActions": agent_actions or [],
    }
    _emit(session, box, agent, "agent.contract.blocked", data, now)
    return True


def unblock(
    session: Session, box: SecretBox, agent: Agent, now: datetime, *, by: str, note: str | None
) -> bool:
    """Back to running with `agent.unblocked`; False when the agent was not killed."""
    if agent.runtime_state != KILLED:
        return False
    was = agent.runtime_reason
    _move(agent, RUNNING, "unblocked", note, by, now)
    data = {
        "agentId": agent.key,
        "slug": agent.slug,
        "environment": agent.environment,
        "policy": agent.policy,
        "previousReason": was,
        "note": note,
    }
    _emit(session, box, agent, "agent.unblocked", data, now)
    return True


def on_drift(
    session: Session,
    box: SecretBox,
    watch: Watch,
    incident: Incident,
    agent_actions: list[str],
    now: datetime,
    actions: PolicyActions = ACTIONS,
) -> list[str]:
    """A watch just turned drifted: run the drift effect of every action in each bound
    agent's `on_breaking` (today only `kill_in_flight` has one: it kills the agent).

    Returns the ids of the agents an effect changed now (killed).
    """
    drift = Drift(session, box, watch, incident, agent_actions, now)
    changed = []
    for agent in bound_agents(session, watch.id):
        policy = resolve_policy(agent.policy, agent.policy_rules)
        acted = False
        for name in policy.on_breaking:
            action = actions.get(name)
            if action is not None and action.on_drift is not None:
                acted = action.on_drift(drift, agent) or acted
        if acted:
            changed.append(agent.key)
    return changed


def kill_on_drift(drift: Drift, agent: Agent) -> bool:
    """`kill_in_flight`'s effect: the agent is killed for breaking drift (once), and the
    audit log says so (actor `system`): the activity timeline shows kills from there."""
    killed = kill(
        drift.session,
        drift.box,
        agent,
        drift.now,
        reason="breaking_drift",
        by="system",
        watch=drift.watch,
        incident=drift.incident,
        agent_actions=drift.agent_actions,
    )
    if killed:
        audit.record(
            drift.session,
            actor="system",
            action="agent.kill",
            target_type="agent",
            target_id=agent.key,
            org_id=agent.org_id,
            details={
                "cause": "breaking_drift",
                "watchId": drift.watch.id,
                "incidentId": drift.incident.id,
                "runtimeState": agent.runtime_state,
            },
            at=drift.now,
        )
    return killed


def _move(agent: Agent, state: str, reason: str, note: str | None, by: str, now: datetime) -> None:
    agent.runtime_state = state
    agent.runtime_reason = reason
    agent.runtime_note = note
    agent.runtime_changed_at = now
    agent.runtime_changed_by = by


def _emit(
    session: Session,
    box: SecretBox,
    agent: Agent,
    event_type: str,
    data: dict[str, Any],
    now: datetime,
) -> None:
    # To the orchestrator at the agent's runtime webhook (signed like every webhook) and to
    # the org's default destination; never to the watch's own webhook.
    emit(
        session,
        box,
        org_id=agent.org_id,
        event_type=event_type,
        data=data,
        now=now,
        extra_destinations=[agent.runtime_webhook] if agent.runtime_webhook else (),
    )


# The kill is I/O, so `controller.agents.actions` (read by the pure run gate) names the action and
# this module, which owns the kill, gives it its effect; `on_drift` is only reachable here.
ACTIONS.attach(KILL_IN_FLIGHT, kill_on_drift)
