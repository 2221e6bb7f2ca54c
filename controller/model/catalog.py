"""The system starter templates: watch configurations every org's catalog offers.

Template values are defaults at create time, never locks (SPEC.md "Template"): a watch
launched from a template copies them, and later edits to the template or to the watch never
touch sibling watches.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SystemTemplate:
    name: str
    watch_type: str
    url_pattern: str
    policy_preset: str | None
    tags: tuple[str, ...]
    description: str


SYSTEM_TEMPLATES: dict[str, SystemTemplate] = {
    t.name: t
    for t in (
        SystemTemplate(
            name="system/stripe-openapi",
            watch_type="openapi",
            url_pattern="https://raw.githubusercontent.com/stripe/openapi/master/openapi/spec3.json",
            policy_preset="production-guard",
            tags=("vendor:stripe", "payments"),
            description="Stripe's public OpenAPI 3 description",
        ),
        SystemTemplate(
            name="system/github-rest-openapi",
            watch_type="openapi",
            url_pattern=(
                "https://raw.githubusercontent.com/github/rest-api-description/main/"
                "descriptions/api.github.com/api.github.com.json"
            ),
            policy_preset="staging-strict",
            tags=("vendor:github",),
            description="GitHub's REST API OpenAPI description",
        ),
        SystemTemplate(
            name="system/openapi-json",
            watch_type="openapi",
            url_pattern="https://{host}/openapi.json",
            policy_preset="notify-only",
            tags=(),
            description="Any service that publishes /openapi.json (replace {host})",
        ),
        SystemTemplate(
            name="system/mcp-streamable-http",
            watch_type="mcp",
            url_pattern="https://{host}/mcp",
            policy_preset="staging-strict",
            tags=("mcp",),
            description="An MCP server over Streamable HTTP (replace {host})",
        ),
    )
}
