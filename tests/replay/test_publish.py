"""Publishing a drift's fixture to the catalog (`hosted-curated`): visible to the org alone
unless public, installable by who may see it, withdrawn by its org; and the whole path from a
real drift to an agent test against the served fixture, through the CLI."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from cli.main import main
from controller.replay import serve
from controller.scheduler import Controller
from controller.store.db import Database
from controller.store.models import AuditEntry
from tests.conftest import OrgKey
from tests.servers import SpecServer, serving
from tests.specs import as_json, charges_spec

CATALOG = "/v1/replay/fixtures/catalog?contentKind=hosted-curated"


def drifted_watch(client: FlaskClient, server: SpecServer, who: OrgKey) -> tuple[str, str]:
    """A watch whose contract lost an endpoint: (watch id, drift event id)."""
    url = server.set("/openapi.json", as_json(charges_spec()))
    watch_id = client.post(
        "/api/watches", json={"name": "pay", "url": url}, headers=who.headers
    ).get_json()["id"]
    assert (
        client.post(f"/api/watches/{watch_id}/check?wait=60", headers=who.headers).status_code
        == 200
    )
    server.set("/openapi.json", as_json(charges_spec(refunds=False)))
    assert (
        client.post(f"/api/watches/{watch_id}/check?wait=60", headers=who.headers).status_code
        == 200
    )
    events = client.get(f"/api/drift?watchId={watch_id}", headers=who.headers).get_json()["events"]
    return watch_id, events[0]["id"]


def ids(client: FlaskClient, headers: dict[str, str] | None = None) -> list[str]:
    return [r["id"] for r in client.get(CATALOG, headers=headers or {}).get_json()["rows"]]


def test_a_published_fixture_is_the_orgs_until_it_is_public(
    live_app: Flask,
    controller: Controller,
    server: SpecServer,
    make_org: Callable[..., OrgKey],
    database: Database,
) -> None:
    client = live_app.test_client()
    acme = make_org("acme", "pro", products=("replay_cloud",))
    other = make_org("other", "pro", products=("replay_cloud",))
    watch_id, event_id = drifted_watch(client, server, acme)

    published = client.post(
        "/v1/replay/fixtures/publish",
        json={"watchId": watch_id, "eventId": event_id, "tags": ["payments"]},
        headers=acme.headers,
    )
    assert published.status_code == 200, published.get_json()
    body = published.get_json()
    row_id = body["row"]["id"]
    assert row_id.startswith("hosted-") and body["public"] is False
    assert body["fixtureId"] == f"{watch_id}:{event_id}"
    assert body["row"]["contentKind"] == "hosted-curated" and body["row"]["installable"]
    assert body["row"]["vendor"] == "127.0.0.1" and body["row"]["title"].startswith("pay: ")
    assert body["row"]["changes"]["breaking"] >= 1
    assert set(body["row"]["tags"]) == {"payments", "openapi", "breaking"}

    # Private: the org sees it with its key; nobody else does, or can install it.
    assert row_id in ids(client, acme.headers)
    assert row_id not in ids(client) and row_id not in ids(client, other.headers)
    install = {"id": row_id}
    mine = client.post("/v1/replay/fixtures/install", json=install, headers=acme.headers)
    assert mine.status_code == 200
    pulled = client.post(
        "/v1/replay/fixtures/from-watch",
        json={"watchId": watch_id, "driftEventId": event_id},
        headers=acme.headers,
    ).get_json()
    assert mine.get_json()["files"] == pulled["files"]
    assert mine.get_json()["digest"] == pulled["digest"]
    refused = client.post("/v1/replay/fixtures/install", json=install, headers=other.headers)
    assert refused.status_code == 404

    # Public: the same drift published again updates the same row.
    again = client.post(
        "/v1/replay/fixtures/publish",
        json={"watchId": watch_id, "public": True, "title": "Payments drops refunds"},
        headers=acme.headers,
    ).get_json()
    assert again["row"]["id"] == row_id and again["public"] is True
    assert row_id in ids(client) and row_id in ids(client, other.headers)
    rows = client.get(f"{CATALOG}&q=refunds").get_json()["rows"]
    assert [r["title"] for r in rows] == ["Payments drops refunds"]
    theirs = client.post("/v1/replay/fixtures/install", json=install, headers=other.headers)
    assert theirs.status_code == 200 and theirs.get_json()["digest"] == pulled["digest"]

    listed = client.get("/v1/replay/fixtures/published", headers=acme.headers).get_json()
    assert [p["row"]["id"] for p in listed["publications"]] == [row_id]
    assert client.get("/v1/replay/fixtures/published", headers=other.headers).get_json() == {
        "publications": []
    }

    # Withdrawn only by its org.
    path = f"/v1/replay/fixtures/published/{row_id}"
    assert client.delete(path, headers=other.headers).status_code == 404
    assert client.delete(path, headers=acme.headers).status_code == 204
    assert row_id not in ids(client) and row_id not in ids(client, acme.headers)
    assert client.delete(path, headers=acme.headers).status_code == 404
    with database.session() as session:
        actions = session.scalars(
            select(AuditEntry.action).where(AuditEntry.target_id == row_id[len("hosted-") :])
        ).all()
    assert sorted(actions) == ["replay.publish", "replay.republish", "replay.unpublish"]


def test_publishing_is_gated_and_scoped(
    live_app: Flask,
    controller: Controller,
    server: SpecServer,
    make_org: Callable[..., OrgKey],
) -> None:
    client = live_app.test_client()
    acme = make_org("acme", "pro", products=("replay_cloud",))
    watch_id, _ = drifted_watch(client, server, acme)
    plain = make_org("plain", "pro")
    other = make_org("other", "pro", products=("replay_cloud",))
    for method, path in (
        ("POST", "/v1/replay/fixtures/from-watch"),
        ("POST", "/v1/replay/fixtures/publish"),
        ("GET", "/v1/replay/fixtures/published"),
        ("DELETE", "/v1/replay/fixtures/published/hosted-x"),
    ):
        body = {"watchId": watch_id}
        answer = client.open(path, method=method, json=body, headers=plain.headers)
        assert answer.status_code == 403, (method, path)
        assert answer.get_json()["error"] == "PRODUCT_REQUIRED: replay_cloud"
        if method == "POST":  # another org's watch: as if it did not exist
            hidden = client.post(path, json=body, headers=other.headers)
            assert hidden.status_code == 404 and hidden.get_json()["message"] == "Watch not found"
    bad = client.post(
        "/v1/replay/fixtures/publish",
        json={"watchId": watch_id, "tags": ["x\u0000y"]},
        headers=acme.headers,
    )
    assert bad.status_code == 400 and bad.get_json()["error"] == "validation_error"
    # The catalog is public, but a key that is sent must be valid.
    wrong_key = client.get(CATALOG, headers={"Authorization": "Bearer dg_not-a-key"})
    assert wrong_key.status_code == 401


@pytest.fixture
def quiet_cli(monkeypatch: Any) -> None:
    monkeypatch.setattr(logging.getLogger("driftgate"), "handlers", [logging.NullHandler()])


def test_from_a_drift_to_an_agent_test_through_the_cli(
    live_app: Flask,
    controller: Controller,
    server: SpecServer,
    make_org: Callable[..., OrgKey],
    tmp_path: Path,
    quiet_cli: None,
) -> None:
    """docs/replay.md's worked example: the drift lands, the team pulls its fixture, serves
    it, and the agent's test runs against the after contract; the fixture is published for
    the org and installed elsewhere."""
    client = live_app.test_client()
    acme = make_org("acme", "pro", products=("replay_cloud",))
    drifted_watch(client, server, acme)
    runner = CliRunner()
    with serving(live_app) as running:
        env = {
            "DRIFTGATE_URL": running.url,
            "DRIFTGATE_API_KEY": acme.key,
            "DRIFTGATE_CONFIG": None,
        }

        def cli(*args: str) -> str:
            result = runner.invoke(main, list(args), env=env)
            assert result.exit_code == 0, (args, result.output, result.stderr)
            return result.stdout

        cli("replay", "pull", "--watch", "pay", "--out", str(tmp_path / "pulled"))
        said = cli("replay", "publish", "--watch", "pay", "--tag", "payments")
        row_id = said.split()[1]
        assert said.startswith(f"published {row_id} (this org only)")
        assert row_id in cli("replay", "published")
        cli("replay", "install", row_id, "--out", str(tmp_path / "installed"))
        assert (
            json.loads(cli("replay", "published", "--format", "json"))["publications"][0]["row"][
                "id"
            ]
            == row_id
        )
        assert cli("replay", "unpublish", row_id).strip() == f"withdrew {row_id}"
        gone = runner.invoke(
            main, ["replay", "install", row_id, "--out", str(tmp_path / "x")], env=env
        )
        assert gone.exit_code == 2 and "no installable fixture" in gone.stderr

    pulled = {p.relative_to(tmp_path / "pulled") for p in (tmp_path / "pulled").rglob("*.json")}
    installed = {
        p.relative_to(tmp_path / "installed") for p in (tmp_path / "installed").rglob("*.json")
    }
    assert pulled == installed
    # The agent's test, against tomorrow's contract: charges still answer, refunds are gone.
    with serve.ReplayServer(serve.load(tmp_path / "pulled")) as replay:
        assert httpx.get(f"{replay.url}/v1/charges/ch_1").json()["status"] == "paid"
        assert httpx.get(f"{replay.url}/v1/refunds").status_code == 404
