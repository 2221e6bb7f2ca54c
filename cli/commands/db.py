"""`driftgate db`: migrate the state store."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cli.common import Context, format_option
from cli.output import emit


@click.group()
def db() -> None:
    """Manage the state store."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True, help="Target migration revision.")
@click.pass_obj
def db_upgrade(obj: Context, revision: str) -> None:
    """Apply database migrations (SQLite by default, Postgres via DRIFTGATE_DATABASE_URL)."""
    from controller.store import migrate

    now = migrate.upgrade(obj.database(), revision)
    click.echo(f"database at revision {now}")


@db.command("current")
@click.option(
    "--check",
    is_flag=True,
    help="Exit 1 when the store is behind this release (`driftgate db upgrade` is due), 0 "
    "when it is at this release's head or ahead of it (a newer release migrated it): for a "
    "script or an init container that waits for the migration.",
)
@format_option("text", "json", help="text: one line; json: {current, head}.")
@click.pass_obj
def db_current(obj: Context, check: bool, output_format: str) -> None:
    """Print the current and the latest migration revision."""
    from controller.store import migrate

    database = obj.database()
    current, head = migrate.current_revision(database), migrate.head_revision(database)
    emit(
        {"current": current, "head": head},
        output_format,
        lambda _: [f"current {current or 'none'}, head {head}"],
    )
    if check and current != head and not migrate.is_ahead(current):
        sys.exit(1)


@db.command("backup")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@click.pass_obj
def db_backup(obj: Context, file: Path, force: bool) -> None:
    """Back the store up to FILE while it serves: SQLite's online backup (a consistent copy,
    checked), or pg_dump's custom format on Postgres. The secret key is not in it: back it up
    separately."""
    from controller.backup import service

    done = service.backup(obj.database(), file, overwrite=force)
    revision = f" at revision {done.revision}" if done.revision else ""
    click.echo(f"backed the {done.backend} store up to {done.path}{revision} ({done.size} bytes)")
    click.echo(
        "driftgate: the secret key (DRIFTGATE_SECRET_KEY, or secret.key in the data directory) "
        "is not in the backup: keep a copy of it apart, or stored secrets cannot be read",
        err=True,
    )


@db.command("restore")
@click.argument("file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.pass_obj
def db_restore(obj: Context, file: Path) -> None:
    """Replace the SQLite database with the backup FILE (every driftgate process on it
    stopped); the replaced file is kept beside it. Postgres: see docs/operations.md."""
    from controller.backup import service

    done = service.restore(obj.database(), file)
    click.echo(f"restored {file} to {done.path} (revision {done.revision})")
    if done.kept is not None:
        click.echo(f"the database it replaced is kept as {done.kept}")
    if done.needs_upgrade:
        click.echo(f"it is older than this release ({done.head}): run `driftgate db upgrade`")
