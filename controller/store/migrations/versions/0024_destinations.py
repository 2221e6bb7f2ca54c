"""destinations: an org's named destinations, the messages they posted, the outbox's link

Revision ID: 0024
Revises: 0022
Create Date: 2026-12-07 19:00:00.000000

Issue 44, points 2 and 3: an org names its destinations (PagerDuty, Opsgenie, Teams, Discord,
e-mail, Slack, webhooks), each with its channel's settings, its secrets encrypted, its routing,
grouping window, digest mode and health (`destinations`); a Slack bot's message about an
incident is remembered to be updated later (`destination_threads`); an outbox message names
the destination it goes to (`outbox.destination_id`, null for the watch's webhook and the
org's default destination). Expand only: two new tables and a nullable column.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import controller.store.types

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

_TIME = controller.store.types.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "destinations",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("settings", controller.store.types.JSONType, nullable=False),
        sa.Column("secrets_ciphertext", sa.Text(), nullable=True),
        sa.Column("secret_hints", controller.store.types.JSONType, nullable=False),
        sa.Column("routing", controller.store.types.JSONType, nullable=False),
        sa.Column("group_seconds", sa.Integer(), nullable=True),
        sa.Column("digest", sa.String(length=16), nullable=False),
        sa.Column("last_attempt_at", _TIME, nullable=True),
        sa.Column("last_delivered_at", _TIME, nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("failing_since", _TIME, nullable=True),
        sa.Column("failed_attempts", sa.Integer(), nullable=False),
        sa.Column("next_retry_at", _TIME, nullable=True),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("updated_at", _TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name=op.f("fk_destinations_org_id_orgs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_destinations")),
        sa.UniqueConstraint("org_id", "name", name=op.f("uq_destinations_org_id")),
    )
    op.create_index("ix_destinations_org_id", "destinations", ["org_id"], unique=False)
    op.create_table(
        "destination_threads",
        sa.Column("destination_id", sa.String(length=36), nullable=False),
        sa.Column("incident_id", sa.String(length=36), nullable=False),
        sa.Column("reference", controller.store.types.JSONType, nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        sa.ForeignKeyConstraint(
            ["destination_id"],
            ["destinations.id"],
            name=op.f("fk_destination_threads_destination_id_destinations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "destination_id", "incident_id", name=op.f("pk_destination_threads")
        ),
    )
    op.add_column("outbox", sa.Column("destination_id", sa.String(length=36), nullable=True))
    op.create_index("ix_outbox_destination_id", "outbox", ["destination_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_outbox_destination_id", table_name="outbox")
    # `DROP COLUMN` in place (SQLite 3.35+), as migration 0018's downgrade.
    op.execute("ALTER TABLE outbox DROP COLUMN destination_id")
    op.drop_table("destination_threads")
    op.drop_index("ix_destinations_org_id", table_name="destinations")
    op.drop_table("destinations")
