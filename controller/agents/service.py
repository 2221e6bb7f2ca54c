"""Agent bindings as the API shows them: which watches an agent depends on, and its policy.

An agent is addressed by its id (the `id` of agents.yaml) or its slug, within the caller's
org. A watch reference that points at nothing is shown unresolved and fails the agent's
preflight closed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ClassVar

from pydantic import Field
from sqlalchemy import or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from controller.agents import runtime
from controller.agents.policy import PRESETS, Policy, decide, reasons_at, resolve_policy
from controller.crypto import SecretBox
from controller.drift import acknowledgement_service as acknowledgement
from controller.drift.incidents import ACTIVE
from controller.drift.service import incident_summary
from controller.errors import Conflict, NotFound, Unprocessable, agent_not_found
from controller.gate.statements import agent_gate_input
from controller.gitsources.reconcile import binding_conditions
from controller.model.base import ApiModel, RequestModel
from controller.model.conditions import Condition
from controller.model.managed import ensure_unmanaged, managed_by
from controller.model.principal import Principal
from controller.model.watch import IncidentSummary, ManagedBy, Note
from controller.store import audit
from controller.store.models import Agent, AgentWatch, Incident, Watch
from controller.watches.service import get_watch


class AgentWatchOut(ApiModel):
    ref: str
    watch_id: str | None
    resolved: bool


class ApprovalRuleOut(ApiModel):
    """Who may acknowledge the agent's incidents (agents.yaml `approvals`)."""

    repository: str
    branches: list[str]


class PolicyRulesOut(ApiModel):
    """A custom policy's rules as declared (agents.yaml `policies`)."""

    on_breaking: list[str]
    on_warning: list[str]
    require_ack_to_unblock: bool
    auto_resolve_incident: bool


class AgentOut(ApiModel):
    # The component name /openapi.json published before the code moved (web/routes.py).
    published_name: ClassVar[str] = "controller__services__agents__AgentOut"
    id: str
    slug: str
    name: str | None
    environment: str | None
    policy: str
    policy_rules: PolicyRulesOut | None = Field(description="a custom policy's rules")
    runtime_webhook: str | None
    repo_ref: str | None
    vendored_paths: dict[str, str] = Field(
        default_factory=dict,
        description="watch -> the path of its contract's copy in repoRef (draft pull requests)",
    )
    approvals: list[ApprovalRuleOut] = Field(description="remediation approval rules")
    runtime_state: str = Field(description="`running` or `killed` (the status tells why)")
    watches: list[AgentWatchOut]
    conditions: list[Condition]
    managed_by: ManagedBy | None
    created_at: datetime
    updated_at: datetime


class AgentList(ApiModel):
    agents: list[AgentOut]


def get_agent(session: Session, org_id: str, id_or_slug: str) -> Agent:
    agent = session.scalar(
        select(Agent).where(
            Agent.org_id == org_id, or_(Agent.key == id_or_slug, Agent.slug == id_or_slug)
        )
    )
    if agent is None:
        raise agent_not_found(id_or_slug)
    return agent


def list_agents(session: Session, org_id: str) -> AgentList:
    agents = session.scalars(select(Agent).where(Agent.org_id == org_id).order_by(Agent.key))
    return AgentList(agents=[agent_out(a) for a in agents])


def agent_out(agent: Agent) -> AgentOut:
    return AgentOut(
        id=agent.key,
        slug=agent.slug,
        name=agent.name,
        environment=agent.environment,
        policy=agent.policy,
        policy_rules=PolicyRulesOut.model_validate(agent.policy_rules)
        if agent.policy_rules
        else None,
        runtime_webhook=agent.runtime_webhook,
        repo_ref=agent.repo_ref,
        vendored_paths=agent.vendored_paths or {},
        approvals=[ApprovalRuleOut.model_validate(rule) for rule in agent.approvals or []],
        runtime_state=agent.runtime_state,
        watches=[
            AgentWatchOut(ref=b.ref, watch_id=b.watch_id, resolved=b.watch_id is not None)
            for b in agent.bindings
        ],
        conditions=[Condition.model_validate(c) for c in binding_conditions(agent.bindings)],
        managed_by=managed_by(agent),
        created_at=agent.created_at,
        updated_at=agent.updated_at,
    )


def bind(
    session: Session,
    principal: Principal,
    key: str,
    watch: Watch,
    *,
    policy: str,
    slug: str | None = None,
    name: str | None = None,
    environment: str | None = None,
) -> Agent:
    """Bind `watch` to the API agent `key`, creating the agent (with `policy`) when it is new.

    An existing agent keeps its policy: a policy belongs to the agent, not to one binding.
    Agents declared in git are read-only here (409).
    """
    agent = session.scalar(select(Agent).where(Agent.org_id == principal.org_id, Agent.key == key))
    created = agent is None
    if agent is None:
        agent = Agent(
            org_id=principal.org_id,
            key=key,
            slug=slug or key,
            name=name,
            environment=environment,
            policy=policy,
            bindings=[],
        )
        session.add(agent)
    else:
        ensure_unmanaged(agent, "agent", agent.key)
    agent.bindings.append(AgentWatch(position=len(agent.bindings), ref=watch.id, watch_id=watch.id))
    try:
        session.flush()
    except IntegrityError:
        raise Conflict(
            f"another agent already uses the slug {agent.slug!r}", code="duplicate_slug"
        ) from None
    audit.by(
        session,
        principal,
        "agent.create" if created else "agent.bind",
        agent.key,
        {"watchId": watch.id, "policy": agent.policy},
    )
    return agent


# Status and runtime lifecycle.


class PolicyOut(ApiModel):
    name: str
    on_breaking: list[str]
    on_warning: list[str]
    require_ack_to_unblock: bool
    auto_resolve_incident: bool
    enforcing: list[str]


def _policy_out(policy: Policy) -> PolicyOut:
    return PolicyOut(
        name=policy.name,
        on_breaking=list(policy.on_breaking),
        on_warning=list(policy.on_warning),
        require_ack_to_unblock=policy.require_ack_to_unblock,
        auto_resolve_incident=policy.auto_resolve_incident,
        enforcing=list(policy.enforcing),
    )


class RuntimeOut(ApiModel):
    state: str = Field(description="`running` or `killed`")
    reason: str | None = Field(description="`breaking_drift`, `manual` or `unblocked`")
    note: str | None
    changed_at: datetime | None
    changed_by: str | None


class BoundWatch(ApiModel):
    ref: str
    watch_id: str
    name: str
    drift_status: str
    reasons: list[str]
    blocking: bool = Field(description="this watch blocks the agent's preflight now")
    incident_id: str | None
    incident_status: str | None
    last_checked_at: datetime | None


class GateOut(ApiModel):
    allowed: bool
    policy_blocked: bool
    reasons: list[str] = Field(
        description="agent-level reasons: agent_killed, unresolved_reference"
    )


class AgentStatus(ApiModel):
    agent: AgentOut
    policy: PolicyOut
    runtime: RuntimeOut
    watches: list[BoundWatch]
    open_incidents: list[IncidentSummary]
    unresolved_references: list[str]
    agent_actions: list[str]
    preflight: GateOut


class AgentNote(RequestModel):
    note: Note | None = None


class AgentAck(acknowledgement.AckEvidence):
    """Body of `POST /api/agents/<id>/ack`; `repository` and `branch` are checked against the
    approval rules of the agents the acknowledgement unblocks, this one first."""


class AckOut(ApiModel):
    acknowledged: list[str] = Field(description="incident ids acknowledged by this call")
    approval: ApprovalRuleOut | None = Field(description="the approval rule that accepted it")
    approval_verified: bool = Field(
        description="always false: the `repository` and `branch` of an acknowledgement are "
        "the caller's statement, matched against the rules but not checked with GitHub (a "
        "merged draft pull request is judged on GitHub's signed word: docs/run-gate.md)",
    )
    status: AgentStatus


class AffectedAgent(ApiModel):
    id: str
    slug: str
    environment: str | None
    policy: str
    enforcing: list[str]
    runtime_state: str


class AffectedAgents(ApiModel):
    watch_id: str
    agents: list[AffectedAgent]


def agent_status(
    session: Session, org_id: str, id_or_slug: str, now: datetime | None = None
) -> AgentStatus:
    """The agent, its bound watches and what its preflight would answer at `now` (the
    clock's when not given)."""
    now = now or datetime.now(UTC)
    agent = get_agent(session, org_id, id_or_slug)
    gate, ids, states = agent_gate_input(session, org_id, agent.key)
    decision = decide(ids, states, now=now, agent=gate, dry_run=True)
    blocking = {row.watch_id for row in decision.blocked}
    refs = {b.watch_id: b.ref for b in agent.bindings if b.watch_id is not None}
    # The gate's states carry what a decision needs; a healthy watch's is a shared entry with
    # neither name nor last check. Those are read from the watches themselves.
    own = {
        row.id: row
        for row in session.execute(
            select(Watch.id, Watch.name, Watch.last_checked_at).where(
                Watch.org_id == org_id, Watch.id.in_(ids)
            )
        )
    }
    watches = [
        BoundWatch(
            ref=refs.get(watch_id, watch_id),
            watch_id=watch_id,
            name=own[watch_id].name,
            drift_status=states[watch_id].drift_status,
            reasons=reasons_at(states[watch_id], now),
            blocking=watch_id in blocking,
            incident_id=states[watch_id].incident_id,
            incident_status=states[watch_id].incident_status,
            last_checked_at=own[watch_id].last_checked_at,
        )
        for watch_id in dict.fromkeys(ids)
        if watch_id in own
    ]
    incidents = session.scalars(
        select(Incident)
        .where(Incident.watch_id.in_(list(states)), Incident.status.in_(ACTIVE))
        .order_by(Incident.opened_at)
    )
    actions = sorted(
        {a for row in decision.blocked for a in row.agent_actions} | set(decision.agent_actions)
    )
    return AgentStatus(
        agent=agent_out(agent),
        policy=_policy_out(gate.policy),
        runtime=RuntimeOut(
            state=agent.runtime_state,
            reason=agent.runtime_reason,
            note=agent.runtime_note,
            changed_at=agent.runtime_changed_at,
            changed_by=agent.runtime_changed_by,
        ),
        watches=watches,
        open_incidents=[incident_summary(i) for i in incidents],
        unresolved_references=list(gate.unresolved),
        agent_actions=actions,
        preflight=GateOut(
            allowed=decision.allowed,
            policy_blocked=decision.would_policy_block,
            reasons=decision.agent_reasons,
        ),
    )


# A change of an agent's runtime state asked for by a caller (kill, unblock).
RuntimeChange = Callable[[Session, Principal, str, str | None, SecretBox, datetime], Agent]


def kill_agent(
    session: Session,
    principal: Principal,
    id_or_slug: str,
    note: str | None,
    box: SecretBox,
    now: datetime,
) -> Agent:
    """Runtime state `killed` and a signed `agent.contract.blocked` (`kill_in_flight`)."""
    agent = get_agent(session, principal.org_id, id_or_slug)
    if runtime.kill(session, box, agent, now, reason="manual", by=principal.actor, note=note):
        _audit_runtime(session, principal, agent, "agent.kill", note)
    return agent


def unblock_agent(
    session: Session,
    principal: Principal,
    id_or_slug: str,
    note: str | None,
    box: SecretBox,
    now: datetime,
) -> Agent:
    """Back to `running` (`agent.unblocked`). A policy that requires acknowledgement refuses
    while an incident of a bound watch is still open (409 `ack_required`)."""
    agent = get_agent(session, principal.org_id, id_or_slug)
    policy = resolve_policy(agent.policy, agent.policy_rules)
    if agent.runtime_state == runtime.KILLED and policy.require_ack_to_unblock:
        open_ids = _incidents(session, agent, ("open",))
        if open_ids:
            raise Conflict(
                f"policy {agent.policy!r} requires the open incidents to be acknowledged first"
                f" (POST /api/agents/{agent.key}/ack)",
                code="ack_required",
                details=[{"incidentId": i.id, "watchId": i.watch_id} for i in open_ids],
            )
    if runtime.unblock(session, box, agent, now, by=principal.actor, note=note):
        _audit_runtime(session, principal, agent, "agent.unblock", note)
    return agent


def ack_agent(
    session: Session,
    principal: Principal,
    id_or_slug: str,
    data: AgentAck,
    box: SecretBox,
    now: datetime,
) -> tuple[Agent, list[str], dict[str, Any] | None]:
    """Acknowledge the open incidents of the agent's watches (audited) through the one
    acknowledgement decision: the approval rules of this agent and of every other agent the
    acknowledgement unblocks must accept the repository and branch (else 403). An agent
    killed by drift runs again once nothing it depends on is unacknowledged."""
    agent = get_agent(session, principal.org_id, id_or_slug)
    acked = acknowledgement.acknowledge_agent(session, principal, agent, data, box, now)
    return agent, [i.id for i in acked.incidents], acked.approvals.get(agent.key)


def affected_agents(session: Session, org_id: str, watch_id: str) -> AffectedAgents:
    watch = get_watch(session, org_id, watch_id)
    agents = []
    for agent in runtime.bound_agents(session, watch.id):
        policy = resolve_policy(agent.policy, agent.policy_rules)
        agents.append(
            AffectedAgent(
                id=agent.key,
                slug=agent.slug,
                environment=agent.environment,
                policy=agent.policy,
                enforcing=list(policy.enforcing),
                runtime_state=agent.runtime_state,
            )
        )
    return AffectedAgents(watch_id=watch.id, agents=agents)


def _incidents(session: Session, agent: Agent, statuses: tuple[str, ...]) -> list[Incident]:
    watch_ids = [b.watch_id for b in agent.bindings if b.watch_id is not None]
    if not watch_ids:
        return []
    return list(
        session.scalars(
            select(Incident)
            .where(Incident.watch_id.in_(watch_ids), Incident.status.in_(statuses))
            .order_by(Incident.opened_at, Incident.id)
        )
    )


def _audit_runtime(
    session: Session, principal: Principal, agent: Agent, action: str, note: str | None
) -> None:
    audit.by(
        session, principal, action, agent.key, {"note": note, "runtimeState": agent.runtime_state}
    )


def policy_presets() -> list[str]:
    """The names of the policy presets a new agent may take."""
    return sorted(PRESETS)


def edit_agent(
    session: Session,
    principal: Principal,
    id_or_slug: str,
    *,
    policy: str,
    name: str | None,
    environment: str | None,
) -> Agent:
    """Change an API-managed agent's policy preset, name and environment (audited); agents
    declared in git change in git (409)."""
    agent = get_agent(session, principal.org_id, id_or_slug)
    ensure_unmanaged(agent, "agent", agent.key)
    if policy not in PRESETS:
        raise Unprocessable(
            f"unknown policy {policy!r} (one of: {', '.join(sorted(PRESETS))})",
            code="unknown_policy",
        )
    before = {"policy": agent.policy, "name": agent.name, "environment": agent.environment}
    agent.policy, agent.name, agent.environment = policy, name, environment
    agent.policy_rules = None
    audit.by(
        session,
        principal,
        "agent.update",
        agent.key,
        {"before": before, "after": {"policy": policy, "name": name, "environment": environment}},
    )
    return agent


def unbind(session: Session, principal: Principal, id_or_slug: str, watch_id: str) -> Agent:
    """Take one watch off an API-managed agent (audited); 404 when it is not bound."""
    agent = get_agent(session, principal.org_id, id_or_slug)
    ensure_unmanaged(agent, "agent", agent.key)
    kept = [b for b in agent.bindings if b.watch_id != watch_id]
    if len(kept) == len(agent.bindings):
        raise NotFound(f"watch {watch_id!r} is not bound to agent {agent.key!r}")
    agent.bindings = kept
    for position, binding in enumerate(agent.bindings):
        binding.position = position
    audit.by(session, principal, "agent.unbind", agent.key, {"watchId": watch_id})
    return agent
