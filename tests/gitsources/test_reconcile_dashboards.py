"""Dashboards from git (`.driftgate/dashboards.yaml`) reconciled into the real store: applied,
read-only through the API, and a bad file stalls the revision at its file and line."""

from __future__ import annotations

from typing import Any

import pytest

from controller.store.db import Database
from tests.conftest import OrgKey
from tests.factories import FILES, Make, run
from tests.gitrepos import RepoBuilder

DASHBOARDS = """\
version: 1
dashboards:
  - name: Billing vendors
    description: what billing depends on
    filters:
      tag: team:billing
      watchType: openapi
    panels: [health, mttr, hotspots]
  - name: MCP at a glance
    filters: {watchType: mcp}
    panels: [health, checks]
"""


def test_dashboards_are_applied_from_git_and_read_only_through_the_api(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database, client: Any
) -> None:
    repo.commit({**FILES, ".driftgate/dashboards.yaml": DASHBOARDS})
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    result = run(reconciler, settings)
    assert result.result == "applied", result.as_dict()
    listed = client.get("/api/portfolio/dashboards", headers=acme.headers).get_json()["dashboards"]
    mine = {d["name"]: d for d in listed if not d["system"]}
    assert set(mine) == {"Billing vendors", "MCP at a glance"}
    billing = mine["Billing vendors"]
    assert billing["panels"] == ["health", "mttr", "hotspots"]
    assert (
        billing["filters"]["tag"] == "team:billing" and billing["filters"]["watchType"] == "openapi"
    )
    assert billing["managedBy"]["source"] == "fleet"
    assert billing["managedBy"]["path"] == ".driftgate/dashboards.yaml"
    path = f"/api/portfolio/dashboards/{billing['id']}"
    body = {"name": "Billing vendors", "panels": ["health"]}
    refused = client.put(path, json=body, headers=acme.headers)
    assert refused.status_code == 409 and refused.get_json()["error"] == "managed_by_source"
    assert client.delete(path, headers=acme.headers).status_code == 409

    repo.commit(
        {
            ".driftgate/dashboards.yaml": DASHBOARDS.replace("[health, checks]", "[gaps]").replace(
                "  - name: Billing vendors\n    description: what billing depends on\n"
                "    filters:\n      tag: team:billing\n      watchType: openapi\n"
                "    panels: [health, mttr, hotspots]\n",
                "",
            )
        }
    )
    changed = run(reconciler, settings)
    assert changed.result == "applied", changed.as_dict()
    plan = changed.plan
    assert plan is not None
    assert plan.as_dict()["update"] == {"dashboards": ["MCP at a glance"]}
    assert plan.as_dict()["prune"] == {"dashboards": ["Billing vendors"]}
    after = client.get("/api/portfolio/dashboards", headers=acme.headers).get_json()["dashboards"]
    assert [(d["name"], d["panels"]) for d in after if not d["system"]] == [
        ("MCP at a glance", ["gaps"])
    ]


@pytest.mark.parametrize(
    ("content", "where", "needle"),
    [
        (DASHBOARDS.replace("[health, checks]", "[health, nope]"), 11, "not 'nope'"),
        (DASHBOARDS.replace("MCP at a glance", "Billing vendors"), 9, "duplicate dashboard"),
    ],
    ids=["unknown-panel", "duplicate-name"],
)
def test_a_bad_dashboards_file_stalls_the_revision_with_file_and_line(
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    content: str,
    where: int,
    needle: str,
) -> None:
    repo.commit({**FILES, ".driftgate/dashboards.yaml": content})
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    result = run(reconciler, settings)
    assert result.result == "stalled"
    problems = result.as_dict()["problems"]
    assert [(p["file"], p["line"]) for p in problems] == [(".driftgate/dashboards.yaml", where)]
    assert needle in problems[0]["message"]
