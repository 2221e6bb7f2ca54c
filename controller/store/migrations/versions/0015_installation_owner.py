"""GitHub App installations: one org per installation, the account's id, how the link was proven

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26 16:00:00.000000

Before this revision any org could link any installation the App knew (issue 31, point 1).
An installation linked to several orgs keeps its earliest link (the org that linked it first,
most likely its owner); the later ones are removed, so that the unique constraint can hold.
Rows kept are marked `legacy`: nothing proved their ownership, so they prove no account
(docs/draft-prs.md). Rows recorded without App credentials (no account) are `unverified`.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    links = sa.table(
        "github_installations",
        sa.column("id", sa.String),
        sa.column("installation_id", sa.BigInteger),
        sa.column("linked_at", sa.DateTime),
        sa.column("account", sa.String),
        sa.column("linked_by", sa.String),
    )
    bind = op.get_bind()
    kept: set[int] = set()
    for row in bind.execute(
        sa.select(links.c.id, links.c.installation_id).order_by(
            links.c.installation_id, links.c.linked_at, links.c.id
        )
    ):
        if row.installation_id in kept:
            bind.execute(sa.delete(links).where(links.c.id == row.id))
        kept.add(row.installation_id)
    with op.batch_alter_table("github_installations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("account_id", sa.BigInteger(), nullable=True))
        batch_op.add_column(
            sa.Column("linked_by", sa.String(length=20), nullable=False, server_default="legacy")
        )
        batch_op.drop_constraint("uq_github_installations_org_id", type_="unique")
        batch_op.create_unique_constraint(
            op.f("uq_github_installations_installation_id"), ["installation_id"]
        )
    with op.batch_alter_table("github_installations", schema=None) as batch_op:
        batch_op.alter_column("linked_by", server_default=None)
    bind.execute(sa.update(links).where(links.c.account == "").values(linked_by="unverified"))


def downgrade() -> None:
    with op.batch_alter_table("github_installations", schema=None) as batch_op:
        batch_op.drop_constraint(op.f("uq_github_installations_installation_id"), type_="unique")
        batch_op.create_unique_constraint(
            op.f("uq_github_installations_org_id"), ["org_id", "installation_id"]
        )
        batch_op.drop_column("linked_by")
        batch_op.drop_column("account_id")
