"""Single sign-on to the console through an OpenID Connect provider (the authorization code
flow with PKCE): Authlib builds the authorization request and the S256 challenge (RFC 6749,
RFC 7636), joserfc checks the ID token, and the requests go through `controller.sources.http`.

The provider's discovery document names its endpoints and keys. Sign-in starts with a
random `state`, `nonce` and PKCE verifier; they travel in a cookie signed with a key derived
from the secret key (`SecretBox.sign`) and expire in `FLOW_TTL`. The callback checks the
state, exchanges the code (client secret and verifier) for tokens, and accepts the ID token
only when its signature verifies against the provider's keys and its `iss`, `aud`, `exp`,
`iat` and `nonce` are right. What comes out is the verified e-mail address; an account with
that address must exist (`driftgate users create`): single sign-on proves who someone is,
the org and role stay the admins' to give.

The provider is the operator's configuration (like the database), so its requests go
through `controller.sources.http`'s operator client: any address, the operator's `ca_bundle`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from controller.crypto import SecretBox
from controller.errors import Forbidden, UpstreamError
from controller.settings import Settings

# The OAuth, JOSE and HTTP libraries are imported when a sign-in uses them: the accounts
# service (and `driftgate users create` through it) loads this module without them.
if TYPE_CHECKING:
    from joserfc.jwk import KeySet

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

    def _get_json(self, url: str, what: str) -> Any:
        from controller.sources.http import FetchError, call_json, operator_client

        try:
            with operator_client(self.settings, timeout=TIMEOUT) as client:
                answer = call_json(
                    client,
                    "GET",
                    url,
                    headers={},
                    label=what,
                    deadline=self.settings.delivery_deadline_seconds,
                )
        except FetchError as exc:
            raise UpstreamError(
                f"the single sign-on provider's {what} cannot be read: {exc.message}",
                code="sso_unavailable",
            ) from None
        if answer.status != 200 or not isinstance(answer.body, dict):
            raise UpstreamError(
                f"the single sign-on provider's {what} ({url}) answered HTTP {answer.status}",
                code="sso_unavailable",
            )
        return answer.body

    def metadata(self) -> dict[str, Any]:
        if self._metadata is None:
            url = f"{self.issuer}/.well-known/openid-configuration"
            found = self._get_json(url, "discovery document")
            if str(found.get("issuer", "")).rstrip("/") != self.issuer:
                raise UpstreamError(
                    "the single sign-on provider names another issuer than configured",
                    code="sso_unavailable",
                )
            self._metadata = found
        return self._metadata

    def _key_set(self, refresh: bool = False) -> KeySet:
        from joserfc.jwk import KeySet

        if self._keys is None or refresh:
            try:
                self._keys = KeySet.import_key_set(
                    self._get_json(self.metadata()["jwks_uri"], "keys")
                )
            except (ValueError, KeyError) as exc:
                raise UpstreamError(
                    f"the single sign-on provider's keys cannot be read: {exc}",
                    code="sso_unavailable",
                ) from None
        return self._keys

    def start(self, box: SecretBox, redirect_uri: str, next_path: str) -> tuple[str, str]:
        """The provider's authorization URL, and the signed flow cookie's value."""
        from authlib.common.security import generate_token
        from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
        from authlib.oauth2.rfc7636 import create_s256_code_challenge

        state, nonce, verifier = generate_token(32), generate_token(32), generate_token(64)
        url = prepare_grant_uri(
            self.metadata()["authorization_endpoint"],
            self.client_id,
            "code",
            redirect_uri=redirect_uri,
            scope=self.settings.oidc_scopes,
            state=state,
            nonce=nonce,
            code_challenge=create_s256_code_challenge(verifier),
            code_challenge_method="S256",
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
        from controller.sources.http import FetchError, call_json, operator_client

        refused = Forbidden("single sign-on did not complete; start again", code="sso_failed")
        raw = box.verify(FLOW_PURPOSE, cookie) if cookie else None
        if raw is None:
            raise refused
        flow = json.loads(raw)
        if flow["exp"] < time.time() or not state or state != flow["state"] or not code:
            raise refused
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "client_id": self.client_id,
            "code_verifier": flow["verifier"],
        }
        if self.client_secret:
            form["client_secret"] = self.client_secret  # client_secret_post, to this endpoint only
        try:
            with operator_client(self.settings, timeout=TIMEOUT) as client:
                answer = call_json(
                    client,
                    "POST",
                    self.metadata()["token_endpoint"],
                    headers={"Accept": "application/json"},
                    form=form,
                    label="token endpoint",
                    deadline=self.settings.delivery_deadline_seconds,
                )
        except FetchError as exc:
            raise UpstreamError(
                f"the single sign-on provider's token endpoint failed: {exc.message}",
                code="sso_unavailable",
            ) from None
        token = answer.body if isinstance(answer.body, dict) else {}
        if answer.status != 200:
            raise Forbidden(
                "the single sign-on provider refused the code "
                f"({token.get('error', f'HTTP {answer.status}')})",
                code="sso_failed",
            )
        claims = self._claims(str(token.get("id_token", "")), flow["nonce"])
        email = claims.get("email")
        if not email or claims.get("email_verified") is False:
            raise Forbidden(
                "the single sign-on provider gave no verified e-mail address", code="sso_failed"
            )
        return Identity(str(claims["sub"]), str(email), claims.get("name")), str(flow["next"])

    def _claims(self, id_token: str, nonce: str) -> dict[str, Any]:
        from joserfc import jwt
        from joserfc.errors import JoseError

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
