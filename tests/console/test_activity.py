"""The activity timeline, the live strips and the contract view, through Flask's client
against real checks of a loopback spec server (and a real git source for a source's runs):
entries after an acknowledgement, a baseline accepted with its reason, a kill; the filters
and pages; another org's objects 404; a strip that cannot read the store says so."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from controller.errors import StoreUnavailable
from controller.scheduler import Controller
from controller.store.db import Database
from tests.conftest import OrgKey
from tests.console.conftest import post
from tests.factories import AGENTS, make_user, run, sign_in
from tests.gitrepos import RepoBuilder
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec


def _drifted_watch(api: FlaskClient, admin: FlaskClient, server: SpecServer, acme: OrgKey) -> str:
    url = server.set("/openapi.json", as_json(charges_spec()))
    created = api.post("/api/watches", json={"name": "payments", "url": url}, headers=acme.headers)
    watch_id: str = created.get_json()["id"]
    page = f"/console/watches/{watch_id}"
    assert post(admin, f"{page}/check", page) == 302  # the baseline
    server.set("/openapi.json", as_json(charges_spec(refunds=False, description="A payment")))
    assert post(admin, f"{page}/check", page) == 302
    return watch_id


def _ageless(entry: str) -> str:
    """An entry without its relative time, which depends on when the page was read."""
    return re.sub(r"just now|\d+ (?:s|min|h|d) ago", "", entry)


def _entries(text: str) -> list[str]:
    """The timeline's entries as text, newest first."""
    items = re.findall(r'<li class="entry kind-([a-z]+)">(.*?)</li>', text, re.S)
    return [
        f"{kind}: " + html.unescape(re.sub(r"<[^>]+>|\s+", " ", body)).strip()
        for kind, body in items
    ]


def test_the_timeline_tells_what_happened_with_who_and_why(
    live_app: Flask,
    controller: Controller,
    server: SpecServer,
    acme: OrgKey,
    make_org: Callable[..., OrgKey],
    database: Database,
) -> None:
    api = live_app.test_client()
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(live_app.test_client(), "admin@example.com")
    watch_id = _drifted_watch(api, admin, server, acme)
    page = f"/console/watches/{watch_id}"
    assert post(admin, f"{page}/incident/ack", page, note="on it <b>") == 302

    part = admin.get(f"/console/activity/part?object=watch:{watch_id}")
    assert part.status_code == 200
    entries = _entries(part.get_data(as_text=True))
    assert "Incident acknowledged" in entries[0] and "by console:admin@example.com" in entries[0]
    assert "on it <b>" in entries[0] and "<b>" not in part.get_data(as_text=True)  # escaped
    assert any(e.startswith("incident: ") and "Incident opened: 1 breaking" in e for e in entries)
    assert any(e.startswith("drift: ") and "Drift found: 1 breaking" in e for e in entries)
    # Each entry links to its object: the acknowledgement to the watch, the drift to its event.
    text = part.get_data(as_text=True)
    assert f'href="/console/watches/{watch_id}"' in text
    assert re.search(rf'href="/console/watches/{watch_id}/events/[^"]+"', text)

    # A baseline accepted, with its reason; the resolved incident stays in the timeline.
    assert post(admin, f"{page}/baseline", page, reason="refunds moved to v2") == 302
    after = _entries(admin.get(f"/console/activity?object=watch:{watch_id}").get_data(as_text=True))
    assert "Baseline accepted" in after[0] and "refunds moved to v2" in after[0]
    assert any("Incident acknowledged" in e for e in after)

    # An agent bound and killed: on the agent's timeline and the org's.
    assert (
        post(
            admin,
            "/console/agents",
            "/console/agents",
            key="billing-bot",
            watchId=watch_id,
            policy="production-guard",
        )
        == 302
    )
    assert (
        post(
            admin,
            "/console/agents/billing-bot/kill",
            "/console/agents/billing-bot",
            note="stop now",
        )
        == 302
    )
    agent = _entries(
        admin.get("/console/activity/part?object=agent:billing-bot").get_data(as_text=True)
    )
    assert "Agent killed" in agent[0] and "stop now" in agent[0]
    assert any("Agent created" in e for e in agent)
    assert any("Incident opened" in e for e in agent)  # its bound watch's
    org = admin.get("/console/activity").get_data(as_text=True)
    assert 'href="/console/agents/billing-bot"' in org

    # Filters: by kind, by time; unknown ones are a 400 page naming them.
    only = _entries(admin.get("/console/activity?kind=baseline").get_data(as_text=True))
    assert only and all(e.startswith("baseline: ") for e in only)
    both = _entries(admin.get("/console/activity?kind=agent&kind=drift").get_data(as_text=True))
    assert {e.split(":")[0] for e in both} == {"agent", "drift"}
    assert _entries(admin.get("/console/activity?until=2000-01-01").get_data(as_text=True)) == [
        "none: Nothing happened here yet that the filters let through."
    ]
    assert admin.get("/console/activity?kind=nope").status_code == 400
    assert admin.get("/console/activity?since=yesterday").status_code == 400
    assert admin.get("/console/activity?object=planet:x").status_code == 400
    assert admin.get("/console/activity?cursor=12~x").status_code == 400

    # Pages: one entry at a time, newest first, every entry once.
    seen: list[str] = []
    url: str | None = "/console/activity?limit=1"
    while url is not None and len(seen) < 50:
        text = admin.get(url).get_data(as_text=True)
        seen += _entries(text)
        found = re.search(r'href="([^"]+)" rel="next"', text)
        url = html.unescape(found.group(1)) if found else None
    everything = _entries(admin.get("/console/activity?limit=100").get_data(as_text=True))
    # The same entries, each once; their ages ("just now", "6 s ago") move while the pages load.
    assert [_ageless(e) for e in seen] == [_ageless(e) for e in everything]
    assert len(everything) >= 6

    # Another org's objects are 404, and its timeline does not show this org's.
    make_org("globex")
    make_user(database, "globex", "g@example.com")
    stranger = sign_in(live_app.test_client(), "g@example.com")
    assert stranger.get(f"/console/activity?object=watch:{watch_id}").status_code == 404
    assert stranger.get(f"/console/activity/part?object=watch:{watch_id}").status_code == 404
    assert stranger.get("/console/activity?object=agent:billing-bot").status_code == 404
    assert stranger.get(f"/console/live/watches/{watch_id}").status_code == 404
    assert stranger.get(f"{page}/contract").status_code == 404
    assert "payments" not in stranger.get("/console/activity").get_data(as_text=True)


def test_the_live_strip_follows_a_check_and_fails_closed(
    live_app: Flask,
    controller: Controller,
    server: SpecServer,
    acme: OrgKey,
    database: Database,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    api = live_app.test_client()
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(live_app.test_client(), "admin@example.com")
    url = server.set("/openapi.json", as_json(charges_spec()))
    watch_id = api.post(
        "/api/watches", json={"name": "payments", "url": url}, headers=acme.headers
    ).get_json()["id"]
    page = f"/console/watches/{watch_id}"
    assert post(admin, f"{page}/check", page) == 302
    shown = admin.get(page).get_data(as_text=True)
    assert f'hx-get="/console/live/watches/{watch_id}"' in shown
    first = admin.get(f"/console/live/watches/{watch_id}")
    assert first.status_code == 200 and "HX-Trigger" not in first.headers
    strip = first.get_data(as_text=True)
    assert "data-live-status>ok<" in strip and 'hx-swap-oob="outerHTML:h1 > .status"' in strip
    again = html.unescape(re.search(r'hx-get="([^"]+)"', strip).group(1))  # type: ignore[union-attr]
    assert "seen=" in again and "drawn=" in again
    # Nothing changed: no trigger. The contract drifts: the strip says so and fires the timeline.
    assert "HX-Trigger" not in admin.get(again).headers
    server.set("/openapi.json", as_json(charges_spec(refunds=False)))
    assert post(admin, f"{page}/check", page) == 302
    moved = admin.get(again)
    assert moved.headers["HX-Trigger"] == "dg-activity"
    text = moved.get_data(as_text=True)
    assert "data-live-status>drifted<" in text and "incident open" in text
    assert "Changed since this page was drawn" in text
    # The overview's, the agent's and the source's strips answer too.
    overview = admin.get("/console/live/overview").get_data(as_text=True)
    assert "1 watch" in overview and "1 drifted" in overview and "1 open incident" in overview
    # Without a session: 401 (never the sign-in page swapped into the strip).
    assert live_app.test_client().get(f"/console/live/watches/{watch_id}").status_code == 401

    # The store cannot be read: "unavailable" and an unknown badge, never the old "ok".
    def down(*_args: Any, **_kwargs: Any) -> Any:
        raise StoreUnavailable("unreachable")

    monkeypatch.setattr("controller.activity.service.get_watch", down)
    monkeypatch.setattr("controller.activity.service.read", down)
    failed = admin.get(again)
    assert failed.status_code == 200
    body = failed.get_data(as_text=True)
    assert "Live status unavailable" in body and "drifted" not in body and ">ok<" not in body
    assert '<span class="status unknown" hx-swap-oob="outerHTML:h1 > .status">unknown' in body
    part = admin.get(f"/console/activity/part?object=watch:{watch_id}").get_data(as_text=True)
    assert "Activity unavailable" in part


def test_a_source_timeline_shows_its_runs(
    repo: RepoBuilder,
    make_reconciler: Callable[..., tuple[object, object]],
    acme: OrgKey,
    database: Database,
) -> None:
    from web.app import create_app

    repo.commit({".driftgate/agents.yaml": AGENTS})
    reconciler, settings = make_reconciler({"name": "fleet", "org": "acme", "url": repo.url})
    run(reconciler, settings)  # type: ignore[arg-type]
    repo.commit({".driftgate/agents.yaml": AGENTS.replace("policy:", "polcy:", 1)}, message="bad")
    assert run(reconciler, settings).result == "stalled"  # type: ignore[arg-type]
    client = create_app(settings, database=database).test_client()  # type: ignore[arg-type]
    make_user(database, "acme", "admin@example.com")
    sign_in(client, "admin@example.com")
    source_page = client.get("/console/sources/fleet").get_data(as_text=True)
    assert "/console/activity/part?object=source:fleet" in source_page
    entries = _entries(
        client.get("/console/activity/part?object=source:fleet").get_data(as_text=True)
    )
    assert "reconcile: " in entries[0] and "stalled" in entries[0]
    assert any(": applied" in e for e in entries[1:])
    assert client.get("/console/activity/part?object=source:nope").status_code == 404
    live = client.get("/console/live/sources/fleet").get_data(as_text=True)
    assert "not Ready" in live


def test_the_contract_view_marks_what_changed(
    live_app: Flask,
    controller: Controller,
    server: SpecServer,
    acme: OrgKey,
    database: Database,
) -> None:
    api = live_app.test_client()
    make_user(database, "acme", "admin@example.com")
    admin = sign_in(live_app.test_client(), "admin@example.com")
    url = server.set("/openapi.json", as_json(charges_spec()))
    watch_id = api.post(
        "/api/watches", json={"name": "payments", "url": url}, headers=acme.headers
    ).get_json()["id"]
    contract = f"/console/watches/{watch_id}/contract"
    assert "No check has run yet" in admin.get(contract).get_data(as_text=True)
    page = f"/console/watches/{watch_id}"
    assert post(admin, f"{page}/check", page) == 302
    assert f'href="{contract}"' in admin.get(page).get_data(as_text=True)
    same = admin.get(contract).get_data(as_text=True)
    assert "The contract seen now is the baseline" in same
    server.set("/openapi.json", as_json(charges_spec(refunds=False, required=("id",))))
    assert post(admin, f"{page}/check", page) == 302
    text = admin.get(contract).get_data(as_text=True)
    items = {
        (side, mark, name)
        for side, body in re.findall(r'<h2 id="(now|baseline)-heading">(.*?)</section>', text, re.S)
        for mark, name in re.findall(r'<li class="item (\w+)">.*?<code>([^<]+)</code>', body, re.S)
    }
    removed = {(s, n) for s, m, n in items if m == "removed"}
    assert removed and all(s == "baseline" and "refunds" in n for s, n in removed)
    changed = {n for s, m, n in items if m == "changed"}
    assert changed and all("charges" in n for n in changed)
    assert "breaking" in text
    only = admin.get(f"{contract}?show=removed").get_data(as_text=True)
    assert "refunds" in only and 'class="item changed"' not in only
    assert admin.get(f"{contract}?show=everything").status_code == 400
