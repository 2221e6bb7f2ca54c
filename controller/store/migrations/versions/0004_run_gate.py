"""run gate: agent runtime state and approvals, preflight decisions, fleet-guard trips and snapshots

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22 03:03:54.031227
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import controller.store.types
from sqlalchemy.dialects import postgresql

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "fuse_snapshots",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column("watch_id", sa.String(length=36), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("reason", sa.String(length=200), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("job_id", sa.BigInteger(), nullable=True),
        sa.Column(
            "summary",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "requested_at", controller.store.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column("finished_at", controller.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name=op.f("fk_fuse_snapshots_org_id_orgs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_fuse_snapshots")),
    )
    with op.batch_alter_table("fuse_snapshots", schema=None) as batch_op:
        batch_op.create_index(
            "ix_fuse_snapshots_org_requested", ["org_id", "requested_at", "id"], unique=False
        )

    op.create_table(
        "fuse_trips",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column("trip_id", sa.String(length=200), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=False),
        sa.Column("watch_id", sa.String(length=36), nullable=True),
        sa.Column("agent_key", sa.String(length=200), nullable=True),
        sa.Column("tool", sa.String(length=200), nullable=True),
        sa.Column("decision_id", sa.String(length=36), nullable=True),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("occurred_at", controller.store.types.UTCDateTime(timezone=True), nullable=True),
        sa.Column("received_at", controller.store.types.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["org_id"], ["orgs.id"], name=op.f("fk_fuse_trips_org_id_orgs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_fuse_trips")),
        sa.UniqueConstraint("org_id", "trip_id", name=op.f("uq_fuse_trips_org_id")),
    )
    with op.batch_alter_table("fuse_trips", schema=None) as batch_op:
        batch_op.create_index(
            "ix_fuse_trips_org_received", ["org_id", "received_at", "id"], unique=False
        )

    op.create_table(
        "preflight_decisions",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("org_id", sa.String(length=36), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("agent_key", sa.String(length=200), nullable=True),
        sa.Column("watch_count", sa.Integer(), nullable=False),
        sa.Column("allowed", sa.Boolean(), nullable=False),
        sa.Column("policy_blocked", sa.Boolean(), nullable=False),
        sa.Column("dry_run", sa.Boolean(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column(
            "evaluated_at", controller.store.types.UTCDateTime(timezone=True), nullable=False
        ),
        sa.Column(
            "inputs",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "result",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["org_id"],
            ["orgs.id"],
            name=op.f("fk_preflight_decisions_org_id_orgs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_preflight_decisions")),
    )
    with op.batch_alter_table("preflight_decisions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_preflight_decisions_org_evaluated", ["org_id", "evaluated_at"], unique=False
        )

    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "approvals",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=False,
                server_default=sa.text("'[]'"),
            )
        )
        batch_op.add_column(
            sa.Column("runtime_state", sa.String(length=16), nullable=False, server_default="running")
        )
        batch_op.add_column(sa.Column("runtime_reason", sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column("runtime_note", sa.Text(), nullable=True))
        batch_op.add_column(
            sa.Column(
                "runtime_changed_at",
                controller.store.types.UTCDateTime(timezone=True),
                nullable=True,
            )
        )
        batch_op.add_column(sa.Column("runtime_changed_by", sa.String(length=200), nullable=True))



def downgrade() -> None:
    with op.batch_alter_table("agents", schema=None) as batch_op:
        batch_op.drop_column("runtime_changed_by")
        batch_op.drop_column("runtime_changed_at")
        batch_op.drop_column("runtime_note")
        batch_op.drop_column("runtime_reason")
        batch_op.drop_column("runtime_state")
        batch_op.drop_column("approvals")

    with op.batch_alter_table("preflight_decisions", schema=None) as batch_op:
        batch_op.drop_index("ix_preflight_decisions_org_evaluated")

    op.drop_table("preflight_decisions")
    with op.batch_alter_table("fuse_trips", schema=None) as batch_op:
        batch_op.drop_index("ix_fuse_trips_org_received")

    op.drop_table("fuse_trips")
    with op.batch_alter_table("fuse_snapshots", schema=None) as batch_op:
        batch_op.drop_index("ix_fuse_snapshots_org_requested")

    op.drop_table("fuse_snapshots")
