"""Single sign-on to the console through OpenID Connect, against a loopback provider
(`tests/oidc_provider.py`): the code flow with PKCE signs in an existing account; a wrong
state, nonce, audience, signature or unverified address, and an address without an account,
are refused; the client secret goes to the token endpoint only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from flask.testing import FlaskClient

from controller.store.db import Database
from tests.conftest import OrgKey, make_settings
from tests.factories import make_user
from tests.oidc_provider import Provider, oidc_provider


@pytest.fixture
def provider() -> Iterator[Provider]:
    with oidc_provider() as running:
        yield running


def console(tmp_path: Path, database: Database, provider: Provider) -> FlaskClient:
    from web.app import create_app

    settings = make_settings(
        tmp_path,
        database_url=database.url,
        oidc_issuer=provider.issuer,
        oidc_client_id=provider.client_id,
        oidc_client_secret=provider.client_secret,
    )
    return create_app(settings, database=database).test_client()


def through_provider(client: FlaskClient, next_path: str = "/console/agents") -> Any:
    """Start at the console, let the provider answer, come back: the callback's answer."""
    started = client.get(f"/console/sso?next={next_path}")
    assert started.status_code == 302
    to_provider = started.headers["Location"]
    query = parse_qs(urlsplit(to_provider).query)
    assert query["code_challenge_method"] == ["S256"] and "client_secret" not in query
    back = httpx.get(to_provider, follow_redirects=False)
    assert back.status_code == 302, back.text
    callback = urlsplit(back.headers["Location"])
    return client.get(f"{callback.path}?{callback.query}")


def test_an_account_signs_in_through_the_provider(
    tmp_path: Path, database: Database, provider: Provider, acme: OrgKey
) -> None:
    client = console(tmp_path, database, provider)
    page = client.get("/console/sign-in").get_data(as_text=True)
    assert "Sign in with single sign-on" in page
    make_user(database, "acme", "lead@example.com")
    done = through_provider(client)
    assert done.status_code == 302 and done.headers["Location"] == "/console/agents"
    assert "driftgate_session=" in done.headers.get("Set-Cookie", "")
    assert client.get("/console/").status_code == 200
    (request,) = provider.token_requests
    assert request["client_secret"] == provider.client_secret and request["code_verifier"]


@pytest.mark.parametrize(
    ("switch", "reason"),
    [
        ("wrong_nonce", "ID token is not valid"),
        ("wrong_audience", "ID token is not valid"),
        ("stranger_key", "ID token is not valid"),
        ("email_verified", "no verified e-mail"),
    ],
)
def test_a_token_that_is_not_right_signs_no_one_in(
    tmp_path: Path,
    database: Database,
    provider: Provider,
    acme: OrgKey,
    switch: str,
    reason: str,
) -> None:
    make_user(database, "acme", "lead@example.com")
    setattr(provider, switch, switch != "email_verified")
    client = console(tmp_path, database, provider)
    refused = through_provider(client)
    assert refused.status_code == 403 and reason in refused.get_data(as_text=True)
    assert client.get("/console/").status_code == 302


def test_no_account_state_and_replay_are_refused(
    tmp_path: Path, database: Database, provider: Provider, acme: OrgKey
) -> None:
    client = console(tmp_path, database, provider)
    # The provider knows the person; the console has no account for the address.
    refused = through_provider(client)
    assert refused.status_code == 403 and "no console account" in refused.get_data(as_text=True)
    make_user(database, "acme", "lead@example.com")
    # A callback whose state is not this browser's flow.
    started = client.get("/console/sso")
    back = httpx.get(started.headers["Location"], follow_redirects=False)
    callback = urlsplit(back.headers["Location"])
    code = parse_qs(callback.query)["code"][0]
    forged = client.get(f"{callback.path}?code={code}&state=forged")
    assert forged.status_code == 403
    # Another browser (no flow cookie) with the real state and code.
    other = console(tmp_path, database, provider)
    stolen = other.get(f"{callback.path}?{callback.query}")
    assert stolen.status_code == 403
    # The code was never redeemed above; used once, it cannot be used twice.
    assert client.get(f"{callback.path}?{callback.query}").status_code == 302
    replay = client.get("/console/sso")
    assert replay.status_code == 302
    assert (
        console(tmp_path, database, provider)
        .get("/console/sso/callback?code=x&state=y")
        .status_code
        == 403
    )


def test_without_configuration_there_is_no_sso(client: FlaskClient) -> None:
    assert client.get("/console/sso").status_code == 404
    assert "single sign-on" not in client.get("/console/sign-in").get_data(as_text=True)
