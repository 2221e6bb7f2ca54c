"""Overall deadlines of outbound calls against real loopback peers that stall.

Each peer keeps its connection alive for ever: it never answers, or it sends a byte just
inside every per-read timeout (headers first, or the status line itself), so only an overall
deadline can end the call. Every call must end as a `timeout` failure; how long it took is
only bounded generously (a loaded machine must not fail these), the outcome is the point.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from controller.accounts.oidc import Provider
from controller.draftpr.github import GitHubApp, GitHubError
from controller.errors import UpstreamError
from controller.sources import deadlines
from controller.sources.http import (
    FetchError,
    call_json,
    fetch,
    make_client,
    make_timeout,
    post_json,
)
from controller.sources.mcp import McpLimits, fetch_mcp_snapshot
from tests.conftest import make_settings
from tests.mcp_servers import RawMcpServer
from tests.servers import TRICKLED_HEADERS, SpecServer, Stalling, spec_server, stalling

# Every byte comes well inside the per-read timeout, so only the deadline can end a call.
READ_TIMEOUT = make_timeout(connect=5.0, read=3.0)
DEADLINE = 1.5
FINISHED_WITHIN = 30.0  # generous: without a deadline these calls never end

PEERS: dict[str, dict[str, Any]] = {
    "silent": {},
    "trickling body": {"preamble": TRICKLED_HEADERS, "trickle": 0.3},
    "trickling status line": {"preamble": b"HTTP/1.1 200 OK", "trickle": 0.3, "byte": b"x"},
}


@pytest.fixture(params=sorted(PEERS))
def peer(request: pytest.FixtureRequest) -> Iterator[Stalling]:
    with stalling(**PEERS[request.param]) as running:
        yield running


def ends_as_timeout(call: Callable[[], object]) -> FetchError:
    started = time.monotonic()
    with pytest.raises(FetchError) as caught:
        call()
    assert time.monotonic() - started < FINISHED_WITHIN
    assert caught.value.failure_class == "timeout", caught.value.message
    return caught.value


def test_nested_deadlines_keep_the_earliest() -> None:
    assert deadlines.current() is None and deadlines.bound(7.0) == 7.0
    with deadlines.within(60) as outer:
        assert outer is not None and outer.seconds == 60
        with deadlines.within(1) as inner:
            assert inner is not None and inner.seconds == 1
            with deadlines.within(120) as later, deadlines.within(None) as same:
                assert later is inner and same is inner  # a later one cannot extend it
            left = deadlines.bound(None)
            assert left is not None and 0 < left <= 1
            assert deadlines.bound(30.0) == pytest.approx(left, abs=0.5)
        assert deadlines.current() is outer
    assert deadlines.current() is None


def test_a_passed_deadline_refuses_every_operation() -> None:
    with deadlines.within(0) as passed:
        assert deadlines.has_passed()
        with pytest.raises(deadlines.DeadlinePassed) as caught:
            deadlines.bound(5.0)
        assert caught.value.deadline is passed and isinstance(caught.value, TimeoutError)
    assert not deadlines.has_passed()


def test_a_fetch_ends_at_its_deadline_whatever_the_peer_does(peer: Stalling) -> None:
    with make_client(allow_private=True, timeout=READ_TIMEOUT) as client:
        error = ends_as_timeout(lambda: fetch(client, peer.url("/spec.json"), deadline=DEADLINE))
    assert f"no complete answer within {DEADLINE:g} s" in error.message
    assert peer.accepted == 1


def test_a_webhook_post_and_an_api_call_end_at_their_deadline(peer: Stalling) -> None:
    with make_client(allow_private=True, timeout=READ_TIMEOUT) as client:
        ends_as_timeout(lambda: post_json(client, peer.url("/hook"), b"{}", {}, deadline=DEADLINE))
        ends_as_timeout(
            lambda: call_json(
                client, "GET", peer.url("/api"), headers={}, label="api", deadline=DEADLINE
            )
        )


def test_a_vendor_that_trickles_its_contract_fails_the_fetch_on_the_spec_server() -> None:
    with spec_server() as server:
        server.set("/openapi.json", "{}", trickle=0.3)
        with make_client(allow_private=True, timeout=READ_TIMEOUT) as client:
            ends_as_timeout(lambda: fetch(client, server.url("/openapi.json"), deadline=DEADLINE))
            server.set("/openapi.json", '{"openapi": "3.0.0"}')  # the same client goes on
            assert fetch(client, server.url("/openapi.json"), deadline=DEADLINE).status == 200


def test_a_deadline_in_force_bounds_a_fetch_that_names_a_longer_one(server: SpecServer) -> None:
    server.set("/openapi.json", "{}", trickle=0.3)
    with make_client(allow_private=True, timeout=READ_TIMEOUT) as client:
        with deadlines.within(DEADLINE):
            error = ends_as_timeout(
                lambda: fetch(client, server.url("/openapi.json"), deadline=600)
            )
    assert f"within {DEADLINE:g} s" in error.message


@pytest.mark.parametrize("trickle", [0.0, 0.3], ids=["hangs", "trickles"])
def test_an_mcp_server_that_stalls_in_tools_list_ends_the_session(trickle: float) -> None:
    limits = McpLimits(total_timeout=2.0, request_timeout=30.0)
    with RawMcpServer() as raw, make_client(allow_private=True, timeout=READ_TIMEOUT) as client:
        raw.tools = [{"name": "search", "inputSchema": {"type": "object"}}]
        assert fetch_mcp_snapshot(raw.url, client=client, limits=limits)["tools"]
        raw.stall_method, raw.stall_trickle = "tools/list", trickle
        error = ends_as_timeout(lambda: fetch_mcp_snapshot(raw.url, client=client, limits=limits))
    assert "within 2 s" in error.message
    assert raw.methods().count("tools/list") == 2


def test_github_calls_end_at_the_delivery_deadline(tmp_path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    with stalling(preamble=TRICKLED_HEADERS, trickle=0.3) as github:
        settings = make_settings(
            tmp_path,
            github_app_id=1,
            github_app_private_key=pem,
            github_api_url=github.url(""),
            delivery_deadline_seconds=DEADLINE,
        )
        with make_client(allow_private=True, timeout=READ_TIMEOUT) as client:
            app = GitHubApp(settings, client)
            started = time.monotonic()
            with pytest.raises(GitHubError) as caught:
                app.installation_token(42)
            assert time.monotonic() - started < FINISHED_WITHIN
    # The client names the cause without the request's headers (issue 40, point 8).
    assert caught.value.cause == "github_unreachable"
    assert "no complete answer within" in caught.value.message
    assert "Bearer" not in caught.value.message


def test_the_sign_on_provider_is_given_up_at_the_delivery_deadline(tmp_path: Path) -> None:
    with stalling() as provider:
        settings = make_settings(
            tmp_path,
            oidc_issuer=provider.url(""),
            oidc_client_id="console",
            delivery_deadline_seconds=DEADLINE,
        )
        started = time.monotonic()
        with pytest.raises(UpstreamError) as caught:
            Provider(settings).metadata()
        assert time.monotonic() - started < FINISHED_WITHIN
    assert caught.value.code == "sso_unavailable"
    assert f"no complete answer within {DEADLINE:g} s" in caught.value.message
