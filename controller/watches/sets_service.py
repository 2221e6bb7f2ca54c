"""Org watch sets through the API: named groups of watches (for example staging versus
production) that an org manages without git.

A watch belongs to at most one set. Sets and watches applied from a git source are read-only
here (409): their membership is declared in watch-sets.yaml. Deleting a set keeps its watches.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Annotated

from pydantic import Field, field_validator
from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from controller.errors import Conflict, NotFound, Unprocessable
from controller.model.base import ApiModel, RequestModel
from controller.model.gitops import Environment
from controller.model.managed import ensure_unmanaged, managed_by
from controller.model.principal import Principal
from controller.model.watch import ManagedBy, Note, ObjectId, WatchName
from controller.store import audit
from controller.store.models import Watch, WatchSet

MAX_WATCHES = 1000

WatchId = ObjectId


class WatchSetIn(RequestModel):
    """Body of `POST /api/org/watch-sets` and `PUT /api/org/watch-sets/<id>` (a replacement)."""

    name: WatchName
    environment: Environment | None = Field(default=None, description="e.g. staging, production")
    description: Note | None = None
    watch_ids: Annotated[list[WatchId], Field(max_length=MAX_WATCHES)] = Field(
        default_factory=list, description="the watches of the set; each in at most one set"
    )

    @field_validator("watch_ids")
    @classmethod
    def _dedupe(cls, ids: list[str]) -> list[str]:
        return list(dict.fromkeys(ids))


class WatchSetOut(ApiModel):
    id: str
    name: str
    environment: str | None
    description: str | None
    watch_ids: list[str]
    managed_by: ManagedBy | None
    created_at: datetime
    updated_at: datetime


class WatchSetList(ApiModel):
    watch_sets: list[WatchSetOut]


def list_sets(session: Session, org_id: str) -> WatchSetList:
    sets = list(
        session.scalars(select(WatchSet).where(WatchSet.org_id == org_id).order_by(WatchSet.name))
    )
    members: dict[str, list[str]] = defaultdict(list)
    rows = session.execute(
        select(Watch.watch_set_id, Watch.id)
        .where(Watch.org_id == org_id, Watch.watch_set_id.is_not(None))
        .order_by(Watch.created_at, Watch.id)
    )
    for set_id, watch_id in rows:
        members[str(set_id)].append(watch_id)
    return WatchSetList(watch_sets=[_watch_set_out(s, members[s.id]) for s in sets])


def get_set(session: Session, org_id: str, set_id: str) -> WatchSet:
    watch_set = session.scalar(
        select(WatchSet).where(WatchSet.org_id == org_id, WatchSet.id == set_id)
    )
    if watch_set is None:
        raise NotFound("Watch set not found")
    return watch_set


def watch_set_out(session: Session, watch_set: WatchSet) -> WatchSetOut:
    """The API model of a watch set, with its watches' ids (oldest first)."""
    ids = session.scalars(
        select(Watch.id)
        .where(Watch.watch_set_id == watch_set.id)
        .order_by(Watch.created_at, Watch.id)
    )
    return _watch_set_out(watch_set, list(ids))


def create_set(session: Session, principal: Principal, data: WatchSetIn) -> WatchSet:
    watch_set = WatchSet(
        org_id=principal.org_id,
        name=data.name,
        environment=data.environment,
        description=data.description,
    )
    session.add(watch_set)
    _flush_unique(session, data.name)
    join(session, principal.org_id, watch_set.id, data.watch_ids)
    _audit(session, principal, "watch_set.create", watch_set, len(data.watch_ids))
    return watch_set


def replace_set(session: Session, principal: Principal, set_id: str, data: WatchSetIn) -> WatchSet:
    watch_set = get_set(session, principal.org_id, set_id)
    ensure_unmanaged(watch_set, "watch set", watch_set.name)
    watch_set.name = data.name
    watch_set.environment = data.environment
    watch_set.description = data.description
    _flush_unique(session, data.name)
    session.execute(
        update(Watch)
        .where(Watch.watch_set_id == watch_set.id, Watch.id.not_in(data.watch_ids))
        .values(watch_set_id=None)
        .execution_options(synchronize_session="fetch")
    )
    join(session, principal.org_id, watch_set.id, data.watch_ids)
    _audit(session, principal, "watch_set.update", watch_set, len(data.watch_ids))
    return watch_set


def delete_set(session: Session, principal: Principal, set_id: str) -> None:
    """Removes the set; its watches stay, in no set."""
    watch_set = get_set(session, principal.org_id, set_id)
    ensure_unmanaged(watch_set, "watch set", watch_set.name)
    session.execute(
        update(Watch)
        .where(Watch.watch_set_id == watch_set.id)
        .values(watch_set_id=None)
        .execution_options(synchronize_session="fetch")
    )
    session.delete(watch_set)
    _audit(session, principal, "watch_set.delete", watch_set, 0)


def join(
    session: Session, org_id: str, set_id: str, watches: Sequence[str] | Sequence[Watch]
) -> None:
    """Put watches (ids or rows of the org) into the API set `set_id`.

    Ids outside the org are unknown (422, as if they did not exist); watches applied from
    git or already in another set are refused (409), so nothing moves silently.
    """
    watch_set = get_set(session, org_id, set_id)
    ensure_unmanaged(watch_set, "watch set", watch_set.name)
    ids = [w if isinstance(w, str) else w.id for w in watches]
    if not ids:
        return
    rows = {
        w.id: w
        for w in session.scalars(select(Watch).where(Watch.org_id == org_id, Watch.id.in_(ids)))
    }
    unknown = [i for i in ids if i not in rows]
    if unknown:
        raise Unprocessable(
            f"{len(unknown)} watch id(s) not found in this org",
            code="unknown_watch",
            details=[{"path": "/watchIds", "message": f"not found: {i}"} for i in unknown[:20]],
        )
    for watch_id in ids:
        watch = rows[watch_id]
        ensure_unmanaged(watch, "watch", watch.name)
        if watch.watch_set_id not in (None, set_id):
            raise Conflict(
                f"watch {watch.name!r} is already in another watch set; remove it there first",
                code="watch_in_other_set",
            )
        watch.watch_set_id = set_id
    session.flush()


def _watch_set_out(watch_set: WatchSet, watch_ids: list[str]) -> WatchSetOut:
    return WatchSetOut(
        id=watch_set.id,
        name=watch_set.name,
        environment=watch_set.environment,
        description=watch_set.description,
        watch_ids=watch_ids,
        managed_by=managed_by(watch_set),
        created_at=watch_set.created_at,
        updated_at=watch_set.updated_at,
    )


def _flush_unique(session: Session, name: str) -> None:
    try:
        session.flush()
    except IntegrityError:
        raise Conflict(
            f"a watch set named {name!r} already exists", code="duplicate_name"
        ) from None


def _audit(
    session: Session, principal: Principal, action: str, watch_set: WatchSet, watches: int
) -> None:
    audit.by(session, principal, action, watch_set.id, {"name": watch_set.name, "watches": watches})
