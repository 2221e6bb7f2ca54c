"""flap damping: reopened incidents, a restorable prior baseline, grouped deliveries

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-27 10:00:00.000000

Incidents count their flaps (`flap_count`, `reopened_at`); a watch remembers the baseline
before its last automatic advance (`prior_baseline_*`); an outbox message names its delivery
topic and how many earlier messages of it it stands for (`topic`, `suppressed_count`), with an
index to find a topic's messages by time.

Columns are added with plain `ADD COLUMN` (no batch rebuild): on SQLite a rebuilt `watches`,
`incidents` or `outbox` table would lose the run gate's triggers (migration 0005).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import controller.store.types

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def _when(name: str) -> sa.Column[object]:
    return sa.Column(name, controller.store.types.UTCDateTime(timezone=True), nullable=True)


def upgrade() -> None:
    op.add_column("watches", sa.Column("prior_baseline_snapshot_id", sa.String(36)))
    op.add_column("watches", sa.Column("prior_baseline_fingerprint", sa.String(64)))
    op.add_column("watches", _when("prior_baseline_accepted_at"))
    op.add_column("watches", sa.Column("prior_baseline_accepted_by", sa.String(200)))
    op.add_column(
        "incidents",
        sa.Column("flap_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
    )
    op.add_column("incidents", _when("reopened_at"))
    op.add_column("outbox", sa.Column("topic", sa.String(64)))
    op.add_column(
        "outbox",
        sa.Column("suppressed_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
    )
    op.create_index("ix_outbox_topic_created", "outbox", ["topic", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_outbox_topic_created", table_name="outbox")
    # `DROP COLUMN` in place (SQLite 3.35+), for the same reason as the upgrade's `ADD COLUMN`.
    for table, column in _ADDED:
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")


_ADDED = (
    ("outbox", "suppressed_count"),
    ("outbox", "topic"),
    ("incidents", "reopened_at"),
    ("incidents", "flap_count"),
    ("watches", "prior_baseline_accepted_by"),
    ("watches", "prior_baseline_accepted_at"),
    ("watches", "prior_baseline_fingerprint"),
    ("watches", "prior_baseline_snapshot_id"),
)
