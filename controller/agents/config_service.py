"""What an agent or CI job needs to install the CLI and the MCP tool server and reach this
service (`GET /api/public/agent-config`), and the MCP tools driftgate offers."""

from __future__ import annotations

from controller import __version__
from controller.model.base import ApiModel

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


class McpServerLaunch(ApiModel):
    """How an MCP client starts driftgate's MCP tool server."""

    command: str
    args: list[str]
    transport: str


class AgentConfig(ApiModel):
    product: str
    version: str
    api_version: str
    user_agent: str
    install: dict[str, str]
    mcp_server: McpServerLaunch
    environment: dict[str, str]
    auth: dict[str, str]
    docs: dict[str, str]
    tools: list[Tool]


def agent_config(public_base_url: str | None) -> AgentConfig:
    """The install metadata for a service reachable at `public_base_url` (when configured)."""
    base = (public_base_url or "").rstrip("/")
    return AgentConfig(
        product="driftgate",
        version=__version__,
        api_version="0.6.0",
        user_agent=f"driftgate-cli/{__version__}",
        install={
            "pip": "pip install driftgate",
            "docker": "docker build -t driftgate . && docker run -p 8080:8080 driftgate",
        },
        mcp_server=McpServerLaunch(command="driftgate", args=["mcp", "serve"], transport="stdio"),
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
