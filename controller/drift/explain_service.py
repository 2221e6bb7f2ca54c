"""`POST /api/drift/explain`: change objects (CONTRACT.md) in, each with its remediation token
and a hint for people out, plus counts and an overall summary (`controller.diffs.explain`)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field, StringConstraints, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from controller.diffs.explain import explain_changes
from controller.model.base import ApiModel, BodyBool, JsonNumber, RequestModel
from controller.model.change import Change, Location, Severity, WaiverNote
from controller.model.watch import ChangeCounts, refuse_null

MAX_CHANGES = 5000
UNCLASSIFIED = "unclassified"

Text = Annotated[str, StringConstraints(max_length=4096)]
Place = Annotated[str, StringConstraints(max_length=256)]  # an operation or a tool
RuleId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,99}$")]
ActionToken = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,63}$")]


class LocationIn(RequestModel):
    operation: Annotated[str, StringConstraints(max_length=2048)] | None = None
    tool: Annotated[str, StringConstraints(max_length=512)] | None = None


class WaiverIn(RequestModel):
    """The waiver of a waived change, as served (`.driftgate/waivers.yaml`)."""

    owner: Text
    reason: Text
    expires: Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}$")]


class ChangeIn(RequestModel):
    """A change object (CONTRACT.md); `message` is accepted for `summary` (draft-PR webhook)."""

    model_config = ConfigDict(
        json_schema_extra={"oneOf": [{"required": ["summary"]}, {"required": ["message"]}]}
    )

    path: Annotated[str, StringConstraints(max_length=2048)]
    severity: Severity
    summary: Text | SkipJsonSchema[None] = None
    message: Text | SkipJsonSchema[None] = None
    rule: RuleId | None = None
    change_type: Annotated[str, StringConstraints(max_length=32)] | None = None
    agent_action: ActionToken | None = None
    location: LocationIn | None = None
    before: Any = None
    after: Any = None
    ignored: BodyBool = False
    ignore_reason: Text | None = None
    waived: BodyBool = Field(default=False, description="as served: a waiver accepts it")
    waiver: WaiverIn | None = Field(default=None, description="as served: the waiver")
    hint: Text | None = Field(
        default=None,
        description="accepted so that a served change can be sent back as it is; the "
        "explanation computes its own",
    )
    cause: Text | None = Field(
        default=None,
        description="accepted so that a served change can be sent back as it is; the "
        "explanation computes its own",
    )
    origin: Text | None = Field(
        default=None, description="as served: the shared schema place the change lives in"
    )
    affected: Annotated[list[Place], Field(max_length=2000)] | None = Field(
        default=None, description="as served: the operations the cause reaches"
    )
    affected_count: Annotated[int, Field(ge=0), JsonNumber] | None = Field(
        default=None, description="as served; not used"
    )
    place_count: Annotated[int, Field(ge=0), JsonNumber] | None = Field(
        default=None, description="as served; not used"
    )

    @field_validator("summary", "message", mode="before")
    @classmethod
    def _not_null(cls, value: object) -> object:
        return refuse_null(value)

    @model_validator(mode="after")
    def _one_text(self) -> ChangeIn:
        if self.summary is None and self.message is None:
            raise ValueError("send `summary` (or its alias `message`)")
        if self.summary is not None and self.message is not None and self.summary != self.message:
            # The status plane serves both, the same text: a served change comes back as is.
            raise ValueError("`summary` and its alias `message` differ: send one of them")
        return self

    def to_change(self) -> Change:
        location = None
        if self.location is not None:
            location = Location(operation=self.location.operation, tool=self.location.tool)
        data: dict[str, Any] = {
            "path": self.path,
            "severity": self.severity,
            "summary": self.summary if self.summary is not None else self.message,
            "rule": self.rule or UNCLASSIFIED,
            "changeType": self.change_type or "changed",
            "before": self.before,
            "after": self.after,
            "location": location,
            "ignored": self.ignored,
            "ignoreReason": self.ignore_reason,
        }
        if self.waived and self.waiver is not None:
            data |= {"waived": True, "waiver": self.waiver.model_dump(), "ignored": True}
        if self.agent_action is not None:
            data["agentAction"] = self.agent_action
        if self.origin is not None:  # a served cause: explained by its schema place
            data["origin"] = self.origin
            data["affected"] = self.affected
        return Change.model_validate(data)


class ExplainRequest(RequestModel):
    changes: Annotated[list[ChangeIn], Field(max_length=MAX_CHANGES)]


class LocationOut(ApiModel):
    operation: str | None = None
    tool: str | None = None


class ExplainedChange(ApiModel):
    path: str
    severity: Severity
    rule: str
    summary: str
    agent_action: str = Field(description="stable remediation token")
    hint: str = Field(
        description="for people: what a client sees fail (breaking changes), then what to do"
    )
    location: LocationOut | None = None
    cause: str | None = Field(
        default=None,
        description="for a change sent with its `origin`: the shared schema and what changed "
        "in it (`refund.reason: maxLength 5000 removed`)",
    )
    affected_count: int | None = Field(
        default=None, description="for a change sent with `affected`: the operations it reaches"
    )
    ignored: bool = False
    ignore_reason: str | None = None
    waived: bool = Field(default=False, description="a waiver accepts it (not counted)")
    waiver: WaiverNote | None = None


class ExplainOut(ApiModel):
    changes: list[ExplainedChange]
    counts: ChangeCounts
    ignored: int
    agent_actions: list[str]
    summary: str


def explain(request: ExplainRequest) -> ExplainOut:
    """The explanation of `request`'s changes."""
    result = explain_changes([change.to_change() for change in request.changes])
    return ExplainOut(
        changes=[
            ExplainedChange(
                path=item["path"],
                severity=Severity(item["severity"]),
                rule=item["rule"],
                summary=item["summary"],
                agent_action=item["agentAction"],
                hint=item["hint"],
                location=LocationOut(**item["location"]) if "location" in item else None,
                cause=item.get("cause"),
                affected_count=item.get("affectedCount"),
                ignored=item.get("ignored", False),
                ignore_reason=item.get("ignoreReason"),
                waived=item.get("waived", False),
                waiver=WaiverNote(**item["waiver"]) if "waiver" in item else None,
            )
            for item in result["changes"]
        ],
        counts=ChangeCounts(**result["counts"]),
        ignored=result["ignored"],
        agent_actions=result["agentActions"],
        summary=result["summary"],
    )
