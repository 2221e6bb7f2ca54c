"""Who is blocked now: the agents whose runs the gate refuses (killed ones among them), the git
sources that do not reconcile, and the destinations whose deliveries fail, each with why.

Nothing is decided here. An agent is blocked when its preflight would not allow it now: the
gate's own decision on the gate's own read model (`controller.gate.service.agents_now`). A
source's state comes from its conditions and runs (`controller.gitsources.service`), a
destination's from the outbox (`controller.notifications.deliveries_service`). This module
puts them side by side in words, for the console's overview and a watch's page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.agents.policy import STALE, Row
from controller.agents.runtime import bound_agents
from controller.crypto import SecretBox
from controller.gate.service import AgentNow, agents_now
from controller.gitsources.service import StalledSource, stalled_sources
from controller.model.watch import FAILURE_LABELS, FailureClass
from controller.notifications.deliveries_service import FailingDestination, failing_destinations
from controller.settings import Settings
from controller.store.db import Database
from controller.store.models import Agent, Watch


@dataclass(frozen=True)
class WatchBlock:
    """A watch that blocks an agent, and why in words."""

    watch_id: str
    name: str
    why: str


@dataclass(frozen=True)
class BlockedAgent:
    """An agent whose preflight would not allow a run now."""

    key: str
    name: str
    policy: str
    runtime_state: str
    enforced: bool  # an enforcing policy blocks (the API would answer 409), not only advises
    killed_by: str | None  # who or what killed it (`breaking drift`, an actor), when it is
    killed_at: datetime | None
    unresolved: list[str]
    watches: list[WatchBlock]

    @property
    def why(self) -> str:
        """The reasons in one line: killed, the watches that block it, unresolved refs."""
        return self.why_beside()

    def why_beside(self, this_watch: str | None = None) -> str:
        """`why`, on the page of `this_watch`: that watch is "this watch"."""
        parts = [f"killed by {self.killed_by}"] if self.killed_by else []
        parts += [
            f"{'this watch' if w.watch_id == this_watch else w.name}: {w.why}" for w in self.watches
        ]
        if self.unresolved:
            parts.append(f"references that name no watch: {', '.join(self.unresolved)}")
        return "; ".join(parts) or "blocked"


@dataclass(frozen=True)
class BlockedNow:
    agents: list[BlockedAgent] = field(default_factory=list)
    sources: list[StalledSource] = field(default_factory=list)
    deliveries: list[FailingDestination] = field(default_factory=list)
    watch_names: dict[str, str] = field(default_factory=dict)  # of the failing deliveries

    @property
    def nothing(self) -> bool:
        return not (self.agents or self.sources or self.deliveries)


def blocked_now(
    session: Session,
    database: Database,
    settings: Settings,
    box: SecretBox,
    org_id: str,
    now: datetime,
) -> BlockedNow:
    """The org's blocked agents, stalled sources and failing destinations at `now`."""
    answers = [a for a in agents_now(database, org_id, now) if a.blocked]
    deliveries = failing_destinations(session, box, org_id, now)
    about = {w for d in deliveries for w in d.watch_ids}
    return BlockedNow(
        agents=_blocked_agents(session, org_id, answers),
        sources=stalled_sources(session, settings, org_id, now),
        deliveries=deliveries,
        watch_names=_watch_names(session, org_id, about),
    )


@dataclass(frozen=True)
class BoundAgent:
    """An agent bound to a watch, as the watch's page lists it."""

    key: str
    name: str
    policy: str
    runtime_state: str
    blocked: bool  # its preflight would not allow a run now, for whatever reason
    by_this_watch: bool  # this watch is among the reasons
    why: str  # the reasons in words ("" when it may run)


def watch_agents(
    session: Session, database: Database, org_id: str, watch_id: str, now: datetime
) -> list[BoundAgent]:
    """The agents bound to the watch (by id), each with whether the gate blocks it now."""
    agents = bound_agents(session, watch_id)
    if not agents:
        return []
    answers = {a.key: a for a in agents_now(database, org_id, now, {a.key for a in agents})}
    blocked = {
        b.key: b
        for b in _blocked_agents(
            session, org_id, [a for a in answers.values() if a.blocked], agents
        )
    }
    listed = []
    for agent in agents:
        found = blocked.get(agent.key)
        listed.append(
            BoundAgent(
                key=agent.key,
                name=agent.name or agent.slug,
                policy=agent.policy,
                runtime_state=agent.runtime_state,
                blocked=found is not None,
                by_this_watch=found is not None
                and any(w.watch_id == watch_id for w in found.watches),
                why=found.why_beside(watch_id) if found is not None else "",
            )
        )
    return listed


# -- words -------------------------------------------------------------------------------------


def reason_words(reason: str) -> str:
    """A preflight reason token in words."""
    if reason == STALE:
        return "checks stale (nothing vouches for its state)"
    kind, _, detail = reason.partition(":")
    if kind == "check_failed":
        try:
            label = FAILURE_LABELS[FailureClass(detail)]
        except ValueError:
            label = ""
        return f"last check failed ({label.lower()})" if label else "last check failed"
    if kind == "policy_block":
        return f"the policy blocks new runs ({detail})"
    return _WORDS.get(reason, reason.replace("_", " "))


_WORDS = {
    "breaking_drift": "breaking drift, not acknowledged",
    "never_checked": "never checked yet",
    "disabled": "paused",
    "not_found": "no such watch",
}


def _killed_by(agent: Agent | None) -> str:
    if agent is None:
        return "someone"
    if agent.runtime_reason == "breaking_drift":
        return "breaking drift"
    return agent.runtime_changed_by or "someone"


def _blocked_agents(
    session: Session,
    org_id: str,
    answers: Sequence[AgentNow],
    rows: Sequence[Agent] | None = None,
) -> list[BlockedAgent]:
    """The blocked agents in words, with their stored names and how they were killed (read
    in one query unless `rows` holds them)."""
    if not answers:
        return []
    if rows is None:
        keys = [a.key for a in answers]
        rows = list(
            session.scalars(select(Agent).where(Agent.org_id == org_id, Agent.key.in_(keys)))
        )
    stored = {row.key: row for row in rows}
    blocked = []
    for answer in answers:
        row = stored.get(answer.key)
        killed = answer.runtime_state == "killed"
        blocked.append(
            BlockedAgent(
                key=answer.key,
                name=(row.name if row is not None else None) or answer.slug,
                policy=answer.policy.name,
                runtime_state=answer.runtime_state,
                enforced=answer.decision.would_policy_block,
                killed_by=_killed_by(row) if killed else None,
                killed_at=row.runtime_changed_at if row is not None and killed else None,
                unresolved=list(answer.unresolved),
                watches=[_watch_block(r) for r in answer.decision.blocked],
            )
        )
    return blocked


def _watch_block(row: Row) -> WatchBlock:
    policy = [r for r in row.reasons if r.startswith("policy_block:")]
    own = [reason_words(r) for r in row.reasons if r not in policy]
    if policy:
        actions = ", ".join(r.partition(":")[2] for r in policy)
        own.append(f"the policy blocks new runs ({actions})")
    return WatchBlock(row.watch_id, row.name or row.watch_id, "; ".join(own))


def _watch_names(session: Session, org_id: str, ids: set[str]) -> dict[str, str]:
    if not ids:
        return {}
    rows = session.execute(
        select(Watch.id, Watch.name).where(Watch.org_id == org_id, Watch.id.in_(ids))
    )
    return {row.id: row.name for row in rows}
