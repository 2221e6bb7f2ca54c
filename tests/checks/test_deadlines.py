"""A check that overruns its fetch deadline ends as `error` (`check_failed:timeout`), never as a
frozen `ok`.

A real controller checks watches on loopback servers with `fetch_deadline_seconds` at 2 s and
per-read timeouts far above it. A vendor that was healthy then trickles its contract (a byte
every 0.3 s, forever), one that accepts connections and never answers, and an MCP server
that hangs or trickles in `tools/list` must each turn the watch `error` with failure class
`timeout`, announce `drift.check_failed` and make preflight block; the check job is done,
not held.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from controller.settings import Settings
from controller.store.db import Database
from controller.store.models import OutboxMessage
from tests.conftest import OrgKey, make_settings
from tests.mcp_servers import RawMcpServer
from tests.receivers import Receiver
from tests.servers import SpecServer, stalling
from tests.specs import as_json, charges_spec

DEADLINE = 2.0
FINISHED_WITHIN = 60.0  # generous; the check waits for the job at most this long


@pytest.fixture
def live_settings(tmp_path: Path, database: Database) -> Settings:
    """conftest's settings for a live controller, with a short fetch deadline."""
    return make_settings(
        tmp_path,
        database_url=database.url,
        allow_private_targets=True,
        fetch_deadline_seconds=DEADLINE,
    )


class World:
    """The API of a live app with a controller, an org, and a receiver for its alerts."""

    def __init__(self, api: FlaskClient, org: OrgKey, database: Database, alerts: str) -> None:
        self.api, self.org, self.database, self.alerts = api, org, database, alerts

    def create(self, name: str, url: str, watch_type: str) -> str:
        body = {"name": name, "url": url, "watchType": watch_type, "webhookUrl": self.alerts}
        response = self.api.post("/api/watches", json=body, headers=self.org.headers)
        assert response.status_code == 201, response.get_json()
        return str(response.get_json()["id"])

    def check(self, watch_id: str) -> dict[str, Any]:
        started = time.monotonic()
        response = self.api.post(
            f"/api/watches/{watch_id}/check?wait={FINISHED_WITHIN:g}", headers=self.org.headers
        )
        body = response.get_json()
        assert response.status_code == 200 and body["status"] == "done", body
        assert time.monotonic() - started < FINISHED_WITHIN
        return dict(body["watch"])

    def assert_timed_out(self, watch_id: str) -> None:
        """The check job is done (not running on with a renewed lease), the watch is
        `error`/`timeout`, the gate blocks on it, and the failure was announced."""
        watch = self.check(watch_id)
        assert watch["driftStatus"] == "error" and watch["failureClass"] == "timeout", watch
        assert f"no complete answer within {DEADLINE:g} s" in watch["lastError"]
        decision = self.api.post(
            "/api/preflight", json={"watchIds": [watch_id]}, headers=self.org.headers
        ).get_json()
        assert decision["allowed"] is False
        assert decision["blocked"][0]["reasons"] == ["check_failed:timeout"]
        with self.database.session() as session:
            payloads = session.scalars(
                select(OutboxMessage.payload).where(
                    OutboxMessage.event_type == "drift.check_failed"
                )
            )
            reasons = [p["data"]["reason"] for p in payloads if p["data"]["watchId"] == watch_id]
        assert reasons == ["check_failed:timeout"]


@pytest.fixture
def world(live_app: Flask, controller: Any, acme: OrgKey, database: Database) -> Iterator[World]:
    alerts = Receiver()
    try:
        yield World(live_app.test_client(), acme, database, alerts.url)
    finally:
        alerts.close()


def test_a_vendor_that_starts_trickling_turns_an_ok_watch_to_error_timeout(
    world: World, server: SpecServer
) -> None:
    url = server.set("/openapi.json", as_json(charges_spec()))
    watch_id = world.create("trickling", url, "openapi")
    assert world.check(watch_id)["driftStatus"] == "ok"
    server.set("/openapi.json", as_json(charges_spec()), trickle=0.3)
    world.assert_timed_out(watch_id)


def test_a_vendor_that_accepts_and_never_answers_is_error_timeout(world: World) -> None:
    with stalling() as vendor:
        watch_id = world.create("silent", vendor.url("/openapi.json"), "openapi")
        world.assert_timed_out(watch_id)


@pytest.fixture
def mcp_server() -> Iterator[RawMcpServer]:
    with RawMcpServer() as raw:
        raw.tools = [{"name": "search", "inputSchema": {"type": "object"}}]
        yield raw


@pytest.mark.parametrize("trickle", [0.0, 0.3], ids=["hangs", "trickles"])
def test_an_mcp_server_that_stalls_in_tools_list_is_error_timeout(
    world: World, mcp_server: RawMcpServer, trickle: float
) -> None:
    watch_id = world.create("tools", mcp_server.url, "mcp")
    assert world.check(watch_id)["driftStatus"] == "ok"
    mcp_server.stall_method, mcp_server.stall_trickle = "tools/list", trickle
    world.assert_timed_out(watch_id)
