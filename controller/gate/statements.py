"""The gate's statements: the agent status view's read and the decision record, compiled once
per dialect, beside the read model they serve (`controller.gate.readmodel`).

A preflight (`controller.gate.service`) reads its org's view through `GateCache` on one
autocommit cursor (`gate_cursor`) and records its decision with `record_decision`: one
statement that inserts the row only while the view it was decided on is still current, so the
common answer costs one statement. The use case writes no SQL of its own.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from sqlalchemy import Dialect, Select, bindparam, insert, or_, select
from sqlalchemy.orm import Session

from controller.agents.policy import AgentState, WatchState
from controller.errors import agent_not_found
from controller.gate.readmodel import (
    Json,
    OrgView,
    agents_from,
    binding_columns,
    elements,
    gate_cache,
    state,
    unchanged_since,
)
from controller.store.db import Database
from controller.store.fastpath import Prepared, autocommit_cursor, json_processor
from controller.store.models import (
    Agent,
    AgentWatch,
    DriftEvent,
    Incident,
    PreflightDecision,
    Watch,
)


def gate_cursor(database: Database) -> AbstractContextManager[Any]:
    """The autocommit cursor a preflight reads its view and records its decision on."""
    return autocommit_cursor(database)


def record_decision(database: Database, cursor: Any, values: dict[str, Any], low: Any) -> bool:
    """Record a decision made on the org's view as peeked at `low` (None: a view read just
    now on this cursor): True when it is recorded, False when the store changed since that
    view (nothing is written; the caller reads the view again and decides again)."""
    statements = _statements(database.engine.dialect)
    if low is None:
        statements.record.execute(cursor, values)
        return True
    values["gate_low"] = low
    if statements.record_if_current.execute(cursor, values).rowcount == 1:
        gate_cache(database).confirmed()
        return True
    return False


def _by_agent(json: Json) -> Select[Any]:
    """The agents whose id or slug is `agent`, one element per binding (or one when none)."""
    row = json.array(*binding_columns(json), json.watch())
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
        self.agent_statement = _by_agent(Json(dialect))
        as_json = json_processor(dialect)
        processors = {"inputs": as_json, "result": as_json}
        self.record = Prepared(insert(PreflightDecision), dialect, processors)
        # The same row, inserted only while the gate view it was decided on is current: the
        # view's check and the audit write in one statement (`GateCache.peek`).
        columns = list(PreflightDecision.__table__.columns)
        values = select(*(bindparam(c.key, type_=c.type) for c in columns))
        self.record_if_current = Prepared(
            insert(PreflightDecision).from_select(
                [c.key for c in columns], values.where(unchanged_since(dialect))
            ),
            dialect,
            processors,
        )


_COMPILED: dict[tuple[str, str], _Statements] = {}


def _statements(dialect: Dialect) -> _Statements:
    key = (dialect.name, dialect.driver)
    statements = _COMPILED.get(key)
    if statements is None:
        statements = _COMPILED[key] = _Statements(dialect)
    return statements


def _agent_input(value: Any, agent_id: str) -> tuple[AgentState, list[str], dict[str, WatchState]]:
    """The status view's read, decoded as the gate view decodes an org (rows carry each
    binding's watch as a ninth element)."""
    rows = elements(value)
    agents, slugs = agents_from(rows)
    states = {row[7]: state(row[8])[1] for row in rows if row[8] is not None}
    view = OrgView(states, agents, slugs)
    agent = view.agent(agent_id)
    if agent is None:
        raise agent_not_found(agent_id)
    gate, ids = view.agent_input(agent)
    return gate, ids, states


def agent_gate_input(
    session: Session, org_id: str, agent_id: str
) -> tuple[AgentState, list[str], dict[str, WatchState]]:
    """The agent (by id, else slug), its bound watch ids in order, and their states, read in
    the session's transaction (the agent status view)."""
    statement = _statements(session.get_bind().dialect).agent_statement
    value = session.connection().execute(statement, {"org": org_id, "agent": agent_id}).scalar()
    return _agent_input(value, agent_id)
