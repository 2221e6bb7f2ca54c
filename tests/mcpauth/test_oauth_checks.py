"""An MCP server behind OAuth watched end to end: real checks (`run_check`) of the SDK's
server (a child process that verifies every bearer token at the authorization server) with
tokens from a loopback authorization server, on a clock the tests move."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from controller import tracing
from controller.checks.engine import CheckResult, contract_fetcher, run_check
from controller.crypto import load_secret_box
from controller.gate.service import PreflightRequest, preflight
from controller.model.principal import Principal
from controller.model.watch import WatchCreate
from controller.settings import Settings
from controller.sources.http import make_client
from controller.store.db import Database
from controller.store.models import Watch
from controller.watches import service as watch_service
from tests.conftest import OrgKey, make_settings
from tests.mcp_servers import OAuthServer, SdkServer, full_surface
from tests.traces import named, recording

SECRET = "s3cret-of-the-driftgate-client"
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OAuthServer, SdkServer]]:
    with OAuthServer({"driftgate": SECRET}) as auth:
        surface = full_surface(
            tmp_path_factory.mktemp("oauth") / "surface.json",
            oauth={"issuer": auth.issuer, "introspection": auth.loopback.url("/introspect")},
        )
        with SdkServer("oauth", surface) as mcp:
            yield auth, mcp


class Harness:
    def __init__(
        self, database: Database, settings: Settings, org: OrgKey, auth: OAuthServer, url: str
    ) -> None:
        self.database = database
        self.box = load_secret_box(settings)
        self.auth = auth
        self.url = url
        self.client = make_client(allow_private=True, timeout=5.0)
        self.fetcher = contract_fetcher(settings, self.client)
        self.principal = Principal(
            org.org_id, org.org_name, "pro", frozenset(), "api_key", org.key_id
        )
        self.now = NOW

    def watch(self, **oauth: Any) -> str:
        data = WatchCreate.model_validate(
            {
                "name": "tools",
                "url": self.url,
                "watchType": "mcp",
                "oauth": {"grant": "client_credentials", "clientId": "driftgate", **oauth},
            }
        )
        with self.database.transaction() as session:
            return watch_service.create_watch(session, self.principal, data, self.box).id

    def check(self, watch_id: str, minutes: int = 15) -> CheckResult:
        self.now += timedelta(minutes=minutes)
        return run_check(self.database, watch_id, box=self.box, fetcher=self.fetcher, now=self.now)

    def get(self, watch_id: str) -> Watch:
        with self.database.session() as session:
            watch = session.get(Watch, watch_id)
            assert watch is not None
            # The deferred columns, read while the session is open.
            _ = (watch.oauth_ciphertext, watch.oauth_token_ciphertext)
            _ = watch.oauth_token_expires_at
            return watch

    def secrets(self, watch_id: str) -> dict[str, Any]:
        watch = self.get(watch_id)
        assert watch.oauth_ciphertext is not None
        stored: dict[str, Any] = self.box.decrypt_json(watch.oauth_ciphertext)
        return stored


@pytest.fixture
def h(
    tmp_path: Path,
    database: Database,
    acme: OrgKey,
    servers: tuple[OAuthServer, SdkServer],
) -> Iterator[Harness]:
    auth, mcp = servers
    auth.revoke_all()  # each test starts with no token its server would take
    auth.refusing = False
    with auth.lock:
        auth.requests.clear()
    settings = make_settings(tmp_path, database_url=database.url, allow_private_targets=True)
    made = Harness(database, settings, acme, auth, mcp.url)
    yield made
    made.client.close()


def test_the_first_check_discovers_and_buys_a_token_the_next_reuses_it(h: Harness) -> None:
    watch_id = h.watch(clientSecret=SECRET, scope="mcp:read")
    first = h.check(watch_id)
    assert first.outcome == "baseline", first.error
    # One client credentials request, for the server's own URL (RFC 8707), the secret in
    # the Basic header the metadata lets it use.
    assert h.auth.requests == [
        {
            "grant_type": "client_credentials",
            "resource": h.url,
            "client_id": "driftgate",
            "auth": "basic",
            "scope": "mcp:read",
        }
    ]
    watch = h.get(watch_id)
    assert watch.oauth_token_expires_at == h.now + timedelta(seconds=h.auth.expires_in)
    assert watch.oauth_token_ciphertext is not None
    issued = list(h.auth.tokens)[-1]
    assert issued not in watch.oauth_token_ciphertext  # stored encrypted
    second = h.check(watch_id)
    assert second.outcome == "unchanged", second.error
    assert h.auth.grants() == ["client_credentials"]  # the cached token served


def test_a_token_about_to_expire_is_bought_again_before_the_check(h: Harness) -> None:
    watch_id = h.watch(clientSecret=SECRET)
    assert h.check(watch_id).outcome == "baseline"
    # An hour's token, 59.5 minutes later: inside the margin, so a new one is bought.
    result = h.check(watch_id, minutes=59)
    assert result.outcome == "unchanged", result.error
    assert h.auth.grants() == ["client_credentials", "client_credentials"]
    assert h.get(watch_id).oauth_token_expires_at == h.now + timedelta(hours=1)


def test_a_token_that_expires_mid_way_is_renewed_and_the_session_run_again(h: Harness) -> None:
    watch_id = h.watch(clientSecret=SECRET)
    assert h.check(watch_id).outcome == "baseline"
    h.auth.cut_off_after(2)  # the cached token dies after two more requests of the session
    result = h.check(watch_id)
    assert result.outcome == "unchanged", result.error
    assert h.get(watch_id).drift_status == "ok"
    assert h.auth.grants() == ["client_credentials", "client_credentials"]


def test_a_refresh_token_grant_keeps_the_rotated_refresh_token(h: Harness) -> None:
    original = h.auth.refresh_token("driftgate")
    watch_id = h.watch(grant="refresh_token", clientSecret=SECRET, refreshToken=original)
    assert h.check(watch_id).outcome == "baseline"
    rotated = h.secrets(watch_id)["refreshToken"]
    assert rotated != original and rotated in h.auth.refresh_tokens
    h.auth.revoke_all()  # the server refuses the cached token: the rotated one must work
    result = h.check(watch_id)
    assert result.outcome == "unchanged", result.error
    assert h.auth.grants() == ["refresh_token", "refresh_token"]
    assert h.secrets(watch_id)["refreshToken"] not in (original, rotated)


def test_a_wrong_client_secret_fails_the_check_and_the_gate_blocks(h: Harness) -> None:
    watch_id = h.watch(clientSecret="not-the-secret-at-all")
    result = h.check(watch_id)
    assert result.outcome == "error"
    assert result.failure_class == "http_error" and result.http_status == 401
    watch = h.get(watch_id)
    assert watch.drift_status == "error"
    assert watch.last_error is not None
    assert "invalid_client" in watch.last_error and "clientSecret" in watch.last_error
    assert "not-the-secret-at-all" not in watch.last_error
    assert watch.oauth_token_ciphertext is None
    request = PreflightRequest.model_validate({"watchIds": [watch_id]})
    outcome = preflight(h.database, h.principal, request, h.now, time.perf_counter())
    answer = orjson.loads(orjson.dumps(outcome.answer()))
    assert answer["allowed"] is False, answer


def test_a_server_that_names_another_issuer_than_the_pinned_one_is_refused(h: Harness) -> None:
    watch_id = h.watch(clientSecret=SECRET, authorizationServer="https://login.example.com")
    result = h.check(watch_id)
    assert result.outcome == "error" and result.failure_class == "http_error"
    assert result.error is not None and "not the watch's authorizationServer" in result.error
    assert h.auth.requests == []  # the secret never went to an issuer the watch does not trust


def test_a_server_that_refuses_a_token_just_bought_fails_the_check_once(h: Harness) -> None:
    watch_id = h.watch(clientSecret=SECRET)
    h.auth.refusing = True
    result = h.check(watch_id)
    assert result.outcome == "error" and result.http_status == 401
    assert result.error is not None and "still answers HTTP 401" in result.error
    assert h.auth.grants() == ["client_credentials"]  # bought once, not in a loop
    bought = list(h.auth.tokens)[-1]
    assert bought not in result.error and SECRET not in result.error
    # The token is kept all the same: the next check tries it before buying another.
    assert h.get(watch_id).oauth_token_ciphertext is not None


def test_buying_a_token_is_an_oauth_span_under_fetch(h: Harness) -> None:
    watch_id = h.watch(clientSecret=SECRET)
    with recording() as exporter:
        assert h.check(watch_id).outcome == "baseline"
        assert h.check(watch_id).outcome == "unchanged"  # the cached token: no span
    spans = list(exporter.get_finished_spans())
    (oauth,) = named(spans, "oauth")
    (fetch,) = [s for s in named(spans, "fetch") if s.context.trace_id == oauth.context.trace_id]
    assert oauth.parent is not None and oauth.parent.span_id == fetch.context.span_id
    assert dict(oauth.attributes or {}) == {tracing.OAUTH_GRANT: "client_credentials"}
