"""The console's watch page says what a watch trusts (issue 45): the keys a signed agent
card must be signed with, and the OAuth client a remote MCP watch authenticates as, never its
secrets."""

from __future__ import annotations

from flask import Flask
from joserfc.jwk import ECKey

from controller.store.db import Database
from tests.conftest import OrgKey
from tests.factories import make_user, sign_in

SECRET = "a-client-secret-never-shown"


def test_the_watch_page_shows_trusted_keys_and_the_oauth_client(
    app: Flask, acme: OrgKey, database: Database
) -> None:
    api = app.test_client()
    key = ECKey.generate_key("P-256", parameters={"kid": "billing-2026"}).as_dict(private=False)
    card = api.post(
        "/api/watches",
        json={
            "name": "billing-agent",
            "url": "https://billing.example/.well-known/agent-card.json",
            "watchType": "a2a_card",
            "cardKeys": {"keys": [key], "jwksUrl": "https://billing.example/jwks.json"},
        },
        headers=acme.headers,
    )
    assert card.status_code == 201, card.json
    mcp = api.post(
        "/api/watches",
        json={
            "name": "catalog-tools",
            "url": "https://tools.example/mcp",
            "watchType": "mcp",
            "oauth": {
                "grant": "client_credentials",
                "clientId": "driftgate-ci",
                "clientSecret": SECRET,
                "authorizationServer": "https://auth.example",
            },
        },
        headers=acme.headers,
    )
    assert mcp.status_code == 201, mcp.json
    make_user(database, "acme", "viewer@example.com", role="viewer")
    viewer = sign_in(app.test_client(), "viewer@example.com")

    shown = viewer.get(f"/console/watches/{card.json['id']}").get_data(as_text=True)
    assert "Signed card" in shown and "<code>billing-2026</code>" in shown
    assert "https://billing.example/jwks.json" in shown
    assert "OAuth" not in shown

    shown = viewer.get(f"/console/watches/{mcp.json['id']}").get_data(as_text=True)
    assert "client credentials as client <code>driftgate-ci</code>" in shown
    assert "only from <code>https://auth.example" in shown
    assert "no token cached" in shown
    assert SECRET not in shown and "Signed card" not in shown
