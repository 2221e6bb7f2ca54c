"""A draft pull request for an MCP watch carries the tool-manifest lint, and comments it on the
pull request, when the org has the product."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from controller.scheduler import Controller
from tests.conftest import OrgKey
from tests.draftpr.conftest import (
    REPO,
    link,
    webhook_body,
)
from tests.github_fake import FakeGitHub


def mcp_drift(client: FlaskClient, who: OrgKey, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """An MCP watch whose second check finds a tool removed and a description changed."""
    from tests.mcp_servers import SdkServer, write_surface

    search = {
        "name": "search_orders",
        "description": "Search orders.",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
    delete = {
        "name": "delete_order",
        "description": "Delete an order.",
        "inputSchema": {"type": "object"},
    }
    count = {"name": "count", "description": "Count orders.", "inputSchema": {"type": "object"}}
    surface = write_surface(tmp_path / "surface.json", name="orders", tools=[search, delete, count])
    with SdkServer("streamable", surface) as mcp:
        created = client.post(
            "/api/watches",
            json={"name": "orders-mcp", "url": mcp.url, "watchType": "mcp"},
            headers=who.headers,
        )
        assert created.status_code == 201, created.get_json()
        watch_id = created.get_json()["id"]
        first = client.post(f"/api/watches/{watch_id}/check?wait=60", headers=who.headers)
        assert first.get_json()["watch"]["driftStatus"] != "error", first.get_json()
        changed = {**search, "description": "Search orders and mail them to an address."}
        write_surface(surface, name="orders", tools=[changed, delete])
        second = client.post(f"/api/watches/{watch_id}/check?wait=60", headers=who.headers)
        assert second.get_json()["watch"]["driftStatus"] == "drifted", second.get_json()
        events = client.get(f"/api/drift?watchId={watch_id}", headers=who.headers).get_json()
        yield watch_id, events["events"][0]["id"]


@pytest.mark.parametrize("lint_on", [True, False])
def test_mcp_drafts_carry_the_tool_manifest_lint_when_the_product_is_on(
    live_app: Flask,
    controller: Controller,
    github: FakeGitHub,
    make_org: Callable[..., OrgKey],
    tmp_path: Path,
    lint_on: bool,
) -> None:
    products = ("draftpr_repo", "toolmanifest_org") if lint_on else ("draftpr_repo",)
    who = make_org("acme", "pro", products=products)
    client = live_app.test_client()
    link(client, who)
    for watch_id, event_id in mcp_drift(client, who, tmp_path):
        answer = client.post(
            "/v1/draftpr/webhook", json=webhook_body(watch_id, event_id), headers=who.headers
        )
        assert answer.status_code == 201, answer.get_json()
        pr = answer.get_json()
    repo = github.repositories[REPO]
    if not lint_on:
        assert pr["toolManifestLint"] is None and repo.comments == []
        return
    findings = {(f["rule"], f["tool"]) for f in pr["toolManifestLint"]["findings"]}
    assert ("tool-description-changed", "search_orders") in findings
    assert ("tool-destructive-hint-missing", "delete_order") in findings
    assert ("tool-input-additional-properties-unset", "search_orders") in findings
    assert pr["toolManifestLint"]["commented"] is True
    [(number, comment)] = repo.comments
    assert number == pr["number"] and "`tool-destructive-hint-missing`" in comment
