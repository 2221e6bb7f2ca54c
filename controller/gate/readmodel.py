"""The run gate's view of each org, kept in memory and checked against the store on every read.

A preflight needs the gate columns of up to 100 watches (or of an agent's bound watches) and
must answer from one consistent state of the store, the latest committed. Reading those rows on
every request was most of the request's cost. Here each process keeps, per org, every watch's
gate state and every agent with its bindings, and each preflight asks the store one indexed
question first: did anything the gate reads change since this view was read?

The database answers it, whatever code wrote the change: triggers (migration 0005) stamp a
watch whose gate columns change (`watches.gate_stamp`), and record an event for changes to
incidents, drift events' agent actions, agents, bindings and deleted watches (`gate_events`).

- **SQLite** stamps with a counter (`gate_clock`): one writer at a time, so counter order is
  commit order. The view is current while the counter is below `low` (the counter when it was
  read, plus one).
- **Postgres** stamps with the writing transaction's id. When the view is read, `low` is the
  `xmin` of that read's snapshot: every transaction below it had finished, so its changes are
  in the view, and any change committed later comes from a transaction at or above it. The
  view is current while no stamp reaches `low`. (A transaction left open for long keeps
  `xmin` back; the view is then re-read more often, never wrong.)

When the check says "changed", one read transaction (a single snapshot) fetches the watches
stamped since `low` and the events since `low`: stamped watches are replaced in place, an
org with an event is read again whole. A view is never changed under a reader: every refresh
builds new maps and swaps them in, so an answer comes from exactly one state.

Staleness (issue 40, point 4) is judged at answer time from each state's last check and
interval (`WatchState.is_stale`), never frozen into a view. An `ok` watch's routine check
stamps nothing (migration 0005), so the view's last check of such a watch may be older than
the store's: a view can only think a watch staler than it is, never fresher. When an answer
would block on staleness, the preflight service reads the org's last checks again
(`GateCache.recheck`: one indexed read, at most every `RECHECK_SECONDS` per org) and decides
again, so a healthy watch is never blocked for the age of a view.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import (
    BigInteger,
    ColumnElement,
    ColumnExpressionArgument,
    Dialect,
    Select,
    Text,
    bindparam,
    case,
    delete,
    func,
    literal_column,
    null,
    select,
)

from controller.agents.policy import AgentState, Policy, WatchState, resolve_policy
from controller.store.db import Database
from controller.store.fastpath import Prepared
from controller.store.models import (
    Agent,
    AgentWatch,
    DriftEvent,
    GateClock,
    GateEvent,
    Incident,
    Watch,
)

MAX_ORGS = 256  # views kept per process; beyond, the oldest is read again when next asked
STALE_SECONDS = 3600.0  # a cache not checked for this long starts again from nothing
# Last checks read again for an org at most this often while its watches look stale: a dead
# controller costs one extra read per org every few seconds, and a watch checked again stops
# blocking within this time.
RECHECK_SECONDS = 5.0


class Json:
    """The JSON functions of one dialect, to build the gate's rows inside the database.

    Each read returns one row holding one JSON array: the database builds it in one step and
    the driver hands over one value. Row by row, SQLite's driver gives up Python's GIL for
    every row, and under a threaded server each row then waits for the GIL again.
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

    def watch(self) -> ColumnElement[Any]:
        """A watch as its id, name and last check when it is `ok` (most are), else as all the
        gate's columns, in the order `state` reads them (with `Incident` and `DriftEvent`
        joined)."""
        return case(
            (Watch.id.is_(None), null()),
            (
                Watch.drift_status == "ok",
                self.array(
                    Watch.id,
                    Watch.name,
                    Watch.last_checked_at,
                    Watch.interval_minutes,
                    Watch.waived_until,
                ),
            ),
            else_=self.array(
                Watch.id,
                Watch.name,
                Watch.drift_status,
                Watch.failure_class,
                Watch.last_checked_at,
                Watch.interval_minutes,
                Watch.incident_id,
                Incident.status,
                self.embed(DriftEvent.agent_actions),
                Watch.waived_until,
                self.embed(DriftEvent.gate_reasons),
            ),
        )


def elements(value: Any) -> list[Any]:
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


OK_ELEMENT = 5  # the length of an `ok` watch's element


def state(element: list[Any]) -> tuple[str, WatchState]:
    """A watch element of `Json.watch` as its id and state."""
    if len(element) == OK_ELEMENT:
        wid, name, checked, interval, waived = element
        return wid, WatchState(
            id=wid,
            name=name,
            drift_status="ok",
            failure_class=None,
            last_checked_at=_time(checked),
            interval_minutes=interval,
            incident_id=None,
            incident_status=None,
            waived_until=_time(waived),
        )
    (
        wid,
        name,
        status,
        failure,
        checked,
        interval,
        incident_id,
        incident_status,
        actions,
        waived,
        reasons,
    ) = element
    return wid, WatchState(
        id=wid,
        name=name,
        drift_status=status,
        failure_class=failure,
        last_checked_at=_time(checked),
        interval_minutes=interval,
        incident_id=incident_id,
        incident_status=incident_status,
        change_actions=tuple(actions or ()),
        change_reasons=tuple(reasons or ()),
        waived_until=_time(waived),
    )


@dataclass(frozen=True)
class CachedAgent:
    key: str
    slug: str
    policy: Policy
    runtime_state: str
    bindings: tuple[tuple[str, str | None], ...]  # (reference, watch id or None), in order


@dataclass(frozen=True)
class OrgView:
    """One org as the gate sees it at one moment: every watch, every agent."""

    watches: Mapping[str, WatchState]
    agents: Mapping[str, CachedAgent]
    slugs: Mapping[str, CachedAgent]
    # Each watch's blocked row as the preflight service encodes it, filled on first use: the
    # view's states never change, so neither do their rows.
    encoded_rows: dict[str, orjson.Fragment] = field(default_factory=dict, compare=False)
    # When the last checks of every watch were last read for staleness (`GateCache.recheck`),
    # in the answers' clock; None: as of the view's read.
    checks_read_at: datetime | None = None

    def needs_recheck(self, now: datetime) -> bool:
        """Whether an answer that would block on staleness should read the last checks first."""
        read_at = self.checks_read_at
        return read_at is None or now - read_at > timedelta(seconds=RECHECK_SECONDS)

    def agent(self, agent_id: str) -> CachedAgent | None:
        """The agent with this id, else the one with this slug (an id wins)."""
        return self.agents.get(agent_id) or self.slugs.get(agent_id)

    def agent_input(self, agent: CachedAgent) -> tuple[AgentState, list[str]]:
        """The agent's gate state and its bound watch ids, in order; a binding that names no
        watch of the org is an unresolved reference."""
        ids: list[str] = []
        unresolved: list[str] = []
        for ref, watch_id in agent.bindings:
            if watch_id is None or watch_id not in self.watches:
                unresolved.append(ref)
            else:
                ids.append(watch_id)
        gate = AgentState(
            key=agent.key,
            slug=agent.slug,
            policy=agent.policy,
            runtime_state=agent.runtime_state,
            unresolved=tuple(unresolved),
        )
        return gate, ids


def binding_columns(json: Json) -> tuple[ColumnExpressionArgument[Any], ...]:
    """An agent's binding row as `agents_from` reads it (with `AgentWatch` joined)."""
    return (
        Agent.key,
        Agent.slug,
        Agent.policy,
        json.embed(Agent.policy_rules),
        Agent.runtime_state,
        AgentWatch.position,
        AgentWatch.ref,
        AgentWatch.watch_id,
    )


def _gate_joins(statement: Any) -> Any:
    return statement.outerjoin(Incident, Incident.id == Watch.incident_id).outerjoin(
        DriftEvent, DriftEvent.id == Incident.drift_event_id
    )


# Constants are written into these statements, not bound: Postgres plans a prepared statement
# whose LIMIT is a parameter again on every execution (its generic plan guesses the limit).
_ONE: ColumnElement[int] = literal_column("1")
_ZERO: ColumnElement[int] = literal_column("0")


def _newest_stamp(sqlite: bool) -> Select[Any]:
    """The newest stamp of any change the gate reads (None when there is none)."""
    if sqlite:
        return select(GateClock.stamp).where(GateClock.id == _ONE)
    # The newest stamp of each kind, each one step down its index.
    newest_watch = select(Watch.gate_stamp).order_by(Watch.gate_stamp.desc()).limit(_ONE)
    newest_event = select(GateEvent.stamp).order_by(GateEvent.stamp.desc()).limit(_ONE)
    return select(func.greatest(newest_watch.scalar_subquery(), newest_event.scalar_subquery()))


def unchanged_since(dialect: Dialect) -> ColumnElement[bool]:
    """True while nothing the gate reads changed since the `low` bound as `gate_low`: the
    check of `GateCache.view`, as a condition of another statement (see `GateCache.peek`)."""
    newest = _newest_stamp(dialect.name == "sqlite").scalar_subquery()
    return func.coalesce(newest, _ZERO) < bindparam("gate_low", type_=BigInteger())


class _Statements:
    """The cache's statements, compiled once for one dialect."""

    def __init__(self, dialect: Dialect) -> None:
        json = Json(dialect)
        self.sqlite = json.sqlite
        if self.sqlite:
            self.begin = "BEGIN"
            low = select(func.coalesce(select(GateClock.stamp).scalar_subquery(), 0) + 1)
        else:
            self.begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
            # The first statement takes the transaction's snapshot; this is its xmin.
            low = select(
                func.pg_snapshot_xmin(func.pg_current_snapshot()).cast(Text()).cast(BigInteger())
            )
        self.check = Prepared(_newest_stamp(self.sqlite), dialect)
        self.low = Prepared(low, dialect)
        self.events = Prepared(
            select(GateEvent.org_id).distinct().where(GateEvent.stamp >= bindparam("low")),
            dialect,
        )
        self.changed = Prepared(
            _gate_joins(
                select(json.agg(json.array(Watch.org_id, json.watch()))).select_from(Watch)
            ).where(Watch.gate_stamp >= bindparam("low")),
            dialect,
        )
        self.org_watches = Prepared(
            _gate_joins(select(json.agg(json.watch())).select_from(Watch)).where(
                Watch.org_id == bindparam("org")
            ),
            dialect,
        )
        self.org_checks = Prepared(
            select(
                json.agg(json.array(Watch.id, Watch.last_checked_at, Watch.interval_minutes))
            ).where(Watch.org_id == bindparam("org")),
            dialect,
        )
        self.org_agents = Prepared(
            select(json.agg(json.array(*binding_columns(json))))
            .select_from(Agent)
            .outerjoin(AgentWatch, AgentWatch.agent_id == Agent.id)
            .where(Agent.org_id == bindparam("org")),
            dialect,
        )


def _scalar(prepared: Prepared, cursor: Any, values: Mapping[str, Any] | None = None) -> Any:
    row = prepared.execute(cursor, values or {}).fetchone()
    return None if row is None else row[0]


def agents_from(
    rows: list[list[Any]],
) -> tuple[dict[str, CachedAgent], dict[str, CachedAgent]]:
    """Agents by id and by slug from binding rows `[key, slug, policy, rules, runtime state,
    position, ref, watch id, ...]` (one row with no binding for an agent without any)."""
    by_key: dict[str, list[list[Any]]] = {}
    for element in rows:
        by_key.setdefault(element[0], []).append(element)
    agents: dict[str, CachedAgent] = {}
    for key in sorted(by_key):
        bindings = sorted(by_key[key], key=lambda e: e[5] or 0)
        first = bindings[0]
        agents[key] = CachedAgent(
            key=key,
            slug=first[1],
            policy=resolve_policy(first[2], first[3]),
            runtime_state=first[4],
            bindings=tuple((e[6], e[7]) for e in bindings if e[6] is not None),
        )
    slugs: dict[str, CachedAgent] = {}
    for agent in agents.values():
        slugs.setdefault(agent.slug, agent)
    return agents, slugs


class GateCache:
    """The views of one process for one database (see the module's docstring)."""

    def __init__(self, dialect: Dialect) -> None:
        self.statements = _Statements(dialect)
        # `low` and the views it is true of, swapped together: a reader must never pair one
        # refresh's `low` with an older refresh's views.
        self.current: tuple[int, dict[str, OrgView]] = (0, {})
        self.checked = time.monotonic()
        self.lock = threading.Lock()

    def peek(self, org_id: str) -> tuple[int, OrgView] | None:
        """The org's view as last read, with the `low` it is true of, without asking the
        store; None when there is none or the cache went unchecked for too long. Whoever uses
        it must confirm it in the statement that acts on it (`unchanged_since`, with `low` as
        `gate_low`), and call `view` instead when that finds a change."""
        if time.monotonic() - self.checked > STALE_SECONDS:
            return None
        low, views = self.current
        view = views.get(org_id)
        return None if view is None else (low, view)

    def confirmed(self) -> None:
        """A statement bound to a peeked `low` found nothing changed: that was a check."""
        self.checked = time.monotonic()

    def view(self, cursor: Any, org_id: str) -> OrgView:
        """The org's view, current as of this call: one indexed read when nothing changed."""
        high = _scalar(self.statements.check, cursor) or 0
        now = time.monotonic()
        # Unchecked for an hour, the events since may have been pruned (`prune_events`).
        stale = now - self.checked > STALE_SECONDS
        self.checked = now
        low, views = self.current
        view = views.get(org_id)
        if view is not None and high < low and not stale:
            return view
        with self.lock:
            if stale:
                self.current = (self.current[0], {})
            low, views = self.current
            view = views.get(org_id)
            if view is not None and high < low:
                return view  # another thread refreshed while this one waited
            return self._refresh(cursor, org_id)

    def _refresh(self, cursor: Any, org_id: str) -> OrgView:
        statements = self.statements
        cursor.execute(statements.begin)
        try:
            low = int(_scalar(statements.low, cursor))
            since, current = self.current
            views = dict(current)
            if views:
                events = statements.events.execute(cursor, {"low": since}).fetchall()
                for (org,) in events:
                    if org is None:
                        views.clear()  # a change whose org the trigger could not tell
                        break
                    views.pop(org, None)
                if views:
                    self._apply(views, _scalar(statements.changed, cursor, {"low": since}))
            view = views.get(org_id)
            if view is None:
                view = self._load(cursor, org_id)
                while len(views) >= MAX_ORGS:
                    views.pop(next(iter(views)))
                views[org_id] = view
        finally:
            cursor.execute("COMMIT")
        self.current = (low, views)
        return view

    def recheck(self, cursor: Any, org_id: str, view: OrgView, now: datetime) -> OrgView:
        """`view` with every watch's last check and interval read again (one indexed read),
        kept for the next answers unless another thread refreshed the org meanwhile.

        Only staleness reads these columns, and a newer last check only makes a watch less
        stale; the statement that records the decision still confirms the rest of the view."""
        checks = {
            wid: (_time(checked), interval)
            for wid, checked, interval in elements(
                _scalar(self.statements.org_checks, cursor, {"org": org_id})
            )
        }
        watches = dict(view.watches)
        changed = set()
        for wid, old in view.watches.items():
            fresh = checks.get(wid)
            if fresh is not None and fresh != (old.last_checked_at, old.interval_minutes):
                watches[wid] = replace(old, last_checked_at=fresh[0], interval_minutes=fresh[1])
                changed.add(wid)
        kept = {k: v for k, v in view.encoded_rows.items() if k not in changed}
        rechecked = OrgView(watches, view.agents, view.slugs, kept, checks_read_at=now)
        with self.lock:
            low, views = self.current
            if views.get(org_id) is view:
                self.current = (low, {**views, org_id: rechecked})
        return rechecked

    @staticmethod
    def _apply(views: dict[str, OrgView], value: Any) -> None:
        """Replace the stamped watches in the views that hold their org."""
        changed: dict[str, dict[str, WatchState]] = {}
        for org, element in elements(value):
            if org in views:
                watch_id, watch_state = state(element)
                changed.setdefault(org, {})[watch_id] = watch_state
        for org, watches in changed.items():
            old = views[org]
            kept = {k: v for k, v in old.encoded_rows.items() if k not in watches}
            views[org] = OrgView(
                {**old.watches, **watches}, old.agents, old.slugs, kept, old.checks_read_at
            )

    def _load(self, cursor: Any, org_id: str) -> OrgView:
        statements = self.statements
        watches = dict(
            state(e) for e in elements(_scalar(statements.org_watches, cursor, {"org": org_id}))
        )
        rows = elements(_scalar(statements.org_agents, cursor, {"org": org_id}))
        agents, slugs = agents_from(rows)
        return OrgView(watches, agents, slugs)


_CACHES: weakref.WeakKeyDictionary[Database, GateCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def gate_cache(database: Database) -> GateCache:
    """The process's cache for `database`."""
    cache = _CACHES.get(database)
    if cache is None:
        with _CACHES_LOCK:
            cache = _CACHES.get(database)
            if cache is None:
                cache = _CACHES[database] = GateCache(database.engine.dialect)
    return cache


EVENT_RETENTION_SECONDS = 86_400


def prune_events(database: Database, now: float | None = None) -> int:
    """Delete gate events older than a day; returns how many went.

    A cache reads the events since its `low` on its next check after a change, and a cache
    not checked for an hour starts again from nothing (`GateCache.view`), so a day-old event
    has been seen by every cache that needs it."""
    cutoff = int((time.time() if now is None else now) - EVENT_RETENTION_SECONDS)
    with database.transaction() as session:
        result = session.execute(delete(GateEvent).where(GateEvent.created_at < cutoff))
        return int(result.rowcount or 0)  # type: ignore[attr-defined]
