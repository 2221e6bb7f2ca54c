"""replay fixtures an org published to the catalog (hosted-curated)

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25 09:40:00.000000
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from controller.store.types import UTCDateTime

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "replay_publications",
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column(
            "org_id", sa.String(36), sa.ForeignKey("orgs.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("fixture_id", sa.String(80), nullable=False),
        sa.Column("watch_id", sa.String(36), nullable=True),
        sa.Column("drift_event_id", sa.String(36), nullable=True),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("vendor", sa.String(200), nullable=False),
        sa.Column("watch_type", sa.String(16), nullable=False),
        sa.Column("public", sa.Boolean(), nullable=False),
        sa.Column("tags", _json(), nullable=False),
        sa.Column("changes", _json(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("files", _json(), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("org_id", "fixture_id"),
    )
    op.create_index("ix_replay_publications_org_id", "replay_publications", ["org_id"])
    op.create_index("ix_replay_publications_public", "replay_publications", ["public"])


def downgrade() -> None:
    op.drop_index("ix_replay_publications_public", "replay_publications")
    op.drop_index("ix_replay_publications_org_id", "replay_publications")
    op.drop_table("replay_publications")
