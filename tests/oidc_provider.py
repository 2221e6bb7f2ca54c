"""A small OpenID Connect provider on 127.0.0.1 for the single sign-on tests.

It serves discovery, an authorization endpoint that signs in `signed_in_as` at once (no
login page), a token endpoint that checks what OpenID Connect and PKCE (RFC 7636) require of
a client (client secret, code bound to its redirect URI, one use, S256 verifier), and its
keys. ID tokens are RS256 JWTs (joserfc). Switches make it misbehave the ways a client must
catch: another nonce, another audience, an unverified address, a token signed by a stranger.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from tests.servers import Loopback, QuietHandler


@dataclass
class Provider:
    client_id: str = "driftgate-console"
    client_secret: str = "console-client-secret"
    signed_in_as: str = "lead@example.com"
    email_verified: bool = True
    wrong_nonce: bool = False
    wrong_audience: bool = False
    stranger_key: bool = False
    issuer: str = ""
    key: RSAKey = field(default_factory=lambda: RSAKey.generate_key(2048, parameters={"kid": "k1"}))
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    token_requests: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def id_token(self, grant: dict[str, Any]) -> str:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "sub": f"sub-{self.signed_in_as}",
            "aud": "someone-else" if self.wrong_audience else self.client_id,
            "exp": now + 300,
            "iat": now,
            "nonce": "another-nonce" if self.wrong_nonce else grant["nonce"],
            "email": self.signed_in_as,
            "email_verified": self.email_verified,
            "name": "Lead",
        }
        key = RSAKey.generate_key(2048, parameters={"kid": "k1"}) if self.stranger_key else self.key
        return jwt.encode({"alg": "RS256", "kid": "k1"}, claims, key)


def _handler(provider: Provider) -> type[QuietHandler]:
    class Handler(QuietHandler):
        def do_GET(self) -> None:  # noqa: N802
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if parts.path == "/.well-known/openid-configuration":
                self.answer(200, json.dumps(self.discovery()).encode())
            elif parts.path == "/jwks":
                keys = KeySet([provider.key]).as_dict(private=False)
                self.answer(200, json.dumps(keys).encode())
            elif parts.path == "/authorize":
                self.authorize(query)
            else:
                self.answer(404)

        def discovery(self) -> dict[str, Any]:
            base = provider.issuer
            return {
                "issuer": base,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{base}/token",
                "jwks_uri": f"{base}/jwks",
                "response_types_supported": ["code"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["client_secret_post"],
                "scopes_supported": ["openid", "email", "profile"],
            }

        def authorize(self, query: dict[str, str]) -> None:
            problems = [
                name
                for name, ok in (
                    ("client_id", query.get("client_id") == provider.client_id),
                    ("response_type", query.get("response_type") == "code"),
                    ("scope", "openid" in query.get("scope", "").split()),
                    ("state", bool(query.get("state"))),
                    ("nonce", bool(query.get("nonce"))),
                    ("code_challenge", bool(query.get("code_challenge"))),
                    ("code_challenge_method", query.get("code_challenge_method") == "S256"),
                    ("redirect_uri", bool(query.get("redirect_uri"))),
                )
                if not ok
            ]
            if problems:
                self.answer(400, json.dumps({"error": "invalid_request", "bad": problems}).encode())
                return
            code = secrets.token_urlsafe(16)
            with provider.lock:
                provider.codes[code] = {**query, "used": False}
            target = f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state']})}"
            self.answer(302, headers={"Location": target})

        def do_POST(self) -> None:  # noqa: N802
            if urlsplit(self.path).path != "/token":
                self.answer(404)
                return
            length = int(self.headers.get("Content-Length", "0"))
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            with provider.lock:
                provider.token_requests.append(form)
                grant = provider.codes.get(form.get("code", ""))
                error = self.token_error(form, grant)
                if grant is not None and error is None:
                    grant["used"] = True
            if error is not None or grant is None:
                self.answer(400, json.dumps({"error": error or "invalid_grant"}).encode())
                return
            body = {
                "access_token": secrets.token_urlsafe(16),
                "token_type": "Bearer",
                "expires_in": 300,
                "id_token": provider.id_token(grant),
            }
            self.answer(200, json.dumps(body).encode())

        def token_error(self, form: dict[str, str], grant: dict[str, Any] | None) -> str | None:
            if form.get("grant_type") != "authorization_code":
                return "unsupported_grant_type"
            if (form.get("client_id"), form.get("client_secret")) != (
                provider.client_id,
                provider.client_secret,
            ):
                return "invalid_client"
            if grant is None or grant["used"] or form.get("redirect_uri") != grant["redirect_uri"]:
                return "invalid_grant"
            digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
            challenge = base64.urlsafe_b64encode(digest).decode().rstrip("=")
            if challenge != grant["code_challenge"]:
                return "invalid_grant"
            return None

    return Handler


@contextmanager
def oidc_provider(**options: Any) -> Iterator[Provider]:
    provider = Provider(**options)
    server = Loopback(_handler(provider)).start()
    provider.issuer = server.url("")
    try:
        yield provider
    finally:
        server.stop()
