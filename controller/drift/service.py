"""Drift history, incidents and baselines: what checks recorded, and what people do about it.

All functions are scoped to the caller's org. Accepting a baseline and acknowledging or
resolving an incident are audited and emit the matching events through the outbox.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal

from pydantic import Field
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from controller.agents.policy import ACTIONS_STALE, STALE, WAIVER_EXPIRED, reasons_for
from controller.checks.engine import forget_prior_baseline
from controller.crypto import SecretBox
from controller.diffs.explain import with_hints
from controller.diffs.rules import ACK, order_actions
from controller.drift import acknowledgement_service as acknowledgement
from controller.drift.incidents import close_incident, current_incident
from controller.errors import Conflict, NotFound
from controller.model import paging
from controller.model.base import ApiModel, RequestModel, utc_iso
from controller.model.change import ChangeOut
from controller.model.ids import ID_PREFIX_PATTERN, normalized
from controller.model.principal import Principal
from controller.model.watch import (
    FAILURE_LABELS,
    DriftStatus,
    FailureClass,
    Health,
    IncidentSummary,
    Note,
    ObjectId,
    WatchOut,
    WatchType,
    is_stale_check,
)
from controller.store import audit, jobs
from controller.store.db import Database
from controller.store.models import DriftEvent, Incident, Snapshot, Watch
from controller.store.snapshots import decode_changes
from controller.watches import service as watches
from controller.watches.service import get_watch
from controller.watches.status import BaselineAccepted, Counts, facts_of, transition

PAGE_LIMIT = 50
EVENT_CURSOR_PATTERN = (
    r"^[0-9]{1,16}\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
)


class ChangeCountsOut(ApiModel):
    breaking: int
    warning: int
    info: int


class DriftEventSummary(ApiModel):
    id: str
    watch_id: str
    watch_name: str
    detected_at: datetime
    counts: ChangeCountsOut
    agent_actions: list[str]
    incident_id: str | None


class DriftEventOut(DriftEventSummary):
    base_snapshot_id: str | None
    snapshot_id: str | None
    changes: list[ChangeOut] = Field(description="each with its human `hint`")
    affected_profiles: list[str] = Field(
        default_factory=list,
        description="consumer profiles (ids) naming this watch whose schema a breaking "
        "change touches: payload checks to revisit",
    )


class DriftPage(ApiModel):
    events: list[DriftEventSummary]
    next_cursor: str | None


class DriftQuery(RequestModel):
    watch_id: ObjectId | None = None
    id_prefix: str | None = Field(
        default=None,
        pattern=ID_PREFIX_PATTERN,
        description="only the events whose id starts with these 4 to 36 characters",
    )
    limit: int = Field(default=PAGE_LIMIT, ge=1, le=PAGE_LIMIT)
    cursor: str | None = Field(default=None, pattern=EVENT_CURSOR_PATTERN)


class StatusChange(ChangeOut):
    message: str = Field(description="the change in words (the same text as `summary`)")


class StatusDriftEvent(DriftEventSummary):
    """The last drift event as the status plane shows it: flat counts, and changes that carry
    `message` beside `summary`."""

    base_snapshot_id: str | None
    snapshot_id: str | None
    affected_profiles: list[str]
    breaking_count: int
    warning_count: int
    info_count: int
    changes: list[StatusChange] = Field(description="each with its human `hint`")


class StatusIncident(ApiModel):
    status: Literal["none", "open", "acknowledged"] = Field(
        description="`none` when the watch has no open or acknowledged incident"
    )
    key: str | None = Field(description="the incident's id (null with `none`)")
    at: datetime | None = Field(description="when it opened")
    breaking_count: int
    flap_count: int = Field(
        default=0,
        description="times breaking drift came back within the flap window after the vendor "
        "reverted (each time the incident reopened)",
    )


class WatchStatus(ApiModel):
    """The status plane of one watch, flat (the keys agents written for the hosted product
    read), with the full watch and its preflight reason tokens beside it."""

    watch_id: str
    name: str
    url: str
    watch_type: WatchType
    drift_status: DriftStatus
    last_checked_at: datetime | None
    last_check_status: str | None
    last_error: str | None
    failure_class: FailureClass | None
    failure_label: str | None = Field(description="the failure class in words")
    health: Health
    incident: StatusIncident
    last_drift_event: StatusDriftEvent | None = Field(
        description="the newest drift event, with its changes and their hints"
    )
    agent_actions: list[str]
    reasons: list[str] = Field(description="the watch's preflight reason tokens")
    waived_until: datetime | None = Field(
        default=None,
        description="when the first waiver hiding a breaking change of the current comparison "
        "ends (.driftgate/waivers.yaml): from then the gate blocks until it is counted again",
    )
    watch: WatchOut


class BaselineIn(RequestModel):
    reason: Note = Field(min_length=1)


class IncidentAction(RequestModel):
    note: Note | None = Field(default=None)


class IncidentAck(acknowledgement.AckEvidence):
    """Body of `POST /api/watches/<id>/incident/ack`: `repository` and `branch` are checked
    against the approval rules of every agent bound to the watch (any of them refusing
    refuses the acknowledgement: 403 `approval_refused`)."""


class IncidentOut(ApiModel):
    # The component name /openapi.json published before the code moved (web/routes.py).
    published_name: ClassVar[str] = "controller__services__drift__IncidentOut"
    id: str
    watch_id: str
    status: Literal["open", "acknowledged", "resolved"]
    opened_at: datetime
    breaking_count: int
    acknowledged_at: datetime | None
    acknowledged_by: str | None
    resolved_at: datetime | None
    resolution: str | None
    flap_count: int = Field(
        description="times breaking drift came back within the flap window after the vendor "
        "reverted (each time the incident reopened); 0 for an incident that never flapped"
    )
    reopened_at: datetime | None = Field(description="when it last reopened")


IncidentStatus = Literal["open", "acknowledged", "resolved"]


class IncidentListed(IncidentOut):
    watch_name: str
    drift_event_id: str | None = Field(description="the drift event that opened or last updated it")
    ack_note: str | None
    resolved_by: str | None


class IncidentPage(ApiModel):
    incidents: list[IncidentListed]
    next_cursor: str | None


class IncidentQuery(RequestModel):
    status: list[IncidentStatus] = Field(
        default_factory=list,
        description="only incidents in these states (default: open and acknowledged)",
    )
    watch_id: ObjectId | None = None
    limit: int = Field(default=PAGE_LIMIT, ge=1, le=PAGE_LIMIT)
    cursor: str | None = Field(default=None, pattern=EVENT_CURSOR_PATTERN)


def list_incidents(session: Session, org_id: str, query: IncidentQuery) -> IncidentPage:
    """The org's incidents, newest opened first, at most `PAGE_LIMIT` a page."""
    statuses = query.status or ["open", "acknowledged"]
    stmt = select(Incident).where(Incident.org_id == org_id, Incident.status.in_(statuses))
    if query.watch_id:
        stmt = stmt.where(Incident.watch_id == query.watch_id)
    rows, cursor = paging.newest_first(
        session, stmt, Incident.opened_at, Incident.id, query.cursor, query.limit
    )
    names = {
        watch_id: name
        for watch_id, name in session.execute(
            select(Watch.id, Watch.name).where(Watch.id.in_({r.watch_id for r in rows}))
        )
    }
    return IncidentPage(
        incidents=[incident_listed(r, names.get(r.watch_id, "")) for r in rows],
        next_cursor=cursor,
    )


def get_incident(session: Session, org_id: str, incident_id: str) -> IncidentListed:
    """One incident of the org (another org's answers 404, as a missing one)."""
    row = session.execute(
        select(Incident, Watch.name)
        .join(Watch, Watch.id == Incident.watch_id)
        .where(Incident.id == incident_id, Incident.org_id == org_id)
    ).first()
    if row is None:
        raise NotFound("Incident not found")
    return incident_listed(row[0], row[1])


def incident_listed(incident: Incident, watch_name: str) -> IncidentListed:
    return IncidentListed(
        **incident_out(incident).model_dump(),
        watch_name=watch_name,
        drift_event_id=incident.drift_event_id,
        ack_note=incident.ack_note,
        resolved_by=incident.resolved_by,
    )


def incidents_by_watch(session: Session, watch_ids: list[str]) -> dict[str, IncidentSummary]:
    """The current (open or acknowledged) incident of each watch, in one query."""
    if not watch_ids:
        return {}
    rows = session.scalars(
        select(Incident).where(
            Incident.watch_id.in_(watch_ids), Incident.status.in_(("open", "acknowledged"))
        )
    )
    return {row.watch_id: incident_summary(row) for row in rows}


def incident_summary(incident: Incident) -> IncidentSummary:
    return IncidentSummary(
        id=incident.id,
        status=incident.status,
        opened_at=incident.opened_at,
        breaking_count=incident.breaking_count,
        flap_count=incident.flap_count or 0,
    )


def watch_out(session: Session, watch: Watch, now: datetime) -> WatchOut:
    out = watches.watch_out(watch, now)
    out.incident = incidents_by_watch(session, [watch.id]).get(watch.id)
    return out


def reasons_of(watch: Watch, now: datetime, change_reasons: Sequence[str] = ()) -> list[str]:
    """The preflight reason tokens of SPEC.md for a watch's state at `now` (`policy`'s rule
    1, `check_failed:stale` included); `change_reasons` are the drift's own tokens
    (`change_reasons_of`)."""
    reasons = reasons_for(watch.drift_status, watch.failure_class, change_reasons)
    stale = is_stale_check(
        status=watch.drift_status,
        last_checked_at=watch.last_checked_at,
        interval_minutes=watch.interval_minutes,
        now=now,
    )
    if watch.waived_until is not None and now >= watch.waived_until:
        reasons = [*reasons, WAIVER_EXPIRED]
    return [*reasons, STALE] if stale else reasons


def change_reasons_of(session: Session, watches: Sequence[Watch]) -> dict[str, list[str]]:
    """The gate reason tokens of the drifted watches' findings (`tool_poisoning_suspected`...)
    as the gate reads them: those of the drift event of each watch's open incident."""
    drifted = [w.incident_id for w in watches if w.drift_status == DriftStatus.DRIFTED]
    if not any(drifted):
        return {}
    rows = session.execute(
        select(Incident.watch_id, DriftEvent.gate_reasons)
        .join(DriftEvent, DriftEvent.id == Incident.drift_event_id)
        .where(Incident.id.in_([i for i in drifted if i is not None]))
    )
    return {watch_id: list(reasons or ()) for watch_id, reasons in rows}


def watch_status(session: Session, org_id: str, watch_id: str, now: datetime) -> WatchStatus:
    watch = get_watch(session, org_id, watch_id)
    event = session.scalar(
        select(DriftEvent)
        .where(DriftEvent.watch_id == watch.id)
        .order_by(DriftEvent.detected_at.desc(), DriftEvent.id.desc())
        .limit(1)
    )
    actions: list[str] = []
    if watch.drift_status == DriftStatus.DRIFTED and event is not None:
        actions = order_actions({*event.agent_actions, ACK})
    elif watch.drift_status == DriftStatus.ERROR:
        actions = ["check_watch_config"]
    out = watch_out(session, watch, now)
    if out.health.is_stale_check:
        actions = order_actions({*actions, *ACTIONS_STALE})
    current = out.incident
    return WatchStatus(
        watch_id=out.id,
        name=out.name,
        url=out.url,
        watch_type=out.watch_type,
        drift_status=out.drift_status,
        last_checked_at=out.last_checked_at,
        last_check_status=out.last_check_status,
        last_error=out.last_error,
        failure_class=out.failure_class,
        failure_label=FAILURE_LABELS[out.failure_class] if out.failure_class else None,
        health=out.health,
        incident=StatusIncident(
            status=current.status if current and current.status != "resolved" else "none",
            key=current.id if current else None,
            at=current.opened_at if current else None,
            breaking_count=current.breaking_count if current else 0,
            flap_count=current.flap_count if current else 0,
        ),
        last_drift_event=status_event(event, watch.name) if event else None,
        agent_actions=actions,
        reasons=reasons_of(watch, now, change_reasons_of(session, [watch]).get(watch.id, ())),
        waived_until=watch.waived_until,
        watch=out,
    )


def status_event(event: DriftEvent, watch_name: str) -> StatusDriftEvent:
    full = event_out(event, watch_name)
    return StatusDriftEvent(
        **full.model_dump(exclude={"changes"}),
        breaking_count=event.breaking_count,
        warning_count=event.warning_count,
        info_count=event.info_count,
        changes=[
            StatusChange.model_validate({**c.model_dump(), "message": c.summary})
            for c in full.changes
        ],
    )


def summary(event: DriftEvent, watch_name: str) -> DriftEventSummary:
    return DriftEventSummary(
        id=event.id,
        watch_id=event.watch_id,
        watch_name=watch_name,
        detected_at=event.detected_at,
        counts=ChangeCountsOut(
            breaking=event.breaking_count, warning=event.warning_count, info=event.info_count
        ),
        agent_actions=list(event.agent_actions),
        incident_id=event.incident_id,
    )


def list_events(session: Session, org_id: str, query: DriftQuery) -> DriftPage:
    stmt = select(DriftEvent).where(DriftEvent.org_id == org_id)
    if query.watch_id:
        # One watch's events, on its own index: the org is checked on the watch (another
        # org's watch has none here), not on each event, so SQLite does not walk the org's.
        owned = session.scalar(
            select(Watch.id).where(Watch.id == query.watch_id, Watch.org_id == org_id)
        )
        if owned is None:
            return DriftPage(events=[], next_cursor=None)
        stmt = select(DriftEvent).where(DriftEvent.watch_id == owned)
    if query.id_prefix:
        stmt = stmt.where(DriftEvent.id.startswith(normalized(query.id_prefix), autoescape=True))
    rows, cursor = paging.newest_first(
        session, stmt, DriftEvent.detected_at, DriftEvent.id, query.cursor, query.limit
    )
    listed = select(Watch.id, Watch.name).where(Watch.id.in_({r.watch_id for r in rows}))
    names = {watch_id: name for watch_id, name in session.execute(listed)}
    return DriftPage(
        events=[summary(r, names.get(r.watch_id, "")) for r in rows], next_cursor=cursor
    )


def get_event(session: Session, org_id: str, event_id: str) -> DriftEventOut:
    row = session.execute(
        select(DriftEvent, Watch.name)
        .join(Watch, Watch.id == DriftEvent.watch_id)
        .where(DriftEvent.id == event_id, DriftEvent.org_id == org_id)
    ).first()
    if row is None:
        raise NotFound("Drift event not found")
    event, name = row
    return event_out(event, name)


def event_out(event: DriftEvent, watch_name: str) -> DriftEventOut:
    """A drift event with its changes, each with its human hint."""
    return DriftEventOut(
        **summary(event, watch_name).model_dump(),
        base_snapshot_id=event.base_snapshot_id,
        snapshot_id=event.snapshot_id,
        changes=[ChangeOut.model_validate(c) for c in with_hints(decode_changes(event.changes))],
        affected_profiles=event.affected_profiles or [],
    )


def iter_events(
    session: Session, org_id: str, batch: int = 200
) -> Iterator[tuple[DriftEvent, Watch]]:
    """Every drift event of the org with its watch, oldest first, read in batches."""
    stmt = (
        select(DriftEvent, Watch)
        .join(Watch, Watch.id == DriftEvent.watch_id)
        .where(DriftEvent.org_id == org_id)
        .order_by(DriftEvent.detected_at, DriftEvent.id)
        .execution_options(yield_per=batch)
    )
    for row in session.execute(stmt):
        yield row[0], row[1]


def accept_baseline(
    session: Session,
    principal: Principal,
    watch_id: str,
    reason: str,
    box: SecretBox,
    now: datetime,
) -> Watch:
    """Make the last good snapshot the baseline; resolve the incident; audited."""
    watch = get_watch(session, principal.org_id, watch_id)
    if watch.last_snapshot_id is None:
        raise Conflict("the watch has no snapshot yet; run a check first", code="no_snapshot")
    snapshot = session.get(Snapshot, watch.last_snapshot_id)
    assert snapshot is not None
    previous = watch.baseline_snapshot_id
    decided = transition(facts_of(watch), BaselineAccepted())
    watch.baseline_snapshot_id = snapshot.id
    watch.baseline_fingerprint = snapshot.fingerprint
    watch.baseline_accepted_at = now
    watch.baseline_accepted_by = principal.actor
    # Accepted by a person: the baseline an automatic advance replaced is no longer one the
    # contract can revert to.
    forget_prior_baseline(watch)
    opened = decided.open_changes or Counts()
    watch.open_breaking, watch.open_warning, watch.open_info = (
        opened.breaking,
        opened.warning,
        opened.info,
    )
    watch.drift_status = decided.status.value
    watch.waived_until = None  # nothing waived is left against the new baseline
    incident = current_incident(session, watch.id)
    if incident is not None and decided.resolve_incident is not None:
        close_incident(
            session,
            box,
            watch,
            incident,
            now,
            resolution=decided.resolve_incident,
            by=principal.actor,
        )
    audit.by(
        session,
        principal,
        "watch.baseline_accept",
        watch.id,
        {"reason": reason, "from": previous, "to": snapshot.id},
    )
    return watch


def _open_incident_of(
    session: Session, principal: Principal, watch_id: str
) -> tuple[Watch, Incident]:
    """The caller's watch and its open (or acknowledged) incident, else 404."""
    watch = get_watch(session, principal.org_id, watch_id)
    incident = current_incident(session, watch.id)
    if incident is None:
        raise NotFound("no open incident on this watch", code="not_found")
    return watch, incident


@dataclass(frozen=True)
class IncidentAct:
    """A person's action on a watch's incident, as the steps below see it."""

    session: Session
    box: SecretBox
    principal: Principal
    watch: Watch
    incident: Incident
    data: IncidentAction | acknowledgement.AckEvidence
    now: datetime


def _acknowledge(act: IncidentAct) -> None:
    """Open → acknowledged through the one acknowledgement decision (the approval rules of
    every agent bound to the watch); an acknowledged incident stays as it is."""
    data = act.data
    evidence = (
        data if isinstance(data, acknowledgement.AckEvidence) else IncidentAck(note=data.note)
    )
    acknowledgement.acknowledge_watch(
        act.session, act.principal, act.watch, act.incident, evidence, act.box, act.now
    )


def _resolve(act: IncidentAct) -> None:
    """Closed by hand (audited); the baseline stays as it is, so the watch still blocks."""
    close_incident(
        act.session,
        act.box,
        act.watch,
        act.incident,
        act.now,
        resolution="manual",
        by=act.principal.actor,
    )
    audit.by(
        act.session, act.principal, "incident.resolve", act.incident.id, {"note": act.data.note}
    )


@dataclass(frozen=True)
class IncidentStep:
    """What a person can do to a watch's incident: the step (it audits what it changed) and
    the body it reads (the API's request body, the console's form)."""

    run: Callable[[IncidentAct], None]
    body: type[IncidentAction | acknowledgement.AckEvidence]


INCIDENT_ACTIONS: dict[str, IncidentStep] = {
    "ack": IncidentStep(_acknowledge, IncidentAck),
    "resolve": IncidentStep(_resolve, IncidentAction),
}


def act_on_incident(
    session: Session,
    principal: Principal,
    watch_id: str,
    action: str,
    data: IncidentAction | acknowledgement.AckEvidence,
    box: SecretBox,
    now: datetime,
) -> Incident:
    """Runs one of `INCIDENT_ACTIONS` on the watch's open incident (404 when there is none)."""
    step = INCIDENT_ACTIONS[action]
    watch, incident = _open_incident_of(session, principal, watch_id)
    step.run(IncidentAct(session, box, principal, watch, incident, data, now))
    return incident


def incident_out(incident: Incident) -> IncidentOut:
    return IncidentOut(
        id=incident.id,
        watch_id=incident.watch_id,
        status=incident.status,
        opened_at=incident.opened_at,
        breaking_count=incident.breaking_count,
        acknowledged_at=incident.acknowledged_at,
        acknowledged_by=incident.acknowledged_by,
        resolved_at=incident.resolved_at,
        resolution=incident.resolution,
        flap_count=incident.flap_count or 0,
        reopened_at=incident.reopened_at,
    )


def ack_trail(session: Session, org_id: str) -> list[dict[str, Any]]:
    rows = session.scalars(
        select(Incident)
        .where(Incident.org_id == org_id, Incident.acknowledged_at.is_not(None))
        .order_by(Incident.acknowledged_at)
    )
    return [
        {
            "incidentId": r.id,
            "watchId": r.watch_id,
            "acknowledgedAt": utc_iso(r.acknowledged_at) if r.acknowledged_at else None,
            "acknowledgedBy": r.acknowledged_by,
            "note": r.ack_note,
            "resolvedAt": utc_iso(r.resolved_at) if r.resolved_at else None,
            "resolution": r.resolution,
        }
        for r in rows
    ]


def status_counts(session: Session, org_id: str) -> dict[str, int]:
    counts = {s.value: 0 for s in DriftStatus}
    for status, count in session.execute(
        select(Watch.drift_status, func.count())
        .where(Watch.org_id == org_id)
        .group_by(Watch.drift_status)
    ):
        counts[status] = int(count)
    return counts


def ensure_checkable(watch: Watch) -> None:
    if watch.drift_status == DriftStatus.DISABLED:
        raise Conflict("the watch is paused; resume it first", code="watch_paused")


class CheckQuery(RequestModel):
    wait: float = Field(default=0, ge=0, le=60, description="seconds to wait for the result")


class CheckResultOut(ApiModel):
    """What a finished check did (`controller.checks.engine.CheckResult`)."""

    watch_id: str | None = None
    outcome: str | None = Field(
        default=None, description="unchanged, baseline, changed, error or skipped"
    )
    status: str | None = Field(default=None, description="the watch's driftStatus after it")
    drift_event_id: str | None = Field(default=None, description="when the contract drifted")
    counts: ChangeCountsOut | None = Field(default=None, description="the changes by severity")
    failure_class: str | None = Field(
        default=None, description="when it failed: fetch_failed, blocked_target, timeout, ..."
    )
    error: str | None = None


class CheckOut(ApiModel):
    job_id: int
    status: str = Field(description="queued, running, done or failed")
    result: CheckResultOut | None = None
    watch: WatchOut | None = None


def check_now(
    database: Database, session: Session, org_id: str, watch_id: str, wait: float, now: datetime
) -> CheckOut:
    """Queue a check of the org's watch (joining one already queued; a paused watch is 409)
    and, with `wait`, wait up to that many seconds: the finished job with the watch as it then
    is, else the job as it stands (`watch` is None)."""
    watch = get_watch(session, org_id, watch_id)
    ensure_checkable(watch)
    session.commit()
    job_id = jobs.request_check(database, watch.id, now)
    job = jobs.wait_for(database, job_id, wait) if wait else None
    if job is not None and job.status in ("done", "failed"):
        with database.session() as fresh:
            out = watch_out(fresh, get_watch(fresh, org_id, watch.id), datetime.now(UTC))
        result = CheckResultOut.model_validate(job.result) if job.result else None
        return CheckOut(job_id=job_id, status=job.status, result=result, watch=out)
    return CheckOut(job_id=job_id, status=job.status if job else "queued")


def incident_watch(session: Session, org_id: str, incident_id: str) -> str:
    """The watch of the org's incident (404 for another org's or an unknown one)."""
    incident = session.get(Incident, incident_id)
    if incident is None or incident.org_id != org_id:
        raise NotFound("Incident not found")
    return incident.watch_id
