"""Which events an org destination takes, and when a digest goes out: pure rules, no I/O.

A destination's routing filters an event by its type, its severity, and, for an event about a
watch, the watch's tags (globs), its watch set and that set's environment. An empty filter
lets everything through; filters combine with AND, the values of one filter with OR. An
event about no watch (a destination failing, a test) passes the watch filters: they say which
watches a destination cares about, not which org news it hears. A destination without a
severity filter follows the org's alert policy, like the default destination.

A digest collects a destination's events for an hour or a day (UTC) and sends them as one
message when the period ends (`period_of`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from fnmatch import fnmatchcase
from typing import Any, Literal

Digest = Literal["off", "hourly", "daily"]
DIGESTS: tuple[Digest, ...] = ("off", "hourly", "daily")
PERIODS = {"hourly": timedelta(hours=1), "daily": timedelta(days=1)}
# Events that go out at once even to a destination in digest mode: a test is asked for now,
# and a failing destination must be told while it matters.
NEVER_DIGESTED = ("destination.test", "destination.failing")
# The severity an event of an incident has: an incident is opened by breaking changes.
INCIDENT_SEVERITY = "breaking"


@dataclass(frozen=True)
class Routing:
    """A destination's filters (empty: no filter)."""

    events: tuple[str, ...] = ()
    severities: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    watch_sets: tuple[str, ...] = ()
    environments: tuple[str, ...] = ()

    @classmethod
    def loaded(cls, stored: dict[str, Any] | None) -> Routing:
        stored = stored or {}
        return cls(**{key: tuple(stored.get(key) or ()) for key in cls.__dataclass_fields__})

    def stored(self) -> dict[str, list[str]]:
        return {key: list(getattr(self, key)) for key in self.__dataclass_fields__}


@dataclass(frozen=True)
class Facts:
    """What routing reads of an event: its type, its severity (None: it has none), and the
    watch it is about (None: none) with its tags, watch set and environment."""

    event_type: str
    severity: str | None = None
    watch: bool = False
    tags: tuple[str, ...] = ()
    watch_set: str | None = None
    environment: str | None = None


def severity_of(event_type: str, severity: str | None) -> str | None:
    """The severity routing judges an event by."""
    if severity is None and event_type.startswith("incident."):
        return INCIDENT_SEVERITY
    return severity


def takes(routing: Routing, facts: Facts, org_policy: tuple[str, ...]) -> bool:
    """Whether a destination with `routing` takes the event; `org_policy`, the org's alert
    severities, stands in for an empty severity filter."""
    if routing.events and facts.event_type not in routing.events:
        return False
    severities = routing.severities or org_policy
    if facts.severity is not None and facts.severity not in severities:
        return False
    if not facts.watch:
        return True
    if routing.tags and not any(
        fnmatchcase(tag, pattern) for tag in facts.tags for pattern in routing.tags
    ):
        return False
    if routing.watch_sets and facts.watch_set not in routing.watch_sets:
        return False
    return not routing.environments or facts.environment in routing.environments


def is_digested(digest: str, event_type: str, kind_digests: bool) -> bool:
    """Whether the event joins the destination's digest instead of going out now."""
    return digest in PERIODS and kind_digests and event_type not in NEVER_DIGESTED


def period_of(digest: str, now: datetime) -> tuple[datetime, datetime]:
    """The digest period `now` falls in: its start and its end (when the digest is sent)."""
    if digest == "daily":
        start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    else:
        start = now.replace(minute=0, second=0, microsecond=0)
    return start, start + PERIODS[digest]
