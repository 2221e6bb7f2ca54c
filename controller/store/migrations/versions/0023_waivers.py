"""waivers: accepted findings from `.driftgate/waivers.yaml`, and when a watch's waiver ends

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-07 19:00:00.000000

Issue 44, point 1. `waivers` holds each git source's waivers (keyed by what they match, so
a waiver keeps its notices when its file is reordered), with when its owner was told that it
expires soon and that it expired. `watches.waived_until` is when the first waiver that hides
a breaking change of the watch's current comparison ends: the gate blocks the watch from
then on until the findings are counted again, so it reads the column, and the trigger that
stamps a watch for the gate's cache (migration 0005) now also fires on it. Expand only.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from controller.store.types import UTCDateTime

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

_OLD_COLUMNS = ("name", "org_id", "drift_status", "failure_class", "incident_id")
_NEW_COLUMNS = (*_OLD_COLUMNS, "waived_until")
_SQLITE_STAMP = (
    "INSERT INTO gate_clock (id, stamp) VALUES (1, 1) "
    "ON CONFLICT (id) DO UPDATE SET stamp = stamp + 1; "
    "UPDATE watches SET gate_stamp = (SELECT stamp FROM gate_clock WHERE id = 1) "
    "WHERE id = NEW.id;"
)


def _watch_changed(columns: tuple[str, ...], distinct: str) -> str:
    changed = " OR ".join(f"OLD.{c} {distinct} NEW.{c}" for c in columns)
    return (
        f"{changed} OR "
        f"(NEW.drift_status <> 'ok' AND OLD.last_checked_at {distinct} NEW.last_checked_at)"
    )


def _restamp(columns: tuple[str, ...]) -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS gate_watch_update")
        op.execute(
            "CREATE TRIGGER gate_watch_update AFTER UPDATE ON watches "
            f"WHEN {_watch_changed(columns, 'IS NOT')} BEGIN {_SQLITE_STAMP} END"
        )
    else:
        op.execute("DROP TRIGGER IF EXISTS gate_watch_update ON watches")
        op.execute(
            "CREATE TRIGGER gate_watch_update BEFORE UPDATE ON watches "
            f"FOR EACH ROW WHEN ({_watch_changed(columns, 'IS DISTINCT FROM')}) "
            "EXECUTE FUNCTION driftgate_gate_stamp()"
        )


def upgrade() -> None:
    op.create_table(
        "waivers",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "org_id", sa.String(36), sa.ForeignKey("orgs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("watch", sa.String(300), nullable=False),
        sa.Column("rule", sa.String(120), nullable=False),
        sa.Column("path", sa.String(300), nullable=True),
        sa.Column("operation", sa.String(300), nullable=True),
        sa.Column("tool", sa.String(300), nullable=True),
        sa.Column("owner", sa.String(254), nullable=False),
        sa.Column("reason", sa.String(500), nullable=False),
        sa.Column("expires", sa.Date(), nullable=False),
        sa.Column("expiring_notified_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("expired_notified_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("managed_source", sa.String(63), nullable=True),
        sa.Column("managed_path", sa.String(1024), nullable=True),
        sa.Column("managed_revision", sa.String(64), nullable=True),
        sa.Column("managed_digest", sa.String(64), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("org_id", "key"),
    )
    op.create_index("ix_waivers_expires", "waivers", ["expires"])
    op.add_column("watches", sa.Column("waived_until", UTCDateTime(timezone=True), nullable=True))
    op.create_index("ix_watches_waived_until", "watches", ["waived_until"])
    _restamp(_NEW_COLUMNS)


def downgrade() -> None:
    _restamp(_OLD_COLUMNS)
    op.drop_index("ix_watches_waived_until", table_name="watches")
    op.execute("ALTER TABLE watches DROP COLUMN waived_until")
    op.drop_index("ix_waivers_expires", table_name="waivers")
    op.drop_table("waivers")
