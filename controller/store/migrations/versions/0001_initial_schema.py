"""initial schema: orgs, api keys, trial sessions, watches, audit log

Revision ID: 0001
Revises:
Create Date: 2026-11-21 23:14:18.115257
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import controller.store.types
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_log",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("org_id", sa.String(length=36), nullable=True),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("target_type", sa.String(length=32), nullable=False),
        sa.Column("target_id", sa.String(length=200), nullable=True),
        sa.Column(
            "details",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.create_index("ix_audit_log_org_created", ["org_id", "created_at"], unique=False)

    op.create_table(
        "funnel_counters",
        sa.Column("event", sa.String(length=64), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("event", "day", name=op.f("pk_funnel_counters")),
    )
    op.create_table(
        "orgs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("plan", sa.String(length=16), nullable=False),
        sa.Column(
            "products",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("is_trial", sa.Boolean(), nullable=False),
        sa.Column("created_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_orgs")),
        sa.UniqueConstraint("name", name=op.f("uq_orgs_name")),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("hint", sa.String(length=4), nullable=False),
        sa.Column("created_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", controller.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", controller.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name=op.f("fk_api_keys_org_id_orgs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_api_keys_key_hash")),
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_keys_org_id"), ["org_id"], unique=False)

    op.create_table(
        "trial_sessions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("hint", sa.String(length=4), nullable=False),
        sa.Column("created_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("expires_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("validations_period", sa.String(length=7), nullable=False),
        sa.Column("validations_used", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name=op.f("fk_trial_sessions_org_id_orgs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trial_sessions")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_trial_sessions_token_hash")),
    )
    with op.batch_alter_table("trial_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_trial_sessions_org_id"), ["org_id"], unique=False)

    op.create_table(
        "watches",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("watch_type", sa.String(length=16), nullable=False),
        sa.Column("url", sa.String(length=2048), nullable=False),
        sa.Column("method", sa.String(length=8), nullable=True),
        sa.Column(
            "request_body",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("drift_status", sa.String(length=16), nullable=False),
        sa.Column("interval_minutes", sa.Integer(), nullable=False),
        sa.Column("headers_ciphertext", sa.Text(), nullable=True),
        sa.Column(
            "header_names",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("webhook_url", sa.String(length=2048), nullable=True),
        sa.Column(
            "last_checked_at", controller.store.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("last_check_status", sa.String(length=16), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("failure_class", sa.String(length=32), nullable=True),
        sa.Column("baseline_snapshot_id", sa.String(length=36), nullable=True),
        sa.Column("baseline_fingerprint", sa.String(length=64), nullable=True),
        sa.Column(
            "baseline_accepted_at", controller.store.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("baseline_accepted_by", sa.String(length=200), nullable=True),
        sa.Column("open_breaking", sa.Integer(), nullable=False),
        sa.Column("open_warning", sa.Integer(), nullable=False),
        sa.Column("open_info", sa.Integer(), nullable=False),
        sa.Column("incident_id", sa.String(length=36), nullable=True),
        sa.Column("managed_source", sa.String(length=200), nullable=True),
        sa.Column("managed_path", sa.String(length=1024), nullable=True),
        sa.Column("managed_revision", sa.String(length=64), nullable=True),
        sa.Column("created_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name=op.f("fk_watches_org_id_orgs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_watches")),
        sa.UniqueConstraint("org_id", "name", name=op.f("uq_watches_org_id")),
    )
    with op.batch_alter_table("watches", schema=None) as batch_op:
        batch_op.create_index(
            "ix_watches_org_created", ["org_id", "created_at", "id"], unique=False
        )
        batch_op.create_index("ix_watches_org_status", ["org_id", "drift_status"], unique=False)

    op.create_table(
        "watch_tags",
        sa.Column("watch_id", sa.String(length=36), nullable=False),
        sa.Column("tag", sa.String(length=200), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["watch_id"],
            ["watches.id"],
            name=op.f("fk_watch_tags_watch_id_watches"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("watch_id", "tag", name=op.f("pk_watch_tags")),
    )
    with op.batch_alter_table("watch_tags", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_watch_tags_tag"), ["tag"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("watch_tags", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_watch_tags_tag"))

    op.drop_table("watch_tags")
    with op.batch_alter_table("watches", schema=None) as batch_op:
        batch_op.drop_index("ix_watches_org_status")
        batch_op.drop_index("ix_watches_org_created")

    op.drop_table("watches")
    with op.batch_alter_table("trial_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_trial_sessions_org_id"))

    op.drop_table("trial_sessions")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_keys_org_id"))

    op.drop_table("api_keys")
    op.drop_table("orgs")
    op.drop_table("funnel_counters")
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.drop_index("ix_audit_log_org_created")

    op.drop_table("audit_log")
