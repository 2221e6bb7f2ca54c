"""run gate cache: watch stamps, the gate clock and events, and the triggers that write them

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22 05:23:22.762310

The run gate keeps each org's view of its watches and agents in memory and asks the database,
on every preflight, only whether that view changed (`controller/services/gate_cache.py`).
Triggers record every change that matters to it, whatever code writes it:

- a watch's gate columns (name, status, failure class, incident; its last check time while it
  is not `ok`) stamp the watch row itself (`watches.gate_stamp`), so a process reloads just
  that watch;
- incidents, agents, agent bindings and deleted watches add a row to `gate_events`, and a
  process reloads the whole org.

A stamp must follow commit order. SQLite has one writer at a time, so a counter row
(`gate_clock`) does; on Postgres a counter row would be a lock every check waits for, so the
stamp is the writing transaction's id and readers compare it with their snapshot's `xmin`.

A later migration that rebuilds one of these tables on SQLite (batch mode copies a table)
drops its triggers: such a migration must create them again (`tests/store/test_migrations.py`
checks that they exist at head).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# What the gate reads of a watch (`controller/services/gate_cache.py`); `last_checked_at` is
# shown only on rows that block, so an `ok` watch's routine check stamps nothing.
WATCH_COLUMNS = ("name", "org_id", "drift_status", "failure_class", "incident_id")
INCIDENT_COLUMNS = ("watch_id", "status", "drift_event_id")
AGENT_COLUMNS = ("org_id", "key", "slug", "policy", "policy_rules", "runtime_state")
BINDING_COLUMNS = ("agent_id", "position", "ref", "watch_id")

# (table, trigger name suffix, the columns whose change matters, how to find the org)
EVENT_TABLES = (
    ("incidents", "incident", INCIDENT_COLUMNS, "{row}.org_id"),
    ("agents", "agent", AGENT_COLUMNS, "{row}.org_id"),
    ("agent_watches", "binding", BINDING_COLUMNS, None),
)

TRIGGERS = (
    [f"gate_watch_{op_}" for op_ in ("insert", "update", "delete")]
    + [
        f"gate_{name}_{op_}"
        for _, name, _, _ in EVENT_TABLES
        for op_ in ("insert", "update", "delete")
    ]
    + ["gate_drift_event_update"]
)


def _changed(columns: tuple[str, ...], distinct: str) -> str:
    return " OR ".join(f"OLD.{c} {distinct} NEW.{c}" for c in columns)


def _watch_changed(distinct: str) -> str:
    return (
        f"{_changed(WATCH_COLUMNS, distinct)} OR "
        f"(NEW.drift_status <> 'ok' AND OLD.last_checked_at {distinct} NEW.last_checked_at)"
    )


# SQLite -------------------------------------------------------------------------------------

_TICK = (
    "INSERT INTO gate_clock (id, stamp) VALUES (1, 1) "
    "ON CONFLICT (id) DO UPDATE SET stamp = stamp + 1;"
)
_NOW = "(SELECT stamp FROM gate_clock WHERE id = 1)"


def _sqlite_event(org: str) -> str:
    return (
        f"{_TICK} INSERT INTO gate_events (stamp, org_id, created_at) "
        f"VALUES ({_NOW}, {org}, CAST(strftime('%s', 'now') AS INTEGER));"
    )


def _sqlite_org(template: str | None, row: str) -> str:
    if template is not None:
        return template.format(row=row)
    return f"(SELECT org_id FROM agents WHERE id = {row}.agent_id)"


def _sqlite_statements() -> list[str]:
    stamp = f"{_TICK} UPDATE watches SET gate_stamp = {_NOW} WHERE id = NEW.id;"
    out = [
        f"CREATE TRIGGER gate_watch_insert AFTER INSERT ON watches BEGIN {stamp} END",
        f"CREATE TRIGGER gate_watch_update AFTER UPDATE ON watches "
        f"WHEN {_watch_changed('IS NOT')} BEGIN {stamp} END",
        f"CREATE TRIGGER gate_watch_delete AFTER DELETE ON watches "
        f"BEGIN {_sqlite_event('OLD.org_id')} END",
        f"CREATE TRIGGER gate_drift_event_update AFTER UPDATE OF agent_actions ON drift_events "
        f"BEGIN {_sqlite_event('NEW.org_id')} END",
    ]
    for table, name, columns, org in EVENT_TABLES:
        out += [
            f"CREATE TRIGGER gate_{name}_insert AFTER INSERT ON {table} "
            f"BEGIN {_sqlite_event(_sqlite_org(org, 'NEW'))} END",
            f"CREATE TRIGGER gate_{name}_update AFTER UPDATE ON {table} "
            f"WHEN {_changed(columns, 'IS NOT')} "
            f"BEGIN {_sqlite_event(_sqlite_org(org, 'NEW'))} END",
            f"CREATE TRIGGER gate_{name}_delete AFTER DELETE ON {table} "
            f"BEGIN {_sqlite_event(_sqlite_org(org, 'OLD'))} END",
        ]
    return out


# Postgres -----------------------------------------------------------------------------------

_XID = "pg_current_xact_id()::text::bigint"

_PG_FUNCTIONS = [
    f"""CREATE FUNCTION driftgate_gate_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.gate_stamp := {_XID};
    RETURN NEW;
END $$""",
    f"""CREATE FUNCTION driftgate_gate_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed jsonb;
    org text;
BEGIN
    IF TG_OP = 'DELETE' THEN
        changed := to_jsonb(OLD);
    ELSE
        changed := to_jsonb(NEW);
    END IF;
    org := changed ->> 'org_id';
    IF org IS NULL AND changed ? 'agent_id' THEN
        SELECT a.org_id INTO org FROM agents a WHERE a.id = changed ->> 'agent_id';
    END IF;
    INSERT INTO gate_events (stamp, org_id, created_at)
    VALUES ({_XID}, org, extract(epoch FROM now())::bigint);
    RETURN NULL;
END $$""",
]


def _pg_statements() -> list[str]:
    event = "FOR EACH ROW EXECUTE FUNCTION driftgate_gate_event()"
    out = list(_PG_FUNCTIONS) + [
        "CREATE TRIGGER gate_watch_insert BEFORE INSERT ON watches "
        "FOR EACH ROW EXECUTE FUNCTION driftgate_gate_stamp()",
        f"CREATE TRIGGER gate_watch_update BEFORE UPDATE ON watches "
        f"FOR EACH ROW WHEN ({_watch_changed('IS DISTINCT FROM')}) "
        f"EXECUTE FUNCTION driftgate_gate_stamp()",
        f"CREATE TRIGGER gate_watch_delete AFTER DELETE ON watches {event}",
        f"CREATE TRIGGER gate_drift_event_update AFTER UPDATE OF agent_actions "
        f"ON drift_events {event}",
    ]
    for table, name, columns, _ in EVENT_TABLES:
        out += [
            f"CREATE TRIGGER gate_{name}_insert AFTER INSERT ON {table} {event}",
            f"CREATE TRIGGER gate_{name}_update AFTER UPDATE ON {table} "
            f"FOR EACH ROW WHEN ({_changed(columns, 'IS DISTINCT FROM')}) "
            f"EXECUTE FUNCTION driftgate_gate_event()",
            f"CREATE TRIGGER gate_{name}_delete AFTER DELETE ON {table} {event}",
        ]
    return out


def upgrade() -> None:
    op.create_table(
        "gate_clock",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("stamp", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gate_clock")),
    )
    op.create_table(
        "gate_events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("stamp", sa.BigInteger(), nullable=False),
        sa.Column("org_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_gate_events")),
    )
    with op.batch_alter_table("gate_events", schema=None) as batch_op:
        batch_op.create_index("ix_gate_events_stamp", ["stamp"], unique=False)
    with op.batch_alter_table("watches", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("gate_stamp", sa.BigInteger(), server_default=sa.text("0"), nullable=False)
        )
        batch_op.create_index("ix_watches_gate_stamp", ["gate_stamp"], unique=False)
    sqlite = op.get_bind().dialect.name == "sqlite"
    for statement in _sqlite_statements() if sqlite else _pg_statements():
        op.execute(statement)


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    tables = {"watch": "watches", "drift_event": "drift_events"}
    tables |= {name: table for table, name, _, _ in EVENT_TABLES}
    for trigger in TRIGGERS:
        if sqlite:
            op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        else:
            name = trigger.removeprefix("gate_").rsplit("_", 1)[0]
            op.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {tables[name]}")
    if not sqlite:
        op.execute("DROP FUNCTION IF EXISTS driftgate_gate_event()")
        op.execute("DROP FUNCTION IF EXISTS driftgate_gate_stamp()")
    with op.batch_alter_table("watches", schema=None) as batch_op:
        batch_op.drop_index("ix_watches_gate_stamp")
        batch_op.drop_column("gate_stamp")
    with op.batch_alter_table("gate_events", schema=None) as batch_op:
        batch_op.drop_index("ix_gate_events_stamp")
    op.drop_table("gate_events")
    op.drop_table("gate_clock")
