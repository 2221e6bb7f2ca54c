"""contract trust: stored gate reasons, trusted card keys, OAuth for MCP, pinned tool sets

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-07 21:30:00.000000

Issue 45. A comparison's gate reason tokens beyond `breaking_drift` (`tool_poisoning_suspected`,
`card_signature_invalid`, `tool_lock_violated`) are stored with its drift event
(`drift_events.gate_reasons`, null for events recorded before: read as `breaking_drift`). An
`a2a_card` watch names the keys it trusts for the card's signatures (`watches.card_keys`: a
JWKS URL and/or inline public keys). A remote MCP watch authenticates with OAuth 2.1
(`watches.oauth`: the non-secret settings; `watches.oauth_ciphertext`: the client secret and
refresh token, encrypted; `watches.oauth_token_ciphertext` and `oauth_token_expires_at`: the
cached access token). An MCP watch is checked against its pinned tool set
(`watches.tool_lock`: the `.driftgate/mcp.lock` entry of its server). Expand only: nullable
columns.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

import controller.store.types

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

_JSON = controller.store.types.JSONType
_TIME = controller.store.types.UTCDateTime(timezone=True)

_COLUMNS: tuple[tuple[str, sa.Column[Any]], ...] = (
    ("drift_events", sa.Column("gate_reasons", _JSON, nullable=True)),
    ("watches", sa.Column("card_keys", _JSON, nullable=True)),
    ("watches", sa.Column("oauth", _JSON, nullable=True)),
    ("watches", sa.Column("oauth_ciphertext", sa.Text(), nullable=True)),
    ("watches", sa.Column("oauth_token_ciphertext", sa.Text(), nullable=True)),
    ("watches", sa.Column("oauth_token_expires_at", _TIME, nullable=True)),
    ("watches", sa.Column("tool_lock", _JSON, nullable=True)),
)


def upgrade() -> None:
    # `ADD COLUMN` in place: no rebuild of `watches` (its triggers stay, as in 0018).
    for table, column in _COLUMNS:
        op.add_column(table, column)


def downgrade() -> None:
    # `DROP COLUMN` in place (SQLite 3.35+), as migration 0018's downgrade.
    for table, column in reversed(_COLUMNS):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column.name}")
