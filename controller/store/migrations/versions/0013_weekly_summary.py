"""the weekly summary e-mail: an org's opt-in and its SMTP relay

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25 11:30:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from controller.store.types import UTCDateTime

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    json = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
    op.add_column("notification_defaults", sa.Column("weekly_summary", json, nullable=True))
    op.create_table(
        "smtp_settings",
        sa.Column(
            "org_id",
            sa.String(36),
            sa.ForeignKey("orgs.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("host", sa.String(253), nullable=False),
        sa.Column("port", sa.Integer(), nullable=False),
        sa.Column("security", sa.String(16), nullable=False),
        sa.Column("username", sa.String(200), nullable=True),
        sa.Column("password_ciphertext", sa.Text(), nullable=True),
        sa.Column("from_address", sa.String(254), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("smtp_settings")
    op.drop_column("notification_defaults", "weekly_summary")
