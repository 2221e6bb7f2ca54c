"""Incidents: breaking drift on a watch from detection until it is resolved.

Shared by the checks (which open incidents and resolve them when the vendor reverts) and by
the people-facing services (acknowledge, resolve, accept a baseline). Each move emits its
event through the outbox in the caller's transaction.

Flap damping: breaking drift that comes back within the flap window after its incident was
resolved as `reverted` (a vendor serving A, then B, then A ...) reopens that incident rather
than opening one per cycle; `flap_count` says how many times it came back.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.agents.runtime import affected_agent_ids
from controller.crypto import SecretBox
from controller.events.outbox import emit
from controller.store.models import Incident, Watch

ACTIVE = ("open", "acknowledged")


def current_incident(session: Session, watch_id: str) -> Incident | None:
    """The open or acknowledged incident of a watch, if any."""
    return session.scalar(
        select(Incident).where(Incident.watch_id == watch_id, Incident.status.in_(ACTIVE))
    )


def reopenable_incident(
    session: Session, watch: Watch, now: datetime, window_seconds: float
) -> Incident | None:
    """The incident that breaking drift found now continues: the watch's last resolved
    incident, when it was resolved as `reverted` within the window and the baseline has not
    moved since (a baseline accepted or advanced afterwards makes it new drift)."""
    if window_seconds <= 0:
        return None
    last = session.scalar(
        select(Incident)
        .where(Incident.watch_id == watch.id, Incident.status == "resolved")
        .order_by(Incident.resolved_at.desc(), Incident.id.desc())
        .limit(1)
    )
    if last is None or last.resolution != "reverted" or last.resolved_at is None:
        return None
    if now - last.resolved_at > timedelta(seconds=window_seconds):
        return None
    if watch.baseline_accepted_at is not None and watch.baseline_accepted_at > last.resolved_at:
        return None
    return last


def reopen_incident(
    session: Session,
    box: SecretBox,
    watch: Watch,
    incident: Incident,
    now: datetime,
    *,
    breaking_count: int,
    drift_event_id: str | None,
    agent_ids: list[str] | None = None,
) -> None:
    """Resolved (`reverted`) -> open again, one more flap, and say so with `incident.open`.

    An earlier acknowledgement stays on record (`acknowledged_at`, `acknowledged_by`) but no
    longer counts: the incident is `open`, so a policy that needs an acknowledgement blocks
    until someone acknowledges again."""
    incident.status = "open"
    incident.resolved_at = None
    incident.resolution = None
    incident.resolved_by = None
    incident.flap_count += 1
    incident.reopened_at = now
    incident.breaking_count = breaking_count
    incident.drift_event_id = drift_event_id or incident.drift_event_id
    watch.incident_id = incident.id
    emit_incident(session, box, watch, incident, "incident.open", now, agent_ids=agent_ids)


def close_incident(
    session: Session,
    box: SecretBox,
    watch: Watch,
    incident: Incident,
    now: datetime,
    *,
    resolution: str,
    by: str,
) -> None:
    """Resolve the incident (`reverted`, `baseline_accepted`, `manual`) and say so."""
    incident.status = "resolved"
    incident.resolved_at = now
    incident.resolution = resolution
    incident.resolved_by = by
    watch.incident_id = None
    emit_incident(session, box, watch, incident, "incident.resolved", now)


def acknowledge_incident(
    session: Session,
    box: SecretBox,
    watch: Watch,
    incident: Incident,
    now: datetime,
    *,
    by: str,
    note: str | None,
) -> bool:
    """Open → acknowledged, and say so; False when the incident was not open."""
    if incident.status != "open":
        return False
    incident.status = "acknowledged"
    incident.acknowledged_at = now
    incident.acknowledged_by = by
    incident.ack_note = note
    emit_incident(session, box, watch, incident, "incident.acknowledged", now)
    return True


def emit_incident(
    session: Session,
    box: SecretBox,
    watch: Watch,
    incident: Incident,
    kind: str,
    now: datetime,
    *,
    agent_ids: list[str] | None = None,
) -> None:
    """Say what happened to an incident; `agent_ids`, when the caller has them already (a
    check that also says `drift.detected`), are the watch's bound agents (one query a check)."""
    emit(
        session,
        box,
        org_id=watch.org_id,
        event_type=kind,
        data={
            "incidentId": incident.id,
            "watchId": watch.id,
            "watchName": watch.name,
            "status": incident.status,
            "breakingCount": incident.breaking_count,
            "resolution": incident.resolution,
            "flapCount": incident.flap_count or 0,
            "reopenedAt": incident.reopened_at.isoformat() if incident.reopened_at else None,
            "affectedAgentIds": (
                agent_ids if agent_ids is not None else affected_agent_ids(session, watch.id)
            ),
        },
        now=now,
        watch=watch,
    )
