"""A check fails closed: whatever goes wrong in it ends as a failed check, never as silence.

A real controller checks a watch on a loopback spec server; the app answers preflight. A vendor
document nested far too deep, and an unforeseen exception injected into each stage of a check
(fetch, parse, fingerprint, reading the baseline, diff, persist), must each leave the watch
`error` with a failure class and the error recorded, announce `drift.check_failed`, and make
the run gate block, whatever the watch was before (`ok` or `never_run`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from controller.checks import engine as checks
from controller.crypto import load_secret_box
from controller.diffs.loader import MAX_NESTING
from controller.notifications import service as notifications
from controller.scheduler import Controller
from controller.settings import Settings
from controller.store.db import Database
from controller.store.models import Job, OutboxMessage
from tests.conftest import OrgKey
from tests.processes import PATIENCE
from tests.receivers import Receiver
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec

GOOD = as_json(charges_spec())
BREAKING = as_json(charges_spec(refunds=False))
SECRET = "s3cret-token-in-an-exception"


def deep_document(levels: int) -> str:
    """An OpenAPI document whose every operation is gone and whose extension nests `levels`
    objects deep (about what the prober served: 1,000)."""
    spec = json.loads(GOOD)
    spec["paths"] = {}
    return json.dumps(spec)[:-1] + ', "x-deep": ' + '{"a": ' * levels + "1" + "}" * levels + "}"


class World:
    def __init__(
        self, client: FlaskClient, org: OrgKey, server: SpecServer, db: Database, alerts: Receiver
    ) -> None:
        self.client = client
        self.org = org
        self.server = server
        self.database = db
        self.alerts = alerts

    def create(self, name: str = "vendor") -> str:
        response = self.client.post(
            "/api/watches",
            json={
                "name": name,
                "url": self.server.url(f"/{name}.json"),
                "watchType": "openapi",
                "webhookUrl": self.alerts.url,
            },
            headers=self.org.headers,
        )
        assert response.status_code == 201, response.get_json()
        return str(response.get_json()["id"])

    def serve(self, name: str, body: str) -> None:
        self.server.set(f"/{name}.json", body)

    def check(self, watch_id: str) -> dict[str, Any]:
        response = self.client.post(
            f"/api/watches/{watch_id}/check?wait=60", headers=self.org.headers
        )
        body = response.get_json()
        assert response.status_code == 200 and body["status"] == "done", body
        return dict(body["watch"])

    def preflight(self, watch_id: str) -> dict[str, Any]:
        response = self.client.post(
            "/api/preflight", json={"watchIds": [watch_id]}, headers=self.org.headers
        )
        assert response.status_code == 200, response.get_json()
        return dict(response.get_json())

    def failures_announced(self, watch_id: str) -> list[dict[str, Any]]:
        """The `drift.check_failed` events queued for the watch, once the controller has
        delivered them to the watch's webhook (signatures verified)."""
        with self.database.session() as session:
            rows = session.scalars(
                select(OutboxMessage.payload).where(
                    OutboxMessage.event_type == "drift.check_failed"
                )
            )
            queued = [p["data"] for p in rows if p["data"]["watchId"] == watch_id]
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            delivered = [
                m["body"]["data"]
                for m in list(self.alerts.received)
                if m["body"]["type"] == "drift.check_failed"
                and m["body"]["data"]["watchId"] == watch_id
            ]
            if len(delivered) >= len(queued):
                assert delivered == queued
                return queued
            time.sleep(0.05)
        raise AssertionError(f"drift.check_failed not delivered: queued {queued}")

    def job_results(self, watch_id: str) -> list[dict[str, Any]]:
        with self.database.session() as session:
            rows = session.scalars(select(Job).where(Job.key == f"check:{watch_id}"))
            return [{"status": j.status, "result": j.result, "error": j.last_error} for j in rows]


@pytest.fixture
def world(
    live_settings: Settings,
    live_app: Flask,
    acme: OrgKey,
    server: SpecServer,
    database: Database,
    controller: Controller,
) -> Iterator[World]:
    with database.transaction() as session:
        secret = notifications.signing_secret(session, acme.org_id, load_secret_box(live_settings))
    alerts = Receiver(secret=secret)
    try:
        yield World(live_app.test_client(), acme, server, database, alerts)
    finally:
        alerts.close()


def assert_blocks(world: World, watch_id: str, failure_class: str) -> None:
    decision = world.preflight(watch_id)
    assert decision["allowed"] is False
    (row,) = decision["blocked"]
    assert row["driftStatus"] == "error"
    assert row["reasons"] == [f"check_failed:{failure_class}"]


def test_a_deeply_nested_document_fails_the_check_and_the_gate_blocks(world: World) -> None:
    watch_id = world.create()
    world.serve("vendor", GOOD)
    assert world.check(watch_id)["driftStatus"] == "ok"
    assert world.preflight(watch_id)["allowed"] is True

    # The vendor removes every operation and nests a value 1,000 levels deep.
    world.serve("vendor", deep_document(1000))
    watch = world.check(watch_id)
    assert watch["driftStatus"] == "error" and watch["failureClass"] == "invalid_contract"
    assert f"nests deeper than {MAX_NESTING} levels" in watch["lastError"]
    assert_blocks(world, watch_id, "invalid_contract")
    (announced,) = world.failures_announced(watch_id)
    assert announced["failureClass"] == "invalid_contract"
    assert announced["reason"] == "check_failed:invalid_contract"

    # Just past the bound is refused the same way, with the place it was passed.
    world.serve("vendor", deep_document(MAX_NESTING))
    watch = world.check(watch_id)
    assert watch["failureClass"] == "invalid_contract"
    assert "(at /x-deep/a/a/a/a/a/a/a/...)" in watch["lastError"]

    # Nested up to the bound is a contract like any other: read, diffed, breaking.
    world.serve("vendor", deep_document(MAX_NESTING - 2))
    watch = world.check(watch_id)
    assert watch["driftStatus"] == "drifted", watch
    assert watch["openChanges"]["breaking"] >= 1


def test_a_new_watch_on_a_deep_document_is_error_not_never_run(world: World) -> None:
    watch_id = world.create("fresh")
    world.serve("fresh", deep_document(1000))
    watch = world.check(watch_id)
    assert watch["driftStatus"] == "error" and watch["failureClass"] == "invalid_contract"
    assert_blocks(world, watch_id, "invalid_contract")


# Each stage of a check, the name of the function the test makes crash, and the exception.
STAGES: dict[str, tuple[str, BaseException]] = {
    "fetch": ("fetch", ConnectionAbortedError(SECRET)),
    "parse": ("_parse", AttributeError(SECRET)),
    "fingerprint": ("fingerprint", TypeError(SECRET)),
    "baseline": ("decode_snapshot", ValueError(SECRET)),
    "diff": ("diff_documents", KeyError(SECRET)),
    "persist": ("encode_changes", OverflowError(SECRET)),
}


def crash_in(monkeypatch: pytest.MonkeyPatch, stage: str) -> Callable[[], None]:
    name, error = STAGES[stage]
    original = getattr(checks, name)

    def crashing(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(checks, name, crashing)
    return lambda: monkeypatch.setattr(checks, name, original)


@pytest.mark.parametrize("stage", list(STAGES))
def test_an_unforeseen_exception_in_any_stage_is_a_failed_check(
    world: World, monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    watch_id = world.create()
    world.serve("vendor", GOOD)
    assert world.check(watch_id)["driftStatus"] == "ok"

    # The vendor breaks the contract, and the check crashes on its way to seeing it.
    world.serve("vendor", BREAKING)
    heal = crash_in(monkeypatch, stage)
    watch = world.check(watch_id)
    assert watch["driftStatus"] == "error", watch
    assert watch["failureClass"] == "internal_error"
    error = watch["lastError"]
    assert checks._STAGE_WORDS[stage] in error
    assert type(STAGES[stage][1]).__name__ in error
    assert SECRET not in error  # the exception's text may hold a secret: only its type
    assert_blocks(world, watch_id, "internal_error")
    (announced,) = world.failures_announced(watch_id)
    assert announced["failureClass"] == "internal_error"
    # The job that ran the check ended with the failed check as its result.
    assert any(
        (job["result"] or {}).get("failure_class") == "internal_error"
        for job in world.job_results(watch_id)
    )

    # Once the defect is gone, the next check sees the breaking change.
    heal()
    watch = world.check(watch_id)
    assert watch["driftStatus"] == "drifted" and watch["failureClass"] is None


@pytest.mark.parametrize("stage", list(STAGES))
def test_a_recursion_error_in_any_stage_is_an_unreadable_contract(
    world: World, monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    """Issue 40, point 9: whatever recursed too deep (the JSON parser, canonicalisation, a
    diff engine), the contract is too deep to read: `invalid_contract`, not a crash."""
    watch_id = world.create()
    world.serve("vendor", GOOD)
    assert world.check(watch_id)["driftStatus"] == "ok"
    world.serve("vendor", BREAKING)
    name, _ = STAGES[stage]

    def recursing(*args: Any, **kwargs: Any) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(checks, name, recursing)
    watch = world.check(watch_id)
    assert watch["driftStatus"] == "error" and watch["failureClass"] == "invalid_contract"
    assert "nests too deep to be read" in watch["lastError"]
    assert checks._STAGE_WORDS[stage] in watch["lastError"]
    assert_blocks(world, watch_id, "invalid_contract")


def test_a_crash_on_the_first_check_leaves_the_watch_error(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    watch_id = world.create()
    world.serve("vendor", GOOD)
    crash_in(monkeypatch, "fingerprint")
    watch = world.check(watch_id)
    assert watch["driftStatus"] == "error" and watch["failureClass"] == "internal_error"
    assert_blocks(world, watch_id, "internal_error")
