"""The console's destination forms (admins): add one through the form and the API lists it
with its secret encrypted, change it keeping the secret left empty, a refused value shows the
service's message and stores nothing, delete it once confirmed; viewers cannot."""

from __future__ import annotations

import re
from collections.abc import Callable
from html import unescape

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from controller.crypto import load_secret_box
from controller.destinations import store
from controller.settings import Settings
from controller.store.db import Database
from controller.store.models import Destination
from tests.conftest import OrgKey
from tests.factories import csrf_of, make_user, sign_in

ROUTING_KEY = "R0UT1NGKEY0123456789ABCDEFGHIJKL"
NEW_KEY = "N3WR0UT1NGKEY0123456789ABCDEFGHZ"
NEW = "/console/settings/destinations/new"


def _form(client: FlaskClient, page: str, path: str, **fields: str | list[str]) -> tuple[int, str]:
    """Post `fields` to `path` with the CSRF token of `page`: the status and the answer."""
    token = csrf_of(client.get(page).get_data(as_text=True))
    answer = client.post(path, data={"csrf_token": token, **fields})
    return answer.status_code, answer.get_data(as_text=True)


def _error(html: str) -> str:
    found = re.search(r'<p class="error" role="alert"[^>]*>(.*?)</p>', html, re.S)
    assert found is not None, html
    return unescape(found.group(1))


def _listed(client: FlaskClient, org: OrgKey) -> list[dict[str, object]]:
    answer = client.get("/api/org/destinations", headers=org.headers)
    assert answer.status_code == 200
    destinations: list[dict[str, object]] = answer.get_json()["destinations"]
    return destinations


def _rows(database: Database) -> list[Destination]:
    with database.session() as session:
        rows = list(session.scalars(select(Destination)))
        session.expunge_all()
        return rows


PAGERDUTY: dict[str, str | list[str]] = {
    "kind": "pagerduty",
    "name": "on-call",
    "enabled": "1",
    "settings.severity": "critical",
    "settings.url": "",
    "secrets.routingKey": ROUTING_KEY,
    "events": ["incident.open", "incident.resolved"],
    "severities": ["breaking"],
    "tags": "team:*\nteam:payments",
    "watchSets": "",
    "environments": "production",
    "groupSeconds": "60",
    "digest": "off",
}


def test_an_admin_adds_changes_and_deletes_a_destination_through_the_forms(
    app: Flask, acme: OrgKey, database: Database, settings: Settings
) -> None:
    make_user(database, acme.org_name, "admin@example.com")
    admin = sign_in(app.test_client(), "admin@example.com")
    page = admin.get("/console/settings").get_data(as_text=True)
    assert 'action="/console/settings/destinations/new"' in page

    form = admin.get(f"{NEW}?kind=pagerduty").get_data(as_text=True)
    assert 'name="secrets.routingKey" type="password"' in form
    assert '<option value="critical">critical</option>' in form
    # An on-call kind takes no digest: the select offers "off" alone.
    digest = re.search(r'<select id="digest".*?</select>', form, re.S)
    assert digest is not None and re.findall(r'value="(\w+)"', digest.group(0)) == ["off"]

    status, _ = _form(admin, NEW, "/console/settings/destinations", **PAGERDUTY)
    assert status == 302
    (listed,) = _listed(app.test_client(), acme)
    assert listed["name"] == "on-call" and listed["kind"] == "pagerduty"
    assert listed["settings"] == {
        "url": "https://events.pagerduty.com/v2/enqueue",
        "severity": "critical",
    }
    assert listed["secrets"] == {"routingKey": "…IJKL"}
    assert listed["routing"] == {
        "events": ["incident.open", "incident.resolved"],
        "severities": ["breaking"],
        "tags": ["team:*", "team:payments"],
        "watchSets": [],
        "environments": ["production"],
    }
    assert listed["groupSeconds"] == 60 and listed["digest"] == "off" and listed["enabled"]
    # Stored encrypted: not in the row's text, only in what the server's key opens.
    box = load_secret_box(settings)
    (row,) = _rows(database)
    assert row.secrets_ciphertext and ROUTING_KEY not in row.secrets_ciphertext
    assert store.secrets_of(box, row) == {"routing_key": ROUTING_KEY}
    edit = f"/console/settings/destinations/{listed['id']}"
    for shown in (admin.get("/console/settings"), admin.get(edit)):
        html = shown.get_data(as_text=True)
        assert shown.status_code == 200 and "on-call" in html and ROUTING_KEY not in html
    edit_page = admin.get(edit).get_data(as_text=True)
    assert "…IJKL" in edit_page and 'value="team:*' not in edit_page  # a textarea, not inputs
    assert "team:*\nteam:payments</textarea>" in edit_page

    # A change with the secret left empty keeps the stored one.
    changed = {**PAGERDUTY, "name": "payments on-call", "settings.severity": "warning"}
    changed.update({"secrets.routingKey": "", "groupSeconds": "", "tags": "team:payments"})
    status, _ = _form(admin, edit, edit, **changed)
    assert status == 302
    (listed,) = _listed(app.test_client(), acme)
    assert listed["name"] == "payments on-call"
    assert listed["settings"]["severity"] == "warning"  # type: ignore[index]
    assert listed["routing"]["tags"] == ["team:payments"]  # type: ignore[index]
    assert listed["groupSeconds"] is None and listed["secrets"] == {"routingKey": "…IJKL"}
    (row,) = _rows(database)
    assert store.secrets_of(box, row) == {"routing_key": ROUTING_KEY}
    # A secret typed in replaces it.
    status, _ = _form(admin, edit, edit, **{**changed, "secrets.routingKey": NEW_KEY})
    assert status == 302
    (row,) = _rows(database)
    assert store.secrets_of(box, row) == {"routing_key": NEW_KEY}
    assert _listed(app.test_client(), acme)[0]["secrets"] == {"routingKey": "…FGHZ"}

    # Delete: refused until the box is ticked, then gone.
    status, html = _form(admin, edit, f"{edit}/delete")
    assert status == 422 and "tick the box to confirm" in html
    assert len(_listed(app.test_client(), acme)) == 1
    status, _ = _form(admin, edit, f"{edit}/delete", confirm="yes")
    assert status == 302
    assert _listed(app.test_client(), acme) == [] and _rows(database) == []
    assert admin.get(edit).status_code == 404


def test_a_refused_form_shows_the_services_message_and_stores_nothing(
    app: Flask, acme: OrgKey, database: Database, settings: Settings
) -> None:
    make_user(database, acme.org_name, "admin@example.com")
    admin = sign_in(app.test_client(), "admin@example.com")
    create = "/console/settings/destinations"

    # A secret that is not a URL: the kind's model names the field.
    discord = {"kind": "discord", "name": "chat", "enabled": "1", "secrets.url": "not a url"}
    status, html = _form(admin, f"{NEW}?kind=discord", create, **discord)
    assert status == 422
    assert _error(html).startswith("secrets: /secrets/url:")
    assert 'id="secrets-url-error"' in html and 'aria-invalid="true"' in html
    assert "not a url" not in html  # a secret is never drawn back, even a wrong one
    assert 'value="chat"' in html  # the rest of what was typed stays
    # No secrets at all; a digest the kind cannot take; a window out of range.
    status, html = _form(admin, NEW, create, **{**PAGERDUTY, "secrets.routingKey": ""})
    assert status == 422 and "needs its secrets (routingKey)" in _error(html)
    status, html = _form(admin, NEW, create, **{**PAGERDUTY, "digest": "daily"})
    assert status == 422 and "cannot take a digest" in _error(html)
    status, html = _form(admin, NEW, create, **{**PAGERDUTY, "groupSeconds": "90000"})
    assert status == 400 and "/groupSeconds" in _error(html)
    assert 'id="groupSeconds-error"' in html
    status, html = _form(admin, NEW, create, **{**PAGERDUTY, "kind": "carrier-pigeon"})
    assert status == 400 and "/kind" in _error(html)
    assert _listed(app.test_client(), acme) == [] and _rows(database) == []

    # A taken name on a change: 409 with the message, the stored one as it was.
    assert _form(admin, NEW, create, **PAGERDUTY)[0] == 302
    assert _form(admin, NEW, create, **{**PAGERDUTY, "name": "second"})[0] == 302
    second = next(d for d in _listed(app.test_client(), acme) if d["name"] == "second")
    edit = f"/console/settings/destinations/{second['id']}"
    status, html = _form(admin, edit, edit, **{**PAGERDUTY, "secrets.routingKey": NEW_KEY})
    assert status == 409 and "named 'on-call' already" in _error(html)
    assert NEW_KEY not in html
    box = load_secret_box(settings)
    row = next(r for r in _rows(database) if r.id == second["id"])
    assert row.name == "second" and store.secrets_of(box, row) == {"routing_key": ROUTING_KEY}


def test_a_viewer_cannot_and_another_orgs_destination_is_not_found(
    app: Flask, acme: OrgKey, database: Database, make_org: Callable[..., OrgKey]
) -> None:
    make_user(database, acme.org_name, "admin@example.com")
    make_user(database, acme.org_name, "viewer@example.com", role="viewer")
    admin = sign_in(app.test_client(), "admin@example.com")
    assert _form(admin, NEW, "/console/settings/destinations", **PAGERDUTY)[0] == 302
    (listed,) = _listed(app.test_client(), acme)
    edit = f"/console/settings/destinations/{listed['id']}"

    viewer = sign_in(app.test_client(), "viewer@example.com")
    page = viewer.get("/console/settings").get_data(as_text=True)
    assert "on-call" in page and "/console/settings/destinations/new" not in page
    assert edit not in page
    assert viewer.get(NEW).status_code == 403 and viewer.get(edit).status_code == 403
    token = csrf_of(page)
    for path, fields in (
        ("/console/settings/destinations", {**PAGERDUTY, "name": "mine"}),
        (edit, {**PAGERDUTY, "name": "mine"}),
        (f"{edit}/delete", {"confirm": "yes"}),
    ):
        answer = viewer.post(path, data={"csrf_token": token, **fields})
        assert answer.status_code == 403, path
    # Without the form's CSRF token, an admin is refused too.
    answer = admin.post(f"{edit}/delete", data={"confirm": "yes"})
    assert answer.status_code == 403
    (still,) = _listed(app.test_client(), acme)
    assert still["name"] == "on-call"

    other = make_org("globex")
    make_user(database, other.org_name, "other@example.com")
    stranger = sign_in(app.test_client(), "other@example.com")
    assert stranger.get(edit).status_code == 404
    status, _ = _form(stranger, "/console/settings", f"{edit}/delete", confirm="yes")
    assert status == 404
    assert len(_listed(app.test_client(), acme)) == 1
