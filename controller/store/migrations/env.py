"""Alembic environment: runs migrations on the connection `controller.store.migrate` passes."""

from __future__ import annotations

from alembic import context

from controller.store.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `driftgate db upgrade`")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
