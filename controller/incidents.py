"""Incidents: breaking drift on a watch from detection until it is resolved.

Shared by the checks (which open incidents and resolve them when the vendor reverts) and by
the people-facing services (acknowledge, resolve, accept a baseline). Each move emits its
event through the outbox in the caller's transaction.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.events.outbox import emit
from controller.runtime import affected_agent_ids
from controller.store.models import Incident, Watch

ACTIVE = ("open", "acknowledged")


def current_incident(session: Session, watch_id: str) -> Incident | None:
    """The open or acknowledged incident of a watch, if any."""
    return session.scalar(
        select(Incident).where(Incident.watch_id == watch_id, Incident.status.in_(ACTIVE))
    )


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
    session: Session, box: SecretBox, watch: Watch, incident: Incident, kind: str, now: datetime
) -> None:
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
            "affectedAgentIds": affected_agent_ids(session, watch.id),
        },
        now=now,
        watch=watch,
    )
