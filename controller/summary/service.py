"""The weekly summary e-mail: SMTP settings, figures, the job that queues a week's e-mails,
the `email` delivery channel, and the unsubscribe link.

Flow: the controller's `weekly_summaries` routine enqueues one `weekly_summary` job per org
whose slot this ISO week has come (`schedule.is_due`), keyed `summary:<org>` with the ISO week
as its period, so any number of replicas enqueue it once. The job computes the figures and
queues one outbox message per recipient on channel `email` in the same transaction as its
end; the outbox delivers them (leases, retries, `GET /api/alerts/stats` by channel) through
the `email` channel, which renders the message (`compose`) and sends it through the org's
relay (`smtp`). Each message carries a signed link that takes its recipient off the list.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints
from sqlalchemy import select
from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.errors import Conflict, NotFound, Unprocessable
from controller.events import outbox
from controller.events.channels import Channel, Event, Outgoing
from controller.logs import log
from controller.model import summary_schedule as schedule
from controller.model.base import ApiModel, BodyInt, RequestModel
from controller.model.principal import Principal
from controller.portfolio import views
from controller.settings import Settings
from controller.sources.http import FetchError
from controller.store import audit, jobs
from controller.store.db import Database
from controller.store.models import NotificationDefaults, Org, OutboxMessage, SmtpSettings
from controller.summary import compose, smtp
from controller.summary.compose import WeeklyFigures as WeeklyFigures  # for the shells
from controller.targets import address_hint as address_hint  # for its callers
from controller.targets import host_problem

logger = logging.getLogger("driftgate.summary")

WEEKLY_SUMMARY = "weekly_summary"
EMAIL = "email"
EVENT_TYPE = "summary.weekly"
UNSUBSCRIBE_PURPOSE = "summary unsubscribe"
UNSUBSCRIBE_PATH = "/api/summary/unsubscribe"
ROUTINE_SECONDS = 60.0
MTTR_DAYS = 30

_NO_CONTROL = r"^[^\x00-\x1f\x7f]*$"


# -- SMTP settings -------------------------------------------------------------------------


class SmtpIn(RequestModel):
    """The org's SMTP relay. `password` is write-only: omitted, the stored one is kept while
    the host and user stay the same (a password goes only to the relay it was given for)."""

    host: Annotated[str, StringConstraints(min_length=1, max_length=253, pattern=_NO_CONTROL)] = (
        Field(examples=["smtp.example.com"])
    )
    port: BodyInt = Field(default=587, ge=1, le=65535)
    security: smtp.Security = Field(
        default="starttls",
        description="starttls (port 587), tls (implicit TLS, port 465) or none (in clear)",
    )
    username: Annotated[str, StringConstraints(max_length=200, pattern=_NO_CONTROL)] | None = None
    password: Annotated[str, StringConstraints(max_length=500, pattern=_NO_CONTROL)] | None = None
    from_address: schedule.EmailAddress = Field(examples=["driftgate@example.com"])


class SmtpOut(ApiModel):
    """The relay the org's e-mail goes through: its own, else the server's."""

    source: Literal["org", "server"] = Field(
        description="org: the org's own relay (PUT /api/org/smtp); server: the server's relay "
        "(the operator's smtp_* settings), used while the org has none"
    )
    host: str
    port: int
    security: str
    username: str | None = Field(
        description="the org relay's user; null for the server's relay (the operator's "
        "credentials are not shown)"
    )
    password_set: bool = Field(description="a password is stored (it is never shown)")
    from_address: str
    updated_at: datetime | None = Field(description="null for the server's relay")
    server_relay_set: bool = Field(
        description="the server has a relay: without the org's own, e-mail goes through it"
    )


def smtp_out(row: SmtpSettings, settings: Settings) -> SmtpOut:
    return SmtpOut(
        source="org",
        host=row.host,
        port=row.port,
        security=row.security,
        username=row.username,
        password_set=row.password_ciphertext is not None,
        from_address=row.from_address,
        updated_at=row.updated_at,
        server_relay_set=settings.smtp_host is not None,
    )


def server_relay(settings: Settings) -> smtp.Relay | None:
    """The server's relay (the operator's `smtp_*` settings), or None when it has none."""
    if settings.smtp_host is None or settings.smtp_from_address is None:
        return None
    password = settings.smtp_password
    return smtp.Relay(
        host=settings.smtp_host,
        port=settings.smtp_port,
        security=settings.smtp_security,
        sender=settings.smtp_from_address,
        username=settings.smtp_username,
        password=password.get_secret_value() if password is not None else None,
        operator=True,
    )


def get_smtp(session: Session, org_id: str, settings: Settings) -> SmtpOut:
    """The relay that applies to the org: its own, else the server's (404 with neither)."""
    row = session.get(SmtpSettings, org_id)
    if row is not None:
        return smtp_out(row, settings)
    server = server_relay(settings)
    if server is None:
        raise NotFound(
            "no SMTP relay is set for this org (PUT /api/org/smtp), and the server has none"
        )
    return SmtpOut(
        source="server",
        host=server.host,
        port=server.port,
        security=server.security,
        username=None,
        password_set=server.password is not None,
        from_address=server.sender,
        updated_at=None,
        server_relay_set=True,
    )


def put_smtp(
    session: Session,
    principal: Principal,
    data: SmtpIn,
    box: SecretBox,
    now: datetime,
    settings: Settings,
) -> SmtpOut:
    problem = host_problem(data.host)
    if problem is not None:
        raise Unprocessable(f"/host: {problem}", code="smtp_host")
    data = data.model_copy(update={"host": data.host.lower()})
    row = session.get(SmtpSettings, principal.org_id)
    keep_password = (
        row is not None
        and "password" not in data.model_fields_set
        and row.host == data.host
        and row.username == data.username
    )
    if row is None:
        row = SmtpSettings(org_id=principal.org_id)
        session.add(row)
    row.host, row.port, row.security = data.host, data.port, data.security
    row.username, row.from_address, row.updated_at = data.username, data.from_address, now
    if not keep_password:
        row.password_ciphertext = (
            box.encrypt_json(data.password) if data.password is not None else None
        )
    session.flush()
    audit.on_org(
        session,
        principal.actor,
        principal.org_id,
        "org.smtp",
        {
            "host": row.host,
            "port": row.port,
            "security": row.security,
            "passwordSet": bool(row.password_ciphertext),
        },
    )
    return smtp_out(row, settings)


def delete_smtp(session: Session, principal: Principal, settings: Settings) -> None:
    """Remove the org's relay; the server's applies from then on, if it has one (409 while
    the weekly summary is on and nothing would be left to send it)."""
    row = session.get(SmtpSettings, principal.org_id)
    if row is None:
        raise NotFound("no SMTP relay is set for this org")
    current = weekly_settings(session, principal.org_id)
    if current is not None and current.enabled and server_relay(settings) is None:
        raise Conflict(
            "the weekly summary e-mail is on and sends through this relay; turn it off first "
            "(PUT /api/org/notification-defaults with weeklySummary.enabled false)",
            code="smtp_in_use",
        )
    session.delete(row)
    audit.on_org(session, principal.actor, principal.org_id, "org.smtp.delete")


def relay(session: Session, box: SecretBox, org_id: str, settings: Settings) -> smtp.Relay | None:
    """The relay the org's e-mail goes through: its own with the password decrypted, else the
    server's, else None."""
    row = session.get(SmtpSettings, org_id)
    if row is None:
        return server_relay(settings)
    password = box.decrypt_json(row.password_ciphertext) if row.password_ciphertext else None
    return smtp.Relay(
        host=row.host,
        port=row.port,
        security=row.security,  # type: ignore[arg-type]
        sender=row.from_address,
        username=row.username,
        password=password,
    )


# -- the opt-in ------------------------------------------------------------------------------


def weekly_settings(session: Session, org_id: str) -> schedule.WeeklySummaryOut | None:
    row = session.get(NotificationDefaults, org_id)
    return schedule.loaded(row.weekly_summary if row is not None else None)


# -- the figures -----------------------------------------------------------------------------


def figures(session: Session, org: Org, now: datetime) -> WeeklyFigures:
    """One org's week: drift of the last 7 days, unresolved incidents, MTTR over 30 days,
    hotspots. Only the org's rows: every query is scoped by `org.id`."""
    since = now - timedelta(days=7)
    everything = views.Filters()
    drift, drifted = views.drift_between(session, org.id, since, now)
    counts, oldest = views.unresolved_incidents(session, org.id)
    repair = views.mttr(
        session, org.id, everything, now - timedelta(days=MTTR_DAYS), now, digits=None
    )
    return WeeklyFigures(
        org_name=org.name,
        week=schedule.iso_week(now),
        since=since,
        until=now,
        drift=compose.DriftCounts(**drift),
        drifted_watches=[compose.DriftedWatch.model_validate(w) for w in drifted],
        open_incidents=counts["open"],
        acknowledged_incidents=counts["acknowledged"],
        incidents=[compose.OpenIncident.model_validate(i) for i in oldest],
        mttr_hours=repair["overallHours"],
        mttr_resolved=repair["resolved"],
        mttr_by_vendor=[
            compose.VendorRepair(vendor=r["key"], hours=r["hours"], resolved=r["resolved"])
            for r in repair["byVendor"][:5]
        ],
        hotspots=[
            compose.Hotspot.model_validate(h)
            for h in views.hotspots(session, org.id, everything, now, limit=5)
        ],
        watches=views.health(session, org.id, everything, now)["total"],
    )


def preview(session: Session, org_id: str, now: datetime) -> WeeklyFigures:
    org = session.get(Org, org_id)
    if org is None:
        raise NotFound("org not found")
    return figures(session, org, now)


# -- queueing and the job --------------------------------------------------------------------


def queue(
    session: Session, box: SecretBox, settings: Settings, org: Org, now: datetime
) -> list[str]:
    """Queue this week's e-mail for every recipient of the org (one outbox message each);
    return the message ids. 422 when the summary has no recipients or no relay."""
    opted = weekly_settings(session, org.id)
    recipients = opted.recipients if opted is not None else []
    if not recipients:
        raise Unprocessable(
            f"org {org.name!r} has no weekly summary recipients (weeklySummary.recipients)",
            code="summary_recipients",
        )
    sender = relay(session, box, org.id, settings)
    if sender is None:
        raise Unprocessable(
            f"org {org.name!r} has no SMTP relay (PUT /api/org/smtp), and the server has none "
            "(smtp_host)",
            code="smtp_not_configured",
        )
    week = figures(session, org, now).model_dump(mode="json", by_alias=True)
    ids = []
    for recipient in recipients:
        message = outbox.queue(
            session,
            box,
            org_id=org.id,
            event_type=EVENT_TYPE,
            channel=EMAIL,
            destination=recipient,
            hint=address_hint(recipient),
            payload={
                "type": EVENT_TYPE,
                "timestamp": now.isoformat(),
                "data": {
                    "figures": week,
                    "sender": sender.sender,
                    "recipient": recipient,
                    "unsubscribeUrl": unsubscribe_url(settings, box, org.id, recipient),
                },
            },
            now=now,
        )
        ids.append(message.id)
    return ids


def enqueue_due(database: Database, now: datetime) -> int:
    """The routine: enqueue this ISO week's job of every org whose slot has come (once per
    org and week: the job table's `(key, period)`); return how many were new."""
    with database.transaction() as session:
        rows = session.execute(
            select(NotificationDefaults.org_id, NotificationDefaults.weekly_summary)
        ).all()
        week, queued = schedule.iso_week(now), 0
        for org_id, raw in rows:
            opted = schedule.loaded(raw)
            if opted is None or not schedule.is_due(opted, now):
                continue
            job = jobs.enqueue(
                session,
                kind=WEEKLY_SUMMARY,
                key=f"summary:{org_id}",
                period=week,
                run_after=now,
                payload={"orgId": org_id, "week": week},
            )
            queued += int(job is not None and job.period == week and job.status == "queued")
        return queued


class _Lost(Exception):
    """The job's lease went to another worker: nothing of this run may commit."""


def run_weekly(
    database: Database, settings: Settings, box: SecretBox, job: jobs.Claimed, now: datetime
) -> None:
    """The `weekly_summary` job: queue the org's e-mails and end the job in one transaction."""
    org_id = str(job.payload.get("orgId", ""))
    try:
        with database.transaction() as session:
            org = session.get(Org, org_id)
            opted = weekly_settings(session, org_id)
            if org is None or opted is None or not opted.enabled:
                result: dict[str, Any] = {"sent": 0, "skipped": "the weekly summary is off"}
                ids: list[str] = []
            else:
                ids = queue(session, box, settings, org, now)
                result = {"sent": len(ids), "week": job.payload.get("week")}
            if not jobs.finish_in(session, job, now, result=result):
                raise _Lost
    except _Lost:
        return
    except Unprocessable as exc:
        jobs.finish(database, job, now, error=f"{exc.code}: {exc.message}")
        log(logger, logging.WARNING, "summary.not_sent", org=org_id, reason=exc.message)
        return
    log(
        logger,
        logging.INFO,
        "summary.queued",
        org=org_id,
        week=job.payload.get("week"),
        recipients=len(ids),
    )


def job_kinds(
    settings: Settings, database: Database, box: SecretBox, clock: Callable[[], datetime]
) -> list[jobs.JobKind]:
    return [
        jobs.JobKind(
            WEEKLY_SUMMARY,
            run=lambda job, _prepared: run_weekly(database, settings, box, job, clock()),
        )
    ]


def routines(database: Database) -> list[jobs.Routine]:
    return [
        jobs.Routine(
            "weekly_summaries", run=lambda now: enqueue_due(database, now), every=ROUTINE_SECONDS
        )
    ]


# -- the email channel -----------------------------------------------------------------------


def render_email(event: Event) -> Outgoing:
    """The outbox message as the whole e-mail (headers, text and HTML parts)."""
    data = event.payload["data"]
    mail = compose.message(
        WeeklyFigures.model_validate(data["figures"]),
        sender=data["sender"],
        recipient=data["recipient"],
        unsubscribe_url=data["unsubscribeUrl"],
        message_id=event.message_id,
        now=event.now,
    )
    return Outgoing(mail.as_bytes(), {})


def email_channel(settings: Settings, database: Database, box: SecretBox) -> Channel:
    """The `email` channel: rendered by `render_email`, sent through the org's relay."""

    def transport(_client: Any, recipient: str, outgoing: Outgoing, event: Event) -> int:
        return send_by_relay(
            settings, database, box, event.org_id, recipient, lambda _relay: outgoing.body
        )

    return Channel(EMAIL, render_email, transport)


def send_by_relay(
    settings: Settings,
    database: Database,
    box: SecretBox,
    org_id: str,
    recipient: str,
    mail: Callable[[smtp.Relay], bytes],
) -> int:
    """Send the e-mail `mail` writes for the relay (its sender) through the org's relay, else
    the server's; `FetchError` (`smtp_not_configured`) with neither. The e-mail channels of
    every capability send this way (the weekly summary, e-mail per incident)."""
    with database.session() as session:
        found = relay(session, box, org_id, settings)
    if found is None:
        raise FetchError(
            "the org has no SMTP relay (PUT /api/org/smtp), and the server has none",
            "smtp_not_configured",
        )
    # The channel's deadline bounds the whole conversation (`Channel.transport`).
    return smtp.send(found, recipient, mail(found), settings)


# -- unsubscribe -----------------------------------------------------------------------------


class UnsubscribeOut(ApiModel):
    unsubscribed: bool = True
    recipient: str = Field(
        description="the address taken off the list (its first letter and domain)"
    )
    remaining: int = Field(description="recipients still on the list")
    enabled: bool = Field(description="whether the weekly summary stays on")


def unsubscribe_token(box: SecretBox, org_id: str, recipient: str) -> str:
    return box.sign(UNSUBSCRIBE_PURPOSE, f"{org_id}\n{recipient.lower()}".encode())


def unsubscribe_url(settings: Settings, box: SecretBox, org_id: str, recipient: str) -> str:
    base = (settings.public_base_url or f"http://{settings.host}:{settings.port}").rstrip("/")
    return f"{base}{UNSUBSCRIBE_PATH}?token={unsubscribe_token(box, org_id, recipient)}"


def _read_token(box: SecretBox, token: str) -> tuple[str, str]:
    payload = box.verify(UNSUBSCRIBE_PURPOSE, token)
    if payload is None or b"\n" not in payload:
        raise NotFound("this unsubscribe link is not valid", code="invalid_unsubscribe_link")
    org_id, _, recipient = payload.decode("utf-8", "replace").partition("\n")
    return org_id, recipient


def unsubscribe_target(box: SecretBox, token: str) -> str:
    """The address a link unsubscribes, shown as a hint (404 for a forged link)."""
    return address_hint(_read_token(box, token)[1])


def unsubscribe(session: Session, box: SecretBox, token: str) -> UnsubscribeOut:
    """Take the link's recipient off its org's list (idempotent); the summary turns off with
    the last recipient."""
    org_id, recipient = _read_token(box, token)
    row = session.get(NotificationDefaults, org_id)
    opted = schedule.loaded(row.weekly_summary if row is not None else None)
    if row is None or opted is None:
        return UnsubscribeOut(recipient=address_hint(recipient), remaining=0, enabled=False)
    kept = [r for r in opted.recipients if r.lower() != recipient]
    if len(kept) != len(opted.recipients):
        updated = opted.model_copy(
            update={"recipients": kept, "enabled": opted.enabled and bool(kept)}
        )
        row.weekly_summary = updated.model_dump(by_alias=True)
        audit.on_org(
            session,
            "unsubscribe-link",
            org_id,
            "org.weekly_summary.unsubscribe",
            {"recipient": address_hint(recipient), "remaining": len(kept)},
        )
        opted = updated
    return UnsubscribeOut(
        recipient=address_hint(recipient), remaining=len(kept), enabled=opted.enabled
    )


def channels(settings: Settings, database: Database, box: SecretBox) -> list[Channel]:
    """The delivery channels of this capability (`email`, through each org's relay), for
    `controller.events.channels.delivering`."""
    return [email_channel(settings, database, box)]


def delivered(database: Database, ids: list[str]) -> list[tuple[str, str, str | None]]:
    """(status, recipient hint, last error) of outbox messages, in the order of `ids`."""
    with database.session() as session:
        rows = {
            m.id: (m.status, m.destination_hint, m.last_error)
            for m in session.scalars(select(OutboxMessage).where(OutboxMessage.id.in_(ids)))
        }
    return [rows[i] for i in ids if i in rows]
