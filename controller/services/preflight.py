"""`POST /api/preflight`: one read of the watches (and the agent) in a single statement, the
pure decision of `controller.policy`, and one insert that records the decision for audit.

No fetch, diff or lock happens here; a single SELECT is one consistent state of the store, so
an answer never mixes two moments even while checks change statuses.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema
from sqlalchemy import bindparam, insert, or_, select
from sqlalchemy.orm import Session

from controller.errors import NotFound
from controller.logs import log
from controller.model.base import ApiModel, RequestModel
from controller.model.watch import Label, ObjectId, ShortNote, refuse_null
from controller.policy import (
    WATCH_ID_LIMIT,
    AgentState,
    Decision,
    WatchState,
    decide,
    resolve_policy,
)
from controller.services.auth import Principal
from controller.store.models import (
    Agent,
    AgentWatch,
    DriftEvent,
    Incident,
    PreflightDecision,
    Watch,
    new_id,
)

logger = logging.getLogger("driftgate.preflight")

WatchId = ObjectId


class IgnoreEntry(RequestModel):
    watch_id: WatchId
    reason: ShortNote


class PreflightRequest(RequestModel):
    """`{watchIds}` (at most 100; `[]` is allowed) or `{agentId}`, plus `ignore` and `dryRun`."""

    model_config = RequestModel.model_config | {
        "json_schema_extra": {"oneOf": [{"required": ["watchIds"]}, {"required": ["agentId"]}]}
    }

    watch_ids: Annotated[list[WatchId], Field(max_length=WATCH_ID_LIMIT)] | SkipJsonSchema[None] = (
        None
    )
    agent_id: Label | SkipJsonSchema[None] = None
    ignore: Annotated[list[IgnoreEntry], Field(max_length=WATCH_ID_LIMIT)] = Field(
        default_factory=list, description="watches not to block on, each with a reason"
    )
    dry_run: bool = Field(default=False, description="evaluate and record; never answer 409")

    @field_validator("watch_ids", "agent_id", mode="before")
    @classmethod
    def _not_null(cls, value: object) -> object:
        return refuse_null(value)

    @model_validator(mode="after")
    def _one_of(self) -> PreflightRequest:
        if (self.watch_ids is None) == (self.agent_id is None):
            raise ValueError("send `watchIds` or `agentId` (one of them)")
        return self


class BlockedRow(ApiModel):
    watch_id: str
    name: str | None = Field(description="null for `not_found`")
    drift_status: str | None = Field(description="null for `not_found`")
    reasons: list[str]
    agent_actions: list[str]
    last_checked_at: datetime | None
    incident_id: str | None


class IgnoredRow(BlockedRow):
    ignore_reason: str


class AgentGate(ApiModel):
    id: str
    slug: str
    policy: str
    runtime_state: str
    reasons: list[str] = Field(description="`agent_killed`, `unresolved_reference`")
    agent_actions: list[str]
    unresolved_references: list[str]


class PreflightResult(ApiModel):
    allowed: bool
    blocked: list[BlockedRow]
    ignored: list[IgnoredRow]
    duration_ms: int
    policy_blocked: bool = Field(description="true exactly when the status is 409")
    would_policy_block: bool = Field(description="an enforcing policy blocks (also in dryRun)")
    dry_run: bool
    decision_id: str
    evaluated_at: datetime
    agent: AgentGate | None


_WATCH_COLUMNS = (
    Watch.id,
    Watch.name,
    Watch.drift_status,
    Watch.failure_class,
    Watch.last_checked_at,
    Watch.incident_id,
    Incident.status,
    DriftEvent.agent_actions,
)

_BY_IDS = (
    select(*_WATCH_COLUMNS)
    .outerjoin(Incident, Incident.id == Watch.incident_id)
    .outerjoin(DriftEvent, DriftEvent.id == Incident.drift_event_id)
    .where(
        Watch.id.in_(bindparam("ids", expanding=True)),
        # `org_id || ''` keeps SQLite's planner (no statistics) on the primary key: on the
        # org index it would read every watch of the org to find 100.
        Watch.org_id.concat("") == bindparam("org"),
    )
)

_BY_AGENT = (
    select(
        Agent.key,
        Agent.slug,
        Agent.policy,
        Agent.policy_rules,
        Agent.runtime_state,
        AgentWatch.ref,
        AgentWatch.watch_id,
        *_WATCH_COLUMNS,
    )
    .outerjoin(AgentWatch, AgentWatch.agent_id == Agent.id)
    .outerjoin(Watch, Watch.id == AgentWatch.watch_id)
    .outerjoin(Incident, Incident.id == Watch.incident_id)
    .outerjoin(DriftEvent, DriftEvent.id == Incident.drift_event_id)
    .where(
        Agent.org_id == bindparam("org"),
        or_(Agent.key == bindparam("agent"), Agent.slug == bindparam("agent")),
    )
    .order_by(Agent.key, AgentWatch.position)
)

_RECORD = insert(PreflightDecision)


OK = WatchState(
    id="",
    name="",
    drift_status="ok",
    failure_class=None,
    last_checked_at=None,
    incident_id=None,
    incident_status=None,
)


def _state(row: Sequence[Any], offset: int = 0) -> WatchState:
    (wid, name, status, failure, checked, incident_id, incident_status, actions) = row[offset:]
    return WatchState(
        id=wid,
        name=name,
        drift_status=status,
        failure_class=failure,
        last_checked_at=checked,
        incident_id=incident_id,
        incident_status=incident_status,
        change_actions=tuple(actions or ()),
    )


def watch_states(session: Session, org_id: str, ids: Sequence[str]) -> dict[str, WatchState]:
    if not ids:
        return {}
    rows = (
        session.connection()
        .execute(_BY_IDS, {"org": org_id, "ids": list(dict.fromkeys(ids))})
        .all()
    )
    # Most watches are `ok` and never reach a row of the answer: they share one state.
    return {row[0]: OK if row[2] == "ok" else _state(row) for row in rows}


def agent_gate_input(
    session: Session, org_id: str, agent_id: str
) -> tuple[AgentState, list[str], dict[str, WatchState]]:
    """The agent (by id, else slug), its bound watch ids in order, and their states."""
    rows = session.connection().execute(_BY_AGENT, {"org": org_id, "agent": agent_id}).all()
    if not rows:
        raise NotFound("Agent not found")
    # An id wins over another agent's equal slug.
    key = next((r[0] for r in rows if r[0] == agent_id), rows[0][0])
    rows = [r for r in rows if r[0] == key]
    first = rows[0]
    ids: list[str] = []
    states: dict[str, WatchState] = {}
    unresolved: list[str] = []
    for row in rows:
        ref, watch_id = row[5], row[6]
        if ref is None:
            continue  # an agent with no bindings
        if watch_id is None:
            unresolved.append(ref)
            continue
        ids.append(watch_id)
        states[watch_id] = _state(row, 7)
    agent = AgentState(
        key=first[0],
        slug=first[1],
        policy=resolve_policy(first[2], first[3]),
        runtime_state=first[4],
        unresolved=tuple(unresolved),
    )
    return agent, ids, states


def preflight(
    session: Session,
    principal: Principal,
    request: PreflightRequest,
    now: datetime,
    started: float,
) -> tuple[int, dict[str, Any]]:
    """Decide on one read, then record the decision and log `preflight.complete`.

    The read ends before the write: on SQLite the request holds the write lock only for the
    one INSERT, not for the whole request. Returns the status and the JSON answer (the
    `PreflightResult` shape, built directly: this is the hot path).
    """
    agent: AgentState | None = None
    if request.agent_id is not None:
        agent, ids, states = agent_gate_input(session, principal.org_id, request.agent_id)
    else:
        ids = list(request.watch_ids or [])
        states = watch_states(session, principal.org_id, ids)
    session.commit()
    ignore = {entry.watch_id: entry.reason for entry in request.ignore}
    decision = decide(ids, states, agent=agent, ignore=ignore, dry_run=request.dry_run)
    decision_id = new_id()
    blocked = [row.to_json() for row in decision.blocked]
    ignored = [row.to_json() for row in decision.ignored]
    duration_ms = max(0, round((time.perf_counter() - started) * 1000))
    session.connection().execute(
        _RECORD,
        {
            "id": decision_id,
            "org_id": principal.org_id,
            "actor": principal.actor,
            "agent_key": agent.key if agent else None,
            "watch_count": len(ids),
            "allowed": decision.allowed,
            "policy_blocked": decision.policy_blocked,
            "dry_run": request.dry_run,
            "status_code": decision.status,
            "duration_ms": duration_ms,
            "evaluated_at": now,
            "inputs": {
                "watchIds": None if request.watch_ids is None else ids,
                "agentId": request.agent_id,
                "ignore": [{"watchId": k, "reason": v} for k, v in ignore.items()],
                "dryRun": request.dry_run,
            },
            "result": {
                "allowed": decision.allowed,
                "policyBlocked": decision.policy_blocked,
                "wouldPolicyBlock": decision.would_policy_block,
                "blocked": blocked,
                "ignored": ignored,
                "agentReasons": decision.agent_reasons,
            },
        },
    )
    session.commit()
    log(
        logger,
        logging.INFO,
        "preflight.complete",
        org=principal.org_id,
        agent=agent.key if agent else None,
        watchCount=len(ids),
        outcome=_outcome(decision),
        status=decision.status,
        blocked=len(decision.blocked),
        ignored=len(decision.ignored),
        dryRun=request.dry_run,
        decisionId=decision_id,
        durationMs=duration_ms,
    )
    answer = {
        "allowed": decision.allowed,
        "blocked": blocked,
        "ignored": ignored,
        "durationMs": duration_ms,
        "policyBlocked": decision.policy_blocked,
        "wouldPolicyBlock": decision.would_policy_block,
        "dryRun": request.dry_run,
        "decisionId": decision_id,
        "evaluatedAt": now.isoformat(),
        "agent": _agent_json(agent, decision),
    }
    return decision.status, answer


def _outcome(decision: Decision) -> str:
    if decision.allowed:
        return "allowed"
    return "policy_blocked" if decision.would_policy_block else "blocked"


def _agent_json(agent: AgentState | None, decision: Decision) -> dict[str, Any] | None:
    if agent is None:
        return None
    return {
        "id": agent.key,
        "slug": agent.slug,
        "policy": agent.policy.name,
        "runtimeState": agent.runtime_state,
        "reasons": decision.agent_reasons,
        "agentActions": decision.agent_actions,
        "unresolvedReferences": list(agent.unresolved),
    }
