"""How the console writes times: one absolute form with its zone (`2026-11-26 14:10 UTC`),
relative times where people scan a list (`3 min ago`, the absolute in a title), and
durations in human units (`9.6 s`, `36 s`, `4 min`, `2 h 5 min`). Every time and duration a
page shows goes through these filters (`at`, `ago`, `duration`, `hours`); nothing writes a
raw timestamp.

The functions are pure (they take `now`); `register` installs them as Jinja filters that
ask the clock once per call.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from flask import Flask
from markupsafe import Markup, escape

from controller.model.durations import duration, hours

ABSOLUTE = "%Y-%m-%d %H:%M UTC"
__all__ = ["absolute", "as_utc", "duration", "hours", "register", "relative", "time_tag"]


def absolute(moment: datetime | str | None, default: str = "never") -> str:
    """`2026-11-26 14:10 UTC`; `default` for no time at all."""
    at = as_utc(moment)
    return at.strftime(ABSOLUTE) if at is not None else default


def relative(moment: datetime | str | None, now: datetime, default: str = "never") -> str:
    """`just now`, `36 s ago`, `4 min ago`, `2 h ago`, `3 d ago`, or `in 5 min` ahead."""
    at = as_utc(moment)
    if at is None:
        return default
    seconds = (now - at).total_seconds()
    if abs(seconds) < 5:
        return "just now"
    span = _coarse(abs(seconds))
    return f"{span} ago" if seconds > 0 else f"in {span}"


def as_utc(moment: datetime | str | None) -> datetime | None:
    """An aware UTC datetime from a datetime (naive ones are UTC) or an ISO 8601 string."""
    if moment is None or moment == "":
        return None
    at = datetime.fromisoformat(moment) if isinstance(moment, str) else moment
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def time_tag(moment: datetime | str | None, now: datetime, default: str = "never") -> Markup:
    """A `<time>` element reading relative, with the absolute time in its title."""
    at = as_utc(moment)
    if at is None:
        return Markup(escape(default))
    return Markup('<time datetime="{}" title="{}">{}</time>').format(
        at.isoformat(), absolute(at), relative(at, now)
    )


def _coarse(seconds: float) -> str:
    if seconds < 60:
        return f"{round(seconds)} s"
    if seconds < 3600:
        return f"{round(seconds / 60)} min"
    if seconds < 86400:
        return f"{round(seconds / 3600)} h"
    return f"{round(seconds / 86400)} d"


def register(app: Flask, clock: Callable[[], datetime]) -> None:
    """The filters `at` (absolute), `ago` (a `<time>` reading relative, absolute in its
    title), `duration` (seconds) and `hours` (a duration given in hours)."""
    app.add_template_filter(absolute, "at")
    app.add_template_filter(
        lambda moment, default="never": time_tag(moment, clock(), default), "ago"
    )
    app.add_template_filter(duration, "duration")
    app.add_template_filter(hours, "hours")
