"""Two small public routes: agent install metadata and first-party funnel micro-events."""

from __future__ import annotations

from controller.agents import config_service
from controller.orgs import funnel_service as funnel
from web.api import REGISTRY
from web.routes import FUNNEL_EVENTS, Call

route = REGISTRY.tagged("public")


@route("GET /api/public/agent-config", "Install metadata for agents", auth="none")
def agent_config(call: Call) -> config_service.AgentConfig:
    """How an agent or CI job installs the CLI and the MCP tool server and reaches this service."""
    return config_service.agent_config(call.settings.public_base_url)


@route(
    "POST /api/funnel/events",
    "Record usage micro-events",
    auth="none",
    body=funnel.FunnelBody,
    status=202,
    errors=(429,),
    switch=FUNNEL_EVENTS,
)
def funnel_events(call: Call) -> funnel.FunnelAccepted:
    """Counts events per name and day; no identifiers, addresses or properties are stored."""
    call.rate_limit("funnel", per_minute=120, burst=60)
    names = call.body.names()
    funnel.count_events(call.session, names, call.now)
    return funnel.FunnelAccepted(accepted=len(names))
