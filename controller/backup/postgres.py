"""Postgres: a backup is `pg_dump --format=custom` of the store's database, run as a child
process with the store's URL (its password in the environment, never on a command line).

Restoring is not done in place: `pg_restore` into a new, empty database and pointing
`DRIFTGATE_DATABASE_URL` at it is the documented procedure (docs/operations.md, "Backup,
restore and upgrades"); it leaves the old database untouched until the switch, and needs no
driftgate code between the two tools.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

from sqlalchemy.engine import make_url

from controller.errors import ConfigError

PROCEDURE = 'docs/operations.md, "Backup, restore and upgrades"'


def libpq_target(database_url: str) -> tuple[str, dict[str, str]]:
    """The libpq connection URI of a SQLAlchemy Postgres URL (without its password) and the
    environment that carries the password (`PGPASSWORD`)."""
    url = make_url(database_url)
    password = url.password
    plain = url.set(drivername="postgresql", password=None)
    # psycopg's own query options (none driftgate sets) are libpq's too.
    uri = plain.render_as_string(hide_password=False)
    return uri, ({"PGPASSWORD": str(password)} if password is not None else {})


def dump(database_url: str, destination: Path) -> int:
    """Write a custom-format dump of the database to `destination` (atomically: a partial
    file next to it, renamed when pg_dump succeeded); return its size in bytes."""
    program = shutil.which("pg_dump")
    if program is None:
        raise ConfigError(
            "pg_dump is not on PATH: install the PostgreSQL client tools (the server's major "
            f"version or newer) or back the database up as {PROCEDURE} says"
        )
    uri, password = libpq_target(database_url)
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = destination.with_name(f".{destination.name}.{uuid.uuid4().hex[:8]}.partial")
    try:
        done = subprocess.run(
            [program, "--format=custom", f"--file={partial}", f"--dbname={uri}"],
            env={**os.environ, **password},
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            reason = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[0]
            raise ConfigError(f"pg_dump failed: {reason}")
        with partial.open("rb") as written:
            os.fsync(written.fileno())
        os.replace(partial, destination)
        return destination.stat().st_size
    finally:
        partial.unlink(missing_ok=True)
