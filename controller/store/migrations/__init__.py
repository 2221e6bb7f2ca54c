"""Alembic migration environment of the state store (run with `driftgate db upgrade`)."""
