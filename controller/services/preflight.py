"""`POST /api/preflight`: one read of the watches (and the agent) in a single statement, the
pure decision of `controller.policy`, and one insert that records the decision for audit.

No fetch, diff or lock happens here; a single SELECT is one consistent state of the store, so
an answer never mixes two moments even while checks change statuses.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Annotated, Any

import orjson
from pydantic import Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema
from sqlalchemy import (
    ColumnElement,
    ColumnExpressionArgument,
    Dialect,
    Select,
    String,
    bindparam,
    case,
    func,
    insert,
    null,
    or_,
    select,
    true,
)
from sqlalchemy.dialects.postgresql import ARRAY
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
from controller.store.db import Database
from controller.store.fastpath import Prepared, autocommit_cursor, json_processor
from controller.store.models import (
    Agent,
    AgentWatch,
    DriftEvent,
    Incident,
    PreflightDecision,
    Watch,
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


class _Json:
    """The JSON functions of one dialect, to build the gate's answer rows inside the database.

    Each read returns one row holding one JSON array: the database runs it in one step, so a
    request reads 100 watches in one call into the driver. Row by row, SQLite's driver gives
    up Python's GIL for every row, and under a threaded server each row then waits for the
    GIL again: 100 rows cost more than the rest of the request.
    """

    def __init__(self, dialect: Dialect) -> None:
        self.sqlite = dialect.name == "sqlite"

    def array(self, *values: ColumnExpressionArgument[Any]) -> ColumnElement[Any]:
        return func.json_array(*values) if self.sqlite else func.json_build_array(*values)

    def agg(self, value: ColumnExpressionArgument[Any]) -> ColumnElement[Any]:
        return func.json_group_array(value) if self.sqlite else func.json_agg(value)

    def value(self, column: ColumnExpressionArgument[Any]) -> ColumnExpressionArgument[Any]:
        """A text column as a JSON value (Postgres does not mix text and JSON in a CASE)."""
        return column if self.sqlite else func.to_json(column)

    def embed(self, column: ColumnExpressionArgument[Any]) -> ColumnExpressionArgument[Any]:
        """A JSON column as JSON inside an array (SQLite stores it as text)."""
        return func.json(column) if self.sqlite else column

    def watch(self, watch: Any = Watch) -> ColumnElement[Any]:
        """A watch (the model, or a subquery's columns) as its id alone when it is `ok` (most
        are), else as the gate's columns."""
        return case(
            (watch.id.is_(None), null()),
            (watch.drift_status == "ok", self.value(watch.id)),
            else_=self.array(
                watch.id,
                watch.name,
                watch.drift_status,
                watch.failure_class,
                watch.last_checked_at,
                watch.incident_id,
                Incident.status,
                self.embed(DriftEvent.agent_actions),
            ),
        )


def _watches(json: _Json, ids: ColumnElement[bool]) -> Select[Any]:
    return (
        select(json.agg(json.watch()))
        .select_from(Watch)
        .outerjoin(Incident, Incident.id == Watch.incident_id)
        .outerjoin(DriftEvent, DriftEvent.id == Incident.drift_event_id)
        .where(
            ids,
            # `org_id || ''` keeps SQLite's planner (no statistics) on the primary key: on the
            # org index it would read every watch of the org to find 100.
            Watch.org_id.concat("") == bindparam("org"),
        )
    )


_GATE_COLUMNS = (
    Watch.id,
    Watch.org_id,
    Watch.name,
    Watch.drift_status,
    Watch.failure_class,
    Watch.last_checked_at,
    Watch.incident_id,
)


def _watches_by_array(json: _Json) -> Select[Any]:
    """Postgres: the ids as one array parameter, each looked up on the primary key.

    A lateral lookup per id, not `id = ANY(:ids)`: on a table of some thousand watches the
    planner estimates a full scan as cheaper than 100 index probes (its default page costs
    are a spinning disk's) and reads every row, about three times the work."""
    requested = (
        func.unnest(bindparam("ids", type_=ARRAY(String)))
        .table_valued("id")
        .render_derived(name="requested")
    )
    # `LIMIT 1` (an id is one watch) also keeps the planner from flattening the lookup into
    # a hash join over the whole table.
    one = select(*_GATE_COLUMNS).where(Watch.id == requested.c.id).limit(1)
    lookup = one.lateral("w")
    watch = lookup.c
    return (
        select(json.agg(json.watch(watch)))
        .select_from(requested)
        .join(lookup, true())
        .outerjoin(Incident, Incident.id == watch.incident_id)
        .outerjoin(DriftEvent, DriftEvent.id == Incident.drift_event_id)
        .where(watch.org_id == bindparam("org"))
    )


def _by_agent(json: _Json) -> Select[Any]:
    """The agents whose id or slug is `agent`, one element per binding (or one when none)."""
    row = json.array(
        Agent.key,
        Agent.slug,
        Agent.policy,
        json.embed(Agent.policy_rules),
        Agent.runtime_state,
        AgentWatch.position,
        AgentWatch.ref,
        AgentWatch.watch_id,
        json.watch(),
    )
    return (
        select(json.agg(row))
        .select_from(Agent)
        .outerjoin(AgentWatch, AgentWatch.agent_id == Agent.id)
        .outerjoin(Watch, Watch.id == AgentWatch.watch_id)
        .outerjoin(Incident, Incident.id == Watch.incident_id)
        .outerjoin(DriftEvent, DriftEvent.id == Incident.drift_event_id)
        .where(
            Agent.org_id == bindparam("org"),
            or_(Agent.key == bindparam("agent"), Agent.slug == bindparam("agent")),
        )
    )


class _Statements:
    """The gate's statements, compiled once for one dialect."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.json = _Json(dialect)
        self.agent_statement = _by_agent(self.json)
        self.by_agent = Prepared(self.agent_statement, dialect)
        as_json = json_processor(dialect)
        self.record = Prepared(
            insert(PreflightDecision), dialect, {"inputs": as_json, "result": as_json}
        )
        self._by_count: dict[int, tuple[Prepared, tuple[str, ...]]] = {}
        # Postgres takes the ids as one array; SQLite as one `?` each (its `json_each` table
        # costs more than binding 100 values).
        self._by_array = (
            None if self.json.sqlite else Prepared(_watches_by_array(self.json), dialect)
        )

    def by_ids(self, org_id: str, ids: list[str]) -> tuple[Prepared, dict[str, Any]]:
        if self._by_array is not None:
            return self._by_array, {"org": org_id, "ids": ids}
        entry = self._by_count.get(len(ids))
        if entry is None:
            names = tuple(f"id{i}" for i in range(len(ids)))
            statement = _watches(self.json, Watch.id.in_([bindparam(name) for name in names]))
            entry = self._by_count[len(ids)] = (Prepared(statement, self.dialect), names)
        prepared, names = entry
        values: dict[str, Any] = dict(zip(names, ids, strict=True))
        values["org"] = org_id
        return prepared, values


_COMPILED: dict[tuple[str, str], _Statements] = {}


def _statements(dialect: Dialect) -> _Statements:
    key = (dialect.name, dialect.driver)
    statements = _COMPILED.get(key)
    if statements is None:
        statements = _COMPILED[key] = _Statements(dialect)
    return statements


def _elements(value: Any) -> list[Any]:
    """The JSON array of a gate read (Postgres' driver decodes it; SQLite's gives text)."""
    if value is None:
        return []  # Postgres' json_agg of no rows
    return orjson.loads(value) if isinstance(value, str) else list(value)


def _time(value: str | None) -> datetime | None:
    """A timestamp inside JSON: SQLite's stored text (UTC, naive) or Postgres' ISO form."""
    if value is None:
        return None
    parsed = datetime.fromisoformat(value)
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


OK = WatchState(
    id="",
    name="",
    drift_status="ok",
    failure_class=None,
    last_checked_at=None,
    incident_id=None,
    incident_status=None,
)


def _state(element: str | list[Any]) -> tuple[str, WatchState]:
    if isinstance(element, str):
        return element, OK  # an `ok` watch: its id alone
    (wid, name, status, failure, checked, incident_id, incident_status, actions) = element
    return wid, WatchState(
        id=wid,
        name=name,
        drift_status=status,
        failure_class=failure,
        last_checked_at=_time(checked),
        incident_id=incident_id,
        incident_status=incident_status,
        change_actions=tuple(actions or ()),
    )


def _agent_input(value: Any, agent_id: str) -> tuple[AgentState, list[str], dict[str, WatchState]]:
    elements = _elements(value)
    if not elements:
        raise NotFound("Agent not found")
    # An id wins over another agent's equal slug.
    key = next((e[0] for e in elements if e[0] == agent_id), elements[0][0])
    bindings = sorted((e for e in elements if e[0] == key), key=lambda e: e[5] or 0)
    first = bindings[0]
    ids: list[str] = []
    states: dict[str, WatchState] = {}
    unresolved: list[str] = []
    for element in bindings:
        ref, watch_id, watch = element[6], element[7], element[8]
        if ref is None:
            continue  # an agent with no bindings
        if watch is None:
            unresolved.append(ref)
            continue
        ids.append(watch_id)
        states[watch_id] = _state(watch)[1]
    agent = AgentState(
        key=first[0],
        slug=first[1],
        policy=resolve_policy(first[2], first[3]),
        runtime_state=first[4],
        unresolved=tuple(unresolved),
    )
    return agent, ids, states


def agent_gate_input(
    session: Session, org_id: str, agent_id: str
) -> tuple[AgentState, list[str], dict[str, WatchState]]:
    """The agent (by id, else slug), its bound watch ids in order, and their states, read in
    the session's transaction (the agent status view)."""
    statement = _statements(session.get_bind().dialect).agent_statement
    value = session.connection().execute(statement, {"org": org_id, "agent": agent_id}).scalar()
    return _agent_input(value, agent_id)


def _read(
    cursor: Any, statements: _Statements, org_id: str, request: PreflightRequest
) -> tuple[AgentState | None, list[str], dict[str, WatchState]]:
    """The gate's one read: the agent with its bound watches, or the requested watches."""
    if request.agent_id is not None:
        values = {"org": org_id, "agent": request.agent_id}
        (value,) = statements.by_agent.execute(cursor, values).fetchone()
        return _agent_input(value, request.agent_id)
    requested = list(request.watch_ids or ())
    if not requested:
        return None, requested, {}
    prepared, values = statements.by_ids(org_id, list(dict.fromkeys(requested)))
    (value,) = prepared.execute(cursor, values).fetchone()
    states: dict[str, WatchState] = {}
    for element in _elements(value):
        if element.__class__ is str:
            states[element] = OK  # most watches
        else:
            watch_id, state = _state(element)
            states[watch_id] = state
    return None, requested, states


def preflight(
    database: Database,
    principal: Principal,
    request: PreflightRequest,
    now: datetime,
    started: float,
) -> tuple[int, dict[str, Any]]:
    """Decide on one read, then record the decision and log `preflight.complete`.

    Both statements run on one pooled connection, each its own transaction: the read is one
    consistent state, and on SQLite the write lock is held for the INSERT alone. Returns the
    status and the JSON answer (the `PreflightResult` shape, built directly: this is the hot
    path).
    """
    statements = _statements(database.engine.dialect)
    with autocommit_cursor(database) as cursor:
        agent, ids, states = _read(cursor, statements, principal.org_id, request)
        ignore = {entry.watch_id: entry.reason for entry in request.ignore}
        decision = decide(ids, states, agent=agent, ignore=ignore, dry_run=request.dry_run)
        decision_id = ordered_id()
        blocked = [row.to_json() for row in decision.blocked]
        ignored = [row.to_json() for row in decision.ignored]
        duration_ms = max(0, round((time.perf_counter() - started) * 1000))
        statements.record.execute(
            cursor,
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
