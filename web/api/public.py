"""Two small public routes: agent install metadata and first-party funnel micro-events."""

from __future__ import annotations

from controller.agents import config_service
from controller.orgs import funnel_service as funnel
from web.api import REGISTRY
from web.routes import Call, Reply


@REGISTRY.route(
    "GET",
    "/api/public/agent-config",
    summary="Install metadata for agents",
    tag="public",
    auth="none",
    responses={200: config_service.AgentConfig},
)
def agent_config(call: Call) -> config_service.AgentConfig:
    """How an agent or CI job installs the CLI and the MCP tool server and reaches this service."""
    return config_service.agent_config(call.settings.public_base_url)


@REGISTRY.route(
    "POST",
    "/api/funnel/events",
    summary="Record usage micro-events",
    tag="public",
    auth="none",
    body=funnel.FunnelBody,
    responses={202: funnel.FunnelAccepted},
    errors=(429,),
)
def funnel_events(call: Call) -> Reply:
    """Counts events per name and day; no identifiers, addresses or properties are stored."""
    call.rate_limit("funnel", per_minute=120, burst=60)
    names = call.body.names()
    funnel.count_events(call.session, names, call.now)
    return Reply(202, funnel.FunnelAccepted(accepted=len(names)))
