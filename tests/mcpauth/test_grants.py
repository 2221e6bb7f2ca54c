"""Token requests, answers and the cache decision (`controller.mcpauth.grants`): tables."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.mcpauth.grants import (
    EXPIRY_MARGIN,
    MAX_LIFETIME,
    OAuthSecrets,
    OAuthSettings,
    Token,
    auth_method_problem,
    read_token_answer,
    redact,
    token_request,
    usable_token,
)

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
MCP = "https://mcp.example.com/mcp"


@pytest.mark.parametrize(
    ("expires_at", "resource", "usable"),
    [
        (NOW + timedelta(hours=1), MCP, True),
        (None, MCP, True),
        (NOW + EXPIRY_MARGIN, MCP, False),  # about to expire: not sent
        (NOW - timedelta(seconds=1), MCP, False),
        (NOW + timedelta(hours=1), "https://other.example.com/mcp", False),  # another server's
    ],
)
def test_usable_token(expires_at: datetime | None, resource: str, usable: bool) -> None:
    token = Token("at", resource, "https://login.example.com", expires_at)
    assert (usable_token(token, MCP, NOW) is token) is usable


def test_client_credentials_use_basic_unless_only_post_is_offered() -> None:
    settings = OAuthSettings("client_credentials", "my client", scope="a b")
    secrets = OAuthSecrets(client_secret="p@ss:word")
    basic = token_request(settings, secrets, MCP, None)
    assert basic.form == {"grant_type": "client_credentials", "resource": MCP, "scope": "a b"}
    encoded = basic.headers["Authorization"].removeprefix("Basic ")
    assert base64.b64decode(encoded).decode() == "my+client:p%40ss%3Aword"
    post = token_request(settings, secrets, MCP, ["client_secret_post"])
    assert "Authorization" not in post.headers
    assert post.form["client_id"] == "my client" and post.form["client_secret"] == "p@ss:word"


def test_a_public_client_sends_its_id_with_the_refresh_token() -> None:
    settings = OAuthSettings("refresh_token", "cli")
    request = token_request(settings, OAuthSecrets(refresh_token="rt-1"), MCP, None)
    assert request.form == {
        "grant_type": "refresh_token",
        "resource": MCP,
        "refresh_token": "rt-1",
        "client_id": "cli",
    }
    assert "Authorization" not in request.headers


@pytest.mark.parametrize(
    ("status", "body", "problem"),
    [
        (
            400,
            {"error": "invalid_grant", "error_description": "expired"},
            "invalid_grant (expired)",
        ),
        (500, "oops", "HTTP 500 without a JSON token answer"),
        (200, {"token_type": "Bearer"}, "no access_token"),
        (200, {"access_token": "x", "token_type": "mac"}, "not Bearer"),
    ],
)
def test_token_answers_that_are_not_tokens(status: int, body: Any, problem: str) -> None:
    answer = read_token_answer(status, body, resource=MCP, issuer="i", now=NOW)
    assert answer.renewal is None and answer.problem is not None and problem in answer.problem


def test_a_token_answer_is_a_renewal_with_its_expiry() -> None:
    body = {"access_token": "at", "token_type": "bearer", "expires_in": 300, "refresh_token": "r2"}
    answer = read_token_answer(200, body, resource=MCP, issuer="i", now=NOW)
    assert answer.renewal is not None
    assert answer.renewal.token == Token("at", MCP, "i", NOW + timedelta(seconds=300))
    assert answer.renewal.refresh_token == "r2"
    endless = read_token_answer(
        200, {"access_token": "at", "token_type": "Bearer"}, resource=MCP, issuer="i", now=NOW
    )
    assert endless.renewal is not None
    assert endless.renewal.token.expires_at == NOW + MAX_LIFETIME


def test_redact_blanks_secrets_and_their_longer_words() -> None:
    text = "refused client-secret-1 for Bearer abcdefghij (short)"
    assert redact(text, ["client-secret-1", "Bearer abcdefghij", "short"]) == (
        "refused [redacted] for [redacted] (short)"
    )


@pytest.mark.parametrize(
    ("secret", "methods", "refused"),
    [
        ("client-secret-1", None, False),  # RFC 8414's default: client_secret_basic
        ("client-secret-1", ["client_secret_post"], False),
        ("client-secret-1", ["private_key_jwt", "tls_client_auth"], True),
        (None, ["none", "client_secret_basic"], False),
        (None, ["client_secret_basic"], True),
    ],
)
def test_client_authentication_the_server_must_offer(
    secret: str | None, methods: list[str] | None, refused: bool
) -> None:
    problem = auth_method_problem(OAuthSecrets(client_secret=secret), methods)
    assert (problem is not None) is refused
    if problem is not None:
        assert secret is None or secret not in problem
