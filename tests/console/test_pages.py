"""The console's pages through Flask's client, against real checks of a loopback spec
server and a real git source: a watch drifts and its incident is acknowledged from its page,
an agent is bound, killed and unblocked, a bad commit's problem opens its file at the line,
products are switched, Ask cites live objects; viewers cannot act; other orgs' pages 404."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from controller.scheduler import Controller
from controller.store.db import Database
from controller.store.types import utcnow
from tests.conftest import OrgKey
from tests.console.conftest import post
from tests.factories import csrf_of, make_user, run, sign_in
from tests.gitrepos import RepoBuilder
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec


def test_a_drift_is_acknowledged_and_an_agent_killed_and_unblocked_from_the_console(
    live_app: Flask,
    controller: Controller,
    server: SpecServer,
    acme: OrgKey,
    make_org: Callable[..., OrgKey],
    database: Database,
) -> None:
    api = live_app.test_client()
    url = server.set("/openapi.json", as_json(charges_spec()))
    created = api.post(
        "/api/watches",
        json={"name": "payments", "url": url, "tags": ["vendor:stripe"]},
        headers=acme.headers,
    )
    watch_id = created.get_json()["id"]
    make_user(database, "acme", "admin@example.com")
    make_user(database, "acme", "viewer@example.com", role="viewer")
    admin = sign_in(live_app.test_client(), "admin@example.com")
    page = f"/console/watches/{watch_id}"
    assert post(admin, f"{page}/check", page) == 302  # the baseline
    server.set("/openapi.json", as_json(charges_spec(refunds=False)))
    assert post(admin, f"{page}/check", page) == 302
    shown = admin.get(page).get_data(as_text=True)
    assert "drifted" in shown and "Acknowledge incident" in shown
    # The list, filtered.
    listed = admin.get("/console/watches?status=drifted&vendor=stripe").get_data(as_text=True)
    assert "payments" in listed
    assert "payments" not in admin.get("/console/watches?status=ok").get_data(as_text=True)
    # The event, its changes grouped by operation, with hints.
    event_link = re.search(r'href="(/console/watches/[^"]+/events/[^"]+)"', shown)
    assert event_link is not None
    event = admin.get(event_link.group(1)).get_data(as_text=True)
    assert "/v1/refunds" in event and "breaking" in event and "agentAction" not in event
    # A viewer sees the page and cannot act.
    viewer = sign_in(live_app.test_client(), "viewer@example.com")
    assert "Acknowledge incident" not in viewer.get(page).get_data(as_text=True)
    assert post(viewer, f"{page}/incident/ack", page, note="me") == 403
    # The admin acknowledges; the API says so.
    assert post(admin, f"{page}/incident/ack", page, note="on it") == 302
    status = api.get(f"/api/watches/{watch_id}/status", headers=acme.headers).get_json()
    assert status["incident"]["status"] == "acknowledged"
    # An agent bound in the console, killed and unblocked.
    assert (
        post(
            admin,
            "/console/agents",
            "/console/agents",
            key="billing-bot",
            watchId=watch_id,
            policy="production-guard",
            environment="production",
        )
        == 302
    )
    agents = admin.get("/console/agents").get_data(as_text=True)
    agent_link = re.search(r'href="(/console/agents/[^"]+)"', agents)
    assert agent_link is not None
    agent_page = agent_link.group(1)
    # Trips a guard reports (fuseguard's events batch) are shown on the agent's page.
    assert "No guard has reported a trip" in admin.get(agent_page).get_data(as_text=True)
    batch = {
        "events": [
            {
                "tripId": "t-1",
                "reason": "budget_exceeded",
                "agentId": "billing-bot",
                "tool": "refund",
            }
        ]
    }
    reported = api.post("/v1/fuseguard/events/batch", json=batch, headers=acme.headers)
    assert reported.status_code == 200, reported.get_json()
    trips = admin.get(agent_page).get_data(as_text=True)
    assert "budget_exceeded" in trips and "refund" in trips and "t-1" in trips
    assert post(admin, f"{agent_page}/kill", agent_page, note="stop") == 302
    killed = api.get("/api/agents/billing-bot/status", headers=acme.headers).get_json()
    assert killed["runtime"]["state"] == "killed"
    assert post(viewer, f"{agent_page}/unblock", agent_page) == 403
    assert post(admin, f"{agent_page}/unblock", agent_page, note="fixed") == 302
    running = api.get("/api/agents/billing-bot/status", headers=acme.headers).get_json()
    assert running["runtime"]["state"] == "running"
    # Edited and unbound in the console (an API-managed agent).
    assert (
        post(
            admin,
            f"{agent_page}/edit",
            agent_page,
            policy="staging-strict",
            name="Billing",
            environment="staging",
        )
        == 302
    )
    edited = api.get("/api/agents/billing-bot", headers=acme.headers).get_json()
    assert (edited["policy"], edited["name"], edited["environment"]) == (
        "staging-strict",
        "Billing",
        "staging",
    )
    assert post(admin, f"{agent_page}/edit", agent_page, policy="no-such") == 422
    assert post(admin, f"{agent_page}/unbind/{watch_id}", agent_page) == 302
    assert api.get("/api/agents/billing-bot", headers=acme.headers).get_json()["watches"] == []
    assert post(admin, f"{agent_page}/unbind/{watch_id}", agent_page) == 404
    # Another org's pages are 404.
    other = make_org("globex")
    make_user(database, "globex", "g@example.com")
    stranger = sign_in(live_app.test_client(), "g@example.com")
    assert stranger.get(page).status_code == 404
    assert stranger.get(agent_page).status_code == 404
    assert post(stranger, f"{page}/pause") == 404
    assert other.org_id != acme.org_id


def test_settings_products_and_the_weekly_opt_in(
    client: FlaskClient,
    acme: OrgKey,
    make_org: Callable[..., OrgKey],
    database: Database,
    app: Flask,
) -> None:
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(client, "admin@example.com")
    assert (
        post(admin, "/console/settings/products/replay_cloud", "/console/settings", enabled="true")
        == 302
    )
    products = admin.get("/api/org/products").get_json()
    assert {p["product"]: p["enabled"] for p in products["products"]}["replay_cloud"] is True
    # The weekly e-mail needs the relay first: said on the page, nothing saved.
    refused = admin.post(
        "/console/settings/notifications",
        data={
            "csrf_token": csrf_of(admin.get("/console/settings").get_data(as_text=True)),
            "severity": "breaking",
            "weeklyEnabled": "1",
            "recipients": "a@example.com",
        },
    )
    assert refused.status_code == 422 and "SMTP relay" in refused.get_data(as_text=True)
    # The relay, set here; its password stored, never shown again.
    relay = {
        "host": "smtp.example.com",
        "port": "587",
        "security": "starttls",
        "username": "mailer",
        "password": "relay-secret-9",
        "fromAddress": "dg@example.com",
    }
    assert post(admin, "/console/settings/smtp", "/console/settings", **relay) == 302
    assert admin.get("/api/org/smtp").get_json()["passwordSet"] is True
    page = admin.get("/console/settings").get_data(as_text=True)
    assert "smtp.example.com" in page and "relay-secret-9" not in page
    assert (
        post(admin, "/console/settings/smtp", "/console/settings", **{**relay, "password": ""})
        == 302
    )  # empty: the stored password stays
    assert admin.get("/api/org/smtp").get_json()["passwordSet"] is True
    # A port that is not a number is refused, naming the field; nothing is changed.
    bad = admin.post(
        "/console/settings/smtp",
        data={
            "csrf_token": csrf_of(admin.get("/console/settings").get_data(as_text=True)),
            **relay,
            "port": "twenty-five",
        },
    )
    assert bad.status_code == 400 and "/port" in bad.get_data(as_text=True)
    assert admin.get("/api/org/smtp").get_json()["port"] == 587
    weekly = admin.post(
        "/console/settings/notifications",
        data={
            "csrf_token": csrf_of(admin.get("/console/settings").get_data(as_text=True)),
            "severity": "breaking",
            "weeklyEnabled": "1",
            "recipients": "a@example.com\nb@example.com",
            "weekday": "friday",
            "hour": "7",
        },
    )
    assert weekly.status_code == 302
    assert admin.get("/api/org/notification-defaults").get_json()["weeklySummary"] == {
        "enabled": True,
        "recipients": ["a@example.com", "b@example.com"],
        "weekday": "friday",
        "hourUtc": 7,
    }
    saved = admin.post(
        "/console/settings/notifications",
        data={
            "csrf_token": csrf_of(admin.get("/console/settings").get_data(as_text=True)),
            "severity": ["breaking", "warning"],
            "interval": "30",
        },
    )
    assert saved.status_code == 302
    defaults = admin.get("/api/org/notification-defaults").get_json()
    assert defaults["intervalMinutes"] == 30 and defaults["alertPolicy"]["severities"] == [
        "breaking",
        "warning",
    ]
    # A free org sees why it cannot, and cannot.
    make_org("freebie", "free")
    make_user(database, "freebie", "f@example.com")
    free = sign_in(app.test_client(), "f@example.com")
    assert "cannot enable overlay products" in free.get("/console/settings").get_data(as_text=True)
    assert (
        post(free, "/console/settings/products/replay_cloud", "/console/settings", enabled="true")
        == 403
    )


def test_a_bad_commit_opens_at_its_file_and_line(
    repo: RepoBuilder,
    make_reconciler: Callable[..., tuple[object, object]],
    acme: OrgKey,
    database: Database,
) -> None:
    from tests.factories import AGENTS
    from web.app import create_app

    repo.commit({".driftgate/agents.yaml": AGENTS})
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    run(reconciler, settings)  # type: ignore[arg-type]
    broken = AGENTS.replace("policy:", "polcy:", 1)
    repo.commit({".driftgate/agents.yaml": broken}, message="bad")
    assert run(reconciler, settings).result == "stalled"  # type: ignore[arg-type]
    client = create_app(settings, database=database).test_client()  # type: ignore[arg-type]
    make_user(database, "acme", "admin@example.com")
    sign_in(client, "admin@example.com")
    source = client.get("/console/sources/fleet").get_data(as_text=True)
    assert "Stalled" in source
    link = re.search(r'href="(/console/sources/fleet/file\?[^"#]+)#L(\d+)"', source)
    assert link is not None, source
    opened = client.get(link.group(1).replace("&amp;", "&"))
    assert opened.status_code == 200
    marked = re.search(
        r'<li id="L(\d+)" class="marked"[^>]*><code>([^<]*)</code>', opened.get_data(as_text=True)
    )
    assert marked is not None and marked.group(1) == link.group(2)
    assert "polcy" in marked.group(2)
    assert post(client, "/console/sources/fleet/reconcile", "/console/sources/fleet") == 302


def test_the_file_view_shows_a_bounded_part_and_names_what_it_does_not_read(
    repo: RepoBuilder,
    make_reconciler: Callable[..., tuple[object, object]],
    acme: OrgKey,
    database: Database,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pygit2.enums import FileMode

    from controller.model.gitops import describe_size
    from controller.sources import git as git_source
    from tests.factories import AGENTS, FILES
    from web.app import create_app

    padding = "".join(f"# comment {i:06d}: {'x' * 40}\n" for i in range(6000))
    revision = repo.commit(
        {
            **FILES,
            ".driftgate/agents.yaml": AGENTS + padding,
            ".driftgate/watch-sets.yaml": "# " + "w" * 600_000 + "\n",  # over 512 KiB
            ".driftgate/dashboards.yaml": "../shared/dashboards.yaml",
        },
        modes={".driftgate/dashboards.yaml": FileMode.LINK},
    )
    reconciler, settings = make_reconciler(
        {"name": "fleet", "org": "acme", "url": repo.url}, git_max_file_bytes=512 * 1024
    )
    assert run(reconciler, settings).result == "stalled"  # type: ignore[arg-type]
    client = create_app(settings, database=database).test_client()  # type: ignore[arg-type]
    make_user(database, "acme", "admin@example.com")
    sign_in(client, "admin@example.com")
    inflated: list[int] = []
    real_data = git_source._blob_data

    def recording_data(git: Any, item: Any) -> bytes:
        data = real_data(git, item)
        inflated.append(len(data))
        return data

    monkeypatch.setattr(git_source, "_blob_data", recording_data)

    def view(file: str, line: int) -> str:
        answer = client.get(
            "/console/sources/fleet/file",
            query_string={"revision": revision, "file": f".driftgate/{file}", "line": line},
        )
        assert answer.status_code == 200, answer.get_data(as_text=True)
        return answer.get_data(as_text=True)

    page = view("agents.yaml", 2)
    shown = re.findall(r'<li id="L\d+"[^>]*><code>([^<]*)</code>', page)
    note = re.search(r"Showing the first ([\d,]+) lines \(([^)]*)\) of ([^;]*);", page)
    assert note is not None, page
    assert int(note.group(1).replace(",", "")) == len(shown) < AGENTS.count("\n") + 6000
    assert note.group(3) == describe_size(len((AGENTS + padding).encode()))  # 346.1 KiB
    assert sum(len(text) + 1 for text in shown) <= 256 * 1024
    assert re.search(r'<li id="L2" class="marked"[^>]*><code>policies:</code>', page)
    assert "Line 6020 is past that part." in view("agents.yaml", 6020)

    too_large = view("watch-sets.yaml", 1)
    assert "more than the limit of 512 KiB per file" in too_large
    assert '<li id="L' not in too_large
    linked = view("dashboards.yaml", 1)
    assert "cannot read: it is a symbolic link" in linked and '<li id="L' not in linked
    # Only the file within the limit was ever inflated, never the 600 KB one.
    assert inflated == [len((AGENTS + padding).encode())] * 2


def test_ask_answers_with_links_and_templates_launch_watches(
    client: FlaskClient, acme: OrgKey, database: Database, server: SpecServer
) -> None:
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(client, "admin@example.com")
    url = server.set("/orders.json", as_json(charges_spec()))
    made = admin.post  # keep the session's cookie; templates come from the API with a key
    template = client.application.test_client().post(
        "/api/templates",
        json={"name": "orders", "watchType": "openapi", "urlPattern": url},
        headers=acme.headers,
    )
    assert template.status_code == 201
    page = admin.get("/console/templates").get_data(as_text=True)
    assert "orders" in page
    launched = made(
        "/console/templates/launch",
        data={
            "csrf_token": csrf_of(page),
            "templateId": template.get_json()["id"],
            "name": "orders-1",
        },
    )
    assert launched.status_code == 302 and "/console/watches/" in launched.headers["Location"]
    answer = admin.get("/console/ask?q=is any MCP server unhealthy?").get_data(as_text=True)
    assert "Answer" in answer
    unknown = admin.get("/console/ask?q=what is the weather").get_data(as_text=True)
    assert "What can be asked" in unknown
    assert admin.get("/console/").status_code == 200
    for path in (
        "/console/watches",
        "/console/agents",
        "/console/sources",
        "/console/settings",
        "/console/templates",
        "/console/ask",
        "/console/settings/keys",
    ):
        assert admin.get(path).status_code == 200, path


def test_the_overview_charts_and_its_dashboard_tabs(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    from tests.portfolio.seed import seed

    with database.transaction() as session:
        seed(
            session,
            "acme",
            utcnow(),
            watches=40,
            events=200,
            incidents=20,
            jobs=20,
            org_id=acme.org_id,
        )
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(client, "admin@example.com")
    everything = admin.get("/console/").get_data(as_text=True)
    assert everything.count("<svg") == 2  # drift by week, MTTR by vendor
    # The coverage map comes after the page: htmx asks for the part; without script, a page.
    assert 'hx-get="/console/compass"' in everything
    part = admin.get("/console/compass", headers={"HX-Request": "true"}).get_data(as_text=True)
    assert part.startswith('<section id="compass"') and part.count("<svg") == 1
    whole = admin.get("/console/compass").get_data(as_text=True)
    assert "<html" in whole and "Coverage by vendor" in whole
    assert 'aria-current="page">Everything' in everything
    tab = re.search(r'href="(/console/\?dashboard=system\.mcp-health)"', everything)
    assert tab is not None
    mcp = admin.get(tab.group(1)).get_data(as_text=True)
    assert "Overview of acme: MCP health" in mcp
    # The tab's filters apply: the MCP dashboard counts MCP watches only.
    figure = re.compile(r'<span class="figure">(\d+)</span> watches')
    assert int(figure.search(mcp).group(1)) < int(figure.search(everything).group(1))  # type: ignore[union-attr]
    assert admin.get("/console/?dashboard=nope").status_code == 404


def test_an_event_leads_with_the_cause_of_a_shared_schema_change(
    live_app: Flask,
    controller: Controller,
    server: SpecServer,
    acme: OrgKey,
    database: Database,
) -> None:
    """A change to a schema that operations share is told once, by its cause (the schema
    and what changed in it, and how many operations it reaches), before the operations."""
    api = live_app.test_client()
    spec = charges_spec()
    answer = {"application/json": {"schema": {"$ref": "#/components/schemas/Charge"}}}
    spec["paths"]["/v1/charges"] = {
        "post": {"responses": {"200": {"description": "ok", "content": answer}}}
    }
    url = server.set("/openapi.json", as_json(spec))
    created = api.post("/api/watches", json={"name": "pay", "url": url}, headers=acme.headers)
    watch_id = created.get_json()["id"]
    api.post(f"/api/watches/{watch_id}/check?wait=60", headers=acme.headers)
    spec["components"]["schemas"]["Charge"]["required"] = ["id"]
    del spec["paths"]["/v1/refunds"]
    server.set("/openapi.json", as_json(spec))
    api.post(f"/api/watches/{watch_id}/check?wait=60", headers=acme.headers)
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(live_app.test_client(), "admin@example.com")
    events = api.get(f"/api/drift?watchId={watch_id}", headers=acme.headers).get_json()
    event_id = events["events"][0]["id"]
    served = api.get(f"/api/drift/events/{event_id}", headers=acme.headers).get_json()
    cause = next(c for c in served["changes"] if c.get("cause"))
    assert cause["cause"] == "Charge: property 'amount' became optional"
    page = admin.get(f"/console/watches/{watch_id}/events/{event_id}").get_data(as_text=True)
    shared = page.index("<h2>Shared schemas</h2>")
    assert shared < page.index("<h2>GET /v1/refunds</h2>")
    assert "Charge: property &#39;amount&#39; became optional <small>(2 operations)</small>" in page
    assert "#/components/schemas/Charge/properties/amount" in page


def test_the_plans_page_shows_what_each_plan_unlocks_from_the_checked_table(
    tmp_path: Any, database: Database, make_org: Callable[..., OrgKey]
) -> None:
    from controller.model.plans import FEATURES, PLANS, allows
    from tests.conftest import make_settings
    from web.app import create_app

    settings = make_settings(
        tmp_path, database_url=database.url, default_plan="team", validate_quota_pro=5
    )
    app = create_app(settings, database=database)
    make_org("small", "free")
    make_user(database, "small", "s@example.com", role="viewer")
    viewer = sign_in(app.test_client(), "s@example.com")
    assert viewer.get("/console/plans").status_code == 200
    html = viewer.get("/console/plans").get_data(as_text=True)
    assert "small is on the <strong>free</strong> plan" in html
    assert "this server's default plan, <strong>team</strong>" in html
    for feature in FEATURES.values():
        row = html.split(f'<tr id="feature-{feature.name}">', 1)[1].split("</tr>", 1)[0]
        cells = re.findall(r'<td data-label="(\w+)">(yes|no)</td>', row)
        assert cells == [(p, "yes" if allows(p, feature.name) else "no") for p in PLANS]
    quota = html.split('<tr id="feature-quota">', 1)[1].split("</tr>", 1)[0]
    assert re.findall(r'<td data-label="(\w+)">([^<]*)</td>', quota)[1:] == [
        ("free", "none"),
        ("pro", "5"),
        ("team", "1,000,000"),
        ("enterprise", "unlimited"),
    ]
    # Linked from Settings (and Ask), where a plan's limits show.
    assert 'href="/console/plans"' in viewer.get("/console/settings").get_data(as_text=True)
    assert 'href="/console/plans"' in viewer.get("/console/ask").get_data(as_text=True)
