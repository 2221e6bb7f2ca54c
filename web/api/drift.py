"""Drift explanation: `POST /api/drift/explain` turns change objects into hints (no key needed)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal

from flask import Response
from pydantic import ConfigDict, Field, StringConstraints, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema
from sqlalchemy.orm import Session

from controller.diffs.explain import explain_changes
from controller.model.base import ApiModel, BodyBool, RequestModel
from controller.model.change import Change, Location, Severity
from controller.model.watch import ChangeCounts, refuse_null
from controller.services import drift as drift_service
from controller.services import export
from controller.store.db import Database
from web.api import REGISTRY
from web.routes import CORRELATION_HEADER, Call

MAX_CHANGES = 5000
UNCLASSIFIED = "unclassified"

Text = Annotated[str, StringConstraints(max_length=4096)]
RuleId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9-]{0,99}$")]
ActionToken = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,63}$")]


class LocationIn(RequestModel):
    operation: Annotated[str, StringConstraints(max_length=2048)] | None = None
    tool: Annotated[str, StringConstraints(max_length=512)] | None = None


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

    @field_validator("summary", "message", mode="before")
    @classmethod
    def _not_null(cls, value: object) -> object:
        return refuse_null(value)

    @model_validator(mode="after")
    def _one_text(self) -> ChangeIn:
        if (self.summary is None) == (self.message is None):
            raise ValueError("send `summary` (or its alias `message`), not both")
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
        if self.agent_action is not None:
            data["agentAction"] = self.agent_action
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
    hint: str = Field(description="what to do, for people")
    location: LocationOut | None = None
    ignored: bool = False
    ignore_reason: str | None = None


class ExplainOut(ApiModel):
    changes: list[ExplainedChange]
    counts: ChangeCounts
    ignored: int
    agent_actions: list[str]
    summary: str


@REGISTRY.route(
    "POST",
    "/api/drift/explain",
    summary="Explain changes",
    tag="drift",
    auth="none",
    body=ExplainRequest,
    responses={200: ExplainOut},
    errors=(429,),
)
def explain_drift(call: Call) -> ExplainOut:
    """Per change: its summary, the `agentAction` token and a human hint; plus counts and an
    overall summary. Unknown rules get a hint by severity. No key is needed; rate limited."""
    call.rate_limit("explain", per_minute=600, burst=120)
    result = explain_changes([change.to_change() for change in call.body.changes])
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
                ignored=item.get("ignored", False),
                ignore_reason=item.get("ignoreReason"),
            )
            for item in result["changes"]
        ],
        counts=ChangeCounts(**result["counts"]),
        ignored=result["ignored"],
        agent_actions=result["agentActions"],
        summary=result["summary"],
    )


@REGISTRY.route(
    "GET",
    "/api/drift",
    summary="List drift events",
    tag="drift",
    query=drift_service.DriftQuery,
    responses={200: drift_service.DriftPage},
)
def list_drift(call: Call) -> drift_service.DriftPage:
    """Drift events of the org, newest first, at most 50 a page; filter by `watchId`."""
    return drift_service.list_events(call.session, call.org_id, call.query)


@REGISTRY.route(
    "GET",
    "/api/drift/events/<event_id>",
    summary="One drift event with its changes",
    tag="drift",
    responses={200: drift_service.DriftEventOut},
)
def get_drift_event(call: Call) -> drift_service.DriftEventOut:
    """The event, its counts and every change object."""
    return drift_service.get_event(call.session, call.org_id, call.path["event_id"])


class ExportQuery(RequestModel):
    format: Literal["json", "csv", "audit"] = "json"


@REGISTRY.route(
    "GET",
    "/api/drift/export",
    summary="Export the drift history",
    tag="drift",
    query=ExportQuery,
    responses={200: None},
    raw_response={
        "application/json": {"schema": {"type": "object"}},
        "text/csv": {"schema": {"type": "string"}},
    },
)
def export_drift(call: Call) -> Response:
    """Streams every drift event: `json` (driftgate-drift-export-v1), `csv` (one row per event,
    `changesJson` column) or `audit` (events, acknowledgement trail and preflight decisions,
    signed with HMAC-SHA256; `driftgate audit verify FILE` checks it)."""
    org_id, now, fmt = call.org_id, call.now, call.query.format
    box = call.secret_box
    if fmt == "csv":
        mimetype, extension = "text/csv", "csv"
    else:
        mimetype, extension = "application/json", "audit.json" if fmt == "audit" else "json"

    def produce(session: Session) -> Iterator[str]:
        if fmt == "csv":
            return export.stream_csv(session, org_id)
        if fmt == "audit":
            return export.stream_audit(session, org_id, now, box)
        return export.stream_json(session, org_id, now)

    body = _streamed(call.database, produce)
    response = Response(body, mimetype=mimetype)
    response.headers["Content-Disposition"] = f'attachment; filename="driftgate-drift.{extension}"'
    response.headers[CORRELATION_HEADER] = call.correlation_id
    return response


def _streamed(store: Database, produce: Callable[[Session], Iterator[str]]) -> Iterator[str]:
    """Run `produce` in a read session of its own that lives exactly as long as the stream
    (a client that disconnects closes the generator, and so the session)."""
    session = store.session()
    try:
        yield from produce(session)
    finally:
        session.close()
