"""decisions as json, not jsonb, on Postgres

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23 23:10:00.000000

`preflight_decisions.inputs` and `.result` are written on every preflight and only ever read
back whole (the audit export); nothing queries inside them. `jsonb` parses every value into its
binary form on insert: for a decision on 100 watch ids (about 12 KB) that was 80-120 us of
Postgres CPU per preflight, beside 120-160 us for the rest of the insert. `json` only checks
the text. The columns keep lz4 compression (migration 0006) where the server has it. SQLite
stores JSON as text either way: nothing to change there.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

TABLE = "preflight_decisions"
COLUMNS = ("inputs", "result")


def _compression() -> str | None:
    """The columns' compression as 0006 set it (None when the server keeps its default, and
    before PostgreSQL 14, which has no per-column compression)."""
    bind = op.get_bind()
    if int(bind.exec_driver_sql("SHOW server_version_num").scalar() or 0) < 140000:
        return None
    value = (
        bind.exec_driver_sql(
            "SELECT attcompression FROM pg_attribute "
            f"WHERE attrelid = '{TABLE}'::regclass AND attname = 'result'"
        )
        .scalar()
    )
    return {"l": "lz4", "p": "pglz"}.get(str(value or ""))


def _retype(new: sa.types.TypeEngine[object], cast: str) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    compression = _compression()
    for column in COLUMNS:
        op.alter_column(TABLE, column, type_=new, postgresql_using=f"{column}::{cast}")
        if compression is not None:
            op.execute(f"ALTER TABLE {TABLE} ALTER COLUMN {column} SET COMPRESSION {compression}")


def upgrade() -> None:
    _retype(sa.JSON(), "json")


def downgrade() -> None:
    _retype(JSONB(), "jsonb")
