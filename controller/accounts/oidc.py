"""Single sign-on to the console through an OpenID Connect provider (the authorization code
flow with PKCE), on Authlib (its OAuth 2 client over httpx) and joserfc (the ID token).

The provider's discovery document names its endpoints and keys. Sign-in starts with a
random `state`, `nonce` and PKCE verifier; they travel in a cookie signed with a key derived
from the secret key (`SecretBox.sign`) and expire in `FLOW_TTL`. The callback checks the
state, exchanges the code (client secret and verifier) for tokens, and accepts the ID token
only when its signature verifies against the provider's keys and its `iss`, `aud`, `exp`,
`iat` and `nonce` are right. What comes out is the verified e-mail address; an account with
that address must exist (`driftgate users create`): single sign-on proves who someone is,
the org and role stay the admins' to give.

The provider is the operator's configuration (like the database), so its requests are not
held to the private-address guard; the operator's `ca_bundle` is trusted for them.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import httpx
from authlib.common.security import generate_token
from authlib.integrations.httpx_client import OAuth2Client
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from controller.crypto import SecretBox
from controller.errors import Forbidden, UpstreamError
from controller.settings import Settings

FLOW_TTL = 600
FLOW_PURPOSE = "console oidc flow"
CALLBACK_PATH = "/console/sso/callback"
TIMEOUT = 10.0
# Signature algorithms accepted for ID tokens: asymmetric only (no `none`, no HS256 with a
# public key as the secret).
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"]


@dataclass(frozen=True)
class Identity:
    """Who the provider says signed in."""

    subject: str
    email: str
    name: str | None


def configured(settings: Settings) -> bool:
    return bool(settings.oidc_issuer and settings.oidc_client_id)


class Provider:
    """One configured provider: discovery and keys are read when first needed, then kept."""

    def __init__(self, settings: Settings) -> None:
        assert settings.oidc_issuer and settings.oidc_client_id
        self.settings = settings
        self.issuer = settings.oidc_issuer.rstrip("/")
        self.client_id = settings.oidc_client_id
        secret = settings.oidc_client_secret
        self.client_secret = secret.get_secret_value() if secret else None
        self._metadata: dict[str, Any] | None = None
        self._keys: KeySet | None = None

    def _http(self) -> httpx.Client:
        verify: Any = True
        if self.settings.ca_bundle is not None:
            import ssl

            context = ssl.create_default_context()
            context.load_verify_locations(cafile=str(self.settings.ca_bundle))
            verify = context
        return httpx.Client(timeout=TIMEOUT, verify=verify, trust_env=False)

    def metadata(self) -> dict[str, Any]:
        if self._metadata is None:
            url = f"{self.issuer}/.well-known/openid-configuration"
            try:
                with self._http() as client:
                    answer = client.get(url)
                answer.raise_for_status()
                found = answer.json()
            except (httpx.HTTPError, ValueError) as exc:
                raise UpstreamError(
                    f"the single sign-on provider's discovery document ({url}) cannot be read: "
                    f"{exc}",
                    code="sso_unavailable",
                ) from None
            if str(found.get("issuer", "")).rstrip("/") != self.issuer:
                raise UpstreamError(
                    "the single sign-on provider names another issuer than configured",
                    code="sso_unavailable",
                )
            self._metadata = found
        return self._metadata

    def _key_set(self, refresh: bool = False) -> KeySet:
        if self._keys is None or refresh:
            try:
                with self._http() as client:
                    answer = client.get(self.metadata()["jwks_uri"])
                answer.raise_for_status()
                self._keys = KeySet.import_key_set(answer.json())
            except (httpx.HTTPError, ValueError, KeyError) as exc:
                raise UpstreamError(
                    f"the single sign-on provider's keys cannot be read: {exc}",
                    code="sso_unavailable",
                ) from None
        return self._keys

    def _client(self, redirect_uri: str) -> OAuth2Client:
        return OAuth2Client(
            client_id=self.client_id,
            client_secret=self.client_secret,
            scope=self.settings.oidc_scopes,
            redirect_uri=redirect_uri,
            code_challenge_method="S256",
            token_endpoint_auth_method="client_secret_post" if self.client_secret else "none",
            timeout=TIMEOUT,
            trust_env=False,
        )

    def start(self, box: SecretBox, redirect_uri: str, next_path: str) -> tuple[str, str]:
        """The provider's authorization URL, and the signed flow cookie's value."""
        state, nonce, verifier = generate_token(32), generate_token(32), generate_token(64)
        with self._client(redirect_uri) as client:
            url, _ = client.create_authorization_url(
                self.metadata()["authorization_endpoint"],
                state=state,
                code_verifier=verifier,
                nonce=nonce,
            )
        flow = {
            "state": state,
            "nonce": nonce,
            "verifier": verifier,
            "next": next_path,
            "exp": int(time.time()) + FLOW_TTL,
        }
        return url, box.sign(FLOW_PURPOSE, json.dumps(flow).encode())

    def finish(
        self, box: SecretBox, cookie: str, state: str, code: str, redirect_uri: str
    ) -> tuple[Identity, str]:
        """The identity of a callback (and where to go next); 403 for anything not right."""
        refused = Forbidden("single sign-on did not complete; start again", code="sso_failed")
        raw = box.verify(FLOW_PURPOSE, cookie) if cookie else None
        if raw is None:
            raise refused
        flow = json.loads(raw)
        if flow["exp"] < time.time() or not state or state != flow["state"] or not code:
            raise refused
        try:
            with self._client(redirect_uri) as client:
                token = client.fetch_token(
                    self.metadata()["token_endpoint"],
                    grant_type="authorization_code",
                    code=code,
                    code_verifier=flow["verifier"],
                )
        except Exception as exc:  # noqa: BLE001 - Authlib raises several kinds
            raise Forbidden(
                f"the single sign-on provider refused the code: {exc}", code="sso_failed"
            ) from None
        claims = self._claims(str(token.get("id_token", "")), flow["nonce"])
        email = claims.get("email")
        if not email or claims.get("email_verified") is False:
            raise Forbidden(
                "the single sign-on provider gave no verified e-mail address", code="sso_failed"
            )
        return Identity(str(claims["sub"]), str(email), claims.get("name")), str(flow["next"])

    def _claims(self, id_token: str, nonce: str) -> dict[str, Any]:
        refused = Forbidden("the ID token is not valid", code="sso_failed")
        if not id_token:
            raise refused
        try:
            try:
                decoded = jwt.decode(id_token, self._key_set(), algorithms=ALGORITHMS)
            except JoseError:
                # A key the provider rotated in since: read its keys again, once.
                decoded = jwt.decode(id_token, self._key_set(refresh=True), algorithms=ALGORITHMS)
            registry = jwt.JWTClaimsRegistry(
                leeway=60,
                iss={"essential": True, "value": self.metadata()["issuer"]},
                aud={"essential": True, "value": self.client_id},
                sub={"essential": True},
                exp={"essential": True},
                iat={"essential": True},
                nonce={"essential": True, "value": nonce},
            )
            registry.validate(decoded.claims)
        except (JoseError, ValueError) as exc:
            raise Forbidden(f"the ID token is not valid: {exc}", code="sso_failed") from None
        return dict(decoded.claims)
