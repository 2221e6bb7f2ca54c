"""Org notification defaults (destination, interval, alert policy, the weekly summary
e-mail's opt-in) and the signing secret.

New watches inherit the default interval when they are created; the default destination and
alert policy apply to every event when it is emitted. The signing secret (`whsec_...`) is
created on first use, encrypted at rest, and shown only by `driftgate orgs webhook-secret`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.errors import Unprocessable
from controller.events.channels import CHANNELS
from controller.events.secrets import signing_secret as signing_secret  # for the shells
from controller.events.signing import new_secret
from controller.model.base import ApiModel, RequestModel
from controller.model.choice import OneOf
from controller.model.principal import Principal
from controller.model.summary_schedule import (
    WeeklySummaryIn,
    WeeklySummaryOut,
    listed_twice,
    loaded,
    stored,
)
from controller.model.watch import HttpUrl, Interval
from controller.store import audit
from controller.store.models import NotificationDefaults, SmtpSettings, WebhookSecret
from controller.targets import refuse_unsendable
from controller.targets import shown_destination as shown_destination  # for the shells

Severity = Literal["breaking", "warning", "info"]
DEFAULT_SEVERITIES: list[Severity] = ["breaking", "warning"]


DESTINATION_KINDS = CHANNELS.destination_kinds()
"""The channels an org may choose for its default destination (`webhook`, `slack`, ...)."""


class DestinationIn(RequestModel):
    kind: Annotated[str, OneOf(DESTINATION_KINDS)]
    url: HttpUrl


class AlertPolicy(RequestModel):
    severities: Annotated[list[Severity], Field(min_length=1, max_length=3)] = Field(
        description="drift.detected notifies when a change of one of these severities is found"
    )


class NotificationDefaultsIn(RequestModel):
    """Replacement defaults (PUT): omitted fields are cleared."""

    destination: DestinationIn | None = None
    interval_minutes: Interval | None = None
    alert_policy: AlertPolicy | None = None
    weekly_summary: WeeklySummaryIn | None = Field(
        default=None,
        description="the weekly summary e-mail (off when omitted); needs the org's SMTP relay",
    )


class DestinationOut(ApiModel):
    kind: str
    url_hint: str = Field(description="scheme and host only; the full URL may hold a token")


class AlertPolicyOut(ApiModel):
    severities: list[str]


class NotificationDefaultsOut(ApiModel):
    destination: DestinationOut | None
    interval_minutes: int | None
    alert_policy: AlertPolicyOut
    weekly_summary: WeeklySummaryOut | None


def get_defaults(session: Session, org_id: str) -> NotificationDefaultsOut:
    return defaults_out(session.get(NotificationDefaults, org_id))


def default_interval(session: Session, org_id: str) -> int | None:
    row = session.get(NotificationDefaults, org_id)
    return row.interval_minutes if row is not None else None


def put_defaults(
    session: Session,
    principal: Principal,
    data: NotificationDefaultsIn,
    box: SecretBox,
    *,
    server_relay: bool,
) -> NotificationDefaultsOut:
    """Replace the org's defaults; `server_relay`: the server has an SMTP relay of its own
    (the weekly summary may be switched on without the org's)."""
    from controller.events.outbox import destination_hint

    if data.destination is not None:
        refuse_unsendable(urls={"/destination/url": data.destination.url})
    if data.weekly_summary is not None:
        check_weekly_summary(
            session, principal.org_id, data.weekly_summary, server_relay=server_relay
        )
    row = session.get(NotificationDefaults, principal.org_id)
    if row is None:
        row = NotificationDefaults(org_id=principal.org_id)
        session.add(row)
    if data.destination is None:
        row.destination_kind = row.destination_ciphertext = row.destination_hint = None
    else:
        row.destination_kind = data.destination.kind
        row.destination_ciphertext = box.encrypt_json(data.destination.url)
        row.destination_hint = destination_hint(data.destination.url)
    row.interval_minutes = data.interval_minutes
    row.alert_severities = list(data.alert_policy.severities) if data.alert_policy else []
    row.weekly_summary = stored(data.weekly_summary) if data.weekly_summary else None
    session.flush()
    audit.on_org(
        session,
        principal.actor,
        principal.org_id,
        "org.notification_defaults",
        {
            "destination": row.destination_hint,
            "intervalMinutes": row.interval_minutes,
            "severities": row.alert_severities,
            "weeklySummary": bool(data.weekly_summary and data.weekly_summary.enabled),
        },
    )
    return defaults_out(row)


def check_weekly_summary(
    session: Session, org_id: str, settings: WeeklySummaryIn, *, server_relay: bool = False
) -> None:
    """422 when the summary is switched on without recipients or without a relay to send by
    (the org's own, or the server's when `server_relay`)."""
    twice = listed_twice(settings.recipients)
    if twice is not None:
        raise Unprocessable(
            f"weeklySummary.recipients lists {twice} twice", code="summary_recipients"
        )
    if not settings.enabled:
        return
    if not settings.recipients:
        raise Unprocessable(
            "weeklySummary.enabled needs at least one address in weeklySummary.recipients",
            code="summary_recipients",
        )
    if not server_relay and session.get(SmtpSettings, org_id) is None:
        raise Unprocessable(
            "the weekly summary e-mail needs an SMTP relay: set the org's first "
            "(PUT /api/org/smtp), or the server's (smtp_host)",
            code="smtp_not_configured",
        )


def defaults_out(row: NotificationDefaults | None) -> NotificationDefaultsOut:
    if row is None:
        return NotificationDefaultsOut(
            destination=None,
            interval_minutes=None,
            alert_policy=AlertPolicyOut(severities=list(DEFAULT_SEVERITIES)),
            weekly_summary=None,
        )
    destination = None
    if row.destination_kind and row.destination_hint:
        destination = DestinationOut(kind=row.destination_kind, url_hint=row.destination_hint)
    return NotificationDefaultsOut(
        destination=destination,
        interval_minutes=row.interval_minutes,
        alert_policy=AlertPolicyOut(severities=row.alert_severities or list(DEFAULT_SEVERITIES)),
        weekly_summary=loaded(row.weekly_summary),
    )


def rotate_signing_secret(session: Session, org_id: str, box: SecretBox, *, actor: str) -> str:
    secret = new_secret()
    row = session.get(WebhookSecret, org_id)
    if row is None:
        session.add(WebhookSecret(org_id=org_id, secret_ciphertext=box.encrypt_json(secret)))
    else:
        row.secret_ciphertext = box.encrypt_json(secret)
    audit.on_org(session, actor, org_id, "org.webhook_secret.rotate")
    return secret


def current_destination(session: Session, org_id: str, box: SecretBox) -> DestinationIn | None:
    """The org's default destination as it is stored (decrypted), so a form that leaves the
    URL blank keeps it."""
    row = session.get(NotificationDefaults, org_id)
    if row is None or not row.destination_ciphertext or not row.destination_kind:
        return None
    url = str(box.decrypt_json(row.destination_ciphertext))
    return DestinationIn.model_validate({"kind": row.destination_kind, "url": url})
