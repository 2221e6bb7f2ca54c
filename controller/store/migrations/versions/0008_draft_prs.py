"""draft pull requests, GitHub App installations, agents' vendored contract paths

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 08:00:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from controller.store.types import UTCDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "agents",
        sa.Column(
            "vendored_paths",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
    )
    op.create_table(
        "github_installations",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "org_id", sa.String(36), sa.ForeignKey("orgs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("installation_id", sa.BigInteger(), nullable=False),
        sa.Column("account", sa.String(200), nullable=False),
        sa.Column("repository_selection", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("linked_at", UTCDateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("org_id", "installation_id"),
    )
    op.create_index("ix_github_installations_org_id", "github_installations", ["org_id"])
    op.create_table(
        "draft_prs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "org_id", sa.String(36), sa.ForeignKey("orgs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column(
            "watch_id",
            sa.String(36),
            sa.ForeignKey("watches.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("drift_event_id", sa.String(36), nullable=False),
        sa.Column("repo_full_name", sa.String(200), nullable=False),
        sa.Column("installation_id", sa.BigInteger(), nullable=True),
        sa.Column("branch", sa.String(255), nullable=False),
        sa.Column("number", sa.Integer(), nullable=True),
        sa.Column("url", sa.String(500), nullable=True),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("stub", sa.Boolean(), nullable=False),
        sa.Column("draft_refused", sa.Boolean(), nullable=False),
        sa.Column(
            "request",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column(
            "lint",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("merged_at", UTCDateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("org_id", "drift_event_id", "repo_full_name"),
    )
    op.create_index("ix_draft_prs_org_id", "draft_prs", ["org_id"])


def downgrade() -> None:
    op.drop_column("agents", "vendored_paths")
    op.drop_table("draft_prs")
    op.drop_table("github_installations")
