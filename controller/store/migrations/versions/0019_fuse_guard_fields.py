"""fleet-guard trips keep the guard's own fields

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-27 01:00:00.000000

A trip stores, beside driftgate's fields, what the guard sent of its own record (fuseguard's
trip log and trip index rows: `calls`, `runId`, `deviceId`, `argsHash`, `decision` ...), as
JSON, uninterpreted (`guard_fields`, null for trips that sent none). Added with a plain
`ADD COLUMN`, like 0018.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import controller.store.types

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "fuse_trips", sa.Column("guard_fields", controller.store.types.JSONType, nullable=True)
    )


def downgrade() -> None:
    op.execute("ALTER TABLE fuse_trips DROP COLUMN guard_fields")
