"""controller heartbeats: one row per running controller, written every tick

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07 06:10:59.936086

Issue 40, point 4: a controller that died or is stuck stops checking, and nothing said so.
Each controller process now keeps a row here (`controller.services.heartbeats`): written
every tick, deleted when it stops cleanly. `/health/ready` and the console read the newest
one (one step down the `beat_at` index).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import controller.store.types

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "controller_heartbeats",
        sa.Column("worker", sa.String(length=200), nullable=False),
        sa.Column("started_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("beat_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("tick_seconds", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("worker", name=op.f("pk_controller_heartbeats")),
    )
    op.create_index(
        "ix_controller_heartbeats_beat_at", "controller_heartbeats", ["beat_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_controller_heartbeats_beat_at", table_name="controller_heartbeats")
    op.drop_table("controller_heartbeats")
