"""Consumer profiles from git (`.driftgate/profiles/*.json|yaml`) reconciled into the real store:
added, changed and removed with the files, read-only through the API, and a bad one stalls the
revision at its file and line."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.store.db import Database
from tests.conftest import OrgKey
from tests.factories import FILES, Make, run
from tests.gitrepos import RepoBuilder
from tests.gitsources.conftest import ORDER_PROFILE, profiles


def test_profiles_are_added_changed_and_removed_from_git(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database
) -> None:
    repo.commit(
        {
            **FILES,
            ".driftgate/profiles/order.yaml": ORDER_PROFILE,
            ".driftgate/profiles/ticket.json": json.dumps(
                {"id": "ticket", "version": 3, "schema": {"type": "object"}}
            ),
            ".driftgate/profiles/README.md": "not a profile",
        }
    )
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    result = run(reconciler, settings)
    assert result.result == "applied", result.as_dict()
    assert profiles(database) == [
        ("order", 1, "fleet", ".driftgate/profiles/order.yaml"),
        ("ticket", 3, "fleet", ".driftgate/profiles/ticket.json"),
    ]
    repo.commit(
        {
            ".driftgate/profiles/order.yaml": ORDER_PROFILE.replace("version: 1", "version: 2"),
            ".driftgate/profiles/ticket.json": None,
        }
    )
    changed = run(reconciler, settings)
    assert changed.result == "applied", changed.as_dict()
    assert changed.plan is not None and changed.plan.as_dict()["update"] == {"profiles": ["order"]}
    assert changed.plan.as_dict()["prune"] == {"profiles": ["ticket"]}
    assert profiles(database) == [("order", 2, "fleet", ".driftgate/profiles/order.yaml")]


def test_a_git_profile_is_read_only_through_the_api(
    repo: RepoBuilder, make_reconciler: Make, acme: OrgKey, database: Database, client: Any
) -> None:
    repo.commit({**FILES, ".driftgate/profiles/order.yaml": ORDER_PROFILE})
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    assert run(reconciler, settings).result == "applied"
    body = {"id": "order", "version": 5, "schema": {"type": "object"}}
    put = client.put("/api/ingress-profiles/order", json=body, headers=acme.headers)
    assert put.status_code == 409 and put.get_json()["error"] == "managed_by_source"
    assert client.delete("/api/ingress-profiles/order", headers=acme.headers).status_code == 409
    shown = client.get("/api/ingress-profiles/order", headers=acme.headers).get_json()
    assert shown["managedBy"] == "fleet" and shown["version"] == 1
    answer = client.post(
        "/api/validate", json={"payload": {}, "profileId": "order"}, headers=acme.headers
    )
    assert (
        answer.status_code == 422 and answer.get_json()["errors"][0]["code"] == "required_missing"
    )


@pytest.mark.parametrize(
    ("content", "where", "needle"),
    [
        (ORDER_PROFILE.replace("version: 1", "version: 0"), "order.yaml:2", "version"),
        (ORDER_PROFILE.replace("id: order", "id: ticket"), "order.yaml:1", "also used by"),
        ("id: order\nversion: [1\n", "order.yaml:3", "invalid YAML"),
    ],
    ids=["bad-version", "duplicate-id", "invalid-yaml"],
)
def test_a_bad_profile_stalls_the_revision_with_file_and_line(
    repo: RepoBuilder,
    make_reconciler: Make,
    acme: OrgKey,
    database: Database,
    content: str,
    where: str,
    needle: str,
) -> None:
    ticket = ORDER_PROFILE.replace("id: order", "id: ticket")
    repo.commit(
        {
            **FILES,
            ".driftgate/profiles/a-ticket.yaml": ticket,
            ".driftgate/profiles/order.yaml": content,
        }
    )
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    result = run(reconciler, settings)
    assert result.result == "stalled", result.as_dict()
    shown = [f"{p.file}:{p.line}: {p.message}" for p in result.problems]
    assert any(where in s and needle in s for s in shown), shown
    assert profiles(database) == []
