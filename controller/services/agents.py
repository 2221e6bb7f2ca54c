"""Agent bindings as the API shows them: which watches an agent depends on, and its policy.

An agent is addressed by its id (the `id` of agents.yaml) or its slug, within the caller's
org. A watch reference that points at nothing is shown unresolved and fails the agent's
preflight closed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from controller.errors import NotFound
from controller.model.base import ApiModel
from controller.model.watch import ManagedBy
from controller.reconcile import binding_conditions
from controller.store.models import Agent


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
    managed = None
    if agent.managed_source is not None:
        managed = ManagedBy(
            source=agent.managed_source, path=agent.managed_path, revision=agent.managed_revision
        )
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
        managed_by=managed,
        created_at=agent.created_at,
        updated_at=agent.updated_at,
    )
