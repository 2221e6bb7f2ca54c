"""checks: snapshots, incidents, drift events, jobs, outbox, deliveries, notification defaults, webhook secrets

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21 23:46:10.045204
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import controller.store.types
from sqlalchemy.dialects import postgresql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("period", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("run_after", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("fence", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(length=200), nullable=True),
        sa.Column(
            "lease_expires_at", controller.store.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "result",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("started_at", controller.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("finished_at", controller.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
        sa.UniqueConstraint("key", "period", name=op.f("uq_jobs_key")),
    )
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.create_index("ix_jobs_claim", ["status", "run_after"], unique=False)
        batch_op.create_index(
            "uq_jobs_one_queued",
            ["key"],
            unique=True,
            sqlite_where=sa.text("status = 'queued'"),
            postgresql_where=sa.text("status = 'queued'"),
        )
        batch_op.create_index(
            "uq_jobs_one_running",
            ["key"],
            unique=True,
            sqlite_where=sa.text("status = 'running'"),
            postgresql_where=sa.text("status = 'running'"),
        )

    op.create_table(
        "notification_defaults",
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column("destination_kind", sa.String(length=16), nullable=True),
        sa.Column("destination_ciphertext", sa.Text(), nullable=True),
        sa.Column("destination_hint", sa.String(length=200), nullable=True),
        sa.Column("interval_minutes", sa.Integer(), nullable=True),
        sa.Column(
            "alert_severities",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("updated_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"],
            ["orgs.id"],
            name=op.f("fk_notification_defaults_org_id_orgs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("org_id", name=op.f("pk_notification_defaults")),
    )
    op.create_table(
        "outbox",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column("event_type", sa.String(length=64), nullable=False),
        sa.Column("channel", sa.String(length=16), nullable=False),
        sa.Column("destination_ciphertext", sa.Text(), nullable=False),
        sa.Column("destination_hint", sa.String(length=200), nullable=False),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("watch_id", sa.String(length=36), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column(
            "next_attempt_at", controller.store.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "lease_expires_at", controller.store.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("created_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("delivered_at", controller.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name=op.f("fk_outbox_org_id_orgs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_outbox")),
    )
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.create_index("ix_outbox_due", ["status", "next_attempt_at"], unique=False)
        batch_op.create_index("ix_outbox_org_created", ["org_id", "created_at"], unique=False)

    op.create_table(
        "webhook_secrets",
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column("secret_ciphertext", sa.Text(), nullable=False),
        sa.Column("created_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name=op.f("fk_webhook_secrets_org_id_orgs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("org_id", name=op.f("pk_webhook_secrets")),
    )
    op.create_table(
        "delivery_attempts",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("outbox_id", sa.String(length=36), nullable=False),
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column(
            "attempted_at", controller.store.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("latency_ms", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["outbox_id"],
            ["outbox.id"],
            name=op.f("fk_delivery_attempts_outbox_id_outbox"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_delivery_attempts")),
    )
    with op.batch_alter_table("delivery_attempts", schema=None) as batch_op:
        batch_op.create_index(
            "ix_delivery_attempts_org_time", ["org_id", "attempted_at"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_delivery_attempts_outbox_id"), ["outbox_id"], unique=False
        )

    op.create_table(
        "drift_events",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column("watch_id", sa.String(length=36), nullable=False),
        sa.Column("detected_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("base_snapshot_id", sa.String(length=36), nullable=True),
        sa.Column("snapshot_id", sa.String(length=36), nullable=True),
        sa.Column("breaking_count", sa.Integer(), nullable=False),
        sa.Column("warning_count", sa.Integer(), nullable=False),
        sa.Column("info_count", sa.Integer(), nullable=False),
        sa.Column("changes", sa.LargeBinary(), nullable=False),
        sa.Column("incident_id", sa.String(length=36), nullable=True),
        sa.Column(
            "agent_actions",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name=op.f("fk_drift_events_org_id_orgs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["watch_id"],
            ["watches.id"],
            name=op.f("fk_drift_events_watch_id_watches"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_drift_events")),
    )
    with op.batch_alter_table("drift_events", schema=None) as batch_op:
        batch_op.create_index(
            "ix_drift_events_org_detected", ["org_id", "detected_at", "id"], unique=False
        )
        batch_op.create_index(
            "ix_drift_events_watch_detected", ["watch_id", "detected_at"], unique=False
        )

    op.create_table(
        "incidents",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column("watch_id", sa.String(length=36), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("opened_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.Column("breaking_count", sa.Integer(), nullable=False),
        sa.Column("drift_event_id", sa.String(length=36), nullable=True),
        sa.Column(
            "acknowledged_at", controller.store.types.UTCDateTime(timezone=True), nullable=True
        ),
        sa.Column("acknowledged_by", sa.String(length=200), nullable=True),
        sa.Column("ack_note", sa.Text(), nullable=True),
        sa.Column("resolved_at", controller.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("resolution", sa.String(length=32), nullable=True),
        sa.Column("resolved_by", sa.String(length=200), nullable=True),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name=op.f("fk_incidents_org_id_orgs"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["watch_id"],
            ["watches.id"],
            name=op.f("fk_incidents_watch_id_watches"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_incidents")),
    )
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_incidents_org_id"), ["org_id"], unique=False)
        batch_op.create_index("ix_incidents_watch_status", ["watch_id", "status"], unique=False)

    op.create_table(
        "snapshots",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("watch_id", sa.String(length=36), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.Column("size", sa.Integer(), nullable=False),
        sa.Column("created_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["watch_id"],
            ["watches.id"],
            name=op.f("fk_snapshots_watch_id_watches"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_snapshots")),
        sa.UniqueConstraint("watch_id", "fingerprint", name=op.f("uq_snapshots_watch_id")),
    )
    with op.batch_alter_table("snapshots", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_snapshots_watch_id"), ["watch_id"], unique=False)

    with op.batch_alter_table("watches", schema=None) as batch_op:
        batch_op.add_column(sa.Column("etag", sa.String(length=512), nullable=True))
        batch_op.add_column(sa.Column("last_modified", sa.String(length=128), nullable=True))
        batch_op.add_column(sa.Column("source_hash", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("last_snapshot_id", sa.String(length=36), nullable=True))
        batch_op.add_column(
            sa.Column(
                "last_success_at", controller.store.types.UTCDateTime(timezone=True), nullable=True
            )
        )
        batch_op.add_column(
            sa.Column(
                "next_check_at", controller.store.types.UTCDateTime(timezone=True), nullable=True
            )
        )
        batch_op.add_column(sa.Column("protocol_version", sa.String(length=32), nullable=True))
        batch_op.create_index(
            batch_op.f("ix_watches_next_check_at"), ["next_check_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("watches", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_watches_next_check_at"))
        batch_op.drop_column("protocol_version")
        batch_op.drop_column("next_check_at")
        batch_op.drop_column("last_success_at")
        batch_op.drop_column("last_snapshot_id")
        batch_op.drop_column("source_hash")
        batch_op.drop_column("last_modified")
        batch_op.drop_column("etag")

    with op.batch_alter_table("snapshots", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_snapshots_watch_id"))

    op.drop_table("snapshots")
    with op.batch_alter_table("incidents", schema=None) as batch_op:
        batch_op.drop_index("ix_incidents_watch_status")
        batch_op.drop_index(batch_op.f("ix_incidents_org_id"))

    op.drop_table("incidents")
    with op.batch_alter_table("drift_events", schema=None) as batch_op:
        batch_op.drop_index("ix_drift_events_watch_detected")
        batch_op.drop_index("ix_drift_events_org_detected")

    op.drop_table("drift_events")
    with op.batch_alter_table("delivery_attempts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_delivery_attempts_outbox_id"))
        batch_op.drop_index("ix_delivery_attempts_org_time")

    op.drop_table("delivery_attempts")
    op.drop_table("webhook_secrets")
    with op.batch_alter_table("outbox", schema=None) as batch_op:
        batch_op.drop_index("ix_outbox_org_created")
        batch_op.drop_index("ix_outbox_due")

    op.drop_table("outbox")
    op.drop_table("notification_defaults")
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_index(
            "uq_jobs_one_running",
            sqlite_where=sa.text("status = 'running'"),
            postgresql_where=sa.text("status = 'running'"),
        )
        batch_op.drop_index(
            "uq_jobs_one_queued",
            sqlite_where=sa.text("status = 'queued'"),
            postgresql_where=sa.text("status = 'queued'"),
        )
        batch_op.drop_index("ix_jobs_claim")

    op.drop_table("jobs")
