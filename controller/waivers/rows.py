"""The stored waivers of an org as `controller.model.waivers` objects, and which apply to a
watch (its name, its watch set's name or one of its tags matches the waiver's `watch`)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.model.waivers import WatchWaiver
from controller.store.models import WaiverRow, Watch, WatchSet, WatchTag


def waiver_of(row: WaiverRow) -> WatchWaiver:
    """The waiver a row holds (validated when its file was reconciled)."""
    return WatchWaiver.model_construct(
        watch=row.watch,
        rule=row.rule,
        path=row.path,
        operation=row.operation,
        tool=row.tool,
        owner=row.owner,
        reason=row.reason,
        expires=row.expires,
    )


def org_waivers(session: Session, org_id: str) -> list[WaiverRow]:
    """The org's waivers, in the order their files list them (then by source)."""
    return list(
        session.scalars(
            select(WaiverRow)
            .where(WaiverRow.org_id == org_id)
            .order_by(WaiverRow.managed_source, WaiverRow.managed_path, WaiverRow.created_at)
        )
    )


def watch_labels(session: Session, watch: Watch) -> tuple[str | None, list[str]]:
    """The watch's set name and tags: what a waiver's `watch` glob may match besides its name."""
    set_name = (
        session.scalar(select(WatchSet.name).where(WatchSet.id == watch.watch_set_id))
        if watch.watch_set_id
        else None
    )
    tags = list(session.scalars(select(WatchTag.tag).where(WatchTag.watch_id == watch.id)))
    return set_name, tags


def watch_waivers(session: Session, watch: Watch) -> list[WatchWaiver]:
    """The org's waivers that apply to `watch`, expired ones included (`waive` skips them)."""
    rows = org_waivers(session, watch.org_id)
    if not rows:
        return []
    set_name, tags = watch_labels(session, watch)
    waivers = [waiver_of(row) for row in rows]
    return [waiver for waiver in waivers if waiver.applies_to(watch.name, set_name, tags)]
