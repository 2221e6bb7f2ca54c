"""When a weekly summary is due, and the settings an org opts in with (pure).

An org's summary has a slot in every ISO week: its `weekday` at `hourUtc`. From that moment
until the week ends the week's e-mail is due; the job table's `(key, period)` uniqueness, with
the ISO week as the period, makes it go out once per org and week however many controllers
see it due (and a summary switched on after this week's slot goes out at once, this week).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from controller.model.base import ApiModel, BodyBool, BodyInt, RequestModel
from controller.targets import EMAIL_PATTERN

Weekday = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
WEEKDAYS: tuple[Weekday, ...] = (
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
)
MAX_RECIPIENTS = 20

# An address as a relay takes it in RCPT TO (`EMAIL_PATTERN`). The pattern is the whole check,
# so the published schema says exactly what is accepted.
EmailAddress = Annotated[str, StringConstraints(max_length=254, pattern=EMAIL_PATTERN)]


class WeeklySummaryIn(RequestModel):
    """The weekly summary e-mail: off unless `enabled`, to `recipients`, every `weekday` at
    `hourUtc`."""

    enabled: BodyBool = False
    recipients: Annotated[list[EmailAddress], Field(max_length=MAX_RECIPIENTS)] = Field(
        default_factory=list,
        description="addresses the summary goes to (each gets its own unsubscribe link)",
        examples=[["platform-team@example.com"]],
    )
    weekday: Weekday = "monday"
    hour_utc: BodyInt = Field(default=8, ge=0, le=23, description="the hour of `weekday`, UTC")


class WeeklySummaryOut(ApiModel):
    enabled: bool
    recipients: list[str]
    weekday: Weekday
    hour_utc: int


def listed_twice(recipients: list[str]) -> str | None:
    """The first address listed twice (addresses compare without case), or None."""
    seen: set[str] = set()
    for address in recipients:
        if address.lower() in seen:
            return address
        seen.add(address.lower())
    return None


def stored(settings: WeeklySummaryIn) -> dict[str, object]:
    """The settings as the store keeps them (JSON)."""
    return settings.model_dump(by_alias=True)


def loaded(raw: dict[str, object] | None) -> WeeklySummaryOut | None:
    """Stored settings back, or None when the org never set them."""
    return None if not raw else WeeklySummaryOut.model_validate(raw)


def iso_week(moment: datetime) -> str:
    """The ISO week of `moment` (UTC), as `2026-W48`."""
    year, week, _ = moment.isocalendar()
    return f"{year}-W{week:02d}"


def slot(moment: datetime, weekday: Weekday, hour_utc: int) -> datetime:
    """This ISO week's send time: `weekday` at `hour_utc` in the week of `moment`."""
    monday = (moment - timedelta(days=moment.weekday())).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    return monday + timedelta(days=WEEKDAYS.index(weekday), hours=hour_utc)


def is_due(settings: WeeklySummaryOut, now: datetime) -> bool:
    """Whether this week's summary should go out by `now` (once per week: see the module)."""
    return (
        settings.enabled
        and bool(settings.recipients)
        and now >= slot(now, settings.weekday, settings.hour_utc)
    )
