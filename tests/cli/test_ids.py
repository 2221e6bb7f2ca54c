"""A unique prefix of an id wherever the CLI takes an id (issue 34, point 7): watches, drift
events and preflight's watches through a live server's API, keys and orgs through the store;
an ambiguous prefix is exit 2 with the candidates; another org's ids are never candidates."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result
from sqlalchemy import update

from cli.main import main
from controller.store.db import Database
from controller.store.models import ApiKey, DriftEvent, Watch
from controller.store.snapshots import encode_changes
from tests.conftest import SECRET, OrgKey
from tests.servers import WsgiServer

SPEC_URL = "https://api.example.com/openapi.json"
CHARGES = "aaaa1111-0000-4000-8000-000000000001"
REFUNDS = "aaaa2222-0000-4000-8000-000000000002"
THEIRS = "aaaa3333-0000-4000-8000-000000000003"  # the other org's watch
EVENT_1 = "bbbb1111-0000-4000-8000-000000000001"
EVENT_2 = "bbbb2222-0000-4000-8000-000000000002"
EVENT_THEIRS = "bbbb3333-0000-4000-8000-000000000003"


@pytest.fixture
def other(make_org: Callable[..., OrgKey]) -> OrgKey:
    return make_org("other", "pro")


def create_watch(base: str, org: OrgKey, name: str, watch_id: str, database: Database) -> None:
    """A watch created through the API, then given a chosen id (prefixes to share)."""
    answer = httpx.post(
        f"{base}/api/watches",
        json={"name": name, "url": f"{SPEC_URL}?{name}"},
        headers=org.headers,
        timeout=10,
    )
    assert answer.status_code == 201, answer.text
    with database.transaction() as session:
        session.execute(update(Watch).where(Watch.id == answer.json()["id"]).values(id=watch_id))


def add_event(database: Database, org: OrgKey, watch_id: str, event_id: str) -> None:
    with database.transaction() as session:
        session.add(
            DriftEvent(
                id=event_id,
                org_id=org.org_id,
                watch_id=watch_id,
                breaking_count=1,
                changes=encode_changes([]),
            )
        )


@pytest.fixture
def fleet(api_server: WsgiServer, database: Database, acme: OrgKey, other: OrgKey) -> str:
    create_watch(api_server.url, acme, "charges", CHARGES, database)
    create_watch(api_server.url, acme, "refunds", REFUNDS, database)
    create_watch(api_server.url, other, "theirs", THEIRS, database)
    add_event(database, acme, CHARGES, EVENT_1)
    add_event(database, acme, REFUNDS, EVENT_2)
    add_event(database, other, THEIRS, EVENT_THEIRS)
    return api_server.url


def remote(base: str, org: OrgKey, *args: str) -> Result:
    env = {"DRIFTGATE_URL": base, "DRIFTGATE_API_KEY": org.key, "DRIFTGATE_CONFIG": None}
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def test_watches_by_id_prefix(fleet: str, acme: OrgKey) -> None:
    shown = remote(fleet, acme, "watches", "show", "aaaa1")
    assert shown.exit_code == 0, shown.stderr
    assert shown.output.startswith(f"charges ({CHARGES})\n")
    assert f"({REFUNDS})" in remote(fleet, acme, "watches", "pause", "AAAA2222").output

    several = remote(fleet, acme, "watches", "show", "aaaa")
    assert several.exit_code == 2
    assert several.stderr == (
        f"driftgate: error: the id prefix 'aaaa' names 2 watches: {CHARGES} (charges), "
        f"{REFUNDS} (refunds); type more of the id\n"
    )
    theirs = remote(fleet, acme, "watches", "show", "aaaa3")
    assert (theirs.exit_code, theirs.stderr) == (
        2,
        "driftgate: error: no watch with id or name 'aaaa3' in this org (HTTP 404)\n",
    )


def test_drift_events_by_id_prefix_and_listed_with_watch_names(
    fleet: str, acme: OrgKey, other: OrgKey
) -> None:
    shown = remote(fleet, acme, "drift", "show", "bbbb1")
    assert shown.exit_code == 0, shown.stderr
    assert shown.output.startswith(f"drift event {EVENT_1} at ")
    several = remote(fleet, acme, "drift", "show", "bbbb")
    assert several.exit_code == 2
    assert several.stderr.startswith(
        "driftgate: error: the id prefix 'bbbb' names 2 drift events: "
    )
    assert f"{EVENT_1} (charges, " in several.stderr and f"{EVENT_2} (refunds, " in several.stderr
    assert EVENT_THEIRS not in several.stderr
    theirs = remote(fleet, acme, "drift", "show", "bbbb3")
    assert (theirs.exit_code, theirs.stderr) == (
        2,
        "driftgate: error: no drift event with id 'bbbb3' in this org (HTTP 404)\n",
    )
    assert remote(fleet, other, "drift", "show", "bbbb").output.startswith(
        f"drift event {EVENT_THEIRS} at "
    )

    table = remote(fleet, acme, "drift", "list").output.splitlines()
    assert table[0].split() == ["ID", "DETECTED", "WATCH", "CHANGES"]
    assert sorted(line.split()[2] for line in table[1:]) == ["charges", "refunds"]
    listed = json.loads(remote(fleet, acme, "drift", "list", "--format", "json").output)
    assert {(e["id"], e["watchName"]) for e in listed["events"]} == {
        (EVENT_1, "charges"),
        (EVENT_2, "refunds"),
    }
    filtered = json.loads(
        remote(fleet, acme, "drift", "list", "--watch", "aaaa2", "--format", "json").output
    )
    assert [e["id"] for e in filtered["events"]] == [EVENT_2]


def test_the_api_filters_events_by_id_prefix(fleet: str, acme: OrgKey, other: OrgKey) -> None:
    def ask(org: OrgKey, **params: Any) -> httpx.Response:
        return httpx.get(f"{fleet}/api/drift", params=params, headers=org.headers, timeout=10)

    assert [e["id"] for e in ask(acme, idPrefix="BBBB2").json()["events"]] == [EVENT_2]
    assert [e["id"] for e in ask(other, idPrefix="bbbb").json()["events"]] == [EVENT_THEIRS]
    assert ask(acme, idPrefix="bbbb", watchId=CHARGES).json()["events"][0]["id"] == EVENT_1
    assert ask(acme, idPrefix="cccc").json() == {"events": [], "nextCursor": None}
    refused = ask(acme, idPrefix="b%")
    assert refused.status_code == 400
    assert refused.json()["error"] == "validation_error"


def test_preflight_watches_by_id_prefix(fleet: str, acme: OrgKey) -> None:
    asked = remote(fleet, acme, "preflight", "--watch", "aaaa1", "--format", "json")
    assert asked.exit_code == 1  # never checked: blocked
    assert [b["watchId"] for b in json.loads(asked.output)["blocked"]] == [CHARGES]
    several = remote(fleet, acme, "preflight", "--watch", "aaaa")
    assert several.exit_code == 2
    assert "names 2 watches" in several.stderr


@pytest.fixture
def store_cli(tmp_path: Any, database: Database) -> Callable[..., Result]:
    env = {
        "DRIFTGATE_DATABASE_URL": database.url,
        "DRIFTGATE_DATA_DIR": str(tmp_path / "data"),
        "DRIFTGATE_SECRET_KEY": SECRET,
        "DRIFTGATE_CONFIG": None,
    }

    def invoke(*args: str) -> Result:
        return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)

    return invoke


def test_keys_and_orgs_by_id_prefix(
    store_cli: Callable[..., Result], database: Database, acme: OrgKey, other: OrgKey
) -> None:
    mine, theirs = "cccc1111-0000-4000-8000-000000000001", "cccc2222-0000-4000-8000-000000000002"
    with database.transaction() as session:
        session.execute(update(ApiKey).where(ApiKey.id == acme.key_id).values(id=mine))
        session.execute(update(ApiKey).where(ApiKey.id == other.key_id).values(id=theirs))

    several = store_cli("keys", "revoke", "cccc")
    assert several.exit_code == 2
    assert several.stderr == (
        f"driftgate: error: the id prefix 'cccc' names 2 keys: {mine} (test), {theirs} (test); "
        "type more of the id\n"
    )
    elsewhere = store_cli("keys", "revoke", "cccc1", "--org", "other")
    assert (elsewhere.exit_code, elsewhere.stderr) == (
        2,
        "driftgate: error: no API key with id 'cccc1' in this org\n",
    )
    revoked = store_cli("keys", "revoke", "cccc", "--org", "acme")
    assert revoked.exit_code == 0, revoked.stderr
    assert revoked.output.startswith(f"revoked key {mine} ")

    moved = store_cli("orgs", "set-plan", other.org_id[:8], "team")
    assert moved.exit_code == 0, moved.stderr
    assert moved.output == "org other is on plan team\n"
    assert store_cli("orgs", "set-plan", "ffff", "team").stderr == (
        "driftgate: error: no org named 'ffff'\n"
    )
