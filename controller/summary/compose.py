"""A week's figures as an e-mail (pure): a text part, an HTML part, unsubscribe headers.

The figures are computed by the service and travel in the outbox message's payload; the
`email` channel renders them here when it delivers, as the other channels render theirs. The
HTML part is rendered by Jinja2 with autoescaping, so a watch named `<script>` is text.
"""

from __future__ import annotations

from datetime import datetime
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import format_datetime, make_msgid

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from pydantic import Field

from controller.model import durations
from controller.model.base import ApiModel

SUBJECT_PREFIX = "driftgate weekly summary"
ONE_CLICK = "List-Unsubscribe=One-Click"


class DriftCounts(ApiModel):
    """Drift events of the week, each counted once by its highest severity."""

    breaking: int = 0
    warning: int = 0
    info: int = 0

    @property
    def total(self) -> int:
        return self.breaking + self.warning + self.info


class DriftedWatch(ApiModel):
    watch_id: str
    name: str
    vendor: str
    events: int
    breaking: int


class OpenIncident(ApiModel):
    watch_id: str
    watch_name: str
    status: str
    opened_at: datetime


class VendorRepair(ApiModel):
    vendor: str
    hours: float
    resolved: int


class Hotspot(ApiModel):
    watch_id: str
    name: str
    vendor: str
    breaking_count30d: int = Field(alias="breakingCount30d")
    last_drift_at: datetime | None


class WeeklyFigures(ApiModel):
    """What one org's weekly summary says."""

    org_name: str
    week: str
    since: datetime
    until: datetime
    drift: DriftCounts
    drifted_watches: list[DriftedWatch]
    open_incidents: int
    acknowledged_incidents: int
    incidents: list[OpenIncident]
    mttr_hours: float | None
    mttr_resolved: int
    mttr_by_vendor: list[VendorRepair]
    hotspots: list[Hotspot]
    watches: int


_TEMPLATES = Environment(
    loader=PackageLoader("controller.summary", "templates"),
    autoescape=select_autoescape(enabled_extensions=("html",), default_for_string=False),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
_TEMPLATES.filters["hours"] = durations.hours  # MTTR in human units: `9.6 s`, `2 h 5 min`


def subject(figures: WeeklyFigures) -> str:
    drift = figures.drift
    headline = (
        f"{drift.breaking} breaking drift event{'s' if drift.breaking != 1 else ''}"
        if drift.breaking
        else "no breaking drift"
    )
    return f"{SUBJECT_PREFIX} for {figures.org_name}, {figures.week}: {headline}"


def render_text(figures: WeeklyFigures, unsubscribe_url: str) -> str:
    return _TEMPLATES.get_template("weekly.txt").render(f=figures, unsubscribe_url=unsubscribe_url)


def render_html(figures: WeeklyFigures, unsubscribe_url: str) -> str:
    return _TEMPLATES.get_template("weekly.html").render(f=figures, unsubscribe_url=unsubscribe_url)


def message(
    figures: WeeklyFigures,
    *,
    sender: str,
    recipient: str,
    unsubscribe_url: str,
    message_id: str,
    now: datetime,
) -> EmailMessage:
    """The whole e-mail: headers (with RFC 8058 one-click unsubscribe), text and HTML."""
    mail = EmailMessage(policy=SMTP)
    mail["Subject"] = subject(figures)
    mail["From"] = sender
    mail["To"] = recipient
    mail["Date"] = format_datetime(now)
    domain = sender.rpartition("@")[2] or "driftgate.invalid"
    mail["Message-ID"] = make_msgid(idstring=message_id, domain=domain)
    mail["List-Unsubscribe"] = f"<{unsubscribe_url}>"
    mail["List-Unsubscribe-Post"] = ONE_CLICK
    mail["Auto-Submitted"] = "auto-generated"
    mail.set_content(render_text(figures, unsubscribe_url))
    mail.add_alternative(render_html(figures, unsubscribe_url), subtype="html")
    return mail
