"""portfolio views: a watch's vendor on its row (the `vendor:` tag, else the URL's host), and
indexes that cover their aggregates

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25 10:00:00.000000
"""

from __future__ import annotations

from urllib.parse import urlsplit

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("watches") as batch:
        batch.add_column(sa.Column("vendor", sa.String(200), nullable=False, server_default=""))
    op.create_index("ix_watches_org_vendor", "watches", ["org_id", "vendor"])
    op.create_index(
        "ix_drift_events_org_detected_counts",
        "drift_events",
        ["org_id", "detected_at", "watch_id", "breaking_count", "warning_count"],
    )
    op.create_index(
        "ix_incidents_org_status_resolved", "incidents", ["org_id", "status", "resolved_at"]
    )
    bind = op.get_bind()
    tags: dict[str, list[str]] = {}
    for watch_id, tag in bind.execute(
        sa.text("SELECT watch_id, tag FROM watch_tags ORDER BY watch_id, position")
    ):
        tags.setdefault(watch_id, []).append(tag)
    for watch_id, url in list(bind.execute(sa.text("SELECT id, url FROM watches"))):
        vendor = next(
            (t.split(":", 1)[1] for t in tags.get(watch_id, []) if t.startswith("vendor:")),
            urlsplit(url or "").hostname or "",
        )[:200]
        bind.execute(
            sa.text("UPDATE watches SET vendor = :vendor WHERE id = :id"),
            {"vendor": vendor, "id": watch_id},
        )


def downgrade() -> None:
    op.drop_index("ix_incidents_org_status_resolved", "incidents")
    op.drop_index("ix_drift_events_org_detected_counts", "drift_events")
    op.drop_index("ix_watches_org_vendor", "watches")
    with op.batch_alter_table("watches") as batch:
        batch.drop_column("vendor")
