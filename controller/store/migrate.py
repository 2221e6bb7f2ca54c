"""Schema migrations through Alembic, driven from code (no alembic.ini needed).

Only migrating needs Alembic (a second of imports): the question every store command asks
first, "is the schema this release's?", reads the `alembic_version` row with SQLAlchemy and
finds the head among the revision files' own `revision` and `down_revision` lines."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from controller.errors import ConfigError
from controller.store.db import Database

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy import Connection

MIGRATIONS = Path(__file__).with_name("migrations")
VERSION_TABLE = "alembic_version"  # Alembic's default, which env.py keeps
_REVISION = re.compile(r"^revision\s*(?::\s*str\s*)?=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)
_DOWN_REVISION = re.compile(
    r"^down_revision\s*(?::[^=]+)?=\s*(None|['\"]([^'\"]+)['\"])\s*$", re.MULTILINE
)


def alembic_config(database: Database) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", database.url.replace("%", "%%"))
    return config


def upgrade(database: Database, revision: str = "head") -> str | None:
    """Apply migrations up to `revision` and return the revision now in force."""
    from alembic import command

    config = alembic_config(database)
    with _migrating(database) as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
    return current_revision(database)


@contextmanager
def _migrating(database: Database) -> Iterator[Connection]:
    """One transaction for the migrations; on SQLite with foreign keys off while they run.

    SQLite cannot alter most of a table in place: Alembic's batch mode copies it to a new
    table, drops the old one and renames the copy. With foreign keys on (as driftgate's
    connections are), dropping the old `watches` deletes, by `ON DELETE CASCADE`, every
    snapshot, drift event, incident and tag of every watch. So they are off while the
    migrations run (the pragma is a no-op inside a transaction: it is set before it begins),
    `PRAGMA foreign_key_check` must find nothing before the commit, and they are on again
    before the connection goes back to the pool."""
    with database.engine.connect() as connection:
        sqlite = connection.dialect.name == "sqlite"
        raw = connection.connection.driver_connection
        assert raw is not None
        if sqlite:
            raw.execute("PRAGMA foreign_keys=OFF")
        try:
            with connection.begin():
                yield connection
                if sqlite:
                    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                    if broken:
                        tables = sorted({str(row[0]) for row in broken})
                        raise ConfigError(
                            "the migrations would leave rows whose parent row is missing in "
                            f"{', '.join(tables)}; nothing was changed"
                        )
        finally:
            if sqlite:
                raw.execute("PRAGMA foreign_keys=ON")


def current_revision(database: Database) -> str | None:
    """The revision the store is at (None before the first migration), as Alembic reads it."""
    from sqlalchemy import inspect, text

    with database.engine.connect() as connection:
        if not inspect(connection).has_table(VERSION_TABLE):
            return None
        found = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars()
        revisions = sorted(found)
    if len(revisions) > 1:
        raise ConfigError(
            f"the database is at several revisions ({', '.join(revisions)}); "
            "run `driftgate db upgrade`"
        )
    return revisions[0] if revisions else None


def is_ahead(revision: str | None) -> bool:
    """Whether the store is at a revision this release does not know: a newer release
    migrated it (during a rolling upgrade, this release's replicas still serve on it)."""
    return revision is not None and revision not in history()


def head_revision(database: Database | None = None) -> str | None:
    """The newest revision of this release: the one no other revision file revises."""
    return head_of(MIGRATIONS / "versions")


def head_of(versions: Path) -> str | None:
    """The head of the revision files in `versions`, read as text (Alembic's
    `ScriptDirectory` would import Alembic and every file); a history with several heads or
    a file that does not say its revisions plainly is asked of Alembic itself."""
    revisions: set[str] = set()
    revised: set[str] = set()
    for path in sorted(versions.glob("*.py")):
        if path.name == "__init__.py":
            continue
        source = path.read_text(encoding="utf-8")
        revision, down = _REVISION.search(source), _DOWN_REVISION.search(source)
        if revision is None or down is None:
            return _alembic_head(versions)
        revisions.add(revision.group(1))
        if down.group(2):
            revised.add(down.group(2))
    heads = revisions - revised
    if len(heads) != 1:
        return _alembic_head(versions)
    return heads.pop()


def history(versions: Path = MIGRATIONS / "versions") -> list[str]:
    """Every revision of this release, oldest first (the chain of `down_revision` links from
    the first revision to the head); asked of Alembic when the files are not a plain chain."""
    down_of: dict[str, str | None] = {}
    for path in sorted(versions.glob("*.py")):
        if path.name == "__init__.py":
            continue
        source = path.read_text(encoding="utf-8")
        revision, down = _REVISION.search(source), _DOWN_REVISION.search(source)
        if revision is None or down is None:
            return _alembic_history(versions)
        down_of[revision.group(1)] = down.group(2)
    chain: list[str] = []
    at = head_of(versions)
    while at is not None and at in down_of and at not in chain:
        chain.append(at)
        at = down_of[at]
    if len(chain) != len(down_of):
        return _alembic_history(versions)
    return chain[::-1]


def _alembic_history(versions: Path) -> list[str]:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(versions.parent), version_locations=[str(versions)])
    return [script.revision for script in script.walk_revisions()][::-1]


def _alembic_head(versions: Path) -> str | None:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(versions.parent), version_locations=[str(versions)])
    return script.get_current_head()


def autogenerate(database: Database, message: str) -> None:
    """Write a new revision from the difference between the models and the database."""
    from alembic import command

    config = alembic_config(database)
    with database.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.revision(config, message=message, autogenerate=True)
