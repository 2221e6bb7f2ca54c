"""`driftgate secrets`: the encryption of secrets at rest."""

from __future__ import annotations

import click

from cli.common import Context


@click.group()
def secrets() -> None:
    """Manage the encryption of secrets at rest."""


@secrets.command("rotate")
@click.pass_obj
def secrets_rotate(obj: Context) -> None:
    """Re-encrypt every stored secret with the first key of DRIFTGATE_SECRET_KEY."""
    from controller.crypto import load_secret_box
    from controller.orgs.secrets_service import rotate_all

    box = load_secret_box(obj.settings())
    with obj.transaction() as session:
        count = rotate_all(session, box)
    click.echo(f"re-encrypted {count} secrets with the primary key")
