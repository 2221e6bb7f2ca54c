"""Timeline entries and their order: the pure part of the activity read model.

An entry is one thing that happened (a drift event found, an incident opened, a baseline
accepted with its reason, an agent killed, a source reconciled, an event delivered). Entries
come from several tables; each has a `key` (`<source>:<id>`) unique across them, and the
timeline is ordered by `(at, key)`, newest first. A page ends at a cursor naming the last
entry shown, so the next page starts strictly after it whatever was written meanwhile
(keyset pagination: no offsets, no duplicates, no gaps).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

KINDS = ("drift", "incident", "baseline", "agent", "reconcile", "delivery", "change")
OBJECT_TYPES = ("watch", "agent", "source")
DEFAULT_LIMIT = 25
MAX_LIMIT = 100


class BadFilter(ValueError):
    """A filter or cursor the timeline cannot read; the message names it."""


@dataclass(frozen=True)
class Entry:
    """One thing that happened, in words, and the object it happened to."""

    at: datetime
    key: str
    kind: str
    action: str
    title: str
    actor: str | None = None
    detail: str | None = None
    severity: str | None = None
    object_type: str | None = None  # watch, agent, source, event (a drift event), org
    object_id: str | None = None
    object_name: str | None = None
    watch_id: str | None = None  # the watch a drift event or incident belongs to
    # The object is gone (a deleted watch): named as it was, with its id, and not linked.
    gone: bool = False
    target_type: str | None = None  # an audit entry's target type (api_key, user, template ...)

    @property
    def named(self) -> str | None:
        """How the entry names its object: its name, and its id when the object is gone or
        the name is all there is to tell it by (`payments-api (w_123, deleted)`)."""
        name = self.object_name
        ident = self.object_id if self.object_type != "event" else self.watch_id
        if self.gone:
            ident = self.watch_id or self.object_id
            if name and ident and name != ident:
                return f"{name} ({ident}, deleted)"
            return f"{name or ident} (deleted)" if (name or ident) else None
        return name or ident


@dataclass(frozen=True)
class Cursor:
    """The last entry of a page: the next page holds the entries strictly older."""

    at: datetime
    key: str

    def encode(self) -> str:
        micros = int(self.at.timestamp() * 1_000_000)
        return f"{micros}~{self.key}"

    def precedes(self, entry: Entry) -> bool:
        """True when `entry` comes after this cursor (it is older, or as old with a smaller key)."""
        return (entry.at, entry.key) < (self.at, self.key)

    def bound_for(self, prefix: str) -> str | None:
        """For entries keyed `<prefix>:<id>` at exactly `self.at`: the id they must sort
        below, "" when none qualify, None when all do."""
        mine = prefix + ":"
        if self.key.startswith(mine):
            return self.key[len(mine) :]
        return None if mine < self.key else ""


def decode_cursor(text: str) -> Cursor:
    micros, sep, key = text.partition("~")
    if not sep or not micros.isdigit() or ":" not in key or len(text) > 400:
        raise BadFilter(f"the cursor {text[:40]!r} is not one this timeline wrote")
    at = datetime.fromtimestamp(int(micros) / 1_000_000, UTC)
    return Cursor(at=at, key=key)


@dataclass(frozen=True)
class Filters:
    """What a timeline shows: some kinds (all when empty), one object, a time window."""

    kinds: tuple[str, ...] = ()
    object_type: str | None = None
    object_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    cursor: Cursor | None = None
    limit: int = DEFAULT_LIMIT

    def wants(self, kind: str) -> bool:
        return not self.kinds or kind in self.kinds


def parse_filters(
    kinds: Sequence[str],
    obj: str | None,
    since: str | None,
    until: str | None,
    cursor: str | None,
    limit: str | None,
) -> Filters:
    """Filters from a query string's values; `BadFilter` names the first it cannot read."""
    unknown = [k for k in kinds if k and k not in KINDS]
    if unknown:
        raise BadFilter(f"kind {unknown[0]!r} is not one of {', '.join(KINDS)}")
    object_type = object_id = None
    if obj:
        object_type, sep, object_id = obj.partition(":")
        if not sep or object_type not in OBJECT_TYPES or not object_id:
            raise BadFilter(f"object {obj[:60]!r} is not watch:<id>, agent:<id> or source:<name>")
    try:
        size = int(limit) if limit else DEFAULT_LIMIT
    except ValueError:
        raise BadFilter(f"limit {limit!r} is not a number") from None
    return Filters(
        kinds=tuple(dict.fromkeys(k for k in kinds if k)),
        object_type=object_type,
        object_id=object_id,
        since=_instant("since", since),
        until=_instant("until", until),
        cursor=decode_cursor(cursor) if cursor else None,
        limit=max(1, min(size, MAX_LIMIT)),
    )


def _instant(name: str, text: str | None) -> datetime | None:
    """A date (`2026-11-26`, from its start) or an ISO time; naive times are UTC."""
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BadFilter(f"{name} {text[:40]!r} is not a date or an ISO 8601 time") from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


@dataclass(frozen=True)
class Page:
    entries: list[Entry]
    next_cursor: str | None
    filters: Filters = field(default_factory=Filters)


def merge(sources: Iterable[Sequence[Entry]], filters: Filters) -> Page:
    """The newest `filters.limit` entries of the sources (each newest first and holding at
    most limit + 1 entries after the cursor), and the cursor of the page after, if any."""
    ordered = heapq.merge(*sources, key=lambda e: (e.at, e.key), reverse=True)
    picked: list[Entry] = []
    more = False
    for entry in ordered:
        if not within(entry, filters):
            continue
        if len(picked) == filters.limit:
            more = True
            break
        picked.append(entry)
    after = Cursor(picked[-1].at, picked[-1].key).encode() if more else None
    return Page(entries=picked, next_cursor=after, filters=filters)


def within(entry: Entry, filters: Filters) -> bool:
    """The checks every source's query already made, for entries read in Python."""
    if not filters.wants(entry.kind):
        return False
    if filters.since is not None and entry.at < filters.since:
        return False
    if filters.until is not None and entry.at >= filters.until:
        return False
    return filters.cursor is None or filters.cursor.precedes(entry)


def kind_of_action(action: str) -> str:
    """The timeline kind of an audit log action."""
    if action == "watch.baseline_accept":
        return "baseline"
    if action == "watch.revert":
        return "drift"
    family = action.split(".", 1)[0]
    if family == "incident":
        return "incident"
    if family == "agent":
        return "agent"
    return "change"


# How an audit action reads; an action not named here reads as itself.
ACTION_WORDS = {
    "incident.acknowledge": "Incident acknowledged",
    "incident.resolve": "Incident resolved",
    "watch.baseline_accept": "Baseline accepted",
    "watch.revert": "Contract back at its baseline",
    "watch.create": "Watch created",
    "watch.update": "Watch changed",
    "watch.delete": "Watch deleted",
    "agent.kill": "Agent killed",
    "agent.unblock": "Agent unblocked",
    "agent.ack": "Agent's incidents acknowledged",
    "agent.bind": "Watch bound to agent",
    "agent.unbind": "Watch unbound from agent",
    "agent.create": "Agent created",
    "agent.update": "Agent changed",
    "api_key.create": "API key created",
    "api_key.revoke": "API key revoked",
    "fuse_trip.create": "Fleet guard tripped",
}


def words_of_action(action: str) -> str:
    return ACTION_WORDS.get(action, action.replace("_", " ").replace(".", ": ", 1))


# What an audit entry's details may name its object by, in order (stored when the entry was
# written: a deleted object's name survives in its `watch.delete`, `template.delete` ... entry).
NAME_DETAILS = ("name", "watchName", "email", "slug")


def name_in(details: dict[str, object]) -> str | None:
    """The name an audit entry's details give its object, if any."""
    for key in NAME_DETAILS:
        value = details.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:200]
    hint = details.get("hint")
    if isinstance(hint, str) and hint:
        return f"key …{hint}"
    return None


def detail_of(details: dict[str, object]) -> str | None:
    """The human part of an audit entry's details: its reason or note."""
    for name in ("reason", "note", "message"):
        value = details.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()[:500]
    return None
