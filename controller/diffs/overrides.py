"""User rules files: override a rule's severity or ignore findings, with a reason.

A rules file (YAML or JSON, parsed by the caller) looks like::

    version: 1
    overrides:
      - rule: response-property-enum-value-added
        severity: info
    ignore:
      - rule: response-property-removed
        operation: "GET /v1/legacy/*"
        reason: "we never read these fields (JIRA-123)"

    waivers:
      - rule: response-property-removed-required
        operation: "GET /v1/legacy/*"
        owner: payments-team@example.com
        reason: "we never read these fields (TICKET-123)"
        expires: 2027-03-31

Matching: `rule` exactly, `path`, `operation` and `tool` as shell-style globs; every given
field must match. Ignored findings stay in the result, marked `ignored` with the reason; a
waiver (`controller.model.waivers`, the entries of `.driftgate/waivers.yaml` without `watch`)
is an ignore with an owner and an expiry: its findings are also marked `waived`, and from its
`expires` day it no longer applies.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime, time
from fnmatch import fnmatchcase
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from controller.diffs.rules import CATALOG
from controller.model.change import Change, Severity
from controller.model.waivers import Waiver, waive


class RulesFileError(ValueError):
    """A rules file is malformed or names a rule that does not exist."""


class Matcher(BaseModel):
    """Which findings an entry applies to; omitted fields match everything."""

    model_config = ConfigDict(extra="forbid")

    rule: str | None = None
    path: str | None = None
    operation: str | None = None
    tool: str | None = None

    def matches(self, change: Change) -> bool:
        """Return True when every given field matches the change."""
        if self.rule is not None and change.rule != self.rule:
            return False
        if self.path is not None and not fnmatchcase(change.path, self.path):
            return False
        loc = change.location
        if self.operation is not None and not fnmatchcase(
            (loc.operation if loc else None) or "", self.operation
        ):
            return False
        if self.tool is not None and not fnmatchcase((loc.tool if loc else None) or "", self.tool):
            return False
        return True


class Override(Matcher):
    """Change the severity of matching findings."""

    severity: Severity


class Ignore(Matcher):
    """Mark matching findings as ignored; a reason is required."""

    reason: str = Field(min_length=1)


class RulesFile(BaseModel):
    """A parsed rules file."""

    model_config = ConfigDict(extra="forbid")

    version: int = 1
    overrides: list[Override] = Field(default_factory=list)
    ignore: list[Ignore] = Field(default_factory=list)
    waivers: list[Waiver] = Field(default_factory=list)


def parse_rules_file(data: Mapping[str, Any] | RulesFile) -> RulesFile:
    """Validate a parsed rules file; raise `RulesFileError` with the place of the problem."""
    if isinstance(data, RulesFile):
        rules = data
    else:
        try:
            rules = RulesFile.model_validate(dict(data))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = "/".join(str(p) for p in first["loc"])
            raise RulesFileError(f"rules file: {where}: {first['msg']}") from None
    for section, entries in (("overrides", rules.overrides), ("ignore", rules.ignore)):
        for i, entry in enumerate(entries):
            if entry.rule is not None and entry.rule not in CATALOG:
                raise RulesFileError(
                    f"rules file: {section}/{i}/rule: unknown rule id {entry.rule!r} "
                    "(see docs/rules.md)"
                )
    return rules


def expired_waivers(rules: RulesFile, today: date) -> list[Waiver]:
    """The waivers of `rules` that no longer apply on `today` (UTC)."""
    return [waiver for waiver in rules.waivers if waiver.is_expired(_start_of(today))]


def _start_of(today: date) -> datetime:
    return datetime.combine(today, time(0), tzinfo=UTC)


def apply_rules_file(
    changes: Iterable[Change], rules: Mapping[str, Any] | RulesFile, today: date | None = None
) -> list[Change]:
    """Return the changes with severity overrides applied and ignored findings marked, then
    waived findings marked (waivers that have not expired on `today`, default today UTC)."""
    parsed = parse_rules_file(rules)
    out: list[Change] = []
    for change in changes:
        for override in parsed.overrides:
            if override.matches(change):
                change = change.model_copy(update={"severity": override.severity})
        for ignore in parsed.ignore:
            if ignore.matches(change):
                change = change.model_copy(update={"ignored": True, "ignoreReason": ignore.reason})
                break
        out.append(change)
    if parsed.waivers:
        on = today or datetime.now(UTC).date()
        out = waive(out, parsed.waivers, _start_of(on))
    return out
