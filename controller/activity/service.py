"""The activity timeline read from the store: one keyset query per table that holds a kind
of entry, merged by `controller.activity.timeline.merge`; and the live state of the pages'
objects (the console polls it), each in one or two indexed queries.

- the audit log: what people did (and the system's reverts and drift kills), with their
  reasons and notes;
- drift events: what checks found;
- incidents: when they opened and reopened (acknowledging and resolving are audited);
- the outbox: deliveries of events to webhooks and Slack, with their status;
- git sources: their recent reconcile runs.

Every query is scoped by org, so another org's object reads as a missing one (404).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, func, not_, or_, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from controller.activity.timeline import (
    KINDS,
    BadFilter,
    Entry,
    Filters,
    Page,
    detail_of,
    kind_of_action,
    merge,
    name_in,
    parse_filters,
    within,
    words_of_action,
)
from controller.agents.service import get_agent
from controller.crypto import SecretBox
from controller.drift.incidents import ACTIVE
from controller.errors import NotFound
from controller.notifications import deliveries_service as deliveries
from controller.store.models import (
    Agent,
    AgentWatch,
    ApiKey,
    AuditEntry,
    DriftEvent,
    Incident,
    Org,
    OutboxMessage,
    Source,
    User,
    Watch,
)
from controller.watches.service import get_watch

AUDIT_DIGITS = 12  # audit ids are zero-padded in keys so that keys sort as the ids do


@dataclass(frozen=True)
class Scope:
    """The object a timeline is about (none: the whole org), resolved in the org."""

    org_id: str
    watch_ids: tuple[str, ...] | None = None
    agent_key: str | None = None
    source: str | None = None
    name: str | None = None

    @property
    def is_org(self) -> bool:
        return self.watch_ids is None and self.source is None


def read(session: Session, org_id: str, filters: Filters, box: SecretBox | None = None) -> Page:
    """A page of the org's timeline (or one object's), newest first. With the secret `box`,
    deliveries name their destination in full without its secrets (scheme, host, port,
    path); without, by the stored hint (scheme and host)."""
    scope = resolve_scope(session, org_id, filters)
    lists = [
        _audit(session, scope, filters),
        _drift(session, scope, filters),
        _incidents_opened(session, scope, filters),
        _deliveries(session, scope, filters, box),
        _runs(session, scope, filters),
    ]
    page = merge(lists, filters)
    return dataclasses.replace(page, entries=_named(session, org_id, page.entries))


def resolve_scope(session: Session, org_id: str, filters: Filters) -> Scope:
    """The scope the filters name; NotFound when the object is not the org's."""
    if filters.object_type is None or filters.object_id is None:
        return Scope(org_id)
    if filters.object_type == "watch":
        watch = get_watch(session, org_id, filters.object_id)
        return Scope(org_id, watch_ids=(watch.id,), name=watch.name)
    if filters.object_type == "agent":
        agent = get_agent(session, org_id, filters.object_id)
        bound = session.scalars(
            select(AgentWatch.watch_id).where(
                AgentWatch.agent_id == agent.id, AgentWatch.watch_id.is_not(None)
            )
        )
        ids = tuple(sorted({w for w in bound if w}))
        return Scope(org_id, watch_ids=ids, agent_key=agent.key, name=agent.name or agent.slug)
    found = session.scalar(
        select(Source.name).where(Source.name == filters.object_id, Source.org_id == org_id)
    )
    if found is None:
        raise NotFound("no such git source in this org")
    return Scope(org_id, source=found, name=found)


def latest_stamp(session: Session, org_id: str) -> str:
    """When the org's timeline last moved (its newest audit entry and drift event): what a
    live page compares to know its timeline is out of date. One statement, two index
    lookups."""
    audit = (
        select(AuditEntry.created_at)
        .where(AuditEntry.org_id == org_id)
        .order_by(AuditEntry.created_at.desc())
        .limit(1)
        .scalar_subquery()
    )
    drift = (
        select(DriftEvent.detected_at)
        .where(DriftEvent.org_id == org_id)
        .order_by(DriftEvent.detected_at.desc())
        .limit(1)
        .scalar_subquery()
    )
    row = session.execute(select(audit, drift)).one()
    return "|".join(str(value) for value in row)


# -- one query per source --------------------------------------------------------------------


def _window(
    filters: Filters,
    at: InstrumentedAttribute[datetime] | InstrumentedAttribute[datetime | None],
    key: InstrumentedAttribute[Any],
    prefix: str,
) -> list[ColumnElement[bool]]:
    """The time window and the keyset condition of the page after the cursor, for entries
    keyed `<prefix>:<key column>`."""
    where: list[ColumnElement[bool]] = []
    if filters.since is not None:
        where.append(at >= filters.since)
    if filters.until is not None:
        where.append(at < filters.until)
    cursor = filters.cursor
    if cursor is not None:
        bound = cursor.bound_for(prefix)
        if bound is None:
            where.append(at <= cursor.at)
        elif bound == "":
            where.append(at < cursor.at)
        else:
            value: Any = bound
            if prefix == "audit":
                if not bound.isdigit():
                    raise BadFilter("the cursor is not one this timeline wrote")
                value = int(bound)
            where.append(or_(at < cursor.at, and_(at == cursor.at, key < value)))
    return where


def _audit(session: Session, scope: Scope, filters: Filters) -> list[Entry]:
    kinds = [k for k in ("drift", "incident", "baseline", "agent", "change") if filters.wants(k)]
    if not kinds or scope.source is not None:
        return []
    where = [AuditEntry.org_id == scope.org_id, *_window(filters, *_AUDIT_KEYS)]
    if filters.kinds:
        where.append(or_(*(_AUDIT_KIND[k] for k in kinds)))
    if scope.watch_ids is not None:
        incidents = select(Incident.id).where(
            Incident.org_id == scope.org_id, Incident.watch_id.in_(scope.watch_ids)
        )
        about: list[ColumnElement[bool]] = [
            and_(AuditEntry.target_type == "incident", AuditEntry.target_id.in_(incidents))
        ]
        if scope.agent_key is not None:
            about.append(
                and_(AuditEntry.target_type == "agent", AuditEntry.target_id == scope.agent_key)
            )
        else:
            about.append(
                and_(AuditEntry.target_type == "watch", AuditEntry.target_id.in_(scope.watch_ids))
            )
        where.append(or_(*about))
    rows = session.scalars(
        select(AuditEntry)
        .where(*where)
        .order_by(AuditEntry.created_at.desc(), AuditEntry.id.desc())
        .limit(filters.limit + 1)
    )
    return [_audit_entry(row) for row in rows]


_AUDIT_KEYS = (AuditEntry.created_at, AuditEntry.id, "audit")
_AUDIT_KIND: dict[str, ColumnElement[bool]] = {
    "baseline": AuditEntry.action == "watch.baseline_accept",
    "drift": AuditEntry.action == "watch.revert",
    "incident": AuditEntry.action.like("incident.%"),
    "agent": AuditEntry.action.like("agent.%"),
    "change": and_(
        AuditEntry.action.not_in(("watch.baseline_accept", "watch.revert")),
        not_(AuditEntry.action.like("incident.%")),
        not_(AuditEntry.action.like("agent.%")),
    ),
}


def _audit_entry(row: AuditEntry) -> Entry:
    details = row.details or {}
    object_type = row.target_type if row.target_type in ("watch", "agent", "incident") else None
    object_type = object_type or ("org" if row.target_type in ("org", "api_key", "user") else None)
    title = words_of_action(row.action)
    if row.action == "agent.kill" and details.get("cause") == "breaking_drift":
        title = "Agent killed by breaking drift"
    return Entry(
        at=row.created_at,
        key=f"audit:{row.id:0{AUDIT_DIGITS}d}",
        kind=kind_of_action(row.action),
        action=row.action,
        title=title,
        actor=row.actor,
        detail=detail_of(details),
        object_type=object_type,
        object_id=row.target_id,
        # As the entry was written: what names the object once it is gone.
        object_name=name_in(details),
        watch_id=row.target_id if row.target_type == "watch" else None,
        target_type=row.target_type,
    )


def _owned(org_column: Any, watch_column: Any, scope: Scope) -> ColumnElement[bool]:
    """Rows of the scope: its watches' (found in the org by `resolve_scope`), else the org's.
    Not both: with the org's condition beside the watch's, SQLite walks the org's whole
    `(org_id, time)` index, newest first, for a watch's few rows (370 ms at 200,000 events)."""
    if scope.watch_ids is not None:
        condition: ColumnElement[bool] = watch_column.in_(scope.watch_ids)
    else:
        condition = org_column == scope.org_id
    return condition


def _drift(session: Session, scope: Scope, filters: Filters) -> list[Entry]:
    if not filters.wants("drift") or scope.source is not None or scope.watch_ids == ():
        return []
    where = [
        _owned(DriftEvent.org_id, DriftEvent.watch_id, scope),
        *_window(filters, DriftEvent.detected_at, DriftEvent.id, "drift"),
    ]
    rows = session.execute(
        select(
            DriftEvent.id,
            DriftEvent.watch_id,
            DriftEvent.detected_at,
            DriftEvent.kind,
            DriftEvent.breaking_count,
            DriftEvent.warning_count,
            DriftEvent.info_count,
            Watch.name,
        )
        .join(Watch, Watch.id == DriftEvent.watch_id)
        .where(*where)
        .order_by(DriftEvent.detected_at.desc(), DriftEvent.id.desc())
        .limit(filters.limit + 1)
    )
    entries = []
    for row in rows:
        counts = {"breaking": row.breaking_count, "warning": row.warning_count}
        counts["info"] = row.info_count
        found = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no classified change"
        severity = next((s for s, n in counts.items() if n), "info")
        entries.append(
            Entry(
                at=row.detected_at,
                key=f"drift:{row.id}",
                kind="drift",
                action=f"drift.{row.kind}",
                title=f"Drift found: {found}",
                actor="system",
                severity=severity,
                object_type="event",
                object_id=row.id,
                object_name=row.name,
                watch_id=row.watch_id,
            )
        )
    return entries


def _incidents_opened(session: Session, scope: Scope, filters: Filters) -> list[Entry]:
    """Incidents as they opened (the checks open them; people's moves are audited)."""
    if not filters.wants("incident") or scope.source is not None or scope.watch_ids == ():
        return []
    where = [
        _owned(Incident.org_id, Incident.watch_id, scope),
        *_window(filters, Incident.opened_at, Incident.id, "opened"),
    ]
    rows = session.execute(
        select(Incident.id, Incident.watch_id, Incident.opened_at, Incident.breaking_count)
        .add_columns(Incident.flap_count, Watch.name)
        .join(Watch, Watch.id == Incident.watch_id)
        .where(*where)
        .order_by(Incident.opened_at.desc(), Incident.id.desc())
        .limit(filters.limit + 1)
    )
    return [
        Entry(
            at=row.opened_at,
            key=f"opened:{row.id}",
            kind="incident",
            action="incident.open",
            title=f"Incident opened: {row.breaking_count} breaking"
            + (f", reopened {row.flap_count} times since" if row.flap_count else ""),
            actor="system",
            severity="breaking",
            object_type="watch",
            object_id=row.watch_id,
            object_name=row.name,
            watch_id=row.watch_id,
        )
        for row in rows
    ]


def _deliveries(
    session: Session, scope: Scope, filters: Filters, box: SecretBox | None
) -> list[Entry]:
    if not filters.wants("delivery") or scope.source is not None or scope.agent_key:
        return []
    where = [
        _owned(OutboxMessage.org_id, OutboxMessage.watch_id, scope),
        *_window(filters, OutboxMessage.created_at, OutboxMessage.id, "delivery"),
    ]
    rows = session.execute(
        select(
            OutboxMessage.id,
            OutboxMessage.created_at,
            OutboxMessage.event_type,
            OutboxMessage.channel,
            OutboxMessage.destination_hint,
            OutboxMessage.destination_ciphertext,
            OutboxMessage.status,
            OutboxMessage.attempts,
            OutboxMessage.last_error,
            OutboxMessage.watch_id,
        )
        .where(*where)
        .order_by(OutboxMessage.created_at.desc(), OutboxMessage.id.desc())
        .limit(filters.limit + 1)
    )
    return [
        Entry(
            at=row.created_at,
            key=f"delivery:{row.id}",
            kind="delivery",
            action=row.event_type,
            title=f"{row.event_type} to {row.channel} {_destination(row, box)}: {row.status}"
            + (f" after {row.attempts} attempts" if row.attempts > 1 else ""),
            detail=(row.last_error or "")[:300] or None,
            severity=_DELIVERY_SEVERITY.get(row.status),
            object_type="watch" if row.watch_id else None,
            object_id=row.watch_id,
            watch_id=row.watch_id,
        )
        for row in rows
    ]


_DELIVERY_SEVERITY = {"delivered": "ok", "failed": "failed", "retrying": "failed"}


def _destination(row: Any, box: SecretBox | None) -> str:
    hint = str(row.destination_hint)
    return hint if box is None else deliveries.shown(box, row.destination_ciphertext, hint)


def _runs(session: Session, scope: Scope, filters: Filters) -> list[Entry]:
    """Git sources' recent runs (the store keeps the last few per source)."""
    if not filters.wants("reconcile") or (scope.watch_ids is not None):
        return []
    stmt = select(Source.name, Source.runs).where(Source.org_id == scope.org_id)
    if scope.source is not None:
        stmt = stmt.where(Source.name == scope.source)
    entries = []
    for name, runs in session.execute(stmt):
        for run in runs or []:
            entry = _run_entry(name, run)
            if entry is not None and within(entry, filters):
                entries.append(entry)
    entries.sort(key=lambda e: (e.at, e.key), reverse=True)
    return entries[: filters.limit + 1]


def _run_entry(source: str, run: dict[str, Any]) -> Entry | None:
    try:
        at = datetime.fromisoformat(str(run.get("at", "")).replace("Z", "+00:00"))
    except ValueError:
        return None
    result = str(run.get("result", ""))
    revision = str(run.get("revision") or "")[:12]
    counts = ", ".join(f"{run[k]} {k}" for k in ("created", "updated", "pruned") if run.get(k))
    title = f"Reconciled {revision or 'nothing'}: {result}" + (f" ({counts})" if counts else "")
    return Entry(
        at=at,
        key=f"run:{source}@{run.get('at')}",
        kind="reconcile",
        action=f"reconcile.{result}",
        title=title,
        actor="system",
        detail=str(run.get("message") or "")[:300] or None,
        severity="ok" if result in ("applied", "unchanged") else "failed",
        object_type="source",
        object_id=source,
        object_name=source,
    )


def _named(session: Session, org_id: str, entries: Sequence[Entry]) -> list[Entry]:
    """The page's entries with the names of their objects as they are now (a few indexed
    lookups, one per kind of object on the page): an audited incident links to its watch; an
    object that is gone keeps the name its entry stored (a deleted watch's `watch.delete`
    entry holds it), else its id, and is not linked."""
    incident_ids = {e.object_id for e in entries if e.object_type == "incident" and e.object_id}
    incident_watch = _pairs(
        session, Incident.id, Incident.watch_id, Incident.org_id == org_id, incident_ids
    )
    watch_ids = {e.watch_id for e in entries if e.watch_id} | set(incident_watch.values())
    watches = _pairs(session, Watch.id, Watch.name, Watch.org_id == org_id, watch_ids)
    agent_keys = {e.object_id for e in entries if e.object_type == "agent" and e.object_id}
    agents = {
        row.key: row.name or row.slug
        for row in (
            session.execute(
                select(Agent.key, Agent.name, Agent.slug).where(
                    Agent.org_id == org_id, Agent.key.in_(agent_keys)
                )
            )
            if agent_keys
            else ()
        )
    }
    keys = _ids(entries, "api_key")
    users = _ids(entries, "user")
    key_names = {
        row.id: row.name or f"key …{row.hint}"
        for row in (
            session.execute(
                select(ApiKey.id, ApiKey.name, ApiKey.hint).where(
                    ApiKey.org_id == org_id, ApiKey.id.in_(keys)
                )
            )
            if keys
            else ()
        )
    }
    emails = _pairs(session, User.id, User.email, User.org_id == org_id, users)
    orgs = _pairs(session, Org.id, Org.name, Org.id == org_id, _ids(entries, "org"))
    named = []
    for entry in entries:
        if entry.object_type == "incident":
            watch_id = incident_watch.get(entry.object_id or "")
            entry = dataclasses.replace(
                entry,
                object_type="watch" if watch_id else None,
                object_id=watch_id or entry.object_id,
                object_name=None if watch_id else f"incident {entry.object_id}",
                watch_id=watch_id,
            )
        if entry.object_type == "agent":
            found = agents.get(entry.object_id or "")
            entry = dataclasses.replace(
                entry,
                object_name=found or entry.object_name or entry.object_id,
                object_type="agent" if found else None,
                gone=found is None,
            )
        elif entry.watch_id:
            name = watches.get(entry.watch_id)
            entry = dataclasses.replace(
                entry,
                object_name=name or entry.object_name,
                object_type=entry.object_type if name else None,
                gone=name is None,
            )
        elif entry.target_type in ("api_key", "user", "org"):
            names = {"api_key": key_names, "user": emails, "org": orgs}[entry.target_type]
            found = names.get(entry.object_id or "")
            entry = dataclasses.replace(entry, object_name=found or entry.object_name)
        named.append(entry)
    return named


def _ids(entries: Sequence[Entry], target_type: str) -> set[str]:
    return {e.object_id for e in entries if e.target_type == target_type and e.object_id}


def _pairs(
    session: Session,
    key: InstrumentedAttribute[Any],
    value: InstrumentedAttribute[Any],
    scoped: ColumnElement[bool],
    ids: set[str],
) -> dict[str, Any]:
    """`key -> value` of the rows whose key is one of `ids` (no query for none)."""
    if not ids:
        return {}
    return {
        row[0]: row[1] for row in session.execute(select(key, value).where(scoped, key.in_(ids)))
    }


# -- the live state of a page's object ---------------------------------------------------------


@dataclass(frozen=True)
class Live:
    """An object's state now, and a stamp that changes when it does."""

    stamp: str
    facts: dict[str, Any]


def live_overview(session: Session, org_id: str) -> Live:
    """The org's watches by status, its open incidents, and when its timeline last moved."""
    counts = {
        row[0]: row[1]
        for row in session.execute(
            select(Watch.drift_status, func.count())
            .where(Watch.org_id == org_id)
            .group_by(Watch.drift_status)
        )
    }
    open_incidents = session.scalar(
        select(func.count())
        .select_from(Incident)
        .where(Incident.org_id == org_id, Incident.status.in_(ACTIVE))
    )
    stamp = _digest(latest_stamp(session, org_id), sorted(counts.items()), open_incidents)
    facts = {"counts": counts, "total": sum(counts.values()), "incidents": open_incidents}
    return Live(stamp, facts)


def live_watch(session: Session, org_id: str, watch_id: str) -> Live:
    """A watch's status, incident and last check (404 for another org's watch)."""
    watch = get_watch(session, org_id, watch_id)
    incident = session.get(Incident, watch.incident_id) if watch.incident_id else None
    stamp = _digest(
        watch.drift_status,
        incident.id if incident else None,
        incident.status if incident else None,
        watch.baseline_snapshot_id,
        watch.last_snapshot_id,
        watch.open_breaking,
        watch.open_warning,
    )
    return Live(stamp, {"watch": watch, "incident": incident})


def live_agent(session: Session, org_id: str, agent_id: str) -> Live:
    """An agent's runtime state and who last changed it."""
    agent = get_agent(session, org_id, agent_id)
    stamp = _digest(
        agent.runtime_state, agent.runtime_reason, agent.runtime_changed_at, agent.updated_at
    )
    return Live(stamp, {"agent": agent})


def live_source(session: Session, org_id: str, name: str) -> Live:
    """A git source's Ready condition, applied revision and last run."""
    row = session.execute(
        select(Source.conditions, Source.runs, Source.last_applied_revision).where(
            Source.name == name, Source.org_id == org_id
        )
    ).one_or_none()
    if row is None:
        raise NotFound("no such git source in this org")
    ready = next((c for c in row.conditions or [] if c.get("type") == "Ready"), None)
    last_run = (row.runs or [None])[0]
    stamp = _digest(ready, row.last_applied_revision, last_run)
    return Live(stamp, {"ready": ready, "run": last_run, "applied": row.last_applied_revision})


def _digest(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


__all__ = [
    "KINDS",
    "BadFilter",
    "Entry",
    "Live",
    "Scope",
    "latest_stamp",
    "live_agent",
    "live_overview",
    "live_source",
    "live_watch",
    "parse_filters",
    "read",
    "resolve_scope",
]
