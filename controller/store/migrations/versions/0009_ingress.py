"""runtime ingress validation: hosted consumer profiles and the validation meters

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 08:20:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from controller.store.types import UTCDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "drift_events",
        sa.Column(
            "affected_profiles",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
    )
    op.create_table(
        "ingress_profiles",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "org_id", sa.String(36), sa.ForeignKey("orgs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("profile_id", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column(
            "content",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("watch_id", sa.String(36), nullable=True),
        sa.Column("managed_source", sa.String(63), nullable=True),
        sa.Column("managed_path", sa.String(1024), nullable=True),
        sa.Column("managed_revision", sa.String(64), nullable=True),
        sa.Column("managed_digest", sa.String(64), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("org_id", "profile_id"),
    )
    op.create_index("ix_ingress_profiles_org_id", "ingress_profiles", ["org_id"])
    op.create_table(
        "validation_meters",
        sa.Column(
            "org_id", sa.String(36), sa.ForeignKey("orgs.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("period", sa.String(7), primary_key=True),
        sa.Column("used", sa.BigInteger(), nullable=False),
    )
    op.create_table(
        "validation_sources",
        sa.Column(
            "org_id", sa.String(36), sa.ForeignKey("orgs.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("period", sa.String(7), primary_key=True),
        sa.Column("source", sa.String(100), primary_key=True),
        sa.Column("used", sa.BigInteger(), nullable=False),
    )


def downgrade() -> None:
    op.drop_column("drift_events", "affected_profiles")
    op.drop_table("validation_sources")
    op.drop_table("validation_meters")
    op.drop_table("ingress_profiles")
