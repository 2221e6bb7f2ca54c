"""Client addresses behind a TLS proxy (`trusted_proxy_hops`, werkzeug's ProxyFix): the
address the per-client limits see comes from X-Forwarded-For as far as the setting trusts it,
and from the connection when it is 0 (a client cannot pick its address); one noisy client
empties only its own buckets. Through the Flask client and through a real `driftgate serve`
(gunicorn) on 127.0.0.1."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from flask import Flask
from flask.testing import FlaskClient

from controller.store.db import Database
from tests.conftest import HOSTED_ROUTES, make_settings
from tests.processes import (
    DRIFTGATE,
    driftgate_env,
    free_port,
    started,
    stop_process,
    wait_until_healthy,
)
from web.api.discovery import PREVIEW_BURST

# Real processes end to end: left out of `make check`, run by `make test`.
pytestmark = pytest.mark.slow

PROXY = "10.0.0.2"  # the TLS proxy's own address: the socket's peer

# The public per-client limits: (path, JSON body or None, the limit's burst).
LIMITED = [
    pytest.param("/api/trial/session", None, 10, id="trial-session"),
    pytest.param(
        "/api/coverage/preview",
        {"text": "https://mcp.example.com/mcp"},
        PREVIEW_BURST,
        id="preview",
    ),
    pytest.param("/api/funnel/events", {"event": "cli.install"}, 60, id="funnel"),
]


def proxied_app(tmp_path: Path, database: Database, hops: int) -> Flask:
    from web.app import create_app

    # The limited routes are the hosted product's anonymous ones: switched on.
    settings = make_settings(
        tmp_path, database_url=database.url, trusted_proxy_hops=hops, **HOSTED_ROUTES
    )
    app = create_app(settings, database=database)
    app.extensions["driftgate.ratelimiter"].clock = lambda: 1000.0  # no bucket refills
    return app


def post(client: FlaskClient, path: str, body: Any, forwarded_for: str) -> int:
    """A request as the proxy forwards it: from the proxy's address, the client's in
    X-Forwarded-For."""
    return client.post(
        path,
        json=body,
        headers={"X-Forwarded-For": forwarded_for, "X-Forwarded-Proto": "https"},
        environ_base={"REMOTE_ADDR": PROXY},
    ).status_code


@pytest.mark.parametrize(("path", "body", "burst"), LIMITED)
def test_behind_a_trusted_proxy_each_client_has_its_own_limit(
    tmp_path: Path, database: Database, path: str, body: Any, burst: int
) -> None:
    client = proxied_app(tmp_path, database, hops=1).test_client()
    noisy = [post(client, path, body, "203.0.113.7") for _ in range(burst + 1)]
    assert noisy[:burst] == [noisy[0]] * burst and noisy[0] in (200, 201, 202)
    assert noisy[-1] == 429
    # Another client behind the same proxy is not limited by the noisy one...
    assert post(client, path, body, "203.0.113.8") == noisy[0]
    # ...and the noisy one cannot get out by putting another address in front of its own:
    # the proxy appends what it saw, and only that last value is trusted.
    assert post(client, path, body, "198.51.100.1, 203.0.113.7") == 429


@pytest.mark.parametrize(("path", "body", "burst"), LIMITED)
def test_without_trusted_hops_forwarding_headers_are_ignored(
    tmp_path: Path, database: Database, path: str, body: Any, burst: int
) -> None:
    client = proxied_app(tmp_path, database, hops=0).test_client()
    for index in range(burst):
        assert post(client, path, body, f"203.0.113.{index}") != 429
    # Every request came from the proxy's address, whatever the header said.
    assert post(client, path, body, "198.51.100.99") == 429


def test_two_hops_take_the_address_the_outer_proxy_saw(tmp_path: Path, database: Database) -> None:
    client = proxied_app(tmp_path, database, hops=2).test_client()
    # Client -> CDN (appends the client) -> TLS proxy (appends the CDN) -> driftgate.
    for _ in range(10):
        assert post(client, "/api/trial/session", None, "1.1.1.1, 203.0.113.7, 10.0.0.9") == 201
    assert post(client, "/api/trial/session", None, "203.0.113.7, 10.0.0.9") == 429
    assert post(client, "/api/trial/session", None, "203.0.113.8, 10.0.0.9") == 201


def test_the_proxys_scheme_is_trusted_only_with_hops(tmp_path: Path, database: Database) -> None:
    headers = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7"}
    for hops, secure in ((0, False), (1, True)):
        client = proxied_app(tmp_path, database, hops).test_client()
        page = client.get("/console/sign-in", headers=headers)
        assert page.status_code == 200
        assert ("Secure" in presession_cookie(page.headers.get_all("Set-Cookie"))) is secure


def presession_cookie(set_cookies: list[str]) -> str:
    """The sign-in form's cookie, set with `Secure` when the request came over https."""
    return next(c for c in set_cookies if c.startswith("driftgate_csrf="))


# A real server: gunicorn, the server front, the lane and the app, as `driftgate serve` runs.


@pytest.fixture
def serve(tmp_path: Path, database: Database) -> Iterator[Any]:
    with ExitStack() as stack:
        running: list[subprocess.Popen[Any]] = []

        def start(hops: int) -> str:
            port = free_port()
            env = driftgate_env(
                database.url,
                tmp_path,
                workers="1",
                threads="2",
                trusted_proxy_hops=str(hops),
                trial_sessions_enabled="true",  # the limit these tests count
            )
            log = tmp_path / f"serve-{hops}.log"
            command = [*DRIFTGATE, "serve", "--port", str(port)]
            process = stack.enter_context(started(command, env=env, log=log))
            running.append(process)
            base = f"http://127.0.0.1:{port}"
            wait_until_healthy(base, process, log)
            return base

        yield start
        assert [stop_process(process) for process in running] == [0] * len(running)


def trial(base: str, headers: dict[str, str]) -> int:
    answer = httpx.post(
        f"{base}/api/trial/session",
        headers={"User-Agent": "driftgate-tests", **headers},
        timeout=60,
    )
    return answer.status_code


def test_a_real_server_behind_one_proxy_limits_each_client(serve: Any) -> None:
    base = serve(1)
    for _ in range(10):
        assert trial(base, {"X-Forwarded-For": "203.0.113.7"}) == 201
    assert trial(base, {"X-Forwarded-For": "203.0.113.7"}) == 429
    assert trial(base, {"X-Forwarded-For": "203.0.113.8"}) == 201
    assert trial(base, {"X-Forwarded-For": "203.0.113.8, 203.0.113.7"}) == 429
    cookie = presession_cookie(
        httpx.get(
            f"{base}/console/sign-in",
            headers={"User-Agent": "driftgate-tests", "X-Forwarded-Proto": "https"},
            timeout=60,
        ).headers.get_list("Set-Cookie")
    )
    assert "Secure" in cookie


def test_a_real_server_without_hops_trusts_no_forwarding_header(serve: Any) -> None:
    base = serve(0)
    for index in range(10):
        assert trial(base, {"X-Forwarded-For": f"203.0.113.{index}"}) == 201
    assert trial(base, {"X-Forwarded-For": "198.51.100.1"}) == 429
    # gunicorn's own trust of 127.0.0.1 is off too: a local client cannot claim https.
    cookie = presession_cookie(
        httpx.get(
            f"{base}/console/sign-in",
            headers={"User-Agent": "driftgate-tests", "X-Forwarded-Proto": "https"},
            timeout=60,
        ).headers.get_list("Set-Cookie")
    )
    assert "Secure" not in cookie
