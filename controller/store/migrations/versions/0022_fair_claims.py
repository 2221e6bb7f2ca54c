"""fair claims: a job's org and priority

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28 09:00:00.000000

A claim gives each org its share of a controller's workers and takes a check asked for now,
then a watch's first check, before scheduled ones (issue 40, point 5): a job names the org
it works for (`org_id`, None for work of no org) and its `priority` (0 asked for now, 1 a
first check, 2 scheduled; jobs queued before this migration are scheduled).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("org_id", sa.String(36), nullable=True))
    op.add_column(
        "jobs", sa.Column("priority", sa.Integer(), server_default=sa.text("2"), nullable=False)
    )


def downgrade() -> None:
    # `DROP COLUMN` in place (SQLite 3.35+), as migration 0018's downgrade.
    op.execute("ALTER TABLE jobs DROP COLUMN priority")
    op.execute("ALTER TABLE jobs DROP COLUMN org_id")
