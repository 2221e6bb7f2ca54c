"""Values the fetcher cannot send: refused when a watch, template or destination is written
(422 naming the field), and a failed check, never a crash, when one still reaches a check
(a row stored before these rules, a name that does not resolve)."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from controller.crypto import load_secret_box
from controller.scheduler import Controller
from controller.settings import Settings
from controller.store.db import Database
from controller.store.models import Job, Template, Watch
from controller.store.watch_rows import set_headers
from tests.conftest import OrgKey
from tests.processes import wait_until
from tests.servers import SpecServer
from tests.specs import as_json, charges_spec

GOOD_URL = "https://api.example.com/openapi.json"
BAD_URLS = {
    "octal IPv4": "http://0177.0.0.1/openapi.json",
    "IPv4 out of range": "http://999.1.1.1/openapi.json",
    "short IPv4": "http://1.2.3/openapi.json",
    "invalid A-label": "http://xn--zz.com/openapi.json",
    "label over 63": f"http://{'a' * 64}.example.com/openapi.json",
    "empty label": "http://api..example.com/openapi.json",
}
BAD_VALUES = {
    "not ASCII": "café",
    "trailing space": "Bearer abc ",
    "control character": "a\x07b",
}


def count(database: Database, model: Any) -> int:
    with database.session() as session:
        return int(session.scalar(select(func.count()).select_from(model)) or 0)


def assert_refused(response: Any, path: str) -> None:
    assert response.status_code == 422, response.json
    assert response.json["error"] == "validation_error"
    assert path in [detail["path"] for detail in response.json["details"]], response.json


@pytest.mark.parametrize("url", BAD_URLS.values(), ids=BAD_URLS.keys())
def test_create_refuses_a_host_that_cannot_be_fetched(
    client: FlaskClient, acme: OrgKey, database: Database, url: str
) -> None:
    body = {"name": "w", "url": url, "watchType": "openapi"}
    assert_refused(client.post("/api/watches", json=body, headers=acme.headers), "/url")
    hook = {"name": "w", "url": GOOD_URL, "webhookUrl": url}
    assert_refused(client.post("/api/watches", json=hook, headers=acme.headers), "/webhookUrl")
    assert count(database, Watch) == 0


@pytest.mark.parametrize("value", BAD_VALUES.values(), ids=BAD_VALUES.keys())
def test_create_refuses_a_header_value_that_cannot_be_sent(
    client: FlaskClient, acme: OrgKey, database: Database, value: str
) -> None:
    body = {"name": "w", "url": GOOD_URL, "headers": {"X-Ok": "fine", "X-Note": value}}
    response = client.post("/api/watches", json=body, headers=acme.headers)
    assert_refused(response, "/headers/X-Note")
    assert [d["path"] for d in response.json["details"]] == ["/headers/X-Note"]
    assert value.strip() not in response.get_data(as_text=True)
    assert count(database, Watch) == 0


def test_update_refuses_them_and_changes_nothing(client: FlaskClient, acme: OrgKey) -> None:
    created = client.post(
        "/api/watches", json={"name": "w", "url": GOOD_URL}, headers=acme.headers
    ).json
    path = f"/api/watches/{created['id']}"
    bad_url = client.patch(path, json={"url": BAD_URLS["octal IPv4"]}, headers=acme.headers)
    assert_refused(bad_url, "/url")
    bad_header = client.patch(path, json={"headers": {"X-Note": "café"}}, headers=acme.headers)
    assert_refused(bad_header, "/headers/X-Note")
    after = client.get(path, headers=acme.headers).json
    assert after["url"] == GOOD_URL and after["headers"] == {}
    assert after["updatedAt"] == created["updatedAt"]


def test_templates_launches_and_destinations_refuse_them(
    client: FlaskClient, acme: OrgKey, database: Database
) -> None:
    h = acme.headers
    template = {"name": "t", "watchType": "openapi", "urlPattern": BAD_URLS["invalid A-label"]}
    assert_refused(client.post("/api/templates", json=template, headers=h), "/urlPattern")
    with_header = {"name": "t", "watchType": "openapi", "urlPattern": "https://{host}/x.json"}
    bad_header = {**with_header, "headers": {"Private-Token": "café"}}
    assert_refused(
        client.post("/api/templates", json=bad_header, headers=h), "/headers/Private-Token"
    )
    assert count(database, Template) == 0
    assert client.post("/api/templates", json=with_header, headers=h).status_code == 201
    launch = {"templateId": "t", "url": BAD_URLS["IPv4 out of range"]}
    assert_refused(client.post("/api/watches/from-template", json=launch, headers=h), "/url")
    assert count(database, Watch) == 0
    destination = {"destination": {"kind": "webhook", "url": BAD_URLS["label over 63"]}}
    response = client.put("/api/org/notification-defaults", json=destination, headers=h)
    assert_refused(response, "/destination/url")


# Checks: whatever reaches the fetcher ends as a failed check with a failure class.


def settled(database: Database, watch_id: str) -> bool:
    """The watch was checked, the ticker has scheduled its next slot, and no check of it waits
    or runs (the ticker may have queued a periodic one while the first ran)."""
    with database.session() as session:
        watch = session.get(Watch, watch_id)
        pending = session.scalar(
            select(func.count())
            .select_from(Job)
            .where(Job.key == f"check:{watch_id}", Job.status.in_(("queued", "running")))
        )
        return (
            watch is not None
            and watch.last_checked_at is not None
            and watch.next_check_at is not None
            and pending == 0
        )


STORED: list[tuple[str, str, dict[str, str], str]] = [
    # (watch type, URL, headers, failure class); "{spec}" is a working loopback spec URL
    ("openapi", "{spec}", {"X-Note": "café-0123456789"}, "http_error"),
    ("openapi", BAD_URLS["octal IPv4"], {}, "http_error"),
    ("openapi", BAD_URLS["IPv4 out of range"], {}, "http_error"),
    ("openapi", BAD_URLS["invalid A-label"], {}, "http_error"),
    ("openapi", BAD_URLS["label over 63"], {}, "http_error"),
    ("mcp", "http://0177.0.0.1/mcp", {}, "http_error"),
    ("mcp", "{spec}", {"Private-Token": "tok\r\nX-Injected: 1"}, "http_error"),
    ("openapi", "http://no-such-host.invalid/openapi.json", {}, "connect_error"),
]


@pytest.mark.parametrize(
    ("watch_type", "url", "headers", "failure_class"),
    STORED,
    ids=["header", "octal", "range", "idna", "label", "mcp-octal", "mcp-header", "dns"],
)
def test_a_check_of_a_stored_unsendable_value_fails_with_a_class(
    live_app: Flask,
    live_settings: Settings,
    acme: OrgKey,
    server: SpecServer,
    controller: Controller,
    database: Database,
    watch_type: str,
    url: str,
    headers: dict[str, str],
    failure_class: str,
) -> None:
    client = live_app.test_client()
    spec = server.set("/openapi.json", as_json(charges_spec()))
    created = client.post(
        "/api/watches",
        json={"name": "w", "url": spec, "watchType": watch_type},
        headers=acme.headers,
    )
    assert created.status_code == 201
    watch_id = created.json["id"]
    # The running controller checks a new watch at once; let that check (and any the ticker
    # queued meanwhile) finish, so the only request below can be the one this test makes.
    wait_until(lambda: settled(database, watch_id))
    server.requests.clear()
    # As a row written before these rules: straight into the store.
    with database.transaction() as session:
        watch = session.get(Watch, watch_id)
        assert watch is not None
        watch.url = url.format(spec=spec)
        set_headers(watch, headers, load_secret_box(live_settings))

    answer = client.post(f"/api/watches/{watch_id}/check?wait=60", headers=acme.headers)
    assert answer.status_code == 200, answer.json
    assert answer.json["status"] == "done"
    assert answer.json["result"]["outcome"] == "error"
    assert answer.json["result"]["failureClass"] == failure_class
    watch_out = answer.json["watch"]
    assert watch_out["driftStatus"] == "error" and watch_out["failureClass"] == failure_class
    assert watch_out["lastError"] and watch_out["lastCheckStatus"] == "error"
    for value in headers.values():
        assert value not in answer.get_data(as_text=True)
        assert value[:8] not in watch_out["lastError"]
    if headers:
        assert server.requests == []  # refused before anything was sent
