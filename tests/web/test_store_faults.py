"""The web process when the database cannot answer: 503 `store_unavailable` with `Retry-After`
and the envelope (never a 500 with a trace per request), the run gate closed, the console's
page, `/health` alive while every thread waits on a frozen database, `/health/ready` 503, one
log line per outage, and recovery by itself. Postgres is made to fail through a loopback
proxy (`tests/dbproxy.py`); SQLite by a writer that holds its lock past the busy timeout."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from flask import Flask
from sqlalchemy.engine import make_url

from controller.store import db as db_module
from controller.store import fastpath
from controller.store.db import Database
from tests.conftest import ON_POSTGRES, OrgKey, make_settings
from tests.dbproxy import DatabaseProxy
from tests.factories import make_watch, set_state
from tests.processes import (
    DRIFTGATE,
    driftgate_env,
    free_port,
    started,
    wait_until,
    wait_until_healthy,
)
from web.app import create_app

NEW_WATCH = {"name": "other", "url": "https://other.example.com/openapi.json"}
postgres_only = pytest.mark.skipif(not ON_POSTGRES, reason="a Postgres server behind a proxy")


def logged(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def events(lines: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [line for line in lines if line.get("event") == name]


def assert_store_unavailable(answer: Any) -> dict[str, Any]:
    """A 503 with `Retry-After` and the envelope; its body."""
    assert answer.status_code == 503
    assert answer.headers["Retry-After"] == "5"
    assert answer.headers["Content-Type"].startswith("application/json")
    body: dict[str, Any] = json.loads(
        answer.get_data() if hasattr(answer, "get_data") else answer.content
    )
    assert body["error"] == "store_unavailable" and body["message"]
    return body


@pytest.fixture
def proxied_app(tmp_path: Path, database: Database, proxy: DatabaseProxy) -> Iterator[Flask]:
    """The app on the test's database through the proxy, with short bounds (a connection
    within 2 s, a statement within 0.5 s) and API keys cached for the whole test."""
    settings = make_settings(
        tmp_path,
        database_url=proxy.url(database.url),
        api_key_cache_seconds=60,
        database_connect_timeout_seconds=2,
        database_statement_timeout_seconds=0.5,
    )
    app = create_app(settings)
    yield app
    app.extensions["driftgate.database"].dispose()


@postgres_only
@pytest.mark.parametrize("fault", ["freeze", "down"])
def test_the_api_answers_503_while_the_database_cannot_and_recovers_by_itself(
    proxied_app: Flask,
    proxy: DatabaseProxy,
    database: Database,
    acme: OrgKey,
    fault: str,
    capfd: pytest.CaptureFixture[str],
) -> None:
    client = proxied_app.test_client()
    watch_id = make_watch(client, acme, "billing")
    set_state(database, watch_id, "ok")
    gate = {"watchIds": [watch_id]}
    assert client.post("/api/preflight", json=gate, headers=acme.headers).get_json()["allowed"]
    assert client.post("/api/preflight", json=gate, headers=acme.headers).status_code == 200
    capfd.readouterr()

    getattr(proxy, fault)()
    # The first request meets the fault (a frozen server: after the 1.5 s answer bound), the
    # others are refused at once; the run gate on its lane and on Flask alike.
    for _ in range(3):
        refused = client.post("/api/preflight", json=gate, headers=acme.headers)
        assert "allowed" not in assert_store_unavailable(refused)
        assert_store_unavailable(client.get("/api/watches", headers=acme.headers))
        created = client.post("/api/watches", json=NEW_WATCH, headers=acme.headers)
        assert_store_unavailable(created)
        assert client.get("/health").status_code == 200
        assert_store_unavailable(client.get("/health/ready"))
    page = client.get("/console/set-password?token=abc")
    assert page.status_code == 503 and page.headers["Retry-After"] == "5"
    assert "cannot reach its database" in page.get_data(as_text=True)

    proxy.forward()
    wait_until(lambda: client.get("/health/ready").status_code == 200)
    assert client.post("/api/preflight", json=gate, headers=acme.headers).get_json()["allowed"]
    assert client.get("/api/watches", headers=acme.headers).status_code == 200
    lines = logged(capfd.readouterr().err)
    assert len(events(lines, "store.unavailable")) == 1  # one line for the outage
    assert len(events(lines, "store.available")) == 1
    assert events(lines, "request.crashed") == []
    assert not any("exception" in line for line in lines)  # no stack trace at all
    statuses = [line["status"] for line in events(lines, "http.request")]
    assert 500 not in statuses and statuses.count(503) >= 13


def test_a_write_on_a_locked_sqlite_file_is_503_not_a_crash(
    tmp_path: Path,
    database: Database,
    acme: OrgKey,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    if not database.is_sqlite:
        pytest.skip("SQLite's write lock")
    monkeypatch.setattr(db_module, "SQLITE_BUSY_TIMEOUT_MS", 200)
    monkeypatch.setattr(fastpath, "SQLITE_BUSY_TIMEOUT_MS", 200)
    database.dispose()  # engines made again with the shorter busy timeout
    app = create_app(make_settings(tmp_path, database_url=database.url), database=database)
    client = app.test_client()
    watch_id = make_watch(client, acme, "billing")
    set_state(database, watch_id, "ok")
    gate = {"watchIds": [watch_id]}
    assert client.post("/api/preflight", json=gate, headers=acme.headers).get_json()["allowed"]
    capfd.readouterr()

    path = make_url(database.url).database
    assert path is not None
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        created = client.post("/api/watches", json=NEW_WATCH, headers=acme.headers)
        assert "busy" in assert_store_unavailable(created)["message"]
        refused = client.post("/api/preflight", json=gate, headers=acme.headers)
        assert "allowed" not in assert_store_unavailable(refused)
        assert client.get("/api/watches", headers=acme.headers).status_code == 200  # reads go on
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert client.post("/api/preflight", json=gate, headers=acme.headers).get_json()["allowed"]
    lines = logged(capfd.readouterr().err)
    assert events(lines, "request.crashed") == []
    assert not any("exception" in line for line in lines)
    assert len(events(lines, "store.slow")) == 1
    assert events(lines, "store.unavailable") == []  # a busy file is no outage


# The real server: one worker with two threads, in front of a frozen database.


@pytest.fixture
def served(tmp_path: Path, database: Database, proxy: DatabaseProxy) -> Iterator[tuple[str, Path]]:
    port = free_port()
    env = driftgate_env(
        proxy.url(database.url),
        tmp_path,
        api_key_cache_seconds="60",
        # Long enough that the requests below still wait (on a connection to make, or on an
        # answer: 4 s and its 1 s grace) when /health is asked.
        database_connect_timeout_seconds="5",
        database_statement_timeout_seconds="4",
    )
    log_path = tmp_path / "server.log"
    command = [*DRIFTGATE, "serve", "--port", str(port), "--workers", "1", "--threads", "2"]
    with started(command, env=env, log=log_path) as process:
        base = f"http://127.0.0.1:{port}"
        wait_until_healthy(base, process, log_path)
        yield base, log_path


@postgres_only
@pytest.mark.slow
def test_health_answers_while_every_thread_waits_on_a_frozen_database(
    served: tuple[str, Path], proxy: DatabaseProxy, acme: OrgKey
) -> None:
    base, log_path = served
    with httpx.Client(base_url=base, headers=acme.headers, timeout=60) as http:
        assert http.get("/api/watches").status_code == 200  # the worker caches the key
        proxy.freeze()
        with ThreadPoolExecutor(6) as pool:  # three times the threads
            waiting = [pool.submit(http.get, "/api/watches") for _ in range(6)]
            wait_until(lambda: proxy_is_holding(proxy))
            for _ in range(5):
                health = http.get("/health")
                assert health.status_code == 200 and health.json()["status"] == "ok"
            # Readiness runs on threads of its own and waits for the database no longer than
            # its budget (issue 40, point 7).
            assert_store_unavailable(http.get("/health/ready"))
            # Answered while both threads still wait on the database for the API requests.
            assert not any(request.done() for request in waiting)
            answers = [request.result() for request in waiting]  # every one returns
        for answer in answers:
            assert_store_unavailable(answer)
        assert_store_unavailable(http.get("/health/ready"))
        proxy.forward()
        wait_until(lambda: http.get("/health/ready").status_code == 200)
        assert http.get("/api/watches").status_code == 200
    lines = logged(log_path.read_text())
    assert len(events(lines, "store.unavailable")) == 1
    assert len(events(lines, "store.available")) == 1
    assert not any("exception" in line for line in lines)
    assert "Traceback" not in log_path.read_text()


def proxy_is_holding(proxy: DatabaseProxy) -> bool:
    """Both of the worker's threads have sent a statement the frozen proxy holds."""
    return proxy.held() >= 2
