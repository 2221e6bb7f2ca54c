"""What a watch asks an authorization server for, and whether a token it holds still serves.

Pure: the watch's OAuth settings and secrets, the cached access token, the decision to use it
or buy another (`usable_token`, with a margin before its expiry), the token request of each
grant (client credentials, or a refresh token with rotation: RFC 6749 sections 4.4 and 6,
OAuth 2.1), and the reading of the token endpoint's answer. Messages never quote a secret or
a token: `redact` blanks any that an authorization server echoes.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal
from urllib.parse import quote

Grant = Literal["client_credentials", "refresh_token"]
GRANTS: tuple[Grant, ...] = ("client_credentials", "refresh_token")

# A token this close to its expiry is not sent: it could expire while the session runs.
EXPIRY_MARGIN = timedelta(seconds=60)
# The most a cached token is trusted for, whatever `expires_in` says (or when it says nothing).
MAX_LIFETIME = timedelta(days=1)
_MAX_DESCRIPTION = 200


@dataclass(frozen=True)
class OAuthSettings:
    """The non-secret settings of a watch's OAuth (the `watches.oauth` column)."""

    grant: Grant
    client_id: str
    scope: str | None = None
    # The issuer the watch trusts; None: the first one the server's metadata names.
    authorization_server: str | None = None


@dataclass(frozen=True)
class OAuthSecrets:
    """The client secret and the refresh token (encrypted in `watches.oauth_ciphertext`)."""

    client_secret: str | None = None
    refresh_token: str | None = None

    def values(self) -> list[str]:
        return [v for v in (self.client_secret, self.refresh_token) if v]


@dataclass(frozen=True)
class Token:
    """An access token, the resource and issuer it was bought for, and when it expires."""

    access_token: str
    resource: str
    issuer: str
    expires_at: datetime | None


@dataclass
class Renewal:
    """What a fetch bought: the new token and, when the server rotated it, the refresh token."""

    token: Token
    refresh_token: str | None = None


@dataclass
class OAuthState:
    """What a check knows of its watch's OAuth, and what its fetch bought (`renewal`), which
    the check writes back when it records (`controller.mcpauth.rows.keep_renewal`)."""

    settings: OAuthSettings
    secrets: OAuthSecrets
    token: Token | None = None
    # The stored secrets' ciphertext as read: a write-back applies only while it is unchanged.
    secrets_version: str | None = None
    now: datetime | None = None
    renewal: Renewal | None = None
    # Every secret this check has seen or bought, blanked from any message.
    spent: list[str] = field(default_factory=list)

    def secret_values(self) -> list[str]:
        found = [*self.secrets.values(), *self.spent]
        if self.token is not None:
            found.append(self.token.access_token)
        return found


def usable_token(token: Token | None, resource: str, now: datetime) -> Token | None:
    """The cached token when it was bought for `resource` and does not expire within the
    margin; None when another must be bought first."""
    if token is None or token.resource != resource:
        return None
    if token.expires_at is not None and token.expires_at - EXPIRY_MARGIN <= now:
        return None
    return token


@dataclass(frozen=True)
class TokenRequest:
    """The form and headers of one token request."""

    form: dict[str, str]
    headers: dict[str, str]


def token_request(
    settings: OAuthSettings,
    secrets: OAuthSecrets,
    resource: str,
    auth_methods: list[str] | None,
) -> TokenRequest:
    """The token request of the watch's grant for `resource` (RFC 8707). A client with a
    secret authenticates the way the server advertises, `client_secret_basic` first (RFC
    8414's default); a public client (refresh token, no secret) sends its `client_id`."""
    form: dict[str, str] = {"grant_type": settings.grant, "resource": resource}
    if settings.grant == "refresh_token":
        form["refresh_token"] = secrets.refresh_token or ""
    if settings.scope:
        form["scope"] = settings.scope
    headers = {"Accept": "application/json"}
    methods = auth_methods or ["client_secret_basic"]
    if secrets.client_secret is None:
        form["client_id"] = settings.client_id
    elif "client_secret_basic" in methods or "client_secret_post" not in methods:
        # RFC 6749 2.3.1: each part form-encoded before the Basic encoding.
        pair = f"{_form_encode(settings.client_id)}:{_form_encode(secrets.client_secret)}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    else:
        form["client_id"] = settings.client_id
        form["client_secret"] = secrets.client_secret
    return TokenRequest(form, headers)


def auth_method_problem(secrets: OAuthSecrets, methods: Any) -> str | None:
    """Why the server's advertised client authentication methods exclude this client, or None."""
    if not isinstance(methods, list) or not methods:
        return None
    wanted = (
        ("none",)
        if secrets.client_secret is None
        else ("client_secret_basic", "client_secret_post")
    )
    if any(method in methods for method in wanted):
        return None
    offered = ", ".join(str(m)[:40] for m in methods[:6])
    return (
        f"the token endpoint authenticates clients only with {offered}; "
        f"driftgate sends {' or '.join(wanted)}"
    )


@dataclass(frozen=True)
class TokenAnswer:
    """A token endpoint's answer read: a renewal, or why there is none."""

    renewal: Renewal | None = None
    problem: str | None = None


def read_token_answer(
    status: int, body: Any, *, resource: str, issuer: str, now: datetime
) -> TokenAnswer:
    """The token endpoint's answer as a renewal, or its error in words (RFC 6749 5.2)."""
    if status != 200 or not isinstance(body, dict):
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, str):
            described = body.get("error_description") if isinstance(body, dict) else None
            words = f"{error[:60]}"
            if isinstance(described, str) and described:
                words += f" ({described[:_MAX_DESCRIPTION]})"
            return TokenAnswer(problem=f"HTTP {status}: {words}")
        return TokenAnswer(problem=f"HTTP {status} without a JSON token answer")
    access_token = body.get("access_token")
    if not isinstance(access_token, str) or not access_token:
        return TokenAnswer(problem="the answer has no access_token")
    token_type = body.get("token_type")
    if not isinstance(token_type, str) or token_type.lower() != "bearer":
        return TokenAnswer(problem=f"the token type is {str(token_type)[:30]!r}, not Bearer")
    lifetime = MAX_LIFETIME
    expires_in = body.get("expires_in")
    if isinstance(expires_in, int | float) and not isinstance(expires_in, bool):
        lifetime = min(lifetime, timedelta(seconds=max(float(expires_in), 0.0)))
    refresh = body.get("refresh_token")
    token = Token(access_token, resource, issuer, now + lifetime)
    return TokenAnswer(Renewal(token, refresh if isinstance(refresh, str) and refresh else None))


def redact(text: str, secrets: list[str]) -> str:
    """`text` with every secret (and each longer word of one) blanked out."""
    for value in secrets:
        for piece in (value, *value.split()):
            if len(piece) >= 8:
                text = text.replace(piece, "[redacted]")
    return text


def _form_encode(value: str) -> str:
    return quote(value, safe="").replace("%20", "+")
