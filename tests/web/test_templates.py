"""Templates, launches from templates and org watch sets through the API, on a real store,
beside objects a real git source applied (which stay read-only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from controller.store.db import Database
from controller.store.models import AuditEntry, Template, Watch
from controller.store.watch_rows import decrypted_headers
from tests.conftest import OrgKey
from tests.factories import FILES, Make, run
from tests.gitrepos import RepoBuilder

TEMPLATE = {
    "name": "billing-openapi",
    "watchType": "openapi",
    "urlPattern": "https://billing.example.com/openapi.json",
    "policyPreset": "staging-strict",
    "tags": ["team:billing", "vendor:acme"],
    "headers": {"Authorization": "Bearer tpl-secret-1", "X-Team": "billing"},
}


def post(client: FlaskClient, who: OrgKey, path: str, body: Any, status: int = 201) -> Any:
    response = client.post(path, json=body, headers=who.headers)
    assert response.status_code == status, response.get_json()
    return response.get_json()


def launch(client: FlaskClient, who: OrgKey, status: int = 201, **body: Any) -> Any:
    return post(client, who, "/api/watches/from-template", body, status)


def test_the_catalog_lists_system_templates_beside_the_orgs(
    client: FlaskClient, acme: OrgKey, make_org: Callable[..., OrgKey], database: Database
) -> None:
    created = post(client, acme, "/api/templates", TEMPLATE)
    assert created["system"] is False and created["managedBy"] is None
    assert created["headers"] == {"Authorization": "<redacted>", "X-Team": "<redacted>"}
    assert created["tags"] == ["team:billing", "vendor:acme"]
    listing = client.get("/api/templates", headers=acme.headers).get_json()["templates"]
    system = [t for t in listing if t["system"]]
    assert {t["id"] for t in system} >= {"system/stripe-openapi", "system/mcp-streamable-http"}
    assert all(t["id"] == t["name"] and t["createdAt"] is None for t in system)
    assert [t["name"] for t in listing if not t["system"]] == ["billing-openapi"]
    assert "tpl-secret-1" not in str(listing)
    with database.session() as session:
        row = session.scalars(select(Template)).one()
        assert row.headers_ciphertext and "tpl-secret-1" not in row.headers_ciphertext

    again = post(client, acme, "/api/templates", TEMPLATE, 409)
    assert again["error"] == "duplicate_name"
    reserved = post(client, acme, "/api/templates", {**TEMPLATE, "name": "system/mine"}, 400)
    assert "reserved" in str(reserved)
    bad = post(client, acme, "/api/templates", {**TEMPLATE, "policyPreset": "yolo"}, 400)
    assert bad["error"] == "validation_error"

    other = make_org("globex")
    theirs = client.get("/api/templates", headers=other.headers).get_json()["templates"]
    assert all(t["system"] for t in theirs)
    gone = client.delete(f"/api/templates/{created['id']}", headers=other.headers)
    assert gone.status_code == 404
    assert client.delete(f"/api/templates/{created['id']}", headers=acme.headers).status_code == 204
    assert (
        client.delete("/api/templates/system/stripe-openapi", headers=acme.headers).status_code
        == 404
    )


def test_launching_copies_the_template_with_overrides_and_again_makes_a_new_watch(
    client: FlaskClient, acme: OrgKey, app: Flask, database: Database
) -> None:
    template = post(client, acme, "/api/templates", TEMPLATE)
    first = launch(
        client,
        acme,
        templateId=template["id"],
        headers={"Authorization": "Bearer override-2"},
        tags=["env:prod", "team:billing"],
        intervalMinutes=30,
    )
    watch = first["watch"]
    assert first["template"] == {"id": template["id"], "name": "billing-openapi", "system": False}
    assert first["agent"] is None
    assert watch["name"] == "billing-openapi"
    assert watch["url"] == TEMPLATE["urlPattern"] and watch["watchType"] == "openapi"
    assert watch["tags"] == ["team:billing", "vendor:acme", "env:prod"]
    assert watch["intervalMinutes"] == 30 and watch["driftStatus"] == "never_run"

    second = launch(
        client, acme, templateId="billing-openapi", url="https://billing2.example.com/spec.json"
    )["watch"]
    third = launch(client, acme, templateId="billing-openapi")["watch"]
    assert (second["name"], third["name"]) == ("billing-openapi-2", "billing-openapi-3")
    assert second["url"] == "https://billing2.example.com/spec.json"
    assert len({watch["id"], second["id"], third["id"]}) == 3

    box = app.extensions["driftgate.secret_box"]
    with database.session() as session:
        rows = {w.name: w for w in session.scalars(select(Watch))}
        assert decrypted_headers(rows["billing-openapi"], box) == {
            "Authorization": "Bearer override-2",
            "X-Team": "billing",
        }
        assert decrypted_headers(rows["billing-openapi-2"], box)["Authorization"] == (
            "Bearer tpl-secret-1"
        )
        actions = list(
            session.scalars(select(AuditEntry.action).where(AuditEntry.action.like("template.%")))
        )
        assert actions.count("template.launch") == 3

    # Later edits never touch siblings: change one watch, remove the template.
    client.patch(f"/api/watches/{second['id']}", json={"tags": ["solo"]}, headers=acme.headers)
    assert (
        client.delete(f"/api/templates/{template['id']}", headers=acme.headers).status_code == 204
    )
    kept = client.get(f"/api/watches/{third['id']}", headers=acme.headers).get_json()
    assert kept["tags"] == ["team:billing", "vendor:acme"]
    assert client.get(f"/api/watches/{watch['id']}", headers=acme.headers).status_code == 200


def test_system_templates_with_placeholders_need_a_url(
    client: FlaskClient, acme: OrgKey, make_org: Callable[..., OrgKey]
) -> None:
    missing = launch(client, acme, 422, templateId="system/mcp-streamable-http")
    assert missing["details"][0]["path"] == "/url"
    made = launch(
        client, acme, templateId="system/mcp-streamable-http", url="https://tools.example.com/mcp"
    )
    assert made["watch"]["name"] == "mcp-streamable-http"
    assert made["watch"]["watchType"] == "mcp" and made["watch"]["tags"] == ["mcp"]
    assert made["template"]["system"] is True
    own = post(client, acme, "/api/templates", TEMPLATE)
    other = make_org("globex")
    assert launch(client, other, 404, templateId=own["id"])["error"] == "not_found"
    assert launch(client, acme, 404, templateId="system/nope")["error"] == "not_found"
    assert launch(client, acme, 400, templateId="billing-openapi", surprise=1)


def test_a_binding_inherits_the_policy_preset_and_an_existing_agent_keeps_its_own(
    client: FlaskClient, acme: OrgKey
) -> None:
    post(client, acme, "/api/templates", TEMPLATE)
    first = launch(
        client,
        acme,
        templateId="billing-openapi",
        agent={"id": "billing-bot", "environment": "staging", "name": "Billing bot"},
    )
    agent = first["agent"]
    assert agent["id"] == "billing-bot" and agent["slug"] == "billing-bot"
    assert agent["policy"] == "staging-strict" and agent["managedBy"] is None
    assert agent["watches"] == [
        {"ref": first["watch"]["id"], "watchId": first["watch"]["id"], "resolved": True}
    ]
    second = launch(
        client,
        acme,
        templateId="system/stripe-openapi",
        agent={"id": "billing-bot"},
    )
    assert second["agent"]["policy"] == "staging-strict"  # the agent's, not the template's
    assert [w["watchId"] for w in second["agent"]["watches"]] == [
        first["watch"]["id"],
        second["watch"]["id"],
    ]
    guarded = launch(
        client,
        acme,
        templateId="system/stripe-openapi",
        policyPreset="notify-only",
        agent={"id": "payments-bot", "slug": "payments"},
    )["agent"]
    assert guarded["policy"] == "notify-only" and guarded["slug"] == "payments"
    clash = launch(
        client, acme, 409, templateId="billing-openapi", agent={"id": "other", "slug": "payments"}
    )
    assert clash["error"] == "duplicate_slug"
    listed = client.get("/api/agents/payments", headers=acme.headers).get_json()
    assert listed["id"] == "payments-bot"
    # The refused launch created nothing: its watch went with the transaction.
    names = [
        w["name"] for w in client.get("/api/watches", headers=acme.headers).get_json()["watches"]
    ]
    assert names.count("billing-openapi-2") == 0


def test_watch_sets_crud_membership_and_org_scope(
    client: FlaskClient, acme: OrgKey, make_org: Callable[..., OrgKey]
) -> None:
    ids = [
        post(
            client,
            acme,
            "/api/watches",
            {"name": f"w{i}", "url": f"https://a{i}.example.com/openapi.json"},
        )["id"]
        for i in range(4)
    ]
    staging = post(
        client,
        acme,
        "/api/org/watch-sets",
        {"name": "staging", "environment": "staging", "watchIds": [ids[0], ids[1], ids[0]]},
    )
    assert staging["watchIds"] == [ids[0], ids[1]] and staging["managedBy"] is None
    assert (
        client.get(f"/api/watches/{ids[0]}", headers=acme.headers).get_json()["watchSetId"]
        == staging["id"]
    )
    taken = post(client, acme, "/api/org/watch-sets", {"name": "prod", "watchIds": [ids[1]]}, 409)
    assert taken["error"] == "watch_in_other_set"
    unknown = post(client, acme, "/api/org/watch-sets", {"name": "prod", "watchIds": ["nope"]}, 422)
    assert unknown["error"] == "unknown_watch" and "nope" in str(unknown["details"])
    assert (
        post(client, acme, "/api/org/watch-sets", {"name": "staging"}, 409)["error"]
        == "duplicate_name"
    )

    replaced = client.put(
        f"/api/org/watch-sets/{staging['id']}",
        json={"name": "staging-eu", "description": "EU staging", "watchIds": [ids[1], ids[2]]},
        headers=acme.headers,
    )
    assert replaced.status_code == 200
    body = replaced.get_json()
    assert (body["name"], body["environment"], body["watchIds"]) == (
        "staging-eu",
        None,
        [ids[1], ids[2]],
    )
    assert (
        client.get(f"/api/watches/{ids[0]}", headers=acme.headers).get_json()["watchSetId"] is None
    )

    other = make_org("globex")
    their_watch = post(
        client, other, "/api/watches", {"name": "x", "url": "https://x.example.com/openapi.json"}
    )["id"]
    assert (
        client.get(f"/api/org/watch-sets/{staging['id']}", headers=other.headers).status_code == 404
    )
    assert (
        client.put(
            f"/api/org/watch-sets/{staging['id']}", json={"name": "mine"}, headers=other.headers
        ).status_code
        == 404
    )
    assert (
        client.delete(f"/api/org/watch-sets/{staging['id']}", headers=other.headers).status_code
        == 404
    )
    foreign = post(
        client, acme, "/api/org/watch-sets", {"name": "prod", "watchIds": [their_watch]}, 422
    )
    assert foreign["error"] == "unknown_watch"
    assert client.get("/api/org/watch-sets", headers=other.headers).get_json() == {"watchSets": []}

    launched = launch(client, acme, templateId="system/stripe-openapi", watchSetId=staging["id"])[
        "watch"
    ]
    assert launched["watchSetId"] == staging["id"]
    listing = client.get("/api/org/watch-sets", headers=acme.headers).get_json()["watchSets"]
    assert listing[0]["watchIds"] == [ids[1], ids[2], launched["id"]]

    assert (
        client.delete(f"/api/org/watch-sets/{staging['id']}", headers=acme.headers).status_code
        == 204
    )
    assert (
        client.get(f"/api/watches/{ids[1]}", headers=acme.headers).get_json()["watchSetId"] is None
    )
    assert client.get("/api/org/watch-sets", headers=acme.headers).get_json() == {"watchSets": []}


def test_git_objects_are_read_only_and_api_objects_are_never_pruned(
    repo: RepoBuilder,  # noqa: F811
    make_reconciler: Make,  # noqa: F811
    acme: OrgKey,
    database: Database,
    client: FlaskClient,
) -> None:
    repo.commit(FILES)
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url, "allowEmpty": True}
    )
    assert run(reconciler, settings).result == "applied"
    sets = client.get("/api/org/watch-sets", headers=acme.headers).get_json()["watchSets"]
    production = next(s for s in sets if s["name"] == "production")
    assert production["managedBy"]["source"] == "fleet" and len(production["watchIds"]) == 2
    put = client.put(
        f"/api/org/watch-sets/{production['id']}", json={"name": "prod"}, headers=acme.headers
    )
    assert put.status_code == 409 and put.get_json()["error"] == "managed_by_source"
    assert (
        client.delete(f"/api/org/watch-sets/{production['id']}", headers=acme.headers).status_code
        == 409
    )
    managed_watch = production["watchIds"][0]
    refused = post(
        client, acme, "/api/org/watch-sets", {"name": "mine", "watchIds": [managed_watch]}, 409
    )
    assert refused["error"] == "managed_by_source"
    git_template = next(
        t
        for t in client.get("/api/templates", headers=acme.headers).get_json()["templates"]
        if t["name"] == "stripe"
    )
    assert git_template["managedBy"]["source"] == "fleet"
    assert (
        client.delete(f"/api/templates/{git_template['id']}", headers=acme.headers).status_code
        == 409
    )
    # A git template can still be launched from: the new watch is the API's, not git's.
    made = launch(
        client,
        acme,
        templateId="stripe",
        name="stripe-copy",
        agent={"id": "billing-agent"},
        status=409,
    )
    assert made["error"] == "managed_by_source"  # billing-agent is declared in git
    copy = launch(client, acme, templateId="stripe", name="stripe-copy")["watch"]
    assert copy["managedBy"] is None and copy["url"] == "http://127.0.0.1:9/specs/stripe.json"
    api_set = post(client, acme, "/api/org/watch-sets", {"name": "mine", "watchIds": [copy["id"]]})
    post(client, acme, "/api/templates", {**TEMPLATE, "headers": None})

    # The source prunes everything it declared, and only that.
    repo.commit({path: None for path in FILES})
    assert run(reconciler, settings).result == "applied"
    names = [
        t["name"]
        for t in client.get("/api/templates", headers=acme.headers).get_json()["templates"]
        if not t["system"]
    ]
    assert names == ["billing-openapi"]
    sets = client.get("/api/org/watch-sets", headers=acme.headers).get_json()["watchSets"]
    assert [(s["name"], s["watchIds"]) for s in sets] == [("mine", [copy["id"]])]
    assert api_set["id"] == sets[0]["id"]
    watches = [
        w["name"] for w in client.get("/api/watches", headers=acme.headers).get_json()["watches"]
    ]
    assert watches == ["stripe-copy"]
