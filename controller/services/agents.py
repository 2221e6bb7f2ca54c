"""Agent bindings as the API shows them: which watches an agent depends on, and its policy.

An agent is addressed by its id (the `id` of agents.yaml) or its slug, within the caller's
org. A watch reference that points at nothing is shown unresolved and fails the agent's
preflight closed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from controller.errors import Conflict, NotFound
from controller.model.base import ApiModel
from controller.model.watch import ManagedBy
from controller.reconcile import binding_conditions
from controller.services import audit
from controller.services.auth import Principal
from controller.services.managed import ensure_unmanaged, managed_by
from controller.store.models import Agent, AgentWatch, Watch


class AgentWatchOut(ApiModel):
    ref: str
    watch_id: str | None
    resolved: bool


class AgentOut(ApiModel):
    id: str
    slug: str
    name: str | None
    environment: str | None
    policy: str
    policy_rules: dict[str, Any] | None
    runtime_webhook: str | None
    repo_ref: str | None
    watches: list[AgentWatchOut]
    conditions: list[dict[str, Any]]
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
        raise NotFound("Agent not found")
    return agent


def list_agents(session: Session, org_id: str) -> AgentList:
    agents = session.scalars(select(Agent).where(Agent.org_id == org_id).order_by(Agent.key))
    return AgentList(agents=[to_out(a) for a in agents])


def to_out(agent: Agent) -> AgentOut:
    return AgentOut(
        id=agent.key,
        slug=agent.slug,
        name=agent.name,
        environment=agent.environment,
        policy=agent.policy,
        policy_rules=agent.policy_rules,
        runtime_webhook=agent.runtime_webhook,
        repo_ref=agent.repo_ref,
        watches=[
            AgentWatchOut(ref=b.ref, watch_id=b.watch_id, resolved=b.watch_id is not None)
            for b in agent.bindings
        ],
        conditions=binding_conditions(agent.bindings),
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
    audit.record(
        session,
        actor=principal.actor,
        action="agent.create" if created else "agent.bind",
        target_type="agent",
        target_id=agent.key,
        org_id=principal.org_id,
        details={"watchId": watch.id, "policy": agent.policy},
    )
    return agent
