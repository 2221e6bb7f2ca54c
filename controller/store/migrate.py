"""Schema migrations through Alembic, driven from code (no alembic.ini needed)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from controller.store.db import Database

MIGRATIONS = Path(__file__).with_name("migrations")


def alembic_config(database: Database) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", database.url.replace("%", "%%"))
    return config


def upgrade(database: Database, revision: str = "head") -> str | None:
    """Apply migrations up to `revision` and return the revision now in force."""
    config = alembic_config(database)
    with database.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
    return current_revision(database)


def current_revision(database: Database) -> str | None:
    with database.engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision(database: Database) -> str | None:
    return ScriptDirectory.from_config(alembic_config(database)).get_current_head()


def autogenerate(database: Database, message: str) -> None:
    """Write a new revision from the difference between the models and the database."""
    config = alembic_config(database)
    with database.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.revision(config, message=message, autogenerate=True)
