"""`driftgate db`: migrate the state store."""

from __future__ import annotations

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
@format_option("text", "json", help="text: one line; json: {current, head}.")
@click.pass_obj
def db_current(obj: Context, output_format: str) -> None:
    """Print the current and the latest migration revision."""
    from controller.store import migrate

    database = obj.database()
    current, head = migrate.current_revision(database), migrate.head_revision(database)
    emit(
        {"current": current, "head": head},
        output_format,
        lambda _: [f"current {current or 'none'}, head {head}"],
    )
