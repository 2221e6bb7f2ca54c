"""Upgrading a database that holds data (issue 43, point 5): a database built at an earlier
migration head, filled with a row in every table it has (written with the column set and
types that release's code wrote), upgraded to head, keeps every value it held, and the
current code reads it: every row loads through the models, the API serves the watch, its
drift event with its changes, its incident and agent, and the stored secret header still
decrypts.

The earlier heads (`EARLIER_HEADS`) are chosen so that every table carries data through the
migrations after it, and each migration that rewrites data or rebuilds tables runs over
some: 0001 (the first schema: orgs, keys, watches, audit; its data goes through every
migration), 0004 (before 0005's triggers and the rebuild of `watches`), 0010 (before 0011
adds `vendor` and rebuilds `watches`), 0014 (before 0015 rewrites `github_installations`),
0017 (before 0018's flap columns on incidents, watches and the outbox) and 0024, the
previous head: the step every rolling upgrade takes. Each costs about a second on SQLite;
every revision would be twenty.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from controller.crypto import SecretBox
from controller.store import migrate
from controller.store.db import Database
from controller.store.models import Base, Watch
from tests.conftest import SECRET, make_settings
from tests.store.conftest import (
    API_KEY,
    EVENT_ID,
    HEADERS,
    INCIDENT_ID,
    WATCH_ID,
    columns_at,
    representative_rows,
    tables_as_of,
)

EARLIER_HEADS = ("0001", "0004", "0010", "0014", "0017", "0024")


def test_the_earlier_heads_are_revisions_before_head() -> None:
    history = migrate.history()
    assert set(EARLIER_HEADS) <= set(history[:-1])
    assert EARLIER_HEADS[-1] == history[-2]  # the previous head is always among them


def read_back(database: Database, tables: dict[str, Any], rows: dict[str, dict[str, Any]]) -> Any:
    """Every inserted row, read with the same column set and types it was written with."""
    found = {}
    with database.engine.connect() as connection:
        for name, table in tables.items():
            columns = [table.c[c] for c in rows[name]]
            found[name] = [tuple(r) for r in connection.execute(select(*columns))]
    return found


@pytest.mark.parametrize("revision", EARLIER_HEADS)
def test_data_written_at_an_earlier_head_survives_the_upgrade(
    empty_database: Database, revision: str, tmp_path: Any
) -> None:
    database = empty_database
    migrate.upgrade(database, revision)
    with database.engine.begin() as connection:
        present = columns_at(connection)
        tables = tables_as_of(present)
        rows = representative_rows(present)
        for name, table in tables.items():
            connection.execute(table.insert().values(**rows[name]))
    assert set(tables) == set(present)  # no table of an old release is unknown to the models
    before = read_back(database, tables, rows)
    # One row each (the run gate's triggers add their own rows to gate_events).
    assert all(found for found in before.values())

    assert migrate.upgrade(database) == migrate.head_revision()
    assert read_back(database, tables, rows) == before

    # Every row of every table loads through the current models.
    with database.session() as session:
        for mapper in Base.registry.mappers:
            loaded = session.scalars(select(mapper.class_)).all()
            if mapper.local_table.name in tables:
                assert loaded, mapper.class_.__name__
        watch = session.get(Watch, WATCH_ID)
        assert watch is not None and watch.headers_ciphertext is not None
        assert SecretBox([SECRET]).decrypt_json(watch.headers_ciphertext) == HEADERS

    # And through the API, as a client of the upgraded server sees it.
    from web.app import create_app

    app = create_app(make_settings(tmp_path, database_url=database.url), database=database)
    client = app.test_client()
    auth = {"Authorization": f"Bearer {API_KEY}"}
    me = client.get("/api/me", headers=auth)
    assert me.status_code == 200, me.get_json()
    assert (me.get_json()["org"], me.get_json()["products"]) == ("acme", ["replay_cloud"])
    watches = client.get("/api/watches", headers=auth).get_json()["watches"]
    assert [(w["id"], w["driftStatus"], sorted(w["headers"])) for w in watches] == [
        (WATCH_ID, "drifted", ["Authorization"])
    ]
    if "watch_tags" in tables:
        assert watches[0]["tags"] == ["team:pay"]
    if "drift_events" in tables:
        event = client.get(f"/api/drift/events/{EVENT_ID}", headers=auth).get_json()
        assert event["counts"]["breaking"] >= 1 and event["changes"], event
        assert {c["severity"] for c in event["changes"]} >= {"breaking"}
        incident = client.get(f"/api/incidents/{INCIDENT_ID}", headers=auth).get_json()
        assert incident["status"] == "open", incident
    if "agents" in tables:
        agent = client.get("/api/agents/billing-agent/status", headers=auth)
        assert agent.status_code == 200, agent.get_json()
        assert WATCH_ID in str(agent.get_json())  # its binding to the watch came through
