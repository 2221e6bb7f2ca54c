"""diff runs: two contracts diffed on request and kept for their link

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-27 04:00:00.000000

`POST /api/openapi/diffs` (and the hosted CLI's `openapi-diff --remote`) diffs two documents
sent in the body and keeps the result, so that the link it answers opens it in the console.
Pruned after `retention_diff_run_days`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import controller.store.types

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "diff_runs",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "org_id", sa.String(36), sa.ForeignKey("orgs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("base_label", sa.String(200), nullable=False),
        sa.Column("target_label", sa.String(200), nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("contract_type", sa.String(16), nullable=False),
        sa.Column("counts", controller.store.types.JSONType, nullable=False),
        sa.Column("changes", sa.LargeBinary, nullable=False),
        sa.Column("actor", sa.String(200), nullable=False),
        sa.Column(
            "created_at", controller.store.types.UTCDateTime(timezone=True), nullable=False
        ),
    )
    op.create_index("ix_diff_runs_org_created", "diff_runs", ["org_id", "created_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_diff_runs_org_created", table_name="diff_runs")
    op.drop_table("diff_runs")
