"""Waivers: accepted findings, each with an owner, a reason and an expiry date.

A waiver names a rule and where it applies (`path`, `operation`, `tool`: shell-style globs)
and, in `.driftgate/waivers.yaml`, which watches (`watch`: a glob over a watch's name, its
watch set's name or one of its tags). A finding it matches stays in every list, marked
`waived` with the waiver, and is also `ignored`: nothing that counts findings (incidents,
the gate, `--fail-on`, agent kills) counts it. From its `expires` date (00:00 UTC) a waiver
no longer applies and the findings it covered count again.

The same entries are the `waivers` key of `driftgate diff --rules` (without `watch`). Pure:
the clock is passed in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, time
from fnmatch import fnmatchcase
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from controller.model.change import Change, Severity, WaiverNote

Glob = Annotated[str, StringConstraints(min_length=1, max_length=300)]
NOTICE_DAYS = 7
"""How many days before its expiry a waiver's owner is told (`waiver.expiring`)."""


class Waiver(BaseModel):
    """One accepted finding: a rule, where, who, why and until when."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        field_title_generator=lambda name, info: info.alias or name,
    )

    rule: str = Field(description="the rule id of the findings it waives (docs/rules.md)")
    path: Glob | None = Field(default=None, description="glob over the finding's path")
    operation: Glob | None = Field(
        default=None, description='glob over the operation (`"GET /v1/legacy/*"`)'
    )
    tool: Glob | None = Field(default=None, description="glob over the MCP tool's name")
    owner: Annotated[str, StringConstraints(min_length=1, max_length=254)] = Field(
        description="who accepted it and is told before it expires (an e-mail address or a team)"
    )
    reason: Annotated[str, StringConstraints(min_length=1, max_length=500)] = Field(
        description="why the finding is accepted (shown with it everywhere)"
    )
    expires: date = Field(
        description="the first day (00:00 UTC) it no longer applies; required, at most the "
        "setting `waiver_max_days` ahead"
    )

    @field_validator("rule")
    @classmethod
    def _known_rule(cls, value: str) -> str:
        from controller.diffs.rules import CATALOG  # the diffs package reads this module

        if value not in CATALOG:
            raise ValueError(f"unknown rule id {value!r} (see docs/rules.md)")
        return value

    @property
    def expires_at(self) -> datetime:
        return datetime.combine(self.expires, time(0), tzinfo=UTC)

    def is_expired(self, now: datetime) -> bool:
        return now >= self.expires_at

    def matches(self, change: Change) -> bool:
        """Whether the change is one this waiver accepts (every given field matches)."""
        if change.rule != self.rule:
            return False
        if self.path is not None and not fnmatchcase(change.path, self.path):
            return False
        loc = change.location
        operation = (loc.operation if loc else None) or ""
        if self.operation is not None and not fnmatchcase(operation, self.operation):
            return False
        tool = (loc.tool if loc else None) or ""
        return self.tool is None or fnmatchcase(tool, self.tool)

    @property
    def note(self) -> WaiverNote:
        return WaiverNote(owner=self.owner, reason=self.reason, expires=self.expires.isoformat())


class WatchWaiver(Waiver):
    """A waiver of `.driftgate/waivers.yaml`: also which watches it applies to."""

    watch: Glob = Field(description="glob over a watch's name, its watch set's name or a tag")

    def applies_to(self, name: str, watch_set: str | None, tags: Iterable[str]) -> bool:
        """Whether this waiver is for the watch named `name` (in `watch_set`, with `tags`)."""
        candidates = [name, *([watch_set] if watch_set else []), *tags]
        return any(fnmatchcase(candidate, self.watch) for candidate in candidates)


def waiver_key(waiver: WatchWaiver) -> str:
    """A waiver's identity: its rule and a digest of what it matches (watch, rule, path,
    operation, tool). Its owner, reason and expiry may change and it stays the same waiver
    (with its notices)."""
    parts = [waiver.watch, waiver.rule, waiver.path, waiver.operation, waiver.tool]
    digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()
    # Readable in a reconcile's plan (`create waiver endpoint-removed:3f2a...`), at most 63.
    return f"{waiver.rule[:50]}:{digest[:12]}"


def waive(changes: Iterable[Change], waivers: Sequence[Waiver], now: datetime) -> list[Change]:
    """The changes with those an unexpired waiver matches marked waived (and ignored, with the
    waiver's reason); a change already ignored is left as it is. The first match wins."""
    active = [waiver for waiver in waivers if not waiver.is_expired(now)]
    out: list[Change] = []
    for change in changes:
        if not change.ignored:
            for waiver in active:
                if waiver.matches(change):
                    change = change.model_copy(
                        update={
                            "ignored": True,
                            "ignoreReason": waiver.reason,
                            "waived": True,
                            "waiver": waiver.note,
                        }
                    )
                    break
        out.append(change)
    return out


def unwaive(changes: Iterable[Change]) -> list[Change]:
    """The changes as found, before any waiver (what `waive` marks, unmarked)."""
    return [
        change.model_copy(
            update={"ignored": False, "ignoreReason": None, "waived": False, "waiver": None}
        )
        if change.waived
        else change
        for change in changes
    ]


def waived_until(changes: Iterable[Change]) -> datetime | None:
    """When the first waiver that hides a breaking change expires (None: none does): from then
    the gate blocks the watch until its findings are counted again."""
    ends = [
        datetime.combine(date.fromisoformat(change.waiver.expires), time(0), tzinfo=UTC)
        for change in changes
        if change.waived and change.waiver is not None and change.severity == Severity.BREAKING
    ]
    return min(ends) if ends else None


def count_waived(changes: Iterable[Change]) -> int:
    return sum(1 for change in changes if change.waived)
