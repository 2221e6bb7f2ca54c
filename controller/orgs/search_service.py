"""Search of one org by name or id prefix: watches, agents, git sources and incidents.

The console's navigation has one search box; this is what it asks. Matching is a prefix,
case-insensitive, over names and ids; each kind answers at most `LIMIT` hits, so a search
stays bounded however large the org is. Never another org's rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from controller.settings import Settings
from controller.store.models import Agent, Incident, Org, Watch

LIMIT = 10
MIN_LENGTH = 1
MAX_LENGTH = 200


@dataclass(frozen=True)
class Hit:
    """One thing found: its kind (`watch`, `agent`, `source`, `incident`), id and label."""

    kind: str
    id: str
    label: str
    detail: str = ""


def search(session: Session, settings: Settings, org_id: str, text: str) -> list[Hit]:
    """Things of `org_id` whose name or id starts with `text` (case-insensitive)."""
    prefix = text.strip()[:MAX_LENGTH]
    if len(prefix) < MIN_LENGTH:
        return []
    pattern = _like(prefix)
    return [
        *_watches(session, org_id, pattern),
        *_agents(session, org_id, pattern),
        *_sources(session, settings, org_id, prefix),
        *_incidents(session, org_id, pattern),
    ]


def _watches(session: Session, org_id: str, pattern: str) -> list[Hit]:
    rows = session.execute(
        select(Watch.id, Watch.name, Watch.drift_status)
        .where(Watch.org_id == org_id)
        .where(or_(Watch.name.ilike(pattern, escape="\\"), Watch.id.ilike(pattern, escape="\\")))
        .order_by(Watch.name)
        .limit(LIMIT)
    )
    return [Hit("watch", id_, name, status) for id_, name, status in rows]


def _agents(session: Session, org_id: str, pattern: str) -> list[Hit]:
    rows = session.execute(
        select(Agent.id, Agent.slug, Agent.name)
        .where(Agent.org_id == org_id)
        .where(
            or_(
                Agent.slug.ilike(pattern, escape="\\"),
                Agent.name.ilike(pattern, escape="\\"),
                Agent.id.ilike(pattern, escape="\\"),
            )
        )
        .order_by(Agent.slug)
        .limit(LIMIT)
    )
    return [Hit("agent", id_, name or slug, slug) for id_, slug, name in rows]


def _sources(session: Session, settings: Settings, org_id: str, prefix: str) -> list[Hit]:
    org = session.get(Org, org_id)
    if org is None:
        return []
    folded = prefix.casefold()
    found = [
        s
        for s in settings.sources
        if s.org in (org.id, org.name) and s.name.casefold().startswith(folded)
    ]
    return [Hit("source", s.name, s.name, s.url) for s in found[:LIMIT]]


def _incidents(session: Session, org_id: str, pattern: str) -> list[Hit]:
    rows = session.execute(
        select(Incident.id, Incident.status, Watch.name)
        .join(Watch, Watch.id == Incident.watch_id)
        .where(Incident.org_id == org_id, Watch.org_id == org_id)
        .where(or_(Incident.id.ilike(pattern, escape="\\"), Watch.name.ilike(pattern, escape="\\")))
        .order_by(Incident.opened_at.desc())
        .limit(LIMIT)
    )
    return [Hit("incident", id_, f"incident on {name}", status) for id_, status, name in rows]


def _like(prefix: str) -> str:
    """A LIKE pattern matching `prefix` literally, then anything."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"{escaped}%"
