"""What the store's tests share: an empty database (no migration run) on this run's backend,
and representative rows for every table a revision has, built from the models (one row per
table, foreign keys pointing at the rows of their parents; semantic columns set to values
the services read, every other column to a plain value of its type)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Connection,
    Date,
    Double,
    Float,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    inspect,
    select,
    text,
)
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from controller.crypto import SecretBox, hash_token
from controller.diffs.openapi import diff_openapi
from controller.store.db import Database
from controller.store.models import Base
from controller.store.snapshots import count_changes, encode_changes, encode_document
from controller.store.types import JSONType, UTCDateTime
from tests.conftest import ON_POSTGRES, SECRET, TEST_DB_URL
from tests.specs import charges_spec


@pytest.fixture
def empty_database(tmp_path: Path) -> Iterator[Database]:
    if not ON_POSTGRES:
        database = Database(f"sqlite:///{tmp_path / 'empty.db'}")
        yield database
        database.dispose()
        return
    admin = create_engine(TEST_DB_URL, isolation_level="AUTOCOMMIT")
    name = f"driftgate_empty_{uuid.uuid4().hex[:8]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    database = Database(
        make_url(TEST_DB_URL).set(database=name).render_as_string(hide_password=False)
    )
    yield database
    database.dispose()
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


# Representative rows

API_KEY = "dg_" + "k" * 40  # the secret of the org's API key row
ORG_ID = "0b7d9d9e-0000-4000-8000-000000000001"
WATCH_ID = "0b7d9d9e-0000-4000-8000-000000000002"
EVENT_ID = "0b7d9d9e-0000-4000-8000-000000000003"
INCIDENT_ID = "0b7d9d9e-0000-4000-8000-000000000004"
SNAPSHOT_ID = "0b7d9d9e-0000-4000-8000-000000000005"
AGENT_ID = "0b7d9d9e-0000-4000-8000-000000000006"
WHEN = datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)
HEADERS = {"Authorization": "Bearer vendor-token"}


def overrides() -> dict[str, dict[str, Any]]:
    """The values the services read with meaning: a drifted watch with a stored secret
    header, its snapshot, a drift event with real changes, the open incident, an agent bound
    to the watch, and an API key the tests authenticate with."""
    box = SecretBox([SECRET])
    base, changed = charges_spec(), charges_spec(refunds=False)
    changes = diff_openapi(base, changed)
    counts = count_changes(changes)
    return {
        "orgs": {"id": ORG_ID, "name": "acme", "plan": "pro", "products": ["replay_cloud"]},
        "api_keys": {"key_hash": hash_token(API_KEY), "hint": API_KEY[-4:], "revoked_at": None},
        "watches": {
            "id": WATCH_ID,
            "name": "charges",
            "watch_type": "openapi",
            "url": "https://api.example.com/charges.json",
            "method": None,
            "request_body": None,
            "drift_status": "drifted",
            "interval_minutes": 15,
            "headers_ciphertext": box.encrypt_json(HEADERS),
            "header_names": sorted(HEADERS),
            "webhook_url": None,
            "last_check_status": "changed",
            "failure_class": None,
            "last_error": None,
            "baseline_snapshot_id": SNAPSHOT_ID,
            "last_snapshot_id": SNAPSHOT_ID,
            "incident_id": INCIDENT_ID,
            "open_breaking": counts["breaking"],
            "open_warning": counts["warning"],
            "open_info": counts["info"],
            "watch_set_id": None,
            "vendor": "api.example.com",
            "managed_source": None,
        },
        "watch_tags": {"tag": "team:pay", "position": 0},
        "snapshots": {
            "id": SNAPSHOT_ID,
            "content": encode_document(base),
            "size": len(encode_document(base)),
        },
        "drift_events": {
            "id": EVENT_ID,
            "kind": "drift",
            "base_snapshot_id": SNAPSHOT_ID,
            "snapshot_id": SNAPSHOT_ID,
            "breaking_count": counts["breaking"],
            "warning_count": counts["warning"],
            "info_count": counts["info"],
            "changes": encode_changes(changes),
            "incident_id": INCIDENT_ID,
            "agent_actions": [],
            "affected_profiles": None,
        },
        "incidents": {
            "id": INCIDENT_ID,
            "status": "open",
            "breaking_count": counts["breaking"],
            "drift_event_id": EVENT_ID,
            "acknowledged_at": None,
            "resolved_at": None,
            "resolution": None,
            "flap_count": 0,
            "reopened_at": None,
        },
        "agents": {
            "id": AGENT_ID,
            "key": "billing-agent",
            "slug": "billing-agent",
            "policy": "notify-only",
            "policy_rules": None,
            "vendored_paths": None,
            "conditions": [],
            "approvals": [],
            "runtime_state": "running",
            "runtime_reason": None,
            "managed_source": None,
            "environment": None,
        },
        "agent_watches": {"position": 0, "ref": "charges"},
        "sources": {
            "name": "fleet",
            "url": "https://git.example.com/fleet.git",
            "branch": "main",
            "path": ".driftgate",
            "suspended": False,
            "conditions": [],
            "problems": [],
            "runs": [],
            "inventory": {},
        },
        "jobs": {"kind": "check", "status": "done", "payload": {}, "result": None},
        "outbox": {"status": "delivered", "channel": "webhook", "payload": {}},
        "notification_defaults": {"alert_severities": ["breaking"], "weekly_summary": None},
        "templates": {"watch_type": "openapi", "header_names": [], "tags": []},
        "users": {"email": "ada@example.com", "role": "admin", "password_hash": None},
        "replay_publications": {"tags": [], "changes": [], "files": {}, "watch_type": "openapi"},
        "dashboards": {"filters": {}, "panels": []},
        "github_installations": {"status": "active", "linked_by": "legacy"},
        "draft_prs": {"state": "open", "request": {}, "lint": None},
    }


def columns_at(connection: Connection) -> dict[str, set[str]]:
    """The tables of the database at its revision and their column names."""
    found = inspect(connection)
    return {
        name: {c["name"] for c in found.get_columns(name)}
        for name in found.get_table_names()
        if name != "alembic_version"
    }


def tables_as_of(present: dict[str, set[str]]) -> dict[str, Table]:
    """The models' tables cut down to the columns the revision has (the types the code of
    that release wrote them with; no constraints: the database has its own)."""
    metadata = MetaData()
    return {
        table.name: Table(
            table.name,
            metadata,
            *(
                Column(c.name, c.type, primary_key=c.primary_key)
                for c in table.columns
                if c.name in present[table.name]
            ),
        )
        for table in Base.metadata.sorted_tables
        if table.name in present
    }


def representative_rows(present: dict[str, set[str]]) -> dict[str, dict[str, Any]]:
    """One row for each table the revision has, parents first, with only its columns."""
    chosen = overrides()
    rows: dict[str, dict[str, Any]] = {}
    for table in Base.metadata.sorted_tables:
        if table.name not in present:
            continue
        row: dict[str, Any] = {}
        for column in table.columns:
            if column.name not in present[table.name] or column is table.autoincrement_column:
                continue  # a serial key is the database's to give (triggers write rows too)
            if column.name in chosen.get(table.name, {}):
                row[column.name] = chosen[table.name][column.name]
                continue
            parent = next(iter(column.foreign_keys), None)
            if parent is not None and parent.column.table.name in rows:
                row[column.name] = rows[parent.column.table.name][parent.column.name]
            else:
                row[column.name] = plain_value(table.name, column)
        rows[table.name] = row
    return rows


def plain_value(table: str, column: Column[Any]) -> Any:
    kind = column.type
    if isinstance(kind, UTCDateTime):
        return WHEN
    if isinstance(kind, Date):
        return WHEN.date()
    if isinstance(kind, Boolean):
        return False
    if isinstance(kind, Integer | BigInteger):
        return 1
    if isinstance(kind, Double | Float):
        return 1.5
    if isinstance(kind, LargeBinary):
        return b"\x00\x01\x02"
    if isinstance(kind, JSON):
        return {"kept": [1, "two", None]}
    if isinstance(kind, Text):
        return f"{table}.{column.name} text"
    if isinstance(kind, String):
        if column.primary_key or column.name.endswith("_id") or column.name == "id":
            value = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{table}.{column.name}"))
        else:
            value = f"{column.name}-1"
        return value[: kind.length] if kind.length else value
    raise AssertionError(f"no plain value for {table}.{column.name} ({kind!r})")


# The previous release's statements (tests/store/test_expand_contract.py)

PREVIOUS_RELEASE = Path(__file__).with_name("previous_release.json")


def load_release() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(PREVIOUS_RELEASE.read_text(encoding="utf-8"))
    return loaded


def _type_of(column: dict[str, Any]) -> Any:
    kind = column["type"]
    types: dict[str, Any] = {
        "datetime": UTCDateTime(timezone=True),
        "jsonb": JSONType,
        "json": JSON(),
        "binary": LargeBinary(),
        "boolean": Boolean(),
        "integer": Integer(),
        "biginteger": BigInteger(),
        "float": Double(),
        "text": Text(),
        "string": String(column.get("length")),
    }
    return types[kind]


def _value_of(table: str, column: dict[str, Any]) -> Any:
    return plain_value(
        table, Column(column["name"], _type_of(column), primary_key=column["primaryKey"])
    )


def release_statement_failures(connection: Connection, release: dict[str, Any]) -> list[str]:
    """Run the previous release's statements, each in a savepoint: for every table (parents
    first) an INSERT naming every column it wrote, a SELECT of every column it read, an
    UPDATE of every column, then a DELETE of each row (children first). Returns the failed
    statements, `VERB INTO table: error` (the first failure of each table)."""
    metadata = MetaData()
    failures: list[str] = []
    rows: dict[str, dict[str, Any]] = {}
    done: list[tuple[Table, dict[str, Any]]] = []
    for recorded in release["tables"]:
        name = recorded["name"]
        table = Table(
            name,
            metadata,
            *(
                Column(c["name"], _type_of(c), primary_key=c["primaryKey"])
                for c in recorded["columns"]
            ),
        )
        row: dict[str, Any] = {}
        for column in recorded["columns"]:
            if column.get("autoincrement"):
                continue
            target = column.get("references")
            if target and target.split(".")[0] in rows:
                parent, key = target.split(".")
                row[column["name"]] = rows[parent].get(key)
            else:
                row[column["name"]] = _value_of(name, column)
        keys = [c["name"] for c in recorded["columns"] if c["primaryKey"] and c["name"] in row]
        where = [table.c[k] == row[k] for k in keys]
        statements = [
            (f"INSERT INTO {name}", table.insert().values(**row)),
            (f"SELECT FROM {name}", select(*table.c).where(*where)),
            (f"UPDATE {name}", table.update().where(*where).values(**row)),
        ]
        for label, statement in statements:
            try:
                with connection.begin_nested():
                    connection.execute(statement)
            except DBAPIError as exc:
                reason = str(exc.orig or exc).strip().splitlines()[0]
                failures.append(f"{label}: {reason}")
                break
        else:
            rows[name] = row
            done.append((table, {k: row[k] for k in keys}))
    for table, key in reversed(done):
        try:
            with connection.begin_nested():
                connection.execute(table.delete().where(*(table.c[k] == v for k, v in key.items())))
        except DBAPIError as exc:
            failures.append(f"DELETE FROM {table.name}: {str(exc.orig or exc).splitlines()[0]}")
    return failures
