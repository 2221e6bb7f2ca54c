"""Discovery read from the documents alone (`controller.mcpauth.metadata`): tables."""

from __future__ import annotations

from typing import Any

import pytest

from controller.mcpauth.metadata import (
    DiscoveryProblem,
    authorization_server_metadata_urls,
    canonical_resource,
    challenge_parameters,
    read_authorization_server,
    read_protected_resource,
    resource_metadata_urls,
)

MCP = "https://mcp.example.com/v1/mcp"
ISSUER = "https://login.example.com"


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (
            'Bearer resource_metadata="https://mcp.example.com/.well-known/x", scope="a b"',
            {"resource_metadata": "https://mcp.example.com/.well-known/x", "scope": "a b"},
        ),
        (
            'Bearer error="invalid_token", error_description="expired"',
            {"error": "invalid_token", "error_description": "expired"},
        ),
        ("Bearer realm=mcp", {"realm": "mcp"}),
        ('Basic realm="x"', {}),
        (None, {}),
    ],
)
def test_challenge_parameters(header: str | None, expected: dict[str, str]) -> None:
    assert challenge_parameters(header) == expected


def test_resource_metadata_is_looked_for_where_the_spec_says() -> None:
    challenge = 'Bearer resource_metadata="/.well-known/oauth-protected-resource/custom"'
    assert resource_metadata_urls(MCP, challenge) == [
        "https://mcp.example.com/.well-known/oauth-protected-resource/custom",
        "https://mcp.example.com/.well-known/oauth-protected-resource/v1/mcp",
        "https://mcp.example.com/.well-known/oauth-protected-resource",
    ]
    assert resource_metadata_urls("https://mcp.example.com/", None) == [
        "https://mcp.example.com/.well-known/oauth-protected-resource"
    ]


def test_authorization_server_metadata_urls_are_path_aware() -> None:
    assert authorization_server_metadata_urls("https://login.example.com/tenant/") == [
        "https://login.example.com/.well-known/oauth-authorization-server/tenant",
        "https://login.example.com/.well-known/openid-configuration/tenant",
        "https://login.example.com/tenant/.well-known/openid-configuration",
    ]
    assert authorization_server_metadata_urls(ISSUER) == [
        f"{ISSUER}/.well-known/oauth-authorization-server",
        f"{ISSUER}/.well-known/openid-configuration",
    ]


def test_canonical_resource() -> None:
    assert canonical_resource("HTTPS://MCP.Example.com/v1/mcp/?x=1#f") == MCP


@pytest.mark.parametrize(
    ("document", "pinned", "issuer_or_problem"),
    [
        ({"resource": MCP, "authorization_servers": [ISSUER, "https/other"]}, None, ISSUER),
        ({"resource": "https://mcp.example.com", "authorization_servers": [ISSUER]}, None, ISSUER),
        (
            {"resource": MCP, "authorization_servers": ["https://a", ISSUER]},
            ISSUER + "/",
            ISSUER + "/",
        ),
        (
            {"resource": "https://evil.example.com/mcp", "authorization_servers": [ISSUER]},
            None,
            "not this server",
        ),
        ({"resource": MCP + "/deeper", "authorization_servers": [ISSUER]}, None, "not this server"),
        ({"resource": MCP, "authorization_servers": []}, None, "no authorization_servers"),
        (
            {"resource": MCP, "authorization_servers": ["https://a"]},
            ISSUER,
            "not the watch's authorizationServer",
        ),
        ({"authorization_servers": [ISSUER]}, None, "no resource"),
        ([], None, "not a JSON object"),
    ],
)
def test_protected_resource_metadata(
    document: Any, pinned: str | None, issuer_or_problem: str
) -> None:
    if issuer_or_problem.startswith("https://"):
        assert read_protected_resource(document, MCP, pinned).issuer == issuer_or_problem
    else:
        with pytest.raises(DiscoveryProblem, match=issuer_or_problem):
            read_protected_resource(document, MCP, pinned)


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ({"issuer": ISSUER, "token_endpoint": f"{ISSUER}/token"}, None),
        ({"issuer": ISSUER + "/", "token_endpoint": f"{ISSUER}/token"}, None),
        (
            {"issuer": "https://evil.example.com", "token_endpoint": f"{ISSUER}/token"},
            "names issuer",
        ),
        ({"issuer": ISSUER}, "no token_endpoint"),
        ({"issuer": ISSUER, "token_endpoint": "http://login.example.com/token"}, "not an https"),
    ],
)
def test_authorization_server_metadata(document: Any, problem: str | None) -> None:
    if problem is None:
        found = read_authorization_server(document, ISSUER, server_url=MCP)
        assert found.token_endpoint == f"{ISSUER}/token"
    else:
        with pytest.raises(DiscoveryProblem, match=problem):
            read_authorization_server(document, ISSUER, server_url=MCP)
