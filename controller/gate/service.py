"""`POST /api/preflight`: the org's gate view (one indexed read says whether the process's
copy is current; see `controller.gate.readmodel`), the pure decision of
`controller.agents.policy`, and one insert that records the decision for audit.

No fetch, diff or lock happens here; the view is one consistent state of the store, the
latest committed, so an answer never mixes two moments even while checks change statuses.
Staleness is judged against the request's clock on every answer (`controller.agents.policy`); only
an answer that would block on it reads the org's last checks again (`GateCache.recheck`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

import orjson
from pydantic import Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from controller import metrics
from controller.agents.policy import WATCH_ID_LIMIT, AgentState, Decision, Policy, Row, decide
from controller.errors import NotFound, agent_not_found
from controller.gate.readmodel import OrgView, gate_cache
from controller.gate.statements import gate_cursor, record_decision
from controller.logs import log
from controller.model.base import ApiModel, BodyBool, RequestModel, utc_iso
from controller.model.principal import Principal
from controller.model.watch import Label, ObjectId, ShortNote, refuse_null
from controller.store import audit
from controller.store.db import Database
from controller.store.models import (
    ordered_id,
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
    dry_run: BodyBool = Field(
        default=False,
        description="the break-glass: evaluate and record, never answer 409; audited as "
        "`preflight.dry_run` with the decision it would have been",
    )

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


def _inputs(view: OrgView, request: PreflightRequest) -> tuple[AgentState | None, list[str]]:
    """The agent with its bound watch ids, or the requested watch ids, in `view`."""
    if request.agent_id is not None:
        agent = view.agent(request.agent_id)
        if agent is None:
            raise agent_not_found(request.agent_id)
        return view.agent_input(agent)
    return None, list(request.watch_ids or ())


def answer_status(decision: Decision) -> int:
    """The HTTP status that answers `decision` (409 exactly when an enforcing policy blocks),
    recorded with the decision for the audit export and answered by the route."""
    return 409 if decision.policy_blocked else 200


@dataclass(frozen=True)
class Outcome:
    """One preflight as decided and recorded."""

    decision: Decision
    agent: AgentState | None
    request: PreflightRequest
    decision_id: str
    duration_ms: int
    evaluated_at: datetime
    blocked: list[orjson.Fragment]  # the decision's rows, encoded as recorded
    ignored: list[orjson.Fragment]

    def answer(self) -> dict[str, Any]:
        """The answer in the `PreflightResult` shape, for orjson: built directly (this is the
        hot path) around the rows encoded once (`_encoded`); the OpenAPI document publishes
        `PreflightResult`, and the suite checks every answer against it."""
        decision = self.decision
        return {
            "allowed": decision.allowed,
            "blocked": self.blocked,
            "ignored": self.ignored,
            "durationMs": self.duration_ms,
            "policyBlocked": decision.policy_blocked,
            "wouldPolicyBlock": decision.would_policy_block,
            "dryRun": self.request.dry_run,
            "decisionId": self.decision_id,
            "evaluatedAt": utc_iso(self.evaluated_at),
            "agent": _agent_json(self.agent, decision),
        }


def _row_json(row: Row) -> dict[str, Any]:
    out: dict[str, Any] = {
        "watchId": row.watch_id,
        "name": row.name,
        "driftStatus": row.drift_status,
        "reasons": row.reasons,
        "agentActions": row.agent_actions,
        "lastCheckedAt": utc_iso(row.last_checked_at) if row.last_checked_at else None,
        "incidentId": row.incident_id,
    }
    if row.ignore_reason is not None:
        out["ignoreReason"] = row.ignore_reason
    return out


def _encoded(row: Row, view: OrgView) -> orjson.Fragment:
    """A blocked or ignored row as JSON bytes, embedded in both the answer and the decision
    record. A row that shows its watch's state as it is (`Row.as_stated`) is encoded once per
    gate view and shared by every decision on that view."""
    if row.as_stated:
        fragment = view.encoded_rows.get(row.watch_id)
        if fragment is None:
            fragment = view.encoded_rows[row.watch_id] = orjson.Fragment(
                orjson.dumps(_row_json(row))
            )
        return fragment
    return orjson.Fragment(orjson.dumps(_row_json(row)))


def preflight(
    database: Database,
    principal: Principal,
    request: PreflightRequest,
    now: datetime,
    started: float,
) -> Outcome:
    """Decide on one state of the store, record the decision, log `preflight.complete`.

    The decision comes from the org's gate view as this process last read it, and one
    statement records it only if the view is still current: the view's check and the audit
    write are one atomic statement, so the common answer costs one statement. When the store
    changed since (or the process has no view of the org yet), the view is read again
    (`GateCache.view`), the decision made again, and recorded. An unknown agent is confirmed
    on a current view before the 404.
    """
    cache = gate_cache(database)
    ignore = {entry.watch_id: entry.reason for entry in request.ignore}
    decision_id = ordered_id()
    with gate_cursor(database) as cursor:
        peeked = cache.peek(principal.org_id)
        while True:
            if peeked is None:
                low, view = None, cache.view(cursor, principal.org_id)
            else:
                low, view = peeked
            try:
                agent, ids = _inputs(view, request)
            except NotFound:
                if low is None:
                    raise
                peeked = None  # perhaps an agent this view has not seen yet
                continue
            decision = decide(
                ids, view.watches, now=now, agent=agent, ignore=ignore, dry_run=request.dry_run
            )
            if decision.stale and view.needs_recheck(now):
                # The view's last checks of `ok` watches may be older than the store's.
                view = cache.recheck(cursor, principal.org_id, view, now)
                decision = decide(
                    ids, view.watches, now=now, agent=agent, ignore=ignore, dry_run=request.dry_run
                )
            blocked = [_encoded(row, view) for row in decision.blocked]
            ignored = [_encoded(row, view) for row in decision.ignored]
            duration_ms = max(0, round((time.perf_counter() - started) * 1000))
            values = {
                "id": decision_id,
                "org_id": principal.org_id,
                "actor": principal.actor,
                "agent_key": agent.key if agent else None,
                "watch_count": len(ids),
                "allowed": decision.allowed,
                "policy_blocked": decision.policy_blocked,
                "dry_run": request.dry_run,
                "status_code": answer_status(decision),
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
            }
            if record_decision(database, cursor, values, low):
                break
            peeked = None  # the store changed since the view was read
    if request.dry_run:
        _audit_dry_run(database, principal, decision_id, request, agent, ids, decision)
    log(
        logger,
        logging.INFO,
        "preflight.complete",
        org=principal.org_id,
        agent=agent.key if agent else None,
        watchCount=len(ids),
        outcome=_outcome(decision),
        status=answer_status(decision),
        blocked=len(decision.blocked),
        ignored=len(decision.ignored),
        dryRun=request.dry_run,
        decisionId=decision_id,
        durationMs=duration_ms,
    )
    metrics.preflight_done(_outcome(decision), time.perf_counter() - started, principal.org_id)
    return Outcome(decision, agent, request, decision_id, duration_ms, now, blocked, ignored)


def _audit_dry_run(
    database: Database,
    principal: Principal,
    decision_id: str,
    request: PreflightRequest,
    agent: AgentState | None,
    ids: list[str],
    decision: Decision,
) -> None:
    """A dry run is the gate's break-glass (nothing is enforced, `driftgate preflight
    --dry-run` exits 0), so it is an administrative act: the audit log names who asked, for
    what, and the decision it would have been. Written before the answer; a failure here
    answers an error instead of an unaudited pass."""
    details: dict[str, Any] = {
        "decisionId": decision_id,
        "agentId": agent.key if agent else None,
        "watchIds": None if request.watch_ids is None else ids[:WATCH_ID_LIMIT],
        "wouldAllow": decision.allowed,
        "wouldPolicyBlock": decision.would_policy_block,
        "wouldStatus": 409 if decision.would_policy_block else 200,
        "blocked": [{"watchId": row.watch_id, "reasons": row.reasons} for row in decision.blocked],
        "agentReasons": decision.agent_reasons,
        "ignored": [row.watch_id for row in decision.ignored],
    }
    with database.transaction() as session:
        audit.by(session, principal, "preflight.dry_run", decision_id, details)


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


@dataclass(frozen=True)
class AgentNow:
    """What an agent's preflight would answer now: the decision the gate makes for it (as a
    dry run: `would_policy_block` says whether an enforcing policy blocks), on the same read
    model a preflight reads, and recorded nowhere."""

    key: str
    slug: str
    policy: Policy
    runtime_state: str
    watch_ids: tuple[str, ...]  # its bound watches that the org has, in order
    unresolved: tuple[str, ...]  # its references that name no watch of the org
    decision: Decision

    @property
    def blocked(self) -> bool:
        return not self.decision.allowed


def agents_now(
    database: Database, org_id: str, now: datetime, keys: Collection[str] | None = None
) -> list[AgentNow]:
    """Each agent of the org (or those of `keys`), by id, with what its preflight would
    answer at `now`: the org's gate view (one indexed read when nothing changed), the gate's
    decision, and, as a preflight does, the last checks read again before a decision that
    blocks on staleness is believed (`GateCache.recheck`)."""
    cache = gate_cache(database)
    with gate_cursor(database) as cursor:
        view = cache.view(cursor, org_id)
        answers = _decide_agents(view, now, keys)
        if any(a.decision.stale for a in answers) and view.needs_recheck(now):
            view = cache.recheck(cursor, org_id, view, now)
            answers = _decide_agents(view, now, keys)
    return answers


def _decide_agents(view: OrgView, now: datetime, keys: Collection[str] | None) -> list[AgentNow]:
    answers = []
    for key in sorted(view.agents):
        if keys is not None and key not in keys:
            continue
        cached = view.agents[key]
        agent, ids = view.agent_input(cached)
        decision = decide(ids, view.watches, now=now, agent=agent, dry_run=True)
        answers.append(
            AgentNow(
                key=agent.key,
                slug=agent.slug,
                policy=agent.policy,
                runtime_state=agent.runtime_state,
                watch_ids=tuple(dict.fromkeys(ids)),
                unresolved=agent.unresolved,
                decision=decision,
            )
        )
    return answers
