"""Helpers of the weekly summary's tests."""

from __future__ import annotations

from controller.store.db import Database
from controller.store.models import Base


def stored_text(database: Database) -> str:
    """Every value of every table, as text: what a database dump would show."""
    dump = []
    with database.engine.connect() as conn:
        for table in Base.metadata.sorted_tables:
            for row in conn.execute(table.select()):
                dump.append(" ".join(str(value) for value in row))
    return "\n".join(dump)
