"""due watches: a partial index over the schedule of the watches that are checked

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26 19:00:00.000000

The controller asks for the watches due by a time (or never scheduled), oldest first, among
those not paused. Over the whole `next_check_at` index that walk passed every paused watch
and, on Postgres, every scheduled one before the never-scheduled ones (NULLs sort last).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_CHECKED = sa.text("drift_status <> 'disabled'")


def upgrade() -> None:
    with op.batch_alter_table("watches") as batch_op:
        batch_op.drop_index("ix_watches_next_check_at")
    op.create_index(
        "ix_watches_due",
        "watches",
        ["next_check_at"],
        postgresql_where=_CHECKED,
        sqlite_where=_CHECKED,
    )


def downgrade() -> None:
    op.drop_index("ix_watches_due", table_name="watches")
    with op.batch_alter_table("watches") as batch_op:
        batch_op.create_index("ix_watches_next_check_at", ["next_check_at"], unique=False)
