"""Replay fixtures: the pure builder (layout, determinism, mocks from examples and schemas)
and `POST /v1/replay/fixtures/from-watch` on a real drift."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from flask import Flask

from controller.replay.fixtures import DISCLAIMER, build_fixture, generate, mcp_mocks, openapi_mocks
from controller.scheduler import Controller
from tests.conftest import OrgKey
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec


def test_openapi_mocks_use_examples_then_generate_from_schemas() -> None:
    spec = charges_spec()
    spec["paths"]["/v1/refunds"]["get"]["responses"]["200"]["content"] = {
        "application/json": {"example": {"refunds": [{"id": "re_1"}]}}
    }
    mocks = openapi_mocks(spec)
    assert set(mocks) == {"get_v1_charges_id", "get_v1_refunds"}
    assert mocks["get_v1_refunds"]["body"] == {"refunds": [{"id": "re_1"}]}
    charge = mocks["get_v1_charges_id"]
    assert (charge["method"], charge["status"], charge["contentType"]) == (
        "GET",
        200,
        "application/json",
    )
    assert charge["body"]["status"] == "paid" and charge["body"]["amount"] == 0
    assert generate({}, {"type": "string", "format": "email"}) == "user@example.com"
    assert generate({}, {"type": "integer", "minimum": 5}) == 5
    assert generate({}, {"type": "array", "minItems": 2, "items": {"type": "boolean"}}) == [
        False,
        False,
    ]


def test_mcp_mocks_answer_each_after_tool() -> None:
    snapshot = {
        "tools": [
            {"name": "search", "inputSchema": {"type": "object"}},
            {
                "name": "count",
                "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
            },
        ]
    }
    mocks = mcp_mocks(snapshot)
    assert mocks["count"]["result"]["structuredContent"] == {"n": 0}
    assert mocks["search"]["result"]["content"][0]["type"] == "text"


def test_the_same_drift_gives_the_same_bytes() -> None:
    def build() -> Any:
        return build_fixture(
            fixture_id="f1",
            watch_type="openapi",
            before=charges_spec(),
            after=charges_spec(refunds=False),
            changes=[{"rule": "endpoint-removed", "severity": "breaking"}],
            content_kind="oss-curated",
            source="test",
            created_at="2026-01-01T00:00:00Z",
        )

    first, second = build(), build()
    assert first.files == second.files and first.digest == second.digest
    assert sorted(first.files) == [
        "after.schema.json",
        "before.schema.json",
        "cloud-meta.json",
        "mock-responses/get_v1_charges_id.json",
    ]
    meta = json.loads(first.files["cloud-meta.json"])
    assert meta["disclaimer"] == DISCLAIMER and meta["contentKind"] == "oss-curated"
    assert meta["contractFingerprints"]["before"] != meta["contractFingerprints"]["after"]


def test_from_watch_on_a_real_drift(
    live_app: Flask,
    controller: Controller,
    server: SpecServer,
    make_org: Callable[..., OrgKey],
) -> None:
    who = make_org("acme", "pro", products=("replay_cloud",))
    client = live_app.test_client()
    url = server.set("/openapi.json", as_json(charges_spec()))
    watch_id = client.post(
        "/api/watches", json={"name": "pay", "url": url}, headers=who.headers
    ).get_json()["id"]
    assert (
        client.post(f"/api/watches/{watch_id}/check?wait=60", headers=who.headers).status_code
        == 200
    )
    baseline = client.post(
        "/v1/replay/fixtures/from-watch", json={"watchId": watch_id}, headers=who.headers
    )
    assert baseline.status_code == 200, baseline.get_json()
    assert (
        baseline.get_json()["fixture"]["beforeSchema"]
        == baseline.get_json()["fixture"]["afterSchema"]
    )
    server.set("/openapi.json", as_json(charges_spec(refunds=False)))
    client.post(f"/api/watches/{watch_id}/check?wait=60", headers=who.headers)
    event_id = client.get(f"/api/drift?watchId={watch_id}", headers=who.headers).get_json()[
        "events"
    ][0]["id"]
    first = client.post(
        "/v1/replay/fixtures/from-watch",
        json={"watchId": watch_id, "eventId": event_id},
        headers=who.headers,
    )
    assert first.status_code == 200, first.get_json()
    body = first.get_json()
    assert body["fixture"]["beforeSchema"] == charges_spec()
    assert body["fixture"]["afterSchema"] == charges_spec(refunds=False)
    assert body["incident"]["status"] == "open" and body["incident"]["driftEventId"] == event_id
    assert body["fixture"]["expect"]["breaking"] >= 1
    assert set(body["files"]) >= {"before.schema.json", "after.schema.json", "cloud-meta.json"}
    again = client.post(
        "/v1/replay/fixtures/from-watch", json={"watchId": watch_id}, headers=who.headers
    )
    assert again.get_json()["digest"] == body["digest"]  # the latest event, the same bytes
    assert again.get_json()["files"] == body["files"]
    # Refusals of the product and of another org's watch: test_publish.py, for both routes.
    wrong = client.post(
        "/v1/replay/fixtures/from-watch",
        json={"watchId": watch_id, "driftEventId": "no-such-event"},
        headers=who.headers,
    )
    assert wrong.status_code == 404 and wrong.get_json()["message"] == "Drift event not found"


def test_replay_pull_writes_the_layout(
    live_app: Flask,
    controller: Controller,
    server: SpecServer,
    make_org: Callable[..., OrgKey],
    tmp_path: Any,
    monkeypatch: Any,
) -> None:
    import logging

    from click.testing import CliRunner

    from cli.main import main
    from tests.servers import serving

    monkeypatch.setattr(logging.getLogger("driftgate"), "handlers", [logging.NullHandler()])
    who = make_org("acme", "pro", products=("replay_cloud",))
    client = live_app.test_client()
    url = server.set("/openapi.json", as_json(charges_spec()))
    created = client.post("/api/watches", json={"name": "pay", "url": url}, headers=who.headers)
    checked = client.post(
        f"/api/watches/{created.get_json()['id']}/check?wait=60", headers=who.headers
    )
    assert checked.status_code == 200, checked.get_json()
    with serving(live_app) as running:
        env = {"DRIFTGATE_URL": running.url, "DRIFTGATE_API_KEY": who.key, "DRIFTGATE_CONFIG": None}
        result = CliRunner().invoke(
            main, ["replay", "pull", "--watch", "pay", "--out", str(tmp_path / "fx")], env=env
        )
    assert result.exit_code == 0, (result.output, result.stderr)
    written = sorted(
        p.relative_to(tmp_path / "fx").as_posix()
        for p in (tmp_path / "fx").rglob("*")
        if p.is_file()
    )
    assert written == [
        "after.schema.json",
        "before.schema.json",
        "cloud-meta.json",
        "mock-responses/get_v1_charges_id.json",
        "mock-responses/get_v1_refunds.json",
    ]
    assert json.loads((tmp_path / "fx" / "after.schema.json").read_text()) == charges_spec()
