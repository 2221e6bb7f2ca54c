"""The OAuth exchanges of an MCP fetch, and the fetch that carries their token.

`fetch_authorized_snapshot` reads an MCP server's surface with the watch's access token as
`Authorization: Bearer` (bound by `controller.sources.mcp` to the server's origin, so a
redirect elsewhere never carries it). Without a usable cached token it first asks without
one; a 401 (at the first request, or mid-way: the token expired or was revoked) starts
discovery from the server's challenge, buys a token, and runs the session again, once. A
server that still answers 401 with a token just bought, a token endpoint that refuses, or
metadata that cannot be read fails the check as `http_error` (CONTRACT.md's closed list of
failure classes has no other fit), with a message that says which step failed and never
quotes a secret or a token.

Every request (metadata, token endpoint) goes through `controller.sources.http` with the
check's client, so the operator's address guard applies to authorization servers as it does
to MCP servers, and the whole exchange shares the fetch's one deadline.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from controller import tracing
from controller.mcpauth.grants import (
    OAuthState,
    Token,
    auth_method_problem,
    read_token_answer,
    redact,
    token_request,
    usable_token,
)
from controller.mcpauth.metadata import (
    AuthorizationServer,
    DiscoveryProblem,
    ProtectedResource,
    authorization_server_metadata_urls,
    canonical_resource,
    read_authorization_server,
    read_protected_resource,
    resource_metadata_urls,
)
from controller.sources import deadlines
from controller.sources.http import FetchError, HttpClient, call_json, fetch
from controller.sources.mcp import McpLimits, fetch_http_mcp_snapshot, redact_url

_MAX_METADATA_BYTES = 256 * 1024


def fetch_authorized_snapshot(
    client: HttpClient,
    url: str,
    state: OAuthState,
    *,
    headers: dict[str, str] | None = None,
    limits: McpLimits | None = None,
) -> dict[str, Any]:
    """The MCP server's surface, read with an access token of the watch's grant; what the
    fetch bought is left in `state.renewal` for the check to store, whether it succeeds or
    not (a rotated refresh token must be kept either way)."""
    limits = limits or McpLimits()
    now = state.now or datetime.now(UTC)
    token = usable_token(state.token, canonical_resource(url), now)
    with deadlines.within(limits.total_timeout):
        bought = False
        while True:
            try:
                return fetch_http_mcp_snapshot(
                    client, url, headers=_with_bearer(headers, token), limits=limits
                )
            except FetchError as exc:
                if exc.status != 401:
                    raise _redacted(exc, state) from None
                if bought:
                    assert token is not None
                    raise FetchError(
                        f"{redact_url(url)}: OAuth: the server still answers HTTP 401 with a "
                        f"token just issued by {token.issuer}; check the watch's clientId, "
                        "scope and the server's accepted issuers",
                        "http_error",
                        status=401,
                    ) from None
                token = buy_token(client, url, state, exc.challenge, now)
                bought = True


def buy_token(
    client: HttpClient, url: str, state: OAuthState, challenge: str | None, now: datetime
) -> Token:
    """Discover the server's authorization server and buy a token with the watch's grant;
    the new token (and a rotated refresh token) go to `state.renewal`. Its span, `oauth`,
    is a child of the check's `fetch`."""
    with tracing.span("oauth", {tracing.OAUTH_GRANT: state.settings.grant}) as span:
        try:
            return _buy_token(client, url, state, challenge, now)
        except FetchError as exc:
            tracing.annotate(span, {tracing.HTTP_STATUS: exc.status})
            tracing.failed(span, exc.failure_class)
            raise


def _buy_token(
    client: HttpClient, url: str, state: OAuthState, challenge: str | None, now: datetime
) -> Token:
    label = redact_url(url)
    try:
        resource = _protected_resource(client, url, challenge, state)
        server = _authorization_server(client, resource.issuer, url)
    except DiscoveryProblem as problem:
        raise FetchError(f"{label}: OAuth discovery: {problem}", "http_error") from None
    unusable = auth_method_problem(state.secrets, server.auth_methods)
    if unusable is not None:
        raise FetchError(f"{label}: OAuth: {unusable}", "http_error")
    request = token_request(state.settings, state.secrets, resource.resource, server.auth_methods)
    try:
        answer = call_json(
            client,
            "POST",
            server.token_endpoint,
            headers=request.headers,
            form=request.form,
            label=f"the token endpoint of {server.issuer}",
            deadline=None,  # the fetch's own deadline holds
        )
    except FetchError as exc:
        raise _redacted(exc, state) from None
    read = read_token_answer(
        answer.status,
        answer.body,
        resource=canonical_resource(url),
        issuer=server.issuer,
        now=now,
    )
    if read.renewal is None:
        assert read.problem is not None
        raise FetchError(
            f"{label}: OAuth: the token endpoint of {server.issuer} refused the "
            f"{state.settings.grant} grant: {redact(read.problem, state.secret_values())}"
            f"{_advice(state, answer.body)}",
            "http_error",
            status=answer.status,
        )
    renewal = read.renewal
    state.spent.append(renewal.token.access_token)
    if renewal.refresh_token is not None:
        state.spent.append(renewal.refresh_token)
    if state.settings.grant != "refresh_token":
        renewal.refresh_token = None  # client credentials are the grant: nothing to keep
    elif renewal.refresh_token == state.secrets.refresh_token:
        renewal.refresh_token = None  # not rotated
    state.renewal = renewal
    return renewal.token


def _protected_resource(
    client: HttpClient, url: str, challenge: str | None, state: OAuthState
) -> ProtectedResource:
    """RFC 9728 metadata from the first place that has it (the challenge's, well-known)."""
    tried: list[str] = []
    for candidate in resource_metadata_urls(url, challenge):
        document = _metadata(client, candidate)
        if document is None:
            tried.append(redact_url(candidate))
            continue
        return read_protected_resource(document, url, state.settings.authorization_server)
    raise DiscoveryProblem(
        "the server publishes no protected-resource metadata (tried " + ", ".join(tried) + ")"
    )


def _authorization_server(client: HttpClient, issuer: str, url: str) -> AuthorizationServer:
    tried: list[str] = []
    for candidate in authorization_server_metadata_urls(issuer):
        document = _metadata(client, candidate)
        if document is None:
            tried.append(redact_url(candidate))
            continue
        return read_authorization_server(document, issuer, server_url=url)
    raise DiscoveryProblem(
        f"the authorization server {redact_url(issuer)} publishes no metadata (tried "
        + ", ".join(tried)
        + ")"
    )


def _metadata(client: HttpClient, url: str) -> Any:
    """A metadata document as JSON, or None where there is none (an HTTP error status, an
    answer that is not JSON); a transport failure (refused address, timeout) ends the fetch."""
    try:
        result = fetch(
            client,
            url,
            headers=None,
            max_bytes=_MAX_METADATA_BYTES,
            deadline=None,  # the fetch's own deadline holds
        )
    except FetchError as exc:
        if exc.status is not None:
            return None
        raise
    try:
        return json.loads(result.content)
    except (ValueError, RecursionError):
        return None


def _with_bearer(headers: dict[str, str] | None, token: Token | None) -> dict[str, str]:
    sent = {k: v for k, v in (headers or {}).items() if k.lower() != "authorization"}
    if token is not None:
        sent["Authorization"] = f"Bearer {token.access_token}"
    return sent


def _redacted(exc: FetchError, state: OAuthState) -> FetchError:
    message = redact(exc.message, state.secret_values())
    if message == exc.message:
        return exc
    return FetchError(message, exc.failure_class, status=exc.status, challenge=exc.challenge)


def _advice(state: OAuthState, body: Any) -> str:
    """What the user can do about the refusals they can fix."""
    error = body.get("error") if isinstance(body, dict) else None
    if error == "invalid_client":
        return "; check the watch's clientId and clientSecret"
    if error == "invalid_grant" and state.settings.grant == "refresh_token":
        return "; the refresh token is no longer valid: give the watch a new refreshToken"
    if error == "invalid_scope":
        return "; check the watch's scope"
    return ""
