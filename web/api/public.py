"""Two small public routes: agent install metadata and first-party funnel micro-events."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, RootModel, StringConstraints

from controller import __version__
from controller.model.base import ApiModel, BodyDateTime, RequestModel
from controller.services import funnel
from web.api import REGISTRY
from web.routes import Call, Reply

MCP_TOOLS = (
    ("compare_json", "Offline diff of two JSON payloads (profiles cli and hosted)"),
    ("suggest_watches", "Watch candidates from pasted URLs or an MCP client configuration"),
    ("assert_coverage", "Fail when a dependency is not watched"),
    ("explain_drift", "Human summaries and agentAction hints for a list of changes"),
    ("list_drift_events", "Recent drift events of the org"),
    ("get_watch_status", "driftStatus, health and open changes of one watch"),
    ("get_agent_status", "Composite status and policy action of one agent"),
    ("list_affected_agents", "Agents bound to a drifted watch"),
    ("acknowledge_drift", "Acknowledge the open incident of a watch or an agent"),
)


class Tool(ApiModel):
    name: str
    description: str


class AgentConfig(ApiModel):
    product: str
    version: str
    api_version: str
    user_agent: str
    install: dict[str, str]
    mcp_server: dict[str, object]
    environment: dict[str, str]
    auth: dict[str, str]
    docs: dict[str, str]
    tools: list[Tool]


@REGISTRY.route(
    "GET",
    "/api/public/agent-config",
    summary="Install metadata for agents",
    tag="public",
    auth="none",
    responses={200: AgentConfig},
)
def agent_config(call: Call) -> AgentConfig:
    """How an agent or CI job installs the CLI and the MCP tool server and reaches this service."""
    base = (call.settings.public_base_url or "").rstrip("/")
    return AgentConfig(
        product="driftgate",
        version=__version__,
        api_version="0.6.0",
        user_agent=f"driftgate-cli/{__version__}",
        install={
            "pip": "pip install driftgate",
            "docker": "docker build -t driftgate . && docker run -p 8080:8080 driftgate",
        },
        mcp_server={"command": "driftgate", "args": ["mcp", "serve"], "transport": "stdio"},
        environment={
            "DRIFTGATE_URL": base or "<this service's base URL>",
            "DRIFTGATE_API_KEY": "<an org API key, dg_...>",
        },
        auth={
            "header": "Authorization",
            "scheme": "Bearer",
            "alternativeHeader": "X-Api-Key",
            "trialHeader": "X-Service-Trial",
        },
        docs={"openapi": f"{base}/openapi.json", "readme": "README.md", "api": "docs/api.md"},
        tools=[Tool(name=n, description=d) for n, d in MCP_TOOLS],
    )


EventName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_.:-]{0,63}$")]


class FunnelEvent(RequestModel):
    event: EventName
    occurred_at: BodyDateTime | None = None


class FunnelBatch(RequestModel):
    events: Annotated[list[FunnelEvent], Field(min_length=1, max_length=50)]


class FunnelBody(RootModel[FunnelEvent | FunnelBatch]):
    """One event (`{event}`) or a batch (`{events: [...]}`, at most 50). Nothing else is
    accepted, so no personal data can arrive."""

    def names(self) -> list[str]:
        if isinstance(self.root, FunnelBatch):
            return [e.event for e in self.root.events]
        return [self.root.event]


class FunnelAccepted(ApiModel):
    accepted: int


@REGISTRY.route(
    "POST",
    "/api/funnel/events",
    summary="Record usage micro-events",
    tag="public",
    auth="none",
    body=FunnelBody,
    responses={202: FunnelAccepted},
    errors=(429,),
)
def funnel_events(call: Call) -> Reply:
    """Counts events per name and day; no identifiers, addresses or properties are stored."""
    call.rate_limit("funnel", per_minute=120, burst=60)
    names = call.body.names()
    funnel.count_events(call.session, names, call.now)
    return Reply(202, FunnelAccepted(accepted=len(names)))
