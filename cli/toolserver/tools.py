"""The tools of `driftgate mcp`: each one an input model, an output model, annotations and a
function that answers it, through the HTTP API of a driftgate server (the API key's org) or
offline (`compare_json`, `validate_payload`). `server.py` serves them with the MCP SDK.

A tool's input schema is its input model's JSON Schema (camelCase names, bounds, examples);
its `outputSchema` is its output model's, and the structured content it answers validates
against it (the API's own answer, whose shape these models are).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal
from urllib.parse import quote, urlencode

import httpx
from pydantic import BaseModel, Field, JsonValue, StringConstraints, model_validator

from cli import api
from controller.agents.service import AckOut, AffectedAgents, AgentStatus
from controller.contracts.kinds import CONTRACT_KINDS
from controller.discovery.service import CandidateOut, MissingOut, SuggestOut
from controller.drift.explain_service import ExplainOut
from controller.drift.service import CheckOut, DriftPage, IncidentOut, WatchStatus
from controller.gate.service import PreflightResult
from controller.ingress.service import ValidateOut
from controller.model.base import ApiModel, RequestModel
from controller.model.change import ChangeOut
from controller.model.choice import OneOf
from controller.model.watch import WatchList, WatchOut

Id = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f]+$")]
NoteText = Annotated[str, StringConstraints(max_length=2000)]


class ToolError(Exception):
    """What the tool answers as an `isError` result: said plainly, never a crash."""


class Connection:
    """The driftgate server the tools call: its URL and the org's API key, checked when a
    tool first needs them (offline tools never do)."""

    def __init__(self, url: str | None, key: str | None) -> None:
        self.url, self.key = url, key
        self._http: httpx.Client | None = None

    def http(self) -> httpx.Client:
        if self._http is None:
            try:
                self._http = api.client(self.url, self.key)
            except api.ApiError as exc:
                raise ToolError(f"{exc} (set DRIFTGATE_URL and DRIFTGATE_API_KEY)") from None
        return self._http

    def call(self, method: str, path: str, *, ok: tuple[int, ...] = (), **kwargs: Any) -> Any:
        """The JSON answer of a 2xx (or of a status in `ok`); ToolError with the server's
        message otherwise."""
        http = self.http()
        try:
            status, document = api.send(http, method, path, **kwargs)
        except api.ApiError as exc:
            raise ToolError(str(exc)) from None
        if 200 <= status < 300 or status in ok:
            return document
        if isinstance(document, dict) and document.get("error") == "approval_refused":
            # What an agent needs to try again: the rules, and the arguments that match one.
            raise ToolError(api.approval_refused(document, ("repository", "branch")))
        raise ToolError(str(api.refusal(status, document, api.shown(http.base_url))))

    def watch_id(self, ref: str) -> str:
        try:
            return api.watch_id(self.http(), ref)
        except api.ApiError as exc:
            raise ToolError(str(exc)) from None

    def close(self) -> None:
        if self._http is not None:
            self._http.close()


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    description: str
    input: type[BaseModel]
    output: type[BaseModel]
    run: Callable[[Connection, Any], dict[str, Any]]
    text: Callable[[dict[str, Any]], str]
    read_only: bool = True
    idempotent: bool = True
    offline: bool = False  # answers without a server

    def input_schema(self) -> dict[str, Any]:
        return self.input.model_json_schema(by_alias=True)

    def output_schema(self) -> dict[str, Any]:
        return self.output.model_json_schema(by_alias=True, mode="serialization")


TOOLS: dict[str, Tool] = {}


def tool(**spec: Any) -> Callable[[Callable[[Connection, Any], dict[str, Any]]], Tool]:
    def register(run: Callable[[Connection, Any], dict[str, Any]]) -> Tool:
        made = Tool(run=run, description=(run.__doc__ or "").strip(), **spec)
        TOOLS[made.name] = made
        return made

    return register


def _counts(changes: list[dict[str, Any]]) -> dict[str, int]:
    return {
        s: sum(1 for c in changes if c.get("severity") == s)
        for s in ("breaking", "warning", "info")
    }


def _changes_text(changes: list[dict[str, Any]], limit: int = 10) -> list[str]:
    lines = [
        f"- {c['severity'].upper()} {c.get('path', '')}: {c.get('summary', '')}"
        f" -> {c.get('agentAction', '')}"
        for c in changes[:limit]
    ]
    if len(changes) > limit:
        lines.append(f"- ... and {len(changes) - limit} more")
    return lines


# -- offline ---------------------------------------------------------------------------------------


class CompareIn(RequestModel):
    before: JsonValue = Field(
        description="the earlier JSON payload", examples=[{"id": 1, "name": "a"}]
    )
    after: JsonValue = Field(description="the later JSON payload", examples=[{"id": "1"}])
    profile: Literal["cli", "hosted"] = Field(
        default="cli",
        description="cli: strict, a field missing from `after` is breaking; hosted: a warning",
    )


class CountsOut(ApiModel):
    breaking: int
    warning: int
    info: int


class CompareOut(ApiModel):
    profile: str
    breaking: bool = Field(description="whether any change is breaking")
    counts: CountsOut
    changes: list[ChangeOut] = Field(description="each with its severity, agentAction and hint")


@tool(
    name="compare_json",
    title="Compare two JSON payloads",
    input=CompareIn,
    output=CompareOut,
    text=lambda o: "\n".join(
        [
            f"{o['counts']['breaking']} breaking, {o['counts']['warning']} warning, "
            f"{o['counts']['info']} info"
        ]
        + _changes_text(o["changes"])
    ),
    offline=True,
)
def compare_json(connection: Connection, data: CompareIn) -> dict[str, Any]:
    """Compare two JSON payloads (a vendor's response before and after) by the schemas they
    imply, offline: the changes with their severity (breaking, warning, info), the
    agentAction to take and a hint. Use it to see whether a response an agent relies on still
    has the shape the agent expects."""
    from controller.diffs import diff_json_samples
    from controller.diffs.explain import with_hints

    changes = with_hints(
        c.to_json() for c in diff_json_samples(data.before, data.after, profile=data.profile)
    )
    counts = _counts(changes)
    return {
        "profile": data.profile,
        "breaking": counts["breaking"] > 0,
        "counts": counts,
        "changes": changes,
    }


class ValidatePayloadIn(RequestModel):
    payload: JsonValue = Field(description="the payload about to be written", examples=[{"qty": 2}])
    profile: dict[str, JsonValue] = Field(
        description="a consumer profile: {id, version, schema (JSON Schema), ...}",
        examples=[{"id": "order", "version": 1, "schema": {"type": "object"}}],
    )
    profile_mode: Literal["cli", "hosted"] = Field(
        default="hosted",
        description="hosted: the schema's `required`; cli: every declared property",
    )


@tool(
    name="validate_payload",
    title="Check a payload against a consumer profile",
    input=ValidatePayloadIn,
    output=ValidateOut,
    text=lambda o: (
        "ok: the payload fits the profile"
        if o["ok"]
        else "\n".join(
            [f"invalid ({o['severity']}): {len(o['errors'])} error(s)"]
            + [f"- {e['path']} {e['code']}: {e['message']}" for e in o["errors"][:10]]
        )
    ),
    offline=True,
)
def validate_payload(connection: Connection, data: ValidatePayloadIn) -> dict[str, Any]:
    """Check, offline, whether a payload still fits what its consumer accepts (a consumer
    profile), with the same validator as POST /api/validate: `ok`, a severity, and errors
    `{path, code, message}` that never quote the payload's values."""
    from controller.ingress.service import validate_offline
    from controller.model.ingress_profiles import ProfileInvalid

    try:
        answer = validate_offline(data.profile, data.payload, data.profile_mode)
    except ProfileInvalid as exc:
        raise ToolError(f"the profile cannot be used: {exc.message} (profile_invalid)") from None
    return answer.model_dump(by_alias=True, mode="json")


# -- discovery -------------------------------------------------------------------------------------


class DiscoverIn(RequestModel):
    urls: list[Annotated[str, StringConstraints(max_length=2048)]] | None = Field(
        default=None,
        max_length=200,
        description="URLs an agent or its code calls",
        examples=[["https://api.stripe.com/v1/charges", "https://mcp.example.com/mcp"]],
    )
    config: Annotated[str, StringConstraints(max_length=1_000_000)] | None = Field(
        default=None, description="the text of an MCP client configuration file"
    )
    file_name: Annotated[str, StringConstraints(max_length=300)] | None = Field(
        default=None,
        description="that file's name (`.mcp.json`, `.cursor/mcp.json` ...): picks its format",
    )

    @model_validator(mode="after")
    def _something(self) -> DiscoverIn:
        if not self.urls and not self.config:
            raise ValueError("give `urls` or `config`")
        return self

    def body(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True)


@tool(
    name="suggest_watches",
    title="Suggest watches",
    input=DiscoverIn,
    output=SuggestOut,
    text=lambda o: "\n".join(
        [f"{len(o['candidates'])} candidate(s)"]
        + [
            f"- {c['name']} ({c['watchType']}) {c.get('url') or c.get('command') or ''}"
            + (" [watched]" if c.get("existingWatchId") else "")
            for c in o["candidates"]
        ]
    ),
)
def suggest_watches(connection: Connection, data: DiscoverIn) -> dict[str, Any]:
    """Find the contracts behind URLs or an MCP client configuration: candidate watches
    (OpenAPI documents, MCP servers, REST endpoints) with their confidence, and which of them
    the org already watches (`existingWatchId`). Creates nothing."""
    return dict(connection.call("POST", "/api/watches/suggest", json=data.body()))


class CoverageOut(ApiModel):
    covered: bool = Field(description="whether every discovered dependency is watched")
    missing_count: int
    missing: list[MissingOut]
    discovered: list[CandidateOut]


@tool(
    name="assert_coverage",
    title="Assert coverage",
    input=DiscoverIn,
    output=CoverageOut,
    text=lambda o: (
        "covered: every dependency is watched"
        if o["covered"]
        else "\n".join(
            [f"{o['missingCount']} dependency(ies) not watched"]
            + [f"- {m['name']} {m.get('url') or ''}" for m in o["missing"]]
        )
    ),
)
def assert_coverage(connection: Connection, data: DiscoverIn) -> dict[str, Any]:
    """Check that every contract the URLs or MCP configuration depend on is watched by the
    org (Pro or higher): `covered`, or the missing ones. Run it before adding a tool or an
    integration to an agent."""
    answer = connection.call("POST", "/api/coverage/assert", json=data.body(), ok=(422,))
    if isinstance(answer, dict) and "discovered" not in answer and "message" in answer:
        # A 422 that is not missing watches: an input the server cannot read (config_invalid).
        raise ToolError(f"{answer['message']} ({answer.get('error')})")
    if not isinstance(answer, dict) or "discovered" not in answer:
        raise ToolError("the server's coverage answer was not understood")
    missing = answer.get("missing") or []
    return {
        "covered": not missing,
        "missingCount": len(missing),
        "missing": missing,
        "discovered": answer["discovered"],
    }


# -- drift -----------------------------------------------------------------------------------------


class ExplainIn(RequestModel):
    changes: list[dict[str, JsonValue]] = Field(
        min_length=1,
        max_length=500,
        description="change objects as driftgate reports them ({path, severity, rule, ...})",
        examples=[
            [
                {
                    "path": "/paths/~1v1~1refunds",
                    "severity": "breaking",
                    "rule": "endpoint-removed",
                    "summary": "GET /v1/refunds removed",
                }
            ]
        ],
    )


@tool(
    name="explain_drift",
    title="Explain changes",
    input=ExplainIn,
    output=ExplainOut,
    text=lambda o: "\n".join(
        f"- {c.get('severity', '')} {c.get('rule', '')}: {c.get('hint', '')}" for c in o["changes"]
    ),
)
def explain_drift(connection: Connection, data: ExplainIn) -> dict[str, Any]:
    """Explain changes in words: what each one means and what to do about it (its
    remediation hint and agentAction)."""
    return dict(connection.call("POST", "/api/drift/explain", json={"changes": data.changes}))


class ListEventsIn(RequestModel):
    watch_id: Id | None = Field(default=None, description="a watch's id or name (default: all)")
    limit: int = Field(default=10, ge=1, le=50, description="how many events, newest first")
    severity: Literal["breaking", "warning", "info"] | None = Field(
        default=None, description="only events with at least one change of this severity"
    )


@tool(
    name="list_drift_events",
    title="List drift events",
    input=ListEventsIn,
    output=DriftPage,
    text=lambda o: "\n".join(
        [f"{len(o['events'])} event(s)"]
        + [
            f"- {e['id']} {e['detectedAt']} watch {e['watchId']}: "
            f"{e['counts']['breaking']} breaking, {e['counts']['warning']} warning"
            for e in o["events"]
        ]
    ),
)
def list_drift_events(connection: Connection, data: ListEventsIn) -> dict[str, Any]:
    """The org's newest drift events (a watch's, when given), each with its change counts and
    agentActions. Use get_watch_status or explain_drift for the changes themselves."""
    query: dict[str, Any] = {"limit": 50 if data.severity else data.limit}
    if data.watch_id:
        query["watchId"] = connection.watch_id(data.watch_id)
    page = connection.call("GET", f"/api/drift?{urlencode(query)}")
    events = page["events"]
    if data.severity:
        events = [e for e in events if e["counts"][data.severity] > 0]
    return {"events": events[: data.limit], "nextCursor": page.get("nextCursor")}


class WatchRef(RequestModel):
    watch_id: Id | None = Field(default=None, description="the watch's id", examples=["payments"])
    name: Id | None = Field(default=None, description="or its name")

    @model_validator(mode="after")
    def _one(self) -> WatchRef:
        if not (self.watch_id or self.name):
            raise ValueError("give `watchId` or `name`")
        return self

    def resolve(self, connection: Connection) -> str:
        return connection.watch_id(str(self.watch_id or self.name))


@tool(
    name="get_watch_status",
    title="Status of a watch",
    input=WatchRef,
    output=WatchStatus,
    text=lambda o: "\n".join(
        [
            f"{o['name']} ({o['watchType']}): {o['driftStatus']}, health {o['health']['band']}, "
            f"incident {o['incident']['status']}",
            f"agent actions: {', '.join(o['agentActions']) or 'none'}",
        ]
        + (_changes_text(o["lastDriftEvent"]["changes"]) if o.get("lastDriftEvent") else [])
    ),
)
def get_watch_status(connection: Connection, data: WatchRef) -> dict[str, Any]:
    """The status plane of one watch, as the API answers it: driftStatus, health, the open
    incident, the last drift event with its changes, and the agentActions to take. Check it
    before calling a tool or an endpoint the watch covers."""
    watch_id = data.resolve(connection)
    return dict(connection.call("GET", f"/api/watches/{quote(watch_id, safe='')}/status"))


class AgentRef(RequestModel):
    agent_id: Id = Field(description="the agent's id or slug", examples=["billing-agent"])


@tool(
    name="get_agent_status",
    title="Status of an agent",
    input=AgentRef,
    output=AgentStatus,
    text=lambda o: "\n".join(
        [
            f"agent {o['agent']['slug']}: preflight "
            f"{'allowed' if o['preflight']['allowed'] else 'blocked'}, "
            f"runtime {o['runtime']['state']}",
        ]
        + [
            f"- {w['name']}: {w['driftStatus']}" + (" (blocking)" if w["blocking"] else "")
            for w in o["watches"]
        ]
    ),
)
def get_agent_status(connection: Connection, data: AgentRef) -> dict[str, Any]:
    """An agent's status: its policy, runtime state, the watches it depends on (which of them
    block it), its open incidents and what the preflight gate would answer now."""
    return dict(connection.call("GET", f"/api/agents/{quote(data.agent_id, safe='')}/status"))


@tool(
    name="list_affected_agents",
    title="Agents a watch affects",
    input=WatchRef,
    output=AffectedAgents,
    text=lambda o: "\n".join(
        [f"{len(o['agents'])} agent(s) depend on watch {o['watchId']}"]
        + [f"- {a['slug']} ({a['policy']}, {a['runtimeState']})" for a in o["agents"]]
    ),
)
def list_affected_agents(connection: Connection, data: WatchRef) -> dict[str, Any]:
    """The agents that depend on a watch: their policy, what it enforces and their runtime
    state. Use it to see who a drift stops."""
    watch_id = data.resolve(connection)
    return dict(connection.call("GET", f"/api/watches/{quote(watch_id, safe='')}/affected-agents"))


class AcknowledgeIn(RequestModel):
    agent_id: Id | None = Field(default=None, description="acknowledge the agent's incidents")
    watch_id: Id | None = Field(default=None, description="or the watch's open incident")
    note: NoteText = Field(min_length=1, description="why (recorded in the audit trail)")
    repository: Annotated[str, StringConstraints(max_length=300)] | None = Field(
        default=None,
        description="when an agent it unblocks has approval rules: the repository of the fix "
        "(owner/name)",
    )
    branch: Annotated[str, StringConstraints(max_length=255)] | None = Field(
        default=None,
        description="when an agent it unblocks has approval rules: the branch of the fix",
    )

    @model_validator(mode="after")
    def _one(self) -> AcknowledgeIn:
        if bool(self.agent_id) == bool(self.watch_id):
            raise ValueError("give exactly one of `agentId` and `watchId`")
        return self


class AcknowledgeOut(ApiModel):
    target: Literal["agent", "watch"]
    agent: AckOut | None = Field(default=None, description="the agent's acknowledgement")
    incident: IncidentOut | None = Field(default=None, description="the watch's incident")


@tool(
    name="acknowledge_drift",
    title="Acknowledge drift",
    input=AcknowledgeIn,
    output=AcknowledgeOut,
    text=lambda o: (
        f"acknowledged {len(o['agent']['acknowledged'])} incident(s) of the agent"
        if o["target"] == "agent"
        else f"incident {o['incident']['id']} is {o['incident']['status']}"
    ),
    read_only=False,
    idempotent=True,
)
def acknowledge_drift(connection: Connection, data: AcknowledgeIn) -> dict[str, Any]:
    """Acknowledge drift with a note: an agent's open incidents, or a watch's open incident.
    Either way the approval rules of every agent it unblocks decide, with `repository` and
    `branch`. Audited. Acknowledging again changes nothing."""
    body = data.model_dump(
        by_alias=True, exclude_none=True, include={"note", "repository", "branch"}
    )
    if data.agent_id:
        answer = connection.call(
            "POST", f"/api/agents/{quote(data.agent_id, safe='')}/ack", json=body
        )
        return {"target": "agent", "agent": answer}
    watch_id = connection.watch_id(str(data.watch_id))
    answer = connection.call(
        "POST", f"/api/watches/{quote(watch_id, safe='')}/incident/ack", json=body
    )
    return {"target": "watch", "incident": answer}


class PreflightIn(RequestModel):
    watch_ids: list[Id] | None = Field(
        default=None, max_length=200, description="the watches the run depends on (ids)"
    )
    agent_id: Id | None = Field(default=None, description="or the agent about to run")

    @model_validator(mode="after")
    def _one(self) -> PreflightIn:
        if bool(self.watch_ids) == bool(self.agent_id):
            raise ValueError("give exactly one of `watchIds` and `agentId`")
        return self


@tool(
    name="preflight",
    title="Preflight: may this run go?",
    input=PreflightIn,
    output=PreflightResult,
    text=lambda o: (
        ("allowed: " if o["allowed"] else "blocked: ")
        + (
            "; ".join(f"{b['watchId']} {', '.join(b['reasons'])}" for b in o["blocked"])
            or "the contracts are safe"
        )
    ),
)
def preflight(connection: Connection, data: PreflightIn) -> dict[str, Any]:
    """The run gate: before a run, are the contracts it depends on safe? `allowed`, or the
    watches that block it with their reasons and agentActions (an enforcing policy's block
    is answered here, not as an error)."""
    body = data.model_dump(by_alias=True, exclude_none=True)
    return dict(connection.call("POST", "/api/preflight", json=body, ok=(409,)))


# -- watches ---------------------------------------------------------------------------------------


class ListWatchesIn(RequestModel):
    tag: Annotated[str, StringConstraints(max_length=100)] | None = Field(
        default=None, description="only watches with this tag"
    )
    status: Literal["ok", "drifted", "error", "never_run", "disabled"] | None = None
    limit: int = Field(default=50, ge=1, le=200)


@tool(
    name="list_watches",
    title="List watches",
    input=ListWatchesIn,
    output=WatchList,
    text=lambda o: "\n".join(
        [f"{len(o['watches'])} watch(es)"]
        + [f"- {w['name']} ({w['watchType']}): {w['driftStatus']}" for w in o["watches"]]
    ),
)
def list_watches(connection: Connection, data: ListWatchesIn) -> dict[str, Any]:
    """The org's watches (a page): name, type, URL, driftStatus and health of each."""
    query = data.model_dump(by_alias=True, exclude_none=True)
    return dict(connection.call("GET", f"/api/watches?{urlencode(query)}"))


class RegisterIn(RequestModel):
    name: Id = Field(description="a name, unique in the org", examples=["stripe-api"])
    url: Annotated[str, StringConstraints(max_length=2048)] = Field(
        description="the contract's URL: an OpenAPI document, an MCP endpoint, an A2A agent card "
        "(/.well-known/agent-card.json) or a JSON endpoint",
        examples=["https://raw.githubusercontent.com/stripe/openapi/master/openapi/spec3.json"],
    )
    watch_type: Annotated[str, OneOf(CONTRACT_KINDS.spellings())] | None = Field(
        default=None,
        description="inferred from the URL when left out; "
        + "; ".join(f"`{a}` means `{k.name}`" for k in CONTRACT_KINDS for a in k.aliases),
    )
    interval_minutes: int | None = Field(default=None, ge=1, le=10080)
    tags: list[Annotated[str, StringConstraints(max_length=100)]] = Field(
        default_factory=list, max_length=50
    )


@tool(
    name="register_watch",
    title="Register a watch",
    input=RegisterIn,
    output=WatchOut,
    text=lambda o: f"watching {o['name']} ({o['watchType']}) at {o['url']}: id {o['id']}",
    read_only=False,
    idempotent=False,
)
def register_watch(connection: Connection, data: RegisterIn) -> dict[str, Any]:
    """Start watching a contract: an OpenAPI document, an MCP server or a JSON endpoint. The
    first check runs at once; a name already used in the org is refused."""
    body = data.model_dump(by_alias=True, exclude_none=True)
    return dict(connection.call("POST", "/api/watches", json=body))


class CheckIn(WatchRef):
    wait_seconds: int = Field(default=20, ge=0, le=60, description="how long to wait for it")


@tool(
    name="check_watch",
    title="Check a watch now",
    input=CheckIn,
    output=CheckOut,
    text=lambda o: (
        f"check {o['status']}"
        + (f": {o['result']['outcome']}" if o.get("result") else "")
        + (f"; the watch is {o['watch']['driftStatus']}" if o.get("watch") else "")
    ),
    read_only=False,
    idempotent=True,
)
def check_watch(connection: Connection, data: CheckIn) -> dict[str, Any]:
    """Check a watch now and wait for the outcome (`waitSeconds`): the contract is fetched
    and compared with the baseline; a drift opens an incident."""
    watch_id = data.resolve(connection)
    return dict(
        connection.call(
            "POST", f"/api/watches/{quote(watch_id, safe='')}/check?wait={data.wait_seconds}"
        )
    )
