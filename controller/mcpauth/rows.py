"""A watch's OAuth columns: settings in clear, secrets and the cached token encrypted.

`watches.oauth` holds the non-secret settings (grant, clientId, scope, authorizationServer);
`watches.oauth_ciphertext` the client secret and refresh token, with a hash of the secrets as
they were last given (inside the ciphertext, so it reveals nothing and survives key rotation);
`watches.oauth_token_ciphertext` and `oauth_token_expires_at` the cached access token, with
the resource and issuer it was bought for.

Giving a watch the same settings and secrets again (a reconcile of an unchanged file, an API
update that resends them) changes nothing, so the cached token and a refresh token the server
has rotated since survive; anything else replaces the secrets and forgets the token.

A check fetches outside any transaction; what its fetch bought (`OAuthState.renewal`) is
written by `keep_renewal` in the transaction that records the check, whatever the outcome,
and only while the stored secrets are still the ones the check read: settings changed
meanwhile win over a token bought with the old ones.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, cast

from sqlalchemy import update
from sqlalchemy.orm import Session

from controller.crypto import SecretBox
from controller.mcpauth.grants import GRANTS, Grant, OAuthSecrets, OAuthSettings, OAuthState, Token
from controller.store.models import Watch


def oauth_state(watch: Watch, box: SecretBox) -> OAuthState | None:
    """What a check needs of the watch's OAuth, decrypted; None without OAuth."""
    settings = settings_of(watch)
    if settings is None:
        return None
    stored = box.decrypt_json(watch.oauth_ciphertext) if watch.oauth_ciphertext else {}
    secrets = OAuthSecrets(
        client_secret=_text(stored.get("clientSecret")),
        refresh_token=_text(stored.get("refreshToken")),
    )
    token = None
    if watch.oauth_token_ciphertext:
        cached = box.decrypt_json(watch.oauth_token_ciphertext)
        token = Token(
            access_token=str(cached.get("accessToken", "")),
            resource=str(cached.get("resource", "")),
            issuer=str(cached.get("issuer", "")),
            expires_at=watch.oauth_token_expires_at,
        )
    return OAuthState(settings, secrets, token, secrets_version=watch.oauth_ciphertext)


def settings_of(watch: Watch) -> OAuthSettings | None:
    """The watch's OAuth settings (no secrets), or None."""
    raw = watch.oauth
    if not isinstance(raw, dict) or raw.get("grant") not in GRANTS:
        return None
    return OAuthSettings(
        grant=cast(Grant, raw["grant"]),
        client_id=str(raw.get("clientId", "")),
        scope=_text(raw.get("scope")),
        authorization_server=_text(raw.get("authorizationServer")),
    )


def set_oauth(
    watch: Watch, settings: OAuthSettings | None, secrets: OAuthSecrets | None, box: SecretBox
) -> None:
    """Give the watch these OAuth settings and secrets (None: no OAuth)."""
    if settings is None:
        watch.oauth = None
        watch.oauth_ciphertext = None
        forget_token(watch)
        return
    secrets = secrets or OAuthSecrets()
    raw: dict[str, Any] = {"grant": settings.grant, "clientId": settings.client_id}
    if settings.scope:
        raw["scope"] = settings.scope
    if settings.authorization_server:
        raw["authorizationServer"] = settings.authorization_server
    # Which secrets are set, so a watch can say so without decrypting them.
    raw["secrets"] = [
        name
        for name, value in (
            ("clientSecret", secrets.client_secret),
            ("refreshToken", secrets.refresh_token),
        )
        if value
    ]
    given = _given_digest(secrets)
    if watch.oauth == raw and _stored_digest(watch, box) == given:
        return  # the same as before: keep the cached token and any rotated refresh token
    watch.oauth = raw
    watch.oauth_ciphertext = box.encrypt_json(
        {
            "clientSecret": secrets.client_secret,
            "refreshToken": secrets.refresh_token,
            "given": given,
        }
    )
    forget_token(watch)


def forget_token(watch: Watch) -> None:
    watch.oauth_token_ciphertext = None
    watch.oauth_token_expires_at = None


def keep_renewal(session: Session, watch_id: str, state: OAuthState | None, box: SecretBox) -> None:
    """Store what a check's fetch bought (the token, a rotated refresh token), unless the
    watch's secrets changed since the check read them."""
    if state is None or state.renewal is None:
        return
    renewal = state.renewal
    values: dict[str, Any] = {
        "oauth_token_ciphertext": box.encrypt_json(
            {
                "accessToken": renewal.token.access_token,
                "resource": renewal.token.resource,
                "issuer": renewal.token.issuer,
            }
        ),
        "oauth_token_expires_at": renewal.token.expires_at,
    }
    if renewal.refresh_token is not None and state.secrets_version is not None:
        stored = box.decrypt_json(state.secrets_version)
        values["oauth_ciphertext"] = box.encrypt_json(
            {**stored, "refreshToken": renewal.refresh_token}
        )
    session.execute(
        update(Watch)
        .where(Watch.id == watch_id, Watch.oauth_ciphertext == state.secrets_version)
        .values(**values)
        .execution_options(synchronize_session=False)
    )


def token_expires_at(watch: Watch) -> datetime | None:
    """When the cached token expires (shown on the watch), or None without one."""
    return watch.oauth_token_expires_at


def _given_digest(secrets: OAuthSecrets) -> str:
    # Stored only inside the ciphertext: a plain hash is enough to tell "given again".
    canonical = json.dumps([secrets.client_secret, secrets.refresh_token])
    return hashlib.sha256(canonical.encode()).hexdigest()


def _stored_digest(watch: Watch, box: SecretBox) -> str | None:
    if not watch.oauth_ciphertext:
        return None
    stored = box.decrypt_json(watch.oauth_ciphertext)
    return _text(stored.get("given"))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
