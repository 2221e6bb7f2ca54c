"""The console answers bad input with a 400 page naming what is wrong, never a 500 (issue 31,
point 6): list filters that are not values the list knows, NUL characters in paths, queries
and forms (Postgres text cannot hold NUL; the suite runs this on both stores), and a
sign-in's `next` that is not a plain console path (a CR or LF would end the `Location`
header: a header injection, which werkzeug refuses by raising)."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from controller.store.db import Database
from tests.conftest import OrgKey
from tests.factories import PASSWORD, csrf_of, make_user, sign_in


@pytest.fixture
def admin(client: FlaskClient, acme: OrgKey, database: Database) -> FlaskClient:
    make_user(database, "acme", "admin@example.com")
    return sign_in(client, "admin@example.com")


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("type=x", "/watchType"),
        ("status=x", "/driftStatus"),
        ("status=paused", "/driftStatus"),  # the API's word is `disabled`
        ("cursor=x", "/cursor"),
        ("tag=%20spaced", "/tag/0"),
        ("vendor=a%09b", "/vendor"),
    ],
)
def test_a_filter_the_watch_list_does_not_know_is_a_400_page(
    admin: FlaskClient, query: str, field: str
) -> None:
    answer = admin.get(f"/console/watches?{query}")
    assert answer.status_code == 400
    assert answer.mimetype == "text/html"
    assert field in answer.text  # the message names the field


def test_the_status_filter_offers_what_the_list_accepts(
    admin: FlaskClient, client: FlaskClient, acme: OrgKey
) -> None:
    created = client.post(
        "/api/watches",
        json={"name": "paused-one", "url": "https://api.example.com/openapi.json"},
        headers=acme.headers,
    )
    watch_id = created.get_json()["id"]
    assert client.post(f"/api/watches/{watch_id}/pause", headers=acme.headers).status_code == 200
    page = admin.get("/console/watches").text
    offered = page.split('name="status"')[1].split("</select>")[0]
    for value in ("ok", "drifted", "error", "disabled", "never_run"):
        assert f'value="{value}"' in offered
        assert admin.get(f"/console/watches?status={value}").status_code == 200
    assert "paused-one" in admin.get("/console/watches?status=disabled").text


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/console/watches/a%00b", 404),
        ("/console/agents/a%00b", 404),
        ("/console/events/a%00b", 404),
        ("/console/incidents/a%00b", 404),
        ("/console/?dashboard=a%00b", 400),
        ("/console/watches?vendor=a%00b", 400),
        ("/console/ask?q=a%00b", 400),
        ("/console/sources/fleet/file?revision=a%00b&file=x", 400),
    ],
)
def test_nul_in_a_path_or_query_names_nothing(admin: FlaskClient, path: str, status: int) -> None:
    assert admin.get(path).status_code == status


def test_nul_in_a_form_is_refused_before_anything_is_looked_up(admin: FlaskClient) -> None:
    token = csrf_of(admin.get("/console/agents").text)
    answer = admin.post(
        "/console/agents",
        data={"csrf_token": token, "key": "bot", "watchId": "a\u0000b", "policy": "notify-only"},
    )
    assert answer.status_code == 400 and "watchId" in answer.text


@pytest.mark.parametrize(
    ("target", "lands"),
    [
        ("/console/watches?status=ok", "/console/watches?status=ok"),
        ("/console/\r\nSet-Cookie: injected=1", "/console/"),
        ("/console/%0d%0aSet-Cookie:%20injected=1", "/console/%0d%0aSet-Cookie:%20injected=1"),
        ("//evil.example/console", "/console/"),
        ("https://evil.example/console", "/console/"),
        ("/console\\..\\x", "/console/"),
        ("/consoles", "/console/"),
    ],
)
def test_sign_in_goes_only_to_a_plain_console_path(
    client: FlaskClient, acme: OrgKey, database: Database, target: str, lands: str
) -> None:
    make_user(database, "acme", "admin@example.com")
    form = client.get("/console/sign-in").text
    answer = client.post(
        "/console/sign-in",
        data={
            "email": "admin@example.com",
            "password": PASSWORD,
            "csrf_token": csrf_of(form),
            "next": target,
        },
    )
    assert answer.status_code == 302
    assert answer.headers["Location"] == lands  # still encoded: never a header of its own
    assert "injected" not in " ".join(answer.headers.getlist("Set-Cookie"))
    # Signed in, the sign-in page sends the browser on the same way.
    again = client.get("/console/sign-in", query_string={"next": target})
    assert again.status_code == 302 and again.headers["Location"] == lands
