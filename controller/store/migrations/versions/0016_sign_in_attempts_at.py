"""sign-in attempts by time: the instance-wide ceiling counts failures in the window

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26 17:00:00.000000
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_sign_in_attempts_at", "sign_in_attempts", ["at"])


def downgrade() -> None:
    op.drop_index("ix_sign_in_attempts_at", table_name="sign_in_attempts")
