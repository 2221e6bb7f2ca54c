"""The change object: one classified difference between a baseline contract and its revision.

Every diff engine returns a list of `Change`; the API, the CLI, drift events and the draft-PR
webhook all carry this shape (CONTRACT.md, "Change object and classification").
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field


class Severity(StrEnum):
    """How much a change matters to a consumer; ordered breaking > warning > info."""

    BREAKING = "breaking"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Return 3 for breaking, 2 for warning, 1 for info (higher is worse)."""
        return _RANKS[self]


_RANKS = {Severity.BREAKING: 3, Severity.WARNING: 2, Severity.INFO: 1}


def _absent(value: object) -> bool:
    return value is None


class Location(BaseModel):
    """Where a change applies: an OpenAPI operation (`GET /v1/charges`) or an MCP tool."""

    model_config = ConfigDict(extra="allow", frozen=True)

    operation: str | None = Field(default=None, exclude_if=_absent)
    tool: str | None = Field(default=None, exclude_if=_absent)


class WaiverNote(BaseModel):
    """The waiver a finding is waived by (`.driftgate/waivers.yaml`, `diff --rules`): who
    accepted it, why, and until when (the first day it no longer applies, UTC)."""

    model_config = ConfigDict(frozen=True)

    owner: str
    reason: str
    expires: str = Field(description="ISO date: from this day (00:00 UTC) the finding counts")


class Change(BaseModel):
    """One classified change. `summary` is also accepted as `message` (draft-PR webhook)."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    path: str
    severity: Severity
    summary: str = Field(validation_alias=AliasChoices("summary", "message"))
    rule: str
    changeType: str = "changed"
    # CONTRACT.md: the optional members are left out when they carry nothing.
    before: Any = Field(default=None, exclude_if=_absent)
    after: Any = Field(default=None, exclude_if=_absent)
    location: Location | None = Field(default=None, exclude_if=_absent)
    agentAction: str = "accept_baseline"
    ignored: bool = Field(default=False, exclude_if=lambda value: value is False)
    ignoreReason: str | None = Field(default=None, exclude_if=_absent)
    # A waived finding is also `ignored` (so nothing counts it), with the waiver's reason.
    waived: bool = Field(default=False, exclude_if=lambda value: value is False)
    waiver: WaiverNote | None = Field(default=None, exclude_if=_absent)
    # The referenced schema the change lives in (`#/components/schemas/charge/properties/id`):
    # the same cause met through every operation that reaches the schema.
    origin: str | None = Field(default=None, exclude_if=_absent)
    # Grouped output: the operations (or tools) one cause affects, this change's own first.
    affected: list[str] | None = Field(default=None, exclude_if=_absent)
    # Grouped output: the places the cause was met at, one per operation and request or
    # response it reaches (what `--flat` lists one change each for).
    placeCount: int | None = Field(
        default=None,
        exclude_if=_absent,
        description="how many places (an operation's request or response) the cause was met at",
    )

    def to_json(self) -> dict[str, Any]:
        """Return the documented JSON form: optional fields only when they carry a value."""
        data: dict[str, Any] = {
            "path": self.path,
            "severity": self.severity.value,
            "summary": self.summary,
            "rule": self.rule,
            "changeType": self.changeType,
            "agentAction": self.agentAction,
        }
        if self.before is not None:
            data["before"] = self.before
        if self.after is not None:
            data["after"] = self.after
        if self.location is not None:
            data["location"] = self.location.model_dump(exclude_none=True)
        if self.ignored:
            data["ignored"] = True
            data["ignoreReason"] = self.ignoreReason
        if self.waived and self.waiver is not None:
            data["waived"] = True
            data["waiver"] = self.waiver.model_dump()
        if self.origin is not None:
            data["origin"] = self.origin
        if self.affected is not None:
            data["affected"] = self.affected
            data["affectedCount"] = len(self.affected)
        if self.placeCount is not None:
            data["placeCount"] = self.placeCount
        return data


class ChangeOut(Change):
    """A change as the API serves it (drift events, the watch status): the change object plus
    the human `hint` of its rule (`controller.diffs.explain.with_hints`)."""

    hint: str = Field(description="what to do about it, in words (the rule's remediation)")
    cause: str | None = Field(
        default=None,
        exclude_if=_absent,
        description="for a change that lives in a shared schema: the schema and what changed in "
        "it (`refund.reason: maxLength 5000 removed`)",
    )
    affectedCount: int | None = Field(
        default=None, exclude_if=_absent, description="how many operations the cause affects"
    )
