"""an org's dashboard templates (portfolio views)

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25 10:05:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from controller.store.types import UTCDateTime

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    json = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
    op.create_table(
        "dashboards",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "org_id", sa.String(36), sa.ForeignKey("orgs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("filters", json, nullable=False),
        sa.Column("panels", json, nullable=False),
        sa.Column("managed_source", sa.String(63), nullable=True),
        sa.Column("managed_path", sa.String(1024), nullable=True),
        sa.Column("managed_revision", sa.String(64), nullable=True),
        sa.Column("managed_digest", sa.String(64), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("org_id", "name"),
    )
    op.create_index("ix_dashboards_org_id", "dashboards", ["org_id"])


def downgrade() -> None:
    op.drop_index("ix_dashboards_org_id", "dashboards")
    op.drop_table("dashboards")
