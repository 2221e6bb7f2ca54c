"""Waivers' use cases: the org's waivers as the API and the console show them, and the
controller's routine that tells owners before and at expiry and counts the findings of an
ended waiver again.

The routine runs each tick. Each notice is sent once: the row that records it is updated only
while it is still unset (`... WHERE expired_notified_at IS NULL`), in the transaction that
queues the outbox message, so two controllers (or one restarted halfway) never send it twice
and never lose it. A watch whose waiver ended (`waived_until` passed) is counted again under
its row lock (`controller.checks.engine.reapply_waivers`); the gate blocks it from the
moment the waiver ends, before this has run (fail closed).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import Any

from pydantic import Field
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from controller.checks.engine import reapply_waivers
from controller.crypto import SecretBox
from controller.events import outbox
from controller.events.channels import Channel, Event, Outgoing
from controller.events.outbox import emit
from controller.logs import log
from controller.model.base import ApiModel
from controller.model.change import Change
from controller.model.principal import Principal
from controller.model.waivers import NOTICE_DAYS
from controller.settings import Settings
from controller.sources.http import FetchError
from controller.store import jobs
from controller.store.db import Database
from controller.store.models import DriftEvent, WaiverRow, Watch
from controller.store.snapshots import decode_changes
from controller.summary import smtp
from controller.summary.service import address_hint, relay
from controller.waivers import email
from controller.waivers.rows import org_waivers, waiver_of, watch_labels

logger = logging.getLogger("driftgate.waivers")
WAIVER_EMAIL = "waiver_email"  # the channel of the owners' e-mails
ADDRESS = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
REEVALUATED_PER_TICK = 100


class CoveredFinding(ApiModel):
    watch_id: str
    watch_name: str
    rule: str
    path: str
    severity: str
    summary: str


class WaiverOut(ApiModel):
    """One waiver of `.driftgate/waivers.yaml` as the org has it now."""

    id: str = Field(
        description="the waiver's key: its rule and a digest of what it matches "
        "(`endpoint-removed:3f2a9c01b7d4`)"
    )
    watch: str
    rule: str
    path: str | None
    operation: str | None
    tool: str | None
    owner: str
    reason: str
    expires: date
    expired: bool
    source: str | None = Field(description="the git source it comes from")
    file: str | None
    watches: list[str] = Field(description="the names of the org's watches it applies to")
    findings: list[CoveredFinding] = Field(
        description="the findings of those watches' current comparisons it waives now"
    )


class WaiverList(ApiModel):
    items: list[WaiverOut]


def list_waivers(session: Session, principal: Principal, now: datetime) -> WaiverList:
    """The org's waivers, each with the watches it applies to and the findings it covers."""
    return WaiverList(items=describe(session, principal.org_id, now))


def describe(
    session: Session, org_id: str, now: datetime, watch_id: str | None = None
) -> list[WaiverOut]:
    """The org's waivers as `WaiverOut` (only those applying to `watch_id` when given)."""
    rows = org_waivers(session, org_id)
    if not rows:
        return []
    query = select(Watch).where(Watch.org_id == org_id)
    if watch_id is not None:
        query = query.where(Watch.id == watch_id)
    watches = list(session.scalars(query.order_by(Watch.name)))
    labels = {watch.id: watch_labels(session, watch) for watch in watches}
    found: dict[str, list[Change]] = {}  # each watch's current changes, read once

    def changes_of(watch: Watch) -> list[Change]:
        if watch.id not in found:
            found[watch.id] = _current_changes(session, watch)
        return found[watch.id]

    out: list[WaiverOut] = []
    for row in rows:
        waiver = waiver_of(row)
        applies = [w for w in watches if waiver.applies_to(w.name, *labels[w.id])]
        if watch_id is not None and not applies:
            continue
        findings = [
            CoveredFinding(
                watch_id=watch.id,
                watch_name=watch.name,
                rule=change.rule,
                path=change.path,
                severity=change.severity.value,
                summary=change.summary,
            )
            for watch in applies
            for change in changes_of(watch)
            if waiver.matches(change)
        ]
        out.append(
            WaiverOut(
                id=row.key,
                watch=row.watch,
                rule=row.rule,
                path=row.path,
                operation=row.operation,
                tool=row.tool,
                owner=row.owner,
                reason=row.reason,
                expires=row.expires,
                expired=waiver.is_expired(now),
                source=row.managed_source,
                file=row.managed_path,
                watches=[watch.name for watch in applies],
                findings=findings,
            )
        )
    return out


def _current_changes(session: Session, watch: Watch) -> list[Change]:
    """The changes of the watch's current comparison (its newest drift event against its
    baseline), as found."""
    if watch.last_snapshot_id is None or watch.baseline_snapshot_id is None:
        return []
    blob = session.scalar(
        select(DriftEvent.changes)
        .where(
            DriftEvent.watch_id == watch.id,
            DriftEvent.snapshot_id == watch.last_snapshot_id,
            DriftEvent.base_snapshot_id == watch.baseline_snapshot_id,
        )
        .order_by(DriftEvent.detected_at.desc(), DriftEvent.id.desc())
        .limit(1)
    )
    return [Change.model_validate(c) for c in decode_changes(blob)] if blob else []


# -- the controller's routine ----------------------------------------------------------------


def routines(settings: Settings, database: Database, box: SecretBox) -> list[jobs.Routine]:
    return [
        jobs.Routine(
            "waivers",
            run=lambda now: run_due(
                database, box, now, settings.flap_window_seconds, settings=settings
            ),
        )
    ]


def channels(settings: Settings, database: Database, box: SecretBox) -> list[Channel]:
    """The delivery channel of the owners' e-mails (through each org's relay), for
    `controller.events.channels.delivering`."""

    def render(event: Event) -> Outgoing:
        data = event.payload["data"]
        mail = email.message(
            data,
            expired=event.payload["type"] == "waiver.expired",
            sender=data["sender"],
            recipient=data["recipient"],
            message_id=event.message_id,
            now=event.now,
        )
        return Outgoing(mail.as_bytes(), {})

    def transport(_client: Any, recipient: str, outgoing: Outgoing, event: Event) -> int:
        with database.session() as session:
            found = relay(session, box, event.org_id, settings)
        if found is None:
            raise FetchError(
                "the org has no SMTP relay (PUT /api/org/smtp), and the server has none",
                "smtp_not_configured",
            )
        return smtp.send(found, recipient, outgoing.body, settings)

    return [Channel(WAIVER_EMAIL, render, transport)]


def run_due(
    database: Database,
    box: SecretBox,
    now: datetime,
    flap_window_seconds: float,
    *,
    settings: Settings | None = None,
) -> dict[str, int]:
    """Send the notices due at `now` and count again the watches whose waiver ended; with
    `settings`, an owner that is an address also gets an e-mail when the org has a relay."""
    sent = {"expiring": 0, "expired": 0, "reevaluated": 0}
    with database.session() as session:
        sent["expiring"] = _notify(session, box, now, expired=False, settings=settings)
        sent["expired"] = _notify(session, box, now, expired=True, settings=settings)
        session.commit()
    with database.session() as session:
        due = list(
            session.scalars(
                select(Watch.id)
                .where(Watch.waived_until.is_not(None), Watch.waived_until <= now)
                .order_by(Watch.waived_until)
                .limit(REEVALUATED_PER_TICK)
            )
        )
    for watch_id in due:
        with database.session() as session:
            result = reapply_waivers(session, box, watch_id, now, flap_window_seconds, due=True)
            session.commit()
        sent["reevaluated"] += 1
        log(
            logger,
            logging.INFO,
            "waivers.reevaluated",
            watchId=watch_id,
            outcome=result.outcome if result else "unchanged",
            status=result.status if result else None,
        )
    return sent


def _notify(
    session: Session, box: SecretBox, now: datetime, *, expired: bool, settings: Settings | None
) -> int:
    """Queue `waiver.expired` (or `waiver.expiring`, NOTICE_DAYS before) for each waiver
    that is due and not yet told; returns how many were queued."""
    today = now.date()
    column = WaiverRow.expired_notified_at if expired else WaiverRow.expiring_notified_at
    horizon = today if expired else today + timedelta(days=NOTICE_DAYS)
    rows: Sequence[WaiverRow] = session.scalars(
        select(WaiverRow).where(column.is_(None), WaiverRow.expires <= horizon)
    ).all()
    queued = 0
    for row in rows:
        claimed = session.execute(
            update(WaiverRow)
            .where(WaiverRow.id == row.id, column.is_(None))
            .values({column.key: now})
            .execution_options(synchronize_session=False)
        )
        if getattr(claimed, "rowcount", 0) != 1:
            continue  # another controller told this owner
        if not expired and row.expires <= today:
            continue  # already over when first seen: only the expiry is told
        kind = "waiver.expired" if expired else "waiver.expiring"
        data = _notice(session, row, now)
        emit(session, box, org_id=row.org_id, event_type=kind, data=data, now=now)
        if settings is not None and ADDRESS.fullmatch(row.owner):
            _mail(session, box, settings, row, kind, data, now)
        queued += 1
    return queued


def _mail(
    session: Session,
    box: SecretBox,
    settings: Settings,
    row: WaiverRow,
    kind: str,
    data: dict[str, Any],
    now: datetime,
) -> None:
    """Queue the owner's e-mail of the notice, when the org has a relay to send it through."""
    found = relay(session, box, row.org_id, settings)
    if found is None:
        return
    outbox.queue(
        session,
        box,
        org_id=row.org_id,
        event_type=kind,
        channel=WAIVER_EMAIL,
        destination=row.owner,
        hint=address_hint(row.owner),
        payload={
            "type": kind,
            "timestamp": now.isoformat(),
            "data": {**data, "sender": found.sender, "recipient": row.owner},
        },
        now=now,
    )


def _notice(session: Session, row: WaiverRow, now: datetime) -> dict[str, Any]:
    watches = describe_row(session, row, now)
    return {
        "waiverId": row.key,
        "watch": row.watch,
        "rule": row.rule,
        "path": row.path,
        "operation": row.operation,
        "tool": row.tool,
        "owner": row.owner,
        "reason": row.reason,
        "expires": row.expires.isoformat(),
        "source": row.managed_source,
        "file": row.managed_path,
        "watches": watches,
    }


def describe_row(session: Session, row: WaiverRow, now: datetime) -> list[str]:
    """The names of the org's watches the waiver of `row` applies to."""
    waiver = waiver_of(row)
    watches = session.scalars(select(Watch).where(Watch.org_id == row.org_id)).all()
    return sorted(
        watch.name
        for watch in watches
        if waiver.applies_to(watch.name, *watch_labels(session, watch))
    )
